"""Benchmark: encoding and decoding four ACP messages, wireproto vs the ACP SDK.

Usage::

    python benchmarks/bench_codec.py            # ~2 minutes on 2 cores
    python benchmarks/bench_codec.py --quick    # a few seconds, for smoke tests
    python benchmarks/bench_codec.py --json     # machine-readable results on stdout

Every contender runs in its own Python process (``codec_*.py``), in rounds:
each round runs every contender once, in turn, so a slow phase of a shared
machine hits all of them alike. Ratios are computed within each round and
the median over rounds is reported (times: the median of the rounds'
medians). Decode inputs
are the bytes the ACP SDK produces (its field order puts union tags last) and
the bytes wireproto produces (tags first); every contender decodes both.
Targets (medians, same run): decode >= 3x faster than the ACP SDK on every
message and >= 5x on the geometric mean; encode >= 5x on every message.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import (
    fmt_time,
    format_machine,
    geomean,
    machine_info,
    median,
    run_contender,
    table,
    verdict,
)
from _messages import MESSAGES

CONTENDERS = {
    "wireproto": "codec_wireproto.py",
    "acp_sdk": "codec_acp_sdk.py",
    "pydantic_direct": "codec_pydantic.py",
    "json": "codec_json.py",
    "orjson": "codec_orjson.py",
}
INPUT_SOURCES = {"sdk_bytes": "codec_acp_sdk.py", "wireproto_bytes": "codec_wireproto.py"}
BASE, RIVAL = "wireproto", "acp_sdk"
DECODE_EVERY, DECODE_GEOMEAN, ENCODE_EVERY, ENCODE_GEOMEAN = 3.0, 5.0, 5.0, 10.0

CAVEATS = [
    "Times are medians of per-call means (each sample runs the call many times in a loop), "
    "so they describe warm caches and a hot interpreter, not a cold first message. They "
    "are CPU time of the contender's process, so other load on the machine stretches "
    "them less than wall-clock time.",
    "'decode' = one framed line (no newline) -> the typed, validated params/result the "
    "application gets, including the JSON-RPC envelope and the method -> type lookup; "
    "'encode' = the in-memory typed value -> one newline-terminated line.",
    "json and orjson produce and consume plain dicts: no validation, no types. They are "
    "reference points, not equivalent work.",
    "pydantic_direct is not the SDK's code path: it is the SDK's models used the fastest "
    "way pydantic allows (one-pass model_validate_json with the type known up front).",
    "Every decoded value is checked against the canonical message before timing, and every "
    "encoding is parsed back, so no contender can win by skipping work.",
    "A 2-core VM is noisy: ratios within one run are meaningful; absolute numbers across "
    "machines and runs much less so.",
]


def collect(args: argparse.Namespace) -> dict[str, Any]:
    """Run every contender in its own process, ``args.rounds`` times in turn."""
    inputs = {
        variant: run_contender(script, ["--emit"]) for variant, script in INPUT_SOURCES.items()
    }
    opts = ["--target", str(args.target), "--repeat", str(args.repeat)]
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inputs.json"
        path.write_text(json.dumps(inputs), encoding="utf-8")
        for r in range(args.rounds):
            results = {}
            for name, script in CONTENDERS.items():
                if not args.quiet:
                    print(f"round {r + 1}/{args.rounds}: {name} ...", file=sys.stderr)
                results[name] = run_contender(script, [*opts, "--inputs", str(path)])
            rounds.append(results)
    return {"inputs": {v: {c: len(t) for c, t in d.items()} for v, d in inputs.items()},
            "contenders": _merge(rounds), "rounds": rounds}


def _merge(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One result per contender: each median is the median of the rounds' medians."""
    merged: dict[str, Any] = {}
    for name, first in rounds[0].items():
        results: dict[str, Any] = {}
        for case, res in first["results"].items():
            per_round = [r[name]["results"][case] for r in rounds]
            results[case] = {
                "kind": res["kind"], "bytes": res["bytes"],
                "encode": {"median": median([p["encode"]["median"] for p in per_round])},
                "decode": {
                    v: {"median": median([p["decode"][v]["median"] for p in per_round])}
                    for v in res["decode"]
                },
            }
        merged[name] = {**{k: v for k, v in first.items() if k != "results"},
                        "results": results}
    return merged


def _ratio(rounds: list[dict[str, Any]], pick: Any) -> float:
    """The median over rounds of (the SDK's median / wireproto's median)."""
    return median([pick(r[RIVAL]["results"]) / pick(r[BASE]["results"]) for r in rounds])


def analyse(raw: dict[str, Any]) -> dict[str, Any]:
    """Ratios of the ACP SDK's medians to wireproto's, and the target verdicts."""
    rounds = raw["rounds"]
    decode: dict[str, dict[str, float]] = {}
    encode: dict[str, float] = {}
    for case in MESSAGES:
        encode[case] = _ratio(rounds, lambda r, case=case: r[case]["encode"]["median"])
        decode[case] = {
            variant: _ratio(
                rounds, lambda r, case=case, v=variant: r[case]["decode"][v]["median"]
            )
            for variant in INPUT_SOURCES
        }
    all_decode = [r for per in decode.values() for r in per.values()]
    per_variant_geo = {
        v: geomean([decode[c][v] for c in MESSAGES]) for v in INPUT_SOURCES
    }
    targets = {
        "decode_every_message": {
            "want": f">= {DECODE_EVERY}x", "worst": min(all_decode),
            "met": min(all_decode) >= DECODE_EVERY,
        },
        "decode_geomean": {
            "want": f">= {DECODE_GEOMEAN}x", "value": per_variant_geo,
            "met": min(per_variant_geo.values()) >= DECODE_GEOMEAN,
        },
        "encode_every_message": {
            "want": f">= {ENCODE_EVERY}x", "worst": min(encode.values()),
            "met": min(encode.values()) >= ENCODE_EVERY,
        },
        "encode_geomean": {
            "want": f">= {ENCODE_GEOMEAN}x", "value": {"geomean": geomean(list(encode.values()))},
            "met": geomean(list(encode.values())) >= ENCODE_GEOMEAN,
        },
    }
    return {"decode_speedup_vs_sdk": decode, "encode_speedup_vs_sdk": encode,
            "decode_geomean_vs_sdk": per_variant_geo, "targets": targets}


def report(raw: dict[str, Any], analysis: dict[str, Any]) -> str:
    """The human-readable tables."""
    res = {name: c["results"] for name, c in raw["contenders"].items()}
    names = list(res)
    out = []
    for variant in INPUT_SOURCES:
        rows = []
        for case in MESSAGES:
            row = [f"{case} ({res[BASE][case]['bytes']} B)"]
            row += [fmt_time(res[n][case]["decode"][variant]["median"]) for n in names]
            row.append(f"{analysis['decode_speedup_vs_sdk'][case][variant]:.1f}x")
            rows.append(row)
        rows.append(["geometric mean", *[""] * len(names),
                     f"{analysis['decode_geomean_vs_sdk'][variant]:.1f}x"])
        out.append(f"decode, input = {variant.replace('_', ' ')} (median per message)")
        out.append(table(["message", *names, "sdk/wireproto"], rows))
        out.append("")
    rows = []
    for case in MESSAGES:
        row = [case]
        row += [fmt_time(res[n][case]["encode"]["median"]) for n in names]
        row.append(f"{analysis['encode_speedup_vs_sdk'][case]:.1f}x")
        rows.append(row)
    rows.append(["geometric mean", *[""] * len(names),
                 f"{geomean(list(analysis['encode_speedup_vs_sdk'].values())):.1f}x"])
    out.append("encode (median per message)")
    out.append(table(["message", *names, "sdk/wireproto"], rows))
    out.append("")
    out.append("targets (wireproto vs acp_sdk, same run):")
    for name, t in analysis["targets"].items():
        shown = t.get("worst", t.get("value"))
        if isinstance(shown, dict):
            shown = ", ".join(f"{k} {v:.1f}x" for k, v in shown.items())
        else:
            shown = f"worst {shown:.1f}x"
        out.append(f"  {name:22} {t['want']:>7}: {shown}  -> {verdict(t['met'])}")
    return "\n".join(out)


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    ap.add_argument("--target", type=float, default=None, help="seconds per sample")
    ap.add_argument("--repeat", type=int, default=None, help="samples per measurement")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    args = ap.parse_args()
    args.target = args.target or (0.002 if args.quick else 0.05)
    args.repeat = args.repeat or (2 if args.quick else 5)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.quiet = args.json
    info = machine_info()
    if not args.json:
        print("caveats:")
        print("\n".join(f"  - {c}" for c in CAVEATS))
        print(format_machine(info))
        print(f"samples: {args.rounds} rounds x {args.repeat} per measurement, "
              f"~{args.target}s each\n")
        sys.stdout.flush()
    raw = collect(args)
    analysis = analyse(raw)
    if args.json:
        json.dump({"benchmark": "codec", "machine": info, "caveats": CAVEATS,
                   "settings": {"target_s": args.target, "repeat": args.repeat,
                                "rounds": args.rounds},
                   **raw, **analysis}, sys.stdout, indent=1)
        print()
    else:
        versions = "; ".join(f"{n}: {c['version']}" for n, c in raw["contenders"].items())
        print(f"contenders: {versions}\n")
        print(report(raw, analysis))
    return 0


if __name__ == "__main__":
    sys.exit(main())
