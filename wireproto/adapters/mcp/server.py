"""The MCP server role for tools, over any message stream.

Theory of operation
-------------------
``await ToolServer(provider).serve(stream)`` runs a
:class:`~wireproto.rpc.peer.Peer` with the MCP dialect (non-null ids, a
cancelled request is never answered) and ``notifications/cancelled`` mapped
onto the peer's cancellation: the handler of the named request is cancelled.

The method table:

=============================== ===========================================
``initialize``                  negotiate the version (:func:`.versions.negotiate`),
                                record the client, answer capabilities
``notifications/initialized``   the client is ready (recorded)
``ping``                        ``{}`` at any time
``tools/list``                  one page of ``provider.list_tools()``
``tools/call``                  ``provider.call_tool(name, arguments)``
=============================== ===========================================

``tools/*`` before ``initialize`` is ``-32600``. The provider is asked on
*every* request (nothing is cached), so a host can re-check its policy each
time. Pages hold ``page_size`` tools; the cursor is opaque to clients (an
offset here) and one that does not parse is ``-32602``.

Errors raised by the provider map through :data:`AGENT_ERRORS`:
:class:`~wireproto.errors.NotFound` means "unknown tool" (``-32602``, as the
MCP specification's example; the exception's message, when not empty, is
sent), :class:`~wireproto.errors.InvalidArgument` is
``-32602``, any other :class:`~wireproto.errors.AgentError` ``-32603`` with its
(client-safe) message; an :class:`~wireproto.errors.RpcError` is sent as is.
A tool that ran and failed is not a protocol error: the provider returns a
:class:`~.messages.CallToolResult` with ``is_error=True``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import anyio
import anyio.abc
from msgspec import UNSET

from wireproto import __version__
from wireproto.adapters._shared import rpc_error, until_closed
from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp.versions import SUPPORTED_VERSIONS, negotiate
from wireproto.errors import (
    AgentError,
    ConnectionClosed,
    InvalidArgument,
    NotFound,
    RpcError,
)
from wireproto.jsonrpc.codec import MCP_DIALECT
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

__all__ = ["AGENT_ERRORS", "CANCEL_METHOD", "ToolProvider", "ToolServer"]

log = logging.getLogger(__name__)

CANCEL_METHOD = MCP_DIALECT.cancel_method
"""The MCP notification cancelling one request (param ``requestId``)."""

AGENT_ERRORS: dict[type[AgentError], int] = {
    NotFound: ErrorCode.INVALID_PARAMS,
    InvalidArgument: ErrorCode.INVALID_PARAMS,
}
"""Provider exception -> JSON-RPC code (other ``AgentError``: ``-32603``)."""

_GRACE = 2.0  # seconds running calls may take to finish once the input ended
_CURSOR = re.compile(r"[0-9]{1,18}")
"""A cursor this server gives: an offset in ASCII digits."""


class ToolProvider(Protocol):
    """What a :class:`ToolServer` serves. Both methods are called per request."""

    async def list_tools(self) -> Sequence[m.Tool]:
        """Return every tool the client may see now."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> m.CallToolResult:
        """Run tool ``name``.

        Raises:
            NotFound: no such tool (or not visible to this client).
            InvalidArgument: bad arguments.
            RpcError: any other protocol error, sent as is.
        """


class ToolServer:
    """An MCP server offering the tools of ``provider``.

    Args:
        provider: lists and runs the tools.
        server_info: sent in ``initialize`` (default: ``wireproto`` and its version).
        instructions: optional usage hints sent in ``initialize``.
        versions: supported protocol revisions, oldest first.
        page_size: tools per ``tools/list`` page.
        list_changed: advertise ``tools.listChanged`` (then call
            :meth:`notify_tools_changed` when the list changes).
        name: a label for log lines.

    Attributes:
        protocol_version: the negotiated version (``None`` before ``initialize``).
        client_info: the client's identity (``None`` before ``initialize``).
        ready: whether ``notifications/initialized`` arrived.
    """

    def __init__(
        self,
        provider: ToolProvider,
        *,
        server_info: m.Implementation | None = None,
        instructions: str | None = None,
        versions: Sequence[str] = SUPPORTED_VERSIONS,
        page_size: int = 100,
        list_changed: bool = False,
        name: str = "mcp server",
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.provider = provider
        self.server_info = server_info or m.Implementation(name="wireproto", version=__version__)
        self.instructions = instructions
        self.versions = tuple(versions)
        self.page_size = page_size
        self.list_changed = list_changed
        self.name = name
        self.protocol_version: str | None = None
        self.client_info: m.Implementation | None = None
        self.client_capabilities = m.McpClientCapabilities()
        self.ready = False
        self._peer: Peer | None = None
        self.router = self._routes()

    def _routes(self) -> Router:
        router = Router()
        table: Sequence[tuple[str, Callable[[Any], Any], Any, bool]] = (
            ("initialize", self._initialize, m.InitializeParams, False),
            ("notifications/initialized", self._initialized, Any, True),
            ("ping", self._ping, Any, False),
            ("tools/list", self._list, m.ListToolsParams, False),
            ("tools/call", self._call, m.CallToolParams, False),
        )
        for method, handler, params_type, notification in table:
            router.add(method, handler, params_type, notification=notification)
        return router

    async def serve(
        self, stream: anyio.abc.ObjectStream[bytes], *, stop: anyio.Event | None = None
    ) -> None:
        """Serve one client on ``stream`` until its input ends or ``stop`` is set.

        Calls still running when the input ends get a short grace period to
        answer; the stream is closed on return.
        """
        async with Peer(
            stream, self.router, dialect=MCP_DIALECT, cancel_method=MCP_DIALECT.cancel_method,
            name=self.name,
        ) as peer:
            self._peer = peer
            try:
                await until_closed(peer, stop)
                with anyio.move_on_after(_GRACE, shield=True):
                    await peer.wait_idle()
            finally:
                self._peer = None

    async def notify_tools_changed(self) -> None:
        """Send ``notifications/tools/list_changed`` (when advertised and initialized).

        Raises:
            ConnectionClosed: the server is not serving.
        """
        if self._peer is None:
            raise ConnectionClosed("the MCP server is not serving")
        if self.list_changed and self.protocol_version is not None:
            await self._peer.notify("notifications/tools/list_changed")

    # ------------------------------------------------------------- handlers

    async def _initialize(self, p: m.InitializeParams) -> m.InitializeResult:
        version = negotiate(p.protocol_version, self.versions)
        self.protocol_version = version
        self.client_info = p.client_info
        self.client_capabilities = p.capabilities
        log.info("%s: client %s %s asked for %s; answering %s", self.name, p.client_info.name,
                 p.client_info.version, p.protocol_version, version)
        return m.InitializeResult(
            protocol_version=version,
            capabilities=m.ServerCapabilities(
                tools=m.ToolsCapability(list_changed=self.list_changed)
            ),
            server_info=self.server_info,
            instructions=self.instructions if self.instructions is not None else UNSET,
        )

    async def _initialized(self, params: Any) -> None:
        self.ready = True

    async def _ping(self, params: Any) -> m.EmptyResult:
        return m.EmptyResult()

    def _check_initialized(self) -> None:
        if self.protocol_version is None:
            raise RpcError(ErrorCode.INVALID_REQUEST, "Server not initialized")

    async def _list(self, p: m.ListToolsParams) -> m.ListToolsResult:
        self._check_initialized()
        start = 0
        if isinstance(p.cursor, str):
            if _CURSOR.fullmatch(p.cursor) is None:  # (not int's syntax: "²", 5000 digits)
                raise RpcError(ErrorCode.INVALID_PARAMS, "Invalid cursor",
                               {"path": "$.cursor", "reason": "unknown cursor"})
            start = int(p.cursor)
        tools = list(await self._provider(self.provider.list_tools()))
        end = start + self.page_size
        page = tools[start:end]
        more = end < len(tools)
        return m.ListToolsResult(tools=page, next_cursor=str(end) if more else UNSET)

    async def _call(self, p: m.CallToolParams) -> m.CallToolResult:
        self._check_initialized()
        arguments = p.arguments if isinstance(p.arguments, dict) else {}
        result: m.CallToolResult = await self._provider(
            self.provider.call_tool(p.name, arguments), p.name
        )
        return result

    @staticmethod
    async def _provider(call: Any, tool: str | None = None) -> Any:
        try:
            return await call
        except NotFound as exc:
            message = exc.message or f"Unknown tool: {tool}"
            raise RpcError(ErrorCode.INVALID_PARAMS, message) from exc
        except AgentError as exc:
            raise rpc_error(exc, AGENT_ERRORS, data=False) from exc
