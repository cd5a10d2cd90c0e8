"""The neutral <-> ACP translation tables, without a connection (no event loop).

Every produced value is checked against the official schema.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest
from msgspec import UNSET

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp import translate as T
from wireproto.adapters.acp.validation import schema_errors
from wireproto.agent.api import (
    AgentInfo,
    BooleanOption,
    Choice,
    ClientCapabilities,
    SelectOption,
    Session,
    SessionInfo,
    SlashCommand,
)
from wireproto.agent.content import (
    Audio,
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
    HistoryCleared,
    Location,
    Notice,
    OptionChanged,
    PlanEntry,
    PlanModeChanged,
    PlanUpdated,
    SteerReceived,
    StopReason,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolKind,
    ToolStatus,
    TurnEnded,
    UsageUpdated,
    UserMessage,
)

OPTIONS = (
    SelectOption("mode", "Mode", (Choice("ask", "Ask"), Choice("code", "Code")), "ask",
                 category="mode"),
    BooleanOption("thinking", "Thinking", category="thought_level", description="Think more"),
)
PLAIN = T.Context(ClientCapabilities(), OPTIONS)
RICH = T.Context(ClientCapabilities(notices=True, boolean_options=True), OPTIONS)


def valid_updates(updates: list[Any]) -> list[Any]:
    for update in updates:
        assert schema_errors("SessionUpdate", update) == [], update
    return [msgspec.to_builtins(u) for u in updates]


def session() -> Session:
    return Session("sess_1", "/p", options={"mode": "ask", "thinking": False})


def test_chunks_keep_their_message_ids() -> None:
    out = valid_updates(
        T.updates(AgentMessageChunk("hi", "msg_1"), session(), PLAIN)
        + T.updates(ThoughtChunk("hmm", "th_1"), session(), PLAIN)
    )
    assert out == [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"},
         "messageId": "msg_1"},
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"},
         "messageId": "th_1"},
    ]


def test_user_messages_only_in_replay() -> None:
    event = UserMessage([Text("a"), Image("image/png", "AAAA"), ResourceText("u", "t")], "user_1")
    assert T.updates(event, session(), PLAIN) == []
    out = valid_updates(T.updates(event, session(), PLAIN, replay=True))
    assert [u["messageId"] for u in out] == ["user_1"] * 3
    assert [u["content"]["type"] for u in out] == ["text", "image", "resource"]


@pytest.mark.parametrize(
    "block",
    [Text("x"), Image("image/png", "AA", "https://i"), Image(url="https://i/only"),
     Audio("audio/wav", "AA"), Audio(url="https://a"), Video("https://v", "video/mp4"),
     ResourceText("file:///a", "t", "text/plain"), ResourceBlob("file:///b", "AA"),
     ResourceLink("file:///c", "c", "text/plain", "C", "see c", 3)],
)
def test_every_neutral_block_has_a_valid_acp_form(block: Any) -> None:
    assert schema_errors("ContentBlock", T.block_out(block)) == []


def test_prompt_blocks_round_trip() -> None:
    blocks = [Text("x"), Image("image/png", "AA"), Audio("audio/wav", "AA"),
              ResourceText("file:///a", "t", "text/plain"), ResourceBlob("file:///b", "AA"),
              ResourceLink("file:///c", "c", size=3)]
    assert T.prompt_in([T.block_out(b) for b in blocks]) == blocks


def test_tool_calls() -> None:
    started = ToolCallStarted("c1", "read", "Read a", ToolKind.READ, ToolStatus.IN_PROGRESS,
                              [Location("/p/a", 3)], {"path": "a"})
    done = ToolCallUpdated("c1", ToolStatus.COMPLETED, content=[Text("x"), Diff("/p/a", "n")])
    failed = ToolCallUpdated("c1", ToolStatus.FAILED, title="Oops", raw_output={"e": 1})
    events = (started, done, failed)
    out = valid_updates([u for e in events for u in T.updates(e, session(), PLAIN)])
    assert out[0] == {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a",
                      "name": "read", "kind": "read", "status": "in_progress",
                      "locations": [{"path": "/p/a", "line": 3}], "rawInput": {"path": "a"}}
    assert out[1] == {"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                      "status": "completed",
                      "content": [{"type": "content", "content": {"type": "text", "text": "x"}},
                                  {"type": "diff", "path": "/p/a", "oldText": None,
                                   "newText": "n"}]}
    assert out[2] == {"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                      "status": "failed", "title": "Oops", "rawOutput": {"e": 1}}
    # A failure's message is its content when it has none (ACP has no message field;
    # call_tool failed with the reason only in the message, and the client saw none)
    told = ToolCallUpdated("c1", ToolStatus.FAILED, content=[], message="Tool x is not available")
    shown = ToolCallUpdated("c1", ToolStatus.FAILED, content=[Text("own")], message="why")
    out = valid_updates([u for e in (told, shown) for u in T.updates(e, session(), PLAIN)])
    assert [u["content"] for u in out] == [
        [{"type": "content", "content": {"type": "text", "text": "Tool x is not available"}}],
        [{"type": "content", "content": {"type": "text", "text": "own"}}]]


def test_plan_entries_translate_and_unknown_values_are_refused() -> None:
    event = PlanUpdated([PlanEntry("a", "in_progress", "high"), PlanEntry("b")])
    out = valid_updates(T.updates(event, session(), PLAIN))
    assert out[0]["entries"] == [
        {"content": "a", "priority": "high", "status": "in_progress"},
        {"content": "b", "priority": "medium", "status": "pending"},
    ]
    with pytest.raises(ValueError, match=r"PlanEntry\.status must be one of pending, "
                                         r"in_progress, completed; got 'done'"):
        PlanEntry("c", "done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"PlanEntry\.priority must be one of high, medium, low"):
        PlanEntry("c", priority="urgent")  # type: ignore[arg-type]


def test_usage_needs_used_and_size() -> None:
    assert T.updates(UsageUpdated(input_tokens=5), session(), PLAIN) == []
    out = valid_updates(T.updates(UsageUpdated(used=5, size=10, cost=0.5, currency="USD"),
                                  session(), PLAIN))
    assert out == [{"sessionUpdate": "usage_update", "used": 5, "size": 10,
                    "cost": {"amount": 0.5, "currency": "USD"}}]


def test_notices_are_gated_and_never_replayed() -> None:
    notice = Notice("warning", "Careful", "details")
    assert T.updates(notice, session(), PLAIN) == []
    assert T.updates(notice, session(), RICH, replay=True) == []
    out = valid_updates(T.updates(notice, session(), RICH))
    assert out == [{"sessionUpdate": "notice", "severity": "warning", "title": "Careful",
                    "description": "details"}]


@pytest.mark.parametrize(
    "event",
    [ApprovalResolved("r", "c", "allow_once"), PlanModeChanged(True), HistoryCleared(),
     SteerReceived([Text("more")])],
)
def test_events_without_an_acp_variant(event: Any) -> None:
    assert T.updates(event, session(), RICH) == []
    assert T.updates(event, session(), RICH, replay=True) == []


def test_a_live_turn_end_announces_title_and_activity() -> None:
    sess = session()
    sess.updated_at = datetime(2026, 1, 2, 4, 4, 5, 123456, tzinfo=timezone(timedelta(hours=1)))
    end = TurnEnded(StopReason.END_TURN)
    untitled = valid_updates(T.updates(end, sess, PLAIN))
    sess.title = "Fix the parser"
    titled = valid_updates(T.updates(end, sess, PLAIN))
    assert untitled == [{"sessionUpdate": "session_info_update",
                         "updatedAt": "2026-01-02T03:04:05.123456Z"}]
    assert titled == [{**untitled[0], "title": "Fix the parser"}]
    assert T.updates(end, sess, PLAIN, replay=True) == []


@pytest.mark.parametrize(("moment", "text"), [
    (datetime(2026, 1, 2, 4, 4, 5, 7, tzinfo=timezone(timedelta(hours=1))),
     "2026-01-02T03:04:05.000007Z"),
    (datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), "2026-01-02T03:04:05.000000Z"),
    (datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
     "2026-12-31T23:59:59.999999Z"),
])
def test_iso_time_always_has_microseconds_in_utc(moment: datetime, text: str) -> None:
    assert T.iso_time(moment) == text


def test_an_agent_option_change_announces_the_full_set() -> None:
    out = valid_updates(T.updates(OptionChanged("mode", "code"), session(), PLAIN))
    assert out[0] == {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    assert out[1]["sessionUpdate"] == "config_option_update"
    assert [o["currentValue"] for o in out[1]["configOptions"]] == ["code", "off"]
    thinking = valid_updates(T.updates(OptionChanged("thinking", True), session(), RICH))
    assert len(thinking) == 1
    assert thinking[0]["configOptions"][1] == {
        "id": "thinking", "name": "Thinking", "description": "Think more",
        "category": "thought_level", "type": "boolean", "currentValue": True,
    }
    assert T.updates(OptionChanged("mode", "code"), session(), PLAIN, replay=True) == []


def test_modes_need_a_mode_option() -> None:
    assert T.modes(OPTIONS[1:], {}) is None
    state = T.modes(OPTIONS, {"mode": "code"})
    assert state is not None
    assert schema_errors("SessionModeState", state) == []
    assert state.current_mode_id == "code"


def test_client_capabilities() -> None:
    caps = S.ClientCapabilities(
        fs=S.FileSystemCapabilities(read_text_file=True), terminal=True,
        session=S.ClientSessionCapabilities(
            notices=S.NoticeCapabilities(),
            config_options=S.SessionConfigOptionsCapabilities(
                boolean=S.BooleanConfigOptionCapabilities()),
        ),
    )
    neutral = T.client_capabilities(caps, S.Implementation(name="zed", version="1"))
    assert (neutral.name, neutral.read_text_file, neutral.write_text_file) == ("zed", True, False)
    assert (neutral.notices, neutral.boolean_options, neutral.terminal) == (True, True, False)
    assert neutral.external_tools_supported is False
    bare = T.client_capabilities(S.ClientCapabilities(), None)
    assert (bare.notices, bare.boolean_options, bare.name) == (False, False, None)


def test_descriptive_tables() -> None:
    assert schema_errors("Implementation", T.agent_info(AgentInfo("a", "1"))) == []
    commands = T.available_commands([SlashCommand("x", "does x", input_hint="ARG"),
                                     SlashCommand("y", "does y")])
    assert schema_errors("SessionUpdate", commands) == []
    assert commands.available_commands[1].input is UNSET
    info = T.session_info(SessionInfo("s", "/p", None, "2026-01-01T00:00:00.000001Z", ("/q",)))
    assert msgspec.to_builtins(info) == {"sessionId": "s", "cwd": "/p",
                                         "additionalDirectories": ["/q"],
                                         "updatedAt": "2026-01-01T00:00:00.000001Z"}
    assert set(T.STOP_REASONS) == set(StopReason)
    assert T.STOP_REASONS[StopReason.MAX_STEPS] == "max_turn_requests"
    assert {o.option_id for o in T.PERMISSION_OPTIONS} == set(T.DECISION_OF_OPTION)
