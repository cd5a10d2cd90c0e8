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

import functools
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc

from wireproto._lazy import attach
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES

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
    from wireproto.adapters._shared import serve_or_stdio
    from wireproto.adapters.mcp.server import ToolServer

    server = ToolServer(provider, server_info=server_info, instructions=instructions)
    await serve_or_stdio(functools.partial(server.serve, stop=stop), stream)


@asynccontextmanager
async def connect_mcp(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | None = None,
    stderr: Literal["inherit", "log"] = "log",
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    initialize: bool = True,
    initialize_timeout: float | None = 30.0,
    client_info: Implementation | None = None,
    redact: Collection[str] = (),
    shutdown_timeout: float = 5.0,
    **deprecated: Any,
) -> AsyncIterator[ToolClient]:
    """Spawn the stdio MCP server ``cmd`` and yield a running client.

    Args:
        cmd: the server command and its arguments (no shell).
        env: variables set for the child on top of our environment.
        inherit_env: ``False``: the child gets exactly ``env``.
        cwd: the child's working directory.
        stderr: ``"log"`` (drained into :mod:`logging`, the default) or ``"inherit"``.
        max_bytes: the largest accepted inbound message (default 64 MiB).
        initialize: perform the handshake before yielding (the default).
        initialize_timeout: seconds the handshake may take.
        client_info: the identity sent in ``initialize``.
        redact: secrets handed to the server (tokens, keys in ``env``),
            masked in its logged stderr lines.
        shutdown_timeout: seconds the server gets to exit after its stdin
            closed (and again after SIGTERM).
        deprecated: the old name ``timeout`` still works, with a
            :class:`DeprecationWarning`.

    Yields:
        the client; on exit the child's stdin is closed and it is shut down.

    Raises:
        OSError: the command could not be started.
        RemoteProtocolError: the server chose an unsupported version.
        ConnectionClosed: the server went away during the handshake.
        ProcessExited: the server exited or closed its output while a request
            waited (its exit status and last stderr lines attached).
    """
    from wireproto.adapters._shared import open_client, renamed_options
    from wireproto.adapters.mcp.client import ToolClient

    initialize_timeout = renamed_options("connect_mcp", deprecated, {
        "timeout": "initialize_timeout"}).get("initialize_timeout", initialize_timeout)
    transport = {"cmd": cmd, "env": env, "inherit_env": inherit_env, "cwd": cwd,
                 "stderr": stderr, "max_bytes": max_bytes, "redact": redact,
                 "shutdown_timeout": shutdown_timeout}

    def client_of(stream: anyio.abc.ObjectStream[bytes]) -> ToolClient:
        return ToolClient(stream, client_info=client_info)

    async def handshake(client: ToolClient) -> None:
        await client.initialize(timeout=initialize_timeout)

    async with open_client(transport, client_of, handshake if initialize else None) as client:
        yield client
