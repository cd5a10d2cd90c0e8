"""Whole messages over a byte stream: the shared core of stdio and subprocess.

Theory of operation
-------------------
:class:`FramedStream` staples a byte receive stream and a byte send stream
into one ``ObjectStream[bytes]``. It only pumps: received chunks are fed to a
:class:`~wireproto.jsonrpc.framing.LineFramer` and complete lines handed out
one per :meth:`~FramedStream.receive`; sent messages are terminated with
exactly one ``\\n`` by :func:`~wireproto.jsonrpc.framing.frame` and written,
several at once joined into a single write by :meth:`~FramedStream.send_many`.
When the byte stream can write without waiting (:class:`SupportsWriteNowait`,
e.g. a non-blocking pipe), :meth:`~FramedStream.try_send` writes a message
at once from the caller; bytes a full pipe did not take are kept and written
first by the next send. ``send`` and ``send_many`` then write what the pipe
takes at once too, and wait (through the byte stream's ``send``) only for
the rest: a write that fits costs no event-loop iteration.
Every :data:`YIELD_EVERY` messages handed out from buffered bytes,
``receive`` yields to the event loop once, so the tasks those messages woke
run (and answer) while the rest of a large read waits.
:meth:`~FramedStream.receive_buffered` hands out the messages already
buffered as one list, without a coroutine or a call per message (none when
a yield is due: ``receive`` then yields).

Exceptions follow the anyio stream conventions (``EndOfStream`` for a clean
end, ``BrokenResourceError`` when the other side vanished,
``ClosedResourceError`` after our own close); an ``OSError`` escaping the
underlying stream is converted to ``BrokenResourceError`` here, chained with
``from``. A line over ``max_bytes`` raises
:class:`~wireproto.errors.MessageTooLarge` once and the stream stays usable.
At end of input an unterminated, non-blank last line is still delivered.

``WIREPROTO_NO_FAST_PATHS=1`` turns off the writes without waiting
(``try_send`` then never takes a message, every write goes through the byte
stream's ``send``) and the reads without a cancel scope of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Protocol, cast, runtime_checkable

import anyio
import anyio.abc
import anyio.lowlevel

from wireproto._switches import FAST_PATHS
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES, LineFramer, frame

__all__ = [
    "JOIN_BYTES",
    "READ_SIZE",
    "YIELD_EVERY",
    "FramedStream",
    "SupportsWakeOnClose",
    "SupportsWriteNowait",
]

READ_SIZE = 64 * 1024
"""Bytes asked for per read of the underlying stream."""

JOIN_BYTES = 256 * 1024
"""The most bytes of several messages :meth:`FramedStream.send_many` joins into one write."""

_NEWLINES = repeat(b"\n")  # (the endings to check, as many as there are messages)

YIELD_EVERY = 32
"""Messages handed out from one read between two yields to the event loop.

A read can bring many messages; without a yield the consumer would take all
of them before the tasks they woke (handlers, the writer) run, so two peers
would take turns in large batches instead of working at the same time."""


@runtime_checkable
class SupportsWriteNowait(Protocol):
    """A byte stream that can write without waiting."""

    def write_nowait(self, data: bytes) -> int:
        """Write what fits now; return the number of bytes written (0 if none).

        Raises:
            anyio.BrokenResourceError: the reader went away.
            anyio.ClosedResourceError: the stream was closed.
        """


@runtime_checkable
class SupportsWakeOnClose(Protocol):
    """A byte receive stream whose ``aclose`` wakes a pending ``receive`` by itself.

    Reads from it need no cancel scope of their own for :meth:`FramedStream.aclose`
    to interrupt them (a scope per read costs more than a small message); to
    stop receiving without closing it (a child process's stdout), its
    pending ``receive`` is woken with :meth:`interrupt_receive`.
    """

    @property
    def wakes_on_close(self) -> bool:
        """Whether ``aclose`` makes a pending ``receive`` raise."""

    def interrupt_receive(self) -> None:
        """Make a ``receive`` waiting for bytes raise ``anyio.ClosedResourceError`` now."""


class FramedStream(anyio.abc.ObjectStream[bytes]):
    """Newline-framed messages over a pair of byte streams.

    Args:
        receive_stream: where messages come from (``None``: receiving
            raises ``EndOfStream`` at once).
        send_stream: where messages go (``None``: sending raises
            ``ClosedResourceError``).
        max_bytes: the largest accepted inbound message, terminator excluded.
    """

    def __init__(
        self,
        receive_stream: anyio.abc.ByteReceiveStream | None,
        send_stream: anyio.abc.ByteSendStream | None,
        *,
        max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self._rx = receive_stream
        self._tx = send_stream
        self._framer = LineFramer(max_bytes)
        self._eof = receive_stream is None
        self._closed = False
        self._tx_closed = send_stream is None
        self._read_scope: anyio.CancelScope | None = None
        self._scoped_reads = not (
            FAST_PATHS
            and isinstance(receive_stream, SupportsWakeOnClose)
            and receive_stream.wakes_on_close
        )
        self._streak = 0
        self._carry = b""  # bytes try_send took but the stream did not
        self.needs_flush = False
        """Whether part of a message taken by :meth:`try_send` is still unwritten."""
        self._write_nowait = (
            send_stream.write_nowait
            if FAST_PATHS and isinstance(send_stream, SupportsWriteNowait)
            else None
        )

    @property
    def max_bytes(self) -> int:
        """The largest accepted inbound message."""
        return self._framer.max_bytes

    @property
    def buffered(self) -> int:
        """Inbound bytes held while waiting for the end of a line."""
        return self._framer.buffered

    @property
    def byte_streams(
        self,
    ) -> tuple[anyio.abc.ByteReceiveStream | None, anyio.abc.ByteSendStream | None]:
        """The byte streams under this one (receiving, sending), for a relay
        that pumps bytes itself while this stream is not used."""
        return self._rx, self._tx

    def receive_buffered(self) -> list[bytes]:
        """Return the whole messages already buffered, without waiting (possibly none).

        At most as many as may be handed out before a yield is due (see
        :data:`YIELD_EVERY`): then none, and :meth:`receive` yields first.
        An oversized line is left to :meth:`receive` to report.
        """
        return self._take(YIELD_EVERY)

    def receive_nowait(self) -> bytes:
        """Return the next whole message if one is buffered and no yield is due.

        Raises:
            anyio.WouldBlock: await :meth:`receive` instead (it also reports
                an oversized line).
        """
        msgs = self._take(1)
        if not msgs:
            raise anyio.WouldBlock
        return msgs[0]

    def _take(self, limit: int) -> list[bytes]:
        room = min(limit, YIELD_EVERY - 1 - self._streak)
        if room <= 0 or self._closed:
            return []
        msgs = self._framer.take(room)
        self._streak += len(msgs)
        return msgs

    async def receive(self) -> bytes:
        """Return the next whole message, without its terminator.

        Raises:
            anyio.EndOfStream: the other side finished sending.
            anyio.BrokenResourceError: the other side vanished.
            anyio.ClosedResourceError: this stream was closed.
            MessageTooLarge: a line over ``max_bytes`` was discarded; call
                again to continue with the next line.
        """
        framer = self._framer
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            msg = framer.next_message()
            if msg is not None:
                self._streak += 1
                if self._streak >= YIELD_EVERY:
                    # let the consumers of the messages handed out so far run
                    # (and answer) before the rest of a large read is handled;
                    # also where a cancellation of the consumer is delivered
                    # (a cancelled consumer may take up to YIELD_EVERY - 1
                    # buffered messages before it notices)
                    self._streak = 0
                    await anyio.lowlevel.checkpoint()
                return msg
            if self._eof:
                await anyio.lowlevel.checkpoint()
                raise anyio.EndOfStream
            assert self._rx is not None
            data = b""
            self._streak = 0
            try:
                if self._scoped_reads:
                    with anyio.CancelScope() as self._read_scope:
                        data = await self._rx.receive(READ_SIZE)
                else:  # (closing the byte stream wakes the read)
                    data = await self._rx.receive(READ_SIZE)
            except anyio.EndOfStream:
                self._eof = True
                framer.feed(b"\n")  # deliver an unterminated last line
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError(f"read failed: {exc}") from exc
            finally:
                self._read_scope = None
            framer.feed(data)  # empty if interrupted by aclose: the loop raises

    async def send(self, item: bytes) -> None:
        """Send one message, terminated by exactly one ``\\n``.

        Raises:
            anyio.BrokenResourceError: the other side stopped reading.
            anyio.ClosedResourceError: this side was closed or sent EOF.
        """
        await self._write(frame(item))

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Send several messages, in order, in few writes (none: only flush).

        Small messages are joined into writes of up to :data:`JOIN_BYTES`; a
        larger one is written on its own, so a batch of big messages is
        never copied whole (which would double the sender's memory).
        """
        if len(items) == 1:
            await self._write(frame(items[0]))
            return
        if sum(map(len, items)) + len(items) <= JOIN_BYTES:  # (most batches: one write)
            try:  # (framed already: no loop)
                framed = all(map(bytes.endswith, items, _NEWLINES))
            except TypeError:  # (not all bytes: a bytearray, say)
                framed = False
            await self._write(b"".join(items if framed else map(frame, items)))
            return
        group: list[bytes] = []
        size = 0
        for item in items:
            data = frame(item)
            if group and size + len(data) > JOIN_BYTES:
                await self._write(group[0] if len(group) == 1 else b"".join(group))
                group, size = [], 0
            group.append(data)
            size += len(data)
        await self._write(group[0] if len(group) == 1 else b"".join(group))

    def try_send(self, item: bytes) -> bool:
        """Write one message now if the byte stream can; return whether it was taken.

        Not taken (``False``) when the byte stream cannot write without
        waiting, is full, or still holds the rest of an earlier message. A
        message taken in part leaves the rest for the next send
        (:attr:`needs_flush`).

        Raises:
            anyio.BrokenResourceError: the other side stopped reading.
            anyio.ClosedResourceError: this side was closed or sent EOF.
        """
        if self._closed or self._tx_closed:
            raise anyio.ClosedResourceError
        write = self._write_nowait
        if write is None or self._carry:
            return False
        data = item if item.endswith(b"\n") else item + b"\n"  # (frame(item), inline)
        try:
            written = write(data)
        except OSError as exc:
            raise anyio.BrokenResourceError(f"write failed: {exc}") from exc
        if written < len(data):
            if not written:
                return False
            self._carry = data[written:]
            self.needs_flush = True
        return True

    async def _write(self, data: bytes) -> None:
        if self._closed or self._tx_closed or self._tx is None:
            await anyio.lowlevel.checkpoint()
            raise anyio.ClosedResourceError
        if self._carry:
            data, self._carry = self._carry + data, b""
            self.needs_flush = False
        elif not data:
            await anyio.lowlevel.checkpoint()
            return
        write = self._write_nowait
        if write is not None:  # what the pipe takes now needs no trip through the loop
            written = write(data)
            if written == len(data):
                return
            data = data[written:]
        try:
            await self._tx.send(data)
        except OSError as exc:
            raise anyio.BrokenResourceError(f"write failed: {exc}") from exc

    async def send_eof(self) -> None:
        """Close the sending side; the other side then sees end of stream."""
        self._tx_closed = True
        if self._tx is not None:
            await self._tx.aclose()

    def _interrupt_read(self) -> None:
        """Mark the stream closed and wake a ``receive`` waiting for bytes."""
        self._closed = True
        self._tx_closed = True
        if self._read_scope is not None:
            self._read_scope.cancel()
        elif not self._scoped_reads:
            cast(SupportsWakeOnClose, self._rx).interrupt_receive()

    async def aclose(self) -> None:
        """Close both directions (idempotent); a pending ``receive`` raises
        ``ClosedResourceError``."""
        if self._closed:
            await anyio.lowlevel.checkpoint()
            return
        self._interrupt_read()
        try:
            if self._tx is not None:
                await self._tx.aclose()
        finally:
            if self._rx is not None:
                await self._rx.aclose()
