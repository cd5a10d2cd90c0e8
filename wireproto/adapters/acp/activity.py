"""ACP rendering of the neutral progress events (:mod:`wireproto.agent.activity`).

The rules extend the event table of :mod:`.translate` (same signature:
``(event, context, replay) -> session updates``):

* ``TitleChanged`` -> ``session_info_update`` with the title and the time.
* ``StepRetried`` -> a ``warning`` ``notice`` (live, when the client
  advertised ``session.notices``; else nothing: ACP has no retry event).
* ``CompactionStarted`` / ``Ended`` -> ``compaction_update`` (``in_progress``,
  then ``completed`` with the summary or ``failed`` with the error) when the
  client advertised ``session.compaction``; else an ``info`` notice when it
  advertised notices; else nothing.
* ``ToolArgumentsChunk`` -> ``tool_call_update`` whose ``rawInput`` is the
  arguments streamed so far: the parsed JSON once they parse, the text before.
* ``CommandsChanged`` -> ``available_commands_update``.
* ``SubagentEvent``: the sub-agent's message (and thought) text accumulates as
  the parent tool call's content (``tool_call_update``); its own tool calls
  are ordinary ``tool_call`` / ``tool_call_update``\\ s carrying the parent's
  id in ``_meta`` (:data:`PARENT_META`), ACP having no nesting.
* Side questions have no ACP form.
* A replay (``session/load``) carries only turn variants, since nothing
  session-scoped may precede the load's response: titles, compactions and
  command changes are live only (the session list shows the title; the
  agent's declared commands follow the response).

The accumulated text lives in the connection's :class:`.translate.Context`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET

from wireproto.adapters.acp import schema as S
from wireproto.agent.api import SlashCommand
from wireproto.agent.events import (
    AgentMessageChunk,
    CommandsChanged,
    CompactionEnded,
    CompactionStarted,
    SideQuestionEnded,
    SideQuestionStarted,
    StepRetried,
    SubagentEvent,
    ThoughtChunk,
    TitleChanged,
    ToolArgumentsChunk,
    ToolCallStarted,
    ToolCallUpdated,
)

__all__ = ["ACTIVITY_RULES", "PARENT_META", "Accumulated"]

PARENT_META = "wireproto.dev/parentToolCallId"
"""The ``_meta`` key naming the parent tool call of a sub-agent's own tool call."""


@dataclasses.dataclass
class Accumulated:
    """Text streamed piecewise that ACP sends whole: per tool call id."""

    arguments: dict[str, str] = dataclasses.field(default_factory=dict)
    subagent_text: dict[str, str] = dataclasses.field(default_factory=dict)

    def forget(self, call_id: str) -> None:
        """Drop what was streamed for ``call_id`` (its tool call starts anew)."""
        self.arguments.pop(call_id, None)
        self.subagent_text.pop(call_id, None)


def _now() -> str:
    from wireproto.adapters.acp.translate import iso_time

    return iso_time(datetime.now().astimezone())


def _notice(ctx: Any, replay: bool, severity: str, title: str,
            description: str | None = None) -> list[S.SessionUpdate]:
    if replay or not ctx.client.notices:
        return []
    return [S.Notice(severity=severity, title=title,
                     description=UNSET if description is None else description)]


def _title(e: TitleChanged, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    if replay:
        return []
    return [S.SessionInfoUpdate(title=e.title, updated_at=_now())]


def _retry(e: StepRetried, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    reason = e.error_type or "a recoverable error"
    return _notice(ctx, replay, "warning",
                   f"Retrying step {e.n} (attempt {e.next_attempt} of {e.max_attempts})",
                   f"The step failed with {reason}; retrying in {e.wait_s:g} s.")


def _compaction_started(e: CompactionStarted, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    if replay:
        return []
    if ctx.client.compaction:
        return [S.CompactionUpdate(compaction_id=e.id, status="in_progress")]
    return _notice(ctx, replay, "info", "Compacting the context")


def _compaction_ended(e: CompactionEnded, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    if replay:
        return []
    if ctx.client.compaction:
        if e.error is not None:
            return [S.CompactionUpdate(compaction_id=e.id, status="failed", error=e.error)]
        summary: list[S.ContentBlock] = [S.TextContent(text=e.summary)] if e.summary else []
        return [S.CompactionUpdate(compaction_id=e.id, status="completed",
                                   summary=summary or UNSET)]
    if e.error is not None:
        return _notice(ctx, replay, "warning", "Context compaction failed", e.error)
    return _notice(ctx, replay, "info", "Context compacted")


def _arguments(e: ToolArgumentsChunk, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    acc: Accumulated = ctx.accumulated
    text = acc.arguments.get(e.id, "") + e.part
    acc.arguments[e.id] = text
    try:
        raw: Any = msgspec.json.decode(text)
    except msgspec.DecodeError:
        raw = text
    return [S.ToolCallProgress(tool_call_id=e.id, raw_input=raw)]


def _commands(e: CommandsChanged, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    if replay:
        return []
    from wireproto.adapters.acp.translate import available_commands

    return [available_commands(
        [SlashCommand(c.name, c.description, input_hint=c.input_hint) for c in e.commands]
    )]


def _subagent(e: SubagentEvent, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    from wireproto.adapters.acp.translate import updates_of

    inner = e.event
    parent = e.parent_tool_call_id
    if isinstance(inner, AgentMessageChunk | ThoughtChunk):
        acc: Accumulated = ctx.accumulated
        text = acc.subagent_text.get(parent, "") + inner.text
        acc.subagent_text[parent] = text
        return [
            S.ToolCallProgress(
                tool_call_id=parent, content=[S.Content(content=S.TextContent(text=text))]
            )
        ]
    if isinstance(inner, ToolCallStarted | ToolCallUpdated):
        return [
            msgspec.structs.replace(update, meta={PARENT_META: parent})
            for update in updates_of(inner, ctx, replay)
        ]
    return []


def _nothing(e: Any, ctx: Any, replay: bool) -> list[S.SessionUpdate]:
    return []


ACTIVITY_RULES: dict[type, Callable[[Any, Any, bool], list[S.SessionUpdate]]] = {
    TitleChanged: _title,
    StepRetried: _retry,
    CompactionStarted: _compaction_started,
    CompactionEnded: _compaction_ended,
    ToolArgumentsChunk: _arguments,
    CommandsChanged: _commands,
    SubagentEvent: _subagent,
    SideQuestionStarted: _nothing,
    SideQuestionEnded: _nothing,
}
"""Neutral progress event -> rule returning ``session/update`` variants."""
