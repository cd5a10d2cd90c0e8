"""Session files of ``wireproto acp`` and ``wireproto wire``: damaged headers, kill -9.

A session file whose first line is torn (a crash while creating it) is moved
aside with a warning, and its id can be created again, whichever protocol
meets it first.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

TORN = b'{"type":"session","session_id":"t","cwd":"/tm'


def plant(kit: Any) -> Path:
    """Leave a torn session file ``t`` in the processes' session directory."""
    sessions = kit.home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "t.jsonl").write_bytes(TORN)
    return sessions


def moved_aside(sessions: Path) -> list[Path]:
    return sorted(sessions.glob("t.jsonl.unreadable-*"))


def test_wire_session_with_a_torn_header_is_created_again(kit: Any, tmp_path: Path) -> None:
    sessions = plant(kit)
    proc = kit.spawn("wire", "--session", "t", "--work-dir", str(tmp_path))
    proc.send(kit.wire_init)
    assert "result" in proc.recv()
    proc.send(kit.request("p", "prompt", {"user_input": "hello"}))
    messages = proc.recv_until(lambda m: m.get("id") == "p")
    assert messages[-1]["result"]["status"] == "finished"
    assert kit.stop(proc) == 0
    (aside,) = moved_aside(sessions)
    assert aside.read_bytes() == TORN  # kept for inspection
    assert (sessions / "t.jsonl").read_bytes().startswith(b'{"type":"session","session_id":"t"')
    assert "unreadable session header" in proc.err


def test_acp_load_and_list_move_a_torn_header_aside(kit: Any, tmp_path: Path) -> None:
    sessions = plant(kit)
    proc = kit.spawn("acp", "--log-level", "warning")
    proc.send(kit.acp_init)
    proc.recv()
    proc.send(kit.request(1, "session/load",
                          {"sessionId": "t", "cwd": str(tmp_path), "mcpServers": []}))
    error = proc.recv_until(lambda m: m.get("id") == 1)[-1]["error"]
    assert "not found" in error["message"].lower()
    assert len(moved_aside(sessions)) == 1
    proc.send(kit.request(2, "session/list", {}))
    assert proc.recv_until(lambda m: m.get("id") == 2)[-1]["result"]["sessions"] == []
    proc.wait_err("unreadable session header")  # (stderr is drained by a thread of its own)
    assert kit.stop(proc) == 0

    # listing meets a torn file first: same rule
    (sessions / "t.jsonl").write_bytes(TORN)
    proc = kit.spawn("acp")
    proc.send(kit.acp_init)
    proc.recv()
    proc.send(kit.request(3, "session/list", {}))
    assert proc.recv_until(lambda m: m.get("id") == 3)[-1]["result"]["sessions"] == []
    assert len(moved_aside(sessions)) == 2
    assert kit.stop(proc) == 0

    # and the id is usable again, by the other protocol too
    proc = kit.spawn("wire", "--session", "t", "--work-dir", str(tmp_path))
    proc.send(kit.wire_init)
    assert "result" in proc.recv()
    assert kit.stop(proc) == 0
    proc = kit.spawn("acp")
    proc.send(kit.acp_init)
    proc.recv()
    proc.send(kit.request(4, "session/list", {}))
    listed = proc.recv_until(lambda m: m.get("id") == 4)[-1]["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == ["t"]
    assert kit.stop(proc) == 0


def _ticks(messages: list[dict[str, Any]]) -> list[str]:
    """The ``tick N`` texts among ACP updates or Wire events."""
    found = []
    for message in messages:
        text = json.dumps(message)
        for word in re.findall(r'"(tick \d+)"', text):
            found.append(word)
    return found


def _stored_ticks(path: Path) -> list[str]:
    return re.findall(r'"text":"(tick \d+)"', path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_kill_9_mid_turn_loses_nothing_the_client_received(
    kit: Any, tmp_path: Path, protocol: str
) -> None:
    """History records are grouped per burst, yet written before the client can see them."""
    for kill_after in (1, 3):
        if protocol == "acp":
            proc = kit.spawn("acp")
            proc.send(kit.acp_init)
            proc.recv()
            proc.send(kit.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
            sid = proc.recv_until(lambda m: m.get("id") == 1)[-1]["result"]["sessionId"]
            proc.send(kit.request(2, "session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "/slow 1000000"}]}))
        else:
            sid = f"killed-{kill_after}"
            proc = kit.spawn("wire", "--session", sid, "--work-dir", str(tmp_path))
            proc.send(kit.wire_init)
            proc.recv()
            proc.send(kit.request(2, "prompt", {"user_input": "/slow 1000000"}))
        wanted = f"tick {kill_after}"
        seen = proc.recv_until(lambda m, wanted=wanted: wanted in _ticks([m]))
        proc.popen.kill()  # SIGKILL: no cleanup, mid-turn
        assert proc.wait() == -signal.SIGKILL
        seen += proc.rest()
        received = _ticks(seen)
        stored = _stored_ticks(kit.home / "sessions" / f"{sid}.jsonl")
        assert received and stored[: len(received)] == received, (received, stored)
