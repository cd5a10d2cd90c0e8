"""Session setup and management: new, load (replay), resume, list, close, delete.

Protocol rules: protocol-acp.md#sessions, protocol-acp.md#session-updates,
protocol-acp.md#ordering, protocol-acp.md#mcp-servers, protocol-acp.md#load-and-replay; demo
behaviour: docs/demo-agent.md "Sessions" and "Session options".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.agent.api import Session
from wireproto.agent.demo import COMMANDS, DemoAgent
from wireproto.agent.events import Notice

from ..conftest import FULL_CAPS, OpenAcp, chunk

pytestmark = pytest.mark.anyio

ADVERTISED = [
    {"name": c.name, "description": c.description, **({"input": {"hint": c.input_hint}}
                                                      if c.input_hint else {})}
    for c, _ in COMMANDS
]


def _index(log: list[Any], predicate: Any) -> int:
    return next(i for i, m in enumerate(log) if predicate(m))


async def test_new_session_answers_options_and_modes(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        result = await client.new_session(str(workdir))
    assert result["sessionId"].startswith("sess_")
    assert result["modes"] == {
        "currentModeId": "ask",
        "availableModes": [
            {"id": "ask", "name": "Ask", "description": "Ask before acting"},
            {"id": "code", "name": "Code", "description": "Write code"},
        ],
    }
    options = {o["id"]: o for o in result["configOptions"]}
    assert list(options) == ["mode", "model", "thinking"]
    assert options["mode"]["category"] == "mode"
    assert options["mode"]["currentValue"] == "ask"
    assert options["model"] == {
        "id": "model", "name": "Model", "category": "model", "type": "select",
        "currentValue": "demo-small",
        "options": [{"value": "demo-small", "name": "Demo small"},
                    {"value": "demo-large", "name": "Demo large"}],
    }
    # no boolean capability: the thinking option falls back to a select off/on
    assert options["thinking"] == {
        "id": "thinking", "name": "Thinking", "category": "thought_level", "type": "select",
        "currentValue": "off",
        "options": [{"value": "off", "name": "Off"}, {"value": "on", "name": "On"}],
    }


async def test_boolean_option_when_advertised(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize({"session": {"configOptions": {"boolean": {}}}})
        result = await client.new_session(str(workdir))
    thinking = result["configOptions"][2]
    assert thinking == {"id": "thinking", "name": "Thinking", "category": "thought_level",
                        "type": "boolean", "currentValue": False}


async def test_commands_are_advertised_right_after_the_response(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp() as client:
        await client.initialize()
        rid = await client.request("session/new", {"cwd": str(workdir), "mcpServers": []})
        response = await client.response(rid)
        update = await client.following(response)
    sid = response["result"]["sessionId"]
    assert update["params"] == {
        "sessionId": sid,
        "update": {"sessionUpdate": "available_commands_update", "availableCommands": ADVERTISED},
    }
    assert client.index(response) + 1 == client.index(update)


async def _history(client: Any, workdir: Path) -> tuple[str, list[Any]]:
    sid = (await client.new_session(str(workdir)))["sessionId"]
    _, first = await client.prompt(sid, "hello there")
    _, second = await client.prompt(sid, "/think deep thoughts")
    (workdir / "a.txt").write_text("one\ntwo\n")
    _, third = await client.prompt(sid, "/read a.txt")
    _, fourth = await client.prompt(sid, "/plan")
    return sid, first + second + third + fourth


async def test_load_replays_history_with_original_message_ids_before_answering(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp() as client:
        await client.initialize()
        sid, live = await _history(client, workdir)
    async with acp() as client:  # a new connection (and a fresh runtime)
        await client.initialize()
        start = len(client.log)
        rid = await client.request(
            "session/load", {"sessionId": sid, "cwd": str(workdir), "mcpServers": []}
        )
        response = await client.response(rid)
        after = await client.following(response)
    assert "error" not in response
    assert response["result"]["configOptions"][0]["id"] == "mode"
    replay = [m["params"]["update"] for m in client.log[start: client.index(response)]]
    assert after["params"]["update"]["sessionUpdate"] == "available_commands_update"
    # the replay is the live traffic plus the user's prompts, with the same message ids
    assert [u for u in replay if u["sessionUpdate"] != "user_message_chunk"] == live
    users = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in users] == [
        "hello there", "/think deep thoughts", "/read a.txt", "/plan",
    ]
    assert len({u["messageId"] for u in users}) == 4
    chunks = [u for u in replay if u["sessionUpdate"].endswith("_chunk")]
    assert all(u.get("messageId") for u in chunks)
    tool_updates = [u for u in replay if u["sessionUpdate"] == "tool_call_update"]
    assert tool_updates[-1]["status"] == "completed"


async def _load(client: Any, params: dict[str, Any]) -> list[Any]:
    """Load; return what was written up to the commands update that follows the response."""
    start = len(client.log)
    await client.result("session/load", params)
    await client.wait_for(lambda m: m.get("method") == "session/update"
                          and m["params"]["update"]["sessionUpdate"]
                          == "available_commands_update")
    return [{**m, "id": None} if "id" in m else m for m in client.log[start:]]


async def test_load_twice_replays_the_same(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid, _ = await _history(client, workdir)
        params = {"sessionId": sid, "cwd": str(workdir), "mcpServers": []}
        await client.result("session/close", {"sessionId": sid})
        first = await _load(client, params)
        second = await _load(client, params)
    assert first == second
    assert len(first) > 10


async def test_resume_sends_no_history(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid, _ = await _history(client, workdir)
    async with acp() as client:
        await client.initialize()
        rid = await client.request("session/resume", {"sessionId": sid, "cwd": str(workdir)})
        response = await client.response(rid)
        commands = await client.following(response)
        _, turn = await client.prompt(sid, "again")
    assert client.log[0]["id"] == 0 and client.log[1] is response  # nothing in between
    assert response["result"]["modes"]["currentModeId"] == "ask"
    assert commands["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert "".join(u["content"]["text"] for u in turn) == "You said: again"


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
async def test_unknown_session_is_not_found(acp: OpenAcp, workdir: Path, method: str) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error(
            method, {"sessionId": "sess_nope", "cwd": str(workdir), "mcpServers": []}
        )
        bad = await client.error(
            method, {"sessionId": "../../etc/passwd", "cwd": str(workdir), "mcpServers": []}
        )
    assert error["code"] == -32002
    assert bad["code"] == -32002


async def test_load_requires_mcp_servers(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        error = await client.error("session/load", {"sessionId": sid, "cwd": str(workdir)})
        new_error = await client.error("session/new", {"cwd": str(workdir)})
    assert error["code"] == new_error["code"] == -32602
    assert "mcpServers" in error["message"] and "mcpServers" in new_error["message"]


async def test_list_filters_by_cwd_and_paginates(
    acp: OpenAcp, workdir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with acp() as client:
        await client.initialize()
        ids = [(await client.new_session(str(workdir)))["sessionId"] for _ in range(52)]
        elsewhere = (await client.new_session(str(other)))["sessionId"]
        await client.prompt(elsewhere, "first line\nsecond line")
        page1 = await client.result("session/list", {"cwd": str(workdir)})
        page2 = await client.result(
            "session/list", {"cwd": str(workdir), "cursor": page1["nextCursor"]}
        )
        everything = await client.result("session/list", {})
        only_other = await client.result("session/list", {"cwd": str(other), "cursor": None})
        bad_cursor = await client.error("session/list", {"cursor": "garbage!"})
    assert len(page1["sessions"]) == 50
    assert len(page2["sessions"]) == 2 and "nextCursor" not in page2
    listed = [s["sessionId"] for s in page1["sessions"] + page2["sessions"]]
    assert sorted(listed) == sorted(ids)
    assert all(s["cwd"] == str(workdir) for s in page1["sessions"])
    assert everything["sessions"][0]["sessionId"] == elsewhere  # newest activity first
    assert only_other["sessions"] == [
        {"sessionId": elsewhere, "cwd": str(other), "title": "first line",
         "updatedAt": only_other["sessions"][0]["updatedAt"]},
    ]
    assert "T" in only_other["sessions"][0]["updatedAt"]
    assert bad_cursor["code"] == -32602


async def test_close_cancels_and_frees_the_session(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        assert await client.result("session/close", {"sessionId": sid}) == {}
        error = await client.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
        )
        again = await client.error("session/close", {"sessionId": sid})
    assert error["code"] == again["code"] == -32002


async def test_close_during_a_turn_ends_it_cancelled(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        rid = await client.request("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "/slow 1000"}]})
        await client.wait_for(chunk("tick 1"))
        assert await client.result("session/close", {"sessionId": sid}) == {}
        response = await client.response(rid)
    assert response["result"] == {"stopReason": "cancelled"}


async def test_delete_is_idempotent(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        assert await client.result("session/delete", {"sessionId": sid}) == {}
        assert await client.result("session/delete", {"sessionId": sid}) == {}
        assert await client.result("session/delete", {"sessionId": "sess_never"}) == {}
        listed = await client.result("session/list", {})
        error = await client.error(
            "session/load", {"sessionId": sid, "cwd": str(workdir), "mcpServers": []}
        )
    assert listed["sessions"] == []
    assert error["code"] == -32002


async def test_sessions_of_another_connection_are_not_reachable(
    acp: OpenAcp, workdir: Path
) -> None:
    from wireproto.agent.runtime import Runtime

    runtime = Runtime(DemoAgent())
    async with acp(runtime) as first, acp(runtime) as second:
        await first.initialize()
        await second.initialize()
        sid = (await first.new_session(str(workdir)))["sessionId"]
        error = await second.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
        )
        listed = await second.result("session/list", {})
    assert error["code"] == -32002
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]


async def test_mode_state_survives_load(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize(FULL_CAPS)
        sid = (await client.new_session(str(workdir)))["sessionId"]
        await client.result("session/set_mode", {"sessionId": sid, "modeId": "code"})
        await client.result("session/set_config_option",
                            {"sessionId": sid, "configId": "thinking", "type": "boolean",
                             "value": True})
    async with acp() as client:
        await client.initialize(FULL_CAPS)
        result = await client.result(
            "session/load", {"sessionId": sid, "cwd": str(workdir), "mcpServers": None}
        )
    assert result["modes"]["currentModeId"] == "code"
    assert result["configOptions"][0]["currentValue"] == "code"
    assert result["configOptions"][2]["currentValue"] is True


class Announcing(DemoAgent):
    """Announces every session start with a notice (sent while the setup is running)."""

    async def session_started(self, session: Session, how: str) -> None:
        assert session.channel is not None
        await session.channel.send(session, Notice("info", f"session {how}"))


@pytest.mark.parametrize("method", ["session/new", "session/load", "session/resume"])
async def test_updates_sent_during_setup_follow_the_response(
    acp: OpenAcp, workdir: Path, method: str
) -> None:
    caps = {"session": {"notices": {}}}
    async with acp(Announcing()) as client:
        await client.initialize(caps)
        sid = (await client.new_session(str(workdir)))["sessionId"]
        await client.prompt(sid, "something to replay")
        params = {"cwd": str(workdir), "mcpServers": []}
        if method != "session/new":
            await client.result("session/close", {"sessionId": sid})
            params["sessionId"] = sid
        response = await client.call(method, params)
        commands = await client.following(response)
        notice = await client.following(commands)
    assert commands["params"]["update"]["sessionUpdate"] == "available_commands_update"
    how = {"session/new": "new", "session/load": "load", "session/resume": "resume"}[method]
    assert notice["params"]["update"] == {"sessionUpdate": "notice", "severity": "info",
                                          "title": f"session {how}"}


async def test_serve_acp_keeps_sessions_in_memory_unless_given_a_store(
    acp: OpenAcp, workdir: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    async with acp(store=None) as client:  # serve_acp(agent): the default
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        await client.prompt(sid, "hello")
        listed = await client.result("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]
    assert not await anyio.Path(home).exists()  # nothing written
    assert not await anyio.Path(tmp_path / "user-home").exists()
    async with acp(store=None) as client:  # a new runtime, a new (empty) memory store
        await client.initialize()
        assert (await client.result("session/list", {}))["sessions"] == []

    chosen = tmp_path / "chosen"
    async with acp(store=chosen) as client:  # serve_acp(agent, store=DIR)
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
    assert await anyio.Path(chosen / f"{sid}.jsonl").is_file()


async def test_serve_acp_refuses_a_store_with_a_runtime() -> None:
    from wireproto.adapters.acp import serve_acp
    from wireproto.agent.runtime import Runtime

    with pytest.raises(ValueError, match="Runtime"):
        await serve_acp(Runtime(DemoAgent()), store="/tmp/x")
