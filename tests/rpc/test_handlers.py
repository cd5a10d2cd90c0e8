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
    # but the request must not vanish: its -32800 answer is queued.
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
        await pool.admit(Request(id=1, method="work", params=msgspec.Raw(b"1")), router.get("work"))
        await wait_all_tasks_blocked()  # answered; the task is parked
        tg.cancel_scope.cancel()
        await pool.admit(Request(id=2, method="work", params=msgspec.Raw(b"2")), router.get("work"))
    assert ran == [1]
    assert pool.running == 0
    queued, _ = writer.stats()
    assert queued == 1
    answer = msgspec.json.decode(writer._items[0])  # what the writer would write next
    assert answer == {
        "jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "Request cancelled"},
    }
