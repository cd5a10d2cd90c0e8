"""The method table: method name -> handler, params type, kind.

A :class:`Router` is plain data. The :class:`~wireproto.rpc.peer.Peer` looks a
method up once per inbound message, decodes ``params`` into the route's
``params_type`` with a decoder prebuilt for that type, and calls the handler
with the decoded value. Request handlers return the result (any msgspec
encodable value, ``None`` included), or a :class:`Reply` when notifications
must follow the response immediately; notification handlers return nothing.

A route may bring its own ``decode`` function (raw ``params`` -> value) when a
plain msgspec type is not enough; it raises :class:`msgspec.ValidationError`
like a msgspec decoder (the codec turns it into ``-32602``) or
:class:`~wireproto.errors.InvalidMessage` with the exact answer. When the
params are a msgspec type after all, possibly with a ``dec_hook`` for custom
types, and only *invalid* input needs special treatment (lenient decoding,
error texts), declare that instead (``dec_hook=``, ``lenient=``): the route's
decoder is then "strict first, ``lenient`` for what strict rejects", and the
codec may decode the params in the same pass as the envelope
(:meth:`Router.params_specs`, :class:`~wireproto.jsonrpc.codec.Decoder`).
The router's :attr:`~Router.revision` changes with every :meth:`~Router.add`,
and a decoder built from the table is told (:meth:`Router.watch`).

A table served to many connections (a protocol adapter's) need not be built
per connection: build it once with handlers that take the connection first,
``handler(connection, params)``, and give each connection's peer
:meth:`Router.bind` of it. A bound router costs nothing up front; a route is
bound (a :class:`Route` and a :func:`functools.partial`) at its first use, and
the decoders, the params specs and the codec's one-pass plan stay shared.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar, cast, overload

import msgspec

from wireproto.errors import LocalProtocolError
from wireproto.jsonrpc.codec import DecHook, ParamsSpec

__all__ = ["NO_REPLY", "ContextHandler", "Decode", "Handler", "Reply", "Route", "Router"]

Handler = Callable[[Any], Awaitable[Any]]
"""An async callable taking the decoded params."""

ContextHandler = Callable[[Any, Any], Awaitable[Any]]
"""A handler of a table meant to be bound (:meth:`Router.bind`): ``(context, params)``."""

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


class _NoReply:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_REPLY"


NO_REPLY: Any = _NoReply()
"""Returned by a request handler: send no answer at all (for requests a
protocol says must not be answered, e.g. Wire's replayed history)."""

P = TypeVar("P")
R = TypeVar("R")


@dataclasses.dataclass(frozen=True, slots=True)  # (slots: one router per connection is common)
class Route:
    """One entry of the method table.

    Attributes:
        method: the JSON-RPC method name.
        handler: called with the decoded params.
        params_type: the type ``params`` is decoded into (``Any`` = raw JSON values).
        notification: whether the method is a notification (never answered).
        decode: a custom params decoder used instead of ``params_type``.
        dec_hook: the msgspec ``dec_hook`` of ``params_type``. When it or
            ``lenient`` is set, ``decode`` is (and must be) the strict
            decoder for ``params_type`` with that hook, falling back to
            ``lenient`` on :class:`msgspec.ValidationError`, as
            :meth:`Router.add` builds it.
        lenient: what decodes the params the strict decoder rejects.
        cancel: called with the decoded params, instead of cancelling the
            handler, when the other side cancels the request (the dialect's
            cancel notification): the handler is expected to end by itself
            soon and answer (e.g. ``-32800``). Closing the peer still
            cancels the handler. It runs on the peer's reader, so it must
            be quick and must not block; if it raises, the error is logged
            and the handler is cancelled instead.
    """

    method: str
    handler: Handler
    params_type: Any
    notification: bool
    decode: Decode | None = None
    dec_hook: DecHook | None = None
    lenient: Decode | None = None
    cancel: Callable[[Any], None] | None = None

    @property
    def one_pass(self) -> bool:
        """Whether the params may be decoded together with the envelope."""
        return self.decode is None or self.dec_hook is not None or self.lenient is not None


_STRICT: dict[Any, msgspec.json.Decoder[Any]] = {}
_MAX_STRICT = 512  # decoders kept; the oldest is dropped beyond


def _strict(params_type: Any, dec_hook: DecHook | None) -> msgspec.json.Decoder[Any]:
    """A msgspec decoder for ``params_type``, shared by routers (one per connection is common)."""
    try:
        decoder = _STRICT.get((params_type, dec_hook))
    except TypeError:  # an unhashable type annotation: not shared
        return msgspec.json.Decoder(params_type, dec_hook=dec_hook)
    if decoder is None:
        decoder = _STRICT[(params_type, dec_hook)] = msgspec.json.Decoder(
            params_type, dec_hook=dec_hook
        )
        if len(_STRICT) > _MAX_STRICT:
            del _STRICT[next(iter(_STRICT))]
    return decoder


def _strict_first(params_type: Any, dec_hook: DecHook | None, lenient: Decode | None) -> Decode:
    """The decoder of a route declared with ``dec_hook`` / ``lenient``."""
    strict = _strict(params_type, dec_hook)
    if lenient is None:
        return strict.decode

    def decode(raw: msgspec.Raw) -> Any:
        try:
            return strict.decode(raw)
        except msgspec.ValidationError:
            return lenient(raw)

    return decode


class Router:
    """A table of request and notification handlers.

    Example::

        router = Router()

        @router.request("add", AddParams)
        async def add(p: AddParams) -> int:
            return p.a + p.b
    """

    __slots__ = ("_bound", "_context", "_routes", "_shared", "_specs", "_watchers", "revision")

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self.revision = 0
        """A counter that changes whenever a route is added or replaced."""
        self._shared: Router | None = None  # the table this router binds (see bind)
        self._context: Any = None
        self._bound = False  # some router binds this table: it no longer changes
        self._specs: list[ParamsSpec] | None = None  # of a bound table, built once
        self._watchers: list[weakref.WeakMethod[Callable[[], object]]] | None = None

    def bind(self, context: Any) -> Router:
        """This table served for one ``context``: its handlers are called
        ``handler(context, params)``.

        The returned router shares everything with the table (nothing is
        copied now; a route is bound at its first lookup). The table can no
        longer change, and the bound router takes no routes of its own.

        Raises:
            LocalProtocolError: this router is itself bound to a context.
        """
        if self._shared is not None:
            raise LocalProtocolError("a bound router cannot be bound again")
        self._bound = True
        bound = Router()
        bound._shared, bound._context, bound.revision = self, context, self.revision
        return bound

    def add(
        self,
        method: str,
        handler: Handler | ContextHandler,
        params_type: Any = Any,
        *,
        notification: bool = False,
        decode: Decode | None = None,
        dec_hook: DecHook | None = None,
        lenient: Decode | None = None,
        cancel: Callable[[Any], None] | Callable[[Any, Any], None] | None = None,
    ) -> None:
        """Register ``handler`` for ``method`` (replacing any earlier entry).

        ``handler`` (and ``cancel``) take the params, or ``(context, params)``
        in a table meant to be bound (:meth:`bind`).

        ``decode``, when given, turns the raw params into the handler's
        argument instead of a msgspec decoder for ``params_type``.
        ``dec_hook`` (msgspec's, for custom types in ``params_type``) and
        ``lenient`` (called with the raw params the strict msgspec decoder
        rejects; its result or error is final) declare a strict-first
        decoder instead, which lets the codec decode the params in one pass
        with the envelope. ``cancel`` (a request's) is how the handler is
        told that the other side cancelled the request (see :class:`Route`);
        it is called on the peer's reader, so it must be quick (set an event,
        cancel a scope); if it raises, the handler is cancelled instead.

        Raises:
            TypeError: ``decode`` given together with ``dec_hook`` or ``lenient``.
            LocalProtocolError: the router is bound, or a table some router binds.
        """
        if self._bound or self._shared is not None:
            raise LocalProtocolError("a table that is bound, or a bound router, cannot change")
        if dec_hook is not None or lenient is not None:
            if decode is not None:
                raise TypeError("decode excludes dec_hook and lenient")
            decode = _strict_first(params_type, dec_hook, lenient)
        route = Route(
            method, cast(Handler, handler), params_type, notification, decode, dec_hook, lenient,
            cast("Callable[[Any], None] | None", cancel),
        )
        self._routes[method] = route
        self.revision += 1
        if self._watchers:
            for ref in list(self._watchers):
                callback = ref()
                if callback is not None:
                    callback()

    def watch(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` after every change of the table (:meth:`add`).

        For decoders built from the table (the codec's one-pass plan).
        ``callback`` is a bound method, held weakly: the router keeps no
        decoder alive. A bound router, or a table some router binds, never
        changes: nothing is kept.
        """
        if self._bound or self._shared is not None:
            return
        refs = [ref for ref in self._watchers or () if ref() is not None]
        refs.append(weakref.WeakMethod(callback))
        self._watchers = refs

    @overload
    def request(
        self, method: str, params_type: type[P]
    ) -> Callable[[Callable[[P], Awaitable[R]]], Callable[[P], Awaitable[R]]]: ...

    @overload
    def request(
        self, method: str, params_type: Any = ...
    ) -> Callable[[Callable[[Any], Awaitable[R]]], Callable[[Any], Awaitable[R]]]: ...

    def request(
        self, method: str, params_type: Any = Any
    ) -> Callable[[Callable[[Any], Awaitable[R]]], Callable[[Any], Awaitable[R]]]:
        """Decorator form of :meth:`add` for a request handler.

        With a class as ``params_type`` the decorated handler is checked
        against it: ``@router.request("add", AddParams)`` on
        ``async def add(p: OtherParams)`` is a type error.
        """

        def register(handler: Callable[[Any], Awaitable[R]]) -> Callable[[Any], Awaitable[R]]:
            self.add(method, handler, params_type)
            return handler

        return register

    @overload
    def notification(
        self, method: str, params_type: type[P]
    ) -> Callable[[Callable[[P], Awaitable[None]]], Callable[[P], Awaitable[None]]]: ...

    @overload
    def notification(
        self, method: str, params_type: Any = ...
    ) -> Callable[[Callable[[Any], Awaitable[None]]], Callable[[Any], Awaitable[None]]]: ...

    def notification(
        self, method: str, params_type: Any = Any
    ) -> Callable[[Callable[[Any], Awaitable[None]]], Callable[[Any], Awaitable[None]]]:
        """Decorator form of :meth:`add` for a notification handler (checked as :meth:`request`)."""

        def register(
            handler: Callable[[Any], Awaitable[None]],
        ) -> Callable[[Any], Awaitable[None]]:
            self.add(method, handler, params_type, notification=True)
            return handler

        return register

    def params_specs(self) -> list[ParamsSpec]:
        """How the params of every one-pass route are decoded (for the codec)."""
        table = self if self._shared is None else self._shared
        if table._specs is not None:
            return table._specs
        specs = [
            ParamsSpec(r.method, r.params_type, r.dec_hook, r.decode)
            for r in table._routes.values()
            if r.one_pass
        ]
        if table._bound:  # no longer changes: every connection shares one list
            table._specs = specs
        return specs

    def get(self, method: str) -> Route | None:
        """Return the route for ``method``, or ``None``."""
        route = self._routes.get(method)
        if route is None and self._shared is not None:
            shared = self._shared._routes.get(method)
            if shared is not None:
                context, cancel = self._context, shared.cancel
                route = self._routes[method] = dataclasses.replace(
                    shared,
                    handler=functools.partial(shared.handler, context),
                    cancel=None if cancel is None else functools.partial(cancel, context),
                )
        return route

    def __contains__(self, method: object) -> bool:
        table = self if self._shared is None else self._shared
        return method in table._routes

    def __iter__(self) -> Iterator[Route]:
        if self._shared is None:
            return iter(self._routes.values())
        return (cast(Route, self.get(method)) for method in self._shared._routes)
