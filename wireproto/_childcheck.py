"""A check run in a child Python, stopped after a time: for a peer's regular expressions.

A ``pattern`` from a peer (an ACP agent's form field, a Wire client's tool schema) may
backtrack for longer than anyone waits (``^(a|aa)+$`` against 60 ``a`` and a ``!``),
and ``re`` holds the interpreter meanwhile: no event loop, no thread can stop it. Only
a process can be stopped, so such checks run in a child Python (``-I``: none of the
program's own code, nor its ``__main__``), killed when the time is up. The child's
start-up is not counted: it writes a line once ready, then gets its input.

At most :data:`CHECKS_AT_ONCE` children run at once (per event loop: a program runs
one); more checks wait for a place, whatever number of peers ask. :func:`search_apart`
keeps what it learnt of short ``(pattern, text)`` pairs, a pattern that ran out of time
included (for a minute), so a peer repeating a pair (a catastrophic one too) costs no child
again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import TypeVar

import anyio
from anyio.lowlevel import RunVar
from anyio.streams.buffered import BufferedByteReceiveStream

from wireproto._childsignal import signal_child

__all__ = ["CHECKS_AT_ONCE", "CHECK_TIME", "CheckFailed", "check_apart", "search_apart"]

CHECK_TIME = 2.0
"""Seconds a check may take once its child is ready."""

CHECKS_AT_ONCE = 3
"""Children that may run checks at once (per event loop); more checks wait their turn."""

_START_TIME = 60.0  # seconds the child may take to be ready (a loaded machine): not checking

_PRELUDE = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"  # (ours: -I dropped PYTHONPATH and the like)
)

_PLACES: RunVar[anyio.Semaphore] = RunVar("wireproto._childcheck places")
"""The places for children, one semaphore per event loop (an anyio primitive serves the
loop that first waits on it: the tests run many loops in one process)."""


def _places() -> anyio.Semaphore:
    places = _PLACES.get(None)
    if places is None:
        places = anyio.Semaphore(CHECKS_AT_ONCE)
        _PLACES.set(places)
    return places


class CheckFailed(Exception):
    """The child could not run the check (it failed to start, or crashed)."""


async def check_apart(code: str, given: bytes, seconds: float = CHECK_TIME) -> bytes | None:
    """Run ``code`` in a child Python; its output, or ``None`` past ``seconds``.

    ``code`` writes a line once ready (after its imports), reads ``given`` from its
    stdin and writes the answer on its stdout. The check first waits for one of the
    :data:`CHECKS_AT_ONCE` places (not counted in ``seconds``).

    Raises:
        CheckFailed: the child could not be started, or ended without an answer.
    """
    output, in_time = await _run_apart(code, given, seconds)
    return output if in_time else None


async def _run_apart(code: str, given: bytes, seconds: float) -> tuple[bytes, bool]:
    """:func:`check_apart`: the child's output and whether it ended in time (if not,
    what it wrote before it was killed)."""
    if not sys.executable:  # (None or "" where Python cannot tell its own path)
        raise CheckFailed("cannot start a child Python: sys.executable is not known")
    path = [entry for entry in sys.path if isinstance(entry, str)]  # (imports skip the rest)
    async with _places():
        try:
            with anyio.CancelScope(shield=True):  # (a cancel meanwhile would orphan the child)
                child = await anyio.open_process(
                    [sys.executable, "-I", "-c", _PRELUDE + code, json.dumps(path)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                )
        except OSError as exc:
            raise CheckFailed(f"cannot start {sys.executable}: {exc}") from exc
        async with child:
            assert child.stdin is not None and child.stdout is not None
            out = BufferedByteReceiveStream(child.stdout)
            output: list[bytes] = []
            try:
                with anyio.fail_after(_START_TIME):
                    await out.receive_until(b"\n", 64)  # ready: the time counts from here
                try:
                    await child.stdin.send(given)
                    await child.stdin.aclose()
                except anyio.BrokenResourceError:
                    pass  # it ended without reading all of it: its output and status tell
                with anyio.move_on_after(seconds):
                    await _read_to_end(out, output)
                    if await child.wait() != 0:
                        raise CheckFailed(f"the check exited with status {child.returncode}")
                    return b"".join(output), True
                signal_child(child, signal.SIGKILL)
                with anyio.move_on_after(_START_TIME):  # (its pipe ends with it)
                    await _read_to_end(out, output)
                return b"".join(output), False
            except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead,
                    anyio.DelimiterNotFound) as exc:
                raise CheckFailed(f"the check did not run: {type(exc).__name__}") from exc
            finally:
                if child.returncode is None:  # (cancelled, failed, or past the time)
                    # By pid, and waited for here, shielded: a cancelled wait in the
                    # closing below would kill by poll, which may reap a child before
                    # the loop sees it exit (a status 255 and a logged warning).
                    signal_child(child, signal.SIGKILL)
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_START_TIME):
                        await child.wait()


async def _read_to_end(source: BufferedByteReceiveStream, into: list[bytes]) -> None:
    while True:
        try:
            into.append(await source.receive())
        except anyio.EndOfStream:
            return


_SEARCH = (
    "import re\n"
    "def found(p, v):\n"
    "    try:\n"
    "        return re.search(p, v) is not None\n"
    "    except re.error:\n"
    "        return False\n"
    "print(flush=True)\n"  # ready
    "for p, v in json.load(sys.stdin):\n"  # (an answer a line, written at once: past the
    "    print(int(found(p, v)), flush=True)\n"  # time, the parent knows which pair ran)
)

_Value = TypeVar("_Value")

_FOUND: dict[tuple[str, str], bool] = {}
"""The answers of :func:`search_apart` for short pairs (a hook's tool names repeat:
one child per new pair, not per tool call)."""
_SLOW: dict[tuple[str, str], tuple[float, float]] = {}
"""The short pairs that :func:`search_apart` searched alone and that ran out of time ->
the time they were given, and when (``time.monotonic``)."""
_SLOW_FOR = 60.0
"""Seconds a pair found too slow is answered so without a child (then it is searched again:
a machine too loaded to answer in time once does not refuse the pair for ever)."""
_KEEP = 512  # pairs kept, in each table
_KEEP_CHARS = 1024  # the longest pattern + text kept


def _keep(table: dict[tuple[str, str], _Value], pair: tuple[str, str], value: _Value) -> None:
    if len(pair[0]) + len(pair[1]) <= _KEEP_CHARS:
        if pair not in table and len(table) >= _KEEP:
            del table[next(iter(table))]  # (the oldest)
        table[pair] = value


def _too_slow(pair: tuple[str, str], seconds: float) -> bool:
    given, when = _SLOW.get(pair, (0.0, 0.0))
    return given >= seconds and time.monotonic() - when < _SLOW_FOR


async def search_apart(
    pairs: Sequence[tuple[str, str]], seconds: float = CHECK_TIME
) -> dict[tuple[str, str], bool] | None:
    """Whether each ``(pattern, text)`` matches (``re.search``; an invalid pattern does
    not), searched in a child Python; ``None`` past ``seconds``.

    What a search learns of a short pair is kept, so a pair already searched costs no
    child: its answer, or (for a minute, :data:`_SLOW_FOR`) that it ran out of a time at
    least ``seconds`` (``None`` at once). A pair is known to be too slow once it ran out
    of time searched first, with the whole time to itself: a slow pair after others is
    searched again (first, the pairs answered before it being known).

    Raises:
        CheckFailed: as :func:`check_apart`.
    """
    if _SLOW and any(pair not in _FOUND and _too_slow(pair, seconds) for pair in pairs):
        return None
    known = {pair: _FOUND[pair] for pair in pairs if pair in _FOUND}
    asked = [pair for pair in pairs if pair not in known]
    if asked:
        output, in_time = await _run_apart(_SEARCH, json.dumps(asked).encode(), seconds)
        answers = output.split(b"\n")[:-1]  # (whole lines only)
        if in_time and len(answers) != len(asked):
            raise CheckFailed(f"the check answered {len(answers)} of {len(asked)} pairs")
        for pair, answer in zip(asked, answers, strict=False):
            known[pair] = answer == b"1"
            _keep(_FOUND, pair, known[pair])
        if not in_time:
            if not answers:
                _keep(_SLOW, asked[0], (seconds, time.monotonic()))
            return None
    return known
