"""A linear, non-recursive look at JSON that msgspec found nested too deeply.

msgspec decodes recursively and raises :class:`RecursionError` somewhere
below a thousand levels (the exact depth depends on the caller's stack).
The codec catches that and asks :func:`scan` what the input was, to answer
as for any other malformed message:

* not JSON at all (``"[" * 5000``): a parse error;
* well-formed JSON, too deep: an invalid request, or invalid params when
  the deep part is inside ``params``; ``id`` and ``method`` are read from
  the top level when they are plain values.

The scan is only run on that error path. It walks tokens with one compiled
pattern, treats runs of brackets as one token and keeps its stack in a
``bytearray``, so ``[[[...]]]`` costs a few operations per run, not per
level; it never recurses. It takes at most :func:`budget` steps, a small
constant plus one step per :data:`BYTES_PER_STEP` bytes of input, so that
a peer cannot make the scan cost much more than reading the message did:
what it has not read by then is assumed well-formed (the answer is then
"too deep", with the ``id`` when it came before).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import msgspec

__all__ = ["BASE_STEPS", "BYTES_PER_STEP", "Nesting", "budget", "scan"]

BASE_STEPS = 128
"""Steps the scan may take on any message, however short."""

BYTES_PER_STEP = 64
"""One more step allowed per this many bytes of input.

Most deep input folds into few steps (``[[[[...`` is one), but input that
never lets runs fold (``[[1],[[1],...``) costs a Python loop step every few
bytes. A step costs about as much as reading a few hundred bytes, so this
keeps the scan within a small factor of the cost of receiving the message
(no single step reads more than a bounded stretch, except a long string,
at C speed). Past the budget the scan stops: what it has not read is
assumed well-formed, and a top-level ``id`` written before the deep part
(the usual order) is still read."""


def budget(size: int) -> int:
    """How many steps :func:`scan` may take on ``size`` bytes."""
    return BASE_STEPS + size // BYTES_PER_STEP


_WS = rb"[ \t\r\n]*"
_HEX4 = rb"(?![dD][89a-fA-F])[0-9a-fA-F]{4}"  # not a surrogate
_PAIR = rb"[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_PLAIN = rb'[^"\\\x00-\x1f]*'  # (a single-character repeat: matched at C speed)
_STR = (
    rb'"' + _PLAIN + rb'(?:\\(?:["\\/bfnrt]|u(?:' + _HEX4 + rb"|" + _PAIR + rb"))"
    + _PLAIN + rb')*"'
)
_NUM = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_SCALAR = (  # (an empty container counts as one: `[[],[[],[` folds too)
    rb"(?:" + _STR + rb"|" + _NUM + rb"|true|false|null|\[" + _WS + rb"\]|\{" + _WS + rb"\})"
)
_MEMBER = _STR + _WS + rb":" + _WS
# Inside a container, a run of openers is one token, with the first members
# of each level when they are scalars: `[1,[{"a":2,"b":[` pushes four levels.
# Repeats are bounded so that one step stays short; a plain run of `[` is
# matched at C speed.
_FOLD = (
    rb"(?:\[" + _WS + rb"(?:" + _SCALAR + _WS + rb"," + _WS + rb"){0,64}"
    rb"|\{" + _WS + _MEMBER + rb"(?:" + _SCALAR + _WS + rb"," + _WS + _MEMBER
    + rb"){0,64}){1,256}(?:\{" + _WS + rb")?"
)
_REST = (
    rb"|(?P<close>[\]}]+)" + _WS
    + rb"|(?P<str>" + _STR + rb")" + _WS
    + rb"|(?P<num>" + _NUM + rb"|true|false|null)" + _WS
    + rb"|(?P<sep>[,:])" + _WS
    + rb"|[ \t\r\n]+"
)
_TOP = re.compile(rb"(?P<open>[\[{]" + _WS + rb")" + _REST)  # one level at a time
_NESTED = re.compile(
    rb"(?P<open>\[{16,}|" + _FOLD + rb"|[\[{]" + _WS + rb")"
    + _REST
)
_STRING = re.compile(_STR)
_EMPTY = re.compile(rb"\[" + _WS + rb"\]|\{" + _WS + rb"\}")
_OPENERS = bytes(c for c in range(256) if c not in b"[{")  # deleted: all but [ and {
_CLOSING = bytes.maketrans(b"[{", b"]}")
_STRIP = b" \t\r\n"

# states: what may come next
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _AFTER = range(6)
_VALUE_STATES = (_VALUE, _VALUE_OR_CLOSE)
_LAST = {b"[": _VALUE_OR_CLOSE, b"{": _KEY_OR_CLOSE, b",": _VALUE, b":": _VALUE}
"""The state after a run of openers, by its last character."""


@dataclasses.dataclass
class Nesting:
    """What :func:`scan` found.

    Attributes:
        json: the input is one well-formed JSON text (when ``complete``);
            not known to be malformed (when not).
        depth: the deepest nesting reached (up to where the scan stopped).
        complete: the whole input was read; false when the scan stopped
            at its :func:`budget`.
        steps: how many steps the scan took (at most :func:`budget`).
        id: the top-level ``id`` when it is a number, a string or null
            (``None`` also when it could not be read).
        method: the top-level ``method`` when it is a string.
        deepest_in: the top-level member holding the deepest value
            (``None`` when the top level is not an object).
        members: whether the top level is an object.
    """

    json: bool
    depth: int
    complete: bool = True
    members: bool = False
    id: int | str | None = None
    method: str | None = None
    deepest_in: str | None = None
    steps: int = 0


def _value(token: bytes) -> Any:
    try:
        return msgspec.json.decode(token)
    except msgspec.DecodeError:  # (an integer beyond 64 bits, say)
        return None


def scan(data: bytes | bytearray | memoryview) -> Nesting:
    """Classify ``data`` without recursion (see the module docstring)."""
    raw = bytes(data)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return Nesting(json=False, depth=0)
    stack = bytearray()
    state = _VALUE
    depth = 0
    top: dict[str, Any] = {}
    key: str | None = None  # the current top-level key
    deepest_in: str | None = None
    pos, end = 0, len(raw)
    done = False
    limit = budget(end)
    steps = 0
    while pos < end:
        if steps == limit:  # the rest is not read: nothing wrong so far
            return _result(True, depth, raw, top, deepest_in, steps, complete=False)
        steps += 1
        m = (_NESTED if stack else _TOP).match(raw, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        kind = m.lastgroup
        if kind is None:  # whitespace
            continue
        if done:
            break
        if kind == "open":
            if state not in _VALUE_STATES:
                break
            run = m.group(kind)
            last = run
            if len(run) > 1:
                run = _EMPTY.sub(b"", _STRING.sub(b"", run))
                last = run.rstrip(_STRIP)[-1:]
                run = run.translate(None, _OPENERS)
            stack += run
            state = _LAST[last]
            if len(stack) > depth:
                depth = len(stack)
                deepest_in = key
        elif kind == "close":
            run = m.group(kind).translate(None, _STRIP)
            k = len(run)
            if state not in (_AFTER, _VALUE_OR_CLOSE, _KEY_OR_CLOSE) or k > len(stack):
                break
            if bytes(stack[-k:][::-1]).translate(_CLOSING) != run:
                break
            del stack[-k:]
            state = _AFTER
            done = not stack
        elif kind == "sep":
            sep = m.group(kind)
            if sep == b":":
                if state != _COLON:
                    break
                state = _VALUE
            else:
                if state != _AFTER or not stack:
                    break
                state = _VALUE if stack[-1:] == b"[" else _KEY
        else:  # a scalar
            token = m.group(kind)
            assert token is not None
            if kind == "str" and state in (_KEY, _KEY_OR_CLOSE):
                state = _COLON
                if len(stack) == 1:
                    key = _value(token)
                continue
            if state not in _VALUE_STATES:
                break
            state = _AFTER
            done = not stack
            if len(stack) == 1 and stack == b"{" and key is not None:
                top[key] = _value(token)
    else:
        done = done and state == _AFTER
        return _result(done, depth, raw, top, deepest_in, steps)
    return _result(False, depth, raw, top, deepest_in, steps)


def _result(
    json: bool, depth: int, raw: bytes, top: dict[str, Any], deepest_in: str | None,
    steps: int, *, complete: bool = True,
) -> Nesting:
    id = top.get("id")
    if not isinstance(id, (int, str)) or isinstance(id, bool):
        id = None
    method = top.get("method")
    return Nesting(
        json=json,
        depth=depth,
        complete=complete,
        members=raw.lstrip(_STRIP)[:1] == b"{",
        id=id,
        method=method if isinstance(method, str) else None,
        deepest_in=deepest_in,
        steps=steps,
    )
