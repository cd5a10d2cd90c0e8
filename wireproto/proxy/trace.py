"""The ``--trace`` JSON Lines format, written by a relay observer or a traced stream.

Each message is one line::

    {"t": 0.012345, "dir": "send", "msg": {...}}

``t`` is seconds since the trace was opened; ``dir`` is ``send`` for what the
client wrote and ``recv`` for what it read (a relay records the same
directions as its client's own trace would); ``msg`` holds the message's
bytes exactly as they went (a message that is not JSON, or nests deeper than
the decoder follows, is a string under ``"text"`` instead). Each line, or
each batch of lines a relay read together, is flushed as it is written,
before the messages are passed on, so a trace survives a crash.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from typing import BinaryIO

import msgspec

from wireproto.proxy.relay import RelayedMessage

__all__ = ["TraceWriter"]

_encode = msgspec.json.Encoder().encode
_check = msgspec.json.Decoder(msgspec.Raw).decode  # checks the syntax, builds nothing
_check_lines = msgspec.json.Decoder(msgspec.Raw).decode_lines
_PLAIN = frozenset((b"{", b"["))  # how a message starts when it is not blank


class TraceWriter:
    """Write trace lines to ``sink`` (a binary file, not closed here).

    Calling the writer with a :class:`~wireproto.proxy.relay.RelayedMessage`
    records it (``dir`` is the message's direction, ``t`` its relay time), so
    it is a relay observer; it takes a relay's batches too (:meth:`batch`).
    """

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self._t0 = time.monotonic()

    @property
    def sink(self) -> BinaryIO:
        """Where the trace lines go (each line or batch flushed at once)."""
        return self._sink

    @sink.setter
    def sink(self, sink: BinaryIO) -> None:
        self._sink = sink
        self._write = _direct(sink)

    def __call__(self, message: RelayedMessage) -> None:
        self.record(message.direction.value, message.data, message.time)

    def record(self, direction: str, message: bytes, at: float | None = None) -> None:
        """Write one trace line for ``message`` going in ``direction`` (read at ``at``)."""
        self._write(self._line(direction, message, time.monotonic() if at is None else at))

    def batch(self, direction: str, messages: list[bytes], at: float) -> None:
        """Write the lines of ``messages``, read together at ``at``, with one flush."""
        if len(messages) == 1:  # (the usual batch: a message arrives alone)
            self._write(self._line(direction, messages[0], at))
            return
        joined = b"\n".join(messages)
        if plain_lines(joined) and _all_json(joined, messages):  # (whole JSON lines)
            head = b'{"t":%.6f' % (at - self._t0) + (_HEADS.get(direction)
                                                     or _heads(direction))[0]
            self._write(b"".join((head, (b"}\n" + head).join(messages), b"}\n")))
            return
        self._write(b"".join([self._line(direction, message, at) for message in messages]))

    def _line(self, direction: str, message: bytes, at: float) -> bytes:
        """The trace line of ``message``: under ``msg`` if it is one JSON value the
        decoder follows, its strings valid UTF-8, else its text under ``text``."""
        body = message.rstrip(b"\r\n")
        as_msg, as_text = _HEADS.get(direction) or _heads(direction)
        try:
            _check(body)  # the syntax; it skips over the contents of strings:
            if not body.isascii():
                body.decode()  # so they must be valid UTF-8 too
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            text = _encode(body.decode("utf-8", "replace"))
            return b'{"t":%.6f%s%s}\n' % (at - self._t0, as_text, text)
        return b'{"t":%.6f%s%s}\n' % (at - self._t0, as_msg, body)


def _direct(sink: BinaryIO) -> Callable[[bytes], None]:
    """How to write ``data`` to ``sink`` and flush it: one ``os.write`` to the
    file descriptor under a buffered file (after what others wrote to it:
    flushing an empty buffer writes nothing), else write and flush."""
    plain_file = isinstance(sink, io.BufferedWriter) and isinstance(sink.raw, io.FileIO)
    fd = sink.fileno() if plain_file else -1
    flush = sink.flush

    def write_flush(data: bytes) -> None:
        sink.write(data)
        flush()

    def write_fd(data: bytes) -> None:
        flush()
        written = os.write(fd, data)
        while written < len(data):  # (a full disk raises; a short write is rare)
            written += os.write(fd, memoryview(data)[written:])

    return write_flush if fd < 0 else write_fd


def plain_lines(data: bytes) -> bool:
    """Whether every line of ``data`` starts like a JSON-RPC message (``{`` or ``[``: none
    is blank), with no ``\\r``: messages to pass on as they are, split at ``\\n``."""
    return (data[:1] in _PLAIN and b"\r" not in data
            and data.count(b"\n") == data.count(b"\n{") + data.count(b"\n["))


def _all_json(joined: bytes, messages: list[bytes]) -> bool:
    """Whether each of ``messages``, plain lines joined with ``\\n``, is one JSON value
    whose strings are valid UTF-8 (what ``TraceWriter._line`` says of each, in one pass:
    the values found must be the messages themselves, length for length)."""
    try:
        if not joined.isascii():
            joined.decode()
        return list(map(len, _check_lines(joined))) == list(map(len, messages))
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False


def _heads(direction: str) -> tuple[bytes, bytes]:
    """What follows ``t`` in a line going in ``direction``, before a JSON message and
    before a text."""
    part = b',"dir":' + _encode(direction)
    return part + b',"msg":', part + b',"text":'


_HEADS = {direction: _heads(direction) for direction in ("send", "recv")}
