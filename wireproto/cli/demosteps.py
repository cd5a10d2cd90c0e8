"""The demo's scenario, once per protocol, checked step by step.

Both scenarios drive the demo agent (``docs/demo-agent.md``) through the same
story: initialize, a session, an echo, ``/read`` of a real file, ``/write``
with an approval, ``/plan``, ``/slow 100`` cancelled after three ticks, then
the server is stopped and restarted to show persistence (ACP: ``session/list``
and ``session/load``; Wire: the same ``--session`` and ``replay``). Wire also
calls an external tool the client registered. Each step checks what it saw
and raises :class:`DemoFailure` (or anything) when the agent misbehaved.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.fs import LocalFileSystem
from wireproto.adapters.acp.client.state import ClientSession, option_of_kind
from wireproto.adapters.wire import display as d
from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.client.connection import WireClient, WireEvent
from wireproto.adapters.wire.methods import ExternalTool, ExternalToolsResult
from wireproto.cli.demo import DemoContext, Report, Server, Step

__all__ = ["AcpScenario", "DemoFailure", "WireScenario", "prepare"]

ECHO = "Hello, wireproto!"
NOTES = "notes.txt"
NOTES_TEXT = "first line\nsecond line\nthird line\n"
WRITTEN = "Written by the demo."
TICKS_BEFORE_CANCEL = 3


class DemoFailure(Exception):
    """The agent did not behave as the demo expects."""


def expect(condition: bool, message: str) -> None:
    """Raise :class:`DemoFailure` with ``message`` unless ``condition``."""
    if not condition:
        raise DemoFailure(message)


def expect_text(got: str, want: str) -> None:
    """The reply text must be exactly ``want``."""
    expect(got == want, f"expected the reply {want!r}, got {got!r}")


def expect_done(got: str, want: str) -> None:
    """The turn must have ended with the stop reason / status ``want``."""
    expect(got == want, f"the turn ended with {got!r}, expected {want!r}")


def prepare(work: Path) -> None:
    """Create the file the scenario reads."""
    (work / NOTES).write_text(NOTES_TEXT, encoding="utf-8")


async def _server_exit(report: Report, server: Server) -> bool:
    async def check() -> str:
        expect(server.returncode == 0,
               f"the server exited with status {server.returncode} after {server.stop}")
        return f"pid {server.pid} exited with status 0 after {server.stop}"

    return await report.check("server shuts down cleanly", check)


# ------------------------------------------------------------------- ACP


class _CountingFileSystem(LocalFileSystem):
    """Local files for the agent, counting the requests it made."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.writes = 0

    async def read_text_file(self, session: ClientSession, request: s.ReadTextFileRequest) -> str:
        self.reads += 1
        return await super().read_text_file(session, request)

    async def write_text_file(self, session: ClientSession,
                              request: s.WriteTextFileRequest) -> None:
        self.writes += 1
        await super().write_text_file(session, request)


def _acp_text(updates: list[Any]) -> str:
    return "".join(u.content.text for u in updates
                   if isinstance(u, s.AgentMessageChunk) and isinstance(u.content, s.TextContent))


class AcpScenario:
    """The ACP half of the demo."""

    def __init__(self, context: DemoContext, cmd: list[str]) -> None:
        self.context = context
        self.cmd = cmd
        self.cwd = str(context.work.resolve())
        self.fs = _CountingFileSystem()
        self.permissions: list[str] = []
        self.session_id = ""
        self.client: ClientConnection | None = None

    def _connect(self, server: Server) -> ClientConnection:
        self.client = ClientConnection(server.stream, on_permission=self._permission,
                                       file_system=self.fs, name="demo acp")
        return self.client

    @property
    def _acp(self) -> ClientConnection:
        assert self.client is not None
        return self.client

    async def _permission(self, request: s.RequestPermissionRequest) -> str:
        option = option_of_kind(request, "allow_once")
        expect(option is not None, "the permission request offers no allow_once option")
        assert option is not None
        self.permissions.append(str(request.tool_call.title))
        return option.option_id

    async def run(self, report: Report) -> None:
        """Run every step; print the transcript into ``report``."""
        first: list[Step] = [
            ("initialize", self._initialize), ("session/new", self._new_session),
            ("echo", self._echo), ("slash commands advertised", self._commands),
            (f"/read {NOTES}", self._read), ("/write with approval", self._write),
            ("/plan", self._plan), ("/slow 100, cancelled midway", self._cancel),
        ]
        second: list[Step] = [
            ("restart: initialize", self._initialize), ("session/list", self._list_sessions),
            ("session/load replays the history", self._load),
        ]
        async with self.context.server(self.cmd) as server, self._connect(server):
            ok = await report.steps(first)
        if not (ok and await _server_exit(report, server)):
            report.skip([name for name, _ in second])
            return
        async with self.context.server(self.cmd) as server, self._connect(server):
            await report.steps(second)

    async def _initialize(self) -> str:
        info = await self._acp.initialize(timeout=self.context.timeout)
        agent = info.agent_info
        name = f"{agent.name} {agent.version}" if isinstance(agent, s.Implementation) else "?"
        return f"{name}, ACP protocol {info.protocol_version}"

    async def _new_session(self) -> str:
        self.session_id = (await self._acp.new_session(self.cwd)).session_id
        return f"session {self.session_id}"

    async def _turn(self, text: str) -> tuple[str, list[Any]]:
        async with self._acp.prompt(self.session_id, text) as turn:
            updates = await turn.collect()
        return turn.stop_reason or "", updates

    async def _echo(self) -> list[str]:
        stop, updates = await self._turn(ECHO)
        expect_text(_acp_text(updates), f"You said: {ECHO}")
        expect_done(stop, "end_turn")
        chunks = sum(isinstance(u, s.AgentMessageChunk) for u in updates)
        return [f"> {ECHO}", f"< You said: {ECHO}  ({chunks} chunks, {stop})"]

    async def _commands(self) -> str:
        names = [c.name for c in self._acp.sessions[self.session_id].available_commands]
        for name in ("read", "write", "plan", "slow"):
            expect(name in names, f"/{name} was not advertised")
        return " ".join(f"/{n}" for n in names)

    async def _read(self) -> list[str]:
        stop, updates = await self._turn(f"/read {NOTES}")
        expect_done(stop, "end_turn")
        calls = [u for u in updates if isinstance(u, s.ToolCall)]
        expect(len(calls) == 1 and calls[0].kind == "read", "expected one tool call of kind read")
        done = [u for u in updates if isinstance(u, s.ToolCallProgress)
                and u.status == "completed"]
        expect(bool(done), "the read tool call never completed")
        expect_text(_acp_text(updates), f"Read 3 lines from {NOTES}")
        expect(self.fs.reads >= 1, "the agent did not read through the client")
        return [f"tool call '{calls[0].title}' completed; read through fs/read_text_file",
                f"< Read 3 lines from {NOTES}"]

    async def _write(self) -> list[str]:
        asked = len(self.permissions)
        stop, updates = await self._turn(f"/write out.txt {WRITTEN}")
        expect_done(stop, "end_turn")
        expect(len(self.permissions) == asked + 1, "no permission was requested")
        expect_text(_acp_text(updates), "Wrote out.txt")
        written = (self.context.work / "out.txt").read_text(encoding="utf-8")
        expect(written == WRITTEN, f"out.txt holds {written!r}")
        diffs = [c for u in updates if isinstance(u, s.ToolCallProgress)
                 and isinstance(u.content, list) for c in u.content if isinstance(c, s.Diff)]
        expect(bool(diffs), "the write tool call carries no diff")
        return [f"permission asked for '{self.permissions[-1]}', answered allow_once",
                "< Wrote out.txt (file checked, diff shown)"]

    async def _plan(self) -> list[str]:
        stop, updates = await self._turn("/plan")
        expect_done(stop, "end_turn")
        plans = [u for u in updates if isinstance(u, s.Plan)]
        expect(len(plans) >= 2, "expected several plan updates")
        final = plans[-1].entries
        expect(len(final) == 3 and all(e.status == "completed" for e in final),
               "the last plan is not three completed entries")
        expect_text(_acp_text(updates), "Plan done")
        return [f"{len(plans)} plan updates, ending with all {len(final)} entries completed",
                "< Plan done"]

    async def _cancel(self) -> str:
        ticks = 0
        async with self._acp.prompt(self.session_id, "/slow 100") as turn:
            async for update in turn:
                if isinstance(update, s.AgentMessageChunk):
                    ticks += 1
                    if ticks == TICKS_BEFORE_CANCEL:
                        await self._acp.cancel(self.session_id)
        expect(turn.stop_reason == "cancelled",
               f"stop reason {turn.stop_reason!r}, expected cancelled")
        expect(ticks < 100, "the turn ran to the end")
        return f"cancelled after {ticks} of 100 ticks: stop reason cancelled"

    async def _list_sessions(self) -> str:
        listing = await self._acp.list_sessions(cwd=self.cwd)
        found = [i for i in listing.sessions if i.session_id == self.session_id]
        expect(bool(found), f"session {self.session_id} is not listed")
        expect(found[0].title == ECHO, f"title {found[0].title!r}, expected {ECHO!r}")
        return f"{len(listing.sessions)} session(s); ours titled {ECHO!r}"

    async def _load(self) -> str:
        loaded = await self._acp.load_session(self.session_id, self.cwd)
        history = loaded.history
        users = "".join(u.content.text for u in history if isinstance(u, s.UserMessageChunk)
                        and isinstance(u.content, s.TextContent))
        expect(ECHO in users, "the replay lacks the first prompt")
        expect(f"You said: {ECHO}" in _acp_text(history), "the replay lacks the echo reply")
        return f"{len(history)} updates replayed, from '> {ECHO}' on"


# ------------------------------------------------------------------ Wire


def _wire_text(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, m.TextPart))


_ADD = ExternalTool(
    name="add", description="Add two numbers",
    parameters={"type": "object", "properties": {"a": {"type": "number"},
                                                 "b": {"type": "number"}},
                "required": ["a", "b"]},
)


class WireScenario:
    """The Wire half of the demo."""

    def __init__(self, context: DemoContext, cmd: list[str]) -> None:
        self.context = context
        self.session_id = f"demo-{uuid.uuid4().hex[:12]}"
        self.work = str(context.work.resolve())
        self.cmd = [*cmd, "--session", self.session_id, "--work-dir", self.work]
        if context.ws:  # one server, many sessions: the session is chosen per connection
            self.cmd = [*cmd, "--work-dir", self.work]
        self.query = f"&session={self.session_id}" if context.ws else ""
        self.events: list[WireEvent] = []
        self.approvals: list[str] = []
        self.tool_calls: list[Any] = []
        self.client: WireClient | None = None
        self.ticks = anyio.Event()

    def _connect(self, server: Server) -> WireClient:
        self.client = WireClient(
            server.stream, external_tools={"add": (_ADD, self._add)},
            on_approval=self._approval, on_event=self._event, event_buffer=0,
            initialize_timeout=self.context.timeout, name="demo wire",
        )
        return self.client

    @property
    def _wire(self) -> WireClient:
        assert self.client is not None
        return self.client

    async def _event(self, event: WireEvent) -> None:
        self.events.append(event)
        ticks = [e for e in self.events if isinstance(e, m.TextPart) and e.text.startswith("tick")]
        if len(ticks) >= TICKS_BEFORE_CANCEL:
            self.ticks.set()

    async def _approval(self, request: m.ApprovalRequest) -> m.ApprovalKind:
        self.approvals.append(request.description)
        return "approve"

    async def _add(self, arguments: Any) -> str:
        self.tool_calls.append(arguments)
        total = arguments["a"] + arguments["b"]
        return str(int(total) if float(total).is_integer() else total)

    async def run(self, report: Report) -> None:
        """Run every step; print the transcript into ``report``."""
        first: list[Step] = [
            ("initialize with an external tool", self._initialize), ("echo", self._echo),
            (f"/read {NOTES}", self._read), ("/write with approval", self._write),
            ("/plan", self._plan), ("/slow 100, cancelled midway", self._cancel),
            ("/tool add (external tool)", self._tool),
        ]
        second: list[Step] = [
            ("restart with --session: initialize", self._initialize),
            ("replay of the history", self._replay),
        ]
        async with self.context.server(self.cmd, self.query) as server, self._connect(server):
            ok = await report.steps(first)
        if not (ok and await _server_exit(report, server)):
            report.skip([name for name, _ in second])
            return
        async with self.context.server(self.cmd, self.query) as server, self._connect(server):
            await report.steps(second)

    async def _initialize(self) -> list[str]:
        result = await self._wire.initialize()
        expect(result is not None, "no answer to initialize (the client fell back to v1)")
        assert result is not None
        tools = result.external_tools
        accepted = tools.accepted if isinstance(tools, ExternalToolsResult) else []
        expect("add" in accepted, "the external tool 'add' was not accepted")
        return [f"{result.server.name} {result.server.version}, Wire protocol "
                f"{result.protocol_version}, session {self.session_id}",
                f"{len(result.slash_commands)} slash commands; external tool 'add' accepted"]

    async def _turn(self, text: str) -> tuple[str, list[WireEvent]]:
        self.events = []
        result = await self._wire.prompt(text)
        return result.status, self.events

    async def _echo(self) -> list[str]:
        status, events = await self._turn(ECHO)
        expect_text(_wire_text(events), f"You said: {ECHO}")
        expect_done(status, "finished")
        expect(isinstance(events[-1], m.TurnEnd), "the turn did not end with TurnEnd")
        return [f"> {ECHO}", f"< You said: {ECHO}  ({status})"]

    async def _read(self) -> list[str]:
        status, events = await self._turn(f"/read {NOTES}")
        expect_done(status, "finished")
        calls = [e for e in events if isinstance(e, m.ToolCall)]
        expect(len(calls) == 1 and calls[0].function.name == "read",
               "expected one ToolCall of 'read'")
        results = [e for e in events if isinstance(e, m.ToolResult)]
        expect(bool(results) and not results[-1].return_value.is_error, "the read failed")
        expect_text(_wire_text(events), f"Read 3 lines from {NOTES}")
        return ["ToolCall 'read' -> ToolResult ok", f"< Read 3 lines from {NOTES}"]

    async def _write(self) -> list[str]:
        asked = len(self.approvals)
        status, events = await self._turn(f"/write out-wire.txt {WRITTEN}")
        expect_done(status, "finished")
        expect(len(self.approvals) == asked + 1, "no approval was requested")
        expect_text(_wire_text(events), "Wrote out-wire.txt")
        written = (self.context.work / "out-wire.txt").read_text(encoding="utf-8")
        expect(written == WRITTEN, f"out-wire.txt holds {written!r}")
        return [f"ApprovalRequest '{self.approvals[-1]}' approved",
                "< Wrote out-wire.txt (file checked)"]

    async def _plan(self) -> list[str]:
        status, events = await self._turn("/plan")
        expect_done(status, "finished")
        todos = [b for e in events if isinstance(e, m.ToolResult)
                 for b in e.return_value.display if isinstance(b, d.TodoDisplayBlock)]
        expect(len(todos) >= 2, "expected several todo lists")
        final = todos[-1].items
        expect(len(final) == 3 and all(i.status == "done" for i in final),
               "the last todo list is not three done items")
        expect_text(_wire_text(events), "Plan done")
        return [f"{len(todos)} SetTodoList results, ending with all {len(final)} items done",
                "< Plan done"]

    async def _cancel(self) -> str:
        self.events = []
        self.ticks = anyio.Event()
        statuses: list[str] = []

        async def prompt() -> None:
            statuses.append((await self._wire.prompt("/slow 100")).status)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await self.ticks.wait()
            await self._wire.cancel()
        ticks = sum(isinstance(e, m.TextPart) for e in self.events)
        expect(statuses == ["cancelled"], f"status {statuses}, expected cancelled")
        expect(any(isinstance(e, m.StepInterrupted) for e in self.events),
               "no StepInterrupted event")
        return f"cancelled after {ticks} of 100 ticks: status cancelled, StepInterrupted sent"

    async def _tool(self) -> list[str]:
        calls = len(self.tool_calls)
        status, events = await self._turn('/tool add {"a": 2, "b": 3}')
        expect_done(status, "finished")
        expect(len(self.tool_calls) == calls + 1, "the external tool was not called")
        expect_text(_wire_text(events), "Tool add returned: 5")
        return ["ToolCallRequest 'add' {a: 2, b: 3} answered by this client: 5",
                "< Tool add returned: 5"]

    async def _replay(self) -> list[str]:
        self.events = []
        result = await self._wire.replay()
        expect(result.status == "finished", f"replay status {result.status!r}")
        begins = [e for e in self.events if isinstance(e, m.TurnBegin)]
        expect(bool(begins) and begins[0].user_input == ECHO,
               "the replay does not start with the first prompt")
        expect(f"You said: {ECHO}" in _wire_text(self.events), "the replay lacks the echo")
        return [f"{result.events} events replayed ({len(begins)} turns), "
                f"from '> {ECHO}' on"]
