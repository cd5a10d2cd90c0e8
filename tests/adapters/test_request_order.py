"""A client handles the agent's request after the notifications sent before it.

An agent streams text, starts a tool call, then asks to approve it: a UI must
show the tool call before it asks about it (the connect command printed the
approval prompt first over ACP).
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from wireproto.adapters.acp import ClientConnection, schema, serve_acp
from wireproto.adapters.wire import WireClient, messages, serve_wire
from wireproto.agent import Agent, AgentInfo, Decision, StopReason, Turn
from wireproto.transports import memory_pair

pytestmark = pytest.mark.anyio
WORDS = 40


async def slow_ui() -> None:
    """A UI that takes its time to show each notification (the reader runs ahead)."""
    for _ in range(10):
        await anyio.lowlevel.checkpoint()


class Asker(Agent):
    info = AgentInfo(name="asker", version="1.0")

    async def prompt(self, turn: Turn) -> StopReason:
        for n in range(WORDS):
            await turn.say(f"w{n} ")
        call = await turn.start_tool("write", "Write out.txt")
        approval = await turn.request_approval(call, "write", "Write out.txt")
        await (call.complete() if approval.decision is Decision.ALLOW_ONCE
               else call.fail("rejected"))
        return StopReason.END_TURN


async def test_acp_permission_comes_after_the_updates_before_it() -> None:
    seen: list[str] = []
    at_permission: list[list[str]] = []

    async def on_update(event: Any) -> None:
        await slow_ui()
        update = event.update
        if isinstance(update, schema.AgentMessageChunk):
            assert isinstance(update.content, schema.TextContent)
            seen.append(update.content.text)
        elif isinstance(update, schema.ToolCall):
            seen.append("tool")

    async def on_permission(request: schema.RequestPermissionRequest) -> str:
        at_permission.append(list(seen))
        return request.options[0].option_id

    ours, theirs = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_acp, Asker(), theirs)
        async with ClientConnection(ours, on_update=on_update,
                                    on_permission=on_permission) as client:
            await client.initialize()
            session = await client.new_session("/tmp")
            async with client.prompt(session.session_id, "go") as turn:
                await turn.collect()
        tg.cancel_scope.cancel()
    assert at_permission == [[f"w{n} " for n in range(WORDS)] + ["tool"]]


async def test_wire_approval_comes_after_the_events_before_it() -> None:
    seen: list[str] = []
    at_approval: list[list[str]] = []

    async def on_event(event: Any) -> None:
        await slow_ui()
        if isinstance(event, messages.TextPart):
            seen.append(event.text)
        elif isinstance(event, messages.ToolCall):
            seen.append("tool")

    async def on_approval(request: messages.ApprovalRequest) -> str:
        at_approval.append(list(seen))
        return "approve"

    ours, theirs = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_wire, Asker(), theirs)
        async with WireClient(ours, on_event=on_event, on_approval=on_approval) as client:
            await client.initialize()
            assert (await client.prompt("go")).status == "finished"
        tg.cancel_scope.cancel()
    assert at_approval == [[f"w{n} " for n in range(WORDS)] + ["tool"]]
