"""Outgoing requests waiting for their response (a part of the peer).

The peer keeps one :class:`Pending` per request it sent, by id, until the
request ends. The reader resolves it with the response (at once, or through
the inbox behind the notifications that preceded the response on the wire),
or the peer with the exception that ended the connection; the requesting
task wakes, and :func:`raise_failure` turns whatever is not a result into the
exception the request raises.

A request alone in flight has its response expected by the decoder (its
result decoded with the envelope): :func:`expectation` is what the peer
keeps of it between requests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NoReturn

import msgspec
from msgspec import UNSET

from wireproto.errors import RequestCancelled, RpcError
from wireproto.jsonrpc.codec import DecHook, Decoder, IncomingResponse
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc._waiter import Waiter

__all__ = ["NOTHING_EXPECTED", "Expected", "Pending", "expectation", "raise_failure"]

log = logging.getLogger("wireproto.rpc.peer")  # one logger for everything the peer does


Expected = tuple[Any, Any, Callable[[Any], Any]]
"""A result type, its dec_hook, and what ``Decoder._fast[0]`` holds while it is expected."""


def _nothing(data: Any) -> Any:
    """The decode of :data:`NOTHING_EXPECTED`: never what a decoder's ``_fast[0]`` holds."""
    raise LookupError("nothing is expected")


NOTHING_EXPECTED: Expected = (object(), None, _nothing)


def expectation(decoder: Decoder, result_type: Any, dec_hook: DecHook | None) -> Expected:
    """``decoder._expecting[result_type, dec_hook]``, kept by the peer while the type repeats.

    An unhashable type or hook is not kept by the decoder: what it expects
    then leaves the result raw (for ``Decoder.decode_result``).
    """
    try:
        return (result_type, dec_hook, decoder._expecting[result_type, dec_hook])
    except TypeError:
        return (result_type, dec_hook, decoder._expected(result_type, dec_hook))


class Pending(msgspec.Struct, eq=False):
    """One outgoing request waiting for its response.

    (A Struct for its constructor in C: one is made per request.)

    Attributes:
        method: the request's method (for messages).
        ordered: whether its response waits for the notifications before it.
        event: set once :attr:`response` is.
        on_response: called with the response when it is delivered.
        queued: its response waits in the inbox behind notifications.
        response: the response, or the exception that ended the request.
    """

    method: str
    ordered: bool
    event: Waiter
    on_response: Callable[[IncomingResponse], None] | None = None
    queued: bool = False
    response: IncomingResponse | BaseException | None = None

    def resolve(self, response: IncomingResponse | BaseException) -> None:
        """Deliver ``response`` (the first one wins) and wake the requesting task."""
        if self.response is None:
            self.response = response
            if self.on_response is not None and isinstance(response, IncomingResponse):
                try:
                    self.on_response(response)
                except Exception:
                    log.exception("on_response hook for %s failed", self.method)
            event = self.event
            if not event.done():
                event.set_result(None)


def raise_failure(response: IncomingResponse | BaseException | None) -> NoReturn:
    """Raise what a request that got no result ends with.

    Raises:
        RequestCancelled: the peer answered ``-32800``.
        RpcError: any other error answer.
        BaseException: ``response`` itself, when it is an exception.
    """
    if isinstance(response, BaseException):
        raise response
    assert response is not None and response.error is not None
    e = response.error
    data = None if e.data is UNSET else e.data
    if e.code == ErrorCode.REQUEST_CANCELLED:
        raise RequestCancelled(e.message, data)
    raise RpcError(e.code, e.message, data)
