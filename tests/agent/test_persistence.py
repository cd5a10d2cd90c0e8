"""Sessions survive a process restart and a kill -9 in the middle of a turn."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from wireproto.agent.content import Text
from wireproto.agent.demo import DemoAgent
from wireproto.agent.events import AgentMessageChunk, Event, StopReason, TurnEnded, UserMessage
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.errors import InvalidArgument
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio

# A second process: reload the session named by argv[1] from the JSON Lines
# store in the directory argv[2], print what it replays
# and restores as JSON, then run one more turn in it.
RESTART = r"""
import sys, anyio, msgspec
from wireproto.agent.content import Text
from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.testing import RecordingChannel

async def main():
    runtime = Runtime(DemoAgent(), JsonlStore(sys.argv[2]))
    channel = RecordingChannel()
    session = await runtime.open_session(channel, sys.argv[1], replay=True)
    replayed = channel.events(session.id, replay=True)
    stop = await runtime.prompt(session, [Text("after restart")])
    print(msgspec.json.encode({
        "replayed": [msgspec.to_builtins(e) for e in replayed],
        "options": session.options, "plan_mode": session.plan_mode,
        "title": session.title, "cwd": session.cwd,
        "stop": stop.value, "reply": channel.text(session.id),
    }).decode())

anyio.run(main)
"""

# A process killed in the middle of a turn (sessions in the directory argv[2]):
# prints the session id, then every chunk it sends, flushed, while /slow runs
# "forever".
SLOW = r"""
import sys, anyio
from wireproto.agent.content import Text
from wireproto.agent.demo import DemoAgent
from wireproto.agent.events import AgentMessageChunk
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore

class Printer:
    from wireproto.agent.api import ClientCapabilities
    capabilities = ClientCapabilities()
    async def send(self, session, event, *, replay=False):
        if isinstance(event, AgentMessageChunk):
            print(event.text, flush=True)

async def main():
    runtime = Runtime(DemoAgent(), JsonlStore(sys.argv[2]))
    session = await runtime.new_session(Printer(), sys.argv[1])
    print(session.id, flush=True)
    await runtime.prompt(session, [Text("/slow 1000000")])

anyio.run(main)
"""


async def run_child(script: str, *args: str) -> str:
    """Run ``script`` in a new Python process (same environment); return its stdout."""
    done = await anyio.run_process([sys.executable, "-c", script, *args], check=True)
    return done.stdout.decode()


async def test_restart_in_a_new_process(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    await runtime.prompt(session, [Text("hello\nworld")])
    await runtime.prompt(session, [Text("/think quietly")])
    await runtime.prompt(session, [Text("/write f.txt content")])
    await runtime.set_option(session, "model", "demo-large")
    await runtime.set_option(session, "thinking", "on")
    await runtime.set_plan_mode(session, True)
    live = [msgspec.to_builtins(e) for e in channel.events(session.id)]

    result = json.loads(await run_child(RESTART, session.id, str(runtime.store.root)))
    assert result["replayed"] == live  # same events, same order, same message ids
    assert result["options"] == {"mode": "ask", "model": "demo-large", "thinking": True}
    assert result["plan_mode"] is True
    assert (result["title"], result["cwd"]) == ("hello", str(workdir))
    assert (result["stop"], result["reply"]) == ("end_turn", "You said: after restart")

    # and back in this process, with a fresh store, the child's turn is there too
    fresh = Runtime(DemoAgent(), JsonlStore(runtime.store.root))
    replay = RecordingChannel()
    await fresh.open_session(replay, session.id, replay=True)
    assert replay.text(replay=True).endswith("You said: after restart")


async def test_resume_without_replay_restores_options(runtime: Runtime, workdir: Path) -> None:
    session = await runtime.new_session(RecordingChannel(), str(workdir), roots=["/extra"])
    await runtime.set_option(session, "mode", "code")
    with pytest.raises(InvalidArgument):
        await runtime.set_option(session, "mode", "yolo")
    with pytest.raises(InvalidArgument):
        await runtime.set_option(session, "nope", "x")
    await runtime.prompt(session, [Text("hi")])

    restarted = Runtime(DemoAgent(), JsonlStore(runtime.store.root))
    channel = RecordingChannel()
    resumed = await restarted.open_session(channel, session.id)
    assert channel.records == []  # resume does not replay
    assert resumed.options == {"mode": "code", "model": "demo-small", "thinking": False}
    assert resumed.title == "hi"
    assert [str(r) for r in resumed.roots] == [str(workdir), "/extra"]
    (info,), _ = restarted.list_sessions(cwd=str(workdir))
    assert (info.session_id, info.title) == (session.id, "hi")


async def test_load_replays_with_original_message_ids(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    await runtime.prompt(session, [Text("one two three")])
    await runtime.prompt(session, [Text("/plan")])
    live = channel.events(session.id)
    await runtime.close_session(session.id)

    loader = RecordingChannel()
    await Runtime(DemoAgent(), JsonlStore(runtime.store.root)).open_session(
        loader, session.id, replay=True
    )
    assert loader.events(replay=True) == live
    assert loader.events() == []
    ids = {e.message_id for e in live if isinstance(e, AgentMessageChunk)}
    assert len(ids) == 2  # one per reply


async def test_kill_9_mid_turn_then_load_and_continue(workdir: Path, store: JsonlStore) -> None:
    cmd = [sys.executable, "-c", SLOW, str(workdir), str(store.root)]
    async with await anyio.open_process(cmd) as proc:
        assert proc.stdout is not None
        lines = BufferedByteReceiveStream(proc.stdout)
        session_id = (await lines.receive_until(b"\n", 1024)).decode()
        # a chunk is printed (sent), then recorded: once tick 4 is out, 1-3 are on disk
        while await lines.receive_until(b"\n", 1024) != b"tick 4":
            pass
        proc.kill()  # SIGKILL: no cleanup, no flush, mid-turn
        assert await proc.wait() == -signal.SIGKILL

    stored = store.load(session_id)
    assert isinstance(stored.events[0], UserMessage)
    ticks = [e for e in stored.events if isinstance(e, AgentMessageChunk)]
    assert [t.text for t in ticks[:3]] == ["tick 1", "tick 2", "tick 3"]
    assert len({t.message_id for t in ticks}) == 1
    assert not any(isinstance(e, TurnEnded) for e in stored.events)  # it never ended

    # the killed session can be resumed and used by a new process
    runtime = Runtime(DemoAgent(), store)
    channel = RecordingChannel()
    session = await runtime.open_session(channel, session_id)
    assert await runtime.prompt(session, [Text("again")]) is StopReason.END_TURN
    assert store.load(session_id).events[-1] == TurnEnded(stop_reason=StopReason.END_TURN)
    assert store.list()[0][0].title == "/slow 1000000"


async def test_half_written_line_then_restart(runtime: Runtime, workdir: Path) -> None:
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    await runtime.prompt(session, [Text("first")])
    path = runtime.store.path(session.id)
    data = path.read_bytes()
    path.write_bytes(data + data.splitlines(keepends=True)[-1][:25])  # a crash mid-line

    result = json.loads(await run_child(RESTART, session.id, str(runtime.store.root)))
    texts = "".join(e["text"] for e in result["replayed"] if e["type"] == "message")
    assert texts == "You said: first"
    assert result["reply"] == "You said: after restart"
    reloaded = JsonlStore(runtime.store.root).load(session.id)
    replies = "".join(e.text for e in reloaded.events if isinstance(e, AgentMessageChunk))
    assert replies == "You said: firstYou said: after restart"


class _CountingStore(JsonlStore):
    """A JSON Lines store that counts append calls."""

    appends: list[int]

    def append(self, session_id: str, *events: Event) -> None:
        self.appends.append(len(events))
        super().append(session_id, *events)


class _FlushingChannel(RecordingChannel):
    """A channel that promises to flush the runtime's held records before it writes."""

    flushes_history = True


async def test_a_flushing_channel_groups_the_records_of_a_burst(
    tmp_path: Path, workdir: Path
) -> None:
    store = _CountingStore(tmp_path / "sessions")
    store.appends = []
    runtime = Runtime(DemoAgent(), store)
    channel = _FlushingChannel()
    session = await runtime.new_session(channel, str(workdir))
    await runtime.prompt(session, [Text("hello")])
    assert store.appends == []  # held back: nothing was written to the client yet
    assert [type(e) for e in runtime.store.load(session.id).events] == []
    runtime.flush_history()  # what the channel's writer does before writing
    assert store.appends == [6]  # the prompt, four chunks, the end: one append
    await runtime.prompt(session, [Text("again")])
    (info,), _ = runtime.list_sessions()  # reads write what is held back first
    assert store.appends == [6, 6] and info.title == "hello"
    assert JsonlStore(store.root).load(session.id).events == channel.events(session.id)

    # a channel without the promise: each event is written as it is sent
    session.channel = plain = RecordingChannel()
    await runtime.prompt(session, [Text("third")])
    assert store.appends == [6, 6, 1, 1, 1, 1, 1, 1]
    assert len(store.load(session.id).events) == 18 and len(plain.events(session.id)) == 6


async def test_held_records_are_written_when_the_session_closes(
    tmp_path: Path, workdir: Path
) -> None:
    runtime = Runtime(DemoAgent(), tmp_path / "sessions")
    session = await runtime.new_session(_FlushingChannel(), str(workdir))
    await runtime.prompt(session, [Text("hello")])
    await runtime.close_session(session.id)
    assert len(JsonlStore(tmp_path / "sessions").load(session.id).events) == 6


async def test_a_session_whose_start_fails_is_not_kept(store: JsonlStore, workdir: Path) -> None:
    class Refusing(DemoAgent):
        async def session_started(self, session: object, how: str) -> None:
            raise InvalidArgument("no backend for this directory")

    runtime = Runtime(Refusing(), store)
    with pytest.raises(InvalidArgument):
        await runtime.new_session(RecordingChannel(), str(workdir))
    assert runtime.sessions == {}
    assert runtime.list_sessions() == ([], None)  # the client never got its id
    assert list(store.root.iterdir()) == []


async def test_a_session_whose_reopening_fails_is_left_as_it_was(
    store: JsonlStore, workdir: Path
) -> None:
    class Refusing(DemoAgent):
        async def session_started(self, session: object, how: str) -> None:
            if how != "new":
                raise InvalidArgument("cannot resume here")

    runtime = Runtime(Refusing(), store)
    first = RecordingChannel()
    session = await runtime.new_session(first, str(workdir))
    for how in (False, True):
        with pytest.raises(InvalidArgument):
            await runtime.open_session(RecordingChannel(), session.id, replay=how)
        assert runtime.sessions[session.id] is session  # still the first connection's
        assert session.channel is first
    again = Runtime(Refusing(), store)  # a runtime that never had it live
    with pytest.raises(InvalidArgument):
        await again.open_session(RecordingChannel(), session.id)
    assert again.sessions == {}
    assert [info.session_id for info in again.list_sessions()[0]] == [session.id]
