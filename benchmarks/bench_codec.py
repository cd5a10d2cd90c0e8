"""Benchmark: encoding and decoding four ACP messages, wireproto vs the ACP SDK.

Usage::

    python benchmarks/bench_codec.py            # ~1 minute on 2 cores
    python benchmarks/bench_codec.py --quick    # a few seconds, for smoke tests
    python benchmarks/bench_codec.py --json     # machine-readable results on stdout

Every contender runs in its own Python process (``codec_*.py``). Decode inputs
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
DECODE_EVERY, DECODE_GEOMEAN, ENCODE_EVERY = 3.0, 5.0, 5.0

CAVEATS = [
    "Times are medians of per-call means (each sample runs the call many times in a loop), "
    "so they describe warm caches and a hot interpreter, not a cold first message.",
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
    """Run every contender in its own process and return the raw results."""
    inputs = {
        variant: run_contender(script, ["--emit"]) for variant, script in INPUT_SOURCES.items()
    }
    opts = ["--target", str(args.target), "--repeat", str(args.repeat)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inputs.json"
        path.write_text(json.dumps(inputs), encoding="utf-8")
        results = {}
        for name, script in CONTENDERS.items():
            if not args.quiet:
                print(f"running {name} ...", file=sys.stderr)
            results[name] = run_contender(script, [*opts, "--inputs", str(path)])
    return {"inputs": {v: {c: len(t) for c, t in d.items()} for v, d in inputs.items()},
            "contenders": results}


def analyse(raw: dict[str, Any]) -> dict[str, Any]:
    """Ratios of the ACP SDK's medians to wireproto's, and the target verdicts."""
    res = {name: c["results"] for name, c in raw["contenders"].items()}
    base, rival = res[BASE], res[RIVAL]
    decode: dict[str, dict[str, float]] = {}
    encode: dict[str, float] = {}
    for case in MESSAGES:
        encode[case] = rival[case]["encode"]["median"] / base[case]["encode"]["median"]
        decode[case] = {
            variant: rival[case]["decode"][variant]["median"] / m["median"]
            for variant, m in base[case]["decode"].items()
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
    args = ap.parse_args()
    args.target = args.target or (0.002 if args.quick else 0.1)
    args.repeat = args.repeat or (2 if args.quick else 7)
    args.quiet = args.json
    info = machine_info()
    if not args.json:
        print("caveats:")
        print("\n".join(f"  - {c}" for c in CAVEATS))
        print(format_machine(info))
        print(f"samples: {args.repeat} per measurement, ~{args.target}s each\n")
        sys.stdout.flush()
    raw = collect(args)
    analysis = analyse(raw)
    if args.json:
        json.dump({"benchmark": "codec", "machine": info, "caveats": CAVEATS,
                   "settings": {"target_s": args.target, "repeat": args.repeat},
                   **raw, **analysis}, sys.stdout, indent=1)
        print()
    else:
        versions = "; ".join(f"{n}: {c['version']}" for n, c in raw["contenders"].items())
        print(f"contenders: {versions}\n")
        print(report(raw, analysis))
    return 0


if __name__ == "__main__":
    sys.exit(main())
