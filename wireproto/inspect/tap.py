"""The inspector's tap: the one connection to the agent, recorded both ways.

The recording is the proxy's transparent relay
(:func:`~wireproto.proxy.relay.relay_messages`): it pumps whole messages
between the agent's stream and the inspector's end of an in-memory pair,
unchanged, and shows each one to :meth:`Recorder.observe
<wireproto.inspect.record.Recorder.observe>` first. :func:`open_tap` sets
that up and yields the inspector's end as a :class:`Tap`.

A :class:`Tap` is the client side: everything the pages send goes through
:meth:`Tap.send`; :meth:`Tap.run` reads what the agent writes until it ends.
It never interprets traffic except to hand the answers to its own requests
(the handshake of :mod:`wireproto.inspect.handshake`) back to their waiters.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import msgspec

from wireproto.inspect.record import Recorder
from wireproto.proxy.relay import relay_messages
from wireproto.transports.memory import memory_pair

__all__ = ["Tap", "open_tap"]

log = logging.getLogger(__name__)

_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
_encode = msgspec.json.encode


class _Reply(msgspec.Struct):
    id: Any = None
    method: str | None = None


_reply_decoder = msgspec.json.Decoder(_Reply)


class Tap:
    """The inspector's end of the relay to the agent.

    Args:
        stream: the inspector's end (whole messages).
        string_ids: the fresh request ids are strings (Wire) instead of
            integers (ACP and plain JSON-RPC).
    """

    def __init__(self, stream: anyio.abc.ObjectStream[bytes], *,
                 string_ids: bool = False) -> None:
        self.stream = stream
        self.string_ids = string_ids
        self.ended = anyio.Event()
        self.end_reason = ""
        self._lock = anyio.Lock()
        self._next_id = 0
        self._used: set[Any] = set()
        self._waiters: dict[Any, tuple[anyio.Event, list[Any]]] = {}

    def fresh_id(self) -> int | str:
        """A request id not used by any request sent through this tap."""
        while True:
            number = self._next_id
            self._next_id += 1
            candidate: int | str = f"inspector-{number}" if self.string_ids else number
            if candidate not in self._used:
                return candidate

    async def send(self, message: bytes) -> None:
        """Send ``message`` to the agent (the relay records it on the way).

        Raises:
            anyio.BrokenResourceError: the agent is gone.
        """
        self._note_id(message)
        async with self._lock:
            if self.ended.is_set():
                raise anyio.BrokenResourceError(f"the agent is gone ({self.end_reason})")
            try:
                await self.stream.send(message)
            except _ENDED as exc:
                raise anyio.BrokenResourceError(
                    f"the agent is gone ({self.end_reason or 'closed'})") from exc

    def _note_id(self, message: bytes) -> None:
        try:
            reply = _reply_decoder.decode(message)
        except (msgspec.DecodeError, RecursionError):
            return
        if reply.method is not None and reply.id is not None:
            self._used.add(reply.id)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request with a fresh id; return the agent's whole response.

        Raises:
            anyio.BrokenResourceError: the agent ended first.
        """
        request_id = self.fresh_id()
        done = anyio.Event()
        box: list[Any] = []
        self._waiters[request_id] = (done, box)
        try:
            await self.send(_encode({"jsonrpc": "2.0", "id": request_id, "method": method,
                                     "params": params}))
            async with anyio.create_task_group() as tg:
                async def ended() -> None:
                    await self.ended.wait()
                    tg.cancel_scope.cancel()
                tg.start_soon(ended)
                await done.wait()
                tg.cancel_scope.cancel()
        finally:
            self._waiters.pop(request_id, None)
        if not box:
            raise anyio.BrokenResourceError(f"the agent is gone ({self.end_reason})")
        answer: dict[str, Any] = box[0]
        return answer

    async def run(self) -> None:
        """Read the agent's messages (answering this tap's waiters) until it ends."""
        try:
            while True:
                self._deliver(await self.stream.receive())
        except anyio.EndOfStream:
            self.end_reason = "the agent's connection ended"
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self.end_reason = f"the connection to the agent failed: {exc or type(exc).__name__}"
        finally:
            if not self.end_reason:
                self.end_reason = "the inspector stopped"
            self.ended.set()

    def _deliver(self, message: bytes) -> None:
        if not self._waiters:
            return
        try:
            reply = _reply_decoder.decode(message)
        except (msgspec.DecodeError, RecursionError):
            return
        if reply.method is not None:
            return
        waiter = self._waiters.get(reply.id)
        if waiter is not None:
            done, box = waiter
            box.append(msgspec.json.decode(message))
            done.set()


@asynccontextmanager
async def open_tap(
    agent: anyio.abc.ObjectStream[bytes], recorder: Recorder
) -> AsyncIterator[Tap]:
    """Relay between ``agent`` and a new :class:`Tap`, recording every message.

    The tap's :meth:`~Tap.run` (run it in a task) ends when the agent's side
    does. On exit the relay is stopped; ``agent`` is not closed (its owner
    closes it).
    """
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as tg:

        async def relay() -> None:
            try:
                await relay_messages(theirs, agent, [recorder.observe])
            finally:
                await theirs.aclose()  # the tap sees the end

        tg.start_soon(relay)
        try:
            yield Tap(ours)
        finally:
            tg.cancel_scope.cancel()
            await ours.aclose()
