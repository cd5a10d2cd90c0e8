"""The helpers every adapter shares (wireproto.adapters._shared)."""

from __future__ import annotations

import anyio
import pytest
from timeouts import units

from wireproto.adapters._shared import rpc_error, runtime_of, serve_or_stdio, until_closed
from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.errors import AgentError, AuthRequired, Busy, InvalidArgument, NotFound
from wireproto.rpc.peer import Peer
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio


class Refused(InvalidArgument):
    """A subclass no table names."""


CODES: dict[type[AgentError], int] = {InvalidArgument: -32602, NotFound: -32002}


def test_rpc_error_takes_the_most_specific_class_in_the_table() -> None:
    error = rpc_error(Refused("no", {"path": "$.x"}), CODES)
    assert (error.code, error.message, error.data) == (-32602, "no", {"path": "$.x"})
    assert rpc_error(NotFound("gone"), CODES).code == -32002


def test_rpc_error_unmapped_is_internal_error_and_data_can_be_dropped() -> None:
    error = rpc_error(Busy("busy", {"secret": 1}), CODES, data=False)
    assert (error.code, error.message, error.data) == (-32603, "busy", None)
    assert rpc_error(AuthRequired("log in"), {AgentError: -32003}).code == -32003


def test_runtime_of_wraps_an_agent_and_refuses_a_store_with_a_runtime() -> None:
    agent = DemoAgent()
    runtime = runtime_of(agent, None)
    assert isinstance(runtime, Runtime) and runtime.agent is agent
    assert runtime_of(runtime, None) is runtime
    with pytest.raises(ValueError, match="pass it to Runtime"):
        runtime_of(runtime, "/tmp/sessions")


async def test_until_closed_returns_on_stop() -> None:
    left, right = memory_pair()
    stop = anyio.Event()
    async with Peer(left, name="left"), Peer(right, name="right") as peer:
        with anyio.fail_after(units(2)):
            async with anyio.create_task_group() as tg:
                tg.start_soon(until_closed, peer, stop)
                stop.set()
        assert not peer.closed


async def test_until_closed_returns_when_the_other_end_goes_away() -> None:
    left, right = memory_pair()
    async with Peer(right, name="right") as peer:
        async with Peer(left, name="left"):
            pass
        with anyio.fail_after(units(2)):
            await until_closed(peer)
        assert peer.closed


async def test_serve_or_stdio_serves_the_given_stream() -> None:
    left, right = memory_pair()
    served: list[object] = []

    async def serve(stream: anyio.abc.ObjectStream[bytes]) -> None:
        served.append(stream)

    async with left, right:
        await serve_or_stdio(serve, left)
    assert served == [left]
