"""The inspector's web server: the page, its assets and its websocket, on one port.

Theory of operation
-------------------
One listener (:func:`~wireproto.transports.websocket.serve_websocket`)
answers plain ``GET`` requests with the static page from the package's
``static/`` folder and upgrades ``/ws`` to the page's websocket. Each open
page gets a ``hello`` (mode, protocol, state), every record so far (in
``records`` batches), ``synced``, then each new record and status change as it happens,
through a bounded queue: a page that falls that far behind is disconnected
and reloads the history when it reconnects. What a page may ask:

=================================================  ===========================================
``{"type":"send","msg":M,"fresh":B,"ref":R}``      send ``M`` to the agent (``fresh``: give the
                                                   request a new id); answered ``sent`` with the id
``{"type":"decode","seq":N,"pair":P}``             decode record ``N`` (``P``: the request it
                                                   answers); answered ``decoded``
=================================================  ===========================================

``/export.jsonl`` answers every record in the ``--trace`` format, byte for byte
as recorded.

Security: the page (``/``), the export and the websocket need the token (``?token=``);
the websocket accepts only this server's own origin; on loopback the
``Host`` header must name this server (a page of another site cannot reach
it through a rebound DNS name); anywhere, a malformed ``Host`` is refused (400),
so the value written into the policy below is always a plain host and port. Every answer carries a
``Content-Security-Policy`` allowing scripts, styles and connections from
this origin only (no inline script, no framing). The assets (the same files
as in the wheel) are served without the token; the data never is.
"""

from __future__ import annotations

import logging
import mimetypes
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectSendStream

from wireproto.cli.wsauth import WsGuard, is_loopback, token_query
from wireproto.inspect.decode import describe
from wireproto.inspect.record import Record, Recorder, trace_line
from wireproto.inspect.tap import Tap
from wireproto.transports.websocket import (
    HttpResponse,
    WebSocketRequest,
    WebSocketStream,
    serve_websocket,
)

__all__ = ["PAGE_QUEUE", "Inspector", "serve_inspector"]

log = logging.getLogger(__name__)

PAGE_QUEUE = 50_000
"""Frames queued for one page before it is disconnected as too slow."""
_BATCH = 1000
"""Records per ``records`` frame when a page loads the history."""
_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
_encode = msgspec.json.encode


class _PageRequest(msgspec.Struct):
    type: str
    msg: Any = None
    fresh: bool = False
    ref: Any = None
    seq: int = -1
    pair: int | None = None


_request_decoder = msgspec.json.Decoder(_PageRequest)


@dataclass
class Inspector:
    """What every page shares: the recording, the tap to the agent, the status.

    Attributes:
        recorder: every message so far.
        tap: the connection to the agent; ``None`` when read-only (a trace).
        info: the ``hello`` fields: ``mode`` (``live`` or ``trace``),
            ``protocol``, ``state`` (``starting``, ``running``, ``ended``),
            ``detail``, ``title``, ``cwd``.
    """

    recorder: Recorder
    tap: Tap | None = None
    info: dict[str, Any] = field(default_factory=dict)
    _pages: set[MemoryObjectSendStream[bytes]] = field(default_factory=set, init=False,
                                                       repr=False)

    def __post_init__(self) -> None:
        self.recorder.subscribe(self._on_record)

    @property
    def read_only(self) -> bool:
        """Whether pages may send to an agent."""
        return self.tap is None

    def _on_record(self, record: Record) -> None:
        self._broadcast(record.frame)

    def set_status(self, **fields: Any) -> None:
        """Update the status fields of ``info`` and tell every page."""
        self.info.update(fields)
        self._broadcast(_encode({"type": "status", **self.info}))

    def _broadcast(self, frame: bytes) -> None:
        for queue in list(self._pages):
            try:
                queue.send_nowait(frame)
            except anyio.WouldBlock:
                log.warning("inspect: a page fell %d messages behind; disconnecting it",
                            PAGE_QUEUE)
                self._pages.discard(queue)
                queue.close()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._pages.discard(queue)

    def export(self) -> bytes:
        """Every record kept, in the ``--trace`` format, exactly as it went."""
        return b"".join(trace_line(record) for record in self.recorder.records)

    def hello(self) -> bytes:
        """The first frame a page gets."""
        return _encode({"type": "hello", "readOnly": self.read_only,
                        "dropped": self.recorder.dropped, **self.info})

    async def serve_page(self, ws: anyio.abc.ObjectStream[bytes]) -> None:
        """Serve one page's websocket until it closes."""
        send, receive = anyio.create_memory_object_stream[bytes](PAGE_QUEUE)
        snapshot = list(self.recorder.records)
        self._pages.add(send)  # with the snapshot taken above, in one step
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._page_writer, ws, snapshot, receive, tg.cancel_scope)
                tg.start_soon(self._page_reader, ws, send, tg.cancel_scope)
        finally:
            self._pages.discard(send)
            send.close()
            receive.close()

    async def _page_writer(
        self, ws: anyio.abc.ObjectStream[bytes], snapshot: list[Record],
        receive: anyio.abc.ObjectReceiveStream[bytes], scope: anyio.CancelScope,
    ) -> None:
        try:
            await ws.send(self.hello())
            for start in range(0, len(snapshot), _BATCH):
                items = b",".join(r.frame for r in snapshot[start:start + _BATCH])
                await ws.send(b'{"type":"records","items":[' + items + b"]}")
            await ws.send(b'{"type":"synced","synced":true}')
            async with receive:
                async for frame in receive:
                    await ws.send(frame)
        except _ENDED:
            pass
        scope.cancel()  # the page is gone, or was dropped as too slow

    async def _page_reader(
        self, ws: anyio.abc.ObjectStream[bytes],
        send: MemoryObjectSendStream[bytes], scope: anyio.CancelScope,
    ) -> None:
        try:
            while True:
                answer = await self._answer(await ws.receive())
                if answer is not None:
                    send.send_nowait(answer)
        except (*_ENDED, anyio.WouldBlock):
            pass
        scope.cancel()

    async def _answer(self, data: bytes) -> bytes | None:
        try:
            request = _request_decoder.decode(data)
        except RecursionError:
            return _encode({"type": "error", "message": "not an inspector request: nested "
                            "too deeply"})
        except msgspec.DecodeError as exc:
            return _encode({"type": "error", "message": f"not an inspector request: {exc}"})
        if request.type == "send":
            return await self._send(request)
        if request.type == "decode":
            return self._decode(request)
        return _encode({"type": "error", "ref": request.ref,
                        "message": f"unknown request type {request.type!r}"})

    async def _send(self, request: _PageRequest) -> bytes:
        ref = request.ref
        if self.tap is None:
            return _encode({"type": "error", "ref": ref,
                            "message": "read-only: this inspector shows a recorded trace"})
        message = request.msg
        if request.fresh and isinstance(message, dict) and "method" in message:
            message = {**message, "id": self.tap.fresh_id()}
        ident = message.get("id") if isinstance(message, dict) else None
        try:
            await self.tap.send(_encode(message))
        except anyio.BrokenResourceError as exc:
            return _encode({"type": "error", "ref": ref, "message": str(exc)})
        return _encode({"type": "sent", "ref": ref, "id": ident})

    def _decode(self, request: _PageRequest) -> bytes:
        record = self.recorder.get(request.seq)
        if record is None:
            meaning = {"type": "", "errors": ["no such record (dropped)"], "value": None}
            return _encode({"type": "decoded", "seq": request.seq, "meaning": meaning})
        paired = None if request.pair is None else self.recorder.get(request.pair)
        meaning = describe(self.info.get("protocol"), record.message(),
                           None if paired is None else paired.message())
        return _encode({"type": "decoded", "seq": request.seq, "meaning": meaning})


# ------------------------------------------------------------------ HTTP

def _assets() -> dict[str, tuple[bytes, str]]:
    """Every file of ``static/`` by URL path, with its content type."""
    folder = resources.files("wireproto.inspect") / "static"
    table: dict[str, tuple[bytes, str]] = {}
    for item in folder.iterdir():
        if item.is_file() and not item.name.startswith("."):
            kind = mimetypes.guess_type(item.name)[0] or "application/octet-stream"
            if kind.startswith("text/") or kind.endswith("javascript"):
                kind += "; charset=utf-8"
            table[f"/static/{item.name}"] = (item.read_bytes(), kind)
    return table


def _csp(ws_origin: str) -> str:
    return ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'none'; "
            f"connect-src 'self' {ws_origin}; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


_HOST_SYNTAX = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
"""A ``Host`` header value: a name or address, or a bracketed IPv6 address, and a port."""

_DEFAULT_PORTS = frozenset({80, 443})
"""Ports a browser leaves out of ``Host`` (the scheme's own: http 80, https 443)."""


def _allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The ``Host`` header values a page served on ``host:port`` accepts.

    ``None`` means any (the listener is not on loopback). On loopback only
    ``localhost`` and the address itself are accepted, so a DNS name rebound
    to the loopback address cannot reach the page; on a default port the
    value without ``:PORT`` is accepted too, since browsers leave it out.
    """
    if not is_loopback(host):
        return None
    names = {"localhost", host if ":" not in host else f"[{host}]"}
    with_port = {f"{name}:{port}" for name in names}
    return frozenset(with_port | names if port in _DEFAULT_PORTS else with_port)


class _Site:
    """Answers the plain HTTP requests and checks the websocket handshakes."""

    def __init__(self, host: str, token: str, export: Callable[[], bytes]) -> None:
        self.host = host
        self.token = token
        self.export = export
        self.port = 0
        self.assets = _assets()
        index = self.assets.get("/static/index.html")
        if index is None:
            raise RuntimeError("the inspector's page is missing from the package")
        self.index = index

    def _hosts(self) -> frozenset[str] | None:
        """The ``Host`` values accepted; ``None``: any (not on loopback)."""
        return _allowed_hosts(self.host, self.port)

    def _headers(self, host: str, kind: str) -> dict[str, str]:
        ws_origin = f"ws://{host}" if _HOST_SYNTAX.fullmatch(host) else ""
        return {
            "Content-Type": kind,
            "Content-Security-Policy": _csp(ws_origin),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            "Cache-Control": "no-store",
        }

    def _text(self, host: str, status: int, text: str) -> HttpResponse:
        return HttpResponse(status, (text + "\n").encode(),
                            self._headers(host, "text/plain; charset=utf-8"))

    def check(self, request: WebSocketRequest) -> tuple[int, str] | HttpResponse | None:
        """Route one request (see the module docstring)."""
        headers = request.headers
        host = headers.get("host", "")
        if not _HOST_SYNTAX.fullmatch(host):
            log.warning("inspect: request with a malformed Host header refused")
            return self._text("", 400, "Bad Host header.")
        allowed = self._hosts()
        if allowed is not None and host.lower() not in allowed:
            log.warning("inspect: request for host %r refused", host)
            return self._text(host, 421, "Unknown host: open the URL that wireproto inspect "
                                         "printed.")
        path = request.path.partition("?")[0]
        upgrade = "websocket" in headers.get("upgrade", "").lower()
        if path == "/ws":
            if not upgrade:
                return self._text(host, 426, "This address is the inspector's websocket.")
            return WsGuard(self.token, [f"http://{host}"]).check(
                request.path, headers, str(request.remote_address))
        if path in ("/", "/index.html", "/export.jsonl"):
            plain = {k: v for k, v in headers.items() if k != "origin"}
            refusal = WsGuard(self.token).check(request.path, plain, str(request.remote_address))
            if refusal is not None:
                return self._text(host, refusal[0], "The inspector needs its token: open the "
                                  "whole URL that wireproto inspect printed (with ?token=...).")
            if path == "/export.jsonl":
                answer = self._headers(host, "application/x-ndjson")
                answer["Content-Disposition"] = 'attachment; filename="wireproto-trace.jsonl"'
                return HttpResponse(200, self.export(), answer)
            body, kind = self.index
            return HttpResponse(200, body, self._headers(host, kind))
        asset = self.assets.get(path)
        if asset is None or path == "/static/index.html":
            return self._text(host, 404, "Not found.")
        return HttpResponse(200, asset[0], self._headers(host, asset[1]))


@asynccontextmanager
async def serve_inspector(
    inspector: Inspector, host: str, port: int, token: str
) -> AsyncIterator[str]:
    """Serve the inspector's page; yields its URL (with the token).

    Raises:
        OSError: the address cannot be bound.
    """
    site = _Site(host, token, inspector.export)

    async def on_page(ws: WebSocketStream, request: WebSocketRequest) -> None:
        log.info("inspect: page connected from %s", request.remote_address)
        await inspector.serve_page(ws)

    async with serve_websocket(on_page, host, port, process_request=site.check) as server:
        site.host, site.port = server.host, server.port  # (the address bound, for a name)
        shown = f"[{server.host}]" if ":" in server.host else server.host
        yield f"http://{shown}:{server.port}/{token_query(token)}"

