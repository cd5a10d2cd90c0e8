"""One Wire prompt turn as seen by the client, and the small types its handlers use.

:class:`WireTurn` is what :meth:`WireClient.prompt
<wireproto.adapters.wire.client.connection.WireClient.prompt>` returns. Two ways to run it:

* ``async with client.prompt(text) as turn: async for event in turn:`` --
  entering sends ``prompt`` from a task the turn owns and returns once it is
  queued; the events the server sends from then on go to the turn (not to
  the client's stream of events outside turns) through a bounded buffer; the
  iteration ends when the ``prompt`` response arrives, and :attr:`WireTurn.status`
  holds its status. Leaving the block early, or cancelling the task that
  iterates, cancels the turn on the server (a ``cancel`` request) and waits
  (at most :data:`CANCEL_WAIT` seconds) for its answer.
* ``result = await client.prompt(text)`` -- runs the turn to its end and
  returns the ``prompt`` result; its events go to ``on_event`` and the
  client's event stream, as before turns could be iterated.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from wireproto.adapters._shared import TurnItems, enter_turn, leave_turn
from wireproto.errors import ConnectionClosed, LocalProtocolError, RpcError

from .. import messages as m
from ..methods import PromptResult

if TYPE_CHECKING:
    from .connection import WireClient, WireEvent

__all__ = ["CANCEL_WAIT", "Reject", "ToolContext", "WireTurn"]

log = logging.getLogger(__name__)

CANCEL_WAIT = 5.0
"""Seconds a turn left early waits for the server to answer its ``cancel``."""


@dataclasses.dataclass(frozen=True)
class Reject:
    """An approval handler's answer: reject, telling the model why.

    Example: ``return Reject(feedback="use the staging database instead")``.
    """

    feedback: str = ""


@dataclasses.dataclass(frozen=True)
class ToolContext:
    """What an external tool handler gets besides its arguments.

    Attributes:
        tool_call_id: the server's id of this call (``ToolCallRequest.id``).
        name: the tool's name.
        turn: the iterated turn the call belongs to (``None`` when the prompt
            was awaited rather than iterated).
    """

    tool_call_id: str
    name: str
    turn: WireTurn | None


class WireTurn:
    """A Wire prompt turn: iterate it in ``async with``, or await it (module docstring).

    Attributes:
        user_input: what was sent.
        result: the ``prompt`` result once answered (``None`` before or after an error).
        accepting: whether the client routes events here.
    """

    def __init__(self, client: WireClient, user_input: m.UserInput, buffer: int) -> None:
        self.user_input = user_input
        self.result: PromptResult | None = None
        self.accepting = False
        self._client = client
        self._buffer = max(buffer, 1)
        self._items: TurnItems[WireEvent] | None = None  # iterated turns only
        self._answered = False
        self._started = False
        self._finished = False

    @property
    def status(self) -> str | None:
        """The turn's status once answered (``finished``, ``cancelled``, ...), else ``None``."""
        return self.result.status if self.result is not None else None

    @property
    def done(self) -> bool:
        """Whether the turn has ended (answered, failed or cancelled)."""
        return self._finished

    def __await__(self) -> Generator[Any, None, PromptResult]:
        if self._started:
            raise LocalProtocolError("a WireTurn can be run only once")
        self._started = True
        return self._awaited().__await__()

    async def _awaited(self) -> PromptResult:
        try:
            self.result = await self._client._send_prompt(self, None, None)
            return self.result
        finally:
            self._finished = True

    async def __aenter__(self) -> WireTurn:
        if self._started:
            raise LocalProtocolError("a WireTurn can be run only once")
        self._started = True
        self._items = TurnItems(self._buffer, self._client.name, "event")
        # shielded: a cancelled caller still hears the server's answer to its cancel
        self._scope = anyio.CancelScope(shield=True)
        self._tg = await enter_turn(self._run)  # returns once the prompt is queued
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await leave_turn(
            exc_type is not None, self._turn_items, answered=self._answered, cancel=self._cancel,
            tg=self._tg, stop=self._scope, cancel_wait=CANCEL_WAIT,
            await_answer=True, close=self._close,
        )

    def __aiter__(self) -> WireTurn:
        return self

    async def __anext__(self) -> WireEvent:
        return await self._turn_items.next()

    async def collect(self) -> list[WireEvent]:
        """Read the rest of the turn; return its events.

        Raises:
            RpcError: the server answered the prompt with an error.
        """
        return [event async for event in self]

    # ---------------------------------------------------------- internals

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False

        def sent() -> None:
            nonlocal started
            started = True
            task_status.started()

        try:
            with self._scope:
                self.result = await self._client._send_prompt(self, sent, self._on_response)
        except Exception as exc:
            self._turn_items.error = exc
        finally:
            self._close()
            self._finished = True
            self._turn_items.done.set()
            if not started:  # failed before it was sent
                task_status.started()

    def _on_response(self) -> None:
        self._answered = True
        self._close()

    @property
    def _turn_items(self) -> TurnItems[WireEvent]:
        if self._items is None:
            raise LocalProtocolError("iterate a WireTurn inside 'async with client.prompt(...)'")
        return self._items

    def _close(self) -> None:
        self.accepting = False
        if self._items is not None:
            self._items.close()

    async def _deliver(self, event: WireEvent) -> None:
        await self._turn_items.deliver(event)

    async def _cancel(self) -> None:
        try:
            await self._client.cancel()
        except (ConnectionClosed, RpcError, TimeoutError) as exc:
            log.debug("%s: cancel of the turn: %r", self._client.name, exc)
