"""Refusals and backend failures, as the front client sees them.

:func:`refuse_once` logs a warning the first time a feature is refused in
this process and at debug level afterwards, so a busy session does not
flood the log while the first occurrence is never missed.
:class:`BackendGone` is the agent error (answered with its message by every
adapter) for a backend agent that could not start or has exited.
"""

from __future__ import annotations

import logging

from wireproto.errors import AgentError

__all__ = ["BackendGone", "refuse_once", "refused"]

log = logging.getLogger("wireproto.proxy")

_seen: set[str] = set()


def refuse_once(feature: str, what_happens: str) -> str:
    """Log that ``feature`` cannot be translated (a warning once, then debug).

    Returns:
        the message, for an error answer.
    """
    message = f"proxy: {feature} cannot be translated: {what_happens}"
    if feature in _seen:
        log.debug("%s", message)
    else:
        _seen.add(feature)
        log.warning("%s", message)
    return message


def refused() -> frozenset[str]:
    """The features refused so far in this process."""
    return frozenset(_seen)


class BackendGone(AgentError):
    """The backend agent could not be started, or it has exited."""
