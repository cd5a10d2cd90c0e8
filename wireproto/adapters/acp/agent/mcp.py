"""The forwarding policy for MCP servers a client sends with a session.

Theory of operation
-------------------
``session/new``, ``session/load`` and ``session/resume`` carry ``mcpServers``
(protocol-acp.md#mcp-servers). The adapter translates every
accepted entry into a neutral :class:`~wireproto.agent.api.McpServer` and
hands the list to the session; the agent's runtime decides how to connect.
What happens to each kind of entry is the table :data:`TRANSPORTS` plus two
rules:

* ``type: "http"`` / ``"sse"``: accepted (transport ``http`` / ``sse``),
  headers kept (they are secrets: never logged);
* stdio (no ``type``, or ``type: "stdio"``): refused with ``-32602`` naming
  the server, before any session is created or resumed, unless the agent
  was started with ``allow_client_stdio_mcp`` (it then trusts the client's
  choice of executable; transport ``stdio``, ``env`` kept, never logged).
  This is wireproto's deliberate security deviation from the protocol
  (protocol-acp.md#client-stdio-mcp-servers);
* the unstable ``type: "acp"`` (MCP tunnelled over ACP): taken out of the
  raw params before decoding (:func:`decode_setup`), dropped with a warning in
  the log and, when the client advertised ``session.notices``, a ``notice``
  (:func:`dropped_notice`); the session is still created.

Nothing else is dropped: a malformed entry fails the request with ``-32602``
(the npm 2.4.0 schema makes ``mcpServers`` strict apart from ``null`` ->
``[]``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import msgspec

from wireproto.adapters.acp import codec, extra
from wireproto.adapters.acp import schema as S
from wireproto.agent.api import McpServer
from wireproto.agent.events import Notice
from wireproto.errors import RpcError
from wireproto.jsonrpc.messages import ErrorCode

__all__ = ["TRANSPORTS", "McpPolicy", "Setup", "decode_setup", "dropped_notice"]

log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSPORTS: dict[type, str] = {
    S.McpServerHttp: "http",
    S.McpServerSse: "sse",
    S.McpServerStdio: "stdio",
}
"""Decoded entry class -> neutral transport name."""

_ACP_MARKER = b'"acp"'


@dataclasses.dataclass(frozen=True)
class Setup(Generic[T]):
    """Decoded session setup params and the ``type: "acp"`` servers taken out of them.

    Attributes:
        params: the typed params (``NewSessionRequest`` ...).
        dropped: names of the dropped ``acp`` servers, in order.
    """

    params: T
    dropped: tuple[str, ...] = ()


def decode_setup(type_: type[T]) -> Callable[[msgspec.Raw], Setup[T]]:
    """A route decoder for session setup params of ``type_`` (lenient, acp entries split).

    The returned function raises :class:`msgspec.ValidationError` for invalid
    params (the peer answers ``-32602`` with the JSON path).
    """

    def decode(raw: msgspec.Raw) -> Setup[T]:
        data = bytes(raw)
        if _ACP_MARKER not in data:  # the common case: one lenient decode
            return Setup(codec.decode(data, type_))
        obj, dropped = extra.split_acp_servers(msgspec.json.decode(data))
        return Setup(codec.convert(obj, type_), tuple(dropped))

    return decode


def _pairs(items: Sequence[S.HttpHeader] | Sequence[S.EnvVariable]) -> dict[str, str]:
    return {item.name: item.value for item in items}


@dataclasses.dataclass(frozen=True)
class McpPolicy:
    """What the agent side accepts from ``mcpServers``.

    Attributes:
        allow_stdio: accept stdio entries (``--allow-client-stdio-mcp``).
    """

    allow_stdio: bool = False

    def accept(self, servers: Sequence[Any]) -> list[McpServer]:
        """Translate the decoded entries into neutral MCP server configs.

        Args:
            servers: decoded ``McpServer`` variants (``acp`` entries already
                taken out).

        Returns:
            one config per entry, in order.

        Raises:
            RpcError: ``-32602`` naming the first stdio server when stdio is
                not allowed (nothing was created).
        """
        out: list[McpServer] = []
        for index, server in enumerate(servers):
            transport = TRANSPORTS[type(server)]
            if isinstance(server, S.McpServerStdio):
                if not self.allow_stdio:
                    reason = (
                        f'MCP server "{server.name}" uses stdio, which this agent does not '
                        "accept from clients (start it with --allow-client-stdio-mcp)"
                    )
                    log.warning("refused %s", reason)
                    raise RpcError(
                        ErrorCode.INVALID_PARAMS, f"Invalid params: {reason}",
                        {"path": f"$.mcpServers[{index}]", "reason": reason},
                    )
                out.append(McpServer(
                    name=server.name, transport=transport, command=server.command,
                    args=tuple(server.args), env=_pairs(server.env),
                ))
            else:
                out.append(McpServer(
                    name=server.name, transport=transport, url=server.url,
                    headers=_pairs(server.headers),
                ))
        if out:  # names and transports only: env and headers may hold secrets
            log.info("MCP servers for the session: %s",
                     ", ".join(f"{s.name} ({s.transport})" for s in out))
        return out


def dropped_notice(name: str) -> Notice:
    """Log the drop of the ``type: "acp"`` server ``name``; return its notice."""
    description = 'MCP over ACP (type "acp") is not supported by this agent'
    log.warning('MCP server "%s" dropped: %s', name, description)
    return Notice(severity="warning", title=f'MCP server "{name}" dropped',
                  description=description)
