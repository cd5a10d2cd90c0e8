"""The runtime ends a failed turn properly (protocol-neutral, with a recording channel)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from wireproto.agent.api import Agent
from wireproto.agent.content import Text
from wireproto.agent.events import (
    AgentMessageChunk,
    StopReason,
    ThoughtChunk,
    ToolCallUpdated,
    ToolStatus,
    TurnEnded,
)
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn
from wireproto.errors import AgentFailed, NotFound
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
