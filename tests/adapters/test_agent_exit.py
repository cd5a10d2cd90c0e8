"""A spawned agent that dies before answering: the error says why (real subprocesses)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from timeouts import units

from wireproto.adapters.acp import connect_acp
from wireproto.adapters.wire import connect_wire
from wireproto.errors import ConnectionClosed, ProcessExited
from wireproto.rpc import Peer
from wireproto.transports import open_stream

pytestmark = pytest.mark.anyio

CRASH = (
    "import sys\n"
    "for n in range(30):\n"
    "    print(f'noise line {n}', file=sys.stderr)\n"
    "print('Traceback (most recent call last):', file=sys.stderr)\n"
    "print('RuntimeError: no API key (token hunter2-secret)', file=sys.stderr)\n"
    "sys.exit(3)\n"
)


def _crash(tmp_path: Path) -> list[str]:
    script = tmp_path / "crash.py"
    script.write_text(CRASH, encoding="utf-8")
    return [sys.executable, str(script)]


def _check(exc: ProcessExited) -> None:
    assert exc.returncode == 3
    assert "initialize" in exc.reason
    assert exc.stderr[-1] == "RuntimeError: no API key (token [redacted])"
    assert len(exc.stderr) <= 12 and "noise line 0" not in exc.stderr  # bounded
    text = str(exc)
    assert "exited with status 3; its last stderr lines:" in text.splitlines()[0]
    assert "hunter2-secret" not in text
    assert isinstance(exc, ConnectionClosed)  # still what callers catch today


async def test_connect_acp_reports_exit_status_and_stderr(tmp_path: Path) -> None:
    with pytest.raises(ProcessExited) as info:
        async with connect_acp(_crash(tmp_path), redact=["hunter2-secret"]):
            pass  # pragma: no cover
    _check(info.value)


async def test_connect_wire_reports_exit_status_and_stderr(tmp_path: Path) -> None:
    with pytest.raises(ProcessExited) as info:
        async with connect_wire(_crash(tmp_path), redact=["hunter2-secret"]):
            pass  # pragma: no cover
    _check(info.value)


async def test_a_local_close_is_not_blamed_on_the_process(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "wireproto", "acp"]
    env = {"WIREPROTO_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    with pytest.raises(ConnectionClosed) as info:
        async with connect_acp(cmd, env=env) as client:
            raise ConnectionClosed("given up locally")
    assert not isinstance(info.value, ProcessExited)
    assert client is not None


# Stops reading its input, says so, and exits a moment later.
DEAF = (
    "import os, sys\nfrom time import sleep\n"
    "os.close(0)\n"
    "sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"deaf\"}\\n'); sys.stdout.flush()\n"
    "sleep(0.3)\n"
    "print('RuntimeError: gone', file=sys.stderr)\n"
    "sys.exit(3)\n"
)


@pytest.mark.parametrize("stopped", [
    "closed its stdin",
    pytest.param("is still running", marks=pytest.mark.slow),  # waits out EXIT_WAIT (seconds)
])
async def test_a_request_written_to_a_process_that_stopped_reading(stopped: str) -> None:
    """A request can meet the closed pipe (``EPIPE``) before the exit is seen: an exit
    that follows still explains it; a child that only closed its stdin is not blamed."""
    script = DEAF if stopped == "closed its stdin" else DEAF.replace("sys.exit(3)", "sleep(60)")
    cmd = [sys.executable, "-c", script]
    with pytest.raises(ConnectionClosed) as info:
        async with open_stream(cmd=cmd, stderr="log", shutdown_timeout=0.1) as stream:
            assert await stream.receive() == b'{"jsonrpc":"2.0","method":"deaf"}'
            async with Peer(stream) as peer:
                await peer.request("initialize", timeout=units(2))
    assert "connection closed before initialize was answered" in str(info.value)
    if stopped == "closed its stdin":
        assert isinstance(info.value, ProcessExited)
        assert info.value.returncode == 3
        assert info.value.stderr[-1] == "RuntimeError: gone"
    else:
        assert not isinstance(info.value, ProcessExited)
