"""``wireproto proxy`` against a direct connection: added latency and CPU, same run.

Contenders (each a real process tree, driven over stdio by the same raw client):

* ``direct``: the client talks to ``wireproto acp`` (the demo agent);
* ``relay``: through ``wireproto proxy --serve acp --agent-protocol acp`` to the
  same agent (on stdio without ``--trace`` the agent inherits the proxy's stdio:
  nothing is copied);
* ``relay+trace``: the same with ``--trace``: the recording relay, every message read,
  written to the trace and forwarded by the proxy;
* ``translate``: ACP through ``proxy --serve acp --agent-protocol wire`` to
  ``wireproto wire`` (a prompt turn translated both ways; compared with a prompt
  turn against ``direct``).

Measured, in interleaved rounds (every contender once per round, in turn):
sequential round trips of a cheap request (``session/set_mode``): median latency;
and the CPU time (user + system, from ``/proc``) of the whole process tree per
request during the timed loop only (start-up excluded). For ``translate``: the
median time of a short prompt turn (the echo reply: about 6 messages), and the
same turn against ``direct``.

Nothing here is asserted; numbers from a shared machine are indicative only.
Usage: ``python benchmarks/bench_proxy.py [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit, fmt_time, format_machine, machine_info, median, table, verdict

from wireproto.transports.subprocess import open_subprocess

WIREPROTO = [sys.executable, "-m", "wireproto"]
CAVEATS = [
    "a shared 2-core machine: absolute numbers vary run to run; compare ratios",
    "CPU is the whole process tree's (client excluded): the proxy adds a process",
    "the demo agent records every event on disk: its own cost is in 'direct' too",
]
TARGET_LATENCY = 0.0002  # seconds added per message
TARGET_CPU = 0.15  # fraction added over direct
TICK = os.sysconf("SC_CLK_TCK")


def contender_cmd(name: str, trace: Path) -> list[str]:
    proxy = [*WIREPROTO, "proxy", "--log-level", "warning", "--serve", "acp"]
    return {
        "direct": [*WIREPROTO, "acp", "--log-level", "warning"],
        "relay": [*proxy, "--agent-protocol", "acp", "--", *WIREPROTO, "acp"],
        "relay+trace": [*proxy, "--agent-protocol", "acp", "--trace", str(trace), "--",
                        *WIREPROTO, "acp"],
        "translate": [*proxy, "--agent-protocol", "wire", "--", *WIREPROTO, "wire"],
    }[name]


def tree_cpu(pid: int) -> float:
    """User + system seconds of ``pid`` and its descendants (live ones)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


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


async def measure(name: str, requests: int, turns: int, home: Path) -> dict[str, Any]:
    env = {**os.environ, "WIREPROTO_HOME": str(home)}
    trace = home / f"trace-{name}.jsonl"
    async with open_subprocess(contender_cmd(name, trace), env=env, stderr="log") as child:
        client = Client(child)
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session, _ = await client.call("session/new", {"cwd": str(home), "mcpServers": []})
        sid = session["sessionId"]
        result: dict[str, Any] = {}
        if name != "translate":
            params = {"sessionId": sid, "modeId": "ask"}
            for _ in range(20):  # warm up
                await client.call("session/set_mode", params)
            cpu0, samples = tree_cpu(child.pid), []
            for _ in range(requests):
                t0 = time.perf_counter()
                await client.call("session/set_mode", params)
                samples.append(time.perf_counter() - t0)
            result["latency"] = median(samples)
            result["cpu_per_request"] = (tree_cpu(child.pid) - cpu0) / requests
        if name in ("direct", "translate"):
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
            await client.call("session/prompt", prompt)
            samples, messages = [], 0
            for _ in range(turns):
                t0 = time.perf_counter()
                _, messages = await client.call("session/prompt", prompt)
                samples.append(time.perf_counter() - t0)
            result["turn"] = median(samples)
            result["turn_messages"] = messages
        await child.send_eof()
    return result


async def run(rounds: int, requests: int, turns: int) -> dict[str, Any]:
    names = ("direct", "relay", "relay+trace", "translate")
    got: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for name in names:
                got[name].append(await measure(name, requests, turns, Path(tmp) / f"{r}"))
    out: dict[str, Any] = {}
    for name in names:
        rows = got[name]
        out[name] = {key: median([row[key] for row in rows]) for key in rows[0]}
    direct = got["direct"]
    for name in ("relay", "relay+trace"):
        rows = got[name]
        out[name]["added_latency"] = median(
            [row["latency"] - d["latency"] for row, d in zip(rows, direct, strict=True)])
        out[name]["cpu_ratio"] = median(
            [row["cpu_per_request"] / d["cpu_per_request"] for row, d in
             zip(rows, direct, strict=True) if d["cpu_per_request"] > 0] or [float("nan")])
    turns_added = [t["turn"] - d["turn"] for t, d in zip(got["translate"], direct, strict=True)]
    out["translate"]["added_per_turn"] = median(turns_added)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts (smoke test)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    rounds, requests, turns = (1, 30, 5) if args.quick else (3, 1500, 150)
    info = machine_info()
    results = anyio.run(run, rounds, requests, turns)
    report = {"benchmark": "proxy", "machine": info, "caveats": CAVEATS,
              "counts": {"rounds": rounds, "requests": requests, "turns": turns},
              "results": results}
    if args.json:
        emit(report)
        return
    print("Caveats:\n" + "\n".join(f"  - {c}" for c in CAVEATS))
    print(format_machine(info))
    d = results["direct"]
    rows = [["direct", fmt_time(d["latency"]), "-", fmt_time(d["cpu_per_request"]), "-"]]
    for name in ("relay", "relay+trace"):
        r = results[name]
        rows.append([name, fmt_time(r["latency"]), fmt_time(r["added_latency"]),
                     fmt_time(r["cpu_per_request"]), f"{r['cpu_ratio']:.2f}x"])
    print(table(["contender", "latency (median)", "added", "CPU / request", "CPU vs direct"],
                rows))
    t = results["translate"]
    print(f"prompt turn: direct {fmt_time(d['turn'])}, translated {fmt_time(t['turn'])} "
          f"({t['turn_messages']:.0f} messages), added {fmt_time(t['added_per_turn'])}")
    for name in ("relay", "relay+trace"):
        r = results[name]
        print(f"{name}: target at most {TARGET_LATENCY * 1e3:.1f} ms added per message: "
              f"{verdict(r['added_latency'] / 2 <= TARGET_LATENCY)} "
              f"(a round trip is two messages); at most {TARGET_CPU:.0%} CPU over direct: "
              f"{verdict(r['cpu_ratio'] - 1 <= TARGET_CPU)}")


if __name__ == "__main__":
    main()
