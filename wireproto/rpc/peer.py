"""A transport-agnostic, bidirectional JSON-RPC peer.

Theory of operation
-------------------
``async with Peer(stream, router) as peer`` starts the reader task; the
others start on demand (a task costs memory per connection: a server with
many idle connections keeps only its readers):

* the **reader** receives whole messages from the stream, has the codec
  classify them, and never blocks on a handler: requests go to the
  :class:`~wireproto.rpc._handlers.HandlerPool` (at most
  ``max_concurrency`` handled at once, then a bounded backlog, beyond that
  answered at once with ``overload_code``); responses and cancellations are
  applied immediately. Messages the stream already holds are taken without
  a scheduling round trip or a call each (``receive_buffered``, when the
  stream has it: the framed byte streams); the stream decides when the
  reader yields;
* the **inbox** (:class:`~wireproto.rpc._inbox.Inbox`, started at the first
  notification) handles notifications one at a time in arrival order (no task
  per notification). A response that arrives while notifications are still
  queued or being handled goes through the inbox too, so a caller is never
  resumed before the notifications that preceded its response on the wire
  were handled. (A request made *by* a notification handler is the exception:
  its response is delivered at once, or the handler would wait for itself.);
* the **writer** (:class:`~wireproto.rpc._writer.Writer`, its task started
  when a message first waits for it) owns the output.
  Producers encode their message and put the bytes on a bounded queue
  (waiting when it is full); the writer task coalesces whatever is queued
  into one transport write when the stream supports ``send_many``. An answer,
  or a request made while no other is outstanding, finding the writer idle
  and the queue empty is written at once by its producer when the stream can
  take it without waiting (a pipe with room): a round trip then costs no
  extra task switch. A request made while others are outstanding is queued,
  so the requests a burst of responses sets off leave in one write.
  Notifications are queued without a yield per message, so a burst leaves
  in a few writes.
  A handler returning a :class:`~.router.Reply` puts its response and
  follow-up notifications on the queue as *one* item, so they are written
  back to back.

Closing (leaving the ``async with``): the reader and the inbox stop, pending
outgoing requests fail with :class:`~wireproto.errors.ConnectionClosed`
chained to the cause, running handlers are cancelled and answer like
cancelled requests (``-32800`` unless they return a result), requests of the
backlog are answered ``-32800``; within ``flush_timeout`` the handlers finish
and the writer flushes what is queued. Then every task that is left is
cancelled and the stream is closed. No task outlives the peer.

On asyncio (fast paths on) the reader is a bare asyncio task the peer joins
on closing, in its own cancel scope: anyio's bookkeeping of a task costs
~2.7 KiB per connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
from msgspec import UNSET

from wireproto._backend import BaseExceptionGroup, join_task, raise_as_group, running_asyncio_loop
from wireproto._switches import FAST_PATHS
from wireproto.errors import (
    ConnectionClosed,
    InvalidMessage,
    LocalProtocolError,
    MessageTooLarge,
    RemoteProtocolError,
)
from wireproto.jsonrpc.codec import (
    ACP_DIALECT,
    Call,
    DecHook,
    Decoder,
    Dialect,
    Encoder,
    IncomingResponse,
)
from wireproto.jsonrpc.messages import ErrorCode, Id, Notification, Request
from wireproto.rpc._handlers import HandlerPool
from wireproto.rpc._inbox import Inbox, run_logged
from wireproto.rpc._pending import NOTHING_EXPECTED, Expected, Pending, expectation, raise_failure
from wireproto.rpc._waiter import Waiter, _EventWaiter, waiter_factory, wake
from wireproto.rpc._writer import (
    DEFAULT_MAX_BYTES,
    STREAM_GONE,
    SupportsReceiveBuffered,
    SupportsSendMany,
    Writer,
)
from wireproto.rpc.router import Router

__all__ = ["Peer", "PeerStats", "SupportsSendMany"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_ANY: Any = Any  # the default result_type: raw JSON values


def _unanswered(method: str) -> ConnectionClosed:
    """What a request fails with when the connection ends without its answer.

    The same error whether the end came before the request could be written
    or while it waited: which one happens first is a matter of timing.
    """
    return ConnectionClosed(f"connection closed before {method} was answered")


@dataclasses.dataclass(frozen=True)
class PeerStats:
    """A snapshot of a peer's queues (see :meth:`Peer.stats`).

    Attributes:
        pending: outgoing requests waiting for their response.
        running: inbound requests being handled, or admitted and starting
            as soon as a handler task takes them (at most ``max_concurrency``).
        backlog: inbound requests beyond those, waiting for a handler to free up.
        send_queued: encoded messages waiting for the writer.
        send_waiting: producers waiting for room in the send queue.
        send_bytes: bytes queued or being written.
        send_peak_bytes: the most bytes ever queued or being written at once.
    """

    pending: int
    running: int
    backlog: int
    send_queued: int
    send_waiting: int
    send_bytes: int = 0
    send_peak_bytes: int = 0


class Peer:
    """One end of a JSON-RPC connection: sends and serves requests.

    Args:
        stream: an anyio object stream carrying whole messages as bytes.
        router: the handlers for inbound requests and notifications.
        dialect: the protocol's envelope rules and error texts.
        cancel_method: the notification that cancels one request (e.g.
            ``"$/cancel_request"``); ``None`` when the protocol has none.
        cancel_param: the params key holding the cancelled id.
        max_concurrency: inbound requests handled at once.
        backlog: inbound requests waiting beyond ``max_concurrency``.
        overload_code: the error code answering a request beyond the backlog.
        send_queue: outgoing messages buffered before producers wait.
        send_buffer_bytes: outgoing bytes buffered (queued or being written)
            before producers wait (default 64 MiB): a peer that stops
            reading pins at most this much, plus one message per waiting
            producer. A single larger message is still sent, alone.
        inbox_size: notifications buffered before the reader waits.
        flush_timeout: seconds closing may take to answer the inbound
            requests and write what is queued.
        name: a label for log lines.
        before_write: called synchronously right before any bytes are
            written to the stream (it must not raise); e.g. to persist what
            the messages about to be written describe.
    """

    def __init__(
        self,
        stream: anyio.abc.ObjectStream[bytes],
        router: Router | None = None,
        *,
        dialect: Dialect = ACP_DIALECT,
        cancel_method: str | None = None,
        cancel_param: str = "requestId",
        max_concurrency: int = 64,
        backlog: int = 256,
        overload_code: int = -32099,
        send_queue: int = 256,
        send_buffer_bytes: int = DEFAULT_MAX_BYTES,
        inbox_size: int = 256,
        flush_timeout: float = 5.0,
        name: str = "peer",
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self._stream = stream
        self.router = router if router is not None else Router()
        self.dialect = dialect
        self.cancel_method = cancel_method
        self.cancel_param = cancel_param
        self.flush_timeout = flush_timeout
        self.name = name
        # (the cancel notification is read as plain JSON, whatever its route)
        self._decoder = Decoder(
            dialect, self.router, two_pass=() if cancel_method is None else (cancel_method,)
        )
        self._encoder = Encoder(dialect)
        self._writer = Writer(
            stream, send_queue, self._mark_closed, name, send_buffer_bytes, before_write
        )
        self._handlers = HandlerPool(
            self._writer, self._decoder, self._encoder,
            max_concurrency=max_concurrency, backlog=backlog, overload_code=overload_code,
            name=name,
        )
        self._inbox_size = inbox_size
        self._ids = itertools.count()
        self._pending: dict[tuple[type, Id], Pending] = {}
        self._expected: Expected = NOTHING_EXPECTED  # the last result type expected
        self._closed_cause: BaseException | None = None
        self._closed = False
        self._close_waiters: list[Waiter] | None = None  # tasks in wait_closed
        self._tg: anyio.abc.TaskGroup | None = None
        self._inbox: Inbox | None = None  # created at the first notification (_open_inbox)
        self._reader: asyncio.Task[None] | None = None  # on asyncio (else a task of _tg)

    @property
    def max_concurrency(self) -> int:
        """Inbound requests handled at once."""
        return self._handlers.max_concurrency

    @property
    def backlog_size(self) -> int:
        """Inbound requests that may wait beyond :attr:`max_concurrency`."""
        return self._handlers.backlog_size

    @property
    def overload_code(self) -> int:
        """The error code answering a request beyond the backlog."""
        return self._handlers.overload_code

    # ------------------------------------------------------------------ life

    async def __aenter__(self) -> Peer:
        if self._tg is not None:
            raise LocalProtocolError("a Peer can be started only once")
        self._receive_scope = anyio.CancelScope()  # needs a running event loop
        self._waiter = waiter_factory()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._writer.start(self._tg, self._waiter)
        self._handlers.start(self._tg, self._waiter)
        loop = running_asyncio_loop() if FAST_PATHS else None
        if loop is None:
            self._tg.start_soon(self._receive)
        else:  # a bare task, owned and joined here: anyio's bookkeeping costs ~2.7 KiB
            self._reader = loop.create_task(self._receive())
        return self

    def _open_inbox(self) -> Inbox:
        """Create the inbox and start its task (at the first notification).

        A task and its anyio bookkeeping cost several KiB per connection;
        most servers never receive a notification.
        """
        assert self._tg is not None
        inbox = self._inbox = Inbox(self._decoder, self._inbox_size, self.name, self._waiter)
        inbox.start(self._tg)  # (stopped with the reader on closing)
        return inbox

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._receive_scope.cancel()
        if self._inbox is not None:
            self._inbox.stop()
        self._handlers.close()
        self._mark_closed(ConnectionClosed("connection closed locally"), force=True)
        with anyio.move_on_after(self.flush_timeout, shield=True):
            await self._handlers.wait_idle()  # every answer is queued
            self._writer.close()
            await self._writer.wait_done()
        self._tg.cancel_scope.cancel()
        group: BaseExceptionGroup[BaseException] | None = None
        try:
            await self._tg.__aexit__(None, None, None)
        except BaseExceptionGroup as errors:  # (what the group's tasks raised)
            group = errors
        finally:
            failed = None if self._reader is None else await join_task(self._reader)
            self._writer.discard()  # even if a task never started
            self._inbox = None  # (its task has ended: call_in_order runs at once)
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()
        raise_as_group(failed, group)  # (as if the reader were a task of the group)
        return None

    def call_in_order(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once every notification received so far was handled.

        It runs at once when no notification is waiting; otherwise the inbox
        runs it after them and before anything received later (e.g. to
        start routing notifications somewhere new from a precise point of
        the inbound stream). It must not raise (exceptions are logged).
        """
        inbox = self._inbox
        if inbox is None or not inbox.busy:
            run_logged(callback)
        else:
            inbox.later(functools.partial(run_logged, callback))

    def stats(self) -> PeerStats:
        """Return the current queue sizes (for monitoring and tests)."""
        queued, waiting = self._writer.stats() if self._tg is not None else (0, 0)
        return PeerStats(
            pending=len(self._pending),
            running=self._handlers.running,
            backlog=self._handlers.waiting,
            send_queued=queued,
            send_waiting=waiting,
            send_bytes=self._writer.queued_bytes,
            send_peak_bytes=self._writer.peak_bytes,
        )

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (reader finished or peer closed)."""
        return self._closed

    async def wait_closed(self) -> None:
        """Wait until the inbound side ends (EOF, broken stream, or local close)."""
        if self._closed:
            await anyio.lowlevel.checkpoint()
            return
        # a waiter per waiting task (an anyio.Event costs ~1.5 KiB per connection)
        waiter = (self._waiter if self._tg is not None else _EventWaiter)()
        waiters = self._close_waiters = self._close_waiters or []
        waiters.append(waiter)
        try:
            await waiter
        finally:
            waiters.remove(waiter)

    async def wait_idle(self) -> None:
        """Wait until no inbound request is being handled or waiting in the backlog.

        Every request accepted so far has then been answered (its response
        is queued for the writer). For a graceful shutdown: stop the work the
        handlers wait for, ``wait_idle`` (with a deadline), then leave the peer.
        """
        await self._handlers.wait_idle()

    def _mark_closed(self, cause: BaseException, *, force: bool = False) -> None:
        # A response already received (queued in the inbox behind earlier
        # notifications) still wins over the end of input; only closing the
        # peer itself (``force``) fails those too.
        if self._closed_cause is None:
            self._closed_cause = cause
        for pending in self._pending.values():
            if pending.queued and not force:
                continue
            err = _unanswered(pending.method)
            err.__cause__ = self._closed_cause
            pending.resolve(err)
        self._closed = True
        if self._close_waiters is not None:
            for waiter in self._close_waiters:
                wake(waiter)

    # --------------------------------------------------------------- sending

    async def notify(self, method: str, params: Any = UNSET) -> None:
        """Send a notification; waits while the outgoing queue is full.

        Notifications are queued without a yield to the event loop per call
        (so a burst is written in a few large writes); a producer still
        yields once every :data:`~wireproto.rpc._writer.YIELD_EVERY` calls.

        Raises:
            ConnectionClosed: the connection is closed.
            LocalProtocolError: the peer is not running.
        """
        if self._tg is None:  # (the check, inline: once per notification)
            self._check_running()
        data = self._encoder.encode(Notification(method=method, params=params))
        if not self._writer.put_burst(data):  # (queued without a coroutine, mostly)
            await self._writer.send(data)

    async def notify_many(self, method: str, params: Sequence[Any]) -> None:
        """Send one notification per item of ``params``, queued as one unit.

        No other message comes between them, no yield to the event loop
        falls between them, and they are queued all at once or not at all
        (waiting while the outgoing queue is full): what a producer that
        records a burst before its first message leaves the process needs.

        Raises:
            ConnectionClosed: the connection is closed.
            LocalProtocolError: the peer is not running.
        """
        if self._tg is None:  # (the check, inline: once per event)
            self._check_running()
        encode = self._encoder.encode
        if len(params) == 1:  # (one message: queued as such, the writer's usual item)
            await self._writer.send(encode(Notification(method=method, params=params[0])))
        elif params:
            await self._writer.send([encode(Notification(method=method, params=p)) for p in params])

    def _check_running(self) -> None:
        if self._tg is None:
            raise LocalProtocolError("the peer is not running: use 'async with peer'")

    async def request(
        self,
        method: str,
        params: Any = UNSET,
        *,
        result_type: type[T] = _ANY,
        timeout: float | None = None,  # noqa: ASYNC109 (a per-request deadline)
        id: Id | None = None,
        on_response: Callable[[IncomingResponse], None] | None = None,
        on_sent: Callable[[], None] | None = None,
        dec_hook: DecHook | None = None,
        lenient: Callable[[msgspec.Raw], T] | None = None,
    ) -> T:
        """Send a request and wait for its response.

        Args:
            method: the method name.
            params: any msgspec-encodable value; omitted when ``UNSET``.
            result_type: the type the result is decoded into. Alone among
                the requests outstanding, and without ``on_response``, its
                result is decoded in the same msgspec call as the envelope
                of its response (:meth:`Decoder.expect`).
            timeout: seconds to wait before giving up (``TimeoutError``).
            id: an explicit id (default: the next integer, from 0).
            on_response: called synchronously with the response when it is
                delivered: after the notifications that preceded it on the
                wire were handled and before any later notification or
                response is (e.g. to register a session id the response
                names; inbound requests are served concurrently and may run
                first). Not called when the connection closes first. It
                must not raise (exceptions are logged).
            on_sent: called once the request is queued for writing: any
                message queued after that call is written after it (e.g.
                to send a cancellation that must follow the request).
            dec_hook: the msgspec ``dec_hook`` for custom types in ``result_type``;
                it may run in the reader's task (the one-pass decode), so it must
                be quick, free of side effects and not read context variables.
            lenient: called with the raw result when the strict decode into
                ``result_type`` fails; what it returns or raises is final
                (e.g. a protocol's leniency rules and its own error text).
                :class:`msgspec.DecodeError` from the strict decode becomes
                :class:`RemoteProtocolError` when there is none.

        Returns:
            the decoded result.

        Raises:
            RpcError: the peer answered with an error.
            RemoteProtocolError: the result does not match ``result_type``.
            ConnectionClosed: the connection ended first.
            LocalProtocolError: ``id`` is already pending, or the peer is
                not running.
            TimeoutError: no answer within ``timeout``. A cancellation
                notification is sent on timeout and on cancellation.
        """
        if self._closed or self._tg is None:
            if self._closed:
                raise _unanswered(method) from self._closed_cause
            self._check_running()
        rid: Id = next(self._ids) if id is None else id
        key = (type(rid), rid)
        if key in self._pending:
            raise LocalProtocolError(f"request id {rid!r} is already pending")
        # A request made by a notification handler cannot wait for that
        # handler to finish: its response is delivered as soon as it arrives.
        inbox = self._inbox
        ordered = (
            inbox is None or not inbox.handling or anyio.get_current_task().id != inbox.task_id
        )
        slot = self._pending[key] = Pending(method, ordered, self._waiter(), on_response)
        # alone: its result decoded with the envelope (on_response gets the raw result)
        alone = len(self._pending) == 1
        expecting = (
            alone and on_response is None
            and result_type is not _ANY and result_type is not msgspec.Raw
        )
        if expecting:  # (Decoder.expect inline; its look-up kept while the type repeats)
            kept, kept_hook, decode = self._expected
            if result_type is not kept or dec_hook is not kept_hook:
                kept, kept_hook, decode = self._expected = expectation(
                    self._decoder, result_type, dec_hook
                )
            self._decoder._fast[0] = decode
        elif not alone and self._decoder._fast[0] is self._expected[2]:
            # no longer alone: the expectation, which matches no id, ends here
            self._decoder.expect(None)
        sent = False
        try:
            data = self._encoder.encode(Request(id=rid, method=method, params=params))
            writer = self._writer  # (alone: at once; among others: with them)
            try:
                if not (writer.put_soon(data) if alone else writer.put(data)):
                    await writer.send_soon(data)
            except ConnectionClosed as exc:  # (the stream broke, or closed while this waited)
                raise _unanswered(method) from exc.__cause__
            sent = True
            if on_sent is not None:
                on_sent()
            if timeout is None:  # a cancel scope costs more than the rest of a request
                await slot.event
            else:
                with anyio.fail_after(timeout):
                    await slot.event
        finally:
            del self._pending[key]
            # still ours? (no other request can expect one while this one is pending,
            # and a second request ends it; the response usually ended it, but not
            # one that looked like a call)
            if expecting and self._decoder._fast[0] is self._expected[2]:
                self._decoder.expect(None)
            if sent and slot.response is None:
                await self._send_cancel(rid)
        response = slot.response
        if not isinstance(response, IncomingResponse) or response.error is not None:
            raise_failure(response)
        result = response.result
        if not isinstance(result, msgspec.Raw):  # decoded with the envelope (Decoder.expect)
            return result  # type: ignore[return-value]
        try:
            return self._decoder.decode_result(result, result_type, dec_hook)
        except msgspec.DecodeError as exc:  # includes ValidationError
            if lenient is not None:
                return lenient(result)
            raise RemoteProtocolError(f"invalid result: {exc}") from exc

    async def _send_cancel(self, rid: Id) -> None:
        if self.cancel_method is None or self._closed:
            return
        with anyio.move_on_after(1.0, shield=True):
            try:
                await self.notify(self.cancel_method, {self.cancel_param: rid})
            except ConnectionClosed:
                pass

    # --------------------------------------------------------------- reading

    async def _receive(self) -> None:
        try:
            with self._receive_scope:
                await self._read_loop()
        except BaseException:  # as for a failing task of the group: the body is cancelled
            assert self._tg is not None
            self._tg.cancel_scope.cancel()
            raise

    async def _read_loop(self) -> None:
        stream = self._stream
        receive = stream.receive
        receive_buffered = (
            stream.receive_buffered
            if FAST_PATHS and isinstance(stream, SupportsReceiveBuffered)
            else None
        )
        fast = self._decoder._fast  # (fast[0] read per message: see Decoder._fast)
        idle = self._decoder._paths.idle  # (fast[0] again once a response came)
        refused = self._decoder._decode_refused
        handlers = self._handlers
        cause: BaseException
        while True:
            try:
                batch = [await receive()]
            except MessageTooLarge as exc:
                log.warning("%s: %s", self.name, exc)
                await handlers.reply_error(
                    None, ErrorCode.INVALID_REQUEST, "Message too large",
                    {"max_bytes": exc.max_bytes},
                )
                continue
            except STREAM_GONE as exc:
                cause = exc
                break
            except Exception as exc:  # a transport failure we do not know
                log.exception("%s: transport failed", self.name)
                cause = exc
                break
            if receive_buffered is not None:  # the rest of the read, at once
                batch += receive_buffered()
            for data in batch:
                try:
                    try:  # (msgspec's own decode of a call, or of the response expected)
                        msg = fast[0](data)
                    except InvalidMessage:
                        raise
                    except Exception:  # most likely a response
                        msg = refused(data)
                except InvalidMessage as exc:
                    await self._on_invalid(exc)
                    continue
                if type(msg) is Request or (isinstance(msg, Call) and msg.id is not UNSET):
                    route = self.router.get(msg.method)
                    if not handlers.try_admit(msg, route):
                        await handlers.admit(msg, route)
                elif isinstance(msg, IncomingResponse):  # (or a subclass: see the codec)
                    fast[0] = idle[0]  # (a response was expected once, if one was)
                    pending = self._pending.get((type(msg.id), msg.id))
                    inbox = self._inbox
                    if pending is None:
                        log.info("%s: response to unknown id %r dropped", self.name, msg.id)
                    elif inbox is not None and inbox.busy and pending.ordered:
                        # after the notifications before it on the wire were handled
                        pending.queued = True
                        inbox.later(functools.partial(pending.resolve, msg))
                    else:
                        pending.resolve(msg)
                else:  # a notification: to the inbox, unless it is full or needs a look
                    route = self.router.get(msg.method)
                    inbox = self._inbox
                    if (
                        route is None
                        or not route.notification
                        or inbox is None
                        or msg.method == self.cancel_method
                        or not inbox.try_put(route, msg)  # type: ignore[arg-type]
                    ):
                        await self._on_notification(msg)  # type: ignore[arg-type]
        log.debug("%s: inbound side ended: %r", self.name, cause)
        self._mark_closed(cause)

    async def _on_invalid(self, exc: InvalidMessage) -> None:
        log.warning("%s: invalid message: %s", self.name, exc)
        if exc.response:  # (exc.id is the request it answers: never answered with it)
            self._fail_pending(exc)
        if exc.reply:
            await self._handlers.reply_error(
                None if exc.response else exc.id, exc.code, exc.message, exc.data
            )

    def _fail_pending(self, exc: InvalidMessage) -> None:
        """A response that cannot be read fails the request it answers."""
        rid = exc.id
        pending = None if rid is None else self._pending.get((type(rid), rid))
        if pending is not None:
            error = RemoteProtocolError(
                f"{self.name}: the peer's response to {pending.method} is invalid: {exc.message}"
            )
            error.__cause__ = exc
            pending.resolve(error)

    async def _on_notification(self, msg: Notification | Call) -> None:
        """A notification the read loop could not queue without waiting."""
        method = msg.method
        route = self.router.get(method)
        inbox = self._inbox
        if method == self.cancel_method:
            await self._on_cancel(msg)
        elif route is None:
            log.debug("%s: notification %s ignored", self.name, method)
        elif not route.notification:
            log.warning("%s: request %s sent as a notification dropped", self.name, method)
        else:
            await (inbox or self._open_inbox()).put(route, msg)

    async def _on_cancel(self, msg: Notification | Call) -> None:
        try:
            if isinstance(msg, Call):  # (only if cancel_method changed since __init__)
                params = msgspec.to_builtins(msg.params)
            else:
                params = self._decoder.decode_params(msg.method, msg.params, dict[str, Any])
            rid = params[self.cancel_param]
        except (InvalidMessage, KeyError):
            log.warning("%s: malformed %s dropped", self.name, msg.method)
            return
        if not isinstance(rid, (int, str)) or isinstance(rid, bool):
            log.warning("%s: %s with a bad id dropped", self.name, msg.method)
            return
        if not await self._handlers.cancel(rid):
            log.debug("%s: cancel for unknown id %r ignored", self.name, rid)
