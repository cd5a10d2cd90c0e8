"""The demo agent's commands for questions, titles, retries and sub-agents.

``/ask``, ``/title``, ``/retry`` and ``/subagent`` of the demo contract
(``docs/demo-agent.md``); :mod:`wireproto.agent.demo` lists them in its
command table. Decisions the contract leaves open:

* ``/ask`` takes the question up to and including the first ``?`` and 2-4
  options split on ``|`` (blanks trimmed); anything else replies the usage.
  It passes no tool call (Wire's ``QuestionRequest`` gets a fresh id).
* ``/retry`` reports step 1 failing with ``TimeoutError``, retried at once
  (``wait_s`` 0) as attempt 2 of 3.
* ``/subagent`` streams TEXT in up to four chunks (sub-agent type ``demo``),
  then completes the tool call with TEXT as its content.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from wireproto.agent.api import Question, SlashCommand
from wireproto.agent.content import Text
from wireproto.agent.events import ToolKind, ToolStatus
from wireproto.agent.questions import AskStatus
from wireproto.agent.turn import Turn

__all__ = ["EXTRA_COMMANDS"]

Handler = Callable[[Turn, str], Awaitable[None]]


def pieces(text: str, parts: int = 4) -> list[str]:
    """Split ``text`` into up to ``parts`` chunks (two or more when it has 2+ characters)."""
    if len(text) < 2:
        return [text]
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def parse_ask(args: str) -> Question | None:
    """``"Which? a|b"`` -> the question; ``None`` when malformed."""
    mark = args.find("?")
    if mark < 0:
        return None
    text = args[: mark + 1].strip()
    options = tuple(o.strip() for o in args[mark + 1 :].split("|") if o.strip())
    if not text or not 2 <= len(options) <= 4 or len(set(options)) != len(options):
        return None
    return Question(text, options)


async def _ask(turn: Turn, args: str) -> None:
    question = parse_ask(args)
    if question is None:
        await turn.say("Usage: /ask QUESTION? OPTION1|OPTION2[|...]")
        return
    answers = await turn.ask_questions([question])
    if answers.status is AskStatus.UNSUPPORTED:
        await turn.say("Questions are not supported by this client")
    elif answers.answered and answers.of(0):
        await turn.say(f"You chose: {', '.join(answers.of(0))}")
    else:
        await turn.say("No answer")


async def _title(turn: Turn, args: str) -> None:
    title = args.strip()
    if not title:
        await turn.say("Usage: /title TEXT")
        return
    await turn.set_title(title)
    await turn.say("Title set")


async def _retry(turn: Turn, args: str) -> None:
    await turn.retry(1, 2, 3, wait_s=0.0, error_type="TimeoutError")
    await turn.say("Recovered")


async def _subagent(turn: Turn, args: str) -> None:
    text = args.strip()
    if not text:
        await turn.say("Usage: /subagent TEXT")
        return
    call = await turn.start_tool(
        "subagent", "Sub-agent", kind=ToolKind.THINK, status=ToolStatus.IN_PROGRESS,
        raw_input={"text": text},
    )
    sub = turn.subagent(call, subagent_type="demo")
    for piece in pieces(text):
        await sub.say(piece)
    await call.complete([Text(text)])
    await turn.say("Subagent done")


EXTRA_COMMANDS: tuple[tuple[SlashCommand, Handler], ...] = (
    (SlashCommand("ask", "Ask a multiple-choice question",
                  input_hint="QUESTION? OPTION1|OPTION2[|...]"), _ask),
    (SlashCommand("title", "Set the session title", input_hint="TEXT"), _title),
    (SlashCommand("retry", "Report a retried step, then recover"), _retry),
    (SlashCommand("subagent", "Let a sub-agent say TEXT in a tool call", input_hint="TEXT"),
     _subagent),
)
"""The commands of this module, for the demo's command table."""
