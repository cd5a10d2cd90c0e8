"""Generated bad input against the demo agent, served over ACP and over Wire.

Hypothesis writes short sequences of lines to a served demo agent: JSON-RPC
envelopes with the protocols' real method names, random ids and random or
nearly-valid params, mixed with broken JSON. Whatever arrives:

* every request with a string or integer id is answered exactly once, with a
  result or a well-formed error object;
* no answer is an internal error (``-32603``): bad input must be refused with
  the right code, never crash a handler;
* the agent still answers a well-formed request afterwards (it did not fall
  over), and its serving task ends cleanly when the input ends.

Requests the agent sends back (permission, file system) are refused at once,
so a generated prompt can never wait for the client.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timeouts import units

from wireproto.adapters.acp import serve_acp
from wireproto.adapters.wire import serve_wire
from wireproto.agent.demo import DemoAgent
from wireproto.transports.memory import memory_pair

SID = "$SID"
"""Replaced, before sending, by the id of a session opened for the example."""

ACP_METHODS = [
    "initialize", "authenticate", "session/new", "session/load", "session/resume",
    "session/list", "session/close", "session/delete", "session/prompt", "session/set_mode",
    "session/set_config_option", "session/set_model", "session/cancel", "$/cancel_request",
    "fs/read_text_file", "nope",
]
WIRE_METHODS = ["initialize", "prompt", "steer", "cancel", "replay", "set_plan_mode", "nope"]

_scalar = (
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5)
    | st.sampled_from(["", "/", "/tmp", "default", "text", "end_turn", "1", SID, SID])
)
_json = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from([
    "protocolVersion", "protocol_version", "clientCapabilities", "sessionId", "cwd",
    "mcpServers", "prompt", "modeId", "configId", "value", "modelId", "methodId", "requestId",
    "user_input", "type", "text", "content", "cursor", "path",
])
_params = st.one_of(
    _json,
    st.dictionaries(_keys, _json | st.lists(st.dictionaries(_keys, _json, max_size=3),
                                            max_size=2), max_size=4),
)
_ABSENT = object()


_DEEP = {  # a placeholder in a generated line -> (text nested 100k deep, well-formed)
    b'"@open@"': (b"[" * 100_000, False),
    b'"@array@"': (b"[" * 100_000 + b"]" * 100_000, True),
    b'"@object@"': (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, True),
}


def _expand(line: bytes) -> bytes:
    """The line to send: placeholders replaced by deep text (kept out of reprs)."""
    for mark, (deep, _) in _DEEP.items():
        line = line.replace(mark, deep)
    return line


def _shallow(line: bytes) -> bytes:
    """The line as the test reads it: well-formed deep text replaced by ``0``."""
    for mark, (_, valid) in _DEEP.items():
        line = line.replace(mark, b"0" if valid else b"[")
    return line


@st.composite
def _deep_line(draw: st.DrawFn, methods: list[str]) -> bytes:
    deep = draw(st.sampled_from(list(_DEEP)))
    where = draw(st.sampled_from(["alone", "params", "meta", "other"]))
    if where == "alone":
        return deep
    head = b'{"jsonrpc":"2.0","id":%d,"method":"%s",' % (
        draw(st.integers(0, 50)), draw(st.sampled_from(methods)).encode())
    if where == "params":
        return head + b'"params":' + deep + b"}"
    if where == "meta":
        return head + b'"params":{"_meta":' + deep + b"}}"
    return head + b'"x":' + deep + b"}"


@st.composite
def _line(draw: st.DrawFn, methods: list[str]) -> bytes:
    if draw(st.integers(0, 9)) == 0:  # broken or non-object JSON
        return draw(st.sampled_from([b"{", b"[]", b"null", b'"x"', b"{}", b'{"jsonrpc":"2.0"}',
                                     b"\xff\xfe", b'{"jsonrpc":"2.0","id":1,"result":{}}']))
    if draw(st.integers(0, 9)) == 0:  # nested deeper than any decoder goes
        return draw(_deep_line(methods))
    members: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        members["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]))
    ident = draw(st.one_of(st.integers(0, 50), st.text(max_size=3), st.none(), st.just(_ABSENT),
                           st.booleans()))
    if ident is not _ABSENT:
        members["id"] = ident
    members["method"] = draw(st.sampled_from(methods))
    params = draw(st.one_of(_params, st.just(_ABSENT)))
    if params is not _ABSENT:
        members["params"] = params
    return json.dumps(members).encode()


async def _exchange(
    serve: Any, prefix: list[bytes], lines: list[bytes], probe: bytes
) -> list[dict[str, Any]]:
    """Write ``prefix`` (and wait for its answers), ``lines``, then ``probe``.

    A session id in the answer to the prefix request ``"new"`` replaces
    :data:`SID` in ``lines``. Returns every answer the agent wrote.
    """
    ours, theirs = memory_pair(max_buffer=1024)
    answers: list[dict[str, Any]] = []
    arrived = {ident: anyio.Event() for ident in ("new", "probe")}
    with anyio.fail_after(units(4)):
        async with ours, anyio.create_task_group() as tg:
            tg.start_soon(serve, theirs)

            async def read() -> None:
                async for raw in ours:
                    msg = msgspec.json.decode(raw)
                    if "method" in msg:  # the agent asks us something: refuse at once
                        if "id" in msg:
                            await ours.send(json.dumps({
                                "jsonrpc": "2.0", "id": msg["id"],
                                "error": {"code": -32601, "message": "no"},
                            }).encode())
                        continue
                    answers.append(msg)
                    if msg.get("id") in arrived:
                        arrived[msg["id"]].set()

            tg.start_soon(read)
            for line in prefix:
                await ours.send(line)
            sid = SID
            if prefix:
                await arrived["new"].wait()
                new = next(a for a in answers if a.get("id") == "new")
                sid = new.get("result", {}).get("sessionId", SID)
            for line in lines:
                line = line.replace(json.dumps(SID).encode(), json.dumps(sid).encode())
                await ours.send(_expand(line))
            await ours.send(probe)
            await arrived["probe"].wait()
            await ours.send_eof()  # end of input: the agent must stop by itself
    return answers


def _check(lines: list[bytes], answers: list[dict[str, Any]], versions: tuple[Any, ...]) -> None:
    """``versions``: the ``jsonrpc`` members (``None``: absent) of a valid envelope."""
    asked: dict[Any, int] = {}
    for line in lines:
        try:
            msg = json.loads(_shallow(line))
        except ValueError:
            continue
        if (isinstance(msg, dict) and "method" in msg and type(msg.get("id")) in (int, str)
                and msg.get("jsonrpc") in versions):
            asked[msg["id"]] = asked.get(msg["id"], 0) + 1
    answered: dict[Any, int] = {}
    for answer in answers:
        assert ("result" in answer) != ("error" in answer), answer
        if "error" in answer:
            error = answer["error"]
            assert isinstance(error["code"], int) and isinstance(error["message"], str), answer
            assert error["code"] != -32603, f"internal error for {lines!r}: {answer}"
        if answer.get("id") is not None and answer["id"] != "probe":
            answered[answer["id"]] = answered.get(answer["id"], 0) + 1
    for ident, count in asked.items():  # ids may repeat: one answer per request sent
        assert answered.get(ident, 0) == count, (ident, lines, answers)


_SETTINGS = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100")), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@_SETTINGS
@given(lines=st.lists(_line(ACP_METHODS), min_size=1, max_size=8))
def test_acp_agent_survives_generated_input(
    lines: list[bytes], tmp_path: Path, backend: str
) -> None:

    async def serve(stream: Any) -> None:
        await serve_acp(DemoAgent(), stream)

    prefix = [
        b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}',
        json.dumps({"jsonrpc": "2.0", "id": "new", "method": "session/new",
                    "params": {"cwd": str(tmp_path), "mcpServers": []}}).encode(),
    ]
    probe = b'{"jsonrpc":"2.0","id":"probe","method":"session/list","params":{}}'
    answers = anyio.run(_exchange, serve, prefix, lines, probe, backend=backend)
    _check(lines, answers, ("2.0",))
    assert any(a.get("id") == "new" and "result" in a for a in answers)
    assert any(a.get("id") == "probe" and "result" in a for a in answers)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@_SETTINGS
@given(lines=st.lists(_line(WIRE_METHODS), min_size=1, max_size=8))
def test_wire_server_survives_generated_input(
    lines: list[bytes], tmp_path: Path, backend: str
) -> None:

    async def serve(stream: Any) -> None:
        await serve_wire(DemoAgent(), stream, work_dir=str(tmp_path))

    probe = b'{"jsonrpc":"2.0","id":"probe","method":"initialize",' \
        b'"params":{"protocol_version":"1.10"}}'
    answers = anyio.run(_exchange, serve, [], lines, probe, backend=backend)
    _check(lines, answers, ("2.0", None))
    assert any(a.get("id") == "probe" for a in answers)
