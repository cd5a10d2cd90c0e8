"""Turn ends, cancellation, shutdown, failures and request ids of the Wire server
(protocol-wire.md#methods, protocol-wire.md#deviations)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from wireproto.agent.api import Agent, ApprovalRequest, ExternalTool
from wireproto.agent.content import Text
from wireproto.agent.events import AgentMessageChunk, StopReason, ToolKind, UserMessage
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn
from wireproto.errors import AgentError, AuthRequired, Busy, InvalidArgument, NotFound
from wireproto.testing import wait_all_tasks_blocked

pytestmark = pytest.mark.anyio

Raw = Any  # conftest.Raw: a server driven with raw lines
OpenRaw = Callable[..., AbstractAsyncContextManager[Raw]]


def event(message: Any) -> tuple[str, Any]:
    """``(type, payload)`` of an ``event`` message."""
    assert message["method"] == "event", message
    return message["params"]["type"], message["params"]["payload"]
TOOL = {"name": "t", "description": "a tool", "parameters": {"type": "object"}}


def prompt(id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "prompt", "params": {"user_input": text}}


def answer(id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def kinds(messages: list[Any]) -> list[str]:
    """Event types, ``request``, or ``response:<id>`` for each message."""
    out = []
    for message in messages:
        if message.get("method") == "event":
            out.append(event(message)[0])
        elif message.get("method") == "request":
            out.append("request")
        else:
            out.append(f"response:{message['id']}")
    return out


def payloads(messages: list[Any], kind: str) -> list[Any]:
    return [event(x)[1] for x in messages if x.get("method") == "event" and event(x)[0] == kind]


# ------------------------------------------------------------------


async def test_cancel_resolves_a_pending_approval_visibly(
    open_raw: OpenRaw, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_raw() as raw:
        await raw.send(prompt("p", "/write g.txt data"))
        before, request = await raw.until_request()
        await raw.send({"jsonrpc": "2.0", "id": "c", "method": "cancel"})
        after = await raw.collect("p")
        order = kinds(after)
        assert order.index("ApprovalResponse") < order.index("StepInterrupted")
        assert order[-3:] == ["StepInterrupted", "TurnEnd", "response:p"]
        assert "response:c" in order
        assert payloads(after, "ApprovalResponse") == [
            {"request_id": request["id"], "response": "reject", "feedback": "cancelled"}
        ]
        (result,) = payloads(after, "ToolResult")  # the write call fails, once
        assert result["tool_call_id"] == payloads(before, "ToolCall")[0]["id"]
        assert result["return_value"]["is_error"] is True
        assert after[-1]["result"] == {"status": "cancelled"}
        with caplog.at_level(logging.DEBUG, logger="wireproto.adapters.wire.server.channel"):
            await raw.send(answer(request["id"], {"request_id": request["id"],
                                                  "response": "approve"}))
            await raw.probe.assert_silent()  # a late answer gets no reply
        assert "late answer" in caplog.text
        assert not (workdir / "g.txt").exists()


async def test_cancel_resolves_a_pending_tool_call_once(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10", "external_tools": [TOOL]})
        await raw.send(prompt("p", "/tool t {}"))
        _, request = await raw.until_request()
        await raw.send({"jsonrpc": "2.0", "id": "c", "method": "cancel"})
        after = await raw.collect("p")
        (result,) = payloads(after, "ToolResult")
        assert result == {"tool_call_id": request["id"], "return_value": {
            "is_error": True,
            "output": "",
            "message": "Agent turn was cancelled before tool result was received.",
            "display": [{"type": "brief", "text": "Cancelled"}],
            "extras": None,
        }}
        assert kinds(after)[-3:] == ["StepInterrupted", "TurnEnd", "response:p"]


async def test_stop_mid_turn_resolves_requests_and_returns(open_raw: OpenRaw) -> None:
    stop = anyio.Event()
    async with open_raw(stop=stop) as raw:
        await raw.send(prompt("p", "/write h.txt data"))
        _, request = await raw.until_request()
        stop.set()
        after = await raw.collect("p")
        assert payloads(after, "ApprovalResponse") == [
            {"request_id": request["id"], "response": "reject", "feedback": "connection closed"}
        ]
        assert kinds(after)[-3:] == ["StepInterrupted", "TurnEnd", "response:p"]
        assert after[-1]["result"] == {"status": "cancelled"}
        with pytest.raises(anyio.EndOfStream):  # the server closed its side by itself
            await raw.recv_raw()


async def test_end_of_input_mid_turn_cancels_and_flushes(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send(prompt(1, "/slow 1000"))
        while kinds([await raw.recv()]) != ["ContentPart"]:
            pass
        raw.probe.write_eof()
        after = await raw.collect(1)
        assert kinds(after)[-3:] == ["StepInterrupted", "TurnEnd", "response:1"]
        assert after[-1]["result"] == {"status": "cancelled"}


# ------------------------------------------------------------------ failed answers


@pytest.mark.parametrize(
    "reply",
    [
        {"error": {"code": -32603, "message": "dialog crashed"}},
        {"result": {"request_id": "x", "response": "maybe"}},
        {"result": "approve"},
    ],
)
async def test_bad_approval_answers_count_as_reject(
    open_raw: OpenRaw, workdir: Path, reply: dict[str, Any]
) -> None:
    async with open_raw() as raw:
        await raw.send(prompt("p", "/write k.txt data"))
        _, request = await raw.until_request()
        await raw.send({"jsonrpc": "2.0", "id": request["id"], **reply})
        after = await raw.collect("p")
        assert payloads(after, "ApprovalResponse")[0]["response"] == "reject"
        texts = "".join(p["text"] for p in payloads(after, "ContentPart"))
        assert texts == "Write to k.txt rejected"
        assert not (workdir / "k.txt").exists()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"error": {"code": -32000, "message": "boom"}}, "boom"),
        ({"result": {"tool_call_id": "x", "return_value": {"is_error": False, "output": "o",
                                                           "message": ""}}},
         "Invalid tool result payload from client."),
    ],
)
async def test_bad_tool_answers_become_tool_errors(
    open_raw: OpenRaw, reply: dict[str, Any], message: str
) -> None:
    async with open_raw() as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10", "external_tools": [TOOL]})
        await raw.send(prompt("p", "/tool t {}"))
        _, request = await raw.until_request()
        await raw.send({"jsonrpc": "2.0", "id": request["id"], **reply})
        after = await raw.collect("p")
        (result,) = payloads(after, "ToolResult")
        assert result["return_value"]["is_error"] is True
        assert result["return_value"]["message"] == message
        assert result["return_value"]["display"] == [
            {"type": "brief", "text": "External tool error"}
        ]
        texts = "".join(p["text"] for p in payloads(after, "ContentPart"))
        assert texts == f"Tool t failed: {message}"


# ------------------------------------------------------------------ one streaming operation


async def test_initialize_and_replay_refused_during_a_turn(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send(prompt("p", "/slow 1000"))
        while kinds([await raw.recv()]) != ["ContentPart"]:
            pass
        for id, method, params in (("i", "initialize", {"protocol_version": "1.10"}),
                                   ("r", "replay", None), ("p2", "prompt", {"user_input": "x"})):
            reply = await raw.call(id, method, params)
            assert reply["error"] == {"code": -32000,
                                      "message": "An agent turn is already in progress",
                                      "data": None}
        await raw.send({"jsonrpc": "2.0", "id": "c", "method": "cancel"})
        assert (await raw.until_response("p"))["result"] == {"status": "cancelled"}


async def test_replay_is_bounded_and_cancellable(open_raw: OpenRaw, home: Path) -> None:
    store = JsonlStore(home / "sessions")  # where open_raw's server keeps them
    store.create("long", "/tmp", [])
    store.append("long", UserMessage(content=[Text("go")], message_id="u1"))
    for n in range(3000):
        store.append("long", AgentMessageChunk(text=f"{n} ", message_id="m1"))
    async with open_raw(session_id="long") as raw:
        await raw.send({"jsonrpc": "2.0", "id": "r", "method": "replay"})
        for _ in range(10):  # the replay streams ...
            assert (await raw.recv())["method"] == "event"
        await wait_all_tasks_blocked()  # ... and waits for us: bounded
        assert raw.server.channel.peer.stats().send_waiting == 1
        await raw.send({"jsonrpc": "2.0", "id": "c", "method": "cancel"})
        after = await raw.collect("r")
        result = after[-1]["result"]
        assert result["status"] == "cancelled" and result["requests"] == 0
        assert 10 < result["events"] < 3002
        assert result["events"] == 10 + len(payloads(after, "ContentPart")) + len(
            payloads(after, "StepBegin"))
        reply = await raw.call("r2", "replay")  # and a full one afterwards
        assert reply["result"] == {"status": "finished", "events": 3002, "requests": 0}


async def test_serve_wire_keeps_sessions_in_memory_unless_given_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wireproto.adapters.wire import WireClient, serve_wire
    from wireproto.agent.demo import DemoAgent
    from wireproto.transports.memory import memory_pair

    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("WIREPROTO_HOME", str(tmp_path / "wireproto-home"))

    async def one_turn(**options: Any) -> str:
        ours, theirs = memory_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_wire(DemoAgent(), theirs, work_dir=str(tmp_path),
                                             session_id="w1", **options))
            async with WireClient(ours) as client:
                await client.initialize()
                result = await client.prompt("hello")
        return str(result.status)

    assert await one_turn() == "finished"
    assert [p async for p in anyio.Path(tmp_path).iterdir()] == []  # nothing written anywhere
    assert await one_turn(store=tmp_path / "chosen") == "finished"
    assert await anyio.Path(tmp_path / "chosen" / "w1.jsonl").is_file()
    with pytest.raises(ValueError, match="Runtime"):
        await serve_wire(Runtime(DemoAgent()), store=tmp_path)


async def test_replay_of_an_empty_session(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        reply = await raw.call(1, "replay", {})
        assert reply["result"] == {"status": "finished", "events": 0, "requests": 0}


# ------------------------------------------------------------------ agent failures


class Failing(Agent):
    """Raises the exception named by the prompt."""

    errors: ClassVar[dict[str, Exception]] = {
        "busy": Busy("already busy"),
        "arg": InvalidArgument("bad argument"),
        "auth": AuthRequired("log in again"),
        "missing": NotFound("no such thing"),
        "agent": AgentError("provider down"),
        "bug": RuntimeError("secret detail"),
    }

    async def prompt(self, turn: Turn) -> StopReason:
        await turn.say("partial")
        if turn.text == "steps":
            return StopReason.MAX_STEPS
        if turn.text == "tokens":
            return StopReason.MAX_TOKENS
        raise self.errors[turn.text]


@pytest.mark.parametrize(
    ("text", "code", "message", "data"),
    [
        ("busy", -32000, "already busy", None),
        ("arg", -32602, "bad argument", None),
        ("auth", -32004, "log in again", None),
        ("missing", -32000, "no such thing", None),
        ("agent", -32003, "provider down", None),
        ("bug", -32603, "Internal error", {"type": "RuntimeError", "message": "secret detail"}),
    ],
)
async def test_agent_errors_map_to_codes_after_turn_end(
    open_raw: OpenRaw, text: str, code: int, message: str, data: object
) -> None:
    async with open_raw(agent=Failing()) as raw:
        after = await raw.collect_call("p", "prompt", {"user_input": text})
        assert kinds(after)[-3:] == ["StepInterrupted", "TurnEnd", "response:p"]
        assert after[-1]["error"] == {"code": code, "message": message, "data": data}
        after = await raw.collect_call("q", "prompt", {"user_input": "tokens"})
        assert after[-1]["result"] == {"status": "finished"}  # the busy state was released


async def test_max_steps(open_raw: OpenRaw) -> None:
    async with open_raw(agent=Failing()) as raw:
        reply = await raw.call("p", "prompt", {"user_input": "steps"})
        assert reply["result"] == {"status": "max_steps_reached", "steps": 1}


class NoPlanMode(Agent):
    supports_plan_mode = False


async def test_plan_mode_unsupported(open_raw: OpenRaw) -> None:
    async with open_raw(agent=NoPlanMode()) as raw:
        reply = await raw.call(1, "set_plan_mode", {"enabled": True, "extra": 1})
        assert reply["error"]["code"] == -32000
        assert reply["error"]["message"] == "Plan mode is not supported"


async def test_set_plan_mode_raw(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        after = await raw.collect_call(1, "set_plan_mode", {"enabled": True})
        assert after[0]["params"] == {"type": "StatusUpdate", "payload": {
            "context_usage": None, "context_tokens": None, "max_context_tokens": None,
            "token_usage": None, "message_id": None, "plan_mode": True, "mcp_status": None,
        }}
        assert after[-1]["result"] == {"status": "ok", "plan_mode": True}


# ------------------------------------------------------------------ unique ids


class Duplicates(Agent):
    """Opens two tool calls with the same model id and calls a client tool on the second."""

    async def prompt(self, turn: Turn) -> StopReason:
        first = await turn.start_tool("first", "First", id="call_0")
        second = await turn.start_tool("t", "Second", id="call_0", kind=ToolKind.OTHER,
                                       raw_input={}, external=True)
        channel = turn.session.channel
        assert channel is not None
        tool = ExternalTool("t", "a tool", {"type": "object"})
        outcome = await channel.call_tool(turn.session, second.id, tool, {})
        await second.update(status=None)
        await second.complete([Text(outcome.output)])
        await first.complete()
        return StopReason.END_TURN


async def test_repeated_tool_call_ids_are_made_unique(open_raw: OpenRaw) -> None:
    async with open_raw(agent=Duplicates()) as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10", "external_tools": [TOOL]})
        await raw.send(prompt("p", "go"))
        before, request = await raw.until_request()
        assert [c["id"] for c in payloads(before, "ToolCall")] == ["call_0", "call_0~2"]
        assert request["id"] == request["params"]["payload"]["id"] == "call_0~2"
        value = {"is_error": False, "output": "fine", "message": "", "display": []}
        await raw.send(answer("call_0~2", {"tool_call_id": "call_0~2", "return_value": value}))
        after = await raw.collect("p")
        results = payloads(after, "ToolResult")
        assert [r["tool_call_id"] for r in results] == ["call_0~2", "call_0"]
        assert results[0]["return_value"] == {**value, "extras": None}


# ------------------------------------------------------------------ options


async def test_model_thinking_and_yolo(open_raw: OpenRaw, workdir: Path) -> None:
    runtime = Runtime(Failing())
    async with open_raw(runtime=runtime, model="x", thinking=True) as raw:
        await raw.call(1, "replay")  # the agent declares no options: ignored
        assert raw.server.session.options == {}
    from wireproto.agent.demo import DemoAgent

    async with open_raw(agent=DemoAgent(), model="demo-large", thinking=True, yolo=True) as raw:
        await raw.call(0, "replay")  # answered: the session is open
        assert raw.server.session.options["model"] == "demo-large"
        assert raw.server.session.options["thinking"] is True
        after = await raw.collect_call("p", "prompt", {"user_input": "/write y.txt yes"})
        assert "request" not in kinds(after)
        assert payloads(after, "ApprovalResponse")[0]["response"] == "approve"
        assert (workdir / "y.txt").read_text() == "yes"


async def test_invalid_model_fails_serving(workdir: Path) -> None:
    from wireproto.adapters.wire import serve_wire
    from wireproto.agent.demo import DemoAgent
    from wireproto.transports.memory import memory_pair

    ours, theirs = memory_pair()
    async with ours, theirs:
        with pytest.raises(InvalidArgument):
            await serve_wire(DemoAgent(), theirs, model="gpt-99", work_dir=str(workdir))


async def test_nothing_waits_behind_a_pending_request(open_raw: OpenRaw) -> None:
    async with open_raw() as raw:
        await raw.send(prompt("p", "/write n.txt data"))
        _, request = await raw.until_request()
        # the approval stays unanswered: other methods and their events still flow
        after = await raw.collect_call("m", "set_plan_mode", {"enabled": True})
        assert kinds(after) == ["StatusUpdate", "response:m"]
        assert (await raw.call("s", "steer", {"user_input": "hurry"}))["result"] == {
            "status": "steered"}
        await raw.send(answer(request["id"], {"request_id": request["id"], "response": "reject"}))
        after = await raw.collect("p")
        assert after[-1]["result"] == {"status": "finished"}


class BadHookInput(Agent):
    hook_events = ("Stop",)

    async def prompt(self, turn: Turn) -> StopReason:
        allowed, _ = await turn.run_hook("Stop", "", {"bad": object()})
        await turn.say(f"allowed={allowed}")
        return StopReason.END_TURN


async def test_a_request_that_cannot_be_sent_fails_open(
    open_raw: OpenRaw, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_raw(agent=BadHookInput()) as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10",
                                           "hooks": [{"id": "h", "event": "Stop"}]})
        after = await raw.collect_call("p", "prompt", {"user_input": "x"})
        assert "request" not in kinds(after)
        assert payloads(after, "ContentPart") == [{"type": "text", "text": "allowed=True"}]
        assert after[-1]["result"] == {"status": "finished"}
        assert "HookRequest" in caplog.text


class SameApprovalId(Agent):
    """Asks two approvals with one neutral id at the same time (through the channel)."""

    async def prompt(self, turn: Turn) -> StopReason:
        call = await turn.start_tool("write", "Write")
        request = ApprovalRequest(id="dup", tool_call_id=call.id, tool="write", action="write",
                                  description="Write twice")
        channel = turn.session.channel
        assert channel is not None
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(channel.request_approval, turn.session, request)
        return StopReason.END_TURN


async def test_a_repeated_approval_id_is_replaced_and_both_are_resolved(open_raw: OpenRaw) -> None:
    async with open_raw(agent=SameApprovalId()) as raw:
        await raw.send(prompt("p", "go"))
        _, first = await raw.until_request()
        _, second = await raw.until_request()
        ids = [first["id"], second["id"]]
        assert "dup" in ids and len(set(ids)) == 2
        for request in (first, second):
            assert request["params"]["payload"]["id"] == request["id"]
        await raw.send({"jsonrpc": "2.0", "id": "c", "method": "cancel"})
        after = await raw.collect("p")
        resolved = payloads(after, "ApprovalResponse")
        assert sorted(r["request_id"] for r in resolved) == sorted(ids)
        assert {(r["response"], r["feedback"]) for r in resolved} == {("reject", "cancelled")}
        assert after[-1]["result"] == {"status": "cancelled"}


class Steps(Agent):
    """Runs three steps, then stops for the step limit."""

    async def prompt(self, turn: Turn) -> StopReason:
        for _ in range(2):
            await turn.say(f"step {turn.step}")
            await turn.new_step()
        return StopReason.MAX_STEPS


async def test_steps_are_numbered_and_counted(open_raw: OpenRaw) -> None:
    async with open_raw(agent=Steps()) as raw:
        for id in ("p1", "p2"):  # each turn counts from 1
            after = await raw.collect_call(id, "prompt", {"user_input": "go"})
            assert payloads(after, "StepBegin") == [{"n": 1}, {"n": 2}, {"n": 3}]
            assert after[-1]["result"] == {"status": "max_steps_reached", "steps": 3}
        replayed = await raw.collect_call("r", "replay")
        assert payloads(replayed, "StepBegin") == [{"n": 1}, {"n": 2}, {"n": 3}] * 2


async def test_a_subclass_handler_serves_its_method(workdir: Path, home: Path) -> None:
    """The method table of a server class binds that class's own handlers."""
    import functools

    import anyio

    from wireproto.adapters.wire import WireServer
    from wireproto.agent.demo import DemoAgent
    from wireproto.agent.runtime import Runtime
    from wireproto.testing import NdjsonProbe

    cancels: list[Any] = []

    class Counting(WireServer):
        async def _cancel(self, params: Any) -> Any:
            cancels.append(params)
            return await super()._cancel(params)

    probe = NdjsonProbe()
    server = Counting(Runtime(DemoAgent(), home / "sessions"), work_dir=str(workdir))
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(server.serve, probe.stream))
        await probe.write_json({"jsonrpc": "2.0", "id": "c", "method": "cancel"})
        reply = await probe.read_json()
        probe.write_eof()
    await probe.aclose()
    assert reply["error"]["code"] == -32000  # no turn to cancel: answered by WireServer._cancel
    assert cancels == [{}]  # (params absent: the route decodes {})


class HookOnPrompt(Agent):
    hook_events = ("PreToolUse",)

    async def prompt(self, turn: Turn) -> StopReason:
        allowed, _ = await turn.run_hook("PreToolUse", turn.text, {})
        await turn.say(f"allowed={allowed}")
        return StopReason.END_TURN


async def test_hook_matchers_are_searched_in_bounded_time(open_raw: OpenRaw) -> None:
    # (a client's matcher, searched in the agent's process, held every session of it)
    hooks = [{"id": "literal", "event": "PreToolUse", "matcher": "Bash"},
             {"id": "regex", "event": "PreToolUse", "matcher": "^(a|aa)+$"},
             {"id": "invalid", "event": "PreToolUse", "matcher": "("}]
    async with open_raw(agent=HookOnPrompt()) as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10", "hooks": hooks})
        after = await raw.collect_call("p1", "prompt", {"user_input": "a" * 60 + "!"})
        assert "request" not in kinds(after)  # too slow to tell: no hook runs (fail open)
        assert payloads(after, "ContentPart") == [{"type": "text", "text": "allowed=True"}]
        for n, (text, hook) in enumerate([("aaa", "regex"), ("run Bash", "literal")]):
            await raw.send(prompt(f"p{n + 2}", text))
            _, request = await raw.until_request()
            payload = request["params"]["payload"]
            assert (payload["subscription_id"], payload["target"]) == (hook, text)
            await raw.send(answer(request["id"], {"request_id": payload["id"],
                                                  "action": "block", "reason": "no"}))
            after = await raw.collect(f"p{n + 2}")
            assert payloads(after, "ContentPart") == [{"type": "text", "text": "allowed=False"}]


async def test_hook_matchers_that_cannot_be_searched_say_so_once(
    open_raw: OpenRaw, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # (a child that cannot start was logged twice, the second time as too slow)
    hooks = [{"id": "regex", "event": "PreToolUse", "matcher": "^x.*y$"}]
    monkeypatch.setattr("sys.executable", "")  # (no child can start)
    caplog.set_level(logging.WARNING)
    async with open_raw(agent=HookOnPrompt()) as raw:
        await raw.call("i", "initialize", {"protocol_version": "1.10", "hooks": hooks})
        target = f"x{uuid.uuid4()}y"  # (a pair never searched: not known already)
        after = await raw.collect_call("p1", "prompt", {"user_input": target})
        assert "request" not in kinds(after)  # no hook runs (fail open)
        assert payloads(after, "ContentPart") == [{"type": "text", "text": "allowed=True"}]
    said = [r.getMessage() for r in caplog.records if "hook matchers" in r.getMessage()]
    assert len(said) == 1, said
    assert "could not be searched (cannot start" in said[0] and "too long" not in said[0]
