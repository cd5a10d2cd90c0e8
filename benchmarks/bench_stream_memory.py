"""Benchmark: a server's peak memory while it streams 1 MiB notifications.

Usage::

    python benchmarks/bench_stream_memory.py            # ~30 s
    python benchmarks/bench_stream_memory.py --quick    # a few seconds, for smoke tests
    python benchmarks/bench_stream_memory.py --json     # machine-readable results on stdout

A wireproto server child (``Peer`` + ``Router`` over stdio, started with
``open_subprocess``) answers ``stream`` by sending ``count`` ``session/update``
``agent_message_chunk`` notifications of ``size`` bytes of text each, as fast
as ``peer.notify`` lets it, then ``peak``, by reporting its own peak resident
set size (``VmHWM``) and current one (``VmRSS``) from ``/proc``. The client
decodes every notification into the generated ACP Structs. The server's send
buffer is bounded in bytes (``Peer(send_buffer_bytes=...)``, 64 MiB by
default): the peak growth over the server's size before streaming should stay
near that budget whatever the count, instead of growing with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _common import format_machine, machine_info, median, table

MiB = 1 << 20
SELF = str(Path(__file__).resolve())
CAVEATS = [
    "Peak RSS (VmHWM) counts every page the server process ever touched, including the "
    "interpreter (~25-35 MiB): the growth over its size just before streaming is the figure "
    "that matters.",
    "Client and server share a 2-core VM with other work; memory figures are far less "
    "sensitive to that than times, but how far the server runs ahead of the client (and so "
    "how full its buffer gets) depends on scheduling.",
]


def _proc_status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0]) * 1024
    return out


# ------------------------------------------------------------------ server child

async def _serve(budget: int) -> None:
    from wireproto.adapters.acp.schema import AgentMessageChunk, SessionNotification, TextContent
    from wireproto.rpc.peer import Peer
    from wireproto.rpc.router import Router
    from wireproto.transports.stdio import open_stdio

    router = Router()
    async with open_stdio() as stream:
        async with Peer(stream, router, name="stream-server", send_buffer_bytes=budget) as peer:

            async def stream_(params: dict[str, Any]) -> dict[str, Any]:
                text = "x" * params["size"]
                for _ in range(params["count"]):
                    update = AgentMessageChunk(content=TextContent(text=text))
                    await peer.notify("session/update",
                                      SessionNotification(session_id="s", update=update))
                return {"queued_peak": peer.stats().send_peak_bytes}

            async def peak(params: Any) -> dict[str, int]:
                return _proc_status()

            router.add("stream", stream_)
            router.add("peak", peak)
            await peer.wait_closed()


# ------------------------------------------------------------------ driver

async def _run_one(count: int, size: int, budget: int) -> dict[str, Any]:
    from wireproto.adapters.acp import codec as acp_codec
    from wireproto.adapters.acp.schema import SessionNotification
    from wireproto.rpc.peer import Peer
    from wireproto.rpc.router import Router
    from wireproto.transports.subprocess import open_subprocess

    got = 0

    async def on_update(params: SessionNotification) -> None:
        nonlocal got
        got += 1

    router = Router()
    router.add("session/update", on_update, SessionNotification, notification=True,
               dec_hook=acp_codec.dec_hook)
    cmd = [sys.executable, SELF, "--serve", "--budget", str(budget)]
    async with open_subprocess(cmd, max_bytes=size + MiB) as stream:
        async with Peer(stream, router, name="stream-client") as peer:
            before = await peer.request("peak")
            sent = await peer.request("stream", {"count": count, "size": size})
            after = await peer.request("peak")
    if got != count:
        raise AssertionError(f"expected {count} notifications, handled {got}")
    return {"count": count, "size": size, "budget": budget,
            "rss_before": before["VmRSS"], "peak": after["VmHWM"],
            "growth": after["VmHWM"] - before["VmRSS"], "queued_peak": sent["queued_peak"]}


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="60,300", help="notifications per run, comma-separated")
    ap.add_argument("--size", type=int, default=MiB, help="text bytes per notification")
    ap.add_argument("--budgets", default=f"{64 * MiB},{8 * MiB}",
                    help="server send buffer budgets in bytes, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=int, default=64 * MiB, help=argparse.SUPPRESS)
    args = ap.parse_args()
    import anyio

    if args.serve:
        anyio.run(_serve, args.budget)
        return 0
    if args.quick:
        args.counts, args.size, args.rounds, args.budgets = "5", 64 * 1024, 1, str(MiB)
    counts = [int(c) for c in args.counts.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    info = machine_info()
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for budget in budgets:
            for count in counts:
                one = anyio.run(_run_one, count, args.size, budget)
                runs.setdefault(f"{budget}/{count}", []).append(one)
    if args.json:
        json.dump({"benchmark": "stream_memory", "machine": info, "caveats": CAVEATS,
                   "settings": {"size": args.size, "rounds": args.rounds},
                   "results": list(runs.values())}, sys.stdout, indent=1)
        print()
        return 0
    print("caveats:")
    for c in CAVEATS:
        print(f"  - {c}")
    print(format_machine(info))
    print(f"{args.rounds} rounds; notifications of {args.size / MiB:g} MiB of text each\n")
    rows = []
    for samples in runs.values():
        s0 = samples[0]
        rows.append([
            f"{s0['budget'] / MiB:g} MiB", str(s0["count"]),
            f"{median([s['rss_before'] for s in samples]) / MiB:.1f} MiB",
            f"{median([s['peak'] for s in samples]) / MiB:.1f} MiB",
            f"{median([s['growth'] for s in samples]) / MiB:.1f} MiB",
            " ".join(f"{s['growth'] / MiB:.0f}" for s in samples),
            f"{median([s['queued_peak'] for s in samples]) / MiB:.1f} MiB",
        ])
    print(table(["send budget", "notifications", "RSS before", "peak RSS", "growth",
                 "(rounds, MiB)", "most queued"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
