"""open_subprocess specifics: stderr handling, exit status, the shutdown ladder."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from timeouts import units

from wireproto._childsignal import signal_child
from wireproto.testing import wait_all_tasks_blocked
from wireproto.transports.subprocess import REDACTED, SubprocessStream, open_subprocess

from .conftest import HELPERS

pytestmark = pytest.mark.anyio

ECHO = [sys.executable, str(HELPERS / "echo_plain.py")]

# How long the shutdown ladder waits at each step for the stubborn child below
GRACE = units(0.05)

# Announces itself, then ignores stdin EOF (never reads) and, with "term", SIGTERM.
STUBBORN = """
import signal, sys, time
if sys.argv[1] == "term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ready\\n"); sys.stdout.flush()
while True:
    time.sleep(1)
"""


async def test_stderr_is_drained_into_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wireproto.transports.subprocess.stderr")
    async with open_subprocess(ECHO, stderr="log") as stream:
        # Far more than a pipe holds: the child would block if nobody read it.
        await stream.send(b"!stderr %d\n" % (2 * 1024 * 1024))
        with anyio.fail_after(units(6)):
            assert await stream.receive() == b"!logged"
        pid = stream.pid
    lines = [r.getMessage() for r in caplog.records if r.name.endswith(".stderr")]
    assert len(lines) > 2 * 1024 * 1024 // 100
    label = f"{Path(sys.executable).name}[{pid}]"
    assert lines[0] == f"{label}: log line " + "y" * 90
    assert lines[-1] == f"{label}: last log line"


async def test_secrets_are_masked_in_logged_stderr(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wireproto.transports.subprocess.stderr")
    token, key = "tok-0123456789abcdef", "sk-live-0123456789"
    leaky = (
        "import os, sys\n"
        "t, k = os.environ['T'], os.environ['K']\n"
        "print('env:', t, 'and', k + t, file=sys.stderr)\n"
        "print('tail without newline ' + k, end='', file=sys.stderr)\n"
    )
    env = {**os.environ, "T": token, "K": key}
    async with open_subprocess(
        [sys.executable, "-c", leaky], env=env, stderr="log", redact=[token, key, ""]
    ) as stream:
        await stream.wait()
    lines = [r.getMessage() for r in caplog.records if r.name.endswith(".stderr")]
    assert len(lines) == 2
    assert lines[0].endswith("env: [redacted] and [redacted][redacted]")
    assert lines[1].endswith("tail without newline [redacted]")
    assert token not in caplog.text and key not in caplog.text



async def test_overlapping_secrets_are_masked_as_one_in_logged_stderr(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="wireproto.transports.subprocess.stderr")
    first, second = "key-0123456789", "0123456789-abcdef"  # (overlapping: "0123456789")
    leaky = "import sys\nprint('env: key-0123456789-abcdef end', file=sys.stderr)\n"
    async with open_subprocess([sys.executable, "-c", leaky], stderr="log",
                               redact=[first, second]) as stream:
        await stream.wait()
        await stream.stderr_done.wait()
    lines = [r.getMessage() for r in caplog.records if r.name.endswith(".stderr")]
    assert len(lines) == 1 and lines[0].endswith(f"env: {REDACTED} end"), lines
    assert list(stream.stderr_tail) == [f"env: {REDACTED} end"]


async def test_a_secret_across_the_cut_of_a_long_stderr_line_is_masked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="wireproto.transports.subprocess.stderr")
    token = "tok-0123456789abcdef"
    leaky = (  # a line longer than a logged piece, cut (by a pause) inside the secret
        "import os, sys, time\n"
        "t = os.environ['T']\n"
        "sys.stderr.write('x' * 70000 + t[:9]); sys.stderr.flush(); time.sleep(0.5)\n"
        "sys.stderr.write(t[9:] + ' end\\n')\n"
    )
    env = {**os.environ, "T": token}
    async with open_subprocess(
        [sys.executable, "-c", leaky], env=env, stderr="log", redact=[token]
    ) as stream:
        await stream.wait()
    text = "".join(r.getMessage() for r in caplog.records if r.name.endswith(".stderr"))
    assert token[:9] not in text and token[9:] not in text
    assert text.endswith("x[redacted] end")

async def test_a_secret_registered_after_the_start_is_masked_from_then_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="wireproto.transports.subprocess.stderr")
    late = "late-credential-0123456789"
    leaky = (  # prints what it is sent, as an agent logging its MCP config
        "import sys\n"
        "for line in sys.stdin:\n"
        "    print('got', line.strip(), file=sys.stderr, flush=True)\n"
        "    print('ok', flush=True)\n"
    )
    async with open_subprocess([sys.executable, "-c", leaky], stderr="log") as stream:
        stream.redact(late, "")
        stream.redact(late)  # (again: nothing changes)
        await stream.send(late.encode())
        assert await stream.receive() == b"ok"
        await stream.send_eof()
        await stream.wait()
        await stream.stderr_done.wait()
    lines = [r.getMessage() for r in caplog.records if r.name.endswith(".stderr")]
    assert len(lines) == 1 and lines[0].endswith(f"got {REDACTED}")
    assert list(stream.stderr_tail) == [f"got {REDACTED}"]
    assert late not in caplog.text


async def test_stderr_inherit(capfd: pytest.CaptureFixture[str]) -> None:
    cmd = [sys.executable, "-c", "import sys; sys.stderr.write('to inherited stderr\\n')"]
    async with open_subprocess(cmd) as stream:
        assert await stream.wait() == 0
    assert "to inherited stderr" in capfd.readouterr().err


async def test_exit_status_and_env_and_cwd(tmp_path: Path) -> None:
    code = "import os; print(os.getcwd()); print(os.environ['WIREPROTO_TEST']); raise SystemExit(7)"
    env = dict(os.environ, WIREPROTO_TEST="yes ✓")
    async with open_subprocess([sys.executable, "-c", code], env=env, cwd=tmp_path) as stream:
        assert await stream.receive() == str(tmp_path).encode()
        assert await stream.receive() == "yes ✓".encode()
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        assert await stream.wait() == 7
        assert stream.returncode == 7


async def test_child_exits_on_stdin_eof_at_shutdown() -> None:
    async with open_subprocess(ECHO, stderr="log") as stream:
        await stream.send(b"ping\n")
        assert await stream.receive() == b"ping"
        assert stream.returncode is None
    assert stream.returncode == 0


@pytest.mark.parametrize(
    ("mode", "expected"), [("stdin", -signal.SIGTERM), ("term", -signal.SIGKILL)]
)
async def test_shutdown_ladder(mode: str, expected: int, caplog: pytest.LogCaptureFixture) -> None:
    cmd = [sys.executable, "-c", STUBBORN, mode]
    async with open_subprocess(cmd, shutdown_timeout=GRACE, stderr="log") as stream:
        assert await stream.receive() == b"ready"
    assert stream.returncode == expected  # (the status of the signal that ended it)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("sending SIGTERM" in w for w in warnings)
    # (with "stdin", a SIGKILL may follow when the exit is seen late: status stays SIGTERM's)
    assert any("sending SIGKILL" in w for w in warnings) or mode == "stdin"


async def test_shutdown_runs_when_cancelled() -> None:
    cmd = [sys.executable, "-c", STUBBORN, "stdin"]
    with anyio.CancelScope() as scope:
        async with open_subprocess(cmd, shutdown_timeout=GRACE, stderr="log") as stream:
            assert await stream.receive() == b"ready"
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert stream.returncode == -signal.SIGTERM


async def test_a_signal_to_a_child_that_has_just_exited_keeps_its_exit_status() -> None:
    # (the ladder's signal may meet a child that exited a moment before: one the event
    # loop has not seen exit yet; asyncio's Popen-based kill used to reap it: status 255)
    cmd = [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(7)"]
    async with open_subprocess(cmd, stderr="log") as stream:
        await stream.send(b"go\n")
        with contextlib.suppress(ChildProcessError):  # (a watcher thread may reap it first)
            # (exited, not reaped, and not seen by the loop: it did not run since)
            os.waitid(os.P_PID, stream.pid, os.WEXITED | os.WNOWAIT)  # noqa: ASYNC222
        signal_child(stream.process, signal.SIGKILL)
        assert await stream.wait() == 7


async def test_body_exception_propagates_as_itself() -> None:
    with pytest.raises(KeyError, match="boom"):
        async with open_subprocess(ECHO, stderr="log"):
            raise KeyError("boom")


async def _pending_receive_while(
    stream: SubprocessStream, act: Callable[[], Awaitable[None]]
) -> list[BaseException]:
    """Run ``act`` while a task waits in ``stream.receive()``; what that receive raised."""
    result: list[BaseException] = []

    async def receive() -> None:
        try:
            await stream.receive()
        except Exception as exc:
            result.append(exc)

    with anyio.fail_after(units(2)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await act()
    return result


async def test_killed_child_ends_a_pending_receive() -> None:
    async with open_subprocess(ECHO, stderr="log") as stream:
        await stream.send(b"ping\n")
        assert await stream.receive() == b"ping"

        async def kill() -> None:
            await wait_all_tasks_blocked()
            os.kill(stream.pid, signal.SIGKILL)

        result = await _pending_receive_while(stream, kill)
        assert len(result) == 1
        assert isinstance(result[0], (anyio.EndOfStream, anyio.BrokenResourceError))
        assert await stream.wait() == -signal.SIGKILL


@pytest.mark.parametrize("settle", ["blocked", "checkpoint"])
async def test_aclose_ends_a_pending_receive_while_the_child_runs_on(settle: str) -> None:
    # "checkpoint": aclose may come while the receive is not waiting yet
    cmd = [sys.executable, "-c", STUBBORN, "stdin"]  # keeps its stdout open
    async with open_subprocess(cmd, shutdown_timeout=0.5, stderr="log") as stream:
        assert await stream.receive() == b"ready"

        async def close() -> None:
            if settle == "blocked":
                await wait_all_tasks_blocked()
            else:
                await anyio.lowlevel.checkpoint()
            await stream.aclose()  # stops receiving; the child is still there

        result = await _pending_receive_while(stream, close)
        assert [type(exc) for exc in result] == [anyio.ClosedResourceError]
        assert stream.returncode is None


async def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="stderr"):
        async with open_subprocess(ECHO, stderr="pipe"):  # type: ignore[arg-type]
            pass
    with pytest.raises(FileNotFoundError):
        async with open_subprocess(["/nonexistent/wireproto-test-program"]):
            pass


@pytest.mark.anyio
async def test_start_new_session_puts_the_child_in_its_own_session() -> None:
    code = "import os, sys; print(os.getsid(0) == os.getpid(), flush=True); sys.stdin.read()"
    for new_session, expected in ((True, b"True"), (False, b"False")):
        async with open_subprocess(
            [sys.executable, "-c", code], start_new_session=new_session
        ) as child:
            assert await child.receive() == expected
