"""``wireproto demo``: both protocols end to end against real server processes.

Everything happens in a fresh temporary directory with its own
``WIREPROTO_HOME`` (nothing in the user's checkout or home is touched; the
directory is deleted afterwards unless ``--keep``). The demo spawns
``wireproto acp`` and ``wireproto wire`` (``--acp-cmd`` / ``--wire-cmd``
replace them, as shell-split strings) and drives each with this package's
own clients through the scenario of :mod:`wireproto.cli.demosteps`. With
``--ws`` the servers run in websocket debug mode (``--ws 127.0.0.1:0`` is
appended; the URL is read from their stderr). A short transcript and a
pass/fail summary go to stdout; the exit status is 0 only when every check
passed.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.abc

import wireproto
from wireproto.cli.common import CliError, one_line, run
from wireproto.cli.logs import LEVELS, setup_logging
from wireproto.errors import ConnectionClosed, ProcessExited, first_leaf

__all__ = ["DemoContext", "Report", "Server", "add_parser", "main_demo"]

log = logging.getLogger(__name__)

BANNER = "wireproto: listening on "
"""How a ``--ws`` server announces its URL on stderr."""

Step = tuple[str, Callable[[], Awaitable["list[str] | str"]]]
"""A named check: returns transcript lines, raises on failure."""


def add_parser(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = sub.add_parser(
        "demo", help="run both protocols end to end against real server processes",
        description="Spawn 'wireproto acp' and 'wireproto wire' in a temporary directory, drive "
                    "each through a scripted session and print a pass/fail summary.",
    )
    parser.add_argument("--acp-cmd", metavar="CMD",
                        help="the ACP server command (default: this Python -m wireproto acp); "
                             "it runs in a temporary directory: the files of this directory it "
                             "names (path/to/x, x.py, --agent x.py:ATTR) are made absolute")
    parser.add_argument("--wire-cmd", metavar="CMD",
                        help="the Wire server command (default: this Python -m wireproto wire; "
                             "--session ID --work-dir DIR are appended); files as --acp-cmd")
    parser.add_argument("--ws", action="store_true",
                        help="run the servers in websocket debug mode")
    parser.add_argument("--only", choices=("acp", "wire"), help="run one protocol only")
    parser.add_argument("--generic", action="store_true",
                        help="check only the protocol (handshake, session, a prompt, cancel, "
                             "shutdown), for an agent of your own; without it the demo "
                             "agent's own behaviour is checked")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="the time limit of each step (default: 10)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (its path is printed)")
    parser.add_argument("--log-level", choices=LEVELS, default="warning",
                        help="stderr log level (default: warning)")
    parser.set_defaults(func=main_demo)


class Report:
    """Runs checks and prints the transcript: ``PASS`` / ``FAIL`` / ``SKIP`` lines."""

    def __init__(self, out: TextIO, timeout: float) -> None:
        self.out = out
        self.timeout = timeout
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.explain: Callable[[ConnectionClosed], Awaitable[ConnectionClosed]] | None = None
        """Turns a closed connection into the server's side of the story (exit, stderr)."""

    def say(self, text: str = "") -> None:
        """Print a line of the transcript."""
        self.out.write(text + "\n")
        self.out.flush()

    async def check(self, name: str, step: Callable[[], Awaitable[list[str] | str]]) -> bool:
        """Run one step within the time limit; print and count its outcome."""
        try:
            with anyio.fail_after(self.timeout):
                detail = await step()
        except TimeoutError:
            self.failed += 1
            self.say(f"  FAIL  {name}: no answer within {self.timeout:g} s")
            return False
        except Exception as error:
            self.failed += 1
            exc: BaseException = first_leaf(error)
            if isinstance(exc, ConnectionClosed) and self.explain is not None:
                exc = await self.explain(exc)
            if isinstance(exc, ProcessExited):
                self.say(f"  FAIL  {name}: {exc.summary}")
                for line in exc.stderr:
                    self.say(f"          | {line}")
            else:
                self.say(f"  FAIL  {name}: {one_line(exc)}")
            log.debug("step %s failed", name, exc_info=True)
            return False
        self.passed += 1
        self.say(f"  PASS  {name}")
        for line in [detail] if isinstance(detail, str) else detail:
            self.say(f"          {line}")
        return True

    async def steps(self, steps: Sequence[Step]) -> bool:
        """Run ``steps`` in order; after a failure the rest are skipped."""
        for index, (name, step) in enumerate(steps):
            if not await self.check(name, step):
                self.skip([n for n, _ in steps[index + 1:]])
                return False
        return True

    def skip(self, names: Sequence[str]) -> None:
        """Count ``names`` as not run (an earlier step failed)."""
        for name in names:
            self.skipped += 1
            self.say(f"  SKIP  {name}")

    @property
    def ok(self) -> bool:
        """Whether every check ran and passed."""
        return self.failed == 0 and self.skipped == 0 and self.passed > 0


@dataclasses.dataclass
class Server:
    """A running server and the connection to it.

    Attributes:
        stream: the protocol connection.
        pid: the server's process id.
        stop: how it is stopped when the connection is left.
        returncode: its exit status, once it exited.
    """

    stream: anyio.abc.ObjectStream[bytes]
    pid: int
    stop: str
    returncode: int | None = None


@dataclasses.dataclass
class DemoContext:
    """Where the demo runs and how servers are started."""

    work: Path
    env: dict[str, str]
    ws: bool
    timeout: float
    live: Any = None  # the SubprocessStream of the running stdio server

    async def explain(self, exc: ConnectionClosed) -> ConnectionClosed:
        """``exc``, with the running server's exit status and stderr when it died."""
        return exc if self.live is None else await self.live.explain(exc)

    @asynccontextmanager
    async def server(self, cmd: list[str], query: str = "") -> AsyncIterator[Server]:
        """Start ``cmd`` (websocket mode: with ``--ws``) and connect to it."""
        if not self.ws:
            from wireproto.transports.subprocess import open_subprocess

            async with open_subprocess(cmd, env=self.env, cwd=self.work, stderr="log",
                                       shutdown_timeout=self.timeout) as child:
                server = Server(child, child.pid, "end of input")
                self.live = child
                try:
                    yield server
                finally:
                    self.live = None
            server.returncode = child.returncode
            return
        async with self._ws_server(cmd, query) as server:
            yield server

    @asynccontextmanager
    async def _ws_server(self, cmd: list[str], query: str) -> AsyncIterator[Server]:
        from wireproto._childsignal import signal_child
        from wireproto.transports.websocket import connect_websocket

        process = await anyio.open_process(
            [*cmd, "--ws", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env, cwd=self.work,
        )
        server: Server | None = None
        try:
            async with anyio.create_task_group() as tg:
                with anyio.fail_after(self.timeout):
                    url = await tg.start(_read_banner, process)
                async with connect_websocket(url + query) as ws:
                    server = Server(ws, process.pid, "SIGTERM")
                    yield server
                signal_child(process, signal.SIGTERM)  # (not an error if it has just exited)
                with anyio.move_on_after(self.timeout):
                    await process.wait()
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    signal_child(process, signal.SIGKILL)
                    await process.wait()
                if server is not None:
                    server.returncode = process.returncode
                await process.aclose()


async def _read_banner(
    process: anyio.abc.Process, *, task_status: anyio.abc.TaskStatus[str]
) -> None:
    """Find the URL on the server's stderr, then keep logging what it writes."""
    from wireproto.transports.subprocess import TAIL_LINES

    assert process.stderr is not None
    buffer = b""
    announced = False
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    async for chunk in process.stderr:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip()
            if not announced and line.startswith(BANNER):
                announced = True
                task_status.started(line[len(BANNER):].strip())
            else:
                log.info("server[%d]: %s", process.pid, line)
                if line.strip():
                    tail.append(line)
    if not announced:
        raise ProcessExited("the server stopped before it was listening",
                            f"the server (pid {process.pid})", await process.wait(), tuple(tail))


def _command(value: str | None, default: str) -> list[str]:
    """The server command of ``--acp-cmd`` / ``--wire-cmd``, its program checked now.

    The servers run in the demo's temporary directory: a program given as a
    relative path is made absolute here, and so is an argument naming a file
    of the current directory as a path or a ``.py`` file, alone, after
    ``--option=`` or as ``FILE.py:ATTR`` (``--agent myagent.py:agent``).
    """
    if value is None:
        return [sys.executable, "-m", "wireproto", default]
    option = f"--{default}-cmd {value!r}"
    try:
        cmd = shlex.split(value)
    except ValueError as exc:
        raise CliError(f"cannot split the command {value!r}: {exc}") from exc
    if not cmd:
        raise CliError("empty server command")
    program = cmd[0]
    if os.sep in program:
        path = Path(os.path.abspath(program))  # (not resolved: a venv's python is a link)
        if not path.is_file():
            raise CliError(f"{option}: {program!r} does not exist (relative to the current "
                           f"directory {os.getcwd()})")
        cmd[0] = str(path)
    elif shutil.which(program) is None:
        raise CliError(f"{option}: {program!r} was not found on PATH")
    return [cmd[0], *map(_absolute_file, cmd[1:])]


def _absolute_file(arg: str) -> str:
    """``arg`` with the relative file it names made absolute (else ``arg`` itself)."""
    option, eq, value = arg.rpartition("=") if arg.startswith("-") else ("", "", arg)
    file, colon, attr = value.rpartition(":") if ".py:" in value else (value, "", "")
    if (os.path.isabs(file) or not (file.endswith(".py") or os.sep in file)
            or not os.path.isfile(file)):
        return arg
    return f"{option}{eq}{os.path.abspath(file)}{colon}{attr}"


def _environment(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["WIREPROTO_HOME"] = str(home)
    env.pop("WIREPROTO_WS_TOKEN", None)
    package_root = str(Path(wireproto.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH")) if p
    )
    return env


def main_demo(args: argparse.Namespace) -> int:
    """Run ``wireproto demo``; returns 0 only when every check passed."""
    acp_cmd = _command(args.acp_cmd, "acp")
    wire_cmd = _command(args.wire_cmd, "wire")
    temp = tempfile.TemporaryDirectory(prefix="wireproto-demo-")
    root = Path(temp.name)
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    os.environ["WIREPROTO_HOME"] = str(home)  # this process's own log file goes there too
    setup_logging("demo", args.log_level)
    context = DemoContext(work, _environment(home), args.ws, args.timeout)
    report = Report(sys.stdout, args.timeout)
    report.explain = context.explain
    try:
        return run(lambda: _demo(context, report, acp_cmd, wire_cmd, args))
    finally:
        if args.keep:
            report.say(f"kept {root}")
        else:
            logging.shutdown()
            temp.cleanup()


async def _demo(
    context: DemoContext, report: Report, acp_cmd: list[str], wire_cmd: list[str],
    args: argparse.Namespace,
) -> int:
    from wireproto.cli.demogeneric import GenericAcpScenario, GenericWireScenario
    from wireproto.cli.demosteps import AcpScenario, WireScenario, prepare

    prepare(context.work)
    mode = "websocket debug mode" if context.ws else "stdio"
    report.say(f"wireproto demo ({mode}), in a temporary directory: {context.work}")
    scenarios: tuple[Callable[[DemoContext, list[str]], Any], ...] = (AcpScenario, WireScenario)
    if args.generic:
        scenarios = (GenericAcpScenario, GenericWireScenario)
        report.say("--generic: checking the protocol only (handshake, session, a prompt, "
                   "cancel, shutdown)")
    elif args.acp_cmd or args.wire_cmd:
        report.say("checking the demo agent's contract (its slash commands and replies); "
                   "for an agent of your own, add --generic")
    if args.only in (None, "acp"):
        report.say()
        report.say(f"ACP: {shlex.join(acp_cmd)}")
        await scenarios[0](context, acp_cmd).run(report)
    if args.only in (None, "wire"):
        report.say()
        report.say(f"Wire: {shlex.join(wire_cmd)}")
        await scenarios[1](context, wire_cmd).run(report)
    report.say()
    verdict = "all checks passed" if report.ok else "FAILED"
    report.say(f"Summary: {report.passed} passed, {report.failed} failed, "
               f"{report.skipped} not run: {verdict}")
    return 0 if report.ok else 1
