"""JSON-RPC 2.0 without I/O: typed messages, the msgspec codec, line framing.

Bytes in, typed messages out (and back). A :class:`Dialect` holds what differs
between the protocols built on it (id types, error texts, cancellation);
:data:`ACP_DIALECT`, :data:`WIRE_DIALECT` and :data:`MCP_DIALECT` are ready-made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wireproto._lazy import attach

if TYPE_CHECKING:
    from .codec import (
        ACP_DIALECT,
        MCP_DIALECT,
        WIRE_DIALECT,
        Call,
        DecHook,
        Decoder,
        Dialect,
        Encoder,
        Incoming,
        IncomingResponse,
        ParamsSpec,
        validation_error_data,
    )
    from .framing import DEFAULT_MAX_MESSAGE_BYTES, LineFramer, frame
    from .messages import (
        Error,
        ErrorCode,
        ErrorResponse,
        Id,
        Message,
        Notification,
        Request,
        Response,
    )

__all__ = [
    "ACP_DIALECT",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MCP_DIALECT",
    "WIRE_DIALECT",
    "Call",
    "DecHook",
    "Decoder",
    "Dialect",
    "Encoder",
    "Error",
    "ErrorCode",
    "ErrorResponse",
    "Id",
    "Incoming",
    "IncomingResponse",
    "LineFramer",
    "Message",
    "Notification",
    "ParamsSpec",
    "Request",
    "Response",
    "frame",
    "validation_error_data",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "ACP_DIALECT": ".codec",
        "Call": ".codec",
        "DecHook": ".codec",
        "Decoder": ".codec",
        "Dialect": ".codec",
        "Encoder": ".codec",
        "Incoming": ".codec",
        "IncomingResponse": ".codec",
        "MCP_DIALECT": ".codec",
        "ParamsSpec": ".codec",
        "WIRE_DIALECT": ".codec",
        "validation_error_data": ".codec",
        "DEFAULT_MAX_MESSAGE_BYTES": ".framing",
        "LineFramer": ".framing",
        "frame": ".framing",
        "Error": ".messages",
        "ErrorCode": ".messages",
        "ErrorResponse": ".messages",
        "Id": ".messages",
        "Message": ".messages",
        "Notification": ".messages",
        "Request": ".messages",
        "Response": ".messages",
    },
)
