"""``--trace FILE``: record every message in both directions as JSON Lines.

:class:`TraceStream` wraps any ``ObjectStream[bytes]`` of whole messages and
forwards everything unchanged; each message is also written to the trace as
one line::

    {"t": 0.012345, "dir": "send", "msg": {...}}

``t`` is seconds since the trace was opened; ``dir`` is ``send`` for what
this side wrote and ``recv`` for what it read. A message that is not valid
JSON is recorded as a string under ``"text"`` instead of ``"msg"``. Each line
is flushed as it is written, so a trace survives a crash.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import BinaryIO

import anyio.abc
import msgspec

__all__ = ["TraceStream"]

_encode = msgspec.json.Encoder().encode


class TraceStream(anyio.abc.ObjectStream[bytes]):
    """Forward to ``inner``; write each message to ``sink`` (a binary file).

    Args:
        inner: the stream carrying whole messages.
        sink: where the JSON Lines go (not closed by this stream).
    """

    def __init__(self, inner: anyio.abc.ObjectStream[bytes], sink: BinaryIO) -> None:
        self.inner = inner
        self.sink = sink
        self._t0 = time.monotonic()

    def record(self, direction: str, message: bytes) -> None:
        """Write one trace line for ``message`` going in ``direction``."""
        body = message.rstrip(b"\r\n")
        head = b'{"t":%.6f,"dir":"%s",' % (time.monotonic() - self._t0, direction.encode())
        try:
            msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):  # (deep JSON is kept as text too)
            line = head + b'"text":' + _encode(body.decode("utf-8", "replace")) + b"}\n"
        else:
            line = head + b'"msg":' + body + b"}\n"
        self.sink.write(line)
        self.sink.flush()

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
