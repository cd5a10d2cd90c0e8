"""The ``{type, payload}`` envelope of Wire events and requests.

See protocol-wire.md#type-payload-envelope.

The server sends two JSON-RPC methods, ``event`` (notification) and
``request`` (request); both carry ``params = {"type": <tag>, "payload": {...}}``
(:class:`~.messages.WireEnvelope`).

Theory of operation
-------------------
* Encoding: :func:`encode_event` / :func:`encode_request` wrap a message
  Struct in an envelope whose payload is the Struct itself, so the JSON-RPC
  encoder writes the whole message in one pass. The tag is the Struct's
  explicit ``WIRE_TYPE``.
* Decoding: :func:`decode_event` / :func:`decode_request` accept the envelope
  as JSON bytes / ``msgspec.Raw`` (fast path: the payload stays raw and is
  decoded by one prebuilt decoder per type), as builtins (a ``dict``), or as a
  ``WireEnvelope``. The tag is looked up in :data:`EVENT_TYPES` /
  :data:`REQUEST_TYPES` after mapping legacy names through
  :data:`LEGACY_TYPE_NAMES`; a few types need their own decoder
  (:data:`_SPECIAL_EVENT_DECODERS`: ``SubagentEvent`` with its nested event and
  legacy ``task_tool_call_id``). An unknown event tag gives
  :class:`~.messages.UnknownEvent`, never an error (newer servers add types
  without a version bump).
* Errors: an invalid envelope or payload raises
  :class:`~wireproto.errors.RpcError` ``-32602`` with
  ``data = {"path": "$.payload.n", "reason": "..."}``, so a handler can let it
  propagate as the JSON-RPC answer. An invalid *result* of a request raises
  :class:`~wireproto.errors.RemoteProtocolError`; the caller applies the
  fallback of protocol-wire.md#failed-answers (reject, error tool result, empty answers, allow).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, overload

import msgspec

from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.jsonrpc.codec import TOO_DEEP, too_deep
from wireproto.jsonrpc.messages import ErrorCode

from .display import dec_hook, validation_error_details
from .messages import (
    EVENT_CLASSES,
    REQUEST_CLASSES,
    ApprovalRequest,
    ApprovalResponse,
    ContentPart,
    Event,
    HookRequest,
    HookResponse,
    QuestionRequest,
    QuestionResponse,
    Request,
    Response,
    SubagentEvent,
    ToolCallRequest,
    ToolResult,
    UnknownEvent,
    WireEnvelope,
)

__all__ = [
    "EVENT_TYPES",
    "LEGACY_TYPE_NAMES",
    "REQUEST_TYPES",
    "RESPONSE_TYPES",
    "decode_event",
    "decode_request",
    "decode_response",
    "decode_value",
    "decoder_for",
    "encode_event",
    "encode_request",
    "invalid_params",
]

EVENT_TYPES: dict[str, Any] = {cls.WIRE_TYPE: cls for cls in EVENT_CLASSES}
EVENT_TYPES["ContentPart"] = ContentPart
"""Envelope tag -> decode target (a Struct, or the content-part union)."""

REQUEST_TYPES: dict[str, type[Request]] = {cls.WIRE_TYPE: cls for cls in REQUEST_CLASSES}
"""Envelope tag -> request Struct."""

LEGACY_TYPE_NAMES: dict[str, str] = {"ApprovalRequestResolved": "ApprovalResponse"}
"""Old envelope tags still accepted on input -> current tag (protocol-wire.md#compatibility)."""

RESPONSE_TYPES: dict[type[Request], type[Response]] = {
    ApprovalRequest: ApprovalResponse,
    ToolCallRequest: ToolResult,
    QuestionRequest: QuestionResponse,
    HookRequest: HookResponse,
}
"""Request Struct -> the Struct of the client's ``result``."""

_EVENT_CLASS_SET = frozenset(EVENT_CLASSES)
_REQUEST_CLASS_SET = frozenset(REQUEST_CLASSES)

# --------------------------------------------------------------------------- decoding machinery

_JSON_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}
_BINARY = (bytes, bytearray, memoryview, msgspec.Raw)


def decoder_for(target: Any) -> msgspec.json.Decoder[Any]:
    """Return the shared JSON decoder for ``target``, built once with ``dec_hook``.

    Args:
        target: a Struct type or a union of them.

    Returns:
        A ``msgspec.json.Decoder`` that also decodes display blocks.
    """
    decoder = _JSON_DECODERS.get(target)
    if decoder is None:
        decoder = _JSON_DECODERS[target] = msgspec.json.Decoder(target, dec_hook=dec_hook)
    return decoder


def decode_value(target: Any, value: Any) -> Any:
    """Decode ``value`` into ``target``.

    Args:
        target: a Struct type or a union of them.
        value: JSON text (``bytes`` / ``msgspec.Raw``), or already decoded JSON
            values (``dict``, ``list``, ``str``, ``None``...).

    Returns:
        The typed value.

    Raises:
        msgspec.ValidationError: the value does not match ``target``.
        msgspec.DecodeError: ``value`` is bytes that are not valid JSON.
    """
    try:
        if isinstance(value, _BINARY):
            return decoder_for(target).decode(value)
        return msgspec.convert(value, target, dec_hook=dec_hook)
    except RecursionError:
        raise too_deep() from None


def invalid_params(method: str, exc: msgspec.DecodeError, prefix: str = "$") -> RpcError:
    """Build the ``-32602`` error for invalid params of ``method``.

    Args:
        method: the JSON-RPC method name (written in backticks in the message).
        exc: the msgspec error (a ``ValidationError`` carries the JSON path).
        prefix: the JSON path of the decoded value inside ``params``.

    Returns:
        ``RpcError(-32602, "Invalid parameters for method `<method>`",
        {"path": <JSON path>, "reason": <validator message>})``.
    """
    if isinstance(exc, msgspec.ValidationError):
        path, reason = validation_error_details(exc, prefix)
    else:
        path, reason = prefix, str(exc)
    return _params_error(method, path, reason)


def _params_error(method: str, path: str, reason: str) -> RpcError:
    return RpcError(
        ErrorCode.INVALID_PARAMS,
        f"Invalid parameters for method `{method}`",
        {"path": path, "reason": reason},
    )


class _RawEnvelope(msgspec.Struct):
    """Envelope with the payload kept as raw JSON (decoded later, by type)."""

    type: str
    payload: msgspec.Raw


def _split_envelope(source: Any, method: str) -> tuple[str, Any]:
    """Return ``(tag, payload)`` of an envelope given as a Struct, JSON text or builtins."""
    if isinstance(source, WireEnvelope):
        return source.type, source.payload
    target = _RawEnvelope if isinstance(source, _BINARY) else WireEnvelope
    try:
        env: _RawEnvelope | WireEnvelope = decode_value(target, source)
    except msgspec.DecodeError as exc:
        raise invalid_params(method, exc) from exc
    return env.type, env.payload


def _decode_payload(target: Any, payload: Any, method: str, path: str) -> Any:
    """Decode one payload; ``path`` is its JSON path inside ``params``."""
    if isinstance(payload, msgspec.Struct):
        if isinstance(payload, target):  # built locally, e.g. by encode_event
            return payload
        payload = msgspec.to_builtins(payload)
    try:
        return decode_value(target, payload)
    except msgspec.DecodeError as exc:
        raise invalid_params(method, exc, path) from exc


class _SubagentEventIn(msgspec.Struct, kw_only=True):
    """Input shape of ``SubagentEvent``, accepting the legacy ``task_tool_call_id``."""

    parent_tool_call_id: str | msgspec.UnsetType | None = msgspec.UNSET
    task_tool_call_id: str | None = None
    agent_id: str | None = None
    subagent_type: str | None = None
    event: WireEnvelope


def _decode_subagent_event(payload: Any, method: str, path: str) -> SubagentEvent:
    if isinstance(payload, SubagentEvent):
        return payload
    raw: _SubagentEventIn = _decode_payload(_SubagentEventIn, payload, method, path)
    inner = _decode_event_payload(raw.event.type, raw.event.payload, method, f"{path}.event")
    parent = raw.parent_tool_call_id
    return SubagentEvent(
        parent_tool_call_id=raw.task_tool_call_id if parent is msgspec.UNSET else parent,
        agent_id=raw.agent_id,
        subagent_type=raw.subagent_type,
        event=encode_event(inner),
    )


_SPECIAL_EVENT_DECODERS: dict[str, Callable[[Any, str, str], Event]] = {
    "SubagentEvent": _decode_subagent_event,
}
"""Tags whose payload needs more than a plain typed decode."""


def _decode_event_payload(tag: str, payload: Any, method: str, path: str) -> Event | UnknownEvent:
    """Decode the payload of the envelope at ``path`` (``$`` or a nested event)."""
    tag = LEGACY_TYPE_NAMES.get(tag, tag)
    special = _SPECIAL_EVENT_DECODERS.get(tag)
    if special is not None:
        return special(payload, method, f"{path}.payload")
    target = EVENT_TYPES.get(tag)
    if target is not None:
        event: Event = _decode_payload(target, payload, method, f"{path}.payload")
        return event
    if tag in REQUEST_TYPES:
        raise _params_error(method, f"{path}.type", f"{tag} is a request, not an event")
    if isinstance(payload, _BINARY):
        payload = msgspec.json.decode(payload)
    elif isinstance(payload, msgspec.Struct):
        payload = msgspec.to_builtins(payload)
    return UnknownEvent(type=tag, payload=payload)


# --------------------------------------------------------------------------- public helpers


def encode_event(event: Event | UnknownEvent) -> WireEnvelope:
    """Wrap an event in its ``{type, payload}`` envelope (params of method ``event``).

    Args:
        event: an event Struct (content parts get the tag ``"ContentPart"``), or
            an :class:`~.messages.UnknownEvent` to relay as received.

    Returns:
        The envelope; its payload is the Struct itself.

    Raises:
        LocalProtocolError: ``event`` is not an event type.
    """
    if isinstance(event, UnknownEvent):
        return WireEnvelope(type=event.type, payload=event.payload)
    if type(event) not in _EVENT_CLASS_SET:
        raise LocalProtocolError(f"not a Wire event: {type(event).__name__}")
    return WireEnvelope(type=event.WIRE_TYPE, payload=event)


def encode_request(request: Request) -> WireEnvelope:
    """Wrap a request in its ``{type, payload}`` envelope (params of method ``request``).

    The JSON-RPC id of the request must equal ``request.id`` (protocol-wire.md#request-ids).

    Raises:
        LocalProtocolError: ``request`` is not a request type.
    """
    if type(request) not in _REQUEST_CLASS_SET:
        raise LocalProtocolError(f"not a Wire request: {type(request).__name__}")
    return WireEnvelope(type=request.WIRE_TYPE, payload=request)


def decode_event(source: WireEnvelope | bytes | Mapping[str, Any]) -> Event | UnknownEvent:
    """Decode the params of an ``event`` notification.

    Args:
        source: the envelope as JSON text (``bytes`` / ``msgspec.Raw``), as
            builtins, or as a :class:`~.messages.WireEnvelope`.

    Returns:
        The typed event; ``UnknownEvent`` for a tag this library does not know.
        ``ApprovalRequestResolved`` decodes as ``ApprovalResponse``.

    Raises:
        RpcError: ``-32602`` with ``data = {"path", "reason"}`` when the envelope
            or the payload of a known type is invalid.
    """
    try:
        tag, payload = _split_envelope(source, "event")
        return _decode_event_payload(tag, payload, "event", "$")
    except RecursionError:
        raise _params_error("event", "$", TOO_DEEP) from None


def decode_request(source: WireEnvelope | bytes | Mapping[str, Any]) -> Request:
    """Decode the params of a ``request`` request.

    Args:
        source: as for :func:`decode_event`.

    Returns:
        The typed request.

    Raises:
        RpcError: ``-32602`` with ``data = {"path", "reason"}`` for an invalid
            envelope or payload, or an unknown request type.
    """
    try:
        tag, payload = _split_envelope(source, "request")
        target = REQUEST_TYPES.get(tag)
        if target is None:
            raise _params_error("request", "$.type", f"unknown request type {tag!r}")
        request: Request = _decode_payload(target, payload, "request", "$.payload")
    except RecursionError:
        raise _params_error("request", "$", TOO_DEEP) from None
    return request


@overload
def decode_response(request: ApprovalRequest, result: Any) -> ApprovalResponse: ...
@overload
def decode_response(request: ToolCallRequest, result: Any) -> ToolResult: ...
@overload
def decode_response(request: QuestionRequest, result: Any) -> QuestionResponse: ...
@overload
def decode_response(request: HookRequest, result: Any) -> HookResponse: ...
def decode_response(request: Request, result: Any) -> Response:
    """Decode the client's ``result`` for ``request``.

    Args:
        request: the request that was answered.
        result: the JSON-RPC ``result`` as JSON text or builtins.

    Returns:
        ``ApprovalResponse`` / ``ToolResult`` / ``QuestionResponse`` /
        ``HookResponse`` according to :data:`RESPONSE_TYPES`.

    Raises:
        RemoteProtocolError: the result does not have the expected shape; the
            caller applies the fallback of protocol-wire.md#failed-answers.
    """
    target = RESPONSE_TYPES[type(request)]
    try:
        response: Response = decode_value(target, result)
    except msgspec.DecodeError as exc:
        error = invalid_params("request", exc)
        raise RemoteProtocolError(
            f"invalid {target.__name__} result for {request.WIRE_TYPE}: "
            f"{error.data['reason']} at {error.data['path']}"
        ) from exc
    return response
