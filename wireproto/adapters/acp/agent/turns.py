"""The prompt turns of one ACP agent connection: :class:`TurnRunner`.

Theory of operation
-------------------
A ``session/prompt`` handler calls :meth:`TurnRunner.prompt`, which starts
the turn (:meth:`Runtime.prompt <wireproto.agent.runtime.Runtime.prompt>`)
in a task of the runner's own task group and waits for it. A task whose
turn is over parks, and the next turn is handed to a parked task when
there is one (far cheaper than starting a task per prompt). Every update of
the turn is therefore queued before the handler returns, so before the
response (protocol-acp.md#ordering). At most one turn runs per session; another
prompt for it is :class:`~wireproto.errors.Busy`.

* :meth:`TurnRunner.cancel` (``session/cancel``, ``session/close``) asks the
  runtime to cancel the session's turn; the turn ends by itself and its
  prompt answers ``cancelled`` (protocol-acp.md#stop-reasons).
* When the waiting handler itself is cancelled (``$/cancel_request`` for the
  prompt, or the connection shutting down) it cancels the turn and waits up
  to :data:`TURN_GRACE` seconds for it before giving up.
* :meth:`TurnRunner.stop` (shutdown) cancels every turn, waits up to its
  grace, then cancels the tasks of the turns that are still running.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc

from wireproto.agent.api import Session
from wireproto.agent.content import ContentBlock
from wireproto.agent.events import StopReason
from wireproto.agent.runtime import Runtime
from wireproto.errors import Busy, ConnectionClosed, LocalProtocolError, RpcError
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc._waiter import Waiter, waiter_factory, wake

__all__ = ["TURN_GRACE", "TurnRunner"]

log = logging.getLogger(__name__)

TURN_GRACE = 2.0
"""Seconds a cancelled turn gets to end by itself."""

MAX_PARKED = 64
"""Turn tasks kept parked for the next turns, at most."""


@dataclasses.dataclass
class _TurnBox:
    """One ``session/prompt`` in flight: its turn task and outcome."""

    session: Session
    content: list[ContentBlock]
    done: anyio.Event = dataclasses.field(default_factory=anyio.Event)
    cancelled: bool = False  # cancelled before the turn started
    stop: StopReason = StopReason.CANCELLED
    error: BaseException | None = None


class _Parked:
    """A turn task waiting to be handed the next turn."""

    __slots__ = ("box", "event")

    def __init__(self, event: Waiter) -> None:
        self.event = event
        self.box: _TurnBox | None = None


class TurnRunner:
    """Runs the ``session/prompt`` turns of one connection (see the module docstring).

    Args:
        runtime: the runtime whose turns are run.
        name: a label for log lines.
    """

    def __init__(self, runtime: Runtime, name: str) -> None:
        self.runtime = runtime
        self.name = name
        self._group: anyio.abc.TaskGroup | None = None
        self._turns: dict[str, _TurnBox] = {}
        self._parked: list[_Parked] = []
        self._new_waiter: Callable[[], Waiter] | None = None

    def __len__(self) -> int:
        return len(self._turns)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Own the turns' task group; leaving it cancels what still runs."""
        async with anyio.create_task_group() as group:
            self._group = group
            self._new_waiter = waiter_factory()
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                self._group = None
                self._parked.clear()

    async def prompt(self, session: Session, content: list[ContentBlock]) -> StopReason:
        """Run one turn of ``session`` and return its stop reason.

        Raises:
            Busy: a turn is already running in the session.
            LocalProtocolError: the runner is not :meth:`running`.
            RpcError: ``-32603`` when the connection closed during the turn.
            Exception: whatever the agent raised.
        """
        if session.id in self._turns or session.turn is not None:
            raise Busy("An agent turn is already in progress")
        if self._group is None:
            raise LocalProtocolError("the turn runner is not running")
        box = _TurnBox(session, content)
        self._turns[session.id] = box
        if self._parked:  # reuse a parked task
            parked = self._parked.pop()
            parked.box = box
            wake(parked.event)
        else:
            self._group.start_soon(self._work, box)
        try:
            await box.done.wait()
        except anyio.get_cancelled_exc_class():  # $/cancel_request, or shutting down
            with anyio.CancelScope(shield=True), anyio.move_on_after(TURN_GRACE):
                self._cancel(box)
                await box.done.wait()
            raise
        if isinstance(box.error, ConnectionClosed):
            raise RpcError(ErrorCode.INTERNAL_ERROR, "The connection closed during the turn")
        if box.error is not None:
            raise box.error
        return box.stop

    def cancel(self, session_id: str) -> bool:
        """Cancel the session's running turn; ``False`` when none runs."""
        box = self._turns.get(session_id)
        if box is None:
            return False
        self._cancel(box)
        return True

    async def stop(self, grace: float) -> None:
        """Cancel every turn; after ``grace`` seconds, cancel the tasks still running."""
        boxes = list(self._turns.values())
        for box in boxes:
            self._cancel(box)
        with anyio.move_on_after(grace):
            for box in boxes:
                await box.done.wait()
        if not all(box.done.is_set() for box in boxes) and self._group is not None:
            log.warning("%s: turns did not end in time; cancelling them", self.name)
            self._group.cancel_scope.cancel()

    async def _work(self, box: _TurnBox) -> None:
        """Run turns: this one, then those handed over while parked."""
        while True:
            await self._run(box)
            if self._new_waiter is None or len(self._parked) >= MAX_PARKED:
                return
            parked = _Parked(self._new_waiter())
            self._parked.append(parked)
            try:
                await parked.event
            except BaseException:  # cancelled while parked: the runner stops
                if parked.box is None:
                    if parked in self._parked:
                        self._parked.remove(parked)
                else:  # handed a turn just now: it ends before it starts
                    parked.box.cancelled = True
                    await self._run(parked.box)
                raise
            assert parked.box is not None
            box = parked.box

    async def _run(self, box: _TurnBox) -> None:
        try:
            if not box.cancelled:
                box.stop = await self.runtime.prompt(box.session, box.content)
        except ConnectionClosed as exc:
            log.warning("%s: turn of %s failed: %s", self.name, box.session.id, exc)
            box.error = exc
        except Exception as exc:
            box.error = exc
        finally:
            if self._turns.get(box.session.id) is box:
                del self._turns[box.session.id]
            box.done.set()

    def _cancel(self, box: _TurnBox) -> None:
        box.cancelled = True
        self.runtime.cancel(box.session)
