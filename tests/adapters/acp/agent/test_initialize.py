"""``initialize``: version negotiation, the capability matrix, unknown methods.

Protocol rules: protocol-acp.md#initialize, protocol-acp.md#capabilities,
protocol-acp.md#methods, protocol-acp.md#meta-and-extensions, protocol-acp.md#unstable-methods,
protocol-acp.md#gating.
"""

from __future__ import annotations

from typing import Any

import pytest

from wireproto import __version__
from wireproto.agent.demo import DemoAgent

from ..conftest import OpenAcp

pytestmark = pytest.mark.anyio

MATRIX = {
    "loadSession": True,
    "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": True, "sse": True},
    "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
}


class NoDelete(DemoAgent):
    supports_delete = False


async def test_capability_matrix_agent_info_and_auth_methods(acp: OpenAcp) -> None:
    async with acp() as client:
        result = await client.initialize()
    caps = result["agentCapabilities"]
    prompt = caps["promptCapabilities"]
    assert prompt.get("audio", False) is False  # false is the default (may be omitted)
    prompt.setdefault("audio", False)
    assert {k: caps[k] for k in MATRIX} == MATRIX
    assert set(caps) <= {*MATRIX, "auth"}
    assert not caps.get("auth", {}).get("logout")  # logout is not offered
    assert result["protocolVersion"] == 1
    assert result["agentInfo"] == {
        "name": "wireproto-demo", "title": "wireproto demo agent", "version": __version__,
    }
    assert result["authMethods"] == [{
        "id": "login", "name": "Log in",
        "description": "Use the token of WIREPROTO_TOKEN or $WIREPROTO_HOME/token",
    }]


async def test_delete_is_advertised_only_when_the_agent_supports_it(acp: OpenAcp) -> None:
    async with acp(NoDelete()) as client:
        result = await client.initialize()
        error = await client.error("session/delete", {"sessionId": "sess_x"})
    assert "delete" not in result["agentCapabilities"]["sessionCapabilities"]
    assert error["code"] == -32601


@pytest.mark.parametrize(("asked", "answered"), [(1, 1), (2, 1), (0, 1), (65535, 1)])
async def test_version_negotiation(acp: OpenAcp, asked: int, answered: int) -> None:
    async with acp() as client:
        result = await client.initialize(version=asked)
    assert result["protocolVersion"] == answered


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({}, "missing required field `protocolVersion`"),
        ({"protocolVersion": "1"}, "$.protocolVersion"),
        ({"protocolVersion": "2024-11-05"}, "$.protocolVersion"),
        ({"protocolVersion": 1.5}, "$.protocolVersion"),
        ({"protocolVersion": -1}, "$.protocolVersion"),
        ({"protocolVersion": 65536}, "$.protocolVersion"),
        ({"protocolVersion": True}, "$.protocolVersion"),
        ({"protocolVersion": None}, "$.protocolVersion"),
    ],
)
async def test_missing_or_malformed_version_is_invalid_params(
    acp: OpenAcp, params: dict[str, Any], reason: str
) -> None:
    async with acp() as client:
        error = await client.error("initialize", params)
    assert error["code"] == -32602
    assert "protocolVersion" in error["message"]  # the message names the field
    assert reason in error["message"]
    assert set(error["data"]) == {"path", "reason"}


async def test_malformed_capabilities_are_lenient(acp: OpenAcp) -> None:
    caps = {"fs": {"readTextFile": "yes"}, "terminal": 3, "session": {"notices": 1}}
    async with acp() as client:
        result = await client.initialize(caps)
    assert result["protocolVersion"] == 1


@pytest.mark.parametrize(
    "method",
    ["logout", "_acme.dev/workspace/symbols", "session/fork", "session/set_title",
     "terminal/create", "session/stop", "providers/list", "nonsense"],
)
async def test_unlisted_methods_are_method_not_found(acp: OpenAcp, method: str) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error(method, {})
    assert error["code"] == -32601


async def test_unknown_notifications_are_ignored(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.initialize()
        await client.notify("_acme.dev/ping", {"x": 1})
        await client.notify("$/progress", {"token": 1})
        await client.notify("unknown/notification")
        await client.notify("$/cancel_request", {"requestId": 12345})
        await client.nothing_before()


async def test_a_request_sent_as_notification_gets_no_answer(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.notify("initialize", {"protocolVersion": 1})
        await client.nothing_before()


async def test_set_model_is_never_advertised(acp: OpenAcp) -> None:
    async with acp() as client:
        result = await client.initialize()
    assert "model" not in str(result["agentCapabilities"]).lower()


async def test_requests_before_initialize_are_invalid(acp: OpenAcp, tmp_path: Any) -> None:
    """Initialize comes first (-32600, as the TS SDK's router answers)."""
    async with acp() as client:
        early = [
            await client.error("session/new", {"cwd": str(tmp_path), "mcpServers": []}),
            await client.error("session/list", {}),
            await client.error("authenticate", {"methodId": "login"}),
            await client.error("session/new", {"cwd": 5}),  # before its params are judged
        ]
        await client.notify("session/cancel", {"sessionId": "sess_x"})  # ignored
        unknown = await client.error("nonsense", {})
        await client.initialize()
        listed = await client.result("session/list", {})
    assert [e["code"] for e in early] == [-32600] * 4
    assert all("initialize" in e["message"] for e in early)
    assert unknown["code"] == -32601
    assert listed == {"sessions": []}


async def test_a_subclass_handler_serves_its_method(tmp_path: Any) -> None:
    """The method table of a connection class binds that class's own handlers."""
    import anyio

    from wireproto.adapters.acp import AgentConnection
    from wireproto.agent.runtime import Runtime
    from wireproto.transports.memory import memory_pair

    from ..conftest import RawAcp

    seen: list[int] = []

    class Counting(AgentConnection):
        async def _initialize(self, p: Any) -> Any:
            seen.append(p.protocol_version)
            return await super()._initialize(p)

    ours, theirs = memory_pair()
    connection = Counting(Runtime(DemoAgent(), tmp_path / "sessions"))
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: connection.serve(theirs, stop=stop))
        client = RawAcp(ours)
        assert "agentCapabilities" in await client.initialize()
        stop.set()
    await ours.aclose()
    assert seen == [1]
