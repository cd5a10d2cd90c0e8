"""Display blocks of the Wire protocol (protocol-wire.md#display-blocks).

A display block is user-facing UI content attached to an ``ApprovalRequest``
(``display``) or to a tool's ``ToolReturnValue`` (``display``). Blocks are
discriminated by their ``type`` member; the known kinds are ``brief``,
``diff``, ``todo``, ``shell`` and ``background_task``.

Theory of operation
-------------------
Unknown block types must never fail decoding (newer servers add kinds without
a version bump). msgspec's tagged unions reject unknown tags, so fields that
hold display blocks are annotated with the plain base class
:class:`DisplayBlock`. msgspec treats that class as a *custom type* and hands
the decoded JSON object to :func:`dec_hook`, which looks the tag up in
:data:`DISPLAY_BLOCK_TYPES` (a table, not a chain of branches) and either
converts the object into the known Struct or keeps it as an
:class:`UnknownDisplayBlock` holding the tag and every other member as data.

Every decoder of a type that contains display blocks must therefore be built
with ``dec_hook=dec_hook`` (the helpers in :mod:`.messages` and
:mod:`.methods` do this). Encoding needs no hook: every block is a Struct.

Errors inside a block are re-raised as ``ValueError`` so msgspec adds the
outer JSON path; :func:`validation_error_details` joins the outer and inner
paths back into one path such as ``$.display[1].text``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

import msgspec

__all__ = [
    "DISPLAY_BLOCK_TYPES",
    "BackgroundTaskDisplayBlock",
    "BriefDisplayBlock",
    "DiffDisplayBlock",
    "DisplayBlock",
    "KnownDisplayBlock",
    "ShellDisplayBlock",
    "TodoDisplayBlock",
    "TodoDisplayItem",
    "TodoStatus",
    "UnknownDisplayBlock",
    "dec_hook",
    "validation_error_details",
]


class DisplayBlock:
    """Base class of every display block (known kinds and the unknown fallback).

    Use it as the annotation of fields holding display blocks; decode them with
    :func:`dec_hook`. It carries no state of its own.
    """

    __slots__ = ()


class BriefDisplayBlock(msgspec.Struct, DisplayBlock, tag="brief", tag_field="type", kw_only=True):
    """``brief``: a one-line summary such as ``"Rejected by user"``."""

    text: str


class DiffDisplayBlock(msgspec.Struct, DisplayBlock, tag="diff", tag_field="type", kw_only=True):
    """``diff``: a file change.

    A new file has ``old_text == ""`` (never ``null``). ``is_summary`` (1.8)
    marks a large file shown as a line-count summary instead of a full diff.
    """

    path: str
    old_text: str = ""
    new_text: str
    old_start: int = 1
    new_start: int = 1
    is_summary: bool = False


TodoStatus = Literal["pending", "in_progress", "done"]
"""Status of one todo item."""


class TodoDisplayItem(msgspec.Struct, kw_only=True):
    """One entry of a ``todo`` block."""

    title: str
    status: TodoStatus


class TodoDisplayBlock(msgspec.Struct, DisplayBlock, tag="todo", tag_field="type", kw_only=True):
    """``todo``: a todo-list update."""

    items: list[TodoDisplayItem]


class ShellDisplayBlock(msgspec.Struct, DisplayBlock, tag="shell", tag_field="type", kw_only=True):
    """``shell``: a command about to run (``language`` e.g. ``sh``, ``powershell``)."""

    language: str
    command: str


class BackgroundTaskDisplayBlock(
    msgspec.Struct, DisplayBlock, tag="background_task", tag_field="type", kw_only=True
):
    """``background_task``: a background task's state (undocumented in the reference)."""

    task_id: str
    kind: str
    status: str
    description: str


class UnknownDisplayBlock(msgspec.Struct, DisplayBlock, kw_only=True):
    """Fallback for a block whose ``type`` this library does not know.

    ``type`` is the original tag; ``data`` holds every other member of the
    original object. Like the reference, it encodes as ``{"type": ..., "data": {...}}``.
    """

    type: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


KnownDisplayBlock = (
    BriefDisplayBlock
    | DiffDisplayBlock
    | TodoDisplayBlock
    | ShellDisplayBlock
    | BackgroundTaskDisplayBlock
)
"""The union of the display block kinds this library knows."""

DISPLAY_BLOCK_TYPES: dict[str, type[DisplayBlock]] = {
    "brief": BriefDisplayBlock,
    "diff": DiffDisplayBlock,
    "todo": TodoDisplayBlock,
    "shell": ShellDisplayBlock,
    "background_task": BackgroundTaskDisplayBlock,
}
"""Tag -> Struct of every known display block kind."""


def _decode_display_block(obj: Any) -> DisplayBlock:
    if isinstance(obj, DisplayBlock):
        return obj
    if not isinstance(obj, dict):
        raise ValueError(f"Expected `object`, got `{type(obj).__name__}`")
    if "type" not in obj:
        raise ValueError("Object missing required field `type`")
    tag = obj["type"]
    if not isinstance(tag, str):
        raise ValueError(f"Expected `str`, got `{type(tag).__name__}` - at `$.type`")
    cls = DISPLAY_BLOCK_TYPES.get(tag)
    if cls is None:
        return UnknownDisplayBlock(type=tag, data={k: v for k, v in obj.items() if k != "type"})
    try:
        block: DisplayBlock = msgspec.convert(obj, cls, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        # Re-raised as ValueError so msgspec appends the outer path.
        raise ValueError(str(exc)) from exc
    return block


_CUSTOM_DECODERS: dict[type, Callable[[Any], Any]] = {DisplayBlock: _decode_display_block}


def dec_hook(tp: type, obj: Any) -> Any:
    """msgspec ``dec_hook`` for the custom types of the Wire messages.

    Args:
        tp: the annotated type msgspec could not decode natively.
        obj: the decoded JSON value.

    Returns:
        The decoded value (a display block for ``DisplayBlock``).

    Raises:
        ValueError: the value is invalid (msgspec turns it into a
            ``ValidationError`` carrying the JSON path).
        NotImplementedError: ``tp`` is not a type of this module.
    """
    decode = _CUSTOM_DECODERS.get(tp)
    if decode is None:
        raise NotImplementedError(f"no decoder for {tp!r}")
    return decode(obj)


_PATH_SUFFIX = re.compile(r" - at `(\$[^`]*)`$")


def validation_error_details(exc: msgspec.ValidationError, prefix: str = "$") -> tuple[str, str]:
    """Split a msgspec validation error into a JSON path and a reason.

    msgspec writes ``"<reason> - at `<path>`"``; errors raised inside
    :func:`dec_hook` carry their own inner path before the outer one. This joins
    them, so ``"Expected `str`, got `int` - at `$.text` - at `$.display[1]`"``
    becomes ``("$.display[1].text", "Expected `str`, got `int`")``.

    Args:
        exc: the error raised by a msgspec decoder or ``msgspec.convert``.
        prefix: the path of the decoded value inside the whole message
            (``"$.payload"`` when only an envelope's payload was decoded).

    Returns:
        ``(path, reason)``; the path is ``prefix`` itself for a top-level error.
    """
    reason = str(exc)
    paths: list[str] = []
    while (match := _PATH_SUFFIX.search(reason)) is not None:
        paths.append(match.group(1))
        reason = reason[: match.start()]
    path = prefix
    for part in paths:  # found outermost first: each later one is relative to it
        path += part[1:]
    return path, reason
