"""Tool policy of a binding: names, layered settings, groups, and the injection choice.

Theory of operation
-------------------
**Names.** A native tool ``read`` is offered to the external harness as
``<prefix>_read`` (its *vendor name*). Every list (allow, deny, context) may
name a tool either way; a tool is checked under both names.

**Layers**, lowest first: the engine default of the executor
(``[agent_executor_overrides.<id>.defaults]``), the session's profile, the
session override (``execution.overrides``), and for a sub-agent the tools it
was approved (an extra allow-list). A scalar setting takes the value of the
highest layer that sets it; ``None`` (null) means "not set", so a null
session override restores inheritance.

**A tool is permitted** when every rule of :data:`RULES` passes, in order:

1. no deny-list of any layer names it (under either name);
2. every allow-list (each layer's ``allowed_tools``, the sub-agent approval)
   names it under at least one of its two names;
3. its group is open: ``context`` tools need ``<prefix>_context`` to name
   them (``"*"``: all); ``[]`` or unset keeps the group closed; ``subagents``
   tools need ``allow_<prefix>_subagents = true``. Plain tools have no group.

**Injection** (``inject_<prefix>_mcp``): the highest layer that sets it
decides; executors that cannot take a stdio MCP server never get the bridge.
When no layer sets it the previous behaviour holds: a sub-agent gets the
bridge (with its approved native tools), the main agent only when it asks
for the context or delegation group. Injection opens no group by itself.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from wireproto.adapters.mcp import messages as m
from wireproto.host.config import ExecutorConfig, HostConfig, SettingKeys

__all__ = [
    "MAIN_AGENT",
    "RULES",
    "Caller",
    "Layer",
    "NativeTool",
    "Policy",
    "Resolved",
    "ToolGroup",
    "ToolHandler",
    "Verdict",
]

MAIN_AGENT = "main"
"""The agent name of a session's main agent (anything else is a named sub-agent)."""


class ToolGroup(str, enum.Enum):
    """The group of a native tool."""

    PLAIN = "plain"
    CONTEXT = "context"
    SUBAGENTS = "subagents"


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who calls a tool through the bridge: the binding's identity.

    Attributes:
        binding_id: the binding.
        session_id: the host session.
        agent: ``"main"`` or the name of a sub-agent.
    """

    binding_id: str
    session_id: str
    agent: str


ToolHandler = Callable[[dict[str, Any], Caller], Awaitable["m.CallToolResult | str"]]
"""A native tool: ``(arguments, caller) -> result`` (a string is one text block)."""


@dataclasses.dataclass(frozen=True)
class NativeTool:
    """One of the host's own tools.

    Attributes:
        name: the native name (offered as ``<prefix>_<name>``).
        description: shown to the harness's model.
        input_schema: a JSON Schema for the arguments.
        handler: runs the tool.
        group: ``plain``, ``context`` or ``subagents``.
    """

    name: str
    description: str
    handler: ToolHandler
    input_schema: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    group: ToolGroup = ToolGroup.PLAIN


@dataclasses.dataclass(frozen=True)
class Layer:
    """One settings layer: a label for messages and its values (``None`` = unset)."""

    label: str
    values: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A resolved setting: its value and the layer that set it (``None``: a default)."""

    value: Any
    source: str | None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether a tool is permitted, and why not."""

    allowed: bool
    reason: str = ""


Rule = Callable[["Policy", NativeTool, tuple[str, str]], str | None]
"""A permission rule: ``None`` when it passes, else the reason it fails."""


def _denied(policy: Policy, tool: NativeTool, names: tuple[str, str]) -> str | None:
    for layer in policy.layers:
        deny = layer.values.get(policy.keys.deny) or ()
        hit = next((n for n in names if n in deny), None)
        if hit is not None:
            return f"{hit} is denied by {layer.label}"
    return None


def _not_allowed(policy: Policy, tool: NativeTool, names: tuple[str, str]) -> str | None:
    for layer in policy.layers:
        allow = layer.values.get(policy.keys.allow)
        if allow is not None and not any(n in allow for n in names):
            return f"neither {names[0]} nor {names[1]} is in the allow-list of {layer.label}"
    return None


def _group_closed(policy: Policy, tool: NativeTool, names: tuple[str, str]) -> str | None:
    if tool.group is ToolGroup.CONTEXT:
        opened = policy.setting(policy.keys.context).value or ()
        if "*" not in opened and not any(n in opened for n in names):
            return f"the context group does not include it ({policy.keys.context})"
    elif tool.group is ToolGroup.SUBAGENTS:
        if policy.setting(policy.keys.subagents).value is not True:
            return f"the subagents group is closed ({policy.keys.subagents})"
    return None


RULES: tuple[Rule, ...] = (_denied, _not_allowed, _group_closed)
"""The permission rules, checked in order; the first failure is the reason."""


class Policy:
    """The settings in force for one binding (or one prospective binding).

    Args:
        config: the host configuration.
        executor: the executor the binding runs.
        agent: ``"main"`` or a sub-agent's name.
        profile: the session's profile name (``None``: none).
        overrides: the session's ``execution.overrides``.
        approved_tools: a sub-agent's approved native tools (an allow-list).
    """

    def __init__(
        self,
        config: HostConfig,
        executor: ExecutorConfig,
        agent: str = MAIN_AGENT,
        *,
        profile: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        approved_tools: Sequence[str] | None = None,
    ) -> None:
        self.keys: SettingKeys = config.keys
        self.prefix = config.prefix
        self.executor = executor
        self.agent = agent
        layers = [Layer(f"the engine default of executor {executor.id!r}",
                        config.engine_defaults.get(executor.id, {}))]
        if profile is not None:
            layers.append(Layer(f"profile {profile!r}", config.profiles.get(profile, {})))
        layers.append(Layer("the session override", dict(overrides or {})))
        if approved_tools is not None:
            layers.append(Layer(f"the approval of sub-agent {agent!r}",
                                {self.keys.allow: tuple(approved_tools)}))
        self.layers: tuple[Layer, ...] = tuple(layers)

    # --------------------------------------------------------------- names

    def vendor_name(self, native: str) -> str:
        """The name the harness sees (``read`` -> ``kiki_read``)."""
        return f"{self.prefix}_{native}"

    def native_name(self, vendor: str) -> str | None:
        """The native name of a vendor name, or ``None`` if it lacks the prefix."""
        head = f"{self.prefix}_"
        return vendor[len(head):] if vendor.startswith(head) and len(vendor) > len(head) else None

    # ------------------------------------------------------------ settings

    def setting(self, key: str) -> Resolved:
        """The value of the highest layer that sets ``key``."""
        for layer in reversed(self.layers):
            value = layer.values.get(key)
            if value is not None:
                return Resolved(value, layer.label)
        return Resolved(None, None)

    def check(self, tool: NativeTool) -> Verdict:
        """Whether ``tool`` is permitted (see :data:`RULES`)."""
        names = (self.vendor_name(tool.name), tool.name)
        for rule in RULES:
            reason = rule(self, tool, names)
            if reason is not None:
                return Verdict(False, reason)
        return Verdict(True)

    def inject(self) -> Resolved:
        """Whether a binding starting now gets the bridge, and why.

        ``source`` names the deciding layer, or explains the default.
        """
        if not self.executor.stdio_mcp:
            return Resolved(False, f"executor {self.executor.id!r} cannot take a stdio MCP "
                                   "server (no_stdio_mcp)")
        chosen = self.setting(self.keys.inject)
        if chosen.source is not None:
            return chosen
        if self.agent != MAIN_AGENT:
            return Resolved(True, "default: a compatible sub-agent gets its approved tools")
        asks = bool(self.setting(self.keys.context).value) or (
            self.setting(self.keys.subagents).value is True)
        why = "asks for" if asks else "does not ask for"
        return Resolved(asks, f"default: the main agent {why} the context or delegation group")
