"""The Turn API beyond the demo agent: tool-call ids, steps, options, usage, recording."""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from wireproto.agent.api import Agent, Choice, SelectOption, Session
from wireproto.agent.content import Text
from wireproto.agent.events import (
    AgentMessageChunk,
    Event,
    OptionChanged,
    PlanModeChanged,
    SteerReceived,
    StepStarted,
    StopReason,
    ToolCallStarted,
    ToolCallUpdated,
    TurnEnded,
    UsageUpdated,
)
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn, new_id
from wireproto.errors import ConnectionClosed, InvalidArgument
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio

Body = Callable[[Turn], Awaitable[None]]


class Scripted(Agent):
    """Runs the coroutine function given for the turn; records option callbacks."""

    options = (SelectOption("mode", "Mode", (Choice("ask", "Ask"), Choice("code", "Code")),
                            default="ask", category="mode"),)

    def __init__(self) -> None:
        self.body: Body | None = None
        self.changed: list[tuple[str, str | bool]] = []

    async def option_changed(self, session: Session, option_id: str, value: str | bool) -> None:
        self.changed.append((option_id, value))

    async def prompt(self, turn: Turn) -> StopReason:
        assert self.body is not None
        await self.body(turn)
        return StopReason.END_TURN


@pytest.fixture
def agent() -> Scripted:
    return Scripted()


@pytest.fixture
def scripted(agent: Scripted, store: JsonlStore) -> Runtime:
    return Runtime(agent, store)


async def run(runtime: Runtime, channel: RecordingChannel, workdir: Path, body: Body) -> Session:
    agent = runtime.agent
    assert isinstance(agent, Scripted)
    agent.body = body
    session = await runtime.new_session(channel, str(workdir))
    assert await runtime.prompt(session, [Text("go")]) is StopReason.END_TURN
    return session


def tool_events(events: list[Event]) -> list[tuple[str, str | None]]:
    """``(id, status)`` of each tool-call event (``None``: an update without a status)."""
    found: list[tuple[str, str | None]] = []
    for e in events:
        if isinstance(e, ToolCallStarted):
            found.append((e.id, e.status.value))
        elif isinstance(e, ToolCallUpdated):
            found.append((e.id, None if e.status is None else e.status.value))
    return found


async def test_repeated_tool_call_ids_stay_distinct(
    scripted: Runtime, channel: RecordingChannel, workdir: Path
) -> None:
    async def body(turn: Turn) -> None:
        first = await turn.start_tool("a", "A", id="call_0")
        second = await turn.start_tool("b", "B", id="call_0")
        third = await turn.start_tool("c", "C", id="call_0")
        assert [first.id, second.id, third.id] == ["call_0", "call_0~2", "call_0~3"]
        await first.complete()  # finishing one leaves the others open
        again = await turn.start_tool("d", "D", id="call_0")  # free again
        assert again.id == "call_0"
        await again.complete()

    await run(scripted, channel, workdir, body)
    assert tool_events(channel.events()) == [
        ("call_0", "pending"), ("call_0~2", "pending"), ("call_0~3", "pending"),
        ("call_0", "completed"), ("call_0", "pending"), ("call_0", "completed"),
        # left open by the agent: both failed at the turn end, none forgotten
        ("call_0~2", "failed"), ("call_0~3", "failed"),
    ]
    assert channel.events()[-1] == TurnEnded(StopReason.END_TURN)


async def test_new_step(scripted: Runtime, channel: RecordingChannel, workdir: Path) -> None:
    async def body(turn: Turn) -> None:
        assert turn.step == 1
        first = await turn.say("one")
        assert await turn.new_step() == 2
        assert await turn.say("two") != first  # a new step starts a new message

    await run(scripted, channel, workdir, body)
    kinds = [e for e in channel.events() if isinstance(e, (AgentMessageChunk, StepStarted))]
    assert [type(e) for e in kinds] == [AgentMessageChunk, StepStarted, AgentMessageChunk]
    assert kinds[1] == StepStarted(2)


async def test_the_agent_changes_an_option_and_plan_mode(
    scripted: Runtime, agent: Scripted, channel: RecordingChannel, workdir: Path
) -> None:
    async def body(turn: Turn) -> None:
        await turn.set_option("mode", "code")
        with pytest.raises(InvalidArgument):
            await turn.set_option("mode", "yolo")
        await turn.set_plan_mode(True)
        assert turn.plan_mode

    session = await run(scripted, channel, workdir, body)
    assert session.options == {"mode": "code"}
    sent = [e for e in channel.events() if isinstance(e, (OptionChanged, PlanModeChanged))]
    assert sent == [OptionChanged("mode", "code"), PlanModeChanged(True)]  # the client is told
    assert agent.changed == []  # the agent did it: no callback
    stored = scripted.store.load(session.id)
    assert (stored.options, stored.plan_mode) == ({"mode": "code"}, True)

    channel.clear()
    await scripted.set_option(session, "mode", "ask")  # the client did it: recorded only
    assert channel.events() == [] and agent.changed == [("mode", "ask")]
    assert scripted.store.load(session.id).options == {"mode": "ask"}


async def test_usage(scripted: Runtime, channel: RecordingChannel, workdir: Path) -> None:
    async def body(turn: Turn) -> None:
        await turn.usage(used=10, size=100, cache_read_tokens=3, cost=0.5, currency="USD")

    await run(scripted, channel, workdir, body)
    (usage,) = [e for e in channel.events() if isinstance(e, UsageUpdated)]
    assert usage == UsageUpdated(used=10, size=100, cache_read_tokens=3, cost=0.5,
                                 currency="USD")


class Vanishing(RecordingChannel):
    """A client whose connection breaks when a message chunk is sent."""

    async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
        if isinstance(event, AgentMessageChunk):
            raise ConnectionClosed("gone")
        await super().send(session, event, replay=replay)


async def test_an_event_the_client_could_not_take_is_still_recorded(
    scripted: Runtime, workdir: Path
) -> None:
    async def body(turn: Turn) -> None:
        with pytest.raises(ConnectionClosed):
            await turn.say("into the void")

    channel = Vanishing()
    await run(scripted, channel, workdir, body)
    (session_id,) = scripted.sessions
    stored = scripted.store.load(session_id).events
    assert [type(e).__name__ for e in stored] == ["UserMessage", "AgentMessageChunk", "TurnEnded"]
    assert [type(e).__name__ for e in channel.events()] == ["UserMessage", "TurnEnded"]


async def test_wait_for_steering_and_for_cancellation(
    scripted: Runtime, agent: Scripted, channel: RecordingChannel, workdir: Path
) -> None:
    seen: list[object] = []
    waiting = anyio.Event()

    async def body(turn: Turn) -> None:
        seen.append(await turn.wait_steering())
        assert not turn.cancelled
        waiting.set()
        with anyio.CancelScope(shield=True):  # e.g. clean-up that must see the cancel
            await turn.wait_cancelled()
        seen.append(turn.cancelled)
        await turn.say("never sent")  # the turn is cancelled: raises

    agent.body = body
    session = await scripted.new_session(channel, str(workdir))
    stops: list[StopReason] = []

    async def prompt() -> None:
        stops.append(await scripted.prompt(session, [Text("go")]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(prompt)
        await channel.wait_until(lambda: session.turn is not None and bool(channel.events()))
        assert scripted.steer(session, [Text("more")])
        await waiting.wait()
        assert scripted.cancel(session)
    assert stops == [StopReason.CANCELLED]
    assert seen == [[[Text("more")]], True]
    assert channel.text() == ""
    assert [type(e) for e in channel.events()][1:] == [SteerReceived, TurnEnded]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_ids_are_fresh_in_a_forked_child_and_whatever_random_is_seeded_to() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child writes its next id and exits at once
        os.write(write, new_id("msg").encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    os.close(write)
    assert child != new_id("msg")  # the same generator state would give the same id
    assert len(child) == len("msg_") + 16
    random.seed(1)
    first = new_id("sess")
    random.seed(1)
    assert new_id("sess") != first
