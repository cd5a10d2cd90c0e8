"""One-shot wake-ups for the peer's per-message paths (a part of the peer).

An :class:`anyio.Event` looks the backend up on every creation and costs
several event-loop calls per wait; the peer needs one per request. A
:class:`Waiter` is therefore the part of an asyncio future the peer uses
(``done``, ``set_result(None)``, ``await``): on asyncio it *is* a bare
future of the running loop (no Python code of ours per wake-up); on any
other backend it is an :class:`anyio.Event` behind that interface.
:func:`waiter_factory` picks the kind once, while the event loop runs.

A waiter is set once and waited on by at most one task, at most once. Since
cancelling the waiting task cancels a future, whoever sets a waiter checks
``done()`` first (:func:`wake`, or the same two calls inline on hot paths).
The two kinds differ on a waiter that is already set: awaiting a done future
neither yields nor checks for cancellation, while ``anyio.Event.wait`` does
both; the peer never relies on either.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Generator
from typing import Any, Protocol

import anyio

from wireproto._backend import running_asyncio_loop
from wireproto._switches import FAST_PATHS

__all__ = ["Waiter", "waiter_factory", "wake"]


class Waiter(Protocol):
    """What the peer needs of a one-shot event (a subset of ``asyncio.Future``)."""

    def done(self) -> bool:
        """Whether it was set (or, for a future, cancelled)."""

    def set_result(self, result: None, /) -> None:
        """Wake the waiting task (only when not :meth:`done`)."""

    def __await__(self) -> Generator[Any, None, Any]:
        """Wait until it is set."""


class _EventWaiter:
    """A waiter on any backend: an :class:`anyio.Event`."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = anyio.Event()

    def done(self) -> bool:
        return self._event.is_set()

    def set_result(self, result: None, /) -> None:
        self._event.set()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._event.wait().__await__()


def wake(waiter: Waiter) -> None:
    """Set ``waiter`` unless it is done already (set, or its waiter was cancelled)."""
    if not waiter.done():
        waiter.set_result(None)


def waiter_factory() -> Callable[[], Waiter]:
    """Return the cheapest waiter constructor for the running event loop."""
    if not FAST_PATHS:
        return _EventWaiter
    loop = running_asyncio_loop()
    if loop is None:  # trio, or an asyncio loop not running this task
        return _EventWaiter
    return functools.partial(asyncio.Future, loop=loop)
