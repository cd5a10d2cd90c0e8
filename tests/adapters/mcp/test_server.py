"""The MCP tool server, driven with raw JSON lines (an NdjsonProbe) in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp.server import ToolServer
from wireproto.adapters.mcp.versions import LATEST_VERSION, SUPPORTED_VERSIONS, negotiate
from wireproto.errors import InvalidArgument, InvalidVersion, NotFound
from wireproto.testing import NdjsonProbe

pytestmark = pytest.mark.anyio


class Tools:
    """``n`` filler tools, ``echo``, ``fail``, and ``block`` (runs until cancelled)."""

    def __init__(self, n: int = 0) -> None:
        self.names = ["echo", "fail", "block", *(f"t{i}" for i in range(n))]
        self.list_calls = 0
        self.running = anyio.Event()
        self.cancelled = anyio.Event()

    async def list_tools(self) -> list[m.Tool]:
        self.list_calls += 1
        return [m.Tool(name=n) for n in self.names]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> m.CallToolResult:
        if name == "echo":
            if "text" not in arguments:
                raise InvalidArgument("missing text")
            return m.text_result(str(arguments["text"]))
        if name == "fail":
            return m.text_result("bad", is_error=True)
        if name == "block":
            self.running.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled.set()
        raise NotFound("")


@asynccontextmanager
async def served(tools: Tools, **options: Any) -> AsyncIterator[tuple[ToolServer, NdjsonProbe]]:
    probe = NdjsonProbe()
    server = ToolServer(tools, **options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, probe.stream)
        try:
            yield server, probe
        finally:
            probe.write_eof()
    await probe.aclose()


async def call(probe: NdjsonProbe, id: int, method: str, params: Any = None) -> Any:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    await probe.write_json(message)
    return await probe.read_json()


def init_params(version: str = LATEST_VERSION) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}


async def initialize(probe: NdjsonProbe, version: str = LATEST_VERSION) -> Any:
    answer = await call(probe, 0, "initialize", init_params(version))
    await probe.write_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


def test_negotiate_table() -> None:
    for version in SUPPORTED_VERSIONS:
        assert negotiate(version) == version
    assert negotiate("2099-01-01") == LATEST_VERSION
    assert negotiate("2024-11-05", ("2025-03-26",)) == "2025-03-26"
    with pytest.raises(InvalidVersion):
        negotiate("2025-03-26", ())
    assert {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} <= set(SUPPORTED_VERSIONS)


@pytest.mark.parametrize("version", [*SUPPORTED_VERSIONS, "2099-12-31", "draft"])
async def test_initialize_negotiates(version: str) -> None:
    info = m.Implementation(name="srv", version="9", title="Server")
    async with served(Tools(), server_info=info, instructions="use echo") as (server, probe):
        answer = await initialize(probe, version)
        expected = version if version in SUPPORTED_VERSIONS else LATEST_VERSION
        assert answer == {"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": expected,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "srv", "version": "9", "title": "Server"},
            "instructions": "use echo",
        }}
        assert (await call(probe, 1, "ping"))["result"] == {}
        assert server.protocol_version == expected
        assert server.ready
        assert server.client_info == m.Implementation(name="probe", version="1")


async def test_tools_before_initialize_are_refused_but_ping_works() -> None:
    async with served(Tools()) as (_, probe):
        answer = await call(probe, 1, "tools/list")
        assert answer["error"]["code"] == -32600
        assert (await call(probe, 2, "ping", {}))["result"] == {}
        answer = await call(probe, 3, "tools/call", {"name": "echo"})
        assert answer["error"]["code"] == -32600


async def test_envelope_rules() -> None:
    async with served(Tools()) as (_, probe):
        await initialize(probe)
        answer = await call(probe, 5, "nope/nope")
        assert answer["error"] == {"code": -32601, "message": "Method not found"}
        await probe.write(b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n')
        answer = await probe.read_json()
        assert answer["id"] is None and answer["error"]["code"] == -32600
        await probe.write(b'{"id":6,"method":"ping"}\n')  # no "jsonrpc"
        assert (await probe.read_json())["error"]["code"] == -32600
        await probe.write(b"{not json\n")
        assert (await probe.read_json())["error"]["code"] == -32700
        answer = await call(probe, 7, "initialize", {"protocolVersion": 5})
        assert answer["error"]["code"] == -32602


async def test_pagination_asks_the_provider_every_time() -> None:
    tools = Tools(n=7)  # 10 tools in all
    async with served(tools, page_size=4) as (_, probe):
        await initialize(probe)
        names: list[str] = []
        cursors: list[str] = []
        cursor: str | None = None
        for i in range(10):
            answer = await call(probe, 10 + i, "tools/list", {"cursor": cursor} if cursor else {})
            result = answer["result"]
            names += [t["name"] for t in result["tools"]]
            cursor = result.get("nextCursor")
            if cursor is None:
                break
            cursors.append(cursor)
        assert names == tools.names
        assert len(cursors) == 2
        assert tools.list_calls == 3
        tool = (await call(probe, 30, "tools/list"))["result"]["tools"][0]
        assert tool == {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
        for cursor in ("not-a-cursor", "-1", "\u00b2", "\u0664", "9" * 5000):  # ², Arabic 4
            answer = await call(probe, 31, "tools/list", {"cursor": cursor})
            assert answer["error"] == {"code": -32602, "message": "Invalid cursor", "data": {
                "path": "$.cursor", "reason": "unknown cursor"}}, cursor


async def test_calls_and_errors() -> None:
    async with served(Tools()) as (_, probe):
        await initialize(probe)
        answer = await call(probe, 1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert answer["result"] == {"content": [{"type": "text", "text": "hi"}]}
        answer = await call(probe, 2, "tools/call", {"name": "fail"})
        assert answer["result"] == {"content": [{"type": "text", "text": "bad"}], "isError": True}
        answer = await call(probe, 3, "tools/call", {"name": "missing", "arguments": {}})
        assert answer["error"] == {"code": -32602, "message": "Unknown tool: missing"}
        answer = await call(probe, 4, "tools/call", {"name": "echo", "arguments": {}})
        assert answer["error"] == {"code": -32602, "message": "missing text"}
        answer = await call(probe, 5, "tools/call", {"arguments": {}})
        assert answer["error"]["code"] == -32602
        assert answer["error"]["data"]["path"] == "$"


async def test_cancelled_call_is_never_answered() -> None:
    tools = Tools()
    async with served(tools) as (server, probe):
        await initialize(probe)
        await probe.write_json({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                                "params": {"name": "block"}})
        await tools.running.wait()
        await probe.write_json({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": "c1", "reason": "user"}})
        await tools.cancelled.wait()
        assert server._peer is not None
        await server._peer.wait_idle()
        await probe.assert_silent()
        assert (await call(probe, 2, "ping"))["id"] == 2


async def test_list_changed_notification() -> None:
    async with served(Tools(), list_changed=True) as (server, probe):
        answer = await initialize(probe)
        assert answer["result"]["capabilities"]["tools"] == {"listChanged": True}
        await server.notify_tools_changed()
        assert await probe.read_json() == {
            "jsonrpc": "2.0", "method": "notifications/tools/list_changed"
        }


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="page_size"):
        ToolServer(Tools(), page_size=0)
