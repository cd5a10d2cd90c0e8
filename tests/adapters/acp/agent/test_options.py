"""Session options: ``set_mode``, ``set_config_option`` and the unstable ``set_model``.

All three go through one dispatcher and keep legacy modes and config options in sync. Protocol
rules: protocol-acp.md#modes-and-config-options, protocol-acp.md#unstable-methods and
protocol-acp.md#schema-over-docs, protocol-acp.md#unstable-methods; demo behaviour:
docs/demo-agent.md "Session options".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..conftest import OpenAcp

pytestmark = pytest.mark.anyio

BOOLEAN = {"session": {"configOptions": {"boolean": {}}}}


async def _session(client: Any, workdir: Path, caps: dict[str, Any] | None = None) -> str:
    await client.initialize(caps)
    return str((await client.new_session(str(workdir)))["sessionId"])


async def _change(client: Any, method: str, params: dict[str, Any]) -> tuple[Any, list[Any]]:
    """Call ``method``; return its response and the updates that follow it."""
    rid = await client.request(method, params)
    response = await client.response(rid)
    follow: list[Any] = []
    expected = 2 if "error" not in response and _is_mode(method, params) else 1
    last = response
    while "error" not in response and len(follow) < expected:
        last = await client.following(last)  # written right after the response
        follow.append(last["params"]["update"])
    return response, follow


def _is_mode(method: str, params: dict[str, Any]) -> bool:
    return method == "session/set_mode" or params.get("configId") == "mode"


def values(options: list[Any]) -> dict[str, Any]:
    return {o["id"]: o["currentValue"] for o in options}


async def test_set_mode_updates_mode_and_config_options(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        response, follow = await _change(
            client, "session/set_mode", {"sessionId": sid, "modeId": "code"}
        )
    assert response["result"] == {}
    assert follow[0] == {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    assert follow[1]["sessionUpdate"] == "config_option_update"
    assert values(follow[1]["configOptions"]) == {
        "mode": "code", "model": "demo-small", "thinking": "off",
    }


async def test_set_config_option_mode_keeps_modes_in_sync(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        response, follow = await _change(
            client, "session/set_config_option",
            {"sessionId": sid, "configId": "mode", "value": "code"},
        )
        load = await client.result("session/resume", {"sessionId": sid, "cwd": str(workdir)})
    assert values(response["result"]["configOptions"])["mode"] == "code"
    assert follow[0] == {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    assert follow[1]["configOptions"] == response["result"]["configOptions"]
    assert load["modes"]["currentModeId"] == "code"


async def test_set_model_by_config_option(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        response, follow = await _change(
            client, "session/set_config_option",
            {"sessionId": sid, "configId": "model", "value": "demo-large"},
        )
    assert values(response["result"]["configOptions"])["model"] == "demo-large"
    assert [u["sessionUpdate"] for u in follow] == ["config_option_update"]


async def test_unstable_set_model_is_the_same_dispatcher(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        response, follow = await _change(
            client, "session/set_model", {"sessionId": sid, "modelId": "demo-large"}
        )
        bad = await client.error("session/set_model", {"sessionId": sid, "modelId": "gpt-9"})
    assert response["result"] == {}
    assert follow[0]["sessionUpdate"] == "config_option_update"
    assert values(follow[0]["configOptions"])["model"] == "demo-large"
    assert bad["code"] == -32602


async def test_thinking_as_boolean(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, BOOLEAN)
        response, follow = await _change(
            client, "session/set_config_option",
            {"sessionId": sid, "configId": "thinking", "type": "boolean", "value": True},
        )
    options = response["result"]["configOptions"]
    assert options[2] == {"id": "thinking", "name": "Thinking", "category": "thought_level",
                          "type": "boolean", "currentValue": True}
    assert follow[0]["configOptions"] == options


async def test_thinking_select_fallback(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        response, _ = await _change(
            client, "session/set_config_option",
            {"sessionId": sid, "configId": "thinking", "value": "on"},
        )
        bad = await client.error(
            "session/set_config_option",
            {"sessionId": sid, "configId": "thinking", "value": "maybe"},
        )
    assert response["result"]["configOptions"][2]["currentValue"] == "on"
    assert response["result"]["configOptions"][2]["type"] == "select"
    assert bad["code"] == -32602


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("session/set_mode", {"modeId": "yolo"}, -32602),
        ("session/set_config_option", {"configId": "mode", "value": "yolo"}, -32602),
        ("session/set_config_option", {"configId": "colour", "value": "red"}, -32602),
        ("session/set_config_option",
         {"configId": "mode", "type": "boolean", "value": True}, -32602),
        ("session/set_config_option", {"configId": "mode"}, -32602),
    ],
)
async def test_invalid_changes(
    acp: OpenAcp, workdir: Path, method: str, params: dict[str, Any], code: int
) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        error = await client.error(method, {"sessionId": sid, **params})
        state = await client.result("session/resume", {"sessionId": sid, "cwd": str(workdir)})
    assert error["code"] == code
    assert values(state["configOptions"])["mode"] == "ask"


async def test_options_of_an_unknown_session(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error("session/set_mode", {"sessionId": "sess_x", "modeId": "code"})
    assert error["code"] == -32002
