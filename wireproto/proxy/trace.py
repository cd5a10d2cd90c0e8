"""The ``--trace`` JSON Lines format, written by a relay observer or a traced stream.

Each message is one line::

    {"t": 0.012345, "dir": "send", "msg": {...}}

``t`` is seconds since the trace was opened; ``dir`` is ``send`` for what the
client wrote and ``recv`` for what it read (a relay records the same
directions as its client's own trace would); ``msg`` holds the message's
bytes exactly as they went (a message that is not JSON is a string under
``"text"`` instead). Each line is flushed as it is written, so a trace
survives a crash.
"""

from __future__ import annotations

import time
from typing import BinaryIO

import msgspec

from wireproto.proxy.relay import RelayedMessage

__all__ = ["TraceWriter"]

_encode = msgspec.json.Encoder().encode


class TraceWriter:
    """Write trace lines to ``sink`` (a binary file, not closed here).

    Calling the writer with a :class:`~wireproto.proxy.relay.RelayedMessage`
    records it (``dir`` is the message's direction, ``t`` its relay time), so
    it is a relay observer.
    """

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self._t0 = time.monotonic()

    def __call__(self, message: RelayedMessage) -> None:
        self.record(message.direction.value, message.data, message.time)

    def record(self, direction: str, message: bytes, at: float | None = None) -> None:
        """Write one trace line for ``message`` going in ``direction`` (read at ``at``)."""
        body = message.rstrip(b"\r\n")
        t = (time.monotonic() if at is None else at) - self._t0
        head = b'{"t":%.6f,"dir":"%s",' % (t, direction.encode())
        try:
            msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):  # (deep JSON is kept as text too)
            line = head + b'"text":' + _encode(body.decode("utf-8", "replace")) + b"}\n"
        else:
            line = head + b'"msg":' + body + b"}\n"
        self.sink.write(line)
        self.sink.flush()
