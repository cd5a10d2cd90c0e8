"""The Wire server role: serve one agent session per connection (docs/protocol-wire.md).

Theory of operation
-------------------
:meth:`WireServer.serve` opens (or creates) the connection's one session, then
runs a :class:`~wireproto.rpc.peer.Peer` with the Wire dialect (reference
error texts, ``data: null``, lenient envelope) and the method table
:meth:`WireServer.router`. Every inbound request is handled in its own task,
so ``cancel``, ``steer``, ``set_plan_mode`` and answers to server requests
are processed while a ``prompt`` runs (the peer's concurrency cap is far above
the one streaming operation a connection can have).

One *streaming operation* (a ``prompt`` turn or a ``replay``) runs at a time;
a second one, or ``initialize`` meanwhile, gets ``-32000``. Every server
request belongs to a turn and is resolved when the turn ends, so none is
pending when ``initialize`` is accepted: the reference's re-sending of
pending approvals on ``initialize`` (protocol-wire.md#initialize) has
nothing to re-send here. A turn is framed by the server itself —
``TurnBegin`` and ``StepBegin`` before the agent runs, ``StepInterrupted``
(cancel or error) and ``TurnEnd`` after it, always before the ``prompt``
response — and everything in between comes from the agent through
:class:`~.channel.WireChannel`. Requests of the turn still unanswered
when it ends are resolved visibly first (protocol-wire.md#visible-resolution).

Agent failures map to Wire codes through :data:`AGENT_ERROR_CODES`;
anything unexpected becomes ``-32603 Internal error`` (logged by the peer),
and the streaming flag is released in every case.

Shutdown (end of input, or ``stop``): the running operation is cancelled,
pending requests are resolved visibly with ``"connection closed"``, the
operation's last events and response are flushed — all within
``shutdown_timeout`` seconds — and the session is detached.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

import anyio
import anyio.abc
import msgspec

from wireproto.adapters import _shared as shared
from wireproto.agent.api import BooleanOption, ExternalTool, Session
from wireproto.agent.events import StopReason
from wireproto.agent.runtime import Runtime
from wireproto.errors import (
    AgentError,
    AgentFailed,
    AuthRequired,
    Busy,
    ConnectionClosed,
    InvalidArgument,
    InvalidVersion,
    LocalProtocolError,
    NotFound,
    RpcError,
)
from wireproto.jsonrpc.codec import WIRE_DIALECT
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

from .. import messages as m
from ..methods import (
    CancelResult,
    ExternalToolsResult,
    HooksInfo,
    InitializeParams,
    InitializeResult,
    PromptParams,
    PromptResult,
    RejectedTool,
    ReplayResult,
    ServerCapabilities,
    ServerInfo,
    SetPlanModeParams,
    SetPlanModeResult,
    SlashCommand,
    SteerParams,
    SteerResult,
    WireClientCapabilities,
    WireErrorCode,
    WireErrorMessage,
    WireText,
)
from ..translate import Translator, prompt_result, user_input_to_blocks
from ..versions import negotiate_version
from .channel import WireChannel

__all__ = ["AGENT_ERROR_CODES", "WireServer", "rpc_error"]

log = logging.getLogger(__name__)

AGENT_ERROR_CODES: dict[type[AgentError], int] = {
    Busy: WireErrorCode.INVALID_STATE,
    NotFound: WireErrorCode.INVALID_STATE,
    AuthRequired: WireErrorCode.AUTH_EXPIRED,
    InvalidArgument: ErrorCode.INVALID_PARAMS,
    AgentFailed: ErrorCode.INTERNAL_ERROR,
    AgentError: WireErrorCode.CHAT_PROVIDER_ERROR,
}
"""Agent failure -> Wire error code (the most specific class in the MRO wins).

``-32001`` / ``-32002`` (model not set / not capable) have no neutral
equivalent; an agent raising plain :class:`AgentError` reports a backend
failure, ``-32003``.
"""

_OPTION_CATEGORIES = (("model", "model"), ("thinking", "thought_level"))


def rpc_error(exc: AgentError) -> RpcError:
    """The Wire error answer for an agent failure (see :data:`AGENT_ERROR_CODES`)."""
    return shared.rpc_error(exc, AGENT_ERROR_CODES)


def _state_error(message: WireErrorMessage) -> RpcError:
    return RpcError(int(WireErrorCode.INVALID_STATE), message.value)


def _schema_problem(schema: dict[str, Any]) -> str | None:
    """The first meta-schema error of ``schema`` (JSON Schema 2020-12), or ``None``."""
    # loaded when a client first registers a tool: importing it is slow
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc.message or WireText.TOOL_INVALID_SCHEMA.value
    return None


class WireServer:
    """Serve an agent's session to one Wire client.

    Args:
        runtime: the agent runtime (sessions, turns, history).
        session_id: resume this session (created when unknown); default a new one.
        work_dir: the session's working directory (default: the current one; a
            resumed session keeps its own unless this is given).
        yolo: approve every approval request without asking the client.
        model: a value for the agent's option of category ``model``.
        thinking: a value for the agent's option of category ``thought_level``.
        max_concurrency: inbound requests handled at once.
        shutdown_timeout: seconds the shutdown may take (cancel, resolve, flush).
        name: a label for log lines.

    Attributes:
        session: the connection's session (set by :meth:`serve`).
        channel: the client as the agent sees it.
        protocol_version: the negotiated version (``None`` before ``initialize``).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        session_id: str | None = None,
        work_dir: str | None = None,
        yolo: bool = False,
        model: str | None = None,
        thinking: bool | None = None,
        max_concurrency: int = 16,
        shutdown_timeout: float = 4.0,
        name: str = "wire server",
    ) -> None:
        self.runtime = runtime
        self.agent = runtime.agent
        self.session_id = session_id
        self.work_dir = work_dir
        self.options: dict[str, str | bool | None] = {"model": model, "thinking": thinking}
        self.max_concurrency = max_concurrency
        self.shutdown_timeout = shutdown_timeout
        self.name = name
        self.channel = WireChannel(yolo=yolo, name=name)
        self.protocol_version: str | None = None
        self._session: Session | None = None
        self._streaming = False
        self._closing = False
        self._cancel_requested = False
        self._replay_scope: anyio.CancelScope | None = None

    @property
    def session(self) -> Session:
        """The connection's session.

        Raises:
            LocalProtocolError: :meth:`serve` has not opened it yet.
        """
        if self._session is None:
            raise LocalProtocolError("the Wire server has no session yet: call serve() first")
        return self._session

    @property
    def initialized(self) -> bool:
        """Whether the client sent ``initialize`` (else it gets the v1 behaviour)."""
        return self.protocol_version is not None

    def router(self) -> Router:
        """The inbound method table (protocol-wire.md#methods), bound to this connection.

        One table serves every connection of a class (:meth:`~wireproto.rpc.router.Router.bind`):
        nothing of it is built per connection, and a subclass's own handlers are the ones called.
        """
        cls: Any = type(self)  # (mypy takes a class for unhashable)
        return _table(cls).bind(self)

    # ------------------------------------------------------------- lifecycle

    async def serve(
        self, stream: anyio.abc.ObjectStream[bytes], *, stop: anyio.Event | None = None
    ) -> None:
        """Serve the connection until its input ends or ``stop`` is set.

        Raises:
            AgentError: the session could not be opened or an option not set
                (e.g. :class:`InvalidArgument` for an invalid session id or model).
        """
        self._session = await self._open_session()
        try:
            for key, category in _OPTION_CATEGORIES:
                value = self.options.get(key)
                if value is not None:
                    await self._set_option(self._session, category, value)
            peer = Peer(
                stream, self.router(), dialect=WIRE_DIALECT,
                max_concurrency=self.max_concurrency, backlog=4 * self.max_concurrency,
                flush_timeout=self.shutdown_timeout / 4, name=self.name,
                before_write=self.runtime.flush_history,
            )
            async with peer, anyio.create_task_group() as tg:
                self.channel.attach(peer, tg)
                try:
                    await shared.until_closed(peer, stop)
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._shut_down(peer)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.runtime.detach(self.channel)

    async def _open_session(self) -> Session:
        cwd = self.work_dir or os.getcwd()
        session: Session | None = None
        if self.session_id is not None:
            try:
                session = await self.runtime.open_session(
                    self.channel, self.session_id, self.work_dir
                )
            except NotFound:
                log.info("%s: session %s is new", self.name, self.session_id)
        if session is None:
            session = await self.runtime.new_session(
                self.channel, cwd, session_id=self.session_id
            )
        log.info("%s: serving session %s in %s", self.name, session.id, session.cwd)
        return session

    async def _set_option(self, session: Session, category: str, value: str | bool) -> None:
        option = next((o for o in self.agent.options if o.category == category), None)
        if option is None:
            log.warning("%s: the agent has no %s option; %r ignored", self.name, category, value)
            return
        if isinstance(value, bool) and not isinstance(option, BooleanOption):
            value = "on" if value else "off"
        await self.runtime.set_option(session, option.id, value)

    async def _shut_down(self, peer: Peer) -> None:
        """Cancel the running operation, resolve requests visibly, let the end flush.

        Waits until every handler has queued its answer (the ``prompt``
        response after ``TurnEnd``), so leaving the peer loses none of them.
        """
        self._closing = True
        self.channel.cancel_reason = "connection closed"
        with anyio.move_on_after(self.shutdown_timeout * 3 / 4):
            if self._streaming:
                self._cancel_running()
            await self.channel.abandon_all("connection closed")
            await peer.wait_idle()

    # ----------------------------------------------------------- streaming

    def _begin(self) -> None:
        if self._streaming:
            raise _state_error(WireErrorMessage.TURN_IN_PROGRESS)
        if self._closing:
            raise RpcError(int(WireErrorCode.INVALID_STATE), "The connection is shutting down")
        self._streaming = True
        self._cancel_requested = False
        self.channel.cancel_reason = "cancelled"

    def _end(self) -> None:
        self._streaming = False
        self._replay_scope = None

    def _cancel_running(self) -> None:
        self._cancel_requested = True
        if self._replay_scope is not None:
            self._replay_scope.cancel()
        elif self._session is not None:
            self.runtime.cancel(self._session)

    # ------------------------------------------------------------- methods

    async def _initialize(self, params: InitializeParams) -> InitializeResult:
        if self._streaming:
            raise _state_error(WireErrorMessage.TURN_IN_PROGRESS)
        try:
            version = negotiate_version(params.protocol_version)
        except InvalidVersion as exc:
            raise RpcError(
                ErrorCode.INVALID_PARAMS, WireErrorMessage.INVALID_PARAMS.format(
                    method="initialize"),
                {"path": "$.protocol_version", "reason": str(exc)},
            ) from exc
        tools = self._register_tools(params)
        self._register_hooks(params)
        caps = params.capabilities or WireClientCapabilities()
        channel_caps = self.channel.capabilities
        channel_caps.questions = caps.supports_question
        channel_caps.plan_mode = caps.supports_plan_mode
        if params.client is not None:
            channel_caps.name, channel_caps.version = params.client.name, params.client.version
        self.protocol_version = version
        log.info("%s: initialized, protocol %s (client asked %s)", self.name, version,
                 params.protocol_version)
        info = self.agent.info
        return InitializeResult(
            protocol_version=version,
            server=ServerInfo(name=info.name, version=info.version),
            slash_commands=[
                SlashCommand(name=c.name, description=c.description, aliases=list(c.aliases))
                for c in self.agent.commands
            ],
            external_tools=tools,
            hooks=HooksInfo(
                supported_events=list(self.agent.hook_events),
                configured=self._hook_counts(),
            ),
            capabilities=ServerCapabilities(supports_question=True),
        )

    def _register_tools(self, params: InitializeParams) -> ExternalToolsResult | Any:
        if not params.external_tools:
            return msgspec.UNSET
        registry = self.channel.capabilities.external_tools
        result = ExternalToolsResult()
        for tool in params.external_tools:
            if tool.name in self.agent.tools:
                reason: str | None = WireText.TOOL_CONFLICTS_WITH_BUILTIN.value
            else:
                reason = _schema_problem(tool.parameters)
            if tool.name in result.accepted:
                result.accepted.remove(tool.name)
            result.rejected = [r for r in result.rejected if r.name != tool.name]
            if reason is not None:
                result.rejected.append(RejectedTool(name=tool.name, reason=reason))
                log.info("%s: external tool %s rejected: %s", self.name, tool.name, reason)
                continue
            description = tool.description or WireText.TOOL_NO_DESCRIPTION.value
            registry[tool.name] = ExternalTool(tool.name, description, tool.parameters)
            result.accepted.append(tool.name)
        return result

    def _register_hooks(self, params: InitializeParams) -> None:
        supported = set(self.agent.hook_events)
        for sub in params.hooks or ():
            if sub.event in supported:
                self.channel.hooks.append(sub)
            else:
                log.warning("%s: hook %s for unsupported event %s ignored", self.name, sub.id,
                            sub.event)

    def _hook_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for sub in self.channel.hooks:
            counts[sub.event] = counts.get(sub.event, 0) + 1
        return counts

    async def _prompt(self, params: PromptParams) -> PromptResult:
        self._begin()
        try:
            return await self._run_turn(params.user_input)
        finally:
            self._end()

    async def _run_turn(self, user_input: m.UserInput) -> PromptResult:
        session, channel = self.session, self.channel
        content = user_input_to_blocks(user_input)
        await channel.emit(m.TurnBegin(user_input=user_input), m.StepBegin(n=1))
        stop = StopReason.CANCELLED
        error: Exception | None = None
        if not self._cancel_requested:
            try:
                stop = await self.runtime.prompt(session, content)
            except Exception as exc:
                error = exc
        steps = channel.translator.steps
        try:
            await channel.abandon_all("turn ended")
            channel.translator.reset()
            if error is not None or stop is StopReason.CANCELLED:
                await channel.emit(m.StepInterrupted())
            await channel.emit(m.TurnEnd())
        except ConnectionClosed:
            log.debug("%s: the end of the turn could not be sent", self.name)
        if isinstance(error, AgentError):
            raise rpc_error(error) from error
        if error is not None:
            raise error
        return prompt_result(stop, steps)

    async def _cancel(self, params: Any) -> CancelResult:
        if not self._streaming:
            raise _state_error(WireErrorMessage.NO_TURN_IN_PROGRESS)
        self._cancel_running()
        return CancelResult()

    async def _steer(self, params: SteerParams) -> SteerResult:
        if not self._streaming or not self.runtime.steer(
            self.session, user_input_to_blocks(params.user_input)
        ):
            raise _state_error(WireErrorMessage.NO_TURN_IN_PROGRESS)
        return SteerResult()

    async def _replay(self, params: Any) -> ReplayResult:
        self._begin()
        try:
            try:
                self.runtime.flush_history()
                stored = self.runtime.store.load(self.session.id)
            except (AgentError, OSError) as exc:
                log.warning("%s: replay failed: %s", self.name, exc)
                raise RpcError(ErrorCode.INTERNAL_ERROR, WireErrorMessage.REPLAY_FAILED.value
                               ) from exc
            translator = self.channel.replay_translator = Translator(replay=True)
            count = 0
            with anyio.CancelScope() as scope:
                self._replay_scope = scope
                if self._cancel_requested:
                    scope.cancel()
                for event in stored.events:
                    for wire_event in translator.translate(event):
                        await self.channel.emit(wire_event)
                        count += 1
            if scope.cancel_called:
                return ReplayResult(status="cancelled", events=count, requests=0)
            return ReplayResult(status="finished", events=count, requests=0)
        finally:
            self._end()

    async def _set_plan_mode(self, params: SetPlanModeParams) -> SetPlanModeResult:
        if not self.agent.supports_plan_mode:
            raise _state_error(WireErrorMessage.PLAN_MODE_UNSUPPORTED)
        try:
            await self.runtime.set_plan_mode(self.session, params.enabled)
        except AgentError as exc:
            raise rpc_error(exc) from exc
        return SetPlanModeResult(plan_mode=self.session.plan_mode)


@functools.cache
def _table(cls: type[WireServer]) -> Router:
    """The method table every ``cls`` connection binds (built at first use)."""
    table = Router()
    table.add("initialize", cls._initialize, InitializeParams)
    table.add("prompt", cls._prompt, PromptParams)
    table.add("cancel", cls._cancel, Any)
    table.add("steer", cls._steer, SteerParams)
    table.add("replay", cls._replay, Any)
    table.add("set_plan_mode", cls._set_plan_mode, SetPlanModeParams)
    return table
