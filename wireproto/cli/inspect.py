"""``wireproto inspect``: a browser inspector for an agent's traffic (ACP and Wire).

Three ways in:

- ``wireproto inspect [--agent-protocol acp|wire|auto] -- CMD ...`` spawns the
  agent (its stderr goes to the log) and taps its stdio;
- ``wireproto inspect --ws URL [--token T]`` attaches to an agent served with
  ``--ws`` (``T`` is that server's token);
- ``wireproto inspect --trace FILE`` opens a ``connect --trace`` recording,
  read-only.

The page is served on ``--listen`` (default ``127.0.0.1:0``, a free port) and
its address goes to stderr as one line (never to the log)::

    wireproto: inspector on http://127.0.0.1:PORT/?token=TOKEN

The page's token is ``--page-token``, else ``WIREPROTO_WS_TOKEN``, else a
generated one; listening on a non-loopback address needs an explicit one.
The inspector keeps serving after the agent ends (to read and export the
recording) until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import webbrowser
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.abc

from wireproto.cli.common import CliError, UsageError, run, watch_signals
from wireproto.cli.listen import TOKEN_ENV, Listener
from wireproto.cli.logs import LEVELS, redact, setup_logging
from wireproto.cli.reach import check_ws_url, unreachable
from wireproto.cli.wsauth import MIN_TOKEN_LENGTH
from wireproto.errors import ConnectionClosed

__all__ = ["add_parser", "main_inspect"]

log = logging.getLogger(__name__)


def add_parser(sub: Any) -> None:
    """Add the ``inspect`` subcommand."""
    parser = sub.add_parser(
        "inspect", help="watch and drive an agent from a browser page (ACP and Wire)",
        usage="wireproto inspect [options] (-- CMD [ARG ...] | --ws URL | --trace FILE)",
        description="Serve a local web page showing every message between a client and an "
                    "agent, with a conversation view, a raw composer and trace export.",
    )
    parser.add_argument("--agent-protocol", choices=("acp", "wire", "auto"), default="auto",
                        help="the agent's protocol (default: auto, told by its answer to "
                             "initialize)")
    parser.add_argument("--ws", metavar="URL", help="attach to an agent served with --ws")
    parser.add_argument("--token", help="the --ws agent's token (sent as 'Authorization: "
                                        "Bearer TOKEN')")
    parser.add_argument("--trace", metavar="FILE",
                        help="open a recorded trace (connect --trace) read-only")
    parser.add_argument("--listen", metavar="[HOST:]PORT", default="127.0.0.1:0",
                        help="where the page is served (default 127.0.0.1:0, a free port)")
    parser.add_argument("--page-token", metavar="TOKEN",
                        help=f"the page's token, at least {MIN_TOKEN_LENGTH} characters, no "
                             f"whitespace (default: ${TOKEN_ENV}, else a generated one)")
    parser.add_argument("--open", action="store_true",
                        help="open the page in the default browser, when there is one")
    parser.add_argument("--log-level", choices=LEVELS, default="warning",
                        help="stderr log level (default: warning; the log file gets info)")
    parser.add_argument("cmd", nargs="*", metavar="CMD",
                        help="the agent command to spawn (after --)")
    parser.set_defaults(func=main_inspect)


def main_inspect(args: argparse.Namespace) -> int:
    """Run ``wireproto inspect``; returns the exit status."""
    setup_logging("inspect", args.log_level)
    if args.token:
        redact(args.token)
    sources = [bool(args.cmd), args.ws is not None, args.trace is not None]
    if sum(sources) != 1:
        raise UsageError("give exactly one of: the agent command after --, --ws URL, "
                       "--trace FILE")
    if args.ws is not None:
        check_ws_url(args.ws)
    listener = _listener(args.listen, args.page_token)
    if args.trace is not None:
        inspector = _load_trace(args.trace)
        return run(lambda: _serve_trace(inspector, listener, args.open))
    return run(lambda: _live(args, listener))


def _listener(spec: str, token: str | None) -> Listener:
    """The page's listener; the rules of ``--ws`` (see :mod:`wireproto.cli.listen`)."""
    return Listener(spec, token, [], token_flag="--page-token", flag="--listen")


def _announce(url: str, want_open: bool) -> None:
    print(f"wireproto: inspector on {url}", file=sys.stderr, flush=True)
    if want_open:
        try:
            opened = webbrowser.open(url)
        except Exception as exc:  # a broken browser setup is not our failure
            log.info("inspect: could not open a browser: %s", exc)
            opened = False
        if not opened:
            log.warning("inspect: no browser to open; open the printed URL yourself")


async def _serve_until_stopped(inspector: Any, listener: Listener, want_open: bool,
                               stop: anyio.Event) -> None:
    from wireproto.inspect.server import serve_inspector

    async with serve_inspector(inspector, listener.host, listener.port, listener.token) as url:
        _announce(url, want_open)
        await stop.wait()


def _load_trace(path: str) -> Any:
    from wireproto.inspect.handshake import guess_protocol
    from wireproto.inspect.record import Recorder, load_trace
    from wireproto.inspect.server import Inspector

    recorder = Recorder()
    try:
        with open(path, "rb") as f:
            problems = load_trace(f, recorder)
    except OSError as exc:
        raise CliError(f"cannot read the trace: {exc}") from exc
    if problems and not recorder.records:
        raise CliError(f"{path} is not a trace ({problems[0]}); record one with "
                       "'wireproto connect --trace FILE' or 'wireproto proxy --trace FILE'")
    for problem in problems[:20]:
        log.warning("inspect: %s: %s (skipped)", path, problem)
    detail = f"{len(problems)} unreadable line(s) skipped" if problems else ""
    return Inspector(recorder, None, {
        "mode": "trace", "protocol": guess_protocol(recorder), "state": "trace",
        "detail": detail, "title": os.path.basename(path), "cwd": os.getcwd()})


async def _serve_trace(inspector: Any, listener: Listener, want_open: bool) -> int:
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(watch_signals, stop, tg.cancel_scope)
        await _serve_until_stopped(inspector, listener, want_open, stop)
        tg.cancel_scope.cancel()
    return 0


async def _live(args: argparse.Namespace, listener: Listener) -> int:
    from wireproto.inspect.record import Recorder
    from wireproto.inspect.server import Inspector
    from wireproto.inspect.tap import open_tap
    from wireproto.transports.open import open_stream

    title = " ".join(args.cmd) if args.cmd else args.ws
    recorder = Recorder()
    inspector = Inspector(recorder, None, {
        "mode": "live", "protocol": None, "state": "starting", "detail": "",
        "title": title, "cwd": os.getcwd()})
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    stop = anyio.Event()
    async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
        await tg.start(watch_signals, stop, tg.cancel_scope)
        try:
            stream = await stack.enter_async_context(open_stream(
                args.cmd or None, url=None if args.cmd else args.ws, headers=headers,
                start_new_session=True))
        except (ConnectionClosed, OSError) as exc:
            raise unreachable(exc, args.cmd, args.ws, args.token) from exc
        tap = await stack.enter_async_context(open_tap(stream, recorder))
        inspector.tap = tap
        async with anyio.create_task_group() as inner:
            inner.start_soon(_run_tap, tap, inspector)
            inner.start_soon(_handshake, tap, inspector, args.agent_protocol)
            await _serve_until_stopped(inspector, listener, args.open, stop)
            inner.cancel_scope.cancel()
        tg.cancel_scope.cancel()
    return 0


async def _run_tap(tap: Any, inspector: Any) -> None:
    await tap.run()
    log.info("inspect: %s", tap.end_reason)
    inspector.set_status(state="ended", detail=tap.end_reason)


async def _handshake(tap: Any, inspector: Any, protocol: str) -> None:
    from wireproto.inspect.handshake import HandshakeError, initialize

    try:
        spoken = await initialize(tap, protocol)
    except HandshakeError as exc:
        log.warning("inspect: %s", exc)
        inspector.set_status(state="failed", detail=str(exc))
        return
    except anyio.BrokenResourceError as exc:
        inspector.set_status(state="ended", detail=str(exc))
        return
    inspector.set_status(protocol=spoken, state="running")
