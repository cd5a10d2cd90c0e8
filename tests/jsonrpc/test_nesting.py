"""Input nested deeper than msgspec decodes is an ordinary error, never a crash.

msgspec raises :class:`RecursionError` below a thousand levels. Every decoder
entry point turns that into the answer any other malformed message gets:
``-32700`` for text that is not JSON, ``-32600`` for well-formed JSON that is
too deep, ``-32602`` when the deep part is inside ``params`` (with the ``id``
echoed), and a response nested too deeply fails the request it answers.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wireproto.errors import InvalidMessage
from wireproto.jsonrpc._nesting import BASE_STEPS, BYTES_PER_STEP, budget, scan
from wireproto.jsonrpc.codec import (
    ACP_DIALECT,
    MCP_DIALECT,
    TOO_DEEP,
    WIRE_DIALECT,
    Decoder,
    Dialect,
    is_too_deep,
)
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.router import Router

DEPTHS = [20_000, 100_000]  # (msgspec gives up near 1,000 levels, or 8,000 on Python 3.13)
DIALECTS = [pytest.param(d, id=d.name) for d in (ACP_DIALECT, WIRE_DIALECT, MCP_DIALECT)]


def deep_array(n: int) -> bytes:
    return b"[" * n + b"]" * n


def deep_object(n: int) -> bytes:
    return b'{"a":' * n + b"1" + b"}" * n


def _decoders(dialect: Dialect) -> list[Decoder]:
    router = Router()

    @router.request("x")
    async def x(p: dict[str, Any]) -> None: ...

    return [Decoder(dialect), Decoder(dialect, router)]  # two passes, and one pass first


def _refusal(decoder: Decoder, data: bytes) -> InvalidMessage:
    with pytest.raises(InvalidMessage) as info:
        decoder.decode(data)
    return info.value


# ------------------------------------------------------------------ the codec


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("n", DEPTHS)
def test_deep_text_that_is_not_json_is_a_parse_error(dialect: Dialect, n: int) -> None:
    for decoder in _decoders(dialect):
        for data in (b"[" * n, b'{"a":' * n, deep_array(n)[:-1], deep_array(n) + b"x",
                     b"[" * n + b"1 2" + b"]" * n, b"[" * n + b"]" * (n - 1) + b"}"):
            exc = _refusal(decoder, data)
            assert (exc.code, exc.id, exc.reply) == (ErrorCode.PARSE_ERROR, None, True)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("n", DEPTHS)
def test_deep_well_formed_json_is_an_invalid_request(dialect: Dialect, n: int) -> None:
    for decoder in _decoders(dialect):
        for data in (deep_array(n), deep_object(n), b" " + deep_array(n) + b"\n"):
            exc = _refusal(decoder, data)
            # an object with neither method nor id is answered as the dialect says
            reply = dialect.answer_idless or data[:1] != b"{"
            assert (exc.code, exc.id, exc.reply) == (ErrorCode.INVALID_REQUEST, None, reply)
            assert exc.data == {"path": "$", "reason": TOO_DEEP}
        # deep outside params: the id is still echoed
        line = b'{"jsonrpc":"2.0","id":"q7","method":"x","extra":' + deep_array(n) + b"}"
        exc = _refusal(decoder, line)
        assert (exc.code, exc.id, exc.reply) == (ErrorCode.INVALID_REQUEST, "q7", True)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("n", DEPTHS)
@pytest.mark.parametrize("method", ["x", "initialize"])  # routed (one pass) or not
def test_deep_params_are_invalid_params_with_the_id(dialect: Dialect, n: int, method: str) -> None:
    for decoder in _decoders(dialect):
        for params in (deep_array(n), b'{"_meta":' + deep_object(n) + b"}"):
            line = b'{"jsonrpc":"2.0","id":7,"method":"%s","params":%s}' % (
                method.encode(), params)
            exc = _refusal(decoder, line)
            assert (exc.code, exc.id, exc.reply) == (ErrorCode.INVALID_PARAMS, 7, True)
            assert exc.message == dialect.invalid_params.format(method=method)
            assert exc.data == {"path": "$.params", "reason": TOO_DEEP}
            # a notification is never answered
            note = b'{"jsonrpc":"2.0","method":"%s","params":%s}' % (method.encode(), params)
            assert _refusal(decoder, note).reply is False


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_deep_response_fails_its_request_and_is_not_answered(dialect: Dialect) -> None:
    for decoder in _decoders(dialect):
        for member in (b"result", b"error"):
            line = b'{"jsonrpc":"2.0","id":3,"%s":%s}' % (member, deep_array(20_000))
            exc = _refusal(decoder, line)
            assert (exc.id, exc.reply, exc.response) == (3, False, True)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_deep_params_and_results_decoded_later(dialect: Dialect) -> None:
    decoder = Decoder(dialect)
    raw = msgspec.Raw(deep_array(20_000))
    with pytest.raises(InvalidMessage) as info:
        decoder.decode_params("m", raw, list[Any])
    assert info.value.code == ErrorCode.INVALID_PARAMS
    assert info.value.data == {"path": "$", "reason": TOO_DEEP}

    def recurse(raw: msgspec.Raw) -> Any:  # a route's own decoder that recurses in Python
        return recurse(raw)

    with pytest.raises(InvalidMessage) as info:
        decoder.decode_params("m", msgspec.Raw(b"{}"), dict[str, Any], recurse)
    assert info.value.code == ErrorCode.INVALID_PARAMS
    with pytest.raises(msgspec.ValidationError) as bad:
        decoder.decode_result(raw, list[Any])
    assert is_too_deep(bad.value)


# ------------------------------------------------------------------ the scan


def test_scan_reads_the_top_level_of_deep_messages() -> None:
    found = scan(b'{"jsonrpc":"2.0","id":"a\\"b","method":"m","params":' + deep_array(3000)
                 + b"}")
    assert (found.json, found.id, found.method, found.deepest_in) == (True, 'a"b', "m", "params")
    assert found.depth == 3001 and found.members
    assert scan(b'{"id":true,"method":1,"x":[]}').id is None
    assert not scan(deep_array(10)).members
    assert not scan(b"\xff" + deep_array(10)).json


_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
            allow_infinity=False) | st.text(max_size=6))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=12)
_noise = st.sampled_from([b"[", b"]", b"{", b"}", b",", b":", b'"', b"\\", b" ", b"1", b"-",
                          b".", b"e", b"tru", b"null", b"\x00", b"\xff", b"\n", b"\t"])


@st.composite
def _texts(draw: st.DrawFn) -> bytes:
    """JSON text, sometimes spaced out, sometimes broken by an edit."""
    text = json.dumps(draw(_values), indent=draw(st.sampled_from([None, 1])),
                      ensure_ascii=draw(st.booleans())).encode()
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(_noise) + text[at:]
        else:
            text = text[:at] + text[at + 1:]
    return text


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        if "out of range" not in str(exc):
            return False
        try:  # a number beyond a float is still JSON text: ask the other parser
            json.loads(data)
        except ValueError:
            return False
    return True


@settings(max_examples=400)
@given(text=_texts())
def test_the_scan_agrees_with_msgspec_on_shallow_input(text: bytes) -> None:
    assert scan(text).json == _is_json(text), text


@settings(max_examples=50, deadline=None)
@given(text=_texts(), n=st.integers(1_000, 5_000), wrap=st.sampled_from(["array", "object"]))
def test_the_scan_agrees_with_msgspec_under_deep_nesting(text: bytes, n: int, wrap: str) -> None:
    """Deep wrapping changes nothing but the depth: valid stays valid, broken stays broken."""
    head, tail = (b"[", b"]") if wrap == "array" else (b'{"k":', b"}")
    found = scan(head * n + text + tail * n)
    assert found.json == _is_json(head + text + tail), text
    assert found.depth >= n or not found.json


# ------------------------------------------------------------------ generated envelopes

_N = 20_000
_DEEP_PARTS = {  # name -> (text, well-formed); drawn by name to keep reprs short
    "open": (b"[" * _N, False), "array": (deep_array(_N), True), "object": (deep_object(_N), True),
    "open-object": (b'{"a":' * _N, False), "extra-close": (deep_array(_N - 1) + b"]", False),
    "trailing-comma": (b"[" * _N + b"1,]" + b"]" * (_N - 1), False),
    "string": (b"[" * _N + b'"a"' + b"]" * _N, True),
}


@st.composite
def _deep_lines(draw: st.DrawFn) -> tuple[str, str, Any]:
    """A deep part, where it goes, and the id it should be answered with."""
    deep = draw(st.sampled_from(sorted(_DEEP_PARTS)))
    where = draw(st.sampled_from(["alone", "params", "other", "result"]))
    ident = draw(st.integers(0, 99) | st.text(max_size=3))
    return deep, where, None if where == "alone" else ident


def _line(deep: bytes, where: str, ident: Any) -> bytes:
    if where == "alone":
        return deep
    head = b'{"jsonrpc":"2.0","id":%s,' % json.dumps(ident).encode()
    if where == "result":
        return head + b'"result":' + deep + b"}"
    member = b"params" if where == "params" else b"zzz"
    return head + b'"method":"x","%s":%s}' % (member, deep)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=60, deadline=None)
@given(case=_deep_lines())
def test_every_deep_line_gets_an_ordinary_refusal(
    dialect: Dialect, case: tuple[str, str, Any]
) -> None:
    name, where, ident = case
    deep, valid = _DEEP_PARTS[name]
    line = _line(deep, where, ident)
    for decoder in _decoders(dialect):
        exc = _refusal(decoder, line)
        if not valid:
            assert exc.code == ErrorCode.PARSE_ERROR and exc.id is None
        elif exc.response:
            assert exc.id == ident and not exc.reply
        else:
            assert exc.code in (ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_PARAMS)
            assert exc.id == ident
            assert exc.reply == (ident is not None or dialect.answer_idless
                                 or not line.startswith(b"{"))


def test_the_scan_gives_up_within_its_step_budget_and_assumes_the_rest_well_formed() -> None:
    """Input that cannot fold is read step by step: past its budget the scan stops."""
    head = b'{"jsonrpc":"2.0","id":9,"method":"m","params":'
    line = head + b"[[1]," * 50_000 + b"x"  # broken at the very end
    found = scan(line)
    assert not found.complete and found.json
    assert found.steps == budget(len(line))
    assert (found.id, found.method, found.deepest_in) == (9, "m", "params")
    exc = _refusal(Decoder(ACP_DIALECT), line)
    assert (exc.code, exc.id) == (ErrorCode.INVALID_PARAMS, 9)
    plain = scan(b"[" * 100_000)  # a plain run is one step: read to the end
    assert plain.complete and plain.steps <= 2


@pytest.mark.parametrize("unit", [b"[[1],", b"[1,", b'{"a":[', b"[[],", b'["",', b"[ 1 , "])
@pytest.mark.parametrize("n", [300, 3_000, 60_000])
def test_the_scan_costs_a_small_constant_per_byte(unit: bytes, n: int) -> None:
    """A peer cannot make the scan take many steps for few bytes of input."""
    line = unit * n
    found = scan(line)
    assert found.steps <= BASE_STEPS + len(line) // BYTES_PER_STEP
