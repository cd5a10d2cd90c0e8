"""Progress a turn reports besides its reply: titles, retries, compaction, sub-agents...

:class:`Activity` is a mixin of :class:`~wireproto.agent.turn.Turn`; each
method emits one of the events of :mod:`wireproto.agent.events` and the
adapters render it in their protocol's terms:

=========================  ================================  =====================================
method                     Wire                              ACP
=========================  ================================  =====================================
``set_title``              nothing (Wire has no titles)      ``session_info_update`` (+ the list)
``retry``                  ``StepRetry``                     a ``warning`` notice (if advertised)
``compaction`` (context)   ``CompactionBegin`` / ``End``     ``compaction_update`` if advertised,
                                                             else a notice
``side_question``          ``BtwBegin`` / ``BtwEnd``         nothing
``stream_arguments``       ``ToolCallPart``                  ``tool_call_update`` ``rawInput``
``set_commands``           nothing (fixed at ``initialize``) ``available_commands_update``
``subagent``               ``SubagentEvent`` (nested)        the parent tool call's content, and
                                                             the sub-agent's own tool calls
=========================  ================================  =====================================
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from wireproto.agent.api import SlashCommand
from wireproto.agent.events import (
    AgentMessageChunk,
    CommandsChanged,
    CompactionEnded,
    CompactionStarted,
    Event,
    SideQuestionEnded,
    SideQuestionStarted,
    SlashCommandInfo,
    StepRetried,
    SubagentEvent,
    ThoughtChunk,
    TitleChanged,
    ToolArgumentsChunk,
)

if TYPE_CHECKING:
    from wireproto.agent.api import Session
    from wireproto.agent.turn import ToolCall

__all__ = ["Activity", "Subagent", "text_of"]


class Subagent:
    """A sub-agent working inside a tool call (from :meth:`Activity.subagent`).

    Attributes:
        parent: the tool call it works for.
        agent_id / subagent_type: how it is identified to clients, if at all.
    """

    def __init__(
        self, turn: Activity, parent: ToolCall, agent_id: str | None, subagent_type: str | None
    ) -> None:
        self.turn = turn
        self.parent = parent
        self.agent_id = agent_id
        self.subagent_type = subagent_type
        self._message_id = f"msg_{uuid.uuid4().hex[:16]}"
        self._thought_id = f"thought_{uuid.uuid4().hex[:16]}"

    async def emit(self, event: Event) -> None:
        """Send one of the sub-agent's events, wrapped for the parent call."""
        await self.turn.emit(
            SubagentEvent(
                parent_tool_call_id=self.parent.id, event=event, agent_id=self.agent_id,
                subagent_type=self.subagent_type,
            )
        )

    async def say(self, text: str) -> None:
        """Stream a chunk of the sub-agent's reply."""
        if text.__class__ is not str:  # (inline: a call per chunk costs more than the test)
            text = text_of(text, "Subagent.say")
        await self.emit(AgentMessageChunk(text=text, message_id=self._message_id))

    async def think(self, text: str) -> None:
        """Stream a chunk of the sub-agent's reasoning."""
        if text.__class__ is not str:
            text = text_of(text, "Subagent.think")
        await self.emit(ThoughtChunk(text=text, message_id=self._thought_id))


def text_of(text: str, method: str) -> str:
    """``text`` itself; a ``TypeError`` naming ``method`` when it is not a str.

    (A chunk is sent as it is: an int would go out as a JSON number, which
    clients drop as invalid, and the reply would silently vanish.)
    """
    if not isinstance(text, str):
        raise TypeError(f"{method}() takes a str, not {type(text).__name__}")
    return text


class Activity:
    """Progress reporting of :class:`~wireproto.agent.turn.Turn` (a mixin).

    The turn provides :attr:`session` and :meth:`emit`.
    """

    session: Session

    async def emit(self, event: Event) -> None:  # provided by Turn
        raise NotImplementedError

    async def set_title(self, title: str) -> None:
        """Name the session (replacing the title taken from the first prompt).

        Recorded: a later load and the session list show it.
        """
        title = text_of(title, "Turn.set_title")
        self.session.title = title
        await self.emit(TitleChanged(title=title))

    async def retry(
        self,
        n: int,
        next_attempt: int,
        max_attempts: int,
        *,
        wait_s: float = 0.0,
        error_type: str = "",
        status_code: int | None = None,
    ) -> None:
        """Report that step ``n`` failed recoverably and is retried (attempt ``next_attempt``).

        Clients discard the partial output of the failed attempt.
        """
        await self.emit(
            StepRetried(
                n=n, next_attempt=next_attempt, max_attempts=max_attempts, wait_s=wait_s,
                error_type=error_type, status_code=status_code,
            )
        )

    @asynccontextmanager
    async def compaction(self) -> AsyncIterator[list[str]]:
        """Bracket a context compaction: ``async with turn.compaction() as summary:``.

        Append the summary text to the yielded list (optional); an exception
        inside the block reports the compaction failed and propagates.
        """
        compaction_id = f"compaction_{uuid.uuid4().hex[:16]}"
        await self.emit(CompactionStarted(id=compaction_id))
        summary: list[str] = []
        try:
            yield summary
        except Exception as exc:
            await self.emit(CompactionEnded(id=compaction_id, summary="".join(summary),
                                            error=str(exc) or type(exc).__name__))
            raise
        await self.emit(CompactionEnded(id=compaction_id, summary="".join(summary)))

    async def side_question(self, question: str, response: str | None = None,
                            error: str | None = None, *, id: str = "") -> str:
        """Report a side question and its answer (both at once when ``response`` is given).

        Returns:
            its id; pass it to :meth:`side_answer` when the answer comes later.
        """
        side_id = id or f"btw_{uuid.uuid4().hex[:16]}"
        await self.emit(SideQuestionStarted(id=side_id, question=question))
        if response is not None or error is not None:
            await self.side_answer(side_id, response, error)
        return side_id

    async def side_answer(self, id: str, response: str | None = None,
                          error: str | None = None) -> None:
        """Answer (or fail) the side question ``id``."""
        await self.emit(SideQuestionEnded(id=id, response=response, error=error))

    async def stream_arguments(self, call: ToolCall, part: str) -> None:
        """Stream a piece of ``call``'s arguments (JSON text), as the model writes it.

        Only for the call started last: Wire appends the piece to it.
        """
        await self.emit(ToolArgumentsChunk(id=call.id, part=part))

    async def set_commands(self, commands: Sequence[SlashCommand]) -> None:
        """Replace the session's slash commands (e.g. after loading a plugin)."""
        await self.emit(
            CommandsChanged(
                commands=[SlashCommandInfo(c.name, c.description, c.input_hint) for c in commands]
            )
        )

    def subagent(
        self, parent: ToolCall, *, agent_id: str | None = None, subagent_type: str | None = None
    ) -> Subagent:
        """A sub-agent working for ``parent``: its events are shown inside that call."""
        return Subagent(self, parent, agent_id, subagent_type)
