"""Wire front clients' external tools, offered to an ACP backend over MCP.

A Wire client declares its tools in ``initialize``; ACP has no such thing,
but every ACP agent takes MCP servers per session. :class:`ToolBridge` reuses
the host's MCP bridge (:mod:`wireproto.host.channel`,
``wireproto mcp-bridge``): it listens on a loopback channel, and each proxied
session gets one stdio MCP server entry (:meth:`ToolBridge.entry`) running
``python -m wireproto mcp-bridge`` with the channel address and a credential
of that session in its environment (registered with the backend process
first, so that its logged stderr masks it). The backend starts the bridge; its
``tools/list`` is answered with the front client's tools *at that moment*,
and its ``tools/call`` reaches the front client as a Wire
``ToolCallRequest`` (through :class:`ToolSource`), while a turn runs.
Credentials are revoked when the session closes.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio

from wireproto.adapters.acp import schema as s
from wireproto.adapters.mcp import messages as mcp
from wireproto.agent.api import ToolOutcome
from wireproto.host.channel import ADDRESS_ENV, TOKEN_ENV, BridgeChannel, Credentials
from wireproto.host.policy import Caller
from wireproto.transports.subprocess import SubprocessStream

__all__ = ["SERVER_NAME", "ToolBridge", "ToolSource"]

log = logging.getLogger(__name__)

SERVER_NAME = "wire-client-tools"
"""The MCP server name the backend sees."""


class ToolSource(Protocol):
    """Where the bridge finds a session's tools and runs them."""

    def tools_of(self, session_id: str) -> list[mcp.Tool]:
        """The front client's tools for ``session_id`` now."""

    async def run_tool(self, session_id: str, name: str, arguments: dict[str, Any]) -> (
        ToolOutcome
    ):
        """Run a front client tool in the session's running turn."""


class _Handler:
    def __init__(self, source: ToolSource) -> None:
        self.source = source

    async def list_tools(self, caller: Caller) -> list[mcp.Tool]:
        return self.source.tools_of(caller.session_id)

    async def call_tool(self, caller: Caller, name: str, arguments: dict[str, Any]) -> (
        mcp.CallToolResult
    ):
        outcome = await self.source.run_tool(caller.session_id, name, arguments)
        text = outcome.output or outcome.message
        return mcp.CallToolResult(content=[mcp.TextContent(text=text)],
                                  is_error=outcome.is_error)


class ToolBridge:
    """The loopback channel and per-session MCP entries for front client tools."""

    def __init__(self, source: ToolSource) -> None:
        self.credentials = Credentials()
        self.channel = BridgeChannel(self.credentials, _Handler(source))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ToolBridge]:
        """Listen on the loopback channel while the proxy runs."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.channel.serve)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    def entry(self, session_id: str, backend: SubprocessStream) -> s.McpServerStdio:
        """A stdio MCP server entry serving ``session_id``'s front client tools.

        Its new credential is registered with ``backend`` (the process the entry
        is sent to), whose logged stderr then masks it.
        """
        assert self.channel.address is not None, "use 'async with bridge.running()'"
        token = self.credentials.mint(Caller(binding_id=session_id, session_id=session_id,
                                             agent="main"))
        backend.redact(token)
        return s.McpServerStdio(
            name=SERVER_NAME, command=sys.executable, args=["-m", "wireproto", "mcp-bridge"],
            env=[s.EnvVariable(name=ADDRESS_ENV, value=self.channel.address),
                 s.EnvVariable(name=TOKEN_ENV, value=token)],
        )

    def revoke(self, session_id: str) -> None:
        """Revoke the session's credentials (its bridge can no longer list or call)."""
        self.credentials.revoke(session_id)
