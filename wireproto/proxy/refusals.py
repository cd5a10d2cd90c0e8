"""Refusals: what the proxy cannot translate is logged once per feature.

:func:`refuse_once` logs a warning the first time a feature is refused in
this process and at debug level afterwards, so a busy session does not
flood the log while the first occurrence is never missed.
"""

from __future__ import annotations

import logging

__all__ = ["refuse_once", "refused"]

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
