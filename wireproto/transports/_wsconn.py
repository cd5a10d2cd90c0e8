"""A small WebSocket connection on anyio TCP streams (used on trio).

Theory of operation
-------------------
``websockets``' sans-I/O protocol objects (:class:`~websockets.client.ClientProtocol`,
:class:`~websockets.server.ServerProtocol`) make every protocol decision: the
opening handshake, framing, the ``max_size`` check (close 1009), automatic
pongs, the closing handshake. :class:`Connection` only pumps bytes between
such an object and an anyio byte stream, with three tasks owned by the task
group of :meth:`Connection.running`:

- the *reader* reads from the socket, feeds the protocol, queues whole
  messages for :meth:`Connection.recv` (at most :data:`_QUEUE_HIGH` before it
  stops reading, which is TCP back-pressure) and hands whatever the protocol
  wants to send (pongs, close frames) to the writer. It never waits for the
  writer: that is what keeps two ends that both send large messages at once
  from deadlocking (each end keeps reading while its writes are blocked);
- the *writer* is the only task that writes to the socket. Producers
  (``send``, ``ping``, ``close`` and the reader) append the protocol's output
  to an outbox synchronously, so frames go out in the order they were made;
  :meth:`Connection.send` then waits only while more than
  :data:`_OUTBOX_HIGH` bytes are unwritten;
- the *keepalive* pings every ``ping_interval`` seconds and fails the
  connection (1011) when no pong comes within ``ping_timeout``.

When a close frame was sent or received, the reader gets ``close_timeout``
seconds to see the end of the TCP stream; after that it gives up and the
connection is closed abnormally (1006). Errors are the ``websockets`` ones
(``ConnectionClosed*`` from the protocol's ``close_exc``, ``ConcurrencyError``,
``InvalidHandshake``), so the caller converts them in one place.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.lowlevel
import websockets.exceptions as wsexc
from websockets.client import ClientProtocol
from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import USER_AGENT, Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol

__all__ = ["Connection", "RequestCheck"]

log = logging.getLogger(__name__)

OPEN_TIMEOUT = 10.0
"""Seconds for the TCP connection plus the opening handshake."""
CLOSE_TIMEOUT = 10.0
"""Seconds to wait for the peer to finish the closing handshake."""
PING_INTERVAL = 20.0
"""Seconds between keepalive pings (as the websockets library does)."""
PING_TIMEOUT = 20.0
"""Seconds a keepalive ping waits for its pong before failing the connection."""

_QUEUE_HIGH = 16
"""Received messages queued before the reader stops reading."""
_OUTBOX_HIGH = 64 * 1024
"""Unwritten bytes above which ``send`` waits for the writer."""
_JOIN_LIMIT = 64 * 1024
"""Small chunks are joined into one socket write up to this size."""
_READ_SIZE = 256 * 1024

_DATA = (Opcode.TEXT, Opcode.BINARY)
_BROKEN = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
"""What a failed socket read or write raises."""

_AnyProtocol = ClientProtocol | ServerProtocol
RequestCheck = Callable[[Any, Request], "Response | None"]


class Connection:
    """One WebSocket connection over an anyio byte stream.

    Created by :func:`~wireproto.transports._wsends.connect` and
    :func:`~wireproto.transports._wsends.serve`; the tasks that pump it run
    inside :meth:`running`.

    Attributes:
        request: the opening handshake's request (server side, once read).
        remote_address: the peer's address as the socket reports it.
    """

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        protocol: _AnyProtocol,
        *,
        close_timeout: float = CLOSE_TIMEOUT,
        ping_interval: float | None = PING_INTERVAL,
        ping_timeout: float = PING_TIMEOUT,
    ) -> None:
        self._stream = stream
        self._protocol = protocol
        self._close_timeout = close_timeout
        self._ping_interval = ping_interval
        self._ping_timeout = ping_timeout
        self.request: Request | None = None
        self.remote_address: Any = stream.extra(anyio.abc.SocketAttribute.remote_address, None)
        # reader side
        self._messages: collections.deque[bytes] = collections.deque()
        self._fragments: list[bytes] = []
        self._receiving = False
        self._message_wake = anyio.Event()  # a message was queued or the reader ended
        self._room_wake = anyio.Event()  # the queue has room or a close started
        self._read_scope = anyio.CancelScope()
        self._closed = anyio.Event()  # the reader ended: the protocol is CLOSED
        # writer side
        self._outbox: list[bytes] = []
        self._pending = 0  # bytes in the outbox and being written
        self._writer_wake = anyio.Event()
        self._progress = anyio.Event()  # some bytes were written or the writer ended
        self._writer_done = False
        self._pings: dict[bytes, anyio.Event] = {}

    # ------------------------------------------------------------ public API

    async def recv(self, decode: Literal[False] = False) -> bytes:
        """Return the next message (text or binary) as bytes.

        Raises:
            websockets.exceptions.ConnectionClosed: the connection is closed
                and every message received before was returned.
            websockets.exceptions.ConcurrencyError: another task is receiving.
        """
        if self._receiving:
            raise wsexc.ConcurrencyError("another task is already receiving from this connection")
        self._receiving = True
        try:
            while not self._messages:
                if self._closed.is_set():
                    raise self._protocol.close_exc
                self._message_wake = anyio.Event()
                await self._message_wake.wait()
            message = self._messages.popleft()
            if len(self._messages) < _QUEUE_HIGH:
                self._room_wake.set()
            return message
        finally:
            self._receiving = False

    async def send(self, message: bytes | memoryview, *, text: bool | None = True) -> None:
        """Send one message as one frame (text unless ``text`` is false).

        Returns once the message is queued for the writer and at most
        :data:`_OUTBOX_HIGH` bytes are still unwritten.

        Raises:
            websockets.exceptions.ConnectionClosed: the connection is closing or closed.
        """
        if self._protocol.state is not State.OPEN or self._writer_done:
            raise await self._close_error()
        if text is False:
            self._protocol.send_binary(message)
        else:
            self._protocol.send_text(message)
        self._flush()
        if self._pending <= _OUTBOX_HIGH:
            # No schedule point: the writer batches what accumulates meanwhile.
            await anyio.lowlevel.checkpoint_if_cancelled()
        while self._pending > _OUTBOX_HIGH and not self._writer_done:
            if self._progress.is_set():  # shared by every waiting sender
                self._progress = anyio.Event()
            await self._progress.wait()
        if self._writer_done and self._pending:
            raise await self._close_error()

    def try_send(self, message: bytes | memoryview) -> bool:
        """Queue one text message for the writer now if ``send`` would not wait;
        return whether it was taken."""
        if (
            self._protocol.state is not State.OPEN
            or self._writer_done
            or self._pending > _OUTBOX_HIGH
        ):
            return False
        self._protocol.send_text(message)
        self._flush()
        return True

    async def ping(self, data: bytes = b"") -> None:
        """Send a ping and wait for the matching pong.

        Raises:
            websockets.exceptions.ConnectionClosed: the connection closed first.
        """
        if self._protocol.state is not State.OPEN:
            raise await self._close_error()
        pong = self._pings.setdefault(data, anyio.Event())
        self._protocol.send_ping(data)
        self._flush()
        await pong.wait()
        if self._closed.is_set() and data in self._pings:
            raise self._protocol.close_exc

    async def close(self, code: int = CloseCode.NORMAL_CLOSURE, reason: str = "") -> None:
        """Start the closing handshake (unless started) and wait until it ends.

        Gives the peer ``close_timeout`` seconds, then closes abnormally.
        """
        self.start_close(code, reason)
        await self._closed.wait()

    def start_close(self, code: int, reason: str = "") -> None:
        """Send a close frame now (unless one was), without waiting for the answer."""
        if self._protocol.state is State.OPEN:
            self._protocol.send_close(code, reason)
            self._flush()
            self._expect_close()

    def respond(self, status: int, text: str) -> Response:
        """Build an HTTP response refusing the opening handshake (server side)."""
        assert isinstance(self._protocol, ServerProtocol)
        return self._protocol.reject(status, text)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Connection]:
        """Run the reader, writer and keepalive tasks; close the connection on exit.

        On exit the closing handshake is completed (1000 unless a close was
        already started), the tasks are stopped and the socket is closed.
        """
        # Entered and left by hand so that an exception from the body
        # propagates as itself rather than inside an ExceptionGroup.
        tg = anyio.create_task_group()
        await tg.__aenter__()
        try:
            tg.start_soon(self._read_loop)
            tg.start_soon(self._write_loop)
            if self._ping_interval is not None:
                tg.start_soon(self._keepalive, self._ping_interval)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    await self.close()
        finally:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()

    # ----------------------------------------------------------- handshakes

    async def client_handshake(self, headers: Any) -> None:
        """Send the opening request with extra ``headers``; read the response.

        Raises:
            websockets.exceptions.InvalidHandshake: refused (``InvalidStatus``)
                or malformed.
        """
        protocol = self._protocol
        assert isinstance(protocol, ClientProtocol)
        request = protocol.connect()
        if headers is not None:
            request.headers.update(headers)
        if "User-Agent" not in request.headers:
            request.headers["User-Agent"] = USER_AGENT
        protocol.send_request(request)
        await self._write_now(protocol.data_to_send())
        while True:
            events = await self._receive_events()
            if protocol.handshake_exc is not None:
                raise protocol.handshake_exc
            if events:  # the first is the response; frames may follow
                self._handle_events(events[1:])
                return

    async def server_handshake(self, check: RequestCheck | None) -> bool:
        """Read the opening request, check it, and accept or refuse it.

        Returns:
            whether the connection is open (a refusal was sent otherwise).
        """
        protocol = self._protocol
        assert isinstance(protocol, ServerProtocol)
        while True:
            events = await self._receive_events()
            if protocol.handshake_exc is not None:  # malformed request
                await self._refused()
                return False
            if events:
                break
        request = events[0]
        assert isinstance(request, Request)
        self.request = request
        response = None if check is None else check(self, request)
        if response is None:
            response = protocol.accept(request)
            response.headers["Server"] = USER_AGENT
        protocol.send_response(response)
        if response.status_code != 101:
            await self._refused()
            return False
        await self._write_now(protocol.data_to_send())
        self._handle_events(events[1:])
        return True

    async def _receive_events(self) -> list[Any]:
        try:
            data = await self._stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            self._protocol.receive_eof()
        else:
            self._protocol.receive_data(data)
        return self._protocol.events_received()

    async def _refused(self) -> None:
        """Send the refusal and EOF, then wait a little for the client to hang up."""
        await self._write_now(self._protocol.data_to_send())
        with anyio.move_on_after(self._close_timeout):
            try:
                while True:
                    await self._stream.receive()
            except (anyio.EndOfStream, *_BROKEN):
                pass

    async def _write_now(self, chunks: list[bytes]) -> None:
        """Write directly (only before the writer runs)."""
        for chunk in chunks:
            if not chunk:  # SEND_EOF
                await self._stream.send_eof()
                return
            await self._stream.send(chunk)

    # --------------------------------------------------------------- reader

    async def _read_loop(self) -> None:
        protocol = self._protocol
        try:
            with self._read_scope:
                while True:
                    while len(self._messages) >= _QUEUE_HIGH and protocol.state is State.OPEN:
                        self._room_wake = anyio.Event()
                        await self._room_wake.wait()
                    try:
                        data = await self._stream.receive(_READ_SIZE)
                    except anyio.EndOfStream:
                        break
                    except _BROKEN as exc:
                        log.debug("websocket read failed: %r", exc)
                        break
                    protocol.receive_data(data)
                    self._flush()
                    self._handle_events(protocol.events_received())
                    if protocol.close_expected():
                        self._expect_close()
        finally:
            protocol.receive_eof()
            self._flush()
            self._closed.set()
            self._message_wake.set()
            self._writer_wake.set()
            for pong in self._pings.values():
                pong.set()

    def _handle_events(self, events: Iterable[Any]) -> None:
        for event in events:
            if not isinstance(event, Frame):
                continue
            opcode = event.opcode
            if opcode in _DATA or opcode is Opcode.CONT:
                self._fragments.append(bytes(event.data))
                if event.fin:
                    parts, self._fragments = self._fragments, []
                    self._messages.append(parts[0] if len(parts) == 1 else b"".join(parts))
                    self._message_wake.set()
            elif opcode is Opcode.PONG:
                self._acknowledge(bytes(event.data))

    def _acknowledge(self, data: bytes) -> None:
        """A pong answers its ping and every ping sent before it."""
        if data not in self._pings:
            return
        for key in list(self._pings):
            self._pings.pop(key).set()
            if key == data:
                break

    def _expect_close(self) -> None:
        """Give the reader ``close_timeout`` more seconds to see the end."""
        deadline = anyio.current_time() + self._close_timeout
        if deadline < self._read_scope.deadline:
            self._read_scope.deadline = deadline
        self._room_wake.set()

    # --------------------------------------------------------------- writer

    def _flush(self) -> None:
        """Move what the protocol wants to send into the writer's outbox."""
        chunks = self._protocol.data_to_send()
        if chunks:
            self._outbox.extend(chunks)
            self._pending += sum(len(chunk) for chunk in chunks)
            self._writer_wake.set()

    async def _write_loop(self) -> None:
        try:
            while True:
                if not self._outbox:
                    if self._closed.is_set():
                        return
                    self._writer_wake = anyio.Event()
                    await self._writer_wake.wait()
                    continue
                chunks, self._outbox = self._outbox, []
                for data in _batches(chunks):
                    if not data:  # SEND_EOF
                        await self._stream.send_eof()
                        return
                    await self._stream.send(data)
                    self._pending -= len(data)
                    self._progress.set()
        except _BROKEN as exc:
            log.debug("websocket write failed: %r", exc)
            self._read_scope.cancel()  # the reader ends the connection (1006)
        finally:
            self._writer_done = True
            self._progress.set()

    async def _close_error(self) -> wsexc.ConnectionClosed:
        """Wait until the connection is closed and return the exception for it."""
        await self._closed.wait()
        return self._protocol.close_exc

    # ------------------------------------------------------------ keepalive

    async def _keepalive(self, interval: float) -> None:
        while True:
            await anyio.sleep(interval)
            if self._protocol.state is not State.OPEN:
                return
            with anyio.move_on_after(self._ping_timeout) as scope:
                try:
                    await self.ping(anyio.current_time().hex().encode())
                except wsexc.ConnectionClosed:
                    return
            if scope.cancelled_caught and self._protocol.state is State.OPEN:
                log.warning("websocket keepalive: no pong within %s s", self._ping_timeout)
                self._protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
                self._flush()
                self._expect_close()
                return


def _batches(chunks: list[bytes]) -> Iterable[bytes]:
    """Join runs of small chunks into one write; ``SEND_EOF`` (empty) stays alone."""
    run: list[bytes] = []
    size = 0
    for chunk in chunks:
        if chunk and size + len(chunk) <= _JOIN_LIMIT:
            run.append(chunk)
            size += len(chunk)
            continue
        if run:
            yield run[0] if len(run) == 1 else b"".join(run)
        if chunk and len(chunk) <= _JOIN_LIMIT:
            run, size = [chunk], len(chunk)
        else:
            run, size = [], 0
            yield chunk
    if run:
        yield run[0] if len(run) == 1 else b"".join(run)
