"""``--agent module:attr``: load the user's agent.

``attr`` (a dotted path inside the module) names an
:class:`~wireproto.agent.api.Agent` instance, or a zero-argument callable
returning one (an ``Agent`` subclass qualifies). The current directory is
importable. Whatever the module prints while it loads goes to stderr: stdout
belongs to the protocol.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

from wireproto.agent.api import Agent

__all__ = ["AgentLoadError", "load_agent"]


class AgentLoadError(Exception):
    """The agent could not be loaded; the message says why in one line."""


def load_agent(spec: str) -> Agent:
    """Import ``module:attr`` and return the agent it names.

    Raises:
        AgentLoadError: a malformed spec, an import failure, a missing
            attribute, or something that is not an agent.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentLoadError(f"--agent expects MODULE:ATTR, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    with contextlib.redirect_stdout(sys.stderr):
        try:
            target: object = importlib.import_module(module_name)
        except Exception as exc:
            raise AgentLoadError(
                f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
            ) from exc
        for part in attr.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise AgentLoadError(f"{module_name!r} has no attribute {attr!r}") from None
        if isinstance(target, Agent):
            return target
        if not callable(target):
            raise AgentLoadError(f"{spec} is neither an Agent nor a callable returning one")
        try:
            made = target()
        except Exception as exc:
            raise AgentLoadError(f"{spec}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, Agent):
        raise AgentLoadError(f"{spec}() returned {type(made).__name__}, not an Agent")
    return made
