"""``connect_acp``: drive an ACP agent spawned as a command or reached over WebSocket.

The convenience entry point of the client role (design rule 6): it picks
the transport, imported lazily, wraps it in a
:class:`~.connection.ClientConnection` and, by default,
sends ``initialize`` before yielding the connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio.abc

from wireproto.adapters._shared import open_client, renamed_options
from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.elicitation import ElicitationHandler
from wireproto.adapters.acp.client.fs import FileSystem
from wireproto.adapters.acp.client.state import PermissionHandler, UpdateHandler
from wireproto.adapters.acp.client.terminals import Terminals
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["connect_acp"]

_RENAMED = {"handshake_timeout": "initialize_timeout", "update_buffer": "event_buffer"}
"""Old option name -> its name in the vocabulary shared by every ``connect_*``."""


@asynccontextmanager
async def connect_acp(
    cmd: Sequence[str] | None = None,
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: Literal["inherit", "log"] = "log",
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    initialize: bool = True,
    initialize_timeout: float | None = 30.0,
    client_info: s.Implementation | None = None,
    on_permission: PermissionHandler | None = None,
    on_update: UpdateHandler | None = None,
    file_system: FileSystem | None = None,
    terminals: Terminals | None = None,
    notices: bool = False,
    compaction: bool = False,
    boolean_options: bool = False,
    event_buffer: int = 256,
    redact: Collection[str] = (),
    inherit_env: bool = True,
    shutdown_timeout: float = 5.0,
    on_elicitation: ElicitationHandler | None = None,
    on_elicitation_complete: Callable[[str], Awaitable[None]] | None = None,
    elicitation_modes: Sequence[str] = ("form", "url"),
    **deprecated: Any,
) -> AsyncIterator[ClientConnection]:
    """Connect to an ACP agent and yield a running, initialized :class:`ClientConnection`.

    Exactly one of ``cmd`` (a command to spawn, talking over its stdin and
    stdout) and ``url`` (a ``ws://`` / ``wss://`` URL) must be given.

    Args:
        cmd: the agent command and its arguments (no shell).
        url: a WebSocket URL.
        headers: extra HTTP headers for the WebSocket handshake (e.g. a token).
        env: variables set for the spawned command on top of our environment.
        cwd: the spawned command's working directory.
        inherit_env: ``False``: the command gets exactly ``env``.
        stderr: the spawned command's stderr: ``"log"`` (drained into
            :mod:`logging`, the default) or ``"inherit"``.
        max_bytes: the largest accepted inbound message (default 64 MiB).
        initialize: send ``initialize`` before yielding (the default); pass
            ``False`` to send it yourself (e.g. with a custom timeout).
        initialize_timeout: seconds the agent has to answer ``initialize``,
            counted once the process is started or the socket open (``None``:
            wait as long as it runs).
        client_info: see :class:`ClientConnection` (likewise the options
            ``on_permission`` to ``boolean_options``, and ``on_elicitation`` to
            ``elicitation_modes``: ``elicitation`` is advertised only with an
            ``on_elicitation`` handler).
        event_buffer: session updates buffered per prompt turn.
        redact: secrets handed to a spawned agent (tokens, keys in ``env``),
            masked in its logged stderr lines.
        shutdown_timeout: seconds a spawned agent gets to exit after its
            stdin closed (and again after SIGTERM) when the connection ends.
        deprecated: the old names ``handshake_timeout`` and
            ``update_buffer`` still work, with a :class:`DeprecationWarning`.

    Yields:
        the connection; on exit it is closed, its terminals are killed and a
            spawned agent is shut down (stdin closed, then SIGTERM, then SIGKILL).
            Its :attr:`~ClientConnection.process` gives a spawned agent's ``pid``,
            and its ``returncode`` once the block is left.

    Raises:
        ValueError: both or neither of ``cmd`` and ``url``.
        OSError: the command could not be started or the socket not opened.
        ConnectionClosed: the WebSocket handshake was refused, or the agent
            went away during ``initialize``.
        ProcessExited: the spawned agent exited or closed its output while a
            request waited (its exit status and last stderr lines attached).
        RemoteProtocolError: the agent chose an ACP version other than 1.
        TimeoutError: the agent did not answer ``initialize`` within
            ``initialize_timeout`` seconds (the message says so).
    """
    old = renamed_options("connect_acp", deprecated, _RENAMED)
    initialize_timeout = old.get("initialize_timeout", initialize_timeout)
    event_buffer = old.get("event_buffer", event_buffer)
    transport = {"cmd": cmd, "url": url, "headers": headers, "env": env, "cwd": cwd,
                 "stderr": stderr, "max_bytes": max_bytes, "redact": redact,
                 "inherit_env": inherit_env, "shutdown_timeout": shutdown_timeout}

    def client_of(stream: anyio.abc.ObjectStream[bytes]) -> ClientConnection:
        from wireproto.transports.process import process_of

        client = ClientConnection(
            stream, client_info=client_info, on_permission=on_permission,
            on_update=on_update, file_system=file_system, terminals=terminals,
            notices=notices, compaction=compaction, boolean_options=boolean_options,
            event_buffer=event_buffer, on_elicitation=on_elicitation,
            on_elicitation_complete=on_elicitation_complete,
            elicitation_modes=elicitation_modes,
        )
        client.process = process_of(stream)
        return client

    async def handshake(client: ClientConnection) -> None:
        await client.initialize(timeout=initialize_timeout)

    async with open_client(transport, client_of, handshake if initialize else None) as client:
        yield client
