"""The proxy agent in front of an ACP agent: Wire (or any neutral front) -> ACP.

Theory of operation
-------------------
:class:`AcpBackedAgent` is a neutral :class:`~wireproto.agent.api.Agent`;
serve it with :func:`~wireproto.adapters.wire.serve_wire` inside
``async with agent.running():``, which owns the one backend process (spawned
at the first session, initialized once, shared by the sessions of the
front connection).

* **Sessions.** A new front session creates a backend ACP session
  (``session/new`` with the front's work dir); the front id -> backend id
  pairs are kept in a small JSON file (``ids_file``) so a later
  ``--session ID`` can ``session/resume`` (else ``session/load``) the same
  backend session. A backend advertising neither answers a clear error.
* **Turns.** A front prompt becomes ``session/prompt``; the updates are
  translated by :data:`UPDATE_RULES` into calls on the front turn; the ACP
  stop reason becomes the neutral one (:data:`STOP_OF_ACP`). A front cancel
  sends ``session/cancel`` and waits for the backend's answer. Steering has
  no ACP counterpart: steer input is queued and sent as the next
  ``session/prompt`` of the same front turn, once the backend's turn ended.
* **Permissions** become front approvals: ``allow_once`` / ``allow_always``
  / ``reject_once`` options are chosen for allow once / for the session /
  reject (the nearest option of another kind when one is missing). ACP has
  no approval feedback: it is dropped (logged once).
* **External tools** declared by a Wire front client are offered to the
  backend as one stdio MCP server per session (:mod:`wireproto.proxy.tools`,
  the host's MCP bridge); a call reaches the front client as a
  ``ToolCallRequest`` for the backend's tool call of that name.
* ``fs/*`` and ``terminal/*`` are not advertised to the backend (a Wire
  client has no file system): the backend uses its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from msgspec import UNSET

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.elicitation import FormOrUrl
from wireproto.adapters.acp.client.state import SessionEvent
from wireproto.adapters.acp.translate import block_out
from wireproto.adapters.mcp import messages as mcp
from wireproto.agent.api import Agent, AgentInfo, Decision, Session, SlashCommand, ToolOutcome
from wireproto.agent.content import Diff, Text, ToolContent
from wireproto.agent.events import PlanEntry, StopReason, ToolKind, ToolStatus
from wireproto.agent.turn import ToolCall, Turn
from wireproto.errors import ConnectionClosed, RpcError
from wireproto.proxy.backend import START_ERRORS, hold_backend, start_failure
from wireproto.proxy.options import MODE_OPTION, acp_options, plan_mode_id
from wireproto.proxy.questions import form_content, form_questions
from wireproto.proxy.refusals import BackendGone, backend_failed, refuse_once
from wireproto.proxy.tools import ToolBridge
from wireproto.transports.subprocess import SubprocessStream, open_subprocess

__all__ = ["ANNOUNCE_GRACE", "OPTION_KINDS", "STOP_OF_ACP", "UPDATE_RULES", "AcpBackedAgent"]

log = logging.getLogger(__name__)

STOP_OF_ACP: dict[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "cancelled": StopReason.CANCELLED,
    "max_tokens": StopReason.MAX_TOKENS,
    "max_turn_requests": StopReason.MAX_STEPS,
    "refusal": StopReason.REFUSAL,
}
"""ACP stop reason -> neutral stop reason (unknown -> end of turn)."""

OPTION_KINDS: dict[Decision, tuple[str, ...]] = {
    Decision.ALLOW_ONCE: ("allow_once", "allow_always"),
    Decision.ALLOW_SESSION: ("allow_always", "allow_once"),
    Decision.REJECT: ("reject_once", "reject_always"),
}
"""Neutral decision -> the permission option kinds to choose, best first."""

ANNOUNCE_GRACE = 2.0
"""Seconds a front tool call from the backend's MCP bridge waits for the backend's
announcement of that tool call (it travels on another connection)."""

_STATUS = {"pending": ToolStatus.PENDING, "in_progress": ToolStatus.IN_PROGRESS,
           "completed": ToolStatus.COMPLETED, "failed": ToolStatus.FAILED}


class AcpBackedAgent(Agent):
    """Forward every session to one ACP agent process.

    Args:
        cmd: the ACP agent's command.
        env: its environment (default: ours).
        ids_file: where front -> backend session ids are remembered (none: in memory).
        name: the agent's name as shown to the front client.
    """

    supports_delete = False
    supports_plan_mode = False

    def __init__(self, cmd: Sequence[str], *, env: Mapping[str, str] | None = None,
                 ids_file: Path | None = None, name: str = "wireproto-proxy") -> None:
        from wireproto import __version__

        self.cmd = list(cmd)
        self.env = env
        self.ids_file = ids_file
        self.info = AgentInfo(  # type: ignore[misc]
            name=name, version=__version__, title=f"{name} (ACP backend)")
        self.commands = ()  # type: ignore[misc]
        self.client: ClientConnection | None = None
        self.process: SubprocessStream | None = None
        """The backend process while it runs."""
        self._tg: anyio.abc.TaskGroup | None = None
        self._ids: dict[str, str] = {}
        self._turns: dict[str, Turn] = {}
        self._calls: dict[str, dict[str, ToolCall]] = {}
        self._stop = anyio.Event()
        self._sessions: dict[str, Session] = {}
        self._announced = anyio.Event()  # set (and replaced) at each backend tool call
        self.bridge = ToolBridge(self)

    # ------------------------------------------------------------ lifecycle

    @asynccontextmanager
    async def running(self) -> AsyncIterator[AcpBackedAgent]:
        """Own the backend process while serving; it is stopped on exit."""
        async with anyio.create_task_group() as tg, self.bridge.running():
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                self._stop.set()

    async def _backend(self) -> ClientConnection:
        if self.client is not None:
            return self.client
        if self._tg is None:
            raise RuntimeError("serve the proxy agent inside 'async with agent.running()'")
        await self._tg.start(self._run_backend)
        assert self.client is not None
        return self.client

    async def _run_backend(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        try:
            async with open_subprocess(self.cmd, env=self.env, stderr="log",
                                       start_new_session=True, shutdown_timeout=2.0) as child:
                log.info("proxy: %s started (pid %d)", self.cmd[0], child.pid)
                async with ClientConnection(child, on_permission=self._on_permission,
                                            on_update=self._on_update,
                                            on_elicitation=self._on_elicitation,
                                            elicitation_modes=("form",),
                                            name="acp backend") as client:
                    await client.initialize()
                    self.client, self.process = client, child
                    task_status.started()
                    started = True
                    await hold_backend(child, client.wait_closed, self._stop)
        except START_ERRORS as exc:
            if not started:
                raise start_failure(self.cmd[0], exc, "acp") from None
            log.warning("proxy: the backend ended: %s", exc)
        finally:
            self.client = self.process = None

    def _load_ids(self) -> None:
        if self.ids_file is not None and not self._ids:
            try:
                self._ids = dict(json.loads(self.ids_file.read_text()))
            except (OSError, ValueError):
                self._ids = {}

    def _save_ids(self) -> None:
        if self.ids_file is not None:
            self.ids_file.parent.mkdir(parents=True, exist_ok=True)
            self.ids_file.write_text(json.dumps(self._ids))

    async def session_started(self, session: Session, how: str) -> None:
        """Create the backend session, or resume / load the one paired with this id."""
        client = await self._backend()
        self._load_ids()
        known = self._ids.get(session.id)
        if how != "new" and known is None:
            raise RpcError(-32002, f"session {session.id} has no backend session; "
                                   "start a new session instead")
        servers = self._mcp_servers(session)
        try:
            known = await self._open(client, session, how, known, servers)
        except RpcError as exc:
            if not servers or exc.code != -32602:
                raise
            refuse_once("external tools", f"the ACP agent refused their MCP server "
                        f"({exc.message}); the session runs without them")
            known = await self._open(client, session, how, known, [])
        session.state["proxy.backend_id"] = known
        session.state["proxy.tools_offered"] = bool(servers)
        self._sessions[session.id] = session
        self._calls[known] = {}
        state = client.sessions.get(known)
        if state is not None:
            if state.available_commands:
                self._set_commands(state.available_commands)
            # the backend's options and modes, offered to the front (per instance)
            self.options = acp_options(state)  # type: ignore[misc]
            self.supports_plan_mode = plan_mode_id(state) is not None  # type: ignore[misc]
            if state.modes is not None:
                session.state["proxy.normal_mode"] = state.modes.current_mode_id

    async def option_changed(self, session: Session, option_id: str, value: str | bool) -> None:
        """Set the backend's config option (or its mode) of the same id."""
        client, backend_id = self.client, session.state.get("proxy.backend_id")
        if client is None or not isinstance(backend_id, str):
            raise BackendGone("the backend agent has exited; reconnect to restart it")
        state = client.sessions.get(backend_id)
        if option_id == MODE_OPTION and isinstance(value, str) and state is not None and \
                all(o.id != MODE_OPTION for o in state.config_options):
            await client.set_mode(backend_id, value)
            return
        await client.set_config_option(backend_id, option_id, value)

    async def _apply_plan_mode(self, client: ClientConnection, session: Session,
                               backend_id: str) -> None:
        """Wire ``set_plan_mode``: switch the backend to its plan mode (or back)."""
        if session.plan_mode == session.state.get("proxy.plan_applied", False):
            return
        state = client.sessions.get(backend_id)
        plan = plan_mode_id(state) if state is not None else None
        normal = session.state.get("proxy.normal_mode")
        target = plan if session.plan_mode else normal
        if not isinstance(target, str):
            refuse_once("plan mode", "the ACP agent has no mode named like plan; "
                        "the prompt runs in its current mode")
            return
        await client.set_mode(backend_id, target)
        session.state["proxy.plan_applied"] = session.plan_mode

    def _set_commands(self, commands: Sequence[s.AvailableCommand]) -> None:
        self.commands = tuple(  # type: ignore[misc]
            SlashCommand(c.name, c.description or c.name) for c in commands)

    async def _open(self, client: ClientConnection, session: Session, how: str,
                    known: str | None, servers: list[s.McpServer]) -> str:
        """Resume, load or create the backend session; returns its id."""
        caps = client.agent_capabilities
        if known is not None and how != "new":
            if caps.session_capabilities.resume not in (UNSET, None):
                await client.resume_session(known, session.cwd, servers)
            elif caps.load_session:
                await client.load_session(known, session.cwd, servers)
            else:
                raise RpcError(-32601, refuse_once(
                    "session resume", "the ACP agent advertises neither session/resume nor "
                    "session/load; start a new session instead"))
            return known
        known = (await client.new_session(session.cwd, servers)).session_id
        self._ids[session.id] = known
        self._save_ids()
        return known

    async def _offer_tools(self, client: ClientConnection, session: Session,
                           backend_id: str) -> str:
        """Offer tools declared after the backend session was made (a Wire client
        declares them in ``initialize``, after its session opened); returns the backend
        session id to prompt.

        A session with no turn yet is replaced by a fresh backend session that has
        the tools' MCP server (agents read MCP servers when a session starts); an
        older one is resumed or loaded with it (agents that keep the session live
        may not reload its servers: logged).
        """
        channel = session.channel
        if session.state.get("proxy.tools_offered") or channel is None \
                or not channel.capabilities.external_tools:
            return backend_id
        session.state["proxy.tools_offered"] = True
        log.info("proxy: offering the front client's tools to session %s over MCP", session.id)
        caps = client.agent_capabilities
        try:
            if not session.state.get("proxy.turns"):
                fresh = (await client.new_session(session.cwd, self._mcp_servers(session)))
                self._ids[session.id] = fresh.session_id
                self._save_ids()
                session.state["proxy.backend_id"] = fresh.session_id
                self._calls[fresh.session_id] = {}
                return fresh.session_id
            if caps.session_capabilities.resume not in (UNSET, None):
                await client.resume_session(backend_id, session.cwd, self._mcp_servers(session))
            elif caps.load_session:
                await client.load_session(backend_id, session.cwd, self._mcp_servers(session))
            else:
                refuse_once("external tools", "the ACP agent can neither resume nor load a "
                            "session, so tools declared after it started are not offered")
        except RpcError as exc:
            refuse_once("external tools", f"the ACP agent refused their MCP server "
                        f"({exc.message}); the session runs without them")
        except BaseException:  # (cancelled with its turn: offered again by the next one)
            session.state["proxy.tools_offered"] = False
            raise
        return backend_id

    def _mcp_servers(self, session: Session) -> list[s.McpServer]:
        """The bridge of the front client's tools, when it declared some."""
        channel, process = session.channel, self.process
        if channel is None or not channel.capabilities.external_tools or process is None:
            return []
        return [self.bridge.entry(session.id, process)]

    def tools_of(self, session_id: str) -> list[mcp.Tool]:
        """The front client's external tools now, as MCP tools (for the bridge)."""
        session = self._sessions.get(session_id)
        if session is None or session.channel is None:
            return []
        return [mcp.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                for t in session.channel.capabilities.external_tools.values()]

    async def run_tool(self, session_id: str, name: str, arguments: dict[str, Any]) -> (
        ToolOutcome
    ):
        """Run a front client tool for the backend, tied to its open tool call."""
        session = self._sessions.get(session_id)
        turn = session.turn if session is not None else None
        if session is None or turn is None or session.channel is None:
            return ToolOutcome(True, "", f"{name}: no turn is running in the front client")
        tool = session.channel.capabilities.external_tools.get(name)
        if tool is None:
            return ToolOutcome(True, "", f"Tool {name} is not available")
        backend_id = session.state.get("proxy.backend_id")
        calls = self._calls.get(backend_id, {}) if isinstance(backend_id, str) else {}

        def open_ids() -> list[str]:
            return [cid for cid, call in calls.items() if name in call.name]

        # the backend announces its call on another connection: it may arrive just after
        with anyio.move_on_after(ANNOUNCE_GRACE):
            while not open_ids():
                await self._announced.wait()
        if not open_ids():  # the backend did not announce it: show it as our own call
            return await turn.call_tool(name, arguments)
        return await session.channel.call_tool(session, open_ids()[-1], tool, arguments)

    async def session_closed(self, session: Session) -> None:
        """Forget the session's turn state (the backend session stays stored)."""
        self._sessions.pop(session.id, None)
        self.bridge.revoke(session.id)
        backend_id = session.state.get("proxy.backend_id")
        if isinstance(backend_id, str):
            self._turns.pop(backend_id, None)
            self._calls.pop(backend_id, None)

    # ---------------------------------------------------------------- turns

    async def prompt(self, turn: Turn) -> StopReason:
        """Run the prompt on the backend session; steer input becomes the next prompt."""
        client = self.client
        backend_id = turn.session.state.get("proxy.backend_id")
        if client is None or not isinstance(backend_id, str):
            raise BackendGone("the backend agent has exited; reconnect to restart it")
        backend_id = await self._offer_tools(client, turn.session, backend_id)
        await self._apply_plan_mode(client, turn.session, backend_id)
        turn.session.state["proxy.turns"] = turn.session.state.get("proxy.turns", 0) + 1
        self._turns[backend_id] = turn
        self._calls[backend_id] = {}
        stop = StopReason.END_TURN
        try:
            blocks = [block_out(b) for b in turn.prompt]
            while True:
                stop = await self._one_prompt(client, backend_id, turn, blocks)
                if turn.cancelled or stop is StopReason.CANCELLED:
                    return StopReason.CANCELLED
                steering = await turn.take_steering()
                if not steering:
                    return stop
                blocks = [block_out(b) for content in steering for b in content]
        finally:
            self._turns.pop(backend_id, None)

    async def _one_prompt(self, client: ClientConnection, backend_id: str, turn: Turn,
                          blocks: list[s.ContentBlock]) -> StopReason:
        reason: list[str] = []
        failed: list[Exception] = []
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    try:
                        async with client.prompt(backend_id, blocks) as acp_turn:
                            async for _ in acp_turn:
                                pass  # updates are translated by on_update, in order
                        reason.append(acp_turn.stop_reason or "end_turn")
                    except (ConnectionClosed, RpcError) as exc:
                        failed.append(exc)
                    tg.cancel_scope.cancel()

                async def watch() -> None:
                    await turn.wait_cancelled()
                    try:
                        await client.cancel(backend_id)
                    except ConnectionClosed:
                        pass  # run() reports the backend's end

                tg.start_soon(run)
                tg.start_soon(watch)
        if failed:
            if isinstance(failed[0], RpcError):
                raise backend_failed(failed[0]) from failed[0]
            raise BackendGone(f"the backend agent has exited ({failed[0]}); "
                              "reconnect to restart it")
        return STOP_OF_ACP.get(reason[0] if reason else "", StopReason.END_TURN)

    # --------------------------------------------------------------- updates

    async def _on_update(self, event: SessionEvent) -> None:
        session_id, update, replay = event.session_id, event.update, event.replay
        if isinstance(update, s.AvailableCommandsUpdate):
            self._set_commands(update.available_commands)
            return
        turn = self._turns.get(session_id)
        if replay or turn is None or turn.cancelled:
            return
        rule = UPDATE_RULES.get(type(update))
        if rule is None:
            refuse_once(f"ACP update {getattr(update, 'session_update', type(update).__name__)}",
                        "it has no counterpart for this front client; dropped")
            return
        try:
            await rule(self._calls.setdefault(session_id, {}), turn, update)
        except ConnectionClosed:
            log.info("proxy: the front client is gone; update dropped")
        if isinstance(update, s.ToolCall):
            self._announced.set()
            self._announced = anyio.Event()

    async def _on_elicitation(self, request: FormOrUrl) -> s.CreateElicitationResponse:
        """A form of choice fields becomes the front client's questions."""
        if not isinstance(request, s.CreateFormElicitationRequest):
            return s.DeclineElicitationResponse()  # (only form mode is advertised)
        sid = request.session_id if isinstance(request.session_id, str) else ""
        turn = self._turns.get(sid)
        if turn is None or not turn.client.questions:
            refuse_once("elicitation", "the front client answers no questions (or no turn "
                        "runs); the form is declined")
            return s.DeclineElicitationResponse()
        questions = form_questions(request)
        if questions is None:
            refuse_once("elicitation fields", "only choice fields have a Wire counterpart "
                        "(QuestionRequest); the form is declined")
            return s.DeclineElicitationResponse()
        call_id = request.tool_call_id if isinstance(request.tool_call_id, str) else ""
        answers = [await turn.ask(question, call_id) for _, question in questions]
        return form_content(questions, answers)

    async def _on_permission(self, request: s.RequestPermissionRequest) -> Any:
        turn = self._turns.get(request.session_id)
        if turn is None:
            return s.CancelledPermissionOutcome()
        calls = self._calls.setdefault(request.session_id, {})
        tc = request.tool_call
        call = calls.get(tc.tool_call_id)
        title = tc.title if isinstance(tc.title, str) else "tool call"
        if call is None:
            call = await turn.start_tool(title, title, id=tc.tool_call_id)
            calls[tc.tool_call_id] = call
        content = _content(tc.content if isinstance(tc.content, list) else [])
        approval = await turn.request_approval(call, title, title, content)
        if approval.feedback and not approval.allowed:
            refuse_once("approval feedback", "ACP permissions carry no feedback; dropped")
        for kind in OPTION_KINDS[approval.decision]:
            for option in request.options:
                if option.kind == kind:
                    return option.option_id
        return s.CancelledPermissionOutcome()


# --------------------------------------------------------------------------- rules


def _content(items: Sequence[Any]) -> list[ToolContent]:
    out: list[ToolContent] = []
    for item in items:
        if isinstance(item, s.Diff):
            old = item.old_text if isinstance(item.old_text, str) else None
            out.append(Diff(path=item.path, new_text=item.new_text, old_text=old))
        elif isinstance(item, s.Content) and isinstance(item.content, s.TextContent):
            out.append(Text(item.content.text))
        elif isinstance(item, s.Terminal):
            out.append(Text(f"[terminal {item.terminal_id}]"))  # Wire has no terminals
    return out


def _chunk_text(update: Any) -> str | None:
    content = update.content
    return content.text if isinstance(content, s.TextContent) else None


async def _message(calls: dict[str, ToolCall], turn: Turn, update: Any) -> None:
    text = _chunk_text(update)
    if text:
        await turn.say(text)


async def _thought(calls: dict[str, ToolCall], turn: Turn, update: Any) -> None:
    text = _chunk_text(update)
    if text:
        await turn.think(text)


def _kind(value: Any) -> ToolKind:
    try:
        return ToolKind(value)
    except ValueError:
        return ToolKind.OTHER


async def _tool_call(calls: dict[str, ToolCall], turn: Turn, update: s.ToolCall) -> None:
    name = update.name if isinstance(update.name, str) else update.title
    status = _STATUS.get(update.status if isinstance(update.status, str) else "",
                         ToolStatus.PENDING)
    raw = update.raw_input if update.raw_input is not UNSET else None
    final = status in (ToolStatus.COMPLETED, ToolStatus.FAILED)
    call = await turn.start_tool(name, update.title, kind=_kind(update.kind),
                                 id=update.tool_call_id, raw_input=raw,
                                 status=ToolStatus.IN_PROGRESS if final else status)
    calls[update.tool_call_id] = call
    if final or isinstance(update.content, list):
        await _progress(calls, turn, update)


async def _progress(calls: dict[str, ToolCall], turn: Turn, update: Any) -> None:
    call = calls.get(update.tool_call_id)
    if call is None:
        title = update.title if isinstance(update.title, str) else "tool call"
        call = calls[update.tool_call_id] = await turn.start_tool(title, title,
                                                                  id=update.tool_call_id)
    status = _STATUS.get(update.status) if isinstance(update.status, str) else None
    content = _content(update.content) if isinstance(update.content, list) else None
    await call.update(status=status, content=content,
                      title=update.title if isinstance(update.title, str) else None)
    if status in (ToolStatus.COMPLETED, ToolStatus.FAILED):
        calls.pop(update.tool_call_id, None)


async def _plan(calls: dict[str, ToolCall], turn: Turn, update: s.Plan) -> None:
    await turn.plan([PlanEntry(e.content, e.status, e.priority) for e in update.entries])


async def _usage(calls: dict[str, ToolCall], turn: Turn, update: s.UsageUpdate) -> None:
    cost = update.cost if isinstance(update.cost, s.Cost) else None
    await turn.usage(used=update.used, size=update.size,
                     cost=cost.amount if cost else None, currency=cost.currency if cost else None)


async def _nothing(calls: dict[str, ToolCall], turn: Turn, update: Any) -> None:
    return None


UPDATE_RULES: dict[type, Callable[[dict[str, ToolCall], Turn, Any], Awaitable[None]]] = {
    s.AgentMessageChunk: _message,
    s.AgentThoughtChunk: _thought,
    s.ToolCall: _tool_call,
    s.ToolCallProgress: _progress,
    s.Plan: _plan,
    s.UsageUpdate: _usage,
    s.UserMessageChunk: _nothing,  # the front shows its own prompt
    s.SessionInfoUpdate: _nothing,  # the proxy keeps its own title
}
"""ACP update type -> what it does to the front turn (others: refused once, dropped)."""
