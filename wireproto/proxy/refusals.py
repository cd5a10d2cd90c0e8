"""Refusals and backend failures, as the front client sees them.

:func:`refuse_once` logs a warning the first time a feature is refused in
this process and at debug level afterwards, so a busy session does not
flood the log while the first occurrence is never missed.
:class:`BackendGone` is the agent error (answered with its message by every
adapter) for a backend agent that could not start or has exited;
:func:`backend_failed` passes a backend's failed turn on to the front client
with the backend's own message and data (e.g. the exception an agent raised).
"""

from __future__ import annotations

import logging

from wireproto.errors import AgentError, AgentFailed, RpcError

__all__ = ["BackendGone", "backend_failed", "refuse_once", "refused"]

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


def backend_failed(exc: RpcError) -> AgentFailed:
    """The agent error answering a turn whose backend prompt failed with ``exc``.

    Its message and data are the backend's, so that the front client sees what
    the backend said (``Internal error`` with the type and message of the
    exception the backend agent raised) rather than a failure of the proxy.
    """
    log.warning("proxy: the backend's prompt failed: %s (%d)", exc.message, exc.code)
    return AgentFailed(exc.message, exc.data)

