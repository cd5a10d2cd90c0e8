"""The process's own stdin/stdout as a message stream (the agent side of stdio).

Theory of operation
-------------------
:func:`open_stdio` duplicates the standard file descriptors and wraps the
copies in small byte streams that a
:class:`~wireproto.transports._framed.FramedStream` frames into whole
messages. The fd streams only pump bytes; they work on asyncio and trio alike:

* pipes, sockets, FIFOs and terminals are switched to non-blocking mode.
  Writes are tried at once and wait with ``anyio.wait_writable`` only when
  the pipe is full. On asyncio the read side stays registered with the event loop
  for the stream's lifetime (``loop.add_reader``, as ``connect_read_pipe``
  does): the loop's callback reads into a small buffer (at most
  ``_PAUSE_AT`` bytes, then reading pauses until it is drained) and wakes a
  waiting ``receive``, so a read that has to wait costs no ``epoll_ctl`` and
  no ``EAGAIN`` read. On trio a read that would block waits with
  ``anyio.wait_readable``;
* anything the event loop cannot poll (regular files, ``/dev/null``) is read
  and written in a worker thread (``anyio.to_thread.run_sync``).

The blocking mode of each descriptor is restored on close. Non-blocking mode
belongs to the open file description, so while the stream is open it is also
seen by other processes sharing the same pipe or terminal.

stdout is reserved for protocol messages: with ``reserve_stdout=True`` (the
default) fd 1 and :data:`sys.stdout` point at stderr while the stream is open,
so a stray ``print`` cannot corrupt the protocol. Both are restored on exit
(fd 1 only if the protocol side was not closed early to signal EOF).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from wireproto._backend import running_asyncio_loop
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES
from wireproto.transports._framed import READ_SIZE, FramedStream

__all__ = ["FdReceiveStream", "FdSendStream", "StdioStream", "open_stdio"]

T = TypeVar("T")

_PAUSE_AT = 4 * READ_SIZE
"""Buffered inbound bytes at which the asyncio reader stops reading the fd."""


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd`` (pipe, socket, terminal)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    return stat.S_ISCHR(mode) and os.isatty(fd)


class _Fd:
    """One owned file descriptor in non-blocking or worker-thread mode."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pollable = _pollable(fd)
        self._was_blocking = os.get_blocking(fd)
        if self.pollable:
            os.set_blocking(fd, False)
        self.closed = False
        self.interrupted = False  # set by interrupt_receive for the receive in progress
        self.on_close: Callable[[], None] | None = None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.on_close is not None:
            self.on_close()
        if self.pollable:
            anyio.notify_closing(self.fd)
            try:
                os.set_blocking(self.fd, self._was_blocking)
            except OSError:
                pass
        os.close(self.fd)

    async def io(
        self, op: Callable[[int, Any], T], arg: Any, wait: Callable[[int], Awaitable[None]]
    ) -> T:
        """Return ``op(fd, arg)`` (``os.read`` / ``os.write``) once it can proceed.

        Raises:
            anyio.BrokenResourceError: the operation failed (chained).
            anyio.ClosedResourceError: the descriptor was closed, or the
                receive was interrupted (checked before every attempt, so
                also after every wake-up and right before every wait).
        """
        while True:
            if self.closed or self.interrupted:
                raise anyio.ClosedResourceError
            try:
                if self.pollable:
                    return op(self.fd, arg)
                return await anyio.to_thread.run_sync(op, self.fd, arg)
            except BlockingIOError:
                await wait(self.fd)
            except OSError as exc:
                if self.closed:
                    raise anyio.ClosedResourceError from exc
                raise anyio.BrokenResourceError(f"{op.__name__} failed: {exc}") from exc


class _LoopReader:
    """Keeps a pollable fd registered with an asyncio loop and buffers what it reads."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = fd
        self._loop = loop
        self._buffer = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._error: OSError | None = None
        self._eof = False
        self._reading = False
        self._resume()

    def _resume(self) -> None:
        if not self._reading and not self._eof and self._error is None:
            self._reading = True
            self._loop.add_reader(self._fd, self._on_readable)

    def _pause(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._error = exc
            self._pause()
        else:
            if data:
                self._buffer += data
                if len(self._buffer) >= _PAUSE_AT:
                    self._pause()
            else:
                self._eof = True
                self._pause()
        self._wake()

    def interrupt(self) -> None:
        """Wake a waiting ``receive`` (it then sees ``fd.interrupted``)."""
        self._wake()

    def detach(self) -> None:
        """Unregister the fd (before it is closed) and wake a waiting ``receive``."""
        self._pause()
        self._eof = True
        self._wake()

    async def receive(self, max_bytes: int, fd: _Fd) -> bytes:
        """Return buffered bytes, waiting for some; ``b""`` at end of input."""
        if self._buffer or self._eof or self._error is not None:
            await anyio.lowlevel.checkpoint()
        else:
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if fd.closed or fd.interrupted:
            raise anyio.ClosedResourceError
        buffer = self._buffer
        if buffer:
            if len(buffer) <= max_bytes:
                data = bytes(buffer)
                buffer.clear()
            else:
                data = bytes(buffer[:max_bytes])
                del buffer[:max_bytes]
            if len(buffer) < _PAUSE_AT:
                self._resume()
            return data
        if self._error is not None:
            exc = self._error
            raise anyio.BrokenResourceError(f"read failed: {exc}") from exc
        return b""


class FdReceiveStream(anyio.abc.ByteReceiveStream):
    """Read bytes from a file descriptor this stream owns (closes on ``aclose``).

    ``aclose`` wakes a pending ``receive`` (it raises ``ClosedResourceError``)
    when the descriptor is polled; a read in a worker thread (a regular
    file) cannot be interrupted.
    """

    def __init__(self, fd: int) -> None:
        self._fd = _Fd(fd)
        self._guard = anyio.ResourceGuard("reading from")
        self._reader: _LoopReader | None = None
        self._receiving = False

    @property
    def wakes_on_close(self) -> bool:
        """Whether ``aclose`` and :meth:`interrupt_receive` wake a pending
        ``receive`` (see ``_framed.SupportsWakeOnClose``): only when the
        descriptor is polled, not read in a worker thread."""
        return self._fd.pollable

    @property
    def fd(self) -> int:
        """The underlying file descriptor."""
        return self._fd.fd

    @property
    def reads_ahead(self) -> bool:
        """Whether the event loop reads the descriptor ahead of ``receive`` (on asyncio,
        from the first ``receive`` on): bytes may then sit in this stream, not in the fd."""
        return self._reader is not None

    def interrupt_receive(self) -> None:
        """Make the ``receive`` in progress raise ``anyio.ClosedResourceError``.

        It raises whatever it is doing (waiting for bytes, or about to); a
        later ``receive`` is not affected. The descriptor stays open; a read
        already running in a worker thread is not interrupted.
        """
        fd = self._fd
        if not self._receiving or fd.closed:
            return
        fd.interrupted = True  # (sticky until that receive ends: seen after any wake-up)
        if self._reader is not None:
            self._reader.interrupt()
        elif fd.pollable:
            anyio.notify_closing(fd.fd)  # wakes a wait_readable (it does not close)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Return at least one byte.

        Raises:
            anyio.EndOfStream: end of input.
            anyio.BrokenResourceError: the read failed (e.g. connection reset).
            anyio.ClosedResourceError: this stream was closed.
        """
        with self._guard:
            fd = self._fd
            reader = self._reader
            if reader is None and fd.pollable and not fd.closed:
                loop = running_asyncio_loop()
                if loop is not None:
                    reader = self._reader = _LoopReader(fd.fd, loop)
                    fd.on_close = reader.detach
            self._receiving = True
            try:
                if reader is not None:
                    data = await reader.receive(max_bytes, fd)
                else:
                    await anyio.lowlevel.checkpoint()
                    data = await fd.io(os.read, max_bytes, anyio.wait_readable)
            finally:
                self._receiving = False
                fd.interrupted = False
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        """Close the descriptor, waking a pending ``receive``."""
        self._fd.close()
        await anyio.lowlevel.checkpoint()


class FdSendStream(anyio.abc.ByteSendStream):
    """Write bytes to a file descriptor this stream owns (closes on ``aclose``)."""

    def __init__(self, fd: int) -> None:
        self._fd = _Fd(fd)
        self._guard = anyio.ResourceGuard("writing to")
        self._busy = False

    @property
    def fd(self) -> int:
        """The underlying file descriptor."""
        return self._fd.fd

    @property
    def closed(self) -> bool:
        """Whether the descriptor was closed."""
        return self._fd.closed

    async def send(self, item: bytes) -> None:
        """Write all of ``item``, waiting while the pipe is full.

        Raises:
            anyio.BrokenResourceError: the reader went away (``EPIPE``).
            anyio.ClosedResourceError: this stream was closed.
        """
        with self._guard:
            self._busy = True
            try:
                await anyio.lowlevel.checkpoint()
                view = memoryview(item)
                while view:
                    written = await self._fd.io(os.write, view, anyio.wait_writable)
                    view = view[written:]
            finally:
                self._busy = False

    def write_nowait(self, data: bytes) -> int:
        """Write what the pipe takes now; return the number of bytes written.

        Returns 0 when the descriptor cannot be written without waiting (a
        full pipe, a file written by a worker thread, a ``send`` in progress).

        Raises:
            anyio.BrokenResourceError: the reader went away (``EPIPE``).
            anyio.ClosedResourceError: this stream was closed.
        """
        fd = self._fd
        if fd.closed:
            raise anyio.ClosedResourceError
        if self._busy or not fd.pollable:
            return 0
        try:
            return os.write(fd.fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise anyio.BrokenResourceError(f"write failed: {exc}") from exc

    async def aclose(self) -> None:
        """Close the descriptor (the reader then sees end of stream)."""
        self._fd.close()
        await anyio.lowlevel.checkpoint()


class StdioStream(FramedStream):
    """Messages over this process's stdin and stdout (an ``ObjectStream[bytes]``).

    Created by :func:`open_stdio`; ``send_eof`` closes the protocol output so
    the other side sees end of stream while this side keeps reading.
    """


@asynccontextmanager
async def open_stdio(
    *,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    reserve_stdout: bool = True,
) -> AsyncIterator[StdioStream]:
    """Open this process's stdin/stdout as a message stream.

    Args:
        max_bytes: the largest accepted inbound message (default 64 MiB).
        reserve_stdout: point fd 1 and ``sys.stdout`` at stderr while the
            stream is open, so only protocol messages reach the real stdout.

    Yields:
        the stream; it is closed on exit and the standard streams restored.

    Raises:
        OSError: stdin or stdout is not open.
    """
    in_fd = os.dup(0)
    try:
        out_fd = os.dup(1)
    except BaseException:
        os.close(in_fd)
        raise
    saved_stdout = sys.stdout
    if reserve_stdout:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    writer = FdSendStream(out_fd)
    stream = StdioStream(FdReceiveStream(in_fd), writer, max_bytes=max_bytes)
    try:
        yield stream
    finally:
        with anyio.CancelScope(shield=True):
            if reserve_stdout:
                sys.stdout = saved_stdout
                try:
                    saved_stdout.flush()
                except (OSError, ValueError):
                    pass
                if not writer.closed:
                    os.dup2(writer.fd, 1)
            await stream.aclose()
