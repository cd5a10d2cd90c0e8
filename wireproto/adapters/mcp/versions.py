"""MCP protocol versions and their negotiation.

MCP revisions are date strings negotiated in ``initialize`` (lifecycle,
"Version Negotiation"): the client sends the version it prefers (normally
its latest); a server that supports it answers with the same string, else
with the latest version *it* supports; a client that does not support the
answered version disconnects. Versions are an enumerated set: unknown strings
are never compared by their text.

:data:`SUPPORTED_VERSIONS` are the revisions reachable through the
``initialize`` handshake that this library speaks for tools; the stateless
revisions that drop the handshake are out of scope.
"""

from __future__ import annotations

from collections.abc import Sequence

from wireproto.errors import InvalidVersion

__all__ = ["LATEST_VERSION", "SUPPORTED_VERSIONS", "negotiate"]

SUPPORTED_VERSIONS: tuple[str, ...] = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
)
"""Supported protocol revisions, oldest first."""

LATEST_VERSION = SUPPORTED_VERSIONS[-1]
"""The revision offered by the client and answered by the server by default."""


def negotiate(requested: str, supported: Sequence[str] = SUPPORTED_VERSIONS) -> str:
    """Return the server's answer to a client requesting ``requested``.

    Args:
        requested: the client's ``protocolVersion``.
        supported: the server's revisions, oldest first.

    Returns:
        ``requested`` when supported, else the last (latest) of ``supported``.

    Raises:
        InvalidVersion: ``supported`` is empty.
    """
    if not supported:
        raise InvalidVersion("no supported MCP protocol version")
    return requested if requested in supported else supported[-1]
