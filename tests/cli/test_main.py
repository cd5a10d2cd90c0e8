"""The ``wireproto`` command itself: ``--help``, ``--version``, usage errors, the README table.

These run the argument parser in this process (no server is started).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wireproto import __version__
from wireproto.cli import _parser, main

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> list[str]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def _exit(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(argv)
    code = info.value.code
    return code if isinstance(code, int) else 1


def test_every_subcommand_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _commands()
    assert set(commands) >= {"acp", "wire", "connect", "bridge", "mcp-bridge", "demo"}
    for command in commands:
        assert _exit([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: wireproto {command}"), out
        assert "-h, --help" in out


def test_every_subcommand_says_what_it_does() -> None:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command, parser in sub.choices.items():
        assert parser.description, f"wireproto {command} --help has no description"
    described = (_parser().description or "").lower()
    for what in ("serve", "drive", "inspector", "bridge", "proxy", "demo"):
        assert what in described, what


def test_version_and_top_level_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["--version"]) == 0
    assert capsys.readouterr().out == f"wireproto {__version__}\n"
    assert _exit(["--help"]) == 0
    out = capsys.readouterr().out
    for command in _commands():
        assert re.search(rf"^\s+{re.escape(command)}\b", out, re.MULTILINE), command
    assert _exit([]) == 2  # no command: the help, on stderr
    assert capsys.readouterr().err.startswith("usage: wireproto")


@pytest.mark.parametrize("argv, reason", [
    (["nope"], "invalid choice: 'nope'"),
    (["acp", "--log-level", "loud"], "invalid choice: 'loud'"),
    (["demo", "--", "x"], "unexpected arguments after --"),
    (["connect"], "the following arguments are required: protocol"),
])
def test_usage_errors_exit_2_with_a_reason(
    capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    assert _exit(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("wireproto") and reason in last, last
    assert "CMD" not in last, last  # (connect: --ws URL does without a command)


def test_the_readme_lists_every_subcommand() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## The command line", 1)[1].split("\n## ", 1)[0]
    for command in _commands():
        assert f"`wireproto {command}" in section, f"README lacks wireproto {command}"
    for option in ("--ws", "--token", "--allow-origin", "--script", "--approve", "--trace",
                   "--agent", "--allow-client-stdio-mcp", "--require-auth"):
        assert option in section, f"README lacks {option}"


def test_selfcheck(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["selfcheck"]) == 0
    assert capsys.readouterr().out.startswith("self-check passed")


def test_building_the_parser_stays_light() -> None:
    """``wireproto mcp-bridge`` is started for every bridged harness session: the
    command line must not import the servers, clients or websockets to parse it."""
    code = ("import sys; from wireproto.cli import _parser; _parser(); "
            "print('\\n'.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    heavy = ("websockets", "jsonschema", "wireproto.agent", "wireproto.adapters.acp",
             "wireproto.adapters.wire", "wireproto.transports.websocket",
             "wireproto.transports.subprocess", "wireproto.cli.render")
    loaded = [name for name in done.stdout.split() if name.startswith(heavy)]
    assert loaded == []
