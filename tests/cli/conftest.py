"""Helpers for driving ``wireproto`` subcommands as real processes.

Every process gets its own ``WIREPROTO_HOME`` (and ``HOME``) under the
test's temporary directory. Output pipes are drained by threads so a chatty
process never blocks on a full pipe; tests wait on what they read, with
generous time limits, and never assert durations.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from timeouts import units

WIREPROTO = [sys.executable, "-m", "wireproto"]
LIMIT = units(4)  # seconds: a generous bound for anything a test waits for
BANNER = re.compile(r"^wireproto: listening on (ws://[^/\s]+)/\?token=(\S+)$")


class Proc:
    """A child process with its stdout and stderr drained by threads.

    ``lines`` (stdout, when ``lines=True``) are queued one per line; otherwise
    stdout bytes accumulate in :attr:`out`. stderr accumulates in :attr:`err`.
    """

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path | None = None,
                 stdin: int | None = subprocess.PIPE, lines: bool = True,
                 group: bool = False) -> None:
        self.popen = subprocess.Popen(
            args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
            start_new_session=group,
        )
        self.pid = self.popen.pid
        self.group = group
        self.queue: queue.Queue[bytes | None] = queue.Queue()
        self.out = bytearray()
        self.err_lines: list[str] = []
        self.err_done = False
        self._err_cond = threading.Condition()
        self._out_cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._read_out, args=(lines,), daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_out(self, lines: bool) -> None:
        assert self.popen.stdout is not None
        if lines:
            for line in self.popen.stdout:
                self.queue.put(line)
            self.queue.put(None)
            return
        while chunk := self.popen.stdout.read1(65536):
            with self._out_cond:
                self.out += chunk
                self._out_cond.notify_all()

    def _read_err(self) -> None:
        assert self.popen.stderr is not None
        for raw in self.popen.stderr:
            with self._err_cond:
                self.err_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._err_cond.notify_all()
        with self._err_cond:
            self.err_done = True
            self._err_cond.notify_all()

    @property
    def err(self) -> str:
        """Everything written to stderr so far."""
        with self._err_cond:
            return "\n".join(self.err_lines)

    def wait_err(self, pattern: str, timeout: float = LIMIT) -> re.Match[str]:
        """Wait (at most ``timeout`` seconds in all) for a stderr line matching ``pattern``."""
        regex = re.compile(pattern)
        found: list[re.Match[str]] = []

        def match() -> bool:
            found.extend(m for line in self.err_lines if (m := regex.search(line)))
            return bool(found)

        if not self.wait_err_until(match, timeout):
            raise AssertionError(f"no stderr line matching {pattern!r}:\n{self.err}")
        return found[0]

    def wait_err_until(self, predicate: Callable[[], bool], timeout: float = LIMIT) -> bool:
        """Wait (at most ``timeout`` seconds) until ``predicate()`` holds, re-checked
        under the lock whenever stderr grows; ``False`` if it never did (or stderr ended)."""
        with self._err_cond:
            return self._err_cond.wait_for(lambda: predicate() or self.err_done, timeout) \
                and predicate()

    def wait_out(self, text: str, timeout: float = LIMIT) -> None:
        """Wait until stdout (``lines=False``) contains ``text``."""
        with self._out_cond:
            if not self._out_cond.wait_for(lambda: text.encode() in self.out, timeout):
                raise AssertionError(f"stdout lacks {text!r}: {bytes(self.out)!r}")

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON message line to stdin."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps(message).encode() + b"\n")
        self.popen.stdin.flush()

    def write(self, text: str) -> None:
        """Write raw text to stdin."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(text.encode())
        self.popen.stdin.flush()

    def recv(self, timeout: float = LIMIT) -> dict[str, Any]:
        """The next stdout line, decoded as JSON."""
        line = self.queue.get(timeout=timeout)
        assert line is not None, f"stdout ended; stderr:\n{self.err}"
        message: dict[str, Any] = json.loads(line)
        return message

    def recv_until(self, predicate: Any, timeout: float = LIMIT) -> list[dict[str, Any]]:
        """Messages up to and including the first one for which ``predicate`` holds
        (within ``timeout`` seconds in all)."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            message = self.recv(max(deadline - time.monotonic(), 0.001))
            seen.append(message)
            if predicate(message):
                return seen

    def rest(self, timeout: float = LIMIT) -> list[dict[str, Any]]:
        """Every remaining stdout message until stdout ends (within ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        messages = []
        while (line := self.queue.get(timeout=max(deadline - time.monotonic(), 0.001))) \
                is not None:
            messages.append(json.loads(line))
        return messages

    def close_stdin(self) -> None:
        """Close the child's stdin (end of input)."""
        assert self.popen.stdin is not None
        self.popen.stdin.close()

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the child."""
        self.popen.send_signal(signum)

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the child's process group (``group=True``), as a
        terminal does for Ctrl-C: the child and everything it spawned get it."""
        os.killpg(self.popen.pid, signum)

    def wait(self, timeout: float = LIMIT) -> int:
        """Wait for the exit status (and for the output threads to finish)."""
        code = self.popen.wait(timeout)
        for thread in self._threads:
            thread.join(timeout)
        return code

    def close(self) -> None:
        """Kill the child if it still runs; release its pipes."""
        if self.popen.poll() is None:
            self.popen.kill()
        if self.group:  # what it spawned, if anything was left behind
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.popen.wait()
        for thread in self._threads:
            thread.join(LIMIT)
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


class Kit:
    """What a test needs to drive ``wireproto``: bound to its environment.

    Attributes:
        env: the processes' environment (private ``WIREPROTO_HOME`` and ``HOME``).
        wireproto: the command prefix (``python -m wireproto``).
    """

    wireproto = WIREPROTO
    limit = LIMIT
    acp_init: ClassVar[dict[str, Any]] = {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}},
    }
    wire_init: ClassVar[dict[str, Any]] = {
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocol_version": "1.10"},
    }

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "wireproto-home"
        self.env = dict(os.environ)
        self.env["WIREPROTO_HOME"] = str(self.home)
        self.env["HOME"] = str(tmp_path / "user-home")
        self.env.pop("WIREPROTO_WS_TOKEN", None)
        self.env.pop("WIREPROTO_TOKEN", None)
        self.procs: list[Proc] = []

    def spawn(self, *args: str, cwd: Path | None = None, lines: bool = True,
              stdin: int | None = subprocess.PIPE, env: dict[str, str] | None = None,
              group: bool = False) -> Proc:
        """Start ``wireproto ARGS`` (killed at the end of the test); ``group``: in
        its own process group."""
        proc = Proc([*WIREPROTO, *args], env or self.env, cwd=cwd, stdin=stdin, lines=lines,
                    group=group)
        self.procs.append(proc)
        return proc

    def ws(self, *args: str, cwd: Path | None = None) -> tuple[Proc, str, str]:
        """Start a ``--ws`` server; return it, its base URL and its token."""
        proc = self.spawn(*args, cwd=cwd, stdin=subprocess.DEVNULL)
        match = proc.wait_err(BANNER.pattern)
        return proc, match.group(1), match.group(2)

    def log_file(self, command: str, pid: int) -> Path:
        """The diagnostic log file of a process."""
        return self.home / "logs" / f"{command}-{pid}.log"

    @staticmethod
    def request(id_: int | str, method: str, params: Any) -> dict[str, Any]:
        """A JSON-RPC request."""
        return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}

    @staticmethod
    def stop(proc: Proc) -> int:
        """SIGTERM the process and return its exit status."""
        proc.signal(signal.SIGTERM)
        return proc.wait()


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    """The helpers, with every process killed at the end of the test."""
    made = Kit(tmp_path)
    yield made
    for proc in made.procs:
        proc.close()
