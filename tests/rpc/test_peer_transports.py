"""The peer over real transports: memory, a child process over stdio, websocket.

The far end serves the router of ``tests/helpers/peer_app.py``: in-process for
memory and websocket, in a child process (``open_stdio``) for subprocess. Every
case runs on asyncio and on trio.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from loading import load_file
from timeouts import units

from wireproto.errors import ConnectionClosed
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import SubprocessStream, open_subprocess
from wireproto.transports.websocket import (
    WebSocketRequest,
    WebSocketStream,
    connect_websocket,
    serve_websocket,
)

pytestmark = pytest.mark.anyio

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
KINDS = ["memory", "subprocess", "websocket"]


def _load(name: str) -> ModuleType:
    return load_file(HELPERS / f"{name}.py", f"wireproto_tests_{name}")


app = _load("peer_app")


@dataclasses.dataclass
class Near:
    """Our peer and what its router observed."""

    peer: Peer
    ticks: list[int]
    started: anyio.Event
    cancelled: anyio.Event
    process: SubprocessStream | None = None


def near_router(near: dict[str, Any]) -> Router:
    router = Router()

    @router.request("double")
    async def double(p: dict[str, int]) -> int:
        return 2 * p["x"]

    @router.notification("tick")
    async def tick(p: dict[str, int]) -> None:
        near["ticks"].append(p["i"])

    @router.notification("hang/started")
    async def started(p: Any) -> None:
        near["started"].set()

    @router.notification("hang/cancelled")
    async def cancelled(p: Any) -> None:
        near["cancelled"].set()

    return router


@asynccontextmanager
async def far_end(kind: str, backend: str) -> AsyncIterator[tuple[Any, SubprocessStream | None]]:
    """Yield our stream to a far end serving ``peer_app`` (and the child, if any)."""
    if kind == "memory":
        ours, theirs = memory_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(app.serve, theirs)
            yield ours, None
            tg.cancel_scope.cancel()
    elif kind == "websocket":

        async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
            await app.serve(stream)

        async with (
            serve_websocket(handler) as server,
            connect_websocket(server.url) as stream,
        ):
            yield stream, None
    else:
        cmd = [sys.executable, str(HELPERS / "peer_app.py"), backend]
        async with open_subprocess(cmd, stderr="log", shutdown_timeout=5) as process:
            yield process, process


@asynccontextmanager
async def open_near(kind: str, backend: str) -> AsyncIterator[Near]:
    state: dict[str, Any] = {
        "ticks": [],
        "started": anyio.Event(),
        "cancelled": anyio.Event(),
    }
    async with (
        far_end(kind, backend) as (stream, process),
        Peer(stream, near_router(state), cancel_method=app.CANCEL, name="near") as peer,
    ):
        yield Near(peer, state["ticks"], state["started"], state["cancelled"], process)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_requests_in_both_directions(kind: str, anyio_backend_name: str) -> None:
    async with open_near(kind, anyio_backend_name) as near:
        with anyio.fail_after(units(4)):
            assert await near.peer.request("add", {"a": 2, "b": 3}) == 5
            assert await near.peer.request("call_back", {"x": 21}, result_type=int) == 43
            results: dict[int, int] = {}

            async def add(i: int) -> None:
                results[i] = await near.peer.request("add", {"a": i, "b": i}, result_type=int)

            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(add, i)
            assert results == {i: 2 * i for i in range(100)}


async def test_notifications_keep_their_order(kind: str, anyio_backend_name: str) -> None:
    async with open_near(kind, anyio_backend_name) as near:
        with anyio.fail_after(units(4)):
            # Theirs to ours: every tick is handled before the response resumes us.
            assert await near.peer.request("notify_me", {"count": 300}) == "done"
            assert near.ticks == list(range(300))
            # Ours to theirs.
            for i in range(300):
                await near.peer.notify("record", {"i": i})
            assert await near.peer.request("recorded", {"count": 300}) == list(range(300))


async def test_large_messages_interleaved_with_small_ones(
    kind: str, anyio_backend_name: str
) -> None:
    # larger than a pipe holds: written in part at once, the rest by the writer,
    # and nothing sent meanwhile may land inside it
    big = {"text": "z" * (300 * 1024), "n": -1}
    async with open_near(kind, anyio_backend_name) as near:
        with anyio.fail_after(units(4)):
            results: dict[int, Any] = {}

            async def echo(i: int) -> None:
                params = big if i % 3 == 0 else {"n": i}
                results[i] = await near.peer.request("echo", params)

            async with anyio.create_task_group() as tg:
                for i in range(30):
                    tg.start_soon(echo, i)
            assert results == {i: big if i % 3 == 0 else {"n": i} for i in range(30)}


async def test_cancel_request_reaches_the_handler(kind: str, anyio_backend_name: str) -> None:
    async with open_near(kind, anyio_backend_name) as near:
        with anyio.fail_after(units(4)):
            async with anyio.create_task_group() as tg:
                tg.start_soon(near.peer.request, "hang")
                await near.started.wait()
                tg.cancel_scope.cancel()  # sends $/cancel_request
            await near.cancelled.wait()  # the far handler was cancelled
            assert await near.peer.request("add", {"a": 1, "b": 1}) == 2


async def test_pending_requests_fail_when_the_far_end_dies(
    kind: str, anyio_backend_name: str
) -> None:
    async with open_near(kind, anyio_backend_name) as near:
        with anyio.fail_after(units(4)):
            failures: list[BaseException] = []

            async def pending() -> None:
                try:
                    await near.peer.request("hang")
                except ConnectionClosed as exc:
                    failures.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(pending)
                await near.started.wait()
                with pytest.raises(ConnectionClosed):
                    await near.peer.request("die")
            assert len(failures) == 1
            await near.peer.wait_closed()
            with pytest.raises(ConnectionClosed):
                await near.peer.request("add", {"a": 1, "b": 1})
            if near.process is not None:
                assert await near.process.wait() == 3
