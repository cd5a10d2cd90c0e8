"""The method table: method name -> handler, params type, kind.

A :class:`Router` is plain data. The :class:`~wireproto.rpc.peer.Peer` looks a
method up once per inbound message, decodes ``params`` into the route's
``params_type`` with a decoder prebuilt for that type, and calls the handler
with the decoded value. Request handlers return the result (any msgspec
encodable value, ``None`` included), or a :class:`Reply` when notifications
must follow the response immediately; notification handlers return nothing.

A route may bring its own ``decode`` function (raw ``params`` -> value) when a
plain msgspec type is not enough (e.g. lenient decoding); it raises
:class:`msgspec.ValidationError` like a msgspec decoder (the codec turns it
into ``-32602``) or :class:`~wireproto.errors.InvalidMessage` with the exact
answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import msgspec

__all__ = ["Decode", "Handler", "Reply", "Route", "Router"]

Handler = Callable[[Any], Awaitable[Any]]
"""An async callable taking the decoded params."""

Decode = Callable[[msgspec.Raw], Any]
"""A custom params decoder: raw JSON ``params`` (``{}`` when absent) -> value."""


@dataclasses.dataclass(frozen=True)
class Reply:
    """A request handler's result plus notifications that follow the response.

    The peer writes the response and every notification of ``then`` (in
    order) as one item of its ordered writer queue, so nothing else is written
    between them and no notification can precede the response. Use it for
    messages the peer may only see once it knows the result (ACP: updates of
    a session created by the request).

    Attributes:
        result: the request's result.
        then: ``(method, params)`` notifications written right after it.
    """

    result: Any
    then: Sequence[tuple[str, Any]] = ()

F = TypeVar("F", bound=Handler)


@dataclasses.dataclass(frozen=True)
class Route:
    """One entry of the method table.

    Attributes:
        method: the JSON-RPC method name.
        handler: called with the decoded params.
        params_type: the type ``params`` is decoded into (``Any`` = raw JSON values).
        notification: whether the method is a notification (never answered).
        decode: a custom params decoder used instead of ``params_type``.
    """

    method: str
    handler: Handler
    params_type: Any
    notification: bool
    decode: Decode | None = None


class Router:
    """A table of request and notification handlers.

    Example::

        router = Router()

        @router.request("add", AddParams)
        async def add(p: AddParams) -> int:
            return p.a + p.b
    """

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}

    def add(
        self,
        method: str,
        handler: Handler,
        params_type: Any = Any,
        *,
        notification: bool = False,
        decode: Decode | None = None,
    ) -> None:
        """Register ``handler`` for ``method`` (replacing any earlier entry).

        ``decode``, when given, turns the raw params into the handler's
        argument instead of a msgspec decoder for ``params_type``.
        """
        self._routes[method] = Route(method, handler, params_type, notification, decode)

    def request(self, method: str, params_type: Any = Any) -> Callable[[F], F]:
        """Decorator form of :meth:`add` for a request handler."""

        def register(handler: F) -> F:
            self.add(method, handler, params_type)
            return handler

        return register

    def notification(self, method: str, params_type: Any = Any) -> Callable[[F], F]:
        """Decorator form of :meth:`add` for a notification handler."""

        def register(handler: F) -> F:
            self.add(method, handler, params_type, notification=True)
            return handler

        return register

    def get(self, method: str) -> Route | None:
        """Return the route for ``method``, or ``None``."""
        return self._routes.get(method)

    def __contains__(self, method: object) -> bool:
        return method in self._routes

    def __iter__(self) -> Iterator[Route]:
        return iter(self._routes.values())
