"""Neutral <-> Wire translation tables (no event loop needed)."""

from __future__ import annotations

import typing

import msgspec
import pytest

from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.display import (
    BriefDisplayBlock,
    DiffDisplayBlock,
    DisplayBlock,
    TodoDisplayBlock,
    TodoDisplayItem,
)
from wireproto.adapters.wire.methods import PromptResult
from wireproto.adapters.wire.translate import (
    _EVENT_RULES,
    DECISION_TO_WIRE,
    STOP_REASON_STATUS,
    WIRE_TO_DECISION,
    Translator,
    approval_request,
    blocks_to_user_input,
    prompt_result,
    user_input_to_blocks,
)
from wireproto.agent.api import ApprovalRequest, Decision
from wireproto.agent.content import (
    Audio,
    ContentBlock,
    Diff,
    Image,
    ResourceBlob,
    ResourceLink,
    ResourceText,
    Text,
    Video,
)
from wireproto.agent.events import (
    AgentMessageChunk,
    ApprovalResolved,
    Event,
    HistoryCleared,
    Notice,
    OptionChanged,
    PlanEntry,
    PlanModeChanged,
    PlanUpdated,
    SteerReceived,
    StepStarted,
    StopReason,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
    TurnEnded,
    UsageUpdated,
    UserMessage,
)


def test_every_neutral_event_has_a_rule() -> None:
    assert set(typing.get_args(Event)) == set(_EVENT_RULES)


def test_every_stop_reason_and_decision_is_mapped() -> None:
    assert set(STOP_REASON_STATUS) == set(StopReason)
    assert set(DECISION_TO_WIRE) == {d.value for d in Decision}
    assert set(WIRE_TO_DECISION) == set(typing.get_args(m.ApprovalKind))
    assert prompt_result(StopReason.END_TURN) == PromptResult(status="finished")
    assert prompt_result(StopReason.REFUSAL) == PromptResult(status="finished")
    assert prompt_result(StopReason.MAX_TOKENS) == PromptResult(status="finished")
    assert prompt_result(StopReason.CANCELLED) == PromptResult(status="cancelled")
    assert prompt_result(StopReason.MAX_STEPS, 3) == PromptResult(
        status="max_steps_reached", steps=3
    )


def test_user_input_round_trip() -> None:
    parts: list[m.ContentPart] = [
        m.TextPart(text="look"),
        m.ImageURLPart(image_url=m.MediaURL(url="data:image/png;base64,AA==")),
        m.AudioURLPart(audio_url=m.MediaURL(url="https://a/b.aac")),
        m.VideoURLPart(video_url=m.MediaURL(url="https://v")),
    ]
    blocks = user_input_to_blocks(parts)
    assert blocks == [
        Text("look"), Image(url="data:image/png;base64,AA=="), Audio(url="https://a/b.aac"),
        Video(url="https://v"),
    ]
    assert blocks_to_user_input(blocks) == parts
    assert user_input_to_blocks("hi") == [Text("hi")]
    assert blocks_to_user_input([Text("hi")]) == "hi"
    assert user_input_to_blocks([m.ThinkPart(think="t")]) == [Text("t")]


def test_blocks_without_a_wire_form() -> None:
    blocks: list[ContentBlock] = [
        Image(mime_type="image/png", data="AA=="),
        ResourceText(uri="file:///a&b", text="body"),
        ResourceLink(uri="file:///x", name='"n"'),
        ResourceBlob(uri="file:///bin", blob="AA=="),
    ]
    assert blocks_to_user_input(blocks) == [
        m.ImageURLPart(image_url=m.MediaURL(url="data:image/png;base64,AA==")),
        m.TextPart(text='<resource uri="file:///a&amp;b">body</resource>'),
        m.TextPart(text='<resource_link uri="file:///x" name="&quot;n&quot;"/>'),
    ]


def test_chunks_usage_steer_plan_mode_and_silent_events() -> None:
    tr = Translator()
    assert tr.translate(AgentMessageChunk("Hi", "m1")) == [m.TextPart(text="Hi")]
    assert tr.translate(ThoughtChunk("hm", "t1")) == [m.ThinkPart(think="hm")]
    assert tr.translate(UsageUpdated(used=50, size=200, input_tokens=7, output_tokens=3)) == [
        m.StatusUpdate(context_usage=0.25, context_tokens=50, max_context_tokens=200,
                       token_usage=m.TokenUsage(input_other=7, output=3))
    ]
    assert tr.translate(UsageUpdated(used=5)) == [m.StatusUpdate(context_tokens=5)]
    assert tr.translate(UsageUpdated(cache_read_tokens=4, cache_write_tokens=2)) == [
        m.StatusUpdate(token_usage=m.TokenUsage(input_other=0, output=0, input_cache_read=4,
                                                input_cache_creation=2))
    ]
    assert tr.translate(SteerReceived([Text("more")])) == [m.SteerInput(user_input="more")]
    assert tr.translate(PlanModeChanged(True)) == [m.StatusUpdate(plan_mode=True)]
    assert tr.translate(OptionChanged("model", "x")) == []
    assert tr.translate(HistoryCleared()) == []
    (note,) = tr.translate(Notice("warning", "Heads up", "details"))
    assert isinstance(note, m.Notification)
    assert (note.title, note.body, note.severity) == ("Heads up", "details", "warning")


def test_turn_brackets_only_on_replay() -> None:
    live, replay = Translator(), Translator(replay=True)
    user = UserMessage([Text("go")], "u1")
    assert live.translate(user) == []
    assert live.translate(TurnEnded(StopReason.END_TURN)) == []
    assert replay.translate(user) == [m.TurnBegin(user_input="go"), m.StepBegin(n=1)]
    assert replay.translate(TurnEnded(StopReason.END_TURN)) == [m.TurnEnd()]
    replay.translate(user)
    assert replay.translate(TurnEnded(StopReason.CANCELLED)) == [
        m.StepInterrupted(), m.TurnEnd()
    ]


def test_replay_leaves_out_the_end_of_a_turn_cut_by_a_clear() -> None:
    # /clear: the history after the clear starts inside the /clear turn
    replay = Translator(replay=True)
    assert replay.translate(AgentMessageChunk("History cleared", "m1")) == [
        m.TextPart(text="History cleared")
    ]
    assert replay.translate(TurnEnded(StopReason.END_TURN)) == []
    assert replay.translate(UserMessage([Text("next")], "u2"))[0] == m.TurnBegin(
        user_input="next")
    assert replay.translate(TurnEnded(StopReason.END_TURN)) == [m.TurnEnd()]


def test_later_steps_are_numbered_and_counted() -> None:
    for tr in (Translator(), Translator(replay=True)):
        assert tr.steps == 1
        assert tr.translate(StepStarted(2)) == [m.StepBegin(n=2)]
        assert tr.translate(StepStarted(3)) == [m.StepBegin(n=3)]
        assert tr.steps == 3
        tr.reset()
        assert tr.steps == 1
    assert prompt_result(StopReason.MAX_STEPS, 3) == PromptResult(
        status="max_steps_reached", steps=3)


def test_tool_call_lifecycle_with_a_diff() -> None:
    tr = Translator()
    started = tr.translate(
        ToolCallStarted(id="c1", name="write", title="Write", raw_input={"path": "a"})
    )
    assert started == [
        m.ToolCall(id="c1", function=m.FunctionBody(name="write", arguments='{"path":"a"}'))
    ]
    assert tr.translate(ToolCallUpdated(id="c1", status=ToolStatus.IN_PROGRESS)) == []
    diff = Diff(path="/w/a", new_text="new")  # a new file: old_text None
    (result,) = tr.translate(
        ToolCallUpdated(id="c1", status=ToolStatus.COMPLETED, content=[diff], message="ok")
    )
    assert result == m.ToolResult(tool_call_id="c1", return_value=m.ToolReturnValue(
        is_error=False, output="", message="ok",
        display=[DiffDisplayBlock(path="/w/a", old_text="", new_text="new"),
                 BriefDisplayBlock(text="ok")],
    ))
    encoded = msgspec.json.decode(msgspec.json.encode(result))
    assert encoded["return_value"]["display"][0]["old_text"] == ""  # never null


def test_failed_tool_and_no_raw_input() -> None:
    tr = Translator()
    (call,) = tr.translate(ToolCallStarted(id="c", name="read", title="Read"))
    assert isinstance(call, m.ToolCall) and call.function.arguments is None
    tr.translate(ToolCallUpdated(id="c", content=[Text("partial")]))
    (result,) = tr.translate(ToolCallUpdated(id="c", status=ToolStatus.FAILED, message="nope"))
    assert isinstance(result, m.ToolResult)
    value = result.return_value
    assert (value.is_error, value.output, value.message) == (True, "partial", "nope")
    assert value.display == [BriefDisplayBlock(text="nope")]


def test_ids_are_unique_while_in_use() -> None:
    pending = {"call_0~2"}
    tr = Translator(reserved=pending.__contains__)
    ids = []
    for name in ("a", "b", "c"):
        (call,) = tr.translate(ToolCallStarted(id="call_0", name=name, title=name))
        assert isinstance(call, m.ToolCall)
        ids.append(call.id)
    assert ids == ["call_0", "call_0~3", "call_0~4"]
    assert tr.wire_id("call_0") == "call_0~4"
    assert tr.wire_id("unknown") == "unknown"


def test_visible_resolutions_are_not_repeated() -> None:
    tr = Translator()
    tr.translate(ToolCallStarted(id="c", name="ext", title="ext", external=True))
    tr.resolved(tool_call="c", approval="r1")
    assert tr.translate(ToolCallUpdated(id="c", status=ToolStatus.FAILED)) == []
    assert tr.translate(ApprovalResolved("r1", "c", "reject")) == []
    assert tr.translate(ApprovalResolved("r2", "c", "allow_session", "ok")) == [
        m.ApprovalResponse(request_id="r2", response="approve_for_session", feedback="ok")
    ]


def test_approval_ids_in_use_are_replaced() -> None:
    pending = {"r1"}
    tr = Translator(reserved=pending.__contains__)
    assert tr.approval_id("r0") == "r0"
    fresh = tr.approval_id("r1")
    assert fresh != "r1" and len(fresh) == 36  # a UUID
    assert tr.translate(ApprovalResolved("r1", "c", "allow_once")) == [
        m.ApprovalResponse(request_id=fresh, response="approve")
    ]
    tr.resolved(approval=tr.approval_id("r1"))  # resolved visibly: its own event is dropped
    assert tr.translate(ApprovalResolved("r1", "c", "reject")) == []


def test_client_result_is_emitted_verbatim() -> None:
    tr = Translator()
    tr.translate(ToolCallStarted(id="c", name="ext", title="ext", external=True))
    value = m.ToolReturnValue.ok("out", brief="Shown")
    tr.client_result("c", value)
    (result,) = tr.translate(
        ToolCallUpdated(id="c", status=ToolStatus.COMPLETED, content=[Text("out")])
    )
    assert result == m.ToolResult(tool_call_id="c", return_value=value)


def test_plan_becomes_a_todo_tool_call() -> None:
    tr = Translator()
    call, result = tr.translate(PlanUpdated([
        PlanEntry("one", "completed"), PlanEntry("two", "in_progress"), PlanEntry("three"),
    ]))
    assert isinstance(call, m.ToolCall) and isinstance(result, m.ToolResult)
    assert call.function.name == "SetTodoList" and result.tool_call_id == call.id
    assert result.return_value.display == [TodoDisplayBlock(items=[
        TodoDisplayItem(title="one", status="done"),
        TodoDisplayItem(title="two", status="in_progress"),
        TodoDisplayItem(title="three", status="pending"),
    ])]
    (again, _) = tr.translate(PlanUpdated([]))
    assert isinstance(again, m.ToolCall) and again.id != call.id


@pytest.mark.parametrize("old", [None, "before"])
def test_approval_request(old: str | None) -> None:
    request = ApprovalRequest(
        id="r", tool_call_id="c", tool="write", action="write file", description="Write a",
        display=(Text("careful"), Diff(path="/a", new_text="x", old_text=old)),
    )
    wire = approval_request(request, "r", "c~2")
    assert (wire.id, wire.tool_call_id, wire.sender) == ("r", "c~2", "write")
    assert wire.source_kind == "foreground_turn"
    expected: list[DisplayBlock] = [
        BriefDisplayBlock(text="careful"),
        DiffDisplayBlock(path="/a", old_text=old or "", new_text="x"),
    ]
    assert wire.display == expected
