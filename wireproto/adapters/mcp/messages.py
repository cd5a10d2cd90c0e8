"""MCP message Structs for the tools subset (lifecycle, tools, ping, cancellation).

Field names are snake_case in Python and camelCase on the wire (``rename="camel"``);
``_meta`` is spelled out. Optional members are omitted when unset. Decoding
is lenient where servers in the field differ: unknown members are ignored and
``null`` is accepted wherever a member is optional. Content blocks are a union
tagged by ``type``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType, field

__all__ = [
    "AudioContent",
    "CallToolParams",
    "CallToolResult",
    "CancelledParams",
    "ContentBlock",
    "EmbeddedResource",
    "EmptyResult",
    "ImageContent",
    "Implementation",
    "InitializeParams",
    "InitializeResult",
    "ListToolsParams",
    "ListToolsResult",
    "McpClientCapabilities",
    "ResourceLink",
    "ServerCapabilities",
    "TextContent",
    "Tool",
    "ToolsCapability",
    "text_result",
]

Meta = dict[str, Any]


class _Base(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Common options: camelCase on the wire, unset members omitted.

    (msgspec does not inherit ``kw_only``: every subclass repeats it.)
    """


class Implementation(_Base, kw_only=True):
    """The name and version of a client or server (``clientInfo`` / ``serverInfo``)."""

    name: str
    version: str
    title: str | UnsetType | None = UNSET


class McpClientCapabilities(_Base, kw_only=True):
    """What the client offers the server (this library's client offers nothing)."""

    roots: dict[str, Any] | UnsetType | None = UNSET
    sampling: dict[str, Any] | UnsetType | None = UNSET
    elicitation: dict[str, Any] | UnsetType | None = UNSET
    experimental: dict[str, Any] | UnsetType | None = UNSET


class ToolsCapability(_Base, kw_only=True):
    """The server offers tools; ``list_changed``: it sends ``notifications/tools/list_changed``."""

    list_changed: bool | UnsetType | None = UNSET


class ServerCapabilities(_Base, kw_only=True):
    """What the server offers; only ``tools`` is used by this library."""

    tools: ToolsCapability | UnsetType | None = UNSET
    logging: dict[str, Any] | UnsetType | None = UNSET
    prompts: dict[str, Any] | UnsetType | None = UNSET
    resources: dict[str, Any] | UnsetType | None = UNSET
    completions: dict[str, Any] | UnsetType | None = UNSET
    experimental: dict[str, Any] | UnsetType | None = UNSET


class InitializeParams(_Base, kw_only=True):
    """``initialize`` params: the client's protocol version, capabilities and identity."""

    protocol_version: str
    capabilities: McpClientCapabilities = msgspec.field(default_factory=McpClientCapabilities)
    client_info: Implementation
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class InitializeResult(_Base, kw_only=True):
    """``initialize`` result: the negotiated version, capabilities and identity."""

    protocol_version: str
    capabilities: ServerCapabilities = msgspec.field(default_factory=ServerCapabilities)
    server_info: Implementation
    instructions: str | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class Tool(_Base, kw_only=True):
    """A tool definition as ``tools/list`` returns it."""

    name: str
    title: str | UnsetType | None = UNSET
    description: str | UnsetType | None = UNSET
    input_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: dict[str, Any] | UnsetType | None = UNSET
    annotations: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class ListToolsParams(_Base, kw_only=True):
    """``tools/list`` params: the cursor of the page to fetch (absent: the first)."""

    cursor: str | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class ListToolsResult(_Base, kw_only=True):
    """One page of tools; ``next_cursor`` is set when more follow."""

    tools: list[Tool]
    next_cursor: str | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class CallToolParams(_Base, kw_only=True):
    """``tools/call`` params."""

    name: str
    arguments: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class TextContent(_Base, kw_only=True, tag_field="type", tag="text"):
    """Text content."""

    text: str
    annotations: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class ImageContent(_Base, kw_only=True, tag_field="type", tag="image"):
    """Base64-encoded image content."""

    data: str
    mime_type: str
    annotations: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class AudioContent(_Base, kw_only=True, tag_field="type", tag="audio"):
    """Base64-encoded audio content."""

    data: str
    mime_type: str
    annotations: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class ResourceLink(_Base, kw_only=True, tag_field="type", tag="resource_link"):
    """A link to a resource the client may read."""

    uri: str
    name: str
    title: str | UnsetType | None = UNSET
    description: str | UnsetType | None = UNSET
    mime_type: str | UnsetType | None = UNSET
    size: int | UnsetType | None = UNSET
    annotations: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


class EmbeddedResource(_Base, kw_only=True, tag_field="type", tag="resource"):
    """A resource embedded in the result (``{"uri", "text" | "blob", ...}``)."""

    resource: dict[str, Any]
    annotations: dict[str, Any] | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
"""One block of a tool result."""


class CallToolResult(_Base, kw_only=True):
    """``tools/call`` result. A failure of the tool itself is ``is_error=True``."""

    content: list[ContentBlock] = msgspec.field(default_factory=list)
    structured_content: dict[str, Any] | UnsetType | None = UNSET
    is_error: bool | UnsetType | None = UNSET
    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")

    @property
    def text(self) -> str:
        """The text blocks joined with newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


class CancelledParams(_Base, kw_only=True):
    """``notifications/cancelled`` params."""

    request_id: int | str
    reason: str | UnsetType | None = UNSET


class EmptyResult(_Base, kw_only=True):
    """An empty result (``ping``)."""

    meta: Meta | UnsetType | None = field(default=UNSET, name="_meta")


def text_result(text: str, *, is_error: bool = False) -> CallToolResult:
    """Return a tool result holding one text block (``is_error`` only when true)."""
    return CallToolResult(content=[TextContent(text=text)], is_error=True if is_error else UNSET)
