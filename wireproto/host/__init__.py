"""Run external harnesses (other vendors' ACP agents) with a session-scoped MCP tool bridge.

* :class:`Host`: sessions, bindings, the bridge gateway;
* :mod:`~wireproto.host.config`: the TOML configuration (executors, engine
  defaults, profiles, ``no_stdio_mcp``);
* :mod:`~wireproto.host.policy`: tool names, layered settings, groups,
  the ``inject_<prefix>_mcp`` choice;
* :mod:`~wireproto.host.binding`: one running harness, its observations
  and prompt checks;
* :mod:`~wireproto.host.channel` and :mod:`~wireproto.host.bridge_cmd`:
  the loopback channel and the ``wireproto mcp-bridge`` process.

Submodules are imported on first use (the bridge process needs only a few).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wireproto._lazy import attach

if TYPE_CHECKING:
    from wireproto.host.binding import Binding, PromptOutcome
    from wireproto.host.channel import BridgeChannel, Credentials
    from wireproto.host.config import ConfigError, ExecutorConfig, HostConfig, load_config
    from wireproto.host.host import Host
    from wireproto.host.policy import Policy
    from wireproto.host.store import HostStore, Observation, SessionRecord

__all__ = [
    "Binding",
    "BridgeChannel",
    "ConfigError",
    "Credentials",
    "ExecutorConfig",
    "Host",
    "HostConfig",
    "HostStore",
    "Observation",
    "Policy",
    "PromptOutcome",
    "SessionRecord",
    "load_config",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "Binding": ".binding",
        "BridgeChannel": ".channel",
        "ConfigError": ".config",
        "Credentials": ".channel",
        "ExecutorConfig": ".config",
        "Host": ".host",
        "HostConfig": ".config",
        "HostStore": ".store",
        "Observation": ".store",
        "Policy": ".policy",
        "PromptOutcome": ".binding",
        "SessionRecord": ".store",
        "load_config": ".config",
    },
)
