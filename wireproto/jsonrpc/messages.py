"""JSON-RPC 2.0 message Structs and the standard error codes.

Field order is wire order: ``jsonrpc``, ``id``, ``method`` come before
``params`` / ``result`` / ``error`` so that a reader can classify a message
before it reaches the (possibly large) payload. Absent ``params`` is omitted,
never ``null`` (``params=None`` means absent); a success response always
carries ``result``.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec
from msgspec import UNSET

__all__ = [
    "Error",
    "ErrorCode",
    "ErrorResponse",
    "Id",
    "Message",
    "Notification",
    "Request",
    "Response",
]

Id = int | str
"""A JSON-RPC id as this library accepts it: a JSON string or integer.

Integers of any size are accepted (ACP types ids as int64; being lenient costs
nothing) and echoed exactly, as is the type: ``7`` and ``"7"`` stay distinct."""


_ENVELOPE: dict[str, Any] = {"tag_field": "jsonrpc", "tag": "2.0"}
# ``"jsonrpc": "2.0"`` is written as a msgspec tag: always first, never omitted.


class ErrorCode(enum.IntEnum):
    """The standard JSON-RPC error codes, plus LSP's request-cancelled."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800


class Request(msgspec.Struct, omit_defaults=True, kw_only=True, **_ENVELOPE):
    """A request: expects exactly one response with the same id.

    ``id`` is ``None`` only for a request received with ``"id": null`` under
    a dialect that answers such requests (ACP).
    """

    id: Id | None
    method: str
    params: Any = UNSET

    def __post_init__(self) -> None:
        if self.params is None:  # JSON-RPC has no null params: omit them
            self.params = UNSET


class Notification(msgspec.Struct, omit_defaults=True, kw_only=True, **_ENVELOPE):
    """A notification: a method call that is never answered."""

    method: str
    params: Any = UNSET

    def __post_init__(self) -> None:
        if self.params is None:  # JSON-RPC has no null params: omit them
            self.params = UNSET


class Response(msgspec.Struct, kw_only=True, **_ENVELOPE):
    """A success response. ``result`` is always present (possibly ``null``)."""

    id: Id | None
    result: Any = None


class Error(msgspec.Struct, omit_defaults=True, kw_only=True):
    """The error object of an error response."""

    code: int
    message: str
    data: Any = UNSET


class ErrorResponse(msgspec.Struct, kw_only=True, **_ENVELOPE):
    """An error response; ``id`` is ``None`` when the request's id is unknown."""

    id: Id | None
    error: Error


Message = Request | Notification | Response | ErrorResponse
"""Any JSON-RPC message."""
