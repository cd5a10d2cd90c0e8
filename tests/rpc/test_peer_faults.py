"""The peer when the other side misbehaves: killed, half-closed, not reading."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import msgspec
import pytest
from timeouts import units

from wireproto.errors import ConnectionClosed, RemoteProtocolError
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.testing import wait_all_tasks_blocked
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import SubprocessStream, open_subprocess

pytestmark = pytest.mark.anyio

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
CANCEL = "$/cancel_request"


def started_router() -> tuple[Router, anyio.Event]:
    router = Router()
    started = anyio.Event()

    @router.notification("hang/started")
    async def on_started(p: Any) -> None:
        started.set()

    return router, started


def child(backend: str) -> list[str]:
    return [sys.executable, str(HELPERS / "peer_app.py"), backend]


async def test_child_killed_mid_request(anyio_backend_name: str) -> None:
    router, started = started_router()
    async with (
        open_subprocess(child(anyio_backend_name), stderr="log") as stream,
        Peer(stream, router, cancel_method=CANCEL) as peer,
    ):
        with anyio.fail_after(units(2)):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_kill_when, started, stream)
                with pytest.raises(ConnectionClosed) as info:
                    await peer.request("hang")
            assert isinstance(info.value.__cause__, (anyio.EndOfStream, anyio.BrokenResourceError))
            assert peer.closed
            assert await stream.wait() == -signal.SIGKILL


async def _kill_when(started: anyio.Event, stream: SubprocessStream) -> None:
    await started.wait()
    os.kill(stream.pid, signal.SIGKILL)


async def test_child_closes_its_stdout_but_keeps_running(
    anyio_backend_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with open_subprocess(child(anyio_backend_name), stderr="log") as stream:
        async with Peer(stream, cancel_method=CANCEL) as peer:
            with anyio.fail_after(units(2)), pytest.raises(ConnectionClosed):
                await peer.request("close_output")
            await peer.wait_closed()
            assert stream.returncode is None  # still running, reading its stdin
    # Our closing its stdin was enough: no signal was needed.
    assert stream.returncode == 0
    assert not any("still running" in r.getMessage() for r in caplog.records)


async def test_slow_reader_over_memory_bounds_every_buffer() -> None:
    total, send_queue, inbox, channel = 1000, 8, 4, 4
    release = anyio.Event()
    all_handled = anyio.Event()
    handled: list[int] = []
    router = Router()

    @router.notification("slow")
    async def slow(p: dict[str, int]) -> None:
        handled.append(p["i"])
        if len(handled) == total:
            all_handled.set()
        await release.wait()

    ours, theirs = memory_pair(max_buffer=channel)
    sent = 0

    async def produce(peer: Peer) -> None:
        nonlocal sent
        for i in range(total):
            await peer.notify("slow", {"i": i})
            sent += 1

    async with (
        Peer(theirs, router, inbox_size=inbox) as _far,
        Peer(ours, send_queue=send_queue) as near,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(produce, near)
        await wait_all_tasks_blocked()
        # The producer waits; nothing grew past its bound on the way.
        assert handled == [0]
        assert ours.send_stream.statistics().current_buffer_used == channel
        writer_batch = 64
        assert sent <= send_queue + writer_batch + channel + 1 + inbox + 1
        assert sent < total
        release.set()
        with anyio.fail_after(units(4)):
            await all_handled.wait()
    assert handled == list(range(total))


async def test_slow_reader_over_a_pipe_blocks_the_producer(anyio_backend_name: str) -> None:
    total, send_queue = 5000, 16
    payload = "p" * 1024
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]  # never reads stdin
    sent = 0

    async def produce(peer: Peer) -> None:
        nonlocal sent
        for i in range(total):
            await peer.notify("data", {"i": i, "payload": payload})
            sent += 1

    async with (
        open_subprocess(sleeper, shutdown_timeout=0.2, stderr="log") as stream,
        Peer(stream, send_queue=send_queue, flush_timeout=0.2) as peer,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(produce, peer)
        await wait_all_tasks_blocked()
        # Queue + one writer batch + the pipe (64 KiB) + the event loop's
        # write buffer (64 KiB high-water mark + one batch): a few hundred
        # 1 KiB messages at most, never the whole 5 MB.
        assert sent < 450
        assert stream.buffered == 0
        tg.cancel_scope.cancel()
    assert stream.returncode == -signal.SIGTERM


@pytest.mark.parametrize("answer", [
    b'{"jsonrpc":"2.0","id":%d,"error":{"code":"x","message":5}}',  # not an error object
    b'{"jsonrpc":"2.0","id":%d,"result":1,"error":{"code":1,"message":"m"}}',  # both
    b'{"jsonrpc":"2.0","id":%d}',  # neither
])
@pytest.mark.parametrize("result_type", [None, int])
async def test_an_unreadable_response_fails_its_request_not_leaves_it_waiting(
    answer: bytes, result_type: Any
) -> None:
    ours, theirs = memory_pair()
    async with Peer(theirs) as peer, ours, anyio.create_task_group() as tg:

        async def respond() -> None:
            first = msgspec.json.decode(await ours.receive())
            await ours.send(answer % first["id"])
            refusal = msgspec.json.decode(await ours.receive())  # answered as before: id null
            assert refusal == {"jsonrpc": "2.0", "id": None,
                               "error": {"code": -32600, "message": "Invalid response"}}
            second = msgspec.json.decode(await ours.receive())
            await ours.send(b'{"jsonrpc":"2.0","id":%d,"result":7}' % second["id"])

        tg.start_soon(respond)
        with anyio.fail_after(units(1)), pytest.raises(
            RemoteProtocolError, match=r"the peer's response to ask is invalid: Invalid response"
        ):
            await peer.request("ask", result_type=result_type)
        assert await peer.request("ask", result_type=int) == 7  # still serving
