"""Benchmark: server memory per WebSocket connection, wireproto vs a bare websockets server.

Usage::

    python benchmarks/bench_ws_memory.py             # ~20 s: 3 rounds x 200 connections
    python benchmarks/bench_ws_memory.py --quick     # a few seconds, for smoke tests
    python benchmarks/bench_ws_memory.py --json      # machine-readable results on stdout
    python benchmarks/bench_ws_memory.py --trace acp # where the memory is (tracemalloc)

Each contender is a server child process (``--serve KIND``, loopback, asyncio):

* ``bare``: ``websockets.asyncio.server.serve`` whose handler answers every
  message with a fixed ``initialize`` result (no JSON parsing);
* ``peer``: ``serve_websocket`` + a wireproto ``Peer`` and ``Router`` per
  connection serving ``initialize`` (what a custom protocol server holds);
* ``acp``: ``serve_websocket`` + ``serve_acp`` of the demo agent on one shared
  ``Runtime`` (what ``wireproto``'s ACP agents hold per connection).

The driver opens ``--connections`` connections, then sends ``initialize`` on
each and waits for every answer. The server's resident set size
(``VmRSS``, read from ``/proc``) is sampled before, with the connections open
and idle, and after ``initialize``; per connection = the growth divided by the
number of connections. The target: wireproto within 2x of ``bare``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from typing import Any

from _common import HERE, format_machine, machine_info, median, table, verdict

KINDS = ("bare", "peer", "acp")
TARGET = 2.0
INITIALIZE = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":'
              b'{"protocolVersion":1,"clientCapabilities":{}}}')
ANSWER = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}'

CAVEATS = [
    "RSS counts pages the allocator touched: growth per connection is a difference of two "
    "large numbers, so each figure is the median of several rounds with hundreds of "
    "connections each.",
    "Both ends are on loopback in two processes; the client is the same code for every "
    "contender. Only the server's memory is measured.",
    "The machine is a shared 2-core VM (other work runs on it); memory figures are far less "
    "sensitive to that than times.",
]


# ------------------------------------------------------------------ server child

def _rss_bytes(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc")


async def _serve_bare(ready: Any) -> None:
    from websockets.asyncio.server import serve

    async def handler(ws: Any) -> None:
        async for _ in ws:
            await ws.send(ANSWER, text=True)

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        ready(next(iter(server.sockets)).getsockname()[1])
        await server.serve_forever()


async def _serve_wireproto(kind: str, ready: Any) -> None:
    import anyio

    from wireproto.transports.websocket import serve_websocket

    if kind == "acp":
        from wireproto.adapters.acp import serve_acp
        from wireproto.agent.demo import DemoAgent
        from wireproto.agent.runtime import Runtime

        runtime = Runtime(DemoAgent())

        async def handler(stream: Any, request: Any) -> None:
            await serve_acp(runtime, stream)
    else:
        from wireproto.rpc.peer import Peer
        from wireproto.rpc.router import Router

        async def initialize(params: Any) -> dict[str, Any]:
            return {"protocolVersion": 1, "agentCapabilities": {}}

        async def handler(stream: Any, request: Any) -> None:
            router = Router()
            router.add("initialize", initialize)
            async with Peer(stream, router, name="bench") as peer:
                await peer.wait_closed()

    async with serve_websocket(handler) as server:
        ready(server.port)
        await anyio.sleep_forever()


def serve(kind: str, trace: bool) -> None:
    """Child: serve, print the port, then answer ``rss``/``trace`` commands on stdin."""
    import asyncio
    import threading

    if trace:
        import tracemalloc

        tracemalloc.start(8)

    def command_loop() -> None:
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "rss":
                gc.collect()
                print(_rss_bytes(), flush=True)
            elif cmd == "snap" and trace:
                import tracemalloc

                gc.collect()
                command_loop.snap = tracemalloc.take_snapshot()  # type: ignore[attr-defined]
                print("ok", flush=True)
            elif cmd == "diff" and trace:
                import tracemalloc

                gc.collect()
                now = tracemalloc.take_snapshot()
                stats = now.compare_to(command_loop.snap, "traceback")  # type: ignore[attr-defined]
                snap = command_loop.snap  # type: ignore[attr-defined]
                lines = ["by line (innermost frame):"]
                for stat in now.compare_to(snap, "lineno")[:30]:
                    where = stat.traceback[0]
                    lines.append(f"{stat.size_diff:+9d} B  {where.filename}:{where.lineno}")
                lines.append("by allocation site:")
                for stat in stats[:25]:
                    lines.append(f"{stat.size_diff:+9d} B {stat.count_diff:+6d} blocks")
                    for frame in stat.traceback.format()[-8:]:
                        lines.append("    " + frame.strip())
                print(json.dumps("\n".join(lines)), flush=True)
        os._exit(0)

    def ready(port: int) -> None:
        print(port, flush=True)
        threading.Thread(target=command_loop, daemon=True).start()

    coro = _serve_bare(ready) if kind == "bare" else _serve_wireproto(kind, ready)
    asyncio.run(coro)


# ------------------------------------------------------------------ driver

class _Server:
    def __init__(self, kind: str, trace: bool = False) -> None:
        cmd = [sys.executable, str(HERE / "bench_ws_memory.py"), "--serve", kind]
        if trace:
            cmd.append("--traced")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=HERE)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def ask(self, cmd: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


async def _measure(server: _Server, count: int, trace: bool) -> dict[str, Any]:
    import asyncio

    from websockets.asyncio.client import connect

    url = f"ws://127.0.0.1:{server.port}"
    ask = server.ask
    # warm up: one connection through the whole path, so imports and caches are paid
    async with connect(url, compression=None, ping_interval=None) as ws:
        await ws.send(INITIALIZE, text=True)
        await ws.recv()
    await asyncio.sleep(0.2)
    before = int(await asyncio.to_thread(ask, "rss"))
    if trace:
        await asyncio.to_thread(ask, "snap")
    conns = []
    for _ in range(count):
        conns.append(await connect(url, compression=None, ping_interval=None))
    await asyncio.sleep(0.3)
    idle = int(await asyncio.to_thread(ask, "rss"))
    report = ""
    if trace:
        report = json.loads(await asyncio.to_thread(ask, "diff"))
    for ws in conns:
        await ws.send(INITIALIZE, text=True)
    for ws in conns:
        await ws.recv()
    await asyncio.sleep(0.3)
    after = int(await asyncio.to_thread(ask, "rss"))
    if trace:
        diff = json.loads(await asyncio.to_thread(ask, "diff"))
        report += "\n\n--- after initialize ---\n" + diff
    await asyncio.gather(*(ws.close() for ws in conns))
    return {"idle_per_conn": (idle - before) / count,
            "initialized_per_conn": (after - before) / count,
            "rss_before": before, "trace": report}


def measure(kind: str, count: int, trace: bool = False) -> dict[str, Any]:
    """Start one server child, measure it, stop it."""
    import asyncio

    server = _Server(kind, trace)
    try:
        return asyncio.run(_measure(server, count, trace))
    finally:
        server.close()


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--trace", metavar="KIND", choices=KINDS,
                    help="print tracemalloc's biggest growths for one server kind and stop")
    ap.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.traced)
        return 0
    if args.trace:
        print(measure(args.trace, args.connections, trace=True)["trace"])
        return 0
    if args.quick:
        args.connections, args.rounds = 10, 1
    info = machine_info()
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for _ in range(args.rounds):
        for kind in KINDS:
            runs[kind].append(measure(kind, args.connections))
    results: dict[str, Any] = {}
    for kind, samples in runs.items():
        results[kind] = {
            key: {"median": median([s[key] for s in samples]),
                  "samples": [s[key] for s in samples]}
            for key in ("idle_per_conn", "initialized_per_conn")
        }
    bare = results["bare"]
    ratios = {kind: {key: results[kind][key]["median"] / max(bare[key]["median"], 1.0)
                     for key in ("idle_per_conn", "initialized_per_conn")}
              for kind in KINDS}
    if args.json:
        json.dump({"benchmark": "ws_memory", "machine": info, "caveats": CAVEATS,
                   "settings": {"connections": args.connections, "rounds": args.rounds},
                   "results": results, "ratios_vs_bare": ratios}, sys.stdout, indent=1)
        print()
        return 0
    print("caveats:")
    for c in CAVEATS:
        print(f"  - {c}")
    print(format_machine(info))
    print(f"{args.rounds} rounds x {args.connections} connections per server kind\n")
    rows = []
    for kind in KINDS:
        r, q = results[kind], ratios[kind]
        rows.append([
            kind,
            f"{r['idle_per_conn']['median'] / 1024:.1f} KiB",
            " ".join(f"{s / 1024:.0f}" for s in r["idle_per_conn"]["samples"]),
            f"{r['initialized_per_conn']['median'] / 1024:.1f} KiB",
            " ".join(f"{s / 1024:.0f}" for s in r["initialized_per_conn"]["samples"]),
            f"{q['idle_per_conn']:.2f}x", f"{q['initialized_per_conn']:.2f}x",
        ])
    print(table(["server", "idle", "(rounds, KiB)", "after initialize", "(rounds, KiB)",
                 "idle/bare", "init/bare"], rows))
    print(f"\ntargets (same run): within {TARGET:g}x of bare")
    for kind in ("peer", "acp"):
        worst = max(ratios[kind].values())
        print(f"  {kind:5s} worst {worst:.2f}x -> {verdict(worst <= TARGET)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
