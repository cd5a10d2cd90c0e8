"""In-memory transport: two linked message streams, for tests and embedding.

Each direction is a bounded anyio memory channel carrying whole messages, so
a slow reader makes the writer wait exactly as a full pipe would. Like every
transport, it delivers a message without the ``\\n`` terminator the codec
appends (a trailing newline is dropped on send; nothing else is touched).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream
from anyio.streams.stapled import StapledObjectStream

__all__ = ["MemoryStream", "memory_pair"]


class MemoryStream(StapledObjectStream[bytes]):
    """One end of an in-memory connection (an ``ObjectStream[bytes]``)."""

    async def send(self, item: bytes) -> None:
        """Send one message (without its trailing ``\\n``), waiting while the buffer is full."""
        await self.send_stream.send(item[:-1] if item.endswith(b"\n") else item)

    def try_send(self, item: bytes) -> bool:
        """Send one message if the buffer has room; return whether it was taken."""
        try:
            cast(MemoryObjectSendStream[bytes], self.send_stream).send_nowait(
                item[:-1] if item.endswith(b"\n") else item
            )
        except anyio.WouldBlock:
            return False
        return True

    @property
    def needs_flush(self) -> bool:
        """Always false: a message is taken whole or not at all."""
        return False

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Send several messages in order."""
        send = self.send_stream.send
        for item in items:
            await send(item[:-1] if item.endswith(b"\n") else item)


def memory_pair(max_buffer: int = 64) -> tuple[MemoryStream, MemoryStream]:
    """Return two connected streams; what one sends, the other receives.

    Args:
        max_buffer: messages buffered per direction before a sender waits.
    """
    a_send, b_recv = anyio.create_memory_object_stream[bytes](max_buffer)
    b_send, a_recv = anyio.create_memory_object_stream[bytes](max_buffer)
    return MemoryStream(a_send, a_recv), MemoryStream(b_send, b_recv)
