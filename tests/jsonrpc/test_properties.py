"""Property tests: every message Struct survives Encoder -> Decoder unchanged."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from wireproto.errors import InvalidMessage
from wireproto.jsonrpc import messages
from wireproto.jsonrpc.codec import (
    ACP_DIALECT,
    WIRE_DIALECT,
    Decoder,
    Dialect,
    Encoder,
    IncomingResponse,
)
from wireproto.jsonrpc.messages import Error, ErrorResponse, Notification, Request, Response

DIALECTS = [pytest.param(WIRE_DIALECT, id="wire"), pytest.param(ACP_DIALECT, id="acp")]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=16,
)
ids = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text()
methods = st.text(min_size=1)
params = (
    st.just(UNSET)
    | st.lists(json_values, max_size=4)
    | st.dictionaries(st.text(), json_values, max_size=4)
)
errors = st.builds(
    Error,
    code=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    message=st.text(),
    data=st.just(UNSET) | json_values,
)

STRATEGIES: dict[type[msgspec.Struct], st.SearchStrategy[Any]] = {
    Request: st.builds(Request, id=ids, method=methods, params=params),
    Notification: st.builds(Notification, method=methods, params=params),
    Response: st.builds(Response, id=ids, result=json_values),
    ErrorResponse: st.builds(ErrorResponse, id=ids, error=errors),
    Error: errors,
}


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON, types included (``1`` is not ``1.0`` is not ``true``)."""
    if a is UNSET or b is UNSET:
        return a is b
    return msgspec.json.encode(a) == msgspec.json.encode(b)


def raw_value(raw: Any) -> Any:
    return UNSET if raw is UNSET else msgspec.json.decode(raw)


def test_every_struct_has_a_strategy() -> None:
    structs = {
        obj
        for obj in vars(messages).values()
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct)
    }
    assert structs == set(STRATEGIES)


def check_round_trip(dialect: Dialect, message: Any) -> None:
    encoder, decoder = Encoder(dialect), Decoder(dialect)
    data = encoder.encode(message)
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    assert data.startswith(b'{"jsonrpc":"2.0",')
    got = decoder.decode(data)
    if isinstance(message, (Request, Notification)):
        assert type(got) is type(message)
        assert isinstance(got, (Request, Notification))
        assert got.method == message.method
        assert same_json(raw_value(got.params), message.params)
        if isinstance(message, Request):
            assert isinstance(got, Request)
            assert got.id == message.id
            assert type(got.id) is type(message.id)
        rebuilt: Any = type(message)(
            **{f: getattr(got, f) for f in message.__struct_fields__ if f != "params"},
            params=raw_value(got.params),
        )
    elif isinstance(message, Response):
        assert isinstance(got, IncomingResponse)
        assert got.error is None
        assert (got.id, type(got.id)) == (message.id, type(message.id))
        assert same_json(raw_value(got.result), message.result)
        rebuilt = Response(id=got.id, result=raw_value(got.result))
    else:
        assert isinstance(got, IncomingResponse)
        assert got.result is UNSET
        assert (got.id, type(got.id)) == (message.id, type(message.id))
        assert got.error == message.error or same_json(got.error, message.error)
        assert got.error is not None
        rebuilt = ErrorResponse(id=got.id, error=got.error)
    assert encoder.encode(rebuilt) == data  # byte for byte


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "struct", [Request, Notification, Response, ErrorResponse], ids=lambda s: s.__name__
)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_encode_decode_identity(dialect: Dialect, struct: type[Any], data: st.DataObject) -> None:
    check_round_trip(dialect, data.draw(STRATEGIES[struct]))


@settings(max_examples=150, deadline=None)
@given(error=errors)
def test_error_object_identity(error: Error) -> None:
    data = msgspec.json.encode(error)
    assert msgspec.json.decode(data, type=Error) == error or same_json(
        msgspec.json.decode(data, type=Error), error
    )


@settings(max_examples=100, deadline=None)
@given(method=methods, params=params)
def test_null_id_request(method: str, params: Any) -> None:
    data = Encoder(ACP_DIALECT).encode(Request(id=None, method=method, params=params))
    acp = Decoder(ACP_DIALECT).decode(data)
    assert isinstance(acp, Request)
    assert acp.id is None
    wire = Decoder(WIRE_DIALECT).decode(data)
    assert isinstance(wire, Notification)
    assert wire.method == method


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=100, deadline=None)
@given(
    message=st.builds(Response, id=st.none(), result=json_values)
    | st.builds(ErrorResponse, id=st.none(), error=errors)
)
def test_null_id_responses_never_answered(dialect: Dialect, message: Any) -> None:
    with pytest.raises(InvalidMessage) as info:
        Decoder(dialect).decode(Encoder(dialect).encode(message))
    assert info.value.reply is False
