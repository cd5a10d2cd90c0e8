"""Run external harnesses (other vendors' ACP agents) with a session-scoped MCP tool bridge.

* :class:`Host`: sessions, bindings, the bridge gateway;
* :mod:`~wireproto.host.config`: the TOML configuration (executors, engine
  defaults, profiles, ``no_stdio_mcp``), read with :func:`load_config`;
* :mod:`~wireproto.host.policy`: tool names, layered settings, groups,
  the ``inject_<prefix>_mcp`` choice; :class:`NativeTool`, :class:`ToolGroup`,
  :class:`Caller`;
* :mod:`~wireproto.host.binding`: one running harness, its observations
  and prompt turns;
* :mod:`~wireproto.host.permissions`: permission requests about the host's
  own tools, answered by policy;
* :mod:`~wireproto.host.channel` and :mod:`~wireproto.host.bridge_cmd`:
  the loopback channel and the ``wireproto mcp-bridge`` process.

``docs/host.md`` is the guide. Submodules are imported on first use (the
bridge process needs only a few).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wireproto._lazy import attach

if TYPE_CHECKING:
    from wireproto.host.binding import Binding, PromptOutcome
    from wireproto.host.channel import BridgeChannel, Credentials
    from wireproto.host.config import ConfigError, ExecutorConfig, HostConfig, load_config
    from wireproto.host.host import Host
    from wireproto.host.policy import Caller, NativeTool, Policy, ToolGroup
    from wireproto.host.store import HostStore, Observation, SessionRecord

__all__ = [
    "Binding",
    "BridgeChannel",
    "Caller",
    "ConfigError",
    "Credentials",
    "ExecutorConfig",
    "Host",
    "HostConfig",
    "HostStore",
    "NativeTool",
    "Observation",
    "Policy",
    "PromptOutcome",
    "SessionRecord",
    "ToolGroup",
    "load_config",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "Binding": ".binding",
        "BridgeChannel": ".channel",
        "Caller": ".policy",
        "ConfigError": ".config",
        "Credentials": ".channel",
        "ExecutorConfig": ".config",
        "Host": ".host",
        "HostConfig": ".config",
        "HostStore": ".store",
        "NativeTool": ".policy",
        "Observation": ".store",
        "Policy": ".policy",
        "PromptOutcome": ".binding",
        "SessionRecord": ".store",
        "ToolGroup": ".policy",
        "load_config": ".config",
    },
)
