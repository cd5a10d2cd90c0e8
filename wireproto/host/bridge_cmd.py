"""``wireproto mcp-bridge``: a stdio MCP server forwarding every request to the host.

The host gives an external harness this command as one stdio MCP server
(its ``env`` holds the channel address and the binding's credential, see
:mod:`wireproto.host.channel`). The bridge keeps no tools of its own: each
``tools/list`` and ``tools/call`` becomes one channel request carrying the
credential, so the host re-checks the binding's permissions every time, and
after revocation every request fails. It exits when its stdin ends or when
the host closes the channel.

It runs as ``wireproto mcp-bridge`` (:func:`add_parser` registers it on the
``wireproto`` command; the host starts it with the current interpreter,
``python -m wireproto mcp-bridge``). It logs to stderr only (the harness's),
at ``--log-level`` or ``$WIREPROTO_BRIDGE_LOG`` (default ``warning``), and
never logs its credential.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio

from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp import serve_mcp
from wireproto.errors import ConnectionClosed, RpcError
from wireproto.host.channel import (
    ADDRESS_ENV,
    CALL_METHOD,
    LIST_METHOD,
    TOKEN_ENV,
    CallParams,
    ListParams,
    ListResult,
    connect_channel,
    parse_address,
)
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer

__all__ = ["LOG_ENV", "Forwarder", "add_parser"]

log = logging.getLogger(__name__)

LOG_ENV = "WIREPROTO_BRIDGE_LOG"
"""The environment variable giving the default ``--log-level``."""

_LEVELS = ("debug", "info", "warning", "error")


class Forwarder:
    """A :class:`~wireproto.adapters.mcp.server.ToolProvider` that asks the host."""

    def __init__(self, peer: Peer, token: str) -> None:
        self.peer = peer
        self._token = token

    async def list_tools(self) -> list[m.Tool]:
        """Every tool the binding may use now, as the host answers."""
        result: ListResult = await self._ask(
            LIST_METHOD, ListParams(token=self._token), ListResult
        )
        return result.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> m.CallToolResult:
        """Run ``name`` on the host (which re-checks the permission)."""
        params = CallParams(token=self._token, name=name, arguments=arguments)
        result: m.CallToolResult = await self._ask(CALL_METHOD, params, m.CallToolResult)
        return result

    async def _ask(self, method: str, params: Any, type_: type[Any]) -> Any:
        try:
            return await self.peer.request(method, params, result_type=type_)
        except ConnectionClosed as exc:
            raise RpcError(ErrorCode.INTERNAL_ERROR, "the host is not reachable") from exc


async def _bridge(address: str, token: str) -> None:
    async with connect_channel(address) as peer:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                await peer.wait_closed()
                stop.set()

            tg.start_soon(watch)
            await serve_mcp(
                Forwarder(peer, token),
                server_info=m.Implementation(name="wireproto-mcp-bridge", version="1"),
                stop=stop,
            )
            tg.cancel_scope.cancel()


_DESCRIPTION = (
    f"Serve the host's tools over MCP on stdio (started by a host for an external harness; "
    f"reads {ADDRESS_ENV} and {TOKEN_ENV} from the environment)."
)


def add_parser(sub: Any) -> None:
    """Register ``mcp-bridge`` on the ``wireproto`` command's subparsers."""
    parser = sub.add_parser("mcp-bridge", help="serve a host's tools over MCP on stdio",
                            description=_DESCRIPTION)
    default = os.environ.get(LOG_ENV, "warning").lower()
    parser.add_argument("--log-level", choices=_LEVELS,
                        default=default if default in _LEVELS else "warning",
                        help=f"stderr log level (default: ${LOG_ENV}, else warning)")
    parser.set_defaults(func=lambda args: _run(args.log_level))


def _run(log_level: str) -> int:
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="mcp-bridge %(levelname)s %(name)s: %(message)s")
    address, token = os.environ.get(ADDRESS_ENV), os.environ.get(TOKEN_ENV)
    if not address or not token:
        print(f"wireproto: error: {ADDRESS_ENV} and {TOKEN_ENV} must be set: a host "
              "(wireproto.host) starts mcp-bridge for the agents it runs and sets them; "
              "it is not run by hand (docs/host.md)", file=sys.stderr)
        return 1
    try:
        parse_address(address)
        anyio.run(_bridge, address, token)
    except (ValueError, OSError) as exc:
        print(f"wireproto: error: mcp-bridge: {exc}", file=sys.stderr)
        return 1
    return 0

