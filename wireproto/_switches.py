"""Process-wide switches, read once from the environment at import.

``WIREPROTO_NO_FAST_PATHS=1`` turns off the four fast paths (the writer's
direct writes, the codec's one-pass decode, the peer's future-based waiters,
the peer's reading of buffered messages without a coroutine each) so that
their general paths can be tested on their own; behaviour is the same, only
slower (``docs/architecture.md#turning-the-fast-paths-off``).
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
