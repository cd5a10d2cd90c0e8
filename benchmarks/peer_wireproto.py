"""Peer contender: wireproto's Peer + Router, over subprocess stdio, memory or WebSocket.

* ``--transport stdio``: ``open_subprocess`` runs ``peer_wireproto_child.py``,
  which serves with ``open_stdio`` + Peer + Router;
* ``--transport websocket``: the child serves on 127.0.0.1 with
  ``serve_websocket``; the client connects with ``connect_websocket``;
* ``--transport memory``: the server Peer runs in this process over
  ``memory_pair`` (one process, one core).

The cheap request is ``session/set_mode`` with its result decoded into the
generated ``SetSessionModeResponse``; the stream is ``session/prompt``,
during which a notification route decodes every ``session/update`` into the
generated ``SessionNotification``. Run by ``bench_peer.py``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from _messages import SESSION_ID
from _peer_runner import parse_args, run
from peer_wireproto_child import PEER_OPTIONS, acp_route, serve

from wireproto.adapters.acp.schema import (
    PromptRequest,
    PromptResponse,
    SessionNotification,
    SetSessionModeRequest,
    SetSessionModeResponse,
    TextContent,
)
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

CHILD = str(Path(__file__).with_name("peer_wireproto_child.py"))


class WireClient:
    """The client Peer, adapted to the runner's ``Client`` protocol."""

    def __init__(self, peer: Peer, server_pid: int | None) -> None:
        self._peer = peer
        self.server_pid = server_pid
        self._set_mode = SetSessionModeRequest(session_id=SESSION_ID, mode_id="code")
        self.received = 0

    async def on_update(self, params: SessionNotification) -> None:
        self.received += 1

    async def call(self) -> None:
        await self._peer.request("session/set_mode", self._set_mode,
                                 result_type=SetSessionModeResponse)

    async def stream(self, count: int) -> None:
        params = PromptRequest(session_id=SESSION_ID, prompt=[TextContent(text=str(count))])
        result = await self._peer.request("session/prompt", params, result_type=PromptResponse)
        assert result.stop_reason == "end_turn"


@asynccontextmanager
async def _open_stream(transport: str, backend: str, tg: Any) -> AsyncIterator[Any]:
    child = [sys.executable, CHILD, *(["--trio"] if backend == "trio" else [])]
    if transport == "stdio":
        from wireproto.transports.subprocess import open_subprocess

        async with open_subprocess(child) as stream:
            yield stream, stream.pid
    elif transport == "websocket":
        from wireproto.transports.websocket import connect_websocket

        async with await anyio.open_process(
            [*child, "--websocket"], stdin=subprocess.DEVNULL, stderr=None
        ) as proc:
            assert proc.stdout is not None
            url = b""
            while not url.endswith(b"\n"):
                url += await proc.stdout.receive(1)
            async with connect_websocket(url.decode().strip()) as stream:
                yield stream, proc.pid
            await proc.wait()
    else:
        from wireproto.transports.memory import memory_pair

        client_end, server_end = memory_pair(max_buffer=256)
        tg.start_soon(serve, server_end)
        yield client_end, None


@asynccontextmanager
async def connect(args: Any) -> AsyncIterator[WireClient]:
    """Start the server for ``args.transport`` and yield a connected client."""
    async with (
        anyio.create_task_group() as tg,
        _open_stream(args.transport, args.backend, tg) as (stream, server_pid),
    ):
        router = Router()
        async with Peer(stream, router, name="bench-client", **PEER_OPTIONS) as peer:
            client = WireClient(peer, server_pid)
            router.add("session/update", client.on_update, notification=True,
                       **acp_route(SessionNotification))
            yield client


def _extra(ap: Any) -> None:
    ap.add_argument("--transport", choices=["stdio", "memory", "websocket"], default="stdio")
    ap.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")


if __name__ == "__main__":
    args = parse_args(__doc__.split("\n")[0], _extra)
    version = (f"wireproto {metadata.version('wireproto')}, msgspec {metadata.version('msgspec')}"
               f", anyio {metadata.version('anyio')}")
    run(f"wireproto_{args.transport}", version, args.transport, connect, args,
        backend=args.backend, notes=["Peer + Router, generated ACP Structs"])
