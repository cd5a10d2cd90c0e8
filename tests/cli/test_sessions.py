"""Session files of ``wireproto acp`` and ``wireproto wire``: one rule for damaged headers.

A session file whose first line is torn (a crash while creating it) is moved
aside with a warning, and its id can be created again, whichever protocol
meets it first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    assert "unreadable session header" in proc.err
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
