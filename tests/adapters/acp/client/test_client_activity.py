"""Progress updates and logout through both of our ACP roles (our client, our agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from msgspec import UNSET

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp import serve_acp
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.agent.api import Agent
from wireproto.agent.demo import DemoAgent
from wireproto.errors import LocalProtocolError
from wireproto.transports.memory import memory_pair

from ..test_activity import Busy

pytestmark = pytest.mark.anyio


async def _with_client(agent: Agent, body: Any, **options: Any) -> None:
    ours, theirs = memory_pair()
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_acp(agent, theirs, stop=stop))
        async with ClientConnection(ours, **options) as client:
            await client.initialize()
            await body(client)
        stop.set()


async def test_progress_updates_decode_in_our_client(tmp_path: Path) -> None:
    seen: list[Any] = []

    async def body(client: ClientConnection) -> None:
        session = await client.new_session(str(tmp_path))
        async with client.prompt(session.session_id, "go") as turn:
            seen.extend([u async for u in turn])
        await anyio.lowlevel.checkpoint()
        seen.append(client.sessions[session.session_id])

    await _with_client(Busy(), body, compaction=True, notices=True)
    *updates, session = seen
    compactions = [u for u in updates if isinstance(u, S.CompactionUpdate)]
    assert [c.status for c in compactions] == ["in_progress", "completed"]
    raw = [u.raw_input for u in updates
           if isinstance(u, S.ToolCallProgress) and u.raw_input is not UNSET]
    assert raw == ['{"query": ', {"query": "parser"}]
    assert [c.name for c in session.available_commands] == ["go", "stop"]  # the dynamic list


async def test_logout_through_our_client(tmp_path: Path) -> None:
    Busy.logged_out = 0

    async def body(client: ClientConnection) -> None:
        await client.authenticate("login")
        await client.logout()

    await _with_client(Busy(), body)
    assert Busy.logged_out == 1

    async def refused(client: ClientConnection) -> None:
        with pytest.raises(LocalProtocolError, match="logout"):
            await client.logout()

    await _with_client(DemoAgent(), refused)
