"""The sans-I/O codec: envelope rules of both dialects, byte for byte.

Protocol rules: protocol-wire.md#framing, protocol-wire.md#envelope,
protocol-wire.md#inbound-errors, protocol-wire.md#integer-and-string-ids,
protocol-wire.md#bad-input, protocol-acp.md#json-rpc-conventions, protocol-acp.md#error-codes.
No event loop is needed anywhere in this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from msgspec import UNSET

from wireproto.errors import InvalidMessage
from wireproto.jsonrpc.codec import (
    ACP_DIALECT,
    WIRE_DIALECT,
    Decoder,
    Dialect,
    Encoder,
    Incoming,
    IncomingResponse,
)
from wireproto.jsonrpc.messages import (
    Error,
    ErrorCode,
    ErrorResponse,
    Notification,
    Request,
    Response,
)

DIALECTS = [pytest.param(WIRE_DIALECT, id="wire"), pytest.param(ACP_DIALECT, id="acp")]

# --------------------------------------------------------------- expected answers

PARSE_W = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON format",'
    b'"data":null}}\n'
)
PARSE_A = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
INVREQ_W = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":null}}\n'
)
INVREQ_A = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}\n'
INVRESP_W = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid response",'
    b'"data":null}}\n'
)
INVRESP_A = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid response"}}\n'

PARSE = {"wire": PARSE_W, "acp": PARSE_A}
INVREQ = {"wire": INVREQ_W, "acp": INVREQ_A}


class NoReply:
    """Marker: the input is dropped (logged) without any answer."""


NO_REPLY = NoReply()


def answer(dialect: Dialect, data: bytes) -> bytes | NoReply | Incoming:
    """What the codec says about one inbound message.

    Returns the exact error bytes to send, ``NO_REPLY`` for a logged drop, or
    the decoded message when it is accepted.
    """
    try:
        return Decoder(dialect).decode(data)
    except InvalidMessage as exc:
        if not exc.reply:
            return NO_REPLY
        # (a response's id names the request it fails: its answer has a null id)
        return Encoder(dialect).error(None if exc.response else exc.id, exc.code, exc.message,
                                      exc.data)


def is_request(id: Any) -> Callable[[Any], bool]:
    def check(msg: Any) -> bool:
        return isinstance(msg, Request) and msg.id == id and type(msg.id) is type(id)

    return check


def is_notification(msg: Any) -> bool:
    return isinstance(msg, Notification)


# ------------------------------------------------------------ the malformed table

# (input, Wire answer, ACP answer). An answer is exact bytes, NO_REPLY, or a
# predicate on the accepted message.
MALFORMED: list[tuple[bytes, Any, Any]] = [
    # not JSON -> -32700, id null
    (b"", PARSE_W, PARSE_A),
    (b"{not-json}", PARSE_W, PARSE_A),
    (b'{"jsonrpc":"2.0","id":1,"method":"a"', PARSE_W, PARSE_A),
    (b'{"jsonrpc":"2.0","id":1,"method":"a"} trailing', PARSE_W, PARSE_A),
    (b'{"jsonrpc":"2.0","id":1,"method":"a"}{}', PARSE_W, PARSE_A),
    (b"\xff\xfe", PARSE_W, PARSE_A),
    (b"NaN", PARSE_W, PARSE_A),
    # a wrong type early does not hide malformed JSON later
    (b'{"jsonrpc":2,"id":1,"method":"a",', PARSE_W, PARSE_A),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"a"} x', PARSE_W, PARSE_A),
    (b'[1, {"a"]', PARSE_W, PARSE_A),
    # not an object -> -32600, id null
    (b"1", INVREQ_W, INVREQ_A),
    (b'"request"', INVREQ_W, INVREQ_A),
    (b"null", INVREQ_W, INVREQ_A),
    (b"true", INVREQ_W, INVREQ_A),
    # batches -> ONE -32600, id null, nothing processed
    (b"[]", INVREQ_W, INVREQ_A),
    (b"[1]", INVREQ_W, INVREQ_A),
    (b'[{"jsonrpc":"2.0","id":1,"method":"a"}]', INVREQ_W, INVREQ_A),
    # bad jsonrpc
    (b'{"jsonrpc":"2.1","id":"bad","method":"prompt"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"1.0","id":1,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":2,"id":1,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":2.0,"id":1,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":null,"id":1,"method":"a"}', INVREQ_W, INVREQ_A),
    # ids of the wrong type, on requests, notifications and responses
    (b'{"jsonrpc":"2.0","id":1.5,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":1.0,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":1e3,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":true,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":false,"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":[1],"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"a"}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":1.5,"result":1}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":true,"error":{"code":1,"message":"m"}}', INVREQ_W, INVREQ_A),
    # method of the wrong type
    (b'{"jsonrpc":"2.0","id":1,"method":1}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","id":1,"method":null}', INVREQ_W, INVREQ_A),
    (b'{"jsonrpc":"2.0","method":["a"]}', INVREQ_W, INVREQ_A),
    # missing jsonrpc: Wire tolerates it, ACP does not
    (b'{"id":1,"method":"a"}', is_request(1), INVREQ_A),
    (b'{"method":"a"}', is_notification, INVREQ_A),
    # "id": null with a method: Wire notification, ACP request answered with id null
    (b'{"jsonrpc":"2.0","id":null,"method":"a"}', is_notification, is_request(None)),
    # neither method nor id: Wire logs it, ACP answers -32600
    (b'{"jsonrpc":"2.0"}', NO_REPLY, INVREQ_A),
    (b"{}", NO_REPLY, INVREQ_A),
    (b'{"jsonrpc":"2.0","params":{"a":1}}', NO_REPLY, INVREQ_A),
    (b'{"jsonrpc":"2.0","result":1}', NO_REPLY, INVREQ_A),
    (b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}', NO_REPLY, INVREQ_A),
    # responses with both or neither of result / error, or a bad error object
    (
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}',
        INVRESP_W,
        INVRESP_A,
    ),
    (b'{"jsonrpc":"2.0","id":1,"result":null,"error":null}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":"x"}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1,"error":null}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}', INVRESP_W, INVRESP_A),
    (b'{"jsonrpc":"2.0","id":1,"error":"boom"}', INVRESP_W, INVRESP_A),
    # a response with id null is never answered (no error ping-pong)
    (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        NO_REPLY,
        NO_REPLY,
    ),
    (PARSE_W.rstrip(b"\n"), NO_REPLY, NO_REPLY),
    (INVREQ_A.rstrip(b"\n"), NO_REPLY, NO_REPLY),
    (b'{"jsonrpc":"2.0","id":null,"result":{}}', NO_REPLY, NO_REPLY),
]


@pytest.mark.parametrize(("data", "wire", "acp"), MALFORMED, ids=[repr(m[0]) for m in MALFORMED])
def test_malformed_table(data: bytes, wire: Any, acp: Any) -> None:
    for dialect, expected in ((WIRE_DIALECT, wire), (ACP_DIALECT, acp)):
        got = answer(dialect, data)
        if callable(expected):
            assert expected(got), (dialect.name, got)
        else:
            assert got == expected, dialect.name


def test_idless_message_is_logged_without_reply_on_wire() -> None:
    with pytest.raises(InvalidMessage) as info:
        Decoder(WIRE_DIALECT).decode(b'{"jsonrpc":"2.0","params":{}}')
    assert info.value.reply is False
    assert info.value.code == ErrorCode.INVALID_REQUEST
    with pytest.raises(InvalidMessage) as info:
        Decoder(ACP_DIALECT).decode(b'{"jsonrpc":"2.0","params":{}}')
    assert info.value.reply is True
    assert info.value.id is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_invalid_message_is_chained_to_the_library_error(dialect: Dialect) -> None:
    with pytest.raises(InvalidMessage) as info:
        Decoder(dialect).decode(b"{nope")
    assert isinstance(info.value.__cause__, msgspec.DecodeError)


# ----------------------------------------------------- JSON-RPC 2.0 specification


def _subtract(p: Any) -> Any:
    if isinstance(p, list):
        return p[0] - p[1]
    return p["minuend"] - p["subtrahend"]


SPEC_METHODS: dict[str, Callable[[Any], Any]] = {
    "subtract": _subtract,
    "sum": lambda p: sum(p),
    "get_data": lambda p: ["hello", 5],
    "update": lambda p: None,
    "notify_hello": lambda p: None,
    "notify_sum": lambda p: None,
}


def toy_server(dialect: Dialect, data: bytes) -> bytes | None:
    """A minimal server over the codec, enough for the specification examples."""
    decoder, encoder = Decoder(dialect), Encoder(dialect)
    try:
        msg = decoder.decode(data)
    except InvalidMessage as exc:
        return encoder.error(exc.id, exc.code, exc.message, exc.data) if exc.reply else None
    if isinstance(msg, Notification):
        return None
    assert isinstance(msg, Request)
    method = SPEC_METHODS.get(msg.method)
    if method is None:
        text = dialect.method_not_found.format(method=msg.method)
        return encoder.error(msg.id, ErrorCode.METHOD_NOT_FOUND, text)
    return encoder.response(msg.id, method(decoder.decode_params(msg.method, msg.params, Any)))


NOT_FOUND = {
    "wire": b'{"jsonrpc":"2.0","id":"1","error":{"code":-32601,'
    b'"message":"Unexpected method received: foobar","data":null}}\n',
    "acp": b'{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"Method not found"}}\n',
}

# (name, input as the specification writes it, answer per dialect or one for both)
SPEC_EXAMPLES: list[tuple[str, bytes, Any]] = [
    (
        "positional params",
        b'{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}',
        b'{"jsonrpc":"2.0","id":1,"result":19}\n',
    ),
    (
        "positional params reversed",
        b'{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}',
        b'{"jsonrpc":"2.0","id":2,"result":-19}\n',
    ),
    (
        "named params",
        b'{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42},'
        b' "id": 3}',
        b'{"jsonrpc":"2.0","id":3,"result":19}\n',
    ),
    (
        "named params reordered",
        b'{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23},'
        b' "id": 4}',
        b'{"jsonrpc":"2.0","id":4,"result":19}\n',
    ),
    ("notification", b'{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}', None),
    ("notification without params", b'{"jsonrpc": "2.0", "method": "foobar"}', None),
    ("non-existent method", b'{"jsonrpc": "2.0", "method": "foobar", "id": "1"}', NOT_FOUND),
    (
        "invalid JSON",
        b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]',
        PARSE,
    ),
    ("invalid request object", b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}', INVREQ),
    (
        "batch, invalid JSON",
        b'[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},'
        b'\n  {"jsonrpc": "2.0", "method"\n]',
        PARSE,
    ),
    ("empty array", b"[]", INVREQ),
    ("batch, one invalid element", b"[1]", INVREQ),
    ("batch, invalid elements", b"[1,2,3]", INVREQ),
    (
        "batch, mixed",
        b'[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},'
        b' {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},'
        b' {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},'
        b' {"foo": "boo"},'
        b' {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},'
        b' {"jsonrpc": "2.0", "method": "get_data", "id": "9"}]',
        INVREQ,
    ),
    (
        "batch, all notifications",
        b'[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},'
        b' {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]',
        INVREQ,
    ),
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    ("data", "expected"), [e[1:] for e in SPEC_EXAMPLES], ids=[e[0] for e in SPEC_EXAMPLES]
)
def test_specification_examples(dialect: Dialect, data: bytes, expected: Any) -> None:
    if isinstance(expected, dict):
        expected = expected[dialect.name]
    assert toy_server(dialect, data) == expected


@pytest.mark.parametrize("dialect", DIALECTS)
def test_specification_notifications_classified(dialect: Dialect) -> None:
    msg = Decoder(dialect).decode(b'{"jsonrpc": "2.0", "method": "update", "params": [1,2,3]}')
    assert isinstance(msg, Notification)
    assert msg.method == "update"
    assert isinstance(msg.params, msgspec.Raw)
    assert msgspec.json.decode(msg.params) == [1, 2, 3]
    msg = Decoder(dialect).decode(b'{"jsonrpc": "2.0", "method": "foobar"}')
    assert isinstance(msg, Notification)
    assert msg.params is UNSET


# ------------------------------------------------------------------------- ids

IDS: list[int | str] = [
    0,
    1,
    -1,
    7,
    2**31,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    # beyond int64 (ACP's type): accepted and echoed exactly, never rounded
    2**64,
    10**30,
    -(10**30),
    "0",
    "7",
    "",
    "é",
    'a"b\\c',
    "call_0~2",
    "00",
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("rid", IDS, ids=repr)
def test_ids_are_echoed_exactly(dialect: Dialect, rid: int | str) -> None:
    decoder, encoder = Decoder(dialect), Encoder(dialect)
    id_json = msgspec.json.encode(rid)
    req = decoder.decode(b'{"jsonrpc":"2.0","id":' + id_json + b',"method":"m"}')
    assert isinstance(req, Request)
    assert req.id == rid
    assert type(req.id) is type(rid)
    assert req.id is not None
    assert encoder.response(req.id, None) == (
        b'{"jsonrpc":"2.0","id":' + id_json + b',"result":null}\n'
    )
    err = encoder.error(req.id, -32000, "x")
    assert err.startswith(b'{"jsonrpc":"2.0","id":' + id_json + b',"error":')
    resp = decoder.decode(b'{"jsonrpc":"2.0","id":' + id_json + b',"result":1}')
    assert isinstance(resp, IncomingResponse)
    assert resp.id == rid
    assert type(resp.id) is type(rid)


def test_int_and_string_ids_stay_distinct() -> None:
    decoder = Decoder(ACP_DIALECT)
    a = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":1}')
    b = decoder.decode(b'{"jsonrpc":"2.0","id":"1","result":1}')
    assert isinstance(a, IncomingResponse)
    assert isinstance(b, IncomingResponse)
    assert (type(a.id), a.id) != (type(b.id), b.id)


# ---------------------------------------------------------------------- params


@pytest.mark.parametrize("dialect", DIALECTS)
def test_params_omitted_never_null(dialect: Dialect) -> None:
    encoder = Encoder(dialect)
    assert encoder.request(1, "m") == b'{"jsonrpc":"2.0","id":1,"method":"m"}\n'
    assert encoder.request(1, "m", None) == b'{"jsonrpc":"2.0","id":1,"method":"m"}\n'
    assert encoder.notification("n") == b'{"jsonrpc":"2.0","method":"n"}\n'
    assert encoder.notification("n", None) == b'{"jsonrpc":"2.0","method":"n"}\n'
    assert encoder.encode(Request(id=0, method="m", params=None)) == (
        b'{"jsonrpc":"2.0","id":0,"method":"m"}\n'
    )
    assert encoder.notification("n", {}) == b'{"jsonrpc":"2.0","method":"n","params":{}}\n'
    assert encoder.notification("n", []) == b'{"jsonrpc":"2.0","method":"n","params":[]}\n'


def test_null_params_absent_on_wire_kept_on_acp() -> None:
    data = b'{"jsonrpc":"2.0","id":"1","method":"m","params":null}'
    wire = Decoder(WIRE_DIALECT).decode(data)
    assert isinstance(wire, Request)
    assert wire.params is UNSET
    acp = Decoder(ACP_DIALECT).decode(data)
    assert isinstance(acp, Request)
    assert isinstance(acp.params, msgspec.Raw)
    assert bytes(acp.params) == b"null"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_success_response_always_has_result(dialect: Dialect) -> None:
    encoder = Encoder(dialect)
    assert encoder.response(1, None) == b'{"jsonrpc":"2.0","id":1,"result":null}\n'
    assert encoder.encode(Response(id="a")) == b'{"jsonrpc":"2.0","id":"a","result":null}\n'
    assert encoder.response(1, {}) == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    resp = Decoder(dialect).decode(b'{"jsonrpc":"2.0","id":1,"result":null}')
    assert isinstance(resp, IncomingResponse)
    assert isinstance(resp.result, msgspec.Raw)
    assert bytes(resp.result) == b"null"
    assert resp.error is None


# ---------------------------------------------------------------------- errors


def test_error_objects_per_dialect() -> None:
    wire, acp = Encoder(WIRE_DIALECT), Encoder(ACP_DIALECT)
    assert wire.error(1, -32000, "busy") == (
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy","data":null}}\n'
    )
    assert acp.error(1, -32000, "busy") == (
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy"}}\n'
    )
    # None means "no data" for both, so InvalidMessage's default never leaks as null on ACP
    assert acp.error(1, -32000, "busy", None) == acp.error(1, -32000, "busy")
    assert wire.error(1, -32000, "busy", None) == wire.error(1, -32000, "busy")
    for enc in (wire, acp):
        assert enc.error("x", 1, "m", {"k": [1]}) == (
            b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m","data":{"k":[1]}}}\n'
        )
        assert enc.error(None, 1, "m", 0) == (
            b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m","data":0}}\n'
        )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_error_response_decoded(dialect: Dialect) -> None:
    decoder = Decoder(dialect)
    msg = decoder.decode(
        b'{"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"Request cancelled"}}'
    )
    assert msg == IncomingResponse(id=5, error=Error(code=-32800, message="Request cancelled"))
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m","data":null}}')
    assert isinstance(msg, IncomingResponse)
    assert msg.error is not None
    assert msg.error.data is None


class Inner(msgspec.Struct):
    b: list[int]


class Outer(msgspec.Struct):
    a: Inner


INVALID_PARAMS_TEXT = {"wire": "Invalid parameters for method `m`", "acp": "Invalid params"}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    ("params", "path", "reason"),
    [
        (b'{"a":{"b":[true]}}', "$.a.b[0]", "Expected `int`, got `bool`"),
        (b'{"a":{"b":[1,"x"]}}', "$.a.b[1]", "Expected `int`, got `str`"),
        (b'{"a":{}}', "$.a", "Object missing required field `b`"),
        (b"{}", "$", "Object missing required field `a`"),
        (b"[1]", "$", "Expected `object`, got `array`"),
    ],
)
def test_invalid_params(dialect: Dialect, params: bytes, path: str, reason: str) -> None:
    decoder, encoder = Decoder(dialect), Encoder(dialect)
    req = decoder.decode(b'{"jsonrpc":"2.0","id":9,"method":"m","params":' + params + b"}")
    assert isinstance(req, Request)
    with pytest.raises(InvalidMessage) as info:
        decoder.decode_params(req.method, req.params, Outer)
    exc = info.value
    assert exc.code == -32602
    assert int(ErrorCode.INVALID_PARAMS) == -32602
    assert exc.data == {"path": path, "reason": reason}
    assert isinstance(exc.__cause__, msgspec.ValidationError)
    text = INVALID_PARAMS_TEXT[dialect.name]
    assert (
        encoder.error(req.id, exc.code, exc.message, exc.data)
        == msgspec.json.encode(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "error": {"code": -32602, "message": text, "data": exc.data},
            }
        )
        + b"\n"
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_absent_params_decode_as_empty_object(dialect: Dialect) -> None:
    class Opt(msgspec.Struct):
        x: int = 3

    decoder = Decoder(dialect)
    assert decoder.decode_params("m", UNSET, Opt) == Opt()
    assert decoder.decode_params("m", msgspec.Raw(b'{"x":1}'), Opt) == Opt(x=1)


def test_invalid_utf8_in_params() -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"t":"a\xffb"}}'
    wire = Decoder(WIRE_DIALECT)
    req = wire.decode(data)
    assert isinstance(req, Request)
    assert wire.decode_params("m", req.params, dict[str, str]) == {"t": "a\ufffdb"}
    acp = Decoder(ACP_DIALECT)
    req = acp.decode(data)
    assert isinstance(req, Request)
    with pytest.raises(InvalidMessage) as info:
        acp.decode_params("m", req.params, dict[str, str])
    assert info.value.code == ErrorCode.PARSE_ERROR


def test_invalid_utf8_in_envelope() -> None:
    data = b'{"jsonrpc":"2.0","id":"\xff","method":"m"}'
    req = Decoder(WIRE_DIALECT).decode(data)
    assert isinstance(req, Request)
    assert req.id == "\ufffd"
    assert answer(ACP_DIALECT, data) == PARSE_A


@pytest.mark.parametrize("dialect", DIALECTS)
def test_decode_result(dialect: Dialect) -> None:
    decoder = Decoder(dialect)
    assert decoder.decode_result(msgspec.Raw(b'{"b":[1]}'), Inner) == Inner(b=[1])
    with pytest.raises(msgspec.ValidationError):
        decoder.decode_result(msgspec.Raw(b'{"b":"x"}'), Inner)


# --------------------------------------------------------------- unknown fields


@pytest.mark.parametrize("dialect", DIALECTS)
def test_unknown_fields_ignored(dialect: Dialect) -> None:
    decoder = Decoder(dialect)
    req = decoder.decode(
        b'{"x":1,"jsonrpc":"2.0","_meta":{"a":[1]},"id":1,"method":"m","params":[1],"zz":null}'
    )
    assert isinstance(req, Request)
    assert (req.id, req.method) == (1, "m")
    note = decoder.decode(b'{"jsonrpc":"2.0","method":"n","extra":"x"}')
    assert isinstance(note, Notification)
    resp = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":2,"extra":[]}')
    assert isinstance(resp, IncomingResponse)
    assert resp.result is not UNSET
    err = decoder.decode(b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":2}}')
    assert err == IncomingResponse(id=1, error=Error(code=1, message="m"))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_member_order_does_not_matter(dialect: Dialect) -> None:
    req = Decoder(dialect).decode(b'{"params":{"a":1},"method":"m","id":"q","jsonrpc":"2.0"}')
    assert isinstance(req, Request)
    assert (req.id, req.method) == ("q", "m")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_line_terminators_and_whitespace_tolerated(dialect: Dialect) -> None:
    req = Decoder(dialect).decode(b' \t{"jsonrpc":"2.0","id":1,"method":"m"}\r\n')
    assert isinstance(req, Request)


# --------------------------------------------------------------------- encoding


@pytest.mark.parametrize("dialect", DIALECTS)
def test_encoding_tags_first_compact_newline(dialect: Dialect) -> None:
    encoder = Encoder(dialect)
    assert encoder.request(3, "session/prompt", {"z": 1, "a": [1, 2]}) == (
        b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"z":1,"a":[1,2]}}\n'
    )
    assert encoder.notification("event", {"k": None}) == (
        b'{"jsonrpc":"2.0","method":"event","params":{"k":null}}\n'
    )
    assert encoder.response("r", [1, {"b": True}]) == (
        b'{"jsonrpc":"2.0","id":"r","result":[1,{"b":true}]}\n'
    )
    assert (
        encoder.encode(ErrorResponse(id=2, error=Error(code=-32603, message="Internal error")))
        == b'{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}\n'
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_encoding_raw_utf8_single_line(dialect: Dialect) -> None:
    encoder = Encoder(dialect)
    out = encoder.notification("m", {"text": "héllo\nwörld 😀 \u2028"})
    assert out == (
        b'{"jsonrpc":"2.0","method":"m","params":{"text":"h\xc3\xa9llo\\nw\xc3\xb6rld '
        b'\xf0\x9f\x98\x80 \xe2\x80\xa8"}}\n'
    )
    assert out.count(b"\n") == 1
    assert b"\\u" not in out


@pytest.mark.parametrize("dialect", DIALECTS)
def test_encoder_buffer_reuse_is_safe(dialect: Dialect) -> None:
    encoder = Encoder(dialect)
    big = encoder.notification("m", "x" * (2 << 20))
    small = encoder.notification("m", 1)
    again = encoder.notification("m", "x" * (2 << 20))
    assert small == b'{"jsonrpc":"2.0","method":"m","params":1}\n'
    assert big == again
    assert big.endswith(b'"}\n')
    with pytest.raises(TypeError):
        encoder.notification("m", object())
    assert encoder.notification("m", 2) == b'{"jsonrpc":"2.0","method":"m","params":2}\n'
