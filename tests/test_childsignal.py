"""wireproto._childsignal: a signal by pid, and only while the pid still names the child."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from wireproto._childsignal import signal_child

pytestmark = pytest.mark.anyio

# A child that starts a grandchild, says its pid, then how it ended.
PARENT = (
    "import subprocess, sys\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(grandchild.pid, flush=True)\n"
    "print(grandchild.wait(), flush=True)\n"
)


@dataclass
class _Reaped:
    """A process as asyncio shows one it has reaped but not yet heard of: its
    ``returncode`` still ``None``, its pid free (here: another process's)."""

    pid: int
    returncode: int | None = None


@pytest.mark.skipif(not hasattr(os, "waitid"), reason="no waitid: signalled by pid alone")
async def test_a_pid_now_naming_another_process_is_not_signalled() -> None:
    async with await anyio.open_process(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE
    ) as parent:
        assert parent.stdout is not None
        lines = BufferedByteReceiveStream(parent.stdout)
        other = int(await lines.receive_until(b"\n", 32))
        try:
            signal_child(_Reaped(other), signal.SIGKILL)  # type: ignore[arg-type]
        finally:
            os.kill(other, signal.SIGTERM)
        # (a SIGKILL sent first would have ended it, whatever came next)
        assert int(await lines.receive_until(b"\n", 32)) == -signal.SIGTERM
        assert await parent.wait() == 0


async def test_a_running_child_is_signalled() -> None:
    async with await anyio.open_process(
        [sys.executable, "-c", "import time; print(flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None
        await BufferedByteReceiveStream(child.stdout).receive_until(b"\n", 8)
        signal_child(child, signal.SIGTERM)
        assert await child.wait() == -signal.SIGTERM


async def test_an_exited_child_keeps_its_status() -> None:
    async with await anyio.open_process(
        [sys.executable, "-c", "raise SystemExit(7)"], stdout=subprocess.PIPE
    ) as child:
        assert child.stdout is not None
        with contextlib.suppress(anyio.EndOfStream):
            await child.stdout.receive()  # (its pipe ends with it)
        with contextlib.suppress(ChildProcessError):  # (a watcher thread may reap it first)
            os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # noqa: ASYNC222
        signal_child(child, signal.SIGKILL)
        assert await child.wait() == 7
