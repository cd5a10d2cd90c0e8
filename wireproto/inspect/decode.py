"""What a message means to the library: its type and the codec's complaints.

The page asks for one message at a time (when it is selected), so the slow
checks are affordable: for ACP the message is converted with the library's
lenient codec and also checked against the official JSON schema (which
reports what leniency would forgive); for Wire it goes through the same
decoders the Wire server and client use. Responses are decoded by the
method of the request they answer (the page pairs them and sends it along).

The answer is a plain dict for the page::

    {"type": "session/update: AgentMessageChunk", "errors": [...], "value": {...}}

``value`` is the decoded message as the library sees it (defaults filled
in), ``None`` when it could not be decoded or has no known type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from wireproto.errors import RemoteProtocolError, RpcError

__all__ = ["describe"]

Described = dict[str, Any]


def _answer(type_name: str, value: Any = None, errors: list[str] | None = None) -> Described:
    return {"type": type_name, "errors": errors or [],
            "value": None if value is None else msgspec.to_builtins(value)}


def _error_text(exc: Exception) -> str:
    if isinstance(exc, RpcError) and isinstance(exc.data, dict):
        return f"{exc.data.get('path', '$')}: {exc.data.get('reason', exc.message)}"
    return str(exc)


# ------------------------------------------------------------------ ACP

def _acp_convert(label: str, type_: Any, data: Any) -> Described:
    from wireproto.adapters.acp import codec
    from wireproto.adapters.acp.schema import DEF_OF
    from wireproto.adapters.acp.validation import schema_errors

    if type_ is None:
        return _answer(label)
    errors: list[str] = []
    value: Any = None
    try:
        value = codec.convert(data, type_)
    except msgspec.ValidationError as exc:
        errors.append(f"codec: {exc}")
    definition = DEF_OF.get(type_)
    if definition is not None:
        errors.extend(f"schema: {e}" for e in schema_errors(definition, data))
    name = f"{label}: {type_.__name__}"
    update = getattr(value, "update", None)
    if update is not None and hasattr(update, "__struct_fields__"):
        name += f" / {type(update).__name__}"
    return _answer(name, value, errors)


def _acp(message: dict[str, Any], request: dict[str, Any] | None) -> Described:
    from wireproto.adapters.acp.schema import METHODS

    method = message.get("method")
    if isinstance(method, str):
        spec = METHODS.get(method)
        if spec is None:
            return _answer(f"{method}: not an ACP method this library knows")
        return _acp_convert(method, spec.params, message.get("params", {}))
    if "error" in message:
        return _answer("error response")
    asked = request.get("method") if request else None
    spec = METHODS.get(asked) if isinstance(asked, str) else None
    if spec is None:
        return _answer("response (to an unknown request)")
    return _acp_convert(f"{asked} result", spec.result, message.get("result"))


# ------------------------------------------------------------------ Wire

def _wire_call(label: str, decode: Callable[[], Any]) -> Described:
    try:
        value = decode()
    except (RpcError, RemoteProtocolError, msgspec.ValidationError) as exc:
        return _answer(label, None, [_error_text(exc)])
    name = label if value is None else f"{label}: {type(value).__name__}"
    return _answer(name, value)


def _wire(message: dict[str, Any], request: dict[str, Any] | None) -> Described:
    from wireproto.adapters.wire import envelope
    from wireproto.adapters.wire.methods import METHODS

    method = message.get("method")
    params = message.get("params")
    if method == "event":
        return _wire_call("event", lambda: envelope.decode_event(params or {}))
    if method == "request":
        return _wire_call("request", lambda: envelope.decode_request(params or {}))
    if isinstance(method, str):
        called = METHODS.get(method)
        if called is None:
            return _answer(f"{method}: not a Wire method this library knows")
        return _wire_call(method, lambda: called.decode_params(params))
    if "error" in message:
        return _answer("error response")
    asked = request.get("method") if request else None
    result = message.get("result")
    if asked == "request" and request is not None:
        asked_params = request.get("params") or {}

        def response() -> Any:
            return envelope.decode_response(envelope.decode_request(asked_params), result)

        return _wire_call("response to request", response)
    spec = METHODS.get(asked) if isinstance(asked, str) else None
    if spec is None:
        return _answer("response (to an unknown request)")
    return _wire_call(f"{asked} result", lambda: spec.decode_result(result))


_PROTOCOLS: dict[str, Callable[[dict[str, Any], dict[str, Any] | None], Described]] = {
    "acp": _acp,
    "wire": _wire,
}


def describe(protocol: str | None, message: Any, request: Any = None) -> Described:
    """Decode ``message`` as ``protocol`` would (``request``: the one it answers).

    Never raises for bad input: what is wrong goes into ``errors``.
    """
    if not isinstance(message, dict):
        return _answer("not a JSON-RPC object", None, ["the message is not a JSON object"])
    decoder = _PROTOCOLS.get(protocol or "")
    if decoder is None:
        return _answer("JSON-RPC message (protocol unknown)")
    try:
        return decoder(message, request if isinstance(request, dict) else None)
    except Exception as exc:  # a decoder bug must not take the page down
        return _answer("could not decode", None, [f"{type(exc).__name__}: {exc}"])
