"""The agent side of one ACP connection: :class:`AgentConnection`.

Theory of operation
-------------------
An :class:`AgentConnection` serves a :class:`~wireproto.agent.runtime.Runtime`
(and so any :class:`~wireproto.agent.api.Agent`) to one ACP client over a
:class:`~wireproto.rpc.peer.Peer`, and is the
:class:`~wireproto.agent.api.Channel` of the sessions it opens (its requests
to the client are made by the :class:`~.calls.ClientCalls` it owns).

* **Methods** are the table built by :func:`~.methods.method_table`: method -> handler and
  params decoder, built once per kind of agent and shared by its connections
  (each binds it, :meth:`~wireproto.rpc.router.Router.bind`: a handler is
  called with the connection, nothing is built per connection). Params are
  decoded strictly first, leniently into the generated Structs
  (:mod:`..codec`) when that fails; invalid params answer ``-32602`` with a
  message naming the field and ``data: {path, reason}``. Everything not in
  the table (``logout`` unless the agent ``supports_logout``, unstable and
  unknown ``_`` methods) is ``-32601``;
  unknown notifications are ignored. ``session/set_model`` (unstable, never
  advertised) shares the option dispatcher with ``session/set_mode`` and
  ``session/set_config_option``.
* **Initialization first** (protocol-acp.md#lifecycle): until an ``initialize`` has
  been answered, every other request of the table is answered ``-32600``
  (as the TypeScript SDK's protocol router does) and notifications are
  ignored. A second ``initialize`` is answered again (the client's new
  capabilities replace the old ones).
* **Prompt content** is checked against what :data:`AGENT_CAPABILITIES`
  advertises (table :data:`PROMPT_GATES`): an ``audio`` block (not
  advertised) answers ``-32602`` naming the block, as protocol-acp.md#error-codes lists
  "unsupported prompt content" under invalid params.
* **Errors** of the agent API map through :data:`ERROR_CODES`; ACP has no
  code for :class:`~wireproto.errors.Busy` (a second prompt while a turn
  runs), so it answers the implementation-defined :data:`BUSY_CODE`
  (``-32001``).
* **Ordering.** Updates of a session being set up (``session/new``,
  ``load``, ``resume``) are held back until the response: the handler returns
  a :class:`~wireproto.rpc.router.Reply` whose follow-ups (the
  ``available_commands_update``, then what was held back, then notices) the
  peer writes right after the response. Replayed history (``session/load``)
  goes out before it. Option changes answer first and push
  ``current_mode_update`` / ``config_option_update`` right after. Turns run
  in their ``session/prompt`` handler (:class:`~.turns.TurnRunner`), so
  every update of a turn is queued before the response.
* **Cancellation.** ``session/cancel`` cancels the named session's turn
  (the prompt answers ``cancelled``); the turn's pending client requests are
  abandoned and get ``$/cancel_request`` (the peer sends it when the awaiting
  task is cancelled). ``$/cancel_request`` for a ``session/prompt`` cancels
  the turn the same way, waits for its updates, and answers ``-32800``.
* **Shutdown** (:meth:`AgentConnection.serve`, on end of input or ``stop``):
  running turns are cancelled, the handlers answer, the sessions are closed,
  the writer flushes; all within :data:`SHUTDOWN_BUDGET` seconds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import anyio
import anyio.abc
import msgspec
from msgspec import UNSET

from wireproto.adapters._shared import until_closed
from wireproto.adapters.acp import extra, translate
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.agent.calls import ClientCalls
from wireproto.adapters.acp.agent.mcp import McpPolicy, Setup, dropped_notice
from wireproto.adapters.acp.agent.methods import BUSY_CODE, ERROR_CODES, Invalid, method_table
from wireproto.adapters.acp.agent.turns import TURN_GRACE, TurnRunner
from wireproto.agent.api import (
    Approval,
    ApprovalRequest,
    ClientCapabilities,
    ExternalTool,
    Question,
    SelectOption,
    Session,
    ToolOutcome,
)
from wireproto.agent.events import Event
from wireproto.agent.questions import Answers, AskStatus
from wireproto.agent.runtime import Runtime
from wireproto.agent.turn import new_id
from wireproto.errors import (
    AuthRequired,
    ConnectionClosed,
    InvalidArgument,
    LocalProtocolError,
    NotFound,
    RpcError,
)
from wireproto.jsonrpc.codec import ACP_DIALECT
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Reply

__all__ = [
    "AGENT_CAPABILITIES",
    "BUSY_CODE",
    "ERROR_CODES",
    "PROMPT_GATES",
    "PROTOCOL_VERSIONS",
    "SHUTDOWN_BUDGET",
    "AgentConnection",
]

log = logging.getLogger(__name__)

PROTOCOL_VERSIONS = (1,)
"""ACP versions this side speaks; a client's other version is answered with the latest."""

AGENT_CAPABILITIES = S.AgentCapabilities(
    load_session=True,
    prompt_capabilities=S.PromptCapabilities(image=True, audio=False, embedded_context=True),
    mcp_capabilities=S.McpCapabilities(http=True, sse=True),
    session_capabilities=S.SessionCapabilities(
        list_=S.SessionListCapabilities(), resume=S.SessionResumeCapabilities(),
        close=S.SessionCloseCapabilities(), delete=S.SessionDeleteCapabilities(),
    ),
)
"""What ``initialize`` advertises (``sessionCapabilities.delete`` only when the
agent supports deleting; ``auth.logout`` added when it supports logging out)."""

PROMPT_GATES: dict[type, str] = {
    S.ImageContent: "image",
    S.AudioContent: "audio",
    S.EmbeddedResource: "embedded_context",
}
"""Prompt block class -> the ``promptCapabilities`` flag that allows it (others:
always allowed)."""

UPDATE = "session/update"

SHUTDOWN_BUDGET = 5.0
"""Seconds :meth:`AgentConnection.serve` may take to shut down."""
_HANDLER_GRACE = 1.0  # handlers to answer, sessions to close
_FLUSH = SHUTDOWN_BUDGET - TURN_GRACE - 2 * _HANDLER_GRACE  # the writer to flush

_AUTH_REQUIRED = "Authentication required"
_NOT_SERVED = "the ACP connection is not being served"


def _absolute(path: str, field: str = "cwd") -> str:
    if not os.path.isabs(path):
        raise InvalidArgument(f"{field} must be an absolute path")
    return path


def _set(value: Any) -> Any:
    """``None`` -> ``UNSET`` (never write ``null`` for an absent optional value)."""
    return UNSET if value is None else value


class AgentConnection:
    """Serve a :class:`~wireproto.agent.runtime.Runtime` to one ACP client.

    Args:
        runtime: the runtime (sessions, turns, history) of the agent.
        allow_client_stdio_mcp: accept stdio MCP servers from the client.
        require_auth: session setup and listing need ``authenticate`` first
            (also when the agent's ``require_auth`` is true).
        name: a label for log lines.

    Raises:
        LocalProtocolError: authentication is required but the agent declares
            no authentication method.

    Attributes:
        client: the requests to the client (permissions, files).
        capabilities: what the client declared (set by ``initialize``).
        initialized: whether an ``initialize`` was answered.
        authenticated: whether ``authenticate`` succeeded on this connection.
        turns: the running prompt turns.
        router: the method table: one per kind of agent, shared by its
            connections and bound to this one
            (:meth:`~wireproto.rpc.router.Router.bind`).
        flushes_history: true: the peer writes the runtime's held-back
            history records before each write to the client, so the runtime
            groups the records of a burst.
    """

    flushes_history = True

    def __init__(
        self,
        runtime: Runtime,
        *,
        allow_client_stdio_mcp: bool = False,
        require_auth: bool = False,
        name: str = "acp agent",
    ) -> None:
        self.runtime = runtime
        self.agent = runtime.agent
        self.name = name
        self.policy = McpPolicy(allow_stdio=allow_client_stdio_mcp)
        self.require_auth = require_auth or self.agent.require_auth
        if self.require_auth and not self.agent.auth_methods:
            raise LocalProtocolError(
                f"authentication is required but the agent {self.agent.info.name!r} declares "
                "no authentication method (Agent.auth_methods), so no client could open a "
                "session: declare one, or do not require authentication")
        self.initialized = False
        self.authenticated = False
        self.client = ClientCalls(lambda: self.peer, name)
        self.turns = TurnRunner(runtime, name)
        self._ctx = translate.Context(self.capabilities, self.agent.options)
        self._peer: Peer | None = None
        self._setup: dict[str, list[S.SessionNotification]] = {}
        # the table of this class and kind of agent, shared by its connections
        agent, cls = self.agent, cast(Any, type(self))  # (mypy takes a class for unhashable)
        self.router = method_table(cls, agent.supports_delete, agent.supports_logout).bind(self)

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client declared (set by ``initialize``)."""
        return self.client.capabilities

    # ------------------------------------------------------------- serving

    @property
    def peer(self) -> Peer:
        """The running peer.

        Raises:
            ConnectionClosed: the connection is not being served.
        """
        if self._peer is None:
            raise ConnectionClosed(_NOT_SERVED)
        return self._peer

    async def serve(
        self, stream: anyio.abc.ObjectStream[bytes], *, stop: anyio.Event | None = None
    ) -> None:
        """Serve the client on ``stream`` until its input ends or ``stop`` is set.

        Then running turns are cancelled (their prompts answer ``cancelled``
        while the stream is writable; pending client requests fail), the
        sessions are closed and the writer flushes; this returns within
        :data:`SHUTDOWN_BUDGET` seconds (unless the agent shields itself from
        cancellation). The stream is closed. Cancelling ``serve`` itself is
        abrupt: turns are cancelled and sessions closed, but nothing more is
        written (use ``stop`` for a graceful end).
        """
        async with self.turns.running():
            try:
                async with Peer(
                    stream, self.router, dialect=ACP_DIALECT,
                    cancel_method=ACP_DIALECT.cancel_method, flush_timeout=_FLUSH, name=self.name,
                    before_write=self.runtime.flush_history,
                ) as peer:
                    self._peer = peer
                    try:
                        await until_closed(peer, stop)
                    finally:  # sessions are closed even when cancelled from outside
                        await self._shut_down(peer)
            finally:
                self._peer = None
                with anyio.CancelScope(shield=True), anyio.move_on_after(_HANDLER_GRACE):
                    await self.runtime.detach(self)  # (after a turn that outlived the grace)

    async def _shut_down(self, peer: Peer) -> None:
        with anyio.CancelScope(shield=True):
            log.debug("%s: shutting down (%d turns running)", self.name, len(self.turns))
            await self.turns.stop(TURN_GRACE)
            if self.turns:  # (e.g. stuck on a client that stopped reading: the peer's
                return  # close cancels their handlers, the sessions are closed after it)
            with anyio.move_on_after(_HANDLER_GRACE):
                await peer.wait_idle()
            with anyio.move_on_after(_HANDLER_GRACE):
                await self.runtime.detach(self)

    # ------------------------------------------------------ initialization

    def _agent_capabilities(self) -> S.AgentCapabilities:
        caps = AGENT_CAPABILITIES
        if not self.agent.supports_delete:
            sessions = msgspec.structs.replace(caps.session_capabilities, delete=UNSET)
            caps = msgspec.structs.replace(caps, session_capabilities=sessions)
        if self.agent.supports_logout:
            caps = msgspec.structs.replace(
                caps, auth=S.AgentAuthCapabilities(logout=S.LogoutCapabilities())
            )
        return caps

    async def _initialize(self, p: S.InitializeRequest) -> S.InitializeResponse:
        info = p.client_info if isinstance(p.client_info, S.Implementation) else None
        self.client.capabilities = translate.client_capabilities(p.client_capabilities, info)
        self._ctx = translate.Context(self.capabilities, self.agent.options)
        version = p.protocol_version
        if version not in PROTOCOL_VERSIONS:
            version = max(PROTOCOL_VERSIONS)
        log.info("%s: client %s %s, protocol %d", self.name, self.capabilities.name or "?",
                 self.capabilities.version or "?", version)
        self.initialized = True
        return S.InitializeResponse(
            protocol_version=version,
            agent_capabilities=self._agent_capabilities(),
            auth_methods=translate.auth_methods(self.agent.auth_methods),
            agent_info=translate.agent_info(self.agent.info),
        )

    async def _authenticate(self, p: S.AuthenticateRequest) -> S.AuthenticateResponse:
        await self.agent.authenticate(p.method_id)
        self.authenticated = True
        return S.AuthenticateResponse()

    async def _logout(self, p: S.LogoutRequest) -> S.LogoutResponse:
        await self.agent.logout()
        self.authenticated = False
        return S.LogoutResponse()

    def _check_auth(self) -> None:
        if self.require_auth and not self.authenticated:
            raise AuthRequired(_AUTH_REQUIRED)

    # ------------------------------------------------------------ sessions

    def _own(self, session_id: str) -> Session:
        """A live session opened on this connection; else :class:`NotFound`."""
        session = self.runtime.sessions.get(session_id)
        if session is None or session.channel is not self:
            raise NotFound(f"Session {session_id} not found")
        return session

    @contextmanager
    def _setting_up(self, session_id: str) -> Iterator[list[S.SessionNotification]]:
        """Hold back live updates of ``session_id`` until its setup response."""
        held: list[S.SessionNotification] = []
        self._setup[session_id] = held
        try:
            yield held
        finally:
            if self._setup.get(session_id) is held:
                del self._setup[session_id]

    def _state(self, session: Session) -> dict[str, Any]:
        """``configOptions`` and legacy ``modes`` of a setup response."""
        options = self.agent.options
        return {
            "config_options": translate.config_options(options, session.options,
                                                       self.capabilities),
            "modes": _set(translate.modes(options, session.options)),
        }

    def _follow_ups(
        self, session: Session, held: Sequence[S.SessionNotification], dropped: Sequence[str]
    ) -> list[tuple[str, Any]]:
        """What a setup response is followed by: commands, held-back updates, notices."""
        notes: list[S.SessionNotification] = []
        if self.agent.commands:
            notes.append(S.SessionNotification(
                session_id=session.id, update=translate.available_commands(self.agent.commands)
            ))
        notes.extend(held)
        for name in dropped:
            notice = dropped_notice(name)  # logged even when not shown
            for update in translate.updates(notice, session, self._ctx):
                notes.append(S.SessionNotification(session_id=session.id, update=update))
        return [(UPDATE, note) for note in notes]

    async def _new(self, setup: Setup[S.NewSessionRequest]) -> Reply:
        self._check_auth()
        p = setup.params
        cwd = _absolute(p.cwd)
        servers = self.policy.accept(p.mcp_servers)
        session_id = new_id("sess")
        with self._setting_up(session_id) as held:
            session = await self.runtime.new_session(
                self, cwd, mcp_servers=servers, session_id=session_id
            )
        result = S.NewSessionResponse(session_id=session.id, **self._state(session))
        return Reply(result, self._follow_ups(session, held, setup.dropped))

    async def _open(
        self, setup: Setup[S.LoadSessionRequest] | Setup[S.ResumeSessionRequest], replay: bool
    ) -> tuple[Session, list[tuple[str, Any]]]:
        self._check_auth()
        p = setup.params
        cwd = _absolute(p.cwd)
        servers = self.policy.accept(p.mcp_servers or [])
        with self._setting_up(p.session_id) as held:
            session = await self.runtime.open_session(
                self, p.session_id, cwd, mcp_servers=servers, replay=replay
            )
        return session, self._follow_ups(session, held, setup.dropped)

    async def _load(self, setup: Setup[S.LoadSessionRequest]) -> Reply:
        session, then = await self._open(setup, replay=True)
        return Reply(S.LoadSessionResponse(**self._state(session)), then)

    async def _resume(self, setup: Setup[S.ResumeSessionRequest]) -> Reply:
        session, then = await self._open(setup, replay=False)
        return Reply(S.ResumeSessionResponse(**self._state(session)), then)

    async def _list(self, p: S.ListSessionsRequest) -> S.ListSessionsResponse:
        self._check_auth()
        cwd = p.cwd if isinstance(p.cwd, str) else None
        cursor = p.cursor if isinstance(p.cursor, str) else None
        infos, next_cursor = self.runtime.list_sessions(cwd=cwd, cursor=cursor)
        return S.ListSessionsResponse(
            sessions=[translate.session_info(info) for info in infos],
            next_cursor=_set(next_cursor),
        )

    async def _close(self, p: S.CloseSessionRequest) -> S.CloseSessionResponse:
        self._own(p.session_id)
        await self.runtime.close_session(p.session_id)
        return S.CloseSessionResponse()

    async def _delete(self, p: S.DeleteSessionRequest) -> S.DeleteSessionResponse:
        self._check_auth()
        await self.runtime.delete_session(p.session_id)  # unknown ids succeed
        return S.DeleteSessionResponse()

    # --------------------------------------------------------------- turns

    async def _prompt(self, p: S.PromptRequest) -> S.PromptResponse:
        session = self._own(p.session_id)
        allowed = AGENT_CAPABILITIES.prompt_capabilities
        for index, block in enumerate(p.prompt):
            flag = PROMPT_GATES.get(type(block))
            if flag is not None and not getattr(allowed, flag):
                reason = f"{type(block).__struct_config__.tag} content is not supported"
                raise RpcError(ErrorCode.INVALID_PARAMS, f"Invalid params: {reason}",
                               {"path": f"$.prompt[{index}]", "reason": reason})
        stop = await self.turns.prompt(session, translate.prompt_in(p.prompt))
        return S.PromptResponse(stop_reason=translate.STOP_REASONS[stop])

    def _cancel_prompt(self, p: S.PromptRequest | Invalid) -> None:
        if isinstance(p, S.PromptRequest):  # ($/cancel_request for the prompt)
            self.turns.cancel_request(p.session_id)

    async def _cancel(self, p: S.CancelNotification) -> None:
        if not self.turns.cancel(p.session_id):
            log.debug("%s: cancel for %s: no turn running", self.name, p.session_id)

    # ------------------------------------------------------------- options

    def _option_id(self, category: str) -> str:
        for option in self.agent.options:
            if option.category == category and isinstance(option, SelectOption):
                return option.id
        raise InvalidArgument(f"the agent has no {category} option")

    async def _change_option(
        self, session_id: str, option_id: str, value: str | bool
    ) -> tuple[Session, list[tuple[str, Any]]]:
        """The one option dispatcher: set, then announce (after the response)."""
        session = self._own(session_id)
        await self.runtime.set_option(session, option_id, value)
        updates = translate.option_updates(self.agent.options, session.options,
                                           self.capabilities, option_id)
        notes = [(UPDATE, S.SessionNotification(session_id=session.id, update=u))
                 for u in updates]
        return session, notes

    async def _set_mode(self, p: S.SetSessionModeRequest) -> Reply:
        _, then = await self._change_option(p.session_id, self._option_id("mode"), p.mode_id)
        return Reply(S.SetSessionModeResponse(), then)

    async def _set_config_option(self, p: Any) -> Reply:
        assert isinstance(
            p, (S.SetSessionConfigOptionSelectRequest, S.SetSessionConfigOptionBooleanRequest)
        )
        session, then = await self._change_option(p.session_id, p.config_id, p.value)
        options = translate.config_options(self.agent.options, session.options, self.capabilities)
        return Reply(S.SetSessionConfigOptionResponse(config_options=options), then)

    async def _set_model(self, p: extra.SetSessionModelRequest) -> Reply:
        _, then = await self._change_option(p.session_id, self._option_id("model"), p.model_id)
        return Reply(extra.SetSessionModelResponse(), then)

    # ------------------------------------------------------------- Channel

    async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
        """Translate one neutral event into ``session/update``\\ s and write them.

        Live updates of a session still being set up are held back until its
        response (see the module docstring).

        Raises:
            ConnectionClosed: the connection is closed.
        """
        updates = translate.updates(event, session, self._ctx, replay=replay)
        if not updates:
            return
        sid = session.id
        if self._setup and not replay:
            held = self._setup.get(sid)
            if held is not None:
                held.extend(S.SessionNotification(session_id=sid, update=u) for u in updates)
                return
        peer = self._peer
        if peer is None:  # (self.peer, inline: once per update)
            raise ConnectionClosed(_NOT_SERVED)
        # (as one unit: none written before the event is recorded)
        await peer.notify_many(
            UPDATE, [S.SessionNotification(session_id=sid, update=u) for u in updates]
        )

    async def request_approval(self, session: Session, request: ApprovalRequest) -> Approval:
        """Ask with ``session/request_permission`` (see :class:`~.calls.ClientCalls`)."""
        return await self.client.request_approval(session, request)

    async def read_text_file(self, session: Session, path: str) -> str:
        """Read through ``fs/read_text_file`` (see :class:`~.calls.ClientCalls`)."""
        return await self.client.read_text_file(session, path)

    async def write_text_file(self, session: Session, path: str, content: str) -> None:
        """Write through ``fs/write_text_file`` (see :class:`~.calls.ClientCalls`)."""
        await self.client.write_text_file(session, path, content)

    async def ask(self, session: Session, tool_call_id: str, question: Question) -> list[str]:
        """One question as a form elicitation (see :class:`~.calls.ClientCalls`)."""
        return await self.client.ask(session, tool_call_id, question)

    async def ask_questions(
        self, session: Session, tool_call_id: str, questions: list[Question]
    ) -> Answers:
        """Questions as one form elicitation (see :class:`~.calls.ClientCalls`)."""
        return await self.client.ask_questions(session, tool_call_id, questions)

    async def ask_url(
        self, session: Session, tool_call_id: str, elicitation_id: str, message: str, url: str
    ) -> AskStatus:
        """A URL elicitation (see :class:`~.calls.ClientCalls`)."""
        return await self.client.ask_url(session, tool_call_id, elicitation_id, message, url)

    async def complete_url(self, session: Session, elicitation_id: str) -> None:
        """Send ``elicitation/complete`` (see :class:`~.calls.ClientCalls`)."""
        await self.client.complete_url(session, elicitation_id)

    async def call_tool(
        self, session: Session, call_id: str, tool: ExternalTool, arguments: Any
    ) -> ToolOutcome:
        """ACP clients provide no tools: an error outcome."""
        return await self.client.call_tool(session, call_id, tool, arguments)

    async def run_hook(
        self, session: Session, event: str, target: str, input: dict[str, Any]
    ) -> tuple[bool, str]:
        """ACP has no hooks: allowed."""
        return await self.client.run_hook(session, event, target, input)
