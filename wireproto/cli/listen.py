"""The websocket debug listener shared by ``acp --ws``, ``wire --ws`` and ``bridge``.

Security (see :mod:`wireproto.cli.wsauth`): loopback by default; every
handshake must carry the token (``Authorization: Bearer`` or ``?token=``);
a browser ``Origin`` must be allowed with ``--allow-origin``. The token comes
from ``--token``, else ``WIREPROTO_WS_TOKEN``, else is generated; a
non-loopback address needs an explicit one, of at least 16 characters (as any
explicit one: a shorter one is refused as a usage error). When listening, exactly one line
goes to stderr (not to the log: the token must never reach the log file)::

    wireproto: listening on ws://HOST:PORT/?token=TOKEN
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from wireproto.cli.common import SHUTDOWN_GRACE, UsageError, watch_signals
from wireproto.cli.logs import redact
from wireproto.cli.wsauth import (
    MIN_TOKEN_LENGTH,
    WsGuard,
    is_loopback,
    new_token,
    parse_listen,
    token_problem,
    token_query,
)
from wireproto.errors import AgentError, AuthRequired, Busy, InvalidArgument, NotFound

if TYPE_CHECKING:  # imported when serving: building the parser stays light
    from wireproto.transports.websocket import WebSocketRequest, WebSocketStream

__all__ = [
    "CLOSE_CODES",
    "INTERNAL_ERROR",
    "TOKEN_ENV",
    "ConnectionHandler",
    "Listener",
    "RequestCheck",
    "add_ws_options",
    "serve_listener",
]

log = logging.getLogger(__name__)

TOKEN_ENV = "WIREPROTO_WS_TOKEN"
"""The environment variable holding the websocket token."""

ConnectionHandler = Callable[["WebSocketStream", "WebSocketRequest", anyio.Event],
                             Awaitable[None]]
"""Serves one accepted connection until it ends or the ``stop`` event is set."""


def add_ws_options(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """Add ``--ws``, ``--token`` and ``--allow-origin`` to ``parser``."""
    parser.add_argument(
        "--ws", metavar="[HOST:]PORT", required=required,
        help="serve over websocket on HOST (default 127.0.0.1) and PORT (0: a free one, "
             "on the first address only of a HOST naming several, as localhost may); "
             "clients must send the token: the URL to use, token included, is printed on "
             "stderr (wireproto: listening on ws://...?token=...)",
    )
    parser.add_argument(
        "--token", help=f"the websocket token, at least {MIN_TOKEN_LENGTH} characters, no "
                        f"whitespace (default: ${TOKEN_ENV}, else a generated one; a HOST "
                        "other than loopback needs one of these)"
    )
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="a browser Origin allowed to connect (repeatable)",
    )


INTERNAL_ERROR = 1011
"""The close code of a connection whose serving failed unexpectedly."""

CLOSE_CODES: tuple[tuple[type[Exception], int], ...] = (
    (Busy, 4409),
    (NotFound, 4404),
    (AuthRequired, 4401),
    (InvalidArgument, 4400),
    (AgentError, 4500),
)
"""Why an accepted connection could not be served -> its websocket close code
(application codes 4000-4999: 4400 + the HTTP status it resembles); the close
reason says what happened."""

RequestCheck = Callable[["WebSocketRequest"], "tuple[int, str] | None"]
"""A handshake check after the token check: ``None`` accepts, ``(status, text)`` refuses."""


class Listener:
    """A resolved listen address, token and guard.

    Raises:
        UsageError: an invalid address (named with ``flag``, as argparse
            names a bad value), a non-loopback one without an explicit token,
            or an explicit token that :func:`~wireproto.cli.wsauth.token_problem`
            refuses.
    """

    def __init__(self, spec: str, token: str | None, origins: list[str],
                 token_flag: str = "--token", flag: str = "--ws") -> None:
        try:
            self.host, self.port = parse_listen(spec)
        except ValueError as exc:
            raise UsageError(f"{flag}: {exc}") from None
        explicit = token or os.environ.get(TOKEN_ENV) or None
        if explicit is None and not is_loopback(self.host):
            raise UsageError(
                f"listening on the non-loopback address {self.host} needs an explicit token "
                f"({token_flag} or {TOKEN_ENV})"
            )
        problem = None if explicit is None else token_problem(explicit)
        if problem is not None:
            source, drop = (token_flag, "omit") if token else (TOKEN_ENV, "unset")
            raise UsageError(f"{source}: {problem}; {drop} {source} for a generated one")
        self.token = explicit or new_token()
        redact(self.token)
        self.guard = WsGuard(self.token, origins)
        self.checks: list[RequestCheck] = []
        """The command's own handshake checks, run once the token is accepted."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Listener:
        """The listener described by ``--ws``, ``--token`` and ``--allow-origin``."""
        return cls(args.ws, args.token, list(args.allow_origin))

    def check(self, request: WebSocketRequest) -> tuple[int, str] | None:
        """The handshake check: ``None`` accepts, ``(status, text)`` refuses."""
        refusal = self.guard.check(request.path, request.headers, _address(request))
        for check in self.checks:
            if refusal is not None:
                break
            refusal = check(request)
            if refusal is not None:
                log.warning("websocket from %s refused: %s", _address(request), refusal[1])
        return refusal


def _address(request: WebSocketRequest) -> str:
    address = request.remote_address
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


async def serve_listener(listener: Listener, handler: ConnectionHandler, name: str) -> int:
    """Serve websocket connections until a stop signal; returns the exit status.

    Each accepted connection is given to ``handler`` with the shared ``stop``
    event; a failing connection is logged and closed, never fatal.

    Raises:
        OSError: the address cannot be bound.
    """
    from wireproto.transports.websocket import serve_websocket

    stop = anyio.Event()
    count = 0
    active: set[int] = set()
    idle = anyio.Event()

    async def on_connection(stream: WebSocketStream, request: WebSocketRequest) -> None:
        nonlocal count, idle
        count += 1
        number = count
        label = f"{name} connection {number} from {_address(request)}"
        log.info("%s: accepted", label)
        if not active:
            idle = anyio.Event()
        active.add(number)
        try:
            await handler(stream, request, stop)
        except Exception as exc:
            log.warning("%s failed: %s: %s", label, type(exc).__name__, exc)
            code = next((c for t, c in CLOSE_CODES if isinstance(exc, t)), INTERNAL_ERROR)
            reason = exc.message if isinstance(exc, AgentError) else "internal error (see the log)"
            with anyio.move_on_after(SHUTDOWN_GRACE, shield=True):
                await stream.close(code, reason)
        else:
            log.info("%s: ended", label)
        finally:
            active.discard(number)
            if not active:
                idle.set()

    async with anyio.create_task_group() as tg:
        await tg.start(watch_signals, stop, tg.cancel_scope)
        async with serve_websocket(
            on_connection, listener.host, listener.port, process_request=listener.check
        ) as server:
            print(f"wireproto: listening on {server.url}/{token_query(listener.token)}",
                  file=sys.stderr, flush=True)
            log.info("%s: listening on %s", name, server.url)
            await stop.wait()
            if active:  # let every connection finish its shutdown before closing them
                log.info("%s: waiting for %d connection(s) to finish", name, len(active))
                with anyio.move_on_after(SHUTDOWN_GRACE - 1):
                    await idle.wait()
            log.info("%s: closing %s", name, server.url)
        tg.cancel_scope.cancel()
    return 0
