"""The prompt turns of one ACP agent connection: :class:`TurnRunner`.

Theory of operation
-------------------
A ``session/prompt`` handler calls :meth:`TurnRunner.prompt`, which runs
the turn (:meth:`Runtime.prompt <wireproto.agent.runtime.Runtime.prompt>`)
in the handler's own task: no task switch between the request and its
turn. Every update of the turn is therefore queued before the handler
returns, so before the response (protocol-acp.md#ordering). At most one turn
runs per session; another prompt for it is :class:`~wireproto.errors.Busy`.

* :meth:`TurnRunner.cancel` (``session/cancel``, ``session/close``) asks the
  runtime to cancel the session's turn; the turn ends by itself and its
  prompt answers ``cancelled`` (protocol-acp.md#stop-reasons).
* ``$/cancel_request`` for the prompt does not cancel the handler (the
  ``session/prompt`` route's ``cancel`` callback is
  :meth:`TurnRunner.cancel_request`): the turn is cancelled the same way,
  ends by itself (its updates still go out, an agent that shields itself
  still learns it through :meth:`Turn.wait_cancelled
  <wireproto.agent.turn.Turn.wait_cancelled>`), and the prompt answers
  ``-32800``.
* :meth:`TurnRunner.stop` (shutdown) cancels every turn and waits up to its
  grace for them; a turn still running then is cancelled with its handler
  when the peer closes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from wireproto.agent.api import Session
from wireproto.agent.content import ContentBlock
from wireproto.agent.events import StopReason
from wireproto.agent.runtime import Runtime
from wireproto.errors import Busy, ConnectionClosed, LocalProtocolError, RpcError
from wireproto.jsonrpc.messages import ErrorCode

__all__ = ["TURN_GRACE", "TurnRunner"]

log = logging.getLogger(__name__)

TURN_GRACE = 2.0
"""Seconds a cancelled turn gets to end by itself."""


class _InFlight:
    """One ``session/prompt`` whose turn runs."""

    __slots__ = ("_over", "finished", "request_cancelled", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.finished = False
        self.request_cancelled = False  # by $/cancel_request: answered -32800
        self._over: anyio.Event | None = None  # made when someone waits

    def finish(self) -> None:
        self.finished = True
        if self._over is not None:
            self._over.set()

    async def wait(self) -> None:
        if not self.finished:
            if self._over is None:
                self._over = anyio.Event()
            await self._over.wait()


class TurnRunner:
    """Runs the ``session/prompt`` turns of one connection (see the module docstring).

    Args:
        runtime: the runtime whose turns are run.
        name: a label for log lines.
    """

    def __init__(self, runtime: Runtime, name: str) -> None:
        self.runtime = runtime
        self.name = name
        self._running = False
        self._turns: dict[str, _InFlight] = {}

    def __len__(self) -> int:
        return len(self._turns)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Accept turns while inside."""
        self._running = True
        try:
            yield
        finally:
            self._running = False

    async def prompt(self, session: Session, content: list[ContentBlock]) -> StopReason:
        """Run one turn of ``session`` (in the calling task) and return its stop reason.

        Raises:
            Busy: a turn is already running in the session.
            LocalProtocolError: the runner is not :meth:`running`.
            RpcError: ``-32603`` when the connection closed during the turn,
                ``-32800`` when the prompt was cancelled (:meth:`cancel_request`).
            Exception: whatever the agent raised.
        """
        if session.id in self._turns or session.turn is not None:
            raise Busy("An agent turn is already in progress")
        if not self._running:
            raise LocalProtocolError("the turn runner is not running")
        flight = self._turns[session.id] = _InFlight(session)
        try:
            stop = await self.runtime.prompt(session, content)
        except ConnectionClosed as exc:
            log.warning("%s: turn of %s failed: %s", self.name, session.id, exc)
            raise RpcError(ErrorCode.INTERNAL_ERROR,
                           "The connection closed during the turn") from exc
        finally:
            del self._turns[session.id]
            flight.finish()
        if flight.request_cancelled:
            raise RpcError(ErrorCode.REQUEST_CANCELLED, "Request cancelled")
        return stop

    def cancel(self, session_id: str) -> bool:
        """Cancel the session's running turn; ``False`` when none runs."""
        flight = self._turns.get(session_id)
        if flight is None:
            return False
        self.runtime.cancel(flight.session)
        return True

    def cancel_request(self, session_id: str) -> None:
        """The client cancelled the prompt request: cancel its turn, answer ``-32800``."""
        flight = self._turns.get(session_id)
        if flight is not None:
            flight.request_cancelled = True
            self.runtime.cancel(flight.session)

    async def stop(self, grace: float) -> None:
        """Cancel every turn; wait up to ``grace`` seconds for them to end."""
        flights = list(self._turns.values())
        for flight in flights:
            self.runtime.cancel(flight.session)
        with anyio.move_on_after(grace):
            for flight in flights:
                await flight.wait()
        if not all(flight.finished for flight in flights):
            log.warning("%s: turns did not end in time", self.name)
