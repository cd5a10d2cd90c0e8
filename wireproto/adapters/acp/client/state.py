"""Client-side ACP state: what a client knows about its sessions, and its handler types.

* :class:`ClientSession` is kept current from the session's updates by the
  table :data:`_APPLY` (config options, commands, mode, title, usage).
* :class:`SessionEvent` is what ``on_update`` receives; replayed history is
  flagged (protocol-acp.md#client-side).
* :func:`decode_notification` decodes ``session/update`` leniently and also
  accepts the documented aliases of :data:`_UPDATE_ALIASES` (protocol-acp.md#schema-over-docs),
  and ``usage_update`` counts sent as ``null`` (read as 0, :data:`_UNKNOWN_COUNTS`).
* :func:`default_outcome` is the answer to a permission request when no
  handler is installed: the first ``reject_*`` option, else ``cancelled``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from msgspec import UNSET

from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema as s
from wireproto.jsonrpc.codec import is_too_deep

__all__ = [
    "RESOURCE_NOT_FOUND",
    "ClientSession",
    "LoadResult",
    "PermissionHandler",
    "SessionEvent",
    "UpdateHandler",
    "decode_notification",
    "default_outcome",
    "option_of_kind",
]

RESOURCE_NOT_FOUND = -32002
"""The code answering a request about a file, terminal or session that does not exist."""


@dataclasses.dataclass
class ClientSession:
    """What the client knows about one session; kept current from its updates.

    Attributes:
        session_id: the agent's id.
        cwd: the working directory sent when the session was opened.
        additional_directories: the extra roots sent with it.
        modes: the legacy mode state (``current_mode_id`` follows updates).
        config_options: the complete current config options.
        available_commands: the latest ``available_commands_update``.
        title / updated_at: from ``session_info_update``.
        usage: the latest ``usage_update``.
    """

    session_id: str
    cwd: str
    additional_directories: tuple[str, ...] = ()
    modes: s.SessionModeState | None = None
    config_options: list[s.SessionConfigOption] = dataclasses.field(default_factory=list)
    available_commands: list[s.AvailableCommand] = dataclasses.field(default_factory=list)
    title: str | None = None
    updated_at: str | None = None
    usage: s.UsageUpdate | None = None

    @property
    def roots(self) -> tuple[str, ...]:
        """The session's root set ``[cwd, *additional_directories]``."""
        return (self.cwd, *self.additional_directories)

    def apply(self, update: s.SessionUpdate) -> None:
        """Apply a state-changing update (others are ignored)."""
        apply = _APPLY.get(type(update))
        if apply is not None:
            apply(self, update)

    def adopt(self, modes: Any, config_options: Any) -> None:
        """Take ``modes`` / ``configOptions`` from a session response (when present)."""
        if isinstance(modes, s.SessionModeState):
            self.modes = modes
        if isinstance(config_options, list):
            self.config_options = list(config_options)


def _set_mode(session: ClientSession, update: s.CurrentModeUpdate) -> None:
    if session.modes is not None:
        session.modes.current_mode_id = update.current_mode_id


def _set_info(session: ClientSession, update: s.SessionInfoUpdate) -> None:
    if update.title is not UNSET:
        session.title = update.title
    if update.updated_at is not UNSET:
        session.updated_at = update.updated_at


def _set_usage(session: ClientSession, update: s.UsageUpdate) -> None:
    session.usage = update


def _set_options(session: ClientSession, update: s.ConfigOptionUpdate) -> None:
    session.config_options = list(update.config_options)


def _set_commands(session: ClientSession, update: s.AvailableCommandsUpdate) -> None:
    session.available_commands = list(update.available_commands)


_APPLY: dict[type, Callable[[ClientSession, Any], None]] = {
    s.ConfigOptionUpdate: _set_options,
    s.AvailableCommandsUpdate: _set_commands,
    s.CurrentModeUpdate: _set_mode,
    s.SessionInfoUpdate: _set_info,
    s.UsageUpdate: _set_usage,
}
"""Update type -> how it changes the :class:`ClientSession`."""


@dataclasses.dataclass(frozen=True)
class SessionEvent:
    """One ``session/update`` as given to ``on_update``.

    Attributes:
        session_id: the session it belongs to.
        update: the decoded update.
        replay: part of a ``session/load`` history replay, not live.
        meta: the notification's ``_meta`` (``None`` when absent).
    """

    session_id: str
    update: s.SessionUpdate
    replay: bool = False
    meta: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """What :meth:`ClientConnection.load_session` returns.

    Attributes:
        response: the ``session/load`` result.
        history: the replayed updates, in order.
    """

    response: s.LoadSessionResponse
    history: list[s.SessionUpdate]


# --------------------------------------------------------------- handlers

PermissionHandler = Callable[
    [s.RequestPermissionRequest], Awaitable["s.RequestPermissionOutcome | str"]
]
"""Answers a permission request: an outcome, or the chosen ``optionId``."""

UpdateHandler = Callable[[SessionEvent], Awaitable[None]]
"""Sees every update of every session, in arrival order."""


def option_of_kind(
    request: s.RequestPermissionRequest, *kinds: s.PermissionOptionKind
) -> s.PermissionOption | None:
    """Return the option of ``request`` of the first of ``kinds`` it offers (preferred first).

    ``kinds`` is an order of preference, not a filter: with ``allow_always``
    before ``allow_once`` an ``allow_always`` option wins wherever the
    request lists it.
    """
    for kind in kinds:
        option = next((o for o in request.options if o.kind == kind), None)
        if option is not None:
            return option
    return None


def default_outcome(request: s.RequestPermissionRequest) -> s.RequestPermissionOutcome:
    """The answer without a handler: the first ``reject_*`` option, else ``cancelled``."""
    option = option_of_kind(request, "reject_once", "reject_always")
    if option is None:
        return s.CancelledPermissionOutcome()
    return s.SelectedPermissionOutcome(option_id=option.option_id)


# ------------------------------------------------------------- decoding

_UPDATE_ALIASES: dict[str, tuple[tuple[str, str], ...]] = {
    "current_mode_update": (("modeId", "currentModeId"),),  # the v1 doc's mistake
}
"""``sessionUpdate`` -> (alias, schema name) pairs accepted on input."""

_UNKNOWN_COUNTS: dict[str, tuple[str, ...]] = {
    "usage_update": ("used", "size"),
}
"""``sessionUpdate`` -> required counts some agents send as ``null`` (or leave out)
for "unknown"; they are read as 0 instead of dropping the whole update."""


def decode_notification(raw: msgspec.Raw) -> s.SessionNotification:
    """Decode ``session/update`` params leniently (with the documented aliases).

    Raises:
        msgspec.ValidationError: not a valid notification (unknown variant ...).
    """
    try:
        return acp_codec.decode(raw, s.SessionNotification)
    except msgspec.ValidationError as exc:
        if is_too_deep(exc):
            raise
        obj = msgspec.json.decode(raw)
        update = obj.get("update") if isinstance(obj, dict) else None
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        aliases = _UPDATE_ALIASES.get(kind, ()) if isinstance(kind, str) else ()
        counts = _UNKNOWN_COUNTS.get(kind, ()) if isinstance(kind, str) else ()
        if not (aliases or counts) or not isinstance(update, dict):
            raise
        fixed = dict(update)
        for alias, name in aliases:
            if alias in fixed and name not in fixed:
                fixed[name] = fixed.pop(alias)
        for name in counts:
            if fixed.get(name) is None:
                fixed[name] = 0
        return acp_codec.convert({**obj, "update": fixed}, s.SessionNotification)
