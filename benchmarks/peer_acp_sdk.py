"""Peer contender: the ACP Python SDK's own connection over subprocess stdio.

The client side is ``acp.spawn_agent_process`` (a ``ClientSideConnection``
over the child's pipes); the child is ``peer_acp_sdk_child.py`` running
``acp.run_agent`` (an ``AgentSideConnection`` over its stdin/stdout). The
cheap request is ``conn.set_session_mode``; the stream is ``conn.prompt``,
during which the client's ``session_update`` handler receives the chunks
(validated by the SDK into ``SessionNotification`` models). Run by
``bench_peer.py``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import acp
from _messages import SESSION_ID
from _peer_runner import parse_args, run
from acp.helpers import text_block

CHILD = str(Path(__file__).with_name("peer_acp_sdk_child.py"))


class BenchClient:
    """The SDK ``Client`` implementation: counts streamed updates."""

    def __init__(self) -> None:
        self.received = 0

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.received += 1


class SdkClient:
    """Adapts the SDK connection to the runner's ``Client`` protocol."""

    def __init__(self, conn: acp.ClientSideConnection, client: BenchClient, pid: int) -> None:
        self._conn = conn
        self._client = client
        self.server_pid: int | None = pid

    @property
    def received(self) -> int:
        return self._client.received

    async def call(self) -> None:
        await self._conn.set_session_mode(session_id=SESSION_ID, mode_id="code")

    async def stream(self, count: int) -> None:
        response = await self._conn.prompt(session_id=SESSION_ID, prompt=[text_block(str(count))])
        assert response.stop_reason == "end_turn"


@asynccontextmanager
async def connect(args: Any) -> AsyncIterator[SdkClient]:
    """Spawn the SDK agent child and yield a client bound to it."""
    client = BenchClient()
    async with acp.spawn_agent_process(
        client, sys.executable, CHILD, transport_kwargs={"stderr": None}  # type: ignore[arg-type]
    ) as (conn, process):
        await conn.initialize(protocol_version=1)
        yield SdkClient(conn, client, process.pid)


if __name__ == "__main__":
    version = (f"agent-client-protocol {metadata.version('agent-client-protocol')}, "
               f"pydantic {metadata.version('pydantic')}")
    run("acp_sdk", version, "stdio", connect, parse_args(__doc__.split("\n")[0]),
        notes=["spawn_agent_process + ClientSideConnection / run_agent + AgentSideConnection"])
