"""Slash commands dispatched to handlers; "allow for the session" remembered by the runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from wireproto.agent.api import Agent, Decision, SlashCommand, command
from wireproto.agent.content import Text
from wireproto.agent.events import StopReason
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.agent.turn import Turn
from wireproto.testing import RecordingChannel

pytestmark = pytest.mark.anyio


async def _shout(turn: Turn, text: str) -> StopReason:
    await turn.say(text.upper())
    return StopReason.MAX_TOKENS


class Commanded(Agent):
    commands = (SlashCommand("shout", "Shout", handler=_shout),
                SlashCommand("plain", "Handled by prompt()"))

    @command("echo", "Echo the input", aliases=("e",), input_hint="TEXT")
    async def echo(self, turn: Turn, text: str) -> None:
        await turn.say(f"echo: {text}")

    async def prompt(self, turn: Turn) -> StopReason:
        await turn.say(f"prompt: {turn.text}")
        return StopReason.END_TURN


@pytest.mark.parametrize(("text", "reply", "stop"), [
    ("/shout hey", "HEY", StopReason.MAX_TOKENS),
    ("/echo  two words ", "echo: two words", StopReason.END_TURN),
    ("/e x", "echo: x", StopReason.END_TURN),
    ("/plain x", "prompt: /plain x", StopReason.END_TURN),
    ("/unknown x", "prompt: /unknown x", StopReason.END_TURN),
    ("echo x", "prompt: echo x", StopReason.END_TURN),
])
async def test_commands_run_their_handlers(
    store: JsonlStore, workdir: Path, text: str, reply: str, stop: StopReason
) -> None:
    runtime = Runtime(Commanded(), store)
    channel = RecordingChannel()
    session = await runtime.new_session(channel, str(workdir))
    assert await runtime.prompt(session, [Text(text)]) is stop
    assert channel.text(session.id) == reply


def test_decorated_commands_are_advertised() -> None:
    names = [(c.name, c.aliases, c.input_hint) for c in Commanded.commands]
    assert names == [("shout", (), None), ("plain", (), None), ("echo", ("e",), "TEXT")]


class Writer(Agent):
    async def prompt(self, turn: Turn) -> StopReason:
        tool = turn.text
        call = await turn.start_tool(tool, f"Using {tool}")
        approval = await turn.request_approval(call, tool, f"Use {tool}")
        await turn.say(approval.decision.value)
        await call.complete()
        return StopReason.END_TURN


async def test_allow_for_the_session_is_remembered_per_session_and_tool(
    store: JsonlStore, workdir: Path
) -> None:
    runtime = Runtime(Writer(), store)
    channel = RecordingChannel(decision=Decision.ALLOW_SESSION)
    first = await runtime.new_session(channel, str(workdir))
    other = await runtime.new_session(channel, str(workdir))

    async def run(session: object, tool: str) -> str:
        channel.clear()
        await runtime.prompt(session, [Text(tool)])  # type: ignore[arg-type]
        asked = [c for c in channel.calls if c.method == "request_approval"]
        return f"{channel.text()} asked={len(asked)}"

    assert await run(first, "write") == "allow_session asked=1"
    channel.decision = Decision.REJECT  # would refuse, if it were asked
    assert await run(first, "write") == "allow_session asked=0"
    assert await run(first, "shell") == "reject asked=1"  # another tool
    assert await run(other, "write") == "reject asked=1"  # another session
    first.forget_approvals("write")
    assert await run(first, "write") == "reject asked=1"
    assert first.allowed_tools == set()
