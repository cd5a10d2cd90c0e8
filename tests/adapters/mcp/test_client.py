"""The MCP tool client against our server (in memory) and against raw answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from timeouts import units

from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp.client import ToolClient
from wireproto.adapters.mcp.server import ToolServer
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.testing import NdjsonProbe
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio


class Tools:
    def __init__(self, n: int) -> None:
        self.names = [f"tool{i:02d}" for i in range(n)]
        self.blocking = anyio.Event()
        self.unblocked = anyio.Event()

    async def list_tools(self) -> list[m.Tool]:
        return [m.Tool(name=name, description=f"the {name}") for name in self.names]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> m.CallToolResult:
        if name == "block":
            self.blocking.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.unblocked.set()
        return m.CallToolResult(content=[m.TextContent(text=name)],
                                structured_content={"args": arguments})


@asynccontextmanager
async def connected(tools: Tools, **server_options: Any) -> AsyncIterator[
    tuple[ToolServer, ToolClient]
]:
    a, b = memory_pair()
    server = ToolServer(tools, **server_options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, a)
        async with ToolClient(b) as client:
            yield server, client
        tg.cancel_scope.cancel()


async def test_handshake_listing_and_calls() -> None:
    tools = Tools(25)
    async with connected(tools, page_size=10) as (server, client):
        with pytest.raises(LocalProtocolError):
            await client.list_tools()
        result = await client.initialize()
        assert result.protocol_version == client.protocol_version == "2025-11-25"
        assert client.server_info == server.server_info
        listed = await client.list_tools()
        assert [t.name for t in listed] == tools.names
        first = await client.list_tools_page()
        assert len(first.tools) == 10 and first.next_cursor
        called = await client.call_tool("tool03", {"x": [1, 2]})
        assert called.text == "tool03"
        assert called.structured_content == {"args": {"x": [1, 2]}}
        assert not called.is_error
        await client.ping()
        assert server.ready


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_older_versions_are_negotiated(version: str) -> None:
    async with connected(Tools(1)) as (server, client):
        client.offered_version = version
        await client.initialize()
        assert client.protocol_version == server.protocol_version == version


async def test_server_answering_an_unknown_version_is_rejected() -> None:
    probe = NdjsonProbe()
    async with ToolClient(probe.stream) as client:
        async with anyio.create_task_group() as tg:

            async def fake_server() -> None:
                request = await probe.read_json()
                assert request["method"] == "initialize"
                await probe.write_json({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "protocolVersion": "1999-01-01", "capabilities": {},
                    "serverInfo": {"name": "old", "version": "0"},
                }})

            tg.start_soon(fake_server)
            with pytest.raises(RemoteProtocolError, match="1999-01-01"):
                await client.initialize()
        assert client.initialize_result is None
        await probe.assert_silent()  # no notifications/initialized
    await probe.aclose()


async def test_cancelling_a_call_sends_notifications_cancelled() -> None:
    tools = Tools(0)
    async with connected(tools) as (_, client):
        await client.initialize()
        with anyio.move_on_after(units(6)) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "block")
                await tools.blocking.wait()
                tg.cancel_scope.cancel()
            await tools.unblocked.wait()  # the server's handler was cancelled
        assert not scope.cancelled_caught
        assert (await client.call_tool("after")).text == "after"


@pytest.mark.parametrize("how", ["timeout", "cancelled"])
async def test_initialize_is_never_cancelled(how: str) -> None:
    """MCP: "the client MUST NOT send a cancellation for initialize"."""
    probe = NdjsonProbe()
    async with ToolClient(probe.stream) as client:
        if how == "timeout":
            with pytest.raises(TimeoutError):
                await client.initialize(timeout=0.01)  # the probe never answers
        else:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.initialize)
                assert (await probe.read_json())["method"] == "initialize"
                tg.cancel_scope.cancel()
        assert client.initialize_result is None
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.ping)
            messages = [await probe.read_json() for _ in range(1 if how == "cancelled" else 2)]
            # a cancellation would have been written before initialize returned
            assert [msg["method"] for msg in messages][-1] == "ping", messages
            assert "notifications/cancelled" not in [msg["method"] for msg in messages]
            await probe.write_json({"jsonrpc": "2.0", "id": messages[-1]["id"], "result": {}})
        assert client.peer.cancel_method == "notifications/cancelled"  # restored
        with anyio.fail_after(units(2)):  # other requests are still cancelled as usual
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.ping)
                ping = await probe.read_json()
                tg.cancel_scope.cancel()
            assert await probe.read_json() == {
                "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": ping["id"]}}
    await probe.aclose()


async def test_list_changed_reaches_the_client() -> None:
    changed = anyio.Event()

    async def on_changed() -> None:
        changed.set()

    async with connected(Tools(1), list_changed=True) as (server, client):
        client.on_tools_changed = on_changed
        await client.initialize()
        await server.notify_tools_changed()
        await changed.wait()


async def test_repeated_cursor_is_a_protocol_error() -> None:
    probe = NdjsonProbe()
    async with ToolClient(probe.stream) as client:
        async with anyio.create_task_group() as tg:

            async def fake_server() -> None:
                request = await probe.read_json()
                await probe.write_json({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "loop", "version": "0"},
                }})
                assert (await probe.read_json())["method"] == "notifications/initialized"
                for _ in range(2):
                    request = await probe.read_json()
                    await probe.write_json({"jsonrpc": "2.0", "id": request["id"], "result": {
                        "tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                        "nextCursor": "same",
                    }})
                request = await probe.read_json()
                assert request["method"] == "tools/call"
                await probe.write_json({"jsonrpc": "2.0", "id": request["id"], "error": {
                    "code": -32602, "message": "Unknown tool: x"}})

            tg.start_soon(fake_server)
            await client.initialize()
            with pytest.raises(RemoteProtocolError, match="repeated cursor"):
                await client.list_tools()
            with pytest.raises(RpcError) as info:
                await client.call_tool("x")
            assert info.value.code == -32602
    await probe.aclose()


async def test_client_answers_server_ping() -> None:
    probe = NdjsonProbe()
    async with ToolClient(probe.stream):
        await probe.write_json({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
        assert await probe.read_json() == {"jsonrpc": "2.0", "id": "s1", "result": {}}
        await probe.write_json({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"})
        assert (await probe.read_json())["error"]["code"] == -32601
    await probe.aclose()
