"""Translation between the protocol-neutral agent API and Wire types.

Theory of operation
-------------------
Everything here is synchronous and free of I/O; the server feeds events in
and writes what comes out.

* **Content.** Wire ``user_input`` (a string or content parts) becomes
  neutral :data:`~wireproto.agent.content.ContentBlock`\\ s through the table
  :data:`_PART_TO_BLOCK`, and back through :data:`_BLOCK_TO_PART` (a prompt
  of one text block is written back as a plain string).
* **Events.** A :class:`Translator` turns one neutral
  :data:`~wireproto.agent.events.Event` into zero or more Wire events, looked
  up in :data:`_EVENT_RULES` (event type -> rule). One translator serves one
  stream: the live stream of a connection, or one ``replay``. It is stateful
  because Wire spreads a tool call over a ``ToolCall`` event and a later
  ``ToolResult`` event: the translator remembers each open call's Wire id,
  content and message until the final status arrives.
* **Tool-call ids** (protocol-wire.md#request-ids). The Wire id of a call is its neutral id
  unless that id is still in use (an open call, or an id the caller reserves,
  e.g. a pending request); then ``~2``, ``~3`` ... is appended. The same Wire
  id is used for the ``ToolCall`` event, the ``ToolCallRequest`` and the
  ``ToolResult``.
* **Live vs. replay.** Live, the server writes ``TurnBegin`` / ``StepBegin``
  / ``StepInterrupted`` / ``TurnEnd`` itself (it must, even when the agent
  fails), so ``UserMessage`` and ``TurnEnded`` translate to nothing. In a
  replay they become ``TurnBegin`` + ``StepBegin`` and (``StepInterrupted`` +)
  ``TurnEnd``, so replayed traffic has the live shape; the end of a turn whose
  beginning was cut off by a history clear (``/clear``) is left out, so every
  replayed ``TurnEnd`` has its ``TurnBegin``. Later steps of a turn
  (``StepStarted``) are ``StepBegin`` with their number either way; the
  translator counts them for a ``max_steps_reached`` answer (:attr:`Translator.steps`).
* **Approval ids** (protocol-wire.md#request-ids). An approval's Wire id is the neutral
  request id unless a request with that id is pending on the connection;
  then a fresh UUID is used (:meth:`Translator.approval_id`) and the
  ``ApprovalResponse`` event of the neutral resolution carries it too.
* **Visible resolutions** (protocol-wire.md#visible-resolution). When the server resolves an
  unanswered request itself it writes the ``ApprovalResponse`` /
  ``ToolResult`` event at once and marks the id with :meth:`Translator.resolved`;
  the neutral event that follows later for the same id is then dropped, so the
  client never sees two resolutions.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from wireproto.agent.api import ApprovalRequest as NeutralApprovalRequest
from wireproto.agent.api import Decision
from wireproto.agent.content import (
    Audio,
    ContentBlock,
    Diff,
    Image,
    ResourceBlob,
    ResourceLink,
    ResourceText,
    Terminal,
    Text,
    ToolContent,
    Video,
    attr_escape,
)
from wireproto.agent.events import (
    AgentMessageChunk,
    ApprovalResolved,
    Event,
    HistoryCleared,
    Notice,
    OptionChanged,
    PlanModeChanged,
    PlanUpdated,
    SteerReceived,
    StepStarted,
    StopReason,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
    TurnEnded,
    UsageUpdated,
    UserMessage,
)

from . import messages as m
from .activity import ACTIVITY_RULES
from .display import BriefDisplayBlock, DiffDisplayBlock, DisplayBlock, TodoDisplayBlock
from .display import TodoDisplayItem as TodoItem
from .methods import PromptResult

__all__ = [
    "DECISION_TO_WIRE",
    "PLAN_STATUS_TO_WIRE",
    "STOP_REASON_STATUS",
    "WIRE_TO_DECISION",
    "Translator",
    "approval_request",
    "blocks_to_user_input",
    "output_text",
    "prompt_result",
    "tool_display",
    "tool_output",
    "user_input_to_blocks",
]

WireEvent = m.Event
"""Any Wire event Struct."""

# --------------------------------------------------------------------------- tables

DECISION_TO_WIRE: dict[str, m.ApprovalKind] = {
    Decision.ALLOW_ONCE.value: "approve",
    Decision.ALLOW_SESSION.value: "approve_for_session",
    Decision.REJECT.value: "reject",
}
"""Neutral approval decision -> Wire ``ApprovalResponse.response``."""

WIRE_TO_DECISION: dict[str, Decision] = {
    wire: Decision(neutral) for neutral, wire in DECISION_TO_WIRE.items()
}
"""Wire ``ApprovalResponse.response`` -> neutral decision."""

PLAN_STATUS_TO_WIRE: dict[str, Literal["pending", "in_progress", "done"]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "done",
}
"""Neutral plan-entry status -> Wire ``todo`` item status (unknown -> pending)."""

STOP_REASON_STATUS: dict[StopReason, Literal["finished", "cancelled", "max_steps_reached"]] = {
    StopReason.END_TURN: "finished",
    StopReason.MAX_TOKENS: "finished",
    StopReason.REFUSAL: "finished",
    StopReason.MAX_STEPS: "max_steps_reached",
    StopReason.CANCELLED: "cancelled",
}
"""Neutral stop reason -> Wire ``prompt`` status."""

_FINAL = (ToolStatus.COMPLETED, ToolStatus.FAILED)
TODO_TOOL = "SetTodoList"
"""The tool name under which plans are shown (as the reference does)."""

# --------------------------------------------------------------------------- content


def _media_url(block: Image | Audio) -> m.MediaURL:
    if block.url is not None:
        return m.MediaURL(url=block.url)
    mime = block.mime_type or "application/octet-stream"
    return m.MediaURL(url=f"data:{mime};base64,{block.data or ''}")


_PART_TO_BLOCK: dict[type, Callable[[Any], ContentBlock]] = {
    m.TextPart: lambda p: Text(p.text),
    m.ThinkPart: lambda p: Text(p.think),
    m.ImageURLPart: lambda p: Image(url=p.image_url.url),
    m.AudioURLPart: lambda p: Audio(url=p.audio_url.url),
    m.VideoURLPart: lambda p: Video(url=p.video_url.url),
}
"""Wire content part -> neutral block (media keep their URL; no MIME type is invented)."""

_BLOCK_TO_PART: dict[type, Callable[[Any], m.ContentPart | None]] = {
    Text: lambda b: m.TextPart(text=b.text),
    Image: lambda b: m.ImageURLPart(image_url=_media_url(b)),
    Audio: lambda b: m.AudioURLPart(audio_url=_media_url(b)),
    Video: lambda b: m.VideoURLPart(video_url=m.MediaURL(url=b.url)),
    ResourceText: lambda b: m.TextPart(
        text=f'<resource uri="{attr_escape(b.uri)}">{b.text}</resource>'
    ),
    ResourceLink: lambda b: m.TextPart(
        text=f'<resource_link uri="{attr_escape(b.uri)}" name="{attr_escape(b.name)}"/>'
    ),
    ResourceBlob: lambda b: None,
}
"""Neutral block -> Wire content part (``None``: not representable, dropped)."""


def user_input_to_blocks(user_input: m.UserInput) -> list[ContentBlock]:
    """Convert a Wire ``user_input`` (string or content parts) to neutral blocks."""
    if isinstance(user_input, str):
        return [Text(user_input)]
    return [_PART_TO_BLOCK[type(part)](part) for part in user_input]


def blocks_to_user_input(blocks: list[ContentBlock]) -> m.UserInput:
    """Convert neutral blocks back to a Wire ``user_input``.

    A single text block becomes a plain string (what Wire clients send).
    """
    if len(blocks) == 1 and isinstance(blocks[0], Text):
        return blocks[0].text
    parts = [_BLOCK_TO_PART[type(block)](block) for block in blocks]
    return [part for part in parts if part is not None]


def output_text(output: str | list[m.ContentPart]) -> str:
    """The text of a tool output: the string, or its text parts concatenated."""
    if isinstance(output, str):
        return output
    return "".join(part.text for part in output if isinstance(part, m.TextPart))


_CONTENT_TO_DISPLAY: dict[type, Callable[[Any], DisplayBlock | None]] = {
    Diff: lambda d: DiffDisplayBlock(path=d.path, old_text=d.old_text or "", new_text=d.new_text),
    Text: lambda t: None,  # text is the tool's output, not a display block
}
"""Neutral tool content -> Wire display block (terminals have no Wire form)."""


_TOOL_PART: dict[type, Callable[[Any], m.ContentPart]] = {
    Text: lambda b: m.TextPart(text=b.text),
    Image: lambda b: m.ImageURLPart(image_url=_media_url(b)),
    Audio: lambda b: m.AudioURLPart(audio_url=_media_url(b)),
    Video: lambda b: m.VideoURLPart(video_url=m.MediaURL(url=b.url)),
    ResourceText: lambda b: m.TextPart(text=f"[resource {b.uri}]\n{b.text}"),
    ResourceLink: lambda b: m.TextPart(text=f"[resource link: {b.name} <{b.uri}>]"),
    ResourceBlob: lambda b: m.TextPart(
        text=f"[binary resource {b.uri} ({b.mime_type or 'unknown type'}), not shown]"
    ),
}
"""Neutral tool content -> Wire output part (resources: text with a note)."""


def tool_output(content: list[ToolContent]) -> str | list[m.ContentPart]:
    """A tool result's ``output``: its texts joined with newlines, or content parts.

    Parts are used as soon as the content holds media or resources; diffs and
    terminals are not output (diffs are display blocks).
    """
    if all(isinstance(c, Text | Diff | Terminal) for c in content):
        return "\n".join(c.text for c in content if isinstance(c, Text))
    return [_TOOL_PART[type(c)](c) for c in content if type(c) in _TOOL_PART]


def tool_display(content: list[ToolContent], brief: str = "") -> list[DisplayBlock]:
    """Display blocks for tool content; a new file's diff has ``old_text == ""``.

    Args:
        content: the tool call's content.
        brief: a one-line summary appended as a ``brief`` block when not empty.
    """
    blocks: list[DisplayBlock] = []
    for item in content:
        convert = _CONTENT_TO_DISPLAY.get(type(item))
        block = convert(item) if convert is not None else None
        if block is not None:
            blocks.append(block)
    if brief:
        blocks.append(BriefDisplayBlock(text=brief))
    return blocks


def approval_request(request: NeutralApprovalRequest, request_id: str, tool_call_id: str) -> (
    m.ApprovalRequest
):
    """Build the Wire ``ApprovalRequest`` for a neutral one.

    Text in the neutral display becomes ``brief`` blocks, diffs ``diff`` blocks.
    """
    display: list[DisplayBlock] = []
    for item in request.display:
        if isinstance(item, Text):
            display.append(BriefDisplayBlock(text=item.text))
        else:
            display.extend(tool_display([item]))
    return m.ApprovalRequest(
        id=request_id,
        tool_call_id=tool_call_id,
        sender=request.tool,
        action=request.action,
        description=request.description,
        source_kind="foreground_turn",
        display=display,
    )


def prompt_result(stop: StopReason, steps: int = 1) -> PromptResult:
    """The ``prompt`` result for a stop reason (``steps`` only for max steps)."""
    status = STOP_REASON_STATUS[stop]
    if status == "max_steps_reached":
        return PromptResult(status=status, steps=steps)
    return PromptResult(status=status)


def _arguments(raw_input: Any) -> str | None:
    if raw_input is None:
        return None
    return msgspec.json.encode(raw_input).decode()


# --------------------------------------------------------------------------- events


@dataclass
class _OpenCall:
    """What the translator remembers about a tool call until its final status."""

    wire_id: str
    name: str
    content: list[ToolContent] = field(default_factory=list)
    message: str = ""


class Translator:
    """Translate the neutral events of one stream (live, or one replay) to Wire events.

    Args:
        replay: translate a recorded history (``UserMessage`` / ``TurnEnded``
            become turn brackets) rather than a live stream.
        reserved: tells whether a Wire id is in use outside the translator
            (e.g. by a pending request); such ids are never handed out.

    Attributes:
        steps: the current turn's step count so far (the last ``StepBegin`` n).
    """

    def __init__(
        self, *, replay: bool = False, reserved: Callable[[str], bool] | None = None
    ) -> None:
        self.replay = replay
        self._reserved = reserved or (lambda _id: False)
        self._calls: dict[str, _OpenCall] = {}
        self._wire_ids: set[str] = set()
        self._resolved_approvals: set[str] = set()
        self._resolved_tools: set[str] = set()
        self._client_results: dict[str, m.ToolReturnValue] = {}
        self._approval_ids: dict[str, str] = {}
        self._todo_ids = itertools.count(1)
        self._turn_open = False
        self.steps = 1
        self.subagents: dict[str, Translator] = {}  # parent call id -> its sub-agent's

    # ----------------------------------------------------------- tool-call ids

    def wire_id(self, call_id: str) -> str:
        """The Wire id of an open tool call (the neutral id when it is unknown)."""
        call = self._calls.get(call_id)
        return call.wire_id if call is not None else call_id

    def _unique(self, call_id: str) -> str:
        candidate, n = call_id, 1
        while candidate in self._wire_ids or self._reserved(candidate):
            n += 1
            candidate = f"{call_id}~{n}"
        return candidate

    def approval_id(self, request_id: str) -> str:
        """The Wire id for a neutral approval request: ``request_id`` unless it is in use."""
        if not self._reserved(request_id):
            return request_id
        wire_id = str(uuid.uuid4())
        self._approval_ids[request_id] = wire_id
        return wire_id

    def resolved(self, *, approval: str | None = None, tool_call: str | None = None) -> None:
        """Mark a request resolved visibly: a later neutral resolution of it is dropped.

        Args:
            approval: the Wire request id of an approval.
            tool_call: the Wire id of an external tool call.
        """
        if approval is not None:
            self._resolved_approvals.add(approval)
        if tool_call is not None:
            self._resolved_tools.add(tool_call)

    def reset(self) -> None:
        """Forget the turn's open tool calls and ids (at its end: none can finish later)."""
        self._calls.clear()
        self._wire_ids.clear()
        self._client_results.clear()
        self._approval_ids.clear()
        self._resolved_approvals.clear()
        self._resolved_tools.clear()
        self.subagents.clear()
        self.steps = 1

    def client_result(self, wire_id: str, value: m.ToolReturnValue) -> None:
        """Remember the client's own result of an external call, to emit it verbatim."""
        self._client_results[wire_id] = value

    # ------------------------------------------------------------- translate

    def translate(self, event: Event) -> list[WireEvent]:
        """Return the Wire events for one neutral event (possibly none)."""
        rule = _EVENT_RULES.get(type(event))
        return rule(self, event) if rule is not None else []

    def _user_message(self, event: UserMessage) -> list[WireEvent]:
        if not self.replay:
            return []  # the server writes TurnBegin itself, with the input as sent
        self._turn_open = True
        return [m.TurnBegin(user_input=blocks_to_user_input(event.content)), m.StepBegin(n=1)]

    def _turn_ended(self, event: TurnEnded) -> list[WireEvent]:
        if not self.replay:
            return []
        self.reset()
        if not self._turn_open:  # its TurnBegin was cleared from history
            return []
        self._turn_open = False
        if event.stop_reason is StopReason.CANCELLED or event.error is not None:
            return [m.StepInterrupted(), m.TurnEnd()]  # as live: an interrupted step
        return [m.TurnEnd()]

    def _step(self, event: StepStarted) -> list[WireEvent]:
        self.steps = event.n
        return [m.StepBegin(n=event.n)]

    def _tool_started(self, event: ToolCallStarted) -> list[WireEvent]:
        wire_id = self._unique(event.id)
        self._wire_ids.add(wire_id)
        self._calls[event.id] = _OpenCall(wire_id, event.name)
        call = m.ToolCall(
            id=wire_id,
            function=m.FunctionBody(name=event.name, arguments=_arguments(event.raw_input)),
        )
        if event.status in _FINAL:
            return [call, *self._finish(event.id, event.status)]
        return [call]

    def _tool_updated(self, event: ToolCallUpdated) -> list[WireEvent]:
        call = self._calls.get(event.id)
        if call is None:  # e.g. the start was cut off by a history clear
            call = self._calls[event.id] = _OpenCall(event.id, "")
        if event.content is not None:
            call.content = list(event.content)
        if event.message is not None:
            call.message = event.message
        if event.status in _FINAL:
            return self._finish(event.id, event.status)
        return []

    def _finish(self, call_id: str, status: ToolStatus | None) -> list[WireEvent]:
        call = self._calls.pop(call_id)
        self._wire_ids.discard(call.wire_id)
        client_value = self._client_results.pop(call.wire_id, None)
        if call.wire_id in self._resolved_tools:
            self._resolved_tools.discard(call.wire_id)
            return []
        if client_value is not None:
            value = client_value
        else:
            value = m.ToolReturnValue(
                is_error=status is ToolStatus.FAILED,
                output=tool_output(call.content),
                message=call.message,
                display=tool_display(call.content, call.message),
            )
        return [m.ToolResult(tool_call_id=call.wire_id, return_value=value)]

    def _plan(self, event: PlanUpdated) -> list[WireEvent]:
        items = [
            TodoItem(title=e.content, status=PLAN_STATUS_TO_WIRE.get(e.status, "pending"))
            for e in event.entries
        ]
        call_id = self._unique(f"todo_{next(self._todo_ids)}")
        arguments = {"todos": [{"title": i.title, "status": i.status} for i in items]}
        return [
            m.ToolCall(
                id=call_id,
                function=m.FunctionBody(name=TODO_TOOL, arguments=_arguments(arguments)),
            ),
            m.ToolResult(
                tool_call_id=call_id,
                return_value=m.ToolReturnValue(
                    is_error=False, output="", message="Todo list updated",
                    display=[TodoDisplayBlock(items=items)],
                ),
            ),
        ]

    def _approval(self, event: ApprovalResolved) -> list[WireEvent]:
        wire_id = self._approval_ids.pop(event.request_id, event.request_id)
        if wire_id in self._resolved_approvals:
            self._resolved_approvals.discard(wire_id)
            return []
        return [
            m.ApprovalResponse(
                request_id=wire_id,
                response=DECISION_TO_WIRE.get(event.decision, "reject"),
                feedback=event.feedback,
            )
        ]


def _usage(tr: Translator, event: UsageUpdated) -> list[WireEvent]:
    counts = (event.input_tokens, event.output_tokens, event.cache_read_tokens,
              event.cache_write_tokens)  # fmt: skip
    usage = None
    if any(count is not None for count in counts):
        usage = m.TokenUsage(
            input_other=event.input_tokens or 0, output=event.output_tokens or 0,
            input_cache_read=event.cache_read_tokens or 0,
            input_cache_creation=event.cache_write_tokens or 0,
        )
    ratio = None
    if event.used is not None and event.size:
        ratio = event.used / event.size
    return [
        m.StatusUpdate(
            context_usage=ratio, context_tokens=event.used, max_context_tokens=event.size,
            token_usage=usage,
        )
    ]


def _notice(tr: Translator, event: Notice) -> list[WireEvent]:
    return [
        m.Notification(
            id=str(uuid.uuid4()), category="agent", type="notice", source_kind="agent",
            source_id="", title=event.title, body=event.description or "",
            severity=event.severity, created_at=time.time(),
        )
    ]


def _nothing(tr: Translator, event: Any) -> list[WireEvent]:
    return []


_EVENT_RULES: dict[type, Callable[[Translator, Any], list[WireEvent]]] = {
    UserMessage: Translator._user_message,
    AgentMessageChunk: lambda tr, e: [m.TextPart(text=e.text)],
    ThoughtChunk: lambda tr, e: [m.ThinkPart(think=e.text)],
    ToolCallStarted: Translator._tool_started,
    ToolCallUpdated: Translator._tool_updated,
    PlanUpdated: Translator._plan,
    UsageUpdated: _usage,
    StepStarted: Translator._step,
    SteerReceived: lambda tr, e: [m.SteerInput(user_input=blocks_to_user_input(e.content))],
    ApprovalResolved: Translator._approval,
    PlanModeChanged: lambda tr, e: [m.StatusUpdate(plan_mode=e.enabled)],
    OptionChanged: _nothing,
    HistoryCleared: _nothing,
    Notice: _notice,
    TurnEnded: Translator._turn_ended,
    **ACTIVITY_RULES,
}
"""Neutral event type -> rule returning the Wire events (every event type is listed)."""
