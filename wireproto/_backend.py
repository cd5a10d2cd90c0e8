"""Which event loop runs the current task: asked in one place.

The fast paths (the peer's future-based waiters, the stdio reader kept
registered with the loop, the peer's bare reader task) exist only on asyncio,
and the WebSocket transport picks its implementation per backend; they all
ask here.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Literal

import anyio

if sys.version_info < (3, 11):  # pragma: no cover (installed with anyio there)
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]
else:
    BaseExceptionGroup = BaseExceptionGroup  # (re-exported for the library)

__all__ = [
    "BaseExceptionGroup", "current_backend", "join_task", "raise_as_group", "running_asyncio_loop"
]


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


async def join_task(task: asyncio.Task[None]) -> BaseException | None:
    """Wait for a bare asyncio ``task`` (shielded); return what it raised, if anything.

    (For the tasks the library starts without anyio to save its per-task
    bookkeeping, e.g. the peer's reader: their owner ends and joins them.)
    """
    if not task.done():
        with anyio.CancelScope(shield=True):
            await asyncio.wait((task,))
    return None if task.cancelled() else task.exception()


def current_backend() -> Literal["asyncio", "trio"]:
    """``"asyncio"`` when an asyncio task is running, else ``"trio"``."""
    return "asyncio" if running_asyncio_loop() is not None else "trio"


def raise_as_group(failed: BaseException | None, group: BaseExceptionGroup[BaseException] | None
                   ) -> None:
    """Raise what a bare task joined by :func:`join_task` raised (``failed``) the way a task
    group would: in an exception group, with the errors of the owner's ``group`` if any;
    else ``group`` itself; nothing when both are ``None``."""
    if failed is not None:
        inner = [failed, *(group.exceptions if group is not None else ())]
        raise BaseExceptionGroup("unhandled errors in a TaskGroup", inner)
    if group is not None:
        raise group
