"""Wire rendering of the neutral progress events (:mod:`wireproto.agent.activity`).

The rules below extend the event table of :mod:`.translate`:

* ``StepRetried`` -> ``StepRetry``; ``CompactionStarted`` / ``Ended`` ->
  ``CompactionBegin`` / ``CompactionEnd`` (Wire carries no summary);
  ``SideQuestionStarted`` / ``Ended`` -> ``BtwBegin`` / ``BtwEnd``;
  ``ToolArgumentsChunk`` -> ``ToolCallPart`` (which appends to the last
  ``ToolCall``: Wire carries no id).
* ``SubagentEvent`` -> ``SubagentEvent`` whose nested envelope is the inner
  event translated by a translator of its own per parent tool call (so a
  sub-agent's tool calls get their ``ToolCall`` / ``ToolResult`` pairs);
  ``parent_tool_call_id`` is the parent's Wire id.
* ``TitleChanged`` and ``CommandsChanged`` have no Wire form: Wire 1.10 has no
  session titles, and its slash commands are fixed by the ``initialize``
  answer. They translate to nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wireproto.agent.events import (
    CommandsChanged,
    CompactionEnded,
    CompactionStarted,
    SideQuestionEnded,
    SideQuestionStarted,
    StepRetried,
    SubagentEvent,
    TitleChanged,
    ToolArgumentsChunk,
)

from . import messages as m
from .envelope import encode_event

if TYPE_CHECKING:
    from .translate import Translator

__all__ = ["ACTIVITY_RULES"]


def _subagent(tr: Translator, event: SubagentEvent) -> list[m.Event]:
    inner_tr = tr.subagents.get(event.parent_tool_call_id)
    if inner_tr is None:
        inner_tr = tr.subagents[event.parent_tool_call_id] = type(tr)(replay=tr.replay)
    parent = tr.wire_id(event.parent_tool_call_id)
    return [
        m.SubagentEvent(
            parent_tool_call_id=parent, agent_id=event.agent_id,
            subagent_type=event.subagent_type, event=encode_event(inner),
        )
        for inner in inner_tr.translate(event.event)
    ]


def _retry(tr: Translator, e: StepRetried) -> list[m.Event]:
    return [
        m.StepRetry(
            n=e.n, next_attempt=e.next_attempt, max_attempts=e.max_attempts, wait_s=e.wait_s,
            error_type=e.error_type, status_code=e.status_code,
        )
    ]


def _nothing(tr: Translator, e: Any) -> list[m.Event]:
    return []


ACTIVITY_RULES: dict[type, Callable[[Any, Any], list[m.Event]]] = {
    StepRetried: _retry,
    CompactionStarted: lambda tr, e: [m.CompactionBegin()],
    CompactionEnded: lambda tr, e: [m.CompactionEnd()],
    SideQuestionStarted: lambda tr, e: [m.BtwBegin(id=e.id, question=e.question)],
    SideQuestionEnded: lambda tr, e: [m.BtwEnd(id=e.id, response=e.response, error=e.error)],
    ToolArgumentsChunk: lambda tr, e: [m.ToolCallPart(arguments_part=e.part)],
    SubagentEvent: _subagent,
    TitleChanged: _nothing,
    CommandsChanged: _nothing,
}
"""Neutral progress event -> rule returning the Wire events."""
