"""Inbound requests: admission, handler tasks, answers (a part of the peer).

Theory of operation
-------------------
The peer's reader hands every inbound request to :meth:`HandlerPool.try_admit`
(or :meth:`HandlerPool.admit`), which never waits for a handler:

=================================  ==========================================
no route, or a notification route  answered ``-32601`` at once
fewer than ``max_concurrency``     queued, and a handler task called for
plus ``backlog`` admitted          (a parked one when there is one: cheaper
                                   than a new task) unless one is already
                                   on its way or ``max_concurrency`` are busy
otherwise                          answered ``overload_code`` at once
=================================  ==========================================

A handler task takes the oldest queued request, runs it, answers it and takes
the next one, parking only when the queue is empty. Most handlers finish
without waiting, so one task usually serves a whole burst of requests
without a task switch per request. So that a handler that *does* wait holds
up nobody, a task that starts a request while others are queued first calls
one more task (when fewer than ``max_concurrency`` are busy and none is on
its way): requests start in arrival order, each at most one event-loop
iteration after the one before it started waiting. At most
``max_concurrency`` requests are handled at once; the rest wait in the queue
(the backlog, :attr:`HandlerPool.waiting`).

A handler does not start a request while the writer holds its byte budget
(a peer that stops reading cannot make this side produce more than the
requests already running). Each request runs in its handler task's cancel scope, registered by id
while it runs so that an inbound cancellation (:meth:`HandlerPool.cancel`)
can cancel it (or, when its route has a ``cancel`` callback, tell it so:
the handler then ends by itself); a request still queued is removed instead. A task
keeps its scope from one request to the next (entering a scope costs more
than the rest of a cheap request) until a request is cancelled; it then
answers that request outside the spent scope and goes on in a new one.
Every admitted request is answered exactly once: with its result, its
:class:`~wireproto.errors.RpcError`, ``-32602`` for params that do not
decode, ``-32603`` (details only in the log) for any other exception, or
``-32800`` when it was cancelled without returning a result (not at all when
the dialect says a cancelled request is never answered, e.g. MCP).

Closing (:meth:`HandlerPool.close`) cancels every running request and makes
the queued requests, and any admitted later, answer ``-32800``
without running (whatever the dialect: the peer did not cancel them). The
answers are queued for the writer, which flushes them within the peer's
budget.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import anyio
import anyio.abc
from msgspec import UNSET

from wireproto.errors import ConnectionClosed, InvalidMessage, RpcError
from wireproto.jsonrpc.codec import Call, Decoder, Dialect, Encoder
from wireproto.jsonrpc.messages import ErrorCode, Id, Request, Response
from wireproto.rpc._waiter import Waiter, wake
from wireproto.rpc._writer import Item, Writer
from wireproto.rpc.router import NO_REPLY, Reply, Route

__all__ = ["HandlerPool"]

log = logging.getLogger("wireproto.rpc.peer")  # one logger for everything the peer does


Job = tuple[Request | Call, Route]
"""An admitted request and its route."""


class HandlerPool:
    """The handler tasks of one peer and the bounded queue in front of them.

    Args:
        writer: where answers go.
        decoder / encoder: the peer's codec.
        max_concurrency: requests handled at once.
        backlog: requests waiting beyond ``max_concurrency``.
        overload_code: the error code answering a request beyond the backlog.
        name: a label for log lines.
    """

    def __init__(
        self,
        writer: Writer,
        decoder: Decoder,
        encoder: Encoder,
        *,
        max_concurrency: int,
        backlog: int,
        overload_code: int,
        name: str,
    ) -> None:
        self._writer = writer
        self._decoder = decoder
        self._encoder = encoder
        self._dialect: Dialect = encoder.dialect
        self.max_concurrency = max_concurrency
        self.backlog_size = backlog
        self.overload_code = overload_code
        self.name = name
        # request id -> its task's scope; a null or duplicate id gets a key of its own
        self._running: dict[Hashable, anyio.CancelScope] = {}
        # request id -> its route's cancel callback and params (routes that have one)
        self._told: dict[Hashable, tuple[Callable[[Any], None], Any]] = {}
        self._failed_tells: set[int] = set()  # ids of cancel callbacks that raised
        self._queue: deque[Job] = deque()  # admitted, not started yet
        self._busy = 0  # handler tasks holding a request
        self._coming = False  # a task was called for and has not looked at the queue yet
        self._idle: list[Waiter] = []  # the wake-ups of parked handler tasks
        self._started = 0  # handler tasks started (the first one does not park: _serve)
        self._cancels = 0  # scopes cancelled so far (none: no scope needs checking)
        self._quiet: anyio.Event | None = None  # set when no request is being handled
        self._closing = False
        self._tg: anyio.abc.TaskGroup | None = None

    def start(self, tg: anyio.abc.TaskGroup, waiter: Callable[[], Waiter]) -> None:
        """Run handler tasks in ``tg`` from now on, parking them with ``waiter``s."""
        self._tg = tg
        self._new_waiter = waiter

    @property
    def running(self) -> int:
        """Requests being handled, or queued to start without waiting for a
        free handler (a task is on its way); at most ``max_concurrency``."""
        return min(self._busy + len(self._queue), self.max_concurrency)

    @property
    def waiting(self) -> int:
        """Requests in the backlog (beyond ``max_concurrency``)."""
        return self._busy + len(self._queue) - self.running

    # ------------------------------------------------------------ admission

    def try_admit(self, msg: Request | Call, route: Route | None) -> bool:
        """Queue ``msg`` for a handler task if it may run; ``False``: :meth:`admit` answers it."""
        queue = self._queue
        if (
            route is None
            or route.notification
            or self._closing
            or self._busy + len(queue) >= self.max_concurrency + self.backlog_size
        ):
            return False
        queue.append((msg, route))
        if not self._coming and self._busy < self.max_concurrency:
            self._call_task()
        return True

    async def admit(self, msg: Request | Call, route: Route | None) -> None:
        """Queue ``msg`` or answer it at once (see the table above)."""
        if self.try_admit(msg, route):
            return
        if route is None or route.notification:
            await self.reply_error(
                msg.id, ErrorCode.METHOD_NOT_FOUND,
                self._dialect.method_not_found.format(method=msg.method),
            )
        elif self._closing:
            await self._reply_cancelled(msg.id, closing=True)
        else:
            log.warning("%s: overloaded, refusing %s", self.name, msg.method)
            await self.reply_error(msg.id, self.overload_code, "Server overloaded")

    def _call_task(self) -> None:
        """Wake a parked handler task, or start one, to serve the queue."""
        self._coming = True
        if self._idle:  # far cheaper than a new task
            wake(self._idle.pop())
        else:
            assert self._tg is not None
            self._started += 1
            self._tg.start_soon(self._serve)

    async def cancel(self, rid: Id) -> bool:
        """Cancel the request with id ``rid``; return whether there was one.

        A running handler is cancelled (and answers for itself), or told
        by its route's ``cancel`` callback (cancelled after all when the
        callback raises: logged, the connection goes on); a request still
        queued is removed and answered ``-32800`` (when the dialect answers
        cancelled requests).
        """
        key = (type(rid), rid)
        told = self._told.get(key)
        if told is not None:
            tell, params = told
            try:
                tell(params)
                return True
            except Exception:  # (never the connection's problem) the handler is cancelled
                if id(tell) in self._failed_tells:  # (by id: a callback need not be hashable)
                    log.debug("%s: cancel callback failed again", self.name, exc_info=True)
                else:
                    self._failed_tells.add(id(tell))
                    log.exception("%s: cancel callback %r failed; cancelling the handler",
                                  self.name, tell)
        scope = self._running.get(key)
        if scope is not None:
            self._cancels += 1
            scope.cancel()
            return True
        for i, (req, _) in enumerate(self._queue):
            if req.id == rid and type(req.id) is type(rid):
                del self._queue[i]
                self._check_quiet()
                await self._reply_cancelled(rid)
                return True
        return False

    def close(self) -> None:
        """Cancel every running request; later and queued ones answer ``-32800``."""
        self._closing = True
        for scope in self._running.values():
            self._cancels += 1
            scope.cancel()

    async def wait_idle(self) -> None:
        """Wait until no request is being handled or queued."""
        while self._busy or self._queue:
            if self._quiet is None:
                self._quiet = anyio.Event()
            await self._quiet.wait()

    def _check_quiet(self) -> None:
        if self._quiet is not None and not self._busy and not self._queue:
            self._quiet.set()
            self._quiet = None

    # ------------------------------------------------------------- handling

    async def _serve(self) -> None:
        # Called for by _call_task; serves the queue until the peer closes
        # (at most max_concurrency such tasks are ever busy). One cancel
        # scope serves every request the task handles until one of them is
        # cancelled (a scope per request would cost more than the rest of a
        # cheap request); the task then answers it and starts a new scope.
        queue = self._queue
        writer = self._writer
        self._coming = False
        job: Job | None = None
        try:
            while True:
                scope = anyio.CancelScope()
                answer: Item | None = None
                with scope:
                    while True:
                        if not queue:
                            if self._started == 1:
                                # The first task ends instead of parking: a
                                # connection's first request is often its only
                                # one for long (initialize), and a parked task
                                # costs ~3 KiB per connection. The second task
                                # parks, and a busy peer reuses its tasks.
                                return
                            await self._park()
                            continue
                        job = queue.popleft()
                        self._busy += 1
                        if queue and not self._coming and self._busy < self.max_concurrency:
                            self._call_task()  # in case this request waits
                        answer = None
                        if writer.over_budget:  # the peer is not reading: no new work
                            await writer.wait_budget()
                        answer = await self._handle(job[0], job[1], scope)
                        if self._cancels and scope.cancel_called:
                            break  # (returned in spite of the cancellation)
                        if answer is not None:
                            try:  # (more requests wait: their answers leave in one write)
                                sent = writer.put(answer) if queue else writer.put_soon(answer)
                            except ConnectionClosed:
                                sent = False  # (_send_quiet drops it)
                            if not sent:
                                await self._send_quiet(answer)
                        job = None
                        self._busy -= 1
                assert job is not None  # (only a cancellation of this scope ends it)
                if answer is None:  # interrupted: answered like a cancelled request
                    answer = self._cancelled_answer(job[0].id)
                if answer is not None:
                    await self._send_quiet(answer)
                job = None
                self._busy -= 1
        finally:
            if job is not None:
                self._busy -= 1
            self._check_quiet()

    async def _park(self) -> None:
        """Wait until the task is called for again (the queue is empty now)."""
        self._check_quiet()
        waiter = self._new_waiter()
        self._idle.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter in self._idle:  # cancelled while parked: nothing to hand over
                self._idle.remove(waiter)
            else:  # called for as the cancellation came: answer the queue, never wait
                self._coming = False
                self._drop_queue()
            raise
        self._coming = False

    def _drop_queue(self) -> None:
        """Answer every queued request ``-32800`` without waiting (the tasks are ending)."""
        while self._queue:
            msg, _ = self._queue.popleft()
            answer = self._cancelled_answer(msg.id, closing=True)
            if answer is None or not self._writer.send_nowait(answer):
                log.debug("%s: answer to a request lost at shutdown dropped", self.name)

    async def _handle(
        self, msg: Request | Call, route: Route, scope: anyio.CancelScope
    ) -> Item | None:
        """Run one request's handler in ``scope``; return its answer.

        ``None`` only for a request that must not be answered. A handler
        interrupted by a cancellation of ``scope`` raises it.
        """
        if self._closing:  # admitted before the close: answered, never run
            return self._cancelled_answer(msg.id, closing=True)
        key: Hashable = (type(msg.id), msg.id)
        if msg.id is None or key in self._running:
            key = object()  # not cancellable by id, but still by close()
        self._running[key] = scope
        try:
            params = (
                msg.params  # (decoded with the envelope)
                if isinstance(msg, Call)
                else self._decoder.decode_params(
                    msg.method, msg.params, route.params_type, route.decode
                )
            )
            if route.cancel is not None:
                self._told[key] = (route.cancel, params)
            result = await route.handler(params)
        except InvalidMessage as exc:
            return self._error(msg.id, exc.code, exc.message, exc.data)
        except RpcError as exc:
            data = UNSET if exc.data is None else exc.data
            return self._error(msg.id, exc.code, exc.message, data)
        except Exception:
            log.exception("%s: handler for %s failed", self.name, msg.method)
            return self._error(msg.id, ErrorCode.INTERNAL_ERROR, self._dialect.internal_error)
        finally:
            del self._running[key]
            if route.cancel is not None:
                self._told.pop(key, None)
        if result is NO_REPLY:
            return None
        then: Sequence[tuple[str, Any]] = ()
        if type(result) is Reply:
            result, then = result.result, result.then
        try:
            data = self._encoder.encode(Response(id=msg.id, result=result))
        except (TypeError, ValueError):
            log.exception("%s: result of %s cannot be encoded", self.name, msg.method)
            return self._error(msg.id, ErrorCode.INTERNAL_ERROR, self._dialect.internal_error)
        return self._follow_ups(data, then) if then else data

    def _follow_ups(self, response: bytes, then: Sequence[tuple[str, Any]]) -> list[bytes]:
        """The response and the encoded notifications of a :class:`Reply` (one queue item)."""
        items = [response]
        for method, params in then:
            try:
                items.append(self._encoder.notification(method, params))
            except (TypeError, ValueError):
                log.exception("%s: follow-up %s cannot be encoded", self.name, method)
        return items

    # -------------------------------------------------------------- answers

    async def reply_error(
        self, id: Id | None, code: int, message: str, data: Any = UNSET
    ) -> None:
        """Queue an error answer; dropped (logged) when the connection is closed."""
        await self._send_quiet(self._error(id, code, message, data))

    def _error(self, id: Id | None, code: int, message: str, data: Any = UNSET) -> bytes:
        try:
            return self._encoder.error(id, code, message, data)
        except (TypeError, ValueError):
            log.exception("%s: error data for request %r cannot be encoded", self.name, id)
            return self._encoder.error(id, ErrorCode.INTERNAL_ERROR, self._dialect.internal_error)

    def _cancelled_answer(self, id: Id | None, *, closing: bool = False) -> bytes | None:
        """``-32800`` for a cancelled request, or ``None`` if the dialect never answers it.

        A request cancelled by closing the peer is always answered.
        """
        if self._dialect.answer_cancelled or closing or self._closing:
            return self._error(id, ErrorCode.REQUEST_CANCELLED, "Request cancelled")
        return None

    async def _reply_cancelled(self, id: Id | None, *, closing: bool = False) -> None:
        answer = self._cancelled_answer(id, closing=closing)
        if answer is not None:
            await self._send_quiet(answer)

    async def _send_quiet(self, data: Item) -> None:
        # answers end a handler (or come from the reader, which reads on)
        try:
            await self._writer.send_soon(data)
        except ConnectionClosed:
            log.debug("%s: reply dropped, connection closed", self.name)
