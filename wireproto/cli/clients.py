"""The terminal client's protocol drivers: one ACP session, one Wire connection.

Each opener performs the handshake (``initialize``, then for ACP a new or
loaded session), renders every update/event as it arrives, and answers
approvals through :meth:`~wireproto.cli.connect.Ui.decide` and questions
(ACP elicitations, Wire ``QuestionRequest``) through :mod:`wireproto.cli.elicit`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio.abc

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.elicitation import FormOrUrl
from wireproto.adapters.acp.client.fs import LocalFileSystem
from wireproto.adapters.acp.client.state import (
    RESOURCE_NOT_FOUND,
    ClientSession,
    SessionEvent,
    option_of_kind,
)
from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.client.connection import WireClient, WireEvent
from wireproto.cli.common import CliError
from wireproto.cli.elicit import answer_elicitation, answer_questions
from wireproto.cli.render import render_acp, render_wire
from wireproto.errors import RpcError
from wireproto.jsonrpc.messages import ErrorCode

if TYPE_CHECKING:
    from wireproto.cli.connect import Ui

__all__ = [
    "AcpDriver", "WireDriver", "approval_label", "initialize_refused", "open_acp", "open_wire",
]

_PERMISSION_KINDS: dict[str, tuple[s.PermissionOptionKind, ...]] = {
    "once": ("allow_once", "allow_always"),
    "always": ("allow_always", "allow_once"),
    "reject": ("reject_once", "reject_always"),
}
"""A decision -> the ACP option kinds that express it, preferred first."""

_WIRE_DECISIONS: dict[str, m.ApprovalKind] = {
    "once": "approve", "always": "approve_for_session", "reject": "reject",
}

_OTHER_PROTOCOL = {"acp": ("ACP", "a Wire", "wire"), "wire": ("Wire", "an ACP", "acp")}
"""Our protocol -> the one an agent refusing our ``initialize`` params probably speaks."""


def initialize_refused(protocol: str, exc: RpcError) -> CliError:
    """The error for an ``initialize`` the agent refused.

    Invalid parameters (``-32602``) for a well-formed ``initialize`` mean the
    agent expects another protocol's handshake: say which command to use.
    """
    if exc.code == ErrorCode.INVALID_PARAMS:
        ours, theirs, command = _OTHER_PROTOCOL[protocol]
        return CliError(f"the agent refused {ours}'s initialize ({exc.message}): this looks "
                        f"like {theirs} agent; use 'wireproto connect {command}'")
    return CliError(f"the agent refused: {exc.message} ({exc.code})")


class _ShownFileSystem(LocalFileSystem):
    """Local files for the agent (``--fs``), each access shown in the transcript."""

    def __init__(self, ui: Ui) -> None:
        super().__init__()
        self.ui = ui

    async def read_text_file(self, session: ClientSession, request: s.ReadTextFileRequest) -> str:
        try:
            text = await super().read_text_file(session, request)
        except RpcError as exc:
            why = ("no such file (yet)" if exc.code == RESOURCE_NOT_FOUND
                   else f"refused: {exc.message}")
            self.ui.printer.line(f"[fs] read {request.path} through this client: {why}")
            raise
        self.ui.printer.line(f"[fs] read {request.path} through this client")
        return text

    async def write_text_file(self, session: ClientSession,
                              request: s.WriteTextFileRequest) -> None:
        try:
            await super().write_text_file(session, request)
        except RpcError as exc:
            self.ui.printer.line(f"[fs] write {request.path} through this client refused: "
                                 f"{exc.message}")
            raise
        self.ui.printer.line(f"[fs] wrote {request.path} through this client")


_END_OF_HISTORY = "[end of the history: new prompts follow]"

_FS_MODES = {
    True: "[fs] the agent reads and writes files through this client (--fs), inside {cwd}",
    False: "[fs] the agent reads and writes files on its own (pass --fs to serve them "
           "through this client)",
}


class AcpDriver:
    """One ACP session of a :class:`ClientConnection`."""

    def __init__(self, client: ClientConnection, session_id: str) -> None:
        self.client = client
        self.session_id = session_id

    def commands(self) -> list[str]:
        """The slash commands advertised for the session."""
        session = self.client.sessions.get(self.session_id)
        return [f"/{c.name}" for c in session.available_commands] if session else []

    async def prompt(self, text: str) -> str:
        """Run a turn; updates are rendered by the connection's ``on_update``."""
        async with self.client.prompt(self.session_id, text) as turn:
            async for _ in turn:
                pass
        return turn.stop_reason or "no stop reason"

    async def cancel(self) -> None:
        """Send ``session/cancel``."""
        await self.client.cancel(self.session_id)


@asynccontextmanager
async def open_acp(
    stream: anyio.abc.ObjectStream[bytes],
    ui: Ui,
    *,
    cwd: str,
    session_id: str | None = None,
    fs: bool = False,
    auth_method: str | None = None,
) -> AsyncIterator[AcpDriver]:
    """Initialize, open (or load) a session, and yield its driver.

    Raises:
        CliError: the agent refused a step (the reason in one line).
    """

    async def on_update(event: SessionEvent) -> None:
        render_acp(ui.printer, event.update)

    async def on_permission(
        request: s.RequestPermissionRequest,
    ) -> s.RequestPermissionOutcome | str:
        title = request.tool_call.title
        what = title if isinstance(title, str) else ui.printer.tools.get(
            request.tool_call.tool_call_id, "a tool call")
        decision = await ui.decide(what)
        option = option_of_kind(request, *_PERMISSION_KINDS[decision])
        return option.option_id if option is not None else s.CancelledPermissionOutcome()

    async def on_elicitation(request: FormOrUrl) -> s.CreateElicitationResponse:
        return await answer_elicitation(ui, request)

    async def on_complete(elicitation_id: str) -> None:
        ui.printer.line("[the linked page reports it is done]")

    client = ClientConnection(
        stream, on_permission=on_permission, on_update=on_update,
        file_system=_ShownFileSystem(ui) if fs else None, name="connect",
        on_elicitation=on_elicitation, on_elicitation_complete=on_complete,
        notices=True, compaction=True,  # both are rendered
    )
    async with client:
        try:
            info = await client.initialize()
        except RpcError as exc:
            raise initialize_refused("acp", exc) from exc
        name = info.agent_info.name if isinstance(info.agent_info, s.Implementation) else "agent"
        try:
            if auth_method:
                await client.authenticate(auth_method)
            if session_id is None:
                session_id = (await client.new_session(cwd)).session_id
                ui.printer.line(f"[{name}: session {session_id}]")
                ui.printer.line(_FS_MODES[fs].format(cwd=cwd))
            else:  # (the banner first: loading shows the history)
                ui.printer.line(f"[{name}: session {session_id}, loading its history]")
                ui.printer.line(_FS_MODES[fs].format(cwd=cwd))
                await client.load_session(session_id, cwd)
                ui.printer.line(_END_OF_HISTORY)
        except RpcError as exc:
            raise CliError(f"the agent refused: {exc.message} ({exc.code})") from exc
        yield AcpDriver(client, session_id)


class WireDriver:
    """One Wire connection (one session)."""

    def __init__(self, client: WireClient) -> None:
        self.client = client

    def commands(self) -> list[str]:
        """The slash commands from ``initialize``."""
        return [f"/{c.name}" for c in self.client.slash_commands]

    async def prompt(self, text: str) -> str:
        """Run a turn; events are rendered by the client's ``on_event``."""
        result = await self.client.prompt(text)
        return result.status

    async def cancel(self) -> None:
        """Send ``cancel``."""
        await self.client.cancel()


def approval_label(request: m.ApprovalRequest) -> str:
    """``sender: action - description``, each part once (an agent often repeats one)."""
    parts: list[str] = []
    for part in (request.sender, request.action, request.description):
        if part and part not in parts:
            parts.append(part)
    if not parts:
        return "an approval"
    return parts[0] + "".join((": ", " - ")[i] + p for i, p in enumerate(parts[1:]))


@asynccontextmanager
async def open_wire(
    stream: anyio.abc.ObjectStream[bytes], ui: Ui, *, replay: bool = False
) -> AsyncIterator[WireDriver]:
    """Initialize (falling back to v1 mode if needed) and yield the driver."""
    replaying = False

    async def on_event(event: WireEvent) -> None:
        render_wire(ui.printer, event, replay=replaying)

    async def on_approval(request: m.ApprovalRequest) -> m.ApprovalKind:
        decision = await ui.decide(approval_label(request))
        return _WIRE_DECISIONS[decision]

    async def on_question(request: m.QuestionRequest) -> dict[str, str]:
        return await answer_questions(ui, request)

    client = WireClient(stream, on_event=on_event, on_approval=on_approval, event_buffer=0,
                        on_question=on_question, name="connect")
    async with client:
        try:
            result = await client.initialize()
        except RpcError as exc:
            raise initialize_refused("wire", exc) from exc
        name = result.server.name if result is not None else "Wire server (v1, no handshake)"
        ui.printer.line(f"[{name}]")
        if replay:
            ui.printer.line("[the session's history]")
            replaying = True
            try:
                await client.replay()
            except RpcError as exc:
                ui.printer.line(f"[replay failed: {exc.message}]")
            finally:
                replaying = False
            ui.printer.line(_END_OF_HISTORY)
        yield WireDriver(client)
