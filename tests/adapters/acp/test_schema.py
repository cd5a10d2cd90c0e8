"""The generated ACP schema module: freshness, round trips, schema validity, examples.

Protocol rules: protocol-acp.md#json-rpc-conventions, protocol-acp.md#lifecycle,
protocol-acp.md#initialize, protocol-acp.md#capabilities, protocol-acp.md#authentication,
protocol-acp.md#methods, protocol-acp.md#sessions, protocol-acp.md#prompt-turn,
protocol-acp.md#content-blocks, protocol-acp.md#session-updates, protocol-acp.md#tool-calls,
protocol-acp.md#permissions, protocol-acp.md#stop-reasons, protocol-acp.md#mcp-servers,
protocol-acp.md#modes-and-config-options, protocol-acp.md#meta-and-extensions,
protocol-acp.md#schema-over-docs, protocol-acp.md#tool-call-content,
protocol-acp.md#lenient-decoding. Every Struct is built twice (all fields set, only required
fields set), encoded, validated against the vendored ``schema.json`` with jsonschema and decoded
back; the JSON examples of the protocol must decode and re-encode validly.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
import pytest
from msgspec import UNSET, UnsetType

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.codec import decode
from wireproto.adapters.acp.validation import schema_errors, validate_against_schema

ROOT = Path(__file__).resolve().parents[3]
VENDOR = ROOT / "wireproto" / "adapters" / "acp" / "vendor"
GENERATED = ROOT / "wireproto" / "adapters" / "acp" / "schema.py"


@functools.cache
def _load_generator() -> types.ModuleType:
    """Import scripts/gen_acp_schema.py and its sibling module without touching sys.path."""
    module = None
    for name in ("acp_schema_model", "gen_acp_schema"):
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the generator imports the model by this name
        spec.loader.exec_module(module)
    assert module is not None
    return module


# ------------------------------------------------------------ (a) generated file


def test_committed_module_equals_fresh_generation(tmp_path: Path) -> None:
    gen = _load_generator()
    out = tmp_path / "schema.py"
    assert gen.main(["--out", str(out)]) == 0
    assert out.read_bytes() == GENERATED.read_bytes()
    assert gen.main(["--out", str(GENERATED), "--check"]) == 0


def test_check_mode_detects_a_stale_module(tmp_path: Path) -> None:
    gen = _load_generator()
    stale = tmp_path / "schema.py"
    stale.write_text(GENERATED.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert gen.main(["--out", str(stale), "--check"]) == 1


def test_generation_is_deterministic() -> None:
    gen = _load_generator()
    schema = (VENDOR / "schema.json").read_text(encoding="utf-8")
    meta = (VENDOR / "meta.json").read_text(encoding="utf-8")
    assert gen.generate(schema, meta) == gen.generate(schema, meta)


@pytest.mark.parametrize(
    ("name", "sha256"),
    [
        ("schema.json", "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a"),
        ("meta.json", "061edb6efa8fb2aa2792459a86ec7268de5fe665bba48b2ffe7939df01481f88"),
    ],
)
def test_vendored_files_are_the_pinned_upstream_files(name: str, sha256: str) -> None:
    assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == sha256
    assert sha256 in (VENDOR / "README.md").read_text(encoding="utf-8")
    assert (VENDOR / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")


def test_method_tables_match_meta_json() -> None:
    meta = json.loads((VENDOR / "meta.json").read_text(encoding="utf-8"))
    assert set(S.AGENT_METHODS) == set(meta["agentMethods"].values())
    assert set(S.CLIENT_METHODS) == set(meta["clientMethods"].values())
    assert set(S.PROTOCOL_METHODS) == set(meta["protocolMethods"].values())
    notifications = {m for m, spec in S.METHODS.items() if spec.result is None}
    assert notifications == {
        "session/cancel",
        "session/update",
        "elicitation/complete",
        "$/cancel_request",
    }
    assert S.METHODS["session/prompt"] == S.MethodSpec(
        "session/prompt", "agent", S.PromptRequest, S.PromptResponse
    )
    assert S.METHODS["session/set_config_option"].params is S.SetSessionConfigOptionRequest
    assert "session/set_model" not in S.METHODS  # protocol-acp.md#unstable-methods: not stable


def test_every_struct_class_is_listed() -> None:
    classes = {
        obj
        for obj in vars(S).values()
        if isinstance(obj, type) and issubclass(obj, S.Base) and obj is not S.Base
    }
    assert classes == set(S.DEF_OF)
    assert set(S.LENIENCY) <= classes
    for name in S.__all__:
        assert hasattr(S, name), name


# ------------------------------------------------------- (b) + (d) round trips

_SCALARS: dict[Any, Any] = {str: "x", int: 7, float: 1.5, bool: True, type(None): None}


def _members(tp: Any) -> list[Any]:
    if get_origin(tp) is Union or isinstance(tp, types.UnionType):
        return list(get_args(tp))
    return [tp]


def sample(tp: Any, full: bool) -> Any:
    """A valid value of ``tp``: all optional fields set (``full``) or none."""
    if get_origin(tp) is Annotated:
        return sample(get_args(tp)[0], full)
    if get_origin(tp) is Literal:
        return get_args(tp)[0]
    if tp is Any:
        return {"k": [1, "v", None]}
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin = get_origin(tp)
    if origin is list:
        return [sample(get_args(tp)[0], full)]
    if origin is dict:
        return {"key": sample(get_args(tp)[1], full)}
    members = [m for m in _members(tp) if m not in (UnsetType, type(None))]
    if len(members) != 1 or members[0] is not tp:
        return sample(members[0], full)
    if tp in S.UNIONS:
        spec = S.UNIONS[tp]
        first = next(iter(spec.tags.values()), None) or spec.fallback or spec.presence[0][1]
        return sample(first, full)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        kwargs = {
            f.name: sample(f.type, full) for f in msgspec.structs.fields(tp) if full or f.required
        }
        scoped = {"request_id", "session_id"} <= set(tp.__struct_fields__)
        if scoped and "request_id" not in kwargs and "session_id" not in kwargs:
            kwargs["session_id"] = "sess"  # elicitation: one of the two scopes is required
        return tp(**kwargs)
    raise AssertionError(f"no sample for {tp!r}")


STRUCTS = sorted(S.DEF_OF, key=lambda cls: cls.__name__)


def _union_type(cls: type) -> Any:
    """The type a peer decodes ``cls`` as: its union when it is a variant."""
    return getattr(S, S.DEF_OF[cls])


@pytest.mark.parametrize("full", [True, False], ids=["full", "minimal"])
@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_round_trip_and_schema_validity(cls: type, full: bool) -> None:
    obj = sample(cls, full)
    raw = msgspec.json.encode(obj)
    assert schema_errors(S.DEF_OF[cls], json.loads(raw)) == []
    assert decode(raw, cls) == obj
    as_union = decode(raw, _union_type(cls))
    assert type(as_union) is cls
    assert as_union == obj
    if not full:  # strict outbound: nothing unset is ever written, least of all null
        assert b"null" not in raw


def test_optional_fields_are_omitted_not_null() -> None:
    update = S.ToolCallProgress(tool_call_id="tc-1", status="completed")
    assert msgspec.json.encode(update) == (
        b'{"sessionUpdate":"tool_call_update","toolCallId":"tc-1","status":"completed"}'
    )
    # an explicit None is a deliberate null, allowed where the schema is nullable
    cleared = S.SessionInfoUpdate(title=None)
    assert msgspec.json.encode(cleared) == b'{"sessionUpdate":"session_info_update","title":null}'
    validate_against_schema("SessionUpdate", cleared)


def test_wire_names_are_camel_case_and_meta_is_separate() -> None:
    req = S.ReadTextFileRequest(session_id="s", path="/a", line=3, meta={"cwd": "/other"})
    assert json.loads(msgspec.json.encode(req)) == {
        "sessionId": "s",
        "path": "/a",
        "line": 3,
        "_meta": {"cwd": "/other"},
    }
    assert S.SessionCapabilities(list_=S.SessionListCapabilities()).list_ is not UNSET


# ---------------------------------------------------------- (c) protocol examples

PROMPT = (
    b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_9f2",'
    b'"prompt":[{"type":"text","text":"Add a test for parse()"}]}}'
)
UPDATE = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_9f2","update":'
    b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Sure."}}}}'
)
RESULT = b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}'


def _payload(line: bytes, key: str) -> bytes:
    return msgspec.json.encode(json.loads(line)[key])


def test_the_three_message_kinds() -> None:
    prompt = decode(_payload(PROMPT, "params"), S.PromptRequest)
    assert prompt == S.PromptRequest(
        session_id="sess_9f2", prompt=[S.TextContent(text="Add a test for parse()")]
    )
    note = decode(_payload(UPDATE, "params"), S.SessionNotification)
    assert note.update == S.AgentMessageChunk(content=S.TextContent(text="Sure."))
    result = decode(_payload(RESULT, "result"), S.PromptResponse)
    assert result.stop_reason == "end_turn"
    for obj, key, line in ((prompt, "params", PROMPT), (note, "params", UPDATE)):
        assert json.loads(msgspec.json.encode(obj)) == json.loads(line)[key]


SESSION_UPDATES: list[tuple[str, type]] = [
    (
        '{"sessionUpdate":"agent_thought_chunk","messageId":"m-41","content":{"type":"text",'
        '"text":"The parser lacks a test for empty input."}}',
        S.AgentThoughtChunk,
    ),
    (
        '{"sessionUpdate":"plan","entries":[{"content":"Write test_parse_empty","priority":'
        '"high","status":"in_progress"},{"content":"Run the suite","priority":"medium",'
        '"status":"pending"}]}',
        S.Plan,
    ),
    (
        '{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"review",'
        '"description":"Review the working tree","input":{"hint":"path to review"}},'
        '{"name":"compact","description":"Summarise the conversation"}]}',
        S.AvailableCommandsUpdate,
    ),
    (
        '{"sessionUpdate":"usage_update","used":48210,"size":200000,"cost":{"amount":0.42,'
        '"currency":"USD"}}',
        S.UsageUpdate,
    ),
    (
        '{"sessionUpdate":"notice","severity":"warning","title":"MCP server \\"files\\" failed to '
        'start","description":"Executable not found: /usr/local/bin/mcp-files"}',
        S.Notice,
    ),
    (
        '{"sessionUpdate":"compaction_update","compactionId":"c-1","status":"completed",'
        '"summary":[{"type":"text","text":"Earlier: added parser and tests."}]}',
        S.CompactionUpdate,
    ),
    (
        '{"sessionUpdate":"tool_call","toolCallId":"tc-7","title":"Edit tests/test_parse.py",'
        '"name":"write_file","kind":"edit","status":"pending","locations":[{"path":'
        '"/home/ana/proj/tests/test_parse.py"}],"rawInput":{"path":"tests/test_parse.py"}}',
        S.ToolCall,
    ),
    (
        '{"sessionUpdate":"tool_call_update","toolCallId":"tc-7","status":"completed","content":'
        '[{"type":"diff","path":"/home/ana/proj/tests/test_parse.py","oldText":null,"newText":'
        '"def test_parse_empty():\\n    assert parse(\'\') == []\\n"},{"type":"content","content":'
        '{"type":"text","text":"Created 1 file."}}]}',
        S.ToolCallProgress,
    ),
    ('{"sessionUpdate":"current_mode_update","currentModeId":"code"}', S.CurrentModeUpdate),
    (
        '{"sessionUpdate":"compaction_summary_chunk","compactionId":"c-1","content":{"type":'
        '"text","text":"More."}}',
        S.CompactionSummaryChunk,
    ),
    ('{"sessionUpdate":"session_info_update","title":"Parser work"}', S.SessionInfoUpdate),
    (
        '{"sessionUpdate":"user_message_chunk","content":{"type":"resource_link","uri":'
        '"file:///home/ana/proj/spec.pdf","name":"spec.pdf","mimeType":"application/pdf",'
        '"size":482113}}',
        S.UserMessageChunk,
    ),
]


@pytest.mark.parametrize(("text", "cls"), SESSION_UPDATES, ids=lambda v: getattr(v, "__name__", ""))
def test_session_update_examples(text: str, cls: type) -> None:
    update = decode(text, S.SessionUpdate)
    assert type(update) is cls
    encoded = json.loads(msgspec.json.encode(update))
    assert encoded == json.loads(text)  # nothing lost, nothing added
    validate_against_schema("SessionUpdate", encoded)


def test_tool_call_content_is_wrapped() -> None:
    # a content block inside tool-call content needs the "content" wrapper
    update = S.ToolCallProgress(
        tool_call_id="tc-7",
        content=[S.Content(content=S.TextContent(text="Created 1 file."))],
    )
    assert json.loads(msgspec.json.encode(update))["content"] == [
        {"type": "content", "content": {"type": "text", "text": "Created 1 file."}}
    ]
    bare = {"sessionUpdate": "tool_call_update", "toolCallId": "tc-7"}
    bare["content"] = [{"type": "text", "text": "Created 1 file."}]  # type: ignore[assignment]
    assert schema_errors("SessionUpdate", bare) != []
    assert decode(json.dumps(bare), S.SessionUpdate) == S.ToolCallProgress(
        tool_call_id="tc-7", content=[]
    )  # the invalid item is skipped on the way in


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            '{"name":"files","command":"/usr/local/bin/mcp-files","args":["--stdio"],"env":'
            '[{"name":"FILES_TOKEN","value":"s3cr3t"}]}',
            S.McpServerStdio,
        ),
        (
            '{"type":"stdio","name":"files","command":"/usr/local/bin/mcp-files","args":[],'
            '"env":[]}',
            S.McpServerStdio,
        ),
        (
            '{"type":"http","name":"tracker","url":"https://mcp.example.com/mcp","headers":'
            '[{"name":"Authorization","value":"Bearer abc"}]}',
            S.McpServerHttp,
        ),
        (
            '{"type":"sse","name":"legacy","url":"https://old.example.com/sse","headers":[]}',
            S.McpServerSse,
        ),
    ],
    ids=["stdio", "stdio-tagged", "http", "sse"],
)
def test_mcp_server_variants(text: str, cls: type) -> None:
    server = decode(text, S.McpServer)
    assert type(server) is cls
    encoded = json.loads(msgspec.json.encode(server))
    if cls is S.McpServerStdio:
        assert "type" not in encoded  # sent without a type, accepted with or without
    validate_against_schema("McpServer", encoded)


def test_new_session_and_its_response() -> None:
    params = decode(
        '{"cwd":"/home/ana/proj","mcpServers":[{"name":"files","command":"/usr/local/bin/mcp-files",'
        '"args":["--root","/home/ana/proj"],"env":[]}]}',
        S.NewSessionRequest,
    )
    assert params.mcp_servers == [
        S.McpServerStdio(
            name="files",
            command="/usr/local/bin/mcp-files",
            args=["--root", "/home/ana/proj"],
            env=[],
        )
    ]
    result = decode(
        '{"sessionId":"sess_9f2","configOptions":[{"id":"mode","name":"Mode","category":"mode",'
        '"type":"select","currentValue":"ask","options":[{"value":"ask","name":"Ask"},{"value":'
        '"code","name":"Code"}]}],"modes":{"currentModeId":"ask","availableModes":[{"id":"ask",'
        '"name":"Ask"},{"id":"code","name":"Code"}]}}',
        S.NewSessionResponse,
    )
    assert result.config_options == [
        S.SessionConfigOptionSelect(
            id="mode",
            name="Mode",
            category="mode",
            current_value="ask",
            options=[
                S.SessionConfigSelectOption(value="ask", name="Ask"),
                S.SessionConfigSelectOption(value="code", name="Code"),
            ],
        )
    ]
    validate_against_schema("NewSessionResponse", result)


def test_content_block_examples() -> None:
    blocks = decode(
        '[{"type":"text","text":"Why does **parse** fail on empty input?"},'
        '{"type":"resource","resource":{"uri":"file:///home/ana/proj/parser.py","mimeType":'
        '"text/x-python","text":"def parse(s):\\n    return s.split(\',\')\\n"}},'
        '{"type":"resource","resource":{"uri":"file:///a.png","blob":"iVBORw0KGgo="}},'
        '{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]',
        list[S.ContentBlock],
    )
    assert [type(b) for b in blocks] == [
        S.TextContent,
        S.EmbeddedResource,
        S.EmbeddedResource,
        S.ImageContent,
    ]
    assert isinstance(blocks[1].resource, S.TextResourceContents)
    assert isinstance(blocks[2].resource, S.BlobResourceContents)
    for block in blocks:
        validate_against_schema("ContentBlock", block)


def test_initialize_permission_config_and_elicitation_examples() -> None:
    init = decode(
        '{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},'
        '"terminal":true,"auth":{"terminal":false},"elicitation":{"form":{}},"session":'
        '{"configOptions":{"boolean":{}},"notices":{}}},"clientInfo":{"name":"acme-editor",'
        '"title":"Acme Editor","version":"4.2.0"}}',
        S.InitializeRequest,
    )
    caps = init.client_capabilities
    assert caps.fs.read_text_file and caps.terminal and not caps.auth.terminal
    assert isinstance(caps.session, S.ClientSessionCapabilities)
    assert caps.session.notices == S.NoticeCapabilities()
    assert caps.session.compaction is UNSET
    bare = decode(b'{"protocolVersion":1}', S.InitializeRequest)
    assert bare.client_capabilities == S.ClientCapabilities()  # the schema default
    assert not bare.client_capabilities.fs.write_text_file

    permission = decode(
        '{"outcome":{"outcome":"selected","optionId":"once"}}', S.RequestPermissionResponse
    )
    assert permission.outcome == S.SelectedPermissionOutcome(option_id="once")
    cancelled = S.RequestPermissionResponse(outcome=S.CancelledPermissionOutcome())
    assert msgspec.json.encode(cancelled) == b'{"outcome":{"outcome":"cancelled"}}'

    select = decode(
        '{"sessionId":"sess_9f2","configId":"model","value":"large"}',
        S.SetSessionConfigOptionRequest,
    )
    assert select == S.SetSessionConfigOptionSelectRequest(
        session_id="sess_9f2", config_id="model", value="large"
    )
    toggle = decode(
        '{"sessionId":"s","configId":"thinking","type":"boolean","value":true}',
        S.SetSessionConfigOptionRequest,
    )
    assert isinstance(toggle, S.SetSessionConfigOptionBooleanRequest) and toggle.value is True

    form = decode(
        '{"sessionId":"sess_9f2","mode":"form","message":"Which branch?","requestedSchema":'
        '{"type":"object","properties":{"branch":{"type":"string","enum":["main","release/2.x"]},'
        '"pushAfter":{"type":"boolean","default":false}},"required":["branch"]}}',
        S.CreateElicitationRequest,
    )
    assert isinstance(form, S.CreateFormElicitationRequest)
    assert form.requested_schema.properties["pushAfter"] == S.BooleanPropertySchema(default=False)
    answer = decode(
        '{"action":"accept","content":{"branch":"main","pushAfter":false}}',
        S.CreateElicitationResponse,
    )
    assert answer == S.AcceptElicitationResponse(content={"branch": "main", "pushAfter": False})
    custom = decode('{"action":"_acme/snooze"}', S.CreateElicitationResponse)
    assert custom == S.OtherElicitationResponse(action="_acme/snooze")
    with pytest.raises(ValueError, match="known value"):
        S.OtherElicitationResponse(action="accept")


_JUNK: list[Any] = [None, -5, "junk", [], {}, [{}], {"type": 1}]


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_any_wrong_value_is_repaired_or_reported(cls: type) -> None:
    """Junk in any top-level field yields a schema-valid value or a ValidationError.

    Lenient fields are repaired (so some junk gives a value), strict required
    fields are reported (so some junk gives an error); nothing else escapes.
    """
    full = json.loads(msgspec.json.encode(sample(cls, True)))
    target = _union_type(cls)
    outcomes: set[str] = set()
    for key in full:
        for junk in _JUNK:
            try:
                value = decode(json.dumps({**full, key: junk}), target)
            except msgspec.ValidationError as exc:
                assert " - at `$" in str(exc) or "Object" in str(exc), exc
                outcomes.add("error")
            else:
                validate_against_schema(S.DEF_OF[type(value)], value)
                outcomes.add("value")
    rules = S.LENIENCY.get(cls, {})
    strict = [f for f in msgspec.structs.fields(cls) if f.required and not rules.get(f.encode_name)]
    if rules:
        assert "value" in outcomes
    if strict or cls.__struct_config__.tag_field:
        assert "error" in outcomes
