"""The measuring loop every codec contender module shares.

A contender module defines a :class:`Contender` and calls :func:`main`. The
driver (``bench_codec.py``) runs each contender in its own process twice:

* ``--emit``: print the bytes this contender's encoder produces for every
  case (these become decode inputs for everyone, e.g. the SDK's own bytes);
* ``--inputs FILE``: time ``encode`` and ``decode`` of every case on every
  input variant in FILE and print the samples as JSON.

Before timing, each decoded value is converted back to plain JSON and
compared with the canonical message, and each encoding is parsed back, so a
contender that skips work (or decodes wrongly) fails instead of winning.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _common import calibrate, calls, emit, median, time_loop, time_per_call
from _messages import KINDS, MESSAGES


@dataclass
class Contender:
    """One way of encoding and decoding the benchmark messages.

    Attributes:
        name: the contender's label.
        version: what is measured (library and version).
        validates: whether ``decode`` produces typed, validated values.
        prepare: build the in-memory value to encode from the canonical message
            (called once per case, untimed).
        encode: the in-memory value -> one newline-terminated message.
        decoders: case name -> bytes -> decoded value (the whole receive path
            for that message kind: envelope, method lookup, params/result).
        to_plain: a decoded value -> plain JSON values, for the check.
        decode_loops: case name -> ``loop(data, number)`` that decodes
            ``data`` ``number`` times exactly as the contender's receive path
            does (timed instead of calling ``decoders[case]`` per message,
            when that call would add or omit work: wireproto's peer reads
            the decode function to call per message); ``decoders[case]``
            must do the same for one message (it is what is checked).
    """

    name: str
    version: str
    validates: bool
    prepare: Callable[[str, dict[str, Any]], Any]
    encode: Callable[[Any], bytes]
    decoders: dict[str, Callable[[bytes], Any]]
    to_plain: Callable[[Any], Any]
    notes: list[str] = field(default_factory=list)
    decode_loops: dict[str, Callable[[bytes, int], object]] = field(default_factory=dict)


def payload_of(message: dict[str, Any]) -> Any:
    """The params (request/notification) or result (response) of a message."""
    return message["params"] if "method" in message else message["result"]


def _check(c: Contender, case: str, variant: str, data: bytes) -> None:
    decoded = c.decoders[case](data)
    plain = c.to_plain(decoded)
    want = payload_of(MESSAGES[case])
    if plain != want:
        raise AssertionError(f"{c.name}: {case}/{variant} decoded to {plain!r}, want {want!r}")


def _check_encoding(c: Contender, case: str, out: bytes) -> None:
    if not out.endswith(b"\n") or b"\n" in out[:-1]:
        raise AssertionError(f"{c.name}: {case} is not one newline-terminated line")
    if json.loads(out) != MESSAGES[case]:
        raise AssertionError(f"{c.name}: {case} encodes to {out[:200]!r}...")


def _measure(fn: Callable[[], object], target: float, repeat: int) -> dict[str, Any]:
    number = calibrate(fn, target)
    samples = time_per_call(fn, number, repeat)
    return {"median": median(samples), "samples": samples, "number": number}


def _measure_loop(
    loop: Callable[[bytes, int], object], data: bytes, target: float, repeat: int
) -> dict[str, Any]:
    number = calibrate(lambda: loop(data, 1), target)
    samples = time_loop(loop, data, number, repeat)
    return {"median": median(samples), "samples": samples, "number": number}


def main(c: Contender) -> None:
    """Command-line entry point of a contender module."""
    ap = argparse.ArgumentParser(description=f"codec contender {c.name}")
    ap.add_argument("--emit", action="store_true", help="print this encoder's bytes per case")
    ap.add_argument("--inputs", help="JSON file: variant -> case -> message text")
    ap.add_argument("--target", type=float, default=0.1, help="seconds per sample")
    ap.add_argument("--repeat", type=int, default=7, help="samples per measurement")
    ap.add_argument("--json", action="store_true", help="accepted for symmetry; output is JSON")
    args = ap.parse_args()

    values = {case: c.prepare(case, msg) for case, msg in MESSAGES.items()}
    encoded = {case: c.encode(v) for case, v in values.items()}
    for case, out in encoded.items():
        _check_encoding(c, case, out)
    if args.emit:
        emit({case: out[:-1].decode("utf-8") for case, out in encoded.items()})
        return

    inputs: dict[str, dict[str, str]] = {"own": {k: v[:-1].decode() for k, v in encoded.items()}}
    if args.inputs:
        with open(args.inputs, encoding="utf-8") as f:
            inputs = json.load(f)
    results: dict[str, Any] = {}
    for case in MESSAGES:
        value = values[case]
        enc = c.encode
        res: dict[str, Any] = {"kind": KINDS[case], "bytes": len(encoded[case])}
        res["encode"] = _measure(lambda enc=enc, value=value: enc(value), args.target, args.repeat)
        res["decode"] = {}
        loop = c.decode_loops.get(case) or calls(c.decoders[case])
        for variant, texts in inputs.items():
            data = texts[case].encode("utf-8")
            _check(c, case, variant, data)
            res["decode"][variant] = _measure_loop(loop, data, args.target, args.repeat)
        results[case] = res
        print(f"{c.name}: {case} done", file=sys.stderr)
    emit(
        {
            "contender": c.name,
            "version": c.version,
            "validates": c.validates,
            "notes": c.notes,
            "target_s": args.target,
            "repeat": args.repeat,
            "results": results,
        }
    )
