"""The inspector's server and tap, in process, against the real demo agent (asyncio and trio).

The agent is the library's demo agent served over ACP or Wire on one end of a
memory pair; the tap holds the other end. The page's requests are made with a
plain TCP client (HTTP) and the library's websocket client.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
import msgspec
import pytest
from websockets.datastructures import Headers

from wireproto.adapters.acp import serve_acp
from wireproto.adapters.wire import serve_wire
from wireproto.agent.demo import DemoAgent
from wireproto.errors import ConnectionClosed
from wireproto.inspect.handshake import initialize
from wireproto.inspect.record import Recorder
from wireproto.inspect.server import Inspector, _Site, serve_inspector
from wireproto.inspect.tap import open_tap
from wireproto.transports.memory import memory_pair
from wireproto.transports.websocket import HttpResponse, connect_websocket

pytestmark = pytest.mark.anyio

TOKEN = "t0ken-for-tests"
SERVERS = {"acp": serve_acp, "wire": serve_wire}


@asynccontextmanager
async def running(protocol: str | None, read_only: bool = False) -> AsyncIterator[
        tuple[Inspector, str]]:
    """An inspector in front of the demo agent (or read-only); yields it and its URL."""
    recorder = Recorder()
    if read_only or protocol is None:
        inspector = Inspector(recorder, None, {"mode": "trace", "protocol": protocol,
                                               "state": "trace"})
        async with serve_inspector(inspector, "127.0.0.1", 0, TOKEN) as url:
            yield inspector, url
        return
    ours, theirs = memory_pair()
    stop = anyio.Event()
    async with open_tap(ours, recorder) as tap, anyio.create_task_group() as tg:
        inspector = Inspector(recorder, tap, {"mode": "live", "protocol": None,
                                              "state": "starting"})
        tg.start_soon(lambda: SERVERS[protocol](DemoAgent(), theirs, stop=stop))
        tg.start_soon(tap.run)
        spoken = await initialize(tap, "auto")
        inspector.set_status(protocol=spoken, state="running")
        async with serve_inspector(inspector, "127.0.0.1", 0, TOKEN) as url:
            yield inspector, url
        stop.set()
        await ours.aclose()
        tg.cancel_scope.cancel()


async def http_get(url: str, path: str, headers: dict[str, str] | None = None
                   ) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET; returns status, headers (lower-cased) and body."""
    hostport = url.split("//", 1)[1].split("/", 1)[0]
    host, port = hostport.rsplit(":", 1)
    sent = {"Host": hostport, "Connection": "close", **(headers or {})}
    lines = [f"GET {path} HTTP/1.1", *(f"{k}: {v}" for k, v in sent.items())]
    async with await anyio.connect_tcp(host, int(port)) as sock:
        await sock.send(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        try:
            while True:
                data += await sock.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), fields, body


def ws_url(url: str, token: str | None = TOKEN) -> str:
    base = url.split("/?", 1)[0].replace("http://", "ws://")
    return f"{base}/ws" + (f"?token={token}" if token is not None else "")


async def frames_until(ws: Any, predicate: Any) -> list[dict[str, Any]]:
    seen = []
    while True:
        frame = msgspec.json.decode(await ws.receive())
        seen.append(frame)
        if predicate(frame):
            return seen


async def test_the_page_needs_its_token() -> None:
    async with running(None) as (_, url):
        status, headers, body = await http_get(url, "/")
        assert status == 401
        assert b"token" in body
        status, _, _ = await http_get(url, "/?token=wrong")
        assert status == 401
        status, headers, body = await http_get(url, f"/?token={TOKEN}")
        assert status == 200
        assert b'<script type="module" src="/static/main.js">' in body
        csp = headers["content-security-policy"]
        assert "script-src 'self';" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert "frame-ancestors 'none'" in csp
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-content-type-options"] == "nosniff"


async def test_a_token_with_url_characters_is_in_the_url_encoded() -> None:
    # (given as it was, its "+" read back as a space, its "&" and "#" cut it: refused)
    token = "plus+amp&hash#pct%-1234567"
    inspector = Inspector(Recorder(), None, {"mode": "trace", "protocol": None, "state": "trace"})
    async with serve_inspector(inspector, "127.0.0.1", 0, token) as url:
        path = "/" + url.split("/", 3)[3]
        assert path == "/?token=" + quote(token, safe="")
        status, _, _ = await http_get(url, path)
        assert status == 200


async def test_assets_unknown_paths_and_foreign_hosts() -> None:
    async with running(None) as (_, url):
        status, headers, body = await http_get(url, "/static/main.js")
        assert status == 200
        assert headers["content-type"].startswith("text/javascript")
        assert b"innerHTML" not in body
        for path in ("/static/../record.py", "/static/nothing.js", "/etc/passwd", "/ws"):
            status, _, _ = await http_get(url, path)
            assert status in (404, 426), path
        port = url.rsplit(":", 1)[1].split("/")[0]
        status, _, _ = await http_get(url, f"/?token={TOKEN}",
                                      {"Host": f"attacker.example:{port}"})
        assert status == 421  # a rebound DNS name does not reach the page
        status, _, _ = await http_get(url, f"/?token={TOKEN}", {"Host": f"localhost:{port}"})
        assert status == 200


async def test_no_asset_uses_markup_from_data() -> None:
    from importlib import resources

    folder = resources.files("wireproto.inspect") / "static"
    scripts = [f for f in folder.iterdir() if f.name.endswith(".js")]
    assert scripts
    for script in scripts:
        text = script.read_text()
        for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                          "eval(", "new Function"):
            assert forbidden not in text, f"{script.name} uses {forbidden}"
    html = (folder / "index.html").read_text()
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="/static/main.js">']
    assert not re.search(r"\son[a-z]+\s*=", html)  # no inline event handlers
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing from elsewhere


async def test_the_websocket_needs_the_token_and_its_own_origin() -> None:
    async with running(None) as (_, url):
        for bad in (None, "wrong"):
            with pytest.raises(ConnectionClosed, match="401"):
                async with connect_websocket(ws_url(url, bad)):
                    pass
        with pytest.raises(ConnectionClosed, match="403"):
            async with connect_websocket(ws_url(url), headers={"Origin": "http://evil.example"}):
                pass
        origin = url.split("/?", 1)[0]
        async with connect_websocket(ws_url(url), headers={"Origin": origin}) as ws:
            hello = msgspec.json.decode(await ws.receive())
            assert hello["type"] == "hello" and hello["readOnly"] is True


@pytest.mark.parametrize("protocol", ["acp", "wire"])
async def test_a_page_drives_the_agent_and_sees_every_message(protocol: str) -> None:
    async with running(protocol) as (inspector, url), connect_websocket(ws_url(url)) as ws:
        assert inspector.info["protocol"] == protocol
        first = await frames_until(ws, lambda f: f["type"] == "synced")
        assert first[0]["type"] == "hello" and first[0]["protocol"] == protocol
        history = [item for f in first if f["type"] == "records" for item in f["items"]]
        assert [r["dir"] for r in history[:2]] == ["send", "recv"]  # the inspector's initialize
        assert history[0]["msg"]["method"] == "initialize"
        if protocol == "acp":
            await ws.send(msgspec.json.encode({"type": "send", "fresh": True, "ref": 1, "msg": {
                "jsonrpc": "2.0", "method": "session/new",
                "params": {"cwd": "/", "mcpServers": []}}}))
            seen = await frames_until(ws, lambda f: f.get("type") == "record"
                                      and "result" in f.get("msg", {}))
            sent = next(f for f in seen if f["type"] == "sent")
            answer = seen[-1]["msg"]
            assert answer["id"] == sent["id"] and "sessionId" in answer["result"]
            prompt = {"jsonrpc": "2.0", "method": "session/prompt", "params": {
                "sessionId": answer["result"]["sessionId"],
                "prompt": [{"type": "text", "text": "hi"}]}}
        else:
            prompt = {"jsonrpc": "2.0", "method": "prompt", "params": {"user_input": "hi"}}
        await ws.send(msgspec.json.encode({"type": "send", "fresh": True, "ref": 2,
                                           "msg": prompt}))
        seen = await frames_until(ws, lambda f: f.get("type") == "record"
                                  and f["dir"] == "recv" and "result" in f.get("msg", {}))
        records = [f for f in seen if f["type"] == "record"]
        records = records[[r["dir"] for r in records].index("send"):]
        assert records[0]["msg"]["params"] == prompt["params"]
        assert all(r["size"] > 0 and r["t"] >= 0 for r in records)
        seqs = [r["seq"] for r in records]
        assert seqs == sorted(seqs)
        # the page asks what a message means: the codec's view
        await ws.send(msgspec.json.encode({"type": "decode", "seq": records[0]["seq"]}))
        decoded = (await frames_until(ws, lambda f: f["type"] == "decoded"))[-1]
        assert decoded["meaning"]["errors"] == []
        assert decoded["meaning"]["type"] == (
            "session/prompt: PromptRequest" if protocol == "acp" else "prompt: PromptParams")


async def test_a_read_only_inspector_refuses_to_send() -> None:
    async with running(None, read_only=True) as (_, url), connect_websocket(ws_url(url)) as ws:
        await frames_until(ws, lambda f: f["type"] == "synced")
        await ws.send(b'{"type":"send","ref":7,"msg":{"jsonrpc":"2.0","method":"x"}}')
        answer = (await frames_until(ws, lambda f: f["type"] == "error"))[-1]
        assert answer["ref"] == 7 and "read-only" in answer["message"]
        await ws.send(b"not json")
        answer = (await frames_until(ws, lambda f: f["type"] == "error"))[-1]
        assert "not an inspector request" in answer["message"]


async def test_a_new_page_gets_the_whole_history() -> None:
    async with running(None, read_only=True) as (inspector, url):
        for n in range(2500):
            inspector.recorder.add("recv" if n % 2 else "send",
                                   b'{"jsonrpc":"2.0","method":"m","params":{"n":%d}}' % n)
        inspector.recorder.add("recv", b"not json <b>")
        async with connect_websocket(ws_url(url)) as ws:
            frames = await frames_until(ws, lambda f: f["type"] == "synced")
        items = [item for f in frames if f["type"] == "records" for item in f["items"]]
        assert [i["seq"] for i in items] == list(range(2501))
        assert items[-1]["text"] == "not json <b>" and "msg" not in items[-1]
        # the export: the token, then every message exactly as recorded
        status, _, _ = await http_get(url, "/export.jsonl")
        assert status == 401
        status, headers, body = await http_get(url, f"/export.jsonl?token={TOKEN}")
        assert status == 200 and "attachment" in headers["content-disposition"]
        lines = body.splitlines()
        assert len(lines) == 2501
        assert lines[7].endswith(b'"msg":{"jsonrpc":"2.0","method":"m","params":{"n":7}}}')
        assert msgspec.json.decode(lines[-1])["text"] == "not json <b>"


@pytest.mark.parametrize("protocol", ["acp", "wire"])
async def test_auto_tells_the_protocols_apart(protocol: str) -> None:
    ours, theirs = memory_pair()
    recorder = Recorder()
    stop = anyio.Event()
    async with open_tap(ours, recorder) as tap, anyio.create_task_group() as tg:
        tg.start_soon(lambda: SERVERS[protocol](DemoAgent(), theirs, stop=stop))
        tg.start_soon(tap.run)
        assert await initialize(tap, "auto") == protocol
        stop.set()
        await ours.aclose()
        tg.cancel_scope.cancel()
    if protocol == "wire":  # Wire ids are strings
        assert all(isinstance(r.message()["id"], str) for r in recorder.records[-2:])


async def test_the_pages_are_told_when_the_agent_ends() -> None:
    ours, theirs = memory_pair()
    recorder = Recorder()
    async with open_tap(ours, recorder) as tap:
        inspector = Inspector(recorder, tap, {"mode": "live", "protocol": "acp",
                                              "state": "running"})
        await the_agent_ends(inspector, tap, theirs)
    await ours.aclose()


async def the_agent_ends(inspector: Inspector, tap: Any, theirs: Any) -> None:
    recorder = inspector.recorder
    async with serve_inspector(inspector, "127.0.0.1", 0, TOKEN) as url, \
            connect_websocket(ws_url(url)) as ws, anyio.create_task_group() as tg:
        await frames_until(ws, lambda f: f["type"] == "synced")

        async def run_tap() -> None:
            await tap.run()
            inspector.set_status(state="ended", detail=tap.end_reason)

        tg.start_soon(run_tap)
        await theirs.send(b'{"jsonrpc":"2.0","method":"bye"}')
        await theirs.aclose()
        status = (await frames_until(ws, lambda f: f["type"] == "status"))[-1]
        assert status["state"] == "ended" and "connection ended" in status["detail"]
        await ws.send(b'{"type":"send","ref":3,"msg":{"jsonrpc":"2.0","method":"x"}}')
        answer = (await frames_until(ws, lambda f: f["type"] == "error"))[-1]
        assert answer["ref"] == 3 and "the agent is gone" in answer["message"]
        assert [r.message()["method"] for r in recorder.records] == ["bye"]



def _hosts(host: str, port: int) -> frozenset[str] | None:
    site = _Site(host, TOKEN, lambda: b"")
    site.port = port
    return site._hosts()


@pytest.mark.parametrize("port", [80, 443])
def test_a_default_port_may_be_left_out_of_the_host(port: int) -> None:
    """Browsers send ``Host: localhost`` for http://localhost:80/ (no ``:80``)."""
    assert _hosts("127.0.0.1", port) == {
        "localhost", "127.0.0.1", f"localhost:{port}", f"127.0.0.1:{port}"}
    assert _hosts("::1", port) == {"localhost", "[::1]", f"localhost:{port}", f"[::1]:{port}"}


def test_other_ports_need_the_port_in_the_host() -> None:
    assert _hosts("127.0.0.1", 8080) == {"localhost:8080", "127.0.0.1:8080"}
    assert _hosts("0.0.0.0", 80) is None  # not on loopback: any host


@dataclass
class _Request:
    path: str
    headers: Headers
    remote_address: tuple[str, int] = ("192.0.2.1", 5000)


@pytest.mark.parametrize("host", ["x; script-src *", "a b", "evil.example:80/x", "", "[::1"])
def test_a_malformed_host_is_refused_and_never_reaches_the_policy(host: str) -> None:
    site = _Site("0.0.0.0", TOKEN, lambda: b"")  # not on loopback: any well-formed host
    answer = site.check(_Request(f"/?token={TOKEN}", Headers({"Host": host})))
    assert isinstance(answer, HttpResponse) and answer.status == 400
    assert host == "" or host not in answer.headers["Content-Security-Policy"]


def test_a_well_formed_host_names_the_websocket_origin_in_the_policy() -> None:
    site = _Site("0.0.0.0", TOKEN, lambda: b"")
    answer = site.check(_Request(f"/?token={TOKEN}", Headers({"Host": "box.example:8765"})))
    assert isinstance(answer, HttpResponse) and answer.status == 200
    assert "connect-src 'self' ws://box.example:8765;" in answer.headers["Content-Security-Policy"]
