"""The loopback channel and the ``mcp-bridge`` process, with a stand-in for the host.

These run on both anyio backends (the host's gateway is plain coroutines).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.mcp import connect_mcp
from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp.client import ToolClient
from wireproto.errors import RpcError
from wireproto.host.bridge_cmd import LOG_ENV
from wireproto.host.channel import (
    ADDRESS_ENV,
    CREDENTIAL_INVALID,
    TOKEN_ENV,
    BridgeChannel,
    Credentials,
    parse_address,
)
from wireproto.host.host import DEFAULT_BRIDGE_COMMAND
from wireproto.host.policy import Caller
from wireproto.transports.subprocess import stderr_log

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
BRIDGE = list(DEFAULT_BRIDGE_COMMAND)  # python -m wireproto mcp-bridge
CALLER = Caller("bind-1", "sess-1", "main")


class Gateway:
    """Answers like a host would, recording the identities it was asked for."""

    def __init__(self) -> None:
        self.callers: list[Caller] = []

    async def list_tools(self, caller: Caller) -> list[m.Tool]:
        self.callers.append(caller)
        return [m.Tool(name="kiki_read", description="read a file")]

    async def call_tool(
        self, caller: Caller, name: str, arguments: dict[str, Any]
    ) -> m.CallToolResult:
        self.callers.append(caller)
        if name != "kiki_read":
            raise RpcError(-32602, f"Unknown tool: {name}")
        return m.text_result(f"{name} {json.dumps(arguments)} for {caller.session_id}")


@asynccontextmanager
async def channel_and_bridge(
    token: str | None = None, log_level: str = "warning"
) -> AsyncIterator[tuple[BridgeChannel, Gateway, ToolClient, str]]:
    """A channel with one bridge process connected to it; yields the credential too."""
    gateway = Gateway()
    channel = BridgeChannel(Credentials(), gateway)
    async with anyio.create_task_group() as tg:
        address = await tg.start(channel.serve)
        secret = token if token is not None else channel.credentials.mint(CALLER)
        env = {**os.environ, ADDRESS_ENV: address, TOKEN_ENV: secret, LOG_ENV: log_level}
        async with connect_mcp(BRIDGE, env=env) as client:
            yield channel, gateway, client, secret
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_bridge_forwards_and_revocation_stops_it() -> None:
    async with channel_and_bridge() as (channel, gateway, client, _):
        assert client.server_info is not None
        assert client.server_info.name == "wireproto-mcp-bridge"
        assert channel.address is not None and channel.address.startswith("127.0.0.1:")
        assert [t.name for t in await client.list_tools()] == ["kiki_read"]
        result = await client.call_tool("kiki_read", {"path": "/a"})
        assert result.text == 'kiki_read {"path": "/a"} for sess-1'
        with pytest.raises(RpcError, match="Unknown tool: kiki_nope"):
            await client.call_tool("kiki_nope")
        assert gateway.callers == [CALLER] * 3  # every request carried the identity
        assert channel.credentials.revoke("bind-1") == 1
        for attempt in (client.list_tools(), client.call_tool("kiki_read")):
            with pytest.raises(RpcError) as info:
                await attempt
            assert info.value.code == CREDENTIAL_INVALID
        await client.ping()  # the bridge process runs on, but can do nothing
        assert len(gateway.callers) == 3


@pytest.mark.anyio
async def test_the_bridge_never_logs_its_credential(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=stderr_log.name)  # the bridge's stderr lines
    async with channel_and_bridge(log_level="debug") as (channel, _, client, secret):
        assert await client.list_tools()
        await client.call_tool("kiki_read", {"path": "/a"})
        channel.credentials.revoke(CALLER.binding_id)
        with pytest.raises(RpcError):
            await client.call_tool("kiki_read")
    lines = [r.getMessage() for r in caplog.records if r.name == stderr_log.name]
    assert any("mcp-bridge DEBUG" in line for line in lines), lines  # it did log, at debug
    assert not any(secret in line for line in lines)


@pytest.mark.anyio
async def test_unknown_credential_gets_nothing() -> None:
    async with channel_and_bridge(token="forged") as (_, gateway, client, _):
        with pytest.raises(RpcError) as info:
            await client.list_tools()
        assert info.value.code == CREDENTIAL_INVALID
        assert gateway.callers == []


def test_credentials_keep_only_digests() -> None:
    credentials = Credentials()
    token = credentials.mint(CALLER)
    assert credentials.lookup(token) == CALLER
    assert token not in repr(credentials.__dict__)
    assert credentials.active("bind-1")
    assert credentials.revoke("bind-1") == 1
    assert credentials.lookup(token) is None and not credentials.active("bind-1")


@pytest.mark.parametrize("address", ["10.1.2.3:80", "example.org:80", "127.0.0.1", "x:y"])
def test_addresses_must_be_loopback(address: str) -> None:
    with pytest.raises(ValueError, match="address"):
        parse_address(address)
    assert parse_address("[::1]:9") == ("::1", 9)


@pytest.mark.parametrize(("env", "message"), [
    ({}, f"{ADDRESS_ENV} and {TOKEN_ENV} must be set: a host (wireproto.host) starts"),
    ({ADDRESS_ENV: "192.0.2.1:4000", TOKEN_ENV: "t"}, "not a loopback address"),
])
def test_bridge_refuses_a_bad_environment(env: dict[str, str], message: str) -> None:
    base = {k: v for k, v in os.environ.items() if k not in (ADDRESS_ENV, TOKEN_ENV)}
    done = subprocess.run(BRIDGE, env={**base, **env}, input=b"", capture_output=True,
                          timeout=30, check=False)
    assert done.returncode == 1
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 1 and errors[0].startswith("wireproto: error: ") and message in errors[0]


@pytest.mark.anyio
async def test_official_client_through_the_bridge() -> None:
    gateway = Gateway()
    channel = BridgeChannel(Credentials(), gateway)
    async with anyio.create_task_group() as tg:
        address = await tg.start(channel.serve)
        token = channel.credentials.mint(CALLER)
        cmd = [sys.executable, str(HELPERS / "mcp_official_client.py"), "bridge",
               "--env", f"{ADDRESS_ENV}={address}", "--env", f"{TOKEN_ENV}={token}",
               "--call", 'kiki_read {"path": "x"}', "--call", "kiki_write {}", "--", *BRIDGE]
        done = await anyio.run_process(cmd, check=False)
        tg.cancel_scope.cancel()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)
    assert report["pages"] == [["kiki_read"]]
    assert report["calls"] == [
        {"text": ['kiki_read {"path": "x"} for sess-1'], "isError": False, "structured": None},
        {"error": -32602, "message": "Unknown tool: kiki_write"},
    ]
