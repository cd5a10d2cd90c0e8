"""Interop with the official ``mcp`` Python SDK (1.x), both directions, over stdio.

* the SDK's ``ClientSession`` + ``stdio_client`` (``tests/helpers/mcp_official_client.py``)
  drives our server (``tests/helpers/mcp_server.py``) as a child process;
* our :func:`~wireproto.adapters.mcp.connect_mcp` drives a ``FastMCP`` server
  (``tests/helpers/mcp_official_server.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from wireproto.adapters.mcp import connect_mcp
from wireproto.adapters.mcp.client import ToolClient
from wireproto.adapters.mcp.versions import LATEST_VERSION

HELPERS = Path(__file__).resolve().parents[2] / "helpers"
OUR_SERVER = [sys.executable, str(HELPERS / "mcp_server.py"), "--page-size", "4"]
OFFICIAL_SERVER = [sys.executable, str(HELPERS / "mcp_official_server.py")]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_official_client_drives_our_server(backend: str) -> None:
    cmd = [sys.executable, str(HELPERS / "mcp_official_client.py"), "tools", "--",
           *OUR_SERVER, "--backend", backend]
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    report = json.loads(done.stdout)
    assert report["protocolVersion"] == LATEST_VERSION
    assert report["serverInfo"] == "wireproto-test-tools"
    assert report["tools_capability"] is True
    assert report["pages"] == [
        ["echo", "add", "fail", "slow"],
        ["slow_started", "cancellations", "extra_0", "extra_1"],
        ["extra_2", "extra_3", "extra_4"],
    ]
    assert report["add"] == {"text": ["5"], "isError": False, "structured": {"sum": 5}}
    assert report["echo"]["text"] == ["héllo"]
    assert report["fail"] == {"text": ["it failed"], "isError": True, "structured": None}
    assert report["unknown"] == {"error": -32602, "message": "Unknown tool: nope"}
    assert report["invalid"]["error"] == -32602
    assert report["ping"] == {"meta": None}
    # notifications/cancelled reached the running call; it was never answered
    assert report["cancel"]["cancellations"] == ["1"]
    assert "slow" not in report["cancel"]


@pytest.mark.anyio
async def test_our_client_drives_the_official_server() -> None:
    async with connect_mcp(OFFICIAL_SERVER) as client:
        assert client.protocol_version == LATEST_VERSION
        assert client.server_info is not None
        assert client.server_info.name == "official-test-server"
        tools = {t.name: t for t in await client.list_tools()}
        assert set(tools) == {"add", "echo", "boom", "wait", "wait_started", "cancelled_calls"}
        assert tools["add"].input_schema["required"] == ["a", "b"]
        added = await client.call_tool("add", {"a": 20, "b": 22})
        assert added.text == "42" and not added.is_error
        assert added.structured_content == {"result": 42}
        assert (await client.call_tool("echo", {"text": "ünï"})).text == "ünï"
        boom = await client.call_tool("boom")
        assert boom.is_error and "boom failed" in boom.text
        await client.ping()
        async with anyio.create_task_group() as tg:  # cancelling sends notifications/cancelled
            tg.start_soon(client.call_tool, "wait")
            await client.call_tool("wait_started")
            tg.cancel_scope.cancel()
        assert (await client.call_tool("cancelled_calls")).text == "1"


@pytest.mark.anyio
async def test_official_server_negotiates_the_oldest_version() -> None:
    version = "2024-11-05"  # the others are negotiated in memory (test_client.py)
    from wireproto.transports.subprocess import open_subprocess

    async with open_subprocess(OFFICIAL_SERVER, stderr="log") as stream:
        async with ToolClient(stream, protocol_version=version) as client:
            await client.initialize()
            assert client.protocol_version == version
            assert "echo" in {t.name for t in await client.list_tools()}
