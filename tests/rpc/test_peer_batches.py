"""The peer's read loop over a framed byte stream: what one read brings is taken as a batch.

``FramedStream.receive_buffered`` hands the read loop the messages of one
read at once; responses and notifications are handled inline, and the
answers to a burst of requests are queued while more requests wait. Each
case writes its messages in one write, so the peer reads them together,
and checks what must not change with that: the order of notifications and
responses, which request gets which typed result, answers leaving while a
later handler blocks, cancellations and oversized lines in mid-batch.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest
from timeouts import units

from wireproto.errors import RpcError
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.testing import wait_all_tasks_blocked
from wireproto.transports._framed import FramedStream
from wireproto.transports.stdio import FdReceiveStream, FdSendStream

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct):
    x: int
    y: int


class Far:
    """The far end: writes raw lines in one write, reads the peer's messages."""

    def __init__(self, out: FramedStream, into: FramedStream) -> None:
        self._out = out
        self._in = into

    async def write(self, *messages: Any) -> None:
        """Every message in one write (bytes as they are, anything else as JSON)."""
        await self._out.send_many([
            m if isinstance(m, bytes) else msgspec.json.encode(m) for m in messages
        ])

    async def read(self) -> Any:
        with anyio.fail_after(units(2)):
            return msgspec.json.decode(await self._in.receive())


@asynccontextmanager
async def framed_peer(router: Router | None = None, **options: Any) -> AsyncIterator[
    tuple[Peer, Far]
]:
    """A peer over two OS pipes, framed as stdio is (so ``receive_buffered`` is used)."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    stream = FramedStream(FdReceiveStream(r_in), FdSendStream(w_out), **options.pop("framing", {}))
    out = FramedStream(None, FdSendStream(w_in))
    into = FramedStream(FdReceiveStream(r_out), None)
    async with out, into, Peer(stream, router, name="near", **options) as peer:
        yield peer, Far(out, into)


async def test_a_response_waits_for_the_notifications_read_with_it() -> None:
    seen: list[Any] = []
    router = Router()

    @router.notification("note")
    async def note(params: Any) -> None:
        await anyio.lowlevel.checkpoint()  # (it yields: the response must still wait)
        seen.append(params)

    async with framed_peer(router) as (peer, far):
        async with anyio.create_task_group() as tg:
            got: list[Any] = []

            async def ask() -> None:
                got.append(await peer.request("ask", None, result_type=Point))
                got.append(seen[:2])  # handled before the result came (3 may be too)

            tg.start_soon(ask)
            request = await far.read()
            await far.write(
                {"jsonrpc": "2.0", "method": "note", "params": 1},
                {"jsonrpc": "2.0", "method": "note", "params": 2},
                {"jsonrpc": "2.0", "id": request["id"], "result": {"x": 1, "y": 2}},
                {"jsonrpc": "2.0", "method": "note", "params": 3},
            )
        assert got == [Point(1, 2), [1, 2]]
        # delivered after the notifications before it, before the one after it
        got.clear()
        seen.clear()
        async with anyio.create_task_group() as tg:

            async def hooked() -> None:
                await peer.request("ask", None, on_response=lambda r: got.append(list(seen)))

            tg.start_soon(hooked)
            request = await far.read()
            await far.write(
                {"jsonrpc": "2.0", "method": "note", "params": 1},
                {"jsonrpc": "2.0", "id": request["id"], "result": None},
                {"jsonrpc": "2.0", "method": "note", "params": 2},
            )
        assert got == [[1]]


async def test_typed_results_go_to_their_own_requests_when_read_together() -> None:
    """The first request's result type is expected until the second is sent;
    the second's response (shaped like a Point) comes first in the same read."""
    async with framed_peer() as (peer, far):
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:

            async def call(name: str, type_: Any) -> None:
                results[name] = await peer.request(name, None, result_type=type_)

            tg.start_soon(call, "typed", Point)
            first = await far.read()
            tg.start_soon(call, "raw", dict[str, Any])
            second = await far.read()
            await far.write(
                {"jsonrpc": "2.0", "id": second["id"], "result": {"x": 5, "y": 6}},
                {"jsonrpc": "2.0", "id": first["id"], "result": {"x": 1, "y": 2}},
            )
        assert results == {"typed": Point(1, 2), "raw": {"x": 5, "y": 6}}
        assert type(results["raw"]) is dict


async def test_a_late_answer_then_an_error_like_a_call_then_the_answer() -> None:
    """Alone in flight, typed: a late answer to a request given up and an error
    answer whose data looks like a call, read with the real answer, change
    nothing: the request gets its own typed result."""
    async with framed_peer() as (peer, far):
        with pytest.raises(TimeoutError):
            await peer.request("gone", None, result_type=Point, timeout=0.01)
        gone = await far.read()
        assert gone["method"] == "gone"
        got: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                got.append(await peer.request("mine", None, result_type=Point))

            tg.start_soon(call)
            mine = await far.read()
            if mine.get("method") != "mine":  # (the cancellation of "gone" came first)
                mine = await far.read()
            await far.write(
                {"jsonrpc": "2.0", "id": gone["id"], "result": {"x": 9, "y": 9}},
                {"jsonrpc": "2.0", "id": "nobody",
                 "error": {"code": 1, "message": "x", "data": {"method": "mine"}}},
                {"jsonrpc": "2.0", "id": mine["id"], "result": {"x": 1, "y": 2}},
            )
        assert got == [Point(1, 2)]


async def test_a_notification_handler_request_answered_in_the_same_read_as_a_note() -> None:
    """A notification handler waits for its own request; its response comes
    behind another notification in one read: delivered at once (no deadlock)."""
    seen: list[Any] = []
    router = Router()
    peer_box: list[Peer] = []
    done = anyio.Event()

    @router.notification("start")
    async def start(params: Any) -> None:
        seen.append(await peer_box[0].request("inner", None, result_type=Point))

    @router.notification("note")
    async def note(params: Any) -> None:
        seen.append(params)
        done.set()

    async with framed_peer(router) as (peer, far):
        peer_box.append(peer)
        await far.write({"jsonrpc": "2.0", "method": "start"})
        inner = await far.read()
        await far.write(
            {"jsonrpc": "2.0", "method": "note", "params": "after"},
            {"jsonrpc": "2.0", "id": inner["id"], "result": {"x": 3, "y": 4}},
        )
        with anyio.fail_after(units(2)):
            await done.wait()
        assert seen == [Point(3, 4), "after"]


@pytest.mark.parametrize("max_concurrency", [1, 4])
async def test_answers_of_a_burst_leave_while_its_last_handler_blocks(
    max_concurrency: int,
) -> None:
    release = anyio.Event()
    router = Router()

    @router.request("quick")
    async def quick(params: Any) -> Any:
        return params

    @router.request("stuck")
    async def stuck(params: Any) -> Any:
        await release.wait()
        return "late"

    async with framed_peer(router, max_concurrency=max_concurrency) as (_, far):
        await far.write(
            *({"jsonrpc": "2.0", "id": i, "method": "quick", "params": i} for i in range(3)),
            {"jsonrpc": "2.0", "id": 3, "method": "stuck"},
        )
        assert [(await far.read())["result"] for _ in range(3)] == [0, 1, 2]
        release.set()
        assert await far.read() == {"jsonrpc": "2.0", "id": 3, "result": "late"}


async def test_a_cancellation_read_with_its_request_answers_it_cancelled() -> None:
    release = anyio.Event()
    router = Router()

    @router.request("slow")
    async def slow(params: Any) -> Any:
        await release.wait()
        return params

    options = {"max_concurrency": 1, "cancel_method": "$/cancelRequest", "cancel_param": "id"}
    async with framed_peer(router, **options) as (_, far):
        await far.write(
            {"jsonrpc": "2.0", "id": 1, "method": "slow", "params": 1},
            {"jsonrpc": "2.0", "id": 2, "method": "slow", "params": 2},
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}},
        )
        answer = await far.read()
        assert answer["id"] == 2 and answer["error"]["code"] == -32800
        release.set()
        assert await far.read() == {"jsonrpc": "2.0", "id": 1, "result": 1}


async def test_an_oversized_line_in_mid_read_is_reported_in_its_place() -> None:
    router = Router()

    @router.request("echo")
    async def echo(params: Any) -> Any:
        return params

    big = b'{"jsonrpc":"2.0","id":9,"method":"echo","params":"' + b"x" * 300 + b'"}\n'
    async with framed_peer(router, max_concurrency=1, framing={"max_bytes": 200}) as (_, far):
        await far.write(
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": 1},
            big,
            {"jsonrpc": "2.0", "id": 2, "method": "echo", "params": 2},
        )
        # (answers are not ordered among themselves: the report is written at once)
        got = [await far.read() for _ in range(3)]
        reports = [m for m in got if m["id"] is None]
        assert [r["error"]["code"] for r in reports] == [-32600]
        assert [m for m in got if m["id"] is not None] == [
            {"jsonrpc": "2.0", "id": 1, "result": 1}, {"jsonrpc": "2.0", "id": 2, "result": 2}
        ]


async def test_an_error_answer_is_not_a_result_of_another_type() -> None:
    async with framed_peer() as (peer, far):
        async with anyio.create_task_group() as tg:
            failed: list[BaseException] = []

            async def call() -> None:
                try:
                    await peer.request("x", None, result_type=Point)
                except RpcError as exc:
                    failed.append(exc)

            tg.start_soon(call)
            request = await far.read()
            await wait_all_tasks_blocked()
            await far.write({"jsonrpc": "2.0", "id": request["id"],
                             "error": {"code": 7, "message": "no", "data": {"x": 1, "y": 2}}})
        assert [(e.code, e.data) for e in failed] == [(7, {"x": 1, "y": 2})]  # type: ignore[attr-defined]


async def test_a_second_request_with_on_response_gets_its_raw_result() -> None:
    """The first request expects a Point; the second (with ``on_response``,
    which gets the raw result) ends that expectation when it is sent, so its
    own Point-shaped answer, read first, reaches it raw, never as a Point."""
    async with framed_peer() as (peer, far):
        results: dict[str, Any] = {}
        hooked: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def typed() -> None:
                results["typed"] = await peer.request("typed", None, result_type=Point)

            async def raw() -> None:
                results["raw"] = await peer.request(
                    "raw", None, on_response=lambda r: hooked.append(r.result)
                )

            tg.start_soon(typed)
            first = await far.read()
            tg.start_soon(raw)
            second = await far.read()
            await far.write(
                {"jsonrpc": "2.0", "id": second["id"], "result": {"x": 5, "y": 6}},
                {"jsonrpc": "2.0", "id": first["id"], "result": {"x": 1, "y": 2}},
            )
        assert results == {"typed": Point(1, 2), "raw": {"x": 5, "y": 6}}
        assert [type(r) for r in hooked] == [msgspec.Raw]
