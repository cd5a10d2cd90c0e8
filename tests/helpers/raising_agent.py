"""An agent whose every prompt raises, for checking how a failed turn reaches a client."""

from wireproto.agent import Agent, AgentInfo, StopReason, Turn


class Raising(Agent):
    info = AgentInfo(name="raising", version="1.0")

    async def prompt(self, turn: Turn) -> StopReason:
        raise ValueError(f"the model is down ({turn.text})")


agent = Raising()
