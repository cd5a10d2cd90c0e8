"""MCP servers sent by the client with session/new, load and resume.

Protocol rules: protocol-acp.md#mcp-servers, protocol-acp.md#lenient-decoding (wireproto refuses
stdio by default); the demo lists a session's servers with ``/mcp``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from ..conftest import OpenAcp

pytestmark = pytest.mark.anyio

SECRET_HEADER = "Bearer s3cr3t-header"
SECRET_ENV = "s3cr3t-env-value"
HTTP = {"type": "http", "name": "tracker", "url": "https://mcp.example.com/mcp",
        "headers": [{"name": "Authorization", "value": SECRET_HEADER}]}
SSE = {"type": "sse", "name": "legacy", "url": "https://old.example.com/sse", "headers": None}
STDIO = {"name": "files", "command": "/usr/local/bin/mcp-files", "args": ["--stdio"],
         "env": [{"name": "FILES_TOKEN", "value": SECRET_ENV}]}
ACP = {"type": "acp", "name": "tunnel", "serverId": "srv-1"}


async def _mcp(client: Any, sid: str) -> str:
    _, turn = await client.prompt(sid, "/mcp")
    return "".join(u["content"]["text"] for u in turn)


def _no_secrets(client: Any, caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        text = record.getMessage()
        assert SECRET_HEADER not in text and SECRET_ENV not in text, text
    for msg in client.log:
        if "error" in msg:
            assert SECRET_ENV not in str(msg) and SECRET_HEADER not in str(msg)


async def test_http_and_sse_are_handed_to_the_session(
    acp: OpenAcp, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir), [HTTP, SSE]))["sessionId"]
        listed = await _mcp(client, sid)
    assert listed == "tracker (http)\nlegacy (sse)"
    assert any("tracker (http)" in r.getMessage() for r in caplog.records)
    _no_secrets(client, caplog)


@pytest.mark.parametrize("entry", [STDIO, {**STDIO, "type": "stdio"},
                                   {**STDIO, "args": None, "env": None}])
async def test_stdio_is_refused_and_no_session_is_created(
    acp: OpenAcp, workdir: Path, caplog: pytest.LogCaptureFixture, entry: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    async with acp() as client:
        await client.initialize()
        error = await client.error(
            "session/new", {"cwd": str(workdir), "mcpServers": [HTTP, entry]}
        )
        listed = await client.result("session/list", {})
    assert error["code"] == -32602
    assert '"files"' in error["message"]
    assert error["data"]["path"] == "$.mcpServers[1]"
    assert listed["sessions"] == []
    _no_secrets(client, caplog)


async def test_stdio_is_accepted_when_allowed(
    acp: OpenAcp, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with acp(allow_client_stdio_mcp=True) as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir), [STDIO, {**STDIO, "name": "b",
                                                                "type": "stdio"}]))["sessionId"]
        listed = await _mcp(client, sid)
    assert listed == "files (stdio)\nb (stdio)"
    _no_secrets(client, caplog)


async def test_stdio_refused_on_resume_and_load_leaves_the_session_closed(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        await client.result("session/close", {"sessionId": sid})
        resume = await client.error(
            "session/resume", {"sessionId": sid, "cwd": str(workdir), "mcpServers": [STDIO]}
        )
        load = await client.error(
            "session/load", {"sessionId": sid, "cwd": str(workdir), "mcpServers": [STDIO]}
        )
        prompt = await client.error(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
        )
    assert resume["code"] == load["code"] == -32602
    assert prompt["code"] == -32002  # not resumed


@pytest.mark.parametrize("notices", [True, False])
async def test_acp_servers_are_dropped_with_a_warning(
    acp: OpenAcp, workdir: Path, caplog: pytest.LogCaptureFixture, notices: bool
) -> None:
    caps = {"session": {"notices": {}}} if notices else {}
    async with acp() as client:
        await client.initialize(caps)
        rid = await client.request(
            "session/new", {"cwd": str(workdir), "mcpServers": [ACP, HTTP]}
        )
        response = await client.response(rid)
        sid = response["result"]["sessionId"]
        listed = await _mcp(client, sid)
    assert listed == "tracker (http)"
    assert any('"tunnel" dropped' in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    shown = client.updates(sid, "notice")
    if notices:
        assert shown == [{"sessionUpdate": "notice", "severity": "warning",
                          "title": 'MCP server "tunnel" dropped',
                          "description": 'MCP over ACP (type "acp") is not supported by this '
                                         "agent"}]
        notice = next(m for m in client.log
                      if m.get("params", {}).get("update", {}).get("sessionUpdate") == "notice")
        assert client.index(notice) > client.index(response)
    else:
        assert shown == []


async def test_null_list_means_no_servers(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.result(
            "session/new", {"cwd": str(workdir), "mcpServers": None}))["sessionId"]
        listed = await _mcp(client, sid)
    assert listed == "No MCP servers"


@pytest.mark.parametrize("method", ["session/new", "session/load"])
async def test_missing_list_is_invalid(acp: OpenAcp, workdir: Path, method: str) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error(method, {"sessionId": "sess_a", "cwd": str(workdir)})
    assert error["code"] == -32602
    assert "mcpServers" in error["message"]


async def test_load_and_resume_use_the_list_sent_now(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir), [HTTP]))["sessionId"]
        await client.result("session/close", {"sessionId": sid})
        await client.result(
            "session/load", {"sessionId": sid, "cwd": str(workdir), "mcpServers": [SSE]}
        )
        loaded = await _mcp(client, sid)
        await client.result("session/resume", {"sessionId": sid, "cwd": str(workdir)})
        resumed = await _mcp(client, sid)
    assert loaded == "legacy (sse)"
    assert resumed == "No MCP servers"


async def test_malformed_entries_are_not_dropped_silently(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        await client.initialize()
        errors = [
            await client.error("session/new", {"cwd": str(workdir), "mcpServers": [entry]})
            for entry in ({"type": "http", "name": "x", "url": 5, "headers": []},
                          {"type": "sse", "name": "x", "headers": []},
                          {"name": "x", "args": [], "env": []},
                          "not an object")
        ]
        listed = await client.result("session/list", {})
    assert {e["code"] for e in errors} == {-32602}
    assert all(e["data"]["path"].startswith("$.mcpServers[0]") for e in errors)
    assert listed["sessions"] == []
