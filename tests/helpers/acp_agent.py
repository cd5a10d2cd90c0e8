"""Serve the demo agent over stdio with ``serve_acp`` (a child process for tests).

Usage: ``python acp_agent.py [--backend asyncio|trio] [--require-auth]
[--allow-client-stdio-mcp]``. Sessions are JSON Lines files under
``$WIREPROTO_HOME/sessions`` (as with ``wireproto acp``); logs
go to stderr (level from ``ACP_AGENT_LOG``, default WARNING). The process
serves until its stdin ends, or until SIGTERM / SIGINT (a graceful stop).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import sys

import anyio

from wireproto.adapters.acp import serve_acp
from wireproto.agent.demo import DemoAgent
from wireproto.agent.store import JsonlStore


async def main(args: argparse.Namespace) -> None:
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    stop.set()
                    return

        tg.start_soon(on_signal)
        await serve_acp(
            DemoAgent(require_auth=args.require_auth),
            allow_client_stdio_mcp=args.allow_client_stdio_mcp,
            stop=stop,
            store=JsonlStore(),
        )
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    parser.add_argument("--require-auth", action="store_true")
    parser.add_argument("--allow-client-stdio-mcp", action="store_true")
    arguments = parser.parse_args()
    logging.basicConfig(level=os.environ.get("ACP_AGENT_LOG", "WARNING"), stream=sys.stderr,
                        format="agent %(levelname)s %(name)s: %(message)s")
    anyio.run(functools.partial(main, arguments), backend=arguments.backend)
