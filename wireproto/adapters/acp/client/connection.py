"""The ACP client role: drive any ACP agent over any message stream (docs/protocol-acp.md).

Theory of operation
-------------------
``async with ClientConnection(stream, ...) as client`` runs a
:class:`~wireproto.rpc.peer.Peer` with the ACP dialect and ``$/cancel_request``
in both directions. Everything received is decoded with the schema's leniency
(:func:`wireproto.adapters.acp.codec.decode`); a ``null`` result is accepted
where the result type has no required field (protocol-acp.md#client-side).

* **Sessions.** The client keeps a :class:`ClientSession` per session it
  created, loaded or resumed. The id of a new session is registered by a hook
  that runs when the ``session/new`` response is delivered, before any later
  notification is handled (protocol-acp.md#client-side), so updates sent right after the response
  are never lost. ``session/load`` and ``session/resume`` register the id
  before sending; every update that arrives before the ``session/load``
  response is *replay* (protocol-acp.md#client-side): it is collected, returned by
  :meth:`ClientConnection.load_session`, flagged ``replay=True`` for
  ``on_update`` and never given to a turn. Updates for unknown sessions, or
  that fail to decode (e.g. an unknown ``sessionUpdate``), are logged and
  dropped.
* **Order.** Notifications are handled one at a time in arrival order by the
  peer's inbox, and a response is delivered only after the notifications
  before it were handled (protocol-acp.md#ordering). ``on_update`` sees every update; a running
  :class:`~.turn.PromptTurn` also yields the live updates of its session read after its
  prompt was sent (those read before, e.g. late ones of the previous turn,
  never reach it: :meth:`~wireproto.rpc.peer.Peer.call_in_order` marks
  the point). The turn's
  buffer is bounded: when the consumer stops reading, the inbox (and so the
  whole connection) waits for it. Do not wait, inside the loop over a turn,
  for another response of the same connection while the buffer may be full.
* **Prompt turns.** ``async with client.prompt(sid, blocks) as turn`` sends
  ``session/prompt``; ``async for update in turn`` yields the updates and
  ends when the response arrives (the turn is closed by the response hook,
  so a late update is never attributed to it, protocol-acp.md#ordering); ``turn.stop_reason``
  then holds the stop reason, reported as sent even when it is not one of
  the known values (protocol-acp.md#client-side). Leaving the block before the end cancels the
  turn (``session/cancel``) and waits for the agent's answer.
* **Cancel.** :meth:`ClientConnection.cancel` sends ``session/cancel`` and
  answers every pending ``session/request_permission`` of that session with
  ``cancelled`` (protocol-acp.md#cancellation); later permission requests of the same turn are
  answered ``cancelled`` at once.
* **Handlers** (agent -> client requests), each advertised in
  ``initialize`` only when installed: permissions (``on_permission``; without
  one the first ``reject_*`` option is chosen, or ``cancelled`` when there
  is none), the file system (``file_system``, e.g.
  :class:`~.fs.LocalFileSystem`) and terminals (``terminals``, e.g.
  :class:`~.terminals.LocalTerminals`, entered and exited with the
  connection), served by :class:`~.serve.AgentRequests`. A
  ``$/cancel_request`` from the agent cancels the handler, which answers
  ``-32800``.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec
from msgspec import UNSET

from wireproto import __version__
from wireproto.adapters._shared import renamed_options, running_peer
from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.capabilities import GATES, advertised, check_roots
from wireproto.adapters.acp.client.elicitation import ElicitationHandler, ElicitationRequests
from wireproto.adapters.acp.client.ext import CALL_TIMEOUT, INITIALIZE_TIMEOUT, ExtensionCalls
from wireproto.adapters.acp.client.fs import FileSystem
from wireproto.adapters.acp.client.serve import RESOURCE_NOT_FOUND, AgentRequests
from wireproto.adapters.acp.client.state import (
    ClientSession,
    LoadResult,
    PermissionHandler,
    SessionEvent,
    UpdateHandler,
    decode_notification,
)
from wireproto.adapters.acp.client.terminals import Terminals
from wireproto.adapters.acp.client.turn import PromptTurn, decode_result
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.jsonrpc.codec import ACP_DIALECT, IncomingResponse
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

if TYPE_CHECKING:
    from wireproto.transports.process import ProcessHandle

__all__ = ["CALL_TIMEOUT", "INITIALIZE_TIMEOUT", "PROTOCOL_VERSION", "ClientConnection"]

log = logging.getLogger(__name__)
R = TypeVar("R")

PROTOCOL_VERSION = 1
"""The ACP protocol version this client speaks."""





# ------------------------------------------------------------ connection


class ClientConnection(ExtensionCalls):
    """An ACP client over any message stream.

    Args:
        stream: the connection to the agent.
        client_info: sent in ``initialize`` (default: ``wireproto`` and its version).
        on_permission: answers ``session/request_permission`` (default: the
            first ``reject_*`` option, else ``cancelled``).
        on_update: called with every update, in order (replays flagged).
        file_system: serves ``fs/*``; advertised when given.
        terminals: serves ``terminal/*``; advertised when given; entered
            and exited with the connection.
        notices: advertise that the caller renders ``notice`` updates.
        compaction: advertise that it renders compaction updates.
        boolean_options: advertise that it renders boolean config options.
        on_elicitation: answers ``elicitation/create`` (see
            :mod:`.elicitation`); ``elicitation`` is advertised, with
            ``elicitation_modes``, only when given.
        on_elicitation_complete: called with the id of each
            ``elicitation/complete`` (a URL interaction finished).
        event_buffer: session updates buffered per prompt turn before the
            reader waits (the name of :class:`~wireproto.adapters.wire.WireClient`'s
            option; ``update_buffer=`` still works, with a :class:`DeprecationWarning`).
        name: a label for log lines.

    Attributes:
        initialize_response: the agent's ``initialize`` answer (``None`` before).
        agent_capabilities: its capabilities (all unsupported before).
        process: the spawned agent (``pid``, ``returncode`` after the end,
            ``ended_by``) when :func:`~.connect.connect_acp` started one, else ``None``.
    """

    def __init__(
        self,
        stream: anyio.abc.ObjectStream[bytes],
        *,
        client_info: s.Implementation | None = None,
        on_permission: PermissionHandler | None = None,
        on_update: UpdateHandler | None = None,
        file_system: FileSystem | None = None,
        terminals: Terminals | None = None,
        notices: bool = False,
        compaction: bool = False,
        boolean_options: bool = False,
        event_buffer: int = 256,
        name: str = "acp client",
        on_elicitation: ElicitationHandler | None = None,
        on_elicitation_complete: Callable[[str], Awaitable[None]] | None = None,
        elicitation_modes: Sequence[str] = ("form", "url"),
        **deprecated: Any,
    ) -> None:
        event_buffer = renamed_options(
            "ClientConnection", deprecated, {"update_buffer": "event_buffer"}, stacklevel=3
        ).get("event_buffer", event_buffer)
        self._stream = stream
        self.client_info = client_info or s.Implementation(
            name="wireproto", title="wireproto", version=__version__
        )
        self.on_update = on_update
        self.terminals = terminals
        self.capabilities = advertised(
            file_system is not None, terminals is not None, notices, compaction, boolean_options
        )
        self.event_buffer = event_buffer
        self.name = name
        self.initialize_response: s.InitializeResponse | None = None
        self.agent_capabilities = s.AgentCapabilities()
        self._sessions: dict[str, ClientSession] = {}
        self._replays: dict[str, list[s.SessionUpdate]] = {}
        self._turns: dict[str, PromptTurn] = {}
        self.requests = AgentRequests(
            self._sessions, on_permission=on_permission, file_system=file_system,
            terminals=terminals, name=name,
        )
        self.elicitations = None if on_elicitation is None else ElicitationRequests(
            on_elicitation, modes=elicitation_modes, session=self.requests.session,
            on_complete=on_elicitation_complete, name=name,
        )
        if self.elicitations is not None:
            self.capabilities.elicitation = self.elicitations.capabilities()
        self._peer: Peer | None = None
        self._stack: AsyncExitStack | None = None
        self.process: ProcessHandle | None = None

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> ClientConnection:
        async with AsyncExitStack() as stack:
            if self.terminals is not None:
                await stack.enter_async_context(self.terminals)
            peer = Peer(
                self._stream, self._router(), dialect=ACP_DIALECT,
                cancel_method=ACP_DIALECT.cancel_method, name=self.name,
            )
            self.requests.peer = peer
            self._peer = await stack.enter_async_context(peer)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._stack is not None:
            await self._stack.__aexit__(exc_type, exc, tb)

    def _router(self) -> Router:
        router = Router()
        router.add("session/update", self._on_update, s.SessionNotification,
                   notification=True, dec_hook=acp_codec.dec_hook, lenient=decode_notification)
        self.requests.add_routes(router)
        if self.elicitations is not None:
            self.elicitations.add_routes(router)
        return router

    @property
    def peer(self) -> Peer:
        """The running peer (:class:`LocalProtocolError` outside ``async with``)."""
        return running_peer(self._peer, "ACP client")

    @property
    def sessions(self) -> Mapping[str, ClientSession]:
        """The sessions this connection knows, by id (read-only view)."""
        return types.MappingProxyType(self._sessions)

    @property
    def initialized(self) -> bool:
        """Whether ``initialize`` succeeded."""
        return self.initialize_response is not None

    async def wait_closed(self) -> None:
        """Wait until the agent's side of the connection ends."""
        await self.peer.wait_closed()

    # ---------------------------------------------------------------- calls

    async def _call(
        self,
        method: str,
        params: Any,
        type_: type[R],
        on_response: Callable[[IncomingResponse], None] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (a per-request deadline)
    ) -> R:
        if method != "initialize":
            self._require(method)
        return await self.peer.request(
            method, params, result_type=type_, timeout=timeout, on_response=on_response,
            dec_hook=acp_codec.dec_hook, lenient=lambda raw: decode_result(method, raw, type_),
        )

    def _require(self, method: str) -> None:
        if not self.initialized:
            raise LocalProtocolError(f"call initialize() before {method}")
        gate = GATES.get(method)
        if gate is not None and not gate(self.agent_capabilities):
            raise LocalProtocolError(f"the agent did not advertise {method}")

    async def initialize(
        self, *, timeout: float | None = INITIALIZE_TIMEOUT  # noqa: ASYNC109 (the deadline)
    ) -> s.InitializeResponse:
        """Send ``initialize`` (protocol version 1, our capabilities and info).

        Returns:
            the agent's answer (also kept in :attr:`initialize_response`).

        Raises:
            RemoteProtocolError: the agent chose a version we do not speak
                (close the connection), or answered nonsense.
            RpcError: the agent answered with an error.
            TimeoutError: no answer within ``timeout`` seconds (the message says so).
        """
        params = s.InitializeRequest(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=self.capabilities,
            client_info=self.client_info,
        )
        try:
            result = await self._call("initialize", params, s.InitializeResponse, timeout=timeout)
        except TimeoutError as exc:
            raise TimeoutError(
                f"the agent did not answer initialize within {timeout} s after it was "
                "started: is it an ACP agent that reads stdin? (a longer handshake timeout "
                "waits more)"
            ) from exc
        if result.protocol_version != PROTOCOL_VERSION:
            raise RemoteProtocolError(
                f"the agent chose ACP protocol version {result.protocol_version}; "
                f"this client speaks only {PROTOCOL_VERSION}"
            )
        self.initialize_response = result
        self.agent_capabilities = result.agent_capabilities
        info = result.agent_info
        who = f"{info.name} {info.version}" if isinstance(info, s.Implementation) else "an agent"
        log.info("%s: connected to %s", self.name, who)
        return result

    async def authenticate(
        self, method_id: str, *, timeout: float | None = CALL_TIMEOUT  # noqa: ASYNC109
    ) -> s.AuthenticateResponse:
        """Authenticate with one of the agent's ``authMethods``.

        Raises:
            RpcError: e.g. ``-32602`` unknown method, ``-32000`` login failed.
            TimeoutError: no answer within ``timeout`` seconds (the request is
                then cancelled with ``$/cancel_request``; ``None``: wait forever).
        """
        params = s.AuthenticateRequest(method_id=method_id)
        return await self._call("authenticate", params, s.AuthenticateResponse, timeout=timeout)

    async def logout(self, *, timeout: float | None = CALL_TIMEOUT) -> None:  # noqa: ASYNC109
        """Log out (needs the agent's ``auth.logout``)."""
        await self._call("logout", s.LogoutRequest(), s.LogoutResponse, timeout=timeout)

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        additional_directories: Sequence[str] | None = None,
        *,
        timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> s.NewSessionResponse:
        """Create a session; its id is registered before any later update is handled.

        Raises:
            TimeoutError: no answer within ``timeout`` seconds (cancelled on
                the wire; ``None``: wait forever).
            ValueError: ``cwd`` or a directory is not absolute.
            LocalProtocolError: additional directories or an MCP transport
                the agent did not advertise.
            RpcError: the agent refused (e.g. ``-32602`` naming a server).
        """
        self._require("session/new")
        dirs = check_roots(self.agent_capabilities, cwd, additional_directories, mcp_servers)
        params = s.NewSessionRequest(cwd=cwd, mcp_servers=list(mcp_servers),
                                     additional_directories=list(dirs) if dirs else UNSET)

        def register(response: IncomingResponse) -> None:
            if isinstance(response.result, msgspec.Raw):
                try:
                    result = decode_result("session/new", response.result, s.NewSessionResponse)
                except RemoteProtocolError:
                    return  # the caller raises it
                session = ClientSession(result.session_id, cwd, dirs)
                session.adopt(result.modes, result.config_options)
                self._sessions[result.session_id] = session

        opened = anyio.Event()
        self.requests.opening.add(opened)
        try:
            return await self._call("session/new", params, s.NewSessionResponse, register,
                                    timeout=timeout)
        finally:
            self.requests.opening.discard(opened)
            opened.set()

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        additional_directories: Sequence[str] | None = None,
        *,
        timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> LoadResult:
        """Load a session; the agent's history replay is collected and returned.

        Replayed updates go to ``on_update`` flagged ``replay=True`` and
        never to a turn (protocol-acp.md#client-side).

        Raises:
            ValueError / LocalProtocolError / RpcError: as :meth:`new_session`;
                LocalProtocolError also when the agent has no ``loadSession``
                or the session runs a turn.
            TimeoutError: no answer within ``timeout`` seconds.
        """
        self._require("session/load")
        dirs = check_roots(self.agent_capabilities, cwd, additional_directories, mcp_servers)
        params = s.LoadSessionRequest(session_id=session_id, cwd=cwd,
                                      mcp_servers=list(mcp_servers),
                                      additional_directories=list(dirs) if dirs else UNSET)
        history: list[s.SessionUpdate] = []

        def replay_done(response: IncomingResponse) -> None:
            self._replays.pop(session_id, None)

        session = self._reopen(session_id, cwd, dirs, "session/load")
        self._replays[session_id] = history
        result = await self._reopen_call("session/load", params, s.LoadSessionResponse,
                                         session, replay_done, timeout)
        return LoadResult(result, history)

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        additional_directories: Sequence[str] | None = None,
        *,
        timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> s.ResumeSessionResponse:
        """Resume a session without history replay (needs ``sessionCapabilities.resume``).

        Raises:
            ValueError / LocalProtocolError / RpcError / TimeoutError: as
                :meth:`load_session`.
        """
        self._require("session/resume")
        dirs = check_roots(self.agent_capabilities, cwd, additional_directories, mcp_servers)
        params = s.ResumeSessionRequest(session_id=session_id, cwd=cwd,
                                        mcp_servers=list(mcp_servers),
                                        additional_directories=list(dirs) if dirs else UNSET)
        session = self._reopen(session_id, cwd, dirs, "session/resume")
        return await self._reopen_call("session/resume", params, s.ResumeSessionResponse,
                                       session, None, timeout)

    def _reopen(
        self, session_id: str, cwd: str, dirs: tuple[str, ...], method: str
    ) -> tuple[ClientSession, ClientSession | None]:
        self._require(method)
        if session_id in self._turns:
            raise LocalProtocolError(f"session {session_id} runs a turn")
        previous = self._sessions.get(session_id)
        session = self._sessions[session_id] = ClientSession(session_id, cwd, dirs)
        return session, previous

    async def _reopen_call(
        self,
        method: str,
        params: Any,
        type_: type[R],
        sessions: tuple[ClientSession, ClientSession | None],
        on_response: Callable[[IncomingResponse], None] | None = None,
        timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> R:
        session, previous = sessions
        try:
            result = await self._call(method, params, type_, on_response, timeout)
        except BaseException:
            self._replays.pop(session.session_id, None)
            if self._sessions.get(session.session_id) is session:
                if previous is None:
                    del self._sessions[session.session_id]
                else:
                    self._sessions[session.session_id] = previous
            raise
        session.adopt(getattr(result, "modes", None), getattr(result, "config_options", None))
        return result

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None,
        *, timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> s.ListSessionsResponse:
        """List the agent's sessions (one page; pass ``next_cursor`` back for more)."""
        params = s.ListSessionsRequest(cwd=UNSET if cwd is None else cwd,
                                       cursor=UNSET if cursor is None else cursor)
        return await self._call("session/list", params, s.ListSessionsResponse, timeout=timeout)

    async def close_session(
        self, session_id: str, *, timeout: float | None = CALL_TIMEOUT  # noqa: ASYNC109
    ) -> None:
        """Close a session (its running turn ends); ``-32002`` counts as success."""
        self.requests.cancel_permissions(session_id)
        await self._forget("session/close", s.CloseSessionRequest(session_id=session_id),
                           s.CloseSessionResponse, session_id, timeout)

    async def delete_session(
        self, session_id: str, *, timeout: float | None = CALL_TIMEOUT  # noqa: ASYNC109
    ) -> None:
        """Delete a session from the agent's list; ``-32002`` counts as success."""
        await self._forget("session/delete", s.DeleteSessionRequest(session_id=session_id),
                           s.DeleteSessionResponse, session_id, timeout)

    async def _forget(
        self, method: str, params: Any, type_: type[Any], session_id: str,
        timeout: float | None,  # noqa: ASYNC109 (a per-request deadline)
    ) -> None:
        try:
            await self._call(method, params, type_, timeout=timeout)
        except RpcError as exc:
            if exc.code != RESOURCE_NOT_FOUND:
                raise
            log.debug("%s: %s %s: %s", self.name, method, session_id, exc.message)
        if session_id not in self._turns:
            self._sessions.pop(session_id, None)

    async def set_config_option(
        self, session_id: str, config_id: str, value: str | bool,
        *, timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> s.SetSessionConfigOptionResponse:
        """Set a config option; returns (and keeps) the complete new set."""
        params: s.SetSessionConfigOptionRequest
        if isinstance(value, bool):
            params = s.SetSessionConfigOptionBooleanRequest(
                session_id=session_id, config_id=config_id, value=value)
        else:
            params = s.SetSessionConfigOptionSelectRequest(
                session_id=session_id, config_id=config_id, value=value)
        result = await self._call("session/set_config_option", params,
                                  s.SetSessionConfigOptionResponse, timeout=timeout)
        session = self._sessions.get(session_id)
        if session is not None:
            session.config_options = list(result.config_options)
        return result

    async def set_mode(
        self, session_id: str, mode_id: str,
        *, timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> None:
        """Switch the session's legacy mode."""
        params = s.SetSessionModeRequest(session_id=session_id, mode_id=mode_id)
        await self._call("session/set_mode", params, s.SetSessionModeResponse, timeout=timeout)
        session = self._sessions.get(session_id)
        if session is not None and session.modes is not None:
            session.modes.current_mode_id = mode_id

    def prompt(self, session_id: str, prompt: str | Sequence[s.ContentBlock]) -> PromptTurn:
        """Prepare a prompt turn; ``async with`` it to run it.

        Args:
            session_id: the session.
            prompt: content blocks, or a plain string (one text block).

        Returns:
            the :class:`PromptTurn`: iterate it for the updates; ``stop_reason``
            is set when the iteration ends.

        Raises:
            LocalProtocolError: content the agent did not advertise
                (image, audio, embedded resources).
        """
        self._require("session/prompt")
        blocks: list[s.ContentBlock] = (
            [s.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt))
        caps = self.agent_capabilities.prompt_capabilities
        allowed = {s.ImageContent: caps.image, s.AudioContent: caps.audio,
                   s.EmbeddedResource: caps.embedded_context}
        for block in blocks:
            if not allowed.get(type(block), True):
                raise LocalProtocolError(f"the agent does not accept {type(block).__name__}")
        return PromptTurn(self, session_id, blocks, self.event_buffer)

    async def cancel(self, session_id: str) -> None:
        """Cancel the session's turn: ``session/cancel``, then every pending
        permission request of the session is answered ``cancelled``
        (protocol-acp.md#cancellation)."""
        self._require("session/cancel")
        if session_id in self._turns:
            self.requests.cancelled.add(session_id)
        await self.peer.notify("session/cancel", s.CancelNotification(session_id=session_id))
        self.requests.cancel_permissions(session_id)

    # -------------------------------------------------------- turn plumbing

    def _start_turn(self, turn: PromptTurn) -> None:
        if turn.session_id in self._turns:
            raise LocalProtocolError(f"session {turn.session_id} already runs a turn")
        if turn.session_id not in self._sessions:
            log.warning("%s: prompt for a session this client does not know: %s",
                        self.name, turn.session_id)
        self._turns[turn.session_id] = turn

    def _end_turn(self, turn: PromptTurn) -> None:
        if self._turns.get(turn.session_id) is turn:
            del self._turns[turn.session_id]
            self.requests.cancelled.discard(turn.session_id)

    # ------------------------------------------------------------- inbound

    async def _on_update(self, note: s.SessionNotification) -> None:
        sid = note.session_id
        session = self._sessions.get(sid)
        if session is None:
            log.warning("%s: update for unknown session %s dropped", self.name, sid)
            return
        update = note.update
        session.apply(update)
        history = self._replays.get(sid)
        if history is not None:
            history.append(update)
        if self.on_update is not None:
            meta = note.meta if isinstance(note.meta, dict) else None
            await self.on_update(SessionEvent(sid, update, history is not None, meta))
        turn = self._turns.get(sid) if history is None else None
        if turn is not None and turn.accepting:
            await turn._deliver(update)
