"""Run external harnesses (other vendors' ACP agents) with a session-scoped MCP tool bridge.

* :class:`~wireproto.host.host.Host`: sessions, bindings, the bridge gateway;
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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wireproto.host.binding import Binding, PromptOutcome
    from wireproto.host.config import ConfigError, ExecutorConfig, HostConfig, load_config
    from wireproto.host.host import Host
    from wireproto.host.policy import Caller, NativeTool, ToolGroup

__all__ = [
    "Binding",
    "Caller",
    "ConfigError",
    "ExecutorConfig",
    "Host",
    "HostConfig",
    "NativeTool",
    "PromptOutcome",
    "ToolGroup",
    "load_config",
]

_HOMES: dict[str, str] = {
    "Host": "wireproto.host.host",
    "Binding": "wireproto.host.binding",
    "PromptOutcome": "wireproto.host.binding",
    "ConfigError": "wireproto.host.config",
    "ExecutorConfig": "wireproto.host.config",
    "HostConfig": "wireproto.host.config",
    "load_config": "wireproto.host.config",
    "Caller": "wireproto.host.policy",
    "NativeTool": "wireproto.host.policy",
    "ToolGroup": "wireproto.host.policy",
}
"""Exported name -> the module that defines it (imported on first use)."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
