"""The recording relay: messages pass unchanged, observers see each one in order,
and ``wireproto proxy`` records a trace equal to the traffic byte for byte."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import anyio
import pytest

from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.wire.client.connection import WireClient
from wireproto.cli.trace import TraceStream
from wireproto.proxy import Direction, RelayedMessage, relay_messages
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import open_subprocess

pytestmark = pytest.mark.anyio

WIREPROTO = [sys.executable, "-m", "wireproto"]
LINE = re.compile(rb'^\{"t":[0-9.]+,"dir":"(send|recv)","msg":(.*)\}$')


async def test_relay_passes_messages_unchanged_and_observers_see_them_in_order() -> None:
    client_end, front = memory_pair()
    back, agent_end = memory_pair()
    seen: list[RelayedMessage] = []

    def broken(message: RelayedMessage) -> None:
        raise RuntimeError("observer bug")

    async with client_end, front, back, agent_end, anyio.create_task_group() as tg:
        tg.start_soon(relay_messages, front, back, [broken, seen.append])
        await client_end.send(b'{"id":1, "x" : "spaces kept"}')
        assert await agent_end.receive() == b'{"id":1, "x" : "spaces kept"}'
        await agent_end.send(b"not json at all")
        assert await client_end.receive() == b"not json at all"
        await client_end.send_eof()
        # the agent still answers after the client's end
        await agent_end.send(b'{"id":1,"result":{}}')
        assert await client_end.receive() == b'{"id":1,"result":{}}'
        await agent_end.aclose()
    assert [(m.direction, m.data) for m in seen] == [
        (Direction.TO_AGENT, b'{"id":1, "x" : "spaces kept"}'),
        (Direction.TO_CLIENT, b"not json at all"),
        (Direction.TO_CLIENT, b'{"id":1,"result":{}}'),
    ]
    assert seen[0].time <= seen[1].time <= seen[2].time


def _messages(path: Path) -> list[tuple[str, bytes]]:
    """(dir, raw message bytes) of each trace line, extracted without re-encoding."""
    found = []
    for line in path.read_bytes().splitlines():
        match = LINE.match(line)
        assert match is not None, line
        found.append((match.group(1).decode(), match.group(2)))
    return found


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["WIREPROTO_HOME"] = str(tmp_path / "home")
    return env


async def _through_proxy(tmp_path: Path, protocol: str) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "client.jsonl", tmp_path / "proxy.jsonl"
    cmd = [*WIREPROTO, "proxy", "--serve", protocol, "--agent-protocol", protocol,
           "--trace", str(theirs), "--", *WIREPROTO, protocol]
    with open(ours, "wb") as sink:  # noqa: ASYNC230 (a local file, written line by line)
        async with open_subprocess(cmd, env=_env(tmp_path), stderr="log") as child:
            stream = TraceStream(child, sink)
            if protocol == "acp":
                async with ClientConnection(stream) as acp:
                    await acp.initialize()
                    sid = (await acp.new_session(str(tmp_path))).session_id
                    async with acp.prompt(sid, "hello through the relay") as turn:
                        async for _ in turn:
                            pass
                    assert turn.stop_reason == "end_turn"
                    async with acp.prompt(sid, "/plan") as turn:
                        async for _ in turn:
                            pass
            else:
                async with WireClient(stream) as wire:
                    assert await wire.initialize() is not None
                    result = await wire.prompt("hello through the relay")
                    assert result.status == "finished"
                    await wire.prompt("/plan")
            await child.send_eof()
            assert await child.wait() == 0
    return ours, theirs


@pytest.mark.parametrize("protocol", ["acp", "wire"])
async def test_proxy_trace_equals_the_traffic_byte_for_byte(
    tmp_path: Path, protocol: str
) -> None:
    ours, theirs = await _through_proxy(tmp_path, protocol)
    client_side, proxy_side = _messages(ours), _messages(theirs)
    assert len(client_side) > 10
    for direction in ("send", "recv"):
        assert [m for d, m in proxy_side if d == direction] == \
            [m for d, m in client_side if d == direction]
