"""The Peer's ordering hooks: ``on_response``, ``on_sent`` and ``call_in_order``.

Peer ``a`` handles ``note`` notifications with a handler that blocks on its
first call until released, so what ``b`` sends next waits in ``a``'s inbox:
each hook must run at its exact place in that order.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from wireproto.rpc.router import Router
from wireproto.testing import peer_pair, wait_all_tasks_blocked

pytestmark = pytest.mark.anyio


def held_router(log: list[str], entered: anyio.Event, release: anyio.Event) -> Router:
    router = Router()

    async def note(params: Any) -> None:
        if not entered.is_set():
            entered.set()
            await release.wait()
        log.append(f"note {params['n']}")

    async def ping(params: Any) -> str:
        return "pong"

    router.add("note", note, notification=True)
    router.add("ping", ping)
    return router


async def test_on_sent_and_on_response_run_at_their_place() -> None:
    log: list[str] = []
    entered, release = anyio.Event(), anyio.Event()
    server = Router()

    async def ask(params: Any) -> str:
        release.set()  # the response is written after this note was
        return "answer"

    server.add("ask", ask)
    async with peer_pair(held_router(log, entered, release), server) as (a, b):
        await b.notify("note", {"n": 1})
        await entered.wait()
        result = await a.request("ask", on_response=lambda r: log.append("response"),
                                 on_sent=lambda: log.append("sent"))
        assert result == "answer"
        assert log == ["sent", "note 1", "response"]


async def test_call_in_order_runs_after_what_was_received_before() -> None:
    log: list[str] = []
    entered, release = anyio.Event(), anyio.Event()
    async with peer_pair(held_router(log, entered, release), Router()) as (a, b):
        a.call_in_order(lambda: log.append("at once"))  # nothing waiting
        assert log == ["at once"]
        log.clear()
        await b.notify("note", {"n": 1})
        await b.notify("note", {"n": 2})
        assert await b.request("ping") == "pong"  # so a has read note 2
        await entered.wait()
        a.call_in_order(lambda: log.append("marker"))
        await b.notify("note", {"n": 3})
        done = anyio.Event()
        assert await b.request("ping") == "pong"  # so a has read note 3
        a.call_in_order(done.set)
        release.set()
        await done.wait()
        assert log == ["note 1", "note 2", "marker", "note 3"]
        await wait_all_tasks_blocked()  # the inbox has nothing left: it waits again
        a.call_in_order(lambda: log.append("at once again"))
        assert log[-1] == "at once again"
