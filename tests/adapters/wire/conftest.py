"""Fixtures for the Wire server/client suites.

* ``home``: an isolated ``WIREPROTO_HOME`` (autouse), ``workdir``: the sessions' cwd.
  Every server keeps its sessions as JSON Lines files in ``home/sessions``
  (a fresh runtime over the same files is a restarted server).
* ``open_wire(kind, ...)``: a :class:`Served` with a ready :class:`WireClient`
  talking to a Wire server of the demo agent (or of ``agent`` / ``runtime``)
  over ``memory``, ``websocket`` or ``subprocess`` (the demo agent in a child
  process running ``tests/helpers/wire_server.py``).
* ``open_raw(...)``: a server driven with raw NDJSON lines through an
  :class:`~wireproto.testing.NdjsonProbe`.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from timeouts import units

from wireproto.adapters.wire import WireClient, WireServer, connect_wire
from wireproto.agent.api import Agent
from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.testing import NdjsonProbe
from wireproto.transports.memory import memory_pair
from wireproto.transports.websocket import WebSocketRequest, WebSocketStream, serve_websocket

HELPERS = Path(__file__).resolve().parents[2] / "helpers"
KINDS = ["memory", "websocket", "subprocess"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point WIREPROTO_HOME at a temporary directory (inherited by child servers)."""
    path = tmp_path / "home"
    monkeypatch.setenv("WIREPROTO_HOME", str(path))
    monkeypatch.delenv("WIREPROTO_TOKEN", raising=False)
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The sessions' working directory."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@dataclasses.dataclass
class Served:
    """A client connected to a server; ``servers`` is empty for a child process."""

    client: WireClient
    servers: list[WireServer]

    @property
    def server(self) -> WireServer:
        return self.servers[0]


def server_cmd(backend: str, workdir: Path, session_id: str | None = None) -> list[str]:
    cmd = [sys.executable, str(HELPERS / "wire_server.py"), backend, "--work-dir", str(workdir)]
    return cmd + (["--session", session_id] if session_id else [])


@asynccontextmanager
async def _open_wire(
    kind: str = "memory",
    *,
    backend: str,
    workdir: Path,
    sessions: Path,
    agent: Agent | None = None,
    runtime: Runtime | None = None,
    session_id: str | None = None,
    handshake: bool = True,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Served]:
    if kind == "subprocess":
        assert agent is None and runtime is None and not server_options
        async with connect_wire(
            server_cmd(backend, workdir, session_id), stderr="log", initialize=handshake,
            **client_options,
        ) as client:
            yield Served(client, [])
        return
    shared = runtime if runtime is not None else Runtime(agent or DemoAgent(), sessions)
    servers: list[WireServer] = []

    def make_server() -> WireServer:
        server = WireServer(
            shared, work_dir=str(workdir), session_id=session_id, **(server_options or {})
        )
        servers.append(server)
        return server

    if kind == "websocket":

        async def handler(stream: WebSocketStream, request: WebSocketRequest) -> None:
            await make_server().serve(stream)

        async with serve_websocket(handler) as ws, connect_wire(
            url=ws.url, initialize=handshake, **client_options
        ) as client:
            yield Served(client, servers)
        return
    assert kind == "memory", kind
    ours, theirs = memory_pair()
    server = make_server()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, theirs)
        async with WireClient(ours, **client_options) as client:
            if handshake:
                await client.initialize()
            yield Served(client, servers)


@pytest.fixture
def open_wire(
    anyio_backend_name: str, workdir: Path, home: Path
) -> Callable[..., AbstractAsyncContextManager[Served]]:
    """``open_wire(kind, agent=, runtime=, session_id=, handshake=, **client_options)``."""
    return functools.partial(
        _open_wire, backend=anyio_backend_name, workdir=workdir, sessions=home / "sessions"
    )


class Raw:
    """A server under test driven with raw lines."""

    def __init__(self, probe: NdjsonProbe, server: WireServer) -> None:
        self.probe = probe
        self.server = server

    async def send(self, message: Any) -> None:
        """Send one JSON value (or raw bytes, sent as they are)."""
        if isinstance(message, bytes):
            await self.probe.write(message)
        else:
            await self.probe.write_json(message)

    async def recv(self) -> Any:
        return await self.probe.read_json()

    async def recv_raw(self) -> bytes:
        return await self.probe.read()

    async def call(self, id: Any, method: str, params: Any = None) -> Any:
        """Send a request and return its response, collecting the events before it."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.until_response(id)

    async def until_response(self, id: Any) -> Any:
        while True:
            message = await self.recv()
            if "method" not in message and message.get("id") == id:
                return message

    async def until_request(self) -> tuple[list[Any], Any]:
        """Read up to the next server ``request``: (the messages before it, the request)."""
        before: list[Any] = []
        while True:
            message = await self.recv()
            if message.get("method") == "request":
                return before, message
            before.append(message)

    async def collect_call(self, id: Any, method: str, params: Any = None) -> list[Any]:
        """Send a request; return every message up to and including its response."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.collect(id)

    async def collect(self, id: Any) -> list[Any]:
        """Every message up to and including the response with ``id``."""
        seen = []
        while True:
            message = await self.recv()
            seen.append(message)
            if "method" not in message and message.get("id") == id:
                return seen


@asynccontextmanager
async def _open_raw(
    *,
    workdir: Path,
    sessions: Path,
    agent: Agent | None = None,
    runtime: Runtime | None = None,
    max_bytes: int = 1 << 20,
    stop: anyio.Event | None = None,
    **server_options: Any,
) -> AsyncIterator[Raw]:
    probe = NdjsonProbe(max_bytes=max_bytes, buffer=1024)
    server = WireServer(
        runtime if runtime is not None else Runtime(agent or DemoAgent(), sessions),
        work_dir=str(workdir), **server_options,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(server.serve, probe.stream, stop=stop))
        try:
            yield Raw(probe, server)
        finally:
            probe.write_eof()
            with anyio.move_on_after(units(2)):
                while True:  # drain until the server has closed its side
                    try:
                        await probe.read()
                    except (anyio.EndOfStream, anyio.ClosedResourceError):
                        break
            await probe.aclose()


@pytest.fixture
def open_raw(workdir: Path, home: Path) -> Callable[..., AbstractAsyncContextManager[Raw]]:
    """``open_raw(agent=..., max_bytes=..., stop=..., **server_options)``."""
    return functools.partial(_open_raw, workdir=workdir, sessions=home / "sessions")



@asynccontextmanager
async def scripted(**options: Any) -> AsyncIterator[tuple[WireClient, NdjsonProbe]]:
    """A client whose server is driven by the test with raw lines."""
    probe = NdjsonProbe(buffer=1024)
    try:
        async with WireClient(probe.stream, **options) as client:
            yield client, probe
    finally:
        await probe.aclose()


def request(id: str, type: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A raw Wire ``request`` message (server -> client)."""
    return {"jsonrpc": "2.0", "id": id, "method": "request",
            "params": {"type": type, "payload": payload}}


def event(type: str, payload: Any) -> dict[str, Any]:
    """A raw Wire ``event`` notification."""
    return {"jsonrpc": "2.0", "method": "event", "params": {"type": type, "payload": payload}}
