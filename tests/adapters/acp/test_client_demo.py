"""End to end: our client drives the demo agent served by ``serve_acp``.

Over memory (in process), a spawned ``tests/helpers/acp_agent.py`` (stdio)
and a WebSocket on loopback. The demo agent's behaviour is fixed by
``spec/demo-agent.md``; the ``home`` fixture of ``conftest.py`` isolates
its session store.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp import serve_acp
from wireproto.adapters.acp.client import ClientConnection
from wireproto.adapters.acp.clientfs import LocalFileSystem
from wireproto.adapters.acp.clientstate import SessionEvent, option_of_kind
from wireproto.adapters.acp.connect import connect_acp
from wireproto.agent.demo import DemoAgent
from wireproto.errors import RpcError
from wireproto.transports.memory import memory_pair
from wireproto.transports.websocket import WebSocketRequest, serve_websocket

pytestmark = pytest.mark.anyio

AGENT_SCRIPT = Path(__file__).resolve().parents[2] / "helpers" / "acp_agent.py"


@pytest.fixture(params=["memory", "subprocess", "websocket"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def demo(transport: str, backend: str, **options: Any) -> AsyncIterator[ClientConnection]:
    """An initialized client connected to the demo agent over ``transport``."""
    if transport == "subprocess":
        cmd = [sys.executable, str(AGENT_SCRIPT), "--backend", backend]
        async with connect_acp(cmd, **options) as client:
            yield client
        return
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        if transport == "memory":
            ours, theirs = memory_pair()
            tg.start_soon(lambda: serve_acp(DemoAgent(), theirs, stop=stop))
            async with ours, ClientConnection(ours, **options) as client:
                await client.initialize()
                yield client
        else:

            async def handler(stream: Any, request: WebSocketRequest) -> None:
                await serve_acp(DemoAgent(), stream, stop=stop)

            async with serve_websocket(handler) as server, connect_acp(
                url=server.url, **options
            ) as client:
                yield client
        stop.set()


async def run(client: ClientConnection, sid: str, prompt: str) -> tuple[list[Any], str | None]:
    async with client.prompt(sid, prompt) as turn:
        updates = await turn.collect()
    return updates, turn.stop_reason


def text_of(updates: list[Any], kind: type = S.AgentMessageChunk) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, kind))


async def test_a_conversation(
    transport: str, anyio_backend: str, tmp_path: Path
) -> None:
    async def allow(request: S.RequestPermissionRequest) -> str:
        option = option_of_kind(request, "allow_once")
        assert option is not None
        return option.option_id

    options = dict(on_permission=allow, file_system=LocalFileSystem(), boolean_options=True)
    async with demo(transport, anyio_backend, **options) as client:
        caps = client.agent_capabilities
        assert caps.load_session and caps.prompt_capabilities.image
        assert client.initialize_response is not None
        assert [m.id for m in client.initialize_response.auth_methods] == ["login"]
        created = await client.new_session(str(tmp_path))
        sid = created.session_id
        session = client.sessions[sid]

        updates, stop = await run(client, sid, "hello there")
        assert stop == "end_turn"
        assert text_of(updates) == "You said: hello there"
        chunks = [u for u in updates if isinstance(u, S.AgentMessageChunk)]
        assert len(chunks) > 1 and len({u.message_id for u in chunks}) == 1
        # sent right after the session/new response, before the prompt (IO-36/37)
        assert "write" in [c.name for c in session.available_commands]

        target = tmp_path / "notes.txt"
        updates, _ = await run(client, sid, f"/write {target} some text")
        assert text_of(updates) == f"Wrote {target}"
        assert target.read_text() == "some text"
        updates, _ = await run(client, sid, f"/read {target}")
        assert text_of(updates) == f"Read 1 lines from {target}"

        result = await client.set_config_option(sid, "model", "demo-large")
        model = next(o for o in result.config_options if o.id == "model")
        assert model.current_value == "demo-large"
        await client.set_config_option(sid, "thinking", True)
        await client.set_mode(sid, "code")
        await client.list_sessions()  # a round trip: the updates that followed are handled
        mode = next(o for o in session.config_options if o.id == "mode")
        assert mode.current_value == "code"
        assert session.modes is not None and session.modes.current_mode_id == "code"


async def test_cancelling_one_session_leaves_the_other_running(
    transport: str, anyio_backend: str, tmp_path: Path
) -> None:
    asked = anyio.Event()

    async def never(request: S.RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with demo(transport, anyio_backend, on_permission=never) as client:
        first = (await client.new_session(str(tmp_path))).session_id
        second = (await client.new_session(str(tmp_path))).session_id
        async with client.prompt(first, "/slow 400") as slow, client.prompt(
            second, "/slow 3"
        ) as quick:
            ticks = []
            async for update in slow:  # cancel after the first tick
                ticks.append(text_of([update]))
                await client.cancel(first)
            assert slow.stop_reason == "cancelled"
            assert 1 <= len(ticks) < 400
            assert text_of(await quick.collect()) == "tick 1tick 2tick 3"
            assert quick.stop_reason == "end_turn"

        # cancel while the agent waits for a permission answer (IO-29)
        async with client.prompt(first, f"/write {tmp_path / 'x.txt'} no") as turn:
            await asked.wait()
            await client.cancel(first)
            await turn.collect()
        assert turn.stop_reason == "cancelled"
        assert not (tmp_path / "x.txt").exists()


async def test_sessions_load_resume_list_close(
    transport: str, anyio_backend: str, tmp_path: Path
) -> None:
    events: list[SessionEvent] = []

    async def record(event: SessionEvent) -> None:
        events.append(event)

    async with demo(transport, anyio_backend, on_update=record) as client:
        sid = (await client.new_session(str(tmp_path))).session_id
        live, _ = await run(client, sid, "first question")
        await run(client, sid, "/think hmm")

        listed = await client.list_sessions(cwd=str(tmp_path))
        assert [(i.session_id, i.title) for i in listed.sessions] == [(sid, "first question")]
        assert (await client.list_sessions(cwd=str(tmp_path / "elsewhere"))).sessions == []

        events.clear()
        loaded = await client.load_session(sid, str(tmp_path))
        kinds = [type(u).__name__ for u in loaded.history]
        assert kinds.count("UserMessageChunk") == 2 and "AgentThoughtChunk" in kinds
        replayed_ids = {u.message_id for u in loaded.history if isinstance(u, S.AgentMessageChunk)}
        live_ids = {u.message_id for u in live if isinstance(u, S.AgentMessageChunk)}
        assert live_ids and live_ids <= replayed_ids  # the original message ids (IO-49)
        assert [e.replay for e in events][: len(loaded.history)] == [True] * len(loaded.history)
        assert not any(e.replay for e in events[len(loaded.history):])

        await client.resume_session(sid, str(tmp_path))
        updates, stop = await run(client, sid, "again")
        assert (text_of(updates), stop) == ("You said: again", "end_turn")

        await client.close_session(sid)
        await client.delete_session(sid)
        assert sid not in client.sessions
        assert (await client.list_sessions()).sessions == []


async def test_authentication(
    transport: str, anyio_backend: str, home: Path
) -> None:
    async with demo(transport, anyio_backend) as client:
        with pytest.raises(RpcError) as info:
            await client.authenticate("login")
        assert info.value.code == -32000
        with pytest.raises(RpcError) as info:
            await client.authenticate("nope")
        assert info.value.code == -32602
        await anyio.Path(home).mkdir(parents=True, exist_ok=True)
        await anyio.Path(home / "token").write_text("s3cr3t\n")
        assert isinstance(await client.authenticate("login"), S.AuthenticateResponse)
