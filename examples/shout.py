"""A complete agent, served over ACP and Wire alike (see the README)."""

from wireproto.agent import Agent, AgentInfo, SlashCommand, StopReason, ToolKind, Turn


class Shout(Agent):
    info = AgentInfo(name="shout", version="1.0")
    commands = (SlashCommand("whisper", "Reply in lower case"),)

    async def prompt(self, turn: Turn) -> StopReason:
        text = turn.text
        if text.startswith("/whisper "):
            await turn.say(text.removeprefix("/whisper ").lower())
            return StopReason.END_TURN
        call = await turn.start_tool("shout", "Shouting", kind=ToolKind.THINK)
        for word in text.split():
            await turn.say(word.upper() + " ")  # streamed chunks, one message id
        await call.complete()
        return StopReason.END_TURN


agent = Shout()  # wireproto acp --agent examples/shout.py:agent  (or: wireproto wire ...)
