"""The neutral asking and progress API: statuses, recording, titles through a store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from wireproto.agent.api import Agent, ClientCapabilities, Question, SlashCommand
from wireproto.agent.content import Text
from wireproto.agent.events import (
    AgentMessageChunk,
    CommandsChanged,
    CompactionEnded,
    CompactionStarted,
    SideQuestionEnded,
    SideQuestionStarted,
    StepRetried,
    StopReason,
    SubagentEvent,
    TitleChanged,
    ToolArgumentsChunk,
)
from wireproto.agent.questions import Answers, AskStatus
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio

Body = Callable[[Turn], Awaitable[None]]


class Scripted(Agent):
    def __init__(self, body: Body) -> None:
        self.body = body

    async def prompt(self, turn: Turn) -> StopReason:
        await self.body(turn)
        return StopReason.END_TURN


async def _run(body: Body, channel: RecordingChannel, workdir: Path,
               store: JsonlStore | None = None) -> tuple[Runtime, str]:
    runtime = Runtime(Scripted(body), store)
    session = await runtime.new_session(channel, str(workdir))
    await runtime.prompt(session, [Text("go")])
    return runtime, session.id


async def test_questions_unsupported_without_a_request(workdir: Path) -> None:
    found: list[Answers] = []

    async def body(turn: Turn) -> None:
        found.append(await turn.ask_questions([Question("Which?", ("a", "b"))]))
        found.append(Answers(await turn.ask_url("Sign in", "https://example.com")))

    channel = RecordingChannel()
    await _run(body, channel, workdir)
    assert [a.status for a in found] == [AskStatus.UNSUPPORTED, AskStatus.UNSUPPORTED]
    assert channel.calls == []


async def test_a_channel_without_ask_questions_is_asked_one_by_one(workdir: Path) -> None:
    found: list[Answers] = []

    async def body(turn: Turn) -> None:
        found.append(await turn.ask_questions([
            Question("One?", ("a", "b")), Question("Two?", ("c", "d")),
        ]))

    channel = RecordingChannel(ClientCapabilities(questions=True))
    channel.answers = ["a"]
    await _run(body, channel, workdir)
    assert [c.method for c in channel.calls] == ["ask", "ask"]
    assert found == [Answers(AskStatus.ANSWERED, (("a",), ("a",)))]
    assert found[0].of(1) == ("a",) and found[0].of(5) == ()
    channel.answers = []
    found.clear()
    await _run(body, channel, workdir)
    assert found == [Answers(AskStatus.DECLINED)]


async def test_progress_events_are_recorded_and_replayed(
    workdir: Path, tmp_path: Path
) -> None:
    async def body(turn: Turn) -> None:
        await turn.set_title("Named")
        await turn.retry(1, 2, 3, wait_s=0.5, error_type="Timeout", status_code=503)
        async with turn.compaction() as summary:
            summary.append("short")
        await turn.side_question("Why?", "Because.")
        call = await turn.start_tool("t", "T")
        await turn.stream_arguments(call, "{}")
        await turn.subagent(call, agent_id="a").say("hi")
        await call.complete()
        await turn.set_commands([SlashCommand("x", "X", input_hint="Y")])

    store = JsonlStore(tmp_path / "sessions")
    channel = RecordingChannel()
    runtime, sid = await _run(body, channel, workdir, store)
    kinds = [type(e) for e in channel.events(sid)]
    for kind in (TitleChanged, StepRetried, CompactionStarted, CompactionEnded,
                 SideQuestionStarted, SideQuestionEnded, ToolArgumentsChunk, SubagentEvent,
                 CommandsChanged):
        assert kind in kinds, kind
    [sub] = [e for e in channel.events(sid) if isinstance(e, SubagentEvent)]
    assert isinstance(sub.event, AgentMessageChunk) and sub.event.text == "hi"
    assert sub.agent_id == "a"
    [listed], _ = runtime.list_sessions()
    assert listed.title == "Named"
    await runtime.close_session(sid)

    cold, _ = JsonlStore(tmp_path / "sessions").list()  # a new process lists the file
    assert [i.title for i in cold] == ["Named"]
    again = Runtime(Scripted(body), JsonlStore(tmp_path / "sessions"))
    viewer = RecordingChannel()
    session = await again.open_session(viewer, sid, str(workdir), replay=True)
    assert session.title == "Named"  # the agent's title survives a restart
    replayed = [type(e) for e in viewer.events(sid, replay=True)]
    assert [k for k in replayed if k in (TitleChanged, StepRetried, SubagentEvent)] == [
        TitleChanged, StepRetried, SubagentEvent]


async def test_compaction_failure_is_reported(workdir: Path) -> None:
    async def body(turn: Turn) -> None:
        try:
            async with turn.compaction():
                raise RuntimeError("too big")
        except RuntimeError:
            pass

    channel = RecordingChannel()
    _, sid = await _run(body, channel, workdir)
    [end] = [e for e in channel.events(sid) if isinstance(e, CompactionEnded)]
    assert end.error == "too big"
