"""Every message the inspector sees, numbered and timed, and who is told about it.

A :class:`Recorder` keeps one :class:`Record` per message in arrival order.
Each record is encoded once, as the frame the page receives::

    {"type":"record","seq":7,"t":0.012345,"dir":"recv","size":120,"msg":{...}}

``dir`` follows the trace format of ``connect --trace``: ``send`` is what the
inspector (the client side) wrote to the agent, ``recv`` what it read. A
message that is not JSON is kept under ``"text"`` instead of ``"msg"``.
Listeners are plain callables run synchronously on each new record; they
must not block (the page connections put the frame in a bounded queue).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from wireproto.proxy.relay import RelayedMessage

__all__ = ["DIRECTIONS", "Record", "Recorder", "load_trace", "trace_line"]

DIRECTIONS = ("send", "recv")
"""``send``: client -> agent; ``recv``: agent -> client."""

_encode = msgspec.json.encode
_decode = msgspec.json.decode


@dataclass(frozen=True)
class Record:
    """One message as recorded.

    Attributes:
        seq: its position (0-based) in the recording.
        t: seconds since the recording started.
        dir: ``send`` or ``recv``.
        body: the message's JSON text (or the raw text when it is not JSON).
        is_json: whether ``body`` is JSON.
        frame: the page's ``record`` frame for it.
    """

    seq: int
    t: float
    dir: str
    body: bytes
    is_json: bool
    frame: bytes

    def message(self) -> Any:
        """The message decoded to builtins (a string when it is not JSON)."""
        if self.is_json:
            return _decode(self.body)
        return self.body.decode("utf-8", "replace")


def _is_json(body: bytes) -> bool:
    try:
        _decode(body)
    except (msgspec.DecodeError, RecursionError):  # (nested too deeply: shown as text)
        return False
    return True


def _frame(seq: int, t: float, direction: str, body: bytes, is_json: bool) -> bytes:
    head = b'{"type":"record","seq":%d,"t":%.6f,"dir":"%s","size":%d,' % (
        seq, t, direction.encode(), len(body))
    if is_json:
        return head + b'"msg":' + body + b"}"
    return head + b'"text":' + _encode(body.decode("utf-8", "replace")) + b"}"


class Recorder:
    """The recording: records in order, and listeners told of each new one.

    Args:
        limit: the most records kept; the oldest are dropped beyond it (the
            page is told how many were dropped through ``dropped``).
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self.records: list[Record] = []
        self.dropped = 0
        self._listeners: set[Callable[[Record], None]] = set()
        self._t0 = time.monotonic()
        self._seq = 0

    def add(self, direction: str, message: bytes, t: float | None = None) -> Record:
        """Record ``message`` going in ``direction`` (now, or at ``t`` seconds)."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
        body = bytes(message).rstrip(b"\r\n")
        when = time.monotonic() - self._t0 if t is None else t
        is_json = _is_json(body)
        record = Record(self._seq, when, direction, body, is_json,
                        _frame(self._seq, when, direction, body, is_json))
        self._seq += 1
        self.records.append(record)
        if len(self.records) > self.limit:
            cut = len(self.records) - self.limit
            del self.records[:cut]
            self.dropped += cut
        for listener in list(self._listeners):
            listener(record)
        return record

    def observe(self, message: RelayedMessage) -> None:
        """Record a message the proxy's relay passed on (an observer of
        :func:`~wireproto.proxy.relay.relay_messages`)."""
        self.add(message.direction.value, message.data, t=message.time - self._t0)

    def get(self, seq: int) -> Record | None:
        """The record numbered ``seq``, if it is still kept."""
        index = seq - self.dropped
        if 0 <= index < len(self.records):
            return self.records[index]
        return None

    def subscribe(self, listener: Callable[[Record], None]) -> list[Record]:
        """Call ``listener`` for every new record; returns the records so far.

        Taking the snapshot and subscribing happen together, so the listener
        sees exactly the records after the snapshot.
        """
        self._listeners.add(listener)
        return list(self.records)

    def unsubscribe(self, listener: Callable[[Record], None]) -> None:
        """Stop calling ``listener``."""
        self._listeners.discard(listener)

    def __iter__(self) -> Iterator[Record]:
        return iter(list(self.records))


def trace_line(record: Record) -> bytes:
    """``record`` as one line of the ``--trace`` JSON Lines format."""
    head = b'{"t":%.6f,"dir":"%s",' % (record.t, record.dir.encode())
    if record.is_json:
        return head + b'"msg":' + record.body + b"}\n"
    return head + b'"text":' + _encode(record.body.decode("utf-8", "replace")) + b"}\n"


class _TraceLine(msgspec.Struct):
    t: float = 0.0
    dir: str = "recv"
    msg: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b""))
    text: str | None = None


_line_decoder = msgspec.json.Decoder(_TraceLine)


def load_trace(lines: Iterable[bytes], recorder: Recorder) -> list[str]:
    """Add every line of a ``--trace`` file to ``recorder``.

    Returns:
        one problem per line that could not be read (``line N: reason``);
        such lines are skipped, and blank lines ignored.
    """
    problems: list[str] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = _line_decoder.decode(raw)
        except msgspec.DecodeError as exc:
            problems.append(f"line {number}: not a trace line ({exc})")
            continue
        if line.dir not in DIRECTIONS:
            problems.append(f"line {number}: unknown direction {line.dir!r}")
            continue
        if len(line.msg):
            recorder.add(line.dir, bytes(line.msg), t=line.t)
        elif line.text is not None:
            recorder.add(line.dir, line.text.encode(), t=line.t)
        else:
            problems.append(f"line {number}: neither \"msg\" nor \"text\"")
    return problems
