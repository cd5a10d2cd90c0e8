"""Benchmark: a JSON-RPC peer over subprocess stdio, wireproto vs the ACP SDK vs the floor.

Usage::

    python benchmarks/bench_peer.py            # ~1-2 minutes on 2 cores
    python benchmarks/bench_peer.py --quick    # a few seconds, for smoke tests
    python benchmarks/bench_peer.py --json     # machine-readable results on stdout

Contenders (each a client process plus its server child, see ``peer_*.py``):
the bare-asyncio floor (an echo child, msgspec over asyncio streams), the ACP
Python SDK's own connections, and wireproto's Peer over subprocess stdio, and
for reference over WebSocket (child process), in memory (one process) and on
trio. Measured: sequential request latency, throughput with 64 requests in
flight, and ``session/update`` notifications per second one way.

To damp the noise of a shared machine the contenders run in rounds (each
contender once per round, in turn); every sample of every round counts and
medians are reported. Targets (over stdio, same run): throughput >= 2.5x the
SDK, notifications >= 3x, latency <= 0.85x, throughput and notifications within
1.5x of the floor.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from typing import Any

from _common import fmt_rate, fmt_time, format_machine, machine_info, median, run_contender, verdict
from _common import table as make_table

CONTENDERS: dict[str, tuple[str, list[str]]] = {
    "floor": ("peer_floor.py", []),
    "acp_sdk": ("peer_acp_sdk.py", []),
    "wireproto_stdio": ("peer_wireproto.py", ["--transport", "stdio"]),
    "wireproto_websocket": ("peer_wireproto.py", ["--transport", "websocket"]),
    "wireproto_memory": ("peer_wireproto.py", ["--transport", "memory"]),
    "wireproto_stdio_trio": ("peer_wireproto.py", ["--transport", "stdio", "--backend", "trio"]),
}
BASE, RIVAL, FLOOR = "wireproto_stdio", "acp_sdk", "floor"
METRICS = ("latency_s", "throughput_rps", "notifications_ps")
TARGETS = {
    "throughput_vs_sdk": (">= 2.5x", 2.5),
    "notifications_vs_sdk": (">= 3x", 3.0),
    "latency_vs_sdk": ("<= 0.85x", 0.85),
    "floor_vs_throughput": ("<= 1.5x", 1.5),
    "floor_vs_notifications": ("<= 1.5x", 1.5),
}

CAVEATS = [
    "Two processes share 2 cores: each round trip crosses two pipes and wakes two "
    "processes; on a VM a wake-up costs tens of microseconds of CPU, which dominates "
    "sequential latency for every contender, the floor included.",
    "The floor's child only echoes lines and its client decodes only the envelope; it does "
    "not validate params, has no cancellation, no concurrency limit and no ordering "
    "guarantees. It is the physical limit, not an equivalent RPC stack.",
    "The SDK and wireproto do the same work: typed, validated session/set_mode requests and "
    "results, and typed session/update notifications (agent_message_chunk, ~60 chars), "
    "streamed by the server as the response to one session/prompt.",
    "wireproto_memory runs both peers in one process (one core); wireproto_websocket uses a "
    "child process and loopback TCP; wireproto_stdio_trio runs both sides on trio. They are "
    "for reference; the targets are about stdio on asyncio.",
    "Medians over all samples of all rounds; other processes on a shared machine add noise, "
    "so compare ratios within one run.",
]


def _samples(runs: list[dict[str, Any]], metric: str) -> list[float]:
    return [s for r in runs for s in r["results"][metric]["samples"]]


def collect(args: argparse.Namespace) -> dict[str, Any]:
    """Run every contender ``args.rounds`` times, interleaved, in its own processes."""
    opts = ["--seq", str(args.seq), "--total", str(args.total), "--notify", str(args.notify),
            "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    names = [n for n in CONTENDERS if (not n.endswith("_trio") or args.trio)
             and (not args.only or n in (BASE, RIVAL, FLOOR, *args.only.split(",")))]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for rnd in range(args.rounds):
        for name in names:
            script, extra = CONTENDERS[name]
            if not args.json:
                print(f"round {rnd + 1}/{args.rounds}: {name} ...", file=sys.stderr)
            runs[name].append(run_contender(script, [*extra, *opts], timeout=300))
    summary = {}
    for name, rs in runs.items():
        summary[name] = {
            "version": rs[0]["version"], "transport": rs[0]["transport"],
            "backend": rs[0]["backend"], "notes": rs[0]["notes"],
            **{m: median(_samples(rs, m)) for m in METRICS},
            "latency_p99_single_s": median([r["results"]["latency_s"]["p99_single"] for r in rs]),
            "cpu_s_per_op": {
                m: median([x for r in rs for x in r["results"]["cpu_s_per_op"][m]["samples"]])
                for m in ("latency", "throughput", "notify")
            },
            "samples": {m: _samples(rs, m) for m in METRICS},
        }
    return summary


def analyse(s: dict[str, Any]) -> dict[str, Any]:
    """Ratios against the SDK and the floor, and the target verdicts."""
    base, rival, floor = s[BASE], s[RIVAL], s[FLOOR]
    values = {
        "throughput_vs_sdk": base["throughput_rps"] / rival["throughput_rps"],
        "notifications_vs_sdk": base["notifications_ps"] / rival["notifications_ps"],
        "latency_vs_sdk": base["latency_s"] / rival["latency_s"],
        "floor_vs_throughput": floor["throughput_rps"] / base["throughput_rps"],
        "floor_vs_notifications": floor["notifications_ps"] / base["notifications_ps"],
    }
    targets = {}
    for name, (want, limit) in TARGETS.items():
        ok = values[name] <= limit if want.startswith("<=") else values[name] >= limit
        targets[name] = {"want": want, "value": values[name], "met": ok}
    return {"targets": targets}


def report(s: dict[str, Any], analysis: dict[str, Any]) -> str:
    """The human-readable table and verdicts."""
    rival = s[RIVAL]
    rows = []
    for name, r in s.items():
        rows.append([
            name,
            fmt_time(r["latency_s"]), fmt_time(r["latency_p99_single_s"]),
            fmt_rate(r["throughput_rps"]), fmt_rate(r["notifications_ps"]),
            f"{r['latency_s'] / rival['latency_s']:.2f}x",
            f"{r['throughput_rps'] / rival['throughput_rps']:.2f}x",
            f"{r['notifications_ps'] / rival['notifications_ps']:.2f}x",
        ])
    head = ["contender", "latency", "p99", "64 in flight", "notifications",
            "lat/sdk", "tput/sdk", "notif/sdk"]
    cpu_rows = []
    for name, r in s.items():
        c, rc = r["cpu_s_per_op"], rival["cpu_s_per_op"]
        cpu_rows.append([
            name, *(fmt_time(c[m]) for m in ("latency", "throughput", "notify")),
            f"{c['throughput'] / rc['throughput']:.2f}x", f"{c['notify'] / rc['notify']:.2f}x",
        ])
    cpu_head = ["contender", "per seq. request", "per request (64)", "per notification",
                "req vs sdk", "notif vs sdk"]
    out = [make_table(head, rows), "",
           "CPU time per operation, client + server processes (less sensitive to other load):",
           make_table(cpu_head, cpu_rows), "", "targets (wireproto_stdio, same run):"]
    for name, t in analysis["targets"].items():
        out.append(f"  {name:22} {t['want']:>8}: {t['value']:.2f}x  -> {verdict(t['met'])}")
    return "\n".join(out)


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    ap.add_argument("--repeat", type=int, default=None, help="samples per round")
    ap.add_argument("--no-trio", dest="trio", action="store_false", help="skip the trio run")
    ap.add_argument("--only", default="", metavar="NAMES",
                    help="only the floor, the SDK, wireproto_stdio and these (comma-separated; "
                         "'-' for none of the others)")
    args = ap.parse_args()
    quick = args.quick
    args.rounds = args.rounds or (1 if quick else 3)
    args.repeat = args.repeat or (1 if quick else 3)
    args.seq, args.total, args.notify, args.warmup = (
        (20, 128, 200, 10) if quick else (1000, 12800, 20000, 300)
    )
    args.trio = args.trio and importlib.util.find_spec("trio") is not None
    info = machine_info()
    if not args.json:
        print("caveats:")
        print("\n".join(f"  - {c}" for c in CAVEATS))
        print(format_machine(info))
        print(f"settings: {args.rounds} rounds x {args.repeat} samples; latency {args.seq} "
              f"sequential requests, throughput {args.total} requests with 64 in flight, "
              f"{args.notify} notifications per sample\n")
        sys.stdout.flush()
    summary = collect(args)
    analysis = analyse(summary)
    if args.json:
        settings = {k: getattr(args, k) for k in ("rounds", "repeat", "seq", "total", "notify")}
        json.dump({"benchmark": "peer", "machine": info, "caveats": CAVEATS,
                   "settings": settings, "contenders": summary, **analysis},
                  sys.stdout, indent=1)
        print()
    else:
        versions = "; ".join(f"{n}: {c['version']}" for n, c in summary.items())
        print(f"contenders: {versions}\n")
        print(report(summary, analysis))
    return 0


if __name__ == "__main__":
    sys.exit(main())
