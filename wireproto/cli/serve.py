"""``wireproto acp`` and ``wireproto wire``: serve an agent on stdio or websocket.

On stdio nothing but protocol messages reaches stdout, and nothing at all
before the client's first request: logs go to stderr and the log file, and
the agent is loaded with stdout pointed at stderr. On stdin EOF or a stop
signal the running turns are cancelled, pending requests resolved visibly,
output flushed, and the process exits 0 (see :mod:`wireproto.cli.common`).

With ``--ws`` every connection is its own protocol connection (for Wire its
own session: ``?session=ID`` resumes that one, created when unknown), all
served by one shared :class:`~wireproto.agent.runtime.Runtime`.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc

from wireproto.cli.common import CliError, UsageError, run, watch_signals
from wireproto.cli.listen import Listener, add_ws_options, serve_listener
from wireproto.cli.logs import LEVELS, setup_logging

if TYPE_CHECKING:  # imported when serving: building the parser stays light
    from wireproto.agent.runtime import Runtime
    from wireproto.transports.websocket import WebSocketRequest, WebSocketStream

__all__ = ["add_parsers", "add_wire_options", "main_acp", "main_wire"]

log = logging.getLogger(__name__)

Serve = Callable[[anyio.abc.ObjectStream[bytes] | None, anyio.Event, dict[str, str]],
                 Awaitable[None]]
"""Serves one connection: ``(stream or None for stdio, stop, connection options)``."""


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--agent``, ``--log-level`` and the websocket options."""
    parser.add_argument(
        "--agent", metavar="FILE.py:ATTR|MODULE:ATTR",
        help="serve this agent (an Agent instance or a zero-argument callable returning one) "
             "instead of the demo agent: path/to/file.py:ATTR (from any directory) or "
             "package.module:ATTR (the current directory is importable); default: "
             "$WIREPROTO_AGENT when set",
    )
    parser.add_argument("--log-level", choices=LEVELS, default="info",
                        help="stderr log level (default: info; the log file gets info or finer)")
    add_ws_options(parser)


def add_wire_options(parser: argparse.ArgumentParser) -> None:
    """The Wire server's own options (also accepted in the ``--wire`` spawn form)."""
    parser.add_argument("--session", metavar="ID",
                        help="resume this session (created when unknown); default: a new one")
    parser.add_argument("--work-dir", metavar="DIR",
                        help="the session's working directory (default: the current one)")
    parser.add_argument("--model", metavar="M", help="the agent's model option")
    parser.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None,
                        help="switch the agent's thinking option on or off")
    parser.add_argument("--yolo", action="store_true",
                        help="approve every approval request without asking the client")


_LIFECYCLE = ("Sessions are kept under $WIREPROTO_HOME/sessions and the log in "
              "$WIREPROTO_HOME/logs/COMMAND-PID.log ($WIREPROTO_HOME: ~/.wireproto by default). "
              "End of input or SIGTERM cancels the running turns and exits 0; an --agent that "
              "cannot be loaded exits 1 with 'wireproto: error: ...'.")


def add_parsers(sub: Any) -> None:
    """Add the ``acp`` and ``wire`` subcommands."""
    acp = sub.add_parser(
        "acp", help="serve an agent over the Agent Client Protocol (stdio, or --ws)",
        description="Serve an agent (the demo agent by default) over ACP on stdin/stdout, "
                    "or over websocket with --ws.",
        epilog=_LIFECYCLE,
    )
    add_common_options(acp)
    acp.add_argument("--allow-client-stdio-mcp", action="store_true",
                     help="accept stdio MCP servers from the client")
    acp.add_argument("--require-auth", action="store_true",
                     help="sessions need a successful 'authenticate' first")
    acp.set_defaults(func=main_acp)
    wire = sub.add_parser(
        "wire", help="serve an agent over Kimi's Wire protocol (stdio, or --ws)",
        description="Serve an agent (the demo agent by default) over Wire on stdin/stdout, "
                    "or over websocket with --ws. 'wireproto [--session ID] --work-dir DIR "
                    "--wire ...' (the Wire SDK's spawn form) is the same command.",
        epilog=_LIFECYCLE,
    )
    add_common_options(wire)
    add_wire_options(wire)
    wire.set_defaults(func=main_wire)


def _runtime(args: argparse.Namespace) -> Runtime:
    """The runtime serving ``--agent`` (default: the demo agent).

    Sessions are JSON Lines files under ``$WIREPROTO_HOME/sessions``.
    """
    from wireproto.agent.runtime import Runtime
    from wireproto.agent.store import JsonlStore
    from wireproto.cli.agentload import AgentLoadError, agent_spec, load_agent

    spec = agent_spec(args.agent)
    if spec is not None:
        try:
            agent = load_agent(*spec)
        except AgentLoadError as exc:
            raise CliError(str(exc)) from exc
        args.agent = spec[0]  # named in the "serving ..." log line
        log.info("agent %s (%s, from %s)", agent.info.name, spec[0], spec[1])
        return Runtime(agent, JsonlStore())
    from wireproto.agent.demo import DemoAgent

    return Runtime(DemoAgent(), JsonlStore())


def main_acp(args: argparse.Namespace) -> int:
    """Run ``wireproto acp``; returns the exit status."""
    setup_logging("acp", args.log_level)
    runtime = _runtime(args)
    if args.require_auth and not runtime.agent.auth_methods:
        raise CliError(f"--require-auth: the agent {runtime.agent.info.name!r} declares no "
                       "authentication method (Agent.auth_methods), so no client could open "
                       "a session; declare one or drop --require-auth")

    async def serve(
        stream: anyio.abc.ObjectStream[bytes] | None, stop: anyio.Event, _: dict[str, str]
    ) -> None:
        from wireproto.adapters.acp import serve_acp

        await serve_acp(
            runtime, stream, allow_client_stdio_mcp=args.allow_client_stdio_mcp,
            require_auth=args.require_auth, stop=stop,
        )

    return _serve(args, "acp", serve)


def main_wire(args: argparse.Namespace) -> int:
    """Run ``wireproto wire`` (or the ``--wire`` spawn form); returns the exit status."""
    setup_logging("wire", args.log_level)
    ignored = getattr(args, "ignored", [])
    if ignored:
        log.warning("ignoring unsupported options: %s", " ".join(ignored))
    if args.ws and args.session:
        raise UsageError("--session cannot be combined with --ws: each connection chooses its "
                       "session with ?session=ID")
    if args.work_dir is not None and not os.path.isdir(args.work_dir):
        raise CliError(f"--work-dir {args.work_dir}: no such directory (the session's "
                       "working directory must exist)")
    runtime = _runtime(args)

    async def serve(
        stream: anyio.abc.ObjectStream[bytes] | None, stop: anyio.Event, options: dict[str, str]
    ) -> None:
        from wireproto.adapters.wire import serve_wire

        await serve_wire(
            runtime, stream, session_id=options.get("session", args.session),
            work_dir=args.work_dir, yolo=args.yolo, model=args.model, thinking=args.thinking,
            stop=stop,
        )

    return _serve(args, "wire", serve)


def _serve(args: argparse.Namespace, name: str, serve: Serve) -> int:
    if args.ws is None:
        what = f"{name}: serving {args.agent or 'the demo agent'} on stdin/stdout"
        return run(lambda: _serve_stdio(serve, what))
    listener = Listener.from_args(args)
    if name == "wire":  # (each connection chooses its session)
        listener.checks.append(_check_session)

    async def handler(stream: WebSocketStream, request: WebSocketRequest,
                      stop: anyio.Event) -> None:
        await serve(stream, stop, _options(request.path))

    return run(lambda: serve_listener(listener, handler, name))


def _check_session(request: WebSocketRequest) -> tuple[int, str] | None:
    """Refuse a ``?session=`` that cannot name a session (400, with the reason)."""
    from wireproto.agent.store import valid_session_id

    session = _options(request.path).get("session")
    if session is None or valid_session_id(session):
        return None
    shown = session if len(session) <= 40 else session[:40] + "..."
    return 400, (f"invalid session id {shown!r}: use letters, digits, '.', '_' and '-' "
                 "(up to 128, starting with a letter or digit)")


def _options(path: str) -> dict[str, str]:
    """Per-connection options from the query string (``session``); the token is dropped."""
    query = parse_qs(urlsplit(path).query)
    return {key: values[0] for key, values in query.items() if key == "session" and values}


async def _serve_stdio(serve: Serve, what: str) -> int:
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(watch_signals, stop, tg.cancel_scope)
        log.info("%s", what)
        await serve(None, stop, {})
        tg.cancel_scope.cancel()
    log.info("stopped")
    return 0
