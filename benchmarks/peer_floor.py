"""Peer contender: the floor — bare asyncio streams and msgspec, no RPC framework.

The child (``peer_floor_child.py``) echoes every line. The client encodes each
request with msgspec, writes it to the child's stdin, and a reader task
decodes every echoed line with msgspec (envelope only) and resolves the
request's future by id. For notifications the client writes the N
pre-encoded ``session/update`` lines in one go and times until the reader
has decoded all N echoes: the pipe carries the messages twice, but the
client's own work per message is one read and one decode, as for a real
receiver. This is the physical limit of a Python asyncio process talking
JSON over pipes on this machine. Run by ``bench_peer.py``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec
from _messages import SESSION_ID, SESSION_UPDATE_CHUNK
from _peer_runner import parse_args, run

CHILD = str(Path(__file__).with_name("peer_floor_child.py"))


class Envelope(msgspec.Struct):
    """What the reader looks at: the id of an echoed request, or a method."""

    id: int | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw()


class Request(msgspec.Struct, tag_field="jsonrpc", tag="2.0"):
    id: int
    method: str
    params: Any


class FloorClient:
    """Requests multiplexed over the echo child by id."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int
    ) -> None:
        self._reader, self._writer = reader, writer
        self.server_pid: int | None = pid
        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder(Envelope).decode
        self._pending: dict[int, asyncio.Future[None]] = {}
        self._next = 0
        self.received = 0
        self._want = 0
        self._done: asyncio.Event | None = None
        self._params = {"sessionId": SESSION_ID, "modeId": "code"}

    async def read_loop(self) -> None:
        readline, decode, pending = self._reader.readline, self._decode, self._pending
        while True:
            line = await readline()
            if not line:
                break
            msg = decode(line)
            if msg.id is not None:
                fut = pending.pop(msg.id)
                fut.set_result(None)
            else:
                self.received += 1
                if self.received == self._want and self._done is not None:
                    self._done.set()

    async def call(self) -> None:
        rid = self._next
        self._next += 1
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        self._writer.write(self._encode(Request(rid, "session/set_mode", self._params)) + b"\n")
        await fut

    async def stream(self, count: int) -> None:
        line = msgspec.json.encode(SESSION_UPDATE_CHUNK) + b"\n"
        self._want = self.received + count
        self._done = asyncio.Event()
        self._writer.write(line * count)
        await self._writer.drain()
        await self._done.wait()


@asynccontextmanager
async def connect(args: Any) -> AsyncIterator[FloorClient]:
    """Spawn the echo child and yield a client bound to it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, CHILD, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    assert proc.stdin is not None and proc.stdout is not None
    client = FloorClient(proc.stdout, proc.stdin, proc.pid)
    reader = asyncio.create_task(client.read_loop())
    try:
        yield client
    finally:
        proc.stdin.close()
        await proc.wait()
        await reader


if __name__ == "__main__":
    run("floor", f"asyncio streams + msgspec {metadata.version('msgspec')}", "stdio", connect,
        parse_args(__doc__.split("\n")[0]),
        notes=["echo child; envelope-only decode; no framework, no validation of params"])
