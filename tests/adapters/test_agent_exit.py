"""A spawned agent that dies before answering: the error says why (real subprocesses)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wireproto.adapters.acp import connect_acp
from wireproto.adapters.wire import connect_wire
from wireproto.errors import ConnectionClosed, ProcessExited

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
