"""The peer's single writer (a part of the peer).

Theory of operation
-------------------
Producers (requests, notifications, answers) encode their message and hand
the bytes to the :class:`Writer`, which keeps a bounded queue and one task,
:meth:`Writer._run`, the only one that waits on the stream. It takes whatever
is queued (up to :data:`BATCH` messages) and writes it with one ``send_many``
call when the stream supports it. A list item (an answer and its follow-up
notifications) is written back to back, nothing in between.

Two ways in, by what the message needs:

* :meth:`Writer.send_soon` / :meth:`Writer.put_soon` (answers, a lone
  request: a round trip waits for them).
  When the writer task is idle and nothing is queued, a single message (not a
  list item) is written at once by the producer itself if the stream can take it without waiting
  (:class:`SupportsTrySend`, e.g. a pipe with room): no task switch, no
  event-loop iteration before the bytes leave. Otherwise it is queued.
* :meth:`Writer.send` (or :meth:`Writer.put_burst` first, which saves a
  coroutine when ``send`` would neither yield nor wait) and :meth:`Writer.put`
  (notifications, requests among others, answers while more requests wait:
  they come in bursts). The message is
  queued and the producer goes on without yielding while there is room,
  except once every :data:`YIELD_EVERY` messages queued between two writes,
  so a burst is written in a few large writes and a loop of ``notify`` calls
  still lets others run. That yield comes *before* the message is queued:
  once ``send`` has queued it, it returns without letting the writer run, so
  a producer that records what it sends after ``send`` returns (the agent
  runtime) always records it before ``before_write`` is called for the write
  that carries it. After such a yield the writer, once woken, lets the ready
  tasks run before it takes its batch (the rest of the burst joins it);
  otherwise it writes at once (a burst that ended, e.g. a handler's
  notifications and its answer, is all queued by then).

Either way a producer waits while the queue is full: it holds ``size``
messages, and at most ``max_bytes`` bytes counting the batch being written
(a larger message is taken alone, when nothing else is queued or being
written, so it cannot wait forever). A peer that stops reading therefore pins
at most ``max_bytes`` here, plus the one message each waiting producer holds.
Order is preserved: a message is only written directly when nothing is
queued or being written.

``before_write`` (optional) is called right before any bytes are handed to
the stream, by whichever path: a program that must persist what it sends
(the agent runtime's history) can hold records back and write them there,
in one go, before the client can see the messages they describe.

The task is started when a message is first queued (a connection whose
messages all leave by direct writes has none: a task costs ~3 KiB).
:meth:`Writer.close` stops accepting messages; the task then writes what is
queued and ends (:meth:`Writer.wait_done`). When the stream breaks, the
writer reports the cause to ``on_broken`` and ends; producers then get
:class:`~wireproto.errors.ConnectionClosed`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol, cast, runtime_checkable

import anyio
import anyio.abc
import anyio.lowlevel

from wireproto._switches import FAST_PATHS
from wireproto.errors import ConnectionClosed
from wireproto.rpc._waiter import Waiter, wake

__all__ = [
    "BATCH",
    "DEFAULT_MAX_BYTES",
    "STREAM_GONE",
    "YIELD_EVERY",
    "Item",
    "SupportsReceiveBuffered",
    "SupportsSendMany",
    "SupportsTrySend",
    "Writer",
]

log = logging.getLogger("wireproto.rpc.peer")  # one logger for everything the peer does

Item = bytes | list[bytes]
"""One queue item: a message, or messages written back to back."""

BATCH = 256
"""The most messages written by one transport operation (a peer's whole queue, by
default: a queue that holds no list is taken in one go, not message by message;
a framed stream still writes at most ``JOIN_BYTES`` at a time)."""

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""The default byte budget of queued outgoing data per connection (64 MiB)."""

YIELD_EVERY = 32
"""Messages :meth:`Writer.send` queues before its producer yields once."""

STREAM_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
"""The anyio exceptions that end a stream."""


@runtime_checkable
class SupportsReceiveBuffered(Protocol):
    """A stream that can hand out the messages it already holds without waiting."""

    def receive_buffered(self) -> list[bytes]:
        """Return the whole messages held now, in order (none: await ``receive``).

        None also when the stream wants its consumer to yield first; an
        error ``receive`` would raise is left to ``receive``.
        """


@runtime_checkable
class SupportsSendMany(Protocol):
    """A stream that can write several whole messages in one operation."""

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Send every item, in order."""


@runtime_checkable
class SupportsTrySend(Protocol):
    """A stream that can take a message without waiting when it has room."""

    def try_send(self, item: bytes) -> bool:
        """Send ``item`` now if possible; return whether it was taken.

        A stream that took only part of the bytes keeps the rest, reports
        :attr:`needs_flush`, and writes the rest first on its next
        ``send`` / ``send_many`` (an empty ``send_many`` only flushes).
        """

    @property
    def needs_flush(self) -> bool:
        """Whether part of a message taken by :meth:`try_send` is still unwritten."""


_FLUSH: list[bytes] = []
"""The queue item that only flushes what a direct write left unwritten."""


class Writer:
    """A bounded queue of encoded messages and the task that writes them.

    Args:
        stream: where the messages are written.
        size: messages queued before producers wait.
        on_broken: called with the exception when the stream breaks.
        name: a label for log lines.
        max_bytes: bytes queued or being written before producers wait.
        before_write: called (no arguments, must not raise) before each
            write to the stream.
    """

    def __init__(
        self,
        stream: anyio.abc.ObjectSendStream[bytes],
        size: int,
        on_broken: Callable[[BaseException], None],
        name: str,
        max_bytes: int = DEFAULT_MAX_BYTES,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self._stream = stream
        self._before_write = before_write
        self._size = size
        self.max_bytes = max_bytes
        self._bytes = 0  # queued or being written
        self.over_budget = False
        """Whether a message did not fit in ``max_bytes`` (new work should wait)."""
        self._peak = 0  # the most held before the last decrease (see peak_bytes)
        self._on_broken = on_broken
        self.name = name
        self._items: deque[Item] = deque()
        # direct writes need send_many too: it writes what a partial write left
        direct = (
            FAST_PATHS
            and isinstance(stream, SupportsTrySend)
            and isinstance(stream, SupportsSendMany)
        )
        self._direct = cast(SupportsTrySend, stream) if direct else None
        # no task, or the task waits for work: a direct write cannot overtake anything
        self._idle = False
        self._wake: Waiter | None = None  # set to wake the idle task
        self._room: anyio.Event | None = None  # set when a full queue has room again
        self._waiting = 0  # producers waiting for room
        self._closed = False
        self._cause: BaseException | None = None
        self._streak = 0  # messages queued by send since the last write
        self._cut = False  # a send yielded since the last write
        self._started = False
        self._tg: anyio.abc.TaskGroup | None = None  # where the task runs, once started
        self._running = False  # the task was started

    def start(self, tg: anyio.abc.TaskGroup, waiter: Callable[[], Waiter]) -> None:
        """Write in ``tg`` from now on, parking the task with ``waiter``s (needs a running loop).

        The task starts when a message is first queued: a connection whose
        messages are all written directly (a stream with room) never has one.
        """
        self._new_waiter = waiter
        self._finished = True  # (no task yet)
        self._done: anyio.Event | None = None  # created by a waiter (most never wait)
        self._started = True
        self._tg = tg
        self._idle = True
        if self._items:
            self._kick()

    # ------------------------------------------------------------ producers

    async def send(self, data: Item) -> None:
        """Queue ``data``; wait while the queue is full; yield now and then.

        Raises:
            ConnectionClosed: the writer was closed or the stream broke.
        """
        self._streak += 1
        if self._streak >= YIELD_EVERY:  # before the put: once queued, the producer
            self._streak = 0  # goes on at once (the writer cannot write it in between)
            self._cut = True
            await anyio.lowlevel.checkpoint()
        while not self.put(data):
            await self._wait_room()

    def put_burst(self, data: Item) -> bool:
        """Queue ``data`` as :meth:`send` does when that needs no yield and no wait.

        Returns ``False`` (nothing done) when :meth:`send` would yield or wait:
        then ``await send(data)``. Saves a coroutine per message of a burst.

        Raises:
            ConnectionClosed: the writer was closed or the stream broke.
        """
        if self._streak + 1 >= YIELD_EVERY or not self.put(data):
            return False
        self._streak += 1
        return True

    def send_nowait(self, data: Item) -> bool:
        """Queue ``data`` if there is room, never waiting; return whether it was taken.

        For answers that must not wait (e.g. while the task is being cancelled).
        """
        try:
            return self.put(data)
        except ConnectionClosed:
            return False

    async def send_soon(self, data: Item) -> None:
        """Write ``data`` at once when possible, else queue it; wait while full.

        Never yields when the message could be written or queued.

        Raises:
            ConnectionClosed: the writer was closed or the stream broke.
        """
        if self.put_soon(data):
            return
        while True:
            await self._wait_room()
            if self.put(data):
                return

    def put_soon(self, data: Item) -> bool:
        """Write ``data`` at once when possible, else queue it, never waiting.

        Returns ``False`` when the queue is full (then ``await send_soon``).

        Raises:
            ConnectionClosed: the writer was closed or the stream broke.
        """
        stream = self._direct
        # (a list item, a reply and its follow-ups, always goes through the queue)
        if stream is not None and self._idle and not self._items and type(data) is bytes:
            if self._closed:
                raise ConnectionClosed("connection closed") from self._cause
            if self._before_write is not None:
                self._before_write()
            try:
                taken = stream.try_send(data)
            except STREAM_GONE as exc:
                self._fail(exc)
                raise ConnectionClosed("connection closed") from exc
            if taken:
                if stream.needs_flush:
                    self._items.append(_FLUSH)
                    self._kick()
                return True
        return self.put(data)

    def put(self, data: Item) -> bool:
        """Queue ``data`` without waiting; ``False`` when the queue is full.

        Raises:
            ConnectionClosed: the writer was closed or the stream broke.
        """
        if self._closed:
            raise ConnectionClosed("connection closed") from self._cause
        items = self._items
        if len(items) >= self._size:
            return False
        held = self._bytes + (
            len(data) if type(data) is bytes else sum(map(len, cast(list[bytes], data))))
        if held > self.max_bytes and self._bytes:
            self.over_budget = True  # (a message over the budget goes alone)
            return False
        self._bytes = held
        items.append(data)
        if self._wake is not None or not self._running:  # (else the task is on its way)
            self._kick()
        return True

    def _kick(self) -> None:
        waiter = self._wake
        if waiter is not None:
            self._wake = None
            wake(waiter)
        elif not self._running and self._items and self._tg is not None:
            self._running = True
            self._idle = self._finished = False
            self._tg.start_soon(self._run)

    async def _wait_room(self) -> None:
        if self._room is None:
            self._room = anyio.Event()
        room = self._room
        self._waiting += 1
        try:
            await room.wait()
        finally:
            self._waiting -= 1
        if self._closed:
            raise ConnectionClosed("connection closed") from self._cause

    def _release_room(self) -> None:
        room = self._room
        if room is not None:
            self._room = None
            room.set()

    # ----------------------------------------------------------------- state

    def stats(self) -> tuple[int, int]:
        """``(queued messages, producers waiting for room)``."""
        return len(self._items), self._waiting

    @property
    def queued_bytes(self) -> int:
        """Bytes queued or being written."""
        return self._bytes

    @property
    def peak_bytes(self) -> int:
        """The most bytes ever queued or being written at once (for diagnostics)."""
        return max(self._peak, self._bytes)

    def _keep_peak(self) -> None:
        # (before the count goes down: the peak is kept per batch, not per message)
        if self._bytes > self._peak:
            self._peak = self._bytes

    async def wait_budget(self) -> None:
        """Wait until bytes were written since the budget was full (or the writer closed)."""
        while self.over_budget and not self._closed:
            try:
                await self._wait_room()
            except ConnectionClosed:
                return

    def close(self) -> None:
        """Accept no more messages; what is queued is still written."""
        self._closed = True
        self._kick()
        self._release_room()

    async def wait_done(self) -> None:
        """Wait until the task has written everything and ended."""
        if self._started:
            if self._done is None:
                self._done = anyio.Event()
                if self._finished:
                    self._done.set()
            await self._done.wait()

    def discard(self) -> None:
        """Drop what is queued and accept nothing more (even if never started)."""
        self._closed = True
        self._items.clear()
        self._keep_peak()
        self._bytes = 0
        self._kick()
        self._release_room()

    def _fail(self, exc: BaseException) -> None:
        log.debug("%s: write side closed: %r", self.name, exc)
        if self._cause is None:
            self._cause = exc
            self._closed = True
            self._items.clear()
            self._keep_peak()
            self._bytes = 0
            self._kick()
            self._release_room()
            self._on_broken(exc)

    # ------------------------------------------------------------------ task

    async def _run(self) -> None:
        stream = self._stream
        many = isinstance(stream, SupportsSendMany)
        items = self._items
        try:
            while True:
                if not items:
                    if self._closed:
                        return
                    self._idle = True
                    self._wake = waiter = self._new_waiter()
                    try:
                        await waiter
                        if self._cut:
                            # a producer yielded in the middle of its burst: let
                            # the ready tasks run first, so what they queue now
                            # (the rest of the burst, its answer) goes out in
                            # the same write
                            self._cut = False
                            await anyio.lowlevel.checkpoint()
                    finally:
                        self._idle = False
                        self._wake = None
                    continue
                # (no casts: each costs a call; the items are bytes or lists of bytes)
                batch: list[bytes]
                if len(items) <= BATCH and list not in map(type, items):  # (the usual queue)
                    batch = list(items)  # type: ignore[arg-type]
                    items.clear()
                else:
                    first = items.popleft()
                    batch = list(first) if type(first) is list else [first]  # type: ignore[list-item]
                    while items and len(batch) < BATCH:
                        item = items.popleft()
                        if type(item) is list:
                            batch.extend(item)
                        else:
                            batch.append(item)  # type: ignore[arg-type]
                if self._room is not None:
                    self._release_room()
                self._streak = 0
                if self._before_write is not None:
                    self._before_write()
                if many:
                    await cast(SupportsSendMany, stream).send_many(batch)
                else:
                    for data in batch:
                        await stream.send(data)
                if self._bytes:  # (a failure or discard has zeroed it)
                    self._keep_peak()
                    self._bytes -= sum(map(len, batch))
                    self.over_budget = False
                    if self._room is not None:
                        self._release_room()
        except STREAM_GONE as exc:
            self._fail(exc)
        finally:
            self._finished = True
            if self._done is not None:
                self._done.set()
