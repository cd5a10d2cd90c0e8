"""Reading lines from the keyboard without blocking the event loop.

:class:`Keyboard` reads one line at a time in a daemon thread and wakes the
event loop through a socket pair. From a terminal it uses ``input()``, so line
editing and history work when the ``readline`` module is available; from a
pipe or file it reads fd 0 directly (``sys.stdin``'s buffer lock, held by a
blocked daemon thread, would abort the interpreter at exit). A read that is cancelled
(e.g. an approval question the agent withdrew) leaves its thread waiting: the
next :meth:`Keyboard.read` takes over that line instead of starting a second
reader. Being a daemon thread, a pending read never keeps the process alive.

With ``readline`` the advertised slash commands complete with Tab, and the
terminal's settings are restored on :meth:`Keyboard.close`.
"""

from __future__ import annotations

import os
import queue
import socket
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import anyio

from wireproto.cli.controls import printable

__all__ = ["Keyboard"]


def _readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # pragma: no cover (no GNU readline / libedit)
        return None
    return readline


class Keyboard:
    """Line input from stdin for the interactive client.

    Args:
        completions: returns the words Tab may complete (e.g. ``/help``).
    """

    def __init__(self, completions: Callable[[], list[str]] | None = None) -> None:
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._reading = False
        self._pending = b""  # bytes read from a pipe beyond the last line
        self._tty: Any = None
        self.interactive = _isatty()
        if self.interactive:
            self._save_terminal()
            readline = _readline()
            if readline is not None and completions is not None:
                _install_completer(readline, completions)

    def _save_terminal(self) -> None:
        try:
            import termios

            self._tty = termios.tcgetattr(sys.stdin.fileno())
        except (ImportError, OSError, ValueError):
            self._tty = None

    def close(self) -> None:
        """Restore the terminal settings and release the wake-up sockets."""
        if self._tty is not None:
            try:
                import termios

                termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, self._tty)
            except (ImportError, OSError, ValueError):
                pass
        self._wake_r.close()
        self._wake_w.close()

    def _work(self, prompt: str) -> None:
        line: str | None
        if self.interactive:
            try:
                line = input(printable(prompt))  # (a prompt may quote the agent)
            except (EOFError, OSError, ValueError):
                line = None
        else:
            line = self._read_fd()
        self._lines.put(line)
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass  # closed: nobody is waiting any more

    def _read_fd(self) -> str | None:
        """One line from fd 0, unbuffered (no lock a daemon thread could hold at exit)."""
        while b"\n" not in self._pending:
            try:
                chunk = os.read(0, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                rest, self._pending = self._pending, b""
                return rest.decode("utf-8", "replace") if rest else None
            self._pending += chunk
        raw, _, self._pending = self._pending.partition(b"\n")
        return raw.decode("utf-8", "replace").rstrip("\r")

    async def read(self, prompt: str = "") -> str | None:
        """Return the next line (without its newline), or ``None`` at end of input."""
        if not self._reading:
            self._reading = True
            threading.Thread(target=self._work, args=(prompt,), daemon=True,
                             name="wireproto keyboard").start()
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                await anyio.wait_readable(self._wake_r)
                try:
                    self._wake_r.recv(64)
                except BlockingIOError:
                    pass
                continue
            self._reading = False
            return line


def _isatty() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):
        return False


def _install_completer(readline: Any, completions: Callable[[], list[str]]) -> None:
    def complete(text: str, state: int) -> str | None:
        matches = [word + " " for word in completions() if word.startswith(text)]
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n")
    if "libedit" in (getattr(readline, "__doc__", "") or ""):
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")
