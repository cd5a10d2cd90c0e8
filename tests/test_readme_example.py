"""The README's example agent, served over ACP and Wire, driven by our clients."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp import serve_acp
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.wire import WireClient, serve_wire
from wireproto.adapters.wire.messages import TextPart
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import SessionStore
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "shout.py"


def _load_agent() -> Any:
    spec = importlib.util.spec_from_file_location("readme_shout", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_shout"] = module
    spec.loader.exec_module(module)
    return module.agent


def test_readme_shows_the_example_verbatim() -> None:
    readme = (EXAMPLE.parents[1] / "README.md").read_text()
    body = EXAMPLE.read_text().split("\n", 2)[2]  # drop the module docstring
    assert body.strip() in readme


async def test_example_over_acp(tmp_path: Path) -> None:
    runtime = Runtime(_load_agent(), SessionStore(tmp_path))
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_acp, runtime, theirs)
        async with ClientConnection(ours) as client:
            await client.initialize()
            session = await client.new_session(str(tmp_path))
            chunks: list[str] = []
            async with client.prompt(session.session_id, "hello big world") as turn:
                async for update in turn:
                    if isinstance(update, s.AgentMessageChunk):
                        assert isinstance(update.content, s.TextContent)
                        chunks.append(update.content.text)
            assert turn.stop_reason == "end_turn"
            assert "".join(chunks) == "HELLO BIG WORLD "
            async with client.prompt(session.session_id, "/whisper LOUD") as turn:
                text = [
                    u.content.text
                    for u in await turn.collect()
                    if isinstance(u, s.AgentMessageChunk) and isinstance(u.content, s.TextContent)
                ]
            assert text == ["loud"]
        tg.cancel_scope.cancel()


async def test_example_over_wire(tmp_path: Path) -> None:
    runtime = Runtime(_load_agent(), SessionStore(tmp_path))
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_wire, runtime, theirs)
        async with WireClient(ours) as client:
            result = await client.initialize()
            assert result is not None
            assert [c.name for c in result.slash_commands] == ["whisper"]
            assert (await client.prompt("hello world")).status == "finished"
            text = [
                e.text for e in client.take_events() if isinstance(e, TextPart)
            ]
            assert "".join(text) == "HELLO WORLD "
        tg.cancel_scope.cancel()
