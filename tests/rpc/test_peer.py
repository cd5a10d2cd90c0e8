"""The RPC peer over the memory transport: calls, errors, cancellation, limits.

Flow control (concurrency limit, backlog, ordering, backpressure, writer
coalescing) is in ``test_peer_flow.py``, closing in ``test_peer_close.py``.
Every test runs on asyncio and trio.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from wireproto.errors import (
    LocalProtocolError,
    RemoteProtocolError,
    RequestCancelled,
    RpcError,
)
from wireproto.jsonrpc.codec import ACP_DIALECT, WIRE_DIALECT, Dialect
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.testing import peer_pair, probe_peer, wait_all_tasks_blocked
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

DIALECTS = [pytest.param(WIRE_DIALECT, id="wire"), pytest.param(ACP_DIALECT, id="acp")]
CANCEL = "$/cancel_request"


class Point(msgspec.Struct):
    x: int
    y: int


def echo_router() -> Router:
    router = Router()

    @router.request("echo")
    async def echo(params: Any) -> Any:
        return params

    return router


# ------------------------------------------------------------------ requests


async def test_requests_both_directions_concurrently() -> None:
    a_router, b_router = echo_router(), echo_router()
    holder: dict[str, Peer] = {}

    @a_router.request("ask_back")
    async def ask_back(params: Any) -> Any:
        # a handler on ``a`` calling ``b`` while ``b`` waits for this answer
        return ["a", await holder["a"].request("echo", params)]

    results: dict[tuple[str, int], Any] = {}
    async with peer_pair(a_router, b_router) as (a, b):
        holder["a"] = a

        async def call(src: Peer, name: str, method: str, i: int) -> None:
            results[name, i] = await src.request(method, {"i": i})

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(call, a, "a", "echo", i)
                tg.start_soon(call, b, "b", "echo", i)
                tg.start_soon(call, b, "nested", "ask_back", i)
    for i in range(20):
        assert results["a", i] == {"i": i}
        assert results["b", i] == {"i": i}
        assert results["nested", i] == ["a", {"i": i}]


async def test_result_type_decoding() -> None:
    router = Router()

    @router.request("point")
    async def point(params: Any) -> Any:
        return {"x": 1, "y": 2} if params == "good" else {"x": "one"}

    async with peer_pair(None, router) as (a, _):
        assert await a.request("point", "good", result_type=Point) == Point(1, 2)
        assert await a.request("point", "good") == {"x": 1, "y": 2}
        with pytest.raises(RemoteProtocolError) as info:
            await a.request("point", "bad", result_type=Point)
        assert isinstance(info.value.__cause__, msgspec.ValidationError)
        assert await a.request("point", "good", result_type=Point) == Point(1, 2)


class Celsius:
    """A custom type only a dec_hook builds."""

    def __init__(self, degrees: float) -> None:
        self.degrees = degrees

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Celsius) and other.degrees == self.degrees


class Reading(msgspec.Struct):
    temperature: Celsius


def celsius_hook(type_: type, obj: Any) -> Any:
    if type_ is Celsius and isinstance(obj, (int, float)):
        return Celsius(obj)
    raise TypeError("not a temperature")


async def test_a_result_is_decoded_strictly_then_leniently() -> None:
    router = Router()

    @router.request("read")
    async def read(params: Any) -> Any:
        return {"temperature": params}

    lenient_calls: list[bytes] = []

    def lenient(raw: msgspec.Raw) -> Reading:
        lenient_calls.append(bytes(raw))
        value = msgspec.json.decode(raw)["temperature"]
        if isinstance(value, str):
            return Reading(Celsius(float(value.rstrip("C"))))
        raise RemoteProtocolError("unreadable")

    seen: list[Any] = []
    async with peer_pair(None, router) as (a, _):
        kw: dict[str, Any] = {"result_type": Reading, "dec_hook": celsius_hook,
                              "lenient": lenient}
        assert await a.request("read", 21.5, **kw) == Reading(Celsius(21.5))
        assert lenient_calls == []  # strict, with the hook (in one pass, fast paths on)
        assert await a.request("read", "19C", **kw) == Reading(Celsius(19.0))
        assert lenient_calls == [b'{"temperature":"19C"}']
        with pytest.raises(RemoteProtocolError, match="unreadable"):
            await a.request("read", None, **kw)
        # on_response sees the raw result; the caller the decoded one
        got = await a.request("read", 3, on_response=lambda r: seen.append(r.result), **kw)
        assert got == Reading(Celsius(3)) and seen == [msgspec.Raw(b'{"temperature":3}')]
        # several in flight: each decoded as its own type
        async with anyio.create_task_group() as tg:
            results: dict[int, Any] = {}

            async def call(i: int, type_: Any) -> None:
                results[i] = await a.request("read", i, result_type=type_, dec_hook=celsius_hook)

            tg.start_soon(call, 1, Reading)
            tg.start_soon(call, 2, dict[str, int])
        assert results == {1: Reading(Celsius(1)), 2: {"temperature": 2}}
        with pytest.raises(RemoteProtocolError):  # no lenient: the strict error
            await a.request("read", "19C", result_type=Reading, dec_hook=celsius_hook)


async def test_params_are_decoded_with_the_route_type() -> None:
    router = Router()

    @router.request("norm", Point)
    async def norm(p: Point) -> int:
        assert isinstance(p, Point)
        return abs(p.x) + abs(p.y)

    async with peer_pair(None, router) as (a, _):
        assert await a.request("norm", {"x": -3, "y": 4}) == 7
        with pytest.raises(RpcError) as info:
            await a.request("norm", {"x": -3, "y": "4"})
        assert info.value.code == -32602
        assert info.value.data == {"path": "$.y", "reason": "Expected `int`, got `str`"}


async def test_first_request_id_is_zero_and_ids_are_echoed() -> None:
    async with probe_peer() as (peer, probe):
        async with anyio.create_task_group() as tg:
            got: list[Any] = []

            async def call(**kw: Any) -> None:
                got.append(await peer.request("m", **kw))

            tg.start_soon(call)
            assert await probe.read() == b'{"jsonrpc":"2.0","id":0,"method":"m"}\n'
            await probe.write(b'{"jsonrpc":"2.0","id":0,"result":"zero"}\n')
            await wait_all_tasks_blocked()
            tg.start_soon(lambda: call(id="0", params=[1]))
            assert await probe.read() == b'{"jsonrpc":"2.0","id":"0","method":"m","params":[1]}\n'
            await probe.write(b'{"jsonrpc":"2.0","id":0,"result":"wrong type"}\n')
            await probe.write(b'{"jsonrpc":"2.0","id":"0","result":"string zero"}\n')
        assert got == ["zero", "string zero"]


# -------------------------------------------------------------------- errors


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_rpc_error_from_handler_passes_code_message_data(dialect: Dialect) -> None:
    router = Router()

    @router.request("find")
    async def find(params: Any) -> Any:
        raise RpcError(-32002, "Resource not found", params or None)

    async with probe_peer(router, dialect=dialect) as (_, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"find","params":{"uri":"x"}}\n')
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found",'
            b'"data":{"uri":"x"}}}\n'
        )
        await probe.write(b'{"jsonrpc":"2.0","id":2,"method":"find"}\n')
        no_data = b',"data":null}}\n' if dialect is WIRE_DIALECT else b"}}\n"
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found"'
            + no_data
        )

    async with peer_pair(None, router, dialect=dialect) as (a, _):
        with pytest.raises(RpcError) as info:
            await a.request("find", [1, 2])
        assert (info.value.code, info.value.message, info.value.data) == (
            -32002,
            "Resource not found",
            [1, 2],
        )


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_other_exceptions_are_internal_errors_without_details(
    dialect: Dialect, caplog: pytest.LogCaptureFixture
) -> None:
    router = Router()

    @router.request("boom")
    async def boom(params: Any) -> Any:
        raise ValueError("secret detail")

    @router.request("unencodable")
    async def unencodable(params: Any) -> Any:
        return object()

    @router.request("bad_error_data")
    async def bad_error_data(params: Any) -> Any:
        raise RpcError(1, "m", object())

    expected = b'{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"Internal error"' + (
        b',"data":null}}\n' if dialect is WIRE_DIALECT else b"}}\n"
    )
    async with probe_peer(router, dialect=dialect, name="srv") as (_, probe):
        for i, method in enumerate([b"boom", b"unencodable", b"bad_error_data", b"boom"]):
            await probe.write(b'{"jsonrpc":"2.0","id":%d,"method":"%s"}\n' % (i, method))
            answer = await probe.read()
            assert answer == expected % i
    assert "secret detail" in caplog.text
    assert any(r.exc_info for r in caplog.records if r.name == "wireproto.rpc.peer")


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        pytest.param(
            WIRE_DIALECT,
            b'{"jsonrpc":"2.0","id":"q1","error":{"code":-32601,'
            b'"message":"Unexpected method received: nope","data":null}}\n',
            id="wire",
        ),
        pytest.param(
            ACP_DIALECT,
            b'{"jsonrpc":"2.0","id":"q1","error":{"code":-32601,"message":"Method not found"}}\n',
            id="acp",
        ),
    ],
)
async def test_unknown_method(dialect: Dialect, expected: bytes) -> None:
    router = Router()

    @router.notification("note")
    async def note(params: Any) -> None:
        raise AssertionError("never called")

    async with probe_peer(router, dialect=dialect) as (_, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":"q1","method":"nope"}\n')
        assert await probe.read() == expected
        # a notification route called as a request is not a request method
        await probe.write(b'{"jsonrpc":"2.0","id":"q1","method":"note"}\n')
        assert await probe.read() == expected.replace(b"nope", b"note")
        # an unknown notification is never answered
        await probe.write(b'{"jsonrpc":"2.0","method":"nope"}\n')
        await probe.assert_silent()

    async with peer_pair(dialect=dialect) as (a, _):
        with pytest.raises(RpcError) as info:
            await a.request("nope")
        assert info.value.code == -32601
        assert info.value.message == dialect.method_not_found.format(method="nope")


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_malformed_input_answered_and_peer_keeps_working(dialect: Dialect) -> None:
    async with probe_peer(echo_router(), dialect=dialect) as (_, probe):
        await probe.write(b"{oops\n[1,2]\n")
        first, second = await probe.read_json(), await probe.read_json()
        assert (first["id"], first["error"]["code"]) == (None, -32700)
        assert (second["id"], second["error"]["code"]) == (None, -32600)
        # an error response with id null is never answered
        await probe.write(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}\n')
        await probe.assert_silent()
        await probe.write(b'{"jsonrpc":"2.0","id":3,"method":"echo","params":[3]}\n')
        assert await probe.read() == b'{"jsonrpc":"2.0","id":3,"result":[3]}\n'


async def test_null_id_request_answered_on_acp_only() -> None:
    line = b'{"jsonrpc":"2.0","id":null,"method":"echo","params":{"a":1}}\n'
    async with probe_peer(echo_router(), dialect=ACP_DIALECT) as (_, probe):
        await probe.write(line)
        assert await probe.read() == b'{"jsonrpc":"2.0","id":null,"result":{"a":1}}\n'
    async with probe_peer(echo_router(), dialect=WIRE_DIALECT) as (_, probe):
        await probe.write(line)  # a notification on Wire: a request method is dropped
        await probe.assert_silent()


SPEC_ROUTER = Router()


@SPEC_ROUTER.request("subtract")
async def _subtract(p: Any) -> Any:
    return p[0] - p[1] if isinstance(p, list) else p["minuend"] - p["subtrahend"]


@SPEC_ROUTER.notification("update")
async def _update(p: Any) -> None:
    return None


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_specification_examples_end_to_end(dialect: Dialect) -> None:
    async with probe_peer(SPEC_ROUTER, dialect=dialect) as (_, probe):
        await probe.write(b'{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}')
        await probe.write(b"\n")
        assert await probe.read() == b'{"jsonrpc":"2.0","id":1,"result":19}\n'
        await probe.write(
            b'{"jsonrpc": "2.0", "method": "subtract",'
            b' "params": {"subtrahend": 23, "minuend": 42}, "id": 3}\n'
        )
        assert await probe.read() == b'{"jsonrpc":"2.0","id":3,"result":19}\n'
        await probe.write(b'{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}\n')
        await probe.write(b'{"jsonrpc": "2.0", "method": "foobar"}\n')
        await probe.assert_silent()
        await probe.write(b'{"jsonrpc": "2.0", "method": "foobar", "id": "1"}\n')
        assert (await probe.read_json())["error"]["code"] == -32601
        await probe.write(
            b'[{"jsonrpc": "2.0", "method": "subtract", "params": [1,2], "id": "1"},'
            b' {"jsonrpc": "2.0", "method": "update", "params": [7]}]\n'
        )
        assert await probe.read_json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid request"}
            | ({"data": None} if dialect is WIRE_DIALECT else {}),
        }
        await probe.assert_silent()  # nothing in the batch was processed


# ---------------------------------------------------------------- exactly once


async def test_every_request_is_answered_exactly_once() -> None:
    router = Router()
    gate = anyio.Event()

    @router.request("ok")
    async def ok(params: Any) -> Any:
        return params

    @router.request("fail")
    async def fail(params: Any) -> Any:
        raise RpcError(1, "no")

    @router.request("crash")
    async def crash(params: Any) -> Any:
        raise RuntimeError("x")

    @router.request("wait")
    async def wait(params: Any) -> Any:
        await gate.wait()
        return "waited"

    @router.request("typed", Point)
    async def typed(params: Point) -> Any:
        return params.x

    methods = ["ok", "fail", "crash", "wait", "typed", "missing"]
    async with probe_peer(router, cancel_method=CANCEL, max_concurrency=4, backlog=4) as (
        _,
        probe,
    ):
        for i in range(30):
            await probe.write_json(
                {"jsonrpc": "2.0", "id": i, "method": methods[i % len(methods)], "params": {}}
            )
            if i % 4 == 3:  # cancel some, twice
                await probe.write_json(
                    {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": i}}
                )
                await probe.write_json(
                    {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": i}}
                )
        await wait_all_tasks_blocked()
        gate.set()
        answers: list[int] = []
        for _ in range(30):
            answers.append((await probe.read_json())["id"])
        await probe.assert_silent()
    assert sorted(answers) == list(range(30))


# --------------------------------------------------------------- cancellation


async def test_cancelling_the_caller_sends_cancel_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "wireproto.rpc.peer")
    async with probe_peer(cancel_method=CANCEL) as (peer, probe):
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.request, "slow")
            assert await probe.read() == b'{"jsonrpc":"2.0","id":0,"method":"slow"}\n'
            assert peer.stats().pending == 1
            tg.cancel_scope.cancel()
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}\n'
        )
        assert peer.stats().pending == 0
        # a late answer finds no pending entry: logged and ignored
        await probe.write(b'{"jsonrpc":"2.0","id":0,"error":{"code":-32800,"message":"c"}}\n')
        await probe.assert_silent()
        assert "unknown id 0" in caplog.text


async def test_no_cancel_notification_without_cancel_method() -> None:
    async with probe_peer() as (peer, probe):
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.request, "slow")
            await probe.read()
            tg.cancel_scope.cancel()
        await probe.assert_silent()
        assert peer.stats().pending == 0


async def test_timeout_raises_and_sends_cancel() -> None:
    async with probe_peer(cancel_method=CANCEL) as (peer, probe):
        with pytest.raises(TimeoutError):
            await peer.request("slow", id="t1", timeout=0.01)
        assert await probe.read() == b'{"jsonrpc":"2.0","id":"t1","method":"slow"}\n'
        assert await probe.read_json() == {
            "jsonrpc": "2.0",
            "method": CANCEL,
            "params": {"requestId": "t1"},
        }
        assert peer.stats().pending == 0


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_incoming_cancel_cancels_the_handler(dialect: Dialect) -> None:
    router = Router()
    seen: list[str] = []

    @router.request("hang")
    async def hang(params: Any) -> Any:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            raise

    @router.request("partial")
    async def partial(params: Any) -> Any:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            return "partial result"  # a handler may still answer normally

    cancelled = b'{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"'
    cancelled += b',"data":null}}\n' if dialect is WIRE_DIALECT else b"}}\n"
    async with probe_peer(router, dialect=dialect, cancel_method=CANCEL) as (peer, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":7,"method":"hang"}\n')
        await wait_all_tasks_blocked()
        assert peer.stats().running == 1
        # a cancel for "7" (a string) does not match the integer id 7
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": "7"}})
        await probe.assert_silent()
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": 7}})
        assert await probe.read() == cancelled
        assert seen == ["cancelled"]
        await probe.write(b'{"jsonrpc":"2.0","id":8,"method":"partial"}\n')
        await wait_all_tasks_blocked()
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": 8}})
        assert await probe.read() == b'{"jsonrpc":"2.0","id":8,"result":"partial result"}\n'
        assert peer.stats().running == 0


async def test_incoming_cancel_of_a_route_with_a_cancel_callback_tells_the_handler() -> None:
    router = Router()
    stop = anyio.Event()
    told: list[Any] = []

    async def work(params: Any) -> Any:
        await stop.wait()  # not cancelled: told, it ends by itself
        return {"stopped": params["n"]}

    def cancel(params: Any) -> None:
        told.append(params)
        stop.set()

    router.add("work", work, cancel=cancel)
    async with probe_peer(router, cancel_method=CANCEL) as (peer, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":3,"method":"work","params":{"n":1}}\n')
        await wait_all_tasks_blocked()
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": 3}})
        assert await probe.read() == b'{"jsonrpc":"2.0","id":3,"result":{"stopped":1}}\n'
        assert told == [{"n": 1}]
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": 3}})
        await probe.assert_silent()  # over: nothing to tell
        assert told == [{"n": 1}] and peer.stats().running == 0


async def test_a_cancel_callback_that_raises_cancels_the_handler_and_the_peer_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    router = Router()

    async def work(params: Any) -> Any:
        await anyio.sleep_forever()

    @dataclasses.dataclass
    class Cancel:  # a callable with __eq__ and no __hash__: unhashable
        calls: int = 0

        def __call__(self, params: Any) -> None:
            self.calls += 1
            raise RuntimeError("broken cancel callback")

    async def ping(params: Any) -> Any:
        return "pong"

    cancel = Cancel()
    router.add("work", work, cancel=cancel)
    router.add("ping", ping)
    async with probe_peer(router, cancel_method=CANCEL) as (peer, probe):
        for rid in (3, 4):  # logged once for the route, cancelled each time
            await probe.write_json({"jsonrpc": "2.0", "id": rid, "method": "work"})
            await wait_all_tasks_blocked()
            await probe.write_json(
                {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": rid}}
            )
            answer = json.loads(await probe.read())
            assert (answer["id"], answer["error"]["code"]) == (rid, -32800)
        await probe.write_json({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert await probe.read() == b'{"jsonrpc":"2.0","id":5,"result":"pong"}\n'
        assert peer.stats().running == 0
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "cancel callback" in errors[0].getMessage()
    assert cancel.calls == 2


async def test_cancel_between_peers_raises_request_cancelled_for_other_callers() -> None:
    router = Router()
    started = anyio.Event()

    @router.request("hang")
    async def hang(params: Any) -> Any:
        started.set()
        await anyio.sleep_forever()

    async with peer_pair(None, router, cancel_method=CANCEL) as (a, b):
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.request, "hang")
            await started.wait()
            tg.cancel_scope.cancel()
        await wait_all_tasks_blocked()
        assert b.stats().running == 0  # the remote handler was cancelled too
        # a -32800 answer surfaces as RequestCancelled
        cancel_router = Router()

        @cancel_router.request("refuse")
        async def refuse(params: Any) -> Any:
            raise RequestCancelled()

        b.router.add("refuse", refuse)
        with pytest.raises(RequestCancelled) as info:
            await a.request("refuse")
        assert info.value.code == -32800


async def test_malformed_and_unknown_cancels_are_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "wireproto.rpc.peer")
    async with probe_peer(echo_router(), cancel_method=CANCEL) as (_, probe):
        for params in [b'{"requestId":42}', b'{"requestId":1.5}', b'{"id":1}', b"[1]", b'"x"']:
            await probe.write(
                b'{"jsonrpc":"2.0","method":"$/cancel_request","params":%s}\n' % params
            )
        await probe.write(b'{"jsonrpc":"2.0","id":99,"result":{}}\n')
        await probe.assert_silent()
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":1}\n')
        assert await probe.read() == b'{"jsonrpc":"2.0","id":1,"result":1}\n'
    assert "cancel for unknown id 42" in caplog.text
    assert "unknown id 99" in caplog.text
    assert caplog.text.count("$/cancel_request") >= 4


async def test_duplicate_pending_id_is_a_local_error() -> None:
    async with probe_peer() as (peer, probe):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: peer.request("m", id="x"))
            await probe.read()
            with pytest.raises(LocalProtocolError):
                await peer.request("m", id="x")
            tg.start_soon(lambda: peer.request("m", id=1))
            assert await probe.read() == b'{"jsonrpc":"2.0","id":1,"method":"m"}\n'
            assert peer.stats().pending == 2
            tg.cancel_scope.cancel()


# ------------------------------------------------------------------ limits


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_message_too_large_is_answered_and_peer_keeps_working(dialect: Dialect) -> None:
    async with probe_peer(echo_router(), dialect=dialect, max_bytes=64) as (_, probe):
        big = b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"' + b"x" * 200 + b'"}\n'
        for chunk in (big[:30], big[30:100], big[100:]):
            await probe.write(chunk)
        await probe.write(b'{"jsonrpc":"2.0","id":2,"method":"echo","params":"ok"}\n')
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Message too large",'
            b'"data":{"max_bytes":64}}}\n'
        )
        assert await probe.read() == b'{"jsonrpc":"2.0","id":2,"result":"ok"}\n'
        assert probe.framer.buffered == 0


async def test_unterminated_last_line_is_handled_at_end_of_input() -> None:
    async with probe_peer(echo_router()) as (peer, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"last"}')
        probe.write_eof()
        assert await probe.read() == b'{"jsonrpc":"2.0","id":1,"result":"last"}\n'
        await peer.wait_closed()


# --------------------------------------------------------------------- usage


def test_peer_can_be_built_outside_an_event_loop() -> None:
    a, b = memory_pair()
    peer = Peer(a)
    assert not peer.closed
    assert peer.stats().pending == 0
    for stream in (a, b):  # memory streams close synchronously
        for end in (stream.send_stream, stream.receive_stream):
            assert isinstance(end, MemoryObjectSendStream | MemoryObjectReceiveStream)
            end.close()


async def test_peer_must_be_running_to_send() -> None:
    a, b = memory_pair()
    async with a, b:
        peer = Peer(a)
        with pytest.raises(LocalProtocolError):
            await peer.request("m")
        with pytest.raises(LocalProtocolError):
            await peer.notify("m")
