"""``wireproto bridge``: stdio agents over websocket, one child per connection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

PID_ECHO = textwrap.dedent("""
    import json, os, sys
    for line in sys.stdin:
        message = json.loads(line)
        message["pid"] = os.getpid()
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()
""")


def _exited(server: Any, pid: int) -> None:
    """Wait until the bridge logged the exit of its child ``pid`` (it was reaped)."""
    server.wait_err(rf"bridge: .* \(pid {pid}\) exited with status")


def test_two_concurrent_clients_get_their_own_child(kit: Any, tmp_path: Path) -> None:
    script = tmp_path / "pid_echo.py"
    script.write_text(PID_ECHO)
    server, base, token = kit.ws("bridge", "--ws", "0", "--", sys.executable, str(script))
    url = f"{base}/?token={token}"
    with connect(url) as a, connect(url) as b:
        answers = {}
        for name, ws in (("a", a), ("b", b)):
            ws.send(json.dumps({"who": name, "n": 1}))
        for name, ws in (("a", a), ("b", b)):
            answers[name] = json.loads(ws.recv(timeout=20))
            assert answers[name]["who"] == name and answers[name]["n"] == 1
        assert answers["a"]["pid"] != answers["b"]["pid"]
        # the messages are passed through as they are, in order
        for n in range(2, 6):
            a.send(json.dumps({"who": "a", "n": n}))
        assert [json.loads(a.recv(timeout=20))["n"] for _ in range(4)] == [2, 3, 4, 5]
        a.close()
        _exited(server, answers["a"]["pid"])  # the child of a closed connection ends
        b.send(json.dumps({"who": "b", "n": 2}))
        assert json.loads(b.recv(timeout=20))["pid"] == answers["b"]["pid"]
        assert f"(pid {answers['b']['pid']}) exited" not in server.err
    assert kit.stop(server) == 0
    _exited(server, answers["b"]["pid"])


def test_bridge_refuses_without_token_and_serves_a_real_acp_agent(kit: Any) -> None:
    server, base, token = kit.ws("bridge", "--ws", "0", "--", *kit.wireproto, "acp")
    try:
        with connect(f"{base}/"):
            raise AssertionError("accepted without a token")
    except InvalidStatus as exc:
        assert exc.response.status_code == 401
    results: dict[str, str] = {}

    def client(name: str) -> None:
        with connect(f"{base}/", additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            ws.send(json.dumps(kit.acp_init))
            assert json.loads(ws.recv(timeout=20))["id"] == 0
            ws.send(json.dumps(kit.request(1, "session/new",
                                           {"cwd": os.getcwd(), "mcpServers": []})))
            while "sessionId" not in (reply := json.loads(ws.recv(timeout=20))).get("result", {}):
                pass
            sid = reply["result"]["sessionId"]
            ws.send(json.dumps(kit.request(2, "session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": f"hi {name}"}]})))
            text = ""
            while (message := json.loads(ws.recv(timeout=20))).get("id") != 2:
                update = message.get("params", {}).get("update", {})
                if update.get("sessionUpdate") == "agent_message_chunk":
                    text += update["content"]["text"]
            results[name] = text

    threads = [threading.Thread(target=client, args=(n,)) for n in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {"one": "You said: hi one", "two": "You said: hi two"}
    assert kit.stop(server) == 0


def test_a_missing_agent_command_is_a_usage_error(kit: Any) -> None:
    proc = kit.spawn("bridge", "--ws", "0", stdin=subprocess.DEVNULL)
    assert proc.wait() == 2
    assert proc.err.strip().splitlines()[-1] == ("wireproto: error: give the agent command "
                                                 "after --")


def test_a_frame_with_line_breaks_reaches_the_child_as_one_line(kit: Any, tmp_path: Path) -> None:
    script = tmp_path / "pid_echo.py"
    script.write_text(PID_ECHO)
    server, base, token = kit.ws("bridge", "--ws", "0", "--", sys.executable, str(script))
    with connect(f"{base}/?token={token}") as ws:
        ws.send(json.dumps({"who": "a", "n": 1, "text": "two\nlines"}, indent=2))  # valid JSON
        answer = json.loads(ws.recv(timeout=20))
        assert (answer["who"], answer["n"], answer["text"]) == ("a", 1, "two\nlines")
        ws.send(json.dumps({"who": "a", "n": 2}))  # the same child serves on
        assert json.loads(ws.recv(timeout=20)) == {"who": "a", "n": 2, "pid": answer["pid"]}
    assert kit.stop(server) == 0
