"""What every protocol adapter does the same way, written once.

The adapters differ where their protocols do (sessions per connection,
cancellation, reply ordering) and share no base class; these small helpers
are the code that is truly the same: mapping agent errors to JSON-RPC error
answers, serving until the connection closes or ``stop`` is set, serving on
this process's stdio when no stream is given, and building the runtime an
entry point serves; the start of every ``connect_*`` and the old names of
their options; how a client's prompt turn ends when its ``async with`` is left.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.abc

from wireproto.errors import AgentError, LocalProtocolError, RpcError
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer

if TYPE_CHECKING:
    from wireproto.agent.api import Agent
    from wireproto.agent.runtime import Runtime
    from wireproto.agent.store import StoreArg

__all__ = [
    "TurnItems",
    "enter_turn",
    "leave_turn",
    "open_client",
    "renamed_options",
    "rpc_error",
    "running_peer",
    "runtime_of",
    "serve_or_stdio",
    "until_closed",
]

log = logging.getLogger(__name__)

C = TypeVar("C", bound=AbstractAsyncContextManager[Any])
T = TypeVar("T")


def rpc_error(
    exc: AgentError, codes: Mapping[type[AgentError], int], *, data: bool = True
) -> RpcError:
    """The error answer for an agent failure: the code of the most specific
    class of ``exc`` in ``codes`` (``-32603`` when none is), its message and,
    when ``data``, its data."""
    code = next((codes[cls] for cls in type(exc).__mro__ if cls in codes),
                ErrorCode.INTERNAL_ERROR)
    return RpcError(int(code), exc.message, exc.data if data else None)


async def until_closed(peer: Peer, stop: anyio.Event | None = None) -> None:
    """Return once ``peer``'s connection is closed or ``stop`` is set."""
    if stop is None:  # (no task group: ~1 KiB per connection)
        await peer.wait_closed()
        return
    async with anyio.create_task_group() as tg:

        async def on_stop(event: anyio.Event) -> None:
            await event.wait()
            log.debug("%s: stop requested", peer.name)
            tg.cancel_scope.cancel()

        tg.start_soon(on_stop, stop)
        await peer.wait_closed()
        tg.cancel_scope.cancel()


async def after_notifications(peer: Peer) -> None:
    """Return once every notification ``peer`` received so far was handled.

    A request handler of a client calls it first, so what the other side
    sent before the request (the tool call an approval is about, the text
    before it) reaches the client's callbacks before the request does.
    """
    done = anyio.Event()
    peer.call_in_order(done.set)
    if not done.is_set():
        await done.wait()


async def serve_or_stdio(
    serve: Callable[[anyio.abc.ObjectStream[bytes]], Awaitable[None]],
    stream: anyio.abc.ObjectStream[bytes] | None,
) -> None:
    """``await serve(stream)``, or on this process's stdin and stdout when ``stream`` is ``None``.

    Raises:
        OSError: stdin or stdout cannot be used (stdio only).
    """
    if stream is not None:
        await serve(stream)
        return
    from wireproto.transports.stdio import open_stdio  # only a stdio server needs it

    async with open_stdio() as stdio:
        await serve(stdio)


def runtime_of(agent: Agent | Runtime, store: StoreArg) -> Runtime:
    """The runtime to serve: ``agent`` itself, or a new one over ``store``.

    Raises:
        ValueError: ``store`` given with a runtime (it belongs to the runtime).
    """
    from wireproto.agent.runtime import Runtime

    if isinstance(agent, Runtime):
        if store is not None:
            raise ValueError("store= was given with a Runtime: pass it to Runtime(agent, store) "
                             "instead")
        return agent
    return Runtime(agent, store)


def renamed_options(
    function: str, given: Mapping[str, Any], renames: Mapping[str, str], stacklevel: int = 4
) -> dict[str, Any]:
    """The options ``given`` under an old name, under their new one (each warned about).

    Raises:
        TypeError: an option that never existed.
    """
    options: dict[str, Any] = {}
    for old, value in given.items():
        new = renames.get(old)
        if new is None:
            raise TypeError(f"{function}() got an unexpected keyword argument {old!r}")
        warnings.warn(f"{function}({old}=...) is deprecated: pass {new}= instead",
                      DeprecationWarning, stacklevel=stacklevel)
        options[new] = value
    return options


@asynccontextmanager
async def open_client(
    transport: Mapping[str, Any],
    client_of: Callable[[anyio.abc.ObjectStream[bytes]], C],
    initialize: Callable[[C], Awaitable[object]] | None,
) -> AsyncIterator[C]:
    """Open a stream with :func:`~wireproto.transports.open.open_stream`
    (``transport`` are its options), run ``client_of(stream)`` as an async
    context, pass it to ``initialize`` (when given: its clock starts once the
    process runs or the socket is open), and yield it.

    Raises:
        ValueError, OSError, ConnectionClosed, ProcessExited: as ``open_stream``.
    """
    from wireproto.transports.open import open_stream  # imported only when used

    async with open_stream(**transport) as stream:
        client = client_of(stream)
        async with client:
            if initialize is not None:
                await initialize(client)
            yield client


def running_peer(peer: Peer | None, role: str) -> Peer:
    """``peer``; when ``None``, :class:`LocalProtocolError` saying ``role`` is not running.

    Raises:
        LocalProtocolError: ``peer`` is ``None``: the client is used outside
            its ``async with``.
    """
    if peer is None:
        raise LocalProtocolError(f"the {role} is not running: use 'async with client'")
    return peer


class TurnItems(Generic[T]):
    r"""What an iterated client turn yields: its items, then its error if it failed.

    The turn's task :meth:`deliver`\ s items and, once answered, sets
    :attr:`error` (if any) and :attr:`done`; the reader calls :meth:`next`.

    Attributes:
        recv: the reading end (:func:`leave_turn` drains and closes it).
        done: set once the turn has ended.
        error: what the turn failed with (``None``: it did not).
    """

    def __init__(self, buffer: int, name: str, what: str) -> None:
        self._send, self.recv = anyio.create_memory_object_stream[T](buffer)
        self.done = anyio.Event()
        self.error: BaseException | None = None
        self._error_seen = False
        self._name = name
        self._what = what

    def close(self) -> None:
        """No more items (the reader gets the rest, then the end)."""
        self._send.close()

    async def deliver(self, item: T) -> None:
        """Queue ``item`` for the reader (dropped, logged, once the turn has ended)."""
        try:
            await self._send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("%s: %s after the end of the turn dropped", self._name, self._what)

    async def next(self) -> T:
        """The next item; at the end the turn's error, else ``StopAsyncIteration``."""
        try:
            return await self.recv.receive()
        except anyio.EndOfStream:
            pass
        await self.done.wait()
        if self.error is not None:
            self._error_seen = True
            raise self.error
        raise StopAsyncIteration

    def raise_unseen(self) -> None:
        """Raise the turn's error if the reader has not been given it yet."""
        if self.error is not None and not self._error_seen:
            raise self.error


async def enter_turn(run: Callable[..., Coroutine[Any, Any, None]]) -> anyio.abc.TaskGroup:
    """Open a client turn's task group and start ``run`` in it (until it reports started)."""
    tg = anyio.create_task_group()
    await tg.__aenter__()
    try:
        await tg.start(run)
    except BaseException as exc:  # e.g. cancelled while the prompt waited for room
        tg.cancel_scope.cancel()
        await tg.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    return tg


async def leave_turn(
    failed: bool,
    items: TurnItems[Any],
    *,
    answered: bool,
    cancel: Callable[[], Awaitable[None]],
    tg: anyio.abc.TaskGroup,
    stop: anyio.CancelScope,
    cancel_wait: float,
    await_answer: bool,
    close: Callable[[], None],
) -> None:
    """End a client's prompt turn when its ``async with`` block is left.

    Left normally (``failed`` false): an unanswered turn is cancelled with
    ``cancel()``, then the rest of its ``items`` are read and dropped until
    the turn is done; then its error, if the reader was not given it, is
    raised. Left with an exception: later items are dropped, an unanswered
    turn is cancelled (at most ``cancel_wait`` seconds, shielded, and
    waiting for the end too when ``await_answer``), then ``stop`` is
    cancelled. Either way the items' stream is closed (waking a sender
    blocked on a full buffer), the turn's task group ``tg`` is exited and
    ``close()`` is called.
    """
    updates, done = items.recv, items.done
    try:
        try:
            if not failed:
                if not answered:
                    await cancel()
                while True:
                    try:
                        await updates.receive()
                    except anyio.EndOfStream:
                        break
                await done.wait()
            else:
                updates.close()
                if not answered:
                    with anyio.move_on_after(cancel_wait, shield=True):
                        await cancel()
                        if await_answer:
                            await done.wait()
                stop.cancel()
        finally:
            updates.close()
            await tg.__aexit__(None, None, None)
    finally:
        close()
    if not failed:
        items.raise_unseen()
