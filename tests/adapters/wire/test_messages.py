"""Wire messages: golden round trips, legacy/unknown input, validation paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from wireproto.adapters.wire import display, messages, methods
from wireproto.adapters.wire.display import (
    BriefDisplayBlock,
    DiffDisplayBlock,
    DisplayBlock,
    ShellDisplayBlock,
    UnknownDisplayBlock,
)
from wireproto.adapters.wire.envelope import (
    EVENT_TYPES,
    REQUEST_TYPES,
    decode_event,
    decode_request,
    decode_response,
    decode_value,
    encode_event,
    encode_request,
)
from wireproto.adapters.wire.messages import (
    EVENT_CLASSES,
    REQUEST_CLASSES,
    ApprovalRequest,
    ApprovalResponse,
    ImageURLPart,
    MediaURL,
    StepBegin,
    SubagentEvent,
    TextPart,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    ToolReturnValue,
    TurnBegin,
    UnknownEvent,
    WireEnvelope,
)
from wireproto.adapters.wire.methods import (
    INITIALIZE,
    METHODS,
    PROMPT,
    SET_PLAN_MODE,
    InitializeResult,
    PromptResult,
    ServerInfo,
    WireErrorCode,
)
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError

GOLDEN = Path(__file__).parent / "golden"
MODULES = (display, messages, methods)
DECODE_ONLY = {"UnknownEvent", "UnknownDisplayBlock"}  # covered by the decode-only tests

ENCODER = msgspec.json.Encoder()


def _structs() -> dict[str, type[msgspec.Struct]]:
    found: dict[str, type[msgspec.Struct]] = {}
    for mod in MODULES:
        for name, obj in vars(mod).items():
            if (
                isinstance(obj, type)
                and issubclass(obj, msgspec.Struct)
                and obj.__module__ == mod.__name__
                and not name.startswith("_")
            ):
                found[name] = obj
    found["ExternalTool"] = methods.ExternalTool  # the agent API's own type, used on the wire
    return found


STRUCTS = _structs()


def _golden(name: str) -> bytes:
    data = (GOLDEN / f"{name}.json").read_bytes()
    assert data.endswith(b"\n") and not data.endswith(b"\n\n")
    return data[:-1]  # the files end with one newline; the JSON itself is compact


# --------------------------------------------------------------------------- golden files


def test_every_struct_has_a_golden_file() -> None:
    assert len(STRUCTS) > 60
    missing = sorted(
        n for n in STRUCTS if n not in DECODE_ONLY and not (GOLDEN / f"{n}.json").exists()
    )
    assert missing == []


def test_every_golden_file_names_a_struct() -> None:
    stray = sorted(p.stem for p in GOLDEN.glob("*.json") if p.stem not in STRUCTS)
    assert stray == []


def _round_trip(cls: type[msgspec.Struct], data: bytes) -> tuple[Any, bytes]:
    if cls in EVENT_CLASSES:
        event = decode_event(data)
        assert decode_event(json.loads(data)) == event  # builtins path agrees
        return event, ENCODER.encode(encode_event(event))
    if cls in REQUEST_CLASSES:
        request = decode_request(data)
        assert decode_request(json.loads(data)) == request
        return request, ENCODER.encode(encode_request(request))
    value = decode_value(cls, data)
    assert decode_value(cls, json.loads(data)) == value
    return value, ENCODER.encode(value)


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.json")))
def test_golden_round_trips_byte_for_byte(name: str) -> None:
    cls = STRUCTS[name]
    data = _golden(name)
    value, out = _round_trip(cls, data)
    assert type(value) is cls
    assert out == data
    # Every field is emitted (nulls included): the golden object has them all.
    obj = json.loads(data)
    payload = obj["payload"] if cls in EVENT_CLASSES or cls in REQUEST_CLASSES else obj
    assert set(cls.__struct_encode_fields__) <= set(payload)


def test_envelope_tags_are_the_spec_names() -> None:
    spec_events = {
        "TurnBegin", "SteerInput", "TurnEnd", "StepBegin", "StepInterrupted", "StepRetry",
        "CompactionBegin", "CompactionEnd", "MCPLoadingBegin", "MCPLoadingEnd", "StatusUpdate",
        "Notification", "ContentPart", "ToolCall", "ToolCallPart", "ToolResult",
        "ApprovalResponse", "SubagentEvent", "PlanDisplay", "HookTriggered", "HookResolved",
        "BtwBegin", "BtwEnd",
    }  # fmt: skip
    assert set(EVENT_TYPES) == spec_events
    assert set(REQUEST_TYPES) == {
        "ApprovalRequest",
        "ToolCallRequest",
        "QuestionRequest",
        "HookRequest",
    }
    for cls in EVENT_CLASSES:
        part = cls.__struct_config__.tag_field == "type"
        assert cls.WIRE_TYPE == ("ContentPart" if part else cls.__name__)


# --------------------------------------------------------------------------- encoding details


def test_content_part_event_uses_content_part_tag() -> None:
    env = encode_event(TextPart(text="Hel"))
    assert ENCODER.encode(env) == b'{"type":"ContentPart","payload":{"type":"text","text":"Hel"}}'


def test_nulls_are_emitted_and_absent_fields_decode_as_defaults() -> None:
    call = decode_event({"type": "ToolCall", "payload": {"id": "c", "function": {"name": "f"}}})
    assert call == ToolCall(id="c", function=messages.FunctionBody(name="f"))
    assert ENCODER.encode(encode_event(call)) == (
        b'{"type":"ToolCall","payload":{"type":"function","id":"c",'
        b'"function":{"name":"f","arguments":null},"extras":null}}'
    )


def test_media_part_gains_null_id_when_echoed() -> None:
    begin = decode_event(
        {
            "type": "TurnBegin",
            "payload": {"user_input": [{"type": "image_url", "image_url": {"url": "u"}}]},
        }
    )
    assert begin == TurnBegin(user_input=[ImageURLPart(image_url=MediaURL(url="u"))])
    assert b'"image_url":{"url":"u","id":null}' in ENCODER.encode(encode_event(begin))


def test_new_file_diff_carries_empty_old_text() -> None:
    block = DiffDisplayBlock(path="a.py", new_text="x\n")
    assert ENCODER.encode(block) == (
        b'{"type":"diff","path":"a.py","old_text":"","new_text":"x\\n",'
        b'"old_start":1,"new_start":1,"is_summary":false}'
    )


def test_tool_return_value_helpers_always_carry_display() -> None:
    assert ToolReturnValue.ok("done").display == []
    err = ToolReturnValue.error("boom", brief="Turn ended")
    assert err.is_error and err.display == [BriefDisplayBlock(text="Turn ended")]
    assert b'"display":[]' in ENCODER.encode(ToolReturnValue.ok("x"))


def test_optional_result_members_are_left_out_as_in_the_reference() -> None:
    assert ENCODER.encode(PromptResult(status="finished")) == b'{"status":"finished"}'
    init = InitializeResult(protocol_version="1.1", server=ServerInfo(name="n", version="v"))
    assert ENCODER.encode(init) == (
        b'{"protocol_version":"1.1","server":{"name":"n","version":"v"},"slash_commands":[],'
        b'"hooks":{"supported_events":[],"configured":{}},"capabilities":{"supports_question":false}}'
    )


def test_encoding_the_wrong_kind_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        encode_event(ToolCallRequest(id="c", name="n"))  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError):
        encode_request(StepBegin(n=1))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- decode-only input


def test_legacy_approval_request_resolved_decodes_as_approval_response() -> None:
    event = decode_event(
        b'{"type":"ApprovalRequestResolved","payload":{"request_id":"r","response":"approve"}}'
    )
    assert event == ApprovalResponse(request_id="r", response="approve", feedback="")
    assert encode_event(event).type == "ApprovalResponse"


def test_legacy_task_tool_call_id_decodes_as_parent_tool_call_id() -> None:
    data = (
        b'{"type":"SubagentEvent","payload":{"task_tool_call_id":"old",'
        b'"event":{"type":"StepBegin","payload":{"n":3}}}}'
    )
    event = decode_event(data)
    assert isinstance(event, SubagentEvent)
    assert event.parent_tool_call_id == "old"
    assert event.agent_id is None and event.subagent_type is None
    assert decode_event(event.event) == StepBegin(n=3)
    assert b'"task_tool_call_id"' not in ENCODER.encode(encode_event(event))
    both = decode_event(
        {
            "type": "SubagentEvent",
            "payload": {"parent_tool_call_id": "new", "task_tool_call_id": "old",
                        "event": {"type": "TurnEnd", "payload": {}}},
        }
    )  # fmt: skip
    assert isinstance(both, SubagentEvent) and both.parent_tool_call_id == "new"


def test_unknown_event_type_is_kept_as_data_and_relayed_unchanged() -> None:
    data = b'{"type":"FancyNewEvent","payload":{"x":[1,{"y":null}]}}'
    event = decode_event(data)
    assert event == UnknownEvent(type="FancyNewEvent", payload={"x": [1, {"y": None}]})
    assert ENCODER.encode(encode_event(event)) == data
    assert decode_event(msgspec.Raw(data)) == event


def test_unknown_event_inside_subagent_event_does_not_fail() -> None:
    data = (
        b'{"type":"SubagentEvent","payload":{"parent_tool_call_id":"p","agent_id":null,'
        b'"subagent_type":null,"event":{"type":"Later","payload":{"k":"v"}}}}'
    )
    event = decode_event(data)
    assert isinstance(event, SubagentEvent)
    assert decode_event(event.event) == UnknownEvent(type="Later", payload={"k": "v"})
    assert ENCODER.encode(encode_event(event)) == data


def test_unknown_display_block_is_kept_as_data() -> None:
    data = (
        b'{"type":"ToolResult","payload":{"tool_call_id":"c","return_value":{"is_error":false,'
        b'"output":"","message":"","display":[{"type":"chart","series":[1,2],"title":"t"},'
        b'{"type":"brief","text":"ok"}],"extras":null}}}'
    )
    event = decode_event(data)
    assert isinstance(event, ToolResult)
    expected: list[DisplayBlock] = [
        UnknownDisplayBlock(type="chart", data={"series": [1, 2], "title": "t"}),
        BriefDisplayBlock(text="ok"),
    ]
    assert event.return_value.display == expected
    # Like the reference, an unknown block re-encodes as {"type", "data"}.
    assert b'{"type":"chart","data":{"series":[1,2],"title":"t"}}' in ENCODER.encode(
        encode_event(event)
    )


def test_approval_request_without_display_decodes_with_empty_display() -> None:
    payload = {"id": "a", "tool_call_id": "c", "sender": "Shell", "action": "x", "description": "d"}
    request = decode_request({"type": "ApprovalRequest", "payload": payload})
    assert isinstance(request, ApprovalRequest) and request.display == []
    assert request.source_kind is None


# --------------------------------------------------------------------------- validation paths


@pytest.mark.parametrize(
    ("params", "path"),
    [
        (b'{"user_input":[{"type":"foo"}]}', "$.user_input[0].type"),
        ({"user_input": [{"type": "text", "text": "a"}, {"type": "foo"}]}, "$.user_input[1].type"),
        ({"user_input": [{"type": "text"}]}, "$.user_input[0]"),
        ({"user_input": 5}, "$.user_input"),
        ({}, "$"),
        (None, "$"),
    ],
)
def test_invalid_prompt_params_report_the_json_path(params: Any, path: str) -> None:
    with pytest.raises(RpcError) as info:
        PROMPT.decode_params(params)
    assert info.value.code == -32602
    assert info.value.message == "Invalid parameters for method `prompt`"
    assert info.value.data["path"] == path
    assert info.value.data["reason"]


def test_unknown_content_part_reason_names_the_value() -> None:
    with pytest.raises(RpcError) as info:
        METHODS["steer"].decode_params({"user_input": [{"type": "foo"}]})
    assert info.value.data == {"path": "$.user_input[0].type", "reason": "Invalid value 'foo'"}


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({}, "$"),
        ({"protocol_version": "one"}, "$.protocol_version"),
        ({"protocol_version": 1.1}, "$.protocol_version"),
        (
            {
                "protocol_version": "1.1",
                "external_tools": [{"name": "t", "description": "", "parameters": "x"}],
            },
            "$.external_tools[0].parameters",
        ),
        ({"protocol_version": "1.1", "hooks": [{"event": "Stop"}]}, "$.hooks[0]"),
    ],
)
def test_invalid_initialize_params(params: Any, path: str) -> None:
    with pytest.raises(RpcError) as info:
        INITIALIZE.decode_params(params)
    assert info.value.data["path"] == path


def test_params_that_are_ignored_or_lenient() -> None:
    assert METHODS["cancel"].decode_params({"anything": 1}) is None
    assert METHODS["replay"].decode_params(None) is None
    assert SET_PLAN_MODE.decode_params({"enabled": True, "extra": 1}).enabled is True
    init = INITIALIZE.decode_params(b'{"protocol_version":"1.1","future_field":{}}')
    assert init is not None and init.capabilities is None and init.external_tools is None


def test_invalid_event_payload_path_is_inside_params() -> None:
    with pytest.raises(RpcError) as info:
        decode_event(b'{"type":"StepBegin","payload":{"n":"one"}}')
    assert info.value.data["path"] == "$.payload.n"
    with pytest.raises(RpcError) as info:
        decode_event(
            {"type": "SubagentEvent", "payload": {"event": {"type": "StepBegin", "payload": {}}}}
        )
    assert info.value.data["path"] == "$.payload.event.payload"
    with pytest.raises(RpcError):
        decode_event({"payload": {}})
    with pytest.raises(RpcError):
        decode_event({"type": "ApprovalRequest", "payload": {}})  # a request is not an event


def test_invalid_display_block_path_joins_outer_and_inner_paths() -> None:
    todo = {"type": "todo", "items": [{"title": "a", "status": "nope"}]}
    payload = {
        "id": "a", "tool_call_id": "c", "sender": "s", "action": "x", "description": "d",
        "display": [{"type": "brief", "text": "t"}, todo],
    }  # fmt: skip
    with pytest.raises(RpcError) as info:
        decode_request({"type": "ApprovalRequest", "payload": payload})
    assert info.value.data["path"] == "$.payload.display[1].items[0].status"
    payload["display"] = [{"text": "no type"}]
    with pytest.raises(RpcError) as info:
        decode_request({"type": "ApprovalRequest", "payload": payload})
    assert info.value.data["path"] == "$.payload.display[0]"


def test_unknown_request_type_is_invalid_params() -> None:
    with pytest.raises(RpcError) as info:
        decode_request(b'{"type":"MysteryRequest","payload":{}}')
    assert info.value.code == -32602 and info.value.data["path"] == "$.type"


def test_decode_response_by_request_type() -> None:
    tool = ToolCallRequest(id="call_3", name="reveal", arguments="{}")
    result = decode_response(
        tool,
        b'{"tool_call_id":"call_3","return_value":{"is_error":false,"output":"ok","message":"",'
        b'"display":[{"type":"shell","language":"sh","command":"ls"}]}}',
    )
    assert result.return_value.display == [ShellDisplayBlock(language="sh", command="ls")]
    assert result.return_value.extras is None
    # display is required in a client's tool result (protocol-wire.md#tool-return-value).
    with pytest.raises(RemoteProtocolError):
        decode_response(
            tool,
            {
                "tool_call_id": "call_3",
                "return_value": {"is_error": False, "output": "", "message": ""},
            },
        )
    approval = ApprovalRequest(id="a", tool_call_id="c", sender="s", action="x", description="d")
    with pytest.raises(RemoteProtocolError, match="response"):
        decode_response(approval, {"request_id": "a", "response": "maybe"})
    assert (
        decode_response(approval, {"request_id": "a", "response": "approve_for_session"}).feedback
        == ""
    )


def test_envelope_accepts_every_source_form() -> None:
    data = b'{"type":"StepBegin","payload":{"n":4}}'
    expected = StepBegin(n=4)
    assert decode_event(data) == expected
    assert decode_event(msgspec.Raw(data)) == expected
    assert decode_event(json.loads(data)) == expected
    assert decode_event(WireEnvelope(type="StepBegin", payload={"n": 4})) == expected
    assert decode_event(encode_event(expected)) is expected


# --------------------------------------------------------------------------- tables


def test_method_table() -> None:
    assert set(METHODS) == {"initialize", "prompt", "cancel", "steer", "replay", "set_plan_mode"}
    assert {name: spec.since for name, spec in METHODS.items()} == {
        "initialize": "1.1", "prompt": "1", "cancel": "1", "steer": "1.4", "replay": "1.3",
        "set_plan_mode": "1.4",
    }  # fmt: skip
    assert METHODS["prompt"].decode_result(b'{"status":"cancelled"}') == PromptResult(
        status="cancelled"
    )
    with pytest.raises(RemoteProtocolError):
        METHODS["steer"].decode_result({"status": "nope"})


def test_error_codes() -> None:
    assert [(c.name, int(c)) for c in WireErrorCode] == [
        ("INVALID_STATE", -32000),
        ("LLM_NOT_SET", -32001),
        ("LLM_NOT_SUPPORTED", -32002),
        ("CHAT_PROVIDER_ERROR", -32003),
        ("AUTH_EXPIRED", -32004),
    ]
    assert methods.WireErrorMessage.INVALID_PARAMS.value.format(method="prompt") == (
        "Invalid parameters for method `prompt`"
    )
