"""WireClient turns you iterate, tool contexts, replayed requests, deadlines and the handshake.

The turn tests run the demo agent's Wire server as a real child process
(``tests/helpers/wire_server.py``); the tests of exact wire traffic drive the
client with raw lines (``NdjsonProbe``).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.wire import (
    ExternalTool,
    Reject,
    ToolContext,
    WireTurn,
    connect_wire,
    messages,
)
from wireproto.errors import RemoteProtocolError

from ..conftest import event, request, scripted, server_cmd

pytestmark = pytest.mark.anyio

m = messages
LOOKUP = ExternalTool(name="lookup", description="Look up",
                      parameters={"type": "object", "properties": {"q": {"type": "string"}}})


def answer(id: str, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


# ------------------------------------------------------------ real server process


async def test_an_iterated_turn_with_a_tool_call(workdir: Path, anyio_backend_name: str) -> None:
    contexts: list[ToolContext] = []

    async def lookup(arguments: Any, context: ToolContext) -> str:
        contexts.append(context)
        return f"found {arguments['q']}"

    cmd = server_cmd(anyio_backend_name, workdir)
    async with connect_wire(cmd, stderr="log", tools=[(LOOKUP, lookup)]) as client:
        assert client.process is not None and client.process.pid > 0
        async with client.prompt('/tool lookup {"q": "x"}') as turn:
            events = [e async for e in turn]
        assert turn.status == "finished" and turn.done
        assert client.take_events() == []  # nothing of the turn outside it
        (call,) = [e for e in events if isinstance(e, m.ToolCall)]
        assert isinstance(events[-1], m.TurnEnd)
        assert contexts == [ToolContext(call.id, "lookup", turn)]
        result = await client.prompt("hello")  # the awaited form still works
        assert result.status == "finished"
        assert any(isinstance(e, m.TurnEnd) for e in client.take_events())
    assert client.process.returncode is not None


async def test_cancelling_the_iterating_task_cancels_the_turn_on_the_server(
    workdir: Path, anyio_backend_name: str
) -> None:
    turns: list[WireTurn] = []
    async with connect_wire(server_cmd(anyio_backend_name, workdir), stderr="log") as client:
        async with anyio.create_task_group() as tg:
            first = anyio.Event()

            async def iterate() -> None:
                async with client.prompt("/slow 1000000") as turn:
                    turns.append(turn)
                    async for e in turn:
                        if isinstance(e, m.TextPart) and e.text == "tick 1":
                            first.set()

            tg.start_soon(iterate)
            await first.wait()
            tg.cancel_scope.cancel()
        assert turns[0].status == "cancelled"
        assert (await client.prompt("hello")).status == "finished"  # the server is free


@pytest.mark.slow  # waits out a timeout (seconds): slow tier
async def test_handshake_clock_fallback_and_require(
    workdir: Path, anyio_backend_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    with pytest.raises(RemoteProtocolError, match="did not complete the handshake"):
        async with connect_wire(silent, initialize_timeout=0.5, require_handshake=True):
            pass
    with caplog.at_level(logging.WARNING):
        async with connect_wire(silent, initialize_timeout=0.5) as client:
            assert client.legacy
    assert "no answer to initialize within 0.5 s; falling back to v1 mode" in caplog.text
    # a server that takes its time to start still gets the handshake by default
    script = ("import runpy, sys, time; time.sleep(2); sys.argv = sys.argv[1:]; "
              "runpy.run_path(sys.argv[0], run_name='__main__')")
    slow = [sys.executable, "-c", script, *server_cmd(anyio_backend_name, workdir)[1:]]
    async with connect_wire(slow, stderr="log", require_handshake=True) as client:
        assert client.initialized and not client.legacy


# ------------------------------------------------------------------- raw traffic


async def test_replayed_requests_are_not_handled_nor_answered() -> None:
    ran: list[Any] = []

    async def lookup(arguments: Any, context: ToolContext) -> str:
        ran.append(arguments)
        return "again"

    async def approve(r: m.ApprovalRequest) -> m.ApprovalKind:
        ran.append(r)
        return "approve"

    async with scripted(tools=[(LOOKUP, lookup)], on_approval=approve) as (client, probe):
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def replay() -> None:
                results.append(await client.replay())

            tg.start_soon(replay)
            sent = await probe.read_json()
            assert sent["method"] == "replay"
            await probe.write_json(event("TurnBegin", {"user_input": "old"}))
            await probe.write_json(request("call-1", "ToolCallRequest", {
                "id": "call-1", "name": "lookup", "arguments": '{"q": "x"}'}))
            await probe.write_json(request("ap-1", "ApprovalRequest", {
                "id": "ap-1", "tool_call_id": "call-1", "sender": "s", "action": "a",
                "description": "d"}))
            await probe.write_json(answer(sent["id"], {"status": "finished", "events": 1,
                                                       "requests": 2}))
        assert results[0].requests == 2
        assert [type(e) for e in client.take_events()] == [m.TurnBegin]
        # the next thing the client writes is the prompt, not an answer to history
        async with anyio.create_task_group() as tg:
            tg.start_soon(_await, client.prompt("now"))
            nxt = await probe.read_json()
            assert nxt["method"] == "prompt"
            await probe.write_json(request("call-2", "ToolCallRequest", {
                "id": "call-2", "name": "lookup", "arguments": '{"q": "y"}'}))
            assert (await probe.read_json())["id"] == "call-2"  # live requests are answered
            await probe.write_json(answer(nxt["id"], {"status": "finished"}))
    assert ran == [{"q": "y"}]


async def test_tool_handlers_of_a_turn_end_with_its_prompt_response() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def hang(arguments: Any, context: ToolContext) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with scripted(tools=[(LOOKUP, hang)]) as (client, probe):
        async with client.prompt("go") as turn:
            sent = await probe.read_json()
            await probe.write_json(request("call-1", "ToolCallRequest", {
                "id": "call-1", "name": "lookup", "arguments": "{}"}))
            await started.wait()
            # a cancel: the server ends the turn without closing the tool call
            await probe.write_json(event("TurnEnd", {}))
            await probe.write_json(answer(sent["id"], {"status": "cancelled"}))
            events = await turn.collect()
        assert cancelled.is_set()
        assert turn.status == "cancelled" and [type(e) for e in events] == [m.TurnEnd]
        late = await probe.read_json()  # the dismissed call gets the safe default
        assert late["id"] == "call-1" and late["result"]["return_value"]["is_error"]


async def test_reject_with_feedback_and_the_bounded_stream_outside_turns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def refuse(r: m.ApprovalRequest) -> Reject:
        return Reject(feedback="use staging")

    async with scripted(on_approval=refuse, event_buffer=2) as (client, probe):
        await probe.write_json(request("a", "ApprovalRequest", {
            "id": "a", "tool_call_id": "c", "sender": "s", "action": "a", "description": "d"}))
        assert (await probe.read_json())["result"] == {
            "request_id": "a", "response": "reject", "feedback": "use staging"}
        with caplog.at_level(logging.WARNING):
            for n in range(5):
                await probe.write_json(event("ContentPart", {"type": "text", "text": str(n)}))
            await probe.write_json(request("b", "ApprovalRequest", {
                "id": "b", "tool_call_id": "c", "sender": "s", "action": "a",
                "description": "d"}))
            await probe.read_json()  # answered: every event before it was handled
        assert client.take_events() == [m.TextPart(text="3"), m.TextPart(text="4")]
        assert "dropping the oldest" in caplog.text


async def _await(turn: Any) -> None:
    await turn


async def test_a_whole_session_with_names_from_the_package_root(
    workdir: Path, anyio_backend_name: str
) -> None:
    """Tool call, approval rejected with feedback, cancel and replay against a real server."""
    from wireproto.adapters import wire

    feedback: list[str] = []

    async def lookup(arguments: Any, context: wire.ToolContext) -> str:
        return f"found {arguments['q']}"

    async def refuse(request: wire.messages.ApprovalRequest) -> wire.Reject:
        feedback.append(request.action)
        return wire.Reject(feedback="not in this directory")

    tool = wire.ExternalTool(name="lookup", description="Look up", parameters={"type": "object"})
    async with wire.connect_wire(server_cmd(anyio_backend_name, workdir), stderr="log",
                                 tools=[(tool, lookup)], on_approval=refuse) as client:
        async with client.prompt('/tool lookup {"q": "x"}') as turn:
            results = [e for e in await turn.collect() if isinstance(e, m.ToolResult)]
        assert results[0].return_value.output == "found x"
        async with client.prompt("/write f.txt hello") as turn:
            events = await turn.collect()
        assert feedback and not (workdir / "f.txt").exists()
        assert any(isinstance(e, m.ApprovalResponse) and e.response == "reject" for e in events)
        async with client.prompt("/slow 1000000") as turn:
            async for _event in turn:
                break  # leaving early cancels the turn on the server
        assert turn.status == "cancelled"
        replayed = await client.replay()
        assert replayed.events > 0
        history = client.take_events()
        assert any(isinstance(e, m.ToolResult) for e in history)
