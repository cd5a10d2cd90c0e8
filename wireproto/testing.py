"""Public helpers for testing code built on wireproto.

Everything here runs in memory, on any anyio backend:

* :class:`RecordingStream` wraps an ``ObjectStream[bytes]`` and records what
  is written through it, including how many messages each write carried
  (to observe the peer's writer coalescing);
* :class:`NdjsonProbe` is the far end of a newline-delimited byte stream,
  driven with raw bytes: it hands a :class:`~wireproto.rpc.peer.Peer` a stream
  that frames exactly as a stdio transport does (so oversized lines raise
  :class:`~wireproto.errors.MessageTooLarge`), and reads back the raw bytes
  the peer wrote;
* :func:`peer_pair` and :func:`probe_peer` open ready-to-use peers.

Example::

    async with probe_peer(router) as (peer, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')
        assert await probe.read_json() == {"jsonrpc": "2.0", "id": 1, "result": "pong"}
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import msgspec

from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES, LineFramer
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.transports.memory import memory_pair

__all__ = ["NdjsonProbe", "RecordingStream", "peer_pair", "probe_peer"]


class RecordingStream(anyio.abc.ObjectStream[bytes]):
    """An ``ObjectStream[bytes]`` that records every write, then forwards it.

    Args:
        inner: the stream written to and read from.

    Attributes:
        sent: every message written, in order.
        batches: the number of messages of each write operation (``1`` for
            :meth:`send`, ``len(items)`` for :meth:`send_many`).
    """

    def __init__(self, inner: anyio.abc.ObjectStream[bytes]) -> None:
        self.inner = inner
        self.sent: list[bytes] = []
        self.batches: list[int] = []

    async def send(self, item: bytes) -> None:
        """Record and forward one message."""
        self.sent.append(item)
        self.batches.append(1)
        await self.inner.send(item)

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Record and forward several messages as one write."""
        self.sent.extend(items)
        self.batches.append(len(items))
        for item in items:
            await self.inner.send(item)

    async def receive(self) -> bytes:
        """Receive from the wrapped stream."""
        return await self.inner.receive()

    async def send_eof(self) -> None:
        """Forward end-of-file to the wrapped stream."""
        await self.inner.send_eof()

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self.inner.aclose()


class _FramedEnd(anyio.abc.ObjectStream[bytes]):
    """The peer's side of an :class:`NdjsonProbe`: frames raw chunks into messages."""

    def __init__(
        self,
        chunks: anyio.abc.ObjectReceiveStream[bytes],
        out: anyio.abc.ObjectSendStream[bytes],
        max_bytes: int,
    ) -> None:
        self._chunks = chunks
        self._out = out
        self.framer = LineFramer(max_bytes)

    async def receive(self) -> bytes:
        while True:
            message = self.framer.next_message()  # may raise MessageTooLarge
            if message is not None:
                return message
            self.framer.feed(await self._chunks.receive())

    async def send(self, item: bytes) -> None:
        await self._out.send(item)

    async def send_eof(self) -> None:
        self._out.close()

    async def aclose(self) -> None:
        self._out.close()
        self._chunks.close()


class NdjsonProbe:
    """The far end of a newline-delimited JSON byte stream, driven with raw bytes.

    Give :attr:`stream` to the code under test (usually a
    :class:`~wireproto.rpc.peer.Peer`); then :meth:`write` raw bytes in any
    chunking and :meth:`read` the raw messages it answers with.

    Args:
        max_bytes: the framer's maximum message size.
        buffer: chunks / messages buffered per direction before a writer waits.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, buffer: int = 64) -> None:
        self._chunks_in, chunks_out = anyio.create_memory_object_stream[bytes](buffer)
        out_in, self._answers = anyio.create_memory_object_stream[bytes](buffer)
        self._end = _FramedEnd(chunks_out, out_in, max_bytes)

    @property
    def stream(self) -> anyio.abc.ObjectStream[bytes]:
        """The stream for the code under test (whole messages in, bytes out)."""
        return self._end

    @property
    def framer(self) -> LineFramer:
        """The framer splitting what :meth:`write` sends (to inspect buffering)."""
        return self._end.framer

    async def write(self, data: bytes) -> None:
        """Send raw bytes (any part of a line, or several lines)."""
        await self._chunks_in.send(data)

    async def write_json(self, message: Any) -> None:
        """Send one value as a compact JSON line."""
        await self.write(msgspec.json.encode(message) + b"\n")

    def write_eof(self) -> None:
        """End the input: the reader under test sees end-of-stream."""
        self._chunks_in.close()

    async def read(self) -> bytes:
        """Return the next raw message written by the code under test.

        Raises:
            anyio.EndOfStream: the code under test closed its side.
        """
        return await self._answers.receive()

    async def read_json(self) -> Any:
        """Return the next message written by the code under test, decoded."""
        return msgspec.json.decode(await self.read())

    def read_nowait(self) -> bytes:
        """Return an already written message.

        Raises:
            anyio.WouldBlock: nothing is waiting.
        """
        return self._answers.receive_nowait()

    async def assert_silent(self) -> None:
        """Let every task run until blocked; fail if anything was written."""
        await anyio.wait_all_tasks_blocked()
        try:
            extra = self._answers.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return
        raise AssertionError(f"unexpected message: {extra!r}")

    async def aclose(self) -> None:
        """Close both directions of the probe."""
        self._chunks_in.close()
        self._answers.close()


@asynccontextmanager
async def peer_pair(
    a_router: Router | None = None,
    b_router: Router | None = None,
    *,
    max_buffer: int = 64,
    **options: Any,
) -> AsyncIterator[tuple[Peer, Peer]]:
    """Open two peers connected back to back in memory.

    Args:
        a_router / b_router: the handlers of each side.
        max_buffer: messages buffered per direction of the memory transport.
        options: keyword arguments for both :class:`~wireproto.rpc.peer.Peer`\\ s.

    Yields:
        ``(a, b)``, both running; both are closed on exit.
    """
    sa, sb = memory_pair(max_buffer)
    async with Peer(sa, a_router, name="a", **options) as a, Peer(
        sb, b_router, name="b", **options
    ) as b:
        yield a, b


@asynccontextmanager
async def probe_peer(
    router: Router | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **options: Any,
) -> AsyncIterator[tuple[Peer, NdjsonProbe]]:
    """Open a peer whose other end is an :class:`NdjsonProbe`.

    Yields:
        ``(peer, probe)``; the peer is closed, then the probe, on exit.
    """
    probe = NdjsonProbe(max_bytes=max_bytes)
    try:
        async with Peer(probe.stream, router, name="peer", **options) as peer:
            yield peer, probe
    finally:
        await probe.aclose()
