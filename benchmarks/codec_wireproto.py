"""Codec contender: wireproto's JSON-RPC codec + the generated ACP msgspec Structs.

* decode, requests and notifications: exactly what the peer's read loop
  (``Peer._read_loop``) does to decode one. A ``Router`` holds the methods
  as the ACP adapter registers them (params Struct,
  ``dec_hook=acp.codec.dec_hook``, lenient fallback); per message the loop
  calls ``Decoder._fast[0]`` (read from the list each time), which while no
  response is expected is msgspec's own decode of the router's union:
  envelope and params in one C call, into a ``Call``, with no Python frame
  around it; what it refuses would go to ``Decoder._decode_refused`` (never
  here). The peer hands ``Call.params`` to the handler as they are (an
  attribute, read by the dispatch, as is the route the peer looks up for
  every message: neither is timed, and no more decoding happens; a message
  the one pass left to two would fail the benchmark's check, see
  ``to_plain``);
* decode, responses: what the peer does for a request alone in flight:
  what ``Decoder.expect(id, InitializeResponse, dec_hook)`` does, inline as
  ``Peer.request`` does it before sending the request (``fast[0] =
  expecting[InitializeResponse, dec_hook]``, one store: the id is not
  matched, the expectation ending when a second request is sent; the peer
  keeps that look-up while consecutive requests expect the same type, as a
  client's prompts do: a request expecting another type costs one dict
  look-up more, ~0.1 us), then the same read loop step, where ``fast[0]``
  is now msgspec's own decode of the expected response, envelope and
  result Struct in one call (no Python frame around it: a call refused by
  it goes to ``Decoder._decode_refused``, which ends the expectation), and
  the store by which the read loop's branch for a response ends the
  expectation (``fast[0] = idle[0]``; ``Peer.request``'s ``finally`` then
  tests that it ended, as it did before: not timed, as the rest of the
  request); the adapter's leniency only if that strict decode fails, as
  ``Peer.request(lenient=...)``: it never does here;
* encode: the Struct inside a ``Request`` / ``Notification`` / ``Response``
  Struct, written by ``wireproto.jsonrpc.codec.Encoder`` into its reused
  buffer with the trailing newline.

Decoding is timed as ``read(data, number)`` / ``read_result(data, number)``
(``CONTENDER.decode_loops``): the read loop's steps inline, ``number``
times, as the peer runs them (a wrapper function per message would add a
Python frame the peer does not have).

Run by ``bench_codec.py``.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

import msgspec
from _codec_runner import Contender, main
from _messages import KINDS, MESSAGES

from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema
from wireproto.errors import InvalidMessage
from wireproto.jsonrpc.codec import ACP_DIALECT, Call, Decoder, Encoder, IncomingResponse
from wireproto.jsonrpc.messages import Notification, Request, Response
from wireproto.rpc._pending import NOTHING_EXPECTED, expectation
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


def read(data: bytes, number: int = 1, decoder: Decoder = DECODER) -> Any:
    """Decode ``data`` ``number`` times as the peer's read loop does; the last message.

    The loop's steps (``Peer._read_loop``), nothing added: ``fast[0]`` read
    per message, its call, and the fallback for what it refuses.
    """
    fast = decoder._fast
    refused = decoder._decode_refused
    msg: Any = None
    for _ in range(number):
        try:
            msg = fast[0](data)
        except InvalidMessage:
            raise
        except Exception:  # most likely a response
            msg = refused(data)
    return msg


class _Requester:
    """What ``Peer.request`` reads to set the expectation: its decoder, and what it kept."""

    def __init__(self, decoder: Decoder) -> None:
        self._decoder = decoder
        self._expected = NOTHING_EXPECTED


REQUESTER = _Requester(DECODER)


def read_result(
    data: bytes, number: int = 1, self: _Requester = REQUESTER, hook: Any = acp_codec.dec_hook
) -> Any:
    """A response line -> the response holding its result Struct, ``number`` times.

    As the peer does for a request alone in flight: what ``Decoder.expect``
    does, inline as ``Peer.request`` does it before sending the request (its
    lines, as they are there: the ``Decoder._expecting`` look-up is kept
    while the result type repeats, as here), then the read loop's step,
    then, as the loop's branch for a response does first, the store that
    ends the expectation.
    """
    fast = self._decoder._fast
    idle = self._decoder._paths.idle
    refused = self._decoder._decode_refused
    msg: Any = None
    for _ in range(number):
        kept, kept_hook, decode = self._expected  # (Peer.request from here)
        if RESULT is not kept or hook is not kept_hook:
            kept, kept_hook, decode = self._expected = expectation(
                self._decoder, RESULT, hook
            )
        self._decoder._fast[0] = decode  # type: ignore[assignment]
        try:  # (the read loop from here)
            msg = fast[0](data)
        except InvalidMessage:
            raise
        except Exception:
            msg = refused(data)
        fast[0] = idle[0]  # (its response branch: the expectation ends)
    return msg


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


LOOPS = {case: read_result if KINDS[case] == "response" else read for case in MESSAGES}

CONTENDER = Contender(
    name="wireproto",
    version=f"wireproto {metadata.version('wireproto')}, msgspec {metadata.version('msgspec')}",
    validates=True,
    prepare=prepare,
    encode=ENCODER.encode,
    decoders={case: functools.partial(loop, number=1) for case, loop in LOOPS.items()},
    to_plain=to_plain,
    notes=[
        "calls: the peer's read loop step, Decoder._fast[0] (msgspec's decode of the router's "
        "union: a Call); results: expect + that step, as for a request alone in flight; "
        "Encoder.encode"
    ],
    decode_loops=dict(LOOPS),
)

if __name__ == "__main__":
    main(CONTENDER)
