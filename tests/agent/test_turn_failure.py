"""The runtime ends a failed turn properly (protocol-neutral, with a recording channel)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.agent import ClientFileError, ClientFileNotFound
from wireproto.agent.api import Agent, ClientCapabilities
from wireproto.agent.content import Text
from wireproto.agent.events import (
    AgentMessageChunk,
    PlanEntry,
    StopReason,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolKind,
    ToolStatus,
    TurnEnded,
)
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn
from wireproto.errors import AgentFailed, NotFound, RequestCancelled, RpcError
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio


class WaitsThenFails(Agent):
    """Asks for an approval and runs a hook; a sibling task raises meanwhile."""

    hook_events = ("PreToolUse",)

    async def prompt(self, turn: Turn) -> StopReason:
        call = await turn.start_tool("write", "Writing")
        channel = turn.session.channel
        assert isinstance(channel, RecordingChannel)

        async def fail_when_waiting() -> None:
            await channel.wait_until(lambda: len(channel.calls) == 2)
            raise OSError("disk full")

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn.request_approval, call, "write", "Write a file")
            tg.start_soon(turn.run_hook, "PreToolUse", "write", {})
            tg.start_soon(fail_when_waiting)
        return StopReason.END_TURN  # pragma: no cover


async def test_pending_approvals_and_hooks_are_resolved_and_the_turn_recorded(
    store: JsonlStore, workdir: Path
) -> None:
    runtime = Runtime(WaitsThenFails(), store)
    channel = RecordingChannel()
    channel.hold = {"request_approval", "run_hook"}
    session = await runtime.new_session(channel, str(workdir))
    with pytest.raises(AgentFailed) as info:
        await runtime.prompt(session, [Text("go")])
    error = info.value
    assert error.__cause__ is not None  # the original, for the log and debuggers
    assert error.data == {"type": "OSError", "message": "disk full"}  # out of the task group
    assert sorted(c.method for c in channel.calls) == ["request_approval", "run_hook"]
    assert {c.state for c in channel.calls} == {"cancelled"}
    live = channel.events(session.id)
    assert isinstance(live[-1], TurnEnded) and live[-1].error == "Internal error"
    failed = [e for e in live if isinstance(e, ToolCallUpdated)]
    assert [e.status for e in failed] == [ToolStatus.FAILED]
    stored = store.load(session.id).events
    assert stored[-1] == live[-1]
    assert session.turn is None  # the next prompt may run


class Returns(Agent):
    def __init__(self, value: object) -> None:
        self.value = value

    async def prompt(self, turn: Turn) -> StopReason:
        return self.value  # type: ignore[return-value]


async def test_a_stop_reason_value_is_accepted(store: JsonlStore, workdir: Path) -> None:
    runtime = Runtime(Returns("max_tokens"), store)
    session = await runtime.new_session(RecordingChannel(), str(workdir))
    assert await runtime.prompt(session, [Text("go")]) is StopReason.MAX_TOKENS


async def test_anything_else_fails_the_turn(store: JsonlStore, workdir: Path) -> None:
    runtime = Runtime(Returns({"done": True}), store)
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    with pytest.raises(AgentFailed) as info:
        await runtime.prompt(session, [Text("go")])
    message = "Returns.prompt() returned {'done': True}, not a StopReason"
    assert info.value.data == {"type": "TypeError", "message": message}
    assert store.load(session.id).events[-1] == TurnEnded(StopReason.END_TURN, "Internal error")


class Refuses(Agent):
    async def prompt(self, turn: Turn) -> StopReason:
        await turn.start_tool("read", "Reading")
        raise NotFound("no such file")


async def test_an_agent_error_stays_itself(store: JsonlStore, workdir: Path) -> None:
    runtime = Runtime(Refuses(), store)
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    with pytest.raises(NotFound):
        await runtime.prompt(session, [Text("go")])
    events = channel.events(session.id)
    assert events[-1] == TurnEnded(StopReason.END_TURN, "no such file")
    assert [e.status for e in events if isinstance(e, ToolCallUpdated)] == [ToolStatus.FAILED]


class SaysNumbers(Agent):
    def __init__(self, method: str) -> None:
        self.method = method

    async def prompt(self, turn: Turn) -> StopReason:
        speaker = turn if self.method.startswith("Turn") else turn.subagent(
            await turn.start_tool("task", "Sub-agent"))
        await getattr(speaker, self.method.split(".")[1])(42)
        return StopReason.END_TURN


@pytest.mark.parametrize("method", ["Turn.say", "Turn.think", "Subagent.say", "Subagent.think"])
async def test_a_chunk_that_is_not_text_fails_the_turn_by_name(
    store: JsonlStore, workdir: Path, method: str
) -> None:
    # (sent as it is, a number is a chunk every client drops: the reply vanished silently)
    runtime = Runtime(SaysNumbers(method), store)
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    with pytest.raises(AgentFailed) as info:
        await runtime.prompt(session, [Text("go")])
    assert info.value.data == {"type": "TypeError",
                               "message": f"{method}() takes a str, not int"}
    sent = [getattr(e, "event", e) for e in channel.events()]  # (a sub-agent's: wrapped)
    assert not [e for e in sent if isinstance(e, (AgentMessageChunk, ThoughtChunk))]


class Slips(Agent):
    """Tool-call calls with the usual slips of an untyped agent."""

    def __init__(self, slip: str) -> None:
        self.slip = slip

    async def prompt(self, turn: Turn) -> StopReason:
        call = await turn.start_tool("write", "Writing", kind="edit")  # type: ignore[arg-type]
        if self.slip == "complete(str)":
            await call.complete("written")  # type: ignore[arg-type]
        elif self.slip == "complete([str])":
            await call.complete(["written"])  # type: ignore[list-item]
        elif self.slip == "fail(list)":
            await call.fail(["bad"])  # type: ignore[arg-type]
        elif self.slip == "display=block":
            await turn.request_approval(call, "write", "W", Text("x"))  # type: ignore[arg-type]
        elif self.slip == "plan([str])":
            await turn.plan(["Read the code"])  # type: ignore[list-item]
        elif self.slip == "plan(entry)":
            await turn.plan(PlanEntry("Read the code"))  # type: ignore[arg-type]
        elif self.slip == "set_title(int)":
            await turn.set_title(5)  # type: ignore[arg-type]
        else:  # the values of the enums, as str, are accepted
            await call.update(status="completed")  # type: ignore[arg-type]
        return StopReason.END_TURN


@pytest.mark.parametrize("slip, message", [
    ("complete(str)", "ToolCall.update()/complete() takes a list of content blocks, e.g. "
                      "[Text('written')], not a str"),
    ("complete([str])", "ToolCall.update()/complete(): a str is not a content block (Text, "
                        "Diff, Terminal, Image, Audio, Video, ResourceText, ResourceBlob, "
                        "ResourceLink)"),
    ("fail(list)", "ToolCall.fail() takes a str, not list"),
    ("display=block", "Turn.request_approval(display=) takes a list of content blocks, e.g. "
                      "[Text(...)], not one block"),
    *((slip, "Turn.plan() takes the list of the plan's entries, e.g. [PlanEntry('Read the "
             "code', 'in_progress')]") for slip in ("plan([str])", "plan(entry)")),
    ("set_title(int)", "Turn.set_title() takes a str, not int"),
])
async def test_tool_call_slips_fail_the_turn_saying_what_to_write(
    store: JsonlStore, workdir: Path, slip: str, message: str
) -> None:
    # (they failed later, in an adapter: KeyError: <class 'str'>, 'Text' object is not iterable)
    runtime = Runtime(Slips(slip), store)
    session = await runtime.new_session(RecordingChannel(), str(workdir))
    with pytest.raises(AgentFailed) as info:
        await runtime.prompt(session, [Text("go")])
    assert info.value.data == {"type": "TypeError", "message": message}


async def test_enum_values_as_str_are_the_enums(store: JsonlStore, workdir: Path) -> None:
    runtime = Runtime(Slips("values"), store)
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    assert await runtime.prompt(session, [Text("go")]) is StopReason.END_TURN
    started = [e for e in channel.events() if isinstance(e, ToolCallStarted)]
    updated = [e for e in channel.events() if isinstance(e, ToolCallUpdated)]
    assert started[0].kind is ToolKind.EDIT and updated[0].status is ToolStatus.COMPLETED


class Reads(Agent):
    """Reads a file, catching what an agent written for local files catches."""

    def __init__(self) -> None:
        self.caught: list[BaseException] = []

    async def prompt(self, turn: Turn) -> StopReason:
        for path in ("missing.txt", "/outside/x"):
            try:
                await turn.read_text_file(path)
            except OSError as exc:
                self.caught.append(exc)
        return StopReason.END_TURN


class Editor(RecordingChannel):
    """A client serving files that refuses paths outside the session as ACP's does."""

    async def read_text_file(self, session: Any, path: str) -> str:
        if path.startswith("/outside"):
            raise RpcError(-32602, f"Path is outside the session's roots: {path}")
        return await super().read_text_file(session, path)


@pytest.mark.parametrize("through_client", [False, True])
async def test_a_file_read_fails_as_an_os_error_either_way(
    store: JsonlStore, workdir: Path, through_client: bool
) -> None:
    # (through a client it was an RpcError, and the tutorial's `except OSError` let it through)
    agent = Reads()
    channel = Editor(ClientCapabilities(read_text_file=through_client))
    runtime = Runtime(agent, store)
    session = await runtime.new_session(channel, str(workdir))
    assert await runtime.prompt(session, [Text("go")]) is StopReason.END_TURN
    missing, outside = agent.caught
    assert isinstance(missing, FileNotFoundError) and isinstance(outside, OSError)
    if through_client:  # the client's error, whole: still an RpcError
        assert isinstance(missing, ClientFileNotFound) and isinstance(missing, RpcError)
        assert (missing.code, missing.errno) == (-32002, errno.ENOENT)
        assert isinstance(outside, ClientFileError) and not isinstance(outside, ClientFileNotFound)
        assert (outside.code, outside.errno) == (-32602, errno.EACCES)
        assert str(outside) == "Path is outside the session's roots: /outside/x (-32602)"


async def test_a_file_read_the_client_cancelled_is_no_os_error(
    store: JsonlStore, workdir: Path
) -> None:
    class Cancelling(RecordingChannel):
        async def read_text_file(self, session: Any, path: str) -> str:
            raise RequestCancelled()  # (the client's -32800: its user stopped the turn)

    agent = Reads()
    runtime = Runtime(agent, store)
    session = await runtime.new_session(
        Cancelling(ClientCapabilities(read_text_file=True)), str(workdir)
    )
    with pytest.raises(AgentFailed) as failed:  # not caught by the agent's `except OSError`
        await runtime.prompt(session, [Text("go")])
    assert agent.caught == [] and type(failed.value.__cause__) is RequestCancelled
