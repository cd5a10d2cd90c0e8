"""Websocket listener security: loopback by default, a token, an Origin check.

Every connection must present the token, as ``Authorization: Bearer TOKEN``
or as the query parameter ``?token=TOKEN``. Browser ``Origin`` headers are
refused unless allowed explicitly; connections without an ``Origin``
(non-browser clients) are allowed. Rejections are logged with the reason,
never with the presented token.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qs, quote, urlsplit

__all__ = [
    "MIN_TOKEN_LENGTH",
    "WsGuard",
    "is_loopback",
    "new_token",
    "parse_listen",
    "token_problem",
    "token_query",
]

log = logging.getLogger(__name__)

MIN_TOKEN_LENGTH = 16
"""The shortest token a listener accepts from ``--token`` (a shorter one is easily guessed)."""


def new_token() -> str:
    """A fresh random token: 48 hex digits (192 bits).

    Hex, not base64: safe in URLs and shells, and never starting with ``-``
    (``--token -x...`` would read as an option).
    """
    return secrets.token_hex(24)


def token_problem(token: str) -> str | None:
    """Why a listener refuses ``token`` (``--token``, ``--page-token``,
    ``WIREPROTO_WS_TOKEN``), or ``None``: shorter than :data:`MIN_TOKEN_LENGTH`, or
    holding whitespace or a control character anywhere (a token travels in an
    ``Authorization`` header, whose value loses its outer spaces, and in URLs)."""
    if len(token) < MIN_TOKEN_LENGTH:
        return (f"the token is too short ({len(token)} of at least {MIN_TOKEN_LENGTH} "
                "characters: a shorter one is easily guessed)")
    if not token.isprintable() or any(char.isspace() for char in token):
        return ("the token holds whitespace or a control character (it travels in headers "
                "and URLs: give one without)")
    return None


def token_query(token: str) -> str:
    """``?token=...`` for a printed URL: the token percent-encoded, so that one holding
    ``+``, ``&``, ``#`` or ``%`` reads back as itself."""
    return "?token=" + quote(token, safe="")


def parse_listen(spec: str) -> tuple[str, int]:
    """Parse ``[HOST:]PORT`` (default host 127.0.0.1).

    An IPv6 host is written in brackets: ``[::1]:8765``.

    Raises:
        ValueError: not a valid listen address (the message says why).
    """
    host, _, port = spec.rpartition(":")
    if host.startswith("[") or host.endswith("]"):
        inner = host[1:-1]
        if not (host.startswith("[") and host.endswith("]")) or "[" in inner or "]" in inner:
            raise ValueError(
                f"unbalanced brackets in listen address {spec!r}: write IPv6 as [ADDR]:PORT"
            )
        try:
            ipaddress.IPv6Address(inner)
        except ValueError:
            raise ValueError(
                f"not an IPv6 address in brackets: {spec!r}; write IPv6 as [ADDR]:PORT"
            ) from None
        host = inner
    elif ":" in host or "[" in host or "]" in host:
        raise ValueError(
            f"not a [HOST:]PORT listen address: {spec!r}; write IPv6 as [ADDR]:PORT"
        )
    host = host or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"not a [HOST:]PORT listen address: {spec!r}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"port out of range: {port}")
    return host, number


def is_loopback(host: str) -> bool:
    """Whether ``host`` names the loopback interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _origin(value: str) -> str:
    """An origin in comparable form (case-folded, no trailing slash)."""
    return value.strip().rstrip("/").lower()


class WsGuard:
    """Decide whether a websocket handshake may proceed.

    Args:
        token: the secret every client must present.
        allowed_origins: browser origins that may connect.
    """

    def __init__(self, token: str, allowed_origins: Iterable[str] = ()) -> None:
        if not token:
            raise ValueError("the websocket token must not be empty")
        self._token = token.encode()
        self.allowed_origins = frozenset(_origin(o) for o in allowed_origins)

    def _presented(self, path: str, headers: Mapping[str, str]) -> str | None:
        auth = headers.get("Authorization") or headers.get("authorization")
        if auth and auth[:7].lower() == "bearer ":
            return auth[7:].strip()
        values = parse_qs(urlsplit(path).query).get("token")
        return values[0] if values else None

    def check(
        self, path: str, headers: Mapping[str, str], peer: str = "a client"
    ) -> tuple[int, str] | None:
        """Return ``None`` to accept, or ``(http_status, reason)`` to refuse.

        A foreign ``Origin`` is refused with 403, a missing or wrong token
        with 401. Refusals are logged with ``peer`` and the reason, never
        with the presented token.
        """
        origin = headers.get("Origin") or headers.get("origin")
        if origin is not None and _origin(origin) not in self.allowed_origins:
            log.warning("websocket from %s refused: origin %r not allowed", peer, origin)
            return 403, "Origin not allowed"
        presented = self._presented(path, headers)
        if presented is None:
            log.warning("websocket from %s refused: no token presented", peer)
            return 401, "Missing token"
        if not hmac.compare_digest(presented.encode(), self._token):
            log.warning("websocket from %s refused: wrong token", peer)
            return 401, "Invalid token"
        return None
