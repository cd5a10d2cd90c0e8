"""The ``wireproto`` command: servers, clients, bridge and demo.

Subcommands are added by the modules that implement them (``serve``,
``bridge``, ``connect``, ``demo``); this module only parses arguments and
exits with a one-line reason on failure (status 1; 2 for usage errors).

The official Wire client SDK spawns its server as ``EXE [--session ID]
--work-dir DIR --wire [--model M] [--thinking | --no-thinking] [--yolo] ...``:
a ``--wire`` before any ``--`` selects ``wireproto wire`` with those options;
options it does not know are logged and ignored.
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
        result: object = await client.request("echo", {"ok": True})
    if result != {"ok": True}:
        raise RuntimeError(f"self-check failed: {result!r}")
    return "self-check passed: JSON-RPC round trip over an in-memory transport"


def _main_selfcheck(args: argparse.Namespace) -> int:
    print(anyio.run(_selfcheck))
    return 0


def _parser() -> argparse.ArgumentParser:
    from wireproto.cli import bridge, connect, demo, inspect, proxy, serve
    from wireproto.host import bridge_cmd

    parser = argparse.ArgumentParser(
        prog="wireproto",
        description="Protocol framework for AI agents (Wire and ACP): serve the demo agent or "
                    "your own, drive agents from the terminal or a browser inspector, bridge "
                    "stdio agents to websocket, proxy any agent to either protocol, and run "
                    "the end-to-end demo.",
        epilog="Wire SDK spawn form: wireproto [--session ID] --work-dir DIR --wire [--model M] "
               "[--thinking | --no-thinking] [--yolo]",
    )
    parser.add_argument("--version", action="version", version=f"wireproto {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve.add_parsers(sub)
    connect.add_parser(sub)
    bridge.add_parser(sub)
    proxy.add_parser(sub)
    bridge_cmd.add_parser(sub)
    demo.add_parser(sub)
    inspect.add_parser(sub)
    check = sub.add_parser("selfcheck", help="run a quick in-process self-check",
                           description="Run a JSON-RPC round trip between two in-process "
                                       "peers and print 'self-check passed' (exit status 0).")
    check.set_defaults(func=_main_selfcheck)
    return parser


def _wire_form(argv: list[str]) -> bool:
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--wire" in head and head[:1] != ["proxy"]  # the proxy takes --wire itself


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = _parser()
    if not _wire_form(argv):
        # argparse cannot give a command after "--" to a subparser whose
        # positionals were already matched: split it off by hand.
        tail: list[str] | None = None
        if "--" in argv:
            cut = argv.index("--")
            argv, tail = argv[:cut], argv[cut + 1 :]
        args = parser.parse_args(argv)
        if tail is not None:
            if not hasattr(args, "cmd"):
                parser.error("unexpected arguments after --")
            args.cmd = [*args.cmd, *tail]
        return args
    rest = list(argv)
    rest.remove("--wire")
    args, unknown = parser.parse_known_args(["wire", *rest])
    args.ignored = unknown
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line and exit: 0 on success, 1 with a one-line reason on failure.

    A usage error (options that do not go together) exits with status 2.
    """
    from wireproto.cli.common import CliError, as_cli_error, one_line
    from wireproto.cli.logs import log_failure

    args = _parse(list(sys.argv[1:] if argv is None else argv))
    func = getattr(args, "func", None)
    if func is None:
        _parser().print_help(sys.stderr)
        sys.exit(2)
    try:
        status = func(args)
    except KeyboardInterrupt:
        print("wireproto: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if not isinstance(exc, CliError):
            log_failure(args.command, exc)
        reason = as_cli_error(exc)
        print(f"wireproto: error: {one_line(reason)}", file=sys.stderr, flush=True)
        for line in reason.details if isinstance(reason, CliError) else ():
            print(f"    {line}", file=sys.stderr, flush=True)
        sys.exit(reason.status if isinstance(reason, CliError) else 1)
    sys.exit(status)
