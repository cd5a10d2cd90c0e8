"""WireClient: handshake fallback, events, request handlers; questions and hooks end to end."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pytest
from timeouts import units

from wireproto.adapters.wire import WireClient
from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.methods import ExternalTool, HookSubscription, PromptResult
from wireproto.agent.api import Agent, Question
from wireproto.agent.events import StopReason
from wireproto.agent.turn import Turn
from wireproto.errors import LocalProtocolError, RpcError
from wireproto.jsonrpc.codec import WIRE_DIALECT
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.transports.memory import memory_pair

from ..conftest import event, request, scripted

pytestmark = pytest.mark.anyio

OpenWire = Callable[..., AbstractAsyncContextManager[Any]]


# ------------------------------------------------------------------ handshake fallback


async def test_fallback_on_method_not_found(caplog: pytest.LogCaptureFixture) -> None:
    """A 0.79-era server: a real Wire peer that knows only prompt and cancel."""
    router = Router()
    ours, theirs = memory_pair()

    async def prompt(params: Any) -> Any:
        await old.notify("event", {"type": "ContentPart", "payload": {"type": "text",
                                                                       "text": "old"}})
        await old.notify("event", {"type": "ApprovalRequestResolved",
                                   "payload": {"request_id": "r", "response": "approve"}})
        return {"status": "finished"}

    router.add("prompt", prompt)
    async with Peer(theirs, router, dialect=WIRE_DIALECT) as old, WireClient(ours) as client:
        with caplog.at_level(logging.WARNING):
            assert await client.initialize() is None
        assert client.legacy and not client.initialized and client.protocol_version is None
        assert "falling back to v1 mode" in caplog.text
        assert "Unexpected method received: initialize" in caplog.text
        assert await client.prompt("hi") == PromptResult(status="finished")
        assert client.take_events() == [
            m.TextPart(text="old"),
            m.ApprovalResponse(request_id="r", response="approve"),  # legacy name decoded
        ]


async def test_fallback_when_initialize_is_never_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with scripted(initialize_timeout=0.2) as (client, probe):
        results: list[Any] = []

        async def init() -> None:
            results.append(await client.initialize())

        async with anyio.create_task_group() as tg:
            tg.start_soon(init)
            sent = await probe.read_json()  # read and ignored, like a pre-0.79 server
        assert sent["method"] == "initialize"
        assert isinstance(sent["id"], str)  # the reference rejects numeric ids
        assert sent["params"]["protocol_version"] == "1.10"
        assert results == [None] and client.legacy
        assert "no answer to initialize" in caplog.text
        # a late answer is dropped and prompts still work
        await probe.write_json({"jsonrpc": "2.0", "id": sent["id"], "result": {}})
        async with anyio.create_task_group() as tg:
            tg.start_soon(awaited, client.prompt("hello"))
            asked = await probe.read_json()
            assert asked["method"] == "prompt" and isinstance(asked["id"], str)
            assert asked["params"] == {"user_input": "hello"}
            await probe.write_json({"jsonrpc": "2.0", "id": asked["id"],
                                    "result": {"status": "finished"}})


async def test_other_initialize_errors_are_raised() -> None:
    async with scripted() as (client, probe):
        async with anyio.create_task_group() as tg:

            async def init() -> None:
                with pytest.raises(RpcError) as exc:
                    await client.initialize()
                assert exc.value.code == -32000

            tg.start_soon(init)
            sent = await probe.read_json()
            await probe.write_json({"jsonrpc": "2.0", "id": sent["id"], "error": {
                "code": -32000, "message": "An agent turn is already in progress", "data": None}})
        assert not client.legacy


async def test_initialize_params() -> None:
    async def tool(arguments: Any) -> str:
        return "x"

    async def question(request: m.QuestionRequest) -> dict[str, str]:
        return {}

    spec = ExternalTool(name="t", description="d", parameters={"type": "object"})
    hook = HookSubscription(id="h", event="Stop")
    async with scripted(external_tools={"t": (spec, tool)}, on_question=question,
                               hooks=[hook], supports_plan_mode=True) as (client, probe):
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.initialize)
            sent = await probe.read_json()
            await probe.write_json({"jsonrpc": "2.0", "id": sent["id"], "result": {
                "protocol_version": "1.7", "server": {"name": "S", "version": "1"},
                "slash_commands": [{"name": "clear", "description": "Clear", "aliases": ["r"]}],
                "external_tools": {"accepted": [], "rejected": [{"name": "t", "reason": "no"}]},
                "capabilities": {"supports_question": True}}})
        params = sent["params"]
        assert params["client"]["name"] == "wireproto"
        assert params["external_tools"] == [{"name": "t", "description": "d",
                                             "parameters": {"type": "object"}}]
        assert params["capabilities"] == {"supports_question": True, "supports_plan_mode": True}
        assert params["hooks"] == [{"id": "h", "event": "Stop", "matcher": "", "timeout": 30}]
        assert client.initialized and client.protocol_version == "1.7"
        assert [(c.name, c.aliases) for c in client.slash_commands] == [("clear", ["r"])]
        assert client.external_tools_result is not None
        assert client.external_tools_result.rejected[0].reason == "no"


# ------------------------------------------------------------------ events


async def test_events_are_typed_in_order_and_unknown_ones_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[Any] = []

    async def on_event(e: Any) -> None:
        seen.append(e)

    async with scripted(on_event=on_event) as (client, probe):
        await probe.write_json(event("StepBegin", {"n": 1}))
        await probe.write_json(event("FutureThing", {"x": 1}))
        await probe.write_json(event("StepBegin", {"n": "bad"}))  # invalid: dropped
        await probe.write_json(event("ContentPart", {"type": "think", "think": "hm"}))
        iterated = []
        async for e in client.events():
            iterated.append(e)
            if len(iterated) == 3:
                break
    assert iterated == seen == [
        m.StepBegin(n=1), m.UnknownEvent(type="FutureThing", payload={"x": 1}),
        m.ThinkPart(think="hm"),
    ]
    assert "invalid event dropped" in caplog.text


async def test_events_not_queued_with_zero_buffer() -> None:
    async with scripted(event_buffer=0) as (client, probe):
        await probe.write_json(event("StepBegin", {"n": 1}))
        assert client.take_events() == []
        with pytest.raises(LocalProtocolError, match="event_buffer"):
            client.events()


# ------------------------------------------------------------------ request handlers


DEFAULTS = [
    ("ApprovalRequest",
     {"id": "a1", "tool_call_id": "c", "sender": "s", "action": "a", "description": "d"},
     {"request_id": "a1", "response": "reject", "feedback": ""}),
    ("ToolCallRequest", {"id": "c1", "name": "nope", "arguments": "{}"},
     {"tool_call_id": "c1", "return_value": {
         "is_error": True, "output": "", "message": "Unknown external tool nope",
         "display": [{"type": "brief", "text": "External tool error"}], "extras": None}}),
    ("QuestionRequest", {"id": "q1", "tool_call_id": "c", "questions": [
        {"question": "Q?", "options": [{"label": "a"}, {"label": "b"}]}]},
     {"request_id": "q1", "answers": {}}),
    ("HookRequest", {"id": "h1", "event": "Stop"},
     {"request_id": "h1", "action": "allow", "reason": ""}),
]


@pytest.mark.parametrize(("type", "payload", "expected"), DEFAULTS)
async def test_default_answers(type: str, payload: Any, expected: Any) -> None:
    async with scripted() as (_client, probe):
        await probe.write_json(request(payload["id"], type, payload))
        assert await probe.read_json() == {"jsonrpc": "2.0", "id": payload["id"],
                                           "result": expected}


async def test_unknown_request_type_is_invalid_params() -> None:
    async with scripted() as (_client, probe):
        await probe.write_json(request("x", "Mystery", {}))
        reply = await probe.read_json()
        assert reply["error"]["code"] == -32602 and reply["error"]["data"]["path"] == "$.type"


async def test_handlers() -> None:
    async def approve(r: m.ApprovalRequest) -> m.ApprovalKind:
        return "approve_for_session"

    async def explain(r: m.ApprovalRequest) -> m.ApprovalResponse:
        return m.ApprovalResponse(request_id=r.id, response="reject", feedback="not now")

    async def add(arguments: Any) -> str:
        return str(arguments["a"] + arguments["b"])

    async def crash(arguments: Any) -> str:
        raise ValueError("kaput")

    spec = ExternalTool(name="add", description="", parameters={})
    tools = {"add": (spec, add), "crash": (spec, crash)}
    approval = {"tool_call_id": "c", "sender": "s", "action": "a", "description": "d"}
    async with scripted(on_approval=approve, external_tools=tools) as (client, probe):
        await probe.write_json(request("a", "ApprovalRequest", {"id": "a", **approval}))
        assert (await probe.read_json())["result"]["response"] == "approve_for_session"
        client.on_approval = explain
        await probe.write_json(request("b", "ApprovalRequest", {"id": "b", **approval}))
        assert (await probe.read_json())["result"]["feedback"] == "not now"
        await probe.write_json(request("c1", "ToolCallRequest",
                                       {"id": "c1", "name": "add", "arguments": '{"a":1,"b":2}'}))
        value = (await probe.read_json())["result"]["return_value"]
        assert (value["is_error"], value["output"], value["display"]) == (False, "3", [])
        await probe.write_json(request("c2", "ToolCallRequest",
                                       {"id": "c2", "name": "add", "arguments": "{oops"}))
        value = (await probe.read_json())["result"]["return_value"]
        assert value["is_error"] and value["message"].startswith("Invalid JSON arguments")
        await probe.write_json(request("c3", "ToolCallRequest",
                                       {"id": "c3", "name": "crash", "arguments": None}))
        value = (await probe.read_json())["result"]["return_value"]
        assert value["is_error"] and value["message"] == "crash failed: kaput"


async def test_server_resolution_dismisses_a_pending_handler() -> None:
    cancelled = anyio.Event()
    started = anyio.Event()

    async def wait_forever(r: m.ApprovalRequest) -> m.ApprovalKind:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    payload = {"id": "a", "tool_call_id": "c", "sender": "s", "action": "a", "description": "d"}
    async with scripted(on_approval=wait_forever) as (_client, probe):
        await probe.write_json(request("a", "ApprovalRequest", payload))
        await started.wait()
        await probe.write_json(event("ApprovalResponse", {
            "request_id": "a", "response": "reject", "feedback": "cancelled"}))
        assert await probe.read_json() == {"jsonrpc": "2.0", "id": "a", "result": {
            "request_id": "a", "response": "reject", "feedback": ""}}
        assert cancelled.is_set()


# ------------------------------------------------------------------ questions and hooks


class Asking(Agent):
    hook_events = ("PreToolUse", "Stop")

    async def prompt(self, turn: Turn) -> StopReason:
        if turn.text.startswith("ask"):
            multi = turn.text == "ask many"
            labels = await turn.ask(
                Question("Which runner?", ("pytest", "unittest"), header="Runner",
                         multi_select=multi)
            )
            await turn.say(f"chose {labels}")
        else:
            allowed, reason = await turn.run_hook("PreToolUse", turn.text, {"command": "ls"})
            await turn.say(f"{allowed} {reason}".strip())
        return StopReason.END_TURN


async def test_questions(open_wire: OpenWire) -> None:
    asked: list[m.QuestionRequest] = []

    async def answer(r: m.QuestionRequest) -> dict[str, str]:
        asked.append(r)
        return {"Which runner?": "pytest, unittest" if r.questions[0].multi_select else "pytest"}

    async with open_wire(agent=Asking()) as served:  # no on_question: not supported
        await served.client.prompt("ask")
        assert "".join(e.text for e in served.client.take_events()
                       if isinstance(e, m.TextPart)) == "chose []"
    async with open_wire(agent=Asking(), on_question=answer) as served:
        client = served.client
        await client.prompt("ask")
        await client.prompt("ask many")
        text = "".join(e.text for e in client.take_events() if isinstance(e, m.TextPart))
        assert text == "chose ['pytest']chose ['pytest', 'unittest']"
        (item,) = asked[0].questions
        assert (item.question, item.header) == ("Which runner?", "Runner")
        assert [o.label for o in item.options] == ["pytest", "unittest"]


async def test_hooks(open_wire: OpenWire) -> None:
    decisions: list[m.HookRequest] = []

    async def decide(r: m.HookRequest) -> m.HookResponse:
        decisions.append(r)
        return m.HookResponse(request_id=r.id, action="block", reason="no shells")

    hooks = [
        HookSubscription(id="h1", event="PreToolUse", matcher="^Sh"),
        HookSubscription(id="h2", event="Compaction"),  # unsupported: ignored
    ]
    async with open_wire(agent=Asking(), hooks=hooks, on_hook=decide) as served:
        client = served.client
        assert client.hooks_info is not None
        assert client.hooks_info.supported_events == ["PreToolUse", "Stop"]
        assert client.hooks_info.configured == {"PreToolUse": 1}
        await client.prompt("Shell")
        events = client.take_events()
        assert "".join(e.text for e in events if isinstance(e, m.TextPart)) == "False no shells"
        (hook,) = decisions
        assert (hook.subscription_id, hook.target, hook.input_data) == (
            "h1", "Shell", {"command": "ls"})
        assert [e for e in events if isinstance(e, m.HookTriggered)] == [
            m.HookTriggered(event="PreToolUse", target="Shell", hook_count=1)]
        resolved = [e for e in events if isinstance(e, m.HookResolved)]
        assert [(r.action, r.reason) for r in resolved] == [("block", "no shells")]
        await client.prompt("Read")  # matcher does not match: no request, allowed
        assert len(decisions) == 1
        assert "True" in "".join(
            e.text for e in client.take_events() if isinstance(e, m.TextPart))


async def test_hook_timeout_fails_open(open_wire: OpenWire) -> None:
    async def hang(r: m.HookRequest) -> m.HookAction:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    hooks = [HookSubscription(id="h", event="PreToolUse", timeout=0)]
    async with open_wire(agent=Asking(), hooks=hooks, on_hook=hang) as served:
        await served.client.prompt("Shell")
        events = served.client.take_events()
        assert "".join(e.text for e in events if isinstance(e, m.TextPart)) == "True"


async def test_hooks_of_one_event_are_asked_at_once(open_wire: OpenWire) -> None:
    received: list[str] = []
    late: list[str] = []
    both = anyio.Event()

    async def decide(r: m.HookRequest) -> m.HookResponse:
        received.append(r.subscription_id)
        if len(received) == 2:
            both.set()
        try:
            with anyio.fail_after(units(1)):  # asked one after the other, the first waits in vain
                await both.wait()
        except TimeoutError:
            late.append(r.subscription_id)
            raise
        action: m.HookAction = "block" if r.subscription_id == "h2" else "allow"
        return m.HookResponse(request_id=r.id, action=action, reason=r.subscription_id)

    hooks = [HookSubscription(id=f"h{n}", event="PreToolUse") for n in (1, 2, 3)]
    async with open_wire(agent=Asking(), hooks=hooks, on_hook=decide) as served:
        await served.client.prompt("Shell")
        events = served.client.take_events()
        assert sorted(received) == ["h1", "h2", "h3"] and late == []
        assert "".join(e.text for e in events if isinstance(e, m.TextPart)) == "False h2"
        assert [e for e in events if isinstance(e, m.HookTriggered)] == [
            m.HookTriggered(event="PreToolUse", target="Shell", hook_count=3)]


async def awaited(turn: Any) -> None:
    """Run an awaitable prompt turn to its end (for ``start_soon``)."""
    await turn
