"""The peer's inbox: notifications handled in arrival order (a part of the peer).

Theory of operation
-------------------
The reader puts every routed notification in the :class:`Inbox`, and one
task, :meth:`Inbox._run`, handles them one at a time in arrival order (no
task per notification, so streamed updates never finish out of order). The
queue is a plain deque: putting a notification costs an append, and the
task, when idle, is woken once for everything queued since.

At most ``size`` notifications wait unhandled; beyond that the reader waits
(:meth:`Inbox.put`), so a flood of notifications slows the reading of more
input instead of growing memory.

Other work can be queued behind the notifications received so far, without
a bound and without making the reader wait: a callback (:meth:`Inbox.later`)
runs once they were handled. The peer uses it to deliver a response only
after the notifications that preceded it on the wire, and for
:meth:`~wireproto.rpc.peer.Peer.call_in_order`. :attr:`Inbox.busy` says
whether anything is queued or being handled, so the peer knows when nothing
is ahead. It and :attr:`Inbox.handling` change only when something is queued
and when the task parks, not per notification: the task yields only inside
a handler (or to park), so no other task sees the difference.

A notification handler's exception is logged and the inbox goes on; params
that do not decode are logged and dropped (notifications are never answered).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc

from wireproto.errors import InvalidMessage
from wireproto.jsonrpc.codec import Call, Decoder
from wireproto.jsonrpc.messages import Notification
from wireproto.rpc._waiter import Waiter, wake
from wireproto.rpc.router import Route

__all__ = ["Inbox", "run_logged"]

log = logging.getLogger("wireproto.rpc.peer")  # one logger for everything the peer does

_Item = tuple[Route | None, Any]  # (route, notification) or (None, callback)


def run_logged(callback: Callable[[], None]) -> None:
    """Call ``callback``; log what it raises (callbacks queued in order must not)."""
    try:
        callback()
    except Exception:
        log.exception("in-order callback failed")


class Inbox:
    """Notifications and ordered callbacks, handled by one task in arrival order.

    Args:
        decoder: decodes each notification's params for its route.
        size: notifications waiting unhandled before :meth:`put` waits.
        name: a label for log lines.
        new_waiter: makes the one-shot wake-ups of the task.
    """

    def __init__(
        self, decoder: Decoder, size: int, name: str, new_waiter: Callable[[], Waiter]
    ) -> None:
        self._decoder = decoder
        self._size = size
        self.name = name
        self._new_waiter = new_waiter
        self._items: deque[_Item] = deque()
        self._notes = 0  # notifications queued, not yet taken by the task
        self._wake: Waiter | None = None  # set to wake the idle task
        self._room: anyio.Event | None = None  # set when a full inbox has room again
        self.busy = False
        """Whether items are queued or being handled (a notification until its
        handler returned)."""
        self.handling = False
        """Whether the task is handling what was queued (seen from another task,
        or from a handler: inside a notification handler)."""
        self.task_id: int | None = None
        """The id of the inbox task (once it runs)."""

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start the task in ``tg``, in a cancel scope of its own (see :meth:`stop`)."""
        self._scope = anyio.CancelScope()
        tg.start_soon(self._scoped)

    def stop(self) -> None:
        """End the task (it works on after the input ended, until this is called)."""
        self._scope.cancel()

    async def _scoped(self) -> None:
        try:
            with self._scope:
                await self._run()
        finally:  # (stopped in a handler, say: what is left is queued, nothing is handled)
            self.handling = False
            self.busy = bool(self._items)

    # --------------------------------------------------------------- putting

    def try_put(self, route: Route, msg: Notification | Call) -> bool:
        """Queue a notification for ``route`` unless the inbox is full; return whether queued."""
        if self._notes >= self._size:
            return False
        self._notes += 1
        self.busy = True
        self._items.append((route, msg))
        waiter = self._wake
        if waiter is not None:
            self._wake = None
            if not waiter.done():
                waiter.set_result(None)
        return True

    async def put(self, route: Route, msg: Notification | Call) -> None:
        """Queue a notification for ``route``, waiting while the inbox is full."""
        while not self.try_put(route, msg):
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()

    def later(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` after everything queued so far (it must not raise)."""
        self.busy = True
        self._items.append((None, callback))
        waiter = self._wake
        if waiter is not None:
            self._wake = None
            wake(waiter)

    # ------------------------------------------------------------------ task

    async def _run(self) -> None:
        self.task_id = anyio.get_current_task().id
        items = self._items
        popleft = items.popleft
        decode_params = self._decoder.decode_params
        self.handling = True
        while True:
            if not items:
                self.busy = self.handling = False
                waiter = self._wake = self._new_waiter()
                await waiter
                self.handling = True
                continue
            route, msg = popleft()
            if route is None:
                msg()
                continue
            self._notes -= 1
            room = self._room
            if room is not None:
                self._room = None
                room.set()
            try:
                params: Any = (
                    msg.params  # (decoded with the envelope)
                    if isinstance(msg, Call)
                    else decode_params(msg.method, msg.params, route.params_type, route.decode)
                )
                await route.handler(params)
            except InvalidMessage as exc:
                log.warning("%s: %s dropped: %s %s", self.name, msg.method, exc, exc.data)
            except Exception:
                log.exception("%s: notification handler for %s failed", self.name, msg.method)
