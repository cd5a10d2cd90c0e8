"""The RPC peer's flow control: concurrency limit, backlog, overload, ordering,
backpressure and writer coalescing. Assertions are on queue state, never time.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from timeouts import units

from wireproto.errors import RpcError
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.testing import RecordingStream, peer_pair, probe_peer, wait_all_tasks_blocked
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

CANCEL = "$/cancel_request"


def gated_router(gate: anyio.Event, started: list[Any]) -> Router:
    router = Router()

    @router.request("work")
    async def work(params: Any) -> Any:
        started.append(params)
        await gate.wait()
        return params

    return router


# ------------------------------------------------------ concurrency and backlog


async def test_concurrency_limit_backlog_and_overload() -> None:
    gate, started = anyio.Event(), list[Any]()
    async with probe_peer(gated_router(gate, started), max_concurrency=2, backlog=2) as (
        peer,
        probe,
    ):
        for i in range(1, 6):
            await probe.write(b'{"jsonrpc":"2.0","id":%d,"method":"work","params":%d}\n' % (i, i))
        # the fifth request finds both handlers and the backlog full
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","id":5,"error":{"code":-32099,"message":"Server overloaded"}}\n'
        )
        await wait_all_tasks_blocked()
        assert started == [1, 2]
        stats = peer.stats()
        assert (stats.running, stats.backlog) == (2, 2)
        await probe.assert_silent()
        gate.set()
        answers = {(await probe.read_json())["id"] for _ in range(4)}
        assert answers == {1, 2, 3, 4}
        assert sorted(started) == [1, 2, 3, 4]  # the backlog ran later
        stats = peer.stats()
        assert (stats.running, stats.backlog) == (0, 0)


async def test_overload_code_is_configurable() -> None:
    gate, started = anyio.Event(), list[Any]()
    router = gated_router(gate, started)
    async with peer_pair(None, router, max_concurrency=1, backlog=0, overload_code=-32000) as (
        a,
        _,
    ):
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.request, "work", 1)
            await wait_all_tasks_blocked()
            with pytest.raises(RpcError) as info:
                await a.request("work", 2)
            assert info.value.code == -32000
            gate.set()
        assert started == [1]


async def test_cancel_for_a_backlog_request() -> None:
    gate, started = anyio.Event(), list[Any]()
    router = gated_router(gate, started)
    async with probe_peer(router, max_concurrency=1, backlog=4, cancel_method=CANCEL) as (
        peer,
        probe,
    ):
        for i in (1, 2, 3):
            await probe.write(b'{"jsonrpc":"2.0","id":%d,"method":"work","params":%d}\n' % (i, i))
        await wait_all_tasks_blocked()
        assert peer.stats().backlog == 2
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": 2}})
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}\n'
        )
        assert peer.stats().backlog == 1
        gate.set()
        assert [(await probe.read_json())["id"] for _ in range(2)] == [1, 3]
        assert started == [1, 3]  # the cancelled request never ran
        await probe.assert_silent()


async def test_a_handler_task_serves_on_after_a_cancelled_request() -> None:
    # one handler task: after its request is cancelled it must run the next
    # ones normally (not inside the cancelled scope) and in order
    router = Router()
    ran: list[int] = []

    @router.request("hang")
    async def hang(params: Any) -> Any:
        await anyio.sleep_forever()

    @router.request("work")
    async def work(params: int) -> int:
        await anyio.lowlevel.checkpoint()  # a real suspension point
        ran.append(params)
        return params * 10

    async with probe_peer(router, max_concurrency=1, cancel_method=CANCEL) as (peer, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"hang"}\n')
        await probe.write(b'{"jsonrpc":"2.0","id":2,"method":"work","params":2}\n')
        await wait_all_tasks_blocked()
        assert (peer.stats().running, peer.stats().backlog) == (1, 1)
        await probe.write_json({"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": 1}})
        assert await probe.read() == (
            b'{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}\n'
        )
        assert await probe.read() == b'{"jsonrpc":"2.0","id":2,"result":20}\n'
        for i in (3, 4):
            await probe.write(b'{"jsonrpc":"2.0","id":%d,"method":"work","params":%d}\n' % (i, i))
            assert await probe.read() == b'{"jsonrpc":"2.0","id":%d,"result":%d}\n' % (i, i * 10)
        assert ran == [2, 3, 4]
        assert (peer.stats().running, peer.stats().backlog) == (0, 0)
        await probe.assert_silent()


async def test_responses_and_cancels_are_not_blocked_by_the_limit() -> None:
    """With every handler busy, the peer still reads answers to its own requests."""
    gate, started = anyio.Event(), list[Any]()
    async with probe_peer(gated_router(gate, started), max_concurrency=1, backlog=0) as (
        peer,
        probe,
    ):
        await probe.write(b'{"jsonrpc":"2.0","id":"busy","method":"work","params":0}\n')
        await wait_all_tasks_blocked()
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await peer.request("ping"))

            tg.start_soon(call)
            assert await probe.read() == b'{"jsonrpc":"2.0","id":0,"method":"ping"}\n'
            await probe.write(b'{"jsonrpc":"2.0","id":0,"result":"pong"}\n')
        assert results == ["pong"]
        gate.set()
        assert await probe.read() == b'{"jsonrpc":"2.0","id":"busy","result":0}\n'


# ------------------------------------------------------------------ ordering


async def test_notifications_handled_in_arrival_order() -> None:
    router = Router()
    seen: list[int] = []
    done = anyio.Event()

    @router.notification("tick")
    async def tick(params: Any) -> None:
        if params % 3 == 0:
            await anyio.lowlevel.checkpoint()  # a yield must not let a later one overtake
        seen.append(params)
        if params == 99:
            done.set()

    async with peer_pair(None, router) as (a, _):
        for i in range(100):
            await a.notify("tick", i)
        await done.wait()
    assert seen == list(range(100))


async def test_notify_many_is_queued_as_one_unit() -> None:
    router = Router()
    seen: list[int] = []
    done = anyio.Event()

    @router.notification("tick")
    async def tick(params: Any) -> None:
        seen.append(params)
        if len(seen) == 200:
            done.set()

    async with peer_pair(None, router) as (a, _):

        async def singles() -> None:
            for _ in range(100):
                await a.notify("tick", -1)  # (yields now and then: others may run)

        async with anyio.create_task_group() as tg:
            tg.start_soon(singles)
            await anyio.lowlevel.checkpoint()
            await a.notify_many("tick", list(range(100)))
        await a.notify_many("tick", [])  # (nothing to send)
        with anyio.fail_after(units(1)):
            await done.wait()
    start = seen.index(0)
    assert seen[start : start + 100] == list(range(100))  # nothing between them
    assert seen.count(-1) == 100


async def test_no_task_per_notification() -> None:
    router = Router()
    handled: list[int] = []
    gate, done = anyio.Event(), anyio.Event()

    @router.notification("n")
    async def n(params: int) -> None:
        handled.append(params)
        await gate.wait()
        if params == 99:
            done.set()

    async with peer_pair(router, None, inbox_size=200) as (_, b):
        await b.notify("n", 0)
        await wait_all_tasks_blocked()
        tasks = len(anyio.get_running_tasks())
        for i in range(1, 100):
            await b.notify("n", i)
        await wait_all_tasks_blocked()
        # 99 notifications wait in the inbox of the one task handling them
        assert handled == [0]
        assert len(anyio.get_running_tasks()) == tasks
        gate.set()
        await done.wait()
    assert handled == list(range(100))


async def test_caller_resumed_after_preceding_notifications(anyio_backend_name: str) -> None:
    router = Router()
    log: list[Any] = []
    gate = anyio.Event()

    @router.notification("update")
    async def update(params: Any) -> None:
        log.append(("update start", params))
        if params == 1:
            await gate.wait()
        log.append(("update end", params))

    async with probe_peer(router) as (peer, probe):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                log.append(("result", await peer.request("session/prompt")))

            tg.start_soon(call)
            assert (await probe.read_json())["id"] == 0
            await probe.write(
                b'{"jsonrpc":"2.0","method":"update","params":1}\n'
                b'{"jsonrpc":"2.0","method":"update","params":2}\n'
                b'{"jsonrpc":"2.0","id":0,"result":"end_turn"}\n'
            )
            await wait_all_tasks_blocked()
            assert log == [("update start", 1)]  # the response waits for the updates
            gate.set()
    assert log == [
        ("update start", 1),
        ("update end", 1),
        ("update start", 2),
        ("update end", 2),
        ("result", "end_turn"),
    ]


async def test_response_without_preceding_notifications_is_immediate() -> None:
    router = Router()
    gate = anyio.Event()

    @router.notification("slow")
    async def slow(params: Any) -> None:
        await gate.wait()

    async with probe_peer(router) as (peer, probe):
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await peer.request("m"))

            tg.start_soon(call)
            await probe.read()
            await probe.write(b'{"jsonrpc":"2.0","id":0,"result":1}\n')
            await wait_all_tasks_blocked()
            assert results == [1]
            await probe.write(b'{"jsonrpc":"2.0","method":"slow"}\n')
            gate.set()


async def test_notification_handler_may_make_requests() -> None:
    """A request made by a notification handler is not ordered behind itself."""
    router = Router()
    log: list[Any] = []
    holder: dict[str, Peer] = {}

    @router.notification("ask")
    async def ask(params: Any) -> None:
        log.append(("answer", params, await holder["peer"].request("question", params)))

    with anyio.fail_after(units(1)):  # a deadlock fails fast instead of hanging
        async with probe_peer(router) as (peer, probe):
            holder["peer"] = peer
            await probe.write(b'{"jsonrpc":"2.0","method":"ask","params":1}\n')
            await probe.write(b'{"jsonrpc":"2.0","method":"ask","params":2}\n')
            for _ in range(2):
                req = await probe.read_json()
                answer = {"jsonrpc": "2.0", "id": req["id"], "result": req["params"] * 10}
                await probe.write_json(answer)
            await wait_all_tasks_blocked()
    assert log == [("answer", 1, 10), ("answer", 2, 20)]


async def test_failing_notification_handler_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "wireproto.rpc.peer")
    router = Router()
    seen: list[Any] = []

    @router.notification("n", int)
    async def n(params: int) -> None:
        if params == 1:
            raise RuntimeError("handler bug")
        seen.append(params)

    async with probe_peer(router) as (_, probe):
        await probe.write(b'{"jsonrpc":"2.0","method":"n","params":1}\n')
        await probe.write(b'{"jsonrpc":"2.0","method":"n","params":"bad"}\n')
        await probe.write(b'{"jsonrpc":"2.0","method":"n","params":2}\n')
        await probe.assert_silent()  # notifications are never answered
    assert seen == [2]
    assert "handler bug" in caplog.text
    assert "Expected `int`, got `str`" in caplog.text


# -------------------------------------------------------------- backpressure


async def test_writer_coalesces_queued_messages() -> None:
    sa, sb = memory_pair(max_buffer=0)  # each write waits for the reader
    recorder = RecordingStream(sa)
    async with sb, Peer(recorder, send_queue=64) as peer:
        async with anyio.create_task_group() as tg:

            async def produce() -> None:
                for i in range(100):
                    await peer.notify("n", i)

            tg.start_soon(produce)
            await wait_all_tasks_blocked()
            # the writer is stuck on the first write of a batch; the rest is queued
            assert peer.stats().send_queued > 0
            received = [await sb.receive() for _ in range(100)]
    expected = [b'{"jsonrpc":"2.0","method":"n","params":%d}' % i for i in range(100)]
    assert received == expected  # the memory transport drops the terminator
    assert recorder.sent == [m + b"\n" for m in expected]  # what the peer wrote
    assert sum(recorder.batches) == 100
    assert max(recorder.batches) > 1


async def test_producer_waits_when_send_queue_is_full() -> None:
    sa, sb = memory_pair(max_buffer=0)
    async with sb, Peer(sa, send_queue=2, flush_timeout=1) as peer:
        sent: list[int] = []
        async with anyio.create_task_group() as tg:

            async def produce() -> None:
                for i in range(6):
                    await peer.notify("n", i)
                    sent.append(i)

            tg.start_soon(produce)
            await wait_all_tasks_blocked()
            # the writer holds a batch it cannot write, the queue is at capacity
            # and the producer waits (how many the writer took depends on scheduling)
            stats = peer.stats()
            assert (stats.send_queued, stats.send_waiting) == (2, 1)
            assert sent in ([0, 1, 2], [0, 1, 2, 3])
            first = await sb.receive()  # the reader catches up: everything flows
            rest = [await sb.receive() for _ in range(5)]
        assert sent == list(range(6))
    assert [first, *rest] == [b'{"jsonrpc":"2.0","method":"n","params":%d}' % i for i in range(6)]


async def test_blocked_writer_releases_producers_on_close() -> None:
    sa, sb = memory_pair(max_buffer=0)
    outcome: list[str] = []
    async with sb:
        async with anyio.create_task_group() as tg:
            async with Peer(sa, send_queue=1, flush_timeout=0.01) as peer:

                async def produce() -> None:
                    try:
                        for i in range(5):
                            await peer.notify("n", i)
                    except Exception as exc:
                        outcome.append(type(exc).__name__)

                tg.start_soon(produce)
                await wait_all_tasks_blocked()
                assert peer.stats().send_waiting == 1
    assert outcome == ["ConnectionClosed"]


async def test_request_cancelled_before_it_was_queued_sends_no_cancel() -> None:
    sa, sb = memory_pair(max_buffer=0)
    received: list[bytes] = []

    async def read_all() -> None:
        async for item in sb:
            received.append(item)

    async with sb, Peer(sa, send_queue=1, cancel_method=CANCEL, flush_timeout=1) as peer:
        await peer.notify("first")  # taken by the writer, which waits for the reader
        await wait_all_tasks_blocked()
        await peer.notify("second")  # fills the queue
        async with anyio.create_task_group() as outer:
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.request, "never sent")
                await wait_all_tasks_blocked()
                assert peer.stats().send_waiting == 1
                tg.cancel_scope.cancel()
                # drain while the caller unwinds: a stray cancel would show up
                outer.start_soon(read_all)
            assert peer.stats().pending == 0
            await wait_all_tasks_blocked()
            outer.cancel_scope.cancel()
    assert received == [
        b'{"jsonrpc":"2.0","method":"first"}',
        b'{"jsonrpc":"2.0","method":"second"}',
    ]
