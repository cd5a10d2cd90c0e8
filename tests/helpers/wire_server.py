"""Serve the demo agent over Wire on this process's stdio (for subprocess tests).

Usage: ``python wire_server.py BACKEND [--session ID] [--work-dir DIR] [--yolo]``.
Sessions are JSON Lines files under ``$WIREPROTO_HOME/sessions`` (as with
``wireproto wire``; the tests point it at a temporary directory). Logs go to
stderr; SIGTERM stops serving cleanly.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import anyio

from wireproto.adapters.wire import serve_wire
from wireproto.agent.demo import DemoAgent
from wireproto.agent.store import JsonlStore


async def _main(args: argparse.Namespace) -> None:
    stop = anyio.Event()

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                stop.set()
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(on_signal)
        await serve_wire(
            DemoAgent(), session_id=args.session, work_dir=args.work_dir, yolo=args.yolo,
            stop=stop, store=JsonlStore(),
        )
        tg.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=["asyncio", "trio"])
    parser.add_argument("--session")
    parser.add_argument("--work-dir")
    parser.add_argument("--yolo", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    anyio.run(_main, args, backend=args.backend)


if __name__ == "__main__":
    main()
