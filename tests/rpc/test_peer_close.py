"""Closing a peer: pending calls fail, every inbound request is answered once,
what is queued is flushed within the budget, and no task outlives the peer.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from timeouts import units

from wireproto.errors import ConnectionClosed, RpcError, first_leaf
from wireproto.jsonrpc.codec import ACP_DIALECT, MCP_DIALECT, WIRE_DIALECT, Dialect
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.testing import NdjsonProbe, probe_peer, wait_all_tasks_blocked
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

DIALECTS = [
    pytest.param(WIRE_DIALECT, id="wire"),
    pytest.param(ACP_DIALECT, id="acp"),
    pytest.param(MCP_DIALECT, id="mcp"),
]


def hang_router(started: list[Any]) -> Router:
    """``hang`` waits forever; ``partial`` answers when it is cancelled."""
    router = Router()

    @router.request("hang")
    async def hang(params: Any) -> Any:
        started.append(params)
        await anyio.sleep_forever()

    @router.request("partial")
    async def partial(params: Any) -> Any:
        started.append(params)
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            return "partial result"

    return router


async def read_until_closed(probe: NdjsonProbe) -> list[Any]:
    """Every message the closed peer wrote, in order."""
    messages = []
    with anyio.fail_after(units(2)):
        while True:
            try:
                messages.append(await probe.read_json())
            except anyio.EndOfStream:
                return messages


def cancelled(dialect: Dialect, id: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": -32800, "message": "Request cancelled"}
    if dialect.error_data_null:
        error["data"] = None
    return {"jsonrpc": "2.0", "id": id, "error": error}


# ------------------------------------------------------------ outgoing calls


async def test_remote_close_fails_pending_with_chained_cause() -> None:
    errors: list[BaseException] = []
    async with probe_peer() as (peer, probe):

        async def call() -> None:
            try:
                await peer.request("m")
            except ConnectionClosed as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(call)
            await probe.read()
            await probe.read()
            probe.write_eof()
        await peer.wait_closed()
        assert peer.closed
        # too late to be written: the same error as a request that waited
        with pytest.raises(ConnectionClosed) as info:
            await peer.request("after")
        assert isinstance(info.value.__cause__, anyio.EndOfStream)
        assert str(info.value) == "connection closed before after was answered"
    assert len(errors) == 2
    assert all(isinstance(e.__cause__, anyio.EndOfStream) for e in errors)
    assert [str(e) for e in errors] == ["connection closed before m was answered"] * 2


async def test_a_request_whose_write_fails_fails_as_if_it_had_waited() -> None:
    """(A child process that exits at once: whether the client's request meets the closed
    pipe or waits for its answer is a matter of timing, and the error is the same.)"""
    sa, sb = memory_pair()
    async with sb, Peer(sa) as peer:
        await sb.receive_stream.aclose()  # what the peer writes has nowhere to go
        with pytest.raises(ConnectionClosed) as info:
            await peer.request("m")
        assert str(info.value) == "connection closed before m was answered"
        assert isinstance(info.value.__cause__, anyio.BrokenResourceError)


async def test_local_close_fails_pending_and_cancels_handlers() -> None:
    router = Router()
    handler_state: list[str] = []

    @router.request("hang")
    async def hang(params: Any) -> Any:
        handler_state.append("started")
        try:
            await anyio.sleep_forever()
        finally:
            handler_state.append("cancelled")

    errors: list[BaseException] = []
    tasks_before = len(anyio.get_running_tasks())
    async with anyio.create_task_group() as tg:
        async with probe_peer(router, flush_timeout=1) as (peer, probe):

            async def call() -> None:
                try:
                    await peer.request("m")
                except ConnectionClosed as exc:
                    errors.append(exc)

            tg.start_soon(call)
            await probe.read()
            await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"hang"}\n')
            await wait_all_tasks_blocked()
            assert handler_state == ["started"]
            assert len(anyio.get_running_tasks()) > tasks_before
        assert handler_state == ["started", "cancelled"]
    assert len(errors) == 1
    assert isinstance(errors[0].__cause__, ConnectionClosed)
    assert len(anyio.get_running_tasks()) == tasks_before


# ---------------------------------------------------------- inbound requests


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_closing_answers_running_and_backlog_requests(dialect: Dialect) -> None:
    started: list[Any] = []
    probe = NdjsonProbe()
    async with Peer(
        probe.stream, hang_router(started), dialect=dialect, max_concurrency=2, backlog=2
    ) as peer:
        for rid, method in [(1, "hang"), (2, "partial"), (3, "hang"), (4, "partial")]:
            await probe.write_json({"jsonrpc": "2.0", "id": rid, "method": method, "params": rid})
        await wait_all_tasks_blocked()
        assert (peer.stats().running, peer.stats().backlog) == (2, 2)
        await peer.notify("bye")
    messages = await read_until_closed(probe)
    await probe.aclose()
    # What was queued before the close is flushed first, then one answer per
    # request: the cancelled handler's -32800, the result the other returned
    # when cancelled, and -32800 for the backlog, which never ran (even on MCP,
    # where a request the peer cancelled gets no answer: this peer closed).
    assert messages[0] == {"jsonrpc": "2.0", "method": "bye"}
    answers = {m["id"]: m for m in messages[1:]}
    assert len(messages) == 5
    assert answers == {
        1: cancelled(dialect, 1),
        2: {"jsonrpc": "2.0", "id": 2, "result": "partial result"},
        3: cancelled(dialect, 3),
        4: cancelled(dialect, 4),
    }
    assert started == [1, 2]


async def test_closing_answers_null_and_duplicate_ids() -> None:
    started: list[Any] = []
    probe = NdjsonProbe()
    async with Peer(probe.stream, hang_router(started), dialect=ACP_DIALECT) as peer:
        for n, rid in enumerate([None, None, "d", "d"]):
            await probe.write_json({"jsonrpc": "2.0", "id": rid, "method": "hang", "params": n})
        await wait_all_tasks_blocked()
        assert peer.stats().running == 4
    messages = await read_until_closed(probe)
    await probe.aclose()
    assert sorted(messages, key=repr) == sorted(
        [cancelled(ACP_DIALECT, rid) for rid in [None, None, "d", "d"]], key=repr
    )
    assert sorted(started) == [0, 1, 2, 3]


async def test_closing_is_bounded_when_nothing_can_be_written() -> None:
    started: list[Any] = []
    sa, sb = memory_pair(max_buffer=0)  # nobody ever reads what the peer writes
    with anyio.fail_after(units(2)):  # a close waiting on the stuck writer would hang here
        async with sb:
            async with Peer(sa, hang_router(started), send_queue=1, flush_timeout=0.05) as peer:
                await peer.notify("taken by the writer, which waits for a reader")
                await wait_all_tasks_blocked()
                await peer.notify("fills the queue")
                await sb.send(b'{"jsonrpc":"2.0","id":1,"method":"hang","params":1}')
                await wait_all_tasks_blocked()
                stats = peer.stats()
                assert (stats.running, stats.send_queued) == (1, 1)
    assert started == [1]
    assert peer.closed
    assert peer.stats().pending == 0


# ----------------------------------------------------------------- property


async def close_scenario(modes: list[str], close_remote: bool, yields: int) -> None:
    """``a`` calls ``b`` once per mode; one side closes while calls are in flight."""
    router = Router()

    @router.request("work")
    async def work(params: Any) -> Any:
        mode = params["mode"]
        if mode == "hang":
            await anyio.sleep_forever()
        if mode == "fail":
            raise RpcError(1, "no")
        return mode

    outcomes: list[str] = []
    tasks_before = len(anyio.get_running_tasks())
    sa, sb = memory_pair()
    stop_b = anyio.Event()

    async def serve_b() -> None:
        async with Peer(sb, router, name="b", flush_timeout=1):
            await stop_b.wait()

    async def call(a: Peer, mode: str) -> None:
        try:
            await a.request("work", {"mode": mode})
            outcomes.append("result")
        except RpcError:  # "fail", or -32800 when b closed first
            outcomes.append("error")
        except ConnectionClosed:
            outcomes.append("closed")

    with anyio.fail_after(units(2)):  # a surviving pending request would hang here
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_b)
            async with Peer(sa, name="a", flush_timeout=1) as a:
                for mode in modes:
                    tg.start_soon(call, a, mode)
                for _ in range(yields):
                    await anyio.lowlevel.checkpoint()
                if close_remote:
                    stop_b.set()
                    await a.wait_closed()
            stop_b.set()
    assert a.stats().pending == 0
    assert len(outcomes) == len(modes)  # every call ended exactly once
    assert len(anyio.get_running_tasks()) == tasks_before


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40, deadline=None)
@given(
    modes=st.lists(st.sampled_from(["hang", "fail", "ok"]), min_size=1, max_size=12),
    close_remote=st.booleans(),
    yields=st.integers(min_value=0, max_value=4),
)
def test_no_pending_request_survives_a_close(
    backend: str, modes: list[str], close_remote: bool, yields: int
) -> None:
    anyio.run(close_scenario, modes, close_remote, yields, backend=backend)


@pytest.mark.anyio
async def test_a_response_queued_behind_notifications_survives_end_of_input() -> None:
    # The peer answers and closes at once: the answer waits in the inbox behind a
    # slow notification when end of input arrives. The caller still gets it.
    release = anyio.Event()
    handled: list[Any] = []
    router = Router()

    @router.notification("event")
    async def event(params: Any) -> None:
        await release.wait()
        handled.append(params)

    async with probe_peer(router) as (peer, probe):
        result: list[Any] = []

        async def call() -> None:
            result.append(await peer.request("prompt", {"x": 1}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            request = await probe.read_json()
            await probe.write(b'{"jsonrpc":"2.0","method":"event","params":1}\n')
            await probe.write(b'{"jsonrpc":"2.0","method":"event","params":2}\n')
            answer = {"jsonrpc": "2.0", "id": request["id"], "result": "done"}
            await probe.write_json(answer)
            probe.write_eof()
            await peer.wait_closed()
            release.set()
        assert handled == [1, 2]
        assert result == ["done"]


async def test_what_the_reader_raises_is_raised_in_a_group_on_every_path() -> None:
    # (on asyncio with the fast paths on the reader is a bare task the peer joins; on trio or
    # with them off a task of the peer's task group: the same exception group either way)
    from wireproto._backend import BaseExceptionGroup
    from wireproto._switches import FAST_PATHS

    class Boom(BaseException):
        pass

    a, b = memory_pair()
    peer = Peer(a)

    async def receive() -> bytes:
        await anyio.lowlevel.checkpoint()
        raise Boom

    # (before the peer starts: with the eager task factory the reader starts at once)
    a.receive = receive  # type: ignore[method-assign]  # the first read fails
    with anyio.fail_after(units(2)), pytest.raises(BaseException) as info:
        async with peer:
            await peer.wait_closed()  # cancelled: the reader failed
    await b.aclose()
    assert isinstance(first_leaf(info.value), Boom)
    assert isinstance(info.value, BaseExceptionGroup)
    assert [type(e) for e in info.value.exceptions] == [Boom]
    if peer._reader is not None:  # the bare task was joined
        assert FAST_PATHS and peer._reader.done()
