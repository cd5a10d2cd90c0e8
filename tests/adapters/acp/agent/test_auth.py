"""Authentication: ``authenticate`` and ``require_auth`` gating per connection.

Protocol rules: protocol-acp.md#authentication; demo behaviour: docs/demo-agent.md
"Authentication (ACP)".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime

from ..conftest import OpenAcp

pytestmark = pytest.mark.anyio

GATED = ["session/new", "session/load", "session/resume", "session/list", "session/delete"]


def _params(method: str, workdir: Path) -> dict[str, Any]:
    return {
        "session/new": {"cwd": str(workdir), "mcpServers": []},
        "session/load": {"sessionId": "sess_a", "cwd": str(workdir), "mcpServers": []},
        "session/resume": {"sessionId": "sess_a", "cwd": str(workdir)},
        "session/list": {},
        "session/delete": {"sessionId": "sess_a"},
    }[method]


async def test_login_without_a_token_fails(acp: OpenAcp) -> None:
    async with acp() as client:
        await client.initialize()
        error = await client.error("authenticate", {"methodId": "login"})
        unknown = await client.error("authenticate", {"methodId": "oauth"})
    assert error["code"] == -32000
    assert unknown["code"] == -32602


async def test_login_with_a_token(
    acp: OpenAcp, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    async with acp() as client:
        await client.initialize()
        monkeypatch.setenv("WIREPROTO_TOKEN", "t0k3n")
        assert await client.result("authenticate", {"methodId": "login"}) == {}
        monkeypatch.delenv("WIREPROTO_TOKEN")
        await anyio.Path(home).mkdir(parents=True, exist_ok=True)
        await anyio.Path(home / "token").write_text("secret")
        assert await client.result("authenticate", {"methodId": "login"}) == {}


@pytest.mark.parametrize("via", ["serve", "agent"])
async def test_require_auth_gates_sessions_until_login(
    acp: OpenAcp, workdir: Path, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    monkeypatch.setenv("WIREPROTO_TOKEN", "t0k3n")
    options: dict[str, Any] = {"require_auth": True} if via == "serve" else {}
    agent = DemoAgent(require_auth=via == "agent")
    async with acp(agent, **options) as client:
        await client.initialize()
        errors = [await client.error(m, _params(m, workdir)) for m in GATED]
        await client.result("authenticate", {"methodId": "login"})
        sid = (await client.new_session(str(workdir)))["sessionId"]
        listed = await client.result("session/list", {})
    assert {e["code"] for e in errors} == {-32000}
    assert [s["sessionId"] for s in listed["sessions"]] == [sid]


async def test_authentication_is_per_connection(
    acp: OpenAcp, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIREPROTO_TOKEN", "t0k3n")
    runtime = Runtime(DemoAgent())
    async with acp(runtime, require_auth=True) as first, \
            acp(runtime, require_auth=True) as second:
        await first.initialize()
        await second.initialize()
        await first.result("authenticate", {"methodId": "login"})
        await first.new_session(str(workdir))
        error = await second.error("session/list", {})
    assert error["code"] == -32000


async def test_failed_login_keeps_the_gate(acp: OpenAcp, workdir: Path) -> None:
    async with acp(require_auth=True) as client:
        await client.initialize()
        await client.error("authenticate", {"methodId": "login"})
        error = await client.error("session/new", _params("session/new", workdir))
    assert error["code"] == -32000
