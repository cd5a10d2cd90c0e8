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
    handler_saw: list[bytes] = []
    client_saw: list[type[BaseException]] = []
    connected = anyio.Event()

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        handler_saw.append(await stream.receive())
        connected.set()
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        handler_saw.append(b"ended")

    async def client(server: WebSocketServer) -> None:
        async with connect_websocket(server.url) as stream:
            await stream.send(b"hi\n")
            try:
                await stream.receive()
            except anyio.EndOfStream as exc:
                client_saw.append(type(exc))

    async with anyio.create_task_group() as tg:
        async with serve_websocket(handler) as server:
            tg.start_soon(client, server)
            await connected.wait()
        # Leaving serve_websocket closed the connection (1001, going away)
        # and waited for the handler to return.
        assert handler_saw == [b"hi", b"ended"]
    assert client_saw == [anyio.EndOfStream]
