"""serve_websocket / connect_websocket specifics: handshake checks, request info, shutdown."""

from __future__ import annotations

import anyio
import pytest

from wireproto.errors import ConnectionClosed
from wireproto.transports.websocket import (
    Refusal,
    WebSocketRequest,
    WebSocketServer,
    WebSocketStream,
    connect_websocket,
    serve_websocket,
)

pytestmark = pytest.mark.anyio


def require_token(request: WebSocketRequest) -> Refusal | None:
    if request.headers.get("authorization") != "Bearer s3cret":
        return (401, "missing or wrong token")
    if request.headers.get("origin") not in (None, "http://127.0.0.1"):
        return (403, "origin not allowed")
    return None


async def test_handshake_check_and_request_info() -> None:
    seen: list[WebSocketRequest] = []

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        seen.append(request)
        await stream.send(request.path.encode() + b"\n")

    async with serve_websocket(handler, process_request=require_token) as server:
        assert server.host == "127.0.0.1"
        assert server.url == f"ws://127.0.0.1:{server.port}"
        with pytest.raises(ConnectionClosed, match="401") as info:
            async with connect_websocket(server.url + "/acp"):
                pass
        assert info.value.__cause__ is not None
        bad_origin = {"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}
        with pytest.raises(ConnectionClosed, match="403"):
            async with connect_websocket(server.url, headers=bad_origin):
                pass
        assert seen == []  # refused handshakes never reach the handler
        headers = [("Authorization", "Bearer s3cret"), ("X-Extra", "a"), ("X-Extra", "b")]
        async with connect_websocket(server.url + "/acp?session=1", headers=headers) as stream:
            assert await stream.receive() == b"/acp?session=1"
            with pytest.raises(anyio.EndOfStream):  # the handler returned: normal close
                await stream.receive()
    assert len(seen) == 1
    assert seen[0].headers["x-extra"] == "a, b"
    assert seen[0].remote_address[0] == "127.0.0.1"


async def test_failing_handler_breaks_the_connection() -> None:
    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        raise RuntimeError("handler bug")

    async with (
        serve_websocket(handler) as server,
        connect_websocket(server.url) as stream,
    ):
        with pytest.raises(anyio.BrokenResourceError):
            await stream.receive()


async def test_server_exit_ends_open_connections() -> None:
    handler_done = anyio.Event()

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        try:
            with pytest.raises(anyio.EndOfStream):
                await stream.receive()
        finally:
            handler_done.set()

    async with connect_websocket_after(handler) as (server, stream):
        await stream.send(b"hi\n")
    # Leaving serve_websocket closed the connection (1001) and waited for the handler.
    assert handler_done.is_set()
    assert isinstance(server, WebSocketServer)


class connect_websocket_after:  # noqa: N801 - reads like the context managers it wraps
    """Serve ``handler``, connect a client, and on exit stop the server first."""

    def __init__(self, handler: object) -> None:
        self.handler = handler

    async def __aenter__(self) -> tuple[WebSocketServer, WebSocketStream]:
        self._serve = serve_websocket(self.handler)  # type: ignore[arg-type]
        server = await self._serve.__aenter__()
        self._connect = connect_websocket(server.url)
        stream = await self._connect.__aenter__()
        self.stream = stream
        return server, stream

    async def __aexit__(self, *exc: object) -> None:
        await self._serve.__aexit__(None, None, None)
        with pytest.raises(anyio.EndOfStream):  # the client saw "going away"
            await self.stream.receive()
        await self._connect.__aexit__(None, None, None)
