"""Smoke test: ``benchmarks/bench_proxy.py --quick --json`` still runs and reports
every contender (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.timeout(120)
def test_bench_proxy_json_shape() -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "bench_proxy.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=110, cwd=BENCH.parent,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["benchmark"] == "proxy" and out["caveats"]
    results = out["results"]
    assert set(results) == {"direct", "relay", "relay+trace", "translate"}
    for name in ("relay", "relay+trace"):
        assert results[name]["latency"] > 0 and "cpu_ratio" in results[name]
    assert results["translate"]["turn_messages"] >= 3
