"""The inspector's tap: the one connection to the agent, recorded both ways.

Everything the pages send goes through :meth:`Tap.send` (recorded as
``send``, then written to the agent); everything the agent writes is read by
:meth:`Tap.run` and recorded as ``recv``. The pages see both through the
:class:`~wireproto.inspect.record.Recorder`. The tap never interprets
traffic except to hand the answers to its own requests (the handshake of
:mod:`wireproto.inspect.handshake`) back to their waiters.

It needs only an ``ObjectStream[bytes]`` of whole messages, so any transport
(a spawned agent, a websocket) or another recording relay can stand in.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.abc
import msgspec

from wireproto.errors import MessageTooLarge
from wireproto.inspect.record import Recorder

__all__ = ["Tap"]

log = logging.getLogger(__name__)

_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
_encode = msgspec.json.encode


class _Reply(msgspec.Struct):
    id: Any = None
    method: str | None = None
    result: Any = msgspec.UNSET
    error: Any = msgspec.UNSET


_reply_decoder = msgspec.json.Decoder(_Reply)


class Tap:
    """Relay between the agent and the inspector, recording every message.

    Args:
        agent: the stream to the agent (whole messages).
        recorder: where every message is recorded.
        string_ids: the fresh request ids are strings (Wire) instead of
            integers (ACP and plain JSON-RPC).
    """

    def __init__(self, agent: anyio.abc.ObjectStream[bytes], recorder: Recorder,
                 *, string_ids: bool = False) -> None:
        self.agent = agent
        self.recorder = recorder
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
        """Record ``message`` and write it to the agent.

        Raises:
            anyio.BrokenResourceError: the agent is gone.
        """
        self._note_id(message)
        async with self._lock:
            if self.ended.is_set():
                raise anyio.BrokenResourceError(f"the agent is gone ({self.end_reason})")
            self.recorder.add("send", message)
            try:
                await self.agent.send(message)
            except _ENDED as exc:
                raise anyio.BrokenResourceError(f"the agent is gone ({exc or 'closed'})") from exc

    def _note_id(self, message: bytes) -> None:
        try:
            reply = _reply_decoder.decode(message)
        except msgspec.DecodeError:
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
        """Read and record the agent's messages until it ends."""
        try:
            while True:
                try:
                    message = await self.agent.receive()
                except MessageTooLarge as exc:
                    log.warning("inspect: a message from the agent was dropped: %s", exc)
                    continue
                self.recorder.add("recv", message)
                self._deliver(message)
        except anyio.EndOfStream:
            self.end_reason = "the agent closed its output"
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
        except msgspec.DecodeError:
            return
        if reply.method is not None:
            return
        key = reply.id
        waiter = self._waiters.get(key)
        if waiter is not None:
            done, box = waiter
            box.append(msgspec.json.decode(message))
            done.set()
