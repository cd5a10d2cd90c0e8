"""The demo agent plus ``/ask QUESTION? A|B[|...]`` through the agent API's ``Turn.ask``.

Served with ``wireproto wire --agent asking_agent:AskingAgent`` (run from this
folder) for the inspector's question test: over Wire the question is a
``QuestionRequest``. Replies ``You chose: LABEL`` or ``No answer``.
"""

from __future__ import annotations

from wireproto.agent.api import Question, SlashCommand, StopReason
from wireproto.agent.demo import DemoAgent
from wireproto.agent.turn import Turn


class AskingAgent(DemoAgent):
    """:class:`DemoAgent` with ``/ask``."""

    commands = (*DemoAgent.commands,
                SlashCommand("ask", "Ask a question", input_hint="QUESTION? A|B"))

    async def prompt(self, turn: Turn) -> StopReason:
        text = turn.text
        if not text.startswith("/ask "):
            return await super().prompt(turn)
        question, _, options = text[5:].partition("?")
        labels = tuple(o.strip() for o in options.split("|") if o.strip())
        chosen = await turn.ask(Question(question.strip() + "?", labels))
        await turn.say(f"You chose: {', '.join(chosen)}" if chosen else "No answer")
        return StopReason.END_TURN
