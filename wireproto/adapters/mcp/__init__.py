"""A minimal Model Context Protocol (MCP) adapter: tools only.

* :class:`~.server.ToolServer` serves a :class:`~.server.ToolProvider`
  (``list_tools()`` / ``call_tool(name, arguments)``, asked on every request);
  :func:`serve_mcp` serves one on stdio or any message stream.
* :class:`~.client.ToolClient` drives any MCP server's tools;
  :func:`connect_mcp` spawns a stdio server and yields an initialized client.

Both speak the ``initialize`` handshake with version negotiation
(:mod:`.versions`), ``ping``, ``tools/list`` with cursors, ``tools/call`` and
``notifications/cancelled``, on :class:`~wireproto.rpc.peer.Peer` with the
MCP dialect. Messages are msgspec Structs (:mod:`.messages`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.abc

from wireproto._lazy import attach

if TYPE_CHECKING:
    from wireproto.adapters.mcp.client import ToolClient
    from wireproto.adapters.mcp.messages import Implementation, Tool
    from wireproto.adapters.mcp.server import ToolProvider, ToolServer

__all__ = [
    "Implementation",
    "Tool",
    "ToolClient",
    "ToolProvider",
    "ToolServer",
    "connect_mcp",
    "serve_mcp",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "Implementation": ".messages",
        "Tool": ".messages",
        "ToolClient": ".client",
        "ToolProvider": ".server",
        "ToolServer": ".server",
    },
)


async def serve_mcp(
    provider: ToolProvider,
    stream: anyio.abc.ObjectStream[bytes] | None = None,
    *,
    server_info: Implementation | None = None,
    instructions: str | None = None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve ``provider``'s tools to one MCP client until its input ends or ``stop`` is set.

    Args:
        provider: lists and runs the tools (asked on every request).
        stream: the connection; this process's stdin and stdout when ``None``.
        server_info: the identity sent in ``initialize``.
        instructions: optional usage hints sent in ``initialize``.
        stop: set it to end serving.

    Raises:
        OSError: stdin or stdout cannot be used (stdio only).
    """
    from wireproto.adapters.mcp.server import ToolServer

    server = ToolServer(provider, server_info=server_info, instructions=instructions)
    if stream is not None:
        await server.serve(stream, stop=stop)
        return
    from wireproto.transports.stdio import open_stdio  # only a stdio server needs it

    async with open_stdio() as stdio:
        await server.serve(stdio, stop=stop)


@asynccontextmanager
async def connect_mcp(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | None = None,
    stderr: Literal["inherit", "log"] = "log",
    initialize: bool = True,
    client_info: Implementation | None = None,
    timeout: float | None = 30.0,  # noqa: ASYNC109 (the handshake's deadline)
) -> AsyncIterator[ToolClient]:
    """Spawn the stdio MCP server ``cmd`` and yield a running client.

    Args:
        cmd: the server command and its arguments (no shell).
        env: variables set for the child on top of our environment.
        inherit_env: ``False``: the child gets exactly ``env``.
        cwd: the child's working directory.
        stderr: ``"log"`` (drained into :mod:`logging`) or ``"inherit"``.
        initialize: perform the handshake before yielding (the default).
        client_info: the identity sent in ``initialize``.
        timeout: seconds the handshake may take.

    Yields:
        the client; on exit the child's stdin is closed and it is shut down.

    Raises:
        OSError: the command could not be started.
        RemoteProtocolError: the server chose an unsupported version.
        ConnectionClosed: the server went away during the handshake.
    """
    from wireproto.adapters.mcp.client import ToolClient
    from wireproto.transports.subprocess import open_subprocess

    async with open_subprocess(cmd, env=env, inherit_env=inherit_env, cwd=cwd,
                               stderr=stderr) as stream:
        async with ToolClient(stream, client_info=client_info) as client:
            if initialize:
                await client.initialize(timeout=timeout)
            yield client
