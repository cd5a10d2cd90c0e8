"""The MCP client role for tools, over any message stream.

Theory of operation
-------------------
``async with ToolClient(stream) as client`` runs a
:class:`~wireproto.rpc.peer.Peer` with the MCP dialect; a request that is
cancelled or times out sends ``notifications/cancelled`` (the peer's
cancellation, param ``requestId``), except ``initialize``, which the MCP
specification says must never be cancelled. :meth:`ToolClient.initialize` performs
the handshake: ``initialize`` with the preferred version, a check that the
server's answer is one this client speaks (otherwise
:class:`~wireproto.errors.RemoteProtocolError`: the caller should
disconnect, as the specification says), then ``notifications/initialized``.

The server may ``ping`` the client (answered ``{}``) and send
``notifications/tools/list_changed`` (passed to ``on_tools_changed``); other
notifications (log messages, progress) are logged and dropped, other requests
answered ``-32601`` since this client advertises no capabilities.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio.abc
from msgspec import UNSET

from wireproto import __version__
from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp.server import CANCEL_METHOD
from wireproto.adapters.mcp.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from wireproto.errors import LocalProtocolError, RemoteProtocolError
from wireproto.jsonrpc.codec import MCP_DIALECT
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

__all__ = ["MAX_PAGES", "ToolClient"]

log = logging.getLogger(__name__)

MAX_PAGES = 1000
"""The most ``tools/list`` pages :meth:`ToolClient.list_tools` follows."""


class ToolClient:
    """An MCP client for the tools of one server.

    Args:
        stream: the connection to the server.
        client_info: sent in ``initialize`` (default: ``wireproto`` and its version).
        protocol_version: the version offered in ``initialize``.
        versions: the versions accepted in the server's answer.
        on_tools_changed: awaited on ``notifications/tools/list_changed``.
        name: a label for log lines.

    Attributes:
        initialize_result: the server's ``initialize`` answer (``None`` before).
    """

    def __init__(
        self,
        stream: anyio.abc.ObjectStream[bytes],
        *,
        client_info: m.Implementation | None = None,
        protocol_version: str = LATEST_VERSION,
        versions: Sequence[str] = SUPPORTED_VERSIONS,
        on_tools_changed: Callable[[], Awaitable[None]] | None = None,
        name: str = "mcp client",
    ) -> None:
        self._stream = stream
        self.client_info = client_info or m.Implementation(name="wireproto", version=__version__)
        self.offered_version = protocol_version
        self.versions = tuple(versions)
        self.on_tools_changed = on_tools_changed
        self.name = name
        self.initialize_result: m.InitializeResult | None = None
        self._peer: Peer | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> ToolClient:
        router = Router()
        router.add("ping", self._ping)
        router.add("notifications/tools/list_changed", self._tools_changed, notification=True)
        async with AsyncExitStack() as stack:
            self._peer = await stack.enter_async_context(Peer(
                self._stream, router, dialect=MCP_DIALECT, cancel_method=CANCEL_METHOD,
                name=self.name,
            ))
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.__aexit__(exc_type, exc, tb)

    @property
    def peer(self) -> Peer:
        """The running peer.

        Raises:
            LocalProtocolError: the client is not running (use ``async with``).
        """
        if self._peer is None:
            raise LocalProtocolError("the MCP client is not running: use 'async with client'")
        return self._peer

    @property
    def protocol_version(self) -> str | None:
        """The negotiated version (``None`` before :meth:`initialize`)."""
        r = self.initialize_result
        return None if r is None else r.protocol_version

    @property
    def server_info(self) -> m.Implementation | None:
        """The server's identity (``None`` before :meth:`initialize`)."""
        r = self.initialize_result
        return None if r is None else r.server_info

    async def _ping(self, params: Any) -> m.EmptyResult:
        return m.EmptyResult()

    async def _tools_changed(self, params: Any) -> None:
        if self.on_tools_changed is not None:
            await self.on_tools_changed()

    def _require(self, method: str) -> None:
        if self.initialize_result is None:
            raise LocalProtocolError(f"call initialize() before {method}")

    async def initialize(
        self, *, timeout: float | None = 30.0  # noqa: ASYNC109 (the handshake's deadline)
    ) -> m.InitializeResult:
        """Perform the handshake: ``initialize``, version check, ``notifications/initialized``.

        Returns:
            the server's answer (also kept in :attr:`initialize_result`).

        Raises:
            RemoteProtocolError: the server chose a version this client does
                not speak (close the connection), or answered nonsense.
            RpcError: the server answered with an error.
            TimeoutError: no answer within ``timeout`` seconds (no
                cancellation is sent for ``initialize``; close the connection).
        """
        params = m.InitializeParams(
            protocol_version=self.offered_version,
            capabilities=m.McpClientCapabilities(),
            client_info=self.client_info,
        )
        peer = self.peer
        # MCP forbids cancelling initialize: the peer sends no cancellation
        # while the handshake is pending (nothing else may be in flight then).
        cancel_method, peer.cancel_method = peer.cancel_method, None
        try:
            result = await peer.request(
                "initialize", params, result_type=m.InitializeResult, timeout=timeout
            )
        finally:
            peer.cancel_method = cancel_method
        if result.protocol_version not in self.versions:
            raise RemoteProtocolError(
                f"the MCP server chose protocol version {result.protocol_version!r}; "
                f"this client speaks {', '.join(self.versions)}"
            )
        self.initialize_result = result
        await self.peer.notify("notifications/initialized")
        info = result.server_info
        log.info("%s: connected to %s %s (%s)", self.name, info.name, info.version,
                 result.protocol_version)
        return result

    async def ping(self, *, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Send ``ping`` and wait for the answer."""
        await self.peer.request("ping", result_type=m.EmptyResult, timeout=timeout)

    async def list_tools_page(self, cursor: str | None = None) -> m.ListToolsResult:
        """Fetch one page of tools (``cursor``: the previous page's ``next_cursor``)."""
        self._require("tools/list")
        params = m.ListToolsParams(cursor=UNSET if cursor is None else cursor)
        return await self.peer.request("tools/list", params, result_type=m.ListToolsResult)

    async def list_tools(self) -> list[m.Tool]:
        """Fetch every tool, following the pages.

        Raises:
            RemoteProtocolError: the server repeats a cursor or sends more
                than :data:`MAX_PAGES` pages.
        """
        tools: list[m.Tool] = []
        seen: set[str] = set()
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self.list_tools_page(cursor)
            tools.extend(page.tools)
            if not isinstance(page.next_cursor, str):
                return tools
            if page.next_cursor in seen:
                raise RemoteProtocolError(f"tools/list repeated cursor {page.next_cursor!r}")
            seen.add(cursor := page.next_cursor)
        raise RemoteProtocolError(f"tools/list sent more than {MAX_PAGES} pages")

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (a per-call deadline)
    ) -> m.CallToolResult:
        """Call tool ``name``.

        Returns:
            the result; a failure of the tool itself has ``is_error`` true.

        Raises:
            RpcError: a protocol error (e.g. ``-32602`` unknown tool).
            TimeoutError: no answer within ``timeout`` (the call is cancelled).
        """
        self._require("tools/call")
        params = m.CallToolParams(name=name, arguments=arguments if arguments is not None else {})
        return await self.peer.request(
            "tools/call", params, result_type=m.CallToolResult, timeout=timeout
        )
