"""Prompt turns of the demo agent over ACP: content blocks and every slash command.

Protocol rules: protocol-acp.md#prompt-turn, protocol-acp.md#content-blocks,
protocol-acp.md#session-updates, protocol-acp.md#tool-calls, protocol-acp.md#permissions,
protocol-acp.md#stop-reasons, protocol-acp.md#file-system, protocol-acp.md#gating,
protocol-acp.md#ordering, protocol-acp.md#load-and-replay, protocol-acp.md#tool-call-content;
demo behaviour: docs/demo-agent.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from wireproto.agent.demo import COMMANDS

from ..conftest import FULL_CAPS, OpenAcp, Reject

pytestmark = pytest.mark.anyio


def text_of(updates: list[Any], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


def of_kind(updates: list[Any], kind: str) -> list[Any]:
    return [u for u in updates if u["sessionUpdate"] == kind]


async def _session(client: Any, workdir: Path, caps: dict[str, Any] | None = None) -> str:
    await client.initialize(caps)
    return str((await client.new_session(str(workdir)))["sessionId"])


async def test_echo_streams_chunks_of_one_message(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        response, turn = await client.prompt(sid, "Hello, agent")
        _, again = await client.prompt(sid, "Hello, agent")
    assert response["result"] == {"stopReason": "end_turn"}
    assert all(u["sessionUpdate"] == "agent_message_chunk" for u in turn)
    assert len(turn) >= 2
    assert text_of(turn) == "You said: Hello, agent"
    assert len({u["messageId"] for u in turn}) == 1
    assert turn[0]["messageId"] != again[0]["messageId"]  # a new id per reply


async def test_each_turn_ends_with_a_session_info_update(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        first, _ = await client.prompt(sid, "Fix the parser\nplease")
        second, _ = await client.prompt(sid, "and test it")
        listed = await client.result("session/list", {})
    infos = client.updates(sid, "session_info_update")
    assert [i["title"] for i in infos] == ["Fix the parser"] * 2  # the first prompt's line
    assert listed["sessions"][0]["title"] == "Fix the parser"
    assert infos[0]["updatedAt"] <= infos[1]["updatedAt"]  # same format as session/list's
    assert len(infos[1]["updatedAt"]) == len(listed["sessions"][0]["updatedAt"])
    for info, response in zip(infos, (first, second), strict=True):  # before the response
        last = next(m for m in reversed(client.log)
                    if m.get("params", {}).get("update") is info)
        assert client.index(last) < client.index(response)


async def test_content_blocks_are_rendered_in_order(
    acp: OpenAcp, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocks = [
        {"type": "text", "text": "Look:"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "resource", "resource": {"uri": "file:///p/a&b.py", "text": "x = 1\n",
                                          "mimeType": "text/x-python"}},
        {"type": "resource", "resource": {"uri": "file:///p/bin", "blob": "AAEC"}},
        {"type": "resource_link", "uri": "file:///p/spec.pdf", "name": 'the "spec"',
         "mimeType": "application/pdf", "size": 42},
    ]
    async with acp() as client:
        sid = await _session(client, workdir)
        response, turn = await client.prompt(sid, blocks)
    assert response["result"]["stopReason"] == "end_turn"
    assert text_of(turn) == (
        "You said: Look:\n[image image/png]\n"
        '<resource uri="file:///p/a&amp;b.py">x = 1\n</resource>\n'
        '<resource_link uri="file:///p/spec.pdf" name="the &quot;spec&quot;"/>'
    )
    assert any(r.levelno == logging.WARNING and "file:///p/bin" in r.getMessage()
               for r in caplog.records)  # the blob was dropped with a warning


async def test_content_beyond_the_prompt_capabilities_is_invalid(
    acp: OpenAcp, workdir: Path
) -> None:
    """Audio is not advertised (``promptCapabilities.audio`` false)."""
    audio = {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}
    async with acp() as client:
        sid = await _session(client, workdir)
        error = await client.error("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "hear this"}, audio]})
        _, turn = await client.prompt(sid, "still fine")
    assert error["code"] == -32602
    assert error["data"]["path"] == "$.prompt[1]"
    assert "audio" in error["message"]
    assert text_of(turn) == "You said: still fine"  # the refused prompt left no trace


async def test_help_lists_the_advertised_commands(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, "/help")
    assert text_of(turn) == "\n".join(f"/{c.name} - {c.description}" for c, _ in COMMANDS)


async def test_read_through_the_client(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        client.answers["fs/read_text_file"] = lambda p: {"content": "a\nb\nc"}
        sid = await _session(client, workdir, FULL_CAPS)
        response, turn = await client.prompt(sid, "/read notes.txt")
    full = str(workdir / "notes.txt")
    request = next(m for m in client.log if m.get("method") == "fs/read_text_file")
    assert request["params"] == {"sessionId": sid, "path": full}
    call = of_kind(turn, "tool_call")[0]
    assert call == {
        "sessionUpdate": "tool_call", "toolCallId": call["toolCallId"], "title": "Read notes.txt",
        "name": "read", "kind": "read", "status": "in_progress",
        "locations": [{"path": full}], "rawInput": {"path": "notes.txt"},
    }
    done = of_kind(turn, "tool_call_update")[-1]
    assert done["status"] == "completed"
    assert done["content"] == [{"type": "content", "content": {"type": "text", "text": "a\nb\nc"}}]
    assert text_of(turn) == "Read 3 lines from notes.txt"
    assert response["result"]["stopReason"] == "end_turn"


async def test_read_locally_without_the_capability(acp: OpenAcp, workdir: Path) -> None:
    (workdir / "local.txt").write_text("one\ntwo\n")
    async with acp() as client:
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, "/read local.txt")
        _, missing = await client.prompt(sid, "/read nope.txt")
    assert not any(m.get("method", "").startswith("fs/") for m in client.log)
    assert text_of(turn) == "Read 2 lines from local.txt"
    assert of_kind(missing, "tool_call_update")[-1]["status"] == "failed"
    assert text_of(missing) == "Cannot read nope.txt: No such file or directory"


async def test_read_error_from_the_client(acp: OpenAcp, workdir: Path) -> None:
    def refuse(params: Any) -> Any:
        raise Reject(-32002, "Resource not found")

    async with acp() as client:
        client.answers["fs/read_text_file"] = refuse
        sid = await _session(client, workdir, FULL_CAPS)
        _, turn = await client.prompt(sid, "/read gone.txt")
    assert of_kind(turn, "tool_call_update")[-1]["status"] == "failed"
    assert text_of(turn) == "Cannot read gone.txt: Resource not found"



async def test_an_invalid_read_answer_fails_the_read_not_the_turn(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp() as client:
        client.answers["fs/read_text_file"] = lambda p: {"content": 5}
        sid = await _session(client, workdir, FULL_CAPS)
        response, turn = await client.prompt(sid, "/read notes.txt")
    assert response["result"]["stopReason"] == "end_turn"
    assert of_kind(turn, "tool_call_update")[-1]["status"] == "failed"
    assert text_of(turn) == ("Cannot read notes.txt: invalid result of fs/read_text_file: "
                             "Expected `str`, got `int` - at `$.content`")

def _permission(option: str, seen: list[Any]) -> Any:
    def answer(params: Any) -> Any:
        seen.append(params)
        return {"outcome": {"outcome": "selected", "optionId": option}}

    return answer


async def test_write_allowed_through_the_client(acp: OpenAcp, workdir: Path) -> None:
    seen: list[Any] = []
    written: list[Any] = []
    async with acp() as client:
        client.answers["session/request_permission"] = _permission("allow_once", seen)
        client.answers["fs/read_text_file"] = lambda p: (_ for _ in ()).throw(
            Reject(-32002, "Resource not found"))
        client.answers["fs/write_text_file"] = lambda p: written.append(p) or {}
        sid = await _session(client, workdir, FULL_CAPS)
        _, turn = await client.prompt(sid, "/write new.txt hello world")
        _, second = await client.prompt(sid, "/write new.txt again")
    full = str(workdir / "new.txt")
    assert [o["kind"] for o in seen[0]["options"]] == ["allow_once", "allow_always", "reject_once"]
    tool_call = seen[0]["toolCall"]
    assert tool_call["toolCallId"] == of_kind(turn, "tool_call")[0]["toolCallId"]
    assert tool_call["content"] == [
        {"type": "diff", "path": full, "oldText": None, "newText": "hello world"}
    ]
    call = of_kind(turn, "tool_call")[0]
    assert (call["name"], call["kind"], call["status"]) == ("write", "edit", "pending")
    assert written[0] == {"sessionId": sid, "path": full, "content": "hello world"}
    done = of_kind(turn, "tool_call_update")[-1]
    assert done["status"] == "completed"
    assert done["content"] == [
        {"type": "diff", "path": full, "oldText": None, "newText": "hello world"}
    ]
    assert text_of(turn) == "Wrote new.txt"
    assert len(seen) == 2  # allow_once is not remembered
    assert text_of(second) == "Wrote new.txt"
    assert not (workdir / "new.txt").exists()  # the client wrote it, not the agent


async def test_write_allow_always_is_remembered(acp: OpenAcp, workdir: Path) -> None:
    seen: list[Any] = []
    async with acp() as client:
        client.answers["session/request_permission"] = _permission("allow_always", seen)
        sid = await _session(client, workdir)
        _, first = await client.prompt(sid, "/write a.txt one")
        _, second = await client.prompt(sid, "/write a.txt two")
    assert len(seen) == 1
    assert text_of(first) == text_of(second) == "Wrote a.txt"
    assert (workdir / "a.txt").read_text() == "two"
    assert of_kind(second, "tool_call_update")[-1]["content"][0]["oldText"] == "one"


@pytest.mark.parametrize(
    "answer",
    [
        {"outcome": {"outcome": "selected", "optionId": "reject_once"}},
        {"outcome": {"outcome": "selected", "optionId": "no-such-option"}},
        {"outcome": {"outcome": "cancelled"}},
    ],
)
async def test_write_rejected(acp: OpenAcp, workdir: Path, answer: Any) -> None:
    async with acp() as client:
        client.answers["session/request_permission"] = lambda p: answer
        sid = await _session(client, workdir)
        response, turn = await client.prompt(sid, "/write r.txt text")
    assert response["result"]["stopReason"] == "end_turn"
    assert of_kind(turn, "tool_call_update")[-1]["status"] == "failed"
    assert text_of(turn) == "Write to r.txt rejected"
    assert not (workdir / "r.txt").exists()


async def test_write_permission_error_rejects(acp: OpenAcp, workdir: Path) -> None:
    def broken(params: Any) -> Any:
        raise Reject(-32603, "Internal error")

    async with acp() as client:
        client.answers["session/request_permission"] = broken
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, "/write r.txt text")
    assert text_of(turn) == "Write to r.txt rejected"


async def test_plan(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, "/plan")
    plans = [[e["status"] for e in u["entries"]] for u in of_kind(turn, "plan")]
    assert plans == [
        ["pending"] * 3,
        ["completed", "pending", "pending"],
        ["completed", "completed", "pending"],
        ["completed"] * 3,
    ]
    assert text_of(turn) == "Plan done"


async def test_think(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, "/think about the problem")
    thoughts = of_kind(turn, "agent_thought_chunk")
    assert text_of(turn, "agent_thought_chunk") == "about the problem"
    assert len({u["messageId"] for u in thoughts}) == 1
    assert text_of(turn) == "Done thinking"
    assert of_kind(turn, "agent_message_chunk")[0]["messageId"] != thoughts[0]["messageId"]


async def test_slow_and_big(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        _, slow = await client.prompt(sid, "/slow 3")
        _, big = await client.prompt(sid, "/big 1048576")
    assert [u["content"]["text"] for u in slow] == ["tick 1", "tick 2", "tick 3"]
    assert len(big) == 1 and big[0]["content"]["text"] == "x" * 1048576


@pytest.mark.parametrize(
    ("prompt", "reply"),
    [
        ('/tool grep {"q": 1}', "External tools are not available over ACP"),
        ("/mcp", "No MCP servers"),
        ("/nope now", 'Unknown slash command "/nope".'),
        ("/slow many", "Usage: /slow N"),
    ],
)
async def test_simple_commands(acp: OpenAcp, workdir: Path, prompt: str, reply: str) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        _, turn = await client.prompt(sid, prompt)
    assert text_of(turn) == reply


async def test_clear_drops_history_from_later_loads(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        await client.prompt(sid, "before")
        _, cleared = await client.prompt(sid, "/clear")
        await client.prompt(sid, "after")
        await client.result("session/close", {"sessionId": sid})
        start = len(client.log)
        await client.result("session/load",
                            {"sessionId": sid, "cwd": str(workdir), "mcpServers": []})
    assert text_of(cleared) == "History cleared"
    replay = [m["params"]["update"] for m in client.log[start:] if m.get("method")]
    assert text_of(replay, "user_message_chunk") == "after"  # "/clear" came before the clear
    assert text_of(replay) == "History clearedYou said: after"


async def test_a_second_prompt_while_busy_is_refused(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        first = await client.request("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "/slow 1000"}]})
        await client.wait_for(lambda m: m.get("method") == "session/update")
        error = await client.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
        )
        await client.notify("session/cancel", {"sessionId": sid})
        response = await client.response(first)
    assert error["code"] == -32001
    assert response["result"]["stopReason"] == "cancelled"


async def test_prompt_for_an_unknown_session(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error(
            "session/prompt", {"sessionId": "sess_zz", "prompt": [{"type": "text", "text": "x"}]}
        )
    assert error["code"] == -32002
