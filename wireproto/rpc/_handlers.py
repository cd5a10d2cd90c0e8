"""Inbound requests: admission, handler tasks, answers (a part of the peer).

Theory of operation
-------------------
The peer's reader hands every inbound request to :meth:`HandlerPool.admit`,
which never waits for a handler:

=================================  ==========================================
no route, or a notification route  answered ``-32601`` at once
under ``max_concurrency`` running  handled now (by a parked handler task when
                                   one is idle: cheaper than a new task)
room in the backlog                queued; the next free handler task takes
                                   the oldest one
otherwise                          answered ``overload_code`` at once
=================================  ==========================================

A handler does not start a request while the writer holds its byte budget
(a peer that stops reading cannot make this side produce more than the
requests already running). Each request runs in its handler task's cancel scope, registered by id
while it runs so that an inbound cancellation (:meth:`HandlerPool.cancel`)
can cancel it; a request still in the backlog is removed instead. A task
keeps its scope from one request to the next (entering a scope costs more
than the rest of a cheap request) until a request is cancelled; it then
answers that request outside the spent scope and goes on in a new one.
Every admitted request is answered exactly once: with its result, its
:class:`~wireproto.errors.RpcError`, ``-32602`` for params that do not
decode, ``-32603`` (details only in the log) for any other exception, or
``-32800`` when it was cancelled without returning a result (not at all when
the dialect says a cancelled request is never answered, e.g. MCP).

Closing (:meth:`HandlerPool.close`) cancels every running request and makes
the requests of the backlog, and any admitted later, answer ``-32800``
without running (whatever the dialect: the peer did not cancel them). The
answers are queued for the writer, which flushes them within the peer's
budget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import anyio
import anyio.abc
from msgspec import UNSET

from wireproto.errors import ConnectionClosed, InvalidMessage, RpcError
from wireproto.jsonrpc.codec import Decoder, Dialect, Encoder
from wireproto.jsonrpc.messages import ErrorCode, Id, Request
from wireproto.rpc._waiter import Waiter
from wireproto.rpc._writer import Item, Writer
from wireproto.rpc.router import NO_REPLY, Reply, Route

__all__ = ["HandlerPool"]

log = logging.getLogger("wireproto.rpc.peer")  # one logger for everything the peer does


class _Idle:
    """A handler task parked between requests, waiting to be handed the next one."""

    __slots__ = ("event", "job")

    def __init__(self, event: Waiter) -> None:
        self.event = event
        self.job: tuple[Request, Route] | None = None


class HandlerPool:
    """The handler tasks of one peer and the bounded backlog in front of them.

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
        # (a list: an empty deque costs 760 bytes per connection, and most never queue)
        self._backlog: list[tuple[Request, Route]] = []
        self._active = 0  # handler tasks busy with a request (backlog included)
        self._idle: list[_Idle] = []  # handler tasks waiting for the next request
        self._spawned = 0  # handler tasks started (the first one does not park, see _next_job)
        self._quiet: anyio.Event | None = None  # set when no request is being handled
        self._closing = False
        self._tg: anyio.abc.TaskGroup | None = None

    def start(self, tg: anyio.abc.TaskGroup, waiter: Callable[[], Waiter]) -> None:
        """Run handler tasks in ``tg`` from now on, parking them with ``waiter``s."""
        self._tg = tg
        self._new_waiter = waiter

    @property
    def running(self) -> int:
        """Requests being handled."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests in the backlog."""
        return len(self._backlog)

    # ------------------------------------------------------------ admission

    async def admit(self, msg: Request, route: Route | None) -> None:
        """Handle ``msg``, queue it, or answer it at once (see the table above)."""
        if route is None or route.notification:
            await self.reply_error(
                msg.id, ErrorCode.METHOD_NOT_FOUND,
                self._dialect.method_not_found.format(method=msg.method),
            )
        elif self._closing:
            await self._reply_cancelled(msg.id, closing=True)
        elif self._active < self.max_concurrency:
            self._active += 1
            if self._idle:  # reuse a parked handler task: far cheaper than a new one
                idle = self._idle.pop()
                idle.job = (msg, route)
                idle.event.set()
            else:
                assert self._tg is not None
                self._spawned += 1
                self._tg.start_soon(self._serve, msg, route)
        elif len(self._backlog) < self.backlog_size:
            self._backlog.append((msg, route))
        else:
            log.warning("%s: overloaded, refusing %s", self.name, msg.method)
            await self.reply_error(msg.id, self.overload_code, "Server overloaded")

    async def cancel(self, rid: Id) -> bool:
        """Cancel the request with id ``rid``; return whether there was one.

        A running handler is cancelled (and answers for itself); a request
        still in the backlog is removed and answered ``-32800`` (when the
        dialect answers cancelled requests).
        """
        scope = self._running.get((type(rid), rid))
        if scope is not None:
            scope.cancel()
            return True
        for i, (req, _) in enumerate(self._backlog):
            if req.id == rid and type(req.id) is type(rid):
                del self._backlog[i]
                await self._reply_cancelled(rid)
                return True
        return False

    def close(self) -> None:
        """Cancel every running request; later and queued ones answer ``-32800``."""
        self._closing = True
        for scope in self._running.values():
            scope.cancel()

    async def wait_idle(self) -> None:
        """Wait until no request is being handled or waiting in the backlog."""
        while self._active:
            if self._quiet is None:
                self._quiet = anyio.Event()
            await self._quiet.wait()

    def _handler_done(self) -> None:
        self._active -= 1
        if not self._active and self._quiet is not None:
            self._quiet.set()
            self._quiet = None

    # ------------------------------------------------------------- handling

    async def _serve(self, msg: Request, route: Route) -> None:
        # Counted in _active while handling; parked in _idle between requests
        # (a handler task lives until the peer closes; at most max_concurrency).
        # One cancel scope serves every request the task handles until one of
        # them is cancelled (a scope per request would cost more than the rest
        # of a cheap request); the task then answers it and starts a new scope.
        job = (msg, route)
        try:
            while True:
                scope = anyio.CancelScope()
                answer: Item | None = None
                with scope:
                    while True:
                        answer = None
                        if self._writer.over_budget:  # the peer is not reading: no new work
                            await self._writer.wait_budget()
                        answer = await self._handle(job[0], job[1], scope)
                        if scope.cancel_called:  # returned in spite of the cancellation
                            break
                        if answer is not None:
                            await self._send_quiet(answer)
                        next_job = await self._next_job()
                        if next_job is None:
                            return
                        job = next_job
                if answer is None:  # interrupted: answered like a cancelled request
                    answer = self._cancelled_answer(job[0].id)
                if answer is not None:
                    await self._send_quiet(answer)
                next_job = await self._next_job()
                if next_job is None:
                    return
                job = next_job
        finally:
            self._handler_done()

    async def _next_job(self) -> tuple[Request, Route] | None:
        """The oldest request of the backlog, or the next one admitted (parked till then).

        ``None``: the task ends instead. The peer's first handler task does
        not park while it is the only one ever started: a connection's first
        request is often its only one for a long time (``initialize``), and a
        parked task costs ~4 KiB per connection; the second request starts a
        task that parks, and a busy peer reuses its tasks.
        """
        if self._backlog:
            return self._backlog.pop(0)
        if self._spawned == 1:
            return None
        self._handler_done()
        idle = _Idle(self._new_waiter())
        self._idle.append(idle)
        try:
            await idle.event.wait()
        except BaseException:
            if idle.job is None:  # cancelled while parked: leave as an active task would
                self._idle.remove(idle)
                self._active += 1
            else:  # handed a request as the cancellation came: answer it, never wait
                answer = self._cancelled_answer(idle.job[0].id, closing=True)
                if answer is None or not self._writer.send_nowait(answer):
                    log.debug("%s: answer to a request lost at shutdown dropped", self.name)
            raise
        assert idle.job is not None
        return idle.job

    async def _handle(self, msg: Request, route: Route, scope: anyio.CancelScope) -> Item | None:
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
            params = self._decoder.decode_params(
                msg.method, msg.params, route.params_type, route.decode
            )
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
        if result is NO_REPLY:
            return None
        then: Sequence[tuple[str, Any]] = ()
        if type(result) is Reply:
            result, then = result.result, result.then
        try:
            data = self._encoder.response(msg.id, result)
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
