"""Typed Wire messages: content parts, events, requests and their results.

Protocol: protocol-wire.md#content-parts and protocol-wire.md#events. The envelope
helpers that put these Structs on the wire (``encode_event``,
``decode_event``, ...) live in :mod:`.envelope`; display blocks in
:mod:`.display`; method params/results in :mod:`.methods`.

Conventions
-----------
* Every event and request Struct names its envelope tag in an explicit
  ``WIRE_TYPE`` class constant (never ``cls.__name__``). Every content part
  has ``WIRE_TYPE = "ContentPart"`` and keeps its kind in its own ``type``
  member (a msgspec tag).
* Every field is emitted on encoding, ``null`` included, exactly as the
  reference server does (no ``omit_defaults``). Nullable fields default to
  ``None`` so that absence is accepted on input.
* Fields holding display blocks are typed :class:`~.display.DisplayBlock` and
  need :func:`~.display.dec_hook` to decode; use :func:`.envelope.decoder_for`.
* Unknown JSON members are ignored on input.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

from .display import BriefDisplayBlock, DisplayBlock

__all__ = [
    "EVENT_CLASSES",
    "REQUEST_CLASSES",
    "ApprovalKind",
    "ApprovalRequest",
    "ApprovalResponse",
    "ApprovalSourceKind",
    "AudioURLPart",
    "BtwBegin",
    "BtwEnd",
    "CompactionBegin",
    "CompactionEnd",
    "ContentPart",
    "Event",
    "FunctionBody",
    "HookAction",
    "HookRequest",
    "HookResolved",
    "HookResponse",
    "HookTriggered",
    "ImageURLPart",
    "MCPLoadingBegin",
    "MCPLoadingEnd",
    "MCPServerSnapshot",
    "MCPServerState",
    "MCPStatusSnapshot",
    "MediaURL",
    "Notification",
    "PlanDisplay",
    "QuestionItem",
    "QuestionOption",
    "QuestionRequest",
    "QuestionResponse",
    "Request",
    "Response",
    "StatusUpdate",
    "SteerInput",
    "StepBegin",
    "StepInterrupted",
    "StepRetry",
    "SubagentEvent",
    "TextPart",
    "ThinkPart",
    "TokenUsage",
    "ToolCall",
    "ToolCallPart",
    "ToolCallRequest",
    "ToolResult",
    "ToolReturnValue",
    "TurnBegin",
    "TurnEnd",
    "UnknownEvent",
    "UserInput",
    "VideoURLPart",
    "WireEnvelope",
]

# --------------------------------------------------------------------------- content parts


class MediaURL(msgspec.Struct, kw_only=True):
    """``{url, id}`` of a media part; ``url`` may be a ``data:`` URI."""

    url: str
    id: str | None = None


class TextPart(msgspec.Struct, tag="text", tag_field="type", kw_only=True):
    """``text`` content part (streamed as deltas)."""

    WIRE_TYPE: ClassVar[str] = "ContentPart"
    text: str


class ThinkPart(msgspec.Struct, tag="think", tag_field="type", kw_only=True):
    """``think`` content part: model reasoning; ``encrypted`` is an opaque signature."""

    WIRE_TYPE: ClassVar[str] = "ContentPart"
    think: str
    encrypted: str | None = None


class ImageURLPart(msgspec.Struct, tag="image_url", tag_field="type", kw_only=True):
    """``image_url`` content part."""

    WIRE_TYPE: ClassVar[str] = "ContentPart"
    image_url: MediaURL


class AudioURLPart(msgspec.Struct, tag="audio_url", tag_field="type", kw_only=True):
    """``audio_url`` content part."""

    WIRE_TYPE: ClassVar[str] = "ContentPart"
    audio_url: MediaURL


class VideoURLPart(msgspec.Struct, tag="video_url", tag_field="type", kw_only=True):
    """``video_url`` content part."""

    WIRE_TYPE: ClassVar[str] = "ContentPart"
    video_url: MediaURL


ContentPart = TextPart | ThinkPart | ImageURLPart | AudioURLPart | VideoURLPart
"""A content part; an unknown ``type`` fails validation (protocol-wire.md#bad-input)."""

UserInput = str | list[ContentPart]
"""``user_input`` of ``prompt``, ``steer``, ``TurnBegin`` and ``SteerInput``."""

# --------------------------------------------------------------------------- tool values


class FunctionBody(msgspec.Struct, kw_only=True):
    """``ToolCall.function``: the tool name and its raw JSON argument text."""

    name: str
    arguments: str | None = None


class ToolReturnValue(msgspec.Struct, kw_only=True):
    """A tool's outcome. ``display`` is required on the wire (``[]`` when empty).

    Use :meth:`ok` / :meth:`error` to build one with a brief display block.
    """

    is_error: bool
    output: str | list[ContentPart]
    message: str
    display: list[DisplayBlock]
    extras: dict[str, Any] | None = None

    @classmethod
    def ok(
        cls, output: str | list[ContentPart] = "", *, message: str = "", brief: str = ""
    ) -> ToolReturnValue:
        """A successful result; ``brief`` (if non-empty) becomes a brief block."""
        return cls(is_error=False, output=output, message=message, display=_brief(brief))

    @classmethod
    def error(
        cls, message: str, *, brief: str = "", output: str | list[ContentPart] = ""
    ) -> ToolReturnValue:
        """A failed result; ``brief`` (if non-empty) becomes a brief block."""
        return cls(is_error=True, output=output, message=message, display=_brief(brief))


def _brief(text: str) -> list[DisplayBlock]:
    return [BriefDisplayBlock(text=text)] if text else []


# --------------------------------------------------------------------------- events


class TurnBegin(msgspec.Struct, kw_only=True):
    """Start of an agent turn, echoing the user input."""

    WIRE_TYPE: ClassVar[str] = "TurnBegin"
    user_input: UserInput


class SteerInput(msgspec.Struct, kw_only=True):
    """(1.5) Steer input appended to the running turn's context."""

    WIRE_TYPE: ClassVar[str] = "SteerInput"
    user_input: UserInput


class TurnEnd(msgspec.Struct, kw_only=True):
    """(1.2) End of the turn; the last event before the ``prompt`` response."""

    WIRE_TYPE: ClassVar[str] = "TurnEnd"


class StepBegin(msgspec.Struct, kw_only=True):
    """Start of step ``n`` (1-based)."""

    WIRE_TYPE: ClassVar[str] = "StepBegin"
    n: int


class StepInterrupted(msgspec.Struct, kw_only=True):
    """The current step was interrupted (cancel or error)."""

    WIRE_TYPE: ClassVar[str] = "StepInterrupted"


class StepRetry(msgspec.Struct, kw_only=True):
    """(1.10) The step failed recoverably and is retried after ``wait_s`` seconds."""

    WIRE_TYPE: ClassVar[str] = "StepRetry"
    n: int
    next_attempt: int
    max_attempts: int
    wait_s: float
    error_type: str
    status_code: int | None = None


class CompactionBegin(msgspec.Struct, kw_only=True):
    """Context compaction started."""

    WIRE_TYPE: ClassVar[str] = "CompactionBegin"


class CompactionEnd(msgspec.Struct, kw_only=True):
    """Context compaction finished."""

    WIRE_TYPE: ClassVar[str] = "CompactionEnd"


class MCPLoadingBegin(msgspec.Struct, kw_only=True):
    """MCP tool loading started (undocumented)."""

    WIRE_TYPE: ClassVar[str] = "MCPLoadingBegin"


class MCPLoadingEnd(msgspec.Struct, kw_only=True):
    """MCP tool loading finished (undocumented)."""

    WIRE_TYPE: ClassVar[str] = "MCPLoadingEnd"


class TokenUsage(msgspec.Struct, kw_only=True):
    """Token counts of a step; ``input_other`` excludes the two cache counters."""

    input_other: int
    output: int
    input_cache_read: int = 0
    input_cache_creation: int = 0


MCPServerState = Literal["pending", "connecting", "connected", "failed", "unauthorized"]
"""Start-up state of one MCP server."""


class MCPServerSnapshot(msgspec.Struct, kw_only=True):
    """One MCP server during start-up."""

    name: str
    status: MCPServerState
    tools: list[str] = msgspec.field(default_factory=list)


class MCPStatusSnapshot(msgspec.Struct, kw_only=True):
    """MCP start-up progress (``StatusUpdate.mcp_status``)."""

    loading: bool
    connected: int
    total: int
    tools: int
    servers: list[MCPServerSnapshot] = msgspec.field(default_factory=list)


class StatusUpdate(msgspec.Struct, kw_only=True):
    """Status of the agent; every field is nullable and ``null`` means "no change"."""

    WIRE_TYPE: ClassVar[str] = "StatusUpdate"
    context_usage: float | None = None
    context_tokens: int | None = None
    max_context_tokens: int | None = None
    token_usage: TokenUsage | None = None
    message_id: str | None = None
    plan_mode: bool | None = None
    mcp_status: MCPStatusSnapshot | None = None


class Notification(msgspec.Struct, kw_only=True):
    """A system notification, e.g. a background task finished (undocumented)."""

    WIRE_TYPE: ClassVar[str] = "Notification"
    id: str
    category: str
    type: str
    source_kind: str
    source_id: str
    title: str
    body: str
    severity: str
    created_at: float
    payload: dict[str, Any] = msgspec.field(default_factory=dict)


class ToolCall(msgspec.Struct, kw_only=True):
    """The model calls a tool; ``function.arguments`` may be partial or ``null``."""

    WIRE_TYPE: ClassVar[str] = "ToolCall"
    type: Literal["function"] = "function"
    id: str
    function: FunctionBody
    extras: dict[str, Any] | None = None


class ToolCallPart(msgspec.Struct, kw_only=True):
    """Appends ``arguments_part`` to the most recent ``ToolCall`` (carries no id)."""

    WIRE_TYPE: ClassVar[str] = "ToolCallPart"
    arguments_part: str | None = None


class ToolResult(msgspec.Struct, kw_only=True):
    """A tool's result: an event, and the client's answer to ``ToolCallRequest``."""

    WIRE_TYPE: ClassVar[str] = "ToolResult"
    tool_call_id: str
    return_value: ToolReturnValue


ApprovalKind = Literal["approve", "approve_for_session", "reject"]
"""The three approval decisions."""


class ApprovalResponse(msgspec.Struct, kw_only=True):
    """An approval decision: an event, and the client's answer to ``ApprovalRequest``.

    Legacy tag ``ApprovalRequestResolved`` (protocol "1") decodes to this type.
    """

    WIRE_TYPE: ClassVar[str] = "ApprovalResponse"
    request_id: str
    response: ApprovalKind
    feedback: str = ""


class WireEnvelope(msgspec.Struct, kw_only=True):
    """``{"type": ..., "payload": ...}``: params of ``event`` / ``request``.

    ``payload`` is a message Struct when built by :func:`encode_event` /
    :func:`encode_request`, and plain JSON values when decoded generically.
    """

    type: str
    payload: Any


class SubagentEvent(msgspec.Struct, kw_only=True):
    """An event of a sub-agent; ``event`` is the nested ``{type, payload}`` envelope.

    Build it with ``event=envelope.encode_event(inner)``; read the inner event
    with ``envelope.decode_event(sub.event)`` (already typed after decoding).
    The legacy member ``task_tool_call_id`` (before 1.6) decodes into
    ``parent_tool_call_id``.
    """

    WIRE_TYPE: ClassVar[str] = "SubagentEvent"
    parent_tool_call_id: str | None = None
    agent_id: str | None = None
    subagent_type: str | None = None
    event: WireEnvelope


class PlanDisplay(msgspec.Struct, kw_only=True):
    """(1.7) A plan (markdown) to show inline."""

    WIRE_TYPE: ClassVar[str] = "PlanDisplay"
    content: str
    file_path: str


HookAction = Literal["allow", "block"]
"""A hook decision."""


class HookTriggered(msgspec.Struct, kw_only=True):
    """(1.7) A batch of hooks started."""

    WIRE_TYPE: ClassVar[str] = "HookTriggered"
    event: str
    target: str = ""
    hook_count: int = 1


class HookResolved(msgspec.Struct, kw_only=True):
    """(1.7) A batch of hooks finished."""

    WIRE_TYPE: ClassVar[str] = "HookResolved"
    event: str
    target: str = ""
    action: HookAction = "allow"
    reason: str = ""
    duration_ms: int = 0


class BtwBegin(msgspec.Struct, kw_only=True):
    """(1.9) A side question (``/btw``) started."""

    WIRE_TYPE: ClassVar[str] = "BtwBegin"
    id: str
    question: str


class BtwEnd(msgspec.Struct, kw_only=True):
    """(1.9) A side question finished (``response`` or ``error``)."""

    WIRE_TYPE: ClassVar[str] = "BtwEnd"
    id: str
    response: str | None = None
    error: str | None = None


class UnknownEvent(msgspec.Struct, kw_only=True):
    """An event whose tag this library does not know; ``payload`` is kept as JSON values."""

    type: str
    payload: Any = msgspec.field(default_factory=dict)


# --------------------------------------------------------------------------- requests


ApprovalSourceKind = Literal["foreground_turn", "background_agent"]
"""Where an approval request comes from (1.6)."""


class ApprovalRequest(msgspec.Struct, kw_only=True):
    """Asks the client to approve an action; answered with :class:`ApprovalResponse`."""

    WIRE_TYPE: ClassVar[str] = "ApprovalRequest"
    id: str
    tool_call_id: str
    sender: str
    action: str
    description: str
    source_kind: ApprovalSourceKind | None = None
    source_id: str | None = None
    agent_id: str | None = None
    subagent_type: str | None = None
    source_description: str | None = None
    display: list[DisplayBlock] = msgspec.field(default_factory=list)


class ToolCallRequest(msgspec.Struct, kw_only=True):
    """(1.1) Asks the client to run an external tool; answered with :class:`ToolResult`."""

    WIRE_TYPE: ClassVar[str] = "ToolCallRequest"
    id: str
    name: str
    arguments: str | None = None


class QuestionOption(msgspec.Struct, kw_only=True):
    """One choice of a question."""

    label: str
    description: str = ""


class QuestionItem(msgspec.Struct, kw_only=True):
    """One question with 2-4 options."""

    question: str
    header: str = ""
    options: list[QuestionOption]
    multi_select: bool = False
    body: str = ""
    other_label: str = ""
    other_description: str = ""


class QuestionRequest(msgspec.Struct, kw_only=True):
    """(1.4) Asks the user 1-4 questions; answered with :class:`QuestionResponse`."""

    WIRE_TYPE: ClassVar[str] = "QuestionRequest"
    id: str
    tool_call_id: str
    questions: list[QuestionItem]


class QuestionResponse(msgspec.Struct, kw_only=True):
    """Answers by question text; ``answers == {}`` means dismissed/unsupported."""

    request_id: str
    answers: dict[str, str]


class HookRequest(msgspec.Struct, kw_only=True):
    """(1.7) A subscribed hook fired; answered with :class:`HookResponse`."""

    WIRE_TYPE: ClassVar[str] = "HookRequest"
    id: str
    subscription_id: str = ""
    event: str
    target: str = ""
    input_data: dict[str, Any] = msgspec.field(default_factory=dict)


class HookResponse(msgspec.Struct, kw_only=True):
    """The client's hook decision."""

    request_id: str
    action: HookAction = "allow"
    reason: str = ""


Event = (
    TurnBegin
    | SteerInput
    | TurnEnd
    | StepBegin
    | StepInterrupted
    | StepRetry
    | CompactionBegin
    | CompactionEnd
    | MCPLoadingBegin
    | MCPLoadingEnd
    | StatusUpdate
    | Notification
    | TextPart
    | ThinkPart
    | ImageURLPart
    | AudioURLPart
    | VideoURLPart
    | ToolCall
    | ToolCallPart
    | ToolResult
    | ApprovalResponse
    | SubagentEvent
    | PlanDisplay
    | HookTriggered
    | HookResolved
    | BtwBegin
    | BtwEnd
)
"""Any event known to this library (sent with method ``event``)."""

Request = ApprovalRequest | ToolCallRequest | QuestionRequest | HookRequest
"""Any request (sent with method ``request``)."""

Response = ApprovalResponse | ToolResult | QuestionResponse | HookResponse
"""Any client result to a :data:`Request`."""

EVENT_CLASSES: tuple[type[Event], ...] = (
    TurnBegin, SteerInput, TurnEnd, StepBegin, StepInterrupted, StepRetry,
    CompactionBegin, CompactionEnd, MCPLoadingBegin, MCPLoadingEnd, StatusUpdate,
    Notification, TextPart, ThinkPart, ImageURLPart, AudioURLPart, VideoURLPart,
    ToolCall, ToolCallPart, ToolResult, ApprovalResponse, SubagentEvent, PlanDisplay,
    HookTriggered, HookResolved, BtwBegin, BtwEnd,
)  # fmt: skip
"""Every event Struct (for ``isinstance`` checks)."""

REQUEST_CLASSES: tuple[type[Request], ...] = (
    ApprovalRequest, ToolCallRequest, QuestionRequest, HookRequest,
)  # fmt: skip
"""Every request Struct."""
