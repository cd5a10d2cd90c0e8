"""Shared pieces of the subcommands: the one-line error, signals, the event loop.

Signals: SIGTERM and SIGHUP ask a server to stop (``stop`` is set: running
turns are cancelled, pending requests resolved, output flushed). SIGINT does
the same only when stdin is a terminal: a server spawned with pipes belongs
to its parent, and a Ctrl-C typed into the parent's terminal (which reaches
the whole process group) is the parent's to handle. A second signal, or the
shutdown running over its grace period, cancels everything at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence

import anyio
import anyio.abc

__all__ = [
    "SHUTDOWN_GRACE", "CliError", "UsageError", "as_cli_error", "one_line", "run", "watch_signals",
]

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 4.5
"""Seconds a stopping server may take before its work is cancelled outright."""


class CliError(Exception):
    """A failure reported as ``wireproto: error: MESSAGE`` (no traceback), exit status 1.

    Attributes:
        details: lines printed after the error line, indented (e.g. the last
            stderr lines of an agent that exited).
    """

    status = 1
    """The exit status this failure ends the command with."""

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)


class UsageError(CliError):
    """Options that do not go together (or a missing one): the same one line, exit status 2."""

    status = 2


def as_cli_error(exc: BaseException) -> BaseException:
    """``exc``, or its grouped :class:`CliError`; an exited process becomes one (its stderr)."""
    from wireproto.errors import ProcessExited, first_leaf

    leaf = first_leaf(exc)
    if isinstance(leaf, ProcessExited):
        return CliError(leaf.summary, leaf.stderr)
    if isinstance(leaf, CliError):  # (keeps its exit status)
        return leaf
    return exc


def one_line(exc: BaseException) -> str:
    """A one-line description of ``exc`` (the first leaf of an exception group)."""
    from wireproto.errors import first_leaf

    exc = first_leaf(exc)
    text = " ".join(str(exc).split())
    if isinstance(exc, (CliError, OSError)) or type(exc).__module__.startswith("wireproto"):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run(main: Callable[[], Awaitable[int]]) -> int:
    """Run ``main`` on the asyncio event loop and return its exit status."""
    return anyio.run(main, backend="asyncio")


def _stop_signals() -> tuple[signal.Signals, ...]:
    signals = [signal.SIGTERM, signal.SIGHUP]
    try:
        interactive = os.isatty(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):
        interactive = False
    if interactive:
        signals.append(signal.SIGINT)
    return tuple(signals)


async def watch_signals(
    stop: anyio.Event,
    scope: anyio.CancelScope,
    *,
    grace: float = SHUTDOWN_GRACE,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Set ``stop`` on the first stop signal; cancel ``scope`` on a second one
    or when the shutdown takes longer than ``grace`` seconds.

    SIGINT counts only when stdin is a terminal (see the module docstring);
    otherwise it is ignored, so it cannot kill the process either. Use
    ``await tg.start(watch_signals, ...)`` to know the handlers are in place.
    """
    stops = _stop_signals()
    watched = stops if signal.SIGINT in stops else (*stops, signal.SIGINT)
    with anyio.open_signal_receiver(*watched) as signals:
        task_status.started()
        async with anyio.create_task_group() as tg:
            async for signum in signals:
                name = signal.Signals(signum).name
                if signum not in stops:
                    log.info("%s ignored: stdin is not a terminal (close stdin or send "
                             "SIGTERM to stop)", name)
                    continue
                if stop.is_set():
                    log.warning("%s again: stopping now", name)
                    scope.cancel()
                    return
                log.info("%s: shutting down", name)
                stop.set()
                tg.start_soon(_deadline, scope, grace)


async def _deadline(scope: anyio.CancelScope, grace: float) -> None:
    await anyio.sleep(grace)
    log.warning("the shutdown took longer than %g s; stopping now", grace)
    scope.cancel()
