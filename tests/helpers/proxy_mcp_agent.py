"""An ACP-served test agent that uses the session's MCP servers, as real agents do.

``/call NAME JSON`` starts the session's first stdio MCP server (with our MCP
client, over a real subprocess), lists its tools, announces a tool call and calls
NAME with the JSON arguments; the reply names the result. Anything else is echoed.
Serve it with ``wireproto acp --agent proxy_mcp_agent:agent --allow-client-stdio-mcp``.
With ``SLOW_MCP_SESSION=SECONDS`` in its environment, a session given MCP servers takes
that long to start. With ``PRINT_MCP_ENV=1``, it prints each stdio MCP server's
environment to stderr when a session starts (as an agent logging its MCP config).
"""

from __future__ import annotations

import os
import sys

import anyio
import msgspec

from wireproto.adapters.mcp.client import ToolClient
from wireproto.agent.api import Agent, AgentInfo, Session
from wireproto.agent.content import Text
from wireproto.agent.events import StopReason, ToolStatus
from wireproto.agent.turn import Turn
from wireproto.transports.subprocess import open_subprocess


class McpUsingAgent(Agent):
    info = AgentInfo(name="mcp-user", version="1")

    async def session_started(self, session: Session, how: str) -> None:
        if os.environ.get("PRINT_MCP_ENV"):
            for server in session.mcp_servers:
                pairs = " ".join(f"{name}={value}" for name, value in server.env.items())
                print(f"mcp server {server.name}: {pairs}", file=sys.stderr, flush=True)
        if session.mcp_servers:
            await anyio.sleep(float(os.environ.get("SLOW_MCP_SESSION", "0")))

    async def prompt(self, turn: Turn) -> StopReason:
        if not turn.text.startswith("/call "):
            await turn.say(f"echo {turn.text}")
            return StopReason.END_TURN
        name, _, raw = turn.text[6:].partition(" ")
        servers = [s for s in turn.session.mcp_servers if s.transport == "stdio"]
        if not servers:
            await turn.say("no MCP server")
            return StopReason.END_TURN
        server = servers[0]
        assert server.command is not None
        env = {**os.environ, **server.env}
        async with open_subprocess([server.command, *server.args], env=env,
                                   stderr="log") as child, ToolClient(child) as tools:
            await tools.initialize()
            listed = [t.name for t in await tools.list_tools()]
            call = await turn.start_tool(name, f"{server.name}: {name}",
                                         status=ToolStatus.IN_PROGRESS,
                                         raw_input=msgspec.json.decode(raw or "{}"))
            result = await tools.call_tool(name, msgspec.json.decode(raw or "{}"))
            if result.is_error:
                await call.fail(result.text)
            else:
                await call.complete([Text(result.text)])
        await turn.say(f"tools {listed}; {name} -> {result.text}")
        return StopReason.END_TURN


def agent() -> McpUsingAgent:
    return McpUsingAgent()
