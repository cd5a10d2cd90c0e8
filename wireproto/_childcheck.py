"""A check run in a child Python, stopped after a time: for a peer's regular expressions.

A ``pattern`` from a peer (an ACP agent's form field, a Wire client's tool schema) may
backtrack for longer than anyone waits (``^(a|aa)+$`` against 60 ``a`` and a ``!``),
and ``re`` holds the interpreter meanwhile: no event loop, no thread can stop it. Only
a process can be stopped, so such checks run in a child Python (``-I``: none of the
program's own code, nor its ``__main__``), killed when the time is up. The child's
start-up is not counted: it writes a line once ready, then gets its input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["CHECK_TIME", "CheckFailed", "check_apart", "search_apart"]

CHECK_TIME = 2.0
"""Seconds a check may take once its child is ready."""

_START_TIME = 60.0  # seconds the child may take to be ready (a loaded machine): not checking

_PRELUDE = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"  # (ours: -I dropped PYTHONPATH and the like)
)


class CheckFailed(Exception):
    """The child could not run the check (it failed to start, or crashed)."""


async def check_apart(code: str, given: bytes, seconds: float = CHECK_TIME) -> bytes | None:
    """Run ``code`` in a child Python; its output, or ``None`` past ``seconds``.

    ``code`` writes a line once ready (after its imports), reads ``given`` from its
    stdin and writes the answer on its stdout.

    Raises:
        CheckFailed: the child could not be started, or ended without an answer.
    """
    if not sys.executable:  # (None or "" where Python cannot tell its own path)
        raise CheckFailed("cannot start a child Python: sys.executable is not known")
    path = [entry for entry in sys.path if isinstance(entry, str)]  # (imports skip the rest)
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
        try:
            with anyio.fail_after(_START_TIME):
                await out.receive_until(b"\n", 64)  # ready: the time counts from here
            try:
                await child.stdin.send(given)
                await child.stdin.aclose()
            except anyio.BrokenResourceError:
                pass  # it ended without reading all of it: its output and status tell
            with anyio.move_on_after(seconds):
                answer = []
                while True:
                    try:
                        answer.append(await out.receive())
                    except anyio.EndOfStream:
                        break
                if await child.wait() != 0:
                    raise CheckFailed(f"the check exited with status {child.returncode}")
                return b"".join(answer)
            return None
        except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead,
                anyio.DelimiterNotFound) as exc:
            raise CheckFailed(f"the check did not run: {type(exc).__name__}") from exc
        finally:
            if child.returncode is None:
                child.kill()


_SEARCH = (
    "import re\n"
    "def found(p, v):\n"
    "    try:\n"
    "        return re.search(p, v) is not None\n"
    "    except re.error:\n"
    "        return False\n"
    "print(flush=True)\n"  # ready
    "json.dump([found(p, v) for p, v in json.load(sys.stdin)], sys.stdout)\n"
)


_FOUND: dict[tuple[str, str], bool] = {}
"""The answers of :func:`search_apart` for short texts (a hook's tool names repeat:
one child per new pair, not per tool call)."""
_KEEP = 512  # pairs kept
_KEEP_CHARS = 1024  # the longest pattern + text kept


async def search_apart(
    pairs: Sequence[tuple[str, str]], seconds: float = CHECK_TIME
) -> dict[tuple[str, str], bool] | None:
    """Whether each ``(pattern, text)`` matches (``re.search``; an invalid pattern does
    not), searched in a child Python; ``None`` past ``seconds``. The answers for short
    texts are kept, so a pair already searched costs no child.

    Raises:
        CheckFailed: as :func:`check_apart`.
    """
    known = {pair: _FOUND[pair] for pair in pairs if pair in _FOUND}
    asked = [pair for pair in pairs if pair not in known]
    if asked:
        answer = await check_apart(_SEARCH, json.dumps(asked).encode(), seconds)
        if answer is None:
            return None
        for pair, found in zip(asked, json.loads(answer), strict=True):
            known[pair] = found
            if len(pair[0]) + len(pair[1]) <= _KEEP_CHARS:
                if len(_FOUND) >= _KEEP:
                    del _FOUND[next(iter(_FOUND))]  # (the oldest)
                _FOUND[pair] = found
    return known
