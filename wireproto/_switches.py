"""Process-wide switches, read once from the environment at import.

``WIREPROTO_NO_FAST_PATHS=1`` turns off these fast paths so that their
general paths can be tested on their own; behaviour is the same, only slower
(``docs/architecture.md#turning-the-fast-paths-off``):

* the writer's direct writes (``FramedStream.try_send``,
  ``WebSocketStream.try_send``) and the framed stream's writes without
  waiting (``write_nowait`` before ``send``);
* the codec's one-pass decode;
* the peer's future-based waiters;
* the peer's reading of buffered messages without a coroutine each
  (``receive_buffered``), and on asyncio its reader as a bare asyncio task;
* the framer's bulk split of a read into lines;
* the framed stream's reads without a cancel scope of their own (a byte
  stream that wakes on close).
"""

from __future__ import annotations

import os

__all__ = ["FAST_PATHS"]

FAST_PATHS: bool = os.environ.get("WIREPROTO_NO_FAST_PATHS", "").strip().lower() in (
    "",
    "0",
    "false",
    "no",
)
"""Whether the fast paths are on (the default)."""
