"""The ``wireproto`` command: servers, clients, bridge and demo.

Subcommands are added by the modules that implement them; this module only
parses arguments, configures logging and exits with a one-line reason on
failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import anyio

from wireproto import __version__

__all__ = ["main"]


async def _selfcheck() -> str:
    """Round-trip a request through two in-memory peers."""
    from wireproto.rpc.peer import Peer
    from wireproto.rpc.router import Router
    from wireproto.transports.memory import memory_pair

    router = Router()

    @router.request("echo")
    async def echo(params: object) -> object:
        return params

    a, b = memory_pair()
    async with Peer(a, router), Peer(b) as client:
        result = await client.request("echo", {"ok": True})
    if result != {"ok": True}:
        raise RuntimeError(f"self-check failed: {result!r}")
    return "self-check passed: JSON-RPC round trip over an in-memory transport"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wireproto", description="Protocol framework for AI agents (Wire and ACP)."
    )
    parser.add_argument("--version", action="version", version=f"wireproto {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("selfcheck", help="run a quick in-process self-check")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; exits with status 0 on success."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "selfcheck":
        print(anyio.run(_selfcheck))
        return
    parser.print_help()
    sys.exit(2)
