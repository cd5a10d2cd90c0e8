"""The host's loopback channel against hostile input from any local process.

No credential is needed to write to the channel's socket, so whatever arrives
(deeply nested JSON, broken JSON, random envelopes) must be answered as bad
input while the host, and the connection, go on serving.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timeouts import units

from wireproto.adapters.mcp import messages as m
from wireproto.host.channel import (
    CALL_METHOD,
    CREDENTIAL_INVALID,
    LIST_METHOD,
    BridgeChannel,
    Credentials,
    parse_address,
)
from wireproto.host.host import Host
from wireproto.host.policy import Caller

N = 100_000
PROBE = {"jsonrpc": "2.0", "id": "probe", "method": LIST_METHOD, "params": {"token": "forged"}}


async def _lines(sock: anyio.abc.SocketStream, count: int) -> list[dict[str, Any]]:
    buf, out = b"", []
    while len(out) < count:
        buf += await sock.receive()
        *done, buf = buf.split(b"\n")
        out.extend(msgspec.json.decode(line) for line in done if line)
    return out


async def _connect(address: str) -> anyio.abc.SocketStream:
    host, port = parse_address(address)
    return await anyio.connect_tcp(host, port)


@pytest.mark.anyio
async def test_a_deep_line_does_not_take_the_host_down(host: Host, anyio_backend: str) -> None:
    assert host.channel.address is not None
    sock = await _connect(host.channel.address)
    async with sock:
        deep = b"[" * N + b"]" * N
        await sock.send(b"[" * N + b"\n" + deep + b"\n")
        await sock.send(b'{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}\n' % (
            LIST_METHOD.encode(), deep))
        await sock.send(json.dumps(PROBE).encode() + b"\n")
        answers = await _lines(sock, 4)
    codes = [(a["id"], a["error"]["code"]) for a in answers]
    assert codes == [(None, -32700), (None, -32600), (1, -32602), ("probe", CREDENTIAL_INVALID)]
    other = await _connect(host.channel.address)  # the host still accepts connections
    async with other:
        await other.send(json.dumps(PROBE).encode() + b"\n")
        assert (await _lines(other, 1))[0]["error"]["code"] == CREDENTIAL_INVALID


class _Tools:
    async def list_tools(self, caller: Caller) -> list[m.Tool]:
        return []

    async def call_tool(self, caller: Caller, name: str, arguments: dict[str, Any]) -> Any:
        return m.CallToolResult(content=[])


_DEEP = {"open": b"[" * N, "array": b"[" * N + b"]" * N}
_scalar = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4)
_json = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)


@st.composite
def _line(draw: st.DrawFn) -> tuple[str, Any]:
    """A line to send, by name (deep text stays out of reprs), and its id if answered."""
    kind = draw(st.sampled_from(["deep", "deep-params", "broken", "envelope"]))
    if kind == "deep":
        return draw(st.sampled_from(list(_DEEP))), None
    ident = draw(st.integers(0, 99))
    method = draw(st.sampled_from([LIST_METHOD, CALL_METHOD, "nope"]))
    if kind == "deep-params":  # answered with the id when well-formed
        deep = draw(st.sampled_from(list(_DEEP)))
        return f"params:{method}:{ident}:{deep}", ident if deep == "array" else None
    if kind == "broken":
        return draw(st.sampled_from(["{", "]", '{"id":1', "\xff", "nul", '"x'])), None
    params = draw(_json | st.fixed_dictionaries({"token": _scalar}, optional={"name": _scalar}))
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}), ident


def _bytes(line: str) -> bytes:
    if line in _DEEP:
        return _DEEP[line]
    if line.startswith("params:"):
        _, method, ident, deep = line.split(":")
        return b'{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}' % (
            ident.encode(), method.encode(), _DEEP[deep])
    return line.encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line(), min_size=1, max_size=6))
def test_the_channel_survives_generated_input(lines: list[tuple[str, Any]], backend: str) -> None:
    async def run() -> list[dict[str, Any]]:
        channel = BridgeChannel(Credentials(), _Tools())
        with anyio.fail_after(units(12)):
            return await exchange(channel)

    async def exchange(channel: BridgeChannel) -> list[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            address = await tg.start(channel.serve)
            sock = await _connect(address)
            async with sock:
                for line, _ in lines:
                    await sock.send(_bytes(line) + b"\n")
                await sock.send(json.dumps(PROBE).encode() + b"\n")
                answers: list[dict[str, Any]] = []
                while not any(a.get("id") == "probe" for a in answers):
                    answers += await _lines(sock, 1)
            tg.cancel_scope.cancel()
        return answers

    answers = anyio.run(run, backend=backend)
    for answer in answers:
        assert ("result" in answer) != ("error" in answer)
        if "error" in answer:
            assert answer["error"]["code"] != -32603, answer
    answered = [a["id"] for a in answers if a.get("id") is not None]
    asked = [ident for _, ident in lines if ident is not None]
    assert sorted(answered, key=str) == sorted([*asked, "probe"], key=str)
