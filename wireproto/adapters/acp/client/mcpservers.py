"""Short constructors for the MCP server entries a client gives an agent.

The schema requires ``args`` and ``env`` of a stdio entry and ``headers`` of
an HTTP / SSE entry to be present on the wire (possibly empty), so the
generated Structs have no defaults for them. These functions fill them in
and take plain mappings::

    stdio_server("notes", "/usr/bin/notes-mcp", env={"TOKEN": token})
    http_server("search", "https://search.example/mcp", headers={"Authorization": auth})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wireproto.adapters.acp import schema as s

__all__ = ["http_server", "sse_server", "stdio_server"]


def stdio_server(
    name: str,
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> s.McpServerStdio:
    """A stdio MCP server entry (``command`` should be an absolute path)."""
    return s.McpServerStdio(
        name=name, command=command, args=list(args),
        env=[s.EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
    )


def http_server(name: str, url: str, headers: Mapping[str, str] | None = None) -> s.McpServerHttp:
    """An HTTP MCP server entry (the agent must advertise ``mcpCapabilities.http``)."""
    return s.McpServerHttp(name=name, url=url, headers=_headers(headers))


def sse_server(name: str, url: str, headers: Mapping[str, str] | None = None) -> s.McpServerSse:
    """An SSE MCP server entry (the agent must advertise ``mcpCapabilities.sse``)."""
    return s.McpServerSse(name=name, url=url, headers=_headers(headers))


def _headers(headers: Mapping[str, str] | None) -> list[s.HttpHeader]:
    return [s.HttpHeader(name=k, value=v) for k, v in (headers or {}).items()]
