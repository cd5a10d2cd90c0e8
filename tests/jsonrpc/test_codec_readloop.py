"""A read loop's way into the decoder: ``Decoder._fast`` and ``decode_refused``.

The peer calls ``fast[0]`` for each message and gives what it raises (but an
``InvalidMessage``) to ``decode_refused``. Whatever the input, and whatever
is expected, that must end where ``Decoder.decode`` ends, and so where two
passes end. No event loop is needed in this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from loading import load_file

from wireproto._switches import FAST_PATHS
from wireproto.errors import InvalidMessage
from wireproto.jsonrpc.codec import ACP_DIALECT, Call, Decoder, Dialect, IncomingResponse


def _load_sibling(name: str) -> Any:
    """Import another test module of this folder."""
    return load_file(Path(__file__).with_name(f"{name}.py"), f"wireproto_tests_jsonrpc_{name}")


onepass = _load_sibling("test_codec_onepass")
CORPUS: list[bytes] = onepass.CORPUS
DIALECTS = onepass.DIALECTS
Point = onepass.Point
make_router = onepass.make_router
_call = onepass._call


class ReadLoop(Decoder):
    """A decoder whose ``decode`` is the peer's read loop step."""

    def decode(self, data: Any) -> Any:
        try:
            msg = self._fast[0](data)
        except InvalidMessage:
            raise
        except Exception:  # what the peer's read loop does with it
            msg = self._decode_refused(data)
        if isinstance(msg, IncomingResponse):  # (the loop's branch for a response)
            self._fast[0] = self._paths.idle[0]
        return msg


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("data", CORPUS, ids=[repr(d[:60]) for d in CORPUS])
def test_the_read_loop_step_ends_where_two_passes_end(dialect: Dialect, data: bytes) -> None:
    router = make_router()
    assert onepass.receive(ReadLoop(dialect, router), router, data) == onepass.receive(
        Decoder(dialect), router, data
    )
    for rid in (1, "1"):  # the same while a response is expected
        decoder = ReadLoop(dialect, make_router())
        decoder.expect(rid, Point)
        assert onepass._typed_or_raw(decoder, data, Point) == onepass._typed_or_raw(
            Decoder(dialect), data, Point
        )


@pytest.mark.fastpath
def test_a_call_costs_one_msgspec_call_while_nothing_is_expected() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    decoder.decode(_call("a", {"x": 1}, 1))  # (the plan is built at the first message)
    union = decoder._fast[0]
    assert type(union).__name__ == "builtin_function_or_method"  # msgspec's own decode
    assert isinstance(union(_call("a", {"x": 1}, 1)), Call)
    with pytest.raises(msgspec.ValidationError):  # a response: for decode_refused
        union(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    msg = decoder._decode_refused(b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert isinstance(msg, IncomingResponse) and type(msg.result) is msgspec.Raw


@pytest.mark.fastpath
def test_an_expectation_ends_at_the_first_response_and_fast_returns_to_the_union() -> None:
    decoder = ReadLoop(ACP_DIALECT, make_router())
    decoder.decode(_call("a", {"x": 1}, 1))
    union = decoder._fast[0]
    expected = decoder._expecting[Point, None]
    assert type(expected).__name__ == "builtin_function_or_method"  # msgspec's own decode
    for call in (b'{"jsonrpc":"2.0","id":3,"method":"a","params":{"x":1}}',  # (id first)
                 _call("note", {"x": 2})):
        decoder.expect(7, Point)
        assert decoder._fast[0] is expected
        assert isinstance(decoder.decode(call), Call)
        assert decoder._fast[0] is union  # a call ends it (the response will come raw)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":7,"result":{"x":1}}')
    assert type(msg.result) is msgspec.Raw
    decoder.expect(7, Point)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":8,"result":{"y":1}}')  # a result Point refuses
    assert type(msg.result) is msgspec.Raw and decoder._fast[0] is union  # ended
    decoder.expect(7, Point)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":8,"result":{"x":1}}')  # (ids are not matched)
    assert (msg.id, msg.result) == (8, Point(x=1)) and decoder._fast[0] is union
    decoder.expect(7, Point)
    msg = decoder.decode(b'{"jsonrpc":"2.0","id":7,"result":{"x":1}}')
    assert msg.result == Point(x=1) and decoder._fast[0] is union
    decoder.expect(7, Point)
    decoder.expect(None)
    assert decoder._fast[0] is union


@pytest.mark.fastpath
def test_any_input_type_ends_the_expectation_at_a_response() -> None:
    decoder = ReadLoop(ACP_DIALECT, make_router())
    decoder.decode(_call("a", {"x": 1}, 1))
    union = decoder._fast[0]
    for kind in (bytes, bytearray, memoryview):
        decoder.expect(7, Point)
        call = decoder.decode(kind(b'{"jsonrpc":"2.0","id":3,"method":"a","params":{"x":1}}'))
        assert isinstance(call, Call) and call.params == Point(x=1)
        assert decoder._fast[0] is union  # (a call ends it)
        decoder.expect(7, Point)
        error = kind(b'{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}')
        msg = decoder.decode(error)
        assert msg.error is not None and decoder._fast[0] is union
        decoder.expect(7, Point)
        msg = decoder.decode(kind(b'{"jsonrpc":"2.0","id":7,"result":{"x":1}}'))
        assert msg.result == Point(x=1) and decoder._fast[0] is union


def test_expecting_is_kept_per_type_and_hook_and_bounded() -> None:
    decoder = Decoder(ACP_DIALECT, make_router())
    assert decoder._expecting[Point, None] is decoder._expecting[Point, None]
    with pytest.raises(TypeError):  # (unhashable: expect keeps the result raw)
        decoder._expecting[list[Any], onepass._Hook()]
    for _ in range(100):
        decoder._expecting[Point, lambda t, o: o]
    assert len(decoder._expecting) <= 64
    decoder.table = make_router()  # a new table: built again
    assert len(decoder._expecting) == 0


def test_the_read_loop_step_follows_the_fast_path_switch() -> None:
    """With the fast paths the expected result comes typed; without, the step is the
    two passes and the result stays raw (CI runs the core suite both ways)."""
    decoder = Decoder(ACP_DIALECT, make_router())
    decoder.expect(1, Point)
    msg = ReadLoop.decode(decoder, b'{"jsonrpc":"2.0","id":1,"result":{"x":1}}')
    assert isinstance(msg, IncomingResponse)
    if FAST_PATHS:
        assert msg.result == Point(x=1)
    else:
        assert decoder._fast[0] == decoder._two_pass and type(msg.result) is msgspec.Raw
