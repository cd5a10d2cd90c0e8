"""A turn whose ``prompt()`` raises, or returns no stop reason, still ends properly.

Served by real ``wireproto acp|wire --agent FILE.py:agent`` processes: the
open tool call is failed and the turn end recorded, live and in the replay;
the client gets an error answer (ACP) or an error after ``TurnEnd`` (Wire);
the connection stays usable.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.acp import connect_acp, serve_acp
from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.wire import connect_wire
from wireproto.adapters.wire import messages as m
from wireproto.agent.api import Agent
from wireproto.agent.events import StopReason, ToolKind
from wireproto.agent.turn import Turn
from wireproto.errors import RpcError
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

AGENT = textwrap.dedent("""
    from wireproto.agent.api import Agent
    from wireproto.agent.events import StopReason, ToolKind

    class Flaky(Agent):
        async def prompt(self, turn):
            if turn.text == "ok":
                await turn.say("fine")
                return StopReason.END_TURN
            await turn.start_tool("search", "Searching", kind=ToolKind.SEARCH)
            if turn.text == "none":
                return None
            raise ValueError("bad model output")

    class Quiet(Flaky):
        error_details = False

    agent = Flaky()
    quiet = Quiet()
""")


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    path = tmp_path / "flaky.py"
    path.write_text(AGENT)
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}


def _cmd(protocol: str, spec: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "wireproto", protocol, "--agent", spec, *extra]


@pytest.mark.parametrize(("text", "data"), [
    ("raise", {"type": "ValueError", "message": "bad model output"}),
    ("none", {"type": "TypeError",
              "message": "Flaky.prompt() returned None, not a StopReason"}),
])
async def test_acp_error_answer_failed_call_and_replay(
    agent_file: Path, env: dict[str, str], tmp_path: Path, text: str, data: Any
) -> None:
    cwd = str(tmp_path)
    async with connect_acp(_cmd("acp", f"{agent_file}:agent"), env=env) as client:
        sid = (await client.new_session(cwd)).session_id
        updates: list[Any] = []
        with pytest.raises(RpcError) as info:
            async with client.prompt(sid, text) as turn:
                async for update in turn:
                    updates.append(update)
        assert (info.value.code, info.value.message, info.value.data) == (
            -32603, "Internal error", data)
        assert _call_statuses(updates) == ["pending", "failed"]
        async with client.prompt(sid, "ok") as turn:  # the session is usable again
            await turn.collect()
        assert turn.stop_reason == "end_turn"
    async with connect_acp(_cmd("acp", f"{agent_file}:agent"), env=env) as client:
        loaded = await client.load_session(sid, cwd)
        assert _call_statuses(loaded.history) == ["pending", "failed"]


def _call_statuses(updates: list[Any]) -> list[str]:
    return [u.status for u in updates if isinstance(u, (s.ToolCall, s.ToolCallProgress))
            and isinstance(u.status, str)]


async def test_acp_error_details_opt_out(
    agent_file: Path, env: dict[str, str], tmp_path: Path
) -> None:
    async with connect_acp(_cmd("acp", f"{agent_file}:quiet"), env=env) as client:
        sid = (await client.new_session(str(tmp_path))).session_id
        with pytest.raises(RpcError) as info:
            async with client.prompt(sid, "raise") as turn:
                await turn.collect()
        assert (info.value.code, info.value.message, info.value.data) == (
            -32603, "Internal error", None)


@pytest.mark.parametrize("text", ["raise", "none"])
async def test_wire_turn_ends_then_error_and_replay(
    agent_file: Path, env: dict[str, str], tmp_path: Path, text: str
) -> None:
    cmd = _cmd("wire", f"{agent_file}:agent", "--session", "s1", "--work-dir", str(tmp_path))
    events: list[Any] = []

    async def on_event(event: Any) -> None:
        events.append(event)

    async with connect_wire(cmd, env=env, on_event=on_event, event_buffer=0) as client:
        with pytest.raises(RpcError) as info:
            await client.prompt(text)
        assert info.value.code == -32603 and info.value.data["type"] in ("ValueError",
                                                                         "TypeError")
        live = _wire_shape(events)
        assert live[-3:] == ["ToolResult:error", "StepInterrupted", "TurnEnd"]
        assert (await client.prompt("ok")).status == "finished"
    events.clear()
    async with connect_wire(cmd, env=env, on_event=on_event, event_buffer=0) as client:
        await client.replay()
    replayed = _wire_shape(events)
    first_end = replayed.index("TurnEnd")
    assert replayed[:first_end + 1][-3:] == ["ToolResult:error", "StepInterrupted", "TurnEnd"]


def _wire_shape(events: list[Any]) -> list[str]:
    shape = []
    for e in events:
        if isinstance(e, m.ToolResult):
            shape.append("ToolResult:error" if e.return_value.is_error else "ToolResult:ok")
        elif isinstance(e, (m.StepInterrupted, m.TurnEnd, m.ToolCall)):
            shape.append(type(e).__name__)
    return shape



class FailsWhileAsking(Agent):
    """Raises once the client holds its permission request."""

    def __init__(self) -> None:
        self.held = anyio.Event()

    async def prompt(self, turn: Turn) -> StopReason:
        call = await turn.start_tool("search", "Searching", kind=ToolKind.SEARCH)
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn.request_approval, call, "search", "Search the web")
            await self.held.wait()
            raise ValueError("gave up waiting")
        return StopReason.END_TURN  # pragma: no cover


async def test_a_pending_permission_request_is_withdrawn(tmp_path: Path) -> None:
    agent = FailsWhileAsking()
    withdrawn = anyio.Event()

    async def on_permission(request: Any) -> str:
        agent.held.set()
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()  # the agent cancelled its request
        return "never"  # pragma: no cover

    ours, theirs = memory_pair()
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_acp(agent, theirs, stop=stop))
        async with ClientConnection(ours, on_permission=on_permission) as client:
            await client.initialize()
            sid = (await client.new_session(str(tmp_path))).session_id
            updates: list[Any] = []
            with pytest.raises(RpcError) as info:
                async with client.prompt(sid, "go") as turn:
                    async for update in turn:
                        updates.append(update)
            assert info.value.data == {"type": "ValueError", "message": "gave up waiting"}
            await withdrawn.wait()
            assert _call_statuses(updates) == ["pending", "failed"]
        stop.set()
