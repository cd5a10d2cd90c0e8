"""serve_websocket / connect_websocket specifics: handshake checks, request info, shutdown."""

from __future__ import annotations

import socket
import sys
from typing import Any

import anyio
import pytest
import websockets.exceptions
from timeouts import units

from wireproto.errors import ConnectionClosed
from wireproto.transports.websocket import (
    HttpResponse,
    Refusal,
    WebSocketRequest,
    WebSocketServer,
    WebSocketStream,
    connect_websocket,
    serve_websocket,
)

pytestmark = pytest.mark.anyio


def require_token(request: WebSocketRequest) -> Refusal | None:
    if request.headers.get("x-odd-reason"):  # a server's reason is shown tamed
        return (400, "line one\x1b[31m red\nline two")
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
        # (the server's reason, on both backends)
        assert str(info.value) == "websocket handshake refused: HTTP 401 (missing or wrong token)"
        bad_origin = {"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}
        with pytest.raises(ConnectionClosed, match=r"403 \(origin not allowed\)$"):
            async with connect_websocket(server.url, headers=bad_origin):
                pass
        with pytest.raises(ConnectionClosed) as info:
            async with connect_websocket(server.url, headers={"X-Odd-Reason": "1"}):
                pass
        assert str(info.value) == "websocket handshake refused: HTTP 400 (line one?[31m red)"
        assert seen == []  # refused handshakes never reach the handler
        headers = [("Authorization", "Bearer s3cret"), ("X-Extra", "a"), ("X-Extra", "b")]
        async with connect_websocket(server.url + "/acp?session=1", headers=headers) as stream:
            assert await stream.receive() == b"/acp?session=1"
            with pytest.raises(anyio.EndOfStream):  # the handler returned: normal close
                await stream.receive()
    assert len(seen) == 1
    assert seen[0].headers["x-extra"] == "a, b"
    assert seen[0].remote_address[0] == "127.0.0.1"


async def test_a_plain_get_is_answered_with_an_http_response() -> None:
    def page(request: WebSocketRequest) -> HttpResponse | None:
        if "websocket" in request.headers.get("upgrade", "").lower():
            return None
        return HttpResponse(200, b"<p>hi</p>", {"Content-Type": "text/html"})

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        await stream.send(b"still a websocket\n")

    async with serve_websocket(handler, process_request=page) as server:
        async with await anyio.connect_tcp("127.0.0.1", server.port) as sock:
            await sock.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                while True:  # the server closes the connection after the answer
                    data += await sock.receive()
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"Content-Type: text/html" in head and b"Content-Length: 9" in head
        assert body == b"<p>hi</p>"
        async with connect_websocket(server.url) as stream:
            assert await stream.receive() == b"still a websocket"


async def test_a_free_port_on_a_name_for_several_addresses_binds_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a name both loopback addresses stand for, as localhost often is: bound together,
    # each got a free port of its own while server.url named the name and one port)
    resolve = socket.getaddrinfo

    def dual(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("dual-loopback.test", b"dual-loopback.test"):
            return resolve("::1", *args, **kwargs) + resolve("127.0.0.1", *args, **kwargs)
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", dual)

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        await stream.send(b"here\n")

    async with serve_websocket(handler, "dual-loopback.test", 0) as server:
        assert server.host in ("::1", "127.0.0.1")  # (the first this machine binds)
        async with connect_websocket(server.url) as stream:
            assert await stream.receive() == b"here"


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


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_one_text_frame_per_message_without_newline() -> None:
    from websockets.asyncio.client import connect

    received: list[bytes] = []

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        await stream.send(b'{"jsonrpc":"2.0","method":"a"}\n')
        await stream.send_many([b'{"n":1}\n', b'{"n":2}'])
        received.append(await stream.receive())

    with anyio.fail_after(units(2)):
        async with serve_websocket(handler) as server, connect(server.url) as raw:
            frames = [await raw.recv() for _ in range(3)]
            await raw.send('{"from":"raw"}\n')  # a peer that sends the newline anyway
            await raw.wait_closed()  # the handler returned
    # str: text frames (bytes would mean binary frames)
    assert frames == ['{"jsonrpc":"2.0","method":"a"}', '{"n":1}', '{"n":2}']
    assert received == [b'{"from":"raw"}']



async def test_line_breaks_inside_a_frame_arrive_as_spaces() -> None:
    received: list[bytes] = []

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        received.extend([await stream.receive(), await stream.receive()])

    with anyio.fail_after(units(2)):
        async with serve_websocket(handler) as server:
            async with connect_websocket(server.url) as client:
                await client.send(b'{\n  "a": "x\\ny"\n}')  # pretty JSON: one message
                await client.send(b"[1,\r\n2,\r3]")
                with pytest.raises(anyio.EndOfStream):
                    await client.receive()  # the handler returned
    # one line each, as a relay to a pipe (bridge, proxy) must write them
    assert received == [b'{   "a": "x\\ny" }', b"[1,  2, 3]"]

async def test_both_ends_send_large_messages_at_once() -> None:
    # Each end sends more than the TCP buffers hold before it reads anything
    # back: the reading side must keep reading while its writes are blocked
    # (websockets.trio deadlocked here).
    count, size = 6, 300_000
    big = [b'"' + bytes([65 + n]) * size + b'"\n' for n in range(count)]

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.send_many, big)
            echoed = [await stream.receive() for _ in range(count)]
        await stream.send(b"%d" % sum(len(message) for message in echoed))

    with anyio.fail_after(units(4)):
        async with serve_websocket(handler) as server, connect_websocket(server.url) as stream:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stream.send_many, big)
                received = [await stream.receive() for _ in range(count)]
            assert await stream.receive() == b"%d" % (count * (size + 2))
    assert received == [message[:-1] for message in big]


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_ping_is_answered_with_a_pong(monkeypatch: pytest.MonkeyPatch) -> None:
    from wireproto.transports import _wsends

    # The trio implementation does not need websockets.trio at all.
    monkeypatch.setitem(sys.modules, "websockets.trio", None)
    pings: list[bytes] = []

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        pings.append(await stream.receive())

    async with serve_websocket(handler) as server:
        async with _wsends.connect(server.url, headers=None, max_bytes=1000) as conn:
            with anyio.fail_after(units(1)):
                await conn.ping(b"are you there")  # returns when the pong came back
                await conn.send(b"done")
                with pytest.raises(websockets.exceptions.ConnectionClosedOK):
                    await conn.recv()  # the handler returned: closed with 1000
    assert pings == [b"done"]


@pytest.mark.fastpath
async def test_try_send_takes_whole_messages_while_the_connection_has_room() -> None:
    # A client that does not read yet: the server's direct writes are taken
    # until the connection's buffers are full, then refused (nothing lost).
    big = b'"' + b"x" * (1 << 20) + b'"\n'
    taken: list[int] = []
    counted = anyio.Event()

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        assert stream.try_send(b'{"n":1}\n') and not stream.needs_flush
        await stream.send(b'{"n":2}\n')
        n = 0
        while n < 64 and stream.try_send(big):
            n += 1
        taken.append(n)
        counted.set()
        await stream.send(b'{"n":3}')  # waits for room: after every message taken
        await stream.receive()  # (until the client is done)

    with anyio.fail_after(units(8)):
        async with serve_websocket(handler) as server, connect_websocket(server.url) as stream:
            assert await stream.receive() == b'{"n":1}'
            assert await stream.receive() == b'{"n":2}'
            await counted.wait()
            assert 0 < taken[0] < 64  # refused once the buffers were full
            for _ in range(taken[0]):
                assert await stream.receive() == big[:-1]
            assert await stream.receive() == b'{"n":3}'
            await stream.send(b"done\n")
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()
    assert not stream.try_send(b"{}\n")  # closed: nothing is taken


async def test_a_peer_answering_over_a_websocket_writes_without_a_writer_task() -> None:
    from wireproto._switches import FAST_PATHS
    from wireproto.rpc.peer import Peer
    from wireproto.rpc.router import Router

    router = Router()

    async def echo(params: object) -> object:
        return params

    router.add("echo", echo)
    writer_tasks: list[bool] = []

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        async with Peer(stream, router) as peer:
            await peer.wait_closed()
            writer_tasks.append(peer._writer._running)

    with anyio.fail_after(units(4)):
        async with serve_websocket(handler) as server, connect_websocket(server.url) as stream:
            for n in range(3):
                await stream.send(b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":[%d]}\n'
                                  % (n, n))
                assert await stream.receive() == b'{"jsonrpc":"2.0","id":%d,"result":[%d]}' % (
                    n, n)
    # (serve_websocket waited for the handler)
    assert writer_tasks == [not FAST_PATHS]  # direct writes are a fast path
