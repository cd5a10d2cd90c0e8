"""A child process's stdin/stdout as a message stream (the client side of stdio).

Theory of operation
-------------------
:func:`open_subprocess` starts the child with ``anyio.open_process`` on
pipes it creates itself, and frames our ends with
:class:`~wireproto.transports._framed.FramedStream` over the same
non-blocking descriptor streams the stdio transport uses
(:class:`~wireproto.transports.stdio.FdReceiveStream`,
:class:`~wireproto.transports.stdio.FdSendStream`): a message is written
straight from the producer when the pipe has room, and on asyncio the read
side stays registered with the event loop.
The child's stderr is never an unread pipe (a full one blocks the child):
it is either inherited, or drained line by line into :mod:`logging` by a task
owned by the context manager. Secrets the caller handed the child (``redact``:
tokens, API keys in its environment) are masked in those log lines, so a
child that prints its environment does not put them in our log; a secret
handed over later (in a message, e.g. a credential in an MCP server's
environment) is registered with :meth:`SubprocessStream.redact` before it is
sent, and masked from then on.

Closing the stream (``aclose``) closes the child's stdin only: its stdout
stays open so that a child flushing its last messages on EOF does not die of
``EPIPE``. Leaving the context runs the shutdown ladder, shielded from
cancellation, while whatever the child still writes to stdout is discarded:

1. close its stdin (the child sees EOF);
2. wait up to ``shutdown_timeout`` for it to exit;
3. send SIGTERM and wait up to ``shutdown_timeout`` again;
4. send SIGKILL and reap it;
5. close the pipes.

The exit status stays available on :attr:`SubprocessStream.returncode`,
and with ``stderr="log"`` the last lines the child wrote to stderr on
:attr:`SubprocessStream.stderr_tail` (bounded, secrets masked). When the
connection ends because the child went away, :meth:`SubprocessStream.explain`
turns the :class:`~wireproto.errors.ConnectionClosed` into a
:class:`~wireproto.errors.ProcessExited` carrying both: the entry points
(:func:`~wireproto.transports.open.open_stream` and what builds on it) raise
that instead, so a child that dies at start-up says why.

After the shutdown :attr:`SubprocessStream.ended_by` says which step ended
the child; the shutdown is logged with it.

**Environment.** Every spawning API of wireproto (this one, ``open_stream``,
``connect_acp``, ``connect_wire``, ``connect_mcp``, the host's executors and
``LocalTerminals``) treats ``env`` the same way: its entries are set **on
top of** this process's environment. Pass ``inherit_env=False`` to give the
child exactly ``env`` and nothing else (:func:`child_env`).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import anyio
import anyio.abc

from wireproto._childsignal import signal_child
from wireproto._masking import masked
from wireproto.errors import ConnectionClosed, ProcessExited
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES
from wireproto.transports._framed import FramedStream
from wireproto.transports.stdio import FdReceiveStream, FdSendStream

__all__ = ["StderrMode", "SubprocessStream", "child_env", "open_subprocess"]

log = logging.getLogger(__name__)
stderr_log = logging.getLogger(__name__ + ".stderr")
"""The logger receiving a child's stderr lines (``stderr="log"``)."""

StderrMode = Literal["inherit", "log"]
"""``"inherit"``: the child writes to our stderr; ``"log"``: lines go to :data:`stderr_log`."""

_STDERR_LINE_LIMIT = 64 * 1024  # a longer stderr line is logged in pieces
REDACTED = "[redacted]"
"""What replaces a secret in a logged stderr line."""

TAIL_LINES = 12
"""Stderr lines a :class:`SubprocessStream` keeps for :meth:`~SubprocessStream.explain`."""
_TAIL_LINE_CHARS = 300  # a longer kept line is cut
EXIT_WAIT = 2.0
"""Seconds :meth:`SubprocessStream.explain` waits for the child to exit and its stderr to end."""


def child_env(env: Mapping[str, str] | None, inherit_env: bool = True) -> dict[str, str] | None:
    """The environment of a spawned child: ``env`` on top of ours, or ``env`` alone.

    Returns:
        ``None`` (ours, unchanged) when there is nothing to add and
        ``inherit_env`` holds; else the whole environment.
    """
    if inherit_env:
        return None if not env else {**os.environ, **env}
    return dict(env or {})


def _broken_pipe(exc: BaseException) -> bool:
    """Whether ``exc`` was caused by a write the reader went away from (``EPIPE``)."""
    seen = set()
    cause = exc.__cause__
    while cause is not None and id(cause) not in seen:  # (a chain may loop)
        if isinstance(cause, BrokenPipeError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False


class SubprocessStream(FramedStream):
    """Messages over a child's stdin/stdout (an ``ObjectStream[bytes]``).

    ``send_eof`` closes the child's stdin, and so does ``aclose``, which also
    makes ``receive`` raise ``ClosedResourceError`` (the process and its
    stdout are then left to :func:`open_subprocess`'s shutdown ladder).
    """

    def __init__(
        self,
        process: anyio.abc.Process,
        stdout: FdReceiveStream,
        stdin: FdSendStream,
        *,
        max_bytes: int,
    ) -> None:
        super().__init__(stdout, stdin, max_bytes=max_bytes)
        self.process = process
        self.stdout = stdout
        self.program = "the process"
        self.stderr_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.stderr_done = anyio.Event()
        self._secrets: tuple[str, ...] = ()  # masked in stderr lines
        self.ended_by: str | None = None
        """How the child ended during shutdown: ``"stdin closed"`` (it exited
        by itself), ``"SIGTERM"`` or ``"SIGKILL"``; ``None`` before."""

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status (negative: killed by that signal), ``None`` while running."""
        return self.process.returncode

    async def wait(self) -> int:
        """Wait for the child to exit and return its exit status."""
        return await self.process.wait()

    def redact(self, *secrets: str) -> None:
        """Mask ``secrets`` too (as ``[redacted]``) in the stderr lines logged from now on.

        For a secret handed to the child after it started: register it before
        sending it. Empty strings are ignored; a secret stays masked for the
        life of the stream.
        """
        new = {x for x in secrets if x}.difference(self._secrets)
        if new:
            self._secrets = (*self._secrets, *new)

    async def aclose(self) -> None:
        """Close the child's stdin and stop receiving (idempotent)."""
        self._interrupt_read()
        await self.send_eof()

    async def explain(self, exc: ConnectionClosed, *, wait: float = EXIT_WAIT) -> ConnectionClosed:
        """``exc`` with the child's side of the story, when the child went away.

        When the child exited, or closed its stdout, waits up to ``wait``
        seconds for its exit and for the end of its stderr, then returns a
        :class:`~wireproto.errors.ProcessExited` with ``exc``'s message as
        the reason, the exit status and :attr:`stderr_tail`. So it does when
        ``exc`` came from a write to a stdin the child no longer reads
        (``EPIPE``: usually the first sign of its exit) and it exits within
        ``wait``. Otherwise (the connection was closed on this side, the
        child is still talking) returns ``exc`` itself.
        """
        if isinstance(exc, ProcessExited):
            return exc
        gone = self.returncode is not None or self._eof
        if not gone and not _broken_pipe(exc):
            return exc
        with anyio.move_on_after(wait, shield=True):
            await self.process.wait()
            await self.stderr_done.wait()
        if not gone and self.returncode is None and not self._eof:  # it only closed its stdin
            return exc
        reason = str(exc) or "the connection closed"
        return ProcessExited(reason, self.program, self.returncode, tuple(self.stderr_tail))


@asynccontextmanager
async def open_subprocess(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: StderrMode = "inherit",
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_timeout: float = 5.0,
    start_new_session: bool = False,
    redact: Collection[str] = (),
    inherit_env: bool = True,
) -> AsyncIterator[SubprocessStream]:
    """Start ``cmd`` and talk to it over its stdin/stdout.

    Args:
        cmd: the program and its arguments (no shell).
        env: variables set for the child on top of our environment.
        inherit_env: ``False``: the child gets exactly ``env`` (nothing of ours).
        cwd: the child's working directory (default: ours).
        stderr: ``"inherit"`` or ``"log"`` (drained into :data:`stderr_log`).
        max_bytes: the largest accepted inbound message (default 64 MiB).
        shutdown_timeout: seconds each step of the shutdown ladder waits
            (first for the child to exit after its stdin closed, then after SIGTERM).
        start_new_session: run the child in its own session, so a terminal's
            Ctrl-C (SIGINT to our process group) does not reach it.
        redact: secrets masked (as ``[redacted]``) in the stderr lines logged
            with ``stderr="log"``; empty strings are ignored. More can be
            added while the child runs (:meth:`SubprocessStream.redact`).

    Yields:
        the stream, also giving the child's ``pid`` and ``returncode``.

    Raises:
        OSError: the program could not be started.
        TypeError: ``cmd`` is one string (it is a list: the program, then each argument).
        ValueError: ``stderr`` is not a known mode.
    """
    if isinstance(cmd, (str, bytes)):  # (else each character would be an argument)
        raise TypeError(f"the command is a list (the program, then each argument), not one "
                        f"string: {cmd.split()!r} rather than {cmd!r}")
    if stderr not in ("inherit", "log"):
        raise ValueError(f"unknown stderr mode {stderr!r}")
    child_in, our_in = os.pipe()
    our_out, child_out = os.pipe()
    stdout, stdin = FdReceiveStream(our_out), FdSendStream(our_in)
    try:
        process = await anyio.open_process(
            list(cmd),
            stdin=child_in,
            stdout=child_out,
            stderr=subprocess.PIPE if stderr == "log" else None,
            env=child_env(env, inherit_env),
            cwd=cwd,
            start_new_session=start_new_session,
        )
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await stdout.aclose()
            await stdin.aclose()
        if isinstance(exc, FileNotFoundError) and exc.filename == cmd[0] and os.sep not in cmd[0]:
            raise FileNotFoundError(exc.errno, f"{exc.strerror} (a program looked up on PATH; "
                                    "give its full path, or [sys.executable, '-m', MODULE] for "
                                    "a Python module)", cmd[0]) from None
        raise
    finally:
        for fd in (child_in, child_out):
            os.close(fd)
    name = os.path.basename(cmd[0])
    log.debug("started %s (pid %d)", name, process.pid)
    stream = SubprocessStream(process, stdout, stdin, max_bytes=max_bytes)
    stream.program = f"{name} (pid {process.pid})"
    stream.redact(*redact)
    # The task group is entered and left by hand so that an exception from
    # the body propagates as itself rather than inside an ExceptionGroup.
    tg = anyio.create_task_group()
    await tg.__aenter__()
    drained = stream.stderr_done
    if process.stderr is not None:
        tg.start_soon(_drain_stderr, process.stderr, f"{name}[{process.pid}]", stream)
    else:
        drained.set()
    try:
        yield stream
    finally:
        try:
            with anyio.CancelScope(shield=True):
                await _shut_down(stream, name, shutdown_timeout)
                with anyio.move_on_after(shutdown_timeout):
                    await drained.wait()  # the rest of stderr, until EOF
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        finally:
            with anyio.CancelScope(shield=True):
                await stream.stdout.aclose()
                await process.aclose()


async def _shut_down(stream: SubprocessStream, name: str, step: float) -> None:
    """The shutdown ladder: close stdin, wait, terminate, wait, kill."""
    process = stream.process
    await stream.aclose()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_discard, stream.stdout)
        ended_by = "stdin closed"
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with anyio.move_on_after(step):
                await process.wait()
            if process.returncode is not None:
                break
            log.warning("%s (pid %d) still running %g s after %s; sending %s", name,
                        process.pid, step, ended_by, signum.name)
            ended_by = signum.name
            signal_child(process, signum)
        returncode = await process.wait()
        tg.cancel_scope.cancel()
    stream.ended_by = ended_by
    level = logging.DEBUG if ended_by == "stdin closed" else logging.INFO
    log.log(level, "%s (pid %d) exited with status %d, ended by %s", name, process.pid,
            returncode, ended_by)


async def _discard(source: anyio.abc.ByteReceiveStream) -> None:
    """Read and drop what the child writes after we stopped listening."""
    try:
        async for _ in source:
            pass
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass


async def _drain_stderr(
    source: anyio.abc.ByteReceiveStream, label: str, stream: SubprocessStream
) -> None:
    """Log every line the child writes to stderr until it closes the pipe.

    Each line is masked with the stream's secrets at that moment; the last
    lines (long ones cut) are also kept in its ``stderr_tail``.
    """
    pending = b""
    tail = stream.stderr_tail
    try:
        async for chunk in source:
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                _log_stderr(label, line, stream._secrets, tail)
            if len(pending) > _STDERR_LINE_LIMIT:
                cut = _cut(pending, [secret.encode() for secret in stream._secrets])
                _log_stderr(label, pending[:cut], stream._secrets, tail)
                pending = pending[cut:]
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        if pending:
            _log_stderr(label, pending, stream._secrets, tail)
        stream.stderr_done.set()


def _cut(data: bytes, secrets: list[bytes]) -> int:
    """Where a piece of a long stderr line may end: no secret across it, and the start
    of one that the next read may complete (its length less one byte) held back."""
    cut = len(data) - max(map(len, secrets), default=1) + 1
    moved = True
    while moved:
        moved = False
        for secret in secrets:
            found = data.find(secret, max(cut - len(secret) + 1, 0), cut + len(secret) - 1)
            if 0 <= found < cut:
                cut, moved = found, True
    return max(cut, 1)  # (a secret longer than a piece cannot be kept whole)


def _log_stderr(label: str, line: bytes, secrets: tuple[str, ...], tail: deque[str]) -> None:
    text = line.rstrip(b"\r").decode("utf-8", "replace")
    text = masked(text, secrets, REDACTED)  # (overlapping ones: whole)
    stderr_log.info("%s: %s", label, text)
    if text.strip():
        tail.append(text if len(text) <= _TAIL_LINE_CHARS else text[:_TAIL_LINE_CHARS] + " ...")
