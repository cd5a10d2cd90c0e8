"""HandlerPool edge cases that the peer-level tests cannot reach."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import msgspec
import pytest

from wireproto.jsonrpc.codec import ACP_DIALECT, Decoder, Encoder
from wireproto.jsonrpc.messages import Request
from wireproto.rpc._handlers import HandlerPool
from wireproto.rpc._waiter import waiter_factory
from wireproto.rpc._writer import Writer
from wireproto.rpc.router import Router
from wireproto.testing import wait_all_tasks_blocked

pytestmark = pytest.mark.anyio


class _Sink(anyio.abc.ObjectSendStream[bytes]):
    def __init__(self) -> None:
        self.out: list[bytes] = []

    async def send(self, item: bytes) -> None:
        self.out.append(item)

    async def send_many(self, items: Sequence[bytes]) -> None:
        self.out.extend(items)

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_a_request_handed_to_a_task_being_cancelled_is_still_answered() -> None:
    # The task group is cancelled; before the parked handler task runs, the
    # reader hands it one more request. The task exits without running it,
    # but the request must not vanish: its -32800 answer is queued. (The
    # first request's task ends instead of parking: the second one's parks.)
    writer = Writer(_Sink(), 16, lambda exc: None, "t")
    router = Router()
    ran: list[Any] = []

    @router.request("work")
    async def work(params: Any) -> Any:
        ran.append(params)
        return params

    pool = HandlerPool(
        writer, Decoder(ACP_DIALECT), Encoder(ACP_DIALECT),
        max_concurrency=1, backlog=4, overload_code=-32099, name="t",
    )
    async with anyio.create_task_group() as tg:
        waiter = waiter_factory()
        writer.start(tg, waiter)
        pool.start(tg, waiter)
        for n in (1, 2):
            raw = msgspec.Raw(str(n).encode())
            await pool.admit(Request(id=n, method="work", params=raw), router.get("work"))
            await wait_all_tasks_blocked()  # answered; the second task is parked
        assert len(pool._idle) == 1
        tg.cancel_scope.cancel()
        await pool.admit(Request(id=3, method="work", params=msgspec.Raw(b"3")), router.get("work"))
    assert ran == [1, 2]
    assert pool.running == 0
    queued, _ = writer.stats()
    assert queued == 1
    answer = msgspec.json.decode(writer._items[0])  # what the writer would write next
    assert answer == {
        "jsonrpc": "2.0", "id": 3, "error": {"code": -32800, "message": "Request cancelled"},
    }


async def test_only_the_first_handler_task_ends_instead_of_parking() -> None:
    writer = Writer(_Sink(), 16, lambda exc: None, "t")
    router = Router()

    @router.request("work")
    async def work(params: Any) -> Any:
        return params

    pool = HandlerPool(
        writer, Decoder(ACP_DIALECT), Encoder(ACP_DIALECT),
        max_concurrency=4, backlog=4, overload_code=-32099, name="t",
    )
    parked = []
    async with anyio.create_task_group() as tg:
        waiter = waiter_factory()
        writer.start(tg, waiter)
        pool.start(tg, waiter)
        for n in range(4):
            raw = msgspec.Raw(str(n).encode())
            await pool.admit(Request(id=n, method="work", params=raw), router.get("work"))
            await wait_all_tasks_blocked()
            parked.append(len(pool._idle))
        assert pool.running == 0
        tg.cancel_scope.cancel()
    assert parked == [0, 1, 1, 1]  # the second request's task serves the later ones
    assert pool.running == 0


class _DirectSink(_Sink):
    """A sink that takes a message without waiting (as a pipe with room does), recording
    each write: a direct write as one message, a batch as the list of its messages."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[list[bytes]] = []
        self.needs_flush = False

    def try_send(self, item: bytes) -> bool:
        self.writes.append([item])
        return True

    async def send_many(self, items: Sequence[bytes]) -> None:
        self.writes.append(list(items))


@pytest.mark.fastpath  # (no direct writes without the fast paths)
async def test_the_answers_to_a_burst_of_requests_leave_in_one_write() -> None:
    sink = _DirectSink()
    writer = Writer(sink, 64, lambda exc: None, "t")
    router = Router()

    @router.request("work")
    async def work(params: Any) -> Any:
        return params

    pool = HandlerPool(
        writer, Decoder(ACP_DIALECT), Encoder(ACP_DIALECT),
        max_concurrency=8, backlog=8, overload_code=-32099, name="t",
    )
    async with anyio.create_task_group() as tg:
        waiter = waiter_factory()
        writer.start(tg, waiter)
        pool.start(tg, waiter)
        route = router.get("work")
        assert pool.try_admit(Request(id=0, method="work", params=msgspec.Raw(b"0")), route)
        await wait_all_tasks_blocked()
        for n in range(1, 6):  # what one read brought: admitted without a yield between
            assert pool.try_admit(Request(id=n, method="work", params=msgspec.Raw(b"%d" % n)),
                                  route)
        await wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    ids = [[msgspec.json.decode(m)["id"] for m in write] for write in sink.writes]
    assert ids == [[0], [1, 2, 3, 4, 5]]  # a lone request: at once; a burst: one write
