"""Benchmark: a prompt end to end, wireproto's demo agent vs an agent on the ACP SDK.

Usage::

    python benchmarks/bench_agent.py            # about a minute on 2 cores
    python benchmarks/bench_agent.py --quick    # a few seconds, for smoke tests
    python benchmarks/bench_agent.py --json     # machine-readable results on stdout

Contenders, each a real agent process on stdio:

* ``wireproto``: ``python -m wireproto acp`` (the demo agent, its history in
  JSON Lines files under a temporary ``WIREPROTO_HOME``);
* ``acp_sdk``: ``agent_acp_sdk.py``, an agent on the official ACP Python SDK
  doing identical work: the same five updates per prompt and the same six
  history records in a JSON Lines file per session.

One raw client (this process: asyncio pipes and msgspec, no library) drives
both the same way: ``initialize``, sessions, then ``hello`` prompts, sequential
(one at a time in one session) and concurrent (32 sessions with one prompt in
flight each). Every prompt's updates are counted, so both agents are checked
to do the same work. Agent CPU time comes from ``/proc/PID/task/*/schedstat``
(nanoseconds, every thread) around each phase.

Rounds interleave the contenders (a fresh process for each, the order
alternating), ratios are computed within each round, and medians over rounds
are reported. Targets (same run): sequential prompts/s >= 1.5x the SDK agent,
32 concurrent sessions >= 2x, agent CPU per prompt <= 0.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec
from _common import HERE, format_machine, machine_info, median, verdict
from _common import table as make_table

CONCURRENT = 32
UPDATES_PER_PROMPT = 5  # four message chunks and a session_info_update
TARGETS = {
    "sequential": (">= 1.5x", 1.5),
    "concurrent": (">= 2x", 2.0),
    "cpu_per_prompt": ("<= 0.5x", 0.5),
}
CAVEATS = [
    "Both agents run as child processes of this driver and share 2 cores with it (and with "
    "anything else running on the machine): compare ratios within one run, not absolute "
    "numbers across runs.",
    "Identical work: per prompt four agent_message_chunk updates with a message id, one "
    "session_info_update, the response, and six history records appended to a per-session "
    "JSON Lines file (one write per record for the SDK agent).",
    "CPU per prompt is the agent process's own CPU time (all threads) over the phase divided "
    "by its prompts; the client's CPU is not counted.",
]


def _contenders(home: Path, baseline: str | None
                ) -> dict[str, tuple[list[str], dict[str, str]]]:
    env = {**os.environ, "WIREPROTO_HOME": str(home / "wireproto")}
    env.pop("WIREPROTO_TOKEN", None)
    found = {
        "wireproto": ([sys.executable, "-m", "wireproto", "acp"], env),
        "acp_sdk": ([sys.executable, str(HERE / "agent_acp_sdk.py"), str(home / "sdk")],
                    dict(os.environ)),
    }
    if baseline:  # another wireproto source tree, e.g. an older commit's
        old = {**env, "WIREPROTO_HOME": str(home / "baseline"), "PYTHONPATH": baseline}
        found["baseline"] = ([sys.executable, "-m", "wireproto", "acp"], old)
    return found


def agent_cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far, in nanoseconds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just ended
    return total


def agent_user_system(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of ``pid`` so far (``/proc/PID/stat``, in clock ticks)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


class RawClient:
    """JSON-RPC over an agent's stdio pipes: requests by id, updates counted per session."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self._stdin = proc.stdin
        self._stdout = proc.stdout
        self._next = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.updates: dict[str, int] = {}
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RawClient:
        self._reader = asyncio.ensure_future(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()

    async def _read(self) -> None:
        decode = msgspec.json.decode
        while True:
            line = await self._stdout.readline()
            if not line:
                for future in self._waiting.values():
                    future.set_exception(EOFError("the agent closed its output"))
                return
            message = decode(line)
            if "method" in message:
                if message["method"] == "session/update":
                    sid = message["params"]["sessionId"]
                    self.updates[sid] = self.updates.get(sid, 0) + 1
                continue
            future = self._waiting.pop(message["id"])
            if "error" in message:
                future.set_exception(RuntimeError(f"agent error: {message['error']}"))
            else:
                future.set_result(message["result"])

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        self._stdin.write(msgspec.json.encode(
            {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        ) + b"\n")
        return await future

    async def prompt(self, session_id: str) -> None:
        result = await self.call("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}],
        })
        assert result["stopReason"] == "end_turn", result


async def run_once(cmd: list[str], env: dict[str, str], args: argparse.Namespace,
                   workdir: str) -> dict[str, Any]:
    """One contender process: warm up, then the sequential and concurrent phases."""
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env, cwd=workdir, limit=1 << 24,
    )
    async with RawClient(proc) as client:
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = {"cwd": workdir, "mcpServers": []}
        first = (await client.call("session/new", new))["sessionId"]
        others = [(await client.call("session/new", new))["sessionId"] for _ in range(CONCURRENT)]
        for _ in range(args.warmup):
            await client.prompt(first)
        await asyncio.gather(*(client.prompt(s) for s in others))
        client.updates.clear()

        user0, sys0 = agent_user_system(proc.pid)
        cpu0, t0 = agent_cpu_ns(proc.pid), time.perf_counter()
        for _ in range(args.seq):
            await client.prompt(first)
        t1, cpu1 = time.perf_counter(), agent_cpu_ns(proc.pid)

        async def one_session(session_id: str) -> None:
            for _ in range(args.per_session):
                await client.prompt(session_id)

        cpu2, t2 = agent_cpu_ns(proc.pid), time.perf_counter()
        await asyncio.gather(*(one_session(s) for s in others))
        t3, cpu3 = time.perf_counter(), agent_cpu_ns(proc.pid)
        user1, sys1 = agent_user_system(proc.pid)

        expected = {first: args.seq * UPDATES_PER_PROMPT,
                    **{s: args.per_session * UPDATES_PER_PROMPT for s in others}}
        if client.updates != expected:
            raise RuntimeError(f"{cmd}: unexpected update counts {client.updates}")
    concurrent = CONCURRENT * args.per_session
    return {
        "sequential_pps": args.seq / (t1 - t0),
        "concurrent_pps": concurrent / (t3 - t2),
        "cpu_per_prompt_sequential_s": (cpu1 - cpu0) / 1e9 / args.seq,
        "cpu_per_prompt_concurrent_s": (cpu3 - cpu2) / 1e9 / concurrent,
        "system_cpu_share": (sys1 - sys0) / max(user1 - user0 + sys1 - sys0, 1e-9),
    }


METRICS = ("sequential_pps", "concurrent_pps", "cpu_per_prompt_sequential_s",
           "cpu_per_prompt_concurrent_s")


async def collect(args: argparse.Namespace) -> dict[str, Any]:
    """Every contender once per round (order alternating); per-round ratios."""
    rounds: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        contenders = _contenders(Path(tmp), args.baseline)
        names = list(contenders)
        for rnd in range(args.rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            results = {}
            for name in order:
                if not args.json:
                    print(f"round {rnd + 1}/{args.rounds}: {name} ...", file=sys.stderr)
                cmd, env = contenders[name]
                results[name] = await run_once(cmd, env, args, tmp)
            rounds.append(results)
    ratios = [_ratios(r, "wireproto") for r in rounds]
    summary = {
        name: {m: median([r[name][m] for r in rounds]) for m in METRICS} for name in names
    }
    ratio_medians = {k: median([r[k] for r in ratios]) for k in ratios[0]}
    ratio_ranges = {k: [min(r[k] for r in ratios), max(r[k] for r in ratios)] for k in ratios[0]}
    cpu = max(ratio_medians["cpu_per_prompt_sequential"],
              ratio_medians["cpu_per_prompt_concurrent"])
    values = {"sequential": ratio_medians["sequential"],
              "concurrent": ratio_medians["concurrent"], "cpu_per_prompt": cpu}
    targets = {}
    for key, (want, limit) in TARGETS.items():
        ok = values[key] <= limit if want.startswith("<=") else values[key] >= limit
        targets[key] = {"want": want, "value": values[key], "met": ok}
    result = {"rounds": rounds, "ratios": ratios, "contenders": summary,
              "ratio_medians": ratio_medians, "ratio_ranges": ratio_ranges, "targets": targets}
    if args.baseline:
        old = [_ratios(r, "baseline") for r in rounds]
        result["baseline_ratio_medians"] = {k: median([r[k] for r in old]) for k in old[0]}
    return result


def _ratios(r: dict[str, dict[str, float]], name: str) -> dict[str, float]:
    """One round's ratios of contender ``name`` to the SDK agent."""
    ours, sdk = r[name], r["acp_sdk"]
    return {
        "sequential": ours["sequential_pps"] / sdk["sequential_pps"],
        "concurrent": ours["concurrent_pps"] / sdk["concurrent_pps"],
        "cpu_per_prompt_sequential": ours["cpu_per_prompt_sequential_s"]
        / sdk["cpu_per_prompt_sequential_s"],
        "cpu_per_prompt_concurrent": ours["cpu_per_prompt_concurrent_s"]
        / sdk["cpu_per_prompt_concurrent_s"],
    }


def report(result: dict[str, Any]) -> str:
    """The human-readable tables and verdicts."""
    s = result["contenders"]
    rows = [
        [name, f"{r['sequential_pps']:.0f}", f"{r['concurrent_pps']:.0f}",
         f"{r['cpu_per_prompt_sequential_s'] * 1e6:.0f} us",
         f"{r['cpu_per_prompt_concurrent_s'] * 1e6:.0f} us"]
        for name, r in s.items()
    ]
    head = ["agent", "sequential prompts/s", f"{CONCURRENT} sessions prompts/s",
            "CPU/prompt seq.", f"CPU/prompt x{CONCURRENT}"]
    med, rng = result["ratio_medians"], result["ratio_ranges"]
    ratio_rows = [[k, f"{med[k]:.2f}x", f"{rng[k][0]:.2f}-{rng[k][1]:.2f}x"] for k in med]
    out = [make_table(head, rows), "",
           "wireproto / acp_sdk, ratio per round (median, range):",
           make_table(["metric", "median", "range"], ratio_rows), "", "targets (same run):"]
    for name, t in result["targets"].items():
        out.append(f"  {name:16} {t['want']:>8}: {t['value']:.2f}x  -> {verdict(t['met'])}")
    old = result.get("baseline_ratio_medians")
    if old:
        out.append("\nbaseline / acp_sdk (median per round): " + ", ".join(
            f"{k} {v:.2f}x" for k, v in old.items()))
    return "\n".join(out)


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    ap.add_argument("--baseline", metavar="DIR",
                    help="also run the demo agent of the wireproto package found in DIR "
                         "(e.g. an older commit: git archive COMMIT wireproto | tar -x -C DIR)")
    args = ap.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.seq, args.per_session, args.warmup = (20, 2, 5) if args.quick else (1000, 40, 100)
    info = machine_info()
    info["packages"]["agent-client-protocol"] = metadata.version("agent-client-protocol")
    if not args.json:
        print("caveats:")
        print("\n".join(f"  - {c}" for c in CAVEATS))
        print(format_machine(info))
        print(f"settings: {args.rounds} rounds; {args.seq} sequential prompts, "
              f"{CONCURRENT} sessions x {args.per_session} prompts; warm-up {args.warmup}\n")
        sys.stdout.flush()
    result = asyncio.run(collect(args))
    if args.json:
        settings = {k: getattr(args, k) for k in ("rounds", "seq", "per_session", "warmup")}
        json.dump({"benchmark": "agent", "machine": info, "caveats": CAVEATS,
                   "settings": settings, **result}, sys.stdout, indent=1)
        print()
    else:
        print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
