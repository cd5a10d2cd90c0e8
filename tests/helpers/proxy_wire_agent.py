"""A Wire-served test agent for the proxy's mapping rows the demo agent lacks:
usage, further steps, a failed tool call with text output, a question, max steps."""

from __future__ import annotations

from wireproto.agent.api import Agent, AgentInfo, Question
from wireproto.agent.events import StopReason, ToolStatus
from wireproto.agent.turn import Turn


class ProxyTestAgent(Agent):
    info = AgentInfo(name="proxy-test", version="1")

    async def prompt(self, turn: Turn) -> StopReason:
        if turn.text == "ask":
            answer = await turn.ask(Question("Which?", ("left", "right")))
            await turn.say(f"answer: {answer}")
            return StopReason.END_TURN
        await turn.usage(used=1200, size=8000, input_tokens=1000, output_tokens=200,
                         cache_read_tokens=5, cache_write_tokens=7)
        await turn.say("step one")
        await turn.new_step()
        call = await turn.start_tool("grep", "grep", status=ToolStatus.IN_PROGRESS,
                                     raw_input={"pattern": "x"})
        await call.fail("no match")
        await turn.say("step two")
        return StopReason.MAX_STEPS if turn.text == "limit" else StopReason.END_TURN


def agent() -> ProxyTestAgent:
    return ProxyTestAgent()
