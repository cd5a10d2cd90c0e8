"""Codec contender: wireproto's JSON-RPC codec + the generated ACP msgspec Structs.

* decode, requests and notifications: exactly what the peer's reader does
  to decode one. A ``Router`` holds the methods as the ACP adapter registers
  them (params Struct, ``dec_hook=acp.codec.dec_hook``, lenient fallback);
  ``Decoder(ACP_DIALECT, router).decode`` validates the envelope and, in the
  same msgspec call, the params into a ``Call``: the peer hands its
  ``params`` to the handler as they are (an attribute, read by the
  dispatch, as is the route the peer looks up for every message: neither is
  timed, and no more decoding happens after this call; a message the one
  pass left to two would fail the benchmark's check, see ``to_plain``);
* decode, responses: what the peer does for a request alone in flight:
  ``Decoder.expect(id, InitializeResponse, dec_hook)`` (``Peer.request``,
  before sending it), then ``Decoder.decode`` (the envelope and the result
  Struct in one msgspec call; decoding it ends the expectation, so the
  peer has nothing to undo); the adapter's leniency only if that strict decode fails, as
  ``Peer.request(lenient=...)``: it never does here;
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
from wireproto.jsonrpc.codec import ACP_DIALECT, Call, Decoder, Encoder, IncomingResponse
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
RESULT_ID = 0  # its id (the benchmark's response answers it)


def prepare(case: str, message: dict[str, Any]) -> Request | Notification | Response:
    """The whole message as Structs (untimed)."""
    kind = KINDS[case]
    if kind == "response":
        return Response(id=message["id"], result=acp_codec.convert(message["result"], RESULT))
    params = acp_codec.convert(message["params"], PARAMS[message["method"]])
    if kind == "request":
        return Request(id=message["id"], method=message["method"], params=params)
    return Notification(method=message["method"], params=params)


def decode_result(
    data: bytes,
    expect: Any = DECODER.expect,
    decode: Any = DECODER.decode,
    hook: Any = acp_codec.dec_hook,
) -> Any:
    """A response line -> the response holding its result Struct.

    As the peer does for a request alone in flight: ``expect`` (in
    ``Peer.request``, before it is sent), then ``decode`` (its reader),
    which ends the expectation as it decodes that response.
    """
    expect(RESULT_ID, RESULT, hook)
    return decode(data)


def to_plain(decoded: Any) -> Any:
    """The decoded payload as JSON values (for the runner's check, untimed).

    Only what the peer takes as it is: a ``Call`` (params decoded with the
    envelope) or a response whose result was decoded with the envelope;
    anything left to a second pass fails the check.
    """
    if isinstance(decoded, Call):
        return msgspec.to_builtins(decoded.params)
    assert isinstance(decoded, IncomingResponse), decoded
    assert not isinstance(decoded.result, msgspec.Raw), "result left raw"
    return msgspec.to_builtins(decoded.result)


CONTENDER = Contender(
    name="wireproto",
    version=f"wireproto {metadata.version('wireproto')}, msgspec {metadata.version('msgspec')}",
    validates=True,
    prepare=prepare,
    encode=ENCODER.encode,
    decoders={
        case: decode_result if KINDS[case] == "response" else DECODER.decode for case in MESSAGES
    },
    to_plain=to_plain,
    notes=[
        "calls: Decoder(ACP_DIALECT, router).decode, as the peer's reader does (a Call); "
        "results: expect + decode, as for a request alone in flight; Encoder.encode"
    ],
)

if __name__ == "__main__":
    main(CONTENDER)
