"""``open_stream``: one call to spawn a command or connect a WebSocket URL."""

from __future__ import annotations

import sys

import anyio
import pytest
from timeouts import units

from wireproto.transports.open import open_stream
from wireproto.transports.websocket import WebSocketRequest, WebSocketStream, serve_websocket

pytestmark = pytest.mark.anyio

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


async def test_exactly_one_of_cmd_and_url() -> None:
    with pytest.raises(ValueError):
        async with open_stream():
            pass
    with pytest.raises(ValueError):
        async with open_stream([sys.executable], url="ws://127.0.0.1:1/"):
            pass


async def test_spawned_command_round_trip() -> None:
    async with open_stream([sys.executable, "-c", ECHO]) as stream:
        await stream.send(b'{"a":1}\n')
        assert await stream.receive() == b'{"a":1}'


async def test_websocket_round_trip_with_headers() -> None:
    seen: list[str | None] = []

    async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
        seen.append(request.headers.get("authorization"))
        await stream.send(await stream.receive())

    async with (
        serve_websocket(handler) as server,
        open_stream(url=server.url, headers={"Authorization": "Bearer t"}) as stream,
    ):
        await stream.send(b'{"b":2}\n')
        with anyio.fail_after(units(2)):
            assert await stream.receive() == b'{"b":2}'
    assert seen == ["Bearer t"]
