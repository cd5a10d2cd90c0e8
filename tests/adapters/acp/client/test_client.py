"""Our ACP client against a scripted raw agent over the memory transport.

The far end is a bare memory stream driven message by message, so each test controls exactly
what the agent writes and in which order: protocol-acp.md#cancellation,
protocol-acp.md#ordering, protocol-acp.md#client-side, protocol-acp.md#ordering,
protocol-acp.md#client-side, protocol-acp.md#schema-over-docs, protocol-acp.md#client-side,
$/cancel_request (protocol-acp.md#cancel-request) and the gates of protocol-acp.md#capabilities
/ protocol-acp.md#methods.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest
from timeouts import units

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.fs import LocalFileSystem
from wireproto.adapters.acp.client.state import SessionEvent
from wireproto.adapters.acp.client.terminals import LocalTerminals
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

Json = dict[str, Any]


class RawAgent:
    """The agent's end of a memory transport, one JSON message at a time."""

    def __init__(self, stream: anyio.abc.ObjectStream[bytes]) -> None:
        self.stream = stream

    async def send(self, *messages: Json) -> None:
        for message in messages:
            await self.stream.send(json.dumps({"jsonrpc": "2.0", **message}).encode())

    async def receive(self) -> Json:
        with anyio.fail_after(units(2)):  # the client under test must have written by then
            data: Json = json.loads(await self.stream.receive())
        return data

    async def expect(self, method: str) -> Json:
        message = await self.receive()
        assert message.get("method") == method, message
        return message

    async def answer(self, request: Json, result: Any, *then: Json) -> None:
        await self.send({"id": request["id"], "result": result}, *then)


def update(session_id: str, **fields: Any) -> Json:
    """A ``session/update`` notification."""
    return {"method": "session/update", "params": {"sessionId": session_id, "update": fields}}


def chunk(session_id: str, text: str, kind: str = "agent_message_chunk") -> Json:
    return update(session_id, sessionUpdate=kind, content={"type": "text", "text": text})


class Call:
    """A coroutine run in the background; ``await call.result()`` for its outcome."""

    def __init__(self, tg: anyio.abc.TaskGroup, fn: Callable[..., Awaitable[Any]], *args: Any):
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = anyio.Event()
        tg.start_soon(self._run, fn, args)

    async def _run(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        try:
            self.value = await fn(*args)
        except Exception as exc:
            self.error = exc
        finally:
            self.done.set()

    async def result(self) -> Any:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


class Recorder:
    """An ``on_update`` handler keeping every event."""

    def __init__(self) -> None:
        self.events: list[SessionEvent] = []

    async def __call__(self, event: SessionEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[tuple[str, bool]]:
        return [(type(e.update).__name__, e.replay) for e in self.events]


@asynccontextmanager
async def connected(
    caps: Json | None = None, **options: Any
) -> AsyncIterator[tuple[ClientConnection, RawAgent, Json]]:
    """A client that sent ``initialize``, the raw agent, and the initialize request."""
    ours, theirs = memory_pair()
    agent = RawAgent(theirs)
    async with theirs, ClientConnection(ours, **options) as client:
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.initialize)
            request = await agent.expect("initialize")
            await agent.answer(request, {"protocolVersion": 1, "agentCapabilities": caps or {},
                                         "agentInfo": {"name": "raw", "version": "1"}})
            await call.result()
        yield client, agent, request


async def open_session(client: ClientConnection, agent: RawAgent, sid: str = "s1") -> None:
    async with anyio.create_task_group() as tg:
        call = Call(tg, client.new_session, "/work")
        await agent.answer(await agent.expect("session/new"), {"sessionId": sid})
        await call.result()


async def flush(client: ClientConnection, agent: RawAgent, sid: str = "s1") -> None:
    """A request/response round trip: everything the agent sent before is handled."""
    async with anyio.create_task_group() as tg:
        call = Call(tg, client.set_mode, sid, "ask")
        await agent.answer(await agent.expect("session/set_mode"), {})
        await call.result()


# ------------------------------------------------------------- the package


def test_the_package_exports_both_roles() -> None:
    import wireproto.adapters.acp as package
    from wireproto.adapters.acp.agent import connection as agent
    from wireproto.adapters.acp.client import connect, state, terminals, turn
    from wireproto.adapters.acp.client import connection as client

    assert package.AgentConnection is agent.AgentConnection
    assert package.ClientConnection is client.ClientConnection
    assert package.connect_acp is connect.connect_acp
    assert package.PromptTurn is turn.PromptTurn
    assert package.LoadResult is state.LoadResult
    assert package.LocalTerminals is terminals.LocalTerminals
    assert all(getattr(package, name, None) is not None for name in package.__all__)


# ------------------------------------------------------------- initialize


async def test_initialize_advertises_nothing_without_handlers() -> None:
    async with connected() as (client, _, request):
        assert request["id"] == 0
        params = request["params"]
        assert params["protocolVersion"] == 1
        assert params["clientInfo"]["name"] == "wireproto"
        caps = params["clientCapabilities"]
        assert not caps.get("terminal", False)
        assert not caps["fs"].get("readTextFile", False)
        assert not caps["fs"].get("writeTextFile", False)
        assert "session" not in caps
        assert client.initialized
        assert client.initialize_response is not None


async def test_initialize_advertises_exactly_the_installed_handlers() -> None:
    options = dict(file_system=LocalFileSystem(), terminals=LocalTerminals(), notices=True)
    async with connected(**options) as (_, _, request):
        caps = request["params"]["clientCapabilities"]
        assert caps["fs"] == {"readTextFile": True, "writeTextFile": True}
        assert caps["terminal"] is True
        assert caps["session"] == {"notices": {}}


async def test_another_protocol_version_is_refused() -> None:
    ours, theirs = memory_pair()
    agent = RawAgent(theirs)
    async with theirs, ClientConnection(ours) as client, anyio.create_task_group() as tg:
        call = Call(tg, client.initialize)
        await agent.answer(await agent.expect("initialize"), {"protocolVersion": 2})
        with pytest.raises(RemoteProtocolError, match="version 2"):
            await call.result()
        assert not client.initialized


async def test_initialize_has_a_deadline() -> None:
    """An agent that never answers initialize does not hang the client."""
    ours, theirs = memory_pair()
    agent = RawAgent(theirs)
    async with theirs, ClientConnection(ours) as client, anyio.create_task_group() as tg:
        call = Call(tg, functools.partial(client.initialize, timeout=0.2))
        await agent.expect("initialize")  # and no answer
        with pytest.raises(TimeoutError):
            await call.result()
        assert not client.initialized


async def test_calls_before_initialize_are_refused_locally() -> None:
    ours, theirs = memory_pair()
    async with theirs, ClientConnection(ours) as client:
        with pytest.raises(LocalProtocolError, match="initialize"):
            await client.new_session("/work")


# ------------------------------------------------------------ sessions


async def test_updates_right_after_session_new_are_kept(caplog: pytest.LogCaptureFixture) -> None:
    """protocol-acp.md#client-side: the id is registered before the next notification is handled."""
    recorder = Recorder()
    commands = [{"name": "review", "description": "Review"}]
    async with connected(on_update=recorder) as (client, agent, _):
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.new_session, "/work")
            request = await agent.expect("session/new")
            await agent.answer(
                request, {"sessionId": "s1"},
                update("s1", sessionUpdate="available_commands_update",
                       availableCommands=commands),
                chunk("s1", "hello"),
                chunk("elsewhere", "lost"),
            )
            response = await call.result()
        assert response.session_id == "s1"
        with caplog.at_level(logging.WARNING):
            await flush(client, agent)
        assert recorder.kinds() == [("AvailableCommandsUpdate", False),
                                    ("AgentMessageChunk", False)]
        assert [c.name for c in client.sessions["s1"].available_commands] == ["review"]
        assert "unknown session elsewhere dropped" in caplog.text


async def test_load_session_collects_the_replay() -> None:
    """protocol-acp.md#client-side: updates before the load response are replay, later ones live.

    The first replayed update is held, so the response and the live update
    wait in the inbox behind it: the boundary must still be the response.
    """
    recorder = Recorder()
    release = anyio.Event()

    async def held(event: SessionEvent) -> None:
        if not recorder.events:
            await release.wait()
        await recorder(event)

    async with connected({"loadSession": True}, on_update=held) as (client, agent, _):
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.load_session, "old", "/work")
            request = await agent.expect("session/load")
            assert request["params"] == {"sessionId": "old", "cwd": "/work", "mcpServers": []}
            first = chunk("old", "question", "user_message_chunk")
            first["params"]["update"]["messageId"] = "m1"
            await agent.send(first, chunk("old", "answer"))
            await agent.answer(request, None, chunk("old", "live"))  # null result
            release.set()
            loaded = await call.result()
        await flush(client, agent, "old")
        assert [type(u).__name__ for u in loaded.history] == ["UserMessageChunk",
                                                              "AgentMessageChunk"]
        assert loaded.history[0].message_id == "m1"
        assert recorder.kinds() == [("UserMessageChunk", True), ("AgentMessageChunk", True),
                                    ("AgentMessageChunk", False)]


async def test_failed_load_forgets_the_session() -> None:
    async with connected({"loadSession": True}) as (client, agent, _):
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.load_session, "gone", "/work")
            request = await agent.expect("session/load")
            await agent.send({"id": request["id"],
                              "error": {"code": -32002, "message": "Session not found"}})
            with pytest.raises(RpcError) as info:
                await call.result()
        assert info.value.code == -32002
        assert "gone" not in client.sessions


async def test_null_results_are_accepted_where_nothing_is_required() -> None:
    """``null`` is ``{}`` for empty results, but not for required fields."""
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.authenticate, "login")
            await agent.answer(await agent.expect("authenticate"), None)
            assert isinstance(await call.result(), S.AuthenticateResponse)
            call = Call(tg, client.set_config_option, "s1", "model", "large")
            await agent.answer(await agent.expect("session/set_config_option"), None)
            with pytest.raises(RemoteProtocolError, match="session/set_config_option"):
                await call.result()


async def test_config_options_and_modes_are_tracked() -> None:
    option = {"id": "thinking", "name": "Thinking", "type": "boolean", "currentValue": True}
    modes = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"},
                                                        {"id": "code", "name": "Code"}]}
    async with connected() as (client, agent, _):
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.new_session, "/work")
            await agent.answer(await agent.expect("session/new"),
                               {"sessionId": "s1", "modes": modes})
            await call.result()
            call = Call(tg, client.set_config_option, "s1", "thinking", False)
            request = await agent.expect("session/set_config_option")
            assert request["params"] == {"sessionId": "s1", "configId": "thinking",
                                         "type": "boolean", "value": False}
            await agent.answer(request, {"configOptions": [{**option, "currentValue": False}]})
            await call.result()
            await agent.send(update("s1", sessionUpdate="current_mode_update",
                                    modeId="code"))  # the v1 doc's alias
        session = client.sessions["s1"]
        await flush(client, agent)  # sets "ask" after the update set "code"
        assert isinstance(session.config_options[0], S.SessionConfigOptionBoolean)
        assert session.config_options[0].current_value is False
        assert session.modes is not None and session.modes.current_mode_id == "ask"


async def test_gated_methods_are_refused_locally() -> None:
    http = S.McpServerHttp(name="tracker", url="http://127.0.0.1:1/mcp", headers=[])
    async with connected() as (client, _, _):
        with pytest.raises(LocalProtocolError, match="session/list"):
            await client.list_sessions()
        with pytest.raises(LocalProtocolError, match="session/load"):
            await client.load_session("x", "/work")
        with pytest.raises(LocalProtocolError, match="McpServerHttp"):
            await client.new_session("/work", [http])
        with pytest.raises(LocalProtocolError, match="additionalDirectories"):
            await client.new_session("/work", additional_directories=["/other"])
        with pytest.raises(ValueError, match="absolute"):
            await client.new_session("work")


async def test_list_close_delete() -> None:
    caps = {"sessionCapabilities": {"list": {}, "close": {}, "delete": {}}}
    async with connected(caps) as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.list_sessions, "/work", "c1")
            request = await agent.expect("session/list")
            assert request["params"] == {"cwd": "/work", "cursor": "c1"}
            await agent.answer(request, {"sessions": [{"sessionId": "s1", "cwd": "/work"},
                                                      {"sessionId": 5}]})
            listed = await call.result()
            assert [i.session_id for i in listed.sessions] == ["s1"]  # invalid item skipped
            call = Call(tg, client.close_session, "s1")
            request = await agent.expect("session/close")
            await agent.send({"id": request["id"],
                              "error": {"code": -32002, "message": "Not active"}})
            await call.result()  # -32002 counts as success
            call = Call(tg, client.delete_session, "s1")
            await agent.answer(await agent.expect("session/delete"), {})
            await call.result()
        assert "s1" not in client.sessions


# ------------------------------------------------------------ prompt turns


async def test_turn_yields_every_update_in_order_before_it_ends() -> None:
    """A tiny buffer, 50 updates, then the response, then a late one.

    ``on_update`` holds the first update until everything is queued behind it.
    """
    recorder = Recorder()
    release = anyio.Event()

    async def held(event: SessionEvent) -> None:
        if not recorder.events:
            await release.wait()
        await recorder(event)

    async with connected(on_update=held, event_buffer=2) as (client, agent, _):
        await open_session(client, agent)

        async def play() -> None:
            request = await agent.expect("session/prompt")
            assert request["params"]["prompt"] == [{"type": "text", "text": "go"}]
            await agent.send(*(chunk("s1", f"c{i}") for i in range(50)))
            await agent.answer(request, {"stopReason": "end_turn"}, chunk("s1", "late"))
            release.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(play)
            async with client.prompt("s1", "go") as turn:
                texts = [u.content.text async for u in turn
                         if isinstance(u, S.AgentMessageChunk)]
                assert turn.stop_reason == "end_turn"
        assert texts == [f"c{i}" for i in range(50)]
        await flush(client, agent)
        assert len(recorder.events) == 51  # the late update reached on_update only
        assert turn.done


async def test_a_late_update_read_before_the_next_prompt_stays_out_of_it() -> None:
    """An update of turn 1 sent after its response never reaches turn 2."""
    release = anyio.Event()
    late_seen = anyio.Event()

    async def held(event: SessionEvent) -> None:
        if isinstance(event.update, S.AgentMessageChunk) and event.update.content.text == "late":
            late_seen.set()
            await release.wait()

    async with connected(on_update=held) as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, _collect, client, "s1", "one")
            await agent.answer(await agent.expect("session/prompt"), {"stopReason": "end_turn"},
                               chunk("s1", "late"))
            assert (await call.result())[0] == []
            await late_seen.wait()  # the late update is being handled
            call = Call(tg, _collect, client, "s1", "two")
            second = await agent.expect("session/prompt")  # sent while "late" is held
            release.set()
            await agent.send(chunk("s1", "mine"))
            await agent.answer(second, {"stopReason": "end_turn"})
            updates, _ = await call.result()
        assert [u.content.text for u in updates] == ["mine"]


async def test_unknown_stop_reason_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    """protocol-acp.md#client-side: an unknown value of a strict enum is reported, not a crash."""
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, _collect, client, "s1", "go")
            request = await agent.expect("session/prompt")
            await agent.send(update("s1", sessionUpdate="brand_new_update", x=1),
                             chunk("s1", "still here"))
            await agent.answer(request, {"stopReason": "exploded", "usage": {"x": 1}})
            updates, stop = await call.result()
        assert stop == "exploded"
        assert [u.content.text for u in updates] == ["still here"]  # unknown variant dropped
        assert "unknown stop reason 'exploded'" in caplog.text


async def _collect(client: ClientConnection, sid: str, prompt: str) -> tuple[list[Any], Any]:
    async with client.prompt(sid, prompt) as turn:
        updates = await turn.collect()
    return updates, turn.stop_reason


async def test_prompt_error_is_raised_by_the_iteration() -> None:
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, _collect, client, "s1", "go")
            request = await agent.expect("session/prompt")
            await agent.send({"id": request["id"],
                              "error": {"code": -32603, "message": "Internal error"}})
            with pytest.raises(RpcError) as info:
                await call.result()
        assert info.value.code == -32603


async def test_a_second_turn_on_the_same_session_is_refused() -> None:
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answer_prompt, agent, "end_turn")
            async with client.prompt("s1", "one") as turn:
                with pytest.raises(LocalProtocolError, match="already runs a turn"):
                    async with client.prompt("s1", "two"):
                        pass
                await turn.collect()


async def _answer_prompt(agent: RawAgent, stop: str) -> None:
    await agent.answer(await agent.expect("session/prompt"), {"stopReason": stop})


async def test_leaving_a_turn_early_cancels_it() -> None:
    async with connected() as (client, agent, _):
        await open_session(client, agent)

        async def play() -> None:
            request = await agent.expect("session/prompt")
            await agent.expect("session/cancel")
            await agent.answer(request, {"stopReason": "cancelled"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(play)
            async with client.prompt("s1", "go") as turn:
                pass
        assert turn.stop_reason == "cancelled"


async def test_leaving_a_turn_with_an_error_also_cancels_the_request() -> None:
    """protocol-acp.md#cancel-request: session/cancel, then $/cancel_request for the prompt's id."""
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        with pytest.raises(KeyError):
            async with client.prompt("s1", "go"):
                request = await agent.expect("session/prompt")
                raise KeyError("the caller failed")
        cancel = await agent.expect("session/cancel")
        abandoned = await agent.expect("$/cancel_request")
        await agent.send({"id": request["id"],
                          "error": {"code": -32800, "message": "Request cancelled"}})
        await flush(client, agent)  # the late answer is dropped quietly
    assert cancel["params"] == {"sessionId": "s1"}
    assert abandoned["params"] == {"requestId": request["id"]}


async def test_content_the_agent_did_not_advertise_is_refused() -> None:
    image = S.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        with pytest.raises(LocalProtocolError, match="ImageContent"):
            client.prompt("s1", [image])


# ------------------------------------------------------------ permissions


def permission_request(rid: Any, options: list[Json] | None = None) -> Json:
    if options is None:
        options = [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                   {"optionId": "no", "name": "Deny", "kind": "reject_once"}]
    return {"id": rid, "method": "session/request_permission",
            "params": {"sessionId": "s1", "toolCall": {"toolCallId": "tc1"},
                       "options": options}}


async def test_cancel_answers_pending_permission_requests() -> None:
    """Session/cancel first, then every pending permission answers cancelled."""
    asked = anyio.Event()
    calls: list[str] = []

    async def never(request: S.RequestPermissionRequest) -> str:
        calls.append(request.tool_call.tool_call_id)
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with connected(on_permission=never) as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, _collect, client, "s1", "go")
            prompt = await agent.expect("session/prompt")
            await agent.send(permission_request("p1"))
            await asked.wait()
            await client.cancel("s1")
            assert (await agent.receive())["method"] == "session/cancel"
            assert await agent.receive() == {
                "jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}}
            await agent.send(permission_request(9))  # asked after the cancel: answered at once
            assert (await agent.receive())["result"] == {"outcome": {"outcome": "cancelled"}}
            await agent.answer(prompt, {"stopReason": "cancelled"})
            _, stop = await call.result()
        assert stop == "cancelled"
        assert calls == ["tc1"]


async def test_cancel_request_from_the_agent_cancels_our_handler() -> None:
    """$/cancel_request: the handler is cancelled and the request answered -32800."""
    asked = anyio.Event()
    cancelled = anyio.Event()

    async def never(request: S.RequestPermissionRequest) -> str:
        asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with connected(on_permission=never) as (client, agent, _):
        await open_session(client, agent)
        await agent.send(permission_request(7))
        await asked.wait()
        await agent.send({"method": "$/cancel_request", "params": {"requestId": 7}})
        answer = await agent.receive()
        assert answer["id"] == 7
        assert answer["error"]["code"] == -32800
        assert cancelled.is_set()


@pytest.mark.parametrize(
    ("options", "outcome"),
    [
        (None, {"outcome": "selected", "optionId": "no"}),
        ([{"optionId": "ok", "name": "OK", "kind": "allow_always"}], {"outcome": "cancelled"}),
    ],
)
async def test_without_a_handler_the_first_reject_option_is_chosen(
    options: list[Json] | None, outcome: Json
) -> None:
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        await agent.send(permission_request(1, options))
        assert (await agent.receive())["result"] == {"outcome": outcome}


async def test_a_permission_handler_picks_an_option() -> None:
    async def allow(request: S.RequestPermissionRequest) -> str:
        return "yes"

    async with connected(on_permission=allow) as (client, agent, _):
        await open_session(client, agent)
        await agent.send(permission_request(1))
        assert (await agent.receive())["result"] == {
            "outcome": {"outcome": "selected", "optionId": "yes"}}
        await agent.send({**permission_request(2), "params": {
            **permission_request(2)["params"], "sessionId": "unknown"}})
        assert (await agent.receive())["error"]["code"] == -32002


async def test_handlers_not_installed_are_not_routed() -> None:
    async with connected() as (client, agent, _):
        await open_session(client, agent)
        await agent.send({"method": "_acme.dev/ping", "params": {}},  # ignored
                         {"method": "$/progress", "params": {"token": 1}})
        for method in ("fs/read_text_file", "terminal/create", "elicitation/create",
                       "_acme.dev/symbols"):
            await agent.send({"id": method, "method": method,
                              "params": {"sessionId": "s1", "path": "/work/a"}})
            answer = await agent.receive()
            assert answer["id"] == method
            assert answer["error"]["code"] == -32601


async def test_updates_queued_behind_a_slow_handler_reach_a_new_session() -> None:
    """When the inbox is busy: the response waits in line, the id is still known."""
    release = anyio.Event()
    seen: list[tuple[str, str]] = []

    async def slow(event: SessionEvent) -> None:
        if event.session_id == "s1" and not seen:
            await release.wait()
        seen.append((event.session_id, type(event.update).__name__))

    async with connected(on_update=slow) as (client, agent, _):
        await open_session(client, agent)
        async with anyio.create_task_group() as tg:
            call = Call(tg, client.new_session, "/work")
            request = await agent.expect("session/new")
            await agent.send(chunk("s1", "blocks the inbox"))
            await agent.answer(request, {"sessionId": "s2"},
                               *(chunk("s2", f"c{i}") for i in range(20)))
            release.set()
            await call.result()
        await flush(client, agent, "s2")
        assert seen == [("s1", "AgentMessageChunk")] + [("s2", "AgentMessageChunk")] * 20
