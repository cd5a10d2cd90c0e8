"""Codec contender: wireproto's JSON-RPC codec + the generated ACP msgspec Structs.

* decode: ``wireproto.jsonrpc.codec.Decoder(ACP_DIALECT).decode`` validates
  and classifies the envelope, leaving ``params`` / ``result`` as
  ``msgspec.Raw``; the payload is then decoded by
  ``wireproto.adapters.acp.codec.decode`` into the generated Struct of the
  method (strict msgspec decoder built once per type, with the schema's
  leniency applied only if the strict pass fails — it never does here);
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
from wireproto.jsonrpc.codec import ACP_DIALECT, Decoder, Encoder
from wireproto.jsonrpc.messages import Notification, Request, Response

DECODER = Decoder(ACP_DIALECT)
ENCODER = Encoder(ACP_DIALECT)

# method -> params type, as an ACP router registers them
PARAMS: dict[str, Any] = {
    "session/prompt": schema.PromptRequest,
    "session/update": schema.SessionNotification,
}
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
    """A request or notification line -> its params Struct."""
    msg = DECODER.decode(data)
    return acp_codec.decode(msg.params, PARAMS[msg.method])  # type: ignore[union-attr]


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
    notes=["Decoder(ACP_DIALECT) envelope + acp.codec.decode(Raw, Struct); Encoder.encode"],
)

if __name__ == "__main__":
    main(CONTENDER)
