"""Smoke tests: the benchmark scripts still run and print well-formed JSON.

They run each driver with ``--quick`` (tiny iteration counts) in a subprocess
and check the shape of the output only. No timing is asserted: numbers from a
shared test machine mean nothing.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from timeouts import units

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
MESSAGES = {"session_update_chunk", "session_prompt", "tool_call_update_diff", "initialize_result"}


def run_json(script: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", "--json", *args],
        capture_output=True, text=True, timeout=units(22), cwd=BENCH.parent,
    )  # (below the tests' own limits, 120 s scaled alike: a stuck script says where)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert isinstance(result, dict)
    return result


def positive(x: object) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


def check_machine(info: dict[str, Any]) -> None:
    assert info["cpu"] and info["cores"] >= 1 and info["python"]
    assert info["packages"]["msgspec"] and info["packages"]["agent-client-protocol"]


@pytest.mark.timeout(120)  # a few seconds normally; generous for a loaded machine
def test_bench_codec_json_shape() -> None:
    out = run_json("bench_codec.py")
    assert out["benchmark"] == "codec"
    check_machine(out["machine"])
    assert out["caveats"]
    assert set(out["inputs"]) == {"sdk_bytes", "wireproto_bytes"}
    assert set(out["contenders"]) == {"wireproto", "acp_sdk", "pydantic_direct", "json", "orjson"}
    for contender in out["contenders"].values():
        assert set(contender["results"]) == MESSAGES
        for res in contender["results"].values():
            assert positive(res["encode"]["median"])
            assert set(res["decode"]) == {"sdk_bytes", "wireproto_bytes"}
            assert all(positive(d["median"]) for d in res["decode"].values())
    assert set(out["encode_speedup_vs_sdk"]) == MESSAGES
    assert all(positive(r) for r in out["encode_speedup_vs_sdk"].values())
    for per_variant in out["decode_speedup_vs_sdk"].values():
        assert all(positive(r) for r in per_variant.values())
    assert set(out["targets"]) == {
        "decode_every_message", "decode_geomean", "encode_every_message", "encode_geomean",
    }
    assert all(isinstance(t["met"], bool) for t in out["targets"].values())


@pytest.mark.timeout(120)
def test_codec_ceiling_json_shape() -> None:
    out = run_json("codec_ceiling.py")
    assert out["benchmark"] == "codec_ceiling"
    check_machine(out["machine"])
    assert set(out["results"]) == {"sdk_bytes", "wireproto_bytes"}
    for per_case in out["results"].values():
        assert set(per_case) == MESSAGES
        for case, res in per_case.items():
            calls = case != "initialize_result"  # (also read while a response is expected)
            assert set(res["median_s"]) == {
                "acp_sdk", "sdk_json_loads", "wireproto", "msgspec_builtins", "msgspec_one_call",
                *(["expecting"] if calls else []),
            }
            assert all(positive(t) for t in res["median_s"].values())
            assert positive(res["sdk_over_wireproto"])
            assert positive(res["sdk_over_msgspec_one_call"])
            assert ("expecting_over_one_call" in res) is calls
            assert not calls or positive(res["expecting_over_one_call"])


@pytest.mark.timeout(120)
def test_bench_peer_json_shape() -> None:
    out = run_json("bench_peer.py")
    assert out["benchmark"] == "peer"
    check_machine(out["machine"])
    assert out["caveats"]
    expected = {"floor", "acp_sdk", "wireproto_stdio", "wireproto_websocket", "wireproto_memory"}
    assert expected <= set(out["contenders"])
    for contender in out["contenders"].values():
        for metric in ("latency_s", "throughput_rps", "notifications_ps"):
            assert positive(contender[metric])
            assert contender["samples"][metric]
        assert set(contender["cpu_s_per_op"]) == {"latency", "throughput", "notify"}
    assert set(out["targets"]) == {
        "throughput_vs_sdk", "notifications_vs_sdk", "latency_vs_sdk", "floor_vs_throughput",
        "floor_vs_notifications",
    }
    for target in out["targets"].values():
        assert positive(target["value"]) and isinstance(target["met"], bool)


@pytest.mark.timeout(120)
def test_bench_agent_json_shape() -> None:
    out = run_json("bench_agent.py")
    assert out["benchmark"] == "agent"
    check_machine(out["machine"])
    assert out["caveats"]
    assert set(out["contenders"]) == {"wireproto", "acp_sdk"}
    metrics = {"sequential_pps", "concurrent_pps", "cpu_per_prompt_sequential_s",
               "cpu_per_prompt_concurrent_s"}
    for contender in out["contenders"].values():
        assert set(contender) == metrics
        assert all(positive(contender[m]) for m in metrics)
    assert len(out["rounds"]) == len(out["ratios"]) == out["settings"]["rounds"]
    assert set(out["targets"]) == {"sequential", "concurrent", "cpu_per_prompt"}
    for target in out["targets"].values():
        assert positive(target["value"]) and isinstance(target["met"], bool)


@pytest.mark.timeout(120)
def test_compare_agent_json_shape() -> None:
    out = run_json("compare_agent.py", "--baseline", str(BENCH.parent))  # this tree twice
    assert out["benchmark"] == "compare_agent"
    check_machine(out["machine"])
    for phase in ("sequential", "concurrent"):
        result = out[phase]
        assert positive(result["new_cpu_per_prompt_s"]) and positive(result["old_cpu_per_prompt_s"])
        low, high = result["ratio_quartiles"]
        assert positive(result["ratio_median"]) and 0 < low <= high


@pytest.mark.timeout(120)
def test_bench_store_json_shape() -> None:
    out = run_json("bench_store.py")
    assert out["benchmark"] == "store"
    check_machine(out["machine"])
    assert set(out["contenders"]) == {"open_per_record", "handle_per_session", "grouped",
                                      "memory"}
    assert all(positive(c["records_per_s"]) for c in out["contenders"].values())


@pytest.mark.timeout(120)
def test_bench_ws_memory_json_shape() -> None:
    out = run_json("bench_ws_memory.py")
    assert out["benchmark"] == "ws_memory"
    check_machine(out["machine"])
    assert set(out["results"]) == {"bare", "peer", "acp"}
    for kind in out["results"].values():
        assert set(kind) == {"idle_per_conn", "initialized_per_conn"}
        assert all(isinstance(v["median"], float) for v in kind.values())
    assert set(out["ratios_vs_bare"]) == {"bare", "peer", "acp"}


@pytest.mark.timeout(120)
def test_bench_stream_memory_json_shape() -> None:
    out = run_json("bench_stream_memory.py")
    assert out["benchmark"] == "stream_memory"
    check_machine(out["machine"])
    (runs,) = out["results"]
    (one,) = runs
    assert one["count"] == 5 and one["peak"] >= one["rss_before"] > 0
    assert 0 < one["queued_peak"] <= one["budget"] + one["size"] + 1024


@pytest.mark.timeout(120)
def test_bench_proxy_json_shape() -> None:
    out = run_json("bench_proxy.py")
    assert out["benchmark"] == "proxy"
    check_machine(out["machine"])
    results = out["results"]
    kimi = {f"kimi {p} {c}" for p in ("wire", "acp") for c in ("direct", "relay+trace")}
    # (--quick starts no more Kimi processes: its control and the floor in front of it)
    lighter = {f"kimi {p} {c}" for p in ("wire", "acp") for c in ("direct again", "floor+log (C)")}
    floors = {"floor (C)", "floor+log (C)"}  # (relay_floor.c: with a C compiler)
    # (Kimi's contenders run when kimi-cli is installed, as .ci/run does; else skipped, said why)
    ran_kimi = "kimi wire direct" not in out["skipped"]
    ran_floor = "floor (C)" not in out["skipped"]
    assert set(out["skipped"]) == lighter | (set() if ran_kimi else kimi) | (
        set() if ran_floor else floors)
    assert all(isinstance(why, str) and why for why in out["skipped"].values())
    assert out["settings"]["calibration"] == 5
    assert set(results) == {"direct", "relay", "relay+trace", "translate", "ws direct",
                            "ws relay+trace"} | (kimi if ran_kimi else set()) | (
        floors if ran_floor else set())
    assert set(results["translate"]) == {"prompt"}
    assert set(results["direct"]) == set(results["relay+trace"]) == {"request", "prompt"}
    for name, workloads in results.items():
        if name in kimi:
            assert set(workloads) == {"prompt", "tool"}
        for row in workloads.values():
            assert positive(row["latency"]) and positive(row["cpu"])
            assert row["messages"] >= 3
            if name != "direct" and not name.endswith(" direct"):  # (compared with one)
                assert positive(row["cpu_ratio"]) and math.isfinite(row["added_latency"])
            if "direct" not in name:  # a proxy
                assert row["proxy_share"] >= 0 and math.isfinite(row["proxy_share"])
                assert row["own_wait"] >= 0
            if "trace" in name or "log" in name:  # the relay's transit, from its stamps
                assert positive(row["transit"]) and row["transit_p90"] >= row["transit"]
                # (relay_floor's stamps are absolute: no bound)
                assert row["clock_bound"] == 0 if "log" in name else positive(row["clock_bound"])
            else:
                assert "transit" not in row
    assert positive(results["relay+trace"]["prompt"]["proxy_share"])  # (the recording relay)
    kimi_targets = {"kimi wire prompt", "kimi wire tool", "kimi acp prompt", "kimi acp tool"}
    assert set(out["targets"]) == {"request", "prompt"} | (kimi_targets if ran_kimi else set())
    for target in out["targets"].values():
        assert isinstance(target["met"], bool)
        assert positive(target["transit_per_message"]) and positive(target["transit_bound"])
        assert target["control_ratio"] is None  # (Kimi's control is not run by --quick)
