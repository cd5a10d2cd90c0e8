"""Session options across the proxy: ACP config options and modes <-> Wire flags.

* **ACP backend** (:func:`acp_options`): the backend session's select config
  options become neutral :class:`~wireproto.agent.api.SelectOption`\\ s (with
  their category, so a Wire front's ``--model M`` / ``--thinking`` reach the
  options of category ``model`` / ``thought_level``), and its legacy modes a
  ``mode`` option when no config option has the ``mode`` category. A mode
  whose id or name says ``plan`` serves Wire's ``set_plan_mode``
  (:func:`plan_mode_id`).
* **Wire backend** (:data:`WIRE_OPTIONS`): Wire has no option methods, only
  ``set_plan_mode`` and spawn flags. An ACP front gets a ``mode`` option
  (``default`` / ``plan``: Wire ``set_plan_mode``) and a ``thinking`` switch
  (the backend is respawned with ``--thinking`` / ``--no-thinking`` on the
  same session id). The model cannot be listed over Wire: it is not offered.
"""

from __future__ import annotations

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.state import ClientSession
from wireproto.agent.api import BooleanOption, Choice, Option, SelectOption

__all__ = ["MODE_OPTION", "WIRE_OPTIONS", "acp_options", "plan_mode_id"]

MODE_OPTION = "mode"
"""The id of the mode option offered to the front."""

WIRE_OPTIONS: tuple[Option, ...] = (
    SelectOption(MODE_OPTION, "Mode", (Choice("default", "Default"),
                                       Choice("plan", "Plan", "Plan before acting")),
                 default="default", category="mode"),
    BooleanOption("thinking", "Thinking", default=False, category="thought_level"),
)
"""What an ACP front may set on a Wire backend."""


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _choices(option: s.SessionConfigOptionSelect) -> tuple[Choice, ...]:
    choices: list[Choice] = []
    for item in option.options:
        entries = item.options if isinstance(item, s.SessionConfigSelectGroup) else [item]
        for entry in entries:
            if isinstance(entry, s.SessionConfigSelectOption):
                choices.append(Choice(entry.value, entry.name, _text(entry.description)))
    return tuple(choices)


def acp_options(session: ClientSession) -> tuple[Option, ...]:
    """The neutral options mirroring an ACP backend session's options and modes."""
    options: list[Option] = []
    for option in session.config_options:
        category = _text(option.category)
        if isinstance(option, s.SessionConfigOptionSelect):
            options.append(SelectOption(option.id, option.name, _choices(option),
                                        default=option.current_value, category=category,
                                        description=_text(option.description)))
        elif isinstance(option, s.SessionConfigOptionBoolean):
            options.append(BooleanOption(option.id, option.name, default=option.current_value,
                                         category=category))
    modes = session.modes
    if modes is not None and modes.available_modes and \
            all(o.category != "mode" for o in options):
        options.append(SelectOption(
            MODE_OPTION, "Mode",
            tuple(Choice(m.id, m.name, _text(m.description)) for m in modes.available_modes),
            default=modes.current_mode_id, category="mode"))
    return tuple(options)


def plan_mode_id(session: ClientSession) -> str | None:
    """The id of the backend's plan mode (a mode named like ``plan``), if it has one."""
    modes = session.modes.available_modes if session.modes is not None else []
    for mode in modes:
        if "plan" in mode.id.lower() or "plan" in mode.name.lower():
            return mode.id
    return None
