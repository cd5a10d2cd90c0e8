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
import pstats
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import peer_wireproto
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


async def workload(what: str, n: int) -> None:
    """Run one measurement of the stdio contender."""
    args = argparse.Namespace(transport="stdio", backend="asyncio")
    async with peer_wireproto.connect(args) as client:
        for _ in range(200):
            await client.call()
        prof = cProfile.Profile()
        prof.enable()
        if what == "throughput":
            await _throughput(client, n)
        elif what == "latency":
            await _latency(client, n)
        else:
            await client.stream(n)
        prof.disable()
        prof.dump_stats(CLIENT_PROF)


def main() -> None:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--what", choices=["throughput", "latency", "notifications"],
                    default="throughput")
    ap.add_argument("-n", type=int, default=20000, help="requests or notifications")
    ap.add_argument("--top", type=int, default=12, help="functions listed per side")
    args = ap.parse_args()
    opened = wsub.open_subprocess

    def profiled(cmd: Any, **kw: Any) -> Any:
        return opened([cmd[0], "-m", "cProfile", "-o", CHILD_PROF, *cmd[1:]], **kw)

    wsub.open_subprocess = profiled  # type: ignore[assignment]
    anyio.run(workload, args.what, args.n)
    summarise(pstats.Stats(CLIENT_PROF), f"client ({args.what})", args.top)
    summarise(pstats.Stats(CHILD_PROF), "server child (whole run, incl. start-up)", args.top)


TMP = tempfile.mkdtemp(prefix="wireproto-profile-")
CLIENT_PROF = str(Path(TMP) / "client.prof")
CHILD_PROF = str(Path(TMP) / "server.prof")

if __name__ == "__main__":
    sys.exit(main())
