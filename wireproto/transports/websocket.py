"""WebSocket client and server carrying one message per text frame.

Theory of operation
-------------------
The ``websockets`` library does the protocol work; :class:`WebSocketStream`
only adapts a connection to ``anyio.abc.ObjectStream[bytes]``. Each message
is sent as ONE text frame without the ``\\n`` the codec appends (the bytes
are sent as they are, no decode/encode round trip); a received frame is
returned as bytes (a trailing ``\\n`` is dropped, for peers that send one,
and any other ``\\r`` or ``\\n``, whitespace in JSON, becomes a space: a
message relayed to a stream of lines stays one line).

Compression is off: deflating JSON costs more than it saves on loopback.
:meth:`WebSocketStream.try_send` writes a message at once when the
connection can take it without waiting (the peer's writer then needs no task
switch, nor a task at all, for a connection that never fills its buffers).
The implementation follows the running event loop, chosen from the table
:data:`_BACKENDS`: ``websockets.asyncio`` on asyncio, and on trio the small
connection of :mod:`wireproto.transports._wsconn` (opened by
:mod:`~wireproto.transports._wsends`), which pumps websockets'
sans-I/O protocol over anyio TCP streams (``websockets.trio`` deadlocks when
both ends send large messages at once: its reader waits for the send lock).

websockets exceptions become anyio ones in exactly one place,
:meth:`WebSocketStream._convert`, chained with ``from``:

=====================================  ==========================================
``ConnectionClosedOK`` (1000/1001)     ``EndOfStream`` on receive,
                                       ``BrokenResourceError`` on send
``ConnectionClosedError`` (e.g. 1009)  ``BrokenResourceError`` (reason logged)
either, after our own ``aclose``       ``ClosedResourceError``
``ConcurrencyError``                   ``BusyResourceError``
=====================================  ==========================================

An inbound message over ``max_bytes`` makes the library close the connection
with code 1009 ("message too big"); the reason is logged and ``receive``
raises ``BrokenResourceError``. A refused opening handshake raises
:class:`~wireproto.errors.ConnectionClosed` from ``connect_websocket``.
WebSocket has no half-close: ``send_eof`` starts the closing handshake.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio
import anyio.abc
import anyio.lowlevel
import websockets.exceptions as wsexc
from websockets.protocol import State

from wireproto._backend import current_backend
from wireproto._switches import FAST_PATHS
from wireproto.errors import ConnectionClosed
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from websockets.http11 import Request, Response

__all__ = [
    "HttpResponse",
    "Refusal",
    "RequestCheck",
    "WebSocketHandler",
    "WebSocketRequest",
    "WebSocketServer",
    "WebSocketStream",
    "connect_websocket",
    "serve_websocket",
]

log = logging.getLogger(__name__)

_MESSAGE_TOO_BIG = 1009
_SPACED = bytes.maketrans(b"\r\n", b"  ")
"""Line breaks inside a received frame become spaces."""


class _Connection(Protocol):
    """What :class:`WebSocketStream` needs from a websockets connection."""

    async def recv(self, decode: Literal[False]) -> bytes: ...

    async def send(self, message: bytes | memoryview, *, text: bool | None = None) -> None: ...


@dataclasses.dataclass(frozen=True)
class WebSocketRequest:
    """The opening handshake of an inbound connection.

    Attributes:
        path: the request target (path and query string).
        headers: header names lower-cased; repeated headers joined with ``", "``.
        remote_address: the client's address as the socket reports it.
    """

    path: str
    headers: Mapping[str, str]
    remote_address: Any = None


Refusal = tuple[int, str]
"""An HTTP status and a short text answering a refused handshake."""


@dataclasses.dataclass(frozen=True)
class HttpResponse:
    """A complete plain HTTP answer to a request that is not a WebSocket handshake.

    Returned by a :data:`RequestCheck` to serve, for example, a static page
    on the same port as the websocket; the connection is closed after it.

    Attributes:
        status: the HTTP status code.
        body: the response body.
        headers: extra headers (``Content-Length`` is set from ``body``).
    """

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


RequestCheck = Callable[[WebSocketRequest], "Refusal | HttpResponse | None"]
"""Called before accepting a connection: ``None`` accepts, ``(status, text)`` refuses,
an :class:`HttpResponse` is sent as it is."""

WebSocketHandler = Callable[["WebSocketStream", WebSocketRequest], Awaitable[None]]
"""Serves one accepted connection; it is closed when the handler returns."""


class WebSocketStream(anyio.abc.ObjectStream[bytes]):
    """One WebSocket connection as an ``ObjectStream[bytes]`` of whole messages.

    Created by :func:`connect_websocket` and :func:`serve_websocket`.
    """

    def __init__(
        self,
        connection: _Connection,
        close: Callable[[int, str], Awaitable[None]],
        *,
        max_bytes: int,
        name: str = "websocket",
        try_send: Callable[[Any, bytes | memoryview], bool] | None = None,
    ) -> None:
        self._conn = connection
        self._close = close
        self._try_send = try_send
        self.max_bytes = max_bytes
        self.name = name
        self._closed = False  # aclose() was called
        self._eof_sent = False
        self._logged = False

    async def receive(self) -> bytes:
        """Return the next message.

        Raises:
            anyio.EndOfStream: the connection was closed normally.
            anyio.BrokenResourceError: it failed (e.g. 1009 for a message
                over ``max_bytes``, or the network dropped).
            anyio.ClosedResourceError: this side called ``aclose``.
        """
        if self._closed:
            await anyio.lowlevel.checkpoint()
            raise anyio.ClosedResourceError
        try:
            data = await self._conn.recv(decode=False)
        except wsexc.WebSocketException as exc:
            raise self._convert(exc, sending=False) from exc
        if 10 in data or 13 in data:  # (\n, \r: an int is a memchr; a bytes needle costs 10x)
            if data.endswith(b"\n"):
                data = data[:-2] if data.endswith(b"\r\n") else data[:-1]
            data = data.translate(_SPACED)  # JSON whitespace: one line still, relayed to a pipe
        return data

    async def send(self, item: bytes) -> None:
        """Send one message as one text frame (a trailing ``\\n`` is not sent).

        Raises:
            anyio.BrokenResourceError: the connection is closed or failed.
            anyio.ClosedResourceError: this side closed or sent EOF.
        """
        if self._closed or self._eof_sent:
            await anyio.lowlevel.checkpoint()
            raise anyio.ClosedResourceError
        payload = memoryview(item)[:-1] if item.endswith(b"\n") else item
        try:
            await self._conn.send(payload, text=True)
        except wsexc.WebSocketException as exc:
            raise self._convert(exc, sending=True) from exc

    def try_send(self, item: bytes) -> bool:
        """Send one message now if the connection can take it without waiting;
        return whether it was taken (a trailing ``\\n`` is not sent).

        Always ``False`` with ``WIREPROTO_NO_FAST_PATHS=1``.

        Raises:
            anyio.BrokenResourceError: writing to the connection failed.
        """
        if not FAST_PATHS or self._try_send is None or self._closed or self._eof_sent:
            return False
        payload = memoryview(item)[:-1] if item.endswith(b"\n") else item
        try:
            return self._try_send(self._conn, payload)
        except wsexc.WebSocketException as exc:
            raise self._convert(exc, sending=True) from exc

    @property
    def needs_flush(self) -> bool:
        """Always false: :meth:`try_send` takes a whole message or nothing."""
        return False

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Send several messages in order, one frame each."""
        for item in items:
            await self.send(item)

    async def send_eof(self) -> None:
        """Close the connection normally (1000): WebSocket has no half-close.

        Messages already received stay readable; ``receive`` then raises
        ``EndOfStream``.
        """
        self._eof_sent = True
        await self._close(1000, "")

    async def aclose(self) -> None:
        """Close the connection normally (1000), waiting for the closing handshake."""
        self._closed = True
        await self._close(1000, "")

    async def close(self, code: int, reason: str) -> None:
        """Close the connection with ``code`` and a ``reason`` the peer can show.

        The reason is cut to the 123 bytes a close frame can carry.
        """
        self._closed = True
        raw = reason.encode("utf-8")[:123]
        await self._close(code, raw.decode("utf-8", "ignore"))

    def _convert(self, exc: wsexc.WebSocketException, *, sending: bool) -> Exception:
        """The single conversion point from websockets errors to anyio ones."""
        if isinstance(exc, wsexc.ConcurrencyError):
            return anyio.BusyResourceError("sending to" if sending else "receiving from")
        if self._closed:
            return anyio.ClosedResourceError()
        if isinstance(exc, wsexc.ConnectionClosedOK):
            self._log_close(exc, logging.DEBUG)
            return anyio.BrokenResourceError() if sending else anyio.EndOfStream()
        if isinstance(exc, wsexc.ConnectionClosed):
            self._log_close(exc, logging.WARNING)
            return anyio.BrokenResourceError(str(exc))
        return anyio.BrokenResourceError(f"websocket failed: {exc}")

    def _log_close(self, exc: wsexc.ConnectionClosed, level: int) -> None:
        if self._logged:
            return
        self._logged = True
        by_peer = exc.rcvd is not None and (exc.sent is None or bool(exc.rcvd_then_sent))
        frame = exc.rcvd if by_peer else exc.sent
        if frame is not None and frame.code == _MESSAGE_TOO_BIG:
            log.warning(
                "%s: closed with 1009: %s message over the %s size limit (%s)",
                self.name,
                "outbound" if by_peer else "inbound",
                "peer's" if by_peer else f"{self.max_bytes}-byte",
                frame.reason or "message too big",
            )
        else:
            log.log(level, "%s: connection closed: %s", self.name, exc)


@dataclasses.dataclass(frozen=True)
class WebSocketServer:
    """A listening server, as yielded by :func:`serve_websocket`.

    Attributes:
        host: the address it is bound to.
        port: the port it is bound to (the real one when 0 was asked).
    """

    host: str
    port: int

    @property
    def url(self) -> str:
        """The ``ws://`` URL a client connects to."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncIterator[WebSocketStream]:
    """Connect to a WebSocket server.

    Args:
        url: a ``ws://`` or ``wss://`` URL.
        headers: extra HTTP headers for the opening handshake (e.g. a token).
        max_bytes: the largest accepted inbound message (default 64 MiB).

    Yields:
        the stream; the connection is closed on exit.

    Raises:
        ConnectionClosed: the server refused the handshake (the HTTP status
            is in the message and in the chained cause).
        OSError: the TCP connection failed.
        TimeoutError: the opening handshake timed out.
    """
    backend = _BACKENDS[current_backend()]
    try:
        opened = backend.connect(url, headers=headers, max_bytes=max_bytes)
        conn = await opened.__aenter__()
    except wsexc.InvalidStatus as exc:
        status = exc.response.status_code
        raise ConnectionClosed(f"websocket handshake refused: HTTP {status}"
                               f"{_reason(exc.response.body)}") from exc
    except wsexc.InvalidHandshake as exc:
        raise ConnectionClosed(f"websocket handshake failed: {exc}") from exc
    stream = WebSocketStream(
        conn, backend.closer(conn), max_bytes=max_bytes, name=f"websocket client {url}",
        try_send=backend.try_send(conn),
    )
    try:
        yield stream
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        await opened.__aexit__(None, None, None)


@asynccontextmanager
async def serve_websocket(
    handler: WebSocketHandler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    process_request: RequestCheck | None = None,
) -> AsyncIterator[WebSocketServer]:
    """Serve WebSocket connections, calling ``handler(stream, request)`` for each.

    Args:
        handler: serves one connection; the connection is closed when it
            returns (1000), or fails with 1011 if it raises.
        host: the address to bind (loopback by default).
        port: the port to bind (0: any free port; see ``server.port``). With 0, a
            ``host`` naming several addresses (``localhost``: ``::1`` and
            ``127.0.0.1``) is bound on its first one only (the one this machine
            can bind), which ``server.host`` names (bound together, each address
            would get a free port of its own).
        max_bytes: the largest accepted inbound message (default 64 MiB).
        process_request: checks each handshake (path, headers) first and
            may refuse it with an HTTP status, e.g. for token auth or an
            ``Origin`` check, or answer a plain HTTP ``GET`` with an
            :class:`HttpResponse`.

    Yields:
        the server; on exit it stops listening, closes open connections
        (1001) and waits for the handlers to return.
    """
    backend = _BACKENDS[current_backend()]

    async def on_connection(conn: Any) -> None:
        info = _request_info(conn)
        name = f"websocket server {info.path.partition('?')[0]} from {info.remote_address}"
        stream = WebSocketStream(
            conn, backend.closer(conn), max_bytes=max_bytes, name=name,
            try_send=backend.try_send(conn),
        )
        # websockets closes the connection when this returns: 1000, or 1011
        # (and an error logged) if the handler raised.
        await handler(stream, info)

    check = None if process_request is None else functools.partial(_check, process_request)
    candidates = await _one_address(host) if port == 0 else [host]
    async with AsyncExitStack() as stack:
        for address in candidates:  # (the first that this machine can bind)
            try:
                bound_port = await stack.enter_async_context(backend.serve(
                    on_connection, host=address, port=port, max_bytes=max_bytes,
                    process_request=check,
                ))
            except OSError as exc:
                if address == candidates[-1] or exc.errno not in _FAMILY_NOT_HERE:
                    raise
                continue
            yield WebSocketServer(address, bound_port)
            return


_FAMILY_NOT_HERE = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
"""A bind's errors that say the address's family is not usable on this machine (IPv6 off)."""


async def _one_address(host: str) -> list[str]:
    """For a free port (0): ``[host]``, or when ``host`` names several addresses
    (``localhost``: ``::1`` and ``127.0.0.1``) those addresses, in the resolver's order,
    to bind only the first usable one: bound together, each would get a free port of its
    own, and a client told one port would find another server, or none, on the others."""
    try:
        ipaddress.ip_address(host)
        return [host]  # (an address: no resolver asked)
    except ValueError:
        pass
    try:
        found = await anyio.getaddrinfo(host, 0, type=socket.SOCK_STREAM,
                                        flags=socket.AI_PASSIVE)
    except OSError:
        return [host]  # (the bind says what is wrong with it)
    addresses = list(dict.fromkeys(str(sockaddr[0]) for *_, sockaddr in found))
    return addresses if len(addresses) > 1 else [host]


def _reason(body: bytes | bytearray | None) -> str:
    """`` (the server's text)``: the first line of a refusal's body, bounded and printable."""
    line = (body or b"")[:200].decode("utf-8", "replace").strip().split("\n", 1)[0]
    text = "".join(c if c.isprintable() else "?" for c in line).strip()
    return f" ({text})" if text else ""


def _request_info(conn: Any) -> WebSocketRequest:
    request: Request = conn.request
    return _info(request, conn.remote_address)


def _info(request: Request, remote_address: Any) -> WebSocketRequest:
    headers: dict[str, str] = {}
    for key, value in request.headers.raw_items():
        key = key.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return WebSocketRequest(request.path, headers, remote_address)


def _check(process_request: RequestCheck, conn: Any, request: Request) -> Response | None:
    refusal = process_request(_info(request, conn.remote_address))
    if refusal is None:
        return None
    if isinstance(refusal, HttpResponse):
        return _http_response(refusal)
    status, text = refusal
    log.info(
        "websocket handshake for %s refused: %d %s", request.path.partition("?")[0], status, text
    )
    response: Response = conn.respond(status, text + "\n")
    return response


def _http_response(answer: HttpResponse) -> Response:
    from http import HTTPStatus

    from websockets.datastructures import Headers
    from websockets.http11 import Response

    headers = Headers(answer.headers)
    headers["Content-Length"] = str(len(answer.body))
    headers["Connection"] = "close"
    try:
        reason = HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    return Response(answer.status, reason, headers, answer.body)


# ------------------------------------------------------------------ backends

def _asyncio_connect(
    url: str, *, headers: Any, max_bytes: int
) -> AbstractAsyncContextManager[Any]:
    from websockets.asyncio.client import connect

    return connect(url, additional_headers=headers, max_size=max_bytes, compression=None)


@asynccontextmanager
async def _asyncio_serve(
    on_connection: Callable[[Any], Awaitable[None]],
    *,
    host: str,
    port: int,
    max_bytes: int,
    process_request: Any,
) -> AsyncIterator[int]:
    from websockets.asyncio.server import serve

    async with serve(
        on_connection, host, port, max_size=max_bytes, process_request=process_request,
        compression=None,
    ) as server:
        yield next(iter(server.sockets)).getsockname()[1]


def _trio_connect(url: str, *, headers: Any, max_bytes: int) -> AbstractAsyncContextManager[Any]:
    from wireproto.transports import _wsends

    return _wsends.connect(url, headers=headers, max_bytes=max_bytes)


def _trio_serve(
    on_connection: Callable[[Any], Awaitable[None]],
    *,
    host: str,
    port: int,
    max_bytes: int,
    process_request: Any,
) -> AbstractAsyncContextManager[int]:
    from wireproto.transports import _wsends

    return _wsends.serve(
        on_connection, host=host, port=port, max_bytes=max_bytes, process_request=process_request
    )


_ASYNCIO_SEND_STATE = ("send_in_progress", "paused", "protocol", "transport", "send_data")
"""What :func:`_asyncio_try_send` reads of a ``websockets.asyncio`` connection."""


def _asyncio_try_send(conn: Any, payload: bytes | memoryview) -> bool:
    """One text frame written now when ``websockets.asyncio`` would not wait for it.

    Its ``send`` is a coroutine; this checks what it would wait for (a
    fragmented message being sent, a paused transport, a connection not
    open) and otherwise does what it does: the protocol makes the frame and
    the transport takes the bytes.
    """
    if (
        conn.send_in_progress is not None
        or conn.paused
        or conn.protocol.state is not State.OPEN
        or conn.transport.is_closing()
    ):
        return False
    conn.protocol.send_text(payload)
    conn.send_data()
    return True


def _asyncio_direct(conn: Any) -> Callable[[Any, bytes | memoryview], bool] | None:
    # (a websockets version without that state: no direct writes)
    return _asyncio_try_send if all(hasattr(conn, a) for a in _ASYNCIO_SEND_STATE) else None


def _trio_try_send(conn: Any, payload: bytes | memoryview) -> bool:
    taken: bool = conn.try_send(payload)
    return taken


@dataclasses.dataclass(frozen=True)
class _Backend:
    connect: Callable[..., AbstractAsyncContextManager[Any]]
    serve: Callable[..., AbstractAsyncContextManager[int]]
    closer: Callable[[Any], Callable[[int, str], Awaitable[None]]]
    try_send: Callable[[Any], Callable[[Any, bytes | memoryview], bool] | None]


_BACKENDS: dict[str, _Backend] = {
    "asyncio": _Backend(
        _asyncio_connect, _asyncio_serve, lambda conn: conn.close, _asyncio_direct
    ),
    "trio": _Backend(
        _trio_connect, _trio_serve, lambda conn: conn.close, lambda conn: _trio_try_send
    ),
}
"""WebSocket implementation per event loop: connect, serve, how to close, how to
write a message without waiting."""
