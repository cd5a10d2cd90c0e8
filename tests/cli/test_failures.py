"""Agent failures the terminal client and the demo make visible (real processes).

A spawned agent that dies before answering: the exit status and its last
stderr lines. An agent whose ``prompt`` raises: the exception's type and
message, the server's log file, and ``wireproto: error: ...`` in script mode.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

RAISING = textwrap.dedent("""
    from wireproto.agent.api import Agent
    from wireproto.agent.events import StopReason, ToolKind

    class Boom(Agent):
        async def prompt(self, turn):
            await turn.start_tool("search", "Searching", kind=ToolKind.SEARCH)
            raise RuntimeError("the model backend is down")

    agent = Boom()
""")


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "broken.py").write_text("from wireproto.agent.api import Agent\nagent = (\n")
    (folder / "raising.py").write_text(RAISING)
    (folder / "script.txt").write_text("hello\n")
    return folder


def _errors(proc: Any) -> list[str]:
    return [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_connect_shows_why_a_spawned_agent_died(kit: Any, agents: Path, protocol: str) -> None:
    proc = kit.spawn("connect", protocol, "--script", str(agents / "script.txt"), "--",
                     *kit.wireproto, protocol, "--agent", f"{agents / 'broken.py'}:agent",
                     stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    errors = _errors(proc)
    assert len(errors) == 1, proc.err
    assert "the agent closed the connection: connection closed before initialize was " \
        "answered" in errors[0]
    assert "exited with status 1; its last stderr lines:" in errors[0]
    after = proc.err.split(errors[0], 1)[1]
    assert "SyntaxError" in after and "broken.py" in after  # the child's own error line
    assert "Traceback" not in proc.err


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_connect_script_shows_a_prompt_exception(kit: Any, agents: Path, protocol: str) -> None:
    proc = kit.spawn("connect", protocol, "--script", str(agents / "script.txt"), "--",
                     *kit.wireproto, protocol, "--agent", f"{agents / 'raising.py'}:agent",
                     stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 1
    out = proc.out.decode()
    assert "[error -32603] Internal error (RuntimeError: the model backend is down)" in out
    assert "(the agent's log: " in out
    errors = _errors(proc)
    assert len(errors) == 1, proc.err
    assert "prompt 1 failed: Internal error (RuntimeError: the model backend is down)" \
        in errors[0]
    assert "; the agent's log: " in errors[0]
    log_path = Path(errors[0].split("; the agent's log: ", 1)[1])
    log = log_path.read_text()
    assert "Boom.prompt() failed: RuntimeError: the model backend is down" in log
    assert "session sess_" in log and ", turn user_" in log
    assert "Traceback" in log  # the traceback is in the log, not sent to the client
    assert "Traceback" not in out


def test_demo_shows_why_a_spawned_agent_died(kit: Any, agents: Path) -> None:
    cmd = f"{sys.executable} -m wireproto acp --agent {agents / 'broken.py'}:agent"
    proc = kit.spawn("demo", "--only", "acp", "--acp-cmd", cmd, lines=False,
                     stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    out = proc.out.decode()
    fail = next(line for line in out.splitlines() if "FAIL" in line)
    assert "initialize: connection closed before initialize was answered" in fail
    assert "exited with status 1; its last stderr lines:" in fail
    assert "SyntaxError" in out.split(fail, 1)[1]


def test_demo_ws_shows_why_a_server_never_listened(kit: Any, agents: Path) -> None:
    cmd = f"{sys.executable} -m wireproto acp --agent {agents / 'broken.py'}:agent"
    proc = kit.spawn("demo", "--ws", "--only", "acp", "--acp-cmd", cmd, lines=False,
                     stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    errors = _errors(proc)
    assert len(errors) == 1 and "the server stopped before it was listening" in errors[0]
    assert "exited with status 1; its last stderr lines:" in errors[0]
    assert "SyntaxError" in proc.err.split(errors[0], 1)[1]
    assert "Traceback" not in proc.err and "Logging error" not in proc.err


CRASHING = textwrap.dedent("""
    import os, sys
    from wireproto.agent.api import Agent

    class Crash(Agent):
        async def prompt(self, turn):
            print("fatal: the model server went away", file=sys.stderr, flush=True)
            os._exit(3)

    agent = Crash()
""")


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_connect_shows_why_an_agent_died_during_a_turn(
    kit: Any, agents: Path, protocol: str
) -> None:
    (agents / "crash.py").write_text(CRASHING)
    proc = kit.spawn("connect", protocol, "--script", str(agents / "script.txt"), "--",
                     *kit.wireproto, protocol, "--agent", f"{agents / 'crash.py'}:agent",
                     stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    errors = _errors(proc)
    assert len(errors) == 1, proc.err
    assert "prompt was answered: " in errors[0] and "exited with status 3" in errors[0]
    assert proc.err.rstrip().endswith("fatal: the model server went away")
