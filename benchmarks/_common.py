"""Shared helpers for the benchmark drivers and contender modules.

Nothing here is timed: it collects the machine description, runs a contender
module in its own Python process, computes medians and formats tables.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PACKAGES = (
    "wireproto",
    "msgspec",
    "anyio",
    "websockets",
    "agent-client-protocol",
    "pydantic",
    "pydantic-core",
    "orjson",
)


def cpu_model() -> str:
    """The CPU model name as the kernel reports it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """Machine, OS, Python and package versions, for printing with the numbers."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": versions,
        "load_avg_at_start": load,
    }


def format_machine(info: dict[str, Any]) -> str:
    """A few human-readable lines describing the machine."""
    pkgs = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)
    load = "/".join(str(x) for x in info.get("load_avg_at_start", []))
    return (
        f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"{info['os']}, load average {load or '?'} (1/5/15 min) at start\n"
        f"python:  {info['python']}\npackages: {pkgs}"
    )


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence."""
    return float(statistics.median(values))


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive numbers."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def calibrate(fn: Callable[[], object], target_s: float) -> int:
    """Return how many calls of ``fn`` take about ``target_s`` seconds (at least 1)."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= target_s / 5 or number >= 1 << 24:
            return max(1, int(number * target_s / max(elapsed, 1e-9)))
        number *= 4


def time_per_call(fn: Callable[[], object], number: int, repeat: int) -> list[float]:
    """CPU seconds per call of ``fn``, one sample per repeat of ``number`` calls.

    CPU time of this (single-threaded) process: time the machine gives to
    other processes is not counted, so other load stretches it far less
    than wall-clock time.
    """
    samples = []
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        samples.append((time.process_time() - t0) / number)
    return samples


def calls(fn: Callable[[bytes], object]) -> Callable[[bytes, int], object]:
    """A loop calling ``fn(data)`` ``number`` times (for :func:`time_loop`)."""

    def loop(data: bytes, number: int) -> object:
        for _ in range(number):
            fn(data)
        return None

    return loop


def time_loop(
    loop: Callable[[bytes, int], object], data: bytes, number: int, repeat: int
) -> list[float]:
    """CPU seconds per message of ``loop(data, number)``, one sample per repeat.

    As :func:`time_per_call`, for a loop that handles ``number`` messages
    itself (nothing but the contender's own code runs per message).
    """
    samples = []
    for _ in range(repeat):
        t0 = time.process_time()
        loop(data, number)
        samples.append((time.process_time() - t0) / number)
    return samples


def run_contender(script: str, args: Sequence[str], timeout: float = 600.0) -> dict[str, Any]:
    """Run ``benchmarks/<script>`` in a fresh Python process and parse its JSON output.

    Raises:
        RuntimeError: the contender failed; its stderr is included.
    """
    cmd = [sys.executable, str(HERE / script), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} failed ({proc.returncode}):\n{proc.stderr}")
    try:
        return dict(json.loads(proc.stdout))
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"{script} printed no JSON:\n{proc.stdout}\n{proc.stderr}") from exc


def emit(result: dict[str, Any]) -> None:
    """Write a contender's result as JSON on stdout (the only thing it prints there)."""
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table with right-aligned columns after the first."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = []
    for n, row in enumerate([headers, *rows]):
        cells = [
            str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
            for i, c in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fmt_time(seconds: float) -> str:
    """Format a duration with a unit suited to its size."""
    if seconds < 0:  # (a difference of two durations)
        return "-" + fmt_time(-seconds)
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_rate(per_second: float) -> str:
    """Format a rate in messages per second."""
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f} k/s"
    return f"{per_second:.0f} /s"


def verdict(ok: bool) -> str:
    """``"met"`` or ``"MISSED"``."""
    return "met" if ok else "MISSED"


BYTECODE_COUNTER = """
import collections, json, signal, sys
counts = collections.Counter()
def tracer(frame, event, arg):
    frame.f_trace_opcodes = True
    key = frame.f_code.co_filename + ":" + frame.f_code.co_qualname
    def local(frame, event, arg):
        if event == "opcode":
            counts[key] += 1
        return local
    return local
def stop(*_):
    sys.settrace(None)
    with open(OUT, "w") as f:
        json.dump(counts, f)
signal.signal(signal.SIGUSR1, lambda *_: sys.settrace(tracer))
signal.signal(signal.SIGUSR2, stop)
"""
"""The start of a child's ``-c`` script that counts the bytecodes it runs per function:
SIGUSR1 starts counting, SIGUSR2 writes the counts as JSON to ``OUT`` (defined first)."""
