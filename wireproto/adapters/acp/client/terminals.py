"""The terminals an ACP client offers its agent (``terminal/*``, protocol-acp.md#terminals).

:class:`Terminals` is what :class:`~.connection.ClientConnection`
calls; installing one advertises ``terminal: true``. It is an async context
manager entered and exited with the connection.

:class:`LocalTerminals` runs local processes (``anyio.open_process``, no
shell, each in its own session / process group, stdin from ``/dev/null``,
stderr merged into stdout):

* one task per terminal, owned by the terminals' task group, pumps the
  output into an :class:`OutputBuffer` that keeps the **tail** within the
  byte limit, cut at a UTF-8 character boundary;
* the exit status is reported once the process has exited and its output
  pipe reached end of file (or ``exit_grace`` seconds after the exit, when a
  background grandchild keeps the pipe open);
* ``kill`` sends SIGKILL to the process group and keeps the terminal;
  ``release`` kills and forgets it; leaving the context kills every
  terminal and reaps every process.

**Shell lines.** Some agents (Kimi CLI, claude-code-acp) send a whole shell
line in ``command`` and no ``args`` (``{"command": "echo hi"}``). When
``args`` is empty and ``command`` is not an executable (neither a path to
one nor a name found on ``PATH``), the line is run by the user's shell:
``$SHELL -c <command>`` when ``SHELL`` (of the command's environment) is an
absolute path to an executable, else ``/bin/sh -c <command>``
(:func:`command_line`). A command with ``args`` always runs directly.

**Working directory.** ``cwd`` defaults to the session's cwd and must lie
within the session's roots (``[cwd, *additionalDirectories]``, symbolic
links resolved), like the file system methods.

Errors: an unknown terminal id (or one of another session) is ``-32002``;
a relative or missing ``cwd``, one outside the session's roots, a NUL
character in the command, its arguments, ``cwd`` or ``env``, an invalid
variable name or a negative output limit is ``-32602``; a command that does
not exist is ``-32002``, any other failure to start ``-32603`` with the
system's reason.
"""

from __future__ import annotations

import codecs
import itertools
import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Protocol

import anyio
import anyio.abc
from msgspec import UNSET

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.state import RESOURCE_NOT_FOUND, ClientSession
from wireproto.agent.files import within_roots
from wireproto.errors import LocalProtocolError, RpcError
from wireproto.jsonrpc.messages import ErrorCode

__all__ = ["LocalTerminals", "OutputBuffer", "Terminals", "command_line", "confined_cwd"]

log = logging.getLogger(__name__)


class Terminals(Protocol):
    """Serves the ``terminal/*`` methods; entered and exited with the connection.

    Raise :class:`~wireproto.errors.RpcError` to answer with an error.
    """

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...

    async def create(self, session: ClientSession, request: s.CreateTerminalRequest) -> str:
        """Start the command; return the new terminal's id at once."""

    async def output(
        self, session: ClientSession, request: s.TerminalOutputRequest
    ) -> s.TerminalOutputResponse:
        """Return the output so far (and the exit status once exited)."""

    async def wait_for_exit(
        self, session: ClientSession, request: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        """Wait until the command exits; return its status."""

    async def kill(self, session: ClientSession, request: s.KillTerminalRequest) -> None:
        """Kill the command; the terminal stays valid."""

    async def release(self, session: ClientSession, request: s.ReleaseTerminalRequest) -> None:
        """Kill the command if running and forget the terminal."""


class OutputBuffer:
    """Bytes of output, keeping the last ``limit`` bytes at a character boundary.

    Attributes:
        limit: the most bytes kept.
        truncated: whether anything was dropped from the front.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 0)
        self.truncated = False
        self._data = bytearray()

    def append(self, chunk: bytes) -> None:
        """Add output, dropping the oldest bytes beyond the limit."""
        self._data += chunk
        excess = len(self._data) - self.limit
        if excess <= 0:
            return
        self.truncated = True
        del self._data[:excess]
        cut = 0  # never start inside a character: skip continuation bytes
        while cut < min(3, len(self._data)) and self._data[cut] & 0xC0 == 0x80:
            cut += 1
        del self._data[:cut]

    def text(self, final: bool = False) -> str:
        """The kept output as text; unless ``final``, an incomplete last character waits."""
        text, _ = codecs.utf_8_decode(bytes(self._data), "replace", final)
        return text


class _Terminal:
    __slots__ = ("eof", "exited", "id", "output", "process", "scope", "session_id", "status")

    def __init__(self, id: str, session_id: str, process: anyio.abc.Process, limit: int) -> None:
        self.id = id
        self.session_id = session_id
        self.process = process
        self.output = OutputBuffer(limit)
        self.eof = anyio.Event()
        self.exited = anyio.Event()
        self.scope = anyio.CancelScope()
        self.status = s.TerminalExitStatus()

    def kill(self) -> None:
        if self.process.returncode is not None and self.eof.is_set():
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                self.process.kill()
            except ProcessLookupError:
                pass


def _invalid(message: str) -> RpcError:
    return RpcError(ErrorCode.INVALID_PARAMS, message)


def _check_request(request: s.CreateTerminalRequest, cwd: str) -> None:
    """Refuse with ``-32602`` what the process could not be started with.

    Raises:
        RpcError: a NUL character anywhere, a relative or missing ``cwd``, an
            invalid environment variable name, a negative output limit.
    """
    texts = [request.command, *(request.args or ()), cwd]
    for v in request.env or ():
        if not v.name or "=" in v.name:
            raise _invalid(f"invalid environment variable name {v.name!r}")
        texts += (v.name, v.value)
    if any("\x00" in text for text in texts):
        raise _invalid("the command, its arguments, cwd or env contain a NUL character")
    if not os.path.isabs(cwd):
        raise _invalid(f"cwd must be absolute: {cwd}")
    if not os.path.isdir(cwd):
        raise _invalid(f"cwd is not a directory: {cwd}")
    limit = request.output_byte_limit
    if isinstance(limit, int) and limit < 0:
        raise _invalid(f"outputByteLimit must not be negative: {limit}")


def _exit_status(returncode: int) -> s.TerminalExitStatus:
    if returncode >= 0:
        return s.TerminalExitStatus(exit_code=returncode)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = str(-returncode)
    return s.TerminalExitStatus(signal=name)


_SHELL_CHARS = frozenset(" \t\n;&|<>()$`\\\"'*?[]#~=%{}!")
"""Characters that make a ``command`` without ``args`` a shell line."""


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def command_line(command: str, args: list[str], env: Mapping[str, str]) -> list[str]:
    """The argv that runs an agent's ``command`` and ``args`` (see the module docstring).

    ``command`` runs directly when ``args`` are given, when it names an
    executable (a path to one, or a name on ``env``'s ``PATH``), or when it
    holds no space or shell metacharacter (a missing program is then
    reported as such); otherwise it is a shell line for ``$SHELL -c`` (else
    ``/bin/sh -c``).
    """
    if args:
        return [command, *args]
    if os.sep in command and _executable(command):
        return [command]
    if os.sep not in command and shutil.which(command, path=env.get("PATH")) is not None:
        return [command]
    if not _SHELL_CHARS.intersection(command):
        return [command]
    shell = env.get("SHELL", "")
    if not (os.path.isabs(shell) and _executable(shell)):
        shell = "/bin/sh"
    return [shell, "-c", command]


def confined_cwd(session: ClientSession, cwd: str | None) -> str:
    """The working directory of a command: ``cwd`` (default the session's), within its roots.

    Raises:
        RpcError: ``-32602`` for a relative directory or one outside the roots.
    """
    chosen = cwd if cwd is not None else session.cwd
    if not os.path.isabs(chosen):
        raise RpcError(ErrorCode.INVALID_PARAMS, f"cwd must be absolute: {chosen}")
    if within_roots(chosen, session.roots) is not None:
        return chosen
    raise RpcError(ErrorCode.INVALID_PARAMS,
                   f"cwd is outside the session's roots: {chosen} "
                   f"(roots: {', '.join(session.roots)})")


class LocalTerminals:
    """Local processes as ACP terminals (see the module docstring).

    Args:
        max_output_bytes: the output kept per terminal when the agent gives
            no ``outputByteLimit``, and the cap on the one it gives.
        exit_grace: seconds to wait for the end of the output after exit.
        env: variables set for every command on top of our environment
            (the rule of every spawning API); the request's ``env`` entries
            are set on top of those.
        inherit_env: ``False``: commands get only ``env`` (and the request's).
    """

    def __init__(
        self,
        *,
        max_output_bytes: int = 1024 * 1024,
        exit_grace: float = 2.0,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
    ) -> None:
        self.max_output_bytes = max_output_bytes
        self.exit_grace = exit_grace
        self.env = env
        self.inherit_env = inherit_env
        self._terminals: dict[str, _Terminal] = {}
        self._ids = itertools.count(1)
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> LocalTerminals:
        if self._tg is not None:
            raise LocalProtocolError("LocalTerminals can be entered only once")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._tg is not None
        for terminal in self._terminals.values():
            terminal.kill()
            terminal.scope.cancel()
        self._terminals.clear()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)

    def __len__(self) -> int:
        return len(self._terminals)

    async def create(self, session: ClientSession, request: s.CreateTerminalRequest) -> str:
        """Start ``command`` with ``args`` in ``cwd`` (default: the session's cwd).

        A shell line without ``args`` runs through the user's shell, and
        ``cwd`` must lie within the session's roots (see the module docstring).

        Raises:
            RpcError: see the module docstring.
        """
        if self._tg is None:
            raise LocalProtocolError("use 'async with LocalTerminals()' first")
        cwd = request.cwd if isinstance(request.cwd, str) else session.cwd
        _check_request(request, cwd)
        cwd = confined_cwd(session, cwd)
        env = {**(os.environ if self.inherit_env else {}), **(self.env or {})}
        env.update({v.name: v.value for v in request.env or ()})
        asked = request.output_byte_limit
        limit = asked if isinstance(asked, int) else self.max_output_bytes
        argv = command_line(request.command, list(request.args or ()), env)
        try:
            process = await anyio.open_process(
                argv, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise RpcError(RESOURCE_NOT_FOUND, f"Command not found: {request.command}") from exc
        except OSError as exc:
            raise RpcError(ErrorCode.INTERNAL_ERROR,
                           f"Cannot start {request.command}: {exc.strerror or exc}") from exc
        terminal = _Terminal(f"term-{next(self._ids)}", session.session_id, process,
                             min(limit, self.max_output_bytes))
        self._terminals[terminal.id] = terminal
        self._tg.start_soon(self._watch, terminal)
        log.debug("terminal %s: started %s (pid %d)", terminal.id, request.command, process.pid)
        return terminal.id

    async def output(
        self, session: ClientSession, request: s.TerminalOutputRequest
    ) -> s.TerminalOutputResponse:
        """Return the kept output, whether it was truncated, and the exit status if exited."""
        t = self._get(session, request.terminal_id)
        return s.TerminalOutputResponse(
            output=t.output.text(final=t.eof.is_set()),
            truncated=t.output.truncated,
            exit_status=t.status if t.exited.is_set() else UNSET,
        )

    async def wait_for_exit(
        self, session: ClientSession, request: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        """Wait for the command to exit; return its exit code or signal."""
        t = self._get(session, request.terminal_id)
        await t.exited.wait()
        return s.WaitForTerminalExitResponse(exit_code=t.status.exit_code,
                                             signal=t.status.signal)

    async def kill(self, session: ClientSession, request: s.KillTerminalRequest) -> None:
        """Kill the command's process group; the terminal stays readable."""
        self._get(session, request.terminal_id).kill()

    async def release(self, session: ClientSession, request: s.ReleaseTerminalRequest) -> None:
        """Kill the command if running and forget the terminal."""
        t = self._get(session, request.terminal_id)
        del self._terminals[t.id]
        t.kill()
        t.scope.cancel()

    def _get(self, session: ClientSession, terminal_id: str) -> _Terminal:
        t = self._terminals.get(terminal_id)
        if t is None or t.session_id != session.session_id:
            raise RpcError(RESOURCE_NOT_FOUND, f"Unknown terminal {terminal_id}")
        return t

    async def _watch(self, t: _Terminal) -> None:
        try:
            with t.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._pump, t)
                    returncode = await t.process.wait()
                    with anyio.move_on_after(self.exit_grace):
                        await t.eof.wait()
                    t.status = _exit_status(returncode)
                    t.exited.set()
                    log.debug("terminal %s exited with %d", t.id, returncode)
        finally:
            with anyio.CancelScope(shield=True):
                t.kill()
                await t.process.aclose()
            if not t.exited.is_set():  # released or closed: still answer waiters
                code = t.process.returncode
                t.status = _exit_status(-signal.SIGKILL if code is None else code)
                t.exited.set()

    async def _pump(self, t: _Terminal) -> None:
        assert t.process.stdout is not None
        try:
            async for chunk in t.process.stdout:
                t.output.append(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            t.eof.set()
