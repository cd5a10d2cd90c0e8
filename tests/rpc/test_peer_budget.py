"""Outgoing data is bounded in bytes: a peer that stops reading pins little.

A reader that stops while large answers are produced: the writer holds at
most its byte budget, producers wait (backpressure) and no further request
is started; once the reader reads again every request is answered. Only
counts and byte totals are asserted, never durations.
"""

from __future__ import annotations

import anyio
import msgspec
import pytest

from wireproto.rpc._writer import Writer
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.testing import wait_all_tasks_blocked
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
BUDGET = 4 * MIB
REQUESTS = 40


async def test_a_reader_that_stops_pins_at_most_the_budget(anyio_backend: str) -> None:
    router = Router()
    started = 0

    @router.request("big")
    async def big(p: object) -> str:
        nonlocal started
        started += 1
        return "x" * MIB

    ours, theirs = memory_pair(max_buffer=1)
    async with Peer(theirs, router, send_buffer_bytes=BUDGET) as peer, ours:
        for n in range(REQUESTS):
            await ours.send(b'{"jsonrpc":"2.0","id":%d,"method":"big"}' % n)
        await wait_all_tasks_blocked()  # the peer stalled: nothing more can happen
        stats = peer.stats()
        assert stats.send_peak_bytes <= BUDGET
        assert stats.send_bytes >= BUDGET - MIB  # it really filled up
        # no request started once the budget was full: the answers produced fit in
        # the budget, plus one waiting producer, one in the transport's buffer and
        # one being handed to it
        assert started <= BUDGET // MIB + 3 < REQUESTS
        ids = set()
        for _ in range(REQUESTS):  # the reader reads again: every request is answered
            answer = msgspec.json.decode(await ours.receive())
            assert len(answer["result"]) == MIB
            ids.add(answer["id"])
        assert ids == set(range(REQUESTS)) and started == REQUESTS
        await wait_all_tasks_blocked()  # the writer counts a batch once all of it is written
        assert peer.stats().send_bytes == 0


async def test_notifications_wait_for_room_in_bytes(anyio_backend: str) -> None:
    ours, theirs = memory_pair(max_buffer=1)
    sent = 0
    async with Peer(theirs, send_buffer_bytes=BUDGET) as peer, ours:
        async with anyio.create_task_group() as tg:

            async def flood() -> None:
                nonlocal sent
                for _ in range(30):
                    await peer.notify("note", {"blob": "y" * MIB})
                    sent += 1

            tg.start_soon(flood)
            await wait_all_tasks_blocked()
            assert peer.stats().send_peak_bytes <= BUDGET
            assert sent < 30 and peer.stats().send_waiting == 1
            for _ in range(30):
                await ours.receive()
        assert sent == 30


async def test_a_message_over_the_budget_is_still_sent_alone(anyio_backend: str) -> None:
    ours, theirs = memory_pair()
    async with Peer(theirs, send_buffer_bytes=1024) as peer, ours:
        await peer.notify("note", {"blob": "z" * 5000})
        await peer.notify("note", {"blob": "z" * 10})
        assert len(await ours.receive()) > 5000
        assert len(await ours.receive()) < 100


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        Writer(None, 8, lambda exc: None, "w", max_bytes=0)  # type: ignore[arg-type]
