"""Every listening command survives lines nested 100,000 levels deep and serves on.

``wireproto acp``, ``wireproto wire``, their ``--ws`` modes and
``wireproto bridge`` run as real processes. Each gets text that is not JSON,
well-formed deep JSON, a request with deep params and a deep ``_meta`` in
``initialize``; each is answered with the usual error and the ``id`` when it
can be read, and a well-formed request afterwards is answered as always.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

AGENT = str(Path(__file__).resolve().parents[1] / "helpers" / "deep_agent.py")
N = 100_000
DEEP = "[" * N + "]" * N
NOT_JSON = "[" * N


def _volley(init: dict[str, Any]) -> list[tuple[str, Any, int | None]]:
    """(line, id of the answer, error code) for each deep line, then ``init``."""
    method = init["method"]
    meta = dict(init, id="meta", params=dict(init["params"], _meta=json.loads("[]")))
    meta_line = json.dumps(meta).replace("[]", DEEP)
    return [
        (NOT_JSON, None, -32700),
        (DEEP, None, -32600),
        (f'{{"jsonrpc":"2.0","id":"p","method":"{method}","params":{DEEP}}}', "p", -32602),
        (f'{{"jsonrpc":"2.0","id":"o","method":"{method}","zzz":{DEEP}}}', "o", -32600),
        (meta_line, "meta", -32602),
        (json.dumps(init), init["id"], None),
    ]


def _check(answers: list[dict[str, Any]], volley: list[tuple[str, Any, int | None]]) -> None:
    got = [(a.get("id"), a.get("error", {}).get("code")) for a in answers]
    assert got == [(ident, code) for _, ident, code in volley]


def _clean(err: str) -> None:
    assert "Traceback" not in err and "RecursionError" not in err, err


@pytest.mark.parametrize("command", ["acp", "wire"])
def test_stdio_commands_survive_deep_lines(kit: Any, command: str) -> None:
    init = kit.acp_init if command == "acp" else kit.wire_init
    volley = _volley(init)
    proc = kit.spawn(command, "--work-dir", str(kit.tmp)) if command == "wire" \
        else kit.spawn(command)
    for line, _, _ in volley:
        proc.write(line + "\n")
    answers = [proc.recv() for _ in volley]
    _check(answers, volley)
    assert "result" in answers[-1]
    proc.close_stdin()
    assert proc.wait() == 0
    _clean(proc.err)


AGENT_BEHIND = {  # commands serving another process: ACP in front, the demo agent behind
    "bridge": ["bridge", "--ws", "0", "--"],
    "proxy": ["proxy", "--serve", "acp", "--agent-protocol", "acp", "--ws", "0", "--"],
    "proxy-wire": ["proxy", "--serve", "wire", "--agent-protocol", "acp", "--ws", "0", "--"],
}


@pytest.mark.parametrize("command", ["acp", "wire", "bridge", "proxy", "proxy-wire"])
def test_websocket_servers_survive_deep_frames(kit: Any, command: str) -> None:
    init = kit.wire_init if command in ("wire", "proxy-wire") else kit.acp_init
    behind = AGENT_BEHIND.get(command)
    args = [*behind, *kit.wireproto, "acp"] if behind else [command, "--ws", "0"]
    server, base, token = kit.ws(*args)
    volley = _volley(init)
    with connect(f"{base}/?token={token}", max_size=None) as ws:
        for line, _, _ in volley:
            ws.send(line)
        answers = [json.loads(ws.recv(timeout=kit.limit)) for _ in volley]
        _check(answers, volley)
        ws.send(json.dumps(dict(init, id="again")))  # the same connection serves on
        assert json.loads(ws.recv(timeout=kit.limit))["id"] == "again"
    assert kit.stop(server) == 0
    _clean(server.err)


def test_connect_with_a_trace_survives_a_deep_agent(kit: Any, tmp_path: Path) -> None:
    (tmp_path / "script.txt").write_text("hello\n")
    proc = kit.spawn("connect", "acp", "--script", "script.txt", "--trace", "trace.jsonl",
                     "--", sys.executable, AGENT, "answer", cwd=tmp_path,
                     stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    assert "[end_turn]" in proc.out.decode()
    _clean(proc.err)
    records = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    deep = [r for r in records if "text" in r]  # kept as text, so the trace stays readable
    assert deep and all(r["dir"] == "recv" for r in deep)
    assert any(r["text"] == NOT_JSON for r in deep) and any(r["text"] == DEEP for r in deep)
