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

``--bytecodes N`` counts instead the Python bytecodes the agent executes for
N sequential prompts (after a warm-up; ``sys.settrace`` with opcode events,
switched on and off by signals), per area and per function: an exact,
load-independent measure of the Python work per prompt (C code, such as
msgspec and the system calls, is not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import signal
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import bench_agent
from _common import BYTECODE_COUNTER

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


COUNT_BOOT = BYTECODE_COUNTER + """
from wireproto.cli import main
sys.argv = ["wireproto", "acp"]
main()
"""


async def count_bytecodes(cmd: list[str], env: dict[str, str], workdir: str,
                          prompts: int) -> None:
    """Have the agent count its bytecodes for ``prompts`` sequential prompts (after a warm-up)."""
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env, cwd=workdir, limit=1 << 24,
    )
    async with bench_agent.RawClient(proc) as client:
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = {"cwd": workdir, "mcpServers": []}
        session = (await client.call("session/new", new))["sessionId"]
        for _ in range(50):
            await client.prompt(session)
        proc.send_signal(signal.SIGUSR1)
        await asyncio.sleep(0.2)  # the handler runs between two bytecodes of the loop
        for _ in range(prompts):
            await client.prompt(session)
        proc.send_signal(signal.SIGUSR2)  # the counts are written before the agent exits
        await asyncio.sleep(0.2)


def report_bytecodes(counts: Counter[str], prompts: int, top: int) -> None:
    """Bytecodes per prompt: total, per area, top functions."""
    shares: dict[str, int] = defaultdict(int)
    for key, n in counts.items():
        shares[area(key.split(":", 1)[0], "")] += n
    total = sum(counts.values())
    print(f"{total / prompts:.0f} Python bytecodes per sequential prompt\n")
    for name, n in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {name:30} {n / total:6.1%}  ({n / prompts:.0f} per prompt)")
    print(f"\ntop {top} functions (bytecodes per prompt):")
    for key, n in counts.most_common(top):
        print(f"  {n / prompts:7.1f}  {key.split('site-packages/')[-1]}")


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
    ap.add_argument("--bytecodes", type=int, metavar="N",
                    help="count the bytecodes of N sequential prompts instead of profiling")
    args = ap.parse_args()
    run = argparse.Namespace(seq=args.sequential, per_session=args.per_session, warmup=50)
    with tempfile.TemporaryDirectory(prefix="profile-agent-") as tmp:
        out = Path(tmp) / "agent.prof"
        env = {**os.environ, "WIREPROTO_HOME": tmp}
        env.pop("WIREPROTO_TOKEN", None)
        if args.bytecodes:
            cmd = [sys.executable, "-c", f"OUT = {str(out)!r}\n{COUNT_BOOT}"]
            asyncio.run(count_bytecodes(cmd, env, tmp, args.bytecodes))
            counts: Counter[str] = Counter(json.loads(out.read_text()))
            report_bytecodes(counts, args.bytecodes, args.top)
            return 0
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
