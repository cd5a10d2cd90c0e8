"""open_stdio specifics: standard streams restored, regular files, /dev/null."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import IO

import anyio
import anyio.to_thread
import pytest

from wireproto.transports.subprocess import open_subprocess

from .conftest import HELPERS

pytestmark = pytest.mark.anyio


async def test_streams_are_restored_on_exit(anyio_backend_name: str) -> None:
    cmd = [sys.executable, str(HELPERS / "stdio_probe.py"), anyio_backend_name, "keep"]
    async with open_subprocess(cmd, stderr="log") as stream:
        await stream.send(b"hello\n")
        assert await stream.receive() == b"hello"
        # After open_stdio, fd 1 and sys.stdout are the protocol pipe again.
        report = json.loads(await stream.receive())
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
    assert report["before"] == [True, True]
    assert report["during"] == [False, False]  # pipes: non-blocking I/O
    assert report["after"] == [True, True]  # and blocking again after


async def test_closing_the_stream_sends_eof_and_keeps_stdout_reserved(
    anyio_backend_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    cmd = [sys.executable, str(HELPERS / "stdio_probe.py"), anyio_backend_name, "close"]
    async with open_subprocess(cmd, stderr="log") as stream:
        await stream.send(b"hello\n")
        assert await stream.receive() == b"hello"
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        assert await stream.wait() == 0
    # The protocol output was closed, so the report went to stderr.
    reports = [r.getMessage() for r in caplog.records if '"before"' in r.getMessage()]
    assert len(reports) == 1
    assert json.loads(reports[0].split(": ", 1)[1])["after"] == [True, True]


def run_echo(backend: str, stdin: int | IO[bytes], out: Path, max_bytes: int) -> None:
    cmd = [sys.executable, str(HELPERS / "echo.py"), backend, str(max_bytes)]
    with out.open("wb") as stdout:
        subprocess.run(cmd, stdin=stdin, stdout=stdout, check=True, timeout=30)


async def test_regular_files_use_worker_threads(anyio_backend_name: str, tmp_path: Path) -> None:
    limit = 1024 * 1024
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        b'{"a":1}\n' + b"z" * (2 * limit) + b"\n" + '"héllo"'.encode()  # last line unterminated
    )
    out = tmp_path / "out.jsonl"
    with source.open("rb") as stdin:
        await anyio.to_thread.run_sync(run_echo, anyio_backend_name, stdin, out, limit)
    assert out.read_bytes().split(b"\n") == [
        b'{"a":1}', b"!too-large", '"héllo"'.encode(), b"!eof", b""
    ]


async def test_dev_null_stdin_is_end_of_stream(anyio_backend_name: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    await anyio.to_thread.run_sync(run_echo, anyio_backend_name, subprocess.DEVNULL, out, 1024)
    assert out.read_bytes() == b"!eof\n"
