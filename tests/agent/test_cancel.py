"""Cancellation at awkward moments, and independence of concurrent sessions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from wireproto.agent.api import ClientCapabilities, ExternalTool, Session, ToolOutcome
from wireproto.agent.content import Text
from wireproto.agent.events import (
    AgentMessageChunk,
    Event,
    StopReason,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
    TurnEnded,
    UserMessage,
)
from wireproto.agent.runtime import Runtime
from wireproto.errors import Busy
from wireproto.testing import RecordingChannel, wait_all_tasks_blocked

pytestmark = pytest.mark.anyio


class Outcome:
    """Collects the stop reason of a turn run in the background."""

    stop: StopReason | None = None


async def run_turn(runtime: Runtime, session: Session, text: str, outcome: Outcome) -> None:
    outcome.stop = await runtime.prompt(session, [Text(text)])


def assert_tool_call_failed_as_cancelled(
    runtime: Runtime, channel: RecordingChannel, session: Session
) -> None:
    events = channel.events(session.id)
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert len(started) == 1
    last = [e for e in events if isinstance(e, ToolCallUpdated) and e.id == started[0].id][-1]
    assert (last.status, last.message) == (ToolStatus.FAILED, "cancelled")
    assert events[-1] == TurnEnded(stop_reason=StopReason.CANCELLED)
    # and it was recorded, so a replay shows the final status
    assert runtime.store.load(session.id).events == events


async def assert_next_turn_works(runtime: Runtime, session: Session) -> None:
    channel = session.channel
    assert isinstance(channel, RecordingChannel)
    channel.clear()
    assert await runtime.prompt(session, [Text("again")]) is StopReason.END_TURN
    assert channel.text(session.id) == "You said: again"


async def test_cancel_mid_slow(runtime: Runtime, channel: RecordingChannel, workdir: Path) -> None:
    session = await runtime.new_session(channel, str(workdir))
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/slow 1000", outcome)
        await channel.wait_until(lambda: "tick 2" in channel.text())
        assert runtime.cancel(session)
    assert outcome.stop is StopReason.CANCELLED
    events = channel.events(session.id)
    assert events[-1] == TurnEnded(stop_reason=StopReason.CANCELLED)
    ticks = [e.text for e in events if isinstance(e, AgentMessageChunk)]
    assert ticks[:2] == ["tick 1", "tick 2"] and len(ticks) <= 3
    stored = runtime.store.load(session.id).events
    assert stored[-1] == TurnEnded(stop_reason=StopReason.CANCELLED)
    assert not runtime.cancel(session)  # nothing runs any more
    await assert_next_turn_works(runtime, session)


async def test_cancel_while_waiting_for_approval(
    runtime: Runtime, channel: RecordingChannel, workdir: Path
) -> None:
    session = await runtime.new_session(channel, str(workdir))
    channel.hold.add("request_approval")
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/write w.txt data", outcome)
        call = await channel.wait_for_call("request_approval")
        runtime.cancel(session)
    assert outcome.stop is StopReason.CANCELLED
    assert call.state == "cancelled"
    assert not (workdir / "w.txt").exists()
    assert_tool_call_failed_as_cancelled(runtime, channel, session)
    channel.hold.clear()
    await assert_next_turn_works(runtime, session)
    assert await runtime.prompt(session, [Text("/write w.txt data")]) is StopReason.END_TURN
    assert (workdir / "w.txt").read_text(encoding="utf-8") == "data"


async def test_cancel_while_client_read_pending(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel(ClientCapabilities(read_text_file=True))
    session = await runtime.new_session(channel, str(workdir))
    channel.hold.add("read_text_file")
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/read r.txt", outcome)
        call = await channel.wait_for_call("read_text_file")
        runtime.cancel(session)
    assert outcome.stop is StopReason.CANCELLED
    assert [c.state for c in channel.calls] == ["cancelled"]
    assert_tool_call_failed_as_cancelled(runtime, channel, session)
    assert call.args == (str(workdir / "r.txt"),)
    await assert_next_turn_works(runtime, session)


async def test_cancel_while_external_tool_pending(runtime: Runtime, workdir: Path) -> None:
    tool = ExternalTool("slowtool", "never answers", {"type": "object"})
    caps = ClientCapabilities(external_tools={"slowtool": tool}, external_tools_supported=True)
    channel = RecordingChannel(caps, tools={"slowtool": lambda _: ToolOutcome(False, "late")})
    session = await runtime.new_session(channel, str(workdir))
    channel.hold.add("call_tool")
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/tool slowtool {}", outcome)
        call = await channel.wait_for_call("call_tool")
        runtime.cancel(session)
    assert outcome.stop is StopReason.CANCELLED
    assert call.state == "cancelled"
    assert_tool_call_failed_as_cancelled(runtime, channel, session)
    await assert_next_turn_works(runtime, session)


async def test_cancel_before_the_agent_runs(
    runtime: Runtime, channel: RecordingChannel, workdir: Path
) -> None:
    session = await runtime.new_session(channel, str(workdir))
    channel.pause()
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "hello", outcome)
        await channel.wait_until(lambda: channel.blocked_sends == 1)  # the user message
        runtime.cancel(session)
        channel.resume()
    assert outcome.stop is StopReason.CANCELLED
    assert channel.text() == ""
    assert [type(e) for e in channel.events()] == [UserMessage, TurnEnded]
    await assert_next_turn_works(runtime, session)


class SendTracking(RecordingChannel):
    """A recording channel that knows which events are being sent right now.

    ``pause_at(predicate)`` pauses the channel just before the first event
    that matches is delivered (so a test can stop a turn at an exact event).
    """

    def __init__(self) -> None:
        super().__init__()
        self.sending: list[Event] = []
        self._pause_at: Callable[[Event], bool] | None = None

    def pause_at(self, predicate: Callable[[Event], bool]) -> None:
        self._pause_at = predicate

    async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
        if self._pause_at is not None and self._pause_at(event):
            self._pause_at = None
            self.pause()
        self.sending.append(event)
        try:
            await super().send(session, event, replay=replay)
        finally:
            self.sending.remove(event)


def is_chunk(text: str | None = None) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, AgentMessageChunk) and text in (None, e.text)


async def test_cancel_while_a_chunk_send_is_blocked(runtime: Runtime, workdir: Path) -> None:
    channel = SendTracking()
    session = await runtime.new_session(channel, str(workdir))
    channel.pause_at(is_chunk("tick 2"))
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/slow 1000", outcome)
        await channel.wait_until(lambda: channel.blocked_sends == 1)  # tick 2 is stuck
        assert channel.text() == "tick 1"
        runtime.cancel(session)
        # the chunk send is cancelled; the turn then waits to deliver TurnEnded
        await channel.wait_until(lambda: [type(e) for e in channel.sending] == [TurnEnded])
        assert channel.blocked_sends == 1 and session.turn is not None
        channel.resume()
    assert outcome.stop is StopReason.CANCELLED
    texts = [e.text for e in channel.events() if isinstance(e, AgentMessageChunk)]
    assert texts == ["tick 1"]  # the blocked chunk send was cancelled, not delivered late
    assert channel.events()[-1] == TurnEnded(stop_reason=StopReason.CANCELLED)
    # history is what the client saw: the undelivered chunk is not replayed
    assert runtime.store.load(session.id).events == channel.events(session.id)
    await assert_next_turn_works(runtime, session)


async def test_cancel_while_a_tool_call_start_is_blocked(runtime: Runtime, workdir: Path) -> None:
    channel = SendTracking()
    session = await runtime.new_session(channel, str(workdir))
    channel.pause_at(lambda e: isinstance(e, ToolCallStarted))
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/read r.txt", outcome)
        await channel.wait_until(lambda: channel.blocked_sends == 1)
        runtime.cancel(session)
        channel.resume()
    assert outcome.stop is StopReason.CANCELLED
    # the call was never announced, so no update for it follows
    assert [type(e) for e in channel.events()] == [UserMessage, TurnEnded]
    assert runtime.store.load(session.id).events == channel.events()


async def test_a_slow_client_slows_the_turn_down(runtime: Runtime, workdir: Path) -> None:
    channel = SendTracking()
    session = await runtime.new_session(channel, str(workdir))
    channel.pause_at(is_chunk())
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/big 10", outcome)
        await channel.wait_until(lambda: channel.blocked_sends == 1)
        await wait_all_tasks_blocked()
        # the turn waits for the client: the chunk is neither delivered nor recorded,
        # and nothing after it was produced
        assert [type(e) for e in channel.events()] == [UserMessage]
        assert [type(e) for e in runtime.store.load(session.id).events] == [UserMessage]
        assert session.turn is not None and channel.blocked_sends == 1
        channel.resume()
    assert outcome.stop is StopReason.END_TURN
    assert channel.text() == "x" * 10
    assert [type(e) for e in runtime.store.load(session.id).events] == [
        UserMessage, AgentMessageChunk, TurnEnded,
    ]


async def test_cancelling_one_session_leaves_the_other_running(
    runtime: Runtime, workdir: Path
) -> None:
    chan_a, chan_b = RecordingChannel(), RecordingChannel()
    a = await runtime.new_session(chan_a, str(workdir))
    b = await runtime.new_session(chan_b, str(workdir))
    out_a, out_b = Outcome(), Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, a, "/slow 1000", out_a)
        tg.start_soon(run_turn, runtime, b, "/slow 4", out_b)
        await chan_a.wait_until(lambda: "tick 1" in chan_a.text())
        await chan_b.wait_until(lambda: "tick 1" in chan_b.text())
        runtime.cancel(a)
    assert out_a.stop is StopReason.CANCELLED
    assert out_b.stop is StopReason.END_TURN
    assert chan_b.text() == "tick 1tick 2tick 3tick 4"
    assert chan_b.events()[-1] == TurnEnded(stop_reason=StopReason.END_TURN)


async def test_cancel_shared_channel_only_named_session(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel()
    a = await runtime.new_session(channel, str(workdir))
    b = await runtime.new_session(channel, str(workdir))
    out_a, out_b = Outcome(), Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, a, "/slow 1000", out_a)
        tg.start_soon(run_turn, runtime, b, "/slow 3", out_b)
        await channel.wait_until(lambda: "tick 1" in channel.text(a.id))
        runtime.cancel(a)
    assert (out_a.stop, out_b.stop) == (StopReason.CANCELLED, StopReason.END_TURN)
    assert channel.text(b.id) == "tick 1tick 2tick 3"


async def test_second_prompt_while_busy(
    runtime: Runtime, channel: RecordingChannel, workdir: Path
) -> None:
    session = await runtime.new_session(channel, str(workdir))
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/slow 1000", outcome)
        await channel.wait_until(lambda: "tick 1" in channel.text())
        with pytest.raises(Busy):
            await runtime.prompt(session, [Text("again")])
        runtime.cancel(session)
    assert outcome.stop is StopReason.CANCELLED


async def test_close_session_cancels_its_turn(
    runtime: Runtime, channel: RecordingChannel, workdir: Path
) -> None:
    session = await runtime.new_session(channel, str(workdir))
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_turn, runtime, session, "/slow 1000", outcome)
        await channel.wait_until(lambda: "tick 1" in channel.text())
        await runtime.close_session(session.id)
    assert outcome.stop is StopReason.CANCELLED
    assert session.id not in runtime.sessions
    reopened = await runtime.open_session(channel, session.id)
    await assert_next_turn_works(runtime, reopened)
