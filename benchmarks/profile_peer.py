"""Where wireproto's peer spends its time: cProfile of both processes over stdio.

Usage::

    python benchmarks/profile_peer.py [--what throughput|latency|notifications] [-n N]

Runs the wireproto stdio contender's workload once with the client under
cProfile and the server child under ``python -m cProfile``, then prints, for
each side, the share of profiled time per area (own code, anyio, asyncio,
msgspec/codec, the rest) and the top functions by own time. cProfile inflates
the cost of many small calls, so read shares, not absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import signal
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import peer_wireproto
from _common import BYTECODE_COUNTER
from _peer_runner import _latency, _throughput

import wireproto.transports.subprocess as wsub

AREAS = (
    ("wireproto/rpc", "wireproto peer"),
    ("wireproto/jsonrpc", "wireproto codec"),
    ("wireproto/transports", "wireproto transports"),
    ("wireproto/adapters", "ACP schema/codec"),
    ("anyio", "anyio"),
    ("sniffio", "anyio"),
    ("asyncio", "asyncio"),
    ("selectors", "asyncio"),
    ("msgspec", "msgspec"),
    ("benchmarks", "benchmark harness"),
)


SYSCALLS = "syscalls (poll/read/write)"


def area(filename: str, function: str) -> str:
    """The area a profiled function belongs to (C functions by their name)."""
    if filename == "~":
        if "msgspec" in function:
            return "msgspec"
        if "posix." in function or "epoll" in function:
            return SYSCALLS
        return "other built-ins"
    for needle, name in AREAS:
        if needle in filename:
            return name
    return "other"


def summarise(stats: pstats.Stats, title: str, top: int) -> None:
    """Print time per area and the top functions by own time."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    per_area: dict[str, float] = defaultdict(float)
    total = 0.0
    for (filename, _line, function), (_cc, _nc, tt, _ct, _callers) in raw.items():
        per_area[area(filename, function)] += tt
        total += tt
    busy = total - per_area[SYSCALLS]
    print(f"\n== {title}: {total:.2f} s profiled, {busy:.2f} s outside poll/read/write")
    print(f"  {'area':26} {'of all':>7} {'of the rest':>12}")
    for name, t in sorted(per_area.items(), key=lambda kv: -kv[1]):
        share = "" if name == SYSCALLS else f"{100 * t / busy:10.1f} %"
        print(f"  {name:26} {100 * t / total:5.1f} % {share}")
    print("  top functions by own time:")
    rows = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    for (filename, line, name), (_cc, nc, tt, _ct, _callers) in rows:
        short = "/".join(Path(filename).parts[-2:]) if filename != "~" else ""
        print(f"  {100 * tt / total:5.1f} %  {nc:8d} calls  {name} ({short}:{line})")


COUNT_BOOT = BYTECODE_COUNTER + """
import runpy
sys.argv = sys.argv[1:]
sys.path[0] = sys.argv[0].rsplit("/", 1)[0]  # (the child script's directory, not the cwd)
runpy.run_path(sys.argv[0], run_name="__main__")
"""


class Counting:
    """Counts the bytecodes this thread executes while on (``sys.settrace``)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def tracer(self, frame: Any, event: str, arg: Any) -> Callable[..., Any]:
        frame.f_trace_opcodes = True
        key = frame.f_code.co_filename + ":" + frame.f_code.co_qualname
        counts = self.counts

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
            return local

        return local


async def workload(what: str, n: int, bytecodes: bool) -> Counter[str] | None:
    """Run one measurement of the stdio contender (profiled, or its bytecodes counted)."""
    args = argparse.Namespace(transport="stdio", backend="asyncio")
    async with peer_wireproto.connect(args) as client:
        for _ in range(200):
            await client.call()
        await _throughput(client, 256)
        await client.stream(500)
        counting = Counting()
        prof = cProfile.Profile()
        if bytecodes:
            assert client.server_pid is not None
            os.kill(client.server_pid, signal.SIGUSR1)
            await anyio.sleep(0.2)  # (the handler runs between two bytecodes of the loop)
            sys.settrace(counting.tracer)
        else:
            prof.enable()
        if what == "throughput":
            await _throughput(client, n)
        elif what == "latency":
            await _latency(client, n)
        else:
            await client.stream(n)
        if bytecodes:
            sys.settrace(None)
            assert client.server_pid is not None
            os.kill(client.server_pid, signal.SIGUSR2)  # the child writes its counts
            await anyio.sleep(0.2)
            return counting.counts
        prof.disable()
        prof.dump_stats(CLIENT_PROF)
        return None


def report_bytecodes(counts: Counter[str], title: str, ops: int, top: int) -> None:
    """Bytecodes per operation: total, per area, top functions."""
    shares: dict[str, int] = defaultdict(int)
    for key, count in counts.items():
        shares[area(key.split(":", 1)[0], "")] += count
    total = sum(counts.values())
    print(f"\n== {title}: {total / ops:.1f} Python bytecodes per operation")
    for name, count in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {name:26} {count / total:6.1%}  ({count / ops:.1f} per operation)")
    print("  top functions (bytecodes per operation):")
    for key, count in counts.most_common(top):
        print(f"  {count / ops:7.2f}  {key.split('site-packages/')[-1].split('wt/peer/')[-1]}")


def main() -> None:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--what", choices=["throughput", "latency", "notifications"],
                    default="throughput")
    ap.add_argument("-n", type=int, default=20000, help="requests or notifications")
    ap.add_argument("--top", type=int, default=12, help="functions listed per side")
    ap.add_argument("--bytecodes", action="store_true",
                    help="count the Python bytecodes per operation instead of profiling")
    args = ap.parse_args()
    opened = wsub.open_subprocess

    def profiled(cmd: Any, **kw: Any) -> Any:
        if args.bytecodes:
            boot = f"OUT = {CHILD_COUNTS!r}\n{COUNT_BOOT}"
            return opened([cmd[0], "-c", boot, *cmd[1:]], **kw)
        return opened([cmd[0], "-m", "cProfile", "-o", CHILD_PROF, *cmd[1:]], **kw)

    wsub.open_subprocess = profiled  # type: ignore[assignment]
    counts = anyio.run(workload, args.what, args.n, args.bytecodes)
    if counts is not None:
        report_bytecodes(counts, f"client ({args.what})", args.n, args.top)
        server = Counter(json.loads(Path(CHILD_COUNTS).read_text()))
        report_bytecodes(server, f"server child ({args.what})", args.n, args.top)
        return
    summarise(pstats.Stats(CLIENT_PROF), f"client ({args.what})", args.top)
    summarise(pstats.Stats(CHILD_PROF), "server child (whole run, incl. start-up)", args.top)


TMP = tempfile.mkdtemp(prefix="wireproto-profile-")
CLIENT_PROF = str(Path(TMP) / "client.prof")
CHILD_PROF = str(Path(TMP) / "server.prof")
CHILD_COUNTS = str(Path(TMP) / "server.json")

if __name__ == "__main__":
    sys.exit(main())
