"""Benchmark: session history appends per second, by how the records are written.

Usage::

    python benchmarks/bench_store.py            # a few seconds
    python benchmarks/bench_store.py --quick    # for smoke tests
    python benchmarks/bench_store.py --json     # machine-readable results on stdout

Each contender appends the six records of a ``hello`` prompt (the prompt, four
message chunks, the turn's end) to one session, over and over, in one
process:

* ``open_per_record``: open, write, close for every record (what the JSON
  Lines store did before it kept a handle per session);
* ``handle_per_session``: :class:`~wireproto.agent.store.JsonlStore`, one
  ``append`` (one ``write``) per record;
* ``grouped``: ``JsonlStore``, the six records of a prompt in one ``append``
  (what the runtime does for the ACP and Wire adapters);
* ``memory``: :class:`~wireproto.agent.store.MemoryStore`, grouped as well.

Rounds interleave the contenders; medians of records per second are reported.
Every file contender keeps the same crash safety: nothing is buffered in the
process, so a ``kill -9`` loses at most the write in progress.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import fmt_rate, format_machine, machine_info, median
from _common import table as make_table

from wireproto.agent.content import Text
from wireproto.agent.events import AgentMessageChunk, Event, StopReason, TurnEnded, UserMessage
from wireproto.agent.store import JsonlStore, MemoryStore, Store

PROMPT: list[Event] = [
    UserMessage(content=[Text("hello")], message_id="user_0123456789abcdef"),
    *[AgentMessageChunk(text=t, message_id="msg_0123456789abcdef")
      for t in ("You ", "said", ": he", "llo")],
    TurnEnded(stop_reason=StopReason.END_TURN),
]
CAVEATS = [
    "One process, no event loop, a temporary directory on the machine's disk (no fsync: the "
    "guarantee is against a crash of the process, not of the machine).",
    "Other processes on a shared machine add noise: compare contenders within one run.",
]


class _OpenPerRecord(JsonlStore):
    """The JSON Lines store, closing its file after every append (the old cost)."""

    def append(self, session_id: str, *events: Event) -> None:
        for event in events:
            super().append(session_id, event)
            self.close()


def _one_by_one(store: Store) -> Callable[[], None]:
    def run() -> None:
        for event in PROMPT:
            store.append("s", event)
    return run


def _grouped(store: Store) -> Callable[[], None]:
    def run() -> None:
        store.append("s", *PROMPT)
    return run


def _contenders(root: Path) -> dict[str, Callable[[], None]]:
    made: dict[str, tuple[Store, Callable[[Store], Callable[[], None]]]] = {
        "open_per_record": (_OpenPerRecord(root / "a"), _one_by_one),
        "handle_per_session": (JsonlStore(root / "b"), _one_by_one),
        "grouped": (JsonlStore(root / "c"), _grouped),
        "memory": (MemoryStore(), _grouped),
    }
    out = {}
    for name, (store, how) in made.items():
        store.create("s", "/p", [])
        out[name] = how(store)
    return out


def collect(args: argparse.Namespace) -> dict[str, Any]:
    """Records per second of every contender, per round."""
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        for rnd in range(args.rounds):
            contenders = _contenders(Path(tmp) / f"r{rnd}")
            for name, run in contenders.items():
                t0 = time.perf_counter()
                for _ in range(args.prompts):
                    run()
                elapsed = time.perf_counter() - t0
                samples.setdefault(name, []).append(args.prompts * len(PROMPT) / elapsed)
    return {name: {"records_per_s": median(s), "samples": s} for name, s in samples.items()}


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    args = ap.parse_args()
    args.rounds, args.prompts = (1, 50) if args.quick else (5, 2000)
    info = machine_info()
    results = collect(args)
    base = results["open_per_record"]["records_per_s"]
    if args.json:
        json.dump({"benchmark": "store", "machine": info, "caveats": CAVEATS,
                   "settings": {"rounds": args.rounds, "prompts": args.prompts},
                   "contenders": results}, sys.stdout, indent=1)
        print()
        return 0
    print("caveats:")
    print("\n".join(f"  - {c}" for c in CAVEATS))
    print(format_machine(info))
    print(f"settings: {args.rounds} rounds x {args.prompts} prompts of {len(PROMPT)} records\n")
    rows = [[name, fmt_rate(r["records_per_s"]), f"{r['records_per_s'] / base:.1f}x"]
            for name, r in results.items()]
    print(make_table(["contender", "records/s", "vs open_per_record"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
