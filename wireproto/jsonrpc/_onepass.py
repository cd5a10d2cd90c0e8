"""One-pass decoding of calls whose params type is known up front (see :mod:`.codec`).

A :class:`Plan` is built from a :class:`ParamsTable` (the router), and
again after each change the table reports (:meth:`ParamsTable.watch`): a
msgspec union of one envelope Struct per method, tagged by ``method``,
whose ``params`` field has the method's type (its msgspec decoder is shared
by tables that declare the same methods, types and hooks, see
:class:`_Shape`). Decoding a call is then a single msgspec call whose
result is the message itself: a :class:`Call`, params typed.

The envelope Structs accept only what needs no dialect rule, so that
nothing is checked around the msgspec call: ``jsonrpc`` is ``"2.0"``
(required if the dialect requires it), ``id`` a string or an integer, or
absent (a notification), and ``params`` present and not ``null`` (the
envelope of a method whose type accepts ``null`` refuses it in
``__post_init__``).

The plan never answers errors: whatever it cannot decode, for any reason,
raises, and the codec's two-pass path decides, so error answers are those
of the two-pass path, byte for byte.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Collection, Iterable
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

import msgspec
from msgspec import UNSET, UnsetType
from msgspec import inspect as mi

from wireproto.errors import InvalidMessage

__all__ = [
    "Call",
    "DecHook",
    "ParamsSpec",
    "ParamsTable",
    "Paths",
    "Plan",
    "answer_decoder",
    "no_plan",
]

DecHook = Callable[[type, Any], Any]
"""A msgspec ``dec_hook``: (type, builtin JSON value) -> value of that type."""

_NULL = msgspec.Raw(b"null")
Data = bytes | bytearray | memoryview
Decode = Callable[[Data], Any]


class ParamsSpec(NamedTuple):
    """How one method's params are decoded, as a :class:`ParamsTable` declares it.

    Attributes:
        method: the method name.
        type: the params type.
        dec_hook: the msgspec ``dec_hook`` for custom types inside ``type``.
        decode: the route's own decoder, or ``None`` for plain msgspec
            decoding into ``type``. The table promises that whatever msgspec
            decodes into ``type`` with ``dec_hook`` is exactly what ``decode``
            returns for the same input (``decode`` only differs on input the
            strict decoder rejects).
    """

    method: str
    type: Any
    dec_hook: DecHook | None
    decode: Callable[[msgspec.Raw], Any] | None


class ParamsTable(Protocol):
    """What :class:`~wireproto.jsonrpc.codec.Decoder` needs from a method table."""

    def params_specs(self) -> Iterable[ParamsSpec]:
        """The methods whose params may be decoded together with the envelope."""
        ...

    def watch(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` whenever :meth:`params_specs` would change.

        ``callback`` is a bound method, held weakly: the table keeps no
        decoder alive. A table that never changes may ignore it.
        """
        ...


class Call(msgspec.Struct, kw_only=True, gc=False):
    """A request or notification whose params were decoded with its envelope.

    What :meth:`~wireproto.jsonrpc.codec.Decoder.decode` returns for a call
    its table's one pass accepted (one subclass per method and table shape):
    ``params`` already has the type the table declared for :attr:`method`
    when the message was decoded, and needs no
    :meth:`~wireproto.jsonrpc.codec.Decoder.decode_params`.

    Attributes:
        id: the request id; ``UNSET`` for a notification (never ``None``:
            a ``null`` id takes two passes and the dialect's rule).
        params: the decoded params (never absent, never ``null``).
        method: the method name (a class attribute).
    """

    id: Any = UNSET  # (each subclass decodes ``int | str``, or UNSET when absent)
    params: Any
    method: ClassVar[str] = ""


_NO_ROUTE = "\x00"  # a second union member: a lone tagged Struct accepts a missing tag

_RECORDS = (mi.StructType, mi.DataclassType, mi.TypedDictType, mi.NamedTupleType)


def _walk(t: mi.Type, seen: set[Any]) -> Iterable[mi.Type]:
    """Every type node reachable from ``t`` (each record type once)."""
    yield t
    if isinstance(t, _RECORDS):
        if t.cls in seen:
            return
        seen.add(t.cls)
        for f in t.fields:
            yield from _walk(f.type, seen)
        return
    for name in type(t).__struct_fields__:  # containers, unions, metadata
        value = getattr(t, name)
        for inner in value if isinstance(value, tuple) else (value,):
            if isinstance(inner, mi.Type):
                yield from _walk(inner, seen)


def _refuse_null(self: Call) -> None:
    """``__post_init__`` of the envelopes whose params type accepts ``null``."""
    params = self.params
    if params is None or (type(params) is msgspec.Raw and params == _NULL):
        raise ValueError("null params take two passes")


def _refuse(self: Any) -> None:
    """``__post_init__`` of the sentinel envelope: never a message."""
    raise ValueError("no such method")


class _Never(msgspec.Struct, gc=False):
    """A member type no JSON value decodes into: the member's presence fails the pass."""

    def __post_init__(self) -> None:
        raise ValueError("not accepted in one pass")


_ANSWERS: dict[Any, msgspec.json.Decoder[Any]] = {}
_MAX_ANSWERS = 512  # decoders kept; the oldest is dropped beyond


def answer_decoder(
    base: type[Any],
    require_jsonrpc: bool,
    result: Any = msgspec.Raw,
    dec_hook: DecHook | None = None,
) -> msgspec.json.Decoder[Any]:
    """A decoder of success responses into a subclass of ``base`` (one per arguments).

    ``base`` has the fields ``id``, ``result`` and ``error`` (``None``). Only
    what needs no dialect rule is accepted: ``"jsonrpc": "2.0"`` (required
    if the dialect requires it), a string or integer ``id``, ``result``
    present, of type ``result`` (decoded with ``dec_hook``; raw by default),
    and neither ``error`` nor ``method``.

    Raises:
        TypeError: ``result`` is not hashable, or msgspec cannot decode it.
    """
    key = (base, require_jsonrpc, result, dec_hook)
    decoder = _ANSWERS.get(key)
    if decoder is not None:
        return decoder
    jsonrpc: Any = (
        ("jsonrpc", Literal["2.0"])
        if require_jsonrpc
        else ("jsonrpc", Literal["2.0"] | UnsetType, UNSET)
    )
    answer = msgspec.defstruct(
        f"One{base.__name__}",
        [
            jsonrpc,
            ("id", int | str),
            ("result", result),
            ("error", _Never | UnsetType, None),  # (a default is not validated)
            ("method", _Never | UnsetType, UNSET),
        ],
        bases=(base,),
        kw_only=True,
        gc=False,
    )
    decoder = _ANSWERS[key] = msgspec.json.Decoder(answer, dec_hook=dec_hook)
    if len(_ANSWERS) > _MAX_ANSWERS:
        del _ANSWERS[next(iter(_ANSWERS))]
    return decoder


def _admits_null(spec: ParamsSpec, hook: DecHook | None) -> bool:
    try:
        msgspec.json.Decoder(spec.type, dec_hook=hook).decode(b"null")
    except Exception:  # (whatever msgspec or the hook raise: null is refused)
        return False
    return True


def _envelope(method: str, params: Any, jsonrpc: Any, nullable: bool) -> type[Call]:
    """The envelope Struct of one method."""
    namespace: dict[str, Any] = {"method": method}
    if nullable:
        namespace["__post_init__"] = _refuse_null
    return msgspec.defstruct(  # type: ignore[return-value]
        "Call",
        [jsonrpc, ("id", int | str | UnsetType, UNSET), ("params", params)],
        bases=(Call,),
        tag_field="method",
        tag=method,
        namespace=namespace,
        kw_only=True,
        gc=False,  # no cycle can pass through it
    )


class _Shape:
    """The msgspec side of a plan: decoder and envelope classes, shared by equal tables.

    Building it costs ~1 KiB of memory and tens of microseconds per method, so
    tables that declare the same methods with the same types and hooks (one
    router per connection, as protocol adapters make them) share one; the
    per-table part (which :class:`ParamsSpec` each method has) stays in the
    :class:`Plan`. ``chosen`` holds the positions, in the table's list of
    specs, of the methods the union serves, in the order of ``classes``.
    """

    def __init__(self, specs: list[ParamsSpec], require_jsonrpc: bool) -> None:
        chosen, hook = _choose(specs)
        self.chosen = tuple(chosen)
        jsonrpc: Any = (
            ("jsonrpc", Literal["2.0"])
            if require_jsonrpc
            else ("jsonrpc", Literal["2.0"] | UnsetType, UNSET)
        )
        self.classes = tuple(
            _envelope(specs[p].method, specs[p].type, jsonrpc, _admits_null(specs[p], hook))
            for p in chosen
        )
        stop = msgspec.defstruct(
            "_NoRoute", [], bases=(Call,), tag_field="method", tag=_NO_ROUTE,
            namespace={"__post_init__": _refuse}, kw_only=True, gc=False,
        )
        members: Any = functools.reduce(operator.or_, [*self.classes, stop])
        self.typed = msgspec.json.Decoder(members, dec_hook=hook)


_SHAPES: dict[Any, _Shape] = {}
_MAX_SHAPES = 64  # distinct tables kept; the oldest is dropped beyond


def _shape(specs: list[ParamsSpec], require_jsonrpc: bool) -> _Shape:
    """The shape for ``specs``: shared when an equal table built one before."""
    try:
        key: Any = (require_jsonrpc, *((s.method, s.type, s.dec_hook) for s in specs))
        shape = _SHAPES.get(key)
    except TypeError:  # an unhashable type annotation: not shared
        return _Shape(specs, require_jsonrpc)
    if shape is None:
        shape = _SHAPES[key] = _Shape(specs, require_jsonrpc)
        if len(_SHAPES) > _MAX_SHAPES:
            del _SHAPES[next(iter(_SHAPES))]
    return shape


class Plan:
    """The one-pass decoder of a :class:`ParamsTable` as it is now.

    Args:
        specs: the table's one-pass methods.
        require_jsonrpc: whether ``"jsonrpc"`` must be present (the dialect's rule).
        two_pass: methods left out (always decoded in two passes).

    Attributes:
        typed: decodes a call of a known method, params typed, into a
            :class:`Call`; raises for anything else.
        typed_decode: ``typed.decode``, bound once (the hot path).
    """

    def __init__(
        self,
        specs: Iterable[ParamsSpec],
        require_jsonrpc: bool = True,
        two_pass: Collection[str] = (),
    ) -> None:
        listed = [s for s in specs if s.method not in two_pass]
        shape = self._shape = _shape(listed, require_jsonrpc)
        self._chosen = tuple(listed[position] for position in shape.chosen)
        self.typed = shape.typed
        self.typed_decode = shape.typed.decode

    @property
    def specs(self) -> dict[type, ParamsSpec]:
        """Envelope class -> the :class:`ParamsSpec` of its method."""
        return dict(zip(self._shape.classes, self._chosen, strict=True))

    def __bool__(self) -> bool:
        return bool(self._shape.chosen)


def _choose(specs: list[ParamsSpec]) -> tuple[list[int], Any]:
    """The specs one union decoder can serve (by position), and its ``dec_hook``.

    A decoder has one ``dec_hook``: the specs using the most common hook are
    kept, plus those whose type needs no hook at all; the rest stay two-pass.
    """
    analysed: list[tuple[int, ParamsSpec, bool]] = []
    for position, spec in enumerate(specs):
        if spec.method == _NO_ROUTE:
            continue
        try:
            nodes = list(_walk(mi.type_info(spec.type), set()))
        except (TypeError, ValueError):
            continue
        needs_hook = any(isinstance(n, mi.CustomType) for n in nodes)
        if needs_hook and spec.dec_hook is None:
            continue  # msgspec cannot decode it: two passes give the error
        analysed.append((position, spec, needs_hook))
    counts: dict[Any, int] = {}
    for _, spec, needs in analysed:
        if needs:
            counts[spec.dec_hook] = counts.get(spec.dec_hook, 0) + 1
    hook = max(counts, key=counts.__getitem__) if counts else None
    chosen = [p for p, s, needs in analysed if not needs or s.dec_hook is hook]
    return chosen, hook


def no_plan(data: Data) -> Any:
    """The union's decode while there is none (no table, or no one-pass method)."""
    raise LookupError("no one-pass plan")


class Paths:
    """The fast paths' decode functions of one decoder, and their state.

    The hot ones are closures over that state (no attribute is looked up per
    message). ``fast[0]`` is what a read loop calls first for each message:
    while nothing is expected (``fast[0] is idle[0]``), the union's own msgspec
    decode (a call comes out of it as a :class:`Call`, and no Python runs
    around that call); while a response is expected (:meth:`expecting`), the
    answer decoder of that response, as msgspec's own decode too. Whatever
    ``fast[0]`` raises but :class:`InvalidMessage` goes to :attr:`refused`: a
    call, a success response with its result raw, or two passes. A response
    ends the expectation: the read loop that takes one stores ``idle[0]`` in
    ``fast[0]`` (:attr:`decode` does so), and :attr:`refused` ends it for
    whatever the expected decode refused (a call too: the response then comes
    with its result raw, decoded by its requester).

    Args:
        two_pass: the decoder's two-pass decode (answers everything).

    Attributes:
        fast: a one-element list: the decode function to call first.
        idle: a one-element list: what ``fast[0]`` holds while nothing is expected.
        decode: the whole decode (``fast[0]``, then :attr:`refused`).
        refused: decodes what ``fast[0]`` raised for.
        expecting: ``expecting(decode)`` -> what ``fast[0]`` holds while a
            success response that ``decode`` (an answer decoder, see
            :func:`answer_decoder`) decodes is expected: ``decode`` itself.
            Its id is not matched: the expectation is that of a request alone
            in flight, so any other response (a late one, to a request given
            up) answers none, and whoever reads it drops it, typed or not.
        use: ``use(union, responses)``: the decoders of the table as it is now.
        end: ends the expectation (``fast[0]`` is the union again).
    """

    def __init__(self, two_pass: Decode) -> None:
        fast: list[Decode] = [no_plan]
        idle: list[Decode] = [no_plan]  # fast[0] while nothing is expected
        answer: Decode = no_plan  # success responses, result raw

        def decode(data: Data) -> Any:
            first = fast[0]
            try:
                msg = first(data)
            except InvalidMessage:
                raise
            except Exception:  # most likely a response
                return refused(data)
            if first is not idle[0]:  # the response expected (expected once)
                fast[0] = idle[0]
            return msg

        def refused(data: Data) -> Any:
            if fast[0] is not idle[0]:  # not the response expected: the expectation ends
                fast[0] = now = idle[0]
                try:
                    return now(data)  # a call, most likely
                except InvalidMessage:
                    raise
                except Exception:
                    pass
            try:
                return answer(data)
            except Exception:  # anything: the two-pass path answers it
                return two_pass(data)

        def expecting(expected: Decode) -> Decode:
            return expected

        def use(union: Decode, responses: Decode) -> None:
            nonlocal answer
            now = two_pass if union is no_plan else union
            if fast[0] is idle[0]:  # (else a response is expected: it stays so)
                fast[0] = now
            idle[0], answer = now, responses

        def end() -> None:
            fast[0] = idle[0]

        self.fast = fast
        self.idle = idle
        self.decode = decode
        self.refused = refused
        self.expecting = expecting
        self.use = use
        self.end = end
