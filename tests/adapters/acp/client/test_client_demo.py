"""End to end: our client drives the demo agent served by ``serve_acp``.

Over memory (in process), a spawned ``tests/helpers/acp_agent.py`` (stdio)
and a WebSocket on loopback. The demo agent's behaviour is fixed by
``docs/demo-agent.md``; the ``home`` fixture of ``conftest.py`` isolates
its session store. The client's end of every connection is a
:class:`CheckedStream` (``tests/helpers/acp_raw.py``): every message the agent
writes must validate against the schema and follow the gating and ordering
rules, whatever the test asserts besides.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from timeouts import units

from wireproto.adapters.acp import (
    ClientConnection,
    LocalFileSystem,
    SessionEvent,
    connect_acp,
    extra,
    option_of_kind,
    serve_acp,
)
from wireproto.adapters.acp import schema as S
from wireproto.agent.demo import COMMANDS, DemoAgent
from wireproto.errors import LocalProtocolError, RpcError
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import open_subprocess
from wireproto.transports.websocket import WebSocketRequest, connect_websocket, serve_websocket

from ..conftest import AGENT_SCRIPT, acp_raw

pytestmark = pytest.mark.anyio

CheckedStream = acp_raw.CheckedStream


@pytest.fixture(params=["memory", "subprocess", "websocket"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def demo(
    transport: str, backend: str, *, allow_stdio: bool = False, **options: Any
) -> AsyncIterator[tuple[ClientConnection, Any]]:
    """An initialized client of the demo agent over ``transport``, and its checked stream.

    ``allow_stdio`` starts the agent with ``--allow-client-stdio-mcp``; the
    other ``options`` go to :class:`ClientConnection`. On exit, no message
    the agent wrote may have broken a rule.
    """
    stop = anyio.Event()

    async def serve(stream: Any) -> None:
        await serve_acp(DemoAgent(), stream, stop=stop, allow_client_stdio_mcp=allow_stdio)

    with anyio.fail_after(units(6)):  # the whole conversation, well below the test timeout
        async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
            stream: Any
            if transport == "subprocess":
                flags = ["--allow-client-stdio-mcp"] if allow_stdio else []
                cmd = [sys.executable, str(AGENT_SCRIPT), "--backend", backend, *flags]
                stream = await stack.enter_async_context(
                    open_subprocess(cmd, env=dict(os.environ), stderr="log"))
            elif transport == "memory":
                stream, theirs = memory_pair()
                tg.start_soon(serve, theirs)
            else:

                async def handler(stream: Any, request: WebSocketRequest) -> None:
                    await serve(stream)

                server = await stack.enter_async_context(serve_websocket(handler))
                stream = await stack.enter_async_context(connect_websocket(server.url))
            checked = CheckedStream(stream, agent_side=False)
            client = await stack.enter_async_context(ClientConnection(checked, **options))
            await client.initialize()
            yield client, checked
            stop.set()
    assert checked.conformance.checked > 0
    assert checked.errors == []


class Recorder:
    """An ``on_update`` handler keeping every event."""

    def __init__(self) -> None:
        self.events: list[SessionEvent] = []

    async def __call__(self, event: SessionEvent) -> None:
        self.events.append(event)


async def run(client: ClientConnection, sid: str, prompt: str) -> tuple[list[Any], str | None]:
    async with client.prompt(sid, prompt) as turn:
        updates = await turn.collect()
    return updates, turn.stop_reason


def chunks(reply: tuple[list[Any], Any]) -> list[S.AgentMessageChunk]:
    return [u for u in reply[0] if isinstance(u, S.AgentMessageChunk)]


def text_of(updates: list[Any], kind: type = S.AgentMessageChunk) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, kind))


async def test_a_conversation(
    transport: str, anyio_backend_name: str, tmp_path: Path
) -> None:
    async def allow(request: S.RequestPermissionRequest) -> str:
        option = option_of_kind(request, "allow_once")
        assert option is not None
        return option.option_id

    options = dict(on_permission=allow, file_system=LocalFileSystem(), boolean_options=True)
    async with demo(transport, anyio_backend_name, **options) as (client, _):
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
        # sent right after the session/new response, before the prompt
        assert "write" in [c.name for c in session.available_commands]
        assert session.title == "hello there"  # the turn's session_info_update

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


async def test_every_other_command(transport: str, anyio_backend_name: str, tmp_path: Path) -> None:
    """docs/demo-agent.md "Slash commands" (``/read`` and ``/write``: see above)."""
    async with demo(transport, anyio_backend_name) as (client, _):
        sid = (await client.new_session(str(tmp_path))).session_id
        replies = {}
        for command in ("/help", "/think deep thoughts", "/slow 3", "/big 70000",
                        '/tool grep {"q": 1}', "/mcp", "/nope", "/plan", "/clear"):
            replies[command] = await run(client, sid, command)
        advertised = client.sessions[sid].available_commands  # (read after a round trip)
        loaded = await client.load_session(sid, str(tmp_path))

    assert [(c.name, c.description) for c in advertised] == [
        (c.name, c.description) for c, _ in COMMANDS]
    help_text = text_of(replies["/help"][0])
    assert help_text == "\n".join(f"/{c.name} - {c.description}" for c in advertised)
    thought, stop = replies["/think deep thoughts"]
    assert (text_of(thought, S.AgentThoughtChunk), text_of(thought), stop) == (
        "deep thoughts", "Done thinking", "end_turn")
    assert [u.content.text for u in chunks(replies["/slow 3"])] == ["tick 1", "tick 2", "tick 3"]
    big = chunks(replies["/big 70000"])
    assert len(big) == 1 and big[0].content.text == "x" * 70000  # over 64 KiB
    assert text_of(replies['/tool grep {"q": 1}'][0]) == (
        "External tools are not available over ACP")
    assert text_of(replies["/mcp"][0]) == "No MCP servers"
    assert text_of(replies["/nope"][0]) == 'Unknown slash command "/nope".'
    plans = [u for u in replies["/plan"][0] if isinstance(u, S.Plan)]
    assert [[e.status for e in p.entries] for p in plans] == [
        ["pending"] * 3, ["completed", "pending", "pending"],
        ["completed", "completed", "pending"], ["completed"] * 3]
    assert text_of(replies["/plan"][0]) == "Plan done"
    assert text_of(replies["/clear"][0]) == "History cleared"
    assert text_of(loaded.history) == "History cleared"  # nothing before the clear


async def test_mcp_servers(transport: str, anyio_backend_name: str, tmp_path: Path) -> None:
    """Http and sse accepted, stdio refused by default, acp dropped visibly."""
    http = S.McpServerHttp(name="tracker", url="https://mcp.example.com/mcp",
                           headers=[S.HttpHeader(name="Authorization", value="Bearer s3cr3t")])
    sse = S.McpServerSse(name="legacy", url="https://old.example.com/sse", headers=[])
    stdio = S.McpServerStdio(name="files", command="/usr/local/bin/mcp-files", args=[], env=[])
    tunnel = cast(S.McpServer, extra.McpServerAcp(name="tunnel", server_id="srv-1"))
    recorder = Recorder()
    async with demo(transport, anyio_backend_name, notices=True, on_update=recorder) as (client, _):
        with pytest.raises(RpcError) as refused:
            await client.new_session(str(tmp_path), [http, stdio])
        assert (await client.list_sessions()).sessions == []  # nothing was created
        sid = (await client.new_session(str(tmp_path), [tunnel, http, sse])).session_id
        listed, _ = await run(client, sid, "/mcp")
    async with demo(transport, anyio_backend_name, allow_stdio=True) as (client, _):
        other = (await client.new_session(str(tmp_path), [stdio])).session_id
        allowed, _ = await run(client, other, "/mcp")
    assert refused.value.code == -32602 and '"files"' in refused.value.message
    assert text_of(listed) == "tracker (http)\nlegacy (sse)"
    notices = [e.update for e in recorder.events if isinstance(e.update, S.Notice)]
    assert [(n.severity, n.title) for n in notices] == [("warning",
                                                        'MCP server "tunnel" dropped')]
    assert text_of(allowed) == "files (stdio)"


async def test_cancelling_one_session_leaves_the_other_running(
    transport: str, anyio_backend_name: str, tmp_path: Path
) -> None:
    asked = anyio.Event()

    async def never(request: S.RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with demo(transport, anyio_backend_name, on_permission=never) as (client, _):
        first = (await client.new_session(str(tmp_path))).session_id
        second = (await client.new_session(str(tmp_path))).session_id
        async with client.prompt(first, "/slow 1000000") as slow, client.prompt(
            second, "/slow 3"
        ) as quick:
            ticks = []
            async for update in slow:  # cancel after the first tick
                ticks.append(text_of([update]))
                await client.cancel(first)
            assert slow.stop_reason == "cancelled"
            assert len(ticks) >= 1
            assert text_of(await quick.collect()) == "tick 1tick 2tick 3"
            assert quick.stop_reason == "end_turn"

        # cancel while the agent waits for a permission answer (protocol-acp.md#cancellation)
        async with client.prompt(first, f"/write {tmp_path / 'x.txt'} no") as turn:
            await asked.wait()
            await client.cancel(first)
            await turn.collect()
        assert turn.stop_reason == "cancelled"
        assert not (tmp_path / "x.txt").exists()


async def test_sessions_load_resume_list_close(
    transport: str, anyio_backend_name: str, tmp_path: Path
) -> None:
    recorder = Recorder()
    events = recorder.events
    async with demo(transport, anyio_backend_name, on_update=recorder) as (client, _):
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
        assert live_ids and live_ids <= replayed_ids  # the original message ids
        assert [e.replay for e in events][: len(loaded.history)] == [True] * len(loaded.history)
        assert not any(e.replay for e in events[len(loaded.history):])

        await client.resume_session(sid, str(tmp_path))
        updates, stop = await run(client, sid, "again")
        assert (text_of(updates), stop) == ("You said: again", "end_turn")

        await client.close_session(sid)
        await client.delete_session(sid)
        assert sid not in client.sessions
        assert (await client.list_sessions()).sessions == []


async def test_list_pages(transport: str, anyio_backend_name: str, tmp_path: Path) -> None:
    """docs/demo-agent.md: pages of 50, an opaque cursor; a bad cursor is -32602."""
    async with demo(transport, anyio_backend_name) as (client, _):
        ids = [(await client.new_session(str(tmp_path))).session_id for _ in range(51)]
        first = await client.list_sessions(cwd=str(tmp_path))
        assert isinstance(first.next_cursor, str)
        second = await client.list_sessions(cwd=str(tmp_path), cursor=first.next_cursor)
        with pytest.raises(RpcError) as bad:
            await client.list_sessions(cursor="garbage!")
    assert len(first.sessions) == 50 and len(second.sessions) == 1
    assert not isinstance(second.next_cursor, str)  # the last page
    assert sorted(i.session_id for i in first.sessions + second.sessions) == sorted(ids)
    assert bad.value.code == -32602


async def test_unknown_methods_and_malformed_input(
    transport: str, anyio_backend_name: str, tmp_path: Path
) -> None:
    """Errors for what the agent cannot take; it reads on."""
    async with demo(transport, anyio_backend_name) as (client, checked):
        codes = {}
        for method in ("nonsense", "_acme.dev/symbols", "logout", "session/set_title"):
            with pytest.raises(RpcError) as info:
                await client.peer.request(method, {})
            codes[method] = info.value.code
        with pytest.raises(LocalProtocolError):
            await client.logout()  # not advertised: refused before sending
        with pytest.raises(RpcError) as invalid:
            await client.peer.request("session/new", {"cwd": 5, "mcpServers": []})
        await client.peer.notify("_acme.dev/ping", {"x": 1})  # ignored
        await checked.send(b"{oops")  # -32700, id null: our client logs and drops it
        await checked.send(b'[{"jsonrpc":"2.0","id":99,"method":"initialize"}]')  # -32600
        sid = (await client.new_session(str(tmp_path))).session_id
        updates, stop = await run(client, sid, "after the noise")
    assert set(codes.values()) == {-32601}
    null_id = [m["error"]["code"] for m in checked.messages if "error" in m and m["id"] is None]
    assert null_id == [-32700, -32600]  # answered, though nobody waits for them
    assert invalid.value.code == -32602 and invalid.value.data["path"] == "$.cwd"
    assert (text_of(updates), stop) == ("You said: after the noise", "end_turn")


async def test_authentication(
    transport: str, anyio_backend_name: str, home: Path
) -> None:
    async with demo(transport, anyio_backend_name) as (client, _):
        with pytest.raises(RpcError) as info:
            await client.authenticate("login")
        assert info.value.code == -32000
        with pytest.raises(RpcError) as info:
            await client.authenticate("nope")
        assert info.value.code == -32602
        await anyio.Path(home).mkdir(parents=True, exist_ok=True)
        await anyio.Path(home / "token").write_text("s3cr3t\n")
        assert isinstance(await client.authenticate("login"), S.AuthenticateResponse)


@pytest.mark.parametrize("how", ["cmd", "url"])
async def test_connect_acp(how: str, anyio_backend_name: str, tmp_path: Path) -> None:
    """The one-call entry point, over a spawned command and a WebSocket URL."""
    stop = anyio.Event()

    async def handler(stream: Any, request: WebSocketRequest) -> None:
        await serve_acp(DemoAgent(), stream, stop=stop)

    async with AsyncExitStack() as stack:
        if how == "cmd":
            cmd = [sys.executable, str(AGENT_SCRIPT), "--backend", anyio_backend_name]
            client = await stack.enter_async_context(connect_acp(cmd))
        else:
            server = await stack.enter_async_context(serve_websocket(handler))
            client = await stack.enter_async_context(connect_acp(url=server.url))
        assert client.initialized  # initialize was sent
        sid = (await client.new_session(str(tmp_path))).session_id
        updates, stop_reason = await run(client, sid, "hi")
        stop.set()
    assert (text_of(updates), stop_reason) == ("You said: hi", "end_turn")
