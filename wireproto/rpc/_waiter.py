"""One-shot wake-ups for the peer's per-message paths (a part of the peer).

An :class:`anyio.Event` looks the backend up on every creation and costs
several event-loop calls per wait; the peer needs one per request. On
asyncio a :class:`Waiter` is a bare future of the running loop instead; on
any other backend it is an :class:`anyio.Event`. :func:`waiter_factory`
picks the kind once, while the event loop runs.

A waiter is set once and waited on by at most one task, at most once. The
two kinds differ on a waiter that is already set: awaiting a done future
neither yields nor checks for cancellation, while ``anyio.Event.wait`` does
both; the peer never relies on either.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from wireproto._backend import running_asyncio_loop
from wireproto._switches import FAST_PATHS

__all__ = ["Waiter", "waiter_factory"]


class Waiter(Protocol):
    """What the peer needs of a one-shot event."""

    def set(self) -> None:
        """Wake the waiting task (idempotent)."""

    def wait(self) -> Awaitable[Any]:
        """Return an awaitable that completes once :meth:`set` was called."""


class _FutureWaiter:
    """A waiter that is an asyncio future (cancelling the wait cancels it)."""

    __slots__ = ("_future",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._future: asyncio.Future[None] = asyncio.Future(loop=loop)

    def set(self) -> None:
        future = self._future
        if not future.done():
            future.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        return self._future


def waiter_factory() -> Callable[[], Waiter]:
    """Return the cheapest waiter constructor for the running event loop."""
    if not FAST_PATHS:
        return anyio.Event
    loop = running_asyncio_loop()
    if loop is None:  # trio, or an asyncio loop not running this task
        return anyio.Event
    return functools.partial(_FutureWaiter, loop)
