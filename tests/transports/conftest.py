"""The transport cases: one stream per transport, connected to an echo peer.

``open_case(kind)`` yields a :class:`Case` whose stream talks to the echo
peer of ``tests/helpers/echo.py``:

* ``memory``: an in-process echo task on the other end of a memory pair;
* ``stdio``: a child process running the echo over ``open_stdio`` (the
  transport under test is the child's; ours is a subprocess stream);
* ``subprocess``: our subprocess stream, to a plain blocking echo child;
* ``websocket``: an in-process echo server on loopback, and a client.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import ModuleType

import anyio
import anyio.abc
import pytest
from loading import load_file

from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import open_subprocess
from wireproto.transports.websocket import (
    WebSocketRequest,
    WebSocketStream,
    connect_websocket,
    serve_websocket,
)

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
KINDS = ["memory", "stdio", "subprocess", "websocket"]
def _load(name: str) -> ModuleType:
    return load_file(HELPERS / f"{name}.py", f"wireproto_tests_{name}")


echo_helper = _load("echo")


@dataclasses.dataclass
class Case:
    """One transport connected to an echo peer.

    Attributes:
        kind: the transport's name.
        stream: our end.
        half_close: whether ``send_eof`` leaves our receiving side open
            (byte streams and memory; WebSocket has no half-close).
    """

    kind: str
    stream: anyio.abc.ObjectStream[bytes]
    half_close: bool


@asynccontextmanager
async def _open_case(
    kind: str, *, backend: str, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> AsyncIterator[Case]:
    if kind == "memory":
        ours, theirs = memory_pair()

        async def serve() -> None:
            async with theirs:
                await echo_helper.echo(theirs)

        async with ours, anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                yield Case(kind, ours, half_close=True)
            finally:
                tg.cancel_scope.cancel()
    elif kind == "websocket":

        async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
            await echo_helper.echo(stream)

        async with (
            serve_websocket(handler, max_bytes=max_bytes) as server,
            connect_websocket(server.url, max_bytes=max_bytes) as stream,
        ):
            yield Case(kind, stream, half_close=False)
    else:
        if kind == "stdio":
            cmd = [sys.executable, str(HELPERS / "echo.py"), backend, str(max_bytes)]
        else:
            cmd = [sys.executable, str(HELPERS / "echo_plain.py")]
        async with open_subprocess(cmd, stderr="log", max_bytes=max_bytes) as stream:
            yield Case(kind, stream, half_close=True)


@pytest.fixture
def open_case(anyio_backend_name: str) -> Callable[..., AbstractAsyncContextManager[Case]]:
    """``open_case(kind, max_bytes=...)``: an async context manager yielding a Case."""
    return functools.partial(_open_case, backend=anyio_backend_name)
