"""The server side of one Wire connection as a neutral :class:`~wireproto.agent.api.Channel`.

Theory of operation
-------------------
The runtime and the agent's turns talk to the client through
:class:`WireChannel`:

* **Events** are translated (:class:`~..translate.Translator`) and written as
  ``event`` notifications through the peer's single, bounded, ordered writer:
  a slow client makes the turn wait, and order is kept.
* **Requests** (approvals, external tool calls, questions, hooks) are
  ``request``\\ s whose JSON-RPC id equals the payload id (protocol-wire.md#request-ids).
  Each one is *exchanged* by a task owned by the connection's task group; the
  asking turn only waits for the exchange's outcome. This is what lets a
  request be **abandoned** — when the turn is cancelled, the turn ends or the
  connection shuts down — without forgetting it: the exchange keeps waiting
  (up to :data:`LATE_ANSWER_GRACE` seconds) so a late answer is recognised,
  logged at debug level and dropped.
* **Visible resolution** (protocol-wire.md#visible-resolution). Abandoning a
  request tells the client at once with an event it already understands: ``ApprovalResponse``
  ``reject`` with ``feedback`` naming the reason, or an error ``ToolResult``.
  The asking code gets the safe outcome (reject, error result, no answers,
  allow) unless it was itself cancelled.
* **Failures** of a request are never fatal (protocol-wire.md#failed-answers):
  a JSON-RPC error or an invalid result counts as reject / error tool result / dismissed / allow.

No event waits behind a pending request: requests are awaited in the asking
task only, while events from other tasks keep flowing through the writer.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import msgspec

from wireproto._childcheck import CheckFailed, search_apart
from wireproto.agent.api import (
    Approval,
    ApprovalRequest,
    ClientCapabilities,
    Decision,
    ExternalTool,
    Question,
    Session,
    ToolOutcome,
)
from wireproto.agent.events import Event
from wireproto.agent.questions import Answers, AskStatus
from wireproto.agent.turn import new_id
from wireproto.errors import (
    ConnectionClosed,
    LocalProtocolError,
    RemoteProtocolError,
    RpcError,
)
from wireproto.rpc.peer import Peer

from .. import messages as m
from ..envelope import decode_response, encode_event, encode_request
from ..methods import EVENT_METHOD, REQUEST_METHOD, HookSubscription, WireText
from ..translate import WIRE_TO_DECISION, Translator, approval_request, output_text
from .questions import answers_of, question_request

__all__ = ["LATE_ANSWER_GRACE", "WireChannel"]

log = logging.getLogger(__name__)

LATE_ANSWER_GRACE = 60.0
"""Seconds an abandoned request still waits for a late answer (to log it quietly)."""

ANNOUNCE_TIMEOUT = 1.0
"""Seconds a visible resolution may wait for the writer before it is given up."""

_TOOL_ABANDONED: dict[str, tuple[str, str]] = {
    "turn ended": (WireText.TOOL_TURN_ENDED.value, WireText.TOOL_TURN_ENDED_BRIEF.value),
    "cancelled": ("Agent turn was cancelled before tool result was received.", "Cancelled"),
    "connection closed": (
        WireText.TOOL_CONNECTION_CLOSED.value, WireText.TOOL_CONNECTION_CLOSED_BRIEF.value,
    ),
}
"""Reason a tool call was abandoned -> (message, brief) of its error result."""

_TOOL_FAILURES: dict[type[BaseException], Callable[[BaseException], str]] = {
    RpcError: lambda exc: exc.message if isinstance(exc, RpcError) else str(exc),
    RemoteProtocolError: lambda exc: WireText.TOOL_INVALID_RESULT.value,
    ConnectionClosed: lambda exc: WireText.TOOL_CONNECTION_CLOSED.value,
    TimeoutError: lambda exc: "The client did not answer in time.",
    LocalProtocolError: lambda exc: str(exc),
}
"""Failure of a ``ToolCallRequest`` -> the error message for the model.

See protocol-wire.md#failed-answers.
"""

_EXCHANGE_ERRORS = (RpcError, RemoteProtocolError, ConnectionClosed, TimeoutError,
                    LocalProtocolError)  # fmt: skip


def _failure_message(exc: BaseException) -> str:
    for cls in type(exc).__mro__:
        rule = _TOOL_FAILURES.get(cls)
        if rule is not None:
            return rule(exc)
    return str(exc)


class _Exchange:
    """One server -> client request and its outcome."""

    __slots__ = ("abandoned", "done", "error", "request", "response", "scope")

    def __init__(self, request: m.Request) -> None:
        self.request = request
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()
        self.response: m.Response | None = None
        self.error: BaseException | None = None
        self.abandoned: str | None = None


class WireChannel:
    """The :class:`~wireproto.agent.api.Channel` of one Wire connection (server role).

    Created unattached; :meth:`attach` gives it the running peer and the task
    group that owns request exchanges.

    Args:
        yolo: approve every approval request without asking the client.
        name: a label for log lines.

    Attributes:
        capabilities: what the client declared (updated by ``initialize``).
        hooks: the client's hook subscriptions (accumulated).
        translator: the live event translator.
        cancel_reason: the feedback given when an asking turn is cancelled
            (``"cancelled"``, or ``"connection closed"`` while shutting down).
        flushes_history: true: the server's peer writes the runtime's
            held-back history records before each write to the client.
    """

    flushes_history = True

    def __init__(self, *, yolo: bool = False, name: str = "wire server") -> None:
        self.yolo = yolo
        self.name = name
        self.capabilities = ClientCapabilities(external_tools_supported=True)
        self.hooks: list[HookSubscription] = []
        self.cancel_reason = "cancelled"
        self._outstanding: dict[str, _Exchange] = {}
        self.translator = Translator(reserved=self._outstanding.__contains__)
        self.replay_translator = Translator(replay=True)
        self._peer: Peer | None = None
        self._tg: anyio.abc.TaskGroup | None = None

    def attach(self, peer: Peer, tg: anyio.abc.TaskGroup) -> None:
        """Use ``peer`` for all traffic; exchanges run as tasks of ``tg``."""
        self._peer, self._tg = peer, tg

    @property
    def peer(self) -> Peer:
        """The attached peer.

        Raises:
            ConnectionClosed: not attached (no connection).
        """
        if self._peer is None:
            raise ConnectionClosed("the Wire channel has no connection")
        return self._peer

    # ---------------------------------------------------------------- events

    async def emit(self, *events: m.Event) -> None:
        """Write Wire events in order (waits while the writer's queue is full).

        Raises:
            ConnectionClosed: the connection is closed.
        """
        # (as one unit: none written before the event they tell is recorded)
        await self.peer.notify_many(EVENT_METHOD, [encode_event(e) for e in events])

    async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
        """Translate one neutral event and write the resulting Wire events."""
        translator = self.replay_translator if replay else self.translator
        await self.emit(*translator.translate(event))

    # -------------------------------------------------------------- requests

    async def _exchange(self, entry: _Exchange, limit: float | None) -> None:
        request = entry.request
        try:
            with entry.scope, anyio.fail_after(limit):
                result: Any = await self.peer.request(
                    REQUEST_METHOD, encode_request(request), id=request.id
                )
                entry.response = decode_response(request, result)
        except _EXCHANGE_ERRORS as exc:
            entry.error = exc
        except Exception as exc:  # e.g. a payload that cannot be encoded: never fatal
            log.exception("%s: %s %s failed", self.name, request.WIRE_TYPE, request.id)
            entry.error = exc
        finally:
            if self._outstanding.get(request.id) is entry:
                del self._outstanding[request.id]
            entry.done.set()
        if entry.abandoned is not None and not entry.scope.cancelled_caught:
            outcome = entry.error if entry.error is not None else "a result"
            log.debug("%s: late answer to %s %s dropped: %r",
                      self.name, request.WIRE_TYPE, request.id, outcome)

    async def _ask(self, request: m.Request, limit: float | None = None) -> _Exchange:
        """Send ``request`` and wait for its outcome (or its abandonment)."""
        if self._tg is None:
            raise ConnectionClosed("the Wire channel has no connection")
        entry = _Exchange(request)
        self._outstanding[request.id] = entry
        self._tg.start_soon(self._exchange, entry, limit)
        try:
            await entry.done.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._abandon(entry, self.cancel_reason)
            raise
        return entry

    async def _abandon(self, entry: _Exchange, reason: str) -> None:
        """Stop waiting for ``entry`` and tell the client (protocol-wire.md#visible-resolution)."""
        if entry.abandoned is not None or entry.done.is_set():
            return
        entry.abandoned = reason
        entry.scope.deadline = anyio.current_time() + LATE_ANSWER_GRACE
        entry.done.set()
        log.info("%s: %s %s resolved without an answer: %s",
                 self.name, entry.request.WIRE_TYPE, entry.request.id, reason)
        await self._announce(entry.request, reason)

    async def _announce(self, request: m.Request, reason: str) -> None:
        event: m.Event
        if isinstance(request, m.ApprovalRequest):
            self.translator.resolved(approval=request.id)
            event = m.ApprovalResponse(request_id=request.id, response="reject", feedback=reason)
        elif isinstance(request, m.ToolCallRequest):
            self.translator.resolved(tool_call=request.id)
            message, brief = _TOOL_ABANDONED.get(reason, (reason, reason))
            event = m.ToolResult(
                tool_call_id=request.id,
                return_value=m.ToolReturnValue.error(message, brief=brief),
            )
        else:  # questions and hooks have no resolution event
            return
        with anyio.move_on_after(ANNOUNCE_TIMEOUT):
            try:
                await self.emit(event)
            except ConnectionClosed:
                log.debug("%s: could not announce %s: connection closed", self.name, reason)

    async def abandon_all(self, reason: str) -> None:
        """Abandon every request still waiting for an answer, visibly."""
        for entry in list(self._outstanding.values()):
            await self._abandon(entry, reason)

    # ------------------------------------------------------- Channel methods

    async def request_approval(self, session: Session, request: ApprovalRequest) -> Approval:
        """Send an ``ApprovalRequest``; error, invalid answer or abandonment = reject."""
        if self.yolo:
            return Approval(Decision.ALLOW_ONCE)
        wire = approval_request(
            request, self.translator.approval_id(request.id),
            self.translator.wire_id(request.tool_call_id),
        )
        entry = await self._ask(wire)
        if entry.abandoned is not None:
            return Approval(Decision.REJECT, entry.abandoned)
        response = entry.response
        if not isinstance(response, m.ApprovalResponse):
            log.warning("%s: approval %s failed, rejecting: %s", self.name, wire.id, entry.error)
            closed = isinstance(entry.error, ConnectionClosed)
            return Approval(Decision.REJECT, "connection closed" if closed else "")
        if response.request_id != wire.id:
            log.warning("%s: approval answer names request %r, expected %r",
                        self.name, response.request_id, wire.id)
        return Approval(WIRE_TO_DECISION[response.response], response.feedback)

    async def call_tool(
        self, session: Session, call_id: str, tool: ExternalTool, arguments: Any
    ) -> ToolOutcome:
        """Send a ``ToolCallRequest`` (id = the call's Wire id) and return the client's result."""
        wire_id = self.translator.wire_id(call_id)
        request = m.ToolCallRequest(
            id=wire_id, name=tool.name, arguments=msgspec.json.encode(arguments).decode()
        )
        entry = await self._ask(request)
        if entry.abandoned is not None:
            message = _TOOL_ABANDONED.get(entry.abandoned, (entry.abandoned, ""))[0]
            return ToolOutcome(True, "", message)
        result = entry.response
        if not isinstance(result, m.ToolResult):
            assert entry.error is not None
            message = _failure_message(entry.error)
            log.warning("%s: external tool %s (%s) failed: %s", self.name, tool.name, wire_id,
                        message)
            self.translator.client_result(
                wire_id,
                m.ToolReturnValue.error(message, brief=WireText.TOOL_CLIENT_ERROR_BRIEF.value),
            )
            return ToolOutcome(True, "", message)
        if result.tool_call_id != wire_id:
            log.warning("%s: tool result names call %r, expected %r",
                        self.name, result.tool_call_id, wire_id)
        value = result.return_value
        self.translator.client_result(wire_id, value)
        return ToolOutcome(value.is_error, output_text(value.output), value.message)

    async def ask(self, session: Session, tool_call_id: str, question: Question) -> list[str]:
        """Send a ``QuestionRequest``; ``[]`` when unsupported, dismissed or failed."""
        if not self.capabilities.questions:
            return []
        request = m.QuestionRequest(
            id=str(uuid.uuid4()),
            tool_call_id=self.translator.wire_id(tool_call_id),
            questions=[
                m.QuestionItem(
                    question=question.question, header=question.header,
                    options=[m.QuestionOption(label=label) for label in question.options],
                    multi_select=question.multi_select,
                )
            ],
        )
        entry = await self._ask(request)
        response = entry.response
        if not isinstance(response, m.QuestionResponse):
            return []
        answer = response.answers.get(question.question, "")
        if not question.multi_select:
            return [answer] if answer else []
        return [label.strip() for label in answer.split(",") if label.strip()]

    async def ask_questions(
        self, session: Session, tool_call_id: str, questions: list[Question]
    ) -> Answers:
        """Ask 1-4 questions in one ``QuestionRequest`` (see :mod:`.questions`)."""
        if not self.capabilities.questions:
            return Answers(AskStatus.UNSUPPORTED)
        call_id = self.translator.wire_id(tool_call_id) if tool_call_id else new_id("call")
        request = question_request(str(uuid.uuid4()), call_id, questions)
        entry = await self._ask(request)
        return answers_of(questions, entry.response)

    async def _subscriptions(self, event: str, target: str) -> list[HookSubscription]:
        """The subscriptions to ``event`` whose matcher finds ``target``.

        A matcher is the client's regular expression: one with special characters is
        searched in a child Python, stopped after 2 s (it may backtrack for ever,
        holding every session of this process); past that no hook runs (fail open).
        """
        found, apart = [], []
        for sub in self.hooks:
            if sub.event != event:
                continue
            try:
                re.compile(sub.matcher)
            except re.error:
                log.warning("%s: hook %s has an invalid matcher %r", self.name, sub.id,
                            sub.matcher)
                continue
            if re.escape(sub.matcher) == sub.matcher:  # a literal: searched here, at once
                if sub.matcher in target:
                    found.append(sub)
            else:
                apart.append(sub)
        if apart:
            why = "take too long"
            try:
                matched = await search_apart([(sub.matcher, target) for sub in apart])
            except CheckFailed as exc:
                matched, why = None, f"could not be searched ({exc})"
            if matched is None:
                log.warning("%s: hook matchers %s on %r: those hooks do not run",
                            self.name, why, target)
            else:
                found.extend(sub for sub in apart if matched[(sub.matcher, target)])
                found.sort(key=self.hooks.index)  # (in subscription order)
        return found

    async def run_hook(
        self, session: Session, event: str, target: str, input: dict[str, Any]
    ) -> tuple[bool, str]:
        """Send a ``HookRequest`` per matching subscription, all at once; fail open.

        Each request waits up to its subscription's ``timeout``; a timeout,
        an error or an invalid answer counts as ``allow``. The first
        subscription (in subscription order) that answers ``block`` decides.
        ``HookTriggered`` / ``HookResolved`` events bracket the batch.
        """
        subscriptions = await self._subscriptions(event, target)
        if not subscriptions:
            return True, ""
        await self.emit(m.HookTriggered(event=event, target=target,
                                        hook_count=len(subscriptions)))
        started = anyio.current_time()
        answers: list[m.HookResponse | None] = [None] * len(subscriptions)

        async def ask(index: int, sub: HookSubscription) -> None:
            request = m.HookRequest(
                id=str(uuid.uuid4()), subscription_id=sub.id, event=event, target=target,
                input_data=input,
            )
            try:
                response = (await self._ask(request, limit=sub.timeout)).response
            except ConnectionClosed:
                return  # fail open, as for every other failure
            answers[index] = response if isinstance(response, m.HookResponse) else None

        async with anyio.create_task_group() as tg:
            for index, sub in enumerate(subscriptions):
                tg.start_soon(ask, index, sub)
        block = next((a for a in answers if a is not None and a.action == "block"), None)
        allowed, reason = (True, "") if block is None else (False, block.reason)
        await self.emit(
            m.HookResolved(
                event=event, target=target, action="allow" if allowed else "block",
                reason=reason, duration_ms=int((anyio.current_time() - started) * 1000),
            )
        )
        return allowed, reason

    async def read_text_file(self, session: Session, path: str) -> str:
        """Never called: Wire clients have no file system methods.

        Raises:
            LocalProtocolError: always.
        """
        raise LocalProtocolError("Wire clients cannot read files")

    async def write_text_file(self, session: Session, path: str, content: str) -> None:
        """Never called: Wire clients have no file system methods.

        Raises:
            LocalProtocolError: always.
        """
        raise LocalProtocolError("Wire clients cannot write files")
