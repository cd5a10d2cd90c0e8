"""The loopback channel between ``wireproto mcp-bridge`` processes and the host.

Theory of operation
-------------------
The host listens on ``127.0.0.1`` (an ephemeral port) and speaks JSON-RPC,
one message per line, with every bridge process that connects. A bridge
learns the address and its **credential** from its environment
(:data:`ADDRESS_ENV`, :data:`TOKEN_ENV`), which the host put in the MCP
server entry it gave the harness. Every request carries the credential:

====================== ==================================== =====================
method                 params                               result
====================== ==================================== =====================
``bridge/tools_list``  ``{token}``                          ``{tools: [Tool]}``
``bridge/tools_call``  ``{token, name, arguments}``         ``CallToolResult``
====================== ==================================== =====================

:class:`Credentials` maps a credential to the binding's identity
(:class:`~wireproto.host.policy.Caller`); only a digest of each credential is
kept. A revoked or unknown credential is answered :data:`CREDENTIAL_INVALID`
on every request, so a running bridge can no longer list or call anything.
Connections from anything but a loopback address are refused, and a bridge
refuses an address that is not loopback.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import anyio.abc
import msgspec

from wireproto.adapters.mcp import messages as m
from wireproto.errors import RpcError
from wireproto.host.policy import Caller
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.transports import FramedStream

__all__ = [
    "ADDRESS_ENV",
    "CALL_METHOD",
    "CREDENTIAL_INVALID",
    "LIST_METHOD",
    "TOKEN_ENV",
    "BridgeChannel",
    "CallParams",
    "ChannelHandler",
    "Credentials",
    "ListParams",
    "ListResult",
    "connect_channel",
    "parse_address",
]

log = logging.getLogger(__name__)

ADDRESS_ENV = "WIREPROTO_BRIDGE_ADDRESS"
"""The environment variable holding the channel's ``127.0.0.1:PORT``."""
TOKEN_ENV = "WIREPROTO_BRIDGE_TOKEN"
"""The environment variable holding the binding's credential (a secret)."""
LIST_METHOD = "bridge/tools_list"
CALL_METHOD = "bridge/tools_call"
CREDENTIAL_INVALID = -32001
"""The error code answering a revoked or unknown credential."""


class ListParams(msgspec.Struct, kw_only=True):
    """``bridge/tools_list`` params."""

    token: str


class CallParams(msgspec.Struct, kw_only=True):
    """``bridge/tools_call`` params."""

    token: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class ListResult(msgspec.Struct, kw_only=True):
    """``bridge/tools_list`` result: every tool the caller may use now."""

    tools: list[m.Tool]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Credentials:
    """Per-binding temporary credentials: minted, looked up, revoked."""

    def __init__(self) -> None:
        self._by_digest: dict[bytes, Caller] = {}

    def mint(self, caller: Caller) -> str:
        """Return a new credential for ``caller`` (only its digest is kept)."""
        token = secrets.token_urlsafe(32)
        self._by_digest[_digest(token)] = caller
        return token

    def lookup(self, token: str) -> Caller | None:
        """The identity of a valid credential, else ``None``."""
        return self._by_digest.get(_digest(token))

    def revoke(self, binding_id: str) -> int:
        """Revoke every credential of ``binding_id``; returns how many there were."""
        gone = [d for d, c in self._by_digest.items() if c.binding_id == binding_id]
        for d in gone:
            del self._by_digest[d]
        return len(gone)

    def active(self, binding_id: str) -> bool:
        """Whether ``binding_id`` holds a valid credential."""
        return any(c.binding_id == binding_id for c in self._by_digest.values())


class ChannelHandler(Protocol):
    """What the channel asks the host, with the identity of a valid credential."""

    async def list_tools(self, caller: Caller) -> list[m.Tool]:
        """Every tool ``caller`` may use now (vendor names)."""

    async def call_tool(
        self, caller: Caller, name: str, arguments: dict[str, Any]
    ) -> m.CallToolResult:
        """Run a tool for ``caller`` after re-checking its permission."""


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_address(text: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6).

    Raises:
        ValueError: malformed, or the host is not a loopback address.
    """
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit():
        raise ValueError(f"malformed bridge address {text!r}")
    if not _is_loopback(host):
        raise ValueError(f"the bridge address {text!r} is not a loopback address")
    return host, int(port)


class BridgeChannel:
    """The host's loopback endpoint for bridge processes.

    Args:
        credentials: the valid credentials.
        handler: answers for valid credentials.

    Attributes:
        address: ``127.0.0.1:PORT`` once :meth:`serve` has started.
    """

    def __init__(self, credentials: Credentials, handler: ChannelHandler) -> None:
        self.credentials = credentials
        self.handler = handler
        self.address: str | None = None
        self.router = Router()
        self.router.add(LIST_METHOD, self._list, ListParams)
        self.router.add(CALL_METHOD, self._call, CallParams)

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen on ``127.0.0.1`` until cancelled; ``task_status`` gets the address."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        async with listener:
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            self.address = f"127.0.0.1:{port}"
            log.debug("bridge channel listening on %s", self.address)
            task_status.started(self.address)
            await listener.serve(self._connection)

    async def _connection(self, sock: anyio.abc.SocketStream) -> None:
        remote = sock.extra(anyio.abc.SocketAttribute.remote_address)
        if not isinstance(remote, tuple) or not _is_loopback(str(remote[0])):
            log.warning("bridge channel: refused a connection from %r", remote)
            await sock.aclose()
            return
        try:
            async with Peer(FramedStream(sock, sock), self.router, name="bridge channel") as peer:
                await peer.wait_closed()
        except Exception:  # one connection never takes the host down with it
            log.exception("bridge channel: a connection from %r failed", remote)

    def _caller(self, token: str) -> Caller:
        caller = self.credentials.lookup(token)
        if caller is None:
            raise RpcError(CREDENTIAL_INVALID,
                           "the bridge credential was revoked or is not valid")
        return caller

    async def _list(self, p: ListParams) -> ListResult:
        return ListResult(tools=await self.handler.list_tools(self._caller(p.token)))

    async def _call(self, p: CallParams) -> m.CallToolResult:
        return await self.handler.call_tool(self._caller(p.token), p.name, p.arguments)


@asynccontextmanager
async def connect_channel(address: str) -> AsyncIterator[Peer]:
    """Connect to the host's channel (the bridge side) and yield a running peer.

    Raises:
        ValueError: the address is malformed or not loopback.
        OSError: the connection failed.
    """
    host, port = parse_address(address)
    sock = await anyio.connect_tcp(host, port)
    async with Peer(FramedStream(sock, sock), name="bridge") as peer:
        yield peer

