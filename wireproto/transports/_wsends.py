"""Both ends of the trio WebSocket transport: :func:`connect` and :func:`serve`.

Each opens TCP, runs the opening handshake on a
:class:`~wireproto.transports._wsconn.Connection` and pumps it for as long
as the caller's block (client) or connection handler (server) runs.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from websockets.client import ClientProtocol
from websockets.frames import CloseCode
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from wireproto.transports._wsconn import _BROKEN, OPEN_TIMEOUT, Connection, RequestCheck

__all__ = ["connect", "serve"]

log = logging.getLogger("wireproto.transports._wsconn")


# ------------------------------------------------------------------ client


@asynccontextmanager
async def connect(
    url: str,
    *,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
    max_bytes: int,
) -> AsyncIterator[Connection]:
    """Open a client connection to ``url`` (``ws://`` or ``wss://``).

    Yields:
        the open connection, pumped until the block exits (then closed, 1000).

    Raises:
        websockets.exceptions.InvalidURI: ``url`` is not a WebSocket URL.
        websockets.exceptions.InvalidHandshake: the handshake was refused or failed.
        OSError: the TCP connection failed.
        TimeoutError: connecting took longer than :data:`OPEN_TIMEOUT`.
    """
    uri = parse_uri(url)
    protocol = ClientProtocol(uri, max_size=max_bytes)
    with anyio.fail_after(OPEN_TIMEOUT):
        stream: anyio.abc.ByteStream
        if uri.secure:
            stream = await anyio.connect_tcp(uri.host, uri.port, tls=True)
        else:
            stream = await anyio.connect_tcp(uri.host, uri.port)
        conn = Connection(stream, protocol)
        try:
            await conn.client_handshake(headers)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise
    async with conn.running():
        yield conn


# ------------------------------------------------------------------ server


class _Server:
    """Accepts TCP connections and runs one handler task per WebSocket."""

    def __init__(
        self,
        on_connection: Callable[[Connection], Awaitable[None]],
        *,
        max_bytes: int,
        check: RequestCheck | None,
    ) -> None:
        self._on_connection = on_connection
        self._max_bytes = max_bytes
        self._check = check
        self._open: set[Connection] = set()
        self._handshakes: set[anyio.CancelScope] = set()
        self._stopping = False

    async def accept(
        self, listener: anyio.abc.Listener[anyio.abc.SocketStream], tg: anyio.abc.TaskGroup
    ) -> None:
        async with listener:
            await listener.serve(self.handle, task_group=tg)

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        conn = Connection(stream, ServerProtocol(max_size=self._max_bytes))
        scope = anyio.CancelScope()
        if self._stopping:
            scope.cancel()
        self._handshakes.add(scope)
        accepted = False  # stays so if the server stops during the handshake
        try:
            with scope, anyio.fail_after(OPEN_TIMEOUT):
                accepted = await conn.server_handshake(self._check)
        except (TimeoutError, *_BROKEN) as exc:
            log.info("websocket opening handshake failed: %r", exc)
        except Exception:  # e.g. a bug in process_request
            log.error("websocket opening handshake failed", exc_info=True)
        finally:
            self._handshakes.discard(scope)
        if not accepted:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            return
        self._open.add(conn)
        try:
            async with conn.running():
                try:
                    await self._on_connection(conn)
                except Exception:
                    log.error("websocket connection handler failed", exc_info=True)
                    await conn.close(CloseCode.INTERNAL_ERROR, "")
        finally:
            self._open.discard(conn)

    def going_away(self) -> None:
        """Abort opening handshakes; start closing every open connection (1001)."""
        self._stopping = True
        for scope in list(self._handshakes):
            scope.cancel()
        for conn in list(self._open):
            conn.start_close(CloseCode.GOING_AWAY)


@asynccontextmanager
async def serve(
    on_connection: Callable[[Connection], Awaitable[None]],
    *,
    host: str,
    port: int,
    max_bytes: int,
    process_request: RequestCheck | None,
) -> AsyncIterator[int]:
    """Listen on ``host:port`` and serve WebSocket connections.

    ``process_request(conn, request)`` may return a refusal response (see
    :meth:`Connection.respond`). ``on_connection(conn)`` serves one open
    connection; it is closed with 1000 when that returns, 1011 if it raises.

    Yields:
        the bound port; on exit the server stops listening, closes open
        connections (1001) and waits for their handlers to return.
    """
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    server = _Server(on_connection, max_bytes=max_bytes, check=process_request)
    # Entered and left by hand so that an exception from the body
    # propagates as itself rather than inside an ExceptionGroup.
    tg = anyio.create_task_group()
    await tg.__aenter__()
    try:
        accepting = anyio.CancelScope()

        async def accept() -> None:
            with accepting:
                await server.accept(listener, tg)

        tg.start_soon(accept)
        try:
            yield bound
        finally:
            accepting.cancel()
            server.going_away()
    finally:
        await tg.__aexit__(None, None, None)
