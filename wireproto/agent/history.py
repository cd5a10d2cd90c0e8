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


class _Draft:
    """A message being built: text kept as parts, frozen on demand (then cached)."""

    __slots__ = ("calls", "content", "error", "frozen", "role", "text", "thought")

    def __init__(self, role: Literal["user", "assistant"], text: str = "",
                 content: tuple[ContentBlock, ...] = ()) -> None:
        self.role = role
        self.text: list[str] = [text] if text else []
        self.content = content
        self.thought: list[str] = []
        self.calls: list[ToolUse] = []
        self.error: str | None = None
        self.frozen: HistoryMessage | None = None

    def freeze(self) -> HistoryMessage:
        if self.frozen is None:
            self.frozen = HistoryMessage(
                self.role, "".join(self.text), self.content, "".join(self.thought),
                tuple(self.calls), self.error)
        return self.frozen


class Conversation:
    """Builds the :class:`HistoryMessage` list from events, one event at a time.

    Adding an event costs O(1) (text chunks are kept as parts); reading
    :attr:`messages` joins only the messages changed since the last read.
    """

    def __init__(self) -> None:
        self._drafts: list[_Draft] = []
        self._reply: _Draft | None = None  # the open assistant message
        self._message_id: str | None = None
        self._calls: dict[str, tuple[_Draft, int]] = {}  # call id -> (message, position)

    def clear(self) -> None:
        """Forget every message."""
        self._drafts, self._reply, self._message_id = [], None, None
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
        """The messages so far (a new list of frozen messages)."""
        return [draft.freeze() for draft in self._drafts]

    def add(self, event: Event) -> None:
        """Fold one recorded event in."""
        rule = _RULES.get(type(event))
        if rule is not None:
            rule(self, event)

    def _user(self, content: list[ContentBlock]) -> None:
        self._drafts.append(_Draft("user", render_prompt(content), tuple(content)))
        self._reply = None

    def _assistant(self) -> _Draft:
        if self._reply is None:
            self._reply = _Draft("assistant")
            self._drafts.append(self._reply)
            self._message_id = None
        self._reply.frozen = None  # about to change
        return self._reply

    def _on_user(self, event: UserMessage | SteerReceived) -> None:
        self._user(event.content)

    def _on_text(self, event: AgentMessageChunk) -> None:
        current = self._reply
        if current is not None and not current.calls and (
                not current.text or event.message_id == self._message_id):
            current.frozen = None  # the open message goes on (most chunks)
        else:
            self._reply = None  # a new message (of the same turn when one was open)
            current = self._assistant()
        self._message_id = event.message_id
        current.text.append(event.text)

    def _on_thought(self, event: ThoughtChunk) -> None:
        self._assistant().thought.append(event.text)

    def _on_call(self, event: ToolCallStarted) -> None:
        draft = self._assistant()
        self._calls[event.id] = (draft, len(draft.calls))
        draft.calls.append(ToolUse(event.id, event.name, event.title, event.status,
                                   event.raw_input))

    def _on_update(self, event: ToolCallUpdated) -> None:
        where = self._calls.get(event.id)
        if where is None:
            return
        draft, position = where
        old = draft.calls[position]
        draft.calls[position] = msgspec.structs.replace(
            old,
            status=event.status if event.status is not None else old.status,
            title=event.title if event.title is not None else old.title,
            output=_output(event.content, old.output),
            message=event.message if event.message is not None else old.message,
        )
        draft.frozen = None

    def _on_end(self, event: TurnEnded) -> None:
        if event.error is not None:
            self._assistant().error = event.error
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
