"""The demo's /ask, /title, /retry and /subagent over ACP stdio and websocket, with our client.

Our :class:`ClientConnection` (with an elicitation handler and notices)
drives the demo agent spawned as a child process (stdio) or served over a
loopback websocket: a round trip of every new command through both of our
roles, on real transports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from wireproto.adapters.acp import ClientConnection, connect_acp, serve_acp
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.client.elicitation import FormOrUrl
from wireproto.agent.demo import DemoAgent
from wireproto.transports.websocket import WebSocketRequest, WebSocketStream, serve_websocket

from .conftest import AGENT_SCRIPT

pytestmark = pytest.mark.anyio


async def pick_last(request: FormOrUrl) -> S.CreateElicitationResponse:
    assert isinstance(request, S.CreateFormElicitationRequest)
    field = request.requested_schema.properties["q1"]
    assert isinstance(field, S.StringPropertySchema) and isinstance(field.enum, list)
    return S.AcceptElicitationResponse(content={"q1": field.enum[-1]})


@asynccontextmanager
async def demo_client(kind: str, backend: str) -> AsyncIterator[ClientConnection]:
    options: dict[str, Any] = {"on_elicitation": pick_last, "notices": True}
    if kind == "stdio":
        cmd = [sys.executable, str(AGENT_SCRIPT), "--backend", backend]
        async with connect_acp(cmd, env=dict(os.environ), **options) as client:
            yield client
        return

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        await serve_acp(DemoAgent(), stream)

    async with serve_websocket(handler) as server, connect_acp(url=server.url,
                                                               **options) as client:
        yield client


async def run(client: ClientConnection, session_id: str, text: str) -> tuple[str, list[Any]]:
    reply, updates = "", []
    async with client.prompt(session_id, text) as turn:
        async for update in turn:
            updates.append(update)
            if isinstance(update, S.AgentMessageChunk) and isinstance(update.content,
                                                                      S.TextContent):
                reply += update.content.text
    return reply, updates


@pytest.mark.parametrize("kind", ["stdio", "websocket"])
async def test_new_demo_commands(kind: str, anyio_backend_name: str, workdir: Path) -> None:
    seen: list[Any] = []

    async with demo_client(kind, anyio_backend_name) as client:
        client.on_update = _collect(seen)
        sid = (await client.new_session(str(workdir))).session_id
        assert (await run(client, sid, "/ask Tea or coffee? tea|coffee"))[0] == "You chose: coffee"
        assert (await run(client, sid, "/title Breakfast"))[0] == "Title set"
        listed = await client.list_sessions()
        assert [(i.session_id, i.title) for i in listed.sessions] == [(sid, "Breakfast")]
        assert (await run(client, sid, "/retry"))[0] == "Recovered"
        reply, updates = await run(client, sid, "/subagent from below")
    assert reply == "Subagent done"
    [call] = [u for u in updates if isinstance(u, S.ToolCall)]
    assert call.kind == "think"
    last = [u for u in updates if isinstance(u, S.ToolCallProgress)][-1]
    assert last.status == "completed"
    assert isinstance(last.content, list) and isinstance(last.content[0], S.Content)
    assert last.content[0].content == S.TextContent(text="from below")
    titles = [e.update.title for e in seen if isinstance(e.update, S.SessionInfoUpdate)]
    assert "Breakfast" in titles
    notices = [e.update for e in seen if isinstance(e.update, S.Notice)]
    assert [n.severity for n in notices] == ["warning"]


def _collect(seen: list[Any]) -> Any:
    async def on_update(event: Any) -> None:
        seen.append(event)

    return on_update
