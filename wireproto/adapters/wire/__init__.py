"""Kimi CLI's Wire protocol: both roles, and one-call entry points.

* :func:`serve_wire` serves an agent (or a :class:`~wireproto.agent.runtime.Runtime`)
  to one client: over this process's stdio by default, or over any message
  stream (a WebSocket connection, an in-memory pair).
* :func:`connect_wire` spawns a Wire server command (``kimi --wire``,
  ``wireproto wire``) or connects to a WebSocket URL and yields a ready
  :class:`~.client.connection.WireClient` (``initialize`` sent, v1 fallback applied).

The transports are imported lazily, only by these two functions. The
protocol's messages are in :mod:`~wireproto.adapters.wire.messages` (events
and requests), :mod:`~wireproto.adapters.wire.methods` (client -> server
methods) and :mod:`~wireproto.adapters.wire.display` (display blocks); the
protocol itself is described in ``docs/protocol-wire.md``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import anyio.abc

from wireproto.adapters._shared import open_client, renamed_options, runtime_of, serve_or_stdio
from wireproto.agent.api import Agent
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import StoreArg
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES

from . import messages
from .client.connection import (
    HANDSHAKE_TIMEOUT,
    EventHandler,
    WireClient,
    WireEvent,
)
from .client.requests import (
    ApprovalHandler,
    HookHandler,
    LegacyToolHandler,
    QuestionHandler,
    ToolEntry,
    ToolHandler,
)
from .client.turn import Reject, ToolContext, WireTurn
from .methods import (
    ClientInfo,
    ExternalTool,
    ExternalToolsResult,
    HookSubscription,
    InitializeResult,
    PromptResult,
    ReplayResult,
    ServerInfo,
    SetPlanModeResult,
    SteerResult,
    WireClientCapabilities,
)
from .server.connection import WireServer

__all__ = [
    "HANDSHAKE_TIMEOUT",
    "ApprovalHandler",
    "ClientInfo",
    "EventHandler",
    "ExternalTool",
    "ExternalToolsResult",
    "HookHandler",
    "HookSubscription",
    "InitializeResult",
    "PromptResult",
    "QuestionHandler",
    "Reject",
    "ReplayResult",
    "ServerInfo",
    "SetPlanModeResult",
    "SteerResult",
    "ToolContext",
    "ToolEntry",
    "ToolHandler",
    "WireClient",
    "WireClientCapabilities",
    "WireEvent",
    "WireServer",
    "WireTurn",
    "connect_wire",
    "messages",
    "serve_wire",
]


async def serve_wire(
    agent: Agent | Runtime,
    stream: anyio.abc.ObjectStream[bytes] | None = None,
    *,
    session_id: str | None = None,
    work_dir: str | None = None,
    yolo: bool = False,
    model: str | None = None,
    thinking: bool | None = None,
    stop: anyio.Event | None = None,
    store: StoreArg = None,
) -> None:
    """Serve ``agent`` to one Wire client until the input ends or ``stop`` is set.

    Args:
        agent: the agent, or a runtime already serving it (shared sessions).
        stream: the connection; ``None`` = this process's stdin/stdout.
        session_id: resume this session (created when unknown); default a new one.
        work_dir: the session's working directory (default: the current one).
        yolo: approve every approval request without asking the client.
        model: value of the agent's ``model`` option, if it declares one.
        thinking: value of the agent's ``thought_level`` option, if it declares one.
        stop: set it to end serving (e.g. on SIGTERM): the running turn is
            cancelled, pending requests resolved visibly, output flushed.
        store: where session history lives when ``agent`` is not a runtime:
            a :class:`~wireproto.agent.store.Store`, a directory for JSON
            Lines files, or ``None`` (default) for memory only: nothing is
            written to disk unless asked (``wireproto wire`` passes
            ``$WIREPROTO_HOME/sessions``).

    Raises:
        AgentError: the session could not be opened or an option not set.
        OSError: stdio is not usable.
        ValueError: ``store`` given with a runtime (give it to the runtime).
    """
    server = WireServer(
        runtime_of(agent, store), session_id=session_id, work_dir=work_dir, yolo=yolo, model=model,
        thinking=thinking,
    )
    await serve_or_stdio(functools.partial(server.serve, stop=stop), stream)


@asynccontextmanager
async def connect_wire(
    cmd: Sequence[str] | None = None,
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | None = None,
    stderr: Literal["inherit", "log"] = "log",
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    initialize: bool = True,
    require_handshake: bool = False,
    client_info: ClientInfo | None = None,
    tools: Sequence[ToolEntry] = (),
    external_tools: Mapping[str, tuple[ExternalTool, LegacyToolHandler]] | None = None,
    on_approval: ApprovalHandler | None = None,
    on_question: QuestionHandler | None = None,
    on_hook: HookHandler | None = None,
    on_event: EventHandler | None = None,
    hooks: Sequence[HookSubscription] = (),
    supports_plan_mode: bool = False,
    event_buffer: int = 1024,
    initialize_timeout: float = HANDSHAKE_TIMEOUT,
    shutdown_timeout: float = 5.0,
    redact: Collection[str] = (),
    **deprecated: Any,
) -> AsyncIterator[WireClient]:
    """Connect to a Wire server and yield a ready :class:`WireClient`.

    Exactly one of ``cmd`` (a command to spawn, talking over its stdio) and
    ``url`` (a ``ws://`` / ``wss://`` URL) must be given.

    Args:
        cmd: the server command and its arguments (no shell).
        url: a WebSocket URL.
        headers: extra HTTP headers for the WebSocket handshake (e.g. a token).
        env: variables set for the spawned command on top of our environment.
        inherit_env: ``False``: the command gets exactly ``env``.
        cwd: the spawned command's directory.
        stderr: the spawned command's stderr: ``"log"`` (drained into
            :mod:`logging`, the default; its last lines are kept for
            :class:`~wireproto.errors.ProcessExited`) or ``"inherit"``.
        max_bytes: the largest accepted inbound message (default 64 MiB).
        initialize: send ``initialize`` first (with the v1 fallback).
        require_handshake: raise instead of falling back to v1 mode when the
            server does not answer ``initialize``.
        client_info: see :class:`WireClient` (likewise the options ``tools``
            to ``event_buffer``).
        initialize_timeout: seconds the handshake may take, counted from when
            the process was started (default :data:`HANDSHAKE_TIMEOUT`: Kimi
            CLI needs 10 s or more on a loaded machine). When it passes, the
            client falls back to v1 mode and logs a warning saying why.
        shutdown_timeout: seconds a spawned server gets to exit after its
            stdin closed (and again after SIGTERM).
        redact: secrets handed to a spawned server (tokens, keys in ``env``),
            masked in its logged stderr lines.
        deprecated: the old name ``handshake`` still works, with a
            :class:`DeprecationWarning`.

    Yields:
        the client (its ``process`` gives a spawned server's ``pid``, and its
        ``returncode`` after the block); on exit it is closed and a spawned
        server is shut down.

    Raises:
        ValueError: both or neither of ``cmd`` and ``url``.
        OSError: the command could not be started or the socket not opened.
        ConnectionClosed: the WebSocket handshake was refused.
        RemoteProtocolError: ``require_handshake`` and no handshake.
        ProcessExited: the spawned server exited or closed its output while
            a request waited (its exit status and last stderr lines attached).
    """
    initialize = renamed_options("connect_wire", deprecated, {"handshake": "initialize"}).get(
        "initialize", initialize)
    transport = {"cmd": cmd, "url": url, "headers": headers, "env": env, "cwd": cwd,
                 "stderr": stderr, "max_bytes": max_bytes, "redact": redact,
                 "inherit_env": inherit_env, "shutdown_timeout": shutdown_timeout}

    def client_of(stream: anyio.abc.ObjectStream[bytes]) -> WireClient:
        from wireproto.transports.process import process_of

        client = WireClient(
            stream, client_info=client_info, tools=tools, external_tools=external_tools,
            on_approval=on_approval, on_question=on_question, on_hook=on_hook,
            on_event=on_event, hooks=hooks, supports_plan_mode=supports_plan_mode,
            event_buffer=event_buffer, initialize_timeout=initialize_timeout,
            require_handshake=require_handshake,
        )
        client.process = process_of(stream)
        return client

    handshake = WireClient.initialize if initialize else None
    async with open_client(transport, client_of, handshake) as client:
        yield client
