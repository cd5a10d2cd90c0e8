"""The client APIs against a hostile agent that writes JSON nested 100k levels deep.

The agent (``tests/helpers/deep_agent.py``, a real subprocess) writes deep
garbage, a deep notification and a deep request before every answer: the
client refuses each like any bad input and goes on. When the answer itself is
too deep, the call raises :class:`RemoteProtocolError` naming the peer, never
a bare ``RecursionError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wireproto.adapters.acp import connect_acp
from wireproto.adapters.mcp.client import ToolClient
from wireproto.adapters.wire import connect_wire
from wireproto.errors import RemoteProtocolError
from wireproto.transports.subprocess import open_subprocess

pytestmark = pytest.mark.anyio

AGENT = str(Path(__file__).resolve().parents[1] / "helpers" / "deep_agent.py")


def _cmd(mode: str) -> list[str]:
    return [sys.executable, AGENT, mode]


async def test_connect_acp_survives_deep_lines(anyio_backend: str) -> None:
    async with connect_acp(_cmd("answer")) as client:
        assert client.initialize_response is not None
        await client.peer.request("x/ping")  # still serving after another volley


async def test_connect_acp_blames_the_agent_for_a_deep_answer(anyio_backend: str) -> None:
    with pytest.raises(RemoteProtocolError, match="response to initialize is invalid"):
        async with connect_acp(_cmd("deep")):
            pass


async def test_connect_wire_survives_deep_lines(anyio_backend: str) -> None:
    async with connect_wire(_cmd("answer"), stderr="log") as client:
        assert not client.legacy
        await client.peer.request("x/ping")


async def test_connect_wire_blames_the_server_for_a_deep_answer(anyio_backend: str) -> None:
    with pytest.raises(RemoteProtocolError, match="response to initialize is invalid"):
        async with connect_wire(_cmd("deep"), stderr="log"):
            pass


async def test_the_mcp_client_survives_deep_lines(anyio_backend: str) -> None:
    async with open_subprocess(_cmd("answer"), stderr="log") as stream, \
            ToolClient(stream) as client:
        await client.initialize()
        assert await client.list_tools() == []


async def test_the_mcp_client_blames_the_server_for_a_deep_answer(anyio_backend: str) -> None:
    async with open_subprocess(_cmd("deep"), stderr="log") as stream, \
            ToolClient(stream) as client:
        with pytest.raises(RemoteProtocolError, match="response to initialize is invalid"):
            await client.initialize()
