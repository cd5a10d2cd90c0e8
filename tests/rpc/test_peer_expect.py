"""A request alone in flight has its response expected by the peer's decoder.

Its result is decoded with the response's envelope (``Decoder.expect``, done
inline by ``Peer.request``); however the request ends (answered, failed,
timed out, or with another request in flight), the decoder is left
expecting nothing, so calls go on taking the one msgspec call of
``Decoder._fast``.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import msgspec
import pytest

from wireproto._switches import FAST_PATHS
from wireproto.errors import RemoteProtocolError, RpcError
from wireproto.rpc.router import Router
from wireproto.testing import peer_pair, probe_peer, wait_all_tasks_blocked

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct):
    x: int
    y: int


def _router(release: anyio.Event) -> Router:
    router = Router()

    @router.request("point")
    async def point(params: Any) -> Any:
        return {"x": params, "y": 2}

    @router.request("fail")
    async def fail(params: Any) -> Any:
        raise RpcError(1, "no")

    @router.request("fail_like_a_call")
    async def fail_like_a_call(params: Any) -> Any:
        raise RpcError(1, "no", {"method": "x"})  # ("method" among the first bytes)

    @router.request("slow")
    async def slow(params: Any) -> Any:
        await release.wait()
        return {"x": 0, "y": 0}

    @router.notification("note")
    async def note(params: Any) -> None:
        pass

    return router


async def test_however_a_request_ends_nothing_is_expected_after_it() -> None:
    release = anyio.Event()
    async with peer_pair(_router(release), _router(release)) as (a, b):
        await b.notify("note", {})  # (a's decoder builds its plan)
        assert await a.request("point", 1, result_type=Point) == Point(1, 2)
        idle = a._decoder._fast[0]
        if FAST_PATHS:
            assert type(idle).__name__ == "builtin_function_or_method"
        assert await a.request("point", 3, result_type=Point) == Point(3, 2)
        assert a._decoder._fast[0] is idle
        with pytest.raises(RpcError):
            await a.request("fail", None, result_type=Point)
        assert a._decoder._fast[0] is idle
        with pytest.raises(RemoteProtocolError):  # a result Point refuses
            await a.request("point", "one", result_type=Point)
        assert a._decoder._fast[0] is idle
        with pytest.raises(TimeoutError):
            await a.request("slow", None, result_type=Point, timeout=0.05)
        assert a._decoder._fast[0] is idle
        # two in flight: the second's response, decoded while the first's is
        # expected, never takes the first's type
        async with anyio.create_task_group() as tg:
            results: dict[str, Any] = {}

            async def call(name: str, method: str, type_: Any) -> None:
                results[name] = await a.request(method, 5, result_type=type_)
                release.set()

            tg.start_soon(call, "typed", "slow", Point)
            await wait_all_tasks_blocked()
            tg.start_soon(call, "raw", "point", dict[str, int])
        assert results == {"typed": Point(0, 0), "raw": {"x": 5, "y": 2}}
        assert a._decoder._fast[0] is idle


async def test_a_response_that_looks_like_a_call_leaves_nothing_expected() -> None:
    release = anyio.Event()
    async with peer_pair(_router(release), _router(release)) as (a, b):
        await b.notify("note", {})  # (a's decoder builds its plan)
        await a.request("point", 1, result_type=Point)
        idle = a._decoder._fast[0]
        with pytest.raises(RpcError):
            await a.request("fail_like_a_call", None, result_type=Point, id="r")
        assert a._decoder._fast[0] is idle
        # the same id again, with no result type: the result is not a Point
        assert await a.request("point", 7, id="r") == {"x": 7, "y": 2}


async def test_an_unhashable_dec_hook_is_decoded_after_the_response() -> None:
    class Hook:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, type_: type, obj: Any) -> Any:
            return obj

    release = anyio.Event()
    async with peer_pair(None, _router(release)) as (a, _):
        assert await a.request("point", 4, result_type=Point, dec_hook=Hook()) == Point(4, 2)
        assert not a._decoder._expecting  # (unhashable: nothing was expected)


async def test_a_late_response_to_a_request_given_up_leaves_the_next_one_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The expectation matches no id: a response that answers no request (here
    the late one to a request that timed out, of the same type) is dropped,
    and the request alone in flight still gets its own result."""
    caplog.set_level(logging.INFO, logger="wireproto.rpc.peer")
    router = Router()
    router.add("note", _note, notification=True)
    async with probe_peer(router) as (a, probe):
        await probe.write_json({"jsonrpc": "2.0", "method": "note", "params": {}})
        with pytest.raises(TimeoutError):
            await a.request("first", None, result_type=Point, timeout=0.01)
        first = await probe.read_json()
        idle = a._decoder._fast[0]
        async with anyio.create_task_group() as tg:
            got: list[Point] = []

            async def second() -> None:
                got.append(await a.request("second", None, result_type=Point))

            tg.start_soon(second)
            request = await probe.read_json()
            assert request["method"] == "second"
            for rid, x in ((first["id"], 9), (request["id"], 1)):  # (the late one first)
                await probe.write_json({"jsonrpc": "2.0", "id": rid, "result": {"x": x, "y": 2}})
        assert got == [Point(1, 2)] and a._decoder._fast[0] is idle
    assert f"response to unknown id {first['id']!r} dropped" in caplog.text


async def _note(params: Any) -> None:
    pass


@pytest.mark.parametrize("before", [
    {"jsonrpc": "2.0", "method": "note", "params": {}},
    {"jsonrpc": "2.0", "id": "c1", "method": "ask", "params": {}},  # (a call to us)
    {"jsonrpc": "2.0", "id": 999, "result": {"x": 9, "y": 9}},  # (a Point, answering none)
    {"jsonrpc": "2.0", "id": 999, "error": {"code": 1, "message": "m"}},
    {"jsonrpc": "2.0", "id": 999, "result": {"x": 9, "y": 9}, "method": "note"},
    "{not json",
])
async def test_whatever_comes_before_the_expected_response_it_is_typed_and_ends_it(
    before: Any,
) -> None:
    router = Router()
    router.add("note", _note, notification=True)
    router.add("ask", _note)
    async with probe_peer(router) as (a, probe):
        await probe.write_json({"jsonrpc": "2.0", "method": "note", "params": {}})
        got: list[Point] = []
        async with anyio.create_task_group() as tg:

            async def request() -> None:
                got.append(await a.request("p", None, result_type=Point))

            tg.start_soon(request)
            sent = await probe.read_json()
            if isinstance(before, str):
                await probe.write(before.encode() + b"\n")
            else:
                await probe.write_json(before)
            await probe.write_json({"jsonrpc": "2.0", "id": sent["id"], "result": {"x": 1, "y": 2}})
        assert got == [Point(1, 2)]
        assert a._decoder._fast[0] is a._decoder._paths.idle[0]  # (nothing expected)
