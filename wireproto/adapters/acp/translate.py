"""Translation between the protocol-neutral agent API and ACP types.

Theory of operation
-------------------
Everything here is synchronous, pure and free of I/O: the connection feeds
neutral values in and writes the ACP Structs that come out.

* **Prompt content.** ACP content blocks become neutral
  :data:`~wireproto.agent.content.ContentBlock`\\ s through the table
  :data:`_BLOCK_IN` (block class -> converter); the embedded resource
  variant is told apart by its resource class (:func:`_resource_in`). The way
  back (:func:`block_out`, for replayed user messages) is the table
  :data:`_BLOCK_OUT`.
* **Events.** :func:`updates` turns one neutral
  :data:`~wireproto.agent.events.Event` into zero or more ``session/update``
  variants with the rule table :data:`_EVENT_RULES` (event class -> rule).
  Events ACP has no variant for (approvals, plan mode, history clears)
  translate to nothing. The end of a live turn announces the session's
  title and last activity with a ``session_info_update`` (still before the
  prompt's response). The live user prompt is not echoed (the client sent
  it); in a replay it becomes ``user_message_chunk``\\ s carrying the
  original message id, just as agent and thought chunks keep theirs.
  Gated variants are produced only when the client advertised them
  (``notice``: ``session.notices``); notices are never replayed.
* **Options.** :func:`config_options` renders the agent's declared options
  with a session's current values as ``SessionConfigOption``\\ s: a
  :class:`~wireproto.agent.api.BooleanOption` is a ``boolean`` option only
  for a client that advertised ``session.configOptions.boolean``, otherwise
  a ``select`` of its off/on values. :func:`modes` derives the legacy
  ``modes`` state from the first select option of category ``mode``.
* **Everything else** (capabilities, agent info, auth methods, commands,
  permission options and outcomes, stop reasons) is a small table or a
  one-line function below.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from msgspec import UNSET

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.activity import ACTIVITY_RULES, Accumulated
from wireproto.agent.api import (
    AgentInfo,
    AuthMethod,
    ClientCapabilities,
    Decision,
    Option,
    SelectOption,
    Session,
    SessionInfo,
    SlashCommand,
)
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
)
from wireproto.agent.events import (
    AgentMessageChunk,
    Event,
    Location,
    Notice,
    OptionChanged,
    PlanEntry,
    PlanUpdated,
    SteerReceived,
    StopReason,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
    TurnEnded,
    UsageUpdated,
    UserMessage,
)
from wireproto.agent.store.base import iso

__all__ = [
    "DECISION_OF_OPTION",
    "PERMISSION_OPTIONS",
    "STOP_REASONS",
    "Context",
    "agent_info",
    "auth_methods",
    "available_commands",
    "block_out",
    "client_capabilities",
    "config_options",
    "iso_time",
    "mode_option",
    "modes",
    "prompt_in",
    "session_info",
    "session_info_update",
    "tool_content",
    "updates",
]

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ content


def _resource_in(block: S.EmbeddedResource) -> ContentBlock:
    resource = block.resource
    mime = _opt(getattr(resource, "mime_type", None))
    if isinstance(resource, S.TextResourceContents):
        return ResourceText(uri=resource.uri, text=resource.text, mime_type=mime)
    assert isinstance(resource, S.BlobResourceContents)
    return ResourceBlob(uri=resource.uri, blob=resource.blob, mime_type=mime)


def _opt(value: Any) -> Any:
    """``UNSET`` -> ``None`` (optional ACP fields into neutral ones)."""
    return None if value is UNSET else value


def _link_in(block: S.ResourceLink) -> ContentBlock:
    return ResourceLink(
        uri=block.uri, name=block.name, mime_type=_opt(block.mime_type),
        title=_opt(block.title), description=_opt(block.description), size=_opt(block.size),
    )


_BLOCK_IN: dict[type, Callable[[Any], ContentBlock]] = {
    S.TextContent: lambda b: Text(b.text),
    S.ImageContent: lambda b: Image(mime_type=b.mime_type, data=b.data, url=_opt(b.uri)),
    S.AudioContent: lambda b: Audio(mime_type=b.mime_type, data=b.data),
    S.ResourceLink: _link_in,
    S.EmbeddedResource: _resource_in,
}
"""ACP content block class -> neutral block."""


def prompt_in(blocks: Sequence[S.ContentBlock]) -> list[ContentBlock]:
    """Translate a ``session/prompt`` prompt into neutral blocks (order kept)."""
    return [_BLOCK_IN[type(block)](block) for block in blocks]


def _none_unset(value: Any) -> Any:
    return UNSET if value is None else value


def _media_out(block: Image | Audio) -> S.ContentBlock:
    """Media with inline data keep their type; media known only by URL become a link."""
    kind = "image" if isinstance(block, Image) else "audio"
    if block.data is not None and block.mime_type is not None:
        if isinstance(block, Image):
            return S.ImageContent(data=block.data, mime_type=block.mime_type,
                                  uri=_none_unset(block.url))
        return S.AudioContent(data=block.data, mime_type=block.mime_type)
    return S.ResourceLink(uri=block.url or "", name=kind, mime_type=_none_unset(block.mime_type))


_BLOCK_OUT: dict[type, Callable[[Any], S.ContentBlock]] = {
    Text: lambda b: S.TextContent(text=b.text),
    Image: _media_out,
    Audio: _media_out,
    Video: lambda b: S.ResourceLink(uri=b.url, name="video", mime_type=_none_unset(b.mime_type)),
    ResourceText: lambda b: S.EmbeddedResource(
        resource=S.TextResourceContents(uri=b.uri, text=b.text, mime_type=_none_unset(b.mime_type))
    ),
    ResourceBlob: lambda b: S.EmbeddedResource(
        resource=S.BlobResourceContents(uri=b.uri, blob=b.blob, mime_type=_none_unset(b.mime_type))
    ),
    ResourceLink: lambda b: S.ResourceLink(
        uri=b.uri, name=b.name, mime_type=_none_unset(b.mime_type), title=_none_unset(b.title),
        description=_none_unset(b.description), size=_none_unset(b.size),
    ),
}
"""Neutral block -> ACP content block (media known only by URL become text or a link)."""


def block_out(block: ContentBlock) -> S.ContentBlock:
    """Translate one neutral block into an ACP content block."""
    return _BLOCK_OUT[type(block)](block)


_TOOL_CONTENT: dict[type, Callable[[Any], S.ToolCallContent]] = {
    Text: lambda c: S.Content(content=S.TextContent(text=c.text)),
    Diff: lambda c: S.Diff(path=c.path, old_text=c.old_text, new_text=c.new_text),
    Terminal: lambda c: S.Terminal(terminal_id=c.terminal_id),
    **{kind: lambda c: S.Content(content=block_out(c))
       for kind in (Image, Audio, Video, ResourceText, ResourceBlob, ResourceLink)},
}
"""Neutral tool content -> ACP ``ToolCallContent`` (content blocks always wrapped)."""


def tool_content(content: Sequence[ToolContent]) -> list[S.ToolCallContent]:
    """Translate tool-call content (a diff of a new file keeps ``oldText: null``)."""
    return [_TOOL_CONTENT[type(item)](item) for item in content]


# ------------------------------------------------------------------- events


@dataclasses.dataclass
class Context:
    """What event translation needs to know about one connection.

    Attributes:
        client: the client's capabilities.
        options: the agent's declared options (for ``config_option_update``).
        accumulated: streamed text ACP sends whole (see :mod:`.activity`).
    """

    client: ClientCapabilities
    options: Sequence[Option] = ()
    accumulated: Accumulated = dataclasses.field(default_factory=Accumulated)


_PLAN_STATUS: dict[str, S.PlanEntryStatus] = {
    "pending": "pending", "in_progress": "in_progress", "completed": "completed",
}
_PLAN_PRIORITY: dict[str, S.PlanEntryPriority] = {"high": "high", "medium": "medium", "low": "low"}


def _plan_entry(entry: PlanEntry) -> S.PlanEntry:
    """Unknown neutral statuses / priorities become ``pending`` / ``medium``."""
    return S.PlanEntry(
        content=entry.content,
        status=_PLAN_STATUS.get(entry.status, "pending"),
        priority=_PLAN_PRIORITY.get(entry.priority, "medium"),
    )


def _location(loc: Location) -> S.ToolCallLocation:
    return S.ToolCallLocation(path=loc.path, line=_none_unset(loc.line))


def _tool_call(e: ToolCallStarted, ctx: Context | None = None) -> S.ToolCall:
    if ctx is not None:  # a new call: nothing streamed for its id yet (live or replayed)
        ctx.accumulated.forget(e.id)
    return S.ToolCall(
        tool_call_id=e.id, title=e.title, name=e.name, kind=e.kind.value, status=e.status.value,
        locations=[_location(loc) for loc in e.locations] if e.locations else UNSET,
        raw_input=_none_unset(e.raw_input),
    )


def _tool_update(e: ToolCallUpdated) -> S.ToolCallProgress:
    content = e.content
    if not content and e.message and e.status is ToolStatus.FAILED:
        content = [Text(e.message)]  # ACP has no message field: the reason is the content
    return S.ToolCallProgress(
        tool_call_id=e.id,
        status=UNSET if e.status is None else e.status.value,
        title=_none_unset(e.title),
        content=UNSET if content is None else tool_content(content),
        raw_output=e.raw_output,
    )


def _usage(e: UsageUpdated) -> list[S.SessionUpdate]:
    if e.used is None or e.size is None:
        return []  # ACP needs both numbers; token counts alone have no variant
    cost = UNSET if e.cost is None or e.currency is None else S.Cost(amount=e.cost,
                                                                      currency=e.currency)
    return [S.UsageUpdate(used=e.used, size=e.size, cost=cost)]


def _notice(e: Notice, ctx: Context, replay: bool) -> list[S.SessionUpdate]:
    if replay or not ctx.client.notices:
        return []
    return [S.Notice(severity=e.severity, title=e.title or e.severity,
                     description=_none_unset(e.description))]


def _user(e: UserMessage, ctx: Context, replay: bool) -> list[S.SessionUpdate]:
    if not replay:
        return []  # the client sent the prompt itself
    return [S.UserMessageChunk(content=block_out(b), message_id=e.message_id) for b in e.content]


def _steer(e: SteerReceived, ctx: Context, replay: bool) -> list[S.SessionUpdate]:
    return []  # ACP has no steering; such input never arrives over ACP


iso_time = iso
"""ISO 8601 in UTC with microseconds, as ``session/list`` shows ``updatedAt``."""


def session_info_update(session: Session) -> S.SessionInfoUpdate:
    """The session's title (when it has one) and last activity."""
    return S.SessionInfoUpdate(title=_none_unset(session.title),
                               updated_at=iso_time(session.updated_at))


_Rule = Callable[[Any, Context, bool], list[S.SessionUpdate]]

_EVENT_RULES: dict[type, _Rule] = {
    UserMessage: _user,
    AgentMessageChunk: lambda e, ctx, replay: [
        S.AgentMessageChunk(content=S.TextContent(text=e.text), message_id=e.message_id)
    ],
    ThoughtChunk: lambda e, ctx, replay: [
        S.AgentThoughtChunk(content=S.TextContent(text=e.text), message_id=e.message_id)
    ],
    ToolCallStarted: lambda e, ctx, replay: [_tool_call(e, ctx)],
    ToolCallUpdated: lambda e, ctx, replay: [_tool_update(e)],
    PlanUpdated: lambda e, ctx, replay: [S.Plan(entries=[_plan_entry(x) for x in e.entries])],
    UsageUpdated: lambda e, ctx, replay: _usage(e),
    Notice: _notice,
    SteerReceived: _steer,
    **ACTIVITY_RULES,
}
"""Neutral event class -> rule producing ``session/update`` variants.

Event classes missing here (``ApprovalResolved``, ``PlanModeChanged``,
``HistoryCleared``) have no ACP variant. ``OptionChanged`` and ``TurnEnded``
need the session and are handled in :func:`updates`.
"""


def updates_of(event: Event, ctx: Context, replay: bool) -> list[S.SessionUpdate]:
    """The ``session/update`` variants of an event that needs no session (else ``[]``)."""
    rule = _EVENT_RULES.get(type(event))
    return rule(event, ctx, replay) if rule is not None else []


def updates(
    event: Event, session: Session, ctx: Context, *, replay: bool = False
) -> list[S.SessionUpdate]:
    """Translate one neutral event of ``session`` into ``session/update`` variants."""
    rule = _EVENT_RULES.get(type(event))
    if rule is not None:
        return rule(event, ctx, replay)
    if replay:
        return []
    if isinstance(event, OptionChanged):
        values = {**session.options, event.option_id: event.value}
        return option_updates(ctx.options, values, ctx.client, event.option_id)
    if isinstance(event, TurnEnded):
        return [session_info_update(session)]
    return []


# ------------------------------------------------------------------ options


def mode_option(options: Sequence[Option]) -> SelectOption | None:
    """The option shown as legacy ``modes``: the first select of category ``mode``."""
    for option in options:
        if isinstance(option, SelectOption) and option.category == "mode":
            return option
    return None


def _config_option(
    option: Option, value: str | bool, boolean_ok: bool
) -> S.SessionConfigOption:
    common: dict[str, Any] = {
        "id": option.id, "name": option.name, "category": _none_unset(option.category),
        "description": _none_unset(option.description),
    }
    if isinstance(option, SelectOption):
        items: list[S.SessionConfigSelectItem] = [
            S.SessionConfigSelectOption(value=c.value, name=c.name,
                                        description=_none_unset(c.description))
            for c in option.choices
        ]
        return S.SessionConfigOptionSelect(current_value=str(value), options=items, **common)
    on = bool(value)
    if boolean_ok:
        return S.SessionConfigOptionBoolean(current_value=on, **common)
    items = [
        S.SessionConfigSelectOption(value=option.off_value, name=option.off_value.capitalize()),
        S.SessionConfigSelectOption(value=option.on_value, name=option.on_value.capitalize()),
    ]
    current = option.on_value if on else option.off_value
    return S.SessionConfigOptionSelect(current_value=current, options=items, **common)


def config_options(
    options: Sequence[Option], values: dict[str, str | bool], client: ClientCapabilities
) -> list[S.SessionConfigOption]:
    """Render every declared option with its current value (declaration order)."""
    return [
        _config_option(o, values.get(o.id, o.default), client.boolean_options) for o in options
    ]


def modes(options: Sequence[Option], values: dict[str, str | bool]) -> S.SessionModeState | None:
    """The legacy ``modes`` state, or ``None`` when the agent has no mode option."""
    option = mode_option(options)
    if option is None:
        return None
    return S.SessionModeState(
        current_mode_id=str(values.get(option.id, option.default)),
        available_modes=[
            S.SessionMode(id=c.value, name=c.name, description=_none_unset(c.description))
            for c in option.choices
        ],
    )


def option_updates(
    options: Sequence[Option],
    values: dict[str, str | bool],
    client: ClientCapabilities,
    changed: str,
) -> list[S.SessionUpdate]:
    """The updates announcing a change of option ``changed``.

    Always the complete ``config_option_update``; plus ``current_mode_update``
    when the mode option changed (legacy modes stay in sync).
    """
    out: list[S.SessionUpdate] = []
    mode = mode_option(options)
    if mode is not None and mode.id == changed:
        out.append(S.CurrentModeUpdate(current_mode_id=str(values.get(mode.id, mode.default))))
    out.append(S.ConfigOptionUpdate(config_options=config_options(options, values, client)))
    return out


# ----------------------------------------------------- everything else


def client_capabilities(
    caps: S.ClientCapabilities, info: S.Implementation | None
) -> ClientCapabilities:
    """The neutral view of an ACP client's ``initialize`` capabilities.

    ``terminal`` stays false: the ACP adapter offers agents no terminal
    methods (commands run locally).
    """
    session = caps.session if isinstance(caps.session, S.ClientSessionCapabilities) else None
    elicitation = caps.elicitation
    config = session.config_options if session is not None else None
    boolean = isinstance(config, S.SessionConfigOptionsCapabilities) and isinstance(
        config.boolean, S.BooleanConfigOptionCapabilities
    )
    return ClientCapabilities(
        name=info.name if info is not None else None,
        version=info.version if info is not None else None,
        read_text_file=caps.fs.read_text_file,
        write_text_file=caps.fs.write_text_file,
        terminal=False,
        boolean_options=boolean,
        notices=session is not None and isinstance(session.notices, S.NoticeCapabilities),
        compaction=session is not None and isinstance(session.compaction,
                                                      S.CompactionCapabilities),
        questions=isinstance(elicitation, S.ElicitationCapabilities)
        and isinstance(elicitation.form, S.ElicitationFormCapabilities),
        url_questions=isinstance(elicitation, S.ElicitationCapabilities)
        and isinstance(elicitation.url, S.ElicitationUrlCapabilities),
        external_tools_supported=False,
    )


def agent_info(info: AgentInfo) -> S.Implementation:
    """The ``agentInfo`` of ``initialize``."""
    return S.Implementation(name=info.name, title=_none_unset(info.title), version=info.version)


def auth_methods(methods: Sequence[AuthMethod]) -> list[S.AuthMethod]:
    """The ``authMethods`` of ``initialize`` (all performed by the agent itself)."""
    return [
        S.AuthMethodAgent(id=m.id, name=m.name, description=_none_unset(m.description))
        for m in methods
    ]


def available_commands(commands: Sequence[SlashCommand]) -> S.AvailableCommandsUpdate:
    """The ``available_commands_update`` for the agent's slash commands."""
    return S.AvailableCommandsUpdate(
        available_commands=[
            S.AvailableCommand(
                name=c.name, description=c.description,
                input=UNSET if c.input_hint is None else S.UnstructuredCommandInput(
                    hint=c.input_hint
                ),
            )
            for c in commands
        ]
    )


def session_info(info: SessionInfo) -> S.SessionInfo:
    """One ``session/list`` entry."""
    return S.SessionInfo(
        session_id=info.session_id, cwd=info.cwd, title=_none_unset(info.title),
        updated_at=info.updated_at,
        additional_directories=list(info.roots) if info.roots else UNSET,
    )


STOP_REASONS: dict[StopReason, S.StopReason] = {
    StopReason.END_TURN: "end_turn",
    StopReason.CANCELLED: "cancelled",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.MAX_STEPS: "max_turn_requests",
    StopReason.REFUSAL: "refusal",
}
"""Neutral stop reason -> ACP ``stopReason``."""

PERMISSION_OPTIONS: tuple[S.PermissionOption, ...] = (
    S.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    S.PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    S.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
)
"""The options of every ``session/request_permission`` (ids equal the kinds)."""

DECISION_OF_OPTION: dict[str, Decision] = {
    "allow_once": Decision.ALLOW_ONCE,
    "allow_always": Decision.ALLOW_SESSION,
    "reject_once": Decision.REJECT,
}
"""Chosen ``optionId`` -> neutral decision (anything else, and ``cancelled``, rejects)."""
