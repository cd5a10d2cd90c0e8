"""The recording relay over pipes: one byte pump per direction, in a worker thread.

Theory of operation
-------------------
:func:`relay_pipes` does what :func:`~wireproto.proxy.relay.relay_messages`
does, for the common case of a relay between two descriptor-backed streams
(this process's stdio and a child's pipes), at a fraction of the CPU: each
direction is one worker thread (``anyio.to_thread``, owned by the relay's task
group) that waits with ``poll`` and reads and writes with plain ``os.read`` /
``os.write``, so a message costs no event-loop iteration and no task switch.

A read brings a *chunk*, often one message, sometimes several or part of one.
The pump forwards every complete line of it unchanged, in one write, after
showing its messages (its non-blank lines, ``\\r\\n`` or ``\\n`` removed) to
the observers as one batch; the bytes after the last newline wait for the
rest of their line. The usual chunk, whole lines that each start like a
message (most often exactly one), is the loop's straight path, on locals
only: a few checks over the whole chunk, no Python per line, the observers,
one forward ``os.write``. Between two messages of a real agent the caches
go cold, and every bytecode, look-up and object per chunk then costs CPU
(the other chunks go through :meth:`_Pump._forward`). The observers of both
directions are called under one lock, never concurrently, each batch
stamped with one :func:`time.monotonic` reading (a
:class:`~wireproto.proxy.trace.TraceWriter` writes a batch's trace lines
with one system call, and they reach the operating system before the peer
sees the messages).

A line over ``max_bytes`` is dropped with a warning and not forwarded, as the
framed transports do; an unterminated last line is forwarded, with a
newline, when its side ends. Ending is that of ``relay_messages``: the
client's end closes the agent's input (``send_eof``, from the relay's task
once the pump's thread has returned) and the agent's end returns. Each
thread also waits on a wake-up pipe of its own, which is how ``stop``, the
agent's end and a cancellation of the relay stop a thread waiting for input.
"""

from __future__ import annotations

import logging
import os
import select
from collections.abc import Callable, Sequence
from typing import cast

import anyio
import anyio.abc
import anyio.to_thread

from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES
from wireproto.proxy.relay import Direction, Observer, Observers
from wireproto.proxy.trace import _PLAIN
from wireproto.transports._framed import READ_SIZE, FramedStream
from wireproto.transports.stdio import FdReceiveStream, FdSendStream

__all__ = ["relay_pipes"]

log = logging.getLogger(__name__)

_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)


def _filled(line: bytes) -> bool:
    """Whether ``line`` is a message (not blank): what the framed transports deliver."""
    return bool(line) and (line[0] not in b" \t\r" or bool(line.strip(b" \t\r")))


def _fds(stream: anyio.abc.ObjectStream[bytes], what: str) -> tuple[int, int]:
    """The (read, write) descriptors under a fresh stdio or subprocess stream."""
    rx, tx = stream.byte_streams if isinstance(stream, FramedStream) else (None, None)
    if not isinstance(rx, FdReceiveStream) or not isinstance(tx, FdSendStream):
        raise TypeError(f"relay_pipes: the {what} must be a stdio or subprocess stream")
    # bytes held above the fd would never be relayed; a loop reading ahead races the pump
    if cast(FramedStream, stream).buffered or rx.reads_ahead:
        raise ValueError(f"relay_pipes: the {what} stream was read from; relay_messages "
                         "relays a stream in use")
    return rx.fd, tx.fd


class _Pump:
    """One direction: read chunks from ``src``, show their messages, write them to ``dst``."""

    def __init__(self, src: int, dst: int, direction: Direction,
                 observe: Callable[[Direction, list[bytes]], None], max_bytes: int) -> None:
        self.src, self.dst, self.direction = src, dst, direction
        self.observe = observe
        self.max_bytes = max_bytes
        self._wake_r, self._wake_w = os.pipe()
        self._reading = select.poll()
        self._reading.register(src, select.POLLIN)
        self._reading.register(self._wake_r, select.POLLIN)
        self._writing: select.poll | None = None
        self._woken = False

    def wake(self) -> None:
        """Make the thread return as soon as it waits (idempotent, from any thread)."""
        if not self._woken:
            self._woken = True
            os.write(self._wake_w, b"!")

    def close(self) -> None:
        """Close the wake-up pipe (once the thread has returned)."""
        os.close(self._wake_r)
        os.close(self._wake_w)

    def run(self) -> None:
        """The thread: pump until ``src`` ends, fails, or :meth:`wake` is called."""
        try:
            self._pump()
        except OSError as exc:
            log.debug("relay: the pump to the %s ended: %s", self._to, exc)

    def _pump(self) -> None:
        # Between two messages of a real agent the caches go cold: every bytecode,
        # look-up and object between ``poll`` and the forward costs, so the usual
        # chunk (whole lines, each starting like a message, no \r: most often one
        # message) is the straight path through the loop, on locals only.
        src, dst, poll, read, write = self.src, self.dst, self._reading.poll, os.read, os.write
        show, direction, limit = self.observe, self.direction, self.max_bytes
        woken = (self._wake_r, select.POLLIN)  # what poll reports once woken
        plain, read_size = _PLAIN, READ_SIZE
        pending: list[bytes] = []  # the start of an unterminated line
        size = 0
        discarding = False  # inside a line over max_bytes
        full = False  # the last read filled the buffer: read again without waiting
        while True:
            if not full:
                if woken in poll():
                    return
            elif self._woken:  # (an input that never pauses does not hold off a stop)
                return
            try:
                chunk = read(src, read_size)
            except BlockingIOError:  # (a spurious wake-up)
                full = False
                continue
            full = len(chunk) == read_size
            if chunk[-1:] == b"\n" and not size and not discarding:  # whole lines
                data = chunk
                lines = chunk.count(b"\n")  # the usual chunk: whole messages, nothing to strip
                if chunk[:1] in plain and b"\r" not in chunk and len(chunk) <= limit and (
                        lines == 1 or lines == chunk.count(b"\n{") + chunk.count(b"\n[") + 1):
                    show(direction, [chunk[:-1]] if lines == 1 else chunk[:-1].split(b"\n"))
                    try:
                        written = write(dst, chunk)
                    except BlockingIOError:  # the reader is behind (dst is non-blocking)
                        written = 0
                    if written == len(chunk) or self._write_rest(memoryview(chunk)[written:]):
                        continue
                    return
            elif not chunk:  # the end: deliver an unterminated last line
                if size:
                    self._forward(b"".join(pending) + b"\n")
                return
            else:
                if discarding:
                    nl = chunk.find(b"\n")
                    if nl < 0:
                        continue
                    discarding, chunk = False, chunk[nl + 1:]
                end = chunk.rfind(b"\n") + 1
                if end:  # lines complete: the pending start, and whole lines
                    data = b"".join([*pending, chunk[:end]])
                    pending, size = [chunk[end:]], len(chunk) - end
                else:
                    pending.append(chunk)
                    size += len(chunk)
                if size > self.max_bytes + 1:  # (+1: a \r before the \n)
                    self._too_large(1)
                    pending, size, discarding = [], 0, True
                if not end:
                    continue
            if not self._forward(data):
                return

    def _forward(self, data: bytes) -> bool:
        """Show ``data``'s messages, then write it; ``False`` when woken while writing."""
        if data.find(b"\n") == len(data) - 1:  # one line
            line = data[:-2] if data[-2:-1] == b"\r" else data[:-1]
            messages = [line] if line[:1] in _PLAIN or _filled(line) else []
        else:
            lines = data.split(b"\n")
            del lines[-1]
            messages = [m[:-1] if m[-1:] == b"\r" else m for m in lines
                        if m[:1] in _PLAIN or _filled(m)]
        if len(data) > self.max_bytes + 2 and any(len(m) > self.max_bytes for m in messages):
            self._too_large(sum(len(m) > self.max_bytes for m in messages))
            messages = [m for m in messages if len(m) <= self.max_bytes]
            data = b"".join(m + b"\n" for m in messages)
        if messages:
            self.observe(self.direction, messages)
        return self._send(data)

    def _send(self, data: bytes) -> bool:
        """Write ``data`` to the reader; ``False`` when woken while writing."""
        try:
            written = os.write(self.dst, data)
        except BlockingIOError:  # the reader is behind (dst is non-blocking): wait for room
            written = 0
        return written == len(data) or self._write_rest(memoryview(data)[written:])

    def _too_large(self, count: int) -> None:
        for _ in range(count):
            log.warning("relay: message to the %s dropped: larger than %d bytes", self._to,
                        self.max_bytes)

    @property
    def _to(self) -> str:
        return "agent" if self.direction is Direction.TO_AGENT else "client"

    def _write_rest(self, view: memoryview) -> bool:
        """Write ``view`` as the reader makes room; ``False`` when woken first."""
        if self._writing is None:
            self._writing = select.poll()
            self._writing.register(self.dst, select.POLLOUT)
            self._writing.register(self._wake_r, select.POLLIN)
        while view:
            if any(fd == self._wake_r for fd, _ in self._writing.poll()):
                return False
            try:
                view = view[os.write(self.dst, view):]
            except BlockingIOError:
                continue
        return True


async def relay_pipes(
    client: anyio.abc.ObjectStream[bytes],
    agent: anyio.abc.ObjectStream[bytes],
    observers: Sequence[Observer] = (),
    *,
    stop: anyio.Event | None = None,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Relay between two pipe-backed streams until the agent's side ends.

    The same relay as :func:`~wireproto.proxy.relay.relay_messages`, pumped
    by two worker threads (see the module docstring): cheaper, for streams
    over file descriptors only.

    Args:
        client: the front connection: a :func:`~wireproto.transports.stdio.open_stdio`
            or :func:`~wireproto.transports.subprocess.open_subprocess` stream
            nothing has been read from.
        agent: the backend connection, of the same kinds.
        observers: called with every message before it is forwarded, from a
            worker thread (never two at once): they must not block, nor touch
            the event loop.
        stop: when set, the client's side is treated as ended.
        max_bytes: the largest message passed on; a longer line is dropped.

    Raises:
        TypeError: a stream is not over file descriptors.
        ValueError: a stream was read from (on asyncio its descriptor is then read
            ahead by the event loop); relay it with ``relay_messages``.
    """
    client_rx, client_tx = _fds(client, "client")
    agent_rx, agent_tx = _fds(agent, "agent")
    show = Observers(observers).show
    to_agent = _Pump(client_rx, agent_tx, Direction.TO_AGENT, show, max_bytes)
    try:
        to_client = _Pump(agent_rx, client_tx, Direction.TO_CLIENT, show, max_bytes)
    except BaseException:
        to_agent.close()
        raise
    limiter = anyio.CapacityLimiter(2)
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                try:
                    if stop is not None:
                        await stop.wait()
                        to_agent.wake()  # the client's side ends
                    await anyio.sleep_forever()
                finally:  # the relay ends or is cancelled: the threads return
                    to_agent.wake()
                    to_client.wake()

            async def forward_to_agent() -> None:
                await anyio.to_thread.run_sync(to_agent.run, limiter=limiter)
                try:
                    await agent.send_eof()
                except (*_ENDED, NotImplementedError):
                    pass

            tg.start_soon(watch)
            tg.start_soon(forward_to_agent)
            await anyio.to_thread.run_sync(to_client.run, limiter=limiter)
            tg.cancel_scope.cancel()
    finally:
        to_agent.close()
        to_client.close()
