"""The recording: numbering, frames, the trace format both ways, and decoding on demand."""

from __future__ import annotations

import io
import json

import msgspec

from wireproto.cli.trace import TraceStream
from wireproto.inspect.decode import describe
from wireproto.inspect.handshake import guess_protocol
from wireproto.inspect.record import Recorder, load_trace, trace_line


def test_records_are_numbered_timed_and_framed_once() -> None:
    recorder = Recorder()
    seen = []
    recorder.subscribe(seen.append)
    first = recorder.add("send", b'{"jsonrpc":"2.0","id":1,"method":"m"}\n')
    second = recorder.add("recv", b"not json")
    assert [r.seq for r in seen] == [0, 1]
    assert first.t <= second.t
    frame = msgspec.json.decode(first.frame)
    assert frame == {"type": "record", "seq": 0, "t": frame["t"], "dir": "send", "size": 37,
                     "msg": {"jsonrpc": "2.0", "id": 1, "method": "m"}}
    assert msgspec.json.decode(second.frame)["text"] == "not json"
    assert second.message() == "not json"


def test_the_oldest_records_go_beyond_the_limit() -> None:
    recorder = Recorder(limit=3)
    for n in range(5):
        recorder.add("recv", b"%d" % n)
    assert [r.seq for r in recorder.records] == [2, 3, 4]
    assert recorder.dropped == 2
    assert recorder.get(1) is None and recorder.get(3) is not None


def test_a_connect_trace_loads_and_exports_unchanged() -> None:
    sink = io.BytesIO()
    tracer = TraceStream(None, sink)  # type: ignore[arg-type]  # only record() is used
    tracer.record("send", b'{"jsonrpc":"2.0","id":0,"method":"session/new","params":{}}\n')
    tracer.record("recv", b'{"jsonrpc":"2.0","id":0,"result":{"sessionId":"s"}}')
    tracer.record("recv", b"garbage <not json>")
    original = sink.getvalue().splitlines(keepends=True)
    recorder = Recorder()
    assert load_trace(original, recorder) == []
    assert [trace_line(r) for r in recorder.records] == original
    assert guess_protocol(recorder) == "acp"


def test_bad_trace_lines_are_reported_and_skipped() -> None:
    recorder = Recorder()
    lines = [b'{"t":0.1,"dir":"send","msg":{"jsonrpc":"2.0","method":"event"}}\n', b"\n",
             b"{oops\n", b'{"t":1,"dir":"sideways","msg":{}}\n', b'{"t":1,"dir":"recv"}\n']
    problems = load_trace(lines, recorder)
    assert len(recorder.records) == 1
    assert [p.split(":")[0] for p in problems] == ["line 3", "line 4", "line 5"]
    assert guess_protocol(recorder) == "wire"


def test_acp_messages_are_decoded_with_the_codecs_complaints() -> None:
    update = {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                     "content": {"type": "text", "text": "hi"}}}}
    meaning = describe("acp", update)
    assert meaning["type"] == "session/update: SessionNotification / AgentMessageChunk"
    assert meaning["errors"] == []
    bad = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"prompt": 3}}
    meaning = describe("acp", bad)
    assert meaning["errors"] and any("sessionId" in e for e in meaning["errors"])
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    assert describe("acp", answer, bad)["type"] == "session/prompt result: PromptResponse"
    assert describe("acp", {"jsonrpc": "2.0", "method": "_x/y"})["type"].startswith("_x/y")


def test_wire_messages_are_decoded_with_the_codecs_complaints() -> None:
    event = {"jsonrpc": "2.0", "method": "event",
             "params": {"type": "ContentPart", "payload": {"type": "text", "text": "hi"}}}
    assert describe("wire", event)["type"] == "event: TextPart"
    broken = {"jsonrpc": "2.0", "method": "event",
              "params": {"type": "StepBegin", "payload": {"n": "one"}}}
    errors = describe("wire", broken)["errors"]
    assert errors and "$.payload.n" in errors[0]
    request = {"jsonrpc": "2.0", "id": "r", "method": "request", "params": {
        "type": "ApprovalRequest", "payload": {"id": "r", "tool_call_id": "c", "sender": "s",
                                               "action": "a", "description": "d"}}}
    answer = {"jsonrpc": "2.0", "id": "r",
              "result": {"request_id": "r", "response": "approve"}}
    assert describe("wire", answer, request)["type"] == "response to request: ApprovalResponse"
    assert describe("wire", [1, 2])["errors"] == ["the message is not a JSON object"]
    assert json.dumps(describe(None, {"jsonrpc": "2.0"}))  # plain JSON for the page


def test_a_line_nested_too_deeply_is_recorded_as_text() -> None:
    recorder = Recorder()
    deep = b"[" * 100_000 + b"]" * 100_000
    record = recorder.add("recv", deep)
    assert not record.is_json
    assert msgspec.json.decode(record.frame)["text"] == deep.decode()
    assert recorder.add("recv", b'{"ok":true}').is_json  # it records on
