"""The conversation so far, as typed messages for a model's context (:meth:`Turn.history`).

A :class:`Conversation` folds the session's events, as they are recorded,
into a list of :class:`HistoryMessage`: one per user prompt (or steering input),
one per agent reply (its text, visible reasoning and tool calls, each with
its final status and output). It is kept in memory by the runtime for every
open session (built once from the stored history when a session is loaded
or resumed), so reading it costs a list copy, not a file read.

``HistoryCleared`` empties it; live-only events (notices) never reach it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from wireproto.agent.content import ContentBlock, Text, ToolContent, render_prompt
from wireproto.agent.events import (
    AgentMessageChunk,
    Event,
    HistoryCleared,
    SteerReceived,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
    TurnEnded,
    UserMessage,
)

__all__ = ["Conversation", "HistoryMessage", "ToolUse"]


class ToolUse(msgspec.Struct, frozen=True):
    """A tool call of an agent reply, as it stands.

    Attributes:
        id / name / title: the call's id, tool name and title.
        status: its last status.
        input: the call's arguments (``raw_input``).
        output: the text of its last content (``Text`` blocks joined).
        message: the explanation of its outcome, if any.
    """

    id: str
    name: str
    title: str
    status: ToolStatus
    input: Any = None
    output: str = ""
    message: str = ""


class HistoryMessage(msgspec.Struct, frozen=True):
    """One message of the conversation.

    Attributes:
        role: ``"user"`` (a prompt or steering input) or ``"assistant"``.
        text: the prompt rendered as text, or the reply's text.
        content: a user message's blocks (empty for the assistant).
        thought: the assistant's visible reasoning.
        tool_calls: the assistant's tool calls, in order.
        error: the turn failed with this error (the last assistant message).
    """

    role: Literal["user", "assistant"]
    text: str
    content: tuple[ContentBlock, ...] = ()
    thought: str = ""
    tool_calls: tuple[ToolUse, ...] = ()
    error: str | None = None


def _output(content: list[ToolContent] | None, old: str) -> str:
    if content is None:
        return old
    return "".join(block.text for block in content if isinstance(block, Text))


class Conversation:
    """Builds the :class:`HistoryMessage` list from events, one event at a time."""

    def __init__(self) -> None:
        self._messages: list[HistoryMessage] = []
        self._reply: int | None = None  # index of the open assistant message
        self._message_id: str | None = None
        self._calls: dict[str, tuple[int, int]] = {}  # call id -> (message, position)

    def clear(self) -> None:
        """Forget every message."""
        self._messages, self._reply, self._message_id = [], None, None
        self._calls.clear()

    @classmethod
    def from_events(cls, events: list[Event]) -> Conversation:
        """The conversation of a stored history."""
        conversation = cls()
        for event in events:
            conversation.add(event)
        return conversation

    @property
    def messages(self) -> list[HistoryMessage]:
        """A copy of the messages so far."""
        return list(self._messages)

    def add(self, event: Event) -> None:
        """Fold one recorded event in."""
        rule = _RULES.get(type(event))
        if rule is not None:
            rule(self, event)

    def _user(self, content: list[ContentBlock]) -> None:
        self._messages.append(HistoryMessage("user", render_prompt(content), tuple(content)))
        self._reply = None

    def _assistant(self) -> int:
        if self._reply is None:
            self._messages.append(HistoryMessage("assistant", ""))
            self._reply = len(self._messages) - 1
            self._message_id = None
        return self._reply

    def _change(self, index: int, **changes: Any) -> None:
        self._messages[index] = msgspec.structs.replace(self._messages[index], **changes)

    def _on_user(self, event: UserMessage | SteerReceived) -> None:
        self._user(event.content)

    def _on_text(self, event: AgentMessageChunk) -> None:
        if self._reply is not None:
            current = self._messages[self._reply]
            if current.tool_calls or (current.text and event.message_id != self._message_id):
                self._reply = None  # a new message of the same turn
        index = self._assistant()
        self._message_id = event.message_id
        self._change(index, text=self._messages[index].text + event.text)

    def _on_thought(self, event: ThoughtChunk) -> None:
        index = self._assistant()
        self._change(index, thought=self._messages[index].thought + event.text)

    def _on_call(self, event: ToolCallStarted) -> None:
        index = self._assistant()
        calls = self._messages[index].tool_calls
        use = ToolUse(event.id, event.name, event.title, event.status, event.raw_input)
        self._calls[event.id] = (index, len(calls))
        self._change(index, tool_calls=(*calls, use))

    def _on_update(self, event: ToolCallUpdated) -> None:
        where = self._calls.get(event.id)
        if where is None:
            return
        index, position = where
        calls = list(self._messages[index].tool_calls)
        old = calls[position]
        calls[position] = msgspec.structs.replace(
            old,
            status=event.status if event.status is not None else old.status,
            title=event.title if event.title is not None else old.title,
            output=_output(event.content, old.output),
            message=event.message if event.message is not None else old.message,
        )
        self._change(index, tool_calls=tuple(calls))

    def _on_end(self, event: TurnEnded) -> None:
        if event.error is not None:
            self._change(self._assistant(), error=event.error)
        self._reply = None
        self._calls.clear()

    def _on_clear(self, event: HistoryCleared) -> None:
        self.clear()


_RULES: dict[type, Any] = {
    UserMessage: Conversation._on_user,
    SteerReceived: Conversation._on_user,
    AgentMessageChunk: Conversation._on_text,
    ThoughtChunk: Conversation._on_thought,
    ToolCallStarted: Conversation._on_call,
    ToolCallUpdated: Conversation._on_update,
    TurnEnded: Conversation._on_end,
    HistoryCleared: Conversation._on_clear,
}
"""Event type -> how it changes the conversation (others do not)."""
