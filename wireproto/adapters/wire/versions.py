"""Wire protocol versions: the version history, parsing, comparison, negotiation.

Theory of operation
-------------------
A version string is one or more dot-separated non-negative decimal integers
(:data:`VERSION_PATTERN`). Missing trailing components count as 0, so
``"1" == "1.0"`` and ``"1.10" > "1.9"``. :func:`parse_version` returns the
components with trailing zeros removed; Python's tuple ordering on those
normalised tuples *is* the protocol's ordering.

:data:`VERSION_HISTORY` lists every version this library supports, oldest
first, spelled as in the protocol (there is no ``"1.0"`` string: the first
version is ``"1"``), with what it introduced. :func:`negotiate_version`
picks the highest supported version that is <= min(client's, ours) and
returns it in that spelling (protocol-wire.md#version-negotiation): a client
announcing ``"1.0"`` gets ``"1"``, one announcing ``"2"`` or ``"1.11"`` gets
``"1.10"``.

The negotiated version is informational: features are opted into by their
own fields and every event type is sent regardless.
"""

from __future__ import annotations

import bisect
import re
from typing import Final

from wireproto.errors import InvalidVersion

__all__ = [
    "CURRENT_VERSION",
    "SUPPORTED_VERSIONS",
    "VERSION_HISTORY",
    "VERSION_PATTERN",
    "compare_versions",
    "negotiate_version",
    "parse_version",
]

VERSION_PATTERN: Final = r"^[0-9]+(?:\.[0-9]+)*\Z"
"""Regex of a well-formed version string (ASCII digits only, no sign, no spaces)."""

VERSION_HISTORY: Final[tuple[tuple[str, str], ...]] = (
    ("1", "prompt, cancel; event; request with ApprovalRequest; ApprovalRequestResolved"),
    ("1.1", "initialize; ToolCallRequest; external tools; slash_commands; "
            "ApprovalRequestResolved renamed ApprovalResponse"),
    ("1.2", "TurnEnd"),
    ("1.3", "replay"),
    ("1.4", "set_plan_mode; StatusUpdate.plan_mode; supports_plan_mode; "
            "steer, QuestionRequest, supports_question"),
    ("1.5", "SteerInput"),
    ("1.6", "SubagentEvent.parent_tool_call_id (was task_tool_call_id), agent_id, "
            "subagent_type; ApprovalRequest.source_*; ApprovalResponse.feedback"),
    ("1.7", "PlanDisplay; HookTriggered, HookResolved, HookRequest; initialize hooks"),
    ("1.8", "diff display block is_summary"),
    ("1.9", "BtwBegin, BtwEnd"),
    ("1.10", "StepRetry"),
)  # fmt: skip
"""Every supported version, oldest first, with what it introduced.

See protocol-wire.md#version-history.
"""

SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(v for v, _ in VERSION_HISTORY)
"""The supported version strings, oldest first."""

CURRENT_VERSION: Final = SUPPORTED_VERSIONS[-1]
"""This library's own (newest) protocol version: ``"1.10"``."""

_VERSION_RE = re.compile(VERSION_PATTERN)


def parse_version(text: str) -> tuple[int, ...]:
    """Parse a version string into its components, trailing zeros removed.

    ``"1"``, ``"1.0"`` and ``"1.0.0"`` all give ``(1,)``; ``"1.10"`` gives
    ``(1, 10)``; ``"0"`` gives ``()``. Compare results with ``<``, ``==``...

    Args:
        text: the version string.

    Returns:
        The normalised components.

    Raises:
        InvalidVersion: ``text`` is not a string of dot-separated decimal integers.
    """
    if not isinstance(text, str) or _VERSION_RE.match(text) is None:
        raise InvalidVersion(f"invalid protocol version {text!r}: expected e.g. '1.10'")
    try:
        parts = [int(part) for part in text.split(".")]
    except ValueError as exc:  # beyond the int() digit limit
        raise InvalidVersion(f"invalid protocol version {text[:32]!r}...: too long") from exc
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def compare_versions(a: str, b: str) -> int:
    """Compare two version strings component-wise as integers.

    Returns:
        ``-1`` if ``a < b``, ``0`` if equal (``"1" == "1.0"``), ``1`` if ``a > b``.

    Raises:
        InvalidVersion: either string does not parse.
    """
    pa, pb = parse_version(a), parse_version(b)
    return (pa > pb) - (pa < pb)


_SUPPORTED_KEYS: Final = tuple(parse_version(v) for v in SUPPORTED_VERSIONS)  # sorted


def negotiate_version(client: str | None, own: str = CURRENT_VERSION) -> str:
    """Choose the protocol version to answer ``initialize`` with.

    See protocol-wire.md#version-negotiation.

    Args:
        client: the client's ``protocol_version`` (``None`` when missing).
        own: this server's version (default :data:`CURRENT_VERSION`).

    Returns:
        The highest supported version <= min(client, own), spelled as in
        :data:`SUPPORTED_VERSIONS` (``"1.0"`` -> ``"1"``, ``"2"`` -> ``"1.10"``).

    Raises:
        InvalidVersion: ``client`` is missing or does not parse (answer
            ``-32602``), or it is lower than every supported version (e.g. ``"0.9"``).
    """
    if client is None:
        raise InvalidVersion("missing protocol version")
    ceiling = min(parse_version(client), parse_version(own))
    index = bisect.bisect_right(_SUPPORTED_KEYS, ceiling)
    if index == 0:
        raise InvalidVersion(
            f"unsupported protocol version {client!r}: the oldest supported is "
            f"{SUPPORTED_VERSIONS[0]!r}"
        )
    return SUPPORTED_VERSIONS[index - 1]
