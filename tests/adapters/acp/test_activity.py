"""ACP rendering of titles, retries, compaction, streamed arguments, commands, sub-agents; logout.

Golden ``session/update``\\ s (every message is also checked against the
schema and the capability gates by the raw client).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from wireproto.adapters.acp.activity import PARENT_META
from wireproto.agent.api import Agent, AuthMethod, SlashCommand
from wireproto.agent.events import StopReason, ToolStatus
from wireproto.agent.runtime import Runtime
from wireproto.agent.turn import Turn

from .conftest import OpenAcp

pytestmark = pytest.mark.anyio

NOTICES = {"session": {"notices": {}}}


async def _session(client: Any, workdir: Path, caps: Any = None, *, commands: bool = True) -> str:
    await client.initialize(caps)
    return str((await client.new_session(str(workdir), commands=commands))["sessionId"])


def text_of(updates: list[Any]) -> str:
    return "".join(u["content"]["text"] for u in updates
                   if u["sessionUpdate"] == "agent_message_chunk")


def after(client: Any, start: int, sid: str, kind: str) -> list[Any]:
    return [m["params"]["update"] for m in client.log[start:]
            if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
            and m["params"]["update"]["sessionUpdate"] == kind]


async def test_title_sets_session_info_and_the_list(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        start = len(client.log)
        _, turn = await client.prompt(sid, "/title Fix the parser")
        listed = await client.result("session/list", {})
    assert text_of(turn) == "Title set"
    infos = after(client, start, sid, "session_info_update")
    assert [i["title"] for i in infos] == ["Fix the parser", "Fix the parser"]
    assert set(infos[0]) == {"sessionUpdate", "title", "updatedAt"}
    assert listed["sessions"][0]["title"] == "Fix the parser"


@pytest.mark.parametrize("caps", [NOTICES, None])
async def test_retry_is_a_warning_notice_when_advertised(
    acp: OpenAcp, workdir: Path, caps: Any
) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, caps)
        start = len(client.log)
        _, turn = await client.prompt(sid, "/retry")
    assert text_of(turn) == "Recovered"
    notices = after(client, start, sid, "notice")
    if caps is None:
        assert notices == []
    else:
        assert notices == [{
            "sessionUpdate": "notice", "severity": "warning",
            "title": "Retrying step 1 (attempt 2 of 3)",
            "description": "The step failed with TimeoutError; retrying in 0 s.",
        }]


async def test_subagent_text_is_the_tool_call_content(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, "/subagent hello from below")
    [call] = [u for u in turn if u["sessionUpdate"] == "tool_call"]
    assert (call["title"], call["kind"], call["status"]) == ("Sub-agent", "think", "in_progress")
    updates = [u for u in turn if u["sessionUpdate"] == "tool_call_update"]
    contents = [u["content"][0]["content"]["text"] for u in updates]
    assert len(contents) >= 3  # streamed: the text so far, then the final content
    assert all(b.startswith(a) for a, b in itertools.pairwise(contents))
    assert contents[-2] == contents[-1] == "hello from below"
    assert updates[-1]["status"] == "completed"
    assert {u["toolCallId"] for u in updates} == {call["toolCallId"]}
    assert text_of(turn) == "Subagent done"


class Busy(Agent):
    """Reports compaction, streams arguments, changes commands, runs a sub-agent's tool."""

    commands = (SlashCommand("go", "Go"),)
    supports_logout = True
    auth_methods = (AuthMethod("login", "Log in"),)
    logged_out = 0

    async def authenticate(self, method_id: str) -> None:
        return None

    async def logout(self) -> None:
        Busy.logged_out += 1

    async def prompt(self, turn: Turn) -> StopReason:
        async with turn.compaction() as summary:
            summary.append("We talked about parsers.")
        call = await turn.start_tool("search", "Search", id="call_1")
        await turn.stream_arguments(call, '{"query": ')
        await turn.stream_arguments(call, '"parser"}')
        sub = turn.subagent(call, agent_id="a1", subagent_type="explorer")
        inner = await turn.start_tool("grep", "Grep", id="call_2")  # the sub-agent's call
        await inner.complete()
        await sub.emit(_started("call_9"))
        await call.complete()
        await turn.side_question("Why?", "Because.")
        await turn.set_commands([SlashCommand("go", "Go"), SlashCommand("stop", "Stop",
                                                                         input_hint="WHY")])
        return StopReason.END_TURN


def _started(call_id: str) -> Any:
    from wireproto.agent.events import ToolCallStarted

    return ToolCallStarted(id=call_id, name="read", title="Read", status=ToolStatus.COMPLETED)


@pytest.mark.parametrize("compaction", [True, False])
async def test_progress_events(acp: OpenAcp, workdir: Path, compaction: bool) -> None:
    caps: dict[str, Any] = {"session": {"notices": {}}}
    if compaction:
        caps["session"]["compaction"] = {}
    async with acp(Busy()) as client:
        sid = await _session(client, workdir, caps)
        start = len(client.log)
        await client.prompt(sid, "go")
    updates = [m["params"]["update"] for m in client.log[start:]
               if m.get("method") == "session/update"]
    kinds = [u["sessionUpdate"] for u in updates]
    if compaction:
        begin, end = [u for u in updates if u["sessionUpdate"] == "compaction_update"]
        assert begin == {"sessionUpdate": "compaction_update",
                         "compactionId": begin["compactionId"], "status": "in_progress"}
        assert end == {"sessionUpdate": "compaction_update", "compactionId": begin["compactionId"],
                       "status": "completed",
                       "summary": [{"type": "text", "text": "We talked about parsers."}]}
    else:
        assert "compaction_update" not in kinds
        assert [u["title"] for u in updates if u["sessionUpdate"] == "notice"] == [
            "Compacting the context", "Context compacted"]
    raw = [u.get("rawInput") for u in updates
           if u["sessionUpdate"] == "tool_call_update" and "rawInput" in u]
    assert raw == ['{"query": ', {"query": "parser"}]
    nested = [u for u in updates if u.get("_meta") == {PARENT_META: "call_1"}]
    assert [(u["sessionUpdate"], u["toolCallId"]) for u in nested] == [("tool_call", "call_9")]
    [commands] = [u for u in updates if u["sessionUpdate"] == "available_commands_update"]
    assert commands["availableCommands"] == [
        {"name": "go", "description": "Go"},
        {"name": "stop", "description": "Stop", "input": {"hint": "WHY"}},
    ]


async def test_logout_is_advertised_and_routed(acp: OpenAcp, workdir: Path) -> None:
    Busy.logged_out = 0
    async with acp(Busy(), require_auth=True) as client:
        result = await client.initialize()
        assert result["agentCapabilities"]["auth"] == {"logout": {}}
        assert await client.result("authenticate", {"methodId": "login"}) == {}
        await client.new_session(str(workdir), commands=True)
        assert await client.result("logout", {}) == {}
        error = await client.error("session/new", {"cwd": str(workdir), "mcpServers": []})
    assert Busy.logged_out == 1
    assert error["code"] == -32000  # logged out: authentication needed again


async def test_no_logout_without_support(acp: OpenAcp) -> None:
    async with acp() as client:
        result = await client.initialize()
        assert "logout" not in result["agentCapabilities"].get("auth", {})
        error = await client.error("logout", {})
    assert error["code"] == -32601


async def test_a_load_replays_the_same_updates(acp: OpenAcp, workdir: Path) -> None:
    runtime = Runtime(Busy())
    caps = {"session": {"compaction": {}, "notices": {}}}
    async with acp(runtime) as client:
        sid = await _session(client, workdir, caps)
        start = len(client.log)
        await client.prompt(sid, "go")
        live = [m["params"]["update"] for m in client.log[start:]
                if m.get("method") == "session/update"]
    async with acp(runtime) as client:  # a new connection: the checker knows no session
        await client.initialize(caps)
        response = await client.call("session/load", {"sessionId": sid, "cwd": str(workdir),
                                                      "mcpServers": []})
        replayed = [m["params"]["update"] for m in client.log[:client.index(response)]
                    if m.get("method") == "session/update"]

    def streamed(updates: list[Any]) -> list[Any]:
        return [(u["toolCallId"], u.get("rawInput"), u.get("content"))
                for u in updates if u["sessionUpdate"] == "tool_call_update"]

    assert streamed(replayed) == streamed(live)  # accumulation restarts with each tool call
    assert {u["sessionUpdate"] for u in replayed} <= {"user_message_chunk", "tool_call",
                                                       "tool_call_update"}
