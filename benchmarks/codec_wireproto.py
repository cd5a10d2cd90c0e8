"""Codec contender: wireproto's JSON-RPC codec + the generated ACP msgspec Structs.

* decode, requests and notifications: exactly what the peer does. A
  ``Router`` holds the methods as the ACP adapter registers them (params
  Struct, ``dec_hook=acp.codec.dec_hook``, lenient fallback);
  ``Decoder(ACP_DIALECT, router).decode`` validates the envelope and, in the
  same msgspec call, the params (or, for large input with union tags last,
  decodes to builtins and converts) into a ``Call``; the route is looked up
  (the peer dispatches with it) and the ``Call``'s params are the handler's
  argument (``Decoder.decode_params(method, params, route.params_type,
  route.decode)`` for a message the one pass left to two);
* decode, responses: ``Decoder.decode`` of the envelope (one msgspec call)
  with ``result`` kept as ``msgspec.Raw``, then ``wireproto.adapters.acp.codec.decode`` into the
  result Struct (strict msgspec decoder built once per type, the schema's
  leniency only if the strict pass fails — it never does here);
* encode: the Struct inside a ``Request`` / ``Notification`` / ``Response``
  Struct, written by ``wireproto.jsonrpc.codec.Encoder`` into its reused
  buffer with the trailing newline.

Run by ``bench_codec.py``.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import msgspec
from _codec_runner import Contender, main
from _messages import KINDS, MESSAGES

from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema
from wireproto.jsonrpc.codec import ACP_DIALECT, Call, Decoder, Encoder
from wireproto.jsonrpc.messages import Notification, Request, Response
from wireproto.rpc.router import Router

# method -> params type, as an ACP router registers them
PARAMS: dict[str, Any] = {
    "session/prompt": schema.PromptRequest,
    "session/update": schema.SessionNotification,
}


def _lenient(type_: Any) -> Any:
    return lambda raw: acp_codec.decode(raw, type_)


async def _handler(params: Any) -> None:
    """Never called: decoding only."""


ROUTER = Router()
for _method, _type in PARAMS.items():
    ROUTER.add(_method, _handler, _type, notification=_method == "session/update",
               dec_hook=acp_codec.dec_hook, lenient=_lenient(_type))
DECODER = Decoder(ACP_DIALECT, ROUTER)
ENCODER = Encoder(ACP_DIALECT)
RESULT = schema.InitializeResponse  # known from the pending `initialize` request


def prepare(case: str, message: dict[str, Any]) -> Request | Notification | Response:
    """The whole message as Structs (untimed)."""
    kind = KINDS[case]
    if kind == "response":
        return Response(id=message["id"], result=acp_codec.convert(message["result"], RESULT))
    params = acp_codec.convert(message["params"], PARAMS[message["method"]])
    if kind == "request":
        return Request(id=message["id"], method=message["method"], params=params)
    return Notification(method=message["method"], params=params)


def decode_call(data: bytes) -> Any:
    """A request or notification line -> its params Struct (the peer's calls)."""
    msg = DECODER.decode(data)
    route = ROUTER.get(msg.method)  # type: ignore[union-attr]
    assert route is not None
    if isinstance(msg, Call):  # decoded with the envelope, as the peer takes them
        return msg.params
    return DECODER.decode_params(
        msg.method, msg.params, route.params_type, route.decode  # type: ignore[union-attr]
    )


def decode_result(data: bytes) -> Any:
    """A response line -> its result Struct."""
    msg = DECODER.decode(data)
    return acp_codec.decode(msg.result, RESULT)  # type: ignore[union-attr]


CONTENDER = Contender(
    name="wireproto",
    version=f"wireproto {metadata.version('wireproto')}, msgspec {metadata.version('msgspec')}",
    validates=True,
    prepare=prepare,
    encode=ENCODER.encode,
    decoders={
        case: decode_result if KINDS[case] == "response" else decode_call for case in MESSAGES
    },
    to_plain=msgspec.to_builtins,
    notes=[
        "calls: Decoder(ACP_DIALECT, router).decode + decode_params, as the peer does; "
        "results: envelope + acp.codec.decode(Raw, Struct); Encoder.encode"
    ],
)

if __name__ == "__main__":
    main(CONTENDER)
