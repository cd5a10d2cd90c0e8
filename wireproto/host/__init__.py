"""Run external harnesses (other vendors' ACP agents) with a session-scoped MCP tool bridge.

* :class:`~wireproto.host.host.Host`: sessions, bindings, the bridge gateway;
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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wireproto.host.host import Host

__all__ = ["Host"]


def __getattr__(name: str) -> Any:
    if name == "Host":
        return importlib.import_module("wireproto.host.host").Host
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
