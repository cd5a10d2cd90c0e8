"""Ending a connection: ``stop``, end of input, and what happens to running turns.

``serve_acp`` serves until EOF or ``stop``, then cancels running turns (their
prompts answer ``cancelled`` while the client can still read), lets pending
client requests fail, closes the sessions and flushes (protocol-acp.md#cancellation,
protocol-acp.md#mcp-servers).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from timeouts import units

from wireproto.adapters.acp import serve_acp
from wireproto.adapters.acp.agent.connection import SHUTDOWN_BUDGET
from wireproto.agent.api import Session
from wireproto.agent.demo import DemoAgent
from wireproto.agent.events import StopReason
from wireproto.agent.turn import Turn
from wireproto.testing import wait_all_tasks_blocked
from wireproto.transports.memory import memory_pair

from ..conftest import RawAcp, chunk

pytestmark = pytest.mark.anyio


class Recording(DemoAgent):
    """The demo agent, remembering which sessions were closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed: list[str] = []

    async def session_closed(self, session: Session) -> None:
        self.closed.append(session.id)


@asynccontextmanager
async def serving(agent: Any) -> AsyncIterator[tuple[Any, anyio.Event, anyio.Event]]:
    """Serve ``agent`` in memory; yield (client, stop, served)."""
    ours, theirs = memory_pair()
    stop, served = anyio.Event(), anyio.Event()

    async def serve() -> None:
        await serve_acp(agent, theirs, stop=stop)
        served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        with anyio.fail_after(units(2)):
            yield RawAcp(ours), stop, served
        stop.set()
        await ours.aclose()


async def _running(client: Any, workdir: Path, text: str) -> tuple[str, Any]:
    await client.initialize()
    sid = (await client.new_session(str(workdir)))["sessionId"]
    rid = await client.request("session/prompt",
                               {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
    return sid, rid


async def test_stop_cancels_running_turns_and_answers_them(workdir: Path) -> None:
    agent = Recording()
    async with serving(agent) as (client, stop, served):
        sid, rid = await _running(client, workdir, "/slow 1000")
        await client.wait_for(chunk("tick 1"))
        stop.set()
        response = await client.response(rid)
        await served.wait()
        with pytest.raises(anyio.EndOfStream):
            await client.receive()
    assert response["result"] == {"stopReason": "cancelled"}
    assert agent.closed == [sid]


async def test_stop_during_a_permission_request_cancels_it(workdir: Path) -> None:
    async with serving(DemoAgent()) as (client, stop, served):
        _, rid = await _running(client, workdir, "/write x.txt hello")
        asked = await client.agent_request("session/request_permission")
        stop.set()
        cancel = await client.wait_for(lambda m: m.get("method") == "$/cancel_request")
        response = await client.response(rid)
        await served.wait()
    assert cancel["params"] == {"requestId": asked["id"]}
    assert response["result"] == {"stopReason": "cancelled"}
    assert not (workdir / "x.txt").exists()


async def test_end_of_input_ends_serving_and_closes_sessions(workdir: Path) -> None:
    agent = Recording()
    async with serving(agent) as (client, _stop, served):
        sid, _ = await _running(client, workdir, "/slow 1000")
        await client.wait_for(chunk("tick 1"))
        await client.stream.send_stream.aclose()  # EOF for the agent
        await served.wait()
    assert agent.closed == [sid]


async def test_end_of_input_fails_pending_client_requests(workdir: Path) -> None:
    agent = Recording()
    async with serving(agent) as (client, _stop, served):
        sid, _ = await _running(client, workdir, "/write y.txt hello")
        await client.agent_request("session/request_permission")
        await client.stream.send_stream.aclose()
        await served.wait()
    assert agent.closed == [sid]
    assert not (workdir / "y.txt").exists()


class Flooding(Recording):
    """Sends chunks as fast as it can: a client that does not read fills the queue."""

    async def prompt(self, turn: Turn) -> StopReason:
        while True:
            await turn.say("more")


@pytest.mark.slow  # waits out the turn grace (seconds): slow tier
async def test_stop_with_a_turn_stuck_on_a_client_that_stopped_reading(workdir: Path) -> None:
    agent = Flooding()
    ours, theirs = memory_pair()
    stop = anyio.Event()
    client = RawAcp(ours)
    with anyio.fail_after(units(SHUTDOWN_BUDGET + 1)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_acp(agent, theirs, stop=stop))
            sid, _ = await _running(client, workdir, "go")
            await client.wait_for(chunk("more"))
            await wait_all_tasks_blocked()  # the turn waits for room, never made
            stop.set()  # serve returns (the task group waits for it) without a read
    await ours.aclose()
    assert agent.closed == [sid]


async def test_stop_when_idle(workdir: Path) -> None:
    async with serving(DemoAgent()) as (client, stop, served):
        await client.initialize()
        stop.set()
        await served.wait()


async def test_cancelling_serve_still_closes_the_sessions(workdir: Path) -> None:
    agent = Recording()
    ours, theirs = memory_pair()
    client = RawAcp(ours)
    with anyio.fail_after(units(2)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_acp, agent, theirs)
            sid, _ = await _running(client, workdir, "/slow 1000")
            await client.wait_for(chunk("tick 1"))
            tg.cancel_scope.cancel()
    await ours.aclose()
    assert agent.closed == [sid]
