"""Hand-written ACP types that are not in the stable schema (protocol-acp.md#unstable-methods).

The generated :mod:`wireproto.adapters.acp.schema` covers the stable schema
only. This module adds the few unstable or removed shapes wireproto still
has to understand:

* ``session/set_model`` (removed from the spec on 2026-06-01, never stable):
  kept as an unstable compatibility alias, never advertised; the agent
  routes it like ``session/set_config_option`` with ``configId: "model"``.
* MCP servers of the unstable ``type: "acp"`` kind: the stable union rejects
  them, but an agent must drop them with a warning and still create the
  session. :func:`split_acp_servers` takes them out of raw session params
  before those are decoded.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType, field

from wireproto.adapters.acp.schema import Base, Leniency, MethodSpec, SessionId

__all__ = [
    "LENIENCY",
    "UNSTABLE_METHODS",
    "McpServerAcp",
    "SetSessionModelRequest",
    "SetSessionModelResponse",
    "split_acp_servers",
]


class SetSessionModelRequest(Base, kw_only=True):
    """Params of the unstable ``session/set_model``: ``{sessionId, modelId}``."""

    session_id: SessionId = field(name="sessionId")
    model_id: str = field(name="modelId")
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


class SetSessionModelResponse(Base, kw_only=True):
    """Result of the unstable ``session/set_model``: ``{}``."""

    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


class McpServerAcp(Base, kw_only=True, tag_field="type", tag="acp"):
    """Unstable MCP-over-ACP server entry (``schema.unstable.json`` ``McpServerAcp``)."""

    name: str
    server_id: str = field(name="serverId")
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


UNSTABLE_METHODS: dict[str, MethodSpec] = {
    "session/set_model": MethodSpec(
        "session/set_model", "agent", SetSessionModelRequest, SetSessionModelResponse
    ),
}
"""Unstable methods wireproto accepts but never advertises."""

LENIENCY: dict[type[Base], dict[str, Leniency]] = {
    SetSessionModelRequest: {"_meta": Leniency.DEFAULT_ON_ERROR},
    SetSessionModelResponse: {"_meta": Leniency.DEFAULT_ON_ERROR},
    McpServerAcp: {"_meta": Leniency.DEFAULT_ON_ERROR},
}
"""Inbound leniency rules of the types above (same form as the generated table)."""


def split_acp_servers(params: Any) -> tuple[Any, list[str]]:
    """Remove ``type: "acp"`` entries from the ``mcpServers`` of raw session params.

    Args:
        params: ``session/new`` / ``load`` / ``resume`` params as plain JSON
            values (``msgspec.json.decode(raw)``).

    Returns:
        ``(params, names)``: a copy of ``params`` without those entries (the
        same object when there were none) and the names of the dropped
        servers (``"<unnamed>"`` when an entry has no string name).
    """
    if not isinstance(params, dict):
        return params, []
    servers = params.get("mcpServers")
    if not isinstance(servers, list):
        return params, []
    kept: list[Any] = []
    dropped: list[str] = []
    for entry in servers:
        if isinstance(entry, dict) and entry.get("type") == "acp":
            name = entry.get("name")
            dropped.append(name if isinstance(name, str) else "<unnamed>")
        else:
            kept.append(entry)
    if not dropped:
        return params, []
    return {**params, "mcpServers": kept}, dropped
