"""``--trace FILE``: record every message in both directions as JSON Lines.

:class:`TraceStream` wraps any ``ObjectStream[bytes]`` of whole messages and
forwards everything unchanged; each message is also written to the trace as
one line::

    {"t": 0.012345, "dir": "send", "msg": {...}}

``t`` is seconds since the trace was opened; ``dir`` is ``send`` for what
this side wrote and ``recv`` for what it read. A message that is not valid
JSON is recorded as a string under ``"text"`` instead of ``"msg"``. Each line
is flushed as it is written, so a trace survives a crash.

:class:`~wireproto.proxy.TraceWriter` writes the lines; it is also a relay
observer, which is how ``wireproto proxy --trace`` records the traffic it
relays, in the same format and directions as the client's own trace would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

import anyio.abc

from wireproto.proxy.trace import TraceWriter

__all__ = ["TraceStream", "TraceWriter"]


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
