"""One-pass decoding of calls (a Decoder built from a method table) against two passes.

Whatever the input, a decoder given a router must end in the same place as
one without: the same message, the same decoded params, the same error
answer byte for byte. The one pass is only allowed to be faster. No event
loop is needed in this module.
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loading import load_file
from msgspec import UNSET

from wireproto._switches import FAST_PATHS
from wireproto.errors import InvalidMessage
from wireproto.jsonrpc._onepass import Plan
from wireproto.jsonrpc.codec import (
    ACP_DIALECT,
    MCP_DIALECT,
    WIRE_DIALECT,
    Call,
    Decoder,
    Dialect,
    Encoder,
    IncomingResponse,
)
from wireproto.jsonrpc.messages import Notification, Request
from wireproto.rpc.router import Router


def _load_sibling(name: str) -> Any:
    """Import another test module of this folder."""
    return load_file(Path(__file__).with_name(f"{name}.py"), f"wireproto_tests_jsonrpc_{name}")


MALFORMED: list[tuple[bytes, Any, Any]] = _load_sibling("test_codec").MALFORMED

DIALECTS = [
    pytest.param(WIRE_DIALECT, id="wire"),
    pytest.param(ACP_DIALECT, id="acp"),
    pytest.param(MCP_DIALECT, id="mcp"),
]


# ------------------------------------------------------------------ the table


class Point(msgspec.Struct):
    x: int
    y: int = 0


class Options(msgspec.Struct):
    verbose: bool = False


class Circle(msgspec.Struct, tag_field="kind", tag="circle"):
    r: float
    label: str = ""


class Square(msgspec.Struct, tag_field="kind", tag="square"):
    side: float
    label: str = ""


class Drawing(msgspec.Struct):
    shapes: list[Circle | Square]
    title: str = ""


class Color:
    """A custom type only a dec_hook can build."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Color) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class Paint(msgspec.Struct):
    color: Color
    mode: Literal["fill", "stroke"] = "fill"


def color_hook(type_: type, obj: Any) -> Any:
    if type_ is Color and isinstance(obj, str) and obj:
        return Color(obj)
    raise TypeError(f"not a {type_!r}: {obj!r}")


def paint_lenient(raw: msgspec.Raw) -> Paint:
    """What the strict decoder rejects: a bare color string is accepted too."""
    obj = msgspec.json.decode(raw)
    if isinstance(obj, str):
        return Paint(color=Color(obj))
    raise msgspec.ValidationError("Expected `object` - at `$`")


async def _handler(params: Any) -> None:
    """Never called: decoding only."""


def make_router() -> Router:
    router = Router()
    router.add("a", _handler, Point)
    router.add("opt", _handler, Options)
    router.add("draw", _handler, Drawing)
    router.add("any", _handler, Any)
    router.add("raw", _handler, msgspec.Raw)
    router.add("note", _handler, Point, notification=True)
    router.add("paint", _handler, Paint, dec_hook=color_hook, lenient=paint_lenient)
    router.add("custom", _handler, decode=lambda raw: ("custom", bytes(raw)))
    return router


# ----------------------------------------------------------------- the corpus


def _big_drawing(tags_last: bool, n: int = 40) -> dict[str, Any]:
    text = 'line "quoted" \\ back\n' * 4
    shapes = []
    for i in range(n):
        shape: dict[str, Any] = (
            {"r": i + 0.5, "label": text} if i % 2 else {"side": float(i), "label": text}
        )
        kind = "circle" if i % 2 else "square"
        shape = {**shape, "kind": kind} if tags_last else {"kind": kind, **shape}
        shapes.append(shape)
    return {"title": "big", "shapes": shapes}


def _call(method: str, params: Any = UNSET, id: Any = UNSET, **extra: Any) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if id is not UNSET:
        msg["id"] = id
    msg["method"] = method
    if params is not UNSET:
        msg["params"] = params
    msg.update(extra)
    return json.dumps(msg).encode()


VALID: list[bytes] = [
    _call("a", {"x": 1}, 1),
    _call("a", {"x": 1, "y": 2, "unknown": [1, {"deep": None}]}, "id-1"),
    _call("a", {"y": 2, "x": 1}, 7, result="ignored"),
    _call("note", {"x": 3}),
    _call("opt", id=2),  # absent params decode as {}
    _call("opt", {}, 3),
    _call("draw", {"shapes": [{"kind": "circle", "r": 1}], "title": "t"}, 4),
    _call("draw", {"shapes": [{"r": 1, "kind": "circle"}]}, 5),  # small, tag last
    _call("draw", _big_drawing(tags_last=False), 6),
    _call("draw", _big_drawing(tags_last=True), 7),
    _call("draw", _big_drawing(tags_last=True)),
    _call("any", [1, 2, {"a": None}], 8),
    _call("any", "text", 9),
    _call("raw", {"keep": ["as", "is"]}, 10),
    _call("paint", {"color": "red"}, 11),
    _call("paint", {"mode": "stroke", "color": "blue"}, 12),
    _call("a", {"x": 1}, None),  # null id: dialect rules
    b'{"id":13,"method":"a","params":{"x":1}}',  # no jsonrpc: dialect rules
    b'{"method":"a","id":14,"params":{"x":1},"jsonrpc":"2.0"}',  # method not first
    b'{"jsonrpc":"2.0","id":15,"method":"a","params":{"x":1},"params":{"x":2}}',
    b'{"jsonrpc":"2.0","id":16,"method":"a","method":"a","params":{"x":1}}',
    b'{\n  "jsonrpc": "2.0",\n  "id": 17,\n  "method": "a",\n  "params": {"x": 1}\n}',
]

INVALID: list[bytes] = [
    _call("a", {"x": "1"}, 1),
    _call("a", {"y": 1}, 2),
    _call("a", [1, 2], 3),
    _call("a", None, 4),  # "params": null
    _call("a", id=5),  # absent params, required field
    _call("opt", None, 6),
    _call("note", {"x": "no"}),
    _call("draw", {"shapes": [{"kind": "triangle"}]}, 7),
    _call("draw", {"shapes": [{"r": "big", "kind": "circle"}]}, 8),
    _call("draw", {**_big_drawing(tags_last=True), "title": 5}, 9),
    _call("draw", {"shapes": [*_big_drawing(True)["shapes"], {"kind": "blob"}]}, 10),
    _call("paint", "green", 11),  # the lenient decoder accepts it
    _call("paint", 5, 12),
    _call("paint", {"color": ""}, 13),
    _call("paint", {"color": "red", "mode": "dots"}, 14),
    _call("custom", {"x": 1}, 15),  # not one-pass: its own decoder
    _call("unknown", {"x": 1}, 16),
    _call("unknown"),
    _call("a", {"x": 1}, True),
    _call("a", {"x": 1}, 1.5),
    _call("a", {"x": 1}, 17, jsonrpc="1.0"),
    b'{"jsonrpc":"2.0","id":18,"method":"a","method":"b","params":{"x":1}}',
    b'{"jsonrpc":"2.0","id":19,"method":"any","params":"\xff\xfe"}',  # invalid UTF-8
    b'{"jsonrpc":"2.0","id":20,"method":"raw","params":"\xff"}',
    b'{"jsonrpc":"2.0","id":21,"method":"a","params":{"x":1}} trailing',
    b'{"jsonrpc":"2.0","id":22,"method":"\\u0000","params":{}}',
    b'{"jsonrpc":"2.0","id":23,"result":{"method":"a","params":{"x":1}}}',
    b'{"jsonrpc":"2.0","id":24,"error":{"code":1,"message":"method"}}',
]

_LONG = "x" * 256  # (a result long enough to push a later "method" key far out)
RESPONSES: list[bytes] = [
    b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}',
    b'{"jsonrpc":"2.0","id":"a","result":null}',
    b'{"id":2,"result":[1]}',  # no jsonrpc: dialect rules
    b'{"jsonrpc":"1.0","id":3,"result":1}',
    b'{"jsonrpc":"2.0","id":null,"result":1}',
    b'{"jsonrpc":"2.0","id":4,"result":1,"error":null}',
    b'{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"m"}}',
    b'{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"m"}}',
    b'{"jsonrpc":"2.0","id":7}',
    b'{"jsonrpc":"2.0","id":8,"result":"%s","method":"a","params":{"x":1}}' % _LONG.encode(),
    b'{"jsonrpc":"2.0","id":9,"result":"%s","method":5}' % _LONG.encode(),
    b'{"jsonrpc":"2.0","id":10,"result":1,"id":null}',
    b'{"jsonrpc":"2.0","id":11,"result":"\xff"}',
]
CORPUS = VALID + INVALID + RESPONSES + [m[0] for m in MALFORMED]


def receive(decoder: Decoder, router: Router, data: bytes) -> tuple[Any, ...]:
    """What a peer ends up with: the message and its decoded params, or the answer."""
    encoder = Encoder(decoder.dialect)
    try:
        msg = decoder.decode(data)
    except InvalidMessage as exc:
        if not exc.reply:
            return ("dropped", exc.code)
        return ("answer", encoder.error(exc.id, exc.code, exc.message, exc.data))
    if isinstance(msg, IncomingResponse):
        return ("response", msg.id, msg.result, msg.error)
    route = router.get(msg.method)
    notification = isinstance(msg, Notification) or (isinstance(msg, Call) and msg.id is UNSET)
    head = ("notification" if notification else "request", getattr(msg, "id", UNSET), msg.method)
    if route is None:
        return (*head, "no route")
    try:
        params = (
            msg.params
            if isinstance(msg, Call)
            else decoder.decode_params(msg.method, msg.params, route.params_type, route.decode)
        )
    except InvalidMessage as exc:
        return (*head, encoder.error(None, exc.code, exc.message, exc.data))
    if isinstance(params, msgspec.Raw):
        params = ("raw", bytes(params))
    return (*head, params)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("data", CORPUS, ids=[repr(d[:60]) for d in CORPUS])
def test_one_pass_ends_where_two_passes_end(dialect: Dialect, data: bytes) -> None:
    router = make_router()
    assert receive(Decoder(dialect, router), router, data) == receive(
        Decoder(dialect), router, data
    )


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("data", VALID[:16], ids=[repr(d[:60]) for d in VALID[:16]])
def test_valid_calls_of_typed_routes_take_one_pass(dialect: Dialect, data: bytes) -> None:
    router = make_router()
    msg = Decoder(dialect, router).decode(data)
    if b'"params"' not in data:  # absent params: two passes decode them from {}
        assert isinstance(msg, (Request, Notification))
        return
    assert isinstance(msg, Call)
    assert msg.method == json.loads(data)["method"]
    assert msg.id == json.loads(data).get("id", UNSET)
    assert not isinstance(msg.params, msgspec.Raw) or msg.method == "raw"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "data",
    [_call("custom", {"x": 1}, 1), _call("a", None, 2), _call("a", {"x": "1"}, 3),
     _call("raw", None, 4), _call("any", None, 5), _call("opt", id=6)],
)
def test_other_calls_keep_raw_params(dialect: Dialect, data: bytes) -> None:
    msg = Decoder(dialect, make_router()).decode(data)
    assert isinstance(msg, Request)
    assert msg.params is UNSET or type(msg.params) is msgspec.Raw


@pytest.mark.parametrize("dialect", DIALECTS)
def test_success_responses_take_one_pass(dialect: Dialect) -> None:
    msg = Decoder(dialect, make_router()).decode(RESPONSES[0])
    assert isinstance(msg, IncomingResponse) and type(msg) is not IncomingResponse
    assert (msg.id, msg.result, msg.error) == (1, msgspec.Raw(b'{"x":1}'), None)
    error = Decoder(dialect, make_router()).decode(RESPONSES[7])
    assert type(error) is IncomingResponse and error.error is not None


@pytest.mark.parametrize("tags_last", [False, True])
@pytest.mark.parametrize("id", [1, UNSET])
def test_large_input_in_either_tag_order_takes_one_pass(tags_last: bool, id: Any) -> None:
    data = _call("draw", _big_drawing(tags_last), id)
    msg = Decoder(ACP_DIALECT, make_router()).decode(data)
    assert isinstance(msg, Call) and (msg.id, msg.method) == (id, "draw")
    assert msg.params == msgspec.convert(json.loads(data)["params"], Drawing)
    assert type(msg.params.shapes[0]) is Square


def test_a_router_change_after_construction_is_honoured() -> None:
    router = make_router()
    decoder = Decoder(ACP_DIALECT, router)
    before = decoder.decode(_call("a", {"x": 1, "side": 2.0}, 1))
    assert isinstance(before, Call) and before.params == Point(x=1)
    router.add("a", _handler, Square)
    after = decoder.decode(_call("a", {"side": 3}, 2))
    assert isinstance(after, Call) and after.params == Square(side=3.0)
    assert before.params == Point(x=1)  # decoded as the table said at the time
    router.add("new", _handler, Point)
    late = decoder.decode(_call("new", {"x": 5}, 3))
    assert isinstance(late, Call) and late.params == Point(x=5)


def test_a_new_table_is_honoured() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    other = Router()
    other.add("a", _handler, Square)
    decoder.table = other
    msg = decoder.decode(_call("a", {"side": 3}, 1))
    assert isinstance(msg, Call) and msg.params == Square(side=3.0)
    decoder.table = None
    assert isinstance(decoder.decode(_call("a", {"side": 3}, 1)), Request)


def test_methods_left_to_two_passes() -> None:
    decoder = Decoder(ACP_DIALECT, make_router(), two_pass=("note",))
    assert isinstance(decoder.decode(_call("note", {"x": 1})), Notification)
    assert isinstance(decoder.decode(_call("a", {"x": 1})), Call)


def test_routes_with_a_custom_decode_are_not_one_pass() -> None:
    router = make_router()
    methods = {spec.method for spec in router.params_specs()}
    assert methods == {"a", "opt", "draw", "any", "raw", "note", "paint"}
    with pytest.raises(TypeError):
        router.add("x", _handler, Point, decode=lambda raw: raw, lenient=lambda raw: raw)


def test_specs_needing_another_hook_stay_two_pass() -> None:
    def other_hook(type_: type, obj: Any) -> Any:
        raise TypeError("never")

    router = make_router()
    router.add("paint2", _handler, Paint, dec_hook=other_hook)
    router.add("paint3", _handler, Paint)  # no hook at all: msgspec cannot build it
    plan = Plan(router.params_specs())
    methods = {spec.method for spec in plan.specs.values()}
    assert "paint" in methods
    assert "paint2" not in methods and "paint3" not in methods
    for method in ("paint2", "paint3"):
        msg = Decoder(ACP_DIALECT, router).decode(_call(method, {"color": "red"}, 1))
        assert isinstance(msg, Request) and isinstance(msg.params, msgspec.Raw)


def test_an_empty_or_absent_table_decodes_in_two_passes() -> None:
    data = _call("a", {"x": 1}, 1)
    for decoder in (Decoder(ACP_DIALECT), Decoder(ACP_DIALECT, Router())):
        msg = decoder.decode(data)
        assert isinstance(msg, Request) and isinstance(msg.params, msgspec.Raw)


def test_a_lone_route_does_not_accept_messages_without_method() -> None:
    router = Router()
    router.add("only", _handler, Options)  # (a lone tagged Struct accepts a missing tag)
    decoder = Decoder(ACP_DIALECT, router)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"method":"only"}}')
    assert isinstance(msg, IncomingResponse)
    with pytest.raises(InvalidMessage) as info:
        decoder.decode(b'{"jsonrpc":"2.0","id":1,"params":{"method":"only"}}')
    assert info.value.message == "Invalid response"
    call = decoder.decode(b'{"jsonrpc":"2.0","id":2,"method":"only","params":{}}')
    assert isinstance(call, Call) and call.params == Options() and call.id == 2


def test_a_table_msgspec_cannot_serve_falls_back_to_two_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    router = make_router()
    router.add("\x00", _handler, Point)  # the plan's own sentinel tag: left out
    decoder = Decoder(ACP_DIALECT, router)
    odd = decoder.decode(b'{"jsonrpc":"2.0","id":1,"method":"\\u0000","params":{"x":1}}')
    assert isinstance(odd, Request) and isinstance(odd.params, msgspec.Raw)

    def broken(self: Plan, *args: Any) -> None:
        raise TypeError("msgspec says no")

    monkeypatch.setattr(Plan, "__init__", broken)
    router.add("later", _handler, Point)
    msg = decoder.decode(_call("a", {"x": 1}, 2))  # logged once, never fatal
    assert isinstance(msg, Request) and isinstance(msg.params, msgspec.Raw)


# ------------------------------------------------------- generated messages

_scalars = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=6)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_shape = st.fixed_dictionaries(
    {"kind": st.sampled_from(["circle", "square", "blob"])},
    optional={"r": _json | st.floats(0, 9), "side": st.floats(0, 9), "label": _json},
)
_params = st.one_of(
    _json,
    st.fixed_dictionaries({"x": _json | st.integers()}, optional={"y": _json, "z": _json}),
    st.fixed_dictionaries({"shapes": st.lists(_shape, max_size=3)}, optional={"title": _json}),
    st.fixed_dictionaries({"color": _json | st.text(max_size=4)}, optional={"mode": _json}),
)
_ABSENT = object()


@st.composite
def _messages(draw: st.DrawFn) -> bytes:
    members: list[tuple[str, Any]] = []
    for key, values in (
        ("jsonrpc", st.sampled_from(["2.0", "2.0", "1.0", None, _ABSENT])),
        ("id", st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans(),
                         st.just(_ABSENT))),
        ("method", st.sampled_from(["a", "opt", "draw", "any", "raw", "note", "paint",
                                    "custom", "nope", _ABSENT])),
        ("params", st.one_of(_params, st.just(_ABSENT))),
        ("result", st.one_of(_json, st.just(_ABSENT), st.just(_ABSENT))),
        ("error", st.one_of(
            st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=3)}),
            _json, st.just(_ABSENT), st.just(_ABSENT), st.just(_ABSENT),
        )),
    ):
        value = draw(values)
        if value is not _ABSENT:
            members.append((key, value))
    if draw(st.booleans()):
        members.append(("extra", draw(_json)))
    ordered = draw(st.permutations(members))
    return json.dumps(dict(ordered)).encode()


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=250, deadline=None)
@given(data=_messages())
def test_one_pass_ends_where_two_passes_end_on_generated_messages(
    dialect: Dialect, data: bytes
) -> None:
    router = make_router()
    assert receive(Decoder(dialect, router), router, data) == receive(
        Decoder(dialect), router, data
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_null_params_of_a_raw_route_follow_the_dialect_rule(dialect: Dialect) -> None:
    """Found by the generated messages above: ``"params": null`` on a route taking raw params."""
    router = make_router()
    data = b'{"jsonrpc": "2.0", "id": 0, "method": "raw", "params": null}'
    assert receive(Decoder(dialect, router), router, data) == receive(
        Decoder(dialect), router, data
    )


# ------------------------------------------- the response a request expects


def _typed_or_raw(decoder: Decoder, data: bytes, type_: Any) -> tuple[Any, ...]:
    """``receive``, with a result decoded into ``type_`` when it was left raw."""
    got = receive(decoder, make_router(), data)
    if got[0] == "response" and isinstance(got[2], msgspec.Raw):
        try:
            return (*got[:2], msgspec.json.decode(got[2], type=type_), got[3])
        except msgspec.DecodeError:
            pass
    return got


@pytest.mark.fastpath
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("data", CORPUS, ids=[repr(d[:60]) for d in CORPUS])
def test_an_expected_response_ends_where_two_passes_end(dialect: Dialect, data: bytes) -> None:
    for rid in (1, 2, "1"):
        decoder = Decoder(dialect, make_router())
        decoder.expect(rid, Point)
        assert _typed_or_raw(decoder, data, Point) == _typed_or_raw(Decoder(dialect), data, Point)


@pytest.mark.fastpath
def test_the_expected_response_has_its_result_decoded_with_the_envelope() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    decoder.expect(1, Point)
    note = decoder.decode(_call("note", {"x": 2}))  # a notification while expecting
    assert isinstance(note, Call) and note.params == Point(x=2)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')  # it ended it: raw
    assert isinstance(msg, IncomingResponse) and type(msg.result) is msgspec.Raw
    decoder.expect(1, Point)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert isinstance(msg, IncomingResponse) and (msg.id, msg.result) == (1, Point(x=1))
    again = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')  # expected once
    assert isinstance(again, IncomingResponse) and type(again.result) is msgspec.Raw
    for other, result in (  # the id is not matched (the request is alone in flight)
        (b'{"jsonrpc":"2.0","id":2,"result":{"x":1}}', Point(x=1)),
        (b'{"jsonrpc":"2.0","id":"1","result":{"x":1}}', Point(x=1)),
        (b'{"jsonrpc":"2.0","id":1,"result":{"x":"1"}}', msgspec.Raw(b'{"x":"1"}')),
    ):
        decoder.expect(1, Point)
        msg = decoder.decode(other)  # (ends it: the next is raw)
        assert isinstance(msg, IncomingResponse) and msg.result == result
        again = decoder.decode(other)
        assert isinstance(again, IncomingResponse) and type(again.result) is msgspec.Raw
    decoder.expect(1, Point)
    call = decoder.decode(_call("a", {"x": 1}, 3))  # a call while expecting: unchanged
    assert isinstance(call, Call) and call.params == Point(x=1)
    assert decoder._fast[0] is decoder._paths.idle[0]  # (and the expectation ended)
    decoder.expect(1, Paint, color_hook)  # with the route-style dec_hook
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"color":"red"}}')
    assert isinstance(msg, IncomingResponse) and msg.result == Paint(color=Color("red"))
    decoder.expect(None)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert isinstance(msg, IncomingResponse) and type(msg.result) is msgspec.Raw


def test_a_decoder_without_table_expects_nothing() -> None:
    decoder = Decoder(ACP_DIALECT)
    decoder.expect(1, Point)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert type(msg) is IncomingResponse and type(msg.result) is msgspec.Raw


def test_a_type_msgspec_cannot_decode_is_not_expected() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    decoder.expect(1, Paint)  # a custom type without its dec_hook
    decoder.expect(1, dict[str, list[Any]] | list[int] | Point)  # (an invalid union)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert isinstance(msg, IncomingResponse) and type(msg.result) is msgspec.Raw


def test_a_router_holds_its_decoders_weakly() -> None:
    router = make_router()
    decoder = Decoder(ACP_DIALECT, router)
    assert isinstance(decoder.decode(_call("a", {"x": 1}, 1)), Call)
    ref = weakref.ref(decoder)
    del decoder
    gc.collect()
    assert ref() is None
    router.add("a", _handler, Square)  # (tells no one)
    fresh = Decoder(ACP_DIALECT, router).decode(_call("a", {"side": 2}, 1))
    assert isinstance(fresh, Call) and fresh.params == Square(side=2.0)


class _Hook:
    """A dec_hook that is not hashable (a dataclass-like callable with __eq__)."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Hook)

    def __call__(self, type_: type, obj: Any) -> Any:
        return color_hook(type_, obj)


def test_an_unhashable_dec_hook_decodes_results_without_being_kept() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    decoder.expect(1, Paint, _Hook())  # not kept: the result stays raw for decode_result
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":1,"result":{"color":"red"}}')
    assert isinstance(msg, IncomingResponse) and type(msg.result) is msgspec.Raw
    assert decoder.decode_result(msg.result, Paint, _Hook()) == Paint(color=Color("red"))


def test_typed_decoders_kept_are_bounded() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    raw = msgspec.Raw(b'{"color":"red"}')
    for _ in range(200):  # a new hook each time, as a closure per request would be
        decoder.expect(1, Paint, lambda t, o: color_hook(t, o))
        assert decoder.decode_result(raw, Paint, lambda t, o: color_hook(t, o)) == Paint(
            color=Color("red"))
    assert len(decoder._typed) <= 64 and len(decoder._expecting) <= 64


def test_a_subclass_decode_is_the_one_called() -> None:
    seen: list[bytes] = []

    class Logging(Decoder):
        def decode(self, data: Any) -> Any:
            seen.append(bytes(data))
            return super().decode(data)

    decoder = Logging(ACP_DIALECT, make_router())
    line = _call("a", {"x": 1}, 1)
    msg = decoder.decode(line)
    assert seen == [line]
    assert isinstance(msg, Call if FAST_PATHS else Request)  # (super's takes the fast path too)
