"""The check of an external tool's arguments against its parameters schema.

The schema comes from the client, and a ``pattern`` (or ``patternProperties``) in it
is a regular expression that may backtrack for longer than anyone waits (``^(a|aa)+$``
against 60 ``a`` and a ``!``) while holding the agent's whole process, every session
of every connection. A schema with patterns is therefore checked in a child Python
that runs this file (the standard library and ``jsonschema`` only, never the
program's own code), stopped after :data:`PATTERN_TIME` seconds of checking (its
start-up is not counted).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

PATTERN_TIME = 2.0
"""Seconds the check of a schema with patterns may take."""

_START_TIME = 60.0  # seconds the child may take to start (a loaded machine), not checking

_CHILD = (
    "import json, runpy, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"  # (ours: -I dropped PYTHONPATH and the like)
    "runpy.run_path(sys.argv[2], run_name='__main__')\n"
)


def arguments_problem(parameters: dict[str, Any], arguments: Any) -> str | None:
    """Why ``arguments`` do not fit ``parameters``, or ``None`` (see
    :meth:`~wireproto.agent.api.ExternalTool.arguments_problem`)."""
    import jsonschema  # loaded on the first external tool call (slow to import)
    import referencing.exceptions

    validator = jsonschema.Draft202012Validator(parameters)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except (referencing.exceptions.Unresolvable, RecursionError) as exc:
        reason = "a reference cycle" if isinstance(exc, RecursionError) else str(exc)
        return f"Invalid arguments: the tool's parameters schema cannot be applied: {reason}"
    return None if error is None else f"Invalid arguments: {error.message}"


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
    import anyio
    from anyio.streams.buffered import BufferedByteReceiveStream

    given = json.dumps({"parameters": parameters, "arguments": arguments}).encode()
    async with await anyio.open_process(
        [sys.executable, "-I", "-c", _CHILD, json.dumps(sys.path), __file__],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        out = BufferedByteReceiveStream(child.stdout)
        try:
            with anyio.fail_after(_START_TIME):
                await out.receive_until(b"\n", 16)  # started: the time counts from here
            await child.stdin.send(given)
            await child.stdin.aclose()
            with anyio.move_on_after(PATTERN_TIME):
                answer = []
                while True:
                    try:
                        answer.append(await out.receive())
                    except anyio.EndOfStream:
                        break
                problem: str | None = json.loads(b"".join(answer))
                return problem
        except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead,
                anyio.BrokenResourceError, ValueError):
            return "Invalid arguments: the tool's parameters schema could not be checked"
        finally:
            if child.returncode is None:
                child.kill()
    return (f"Invalid arguments: a pattern of the tool's parameters schema takes longer "
            f"than {PATTERN_TIME:g} s to check")


def _main() -> None:
    import jsonschema  # noqa: F401  (loaded before "ready": start-up is not checking time)
    import referencing.exceptions  # noqa: F401

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    given = json.load(sys.stdin)
    json.dump(arguments_problem(given["parameters"], given["arguments"]), sys.stdout)


if __name__ == "__main__":
    _main()
