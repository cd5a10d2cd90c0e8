"""Interop: our client drives an agent built on the official Python SDK (0.12.1).

The agent is ``tests/helpers/acp_sdk_agent.py``, spawned as a real child
process by :func:`connect_acp`; its commands and the way it reports results
(agent message chunks) are described in its module docstring.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.client.connect import connect_acp
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.fs import LocalFileSystem
from wireproto.adapters.acp.client.state import option_of_kind
from wireproto.adapters.acp.client.terminals import LocalTerminals

pytestmark = pytest.mark.anyio

SDK_AGENT = [sys.executable, str(Path(__file__).resolve().parents[3] / "helpers"
                                 / "acp_sdk_agent.py")]


@asynccontextmanager
async def sdk_session(cwd: Path, **options: Any) -> AsyncIterator[tuple[ClientConnection, str]]:
    """A client connected to the SDK agent, with one session in ``cwd``."""
    async with connect_acp(SDK_AGENT, **options) as client:
        info = client.initialize_response
        assert info is not None and isinstance(info.agent_info, S.Implementation)
        assert info.agent_info.name == "sdk-agent"
        session = await client.new_session(str(cwd))
        yield client, session.session_id


async def run(client: ClientConnection, sid: str, prompt: str) -> tuple[list[Any], str | None]:
    """One turn: (updates, stop reason)."""
    async with client.prompt(sid, prompt) as turn:
        updates = await turn.collect()
    return updates, turn.stop_reason


def said(updates: list[Any]) -> list[str]:
    """The text of the agent's message chunks."""
    return [u.content.text for u in updates if isinstance(u, S.AgentMessageChunk)]


async def test_streamed_updates_arrive_in_order_and_capabilities_match(tmp_path: Path) -> None:
    options = dict(file_system=LocalFileSystem(), terminals=LocalTerminals())
    async with sdk_session(tmp_path, **options) as (client, sid):
        updates, stop = await run(client, sid, "stream 40")
        assert stop == "end_turn"
        assert said(updates) == [f"chunk {i}" for i in range(40)]
        updates, _ = await run(client, sid, "caps")
        caps = json.loads(said(updates)[0])
        assert caps["fs"] == {"readTextFile": True, "writeTextFile": True}
        assert caps["terminal"] is True


async def test_permission_allow_and_reject(tmp_path: Path) -> None:
    kinds = ["allow_once", "reject_once"]
    asked: list[S.RequestPermissionRequest] = []

    async def decide(request: S.RequestPermissionRequest) -> str:
        asked.append(request)
        option = option_of_kind(request, kinds.pop(0))  # type: ignore[arg-type]
        assert option is not None
        return option.option_id

    async with sdk_session(tmp_path, on_permission=decide) as (client, sid):
        updates, stop = await run(client, sid, "permission")
        assert stop == "end_turn"
        assert isinstance(updates[0], S.ToolCall) and updates[0].tool_call_id == "tc-1"
        assert said(updates) == ["selected allow"]
        updates, _ = await run(client, sid, "permission")
        assert said(updates) == ["selected deny"]
    assert [r.tool_call.tool_call_id for r in asked] == ["tc-1", "tc-1"]


async def test_files_and_terminals_through_our_default_handlers(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    options = dict(file_system=LocalFileSystem(), terminals=LocalTerminals())
    async with sdk_session(work, **options) as (client, sid):
        target = work / "sub" / "note.txt"
        updates, _ = await run(client, sid, f"write {target} héllo wörld")
        assert said(updates) == ["written"]
        assert target.read_text(encoding="utf-8") == "héllo wörld"
        updates, _ = await run(client, sid, f"read {target}")
        assert said(updates) == ["héllo wörld"]
        for path, code in ((outside / "secret.txt", -32602), (work / "nope.txt", -32002)):
            updates, _ = await run(client, sid, f"read {path}")
            assert said(updates) == [f"error {code}"]
        updates, _ = await run(client, sid, f"write {outside / 'secret.txt'} overwritten")
        assert said(updates) == ["error -32602"]
        assert (outside / "secret.txt").read_text() == "secret"

        spec = {"command": sys.executable, "args": ["-c", "print('é' * 100)"], "limit": 11}
        updates, _ = await run(client, sid, "terminal " + json.dumps(spec))
        summary = json.loads(said(updates)[0])
        assert summary == {"exit_code": 0, "signal": None, "output": "é" * 5 + "\n",
                           "truncated": True, "exited": True, "after_release": -32002}

        spec = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"],
                "kill": True}
        updates, _ = await run(client, sid, "terminal " + json.dumps(spec))
        summary = json.loads(said(updates)[0])
        assert (summary["exit_code"], summary["signal"]) == (None, "SIGKILL")


async def test_cancel_during_a_pending_permission_request(tmp_path: Path) -> None:
    """We answer ``cancelled`` ourselves; the SDK agent ends the turn ``cancelled``."""
    asked = anyio.Event()

    async def wait_forever(request: S.RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with sdk_session(tmp_path, on_permission=wait_forever) as (client, sid):
        async with client.prompt(sid, "permission") as turn:
            async with anyio.create_task_group() as tg:

                async def cancel_when_asked() -> None:
                    await asked.wait()
                    await client.cancel(sid)

                tg.start_soon(cancel_when_asked)
                updates = await turn.collect()
        assert turn.stop_reason == "cancelled"
        assert said(updates) == ["cancelled"]
        updates, stop = await run(client, sid, "stream 2")  # the session is still usable
        assert (said(updates), stop) == (["chunk 0", "chunk 1"], "end_turn")
