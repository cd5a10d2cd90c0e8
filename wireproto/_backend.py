"""Which event loop runs the current task: asked in one place.

The fast paths (the peer's future-based waiters, the stdio reader kept
registered with the loop) exist only on asyncio, and the WebSocket transport
picks its implementation per backend; they all ask here.
"""

from __future__ import annotations

import asyncio
from typing import Literal

__all__ = ["current_backend", "running_asyncio_loop"]


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop when the current task is an asyncio task, else ``None``.

    (``None`` under trio, and on an asyncio loop that is not running this
    task, e.g. trio in guest mode.)
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop if asyncio.current_task() is not None else None


def current_backend() -> Literal["asyncio", "trio"]:
    """``"asyncio"`` when an asyncio task is running, else ``"trio"``."""
    return "asyncio" if running_asyncio_loop() is not None else "trio"
