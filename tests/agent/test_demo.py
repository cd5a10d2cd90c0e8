"""The demo agent driven through the API directly (no protocol): every command."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from wireproto.agent.api import (
    BooleanOption,
    ClientCapabilities,
    Decision,
    ExternalTool,
    McpServer,
    SelectOption,
    Session,
    ToolOutcome,
)
from wireproto.agent.content import ContentBlock, Diff, Text
from wireproto.agent.demo import BIG_LIMIT, COMMANDS, DemoAgent
from wireproto.agent.events import (
    AgentMessageChunk,
    Event,
    Location,
    PlanUpdated,
    SteerReceived,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolKind,
    ToolStatus,
    TurnEnded,
)
from wireproto.agent.runtime import Runtime
from wireproto.errors import AuthRequired, InvalidArgument, NotFound
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio


async def say(runtime: Runtime, session: Session, text: str) -> str:
    """Run one turn and return the agent's reply text."""
    channel = session.channel
    assert isinstance(channel, RecordingChannel)
    channel.clear()
    stop = await runtime.prompt(session, [Text(text)])
    assert stop.value == "end_turn"
    return channel.text(session.id)


def chunks(events: list[Event]) -> list[AgentMessageChunk]:
    return [e for e in events if isinstance(e, AgentMessageChunk)]


def tool_events(events: list[Event]) -> list[Event]:
    return [e for e in events if isinstance(e, (ToolCallStarted, ToolCallUpdated))]


@pytest.fixture
async def session(runtime: Runtime, channel: RecordingChannel, workdir: Path) -> Session:
    return await runtime.new_session(channel, str(workdir))


# -------------------------------------------------------------------- declarations


def test_declarations() -> None:
    agent = DemoAgent()
    assert [c.name for c in agent.commands] == [
        "help", "read", "write", "plan", "think", "slow", "big", "tool", "mcp", "clear",
        "ask", "title", "retry", "subagent",
    ]
    assert all(c.description for c in agent.commands)
    assert list(agent.tools) == ["read", "write", "SetTodoList"]
    assert list(agent.hook_events) == []
    assert [(m.id, m.name) for m in agent.auth_methods] == [("login", "Log in")]
    assert agent.require_auth is False
    assert DemoAgent(require_auth=True).require_auth is True


def test_options_declared() -> None:
    options = {o.id: o for o in DemoAgent.options}
    mode, model, thinking = options["mode"], options["model"], options["thinking"]
    assert isinstance(mode, SelectOption) and isinstance(model, SelectOption)
    assert (mode.category, mode.default, [c.value for c in mode.choices]) == (
        "mode", "ask", ["ask", "code"],
    )
    assert (model.category, model.default, [c.value for c in model.choices]) == (
        "model", "demo-small", ["demo-small", "demo-large"],
    )
    assert isinstance(thinking, BooleanOption)
    assert (thinking.category, thinking.default) == ("thought_level", False)
    assert (thinking.off_value, thinking.on_value) == ("off", "on")


# -------------------------------------------------------------------------- echo


async def test_plain_prompt_streams_several_chunks_of_one_message(
    runtime: Runtime, session: Session, channel: RecordingChannel
) -> None:
    assert await say(runtime, session, "hello there, agent") == "You said: hello there, agent"
    first = chunks(channel.events(session.id))
    assert len(first) >= 2
    assert len({c.message_id for c in first}) == 1
    assert channel.events(session.id)[-1] == TurnEnded(stop_reason="end_turn")  # type: ignore[arg-type]

    assert await say(runtime, session, "x") == "You said: x"
    second = chunks(channel.events(session.id))
    assert len(second) >= 2
    assert second[0].message_id != first[0].message_id


async def test_empty_prompt_and_leading_space_are_echoed(
    runtime: Runtime, session: Session
) -> None:
    assert await say(runtime, session, "") == "You said: "
    assert await say(runtime, session, " /help") == "You said:  /help"


# ------------------------------------------------------------------------- /help


async def test_help_lists_every_command_with_its_description(
    runtime: Runtime, session: Session
) -> None:
    reply = await say(runtime, session, "/help")
    assert reply.splitlines() == [f"/{c.name} - {c.description}" for c, _ in COMMANDS]


# ------------------------------------------------------------------------- /read


async def test_read_local_file(runtime: Runtime, session: Session, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("one\ntwo\r\nthree\n", encoding="utf-8")
    channel = session.channel
    assert isinstance(channel, RecordingChannel)
    assert await say(runtime, session, "/read notes.txt") == "Read 3 lines from notes.txt"
    started, done = tool_events(channel.events(session.id))
    assert isinstance(started, ToolCallStarted)
    assert (started.name, started.kind, started.status) == (
        "read", ToolKind.READ, ToolStatus.IN_PROGRESS,
    )
    assert started.locations == [Location(str(workdir / "notes.txt"))]
    assert isinstance(done, ToolCallUpdated)
    assert (done.id, done.status) == (started.id, ToolStatus.COMPLETED)
    assert done.content == [Text("one\ntwo\r\nthree\n")]
    assert channel.calls == []  # the client cannot read files: read locally


async def test_read_through_client(runtime: Runtime, workdir: Path) -> None:
    path = str(workdir / "sub" / "a.py")
    channel = RecordingChannel(ClientCapabilities(read_text_file=True), files={path: "a\nb"})
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, "/read sub/a.py") == "Read 2 lines from sub/a.py"
    assert [(c.method, c.args, c.state) for c in channel.calls] == [
        ("read_text_file", (path,), "answered"),
    ]
    assert tool_events(channel.events())[-1].content == [Text("a\nb")]  # type: ignore[union-attr]


async def test_read_failures(runtime: Runtime, session: Session, workdir: Path) -> None:
    channel = session.channel
    assert isinstance(channel, RecordingChannel)
    reply = await say(runtime, session, "/read missing.txt")
    assert reply == "Cannot read missing.txt: No such file or directory"
    failed = tool_events(channel.events())[-1]
    assert isinstance(failed, ToolCallUpdated) and failed.status is ToolStatus.FAILED
    assert failed.content == [Text("No such file or directory")]

    (workdir / "dir").mkdir()
    assert await say(runtime, session, "/read dir") == "Cannot read dir: Is a directory"
    reply = await say(runtime, session, "/read ../outside.txt")
    assert reply == "Cannot read ../outside.txt: ../outside.txt is outside the session's roots"

    client = RecordingChannel(ClientCapabilities(read_text_file=True))
    remote = await runtime.new_session(client, str(workdir))
    reply = await say(runtime, remote, "/read gone.txt")
    assert reply == "Cannot read gone.txt: Resource not found"
    assert await say(runtime, session, "/read") == "Usage: /read PATH"


async def test_read_inside_extra_root(runtime: Runtime, workdir: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "e.txt").write_text("x\ny\nz", encoding="utf-8")
    session = await runtime.new_session(RecordingChannel(), str(workdir), roots=[str(extra)])
    assert await say(runtime, session, f"/read {extra / 'e.txt'}") == (
        f"Read 3 lines from {extra / 'e.txt'}"
    )


# ------------------------------------------------------------------------ /write


async def test_write_local_after_approval(
    runtime: Runtime, session: Session, channel: RecordingChannel, workdir: Path
) -> None:
    assert await say(runtime, session, "/write out.txt hello  world\nbye") == "Wrote out.txt"
    target = workdir / "out.txt"
    assert target.read_text(encoding="utf-8") == "hello  world\nbye"
    (approval,) = [c for c in channel.calls if c.method == "request_approval"]
    request = approval.args[0]
    assert request.display == (Diff(str(target), "hello  world\nbye", None),)
    events = tool_events(channel.events())
    started = events[0]
    assert isinstance(started, ToolCallStarted)
    assert (started.name, started.kind, started.status) == ("write", ToolKind.EDIT, "pending")
    assert started.locations == [Location(str(target))]
    assert request.tool_call_id == started.id
    done = events[-1]
    assert isinstance(done, ToolCallUpdated) and done.status is ToolStatus.COMPLETED
    assert done.content == [Diff(str(target), "hello  world\nbye", None)]

    assert await say(runtime, session, "/write out.txt new") == "Wrote out.txt"
    done = tool_events(channel.events())[-1]
    assert done.content == [Diff(str(target), "new", "hello  world\nbye")]  # type: ignore[union-attr]


async def test_write_rejected(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel(decision=Decision.REJECT)
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, "/write no.txt text") == "Write to no.txt rejected"
    assert not (workdir / "no.txt").exists()
    done = tool_events(channel.events())[-1]
    assert isinstance(done, ToolCallUpdated) and done.status is ToolStatus.FAILED


async def test_write_allow_for_session_is_remembered(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel(decision=Decision.ALLOW_SESSION)
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, "/write a.txt 1") == "Wrote a.txt"
    channel.decision = Decision.REJECT  # would reject if asked again
    assert await say(runtime, session, "/write b.txt 2") == "Wrote b.txt"
    assert [c.method for c in channel.calls] == []  # channel.clear() ran before the turn
    assert (workdir / "b.txt").read_text(encoding="utf-8") == "2"
    other = await runtime.new_session(channel, str(workdir))  # not another session
    assert await say(runtime, other, "/write c.txt 3") == "Write to c.txt rejected"


async def test_write_allow_once_asks_again(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel(decision=Decision.ALLOW_ONCE)
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, "/write a.txt 1") == "Wrote a.txt"
    channel.decision = Decision.REJECT
    assert await say(runtime, session, "/write a.txt 2") == "Write to a.txt rejected"


async def test_write_through_client(runtime: Runtime, workdir: Path) -> None:
    caps = ClientCapabilities(read_text_file=True, write_text_file=True)
    path = str(workdir / "c.txt")
    channel = RecordingChannel(caps, files={path: "old"})
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, "/write c.txt new text") == "Wrote c.txt"
    assert channel.files[path] == "new text"
    assert not (workdir / "c.txt").exists()
    done = tool_events(channel.events())[-1]
    assert done.content == [Diff(path, "new text", "old")]  # type: ignore[union-attr]
    assert ("write_text_file", (path, "new text")) in [(c.method, c.args) for c in channel.calls]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
async def test_a_local_fifo_is_refused_not_waited_on(
    runtime: Runtime, session: Session, workdir: Path
) -> None:
    os.mkfifo(workdir / "pipe")
    reason = "not a regular file (a FIFO, device or socket); only regular files can be read or "
    assert await say(runtime, session, "/read pipe") == f"Cannot read pipe: {reason}written"
    assert await say(runtime, session, "/write pipe x") == f"Cannot write pipe: {reason}written"


async def test_write_usage_and_outside_roots(runtime: Runtime, session: Session) -> None:
    assert await say(runtime, session, "/write") == "Usage: /write PATH TEXT"
    reply = await say(runtime, session, "/write ../x.txt data")
    assert reply == "Cannot write ../x.txt: ../x.txt is outside the session's roots"


# ------------------------------------------------------------------------- /plan


async def test_plan(runtime: Runtime, session: Session, channel: RecordingChannel) -> None:
    assert await say(runtime, session, "/plan") == "Plan done"
    plans = [e for e in channel.events() if isinstance(e, PlanUpdated)]
    assert [[entry.status for entry in p.entries] for p in plans] == [
        ["pending", "pending", "pending"],
        ["completed", "pending", "pending"],
        ["completed", "completed", "pending"],
        ["completed", "completed", "completed"],
    ]
    assert len({tuple(entry.content for entry in p.entries) for p in plans}) == 1


# ------------------------------------------------------------------------ /think


async def test_think(runtime: Runtime, session: Session, channel: RecordingChannel) -> None:
    assert await say(runtime, session, "/think deep thoughts here") == "Done thinking"
    thoughts = [e for e in channel.events() if isinstance(e, ThoughtChunk)]
    assert "".join(t.text for t in thoughts) == "deep thoughts here"
    assert len(thoughts) >= 2 and len({t.message_id for t in thoughts}) == 1
    (reply,) = chunks(channel.events())
    assert reply.message_id != thoughts[0].message_id


# ------------------------------------------------------------------- /slow, /big


async def test_slow_ticks(runtime: Runtime, session: Session, channel: RecordingChannel) -> None:
    assert await say(runtime, session, "/slow 3") == "tick 1tick 2tick 3"
    ticks = chunks(channel.events())
    assert [t.text for t in ticks] == ["tick 1", "tick 2", "tick 3"]
    assert len({t.message_id for t in ticks}) == 1
    assert await say(runtime, session, "/slow 0") == ""
    assert await say(runtime, session, "/slow many") == "Usage: /slow N"


async def test_slow_takes_steering_between_ticks(runtime: Runtime, workdir: Path) -> None:
    steered: list[bool] = []

    class SteerAtTick1(RecordingChannel):  # (steers while "tick 1" is sent: before tick 2)
        async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
            await super().send(session, event, replay=replay)
            if isinstance(event, AgentMessageChunk) and event.text == "tick 1":
                steered.append(runtime.steer(session, [Text("go faster")]))

    channel = SteerAtTick1()
    session = await runtime.new_session(channel, str(workdir))
    content: list[ContentBlock] = [Text("/slow 3")]
    assert (await runtime.prompt(session, content)).value == "end_turn"
    assert steered == [True]
    kinds = [
        e.text if isinstance(e, AgentMessageChunk) else "steer"
        for e in channel.events()
        if isinstance(e, (AgentMessageChunk, SteerReceived))
    ]
    assert kinds == ["tick 1", "steer", "tick 2", "tick 3"]
    (steer,) = [e for e in channel.events() if isinstance(e, SteerReceived)]
    assert steer.content == [Text("go faster")]
    assert not runtime.steer(session, [Text("late")])  # no turn running


async def test_big(runtime: Runtime, session: Session, channel: RecordingChannel) -> None:
    assert await say(runtime, session, "/big 100000") == "x" * 100000
    assert len(chunks(channel.events())) == 1
    assert await say(runtime, session, "/big 0") == ""
    assert await say(runtime, session, "/big -1") == "Usage: /big N"
    for n in (BIG_LIMIT + 1, 10**20):  # (never allocated: it took MemoryError, -32603)
        assert await say(runtime, session, f"/big {n}") == "Usage: /big N"


# ------------------------------------------------------------------------- /tool


ECHO = ExternalTool(
    "echo", "Echo the arguments",
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)


def wire_channel(**tools: Any) -> RecordingChannel:
    caps = ClientCapabilities(external_tools={"echo": ECHO}, external_tools_supported=True)
    return RecordingChannel(caps, tools=tools)


async def test_tool_returns(runtime: Runtime, workdir: Path) -> None:
    channel = wire_channel(echo=lambda args: ToolOutcome(False, msgspec.json.encode(args).decode()))
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, '/tool echo {"n": 3}') == 'Tool echo returned: {"n":3}'
    (call,) = channel.calls
    assert (call.method, call.args[1], call.args[2], call.state) == (
        "call_tool", ECHO, {"n": 3}, "answered",
    )
    started = tool_events(channel.events())[0]
    assert isinstance(started, ToolCallStarted) and started.external
    assert call.args[0] == started.id


async def test_tool_failures(runtime: Runtime, workdir: Path) -> None:
    channel = wire_channel(echo=lambda args: ToolOutcome(True, "", "boom"))
    session = await runtime.new_session(channel, str(workdir))
    assert await say(runtime, session, '/tool echo {"n": 1}') == "Tool echo failed: boom"
    reply = await say(runtime, session, '/tool echo {"n": "one"}')
    assert reply.startswith("Tool echo failed: Invalid arguments: ")
    assert channel.calls == []  # invalid arguments never reach the client
    reply = await say(runtime, session, "/tool nope {}")
    assert reply == "Tool nope failed: Tool nope is not available"
    reply = await say(runtime, session, "/tool echo {not json")
    assert reply.startswith("Tool echo failed: invalid JSON arguments")
    assert await say(runtime, session, "/tool") == "Usage: /tool NAME JSON"



def test_a_tool_schema_with_a_reference_cycle_is_a_problem_of_the_call() -> None:
    gc.collect()  # (no garbage whose finalizer would run at the recursion limit)
    tool = ExternalTool("t", "d", {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})
    assert tool.arguments_problem({"n": 1}) == (
        "Invalid arguments: the tool's parameters schema cannot be applied: a reference cycle")
    assert ECHO.arguments_problem({"n": 1}) is None
    problem = ECHO.arguments_problem({"n": "one"})
    assert problem == "Invalid arguments: 'one' is not of type 'integer'"


async def test_tool_without_external_tool_support(runtime: Runtime, session: Session) -> None:
    reply = await say(runtime, session, '/tool echo {"n": 1}')
    assert reply == "External tools are not available over ACP"
    channel = session.channel
    assert isinstance(channel, RecordingChannel)
    assert channel.calls == [] and tool_events(channel.events()) == []


# -------------------------------------------------------------------- /mcp, /x


async def test_mcp(runtime: Runtime, session: Session, workdir: Path) -> None:
    assert await say(runtime, session, "/mcp") == "No MCP servers"
    servers = [
        McpServer("files", "stdio", command="mcp-files", env={"TOKEN": "secret"}),
        McpServer("web", "http", url="http://127.0.0.1:9/mcp"),
        McpServer("events", "sse", url="http://127.0.0.1:9/sse"),
    ]
    other = await runtime.new_session(RecordingChannel(), str(workdir), mcp_servers=servers)
    assert await say(runtime, other, "/mcp") == "files (stdio)\nweb (http)\nevents (sse)"
    assert "secret" not in repr(servers)


async def test_unknown_command(runtime: Runtime, session: Session) -> None:
    assert await say(runtime, session, "/x with args") == 'Unknown slash command "/x".'
    assert await say(runtime, session, "/") == 'Unknown slash command "/".'


# ------------------------------------------------------------------------ /clear


async def test_clear(runtime: Runtime, session: Session) -> None:
    await say(runtime, session, "before")
    assert await say(runtime, session, "/clear") == "History cleared"
    await say(runtime, session, "after")
    stored = runtime.store.load(session.id)
    texts = "".join(e.text for e in stored.events if isinstance(e, AgentMessageChunk))
    assert texts == "History clearedYou said: after"
    assert stored.title == "before"  # the title survives /clear


# -------------------------------------------------------------------------- auth


async def test_login_fails_without_a_token(home: Path) -> None:
    with pytest.raises(AuthRequired) as info:
        await DemoAgent().authenticate("login")
    assert info.value.message == "authentication required"


async def test_login_with_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREPROTO_TOKEN", "")
    with pytest.raises(AuthRequired):
        await DemoAgent().authenticate("login")
    monkeypatch.setenv("WIREPROTO_TOKEN", "s3cret")
    await DemoAgent().authenticate("login")


async def test_login_with_token_file(home: Path) -> None:
    await anyio.Path(home).mkdir(parents=True, exist_ok=True)
    await anyio.Path(home / "token").write_text("s3cret", encoding="utf-8")
    await DemoAgent(require_auth=True).authenticate("login")


async def test_unknown_auth_method(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREPROTO_TOKEN", "s3cret")
    with pytest.raises(InvalidArgument):
        await DemoAgent().authenticate("oauth")


# ---------------------------------------------------------------- session admin


async def test_delete_session_is_idempotent(
    runtime: Runtime, session: Session, workdir: Path
) -> None:
    await say(runtime, session, "bye")
    await runtime.delete_session(session.id)
    await runtime.delete_session(session.id)
    await runtime.delete_session("never-existed")
    assert runtime.list_sessions() == ([], None)
    with pytest.raises(NotFound):
        await runtime.open_session(RecordingChannel(), session.id)


@pytest.mark.parametrize("pattern", ["(", 123])
async def test_a_tool_schema_with_an_unusable_pattern_is_a_problem_of_the_call(
    pattern: object,
) -> None:
    tool = ExternalTool("t", "d", {"type": "object", "properties": {
        "a": {"type": "string", "pattern": pattern}}})
    problem = "Invalid arguments: the tool's parameters schema cannot be applied: "
    assert (tool.arguments_problem({"a": "x"}) or "").startswith(problem)
    assert (await tool.check_arguments({"a": "x"}) or "").startswith(problem)  # (in a child)



GREP = ExternalTool("grep", "Search", {"type": "object", "properties": {
    "pattern": {"type": "string"},  # (a property named so: no regular expression)
    "path": {"type": "string", "pattern": "^(a|aa)+$"},  # backtracks ~1.6**n steps
}})


async def test_a_clients_tool_pattern_is_checked_in_bounded_time(
    runtime: Runtime, workdir: Path
) -> None:
    # (a Wire client's schema, matched in the agent's process, held every session of it)
    from wireproto.agent._argcheck import has_patterns

    assert not has_patterns(ECHO.parameters) and has_patterns(GREP.parameters)
    assert not has_patterns({"properties": {"pattern": {"type": "string"}}})
    caps = ClientCapabilities(external_tools={"grep": GREP}, external_tools_supported=True)
    channel = RecordingChannel(caps, tools={"grep": lambda args: ToolOutcome(False, "found")})
    session = await runtime.new_session(channel, str(workdir))
    slow = "a" * 60 + "!"
    reply = await say(runtime, session, f'/tool grep {{"pattern": "x", "path": "{slow}"}}')
    assert reply == ("Tool grep failed: Invalid arguments: a pattern of the tool's parameters "
                     "schema takes longer than 2 s to check")
    reply = await say(runtime, session, '/tool grep {"pattern": "x", "path": "ab"}')
    assert reply == "Tool grep failed: Invalid arguments: 'ab' does not match '^(a|aa)+$'"
    assert channel.calls == []  # neither reached the client
    reply = await say(runtime, session, '/tool grep {"pattern": "x", "path": "aaa"}')
    assert reply == "Tool grep returned: found"
