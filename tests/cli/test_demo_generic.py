"""``wireproto demo --generic``: the protocol-only checks pass for an agent of your own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

MINE = textwrap.dedent("""
    from wireproto.agent.api import Agent, AgentInfo
    from wireproto.agent.events import StopReason

    class Mine(Agent):
        info = AgentInfo(name="mine", version="0.1")

        async def prompt(self, turn):
            await turn.say("hi")
            return StopReason.END_TURN

    agent = Mine()
""")


def _demo(kit: Any, tmp_path: Path, *extra: str) -> tuple[int, str]:
    (tmp_path / "mine.py").write_text(MINE)
    server = f"{sys.executable} -m wireproto {{}} --agent {tmp_path / 'mine.py'}:agent"
    proc = kit.spawn("demo", "--acp-cmd", server.format("acp"), "--wire-cmd",
                     server.format("wire"), *extra, lines=False, stdin=subprocess.DEVNULL)
    return proc.wait(), proc.out.decode()


def test_generic_checks_pass_for_a_custom_agent(kit: Any, tmp_path: Path) -> None:
    status, out = _demo(kit, tmp_path, "--generic")
    assert status == 0, out
    assert "--generic: checking the protocol only" in out
    for name in ("initialize", "session/new", "a prompt ends", "a cancelled prompt ends",
                 "shutdown: the server exits cleanly"):
        assert f"PASS  {name}" in out
    assert "Summary: 9 passed, 0 failed, 0 not run: all checks passed" in out


def test_without_generic_the_demo_contract_is_announced(kit: Any, tmp_path: Path) -> None:
    status, out = _demo(kit, tmp_path, "--only", "acp")
    assert status == 1
    assert "checking the demo agent's contract (its slash commands and replies); for an " \
           "agent of your own, add --generic" in out


def test_a_server_command_that_cannot_start_is_refused_up_front(
    kit: Any, tmp_path: Path
) -> None:
    (tmp_path / "mine.py").write_text(MINE)
    (tmp_path / "serve.sh").write_text(f"#!/bin/sh\nexec {sys.executable} -m wireproto \"$@\"\n")
    (tmp_path / "serve.sh").chmod(0o755)
    cases = {
        ("--acp-cmd", "wireprot acp"): "--acp-cmd 'wireprot acp': 'wireprot' was not found on "
                                       "PATH",
        ("--wire-cmd", "./nowhere/serve wire"): "--wire-cmd './nowhere/serve wire': "
                                                "'./nowhere/serve' does not exist (relative to "
                                                f"the current directory {tmp_path})",
    }
    for args, wanted in cases.items():
        proc = kit.spawn("demo", *args, cwd=tmp_path, stdin=subprocess.DEVNULL)
        assert proc.wait() == 1
        assert f"wireproto: error: {wanted}" in proc.err.splitlines(), proc.err
    # a relative program and agent file still run, from the demo's temporary directory
    proc = kit.spawn("demo", "--generic", "--only", "acp", "--acp-cmd",
                     "./serve.sh acp --agent mine.py:agent", cwd=tmp_path,
                     lines=False, stdin=subprocess.DEVNULL)
    assert proc.wait() == 0, proc.out.decode() + proc.err


def test_files_named_in_a_server_command_are_made_absolute(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from wireproto.cli.demo import _command

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(MINE)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "a.toml").write_text("")
    mine = str(tmp_path / "mine.py")
    cmd = _command(f"{sys.executable} acp --agent mine.py:agent --config=conf/a.toml mine.py "
                   "--agent=./mine.py:agent other.py:agent acp conf /abs/x.py ws://h:1/x",
                   "acp")
    assert cmd[1:] == ["acp", "--agent", f"{mine}:agent", f"--config={tmp_path}/conf/a.toml",
                       mine, f"--agent={mine}:agent", "other.py:agent", "acp", "conf",
                       "/abs/x.py", "ws://h:1/x"]  # (only files that exist here)
