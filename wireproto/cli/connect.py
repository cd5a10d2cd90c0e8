"""``wireproto connect acp|wire``: talk to an agent from the terminal.

The agent is spawned (``-- CMD ...``, over its stdio; its stderr goes to the
log) or reached over websocket (``--ws URL``, the URL printed by a ``--ws``
server). Interactive by default: a prompt line, the reply streamed, tool
calls and plans rendered readably (:mod:`wireproto.cli.render`), approvals
answered at the keyboard, Tab completing the slash commands the agent
advertised. Ctrl-C cancels the running turn; a second Ctrl-C (or Ctrl-D at
the prompt) exits.

``--script FILE`` runs one prompt per line (blank lines skipped) without
asking anything: approvals follow ``--approve`` (default ``never``). The exit
status is 1 when a prompt failed (``wireproto: error: prompt N failed: ...``)
and 130 when Ctrl-C stopped the script. ``--trace FILE`` records every message in
both directions as JSON Lines (:mod:`wireproto.cli.trace`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, cast

import anyio
import anyio.abc

from wireproto.cli.common import CliError, UsageError, run
from wireproto.cli.logs import LEVELS, home, open_private, redact, setup_logging
from wireproto.cli.reach import check_ws_url, unreachable
from wireproto.errors import ConnectionClosed, ProcessExited, RpcError

if TYPE_CHECKING:  # imported when connecting: building the parser stays light
    from wireproto.cli.keyboard import Keyboard
    from wireproto.cli.render import Printer

__all__ = ["Driver", "Ui", "add_parser", "describe_error", "main_connect", "open_stream"]

log = logging.getLogger(__name__)

INTERRUPTED = 130
"""The exit status of a script stopped with Ctrl-C (or a start interrupted by it)."""

APPROVALS = ("ask", "always", "never")
"""``--approve``: ask at the keyboard, or answer every approval the same way."""


def add_parser(sub: Any) -> None:
    """Add the ``connect`` subcommand."""
    parser = sub.add_parser(
        "connect", help="talk to an agent from the terminal (interactive or --script)",
        usage="wireproto connect {acp,wire} [options] (--ws URL | -- CMD [ARG ...])",
        description="Spawn an agent (-- CMD ...) or connect to one (--ws URL) and talk to it.",
        epilog="Interactive: Tab completes the agent's slash commands, Ctrl-C cancels the "
               "turn (twice: quits), approvals are answered [y]es (once), [a]lways (for the "
               "session) or [N]o. "
               "Exit status: 0; 1 with 'wireproto: error: ...' when the agent cannot be reached "
               "or stops (its exit status and last stderr lines follow) or a --script prompt "
               "failed; 2 for usage errors; 130 when Ctrl-C stopped a --script run.",
    )
    parser.add_argument("protocol", choices=("acp", "wire"), help="the agent's protocol")
    parser.add_argument("--ws", metavar="URL", help="connect to this websocket URL instead")
    parser.add_argument("--token", help="send this token as 'Authorization: Bearer TOKEN'")
    parser.add_argument("--script", metavar="FILE",
                        help="run one prompt per line of FILE ('-': stdin), non-interactively")
    parser.add_argument("--approve", choices=APPROVALS, default=None,
                        help="answer approvals: ask (interactive default), always, never "
                             "(--script default)")
    parser.add_argument("--trace", metavar="FILE",
                        help="record every message in both directions as JSON Lines")
    parser.add_argument("--cwd", metavar="DIR", help="ACP: the session's directory "
                        "(default: the current one)")
    parser.add_argument("--session", metavar="ID", help="ACP: load this session (its history "
                        "is shown) instead of creating one")
    parser.add_argument("--fs", action="store_true", help="ACP: let the agent read and write "
                        "files through this client (confined to the session's directory; each "
                        "access is shown as [fs] ...); without it the agent uses its own disk")
    parser.add_argument("--authenticate", metavar="METHOD", help="ACP: authenticate with this "
                        "method first")
    parser.add_argument("--replay", action="store_true",
                        help="Wire: show the session's history first")
    parser.add_argument("--log-level", choices=LEVELS, default="warning",
                        help="stderr log level (default: warning; the log file gets info)")
    parser.add_argument("cmd", nargs="*", metavar="CMD", default=[],  # (default: not required)
                        help="the agent command to spawn (after --)")
    parser.set_defaults(func=main_connect)


class Driver(Protocol):
    """One protocol connection as the terminal client sees it."""

    def commands(self) -> list[str]:
        """The slash commands the agent advertised (``/name``)."""

    async def prompt(self, text: str) -> str:
        """Run one turn (rendering as it streams); return the stop reason."""

    async def cancel(self) -> None:
        """Cancel the running turn."""


class Ui:
    """How the person is asked: the printer, the keyboard and the approval policy."""

    def __init__(self, printer: Printer, keyboard: Keyboard | None, approve: str) -> None:
        self.printer = printer
        self.keyboard = keyboard
        self.approve = approve
        self.server_log: Path | None = None  # a spawned wireproto server's log file

    def error(self, exc: RpcError) -> str:
        """Print a failed request's error (with its data and the server's log); return it."""
        text = describe_error(exc)
        self.printer.line(f"[error {exc.code}] {text}")
        if self.server_log is not None and self.server_log.exists():
            self.printer.line(f"  (the agent's log: {self.server_log})")
        return text

    async def decide(self, what: str) -> str:
        """Ask about an approval; returns ``once``, ``always`` or ``reject``."""
        self.printer.line(f"[approval] {what}")
        if self.approve != "ask" or self.keyboard is None:
            decision = "once" if self.approve == "always" else "reject"
            self.printer.line(f"  -> {'allowed' if decision == 'once' else 'rejected'} "
                              f"(--approve {self.approve})")
            return decision
        answer = await self.keyboard.read("  allow? [y]es / [a]lways / [N]o: ")
        reply = (answer or "").strip().lower()
        return {"y": "once", "yes": "once", "a": "always", "always": "always"}.get(reply,
                                                                                  "reject")


def describe_error(exc: RpcError) -> str:
    """An error answer in words: its message, then its ``data`` (type and message, or JSON)."""
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("type"), str):
        detail = f"{data['type']}: {data.get('message', '')}".rstrip(": ")
    elif data is None or data == {}:
        return exc.message
    else:
        import json

        detail = json.dumps(data, ensure_ascii=False, default=str)
    return f"{exc.message} ({detail})"


def main_connect(args: argparse.Namespace) -> int:
    """Run ``wireproto connect``; returns the exit status."""
    setup_logging("connect", args.log_level)
    if args.token:
        redact(args.token)
    if (args.ws is None) == (not args.cmd):
        raise UsageError("give either --ws URL or the agent command after --")
    if args.ws is not None:
        check_ws_url(args.ws)
    if args.approve is None:
        args.approve = "never" if args.script else "ask"
    if args.cwd is not None and not os.path.isdir(args.cwd):
        raise CliError(f"--cwd {args.cwd}: no such directory (the session's directory must "
                       "exist)")
    script = None if args.script is None else _read_script(args.script)
    with contextlib.ExitStack() as files:
        trace = None
        if args.trace:  # (it holds every message: only its owner may read it)
            try:
                trace = cast(BinaryIO, files.enter_context(open_private(args.trace, "wb")))
            except OSError as exc:
                raise CliError(f"cannot write the trace: {exc}") from exc
        return run(lambda: _connect(args, script, trace))


def _read_script(path: str) -> list[str]:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except OSError as exc:
        raise CliError(f"cannot read the script: {exc}") from exc
    return [line for line in text.splitlines() if line.strip()]


@asynccontextmanager
async def open_stream(
    cmd: list[str] | None, url: str | None, token: str | None = None
) -> AsyncIterator[anyio.abc.ObjectStream[bytes]]:
    """Spawn ``cmd`` (its stderr logged) or connect to ``url``; yield the message stream."""
    from wireproto.transports.open import open_stream as open_transport

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with open_transport(
        cmd or None, url=None if cmd else url, headers=headers, start_new_session=True
    ) as stream:
        yield stream


async def _connect(
    args: argparse.Namespace, script: list[str] | None, trace: BinaryIO | None
) -> int:
    from wireproto.cli.keyboard import Keyboard
    from wireproto.cli.render import Printer
    from wireproto.cli.trace import TraceStream

    printer = Printer(sys.stdout)
    drivers: list[Driver] = []
    keyboard = None
    if script is None or args.approve == "ask":
        keyboard = Keyboard(lambda: drivers[0].commands() if drivers else [])
    ui = Ui(printer, keyboard, args.approve)
    try:
        async with AsyncExitStack() as stack:
            try:
                stream = await stack.enter_async_context(
                    open_stream(args.cmd, args.ws, args.token))
            except (ConnectionClosed, OSError) as exc:
                raise unreachable(exc, args.cmd, args.ws, args.token) from exc
            ui.server_log = _server_log(stream, args.protocol)
            if trace is not None:
                stream = TraceStream(stream, trace)
            opener = _acp if args.protocol == "acp" else _wire
            drivers.append(await stack.enter_async_context(opener(stream, ui, args)))
            return await _session(drivers[0], ui, script)
    except ProcessExited as exc:
        raise CliError(f"the agent closed the connection: {exc.summary}", exc.stderr) from exc
    except ConnectionClosed as exc:
        raise CliError(f"the agent closed the connection: {exc}") from exc
    finally:
        if keyboard is not None:
            keyboard.close()


def _server_log(stream: anyio.abc.ObjectStream[bytes], protocol: str) -> Path | None:
    """Where a spawned ``wireproto acp|wire`` logs (it exists only if the agent is one)."""
    from wireproto.transports.subprocess import SubprocessStream

    if not isinstance(stream, SubprocessStream):
        return None
    return home() / "logs" / f"{protocol}-{stream.pid}.log"


async def _session(driver: Driver, ui: Ui, script: list[str] | None) -> int:
    state = _State()
    status = 0
    failure: CliError | ConnectionClosed | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_interrupts, driver, ui.printer, state, tg)
        try:
            status = await (_script(driver, ui, script, state) if script is not None
                            else _interactive(driver, ui, state))
        except (CliError, ConnectionClosed) as exc:  # raised outside the group: not wrapped
            failure = exc
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if state.quit and script is not None:
        return INTERRUPTED  # the script did not run to its end
    return status  # quitting an interactive session with Ctrl-C is not a failure


class _State:
    def __init__(self) -> None:
        self.turn = False
        self.cancelling = False
        self.quit = False


async def _interrupts(
    driver: Driver, printer: Printer, state: _State, tg: anyio.abc.TaskGroup
) -> None:
    """Ctrl-C: cancel the running turn; a second one (or one at the prompt) quits."""
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            if state.turn and not state.cancelling:
                state.cancelling = True
                printer.line("^C cancelling the turn (Ctrl-C again to quit)")
                tg.start_soon(_cancel, driver)
                continue
            printer.line("^C")
            state.quit = True
            tg.cancel_scope.cancel()
            return


async def _cancel(driver: Driver) -> None:
    try:
        await driver.cancel()
    except (RpcError, ConnectionClosed) as exc:
        log.info("cancel: %s", exc)


async def _turn(driver: Driver, ui: Ui, state: _State, text: str) -> str | None:
    """Run one prompt; returns ``None``, or the error in words when it failed."""
    state.turn, state.cancelling = True, False
    try:
        reason = await driver.prompt(text)
    except RpcError as exc:
        return ui.error(exc)
    finally:
        state.turn = False
    ui.printer.line(f"[{reason}]")
    return None


async def _interactive(driver: Driver, ui: Ui, state: _State) -> int:
    assert ui.keyboard is not None
    if ui.keyboard.interactive:
        ui.printer.line("Tab completes the agent's slash commands; Ctrl-C cancels a turn; "
                        "Ctrl-D quits.")
    while not ui.printer.closed:
        line = await ui.keyboard.read("> " if ui.keyboard.interactive else "")
        if line is None:
            return 0
        if line.strip():
            await _turn(driver, ui, state, line)
    return 0


async def _script(driver: Driver, ui: Ui, lines: list[str], state: _State) -> int:
    """Run every line; raises :class:`CliError` naming the first failed prompt."""
    failed: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        if ui.printer.closed:
            break
        ui.printer.line(f"> {line}")
        error = await _turn(driver, ui, state, line)
        if error is not None:
            failed.append((number, error))
    if failed:
        number, error = failed[0]
        more = f" ({len(failed)} of {len(lines)} prompts failed)" if len(failed) > 1 else ""
        where = f"; the agent's log: {ui.server_log}" if (
            ui.server_log is not None and ui.server_log.exists()) else ""
        raise CliError(f"prompt {number} failed: {error}{more}{where}")
    return 0


def _acp(stream: anyio.abc.ObjectStream[bytes], ui: Ui,
         args: argparse.Namespace) -> Any:
    from wireproto.cli.clients import open_acp

    cwd = os.path.abspath(args.cwd or os.getcwd())
    return open_acp(stream, ui, cwd=cwd, session_id=args.session, fs=args.fs,
                    auth_method=args.authenticate)


def _wire(stream: anyio.abc.ObjectStream[bytes], ui: Ui,
          args: argparse.Namespace) -> Any:
    from wireproto.cli.clients import open_wire

    return open_wire(stream, ui, replay=args.replay)
