"""``wireproto proxy --serve acp|wire -- CMD ...``: serve any agent over any protocol.

CMD is the backend agent, spawned over its stdio (its stderr goes to the
log). The front is this process's stdin/stdout, or websocket with ``--ws``
(one backend per connection; security as for ``acp --ws``).

* Same protocol on both sides (``--serve acp`` to an ACP agent, ``wire`` to
  a Wire agent): the transparent relay of :mod:`wireproto.proxy.relay`,
  every message passed on unchanged; ``--trace FILE`` records them in the
  ``connect --trace`` format (``send``: client to agent). On stdio without
  ``--trace`` nothing needs copying: the agent inherits the proxy's stdin and
  stdout.
* Different protocols: the translating proxy of :mod:`wireproto.proxy`
  (see docs/proxy.md for the mapping).

``--agent-protocol auto`` (the default) probes CMD once with an
``initialize`` (:mod:`wireproto.proxy.probe`). The Wire SDK's spawn form
works too: ``wireproto proxy [--session ID] --work-dir DIR --wire -- CMD``
(``--wire`` means ``--serve wire``); relaying to a Wire agent, those options
are passed on to CMD.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import anyio
import anyio.abc

from wireproto.cli.common import CliError, UsageError, run, watch_signals
from wireproto.cli.listen import Listener, add_ws_options, serve_listener
from wireproto.cli.logs import LEVELS, open_private, setup_logging

if TYPE_CHECKING:  # imported when serving: building the parser stays light
    from wireproto.proxy.relay import Observer
    from wireproto.transports.websocket import WebSocketRequest, WebSocketStream

__all__ = ["add_parser", "main_proxy"]

log = logging.getLogger(__name__)

CHILD_SHUTDOWN_STEP = 2.0
"""Seconds each step of a backend's shutdown (EOF, SIGTERM, SIGKILL) may take."""


def add_parser(sub: Any) -> None:
    """Add the ``proxy`` subcommand."""
    parser = sub.add_parser(
        "proxy", help="serve any agent over ACP or Wire (translating, or a recording relay)",
        usage="wireproto proxy --serve {acp,wire} [options] -- CMD [ARG ...]",
        description="Spawn the agent CMD and serve it over the protocol chosen with --serve, "
                    "translating between ACP and Wire when CMD speaks the other one, or "
                    "relaying every message unchanged (and recording it with --trace) when "
                    "it speaks the same.",
    )
    parser.add_argument("--serve", choices=("acp", "wire"),
                        help="the protocol the proxy's clients speak")
    parser.add_argument("--wire", action="store_true",
                        help="the Wire SDK's spawn form: the same as --serve wire")
    parser.add_argument("--agent-protocol", choices=("acp", "wire", "auto"), default="auto",
                        help="the protocol CMD speaks (default: auto, probed with an "
                             "initialize)")
    parser.add_argument("--trace", metavar="FILE",
                        help="record every relayed message as JSON Lines (same protocol on "
                             "both sides only)")
    parser.add_argument("--session", metavar="ID",
                        help="Wire front: load or resume this backend session")
    parser.add_argument("--work-dir", metavar="DIR",
                        help="Wire front: the session's working directory (default: the "
                             "current one)")
    parser.add_argument("--model", metavar="M", help=argparse.SUPPRESS)
    parser.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None,
                        help=argparse.SUPPRESS)
    for ignored in ("--agent-file", "--skills-dir"):  # the Wire SDK's, meaningless here
        parser.add_argument(ignored, metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument("--yolo", action="store_true",
                        help="Wire front: approve every approval without asking the client")
    parser.add_argument("--log-level", choices=LEVELS, default="info",
                        help="stderr log level (default: info)")
    add_ws_options(parser)
    parser.add_argument("cmd", nargs="*", metavar="CMD", help="the agent command (after --)")
    parser.set_defaults(func=main_proxy)


def main_proxy(args: argparse.Namespace) -> int:
    """Run ``wireproto proxy``; returns the exit status."""
    setup_logging("proxy", args.log_level)
    cmd = list(args.cmd)
    if not cmd:
        raise UsageError("give the agent command after --, e.g. "
                       "'wireproto proxy --serve acp -- kimi --wire'")
    serve = "wire" if args.wire else args.serve
    if serve is None:
        raise UsageError("say which protocol to serve: --serve acp or --serve wire")
    if args.wire and args.serve == "acp":
        raise UsageError("--wire (the Wire SDK's spawn form) serves Wire: drop --serve acp")
    if args.work_dir is not None and not os.path.isdir(args.work_dir):
        raise CliError(f"--work-dir {args.work_dir}: no such directory (the session's "
                       "working directory must exist)")
    backend = args.agent_protocol
    if backend == "auto":
        backend = anyio.run(_probe, cmd, backend="asyncio")
    if backend != serve and args.trace:
        raise UsageError("--trace records a relay: it needs the same protocol on both sides "
                       f"(here {serve} in front of a {backend} agent)")
    if backend == serve:
        if serve == "wire":
            cmd = [*cmd, *_wire_flags(args)]
        return _main_relay(args, cmd, serve)
    return _main_translate(args, cmd, serve)


def _wire_flags(args: argparse.Namespace) -> list[str]:
    """A Wire relay passes the Wire SDK's spawn options on to the Wire agent."""
    flags: list[str] = []
    for option, value in (("--session", args.session), ("--work-dir", args.work_dir),
                          ("--model", args.model)):
        if value is not None:
            flags += [option, value]
    if args.thinking is not None:
        flags.append("--thinking" if args.thinking else "--no-thinking")
    if args.yolo:
        flags.append("--yolo")
    if flags and "--wire" not in args.cmd:
        flags.append("--wire")
    return flags


async def _probe(cmd: list[str]) -> str:
    from wireproto.proxy.probe import ProbeError, probe_protocol

    try:
        return await probe_protocol(cmd)
    except ProbeError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot start {cmd[0]}: {exc}") from None


def _main_relay(args: argparse.Namespace, cmd: list[str], protocol: str) -> int:
    with contextlib.ExitStack() as files:
        try:
            sink = (
                cast(BinaryIO, files.enter_context(open_private(args.trace, "wb")))
                if args.trace else None
            )
        except OSError as exc:
            raise CliError(f"cannot open the trace file: {exc}") from None
        observers = _observers(sink)
        log.info("proxy: relaying %s unchanged to %s", protocol.upper(), cmd[0])
        if args.ws is None:
            if not observers:  # nothing to record: the agent gets our stdio itself
                return run(lambda: _pass_through(cmd))
            return run(lambda: _relay_stdio(cmd, observers))
        listener = Listener.from_args(args)

        async def handler(ws: WebSocketStream, request: WebSocketRequest,
                          stop: anyio.Event) -> None:
            await _relay_one(ws, cmd, observers, stop)

        return run(lambda: serve_listener(listener, handler, "proxy"))


def _observers(sink: BinaryIO | None) -> list[Observer]:
    if sink is None:
        return []
    from wireproto.proxy.trace import TraceWriter

    return [TraceWriter(sink)]


async def _relay_one(front: anyio.abc.ObjectStream[bytes], cmd: list[str],
                     observers: list[Observer], stop: anyio.Event) -> None:
    """Relay between ``front`` and a new ``cmd``; on ``stop`` the agent's input
    ends, and the agent's own end ends the relay."""
    from wireproto.proxy.pipes import relay_pipes
    from wireproto.proxy.relay import relay_messages
    from wireproto.transports.stdio import StdioStream
    from wireproto.transports.subprocess import open_subprocess

    # stdio to a child's pipes: byte pumps in threads; a websocket: message by message
    relay = relay_pipes if isinstance(front, StdioStream) else relay_messages
    try:
        child_cm = open_subprocess(cmd, stderr="log", shutdown_timeout=CHILD_SHUTDOWN_STEP,
                                   start_new_session=True)
        async with child_cm as child:
            log.info("proxy: %s started (pid %d)", cmd[0], child.pid)
            await relay(front, child, observers, stop=stop)
        log.info("proxy: %s (pid %d) exited with status %s", cmd[0], child.pid,
                 child.returncode)
    except OSError as exc:
        raise CliError(f"cannot start {cmd[0]}: {exc}") from None


async def _relay_stdio(cmd: list[str], observers: list[Observer]) -> int:
    from wireproto.transports.stdio import open_stdio

    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(watch_signals, stop, tg.cancel_scope)
        async with open_stdio() as front:
            await _relay_one(front, cmd, observers, stop)
        tg.cancel_scope.cancel()
    log.info("stopped")
    return 0


def _main_translate(args: argparse.Namespace, cmd: list[str], serve: str) -> int:
    from wireproto.agent.api import Agent
    from wireproto.agent.runtime import Runtime
    from wireproto.agent.store import SessionStore, wireproto_home
    from wireproto.proxy.acpback import AcpBackedAgent
    from wireproto.proxy.wireback import WireBackedAgent

    records = wireproto_home() / "proxy-sessions"
    if serve == "wire" and args.ws and args.session:
        raise UsageError("--session cannot be combined with --ws: each connection chooses its "
                       "session with ?session=ID")

    def make() -> tuple[Agent, Any]:
        if serve == "acp":
            wire_agent = WireBackedAgent(cmd)
            return wire_agent, wire_agent.running()
        acp_agent = AcpBackedAgent(cmd, ids_file=records / "acp-backend-ids.json")
        return acp_agent, acp_agent.running()

    log.info("proxy: serving %s, translated to the %s agent %s", serve.upper(),
             "Wire" if serve == "acp" else "ACP", cmd[0])

    async def serve_one(stream: anyio.abc.ObjectStream[bytes] | None, stop: anyio.Event,
                        session: str | None) -> None:
        agent, running = make()
        runtime = Runtime(agent, SessionStore(records))
        async with running:
            if serve == "acp":
                from wireproto.adapters.acp import serve_acp

                await serve_acp(runtime, stream, stop=stop)
            else:
                from wireproto.adapters.wire import serve_wire

                await serve_wire(runtime, stream, session_id=session, work_dir=args.work_dir,
                                 yolo=args.yolo, model=args.model, thinking=args.thinking,
                                 stop=stop)

    async def main_stdio() -> int:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(watch_signals, stop, tg.cancel_scope)
            await serve_one(None, stop, args.session)
            tg.cancel_scope.cancel()
        log.info("stopped")
        return 0

    if args.ws is None:
        return run(main_stdio)
    listener = Listener.from_args(args)

    async def handler(ws: WebSocketStream, request: WebSocketRequest, stop: anyio.Event) -> None:
        from wireproto.cli.serve import _options

        await serve_one(ws, stop, _options(request.path).get("session"))

    return run(lambda: serve_listener(listener, handler, "proxy"))


async def _pass_through(cmd: list[str]) -> int:
    """Relay on stdio with nothing to record: the agent inherits our stdin and stdout,
    so its messages are not even copied; a stop signal terminates it."""
    from wireproto._childsignal import signal_child

    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(watch_signals, stop, tg.cancel_scope)
        try:
            process = await anyio.open_process(cmd, stdin=None, stdout=None, stderr=None,
                                               start_new_session=True)
        except OSError as exc:
            raise CliError(f"cannot start {cmd[0]}: {exc}") from None
        log.info("proxy: %s started (pid %d) on this process's stdin and stdout", cmd[0],
                 process.pid)

        async def until_stop() -> None:
            await stop.wait()
            signal_child(process, signal.SIGTERM)  # (not an error if it has just exited)
            await anyio.sleep(CHILD_SHUTDOWN_STEP)
            signal_child(process, signal.SIGKILL)

        tg.start_soon(until_stop)
        status = await process.wait()
        tg.cancel_scope.cancel()
    log.info("proxy: %s (pid %d) exited with status %s", cmd[0], process.pid, status)
    return 0
