"""Protocol-neutral session events: what a turn produces and history holds.

A :class:`~wireproto.agent.turn.Turn` emits these; the runtime appends each
to the session store and hands it to the connection's
:class:`~wireproto.agent.api.Channel`, whose adapter translates it (ACP
``session/update`` variants, Wire ``event`` types). Replay (ACP
``session/load``, Wire ``replay``) sends the stored events through the same
translation, so live and replayed traffic look alike, message ids included.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Literal, get_args

import msgspec
from msgspec import UNSET, UnsetType

from wireproto.agent.content import ContentBlock, ToolContent

__all__ = [
    "AgentMessageChunk",
    "ApprovalResolved",
    "CommandsChanged",
    "CompactionEnded",
    "CompactionStarted",
    "Event",
    "HistoryCleared",
    "Location",
    "Notice",
    "OptionChanged",
    "PlanEntry",
    "PlanModeChanged",
    "PlanPriority",
    "PlanStatus",
    "PlanUpdated",
    "SideQuestionEnded",
    "SideQuestionStarted",
    "SlashCommandInfo",
    "SteerReceived",
    "StepRetried",
    "StepStarted",
    "StopReason",
    "SubagentEvent",
    "ThoughtChunk",
    "TitleChanged",
    "ToolArgumentsChunk",
    "ToolCallStarted",
    "ToolCallUpdated",
    "ToolKind",
    "ToolStatus",
    "TurnEnded",
    "UsageUpdated",
    "UserMessage",
]


class StopReason(str, enum.Enum):
    """How a turn ended. Adapters map values their protocol lacks to the nearest."""

    END_TURN = "end_turn"
    CANCELLED = "cancelled"
    MAX_TOKENS = "max_tokens"
    MAX_STEPS = "max_steps"
    REFUSAL = "refusal"


class ToolKind(str, enum.Enum):
    """What a tool call does (a UI hint)."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    THINK = "think"
    FETCH = "fetch"
    SWITCH_MODE = "switch_mode"
    OTHER = "other"


class ToolStatus(str, enum.Enum):
    """The state of a tool call."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"


class Location(msgspec.Struct, frozen=True, omit_defaults=True):
    """A file location a tool call touches (absolute path, 1-based line)."""

    path: str
    line: int | None = None


PlanStatus = Literal["pending", "in_progress", "completed"]
"""The status of a plan entry."""

PlanPriority = Literal["high", "medium", "low"]
"""The priority of a plan entry."""

_PLAN_STATUSES: tuple[str, ...] = get_args(PlanStatus)
_PLAN_PRIORITIES: tuple[str, ...] = get_args(PlanPriority)
_DECISIONS = ("allow_once", "allow_session", "reject")


def _check(owner: str, field: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{owner}.{field} must be one of {', '.join(allowed)}; got {value!r}")


class PlanEntry(msgspec.Struct, frozen=True):
    """One entry of a plan.

    Raises:
        ValueError: an unknown ``status`` or ``priority`` (e.g. ``"done"``).
    """

    content: str
    status: PlanStatus = "pending"
    priority: PlanPriority = "medium"

    def __post_init__(self) -> None:
        _check("PlanEntry", "status", self.status, _PLAN_STATUSES)
        _check("PlanEntry", "priority", self.priority, _PLAN_PRIORITIES)


def plan_entries(entries: Iterable[PlanEntry], where: str) -> list[PlanEntry]:
    """``entries`` as a list; a ``TypeError`` naming ``where`` unless each is a PlanEntry."""
    plan = None if isinstance(entries, PlanEntry) else list(entries)
    if plan is None or not all(isinstance(e, PlanEntry) for e in plan):
        raise TypeError(f"{where} takes the list of the plan's entries, e.g. "
                        "[PlanEntry('Read the code', 'in_progress')]")
    return plan


class UserMessage(msgspec.Struct, tag="user_message", frozen=True):
    """The user's prompt that started a turn."""

    content: list[ContentBlock]
    message_id: str


class AgentMessageChunk(msgspec.Struct, tag="message", frozen=True):
    """A piece of the agent's reply; chunks sharing ``message_id`` form one message."""

    text: str
    message_id: str


class ThoughtChunk(msgspec.Struct, tag="thought", frozen=True):
    """A piece of the agent's visible reasoning."""

    text: str
    message_id: str


class ToolCallStarted(msgspec.Struct, tag="tool_call", frozen=True, omit_defaults=True):
    """A new tool call."""

    id: str
    name: str
    title: str
    kind: ToolKind = ToolKind.OTHER
    status: ToolStatus = ToolStatus.PENDING
    locations: list[Location] = []
    raw_input: Any = None
    external: bool = False


class ToolCallUpdated(msgspec.Struct, tag="tool_call_update", frozen=True, omit_defaults=True):
    """A change to a tool call; ``None``/``UNSET`` fields are unchanged.

    ``content`` replaces the whole list. ``message`` is a short explanation
    of the outcome (Wire shows it to the model).
    """

    id: str
    status: ToolStatus | None = None
    title: str | None = None
    content: list[ToolContent] | None = None
    message: str | None = None
    raw_output: Any | UnsetType = UNSET


class PlanUpdated(msgspec.Struct, tag="plan", frozen=True):
    """The complete current plan (replaces the previous one)."""

    entries: list[PlanEntry]


class UsageUpdated(msgspec.Struct, tag="usage", frozen=True, omit_defaults=True):
    """Context and token usage so far; ``None`` fields are unknown (or unchanged).

    Attributes:
        used / size: context tokens in use / the context window.
        input_tokens: input tokens, not counting the two cache counters.
        output_tokens: output tokens.
        cache_read_tokens / cache_write_tokens: input tokens read from / written
            to the provider's prompt cache.
        cost / currency: the session's cost so far (e.g. ``0.12``, ``"USD"``).
    """

    used: int | None = None
    size: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    currency: str | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class StepStarted(msgspec.Struct, tag="step", frozen=True):
    """The turn starts step ``n`` (2, 3, ...): one more model call of an agent loop.

    Step 1 starts with the turn and is not announced.
    """

    n: int


class SteerReceived(msgspec.Struct, tag="steer", frozen=True):
    """Extra user input taken into the running turn."""

    content: list[ContentBlock]


class ApprovalResolved(msgspec.Struct, tag="approval", frozen=True):
    """An approval request was answered (or resolved at turn end)."""

    request_id: str
    tool_call_id: str
    decision: Literal["allow_once", "allow_session", "reject"]
    feedback: str = ""

    def __post_init__(self) -> None:
        _check("ApprovalResolved", "decision", self.decision, _DECISIONS)


class PlanModeChanged(msgspec.Struct, tag="plan_mode", frozen=True):
    """Plan mode was switched on or off."""

    enabled: bool


class OptionChanged(msgspec.Struct, tag="option", frozen=True):
    """A session option changed (by the client or by the agent)."""

    option_id: str
    value: str | bool


class HistoryCleared(msgspec.Struct, tag="clear", frozen=True):
    """History before this point is dropped from later loads and replays."""


class Notice(msgspec.Struct, tag="notice", frozen=True, omit_defaults=True):
    """Live information for the user (never replayed)."""

    severity: str
    title: str
    description: str | None = None


class TitleChanged(msgspec.Struct, tag="title", frozen=True):
    """The agent set the session's title (:meth:`Turn.set_title`)."""

    title: str


class StepRetried(msgspec.Struct, tag="retry", frozen=True, omit_defaults=True):
    """The current step failed with a recoverable error and will be retried.

    Attributes:
        n: the step being retried.
        next_attempt / max_attempts: the coming attempt (1-based) and the limit.
        wait_s: seconds until the retry.
        error_type: the error's kind (e.g. an exception class name).
        status_code: an HTTP status of the failure, when there was one.
    """

    n: int
    next_attempt: int
    max_attempts: int
    wait_s: float = 0.0
    error_type: str = ""
    status_code: int | None = None


class CompactionStarted(msgspec.Struct, tag="compaction_begin", frozen=True):
    """The agent began compacting its context (``id`` pairs it with the end)."""

    id: str


class CompactionEnded(msgspec.Struct, tag="compaction_end", frozen=True, omit_defaults=True):
    """The compaction ``id`` finished; ``summary`` is what replaced the context."""

    id: str
    summary: str = ""
    error: str | None = None


class SideQuestionStarted(msgspec.Struct, tag="btw_begin", frozen=True):
    """A side question (asked outside the main flow of the turn) is being answered."""

    id: str
    question: str


class SideQuestionEnded(msgspec.Struct, tag="btw_end", frozen=True, omit_defaults=True):
    """The side question ``id`` got its ``response`` (or failed with ``error``)."""

    id: str
    response: str | None = None
    error: str | None = None


class ToolArgumentsChunk(msgspec.Struct, tag="tool_args", frozen=True):
    """A piece of a tool call's arguments (JSON text), streamed as the model writes them.

    The pieces of one call concatenate to its arguments; ``id`` is the call
    (the last one started: Wire carries no id).
    """

    id: str
    part: str


class CommandsChanged(msgspec.Struct, tag="commands", frozen=True):
    """The session's slash commands changed (the full new list)."""

    commands: list[SlashCommandInfo]


class SlashCommandInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """A slash command as :class:`CommandsChanged` lists it."""

    name: str
    description: str
    input_hint: str | None = None


class SubagentEvent(msgspec.Struct, tag="subagent", frozen=True, omit_defaults=True):
    """An event of a sub-agent working for the tool call ``parent_tool_call_id``.

    ``event`` is any event the sub-agent produced (a message chunk, its own
    tool calls...), wrapped so that clients show it inside the parent call.
    """

    parent_tool_call_id: str
    event: Event
    agent_id: str | None = None
    subagent_type: str | None = None


class TurnEnded(msgspec.Struct, tag="turn_end", frozen=True, omit_defaults=True):
    """A turn finished with ``stop_reason``.

    ``error`` is set when the agent failed (it raised, or returned no stop
    reason): the client was answered with that error, not a stop reason.
    """

    stop_reason: StopReason
    error: str | None = None


Event = (
    UserMessage
    | AgentMessageChunk
    | ThoughtChunk
    | ToolCallStarted
    | ToolCallUpdated
    | PlanUpdated
    | UsageUpdated
    | StepStarted
    | SteerReceived
    | ApprovalResolved
    | PlanModeChanged
    | OptionChanged
    | HistoryCleared
    | Notice
    | TurnEnded
    | TitleChanged
    | StepRetried
    | CompactionStarted
    | CompactionEnded
    | SideQuestionStarted
    | SideQuestionEnded
    | ToolArgumentsChunk
    | CommandsChanged
    | SubagentEvent
)
"""Any session event."""
