"""Where the demo agent's CPU goes per prompt: cProfile on CPU time, by area.

Usage::

    python benchmarks/profile_agent.py [--sequential N] [--per-session N] [--top N]

Runs ``wireproto acp`` (the demo agent, JSON Lines history in a temporary
``WIREPROTO_HOME``) under cProfile with a CPU-time clock, drives it with
``bench_agent.py``'s raw client (sequential prompts, then 32 concurrent
sessions), and prints the share of the agent's profiled CPU time per area
(runtime and Turn, the ACP adapter, the store, the peer, the codec, the
transport, anyio, asyncio, system calls) and the top functions by own time.
It also prints the share of the agent's CPU spent in the kernel (from
``/proc/PID/stat``). cProfile inflates the cost of many small calls: read
shares, not absolute times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import bench_agent

AREAS = (
    ("wireproto/agent/store", "session store"),
    ("wireproto/agent", "runtime, Turn, demo agent"),
    ("wireproto/adapters/acp", "ACP adapter"),
    ("wireproto/rpc", "peer"),
    ("wireproto/jsonrpc", "codec"),
    ("wireproto/transports", "transport"),
    ("anyio", "anyio"),
    ("sniffio", "anyio"),
    ("asyncio", "asyncio"),
    ("selectors", "asyncio"),
    ("msgspec", "msgspec"),
    ("uuid", "uuid"),
    ("datetime", "datetime"),
)
SYSCALLS = "system calls (write, read, epoll)"

BOOT = """
import cProfile, sys, time
from wireproto.cli import main
profile = cProfile.Profile(time.process_time)
sys.argv = ["wireproto", "acp"]
try:
    profile.runcall(main)
finally:
    profile.dump_stats(OUT)
"""


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


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sequential", type=int, default=2000)
    ap.add_argument("--per-session", type=int, default=40)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--save", help="also keep the raw profile in this file (for pstats)")
    args = ap.parse_args()
    run = argparse.Namespace(seq=args.sequential, per_session=args.per_session, warmup=50)
    with tempfile.TemporaryDirectory(prefix="profile-agent-") as tmp:
        out = Path(tmp) / "agent.prof"
        env = {**os.environ, "WIREPROTO_HOME": tmp}
        env.pop("WIREPROTO_TOKEN", None)
        cmd = [sys.executable, "-c", f"OUT = {str(out)!r}\n{BOOT}"]
        result = asyncio.run(bench_agent.run_once(cmd, env, run, tmp))
        prompts = args.sequential + bench_agent.CONCURRENT * args.per_session
        stats = pstats.Stats(str(out))
        if args.save:
            stats.dump_stats(args.save)
    print(f"{prompts} prompts under the profiler: "
          f"CPU/prompt {result['cpu_per_prompt_sequential_s'] * 1e6:.0f} us sequential, "
          f"{result['cpu_per_prompt_concurrent_s'] * 1e6:.0f} us concurrent (inflated); "
          f"{result['system_cpu_share']:.0%} of it in the kernel")
    shares: dict[str, float] = defaultdict(float)
    raw = stats.stats  # type: ignore[attr-defined]
    for (filename, _, function), (_, _, tottime, _, _) in raw.items():
        shares[area(filename, function)] += tottime
    total = sum(shares.values())
    print("\nshare of the agent's profiled CPU time:")
    for name, spent in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {name:30} {spent / total:6.1%}  ({spent / prompts * 1e6:.0f} us/prompt)")
    print(f"\ntop {args.top} functions by own CPU time:")
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
