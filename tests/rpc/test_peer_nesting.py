"""A peer fed deeply nested JSON answers it like any bad input and goes on serving."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from wireproto.errors import RemoteProtocolError
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

DEEP = 100_000


def _deep(n: int = DEEP) -> bytes:
    return b"[" * n + b"]" * n


async def test_deep_requests_are_refused_and_the_peer_serves_on(anyio_backend: str) -> None:
    router = Router()

    @router.request("echo")
    async def echo(p: Any) -> Any:
        return p

    ours, theirs = memory_pair()
    async with Peer(theirs, router), ours:
        lines = [
            b"[" * DEEP,
            _deep(),
            b'{"jsonrpc":"2.0","id":1,"method":"echo","params":' + _deep() + b"}",
            b'{"jsonrpc":"2.0","id":2,"method":"nope","params":{"a":' + _deep() + b"}}",
            b'{"jsonrpc":"2.0","method":"echo","params":' + _deep() + b"}",  # never answered
            b'{"jsonrpc":"2.0","id":3,"method":"echo","params":{"ok":true}}',
        ]
        for line in lines:
            await ours.send(line)
        answers = [msgspec.json.decode(await ours.receive()) for _ in range(5)]
    codes = [(a["id"], a.get("error", {}).get("code")) for a in answers]
    assert codes == [(None, -32700), (None, -32600), (1, -32602), (2, -32602), (3, None)]
    assert answers[2]["error"]["data"] == {"path": "$.params", "reason": "nested too deeply"}
    assert answers[4]["result"] == {"ok": True}


async def test_a_deep_response_fails_the_request_with_a_remote_error(anyio_backend: str) -> None:
    ours, theirs = memory_pair()
    async with Peer(theirs) as peer, ours, anyio.create_task_group() as tg:

        async def answer() -> None:
            first = msgspec.json.decode(await ours.receive())
            await ours.send(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (first["id"], _deep()))
            second = msgspec.json.decode(await ours.receive())
            await ours.send(b'{"jsonrpc":"2.0","id":%d,"result":"fine"}' % second["id"])

        tg.start_soon(answer)
        with pytest.raises(RemoteProtocolError, match=r"response to ask is invalid.*too deep"):
            await peer.request("ask")
        assert await peer.request("ask", result_type=str) == "fine"  # still serving

