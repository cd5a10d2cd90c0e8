"""The Wire client's queue of events outside turns: bounded, the oldest dropped when full."""

from __future__ import annotations

import logging

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from wireproto.adapters.wire import messages as m

__all__ = ["EventQueue", "WireEvent"]

log = logging.getLogger(__name__)

WireEvent = m.Event | m.UnknownEvent
"""What the event streams yield."""


class EventQueue:
    """Events in arrival order; when ``size`` are unread, a new one drops the oldest.

    Created when the client is entered (it owns two memory streams), closed
    when it is left: iterators then end and :meth:`take` returns nothing.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._in, self._out = anyio.create_memory_object_stream[WireEvent](size)
        self._overflowing = False

    def close(self) -> None:
        """End the queue (iterators stop after the events already queued)."""
        self._in.close()
        self._out.close()

    def put(self, event: WireEvent) -> None:
        """Queue ``event``, dropping the oldest one when the queue is full (logged once)."""
        while True:
            try:
                self._in.send_nowait(event)
                self._overflowing = False
                return
            except anyio.WouldBlock:
                if not self._overflowing:
                    log.warning("%s: %d events outside turns unread; dropping the oldest "
                                "(read client.events() or raise event_buffer)",
                                self.name, self.size)
                    self._overflowing = True
                try:
                    self._out.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    pass
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    def take(self) -> list[WireEvent]:
        """Every queued event, removed, without waiting."""
        taken: list[WireEvent] = []
        while True:
            try:
                taken.append(self._out.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return taken

    def __aiter__(self) -> _EventIterator:
        return _EventIterator(self._out)


class _EventIterator:
    """A plain async iterator over the queue (no clean-up needed when a loop breaks)."""

    def __init__(self, queue: MemoryObjectReceiveStream[WireEvent]) -> None:
        self._queue = queue

    def __aiter__(self) -> _EventIterator:
        return self

    async def __anext__(self) -> WireEvent:
        try:
            return await self._queue.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
