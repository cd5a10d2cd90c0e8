"""At ``--log-level debug`` no planted secret reaches the log file or stderr.

Every listening command runs at debug level, over stdio and over websocket.
The secrets: an MCP server's env value and header in ``session/new``, a value
in ``_meta``, and wrong credentials in every spelling the token check reads
(``?token=``, a percent-encoded ``?%74oken=``, ``Authorization: Bearer`` and
``Authorization: Basic``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

ENV_SECRET = "ENVSECRET-4c1d9e"
HEADER_SECRET = "HDRSECRET-88a0f2"
META_SECRET = "METASECRET-19bb73"
WRONG = "WRONGTOKEN-7f3e21"
BASIC = "BASICSECRET-0e55d4"
SECRETS = (ENV_SECRET, HEADER_SECRET, META_SECRET, WRONG, BASIC)


def _messages(kit: Any, command: str) -> list[dict[str, Any]]:
    if command == "wire":
        init = dict(kit.wire_init, params=dict(kit.wire_init["params"],
                                               _meta={"apiKey": META_SECRET}))
        return [init, kit.request("p", "prompt", {"user_input": "hello"})]
    init = dict(kit.acp_init, params=dict(kit.acp_init["params"], _meta={"apiKey": META_SECRET}))
    server = {"name": "tools", "command": "/bin/true", "args": [],
              "env": [{"name": "API_KEY", "value": ENV_SECRET}]}
    http = {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "X-Api-Key", "value": HEADER_SECRET}]}
    new = {"cwd": str(kit.tmp), "mcpServers": [server, http]}
    return [init, kit.request(1, "session/new", new)]


BASIC_HEADER = base64.b64encode(f"user:{BASIC}".encode()).decode()


def _assert_clean(kit: Any, proc: Any, command: str, token: str | None = None) -> None:
    log = kit.log_file(command, proc.pid).read_text()
    assert "DEBUG" in log  # the file really is at debug level
    for secret in (*SECRETS, BASIC_HEADER, *([token] if token else [])):
        assert secret not in log, f"{secret} in the log file:\n{log}"
        assert secret not in proc.err.replace(f"?token={token}", ""), secret


@pytest.mark.parametrize("command", ["acp", "wire"])
def test_stdio_debug_logs_hold_no_secret(kit: Any, command: str) -> None:
    proc = kit.spawn(command, "--log-level", "debug")
    for message in _messages(kit, command):
        proc.send(message)
        proc.recv_until(lambda m, ident=message["id"]: m.get("id") == ident)
    proc.close_stdin()
    assert proc.wait() == 0
    _assert_clean(kit, proc, command)


def _refused(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with connect(url, additional_headers=headers, open_timeout=10):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


BEHIND = {  # commands serving another process (the demo agent over ACP)
    "bridge": ["bridge", "--ws", "0", "--log-level", "debug", "--"],
    "proxy": ["proxy", "--serve", "acp", "--agent-protocol", "acp", "--ws", "0",
              "--log-level", "debug", "--"],
}


@pytest.mark.parametrize("command", ["acp", "wire", "bridge", "proxy"])
def test_websocket_debug_logs_hold_no_secret(kit: Any, command: str) -> None:
    behind = BEHIND.get(command)
    args = [*behind, *kit.wireproto, "acp"] if behind \
        else [command, "--ws", "0", "--log-level", "debug"]
    server, base, token = kit.ws(*args)
    assert _refused(f"{base}/?token={WRONG}") == 401
    assert _refused(f"{base}/?%74oken={WRONG}") == 401
    assert _refused(f"{base}/?%74%6F%6B%65%6E={WRONG}&x=1") == 401
    assert _refused(f"{base}/", {"Authorization": f"Bearer {WRONG}"}) == 401
    assert _refused(f"{base}/", {"Authorization": f"Basic {BASIC_HEADER}"}) == 401
    assert _refused(f"{base}/", {"Authorization": f"Basic {BASIC}"}) == 401
    with connect(f"{base}/?%74oken={token}") as ws:  # the encoded spelling is accepted
        for message in _messages(kit, "acp" if command in BEHIND else command):
            ws.send(json.dumps(message))
            while json.loads(ws.recv(timeout=kit.limit)).get("id") != message["id"]:
                pass
    assert kit.stop(server) == 0
    _assert_clean(kit, server, command, token)
