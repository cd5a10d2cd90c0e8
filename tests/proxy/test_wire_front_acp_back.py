"""Wire front, ACP backend: a real ``wireproto proxy --serve wire`` process in front of
the real demo agent served over ACP, driven by our Wire client."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire import serve_wire
from wireproto.adapters.wire.client.connection import WireClient
from wireproto.adapters.wire.display import TodoDisplayBlock
from wireproto.adapters.wire.methods import ExternalTool
from wireproto.errors import RpcError
from wireproto.host.channel import ADDRESS_ENV, TOKEN_ENV
from wireproto.proxy.acpback import AcpBackedAgent
from wireproto.transports.memory import memory_pair
from wireproto.transports.subprocess import REDACTED, open_subprocess

pytestmark = pytest.mark.anyio

WIREPROTO = [sys.executable, "-m", "wireproto"]
HELPERS = Path(__file__).resolve().parent.parent / "helpers"


def _proxy_in_front_of_the_mcp_agent(workdir: Path) -> list[str]:
    """``proxy --wire`` serving Wire in front of the helpers' ACP agent that lists its MCP tools."""
    return [*WIREPROTO, "proxy", "--agent-protocol", "acp", "--work-dir", str(workdir),
            "--wire", "--", *WIREPROTO, "acp", "--agent", "proxy_mcp_agent:agent",
            "--allow-client-stdio-mcp"]


@asynccontextmanager
async def proxied(tmp_path: Path, *extra: str, on_approval: Any = None
                  ) -> AsyncIterator[WireClient]:
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}
    cmd = [*WIREPROTO, "proxy", "--agent-protocol", "acp", "--work-dir", str(tmp_path),
           *extra, "--wire", "--", *WIREPROTO, "acp"]
    async with open_subprocess(cmd, env=env, stderr="log") as child, \
            WireClient(child, on_approval=on_approval) as wire:
        assert await wire.initialize() is not None
        yield wire


def _text(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, m.TextPart))


async def test_text_commands_plan_and_status(tmp_path: Path) -> None:
    async with proxied(tmp_path) as wire:
        result = await wire.prompt("hello wire")
        assert result.status == "finished"
        events = wire.take_events()
        assert _text(events) == "You said: hello wire"
        assert isinstance(events[0], m.TurnBegin) and isinstance(events[-1], m.TurnEnd)
        # plans -> SetTodoList tool call + result with a todo display
        await wire.prompt("/plan")
        events = wire.take_events()
        todos = [b for e in events if isinstance(e, m.ToolResult)
                 for b in e.return_value.display if isinstance(b, TodoDisplayBlock)]
        assert [i.status for i in todos[-1].items] == ["done"] * 3
        calls = [e for e in events if isinstance(e, m.ToolCall)]
        assert calls and calls[0].function.name == "SetTodoList"
        # slash commands: the backend's available_commands_update, known by now
        assert {"plan", "write"} <= {c.name for c in wire.slash_commands}


async def test_approvals_map_to_permission_options(tmp_path: Path) -> None:
    answers = ["approve", "reject", "approve_for_session"]
    asked: list[m.ApprovalRequest] = []

    async def on_approval(request: m.ApprovalRequest) -> Any:
        asked.append(request)
        return answers[len(asked) - 1]

    async with proxied(tmp_path, on_approval=on_approval) as wire:
        await wire.prompt("/write a.txt one")
        assert (tmp_path / "a.txt").read_text() == "one"
        assert _text(wire.take_events()) == "Wrote a.txt"
        await wire.prompt("/write b.txt two")
        events = wire.take_events()
        assert _text(events) == "Write to b.txt rejected"
        results = [e for e in events if isinstance(e, m.ToolResult)]
        assert results and results[0].return_value.is_error
        await wire.prompt("/write c.txt three")
        await wire.prompt("/write d.txt four")
        assert len(asked) == 3 and (tmp_path / "d.txt").read_text() == "four"


async def test_cancel_and_resume_with_session(tmp_path: Path) -> None:
    async with proxied(tmp_path, "--session", "front-1") as wire:
        async with anyio.create_task_group() as tg:
            status: list[str] = []

            async def run() -> None:
                status.append((await wire.prompt("/slow 1000000")).status)

            tg.start_soon(run)
            async for event in wire.events():
                if isinstance(event, m.TextPart):
                    await wire.cancel()
                    break
        assert status == ["cancelled"]
        assert (await wire.prompt("after")).status == "finished"
        assert "You said: after" in _text(wire.take_events())
    # a new proxy resumes the same backend session by the front id
    async with proxied(tmp_path, "--session", "front-1") as wire:
        replay = await wire.replay()
        assert replay is not None
        assert "You said: after" in _text(wire.take_events())
        assert (await wire.prompt("third")).status == "finished"


async def test_external_tools_reach_the_acp_backend_as_an_mcp_server(tmp_path: Path) -> None:
    helpers = HELPERS
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([str(helpers), os.environ.get("PYTHONPATH", "")])}
    seen: list[Any] = []

    async def lookup(arguments: Any) -> str:
        seen.append(arguments)
        return f"value of {arguments['key']}"

    tool = ExternalTool(name="lookup", description="Look a key up",
                        parameters={"type": "object", "properties": {"key": {"type": "string"}},
                                    "required": ["key"]})
    cmd = _proxy_in_front_of_the_mcp_agent(tmp_path)
    async with open_subprocess(cmd, env=env, stderr="log") as child, \
            WireClient(child, external_tools={"lookup": (tool, lookup)}) as wire:
        await wire.initialize()
        result = await wire.prompt('/call lookup {"key": "k1"}')
        assert result.status == "finished"
        events = wire.take_events()
    assert seen == [{"key": "k1"}]
    assert _text(events) == "tools ['lookup']; lookup -> value of k1"
    calls = [e for e in events if isinstance(e, m.ToolCall)]
    results = [e for e in events if isinstance(e, m.ToolResult)]
    assert len(calls) == 1 and [r.tool_call_id for r in results] == [calls[0].id]



async def test_tools_are_still_offered_after_a_first_prompt_cancelled_while_offering(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home"), "SLOW_MCP_SESSION": "1",
           "PYTHONPATH": os.pathsep.join([str(HELPERS), os.environ.get("PYTHONPATH", "")])}

    async def lookup(arguments: Any) -> str:
        return f"value of {arguments['key']}"

    tool = ExternalTool(name="lookup", description="Look a key up",
                        parameters={"type": "object", "properties": {"key": {"type": "string"}}})
    cmd = _proxy_in_front_of_the_mcp_agent(tmp_path)
    async with open_subprocess(cmd, env=env, stderr="log") as child, \
            WireClient(child, external_tools={"lookup": (tool, lookup)}) as wire:
        await wire.initialize()
        async with anyio.create_task_group() as tg:
            status: list[str] = []

            async def first() -> None:  # its backend session with the tools takes 1 s
                status.append((await wire.prompt("hello")).status)

            tg.start_soon(first)
            async for event in wire.events():
                if isinstance(event, m.StepBegin):  # the offer is under way: cancelled in it
                    await wire.cancel()
                    break
        assert status == ["cancelled"]
        result = await wire.prompt('/call lookup {"key": "k1"}')
        assert result.status == "finished"
        assert _text(wire.take_events()).endswith("tools ['lookup']; lookup -> value of k1")

async def test_a_bridge_credential_the_backend_prints_is_masked_in_its_logged_stderr(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="wireproto.transports.subprocess.stderr")
    env = {**os.environ, "PRINT_MCP_ENV": "1",
           "PYTHONPATH": os.pathsep.join([str(HELPERS), os.environ.get("PYTHONPATH", "")])}
    agent = AcpBackedAgent([*WIREPROTO, "acp", "--agent", "proxy_mcp_agent:agent",
                            "--allow-client-stdio-mcp"], env=env)
    tool = ExternalTool(name="lookup", description="Look a key up", parameters={})
    ours, theirs = memory_pair()
    minted: list[str] = []
    mint = agent.bridge.credentials.mint

    def keep(caller: Any) -> str:  # (the credential, to look for it in the log)
        minted.append(mint(caller))
        return minted[-1]

    agent.bridge.credentials.mint = keep  # type: ignore[method-assign]

    def printed() -> list[str]:
        return [r.getMessage() for r in caplog.records if "mcp server" in r.getMessage()]

    async with agent.running(), anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(serve_wire, agent, theirs, work_dir=str(tmp_path)))
        async with WireClient(ours, external_tools={"lookup": (tool, None)}) as wire:
            await wire.initialize()  # the backend and its first session start here
            backend = agent.process
            assert backend is not None and not printed()
            assert (await wire.prompt("hello")).status == "finished"  # offered: a new session
        tg.cancel_scope.cancel()
    # (the backend has exited and its stderr was read to the end)
    tail = list(backend.stderr_tail)
    assert len(minted) == 1 and len(printed()) == 1
    line = printed()[0]
    assert f"{TOKEN_ENV}={REDACTED}" in line and f"{ADDRESS_ENV}=127.0.0.1:" in line
    assert any(f"{TOKEN_ENV}={REDACTED}" in kept for kept in tail)
    assert minted[0] not in caplog.text and not any(minted[0] in kept for kept in tail)


async def test_model_flag_reaches_the_backend_option_and_plan_mode_is_refused(
    tmp_path: Path
) -> None:
    async with proxied(tmp_path, "--model", "demo-large", "--session", "opt-1") as wire:
        assert (await wire.prompt("hi")).status == "finished"
        # the demo agent has no mode named like plan: set_plan_mode is refused clearly
        with pytest.raises(RpcError) as caught:
            await wire.set_plan_mode(True)
        assert "plan" in caught.value.message.lower()
    ids = json.loads((tmp_path / "home" / "proxy-sessions" / "acp-backend-ids.json").read_text())
    backend = (tmp_path / "home" / "sessions" / f"{ids['opt-1']}.jsonl").read_text()
    assert '"option_id":"model","value":"demo-large"' in backend


async def test_steer_is_sent_as_the_next_prompt_of_the_turn(tmp_path: Path) -> None:
    clients: list[WireClient] = []

    async def steer_then_approve(request: m.ApprovalRequest) -> Any:
        await clients[0].steer("and then this")  # (the backend's turn waits for the answer)
        return "approve"

    async with proxied(tmp_path, on_approval=steer_then_approve) as wire:
        clients.append(wire)
        assert (await wire.prompt("/write s.txt first")).status == "finished"
        events = wire.take_events()
        steers = [e for e in events if isinstance(e, m.SteerInput)]
        assert [e.user_input for e in steers] == ["and then this"]
        assert _text(events).endswith("You said: and then this")
    assert (tmp_path / "s.txt").read_text() == "first"


async def test_files_stay_with_the_acp_backend(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    async with proxied(tmp_path) as wire:
        await wire.prompt("/read notes.txt")
        events = wire.take_events()
    assert _text(events) == "Read 2 lines from notes.txt"
    results = [e for e in events if isinstance(e, m.ToolResult)]
    assert results and results[0].return_value.output == "one\ntwo\n"


async def test_a_backend_turn_that_raises_shows_the_backends_exception(tmp_path: Path) -> None:
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}
    cmd = [*WIREPROTO, "proxy", "--agent-protocol", "acp", "--work-dir", str(tmp_path), "--wire",
           "--", *WIREPROTO, "acp", "--agent", f"{HELPERS / 'raising_agent.py'}:agent"]
    async with open_subprocess(cmd, env=env, stderr="log") as child, WireClient(child) as wire:
        assert await wire.initialize() is not None
        with pytest.raises(RpcError) as failed:
            await wire.prompt("hello")
        assert (failed.value.code, failed.value.message) == (-32603, "Internal error")
        assert failed.value.data == {"type": "ValueError", "message": "the model is down (hello)"}
