"""The recording relay: pass whole messages between a client and an agent, unchanged.

Theory of operation
-------------------
:func:`relay_messages` pumps two ``ObjectStream[bytes]`` of whole messages (one
JSON-RPC message each) in both directions, never decoding them: what one
side sent is what the other side receives, byte for byte. Every message is
shown to each *observer* before it is forwarded, as a :class:`RelayedMessage`
(its direction, its bytes and a monotonic timestamp), in the order the relay
read it from its side.

Observers are plain callables run inline by the pumping task, so they see
messages in order and must not block: record, count, or hand the message on
(for example ``send_nowait`` into a bounded memory stream that a slower
consumer reads). An observer may take batches of messages instead (a
``batch`` method, see :data:`Observer`): here a batch is what one read of a
framed stream brought (:meth:`~wireproto.transports._framed.FramedStream.receive_buffered`),
else one message. An observer that raises is logged once and then skipped; the
traffic goes on. :class:`~wireproto.proxy.trace.TraceWriter` is an observer
writing the ``--trace`` JSON Lines format.

Ending: when the client's side ends (or ``stop`` is set), the agent's input
is closed (``send_eof``) and the agent's remaining output is still delivered
until the agent ends; when the agent's side ends the relay returns. A
message larger than the transport's limit is dropped with a warning, like
the bridge does.

Between a stdio and a subprocess stream, :func:`~wireproto.proxy.pipes.relay_pipes`
is the same relay pumped by worker threads, for a fraction of the CPU.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Sequence

import anyio
import anyio.abc
import msgspec

from wireproto.errors import MessageTooLarge

__all__ = ["Direction", "Observer", "RelayedMessage", "relay_messages"]

log = logging.getLogger(__name__)

_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)


class Direction(str, enum.Enum):
    """Which way a relayed message went.

    The values are the ``dir`` of a ``--trace`` line, as the client's own
    trace would write it: ``send`` went from the client to the agent,
    ``recv`` from the agent to the client.
    """

    TO_AGENT = "send"
    TO_CLIENT = "recv"


class RelayedMessage(msgspec.Struct, frozen=True):
    """One message going through the relay.

    Attributes:
        direction: which way it went.
        data: its bytes, exactly as relayed (no framing newline).
        time: when the relay read it (:func:`time.monotonic` seconds).
    """

    direction: Direction
    data: bytes
    time: float


Observer = Callable[[RelayedMessage], None]
"""Sees each message before it is forwarded; runs inline and must not block.

An observer may instead take whole batches: if it has a
``batch(direction, messages, time)`` method, the relay calls that once for
the messages (a list of ``bytes``) read together at ``time``, in place of one
call per message, before it forwards them (how a
:class:`~wireproto.proxy.trace.TraceWriter` writes a batch's lines at once)."""


_Batch = Callable[[Direction, list[bytes], float], object]
_monotonic = time.monotonic


class Observers:
    """Show messages to each observer, one batch at a time (calls serialized by a
    lock: the pumps of both directions share one); an observer that raises is
    logged once and dropped."""

    def __init__(self, observers: Sequence[Observer]) -> None:
        self.live: list[Observer] = []
        self._calls: list[tuple[Observer, _Batch]] = []
        self._lock = threading.Lock()
        self._keep(list(observers))

    def _keep(self, observers: list[Observer]) -> None:
        self.live = observers
        self._calls = [(o, getattr(o, "batch", None) or _one_by_one(o)) for o in observers]

    def show(self, direction: Direction, messages: list[bytes]) -> None:
        """Show ``messages``, read together just now, to every live observer."""
        with self._lock:
            now = _monotonic()
            for observer, batch in self._calls:
                try:
                    batch(direction, messages, now)
                except Exception:
                    log.exception("relay: observer %r failed; it sees no further messages",
                                  observer)
                    self._keep([o for o in self.live if o is not observer])


def _one_by_one(observer: Observer) -> _Batch:
    """A batch call for an observer without one: the messages one at a time."""
    def batch(direction: Direction, messages: list[bytes], now: float) -> None:
        for data in messages:
            observer(RelayedMessage(direction, data, now))
    return batch


async def _pump(
    source: anyio.abc.ObjectStream[bytes],
    sink: anyio.abc.ObjectStream[bytes],
    direction: Direction,
    observe: Observers,
) -> None:
    to = "agent" if direction is Direction.TO_AGENT else "client"
    take = getattr(source, "receive_buffered", None)  # what the same read brought, if known
    try_send = getattr(sink, "try_send", None)  # a direct write, when the sink has one
    send_many = getattr(sink, "send_many", None)  # several messages in few writes
    while True:
        try:
            batch = [await source.receive()]
        except MessageTooLarge as exc:
            log.warning("relay: message to the %s dropped: %s", to, exc)
            continue
        except _ENDED:
            return
        if take is not None:
            batch += take()
        if observe.live:
            observe.show(direction, batch)
        try:
            if len(batch) > 1:
                if send_many is not None:
                    await send_many(batch)
                else:
                    for data in batch:
                        await sink.send(data)
            elif try_send is not None and try_send(batch[0]):
                if send_many is not None and getattr(sink, "needs_flush", False):
                    await send_many(())  # part of it is still unwritten: write the rest
            else:
                await sink.send(batch[0])
        except _ENDED:
            return


async def relay_messages(
    client: anyio.abc.ObjectStream[bytes],
    agent: anyio.abc.ObjectStream[bytes],
    observers: Sequence[Observer] = (),
    *,
    stop: anyio.Event | None = None,
) -> None:
    """Relay messages between ``client`` and ``agent`` until the agent's side ends.

    Args:
        client: the front connection (the client talking to us).
        agent: the backend connection (the agent we forward to).
        observers: called with every message before it is forwarded.
        stop: when set, the client's side is treated as ended.

    The client's end closes the agent's input (the agent may still answer
    what it has); the agent's end stops the relay. Neither stream is closed
    here: their owners close them.
    """
    observe = Observers(observers)
    async with anyio.create_task_group() as tg:

        async def to_agent() -> None:
            with anyio.CancelScope() as scope:
                if stop is not None:
                    tg.start_soon(_cancel_when_set, stop, scope)
                await _pump(client, agent, Direction.TO_AGENT, observe)
            try:
                await agent.send_eof()
            except _ENDED:
                tg.cancel_scope.cancel()
            except NotImplementedError:  # a transport without half-close
                tg.cancel_scope.cancel()

        async def to_client() -> None:
            await _pump(agent, client, Direction.TO_CLIENT, observe)
            tg.cancel_scope.cancel()

        tg.start_soon(to_agent)
        tg.start_soon(to_client)


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
