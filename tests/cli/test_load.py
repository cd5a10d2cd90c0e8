"""A bounded load test of ``wireproto acp --ws``: 200 concurrent clients, two waves.

Each client task (in this process) connects, initializes, opens a session,
runs a prompt, then runs ``/slow 1000`` and cancels it after the first tick.
Every turn must complete correctly, no connection may be refused or dropped
(any failure fails the wave), and the server's resident memory after the
second wave may exceed that after the first by less than 20 MiB.

Bounded for a busy 2-core machine: a wave normally takes a few seconds; each
wait below has a generous limit, and together they fit the test's timeout.
``/slow 1000`` (50 s of ticks) leaves a slow cancellation ample room while a
cancellation that never works still fails the wave's limit.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from timeouts import units

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.transports.websocket import connect_websocket

CLIENTS = 200
RSS_GROWTH_LIMIT = 20 * 1024 * 1024
SLOW_TICKS = 1000
WAVE_LIMIT = units(18)  # seconds for one wave of every client
ENDED_LIMIT = 30.0  # seconds for the server to log the end of a wave's connections


def _rss(pid: int) -> int:
    """The process's resident set size in bytes (``VmRSS``)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def _client(url: str, cwd: str, number: int, done: list[int]) -> None:
    async with connect_websocket(url) as ws, ClientConnection(ws, name=f"load {number}") as acp:
        await acp.initialize()
        sid = (await acp.new_session(cwd)).session_id
        async with acp.prompt(sid, f"hello {number}") as turn:
            updates = await turn.collect()
        text = "".join(u.content.text for u in updates if isinstance(u, s.AgentMessageChunk)
                       and isinstance(u.content, s.TextContent))
        assert (text, turn.stop_reason) == (f"You said: hello {number}", "end_turn")
        ticks = 0
        async with acp.prompt(sid, f"/slow {SLOW_TICKS}") as turn:
            async for update in turn:
                if isinstance(update, s.AgentMessageChunk):
                    ticks += 1
                    if ticks == 1:
                        await acp.cancel(sid)
        assert turn.stop_reason == "cancelled" and ticks < SLOW_TICKS
    done.append(number)


async def _wave(url: str, cwd: str) -> list[int]:
    done: list[int] = []
    with anyio.fail_after(WAVE_LIMIT):
        async with anyio.create_task_group() as tg:
            for number in range(CLIENTS):
                tg.start_soon(_client, url, cwd, number, done)
    return done


def _wait_ended(proc: Any, count: int) -> None:
    """Wait until the server logged the end of ``count`` connections."""
    ok = proc.wait_err_until(
        lambda: sum(": ended" in line for line in proc.err_lines) >= count, ENDED_LIMIT)
    assert ok, f"the server did not close {count} connections"


@pytest.mark.timeout(2 * (WAVE_LIMIT + ENDED_LIMIT) + 60)  # heavier than the rest; always run
def test_two_waves_of_200_concurrent_clients(kit: Any) -> None:
    server, base, token = kit.ws("acp", "--ws", "0")
    url = f"{base}/?token={token}"
    cwd = str(kit.tmp)
    rss = []
    for wave in (1, 2):
        done = anyio.run(_wave, url, cwd, backend="asyncio")
        assert sorted(done) == list(range(CLIENTS))
        _wait_ended(server, wave * CLIENTS)
        rss.append(_rss(server.pid))
    assert "refused" not in server.err and "failed" not in server.err
    assert rss[1] - rss[0] < RSS_GROWTH_LIMIT, rss
    assert kit.stop(server) == 0
