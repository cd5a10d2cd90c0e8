"""``turn.history()``: the conversation as typed messages, from memory once read."""

from __future__ import annotations

from pathlib import Path

import pytest

from wireproto.agent.api import Agent
from wireproto.agent.content import Text
from wireproto.agent.events import StopReason, ToolStatus
from wireproto.agent.history import HistoryMessage, ToolUse
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio


class CountingStore(JsonlStore):
    """Counts whole-session reads."""

    loads = 0

    def load(self, session_id: str):  # type: ignore[no-untyped-def]
        self.loads += 1
        return super().load(session_id)


class Remembering(Agent):
    """Replies with the number of messages it sees; reads a file on 'read'."""

    def __init__(self) -> None:
        self.seen: list[list[HistoryMessage]] = []

    async def prompt(self, turn: Turn) -> StopReason:
        self.seen.append(turn.history())
        if turn.text == "read":
            await turn.think("I should look.")
            await turn.say("Looking.")
            call = await turn.start_tool("read", "Reading a.txt", raw_input={"path": "a.txt"})
            await call.complete([Text("one\ntwo")])
            await turn.say("It has two lines.")
        else:
            await turn.say(f"I see {len(self.seen[-1])} messages.")
        return StopReason.END_TURN


async def test_history_is_typed_cheap_and_survives_a_restart(workdir: Path, tmp_path: Path) -> None:
    agent = Remembering()
    store = CountingStore(tmp_path / "sessions")
    runtime = Runtime(agent, store)
    session = await runtime.new_session(RecordingChannel(), str(workdir))
    await runtime.prompt(session, [Text("hello")])
    await runtime.prompt(session, [Text("read")])
    assert agent.seen[0] == [HistoryMessage("user", "hello", (Text("hello"),))]
    expected = [
        HistoryMessage("user", "hello", (Text("hello"),)),
        HistoryMessage("assistant", "I see 1 messages."),
        HistoryMessage("user", "read", (Text("read"),)),
        HistoryMessage("assistant", "Looking.", thought="I should look.", tool_calls=(
            ToolUse(_call_id(runtime, session), "read",
                    "Reading a.txt", ToolStatus.COMPLETED, {"path": "a.txt"}, "one\ntwo"),)),
        HistoryMessage("assistant", "It has two lines."),
    ]
    assert runtime.history(session) == expected
    assert store.loads == 1  # the runtime's first read; then from memory
    other = await runtime.new_session(RecordingChannel(), str(workdir))
    await runtime.prompt(other, [Text("hello")])
    assert agent.seen[-1] == [HistoryMessage("user", "hello", (Text("hello"),))]
    assert store.loads == 1  # kept in memory from its start

    second = CountingStore(tmp_path / "sessions")
    restarted = Runtime(Remembering(), second)
    reopened = await restarted.open_session(RecordingChannel(), session.id)
    assert second.loads == 1
    assert restarted.history(reopened) == expected  # read from the store once
    assert restarted.history(reopened) == expected
    assert second.loads == 2
    again = await restarted.open_session(RecordingChannel(), other.id)
    assert restarted.history(again)[0].text == "hello"
    assert second.loads == 3  # built from what the open read


class Silent(Agent):
    async def prompt(self, turn: Turn) -> StopReason:
        await turn.say("ok")
        return StopReason.END_TURN


async def test_an_agent_that_never_reads_keeps_no_conversation(
    workdir: Path, tmp_path: Path
) -> None:
    store = CountingStore(tmp_path / "sessions")
    runtime = Runtime(Silent(), store)
    session = await runtime.new_session(RecordingChannel(), str(workdir))
    await runtime.prompt(session, [Text("hi")])
    assert store.loads == 0
    assert runtime.history(session) == [  # not kept so far: read from the store
        HistoryMessage("user", "hi", (Text("hi"),)), HistoryMessage("assistant", "ok")]
    assert store.loads == 1
    await runtime.prompt(session, [Text("again")])
    assert [m.text for m in runtime.history(session)] == ["hi", "ok", "again", "ok"]
    assert store.loads == 1  # kept from the first read on


def _call_id(runtime: Runtime, session: object) -> str:
    for message in runtime.history(session):  # type: ignore[arg-type]
        for call in message.tool_calls:
            return call.id
    raise AssertionError("no tool call")


class Failing(Agent):
    async def prompt(self, turn: Turn) -> StopReason:
        await turn.start_tool("search", "Searching")
        raise RuntimeError("boom")


async def test_a_failed_turn_shows_its_error_and_failed_call(workdir: Path) -> None:
    runtime = Runtime(Failing())
    session = await runtime.new_session(RecordingChannel(), str(workdir))
    with pytest.raises(Exception, match="Internal error"):
        await runtime.prompt(session, [Text("go")])
    reply = runtime.history(session)[-1]
    assert reply.error == "Internal error"
    assert [c.status for c in reply.tool_calls] == [ToolStatus.FAILED]
    await runtime.clear_history(session)
    assert runtime.history(session) == []
