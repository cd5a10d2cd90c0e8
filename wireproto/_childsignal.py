"""A signal to a child process, by its pid, and only while that pid is still the child's.

``Popen.send_signal`` (behind asyncio's ``terminate`` and ``kill`` before Python 3.13)
first polls the child, and so reaps one that has just exited before the event loop saw
it (the loop then reports status 255 and logs a warning): :func:`signal_child` signals
by pid instead. But asyncio learns of an exit a callback after reaping the child (its
watcher, a thread or a pidfd reader, reaps and then schedules the news), and meanwhile
the process still says ``returncode is None`` while its pid is free for another
process: so the pid is signalled only while it still names a child of ours that has not
exited (``waitid`` with ``WNOWAIT``: asked, not reaped).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio.abc

__all__ = ["signal_child"]

_WAITID = getattr(os, "waitid", None)  # (not on every platform: there, by pid alone)


def signal_child(process: anyio.abc.Process, signum: int) -> None:
    """Send ``signum`` to ``process``, unless it is known to have exited or its pid
    no longer names a running child of ours. A child that already exited is not an
    error."""
    if process.returncode is not None or _ended(process.pid):
        return
    try:
        os.kill(process.pid, signum)
    except ProcessLookupError:
        pass


def _ended(pid: int) -> bool:
    """Whether ``pid`` is a child of ours that exited (not reaped: left so), or no
    child of ours (reaped already, its pid maybe another process's now)."""
    if _WAITID is None:
        return False
    try:
        return _WAITID(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
