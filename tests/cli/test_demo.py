"""``wireproto demo``: passes against our servers, fails against a broken one."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# the demo starts and restarts both servers (four processes): room for a busy machine
pytestmark = pytest.mark.timeout(120)


def _isolated(kit: Any, tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """An environment without WIREPROTO_HOME, with a fresh HOME and an empty cwd."""
    env = dict(kit.env)
    env.pop("WIREPROTO_HOME")
    home = tmp_path / "home"
    home.mkdir()
    env["HOME"] = str(home)
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    return env, home, cwd


@pytest.mark.parametrize("mode", [[], ["--ws"]], ids=["stdio", "ws"])
def test_demo_passes_and_touches_nothing(kit: Any, tmp_path: Path, mode: list[str]) -> None:
    env, home, cwd = _isolated(kit, tmp_path)
    proc = kit.spawn("demo", *mode, cwd=cwd, env=env, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait(90) == 0, proc.out.decode() + proc.err
    out = proc.out.decode()
    assert "Summary: 22 passed, 0 failed, 0 not run: all checks passed" in out
    for step in ("/slow 100, cancelled midway", "session/load replays the history",
                 "/tool add (external tool)", "replay of the history", "/write with approval"):
        assert f"PASS  {step}" in out
    assert "FAIL" not in out and "SKIP" not in out
    assert list(cwd.iterdir()) == [] and list(home.iterdir()) == []


def test_demo_fails_against_a_server_that_never_answers(kit: Any, tmp_path: Path) -> None:
    env, _, cwd = _isolated(kit, tmp_path)
    never_answers = shlex.join([sys.executable, "-c", "import sys; sys.stdin.read()"])
    proc = kit.spawn("demo", "--only", "acp", "--timeout", "2", "--acp-cmd", never_answers,
                     cwd=cwd, env=env, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait(60) == 1
    out = proc.out.decode()
    assert "FAIL  initialize: no answer within 2 s" in out
    assert "SKIP  session/load replays the history" in out
    assert "FAILED" in out.splitlines()[-1]


def test_demo_fails_against_a_server_that_exits(kit: Any, tmp_path: Path) -> None:
    env, _, cwd = _isolated(kit, tmp_path)
    proc = kit.spawn("demo", "--only", "wire", "--wire-cmd",
                     shlex.join([sys.executable, "-c", "pass"]), cwd=cwd,
                     env=env, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait(60) == 1
    out = proc.out.decode()
    assert "FAIL  initialize with an external tool" in out
    assert "FAILED" in out.splitlines()[-1]
