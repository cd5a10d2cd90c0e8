"""Protocol-neutral content: prompt blocks and tool-call content.

Both adapters translate their own content types to and from these Structs:
ACP content blocks map one to one; Wire content parts map ``text`` to
:class:`Text`, ``image_url`` / ``audio_url`` / ``video_url`` to :class:`Image`
/ :class:`Audio` / :class:`Video` carrying a URL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import get_args

import msgspec

__all__ = [
    "Audio",
    "ContentBlock",
    "Diff",
    "Image",
    "ResourceBlob",
    "ResourceLink",
    "ResourceText",
    "Terminal",
    "Text",
    "ToolContent",
    "attr_escape",
    "render_prompt",
    "tool_blocks",
]

log = logging.getLogger(__name__)


class Text(msgspec.Struct, tag="text", frozen=True):
    """Plain text or Markdown."""

    text: str


class Image(msgspec.Struct, tag="image", frozen=True, omit_defaults=True):
    """An image: base64 ``data`` with a MIME type, or a ``url`` (data: or remote)."""

    mime_type: str | None = None
    data: str | None = None
    url: str | None = None


class Audio(msgspec.Struct, tag="audio", frozen=True, omit_defaults=True):
    """Audio: base64 ``data`` with a MIME type, or a ``url``."""

    mime_type: str | None = None
    data: str | None = None
    url: str | None = None


class Video(msgspec.Struct, tag="video", frozen=True, omit_defaults=True):
    """Video, by ``url`` (Wire ``video_url``)."""

    url: str
    mime_type: str | None = None


class ResourceText(msgspec.Struct, tag="resource_text", frozen=True, omit_defaults=True):
    """An embedded text resource (e.g. an unsaved editor buffer)."""

    uri: str
    text: str
    mime_type: str | None = None


class ResourceBlob(msgspec.Struct, tag="resource_blob", frozen=True, omit_defaults=True):
    """An embedded binary resource (base64 ``blob``)."""

    uri: str
    blob: str
    mime_type: str | None = None


class ResourceLink(msgspec.Struct, tag="resource_link", frozen=True, omit_defaults=True):
    """A link to a resource the agent may read itself."""

    uri: str
    name: str
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None


ContentBlock = Text | Image | Audio | Video | ResourceText | ResourceBlob | ResourceLink
"""One block of prompt or message content."""


class Diff(msgspec.Struct, tag="diff", frozen=True):
    """A file change; ``old_text`` is ``None`` for a new file."""

    path: str
    new_text: str
    old_text: str | None = None


class Terminal(msgspec.Struct, tag="terminal", frozen=True):
    """A client terminal embedded in a tool call (ACP only)."""

    terminal_id: str


ToolContent = (
    Text | Diff | Terminal | Image | Audio | Video | ResourceText | ResourceBlob | ResourceLink
)
"""Content produced by a tool call: text, a diff, a terminal, media or resources.

ACP carries every kind; Wire shows text and media as the tool's output parts,
diffs as display blocks, and resources as text with a note (no terminals)."""


_TOOL_CONTENT: tuple[type, ...] = get_args(ToolContent)


def tool_blocks(value: Iterable[ToolContent], where: str) -> list[ToolContent]:
    """``value`` as a list of tool content blocks; a ``TypeError`` naming ``where`` otherwise.

    (A str or a single block is the usual slip: it would be taken apart, or fail
    later in a protocol adapter with an error that names neither.)
    """
    if isinstance(value, str):
        raise TypeError(f"{where} takes a list of content blocks, e.g. "
                        f"[Text({value[:40]!r})], not a str")
    if isinstance(value, _TOOL_CONTENT):
        raise TypeError(f"{where} takes a list of content blocks, e.g. "
                        f"[{type(value).__name__}(...)], not one block")
    blocks = list(value)
    for block in blocks:
        if not isinstance(block, _TOOL_CONTENT):
            names = ", ".join(kind.__name__ for kind in _TOOL_CONTENT)
            raise TypeError(f"{where}: a {type(block).__name__} is not a content block "
                            f"({names})")
    return blocks


def attr_escape(value: str) -> str:
    """Escape ``&``, ``<``, ``>`` and ``"`` for use in an XML-like attribute."""
    return (
        value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _render(block: ContentBlock) -> str | None:
    if isinstance(block, Text):
        return block.text
    if isinstance(block, ResourceText):
        return f'<resource uri="{attr_escape(block.uri)}">{block.text}</resource>'
    if isinstance(block, ResourceLink):
        return f'<resource_link uri="{attr_escape(block.uri)}" name="{attr_escape(block.name)}"/>'
    if isinstance(block, (Image, Audio)):
        kind = "image" if isinstance(block, Image) else "audio"
        return f"[{kind} {block.mime_type}]" if block.mime_type else f"[{kind}]"
    if isinstance(block, Video):
        return "[video]"
    log.warning("embedded blob resource %s dropped from the prompt text", block.uri)
    return None


def render_prompt(blocks: list[ContentBlock]) -> str:
    """Render prompt blocks in order, joined with ``\\n``.

    Text is kept as is; an embedded text resource becomes
    ``<resource uri="URI">TEXT</resource>``; a resource link
    ``<resource_link uri="URI" name="NAME"/>``; media ``[image MIME]`` /
    ``[audio MIME]`` / ``[video]`` (``[image]`` without a MIME type); blob
    resources are dropped with a warning and leave no line.
    """
    parts = [text for text in map(_render, blocks) if text is not None]
    return "\n".join(parts)
