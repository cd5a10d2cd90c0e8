"""``wireproto acp`` / ``wireproto wire`` on stdio, driven as real processes."""

from __future__ import annotations

import json
import os
import select
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest

SLOW = "/slow 1000000"  # (a turn that only a cancel ends)


def _stdout_is_empty(proc: Any) -> bool:
    """Whether nothing at all is readable on the child's stdout right now."""
    assert proc.popen.stdout is not None
    return proc.queue.empty() and not select.select([proc.popen.stdout], [], [], 0.2)[0]


@pytest.mark.parametrize("command", ["acp", "wire"])
def test_silent_before_the_first_request_and_logs_to_stderr_and_file(
    kit: Any, command: str
) -> None:
    proc = kit.spawn(command)
    proc.wait_err(rf"{command}: serving the demo agent on stdin/stdout")
    assert _stdout_is_empty(proc)
    init = kit.acp_init if command == "acp" else kit.wire_init
    proc.send(init)
    first = proc.recv()
    assert first["id"] == init["id"] and "result" in first  # the very first stdout line
    proc.close_stdin()
    assert proc.rest() == []
    assert proc.wait() == 0
    log = kit.log_file(command, proc.pid).read_text()
    assert "serving the demo agent on stdin/stdout" in log
    assert "serving the demo agent on stdin/stdout" in proc.err
    assert "initialize" in log or "initialized" in log or "protocol" in log


def _acp_slow_turn(kit: Any, proc: Any) -> None:
    proc.send(kit.acp_init)
    proc.recv()
    proc.send(kit.request(1, "session/new", {"cwd": str(kit.tmp), "mcpServers": []}))
    sid = proc.recv_until(lambda m: m.get("id") == 1)[-1]["result"]["sessionId"]
    proc.send(kit.request(2, "session/prompt", {
        "sessionId": sid, "prompt": [{"type": "text", "text": SLOW}]}))
    proc.recv_until(lambda m: "tick 2" in json.dumps(m))


def _wire_slow_turn(kit: Any, proc: Any) -> None:
    proc.send(kit.wire_init)
    proc.recv()
    proc.send(kit.request(2, "prompt", {"user_input": SLOW}))
    proc.recv_until(lambda m: "tick 2" in json.dumps(m))


_CANCELLED = {
    "acp": lambda m: m.get("id") == 2 and m.get("result") == {"stopReason": "cancelled"},
    "wire": lambda m: m.get("id") == 2 and m.get("result") == {"status": "cancelled"},
}


@pytest.mark.parametrize("command", ["acp", "wire"])
@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_end_of_input_or_sigterm_mid_turn_cancels_and_exits_zero(
    kit: Any, command: str, how: str
) -> None:
    proc = kit.spawn(command)
    (_acp_slow_turn if command == "acp" else _wire_slow_turn)(kit, proc)
    if how == "eof":
        proc.close_stdin()
    else:
        proc.signal(signal.SIGTERM)
    rest = proc.rest()
    assert proc.wait() == 0  # well within 5 s in practice; the limit here is generous
    assert any(_CANCELLED[command](m) for m in rest), rest  # resolved visibly
    if command == "wire":
        types = [m["params"]["type"] for m in rest if m.get("method") == "event"]
        assert types[-2:] == ["StepInterrupted", "TurnEnd"]


def test_wire_sdk_spawn_form(kit: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = kit.spawn("--session", "sdk-1", "--work-dir", str(work), "--wire",
                     "--model", "demo-large", "--no-thinking", "--yolo", "--skills-dir", "x")
    proc.send(kit.wire_init)
    assert proc.recv()["result"]["server"]["name"] == "wireproto-demo"
    proc.send(kit.request("p1", "prompt", {"user_input": "/write made.txt by yolo"}))
    messages = proc.recv_until(lambda m: m.get("id") == "p1")
    assert messages[-1]["result"] == {"status": "finished"}
    assert not any(m.get("method") == "request" for m in messages)  # --yolo: no approval asked
    assert (work / "made.txt").read_text() == "by yolo"  # --work-dir
    proc.close_stdin()
    assert proc.wait() == 0
    assert "ignoring unsupported options: --skills-dir x" in proc.err
    assert "session sdk-1" in proc.err
    sessions = list((kit.home / "sessions").iterdir())
    assert any("sdk-1" in p.name for p in sessions)


def test_agent_option_serves_a_user_agent_from_the_current_directory(
    kit: Any, tmp_path: Path
) -> None:
    (tmp_path / "myagent.py").write_text(textwrap.dedent("""
        from wireproto.agent.api import Agent
        from wireproto.agent.events import StopReason

        print("printed while importing")

        class Shout(Agent):
            async def prompt(self, turn):
                await turn.say(turn.text.upper())
                return StopReason.END_TURN

        def make():
            return Shout()
    """))
    proc = kit.spawn("wire", "--agent", "myagent:make", cwd=tmp_path)
    proc.send(kit.wire_init)
    assert proc.recv()["id"] == "init"  # the import-time print did not reach stdout
    proc.send(kit.request("p", "prompt", {"user_input": "hello"}))
    messages = proc.recv_until(lambda m: m.get("id") == "p")
    texts = [m["params"]["payload"].get("text", "") for m in messages
             if m.get("method") == "event" and m["params"]["type"] == "ContentPart"]
    assert "".join(texts) == "HELLO"
    proc.close_stdin()
    assert proc.wait() == 0
    assert "printed while importing" in proc.err


@pytest.mark.parametrize("args, reason, status", [
    (["acp", "--agent", "no_such_module:x"],
     "tried the module 'no_such_module': ModuleNotFoundError", 1),
    (["acp", "--agent", "json"], "expected path/to/file.py:ATTR or package.module:ATTR", 1),
    (["wire", "--agent", "json:dumps"], "dumps() failed: TypeError", 1),
    (["acp", "--ws", "0.0.0.0:0"], "needs an explicit token", 2),
    (["acp", "--ws", "abc"], "--ws: not a [HOST:]PORT listen address: 'abc'", 2),
    (["bridge", "--ws", "99999", "--", "x"], "--ws: port out of range: 99999", 2),
    (["wire", "--ws", "0", "--session", "x"], "--session cannot be combined with --ws", 2),
    (["wire", "--work-dir", "/no/such/dir"], "--work-dir /no/such/dir: no such directory", 1),
    (["--work-dir", "/no/such/dir", "--wire"], "--work-dir /no/such/dir: no such directory", 1),
])
def test_failures_exit_nonzero_with_one_line(kit: Any, args: list[str], reason: str,
                                             status: int) -> None:
    proc = kit.spawn(*args)
    assert proc.wait() == status  # 2: a usage error
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    assert len(errors) == 1 and reason in errors[0], proc.err
    assert "Traceback" not in proc.err
    assert proc.rest() == []


def test_sigint_stops_a_server_only_when_stdin_is_a_terminal(kit: Any) -> None:
    piped = kit.spawn("acp")
    piped.wait_err("serving the demo agent")
    piped.signal(signal.SIGINT)  # a Ctrl-C meant for the parent that spawned us
    piped.wait_err("SIGINT ignored: stdin is not a terminal")
    piped.send(kit.acp_init)
    assert piped.recv()["id"] == 0
    piped.close_stdin()
    assert piped.wait() == 0

    master, slave = os.openpty()
    try:
        interactive = kit.spawn("acp", stdin=slave)
        interactive.wait_err("serving the demo agent")
        interactive.signal(signal.SIGINT)
        assert interactive.wait() == 0
        assert "SIGINT: shutting down" in interactive.err
    finally:
        os.close(master)
        os.close(slave)
