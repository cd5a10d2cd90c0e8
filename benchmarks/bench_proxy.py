"""``wireproto proxy`` against a direct connection: added latency and CPU, same run.

Contenders (each a real process tree, driven over stdio by the same raw client):

* ``direct``: the client talks to ``wireproto acp`` (the demo agent);
* ``relay``: through ``wireproto proxy --serve acp --agent-protocol acp`` to the
  same agent (on stdio without ``--trace`` the agent inherits the proxy's stdio:
  nothing is copied);
* ``relay+trace``: the same with ``--trace``: the recording relay, every message read,
  written to the trace and forwarded by the proxy (the 15% target is about this one);
* ``translate``: ACP through ``proxy --serve acp --agent-protocol wire`` to
  ``wireproto wire`` (prompt turns only, translated both ways);
* ``ws direct`` and ``ws relay+trace``: the same over a loopback websocket
  (``acp --ws`` against ``proxy --trace FILE --ws``, the relay then message by
  message on the event loop).

Two workloads, one after the other in each process, each measured sequentially
(one request in flight): ``request``, a cheap request (``session/set_mode``:
its answer and two notifications), the worst case for a relay since the agent
does almost nothing; and ``prompt``, a ``hello`` prompt turn (five
``session/update`` notifications and the answer). For each: the median round
trip, and the CPU time of the whole process tree (every thread of every
process, from ``/proc/PID/task/TID/schedstat``, nanoseconds; the client
excluded) over the timed loop only, per operation. Rounds interleave the
contenders (a fresh process tree for each); ratios to ``direct`` are taken
within each round, and medians over rounds are reported.

Nothing here is asserted; numbers from a shared machine are indicative only.
Usage: ``python benchmarks/bench_proxy.py [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.streams.text import TextReceiveStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit, fmt_time, format_machine, machine_info, median, table, verdict

from wireproto.transports.subprocess import open_subprocess
from wireproto.transports.websocket import connect_websocket

WIREPROTO = [sys.executable, "-m", "wireproto"]
CAVEATS = [
    "a shared 2-core machine: absolute numbers vary run to run; compare ratios",
    "CPU is the whole process tree's (client excluded): the proxy adds a process",
    "the demo agent records every event on disk: its own cost is in 'direct' too",
    "CPU sums the threads alive at both ends of a timed loop (none start or end inside one)",
]
TARGET_LATENCY = 0.0002  # seconds added per message
TARGET_CPU = 0.15  # fraction added over direct
BANNER = "wireproto: listening on "
CONTENDERS = ("direct", "relay", "relay+trace", "translate", "ws direct", "ws relay+trace")
BASELINE = {"ws relay+trace": "ws direct"}  # (the rest: "direct")
WORKLOADS = ("request", "prompt")


def contender_cmd(name: str, trace: Path) -> list[str]:
    proxy = [*WIREPROTO, "proxy", "--log-level", "warning", "--serve", "acp"]
    agent = [*WIREPROTO, "acp", "--log-level", "warning"]
    return {
        "direct": agent,
        "relay": [*proxy, "--agent-protocol", "acp", "--", *agent],
        "relay+trace": [*proxy, "--agent-protocol", "acp", "--trace", str(trace), "--", *agent],
        "translate": [*proxy, "--agent-protocol", "wire", "--", *WIREPROTO, "wire",
                      "--log-level", "warning"],
        "ws direct": [*agent, "--ws", "127.0.0.1:0"],
        "ws relay+trace": [*proxy, "--agent-protocol", "acp", "--trace", str(trace), "--ws",
                           "127.0.0.1:0", "--", *agent],
    }[name]


@asynccontextmanager
async def open_contender(name: str, home: Path) -> AsyncIterator[tuple[Any, int]]:
    """Start ``name``; yield a message stream to it and the pid of its process tree."""
    env = {**os.environ, "WIREPROTO_HOME": str(home)}
    cmd = contender_cmd(name, home / f"trace-{name.replace(' ', '-')}.jsonl")
    if not name.startswith("ws "):
        async with open_subprocess(cmd, env=env, stderr="log") as child:
            yield child, child.pid
            await child.send_eof()
        return
    async with await anyio.open_process(cmd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL) as server:
        assert server.stderr is not None
        lines = TextReceiveStream(server.stderr)
        async with anyio.create_task_group() as tg:
            text = ""
            while BANNER not in text:
                text += await lines.receive()
            url = text.split(BANNER, 1)[1].split()[0]
            tg.start_soon(_drain, lines)
            async with connect_websocket(url) as ws:
                yield ws, server.pid
            server.terminate()
            await server.wait()
            tg.cancel_scope.cancel()


async def _drain(lines: TextReceiveStream) -> None:
    async for _ in lines:
        pass


def tree_cpu(pid: int) -> float:
    """CPU seconds so far of every thread of ``pid`` and of its descendants."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/schedstat", encoding="ascii") as f:
                    total += int(f.read().split()[0])
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as f:
                    todo.extend(int(c) for c in f.read().split())
            except (OSError, ValueError, IndexError):
                continue  # a thread that just ended
    return total / 1e9


class Client:
    """A raw JSON-RPC client over the child's stdio: one request at a time."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.ids = 0

    async def call(self, method: str, params: Any) -> tuple[Any, int]:
        """Send a request; return its result and the number of messages received."""
        self.ids += 1
        await self.stream.send(msgspec.json.encode(
            {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}))
        received = 0
        while True:
            message = msgspec.json.decode(await self.stream.receive())
            received += 1
            if message.get("id") == self.ids and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result"), received


async def timed(client: Client, pid: int, method: str, params: Any, count: int
                ) -> dict[str, float]:
    """Warm up, then ``count`` sequential calls: median latency, CPU per call, messages."""
    for _ in range(max(5, count // 20)):
        await client.call(method, params)
    cpu0, samples, messages = tree_cpu(pid), [], 0
    for _ in range(count):
        t0 = time.perf_counter()
        _, messages = await client.call(method, params)
        samples.append(time.perf_counter() - t0)
    return {"latency": median(samples), "cpu": (tree_cpu(pid) - cpu0) / count,
            "messages": float(messages + 1)}  # (+1: the request)


async def measure(name: str, counts: dict[str, int], home: Path) -> dict[str, dict[str, float]]:
    async with open_contender(name, home) as (stream, pid):
        client = Client(stream)
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session, _ = await client.call("session/new", {"cwd": str(home), "mcpServers": []})
        sid = session["sessionId"]
        result = {}
        if name != "translate":  # (the Wire side has no modes to set)
            result["request"] = await timed(client, pid, "session/set_mode",
                                            {"sessionId": sid, "modeId": "ask"},
                                            counts["request"])
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
        result["prompt"] = await timed(client, pid, "session/prompt", prompt,
                                       counts["prompt"])
    return result


async def run(rounds: int, counts: dict[str, int]) -> dict[str, Any]:
    got: dict[str, list[dict[str, dict[str, float]]]] = {n: [] for n in CONTENDERS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = CONTENDERS if r % 2 == 0 else CONTENDERS[::-1]
            for name in order:
                got[name].append(await measure(name, counts, Path(tmp) / f"{r}-{name}"))
    out: dict[str, Any] = {}
    for name in CONTENDERS:
        direct = got[BASELINE.get(name, "direct")]
        out[name] = {}
        for workload in WORKLOADS:
            rows = [row[workload] for row in got[name] if workload in row]
            if not rows:
                continue
            summary = {key: median([row[key] for row in rows]) for key in rows[0]}
            if name not in ("direct", "ws direct"):
                pairs = list(zip(rows, [d[workload] for d in direct], strict=True))
                summary["added_latency"] = median([a["latency"] - d["latency"] for a, d in pairs])
                summary["cpu_ratio"] = median([a["cpu"] / d["cpu"] for a, d in pairs])
            out[name][workload] = summary
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts (smoke test)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    rounds, counts = (1, {"request": 30, "prompt": 10}) if args.quick else \
        (5, {"request": 1000, "prompt": 400})
    info = machine_info()
    results = anyio.run(run, rounds, counts)
    targets = {
        workload: {
            "added_latency_per_message": results["relay+trace"][workload]["added_latency"] / 2,
            "cpu_over_direct": results["relay+trace"][workload]["cpu_ratio"] - 1,
        }
        for workload in WORKLOADS
    }
    for target in targets.values():
        target["met"] = (target["added_latency_per_message"] <= TARGET_LATENCY
                         and target["cpu_over_direct"] <= TARGET_CPU)
    report = {"benchmark": "proxy", "machine": info, "caveats": CAVEATS,
              "settings": {"rounds": rounds, **counts}, "results": results,
              "targets": targets}
    if args.json:
        emit(report)
        return
    print("Caveats:\n" + "\n".join(f"  - {c}" for c in CAVEATS))
    print(format_machine(info))
    rows = []
    for workload in WORKLOADS:
        for name in CONTENDERS:
            r = results[name].get(workload)
            if r is None:
                continue
            rows.append([f"{workload}: {name}", f"{r['messages']:.0f}", fmt_time(r["latency"]),
                         fmt_time(r["added_latency"]) if "added_latency" in r else "-",
                         fmt_time(r["cpu"]),
                         f"{r['cpu_ratio']:.2f}x" if "cpu_ratio" in r else "-"])
    print(table(["workload: contender", "messages", "round trip (median)", "added",
                 "CPU / operation", "CPU vs direct"], rows))
    for workload, target in targets.items():
        print(f"relay+trace, {workload}: at most {TARGET_LATENCY * 1e3:.1f} ms added per message: "
              f"{verdict(target['added_latency_per_message'] <= TARGET_LATENCY)} "
              f"({fmt_time(target['added_latency_per_message'])}; a round trip crosses the "
              f"relay twice); at most {TARGET_CPU:.0%} CPU over direct: "
              f"{verdict(target['cpu_over_direct'] <= TARGET_CPU)} "
              f"({target['cpu_over_direct']:+.0%})")


if __name__ == "__main__":
    main()
