"""Tool-call content beyond text, diffs and terminals over ACP: media and resources.

Golden ``tool_call_update`` content (schema-checked by the raw client), and
the same through our own client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp import serve_acp
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.agent.api import Agent
from wireproto.agent.content import Image, ResourceBlob, ResourceLink, ResourceText, Text
from wireproto.agent.events import StopReason
from wireproto.agent.turn import Turn
from wireproto.transports.memory import memory_pair

from ..conftest import OpenAcp

pytestmark = pytest.mark.anyio

CONTENT = [
    Text("a chart and its sources"),
    Image(mime_type="image/png", data="iVBORw0KGgo="),
    ResourceText(uri="file:///w/data.csv", text="a,b\n1,2\n", mime_type="text/csv"),
    ResourceBlob(uri="file:///w/data.bin", blob="AAEC", mime_type="application/octet-stream"),
    ResourceLink(uri="https://example.com/report", name="report"),
]

GOLDEN = [
    {"type": "content", "content": {"type": "text", "text": "a chart and its sources"}},
    {"type": "content", "content": {"type": "image", "data": "iVBORw0KGgo=",
                                    "mimeType": "image/png"}},
    {"type": "content", "content": {"type": "resource", "resource": {
        "uri": "file:///w/data.csv", "text": "a,b\n1,2\n", "mimeType": "text/csv"}}},
    {"type": "content", "content": {"type": "resource", "resource": {
        "uri": "file:///w/data.bin", "blob": "AAEC", "mimeType": "application/octet-stream"}}},
    {"type": "content", "content": {"type": "resource_link", "uri": "https://example.com/report",
                                    "name": "report"}},
]


class Charter(Agent):
    async def prompt(self, turn: Turn) -> StopReason:
        call = await turn.start_tool("chart", "Chart")
        await call.complete(CONTENT)
        return StopReason.END_TURN


async def test_media_and_resources_are_content_blocks(acp: OpenAcp, workdir: Path) -> None:
    async with acp(Charter()) as client:
        await client.initialize()
        sid = (await client.new_session(str(workdir), commands=False))["sessionId"]
        _, turn = await client.prompt(sid, "go")
    [done] = [u for u in turn if u["sessionUpdate"] == "tool_call_update"]
    assert done["content"] == GOLDEN


async def test_our_client_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREPROTO_HOME", str(tmp_path))
    ours, theirs = memory_pair()
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_acp(Charter(), theirs, stop=stop))
        async with ClientConnection(ours) as client:
            await client.initialize()
            session = await client.new_session(str(tmp_path))
            async with client.prompt(session.session_id, "go") as run:
                updates: list[Any] = [u async for u in run]
        stop.set()
    [done] = [u for u in updates if isinstance(u, S.ToolCallProgress)]
    assert isinstance(done.content, list)
    kinds = [type(c.content).__name__ for c in done.content if isinstance(c, S.Content)]
    assert kinds == ["TextContent", "ImageContent", "EmbeddedResource", "EmbeddedResource",
                     "ResourceLink"]
