"""A client that cannot reach its agent says why and what to do, in one line (real processes).

``wireproto connect`` and ``wireproto inspect`` given a command that does not exist,
a file that is not executable, a URL that is not a websocket one, or a websocket
server that refuses the token.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest


def _error(proc: Any) -> str:
    assert proc.wait() == 1
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    assert len(errors) == 1, proc.err
    assert "Traceback" not in proc.err
    return errors[0]


@pytest.mark.parametrize("command", ["connect", "inspect"])
def test_a_command_that_cannot_start(kit: Any, tmp_path: Path, command: str) -> None:
    script = tmp_path / "agent.py"
    script.write_text("print('hello')\n")  # not executable
    head = ["connect", "acp", "--script", "-"] if command == "connect" else ["inspect"]
    missing = kit.spawn(*head, "--", "wireprot", "acp", stdin=subprocess.DEVNULL)
    assert _error(missing) == ("wireproto: error: cannot start the agent: 'wireprot' was not "
                               "found; check the command after -- (a program on PATH, or a "
                               "path to one)")
    plain = kit.spawn(*head, "--", str(script), stdin=subprocess.DEVNULL)
    assert _error(plain) == (f"wireproto: error: cannot start the agent: '{script}' is not "
                             f"executable; run it through its interpreter (e.g. -- python "
                             f"{script}) or chmod +x it")


@pytest.mark.parametrize("command", ["connect", "inspect"])
def test_a_url_that_is_not_a_websocket_one(kit: Any, command: str) -> None:
    head = ["connect", "acp", "--script", "-"] if command == "connect" else ["inspect"]
    proc = kit.spawn(*head, "--ws", "http://127.0.0.1:1/", stdin=subprocess.DEVNULL)
    assert _error(proc) == ("wireproto: error: --ws 'http://127.0.0.1:1/' is not a websocket "
                            "URL: give the ws://HOST:PORT/?token=... address the agent printed")


def test_a_refused_token_is_told_apart_from_a_missing_one(kit: Any) -> None:
    server, base, _ = kit.ws("acp", "--ws", "0")
    cases = {
        ("connect", "acp", "--script", "-", "--ws", f"{base}/"): "the server wants its token",
        ("inspect", "--ws", f"{base}/"): "the server wants its token",
        ("connect", "acp", "--script", "-", "--ws", f"{base}/", "--token", "wrong"):
            "the server refused this token",
        ("connect", "acp", "--script", "-", "--ws", f"{base}/?token=wrong"):
            "the server refused this token",
        ("inspect", "--ws", f"{base}/", "--token", "wrong"): "the server refused this token",
    }
    for args, hint in cases.items():
        error = _error(kit.spawn(*args, stdin=subprocess.DEVNULL))
        reason = "Invalid token" if "wrong" in " ".join(args) else "Missing token"
        assert error.startswith("wireproto: error: cannot reach the agent: websocket "
                                f"handshake refused: HTTP 401 ({reason}); "), (args, error)
        assert hint in error, (args, error)
    assert kit.stop(server) == 0


def test_a_bad_cwd_or_trace_path_is_refused_before_the_agent_starts(
    kit: Any, tmp_path: Path
) -> None:
    cases = {
        ("--cwd", str(tmp_path / "nowhere")): f"--cwd {tmp_path / 'nowhere'}: no such "
                                             "directory (the session's directory must exist)",
        ("--trace", str(tmp_path / "nowhere" / "t.jsonl")): "cannot write the trace: [Errno 2] "
                                                           "No such file or directory",
    }
    for args, wanted in cases.items():
        proc = kit.spawn("connect", "acp", *args, "--script", "-", "--", "wireprot",
                         stdin=subprocess.DEVNULL)
        assert _error(proc).startswith(f"wireproto: error: {wanted}"), proc.err
