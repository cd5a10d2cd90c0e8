"""The proxy agent in front of a Wire agent: ACP (or any neutral front) -> Wire.

Theory of operation
-------------------
:class:`WireBackedAgent` is a neutral :class:`~wireproto.agent.api.Agent`;
serve it with :func:`~wireproto.adapters.acp.serve_acp` (or any adapter)
inside ``async with agent.running():``, which owns the backend processes.

* **Sessions.** Wire has one session per process, so every front session
  gets its own backend, spawned as ``CMD --session ID --work-dir CWD --wire``
  (the Wire SDK's convention; ``--wire`` is not repeated when CMD has it).
  ``load`` and ``resume`` respawn with the same id, so the backend restores
  its own context; the history the front client sees on ``session/load``,
  and ``session/list``, come from the proxy's own record (the runtime's
  :class:`~wireproto.agent.store.SessionStore`, by default
  ``$WIREPROTO_HOME/proxy-sessions``). Closing the session closes the
  backend's stdin; it is terminated if it does not exit.
* **Turns.** A front prompt becomes a Wire ``prompt``; while it runs, the
  backend's events are translated by the table :data:`EVENT_RULES` into
  calls on the :class:`~wireproto.agent.turn.Turn` (text, thoughts, tool
  calls and results, ``SetTodoList`` as a plan, ``StatusUpdate`` as usage,
  further steps). The Wire status becomes the stop reason
  (:data:`STATUS_TO_STOP`). A front cancel sends Wire ``cancel`` and waits
  (at most :data:`CANCEL_GRACE` seconds) for the backend to end its turn.
* **Requests** from the backend: an ``ApprovalRequest`` becomes the front's
  approval (allow once -> ``approve``, for the session ->
  ``approve_for_session``, reject -> ``reject`` with the feedback); a
  ``QuestionRequest`` is asked when the front client answers questions,
  else dismissed. What has no translation is refused or dropped with a
  warning naming the missing feature, logged once per feature.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import msgspec

from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.client.connection import WireClient
from wireproto.adapters.wire.display import BriefDisplayBlock, DiffDisplayBlock, TodoDisplayBlock
from wireproto.adapters.wire.methods import ClientInfo
from wireproto.adapters.wire.translate import (
    DECISION_TO_WIRE,
    TODO_TOOL,
    blocks_to_user_input,
    output_text,
)
from wireproto.agent.api import Agent, AgentInfo, Question, Session, SlashCommand
from wireproto.agent.content import Diff, Text, ToolContent
from wireproto.agent.events import Notice, PlanEntry, PlanStatus, StopReason, ToolStatus
from wireproto.agent.turn import ToolCall, Turn
from wireproto.errors import ConnectionClosed, InvalidArgument, RpcError
from wireproto.proxy.backend import START_ERRORS, hold_backend, start_failure
from wireproto.proxy.options import MODE_OPTION, WIRE_OPTIONS
from wireproto.proxy.refusals import BackendGone, backend_failed, refuse_once
from wireproto.transports.subprocess import open_subprocess

__all__ = ["CANCEL_GRACE", "EVENT_RULES", "STATUS_TO_STOP", "WireBackedAgent", "wire_command"]

log = logging.getLogger(__name__)

GONE = "the backend agent of this session has exited; load the session again to restart it"

CANCEL_GRACE = 10.0
"""Seconds a cancelled backend turn may take to end before the proxy stops waiting."""

STATUS_TO_STOP: dict[str, StopReason] = {
    "finished": StopReason.END_TURN,
    "cancelled": StopReason.CANCELLED,
    "max_steps_reached": StopReason.MAX_STEPS,
}
"""Wire ``prompt`` status -> neutral stop reason (unknown -> end of turn)."""

_TODO_STATUS: dict[str, PlanStatus] = {
    "pending": "pending", "in_progress": "in_progress", "done": "completed",
}


def wire_command(cmd: Sequence[str], session_id: str, work_dir: str,
                 thinking: bool | None = None) -> list[str]:
    """The backend command line for one session (the Wire SDK's spawn convention)."""
    extra = ["--session", session_id, "--work-dir", work_dir]
    if thinking is not None:
        extra.append("--thinking" if thinking else "--no-thinking")
    return [*cmd, *extra] if "--wire" in cmd else [*cmd, *extra, "--wire"]


class _Backend:
    """One backend process and the front turn it is serving."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.client: WireClient | None = None
        self.turn: Turn | None = None
        self.calls: dict[str, ToolCall] = {}
        self.todos: set[str] = set()
        self.closing = anyio.Event()
        self.ended = anyio.Event()


class WireBackedAgent(Agent):
    """Forward every session to a Wire agent spawned per session.

    Args:
        cmd: the Wire agent's command (``--session ID --work-dir CWD --wire``
            is appended).
        env: the backends' environment (default: ours).
        name: the agent's name as shown to the front client.
    """

    supports_delete = True
    supports_plan_mode = False
    options = WIRE_OPTIONS

    def __init__(self, cmd: Sequence[str], *, env: Mapping[str, str] | None = None,
                 name: str = "wireproto-proxy") -> None:
        from wireproto import __version__

        self.cmd = list(cmd)
        self.env = env
        # per instance: the backend's identity and commands are known only at run time
        self.info = AgentInfo(  # type: ignore[misc]
            name=name, version=__version__, title=f"{name} (Wire backend)")
        self.commands = ()  # type: ignore[misc]
        self._backends: dict[str, _Backend] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------ lifecycle

    @asynccontextmanager
    async def running(self) -> AsyncIterator[WireBackedAgent]:
        """Own the backend processes while serving; they are stopped on exit."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                for backend in list(self._backends.values()):
                    backend.closing.set()

    async def session_started(self, session: Session, how: str) -> None:
        """Spawn the session's backend (``load``/``resume``: with the same id)."""
        if self._tg is None:
            raise RuntimeError("serve the proxy agent inside 'async with agent.running()'")
        if not await anyio.Path(session.cwd).is_dir():  # (the backend would exit at once)
            raise InvalidArgument(f"cwd {session.cwd}: no such directory (the Wire agent needs it)")
        if session.mcp_servers:
            refuse_once("MCP servers from the client", "a Wire agent takes no per-session MCP "
                        "servers; configure them in the Wire agent itself (ignored)")
        old = self._backends.pop(session.id, None)
        if old is not None:
            old.closing.set()
        backend = _Backend(session)
        await self._tg.start(self._run_backend, backend)
        self._backends[session.id] = backend

    async def option_changed(self, session: Session, option_id: str, value: str | bool) -> None:
        """``mode``: Wire ``set_plan_mode``; ``thinking``: respawn with the flag."""
        backend = self._backends.get(session.id)
        if backend is None or backend.client is None:
            raise BackendGone(GONE)
        if option_id == MODE_OPTION:
            try:
                await backend.client.set_plan_mode(value == "plan")
            except RpcError as exc:
                raise RpcError(exc.code, refuse_once(
                    "plan mode", f"the Wire agent refused set_plan_mode ({exc.message})"),
                ) from None
        elif option_id == "thinking":
            await self.session_started(session, "resume")  # respawned with the flag

    async def session_closed(self, session: Session) -> None:
        """Stop the session's backend."""
        backend = self._backends.pop(session.id, None)
        if backend is not None:
            backend.closing.set()

    async def _run_backend(
        self, backend: _Backend, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        session = backend.session
        thinking = session.options.get("thinking")
        cmd = wire_command(self.cmd, session.id, session.cwd,
                           thinking if isinstance(thinking, bool) else None)
        started = False
        try:
            async with open_subprocess(cmd, env=self.env, stderr="log",
                                       start_new_session=True, shutdown_timeout=2.0) as child:
                log.info("proxy: session %s: %s started (pid %d)", session.id, cmd[0],
                         child.pid)
                async with WireClient(
                    child, client_info=ClientInfo(name="wireproto-proxy", version="1"),
                    on_event=lambda event: self._on_event(backend, event),
                    on_approval=lambda request: self._on_approval(backend, request),
                    on_question=lambda request: self._on_question(backend, request),
                    event_buffer=0, initialize_timeout=30.0, name=f"backend {session.id}",
                ) as client:
                    await client.initialize()
                    if client.slash_commands and not self.commands:
                        self.commands = tuple(  # type: ignore[misc]
                            SlashCommand(c.name, c.description, tuple(c.aliases))
                            for c in client.slash_commands
                        )
                    backend.client = client
                    task_status.started()
                    started = True
                    await hold_backend(child, client.wait_closed, backend.closing)
        except START_ERRORS as exc:
            if not started:
                raise start_failure(cmd[0], exc, "wire") from None
            log.warning("proxy: session %s: the backend ended: %s", session.id, exc)
        finally:
            backend.ended.set()
            if self._backends.get(session.id) is backend:
                del self._backends[session.id]
            log.info("proxy: session %s: backend stopped", session.id)

    # ---------------------------------------------------------------- turns

    async def prompt(self, turn: Turn) -> StopReason:
        """Run the prompt on the session's backend; cancel it there when cancelled."""
        backend = self._backends.get(turn.session.id)
        if backend is None or backend.client is None or backend.ended.is_set():
            raise BackendGone(GONE)
        client = backend.client
        backend.turn, backend.calls, backend.todos = turn, {}, set()
        status: list[str] = []
        failed: list[Exception] = []
        try:
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as tg:

                    async def run() -> None:
                        try:
                            result = await client.prompt(blocks_to_user_input(turn.prompt))
                            status.append(result.status)
                        except (ConnectionClosed, RpcError) as exc:
                            failed.append(exc)
                        tg.cancel_scope.cancel()

                    async def watch() -> None:
                        await turn.wait_cancelled()
                        try:
                            await client.cancel()
                        except (RpcError, ConnectionClosed) as exc:
                            log.info("proxy: backend cancel: %s", exc)
                        await anyio.sleep(CANCEL_GRACE)
                        log.warning("proxy: the backend did not end its cancelled turn "
                                    "within %g s", CANCEL_GRACE)
                        tg.cancel_scope.cancel()

                    tg.start_soon(run)
                    tg.start_soon(watch)
        finally:
            backend.turn = None
        if failed:
            if isinstance(failed[0], RpcError):
                raise backend_failed(failed[0]) from failed[0]
            raise BackendGone(f"{GONE} ({failed[0]})")
        if turn.cancelled:
            return StopReason.CANCELLED
        return STATUS_TO_STOP.get(status[0] if status else "", StopReason.END_TURN)

    # --------------------------------------------------------------- events

    async def _on_event(self, backend: _Backend, event: Any) -> None:
        turn = backend.turn
        if turn is None or turn.cancelled:
            return
        rule = EVENT_RULES.get(type(event))
        if rule is None:
            refuse_once(f"wire event {getattr(event, 'WIRE_TYPE', type(event).__name__)}",
                        "it has no counterpart for this front client; dropped")
            return
        try:
            await rule(backend, turn, event)
        except ConnectionClosed:
            log.info("proxy: the front client is gone; event dropped")

    async def _on_approval(self, backend: _Backend, request: m.ApprovalRequest) -> (
        m.ApprovalResponse
    ):
        turn = backend.turn
        if turn is None:
            return m.ApprovalResponse(request_id=request.id, response="reject",
                                      feedback="no turn is running")
        call = backend.calls.get(request.tool_call_id)
        if call is None:
            call = await turn.start_tool(request.sender, request.action,
                                         id=request.tool_call_id,
                                         status=ToolStatus.PENDING)
            backend.calls[request.tool_call_id] = call
        display = _display_content(request.display)
        approval = await turn.request_approval(call, request.action, request.description,
                                               display)
        return m.ApprovalResponse(request_id=request.id,
                                  response=DECISION_TO_WIRE[approval.decision.value],
                                  feedback=approval.feedback)

    async def _on_question(self, backend: _Backend, request: m.QuestionRequest) -> (
        dict[str, str]
    ):
        turn = backend.turn
        if turn is None or not turn.client.questions:
            refuse_once("questions", "the front client cannot answer questions (ACP has no "
                        "form elicitation here); the question is dismissed")
            return {}
        answers: dict[str, str] = {}
        for item in request.questions:
            chosen = await turn.ask(
                Question(item.question, tuple(o.label for o in item.options),
                         header=item.header, multi_select=item.multi_select),
                request.tool_call_id,
            )
            if chosen:
                answers[item.question] = ", ".join(chosen)
        return answers


# --------------------------------------------------------------------------- rules


def _display_content(blocks: Sequence[Any]) -> list[ToolContent]:
    content: list[ToolContent] = []
    for block in blocks:
        if isinstance(block, DiffDisplayBlock):
            content.append(Diff(path=block.path, new_text=block.new_text,
                                old_text=block.old_text or None))
        elif isinstance(block, BriefDisplayBlock) and block.text:
            content.append(Text(block.text))
    return content


async def _text(backend: _Backend, turn: Turn, event: m.TextPart) -> None:
    await turn.say(event.text)


async def _think(backend: _Backend, turn: Turn, event: m.ThinkPart) -> None:
    await turn.think(event.think)


async def _tool_call(backend: _Backend, turn: Turn, event: m.ToolCall) -> None:
    name = event.function.name
    if name == TODO_TOOL:
        backend.todos.add(event.id)  # shown as a plan when its result arrives
        return
    raw: Any = None
    if event.function.arguments:
        try:
            raw = msgspec.json.decode(event.function.arguments)
        except (msgspec.DecodeError, RecursionError):  # (nested too deeply: kept as text)
            raw = event.function.arguments
    backend.calls[event.id] = await turn.start_tool(
        name, name, id=event.id, raw_input=raw, status=ToolStatus.IN_PROGRESS)


async def _tool_result(backend: _Backend, turn: Turn, event: m.ToolResult) -> None:
    value = event.return_value
    if event.tool_call_id in backend.todos:
        backend.todos.discard(event.tool_call_id)
        for block in value.display:
            if isinstance(block, TodoDisplayBlock):
                await turn.plan([PlanEntry(item.title, _TODO_STATUS.get(item.status, "pending"))
                                 for item in block.items])
        return
    call = backend.calls.pop(event.tool_call_id, None)
    if call is None:
        call = await turn.start_tool("tool", "tool", id=event.tool_call_id,
                                     status=ToolStatus.IN_PROGRESS)
    content: list[ToolContent] = []
    text = output_text(value.output)
    if text:
        content.append(Text(text))
    content.extend(c for c in _display_content(value.display) if isinstance(c, Diff))
    await call.update(status=ToolStatus.FAILED if value.is_error else ToolStatus.COMPLETED,
                      content=content, message=value.message)


async def _status(backend: _Backend, turn: Turn, event: m.StatusUpdate) -> None:
    usage = event.token_usage
    if event.context_tokens is None and event.max_context_tokens is None and usage is None:
        return
    await turn.usage(
        used=event.context_tokens, size=event.max_context_tokens,
        input_tokens=usage.input_other if usage else None,
        output_tokens=usage.output if usage else None,
        cache_read_tokens=usage.input_cache_read if usage else None,
        cache_write_tokens=usage.input_cache_creation if usage else None,
    )


async def _step(backend: _Backend, turn: Turn, event: m.StepBegin) -> None:
    if event.n > turn.step:
        await turn.new_step()


async def _notification(backend: _Backend, turn: Turn, event: m.Notification) -> None:
    await turn.emit(Notice(severity=event.severity, title=event.title,
                           description=event.body or None))


async def _nothing(backend: _Backend, turn: Turn, event: Any) -> None:
    return None


EVENT_RULES: dict[type, Callable[[_Backend, Turn, Any], Awaitable[None]]] = {
    m.TextPart: _text,
    m.ThinkPart: _think,
    m.ToolCall: _tool_call,
    m.ToolCallPart: _nothing,  # argument streaming: the whole call is shown at its result
    m.ToolResult: _tool_result,
    m.StatusUpdate: _status,
    m.StepBegin: _step,
    m.Notification: _notification,
    m.TurnBegin: _nothing,  # the front writes its own turn brackets
    m.TurnEnd: _nothing,
    m.StepInterrupted: _nothing,
    m.SteerInput: _nothing,
    m.ApprovalResponse: _nothing,  # the front already saw its own answer
}
"""Wire event type -> what it does to the front turn (others: refused once, dropped)."""
