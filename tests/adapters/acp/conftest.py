"""Fixtures for the ACP agent tests: an isolated home, and the demo agent on a connection.

``open_acp`` serves the demo agent with :func:`serve_acp` on one end of an
in-memory pair and yields a :class:`RawAcp` (``tests/helpers/acp_raw.py``)
on the other; ``open_acp_process`` runs ``tests/helpers/acp_agent.py`` as a
child process and talks to it over its stdio. Both check every message the
agent writes (schema, gating, ordering).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from loading import load_file
from timeouts import units

from wireproto.adapters.acp import serve_acp
from wireproto.agent.api import Agent
from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import open_subprocess

HELPERS = Path(__file__).resolve().parents[2] / "helpers"
AGENT_SCRIPT = HELPERS / "acp_agent.py"


def load_helper(name: str) -> ModuleType:
    """Import ``tests/helpers/NAME.py``."""
    return load_file(HELPERS / f"{name}.py", f"wireproto_tests_{name}")


acp_raw = load_helper("acp_raw")
RawAcp = acp_raw.RawAcp
Reject = acp_raw.Reject
chunk = acp_raw.chunk
chunk_text = acp_raw.chunk_text

OpenAcp = Callable[..., AbstractAsyncContextManager[Any]]

FULL_CAPS: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "session": {"configOptions": {"boolean": {}}, "notices": {}},
}
"""Client capabilities advertising everything the agent may use."""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point WIREPROTO_HOME at a temporary directory; no token configured."""
    path = tmp_path / "home"
    monkeypatch.setenv("WIREPROTO_HOME", str(path))
    monkeypatch.delenv("WIREPROTO_TOKEN", raising=False)
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A session working directory."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@asynccontextmanager
async def open_acp(
    agent: Agent | Runtime | None = None, **options: Any
) -> AsyncIterator[Any]:
    """Serve ``agent`` (default: the demo agent) in memory; yield a :class:`RawAcp`.

    ``options`` go to :func:`serve_acp` (a ``store`` only when ``agent`` is
    not a runtime). On exit the agent is stopped and must return by itself.
    """
    if isinstance(agent, Runtime):
        options.pop("store", None)
    ours, theirs = memory_pair()
    stop = anyio.Event()
    served = anyio.Event()

    async def serve() -> None:
        try:
            await serve_acp(agent if agent is not None else DemoAgent(), theirs, stop=stop,
                            **options)
        finally:
            served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        try:
            yield RawAcp(ours)
        finally:
            stop.set()
            with anyio.fail_after(units(1.2)):
                await served.wait()
            await ours.aclose()


@asynccontextmanager
async def open_acp_process(*args: str, backend: str = "asyncio") -> AsyncIterator[Any]:
    """Run the demo agent as a child process (stdio); yield a :class:`RawAcp`."""
    cmd = [sys.executable, str(AGENT_SCRIPT), "--backend", backend, *args]
    async with open_subprocess(cmd, env=dict(os.environ), stderr="log") as stream:
        yield RawAcp(stream)


@pytest.fixture
def acp(tmp_path: Path) -> OpenAcp:
    """``async with acp(**options) as client``: the demo agent in memory.

    Each connection gets a fresh runtime over the same JSON Lines store (a
    temporary directory), as a restarted ``wireproto acp`` would.
    """
    return functools.partial(open_acp, store=tmp_path / "sessions")
