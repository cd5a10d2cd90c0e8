"""Peer extensions used by the ACP agent: ``Reply`` follow-ups, route decoders, ``wait_idle``."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from wireproto.errors import InvalidMessage
from wireproto.rpc.router import Reply, Router
from wireproto.testing import probe_peer, wait_all_tasks_blocked

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct):
    x: int
    y: int


async def test_follow_ups_are_written_right_after_the_response() -> None:
    router = Router()
    noise_started = anyio.Event()

    async def make(params: Any) -> Reply:
        await noise_started.wait()
        return Reply({"id": "s1"}, [("made", {"id": "s1", "n": 1}), ("made", {"id": "s1", "n": 2})])

    router.add("make", make)
    async with probe_peer(router) as (peer, probe):

        async def noise() -> None:
            noise_started.set()
            for n in range(200):
                await peer.notify("noise", {"n": n})

        async with anyio.create_task_group() as tg:
            tg.start_soon(noise)
            await probe.write_json({"jsonrpc": "2.0", "id": 7, "method": "make"})
            seen = [await probe.read_json() for _ in range(203)]
    index = next(i for i, m in enumerate(seen) if m.get("id") == 7)
    assert seen[index]["result"] == {"id": "s1"}
    assert seen[index + 1] == {"jsonrpc": "2.0", "method": "made", "params": {"id": "s1", "n": 1}}
    assert seen[index + 2] == {"jsonrpc": "2.0", "method": "made", "params": {"id": "s1", "n": 2}}
    assert [m["params"]["n"] for m in seen if m.get("method") == "noise"] == list(range(200))


async def test_an_unencodable_follow_up_is_skipped() -> None:
    router = Router()

    async def make(params: Any) -> Reply:
        return Reply(1, [("bad", object()), ("good", [])])

    router.add("make", make)
    async with probe_peer(router) as (_peer, probe):
        await probe.write_json({"jsonrpc": "2.0", "id": 1, "method": "make"})
        assert (await probe.read_json())["result"] == 1
        assert await probe.read_json() == {"jsonrpc": "2.0", "method": "good", "params": []}


def _decode_point(raw: msgspec.Raw) -> Point:
    value = msgspec.json.decode(raw)
    if isinstance(value, dict) and value.get("x") == "special":
        raise InvalidMessage(-32602, "x is special", {"path": "$.x"})
    return msgspec.json.decode(raw, type=Point)


async def test_a_route_decoder_replaces_the_params_type() -> None:
    router = Router()
    notes: list[Point] = []

    async def norm(p: Point) -> int:
        return p.x * p.x + p.y * p.y

    async def note(p: Point) -> None:
        notes.append(p)

    router.add("norm", norm, decode=_decode_point)
    router.add("note", note, notification=True, decode=_decode_point)
    async with probe_peer(router) as (_peer, probe):
        await probe.write_json({"jsonrpc": "2.0", "id": 1, "method": "norm",
                                "params": {"x": 3, "y": 4}})
        assert (await probe.read_json())["result"] == 25
        await probe.write_json({"jsonrpc": "2.0", "id": 2, "method": "norm",
                                "params": {"x": "a", "y": 4}})
        error = (await probe.read_json())["error"]
        assert error["code"] == -32602 and error["data"]["path"] == "$.x"
        await probe.write_json({"jsonrpc": "2.0", "id": 3, "method": "norm",
                                "params": {"x": "special"}})
        assert (await probe.read_json())["error"] == {
            "code": -32602, "message": "x is special", "data": {"path": "$.x"},
        }
        await probe.write_json({"jsonrpc": "2.0", "method": "note", "params": {"x": 1, "y": 2}})
        await probe.write_json({"jsonrpc": "2.0", "id": 4, "method": "norm"})
        assert "error" in await probe.read_json()  # absent params decode as {}
    assert notes == [Point(1, 2)]


async def test_wait_idle_waits_for_running_handlers() -> None:
    router = Router()
    release = anyio.Event()

    async def slow(params: Any) -> str:
        await release.wait()
        return "done"

    router.add("slow", slow)
    async with probe_peer(router) as (peer, probe):
        await peer.wait_idle()  # nothing running: returns at once
        for rid in (1, 2):
            await probe.write_json({"jsonrpc": "2.0", "id": rid, "method": "slow"})
        idle = anyio.Event()

        async def waiter() -> None:
            await peer.wait_idle()
            idle.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await wait_all_tasks_blocked()
            assert peer.stats().running == 2 and not idle.is_set()
            release.set()
            await idle.wait()
        answers = {(await probe.read_json())["id"], (await probe.read_json())["id"]}
    assert answers == {1, 2}
