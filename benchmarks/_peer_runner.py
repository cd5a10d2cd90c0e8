"""The measuring loop every peer contender module shares.

A contender module provides an async context manager that starts its server
(a child process, or an in-process peer for the memory transport) and yields
a :class:`Client`. The same three measurements then run against every
contender, driven by the same code:

* **latency**: ``seq`` requests one after another; a sample is their mean
  round-trip time;
* **throughput**: ``total`` requests issued by 64 concurrent workers (64 in
  flight at any time); a sample is requests per second;
* **notifications**: one request asks the server to stream ``notify``
  ``session/update`` chunks and answer when done; a sample is chunks per
  second as seen by the client, timed until the client has handled all of
  them (the runner checks the count).

Each measurement is repeated and the medians reported; a warm-up runs first.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import anyio
from _common import emit, median

IN_FLIGHT = 64


class Client(Protocol):
    """What a contender exposes to the runner."""

    received: int
    """Notifications handled so far (typed and validated by the contender)."""

    server_pid: int | None
    """The server child's pid, for its CPU time (``None``: the server runs in-process)."""

    async def call(self) -> None:
        """One cheap request (``session/set_mode``), waiting for its typed result."""

    async def stream(self, count: int) -> None:
        """Ask the server for ``count`` ``session/update`` chunks; return when all are handled."""


Factory = Callable[[argparse.Namespace], AbstractAsyncContextManager[Client]]


def parse_args(description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None
               ) -> argparse.Namespace:
    """The shared command line of peer contenders."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--seq", type=int, default=2000, help="requests per latency sample")
    ap.add_argument("--total", type=int, default=6400, help="requests per throughput sample")
    ap.add_argument("--notify", type=int, default=10000, help="chunks per notification sample")
    ap.add_argument("--repeat", type=int, default=5, help="samples per measurement")
    ap.add_argument("--warmup", type=int, default=300, help="warm-up requests")
    ap.add_argument("--json", action="store_true", help="accepted for symmetry; output is JSON")
    if extra is not None:
        extra(ap)
    return ap.parse_args()


async def _latency(client: Client, n: int) -> tuple[float, list[float]]:
    call = client.call
    clock = time.perf_counter
    each = []
    t0 = clock()
    for _ in range(n):
        t = clock()
        await call()
        each.append(clock() - t)
    return (clock() - t0) / n, each


async def _throughput(client: Client, total: int) -> float:
    per_worker, extra = divmod(total, IN_FLIGHT)

    async def worker(n: int) -> None:
        for _ in range(n):
            await client.call()

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(IN_FLIGHT):
            tg.start_soon(worker, per_worker + (1 if i < extra else 0))
    return total / (time.perf_counter() - t0)


async def _notifications(client: Client, count: int) -> float:
    before = client.received
    t0 = time.perf_counter()
    await client.stream(count)
    elapsed = time.perf_counter() - t0
    got = client.received - before
    if got != count:
        raise AssertionError(f"expected {count} notifications, handled {got}")
    return count / elapsed


def _cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) used so far by this process, or by ``pid`` (Linux).

    The server's comes from ``/proc/PID/task/*/schedstat`` (nanoseconds, every
    thread): ``/proc/PID/stat`` counts in clock ticks (10 ms), too coarse for a
    sample of a few tens of milliseconds. ``/proc/PID/stat`` is the fallback.
    """
    if pid is None:
        return time.process_time()
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _CpuMeter:
    """CPU seconds per operation spent by the client and the server child."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.samples: list[float] = []
        self.client: list[float] = []  # the client's share of each sample
        self.server: list[float] = []

    def start(self) -> None:
        self._t0 = (_cpu_seconds(None), _cpu_seconds(self.server_pid))

    def stop(self, operations: int) -> None:
        client = _cpu_seconds(None) - self._t0[0]
        server = _cpu_seconds(self.server_pid) - self._t0[1] if self.server_pid else 0.0
        self.samples.append((client + server) / operations)
        self.client.append(client / operations)
        self.server.append(server / operations)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """Run the three measurements against a connected client."""
    for _ in range(args.warmup):
        await client.call()
    await _throughput(client, min(args.total, 4 * IN_FLIGHT))
    await client.stream(min(args.notify, 500))
    cpu = {m: _CpuMeter(client.server_pid) for m in ("latency", "throughput", "notify")}
    means, singles, rates, notes = [], [], [], []
    for _ in range(args.repeat):
        cpu["latency"].start()
        mean, each = await _latency(client, args.seq)
        cpu["latency"].stop(args.seq)
        means.append(mean)
        singles.extend(each)
    for _ in range(args.repeat):
        cpu["throughput"].start()
        rates.append(await _throughput(client, args.total))
        cpu["throughput"].stop(args.total)
    for _ in range(args.repeat):
        cpu["notify"].start()
        notes.append(await _notifications(client, args.notify))
        cpu["notify"].stop(args.notify)
    return {
        "latency_s": {"median": median(means), "samples": means,
                      "p50_single": _percentile(singles, 0.5),
                      "p99_single": _percentile(singles, 0.99)},
        "throughput_rps": {"median": median(rates), "samples": rates},
        "notifications_ps": {"median": median(notes), "samples": notes},
        "cpu_s_per_op": {m: {"median": median(c.samples), "samples": c.samples,
                             "client": c.client, "server": c.server}
                         for m, c in cpu.items()},
    }


def run(name: str, version: str, transport: str, factory: Factory, args: argparse.Namespace,
        backend: str = "asyncio", notes: list[str] | None = None) -> None:
    """Start the contender, measure, print the JSON result."""

    async def main() -> dict[str, Any]:
        async with factory(args) as client:
            return await measure(client, args)

    t0 = time.perf_counter()
    results = anyio.run(main, backend=backend)
    emit({
        "contender": name, "version": version, "transport": transport, "backend": backend,
        "notes": notes or [], "wall_s": time.perf_counter() - t0,
        "settings": {k: getattr(args, k) for k in ("seq", "total", "notify", "repeat", "warmup")},
        "results": results,
    })

