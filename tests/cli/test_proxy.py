"""``wireproto proxy`` on the command line: auto probe, relay over stdio and websocket,
clear errors."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from websockets.sync.client import connect


def test_auto_relay_over_stdio_then_clean_exit(kit: Any) -> None:
    proxy = kit.spawn("proxy", "--serve", "wire", "--", *kit.wireproto, "wire")
    proxy.send(kit.wire_init)
    reply = proxy.recv()
    assert reply["id"] == "init" and reply["result"]["server"]["name"] == "wireproto-demo"
    proxy.close_stdin()
    assert proxy.wait() == 0
    assert "speaks WIRE" in kit.log_file("proxy", proxy.pid).read_text()


def test_relay_over_websocket_needs_the_token(kit: Any) -> None:
    server, base, token = kit.ws("proxy", "--serve", "acp", "--agent-protocol", "acp",
                                 "--ws", "0", "--", *kit.wireproto, "acp")
    with connect(f"{base}/?token={token}") as ws:
        ws.send(json.dumps(kit.acp_init))
        answer = json.loads(ws.recv(timeout=kit.limit))
        assert answer["id"] == 0 and answer["result"]["protocolVersion"] == 1
    assert kit.stop(server) == 0


def test_usage_errors_say_what_to_do(kit: Any) -> None:
    cases = [
        (("proxy", "--serve", "acp"), "give the agent command after --"),
        (("proxy", "--", "true"), "--serve acp or --serve wire"),
        (("proxy", "--serve", "acp", "--agent-protocol", "wire", "--trace", "t.jsonl", "--",
          "true"), "--trace records a relay"),
    ]
    for args, text in cases:
        proc = kit.spawn(*args, stdin=subprocess.DEVNULL)
        assert proc.wait() == 1
        assert text in proc.err
        assert "Traceback" not in proc.err
