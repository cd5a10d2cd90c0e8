"""The method table: method name -> handler, params type, kind.

A :class:`Router` is plain data. The :class:`~wireproto.rpc.peer.Peer` looks a
method up once per inbound message, decodes ``params`` into the route's
``params_type`` with a decoder prebuilt for that type, and calls the handler
with the decoded value. Request handlers return the result (any msgspec
encodable value, ``None`` included); notification handlers return nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

__all__ = ["Handler", "Route", "Router"]

Handler = Callable[[Any], Awaitable[Any]]
"""An async callable taking the decoded params."""

F = TypeVar("F", bound=Handler)


@dataclasses.dataclass(frozen=True)
class Route:
    """One entry of the method table.

    Attributes:
        method: the JSON-RPC method name.
        handler: called with the decoded params.
        params_type: the type ``params`` is decoded into (``Any`` = raw JSON values).
        notification: whether the method is a notification (never answered).
    """

    method: str
    handler: Handler
    params_type: Any
    notification: bool


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
        self, method: str, handler: Handler, params_type: Any = Any, *, notification: bool = False
    ) -> None:
        """Register ``handler`` for ``method`` (replacing any earlier entry)."""
        self._routes[method] = Route(method, handler, params_type, notification)

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
