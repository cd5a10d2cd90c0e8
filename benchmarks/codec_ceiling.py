"""Where the codec's decode time goes, and how fast msgspec could go at all.

Usage::

    python benchmarks/codec_ceiling.py [--json] [--rounds N] [--quick]

For each message of the codec benchmark, on the ACP SDK's bytes (union tags
last) and on wireproto's (tags first), this times in ONE process, in
interleaved rounds (ratios per round, medians over rounds; CPU time of
this process, so other load on the machine stretches the times less):

* ``acp_sdk``: the SDK's decode (``json.loads`` + ``model_validate``);
* ``sdk_json_loads``: only its ``json.loads``;
* ``wireproto``: the peer's decode path, as its read loop runs it
  (``codec_wireproto.py``: ``read`` / ``read_result``);
* ``msgspec_builtins``: ``msgspec.json.decode`` to dicts, no validation;
* ``msgspec_one_call``: the best case for msgspec typed decoding: one
  ``Decoder.decode`` call straight into an envelope Struct whose params /
  result field has the message's type (no classification, no dispatch, no
  Python around it);
* ``expecting`` (calls only; reported apart, not a target): wireproto's
  read loop step for a call that comes while a response is expected (a
  request alone in flight, without ``on_response``, waits for it): the
  expected decode refuses the call, the expectation ends and the call is
  decoded as when nothing is expected. Only the first call does that: the
  calls after it find nothing expected (and the response then comes with
  its result raw). The ACP and Wire clients send a prompt with
  ``on_response``: the updates they read during a prompt take the step
  with nothing expected.

The last column is the SDK's time divided by ``msgspec_one_call``'s: the
highest decode ratio any msgspec-based codec could show for that message.
Each is timed as a loop of ``number`` messages with nothing else per
message: a plain ``for`` calling the decode function, or for wireproto the
peer's read loop step (see ``codec_wireproto.py``).

Not a test: no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any, Literal

import codec_acp_sdk as sdk
import codec_wireproto as ours
import msgspec
from _common import calibrate, calls, format_machine, geomean, machine_info, median, table
from _messages import KINDS, MESSAGES
from msgspec import UNSET, UnsetType

from wireproto.adapters.acp import schema
from wireproto.adapters.acp.codec import dec_hook
from wireproto.errors import InvalidMessage
from wireproto.jsonrpc.codec import ACP_DIALECT, Decoder
from wireproto.rpc._pending import expectation

BOUND = 1.15
"""The target: wireproto's decode within this factor of ``msgspec_one_call``."""


def _one_call_decoder(case: str) -> msgspec.json.Decoder[Any]:
    message = MESSAGES[case]
    if KINDS[case] == "response":
        fields: list[Any] = [("jsonrpc", Literal["2.0"]), ("id", int | str),
                             ("result", ours.RESULT)]
        return msgspec.json.Decoder(msgspec.defstruct("Resp", fields), dec_hook=dec_hook)
    fields = [("jsonrpc", Literal["2.0"]), ("method", str),
              ("params", ours.PARAMS[message["method"]]), ("id", int | str | UnsetType, UNSET)]
    return msgspec.json.Decoder(msgspec.defstruct("Call", fields), dec_hook=dec_hook)


def _sdk_loads(line: bytes) -> Any:
    return json.loads(line.strip())


def _expecting(line: bytes) -> Callable[[bytes, int], object]:
    """The read loop's step for a call read while a prompt's response is expected.

    A decoder of its own (its plan built by an earlier message, as a
    client's is by then), the expectation set before each call as
    ``Peer.request`` sets it.
    """
    decoder = Decoder(ACP_DIALECT, ours.ROUTER)
    ours.read(line, 1, decoder)  # (the plan is built at the first message)
    expected = expectation(decoder, schema.PromptResponse, dec_hook)[2]
    fast, refused = decoder._fast, decoder._decode_refused

    def loop(data: bytes, number: int) -> object:
        msg: object = None
        for _ in range(number):
            fast[0] = expected  # type: ignore[assignment]
            try:
                msg = fast[0](data)
            except InvalidMessage:
                raise
            except Exception:
                msg = refused(data)
        assert fast[0] is not expected, "still expecting"  # (once per `number`)
        return msg

    return loop


def main() -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    ap.add_argument("--target", type=float, default=0.02, help="seconds per sample")
    ap.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.target = 1, 0.001
    inputs = {
        "sdk_bytes": {c: sdk.encode(sdk.prepare(c, m))[:-1] for c, m in MESSAGES.items()},
        "wireproto_bytes": {c: ours.ENCODER.encode(ours.prepare(c, m))[:-1]
                            for c, m in MESSAGES.items()},
    }
    Loop = Callable[[bytes, int], object]
    contenders: dict[str, Callable[[str], Loop]] = {
        "acp_sdk": lambda case: calls(sdk.CONTENDER.decoders[case]),
        "sdk_json_loads": lambda case: calls(_sdk_loads),
        "wireproto": lambda case: ours.LOOPS[case],
        "msgspec_builtins": lambda case: calls(msgspec.json.Decoder().decode),
        "msgspec_one_call": lambda case: calls(_one_call_decoder(case).decode),
    }
    results: dict[str, Any] = {}
    for variant, lines in inputs.items():
        for case, line in lines.items():
            loops = {name: make(case) for name, make in contenders.items()}
            if KINDS[case] != "response":
                loops["expecting"] = _expecting(line)
            for loop in loops.values():
                loop(line, 1)  # warm up, and fail loudly on any decode error
            numbers = {
                n: calibrate(lambda loop=loop, line=line: loop(line, 1), args.target)
                for n, loop in loops.items()
            }
            rounds: dict[str, list[float]] = {n: [] for n in loops}
            for _ in range(args.rounds):
                for name, loop in loops.items():
                    number = numbers[name]
                    t0 = time.process_time()  # (CPU time: see _common.time_per_call)
                    loop(line, number)
                    rounds[name].append((time.process_time() - t0) / number)
            ceiling = median([a / b for a, b in zip(rounds["acp_sdk"], rounds["msgspec_one_call"],
                                                     strict=True)])
            got = median([a / b for a, b in zip(rounds["acp_sdk"], rounds["wireproto"],
                                                strict=True)])
            over = median([a / b for a, b in zip(rounds["wireproto"], rounds["msgspec_one_call"],
                                                 strict=True)])
            results.setdefault(variant, {})[case] = {
                "median_s": {n: median(v) for n, v in rounds.items()},
                "sdk_over_wireproto": got, "sdk_over_msgspec_one_call": ceiling,
                "wireproto_over_one_call": over,
            }
            if "expecting" in rounds:
                results[variant][case]["expecting_over_one_call"] = median(
                    [a / b for a, b in zip(rounds["expecting"], rounds["msgspec_one_call"],
                                           strict=True)])
    if args.json:
        json.dump({"benchmark": "codec_ceiling", "machine": machine_info(),
                   "results": results}, sys.stdout, indent=1)
        print()
        return 0
    print(format_machine(machine_info()))
    names = list(contenders)
    for variant, per_case in results.items():
        rows = []
        got = [r["sdk_over_wireproto"] for r in per_case.values()]
        best = [r["sdk_over_msgspec_one_call"] for r in per_case.values()]
        for (case, r), g, b in zip(per_case.items(), got, best, strict=True):
            rows.append([case, *[f"{r['median_s'][n] * 1e6:.2f} us" for n in names],
                         f"{g:.1f}x", f"{b:.1f}x", f"{r['wireproto_over_one_call']:.2f}x"])
        rows.append(["geometric mean", *[""] * len(names),
                     f"{geomean(got):.1f}x", f"{geomean(best):.1f}x", ""])
        print(f"\ndecode, input = {variant.replace('_', ' ')}")
        print(table(["message", *names, "sdk/wireproto", "sdk/one_call", "wireproto/one_call"],
                    rows))
        print("a call while a response is expected (not a target): " + ", ".join(
            f"{case} {r['median_s']['expecting'] * 1e6:.2f} us, "
            f"{r['expecting_over_one_call']:.2f}x one_call"
            for case, r in per_case.items() if "expecting" in r["median_s"]))
    worst = max(r["wireproto_over_one_call"] for per in results.values() for r in per.values())
    print(f"\ntarget (same run): wireproto within {BOUND:g}x of msgspec_one_call on every "
          f"message: worst {worst:.2f}x -> {'met' if worst <= BOUND else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
