"""The peer's single writer (a part of the peer).

Theory of operation
-------------------
Producers (requests, notifications, answers) encode their message and put
the bytes on a bounded queue, waiting while it is full. :meth:`Writer.run`
is the only task that writes to the stream: it takes whatever is queued (up
to :data:`BATCH` messages) and writes it with one ``send_many`` call when the
stream supports it. A list item (an answer and its follow-up notifications)
is written back to back, nothing in between.

:meth:`Writer.close` stops accepting messages; ``run`` then writes what is
queued and ends (:meth:`Writer.wait_done`). When the stream breaks, ``run``
reports the cause to ``on_broken`` and ends; producers then get
:class:`~wireproto.errors.ConnectionClosed`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol, cast, runtime_checkable

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from wireproto.errors import ConnectionClosed

__all__ = ["BATCH", "STREAM_GONE", "Item", "SupportsSendMany", "Writer"]

log = logging.getLogger("wireproto.rpc.peer")  # one logger for everything the peer does

Item = bytes | list[bytes]
"""One queue item: a message, or messages written back to back."""

BATCH = 64
"""The most messages written by one transport operation."""

STREAM_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
"""The anyio exceptions that end a stream."""


@runtime_checkable
class SupportsSendMany(Protocol):
    """A stream that can write several whole messages in one operation."""

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Send every item, in order."""


class Writer:
    """A bounded queue of encoded messages and the task that writes them.

    Args:
        stream: where the messages are written.
        size: messages queued before producers wait.
        on_broken: called with the exception when the stream breaks.
        name: a label for log lines.
    """

    def __init__(
        self,
        stream: anyio.abc.ObjectSendStream[bytes],
        size: int,
        on_broken: Callable[[BaseException], None],
        name: str,
    ) -> None:
        self._stream = stream
        self._size = size
        self._on_broken = on_broken
        self.name = name

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Create the queue and start writing in ``tg`` (needs a running event loop)."""
        send, receive = anyio.create_memory_object_stream[Item](self._size)
        self._queue: MemoryObjectSendStream[Item] = send
        self._receive: MemoryObjectReceiveStream[Item] = receive
        self._done = anyio.Event()
        tg.start_soon(self._run, receive)

    async def send(self, data: Item) -> None:
        """Queue ``data``, waiting while the queue is full.

        Raises:
            ConnectionClosed: the writer was closed or the stream broke.
        """
        try:
            await self._queue.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ConnectionClosed("connection closed") from exc

    async def send_soon(self, data: Item) -> None:
        """:meth:`send` for callers that block or finish right after queueing.

        A request awaiting its response or a handler's final answer skip the
        scheduling round trip of :meth:`send` while the queue has room.
        """
        try:
            self._queue.send_nowait(data)
        except anyio.WouldBlock:
            await self.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ConnectionClosed("connection closed") from exc

    def stats(self) -> tuple[int, int]:
        """``(queued messages, producers waiting for room)``."""
        out = self._queue.statistics()
        return out.current_buffer_used, out.tasks_waiting_send

    def close(self) -> None:
        """Accept no more messages; what is queued is still written."""
        self._queue.close()

    async def wait_done(self) -> None:
        """Wait until :meth:`run` has written everything and ended."""
        await self._done.wait()

    def discard(self) -> None:
        """Close both ends of the queue (even if the writer never started)."""
        self._queue.close()
        self._receive.close()

    async def _run(self, queue: MemoryObjectReceiveStream[Item]) -> None:
        stream = self._stream
        many = isinstance(stream, SupportsSendMany)
        try:
            async with queue:
                async for first in queue:
                    batch = first if type(first) is list else [cast(bytes, first)]
                    while len(batch) < BATCH:
                        try:
                            item = queue.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                        if type(item) is list:
                            batch.extend(item)
                        else:
                            batch.append(cast(bytes, item))
                    if many:
                        await cast(SupportsSendMany, stream).send_many(batch)
                    else:
                        for item in batch:
                            await stream.send(item)
        except STREAM_GONE as exc:
            log.debug("%s: write side closed: %r", self.name, exc)
            self._on_broken(exc)
        finally:
            self._done.set()
