"""Checks run in a child Python: their answer, a time bound, a failure said as one."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import anyio
import anyio.abc
import pytest

from wireproto import _childcheck
from wireproto._childcheck import CheckFailed, check_apart, search_apart

pytestmark = pytest.mark.anyio

READY = "print(flush=True)\n"


async def test_the_answer_of_the_child() -> None:
    code = READY + "sys.stdout.write(sys.stdin.read().upper())\n"
    assert await check_apart(code, b"given") == b"GIVEN"


async def test_a_check_past_its_time_is_none_and_its_child_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = (f"import os, pathlib\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
            + READY + "while True: pass\n")  # (the pid written before the time counts)
    assert await check_apart(code, b"", 0.5) is None
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)


async def test_a_slow_start_is_not_counted() -> None:
    code = "import time\ntime.sleep(2.5)\n" + READY + "sys.stdout.write('done')\n"
    assert await check_apart(code, b"") == b"done"  # (2 s to check, once ready)


@pytest.mark.parametrize("code", ["raise SystemExit(3)\n", READY + "raise ValueError\n"])
async def test_a_child_that_fails_is_check_failed(code: str) -> None:
    with pytest.raises(CheckFailed):
        await check_apart(code, b"")


async def test_the_child_runs_none_of_the_programs_code() -> None:
    code = READY + "import sys\nprint('__mp_main__' in sys.modules, 'wireproto' in sys.modules)\n"
    assert (await check_apart(code, b"")) == b"False False\n"


async def test_a_child_that_ends_without_reading_its_input_still_answers() -> None:
    # (more than a pipe holds: the parent's write fails once the child is gone)
    assert await check_apart(READY + "print('ok')\n", b"x" * 1_000_000) == b"ok\n"


async def test_a_pair_searched_once_costs_no_child_again(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [("Edit|Write", "Write"), ("^Re+ad$", "Bash")]
    assert await search_apart(pairs) == {pairs[0]: True, pairs[1]: False}

    async def no_child(code: str, given: bytes, seconds: float = 0) -> bytes:
        raise AssertionError(f"a child was started for {given!r}")

    monkeypatch.setattr(_childcheck, "check_apart", no_child)
    assert await search_apart(pairs[::-1]) == {pairs[0]: True, pairs[1]: False}
    with pytest.raises(AssertionError, match="Glob"):  # (a new pair still asks a child)
        await search_apart([("Edit|Write", "Glob")])


@pytest.mark.parametrize("executable", ["", None, "/nonexistent/python3"])
async def test_no_python_to_start_is_check_failed(
    executable: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.executable", executable)  # (None or "": its path unknown)
    with pytest.raises(CheckFailed, match="cannot start"):
        await check_apart(READY, b"")


async def test_a_cancelled_check_leaves_no_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = (f"import os, pathlib\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
            + READY + "while True: pass\n")
    async with anyio.create_task_group() as tg:
        tg.start_soon(check_apart, code, b"", 60)
        for _ in range(1200):  # (its start may take a while on a loaded machine)
            if pid_file.exists() and pid_file.read_text():
                break
            await anyio.sleep(0.05)
        tg.cancel_scope.cancel()  # (while the child runs)
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)


async def test_a_check_cancelled_while_its_child_starts_leaves_no_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a loaded machine: the child runs before open_process returns; the cancel comes then)
    spawned, cancelled, pids = anyio.Event(), anyio.Event(), []
    open_process = anyio.open_process

    async def slow_to_return(*args: object, **kwargs: object) -> anyio.abc.Process:
        process = await open_process(*args, **kwargs)  # type: ignore[arg-type]
        pids.append(process.pid)
        spawned.set()
        await cancelled.wait()
        return process

    monkeypatch.setattr(anyio, "open_process", slow_to_return)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(check_apart, READY + "while True: pass\n", b"", 60)
            await spawned.wait()
            tg.cancel_scope.cancel()
            cancelled.set()
        with pytest.raises(ProcessLookupError):  # killed and reaped
            os.kill(pids[0], 0)
    finally:
        for pid in pids:  # (what a failure left running)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_a_path_entry_that_is_not_a_string_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(sys, "path", [*sys.path, tmp_path])  # (a Path: imports ignore it)
    assert await check_apart(READY + "print(sys.path[-1])\n", b"") == f"{sys.path[-2]}\n".encode()
