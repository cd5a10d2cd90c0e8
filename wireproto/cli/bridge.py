"""``wireproto bridge --ws [HOST:]PORT -- CMD ...``: any stdio agent over websocket.

Each websocket connection gets its own child process running ``CMD``; the
bridge only pumps whole messages both ways, never decoding them (one text
frame <-> one line on the child's stdio). When the connection ends the
child's stdin is closed and it is shut down (terminated, then killed, if it
does not exit by itself); when the child ends, the connection is closed.
On a stop signal every child's stdin is closed, so each can finish and
flush its last messages before its connection closes. The child's stderr
goes to the log. Security as for ``acp --ws``.
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from wireproto.cli.common import UsageError, run
from wireproto.cli.listen import Listener, add_ws_options, serve_listener
from wireproto.cli.logs import LEVELS, setup_logging
from wireproto.errors import MessageTooLarge

if TYPE_CHECKING:  # imported when serving: building the parser stays light
    from wireproto.transports.websocket import WebSocketRequest, WebSocketStream

__all__ = ["CHILD_SHUTDOWN_STEP", "add_parser", "main_bridge", "pump"]

log = logging.getLogger(__name__)

CHILD_SHUTDOWN_STEP = 2.0
"""Seconds each step of a child's shutdown (EOF, SIGTERM, SIGKILL) may take."""

_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)


def add_parser(sub: Any) -> None:
    """Add the ``bridge`` subcommand."""
    parser = sub.add_parser(
        "bridge", help="expose a stdio agent over websocket (one process per connection)",
        usage="wireproto bridge --ws [HOST:]PORT [options] -- CMD [ARG ...]",
        description="Serve websocket connections, each pumped to and from a fresh child "
                    "process running CMD over its stdin/stdout.",
    )
    add_ws_options(parser, required=True)
    parser.add_argument("--log-level", choices=LEVELS, default="info",
                        help="stderr log level (default: info)")
    parser.add_argument("cmd", nargs="*", metavar="CMD", help="the agent command (after --)")
    parser.set_defaults(func=main_bridge)


def main_bridge(args: argparse.Namespace) -> int:
    """Run ``wireproto bridge``; returns the exit status."""
    setup_logging("bridge", args.log_level)
    cmd = list(args.cmd)
    if not cmd:
        raise UsageError("give the agent command after --")
    listener = Listener.from_args(args)
    from wireproto.transports.subprocess import open_subprocess

    async def handler(ws: WebSocketStream, request: WebSocketRequest, stop: anyio.Event) -> None:
        async with open_subprocess(
            cmd, stderr="log", shutdown_timeout=CHILD_SHUTDOWN_STEP
        ) as child:
            log.info("bridge: %s started (pid %d)", cmd[0], child.pid)
            async with anyio.create_task_group() as tg:

                async def until_stop() -> None:
                    await stop.wait()
                    await child.send_eof()  # the child finishes; its end closes the socket

                async def both(a: anyio.abc.ObjectStream[bytes],
                               b: anyio.abc.ObjectStream[bytes]) -> None:
                    await pump(a, b)
                    tg.cancel_scope.cancel()

                tg.start_soon(until_stop)
                tg.start_soon(both, ws, child)
                tg.start_soon(both, child, ws)
        log.info("bridge: %s (pid %d) exited with status %s", cmd[0], child.pid, child.returncode)

    return run(lambda: serve_listener(listener, handler, "bridge"))


async def pump(source: anyio.abc.ObjectStream[bytes],
               sink: anyio.abc.ObjectStream[bytes]) -> None:
    """Forward whole messages from ``source`` to ``sink`` until either ends."""
    while True:
        try:
            message = await source.receive()
        except MessageTooLarge as exc:
            log.warning("bridge: message dropped: %s", exc)
            continue
        except _ENDED:
            return
        try:
            await sink.send(message)
        except _ENDED:
            return
