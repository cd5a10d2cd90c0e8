"""The Wire server driven with raw NDJSON lines: every row of protocol-wire.md#inbound-errors as
amended by protocol-wire.md#deviations."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

Raw = Any  # conftest.Raw: a server driven with raw lines
OpenRaw = Callable[..., AbstractAsyncContextManager[Raw]]


def event(message: Any) -> tuple[str, Any]:
    """``(type, payload)`` of an ``event`` message."""
    assert message["method"] == "event", message
    return message["params"]["type"], message["params"]["payload"]


def error(id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}}


async def assert_alive(raw: Raw) -> None:
    """The server still answers (idle cancel: -32000)."""
    reply = await raw.call("alive", "cancel")
    assert reply == error("alive", -32000, "No agent turn is in progress")


# ------------------------------------------------------------------ rows 1-2


async def test_not_json_is_parse_error_with_exact_bytes(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send(b"{not-json}\n")
        assert await raw.recv_raw() == (
            b'{"jsonrpc":"2.0","id":null,"error":'
            b'{"code":-32700,"message":"Invalid JSON format","data":null}}\n'
        )
        await assert_alive(raw)


async def test_blank_lines_are_skipped(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send(b"\n   \n\r\n")
        await raw.probe.assert_silent()
        await assert_alive(raw)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.1","id":"bad","method":"prompt","params":{"user_input":"x"}}',
        b"42",
        b'"text"',
        b'[{"jsonrpc":"2.0","id":"a","method":"cancel"}]',  # batch
        b'{"jsonrpc":"2.0","id":1.5,"method":"cancel"}',
        b'{"jsonrpc":"2.0","id":true,"method":"cancel"}',
        b'{"jsonrpc":"2.0","id":["x"],"method":"cancel"}',
    ],
)
async def test_invalid_request(open_raw: OpenRaw, line: bytes) -> None:
    async with open_raw() as raw:
        await raw.send(line + b"\n")
        assert await raw.recv() == error(None, -32600, "Invalid request")
        await assert_alive(raw)


async def test_missing_jsonrpc_member_is_tolerated(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send({"id": "c", "method": "cancel"})
        assert await raw.recv() == error("c", -32000, "No agent turn is in progress")


@pytest.mark.parametrize("id", [7, 0, "7", "x-1"])
async def test_ids_echoed_with_their_json_type(open_raw: OpenRaw, id: Any) -> None:
    async with open_raw() as raw:
        await raw.send({"jsonrpc": "2.0", "id": id, "method": "cancel"})
        data = await raw.recv_raw()
        expected = f'{{"jsonrpc":"2.0","id":{id if isinstance(id, int) else repr(id)}'
        assert data.startswith(expected.replace("'", '"').encode())


# ------------------------------------------------------------------ rows 3, 3b, 4b


async def test_invalid_response(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send({"jsonrpc": "2.0", "id": "r1"})
        assert await raw.recv() == error(None, -32600, "Invalid response")
        await raw.send({"jsonrpc": "2.0", "id": "r2", "result": 1, "error": {"code": 1}})
        assert await raw.recv() == error(None, -32600, "Invalid response")
        await assert_alive(raw)


async def test_response_to_unknown_id_is_dropped(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send({"jsonrpc": "2.0", "id": "nobody", "result": {}})
        await raw.send({"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "x"}})
        await raw.probe.assert_silent()
        await assert_alive(raw)


async def test_object_without_method_or_id_is_logged_only(
    open_raw: OpenRaw, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_raw() as raw:
        with caplog.at_level(logging.WARNING):
            await raw.send({"jsonrpc": "2.0", "params": {}})
            await raw.probe.assert_silent()
        assert "invalid message" in caplog.text
        await assert_alive(raw)


# ------------------------------------------------------------------ row 4


@pytest.mark.parametrize("method", ["nope", "event", "request", "session/new"])
async def test_unknown_method(open_raw: OpenRaw, method: str) -> None:
    async with open_raw() as raw:
        reply = await raw.call("q1", method, {})
        assert reply == error("q1", -32601, f"Unexpected method received: {method}")
        await raw.send({"jsonrpc": "2.0", "method": method})  # notification: ignored
        await raw.send({"jsonrpc": "2.0", "id": None, "method": method})  # also a notification
        await raw.probe.assert_silent()


async def test_known_method_as_notification_is_logged(
    open_raw: OpenRaw, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_raw() as raw:
        with caplog.at_level(logging.WARNING):
            await raw.send({"jsonrpc": "2.0", "method": "prompt", "params": {"user_input": "x"}})
            await raw.probe.assert_silent()  # no reply, no turn
        assert "request prompt sent as a notification dropped" in caplog.text
        assert any(r.levelno == logging.WARNING for r in caplog.records)
        await assert_alive(raw)


# ------------------------------------------------------------------ row 5 and


@pytest.mark.parametrize(
    ("method", "params", "path"),
    [
        ("prompt", {}, "$"),
        ("prompt", {"user_input": 5}, "$.user_input"),
        ("prompt", {"user_input": [{"type": "foo"}]}, "$.user_input[0].type"),
        ("prompt", {"user_input": [{"type": "text", "text": "a"}, {"type": "image_url"}]},
         "$.user_input[1]"),
        ("steer", {"user_input": [{"type": "bogus"}]}, "$.user_input[0].type"),
        ("set_plan_mode", {"enabled": "yes"}, "$.enabled"),
        ("initialize", {}, "$"),
        ("initialize", {"protocol_version": "abc"}, "$.protocol_version"),
        ("initialize", {"protocol_version": "1.1", "external_tools": [
            {"name": "t", "description": "", "parameters": []}]},
         "$.external_tools[0].parameters"),
    ],
)
async def test_invalid_params(open_raw: OpenRaw, method: str, params: Any, path: str) -> None:
    async with open_raw() as raw:
        reply = await raw.call(1, method, params)
        assert reply["id"] == 1
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"] == f"Invalid parameters for method `{method}`"
        assert reply["error"]["data"]["path"] == path
        assert reply["error"]["data"]["reason"]
        # the server keeps running and the next prompt works
        messages = await raw.collect_call(2, "prompt", {"user_input": "ok"})
        assert messages[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"status": "finished"}}


async def test_protocol_version_below_every_supported(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        reply = await raw.call("i", "initialize", {"protocol_version": "0.9"})
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"]["path"] == "$.protocol_version"


async def test_oversized_line(open_raw: OpenRaw, caplog: pytest.LogCaptureFixture) -> None:
    async with open_raw(max_bytes=4096) as raw:
        with caplog.at_level(logging.WARNING):
            await raw.send(b'{"jsonrpc":"2.0","id":"big","method":"prompt","params":{"user_input":"'
                           + b"x" * 5000 + b'"}}\n')
            assert await raw.recv_raw() == (
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,'
                b'"message":"Message too large","data":{"max_bytes":4096}}}\n'
            )
        assert "4096" in caplog.text
        await assert_alive(raw)


@pytest.mark.parametrize("params", [None, 5, [1], {"x": 1}, "s"])
async def test_cancel_ignores_params(open_raw: OpenRaw, params: Any) -> None:
    async with open_raw() as raw:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": "c", "method": "cancel"}
        if params is not None:
            message["params"] = params
        await raw.send(message)
        assert await raw.recv() == error("c", -32000, "No agent turn is in progress")
        await raw.send({"jsonrpc": "2.0", "id": "p", "method": "prompt",
                        "params": {"user_input": "/slow 1000000"}})
        while event(await raw.recv())[0] != "ContentPart":
            pass
        await raw.send(message)
        replies = await raw.collect("p")
        assert {"jsonrpc": "2.0", "id": "c", "result": {}} in replies
        assert replies[-1]["result"] == {"status": "cancelled"}


# ------------------------------------------------------------------ methods in raw form


async def test_initialize_result_shape(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        reply = await raw.call("init-1", "initialize", {
            "protocol_version": "1.1",
            "client": {"name": "acme", "version": "2"},
            "capabilities": {"supports_question": True},
            "external_tools": [
                {"name": "reveal", "description": "",
                 "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
                {"name": "read", "description": "mine", "parameters": {"type": "object"}},
                {"name": "reveal", "description": "again", "parameters": {"type": "object"}},
                {"name": "blank", "description": "", "parameters": {}},
            ],
            "hooks": [{"id": "h1", "event": "PreToolUse"}],
        })
        result = reply["result"]
        assert result["protocol_version"] == "1.1"  # min(client, ours),
        assert result["server"]["name"] == "wireproto-demo"
        assert [c["name"] for c in result["slash_commands"]][:2] == ["help", "read"]
        assert result["slash_commands"][0] == {
            "name": "help", "description": "Show the available commands", "aliases": [],
        }
        assert result["external_tools"] == {
            "accepted": ["reveal", "blank"],
            "rejected": [{"name": "read", "reason": "conflicts with builtin tool"}],
        }
        assert result["hooks"] == {"supported_events": [], "configured": {}}
        assert result["capabilities"] == {"supports_question": True}
        registry = raw.server.channel.capabilities.external_tools
        assert registry["reveal"].description == "again"  # re-registering replaces
        assert registry["blank"].description == "No description provided."
        assert raw.server.channel.capabilities.questions is True
        assert raw.server.channel.capabilities.name == "acme"


@pytest.mark.parametrize(("asked", "answered"), [("1.0", "1"), ("2", "1.10"), ("1.9", "1.9"),
                                                 ("1.11", "1.10")])
async def test_version_negotiation(open_raw: OpenRaw, asked: str, answered: str) -> None:
    async with open_raw() as raw:
        reply = await raw.call(1, "initialize", {"protocol_version": asked})
        assert reply["result"]["protocol_version"] == answered
        assert "external_tools" not in reply["result"]  # only when tools were sent
        assert raw.server.protocol_version == answered


async def test_server_request_ids_equal_payload_ids(open_raw: OpenRaw, workdir: Path) -> None:
    async with open_raw() as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10", "external_tools": [
            {"name": "t", "description": "d", "parameters": {"type": "object"}}]})
        await raw.send({"jsonrpc": "2.0", "id": "p1", "method": "prompt",
                        "params": {"user_input": "/write f.txt hi"}})
        before, message = await raw.until_request()
        (tool_call_id,) = [p["id"] for k, p in map(event, before) if k == "ToolCall"]
        assert message["params"]["type"] == "ApprovalRequest"
        payload = message["params"]["payload"]
        assert message["id"] == payload["id"] and payload["tool_call_id"] == tool_call_id
        assert payload["display"][0]["old_text"] == ""
        await raw.send({"jsonrpc": "2.0", "id": message["id"],
                        "result": {"request_id": payload["id"], "response": "approve"}})
        replies = await raw.collect("p1")
        assert ("ApprovalResponse", {"request_id": payload["id"], "response": "approve",
                                     "feedback": ""}) in [event(r) for r in replies[:-1]]
        assert (workdir / "f.txt").read_text() == "hi"

        await raw.send({"jsonrpc": "2.0", "id": "p2", "method": "prompt",
                        "params": {"user_input": '/tool t {"a": 1}'}})
        before, message = await raw.until_request()
        (call,) = [p for k, p in map(event, before) if k == "ToolCall"]
        request = message["params"]["payload"]
        assert message["params"]["type"] == "ToolCallRequest"
        assert message["id"] == request["id"] == call["id"]
        assert request == {"id": call["id"], "name": "t", "arguments": '{"a":1}'}
        value = {"is_error": False, "output": "done", "message": "ok",
                 "display": [{"type": "brief", "text": "Did it"}, {"type": "future", "x": 1}]}
        await raw.send({"jsonrpc": "2.0", "id": message["id"],
                        "result": {"tool_call_id": call["id"], "return_value": value}})
        replies = await raw.collect("p2")
        results = [event(r)[1] for r in replies[:-1] if event(r)[0] == "ToolResult"]
        assert results == [{"tool_call_id": call["id"], "return_value": {
            **value, "display": [{"type": "brief", "text": "Did it"},
                                 {"type": "future", "data": {"x": 1}}], "extras": None}}]



_UNUSABLE = "Invalid arguments: the tool's parameters schema cannot be applied: "


@pytest.mark.parametrize(("parameters", "output"), [
    # accepted at initialize as JSON Schema 2020-12, applied as such (not as the draft it names)
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
      "properties": {"n": {"exclusiveMinimum": 5}}},
     "Invalid arguments: 4 is less than or equal to the minimum of 5"),
    ({"$ref": "#/$defs/nowhere"}, _UNUSABLE),  # a reference to nothing
    ({"$ref": "http://127.0.0.1:9/elsewhere.json"}, _UNUSABLE),  # never fetched
])
async def test_a_tool_schema_that_cannot_be_applied_fails_the_call_not_the_turn(
    open_raw: OpenRaw, parameters: dict[str, Any], output: str
) -> None:
    async with open_raw() as raw:
        reply = await raw.call("i", "initialize", {"protocol_version": "1.10", "external_tools": [
            {"name": "t", "description": "d", "parameters": parameters}]})
        assert reply["result"]["external_tools"] == {"accepted": ["t"], "rejected": []}
        replies = await raw.collect_call("p", "prompt", {"user_input": '/tool t {"n": 4}'})
        assert replies[-1] == {"jsonrpc": "2.0", "id": "p", "result": {"status": "finished"}}
        (result,) = [p for k, p in map(event, replies[:-1]) if k == "ToolResult"]
        value = result["return_value"]
        assert value["is_error"] is True
        assert value["message"].startswith(output), value
        await assert_alive(raw)
