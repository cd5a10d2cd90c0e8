"""``wireproto inspect`` as a process: its arguments, its banner, attaching to a --ws agent."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from websockets.sync.client import connect

URL_LINE = re.compile(r"^wireproto: inspector on (http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]{48})$")


def _frames_until(ws: Any, predicate: Any) -> list[dict[str, Any]]:
    seen = []
    while True:
        frame = json.loads(ws.recv(timeout=20))
        seen.append(frame)
        if predicate(frame):
            return seen


def test_usage_errors_say_what_to_do(kit: Any, tmp_path: Any) -> None:
    not_a_trace = tmp_path / "notes.txt"
    not_a_trace.write_text("some notes\nnot JSON at all\n")
    usage = {  # options that do not go together, or a bad value: exit status 2
        (): "give exactly one of",
        ("--trace", "x.jsonl", "--ws", "ws://127.0.0.1:1"): "give exactly one of",
        ("--listen", "0.0.0.0:0", "--trace", "x"): "listening on the non-loopback "
                                                    "address 0.0.0.0 needs an explicit token "
                                                    "(--page-token",
        ("--listen", "nowhere", "--trace", "x"): "--listen: not a [HOST:]PORT",
    }
    cases = {
        ("--trace", str(tmp_path / "missing.jsonl")): "cannot read the trace",
        ("--trace", str(not_a_trace)): f"{not_a_trace} is not a trace (line 1: not a trace "
                                       "line (JSON is malformed",
        ("--ws", "ws://127.0.0.1:1/"): "cannot reach the agent",
        ("--", str(tmp_path / "no-such-agent")): "cannot start the agent: "
                                                  f"'{tmp_path / 'no-such-agent'}' was not found",
    }
    for args, message, status in [*((a, m, 2) for a, m in usage.items()),
                                  *((a, m, 1) for a, m in cases.items())]:
        proc = kit.spawn("inspect", *args, stdin=subprocess.DEVNULL)
        assert proc.wait() == status, args
        assert f"wireproto: error: {message}" in proc.err, (args, proc.err)
        assert "Traceback" not in proc.err


def test_a_trace_is_served_behind_a_token_printed_once(kit: Any, tmp_path: Any) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"t":0.5,"dir":"send","msg":{"jsonrpc":"2.0","method":"event"}}\n'
                     "not a trace line\n")
    proc = kit.spawn("inspect", "--trace", str(trace), stdin=subprocess.DEVNULL)
    match = proc.wait_err(URL_LINE.pattern)
    base, token = match.group(1), match.group(2)
    ws_url = base.replace("http:", "ws:") + "/ws"
    with connect(f"{ws_url}?token={token}", open_timeout=10) as ws:
        frames = _frames_until(ws, lambda f: f["type"] == "synced")
    hello = frames[0]
    assert hello["mode"] == "trace" and hello["readOnly"] and hello["protocol"] == "wire"
    assert "1 unreadable line(s) skipped" in hello["detail"]
    assert [f["items"][0]["t"] for f in frames if f["type"] == "records"] == [0.5]
    assert kit.stop(proc) == 0
    assert sum(token in line for line in proc.err.splitlines()) == 1
    assert token not in kit.log_file("inspect", proc.pid).read_text()


def test_attaches_to_an_agent_served_with_ws(kit: Any) -> None:
    agent, agent_url, agent_token = kit.ws("acp", "--ws", "0")
    proc = kit.spawn("inspect", "--ws", f"{agent_url}/", "--token", agent_token,
                     stdin=subprocess.DEVNULL)
    base, token = proc.wait_err(URL_LINE.pattern).groups()
    with connect(f"{base.replace('http:', 'ws:')}/ws?token={token}", open_timeout=10) as ws:
        frames = _frames_until(ws, lambda f: f.get("state") == "running")
        assert frames[-1]["protocol"] == "acp"
        ws.send(json.dumps({"type": "send", "fresh": True, "ref": 1, "msg": {
            "jsonrpc": "2.0", "method": "session/list", "params": {}}}))
        seen = _frames_until(ws, lambda f: f["type"] == "record" and "result" in f["msg"]
                             and "sessions" in f["msg"]["result"])
    assert any(f["type"] == "sent" and f["ref"] == 1 for f in seen)
    assert kit.stop(proc) == 0
    assert agent_token not in kit.log_file("inspect", proc.pid).read_text()
    kit.stop(agent)
