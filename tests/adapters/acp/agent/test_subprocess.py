"""The demo agent as a child process on stdio (``tests/helpers/acp_agent.py``), raw JSON-RPC.

The same conformance checks as in memory apply to every line the child
writes; its stdout carries nothing but protocol messages (protocol-acp.md#framing).
"""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest
from timeouts import units

from ..conftest import chunk, open_acp_process

pytestmark = pytest.mark.anyio


async def test_a_conversation_over_stdio(workdir: Path, anyio_backend_name: str) -> None:
    async with open_acp_process(backend=anyio_backend_name) as client:
        await client.send_raw(b"{oops")
        parse_error = await client.next()
        init = await client.initialize({"fs": {"readTextFile": True}})
        client.answers["fs/read_text_file"] = lambda p: {"content": "x\ny"}
        sid = (await client.new_session(str(workdir)))["sessionId"]
        echo, turn = await client.prompt(sid, "over a pipe")
        _, read = await client.prompt(sid, "/read f.txt")
        rid = await client.request("session/prompt",
                                   {"sessionId": sid, "prompt": [{"type": "text",
                                                                  "text": "/slow 1000"}]})
        await client.wait_for(chunk("tick 1"))
        await client.notify("session/cancel", {"sessionId": sid})
        cancelled = await client.response(rid)
        await client.stream.send_eof()
        with anyio.fail_after(units(2)):
            code = await client.stream.process.wait()
    assert parse_error["error"]["code"] == -32700 and parse_error["id"] is None
    assert init["agentInfo"]["name"] == "wireproto-demo"
    assert echo["result"]["stopReason"] == "end_turn"
    assert "".join(u["content"]["text"] for u in turn) == "You said: over a pipe"
    assert "".join(u["content"]["text"] for u in read
                   if u["sessionUpdate"] == "agent_message_chunk") == "Read 2 lines from f.txt"
    assert cancelled["result"] == {"stopReason": "cancelled"}
    assert code == 0


async def test_sigterm_ends_running_turns_gracefully(
    workdir: Path, anyio_backend_name: str
) -> None:
    async with open_acp_process(backend=anyio_backend_name) as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir)))["sessionId"]
        rid = await client.request("session/prompt",
                                   {"sessionId": sid, "prompt": [{"type": "text",
                                                                  "text": "/slow 1000"}]})
        await client.wait_for(chunk("tick 1"))
        client.stream.process.send_signal(signal.SIGTERM)
        response = await client.response(rid)
        with anyio.fail_after(units(2)):
            code = await client.stream.process.wait()
    assert response["result"] == {"stopReason": "cancelled"}
    assert code == 0


async def test_flags_reach_the_agent(workdir: Path, anyio_backend_name: str) -> None:
    stdio = {"name": "files", "command": "/bin/true", "args": [], "env": []}
    async with open_acp_process("--require-auth", "--allow-client-stdio-mcp",
                                backend=anyio_backend_name) as client:
        await client.initialize()
        gated = await client.error("session/list", {})
    async with open_acp_process("--allow-client-stdio-mcp", backend=anyio_backend_name) as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir), [stdio]))["sessionId"]
        _, turn = await client.prompt(sid, "/mcp")
    assert gated["code"] == -32000
    assert "".join(u["content"]["text"] for u in turn) == "files (stdio)"
