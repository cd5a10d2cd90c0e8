"""Lenient inbound decoding of ACP payloads, strict errors with one JSON path.

Protocol rules: protocol-acp.md#mcp-servers, protocol-acp.md#meta-and-extensions,
protocol-acp.md#lenient-decoding, protocol-acp.md#client-side. No event loop is needed in this
module.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from msgspec import UNSET

from wireproto.adapters.acp import extra
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.codec import convert, dec_hook, decode, resolve_variant
from wireproto.adapters.acp.validation import validate_struct
from wireproto.jsonrpc.codec import validation_error_data


def _note(update: dict[str, Any]) -> bytes:
    return json.dumps({"sessionId": "s", "update": update}).encode()


# ------------------------------------------------------- x-deserialize-* rules


def test_invalid_item_of_a_skip_list_is_dropped() -> None:
    note = decode(
        _note(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "a", "priority": "high", "status": "pending"},
                    {"content": "b", "priority": "urgent", "status": "pending"},
                    {"content": "c", "priority": "low", "status": "completed"},
                ],
            }
        ),
        S.SessionNotification,
    )
    assert note.update == S.Plan(
        entries=[
            S.PlanEntry(content="a", priority="high", status="pending"),
            S.PlanEntry(content="c", priority="low", status="completed"),
        ]
    )


def test_unknown_config_option_type_and_auth_method_are_skipped() -> None:
    options = [
        {"id": "m", "name": "Model", "type": "select", "currentValue": "a", "options": []},
        {"id": "x", "name": "Slider", "type": "range", "currentValue": 3},
    ]
    result = decode(json.dumps({"configOptions": options}), S.SetSessionConfigOptionResponse)
    assert [o.id for o in result.config_options] == ["m"]
    init = decode(
        b'{"protocolVersion":1,"authMethods":[{"id":"a","name":"A"},{"id":5},'
        b'{"type":"terminal","id":"t","name":"T","args":null}]}',
        S.InitializeResponse,
    )
    assert init.auth_methods == [
        S.AuthMethodAgent(id="a", name="A"),
        S.AuthMethodTerminal(id="t", name="T"),  # args: null -> default (absent)
    ]


def test_bad_optional_value_becomes_its_default() -> None:
    note = decode(
        _note(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "tc",
                "title": "Run",
                "kind": "weird_kind",
                "status": 3,
                "locations": [{"path": "/a", "line": -1}, {"line": 2}],
                "_meta": "not an object",
            }
        ),
        S.SessionNotification,
    )
    # protocol-acp.md#lenient-decoding: the update survives, the bad fields are gone
    assert note.update == S.ToolCall(
        tool_call_id="tc", title="Run", locations=[S.ToolCallLocation(path="/a")]
    )


def test_malformed_capabilities_fall_back_to_their_defaults() -> None:
    init = decode(
        b'{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":"yes",'
        b'"writeTextFile":true},"terminal":"sure","session":[],"elicitation":{"form":{},"url":1}},'
        b'"clientInfo":{"name":"ed"}}',
        S.InitializeRequest,
    )
    caps = init.client_capabilities
    assert caps.fs == S.FileSystemCapabilities(read_text_file=False, write_text_file=True)
    assert caps.terminal is False
    assert caps.session is UNSET
    assert caps.elicitation == S.ElicitationCapabilities(form=S.ElicitationFormCapabilities())
    assert init.client_info is UNSET  # missing version: the whole object defaults
    whole = decode(b'{"protocolVersion":1,"clientCapabilities":7}', S.InitializeRequest)
    assert whole.client_capabilities == S.ClientCapabilities()


def test_required_default_on_error_list_becomes_empty() -> None:
    note = decode(
        _note({"sessionUpdate": "available_commands_update", "availableCommands": "none"}),
        S.SessionNotification,
    )
    assert note.update == S.AvailableCommandsUpdate(available_commands=[])


def test_null_means_the_default_where_the_schema_says_so() -> None:
    # protocol-acp.md#mcp-servers: null mcpServers/args/env/headers/additionalDirectories are []
    params = decode(
        b'{"cwd":"/p","additionalDirectories":null,"mcpServers":[{"name":"f","command":"/bin/f",'
        b'"args":null,"env":null},{"type":"http","name":"h","url":"https://h","headers":null}]}',
        S.NewSessionRequest,
    )
    assert params.additional_directories is UNSET
    assert params.mcp_servers == [
        S.McpServerStdio(name="f", command="/bin/f", args=[], env=[]),
        S.McpServerHttp(name="h", url="https://h", headers=[]),
    ]
    assert decode(b'{"cwd":"/p","mcpServers":null}', S.NewSessionRequest).mcp_servers == []
    terminal = decode(
        b'{"sessionId":"s","command":"ls","args":null,"env":null}', S.CreateTerminalRequest
    )
    assert terminal.args is UNSET and terminal.env is UNSET


def test_default_on_null_does_not_excuse_other_malformed_values() -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode(b'{"cwd":"/p","mcpServers":"all of them"}', S.NewSessionRequest)
    assert validation_error_data(info.value)["path"] == "$.mcpServers"


# ------------------------------------------------------------- strict inbound


@pytest.mark.parametrize(
    ("raw", "type_", "path"),
    [
        (b'{"cwd":"/p"}', S.NewSessionRequest, "$"),  # mcpServers is required
        (
            b'{"cwd":"/p","mcpServers":[{"name":"f","command":"/f","args":[1],"env":[]}]}',
            S.NewSessionRequest,
            "$.mcpServers[0].args[0]",
        ),
        (
            b'{"cwd":"/p","mcpServers":[{"type":"http","name":"h","url":5,"headers":[]}]}',
            S.NewSessionRequest,
            "$.mcpServers[0].url",
        ),
        (
            b'{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"u","text":5}}]}',
            S.PromptRequest,
            "$.prompt[0].resource.text",
        ),
        (
            b'{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"u"}}]}',
            S.PromptRequest,
            "$.prompt[0].resource",
        ),
        (b'{"stopReason":"exploded"}', S.PromptResponse, "$.stopReason"),
        (b'{"protocolVersion":"2025-01-01"}', S.InitializeRequest, "$.protocolVersion"),
        (b'{"protocolVersion":70000}', S.InitializeRequest, "$.protocolVersion"),
        (
            b'{"mode":"form","message":"m","sessionId":"s","requestedSchema":{"properties":'
            b'{"a":{"type":"integer","minimum":"low"}}}}',
            S.CreateElicitationRequest,
            "$.requestedSchema.properties[...].minimum",
        ),
        (b'{"mode":7,"message":"m","sessionId":"s"}', S.CreateElicitationRequest, "$.mode"),
    ],
)
def test_strict_fields_fail_with_one_json_path(raw: bytes, type_: Any, path: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode(raw, type_)
    assert validation_error_data(info.value)["path"] == path


def test_unknown_session_update_variant_fails_the_notification() -> None:
    with pytest.raises(msgspec.ValidationError, match="sessionUpdate"):
        decode(_note({"sessionUpdate": "plan_update", "entries": []}), S.SessionNotification)
    # protocol-acp.md#schema-over-docs: the documented-but-wrong `modeId` is not `currentModeId`
    with pytest.raises(msgspec.ValidationError, match="currentModeId"):
        decode(
            _note({"sessionUpdate": "current_mode_update", "modeId": "x"}), S.SessionNotification
        )


def test_malformed_json_is_a_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode(b'{"stopReason":', S.PromptResponse)
    with pytest.raises(msgspec.DecodeError):  # the strict pass stops early, the retry must not
        decode(b'{"stopReason":1,', S.PromptResponse)


# ------------------------------------------------------------- _meta, paths


def test_meta_is_kept_apart_from_params() -> None:
    # protocol-acp.md#meta-and-extensions: `_meta.cwd` must never override the real cwd
    params = decode(
        b'{"cwd":"/real","mcpServers":[],"_meta":{"cwd":"/evil","traceparent":"00-ab"}}',
        S.NewSessionRequest,
    )
    assert params.cwd == "/real"
    assert params.meta == {"cwd": "/evil", "traceparent": "00-ab"}
    assert json.loads(msgspec.json.encode(params))["_meta"] == params.meta
    assert decode(b'{"cwd":"/p","mcpServers":[],"_meta":null}', S.NewSessionRequest).meta is None
    assert decode(b'{"cwd":"/p","mcpServers":[],"_meta":[1]}', S.NewSessionRequest).meta is UNSET


def test_convert_matches_decode_and_leaves_its_input_alone() -> None:
    obj = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t",
            "kind": "bogus",
            "content": [{"type": "terminal", "terminalId": "term"}, {"type": "nope"}],
        },
    }
    before = copy.deepcopy(obj)
    converted = convert(obj, S.SessionNotification)
    assert obj == before
    assert converted == decode(json.dumps(obj), S.SessionNotification)
    assert converted.update == S.ToolCallProgress(
        tool_call_id="t", content=[S.Terminal(terminal_id="term")]
    )


def test_valid_input_takes_the_strict_path_unchanged() -> None:
    raw = (
        b'{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t",'
        b'"title":null,"content":null,"rawInput":null,"_meta":{"a":1}}}'
    )
    strict = msgspec.json.decode(raw, type=S.SessionNotification, dec_hook=dec_hook)
    assert decode(raw, S.SessionNotification) == strict
    assert strict.update.title is None and strict.update.raw_input is None  # type: ignore[union-attr]


def test_resolve_variant_rules() -> None:
    assert resolve_variant(S.McpServer, {"type": "stdio"}) is S.McpServerStdio
    assert resolve_variant(S.McpServer, {}) is S.McpServerStdio
    assert resolve_variant(S.McpServer, {"type": "sse"}) is S.McpServerSse
    assert resolve_variant(S.MultiSelectItems, {"type": "number"}) is S.OtherMultiSelectItems
    assert resolve_variant(S.MultiSelectItems, {"anyOf": []}) is S.TitledMultiSelectItems
    assert resolve_variant(S.SessionConfigSelectItem, {"group": "g"}) is S.SessionConfigSelectGroup
    with pytest.raises(ValueError, match="`text` or `blob`"):
        resolve_variant(S.EmbeddedResourceResource, {"uri": "u"})
    with pytest.raises(TypeError, match="object"):
        resolve_variant(S.McpServer, [])
    with pytest.raises(TypeError):
        dec_hook(int, 1)


def test_construction_checks_what_the_schema_requires() -> None:
    with pytest.raises(ValueError, match="sessionId"):
        S.CreateUrlElicitationRequest(message="m", elicitation_id="e", url="https://x")
    ok = S.CreateUrlElicitationRequest(
        message="m", elicitation_id="e", url="https://x", request_id=None
    )
    validate_struct(ok)  # `requestId: null` is a valid request scope
    with pytest.raises(ValueError, match="mix"):
        S.SessionConfigOptionSelect(
            id="m",
            name="M",
            current_value="a",
            options=[
                S.SessionConfigSelectOption(value="a", name="A"),
                S.SessionConfigSelectGroup(group="g", name="G", options=[]),
            ],
        )


# ----------------------------------------------------------------- extra.py


def test_set_model_compatibility_types() -> None:
    spec = extra.UNSTABLE_METHODS["session/set_model"]
    params = decode(b'{"sessionId":"s","modelId":"large","_meta":"bad"}', spec.params)
    assert params == extra.SetSessionModelRequest(session_id="s", model_id="large")
    assert msgspec.json.encode(spec.result()) == b"{}"


def test_acp_mcp_servers_are_split_off_before_decoding() -> None:
    raw = (
        b'{"cwd":"/p","mcpServers":[{"type":"acp","name":"tunnel","serverId":"x"},'
        b'{"type":"sse","name":"s","url":"https://s","headers":[]},{"type":"acp"}]}'
    )
    with pytest.raises(msgspec.ValidationError, match=r"\$\.mcpServers\[0\]"):
        decode(raw, S.NewSessionRequest)
    obj, dropped = extra.split_acp_servers(msgspec.json.decode(raw))
    assert dropped == ["tunnel", "<unnamed>"]
    params = convert(obj, S.NewSessionRequest)
    assert params.mcp_servers == [S.McpServerSse(name="s", url="https://s", headers=[])]
    untouched = {"cwd": "/p", "mcpServers": []}
    assert extra.split_acp_servers(untouched) == (untouched, [])
    acp = extra.McpServerAcp(name="tunnel", server_id="x")
    assert msgspec.json.encode(acp) == b'{"type":"acp","name":"tunnel","serverId":"x"}'


def test_unknown_keys_are_ignored() -> None:
    # protocol-acp.md#client-side: e.g. the unstable `usage` of a prompt response
    raw = b'{"stopReason":"end_turn","usage":{"inputTokens":5},"futureKey":[1]}'
    assert decode(raw, S.PromptResponse) == S.PromptResponse(stop_reason="end_turn")


def test_decode_takes_raw_slices_bytes_and_str() -> None:
    # the JSON-RPC codec hands params over as msgspec.Raw
    env = msgspec.json.decode(
        b'{"params":{"stopReason":"refusal","_meta":7}}', type=dict[str, msgspec.Raw]
    )
    expected = S.PromptResponse(stop_reason="refusal")
    assert decode(env["params"], S.PromptResponse) == expected  # lenient path from Raw
    assert decode('{"stopReason":"refusal"}', S.PromptResponse) == expected
    assert decode(bytearray(b'{"stopReason":"refusal"}'), S.PromptResponse) == expected
