"""The websocket debug mode (``--ws``) of ``acp`` and ``wire``: security and sessions."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

ORIGIN_OK = "http://allowed.example"


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status a handshake got (101 when accepted)."""
    try:
        with connect(url, additional_headers=headers, open_timeout=10):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


def _call(ws: Any, message: dict[str, Any], until_id: Any = None) -> list[dict[str, Any]]:
    ws.send(json.dumps(message))
    wanted = message["id"] if until_id is None else until_id
    seen = []
    while True:
        got = json.loads(ws.recv(timeout=20))
        seen.append(got)
        if got.get("id") == wanted:
            return seen


def test_token_and_origin_are_enforced_and_the_token_stays_out_of_the_log(kit: Any) -> None:
    server, base, token = kit.ws("acp", "--ws", "0", "--log-level", "debug",
                                 "--allow-origin", ORIGIN_OK)
    assert base.startswith("ws://127.0.0.1:")
    wrong = "not-the-token-" + "z" * 20
    assert _status(f"{base}/") == 401
    assert _status(f"{base}/?token={wrong}") == 401
    assert _status(f"{base}/", {"Authorization": f"Bearer {wrong}"}) == 401
    assert _status(f"{base}/?token={token}", {"Origin": "http://evil.example"}) == 403
    assert _status(f"{base}/?token={token}", {"Origin": ORIGIN_OK}) == 101
    for url, headers in ((f"{base}/?token={token}", None),
                         (f"{base}/", {"Authorization": f"Bearer {token}"})):
        with connect(url, additional_headers=headers) as ws:
            answer = _call(ws, kit.acp_init)[-1]
            assert answer["result"]["agentInfo"]["name"] == "wireproto-demo"
    assert kit.stop(server) == 0
    banners = [line for line in server.err.splitlines() if line.startswith("wireproto: ")]
    assert banners == [f"wireproto: listening on {base}/?token={token}"]
    log = kit.log_file("acp", server.pid).read_text()
    assert token not in log and wrong not in log
    assert re.search(r"refused: no token presented", log)
    assert re.search(r"refused: wrong token", log)
    assert re.search(r"refused: origin 'http://evil.example' not allowed", log)
    stderr_logs = server.err.replace(banners[0], "")
    assert token not in stderr_logs and wrong not in stderr_logs


# A name that both loopback addresses stand for (as ``localhost`` does on many machines),
# for the child: its resolver is the only part replaced, the binding is real.
DUAL_NAME = "dual-loopback.test"
DUAL_RESOLVER = f"""import socket
_resolve = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if host in ({DUAL_NAME!r}, {DUAL_NAME.encode()!r}):
        return _resolve("::1", *args, **kwargs) + _resolve("127.0.0.1", *args, **kwargs)
    return _resolve(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
"""


def test_a_free_port_on_a_name_for_several_addresses_is_served_where_the_banner_says(
    kit: Any, tmp_path: Path
) -> None:
    # (each address bound on a free port of its own: the banner named the name and one port)
    resolver = tmp_path / "resolver"
    resolver.mkdir()
    (resolver / "sitecustomize.py").write_text(DUAL_RESOLVER)
    kit.env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(resolver), kit.env.get("PYTHONPATH")])
    )
    token = "dual-loopback-token-1234"
    server, base, _ = kit.ws("wire", "--ws", f"{DUAL_NAME}:0", "--token", token)
    host, _, port = base.removeprefix("ws://").rpartition(":")
    assert host in ("[::1]", "127.0.0.1")  # (the first this machine binds, by address)
    assert int(port) > 0
    assert _status(f"{base}/?token={token}") == 101
    assert kit.stop(server) == 0


def test_a_token_with_url_characters_is_printed_encoded(kit: Any) -> None:
    # (printed as it was, its "+" read back as a space, its "&" and "#" cut it: refused)
    token = "plus+amp&hash#pct%-1234567"
    server, base, printed = kit.ws("wire", "--ws", "127.0.0.1:0", "--token", token)
    assert unquote(printed) == token
    assert _status(f"{base}/?token={printed}") == 101
    assert kit.stop(server) == 0


def test_explicit_token_from_the_environment(kit: Any) -> None:
    kit.env["WIREPROTO_WS_TOKEN"] = "from-the-environment-123"
    server, base, token = kit.ws("wire", "--ws", "127.0.0.1:0")
    assert token == "from-the-environment-123"
    assert _status(f"{base}/?token=from-the-environment-123") == 101
    assert kit.stop(server) == 0


SHORT = "characters: a shorter one is easily guessed); omit "
BLANK = "or a control character (it travels in headers and URLs: give one without); omit "

REFUSED = {  # a listening command given a token too short, or with whitespace -> the error
    ("acp", "--ws", "0", "--token", "t"): ("--token: the token is too short (1 of at least 16",
                                           SHORT),
    ("bridge", "--ws", "0", "--token", "fifteen-chars15", "--", "x"):
        ("(15 of at least 16 characters", SHORT),
    ("proxy", "--serve", "acp", "--agent-protocol", "acp", "--ws", "0", "--token", "t", "--",
     "x"): ("omit --token for a generated one", SHORT),
    ("inspect", "--page-token", "t", "--trace", "x"): ("--page-token: the token is too short",
                                                      SHORT),
    ("acp", "--ws", "0", "--token", " " * 16): ("--token: the token holds whitespace", BLANK),
    ("wire", "--ws", "0", "--token", "a-long-enough-token "):
        ("omit --token for a generated one", BLANK),
    ("bridge", "--ws", "0", "--token", "\ta-long-enough-token", "--", "x"):
        ("holds whitespace", BLANK),
    ("acp", "--ws", "0", "--token", "a-long-enough to-ken"): ("holds whitespace", BLANK),
    ("acp", "--ws", "0", "--token", "a-long-enough-\x1btoken"): ("a control character", BLANK),
    ("inspect", "--page-token", "\u3000" * 16, "--trace", "x"):
        ("--page-token: the token holds", BLANK),
}


@pytest.mark.parametrize("args", list(REFUSED))
def test_a_short_or_blank_token_is_a_usage_error_that_says_why(
    kit: Any, args: tuple[str, ...]
) -> None:
    proc = kit.spawn(*args, stdin=subprocess.DEVNULL)
    assert proc.wait() == 2
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    assert len(errors) == 1, proc.err
    assert all(part in errors[0] for part in REFUSED[args]), errors[0]
    assert "listening" not in proc.err


def test_a_blank_token_from_the_environment_is_a_usage_error(kit: Any) -> None:
    kit.env["WIREPROTO_WS_TOKEN"] = " " * 20
    proc = kit.spawn("wire", "--ws", "0", stdin=subprocess.DEVNULL)
    assert proc.wait() == 2
    assert ("wireproto: error: WIREPROTO_WS_TOKEN: the token holds whitespace or a control "
            "character (it travels in headers and URLs: give one without); unset "
            "WIREPROTO_WS_TOKEN for a generated one") in proc.err.splitlines()


def test_a_short_token_from_the_environment_is_a_usage_error(kit: Any) -> None:
    kit.env["WIREPROTO_WS_TOKEN"] = "short"
    proc = kit.spawn("wire", "--ws", "0", stdin=subprocess.DEVNULL)
    assert proc.wait() == 2
    assert ("wireproto: error: WIREPROTO_WS_TOKEN: the token is too short (5 of at least 16 "
            "characters: a shorter one is easily guessed); unset WIREPROTO_WS_TOKEN for a "
            "generated one") in proc.err.splitlines()


def test_a_clients_short_token_is_masked_as_a_word_not_inside_every_word(kit: Any) -> None:
    server, base, _ = kit.ws("acp", "--ws", "0")
    proc = kit.spawn("connect", "acp", "--script", "-", "--ws", f"{base}/", "--token", "t",
                     "--log-level", "debug", stdin=subprocess.DEVNULL)
    assert proc.wait() == 1  # (the server's token is another one)
    log = kit.log_file("connect", proc.pid).read_text()
    for text in (log, proc.err):
        assert "connection is CONNECTING" in text and "***" not in text, text
    assert kit.stop(server) == 0


def test_wire_connections_are_separate_sessions(kit: Any) -> None:
    server, base, token = kit.ws("wire", "--ws", "0", "--work-dir", str(kit.tmp))
    with connect(f"{base}/?token={token}&session=alpha") as a, \
            connect(f"{base}/?token={token}&session=beta") as b:
        _call(a, kit.wire_init)
        _call(b, kit.wire_init)
        _call(a, kit.request("p", "prompt", {"user_input": "from alpha"}))
        _call(b, kit.request("p", "prompt", {"user_input": "from beta"}))
        replay_a = json.dumps(_call(a, kit.request("r", "replay", {})))
        replay_b = json.dumps(_call(b, kit.request("r", "replay", {})))
    assert "from alpha" in replay_a and "from beta" not in replay_a
    assert "from beta" in replay_b and "from alpha" not in replay_b
    assert kit.stop(server) == 0


@pytest.mark.parametrize("command", ["acp", "wire"])
def test_sigterm_with_a_turn_running_on_a_connection(kit: Any, command: str) -> None:
    server, base, token = kit.ws(command, "--ws", "0")
    with connect(f"{base}/?token={token}") as ws:
        if command == "acp":
            _call(ws, kit.acp_init)
            new = kit.request(1, "session/new", {"cwd": str(kit.tmp), "mcpServers": []})
            sid = _call(ws, new)[-1]["result"]["sessionId"]
            prompt = kit.request(2, "session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "/slow 1000000"}]})
        else:
            _call(ws, kit.wire_init)
            prompt = kit.request(2, "prompt", {"user_input": "/slow 1000000"})
        ws.send(json.dumps(prompt))
        while "tick 2" not in ws.recv(timeout=20):
            pass
        server.signal(15)
        rest = []
        try:
            while True:
                rest.append(json.loads(ws.recv(timeout=20)))
        except Exception:  # the server closed the connection
            pass
    assert server.wait() == 0
    answers = [m for m in rest if m.get("id") == 2]
    assert answers and "cancelled" in json.dumps(answers[0]["result"])


@pytest.mark.parametrize("session", ["../../x", "%2e%2e%2fx", "%2Fetc%2Fpasswd", "a%00b", "-x"])
def test_an_invalid_session_id_is_refused_at_the_handshake_with_a_reason(
    kit: Any, session: str
) -> None:
    server, base, token = kit.ws("wire", "--ws", "0", "--work-dir", str(kit.tmp))
    with pytest.raises(InvalidStatus) as info:
        with connect(f"{base}/?token={token}&session={session}", open_timeout=10):
            pass
    response = info.value.response
    assert response.status_code == 400
    body = response.body.decode()
    assert body.startswith("invalid session id ") and body.count("\n") == 1, body
    assert "letters, digits" in body
    with connect(f"{base}/?token={token}&session=fine-1") as ws:  # valid ids still work
        _call(ws, kit.wire_init)
    assert kit.stop(server) == 0
    assert "refused: invalid session id" in kit.log_file("wire", server.pid).read_text()


def test_a_busy_session_is_refused_with_a_close_code_and_a_reason(kit: Any) -> None:
    server, base, token = kit.ws("wire", "--ws", "0", "--work-dir", str(kit.tmp))
    url = f"{base}/?token={token}&session=shared"
    with connect(url) as first:
        _call(first, kit.wire_init)
        first.send(json.dumps(kit.request("p", "prompt", {"user_input": "/slow 1000000"})))
        while "tick 1" not in first.recv(timeout=20):
            pass
        with connect(url) as second:
            with pytest.raises(ConnectionClosed) as info:
                second.recv(timeout=20)
        assert info.value.rcvd is not None
        assert info.value.rcvd.code == 4409
        assert "running a turn" in info.value.rcvd.reason
        first.send(json.dumps(kit.request("c", "cancel", {})))
    assert kit.stop(server) == 0
