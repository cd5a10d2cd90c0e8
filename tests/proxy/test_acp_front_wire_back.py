"""ACP front, Wire backend: a real ``wireproto proxy --serve acp`` process in front of
real Wire agents (the demo agent, and a test agent for usage and steps), driven by our
ACP client. One test per row of the mapping table in docs/proxy.md."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.errors import RpcError
from wireproto.transports.subprocess import open_subprocess

pytestmark = pytest.mark.anyio

WIREPROTO = [sys.executable, "-m", "wireproto"]
HELPERS = Path(__file__).resolve().parent.parent / "helpers"


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["WIREPROTO_HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), env.get("PYTHONPATH", "")])
    return env


@asynccontextmanager
async def proxied(tmp_path: Path, *agent: str, on_permission: Any = None
                  ) -> AsyncIterator[ClientConnection]:
    cmd = [*WIREPROTO, "proxy", "--serve", "acp", "--agent-protocol", "wire", "--",
           *WIREPROTO, "wire", *agent]
    async with open_subprocess(cmd, env=_env(tmp_path), stderr="log") as child, \
            ClientConnection(child, on_permission=on_permission) as acp:
        await acp.initialize()
        yield acp


async def _turn(acp: ClientConnection, sid: str, text: str) -> tuple[str, list[Any]]:
    updates = []
    async with acp.prompt(sid, text) as turn:
        async for update in turn:
            updates.append(update)
    assert turn.stop_reason is not None
    return turn.stop_reason, updates


def _text(updates: list[Any], kind: type = s.AgentMessageChunk) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, kind))


async def test_text_commands_plan_and_thoughts(tmp_path: Path) -> None:
    async with proxied(tmp_path) as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        stop, updates = await _turn(acp, sid, "hello proxy")
        assert stop == "end_turn"
        assert _text(updates) == "You said: hello proxy"
        # slash commands: the backend's initialize list, advertised to ACP
        names = {c.name for c in acp.sessions[sid].available_commands}
        assert {"plan", "write", "slow"} <= names
        # plans <-> SetTodoList
        stop, updates = await _turn(acp, sid, "/plan")
        plans = [u for u in updates if isinstance(u, s.Plan)]
        assert [e.status for e in plans[-1].entries] == ["completed"] * 3
        assert next(e.content for e in plans[0].entries) == "Understand the request"
        assert not [u for u in updates if isinstance(u, s.ToolCall)]
        # thoughts
        stop, updates = await _turn(acp, sid, "/think deeply about it")
        assert _text(updates, s.AgentThoughtChunk) == "deeply about it"
        assert _text(updates) == "Done thinking"


async def test_approvals_allow_once_reject_and_allow_always(tmp_path: Path) -> None:
    answers = ["allow_once", "reject_once", "allow_always"]
    asked: list[s.RequestPermissionRequest] = []

    async def on_permission(request: s.RequestPermissionRequest) -> str:
        asked.append(request)
        return answers[len(asked) - 1]

    async with proxied(tmp_path, on_permission=on_permission) as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        _stop, updates = await _turn(acp, sid, "/write a.txt first")
        assert (tmp_path / "a.txt").read_text() == "first"
        assert _text(updates) == "Wrote a.txt"
        started = [u for u in updates if isinstance(u, s.ToolCall)]
        assert started and started[0].title
        finals = [u for u in updates if isinstance(u, s.ToolCallProgress)
                  and u.status == "completed"]
        assert finals, updates
        # the approval showed the diff of the write
        diffs = [c for c in asked[0].tool_call.content or [] if isinstance(c, s.Diff)]
        assert diffs and diffs[0].new_text == "first"
        _stop, updates = await _turn(acp, sid, "/write b.txt second")
        assert _text(updates) == "Write to b.txt rejected"
        assert not (tmp_path / "b.txt").exists()
        assert [u for u in updates if isinstance(u, s.ToolCallProgress)
                and u.status == "failed"]
        # allow_always -> approve_for_session: the next write is not asked
        await _turn(acp, sid, "/write c.txt third")
        _stop, updates = await _turn(acp, sid, "/write d.txt fourth")
        assert len(asked) == 3
        assert (tmp_path / "d.txt").read_text() == "fourth"


async def test_cancel_ends_the_backend_turn(tmp_path: Path) -> None:
    async with proxied(tmp_path) as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        async with acp.prompt(sid, "/slow 1000000") as turn:
            async for update in turn:
                if isinstance(update, s.AgentMessageChunk):
                    await acp.cancel(sid)
                    break
            async for _ in turn:
                pass
        assert turn.stop_reason == "cancelled"
        # the backend is free again: the next prompt runs
        stop, updates = await _turn(acp, sid, "after")
        assert (stop, _text(updates)) == ("end_turn", "You said: after")


async def test_load_respawns_and_replays_and_list_comes_from_the_proxy(tmp_path: Path) -> None:
    async with proxied(tmp_path) as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        await _turn(acp, sid, "remember me")
    async with proxied(tmp_path) as acp:
        listed = await acp.list_sessions()
        assert [x.session_id for x in listed.sessions] == [sid]
        assert listed.sessions[0].title == "remember me"
        loaded = await acp.load_session(sid, str(tmp_path))
        kinds = [type(u) for u in loaded.history]
        assert s.UserMessageChunk in kinds
        assert _text(loaded.history) == "You said: remember me"
        # the respawned backend resumed the same session: its own history has both turns
        _stop, updates = await _turn(acp, sid, "again")
        assert _text(updates) == "You said: again"
    stored = (tmp_path / "home" / "sessions" / f"{sid}.jsonl").read_text()
    assert "remember me" in stored and "again" in stored


AGENT = ("--agent", "proxy_wire_agent:agent")


async def test_usage_steps_failed_tools_and_max_steps(tmp_path: Path) -> None:
    async with proxied(tmp_path, *AGENT) as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        stop, updates = await _turn(acp, sid, "go")
        assert stop == "end_turn"
        usage = [u for u in updates if isinstance(u, s.UsageUpdate)]
        assert usage and (usage[0].used, usage[0].size) == (1200, 8000)
        failed = [u for u in updates if isinstance(u, s.ToolCallProgress)
                  and u.status == "failed"]
        assert failed and "no match" in str(failed[0].content)
        started = [u for u in updates if isinstance(u, s.ToolCall)]
        assert started[0].raw_input == {"pattern": "x"}
        assert _text(updates) == "step onestep two"
        # max_steps_reached -> max_turn_requests
        stop, _ = await _turn(acp, sid, "limit")
        assert stop == "max_turn_requests"


async def test_question_without_elicitation_is_dismissed_and_logged(tmp_path: Path) -> None:
    async with proxied(tmp_path, *AGENT) as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        stop, updates = await _turn(acp, sid, "ask")
        assert (stop, _text(updates)) == ("end_turn", "answer: []")
    logs = "".join(p.read_text() for p in (tmp_path / "home" / "logs").glob("proxy-*.log"))
    assert logs.count("questions cannot be translated") == 1


async def test_modes_and_thinking_reach_the_wire_backend(tmp_path: Path) -> None:
    async with proxied(tmp_path) as acp:
        new = await acp.new_session(str(tmp_path))
        sid = new.session_id
        ids = {o.id for o in acp.sessions[sid].config_options}
        assert {"mode", "thinking"} <= ids
        # mode plan -> Wire set_plan_mode on the backend
        await acp.set_config_option(sid, "mode", "plan")
        # thinking -> the backend is respawned with --thinking, same session
        await acp.set_config_option(sid, "thinking", True)
        _stop, updates = await _turn(acp, sid, "still here")
        assert _text(updates) == "You said: still here"
    backend = (tmp_path / "home" / "sessions" / f"{sid}.jsonl").read_text()
    assert '"type":"plan_mode","enabled":true' in backend
    assert '"option_id":"thinking","value":true' in backend


async def test_client_mcp_servers_have_no_wire_counterpart_and_are_logged(
    tmp_path: Path
) -> None:
    server = s.McpServerHttp(name="docs", url="http://127.0.0.1:9/mcp", headers=[])
    async with proxied(tmp_path) as acp:
        sid = (await acp.new_session(str(tmp_path), [server])).session_id
        stop, _ = await _turn(acp, sid, "hi")
        assert stop == "end_turn"
    logs = "".join(p.read_text() for p in (tmp_path / "home" / "logs").glob("proxy-*.log"))
    assert "MCP servers from the client cannot be translated" in logs


async def test_a_backend_that_dies_gives_clear_errors(tmp_path: Path) -> None:
    cmd = [*WIREPROTO, "proxy", "--serve", "acp", "--agent-protocol", "wire", "--",
           sys.executable, str(HELPERS / "wire_dies_on_prompt.py")]
    async with open_subprocess(cmd, env=_env(tmp_path), stderr="log") as child, \
            ClientConnection(child) as acp:
        await acp.initialize()
        sid = (await acp.new_session(str(tmp_path))).session_id
        with pytest.raises(RpcError) as first:
            await _turn(acp, sid, "hello")
        with pytest.raises(RpcError) as second:
            await _turn(acp, sid, "again")
        assert "load the session again" in second.value.message
        assert "exited" in first.value.message


async def test_a_backend_turn_that_raises_shows_the_backends_exception(tmp_path: Path) -> None:
    async with proxied(tmp_path, "--agent", f"{HELPERS / 'raising_agent.py'}:agent") as acp:
        sid = (await acp.new_session(str(tmp_path))).session_id
        with pytest.raises(RpcError) as failed:
            await _turn(acp, sid, "hello")
        assert (failed.value.code, failed.value.message) == (-32603, "Internal error")
        assert failed.value.data == {"type": "ValueError", "message": "the model is down (hello)"}


async def test_a_cwd_that_is_no_directory_is_invalid_params_and_leaves_no_session(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("")
    async with proxied(tmp_path) as acp:
        for cwd in (tmp_path / "missing", tmp_path / "file"):
            with pytest.raises(RpcError) as refused:
                await acp.new_session(str(cwd))
            assert (refused.value.code, refused.value.message) == (
                -32602, f"cwd {cwd}: no such directory (the Wire agent needs it)")
        assert (await acp.list_sessions()).sessions == []
        sid = (await acp.new_session(str(tmp_path))).session_id
        assert [i.session_id for i in (await acp.list_sessions()).sessions] == [sid]
