"""Malformed input: every bad message gets exactly one answer, and the agent reads on.

Protocol rules: protocol-acp.md#json-rpc-conventions, protocol-acp.md#error-codes,
protocol-acp.md#framing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import OpenAcp

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b'{"jsonrpc":"2.0","id":1,"method":"initialize"', b"\xff\xfe", b""],
)
async def test_invalid_json_is_a_parse_error_with_null_id(acp: OpenAcp, raw: bytes) -> None:
    async with acp() as client:
        await client.send_raw(raw)
        msg = await client.next()
        assert msg["id"] is None
        assert msg["error"]["code"] == -32700
        await client.initialize()  # still serving


async def test_a_batch_gets_one_invalid_request_and_nothing_runs(
    acp: OpenAcp, workdir: Path
) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new",
         "params": {"cwd": str(workdir), "mcpServers": []}},
    ]
    async with acp() as client:
        await client.send(batch)
        msg = await client.next()
        assert msg == {"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": "Invalid request"}}
        early = await client.nothing_before()  # the batch's initialize did not run
        await client.initialize()
        listed = await client.result("session/list", {})  # nor did its session/new
    assert early["error"]["code"] == -32600
    assert listed["sessions"] == []


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"},
        {"jsonrpc": "2.0"},
        "a string",
        42,
    ],
)
async def test_invalid_envelopes_are_invalid_request(acp: OpenAcp, message: object) -> None:
    async with acp() as client:
        await client.send(message)
        msg = await client.next()
        assert msg["error"]["code"] == -32600
        await client.initialize()


async def test_a_request_with_null_id_is_answered_with_null_id(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.send({"jsonrpc": "2.0", "id": None, "method": "initialize",
                           "params": {"protocolVersion": 1}})
        msg = await client.next()
    assert msg["id"] is None
    assert msg["result"]["protocolVersion"] == 1


@pytest.mark.parametrize("rid", [0, "0", "abc", 2**53, -7])
async def test_ids_are_echoed_with_their_type(acp: OpenAcp, rid: object) -> None:
    async with acp() as client:
        await client.request("initialize", {"protocolVersion": 1}, id=rid)
        msg = await client.next()
    assert msg["id"] == rid and type(msg["id"]) is type(rid)


@pytest.mark.parametrize(
    ("method", "params", "path"),
    [
        ("session/new", {"cwd": 5, "mcpServers": []}, "$.cwd"),
        ("session/new", {"cwd": "/tmp", "mcpServers": [{"type": "http", "name": "h"}]},
         "$.mcpServers[0]"),
        ("session/new", {"cwd": "/tmp", "mcpServers": [{"name": "s", "command": "/x",
                                                         "args": [1], "env": []}]},
         "$.mcpServers[0].args[0]"),
        ("session/prompt", {"sessionId": "s", "prompt": [{"type": "video", "url": "u"}]},
         "$.prompt[0]"),
        ("session/prompt", {"sessionId": "s", "prompt": "hello"}, "$.prompt"),
        ("session/list", {"cwd": 3}, "$.cwd"),
        ("authenticate", {"methodId": None}, "$.methodId"),
    ],
)
async def test_invalid_params_name_the_path(
    acp: OpenAcp, method: str, params: object, path: str
) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error(method, params)
    assert error["code"] == -32602
    assert error["data"]["path"].startswith(path)
    assert error["data"]["path"] in error["message"]


async def test_null_params_are_invalid(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.initialize()
        await client.send({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": None})
        msg = await client.next()
    assert msg["error"]["code"] == -32602


async def test_a_response_to_an_unknown_id_is_dropped(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.send({"jsonrpc": "2.0", "id": 99, "result": {}})
        await client.send({"jsonrpc": "2.0", "id": 98, "error": {"code": 1, "message": "x"}})
        await client.nothing_before()


async def test_relative_cwd_is_invalid(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error("session/new", {"cwd": "rel/dir", "mcpServers": []})
    assert error["code"] == -32602
    assert "cwd" in error["message"]


@pytest.mark.parametrize("command", ["/read a\x00b", "/write a\x00b text"])
@pytest.mark.parametrize("client_fs", [False, True])
async def test_a_nul_in_a_path_is_invalid_params_not_an_internal_error(
    acp: OpenAcp, workdir: Path, command: str, client_fs: bool
) -> None:
    fs = {"fs": {"readTextFile": True, "writeTextFile": True}} if client_fs else {}
    async with acp() as client:
        await client.initialize(fs)
        sid = (await client.new_session(str(workdir)))["sessionId"]
        response, _ = await client.prompt(sid, command)
        assert response["error"]["code"] == -32602, response
        assert "NUL" in response["error"]["message"]
        response, _ = await client.prompt(sid, "still there?")  # the session goes on
        assert response["result"]["stopReason"] == "end_turn"
