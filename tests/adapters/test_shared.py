"""The helpers every adapter shares (wireproto.adapters._shared)."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from timeouts import units

from wireproto.adapters._shared import (
    renamed_options,
    rpc_error,
    runtime_of,
    serve_or_stdio,
    until_closed,
)
from wireproto.adapters.acp import connect_acp
from wireproto.adapters.mcp import connect_mcp
from wireproto.adapters.wire import connect_wire
from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.errors import AgentError, AuthRequired, Busy, InvalidArgument, NotFound
from wireproto.rpc.peer import Peer
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

CONNECT: dict[str, Callable[..., Any]] = {
    "acp": connect_acp, "wire": connect_wire, "mcp": connect_mcp,
}


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


@pytest.mark.parametrize(
    ("connect", "old", "new"),
    [
        ("acp", "handshake_timeout", "initialize_timeout"),
        ("acp", "update_buffer", "event_buffer"),
        ("wire", "handshake", "initialize"),
        ("mcp", "timeout", "initialize_timeout"),
    ],
)
def test_connect_functions_share_one_vocabulary(connect: str, old: str, new: str) -> None:
    function = CONNECT[connect]
    parameters = inspect.signature(function).parameters
    assert new in parameters and old not in parameters
    for name in ("stderr", "redact", "max_bytes", "initialize", "initialize_timeout"):
        assert name in parameters, f"connect_{connect} lacks {name}="
    assert parameters["stderr"].default == "log"


async def test_an_old_option_name_still_works_with_a_warning(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"connect_wire\(handshake=...\) is deprecated"):
        async with connect_wire([sys.executable, "-m", "wireproto", "wire"], handshake=False,
                                env={**os.environ, "WIREPROTO_HOME": str(tmp_path)}) as client:
            assert client.protocol_version is None  # no initialize was sent


def test_renamed_options_refuse_unknown_names() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'handshak'"):
        renamed_options("connect_wire", {"handshak": True}, {"handshake": "initialize"})


async def test_client_classes_share_the_buffer_option_name() -> None:
    from wireproto.adapters.acp import ClientConnection
    from wireproto.adapters.wire import WireClient

    for cls in (ClientConnection, WireClient):
        assert "event_buffer" in inspect.signature(cls).parameters, cls
    left, right = memory_pair()
    async with left, right:
        with pytest.warns(DeprecationWarning,
                          match=r"ClientConnection\(update_buffer=...\)") as seen:
            client = ClientConnection(left, update_buffer=3)
        assert client.event_buffer == 3
        assert seen[0].filename == __file__  # the warning points at the caller
        with pytest.raises(TypeError, match="unexpected keyword argument 'update_bufer'"):
            ClientConnection(right, update_bufer=3)


async def test_a_turn_cancelled_while_it_starts_leaves_no_task_group_open() -> None:
    from wireproto.adapters._shared import enter_turn

    async def run(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        await anyio.sleep_forever()  # the prompt waits for room in a full send queue
        task_status.started()

    with anyio.CancelScope() as scope:
        scope.cancel()  # cancelled before the prompt was queued
        await enter_turn(run)
    assert scope.cancelled_caught
    with anyio.fail_after(1):  # the cancel scope stack is intact: the task goes on
        await anyio.lowlevel.checkpoint()
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep, 0)
