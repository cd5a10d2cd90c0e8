"""Before/after: the demo agent of this tree vs the one of another tree, CPU per prompt.

Usage::

    python benchmarks/compare_agent.py --baseline DIR     # about 20 s
    python benchmarks/compare_agent.py --baseline DIR --quick --json

``DIR`` holds another ``wireproto`` package, e.g. an older commit's::

    git archive COMMIT wireproto | tar -x -C DIR

Both agents (``python -m wireproto acp``, each with its JSON Lines history
in a temporary ``WIREPROTO_HOME``) run at once, driven by
``bench_agent.py``'s raw client. Batches alternate between them (the order
flipping every round): ``--batch`` sequential ``hello`` prompts in one
session, then 32 sessions with ``--per-session`` prompts each, one in
flight per session. Each batch's agent CPU comes from
``/proc/PID/task/*/schedstat``; the ratio new / old is taken per round and
the median and quartiles over rounds are reported. On a shared machine this
cancels most of the load's swings (both agents see the same few hundred
milliseconds), which runs of ``bench_agent.py`` a second apart do not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from typing import Any

import bench_agent
from _common import format_machine, machine_info, median
from _common import table as make_table

PHASES = ("sequential", "concurrent")


async def _start(env: dict[str, str], workdir: str
                 ) -> tuple[bench_agent.RawClient, str, list[str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "wireproto", "acp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env,
        cwd=workdir, limit=1 << 24,
    )
    client = await bench_agent.RawClient(proc).__aenter__()
    await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    new = {"cwd": workdir, "mcpServers": []}
    first = (await client.call("session/new", new))["sessionId"]
    others = [(await client.call("session/new", new))["sessionId"]
              for _ in range(bench_agent.CONCURRENT)]
    return client, first, others


async def _batch(client: bench_agent.RawClient, first: str, others: list[str],
                 args: argparse.Namespace) -> dict[str, float]:
    """One batch of each phase; agent CPU per prompt (seconds)."""
    pid = client.proc.pid
    cpu0 = bench_agent.agent_cpu_ns(pid)
    for _ in range(args.batch):
        await client.prompt(first)
    cpu1 = bench_agent.agent_cpu_ns(pid)

    async def one_session(session_id: str) -> None:
        for _ in range(args.per_session):
            await client.prompt(session_id)

    await asyncio.gather(*(one_session(s) for s in others))
    cpu2 = bench_agent.agent_cpu_ns(pid)
    return {"sequential": (cpu1 - cpu0) / 1e9 / args.batch,
            "concurrent": (cpu2 - cpu1) / 1e9 / (len(others) * args.per_session)}


async def collect(args: argparse.Namespace) -> dict[str, Any]:
    """Start both agents, warm them up, then alternate batches."""
    with tempfile.TemporaryDirectory(prefix="compare-agent-") as tmp:
        agents = {}
        for name in ("new", "old"):
            env = {**os.environ, "WIREPROTO_HOME": os.path.join(tmp, name)}
            env.pop("WIREPROTO_TOKEN", None)
            if name == "old":
                env["PYTHONPATH"] = args.baseline
            agents[name] = await _start(env, tmp)
        try:
            for client, first, others in agents.values():
                for _ in range(args.warmup):
                    await client.prompt(first)
                await asyncio.gather(*(client.prompt(s) for s in others))
            batches: dict[str, list[dict[str, float]]] = {"new": [], "old": []}
            for rnd in range(args.rounds):
                for name in ("new", "old") if rnd % 2 == 0 else ("old", "new"):
                    batches[name].append(await _batch(*agents[name], args))
        finally:
            for client, _, _ in agents.values():
                await client.__aexit__(None, None, None)
    result: dict[str, Any] = {}
    for phase in PHASES:
        ratios = [n[phase] / o[phase] for n, o in zip(batches["new"], batches["old"], strict=True)]
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        result[phase] = {
            "new_cpu_per_prompt_s": median([b[phase] for b in batches["new"]]),
            "old_cpu_per_prompt_s": median([b[phase] for b in batches["old"]]),
            "ratio_median": median(ratios),
            "ratio_quartiles": [quartiles[0], quartiles[-1]],
        }
    return result


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", metavar="DIR", required=True,
                    help="the directory holding the other wireproto package")
    ap.add_argument("--rounds", type=int, default=None, help="batches per agent")
    ap.add_argument("--batch", type=int, default=200, help="sequential prompts per batch")
    ap.add_argument("--per-session", type=int, default=5,
                    help="prompts per session in a batch of the concurrent phase")
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    args.baseline = os.path.abspath(args.baseline)
    if not os.path.isfile(os.path.join(args.baseline, "wireproto", "__init__.py")):
        ap.error(f"{args.baseline} holds no wireproto package")
    if args.quick:
        args.rounds, args.batch, args.per_session = args.rounds or 2, 10, 1
    args.rounds = args.rounds or 40
    args.warmup = 10 if args.quick else 200
    result = asyncio.run(collect(args))
    settings = {k: getattr(args, k) for k in ("rounds", "batch", "per_session", "warmup")}
    if args.json:
        json.dump({"benchmark": "compare_agent", "machine": machine_info(),
                   "settings": settings, **result}, sys.stdout, indent=1)
        print()
        return 0
    print(format_machine(machine_info()))
    print(f"settings: {settings}\n")
    rows = [[phase, f"{r['old_cpu_per_prompt_s'] * 1e6:.1f} us",
             f"{r['new_cpu_per_prompt_s'] * 1e6:.1f} us", f"{r['ratio_median']:.3f}",
             f"{r['ratio_quartiles'][0]:.3f}-{r['ratio_quartiles'][1]:.3f}"]
            for phase, r in result.items()]
    print(make_table(["phase", "old CPU/prompt", "new CPU/prompt", "new/old (median)",
                      "quartiles"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
