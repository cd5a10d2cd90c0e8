"""Serve the requests an ACP agent sends its client (permissions, files, terminals).

:class:`AgentRequests` is the request side of
:class:`~.connection.ClientConnection`: the table
:data:`_ROUTES` maps each agent -> client method to its handler, its params
type (decoded leniently) and the handler object that must be installed for
the method to be routed (and advertised). A method not routed is answered
``-32601`` by the peer.

Permission requests are answered by ``on_permission`` inside a cancel scope
per request: :meth:`AgentRequests.cancel_permissions` (called when the client
sends ``session/cancel`` or ``session/close``) makes every pending one of the
session answer ``cancelled`` (protocol-acp.md#cancellation), and a session listed in
:attr:`AgentRequests.cancelled` gets ``cancelled`` at once. A
``$/cancel_request`` from the agent cancels the whole handler instead, and
the peer answers ``-32800``.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from wireproto.adapters._shared import after_notifications
from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.fs import FileSystem
from wireproto.adapters.acp.client.state import (
    RESOURCE_NOT_FOUND,
    ClientSession,
    PermissionHandler,
    default_outcome,
)
from wireproto.adapters.acp.client.terminals import Terminals
from wireproto.errors import RpcError
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

__all__ = ["RESOURCE_NOT_FOUND", "AgentRequests"]

log = logging.getLogger(__name__)


class AgentRequests:
    """Handlers for the agent's requests, sharing the client's session table.

    Args:
        sessions: the client's sessions by id (shared, not copied).
        on_permission: answers permission requests (default: the first
            ``reject_*`` option, else ``cancelled``).
        file_system: serves ``fs/*`` when given.
        terminals: serves ``terminal/*`` when given.
        name: a label for log lines.

    Attributes:
        opening: one event per ``session/new`` in flight; set when it ends.
        cancelled: sessions whose running turn the client cancelled.
        peer: the connection's peer (set by the connection): a request is
            handled once the notifications received before it were.
    """

    def __init__(
        self,
        sessions: dict[str, ClientSession],
        *,
        on_permission: PermissionHandler | None,
        file_system: FileSystem | None,
        terminals: Terminals | None,
        name: str,
    ) -> None:
        self.sessions = sessions
        self.on_permission = on_permission
        self.file_system = file_system
        self.terminals = terminals
        self.name = name
        self.opening: set[anyio.Event] = set()
        self.cancelled: set[str] = set()
        self.peer: Peer | None = None
        self._pending: dict[str, set[anyio.CancelScope]] = {}

    def add_routes(self, router: Router) -> None:
        """Route every method whose handler object is installed."""
        for method, (handler, type_, needs) in _ROUTES.items():
            if needs is None or getattr(self, needs) is not None:
                router.add(method, types.MethodType(handler, self), type_,
                           dec_hook=acp_codec.dec_hook, lenient=_decoder(type_))

    def cancel_permissions(self, session_id: str) -> None:
        """Make every pending permission request of the session answer ``cancelled``."""
        for scope in self._pending.get(session_id, ()):
            scope.cancel()

    async def session(self, session_id: str) -> ClientSession:
        """The session an agent request names (waiting for sessions being opened).

        It first waits until the updates received before the request were
        handled, so ``on_update`` shows the tool call a permission request is
        about before ``on_permission`` is asked.

        Raises:
            RpcError: ``-32002`` for an unknown session.
        """
        if self.peer is not None:
            await after_notifications(self.peer)
        if session_id not in self.sessions:
            for opened in list(self.opening):
                await opened.wait()
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Unknown session {session_id}")
        return session

    async def _on_permission(
        self, request: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        sid = request.session_id
        await self.session(sid)
        outcome: s.RequestPermissionOutcome = s.CancelledPermissionOutcome()
        if sid in self.cancelled:
            return s.RequestPermissionResponse(outcome=outcome)
        scope = anyio.CancelScope()
        pending = self._pending.setdefault(sid, set())
        pending.add(scope)
        try:
            with scope:
                outcome = await self._decide(request)
        finally:
            pending.discard(scope)
            if not pending:
                self._pending.pop(sid, None)
        return s.RequestPermissionResponse(outcome=outcome)

    async def _decide(self, request: s.RequestPermissionRequest) -> s.RequestPermissionOutcome:
        if self.on_permission is None:
            outcome = default_outcome(request)
            log.info("%s: no permission handler; answering %s", self.name,
                     getattr(outcome, "option_id", "cancelled"))
            return outcome
        answer = await self.on_permission(request)
        if not isinstance(answer, str):
            return answer
        if all(o.option_id != answer for o in request.options):
            raise ValueError(f"permission handler chose an unknown option {answer!r}")
        return s.SelectedPermissionOutcome(option_id=answer)

    async def _on_read(self, request: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        assert self.file_system is not None
        session = await self.session(request.session_id)
        return s.ReadTextFileResponse(
            content=await self.file_system.read_text_file(session, request))

    async def _on_write(self, request: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        assert self.file_system is not None
        await self.file_system.write_text_file(await self.session(request.session_id), request)
        return s.WriteTextFileResponse()

    async def _on_terminal_create(
        self, request: s.CreateTerminalRequest
    ) -> s.CreateTerminalResponse:
        assert self.terminals is not None
        session = await self.session(request.session_id)
        return s.CreateTerminalResponse(terminal_id=await self.terminals.create(session, request))

    async def _on_terminal_output(
        self, request: s.TerminalOutputRequest
    ) -> s.TerminalOutputResponse:
        assert self.terminals is not None
        return await self.terminals.output(await self.session(request.session_id), request)

    async def _on_terminal_wait(
        self, request: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        assert self.terminals is not None
        session = await self.session(request.session_id)
        return await self.terminals.wait_for_exit(session, request)

    async def _on_terminal_kill(self, request: s.KillTerminalRequest) -> s.KillTerminalResponse:
        assert self.terminals is not None
        await self.terminals.kill(await self.session(request.session_id), request)
        return s.KillTerminalResponse()

    async def _on_terminal_release(
        self, request: s.ReleaseTerminalRequest
    ) -> s.ReleaseTerminalResponse:
        assert self.terminals is not None
        await self.terminals.release(await self.session(request.session_id), request)
        return s.ReleaseTerminalResponse()


def _decoder(type_: Any) -> Callable[[msgspec.Raw], Any]:
    def decode(raw: msgspec.Raw) -> Any:
        return acp_codec.decode(raw, type_)

    return decode


_Handler = Callable[[AgentRequests, Any], Awaitable[Any]]

_ROUTES: dict[str, tuple[_Handler, Any, str | None]] = {
    "session/request_permission": (
        AgentRequests._on_permission, s.RequestPermissionRequest, None),
    "fs/read_text_file": (AgentRequests._on_read, s.ReadTextFileRequest, "file_system"),
    "fs/write_text_file": (AgentRequests._on_write, s.WriteTextFileRequest, "file_system"),
    "terminal/create": (
        AgentRequests._on_terminal_create, s.CreateTerminalRequest, "terminals"),
    "terminal/output": (
        AgentRequests._on_terminal_output, s.TerminalOutputRequest, "terminals"),
    "terminal/wait_for_exit": (
        AgentRequests._on_terminal_wait, s.WaitForTerminalExitRequest, "terminals"),
    "terminal/kill": (AgentRequests._on_terminal_kill, s.KillTerminalRequest, "terminals"),
    "terminal/release": (
        AgentRequests._on_terminal_release, s.ReleaseTerminalRequest, "terminals"),
}
"""Agent -> client request: (handler, params type, the attribute that must be installed)."""

