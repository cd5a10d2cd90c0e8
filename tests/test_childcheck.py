"""Checks run in a child Python: their answer, a time bound, a failure said as one."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import uuid
from pathlib import Path

import anyio
import anyio.abc
import pytest

from wireproto import _childcheck
from wireproto._childcheck import (
    CHECK_TIME,
    CHECKS_AT_ONCE,
    CheckFailed,
    check_apart,
    search_apart,
)

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
    monkeypatch.setattr("sys.executable", "")  # (no child can start)
    assert await search_apart(pairs[::-1]) == {pairs[0]: True, pairs[1]: False}
    with pytest.raises(CheckFailed, match="cannot start"):  # (a new pair still asks a child)
        await search_apart([("Edit|Write", "Glob")])


async def test_a_pair_out_of_time_alone_costs_no_child_again(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = ("^(a|aa)+$", "a" * 60 + f"!{uuid.uuid4()}")  # (a pair no other test searched)
    quick = ("^b", f"b{uuid.uuid4()}")
    assert await search_apart([quick, slow]) is None  # (quick answered, then time ran out)
    with monkeypatch.context() as no_child:
        no_child.setattr("sys.executable", "")
        assert await search_apart([quick]) == {quick: True}
        with pytest.raises(CheckFailed, match="cannot start"):  # (slow did not run alone)
            await search_apart([slow])
    assert await search_apart([quick, slow]) is None  # (slow alone: out of all its time)
    monkeypatch.setattr("sys.executable", "")
    for pairs in ([quick, slow], [slow], [slow, ("^c", "c")]):
        assert await search_apart(pairs) is None
    assert await search_apart([slow], CHECK_TIME / 2) is None  # (less time: too slow too)
    with pytest.raises(CheckFailed, match="cannot start"):  # (more time: it may do)
        await search_apart([slow], CHECK_TIME * 2)
    monkeypatch.setattr(_childcheck, "_SLOW_FOR", 0.0)  # (kept so long only: searched again)
    with pytest.raises(CheckFailed, match="cannot start"):
        await search_apart([slow])


def _pid_files(directory: Path) -> int:
    return len(list(directory.glob("*.pid")))


async def test_no_more_children_at_once_than_the_places(tmp_path: Path) -> None:
    checks = CHECKS_AT_ONCE + 2
    code = (  # (its pid file from its start to its end; how many it saw at its start)
        "import os, pathlib, time\n"
        f"here = pathlib.Path({str(tmp_path)!r})\n"
        "mine = here / f'{os.getpid()}.pid'\n"
        "mine.touch()\n"
        "alive = len(list(here.glob('*.pid')))\n"
        + READY + "sys.stdin.read()\n"
        "while not (here / 'release').exists():\n"
        "    time.sleep(0.01)\n"
        "mine.unlink()\n"
        "print(alive)\n"
    )
    seen: list[int] = []

    async def check() -> None:
        answer = await check_apart(code, b"", 120)
        assert answer is not None
        seen.append(int(answer))

    async with anyio.create_task_group() as tg:
        for _ in range(checks):
            tg.start_soon(check)
        places = _childcheck._places()
        for _ in range(2400):  # (until the places are taken and the others wait for one)
            alive = _pid_files(tmp_path)
            if alive > CHECKS_AT_ONCE or (
                    alive == CHECKS_AT_ONCE
                    and places.statistics().tasks_waiting == checks - CHECKS_AT_ONCE):
                break
            await anyio.sleep(0.05)
        (tmp_path / "release").touch()
    assert alive == CHECKS_AT_ONCE
    assert len(seen) == checks and max(seen) <= CHECKS_AT_ONCE, seen


def test_the_places_serve_one_event_loop_after_another() -> None:
    async def checks() -> list[bytes]:
        answers: list[bytes] = []

        async def check(n: int) -> None:
            answer = await check_apart(READY + f"print({n})\n", b"")
            assert answer is not None
            answers.append(answer)

        async with anyio.create_task_group() as tg:
            for n in range(CHECKS_AT_ONCE + 2):  # (some wait for a place)
                tg.start_soon(check, n)
        return sorted(answers)

    expected = sorted(f"{n}\n".encode() for n in range(CHECKS_AT_ONCE + 2))
    for backend in ("asyncio", "trio", "asyncio"):  # (each run a new event loop)
        assert anyio.run(checks, backend=backend) == expected, backend


@pytest.mark.parametrize("executable", ["", None, "/nonexistent/python3"])
async def test_no_python_to_start_is_check_failed(
    executable: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.executable", executable)  # (None or "": its path unknown)
    with pytest.raises(CheckFailed, match="cannot start"):
        await check_apart(READY, b"")


def _written(pid_file: Path) -> str:
    return pid_file.read_text() if pid_file.exists() else ""


async def _cancel_a_running_check(pid_file: Path) -> None:
    """Start a check whose child writes its pid to ``pid_file`` (a new path) and runs for
    ever; cancel it once the child runs; the child must be killed and reaped."""
    code = (f"import os, pathlib\npathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
            + READY + "while True: pass\n")
    async with anyio.create_task_group() as tg:
        tg.start_soon(check_apart, code, b"", 60)
        for _ in range(1200):  # (its start may take a while on a loaded machine)
            if _written(pid_file):
                break
            await anyio.sleep(0.05)
        tg.cancel_scope.cancel()  # (while the child runs)
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(_written(pid_file)), 0)


async def test_a_cancelled_check_leaves_no_child(tmp_path: Path) -> None:
    await _cancel_a_running_check(tmp_path / "pid")


async def test_a_cancelled_check_waits_for_its_killed_child(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # (killed by pid and waited for, shielded: the closing's cancelled wait killed by a
    # poll, which may reap the child before the loop sees it: status 255, a warning)
    caplog.set_level(logging.WARNING, logger="asyncio")
    for n in range(5):  # (each a child killed as it is cancelled)
        await _cancel_a_running_check(tmp_path / f"pid{n}")
    said = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    # ("Close running child process: kill ...", "Unknown child process pid ...", "... exit
    # status already read ...": not the debug mode's slow-step notes on a loaded machine)
    assert [line for line in said if "child process" in line] == []


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
