"""``--trace FILE``: record every message in both directions as JSON Lines.

:class:`TraceStream` wraps any ``ObjectStream[bytes]`` of whole messages and
forwards everything unchanged; each message is also written to the trace as
one line::

    {"t": 0.012345, "dir": "send", "msg": {...}}

``t`` is seconds since the trace was opened; ``dir`` is ``send`` for what
this side wrote and ``recv`` for what it read. A message that is not valid
JSON is recorded as a string under ``"text"`` instead of ``"msg"``. Each line
is flushed as it is written, so a trace survives a crash.

:class:`TraceWriter` writes the lines; it is also a relay observer
(:mod:`wireproto.proxy.relay`), which is how ``wireproto proxy --trace``
records the traffic it relays, in the same format and directions as the
client's own trace would.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO

import anyio.abc
import msgspec

__all__ = ["TraceStream", "TraceWriter"]

if TYPE_CHECKING:
    from wireproto.proxy.relay import RelayedMessage

_encode = msgspec.json.Encoder().encode


class TraceWriter:
    """Write trace lines to ``sink`` (a binary file, not closed here).

    Calling the writer with a :class:`~wireproto.proxy.relay.RelayedMessage`
    records it (``dir`` is the message's direction, ``t`` its relay time).
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
        except msgspec.DecodeError:
            line = head + b'"text":' + _encode(body.decode("utf-8", "replace")) + b"}\n"
        else:
            line = head + b'"msg":' + body + b"}\n"
        self.sink.write(line)
        self.sink.flush()


class TraceStream(anyio.abc.ObjectStream[bytes]):
    """Forward to ``inner``; write each message to ``sink`` (a binary file).

    Args:
        inner: the stream carrying whole messages.
        sink: where the JSON Lines go (not closed by this stream).
    """

    def __init__(self, inner: anyio.abc.ObjectStream[bytes], sink: BinaryIO) -> None:
        self.inner = inner
        self.sink = sink
        self.writer = TraceWriter(sink)

    def record(self, direction: str, message: bytes) -> None:
        """Write one trace line for ``message`` going in ``direction``."""
        self.writer.record(direction, message)

    async def receive(self) -> bytes:
        """Receive from the inner stream and record it."""
        message = await self.inner.receive()
        self.record("recv", message)
        return message

    async def send(self, item: bytes) -> None:
        """Record ``item`` and send it."""
        self.record("send", item)
        await self.inner.send(item)

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Record and send several messages, in order."""
        for item in items:
            await self.send(item)

    async def send_eof(self) -> None:
        """Forward the end of output."""
        await self.inner.send_eof()

    async def aclose(self) -> None:
        """Close the inner stream."""
        await self.inner.aclose()
