"""The Agent Client Protocol (ACP v1) adapter: both roles, and one-call entry points.

* Agent role: :func:`serve_acp` serves any agent written against
  :mod:`wireproto.agent` to one ACP client (an editor such as Zed), over this
  process's stdio by default or over any message stream;
  :class:`AgentConnection` gives more control.
* Client role: :func:`connect_acp` spawns an agent command or connects to a
  WebSocket URL and yields an initialized :class:`ClientConnection`; prompt
  turns are :class:`PromptTurn` objects (async streams of typed updates). The default
  handlers :class:`LocalFileSystem` and :class:`LocalTerminals` serve the
  agent's ``fs/*`` and ``terminal/*`` requests; :func:`stdio_server` /
  :func:`http_server` build MCP server entries. The protocol's message types
  are in :mod:`.schema`, exported here and used qualified (``schema.ToolCall``).

Types generated from the official schema live in
:mod:`wireproto.adapters.acp.schema`. The transports are imported lazily,
only by :func:`serve_acp` (stdio) and :func:`connect_acp`.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from wireproto.adapters._shared import runtime_of, serve_or_stdio

from . import schema
from .agent.connection import AgentConnection
from .client.connect import connect_acp
from .client.connection import PROTOCOL_VERSION, ClientConnection
from .client.elicitation import (
    ElicitationHandler,
    FormOrUrl,
    answer_problem,
    bounded_answer_problem,
    bounded_schema_problem,
    schema_problem,
)
from .client.ext import CALL_TIMEOUT, INITIALIZE_TIMEOUT
from .client.fs import FileSystem, LocalFileSystem
from .client.mcpservers import http_server, sse_server, stdio_server
from .client.state import (
    ClientSession,
    LoadResult,
    PermissionHandler,
    SessionEvent,
    UpdateHandler,
    option_of_kind,
)
from .client.terminals import LocalTerminals, Terminals
from .client.turn import PromptTurn

if TYPE_CHECKING:
    from wireproto.agent.api import Agent
    from wireproto.agent.runtime import Runtime
    from wireproto.agent.store import StoreArg

__all__ = [
    "CALL_TIMEOUT",
    "INITIALIZE_TIMEOUT",
    "PROTOCOL_VERSION",
    "AgentConnection",
    "ClientConnection",
    "ClientSession",
    "ElicitationHandler",
    "FileSystem",
    "FormOrUrl",
    "LoadResult",
    "LocalFileSystem",
    "LocalTerminals",
    "PermissionHandler",
    "PromptTurn",
    "SessionEvent",
    "Terminals",
    "UpdateHandler",
    "answer_problem",
    "bounded_answer_problem",
    "bounded_schema_problem",
    "connect_acp",
    "http_server",
    "option_of_kind",
    "schema",
    "schema_problem",
    "serve_acp",
    "sse_server",
    "stdio_server",
]


async def serve_acp(
    agent: Agent | Runtime,
    stream: anyio.abc.ObjectStream[bytes] | None = None,
    *,
    allow_client_stdio_mcp: bool = False,
    require_auth: bool = False,
    stop: anyio.Event | None = None,
    store: StoreArg = None,
) -> None:
    """Serve ``agent`` to one ACP client until its input ends or ``stop`` is set.

    Args:
        agent: the agent, or a :class:`~wireproto.agent.runtime.Runtime`
            (to share sessions between connections).
        stream: the connection (whole messages); this process's stdin and
            stdout when ``None``.
        allow_client_stdio_mcp: accept stdio MCP servers from the client (the
            agent then trusts the client's choice of executables).
        require_auth: session setup and listing need ``authenticate`` first.
        stop: set it to end serving.
        store: where session history lives when ``agent`` is not a runtime:
            a :class:`~wireproto.agent.store.Store`, a directory for JSON
            Lines files, or ``None`` (default) for memory only: nothing is
            written to disk unless asked (``wireproto acp`` passes
            ``$WIREPROTO_HOME/sessions``).

    On the way out running turns are cancelled (their prompts answer
    ``cancelled``), pending client requests fail, the sessions are closed
    and queued messages are flushed; this returns within five seconds.

    Raises:
        OSError: stdin or stdout cannot be used (stdio only).
        ValueError: ``store`` given with a runtime (give it to the runtime).
    """
    connection = AgentConnection(
        runtime_of(agent, store), allow_client_stdio_mcp=allow_client_stdio_mcp,
        require_auth=require_auth,
    )
    await serve_or_stdio(functools.partial(connection.serve, stop=stop), stream)
