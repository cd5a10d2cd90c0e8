"""The demo agent end to end: WireClient <-> WireServer over memory, websocket, subprocess."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.display import DiffDisplayBlock, TodoDisplayBlock
from wireproto.adapters.wire.methods import ExternalTool, PromptResult
from wireproto.agent.demo import DemoAgent
from wireproto.errors import RpcError

pytestmark = pytest.mark.anyio

KINDS = ["memory", "websocket", "subprocess"]
SERVER_SCRIPT = Path(__file__).resolve().parents[2] / "helpers" / "wire_server.py"
OpenWire = Callable[..., AbstractAsyncContextManager[Any]]


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, m.TextPart))


def of_type(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def assert_turn_shape(events: list[Any], user_input: Any, turns: int = 1) -> None:
    """TurnBegin, StepBegin first; TurnEnd last (the response came after it)."""
    assert events[0] == m.TurnBegin(user_input=user_input)
    assert events[1] == m.StepBegin(n=1)
    assert isinstance(events[-1], m.TurnEnd)
    assert len(of_type(events, m.TurnBegin)) == len(of_type(events, m.TurnEnd)) == turns


class Approver:
    """Answers approvals from a list of decisions, recording the requests."""

    def __init__(self, *answers: m.ApprovalKind) -> None:
        self.answers = list(answers)
        self.requests: list[m.ApprovalRequest] = []

    async def __call__(self, request: m.ApprovalRequest) -> m.ApprovalKind:
        self.requests.append(request)
        return self.answers.pop(0)


class Ticks:
    """An ``on_event`` callback that signals the first ``tick 1`` chunk."""

    def __init__(self) -> None:
        self.first = anyio.Event()

    async def __call__(self, event: Any) -> None:
        if isinstance(event, m.TextPart) and event.text == "tick 1":
            self.first.set()


@pytest.mark.parametrize("kind", KINDS)
async def test_initialize_and_echo(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind) as served:
        client = served.client
        assert client.initialized and not client.legacy
        assert client.protocol_version == "1.10"
        assert client.server_info is not None and client.server_info.name == "wireproto-demo"
        assert [(c.name, c.description, c.aliases) for c in client.slash_commands] == [
            (c.name, c.description, list(c.aliases)) for c in DemoAgent.commands
        ]
        assert client.hooks_info is not None and client.hooks_info.supported_events == []
        assert client.external_tools_result is None  # no tools offered: field absent
        assert await client.prompt("hello world") == PromptResult(status="finished")
        events = client.take_events()
        assert_turn_shape(events, "hello world")
        assert text_of(events) == "You said: hello world"
        assert len(of_type(events, m.TextPart)) >= 2  # streamed in several chunks


@pytest.mark.parametrize("kind", KINDS)
async def test_read(open_wire: OpenWire, kind: str, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("one\ntwo\nthree\n")
    async with open_wire(kind) as served:
        client = served.client
        await client.prompt("/read notes.txt")
        events = client.take_events()
        (call,) = of_type(events, m.ToolCall)
        assert call.function.name == "read"
        assert call.function.arguments == '{"path":"notes.txt"}'
        (result,) = of_type(events, m.ToolResult)
        assert result.tool_call_id == call.id
        assert not result.return_value.is_error
        assert result.return_value.output == "one\ntwo\nthree\n"
        assert text_of(events) == "Read 3 lines from notes.txt"

        await client.prompt("/read missing.txt")
        events = client.take_events()
        (result,) = of_type(events, m.ToolResult)
        assert result.return_value.is_error
        assert text_of(events) == "Cannot read missing.txt: No such file or directory"


@pytest.mark.parametrize("kind", KINDS)
async def test_write_approve_reject_and_for_session(
    open_wire: OpenWire, kind: str, workdir: Path
) -> None:
    approver = Approver("approve", "reject", "approve_for_session")
    async with open_wire(kind, on_approval=approver) as served:
        client = served.client
        await client.prompt("/write a.txt first")
        events = client.take_events()
        assert (workdir / "a.txt").read_text() == "first"
        (request,) = approver.requests
        assert request.sender == "write" and request.source_kind == "foreground_turn"
        (call,) = of_type(events, m.ToolCall)
        assert request.tool_call_id == call.id
        (preview,) = request.display
        assert isinstance(preview, DiffDisplayBlock)
        assert preview.old_text == "" and preview.new_text == "first"  # new file: "" not null
        assert of_type(events, m.ApprovalResponse) == [
            m.ApprovalResponse(request_id=request.id, response="approve")
        ]
        (result,) = of_type(events, m.ToolResult)
        (diff,) = result.return_value.display
        assert isinstance(diff, DiffDisplayBlock) and diff.old_text == ""
        assert text_of(events) == "Wrote a.txt"

        await client.prompt("/write b.txt second")
        events = client.take_events()
        assert not (workdir / "b.txt").exists()
        assert of_type(events, m.ApprovalResponse)[0].response == "reject"
        assert of_type(events, m.ToolResult)[0].return_value.is_error
        assert text_of(events) == "Write to b.txt rejected"

        await client.prompt("/write a.txt third")
        assert of_type(client.take_events(), m.ApprovalResponse)[0].response == (
            "approve_for_session"
        )
        await client.prompt("/write c.txt fourth")  # remembered: no new request
        events = client.take_events()
        assert len(approver.requests) == 3
        assert of_type(events, m.ApprovalResponse) == []
        assert (workdir / "a.txt").read_text() == "third"
        assert (workdir / "c.txt").read_text() == "fourth"
        (result,) = of_type(events, m.ToolResult)
        (diff,) = result.return_value.display
        assert isinstance(diff, DiffDisplayBlock) and diff.old_text == ""


@pytest.mark.parametrize("kind", KINDS)
async def test_external_tool(open_wire: OpenWire, kind: str) -> None:
    calls: list[Any] = []

    async def lookup(arguments: Any) -> m.ToolReturnValue:
        calls.append(arguments)
        return m.ToolReturnValue.ok(f"found {arguments['q']}", brief="Looked up")

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = {
        "lookup": (ExternalTool(name="lookup", description="Look up", parameters=schema), lookup),
        "write": (ExternalTool(name="write", description="mine", parameters={}), lookup),
        "broken": (ExternalTool(name="broken", description="", parameters={"type": "nope"}),
                   lookup),
    }
    async with open_wire(kind, external_tools=tools) as served:
        client = served.client
        result = client.external_tools_result
        assert result is not None and result.accepted == ["lookup"]
        assert [(r.name, r.reason) for r in result.rejected] == [
            ("write", "conflicts with builtin tool"),
            ("broken", "'nope' is not valid under any of the given schemas"),
        ]
        await client.prompt('/tool lookup {"q": "x"}')
        events = client.take_events()
        assert calls == [{"q": "x"}]
        (call,) = of_type(events, m.ToolCall)
        assert call.function.name == "lookup" and call.function.arguments == '{"q":"x"}'
        (tool_result,) = of_type(events, m.ToolResult)
        assert tool_result.tool_call_id == call.id
        assert tool_result.return_value == m.ToolReturnValue.ok("found x", brief="Looked up")
        assert text_of(events) == "Tool lookup returned: found x"

        await client.prompt('/tool lookup {"q": 1}')  # schema-invalid: never sent
        events = client.take_events()
        assert calls == [{"q": "x"}]
        assert text_of(events).startswith("Tool lookup failed: Invalid arguments: 1 is not of")
        assert of_type(events, m.ToolResult)[0].return_value.is_error

        await client.prompt("/tool broken {}")  # rejected at initialize
        assert text_of(client.take_events()) == "Tool broken failed: Tool broken is not available"


@pytest.mark.parametrize("kind", KINDS)
async def test_slow_cancel_and_busy(open_wire: OpenWire, kind: str) -> None:
    ticks = Ticks()
    async with open_wire(kind, on_event=ticks) as served:
        client = served.client
        results: list[PromptResult] = []

        async def run() -> None:
            results.append(await client.prompt("/slow 1000000"))  # (runs until cancelled)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await ticks.first.wait()
            with pytest.raises(RpcError) as busy:
                await client.prompt("again")
            assert (busy.value.code, busy.value.message) == (
                -32000, "An agent turn is already in progress"
            )
            assert (await client.steer("more")).status == "steered"
            await client.cancel()
        assert results == [PromptResult(status="cancelled")]
        events = client.take_events()
        assert_turn_shape(events, "/slow 1000000")
        assert events[-2:] == [m.StepInterrupted(), m.TurnEnd()]
        assert len(of_type(events, m.TextPart)) >= 1
        for method in (client.cancel(), client.steer("late")):
            with pytest.raises(RpcError) as idle:
                await method
            assert (idle.value.code, idle.value.message) == (-32000, "No agent turn is in progress")
        # the connection is still fine, and the first turn was not disturbed by the -32000
        assert (await client.prompt("/slow 2")).status == "finished"
        assert text_of(client.take_events()) == "tick 1tick 2"


@pytest.mark.parametrize("kind", KINDS)
async def test_steer_reaches_the_turn(open_wire: OpenWire, kind: str) -> None:
    ticks, steered = Ticks(), anyio.Event()

    async def on_event(event: Any) -> None:
        await ticks(event)
        if isinstance(event, m.SteerInput):
            steered.set()

    async with open_wire(kind, on_event=on_event) as served:
        client = served.client
        async with anyio.create_task_group() as tg:
            tg.start_soon(awaited, client.prompt("/slow 1000000"))  # (runs until cancelled)
            await ticks.first.wait()
            await client.steer("go faster")
            await steered.wait()  # the turn took it
            await client.cancel()
        events = client.take_events()
        assert of_type(events, m.SteerInput) == [m.SteerInput(user_input="go faster")]
        assert isinstance(events[-1], m.TurnEnd)


@pytest.mark.parametrize("kind", KINDS)
async def test_replay_after_restart(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind, session_id="sess-replay") as served:
        await served.client.prompt("remember me")
        live = served.client.take_events()
        await served.client.prompt("/plan")
        live += served.client.take_events()
    async with open_wire(kind, session_id="sess-replay") as served:  # a new server
        result = await served.client.replay()
        replayed = served.client.take_events()
    assert result.status == "finished" and result.requests == 0
    assert result.events == len(replayed)
    assert_turn_shape(replayed, "remember me", turns=2)
    assert text_of(replayed) == text_of(live) == "You said: remember mePlan done"
    todos = [r.return_value.display[0] for r in of_type(replayed, m.ToolResult)]
    assert len(todos) == 4 and all(isinstance(t, TodoDisplayBlock) for t in todos)
    assert [i.status for i in todos[-1].items] == ["done", "done", "done"]


@pytest.mark.parametrize("kind", ["memory", "subprocess"])
async def test_old_client_without_initialize(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind, handshake=False) as served:
        client = served.client
        assert not client.initialized and client.protocol_version is None
        assert (await client.prompt("hi")).status == "finished"
        assert text_of(client.take_events()) == "You said: hi"
        await client.prompt("/tool lookup {}")  # v1: no external tools
        assert text_of(client.take_events()) == "Tool lookup failed: Tool lookup is not available"
        if kind == "memory":
            assert not served.server.initialized


async def test_set_plan_mode(open_wire: OpenWire) -> None:
    async with open_wire() as served:
        result = await served.client.set_plan_mode(True)
        assert (result.status, result.plan_mode) == ("ok", True)
        assert served.client.take_events() == [m.StatusUpdate(plan_mode=True)]
        assert served.server.session.plan_mode is True


async def test_sigterm_mid_turn_ends_the_turn_cleanly(
    anyio_backend_name: str, workdir: Path
) -> None:
    import signal

    from wireproto.adapters.wire import WireClient
    from wireproto.transports.subprocess import open_subprocess

    cmd = [sys.executable, str(SERVER_SCRIPT), anyio_backend_name, "--work-dir", str(workdir)]
    ticks = Ticks()
    async with open_subprocess(cmd, stderr="log") as stream:
        async with WireClient(stream, on_event=ticks) as client:
            await client.initialize()
            results: list[PromptResult] = []

            async def run() -> None:
                results.append(await client.prompt("/slow 1000"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await ticks.first.wait()
                stream.process.send_signal(signal.SIGTERM)
            assert results == [PromptResult(status="cancelled")]
            assert client.take_events()[-2:] == [m.StepInterrupted(), m.TurnEnd()]
            await client.wait_closed()
        assert await stream.wait() == 0


async def test_the_other_commands_as_wire_shows_them(open_wire: OpenWire) -> None:
    async with open_wire() as served:
        client = served.client
        await client.prompt("/think deep thoughts")
        events = client.take_events()
        assert "".join(e.think for e in of_type(events, m.ThinkPart)) == "deep thoughts"
        assert text_of(events) == "Done thinking"
        await client.prompt("/big 70000")
        (big,) = of_type(client.take_events(), m.TextPart)
        assert big.text == "x" * 70000
        await client.prompt("/help")
        assert text_of(client.take_events()).splitlines() == [
            f"/{c.name} - {c.description}" for c in DemoAgent.commands
        ]
        await client.prompt("/mcp")
        assert text_of(client.take_events()) == "No MCP servers"
        await client.prompt("/nope x")
        assert text_of(client.take_events()) == 'Unknown slash command "/nope".'
        await client.prompt("/clear")
        assert text_of(client.take_events()) == "History cleared"
        await client.prompt("after")
        client.take_events()
        result = await client.replay()
        replayed = client.take_events()
    # only what came after the clear, and every TurnEnd has its TurnBegin
    assert text_of(replayed) == "History clearedYou said: after"
    assert of_type(replayed, m.ThinkPart) == []
    assert [type(e) for e in replayed if isinstance(e, (m.TurnBegin, m.TurnEnd))] == [
        m.TurnBegin, m.TurnEnd,
    ]
    assert (result.status, result.events) == ("finished", len(replayed))


async def awaited(turn: Any) -> None:
    """Run an awaitable prompt turn to its end (for ``start_soon``)."""
    await turn
