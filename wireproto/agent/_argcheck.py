"""The check of an external tool's arguments against its parameters schema.

The schema comes from the client, and a ``pattern`` (or ``patternProperties``) in it
is a regular expression that may backtrack for longer than anyone waits (``^(a|aa)+$``
against 60 ``a`` and a ``!``) while holding the agent's whole process, every session
of every connection. A schema with patterns is therefore checked in a child Python
that runs this file (the standard library and ``jsonschema`` only, never the
program's own code), stopped after 2 seconds of checking
(:func:`~wireproto._childcheck.check_apart`).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

_CODE = f"import runpy\nrunpy.run_path({__file__!r}, run_name='__main__')\n"
"""The child's program: this file (run by path, so nothing else of wireproto is imported)."""


def arguments_problem(parameters: dict[str, Any], arguments: Any) -> str | None:
    """Why ``arguments`` do not fit ``parameters``, or ``None`` (see
    :meth:`~wireproto.agent.api.ExternalTool.arguments_problem`)."""
    import jsonschema  # loaded on the first external tool call (slow to import)
    import referencing.exceptions

    validator = jsonschema.Draft202012Validator(parameters)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except RecursionError:
        reason = "a reference cycle"
    except re.error as exc:
        reason = f"the regular expression {exc.pattern!r} is invalid ({exc})"
    except (referencing.exceptions.Unresolvable, TypeError) as exc:  # (a pattern not a string)
        reason = str(exc)
    else:
        return None if error is None else f"Invalid arguments: {error.message}"
    return f"Invalid arguments: the tool's parameters schema cannot be applied: {reason}"


def has_patterns(schema: Any) -> bool:
    """Whether ``schema`` holds a ``pattern`` or ``patternProperties`` keyword (a property
    *named* ``pattern`` is a schema, not a regular expression)."""
    stack = [schema]
    while stack:  # (iterative: a client's schema may nest deeper than the recursion limit)
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str) or node.get("patternProperties"):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


async def bounded_arguments_problem(parameters: dict[str, Any], arguments: Any) -> str | None:
    """:func:`arguments_problem`; in a child Python when the schema has patterns."""
    if not has_patterns(parameters):
        return arguments_problem(parameters, arguments)
    from wireproto._childcheck import CHECK_TIME, CheckFailed, check_apart  # (not in the child)

    given = json.dumps({"parameters": parameters, "arguments": arguments}).encode()
    try:
        answer = await check_apart(_CODE, given)
    except CheckFailed as exc:
        return f"Invalid arguments: the tool's parameters schema could not be checked ({exc})"
    if answer is None:
        return (f"Invalid arguments: a pattern of the tool's parameters schema takes longer "
                f"than {CHECK_TIME:g} s to check")
    problem: str | None = json.loads(answer)
    return problem


def _main() -> None:
    import jsonschema  # noqa: F401  (loaded before "ready": start-up is not checking time)
    import referencing.exceptions  # noqa: F401

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    given = json.load(sys.stdin)
    json.dump(arguments_problem(given["parameters"], given["arguments"]), sys.stdout)


if __name__ == "__main__":
    _main()
