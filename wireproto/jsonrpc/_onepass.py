"""One-pass decoding of calls whose params type is known up front (see :mod:`.codec`).

A :class:`Plan` is built once per revision of a :class:`ParamsTable` (the
router; its msgspec decoders are shared by tables that declare the same
methods, types and hooks, see :class:`_Shape`): a msgspec union of one
envelope Struct per method, tagged by ``method``, whose ``params`` field
has the method's type. Decoding a call is then a single msgspec call whose
result is the message itself: a :class:`Call`, params typed. A second union
with untyped ``params`` serves inputs that write union tags last (see
:meth:`Plan.tags_last`): decoding to builtins and converting finds every
tag with a dict look-up instead of scanning each tagged object twice.

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

__all__ = ["BIG", "HEAD", "Call", "DecHook", "ParamsSpec", "ParamsTable", "Plan", "answer_decoder"]

DecHook = Callable[[type, Any], Any]
"""A msgspec ``dec_hook``: (type, builtin JSON value) -> value of that type."""

BIG = 3072
"""Below this many bytes the typed pass wins even when tags come last."""
HEAD = 256
"""A call's ``"method"`` key is looked for in this many leading bytes."""
_TAIL = 64
"""The last bytes :meth:`Plan.tags_last` looks at."""
_CLOSERS = b"}] \t\r\n"
_NULL = msgspec.Raw(b"null")


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

    revision: int
    """A number that changes whenever :meth:`params_specs` would change."""

    def params_specs(self) -> Iterable[ParamsSpec]:
        """The methods whose params may be decoded together with the envelope."""
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
_CONVERTIBLE = (
    mi.StructType, mi.DictType, mi.ListType, mi.StrType, mi.IntType, mi.FloatType,
    mi.BoolType, mi.NoneType, mi.LiteralType, mi.EnumType, mi.AnyType, mi.CustomType,
    mi.UnionType, mi.Metadata,
)  # types msgspec.convert builds from JSON builtins exactly as the JSON decoder does


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


@functools.cache
def answer_decoder(base: type[Any], require_jsonrpc: bool) -> msgspec.json.Decoder[Any]:
    """A decoder of success responses into a subclass of ``base`` (one per argument pair).

    ``base`` has the fields ``id``, ``result`` and ``error`` (``None``). Only
    what needs no dialect rule is accepted: ``"jsonrpc": "2.0"`` (required
    if the dialect requires it), a string or integer ``id``, ``result``
    present (kept raw), and neither ``error`` nor ``method``.
    """
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
            ("result", msgspec.Raw),
            ("error", _Never | UnsetType, None),  # (a default is not validated)
            ("method", _Never | UnsetType, UNSET),
        ],
        bases=(base,),
        kw_only=True,
        gc=False,
    )
    return msgspec.json.Decoder(answer)


def _admits_null(spec: ParamsSpec, hook: DecHook | None) -> bool:
    try:
        msgspec.json.Decoder(spec.type, dec_hook=hook).decode(b"null")
    except Exception:  # (whatever msgspec or the hook raise: null is refused)
        return False
    return True


def _envelope(
    name: str, method: str, params: Any, index: int, jsonrpc: Any, nullable: bool
) -> type[Call]:
    """An envelope Struct for one method; its class attribute ``index`` says which."""
    namespace: dict[str, Any] = {"index": index, "method": method}
    if nullable:
        namespace["__post_init__"] = _refuse_null
    return msgspec.defstruct(  # type: ignore[return-value]
        name,
        [jsonrpc, ("id", int | str | UnsetType, UNSET), ("params", params)],
        bases=(Call,),
        tag_field="method",
        tag=method,
        namespace=namespace,
        kw_only=True,
        gc=False,  # no cycle can pass through it
    )


def _union(members: list[Any]) -> Any:
    return functools.reduce(operator.or_, members)


class _Shape:
    """The msgspec side of a plan: decoders and envelope classes, shared by equal tables.

    Building it costs ~1 KiB of memory and tens of microseconds per method, so
    tables that declare the same methods with the same types and hooks (one
    router per connection, as protocol adapters make them) share one; the
    per-table part (which :class:`ParamsSpec` each method has) stays in the
    :class:`Plan`. ``chosen`` holds the positions, in the table's list of
    specs, of the methods the union serves; an envelope's ``index`` is its
    position in ``chosen``.
    """

    def __init__(self, specs: list[ParamsSpec], require_jsonrpc: bool) -> None:
        chosen, hook = _choose(specs)
        self.hook = hook
        self.chosen = tuple(position for position, _ in chosen)
        jsonrpc: Any = (
            ("jsonrpc", Literal["2.0"])
            if require_jsonrpc
            else ("jsonrpc", Literal["2.0"] | UnsetType, UNSET)
        )
        self.convertible: list[bool] = []
        typed: list[type[Call]] = []
        loose: list[Any] = []
        tag_members: set[bytes] = set()
        for index, (position, nodes) in enumerate(chosen):
            spec = specs[position]
            convertible = all(isinstance(n, _CONVERTIBLE) for n in nodes)
            nullable = _admits_null(spec, hook)
            typed.append(_envelope("Call", spec.method, spec.type, index, jsonrpc, nullable))
            loose.append(_envelope("_LooseCall", spec.method, Any, index, jsonrpc, False))
            self.convertible.append(convertible)
            if convertible:
                tag_members.update(
                    b'"%s":%s' % (str(n.tag_field).encode(), msgspec.json.encode(n.tag))
                    for n in nodes
                    if isinstance(n, mi.StructType) and n.tag_field is not None
                )
        self.classes = tuple(typed)
        stop = msgspec.defstruct(
            "_NoRoute", [], bases=(Call,), tag_field="method", tag=_NO_ROUTE,
            namespace={"__post_init__": _refuse}, kw_only=True, gc=False,
        )
        self.typed = msgspec.json.Decoder(_union([*typed, stop]), dec_hook=hook)
        self.loose = msgspec.json.Decoder(_union([*loose, stop]))
        self.tag_members = frozenset(tag_members)


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
    """The one-pass decoders of one revision of a :class:`ParamsTable`.

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
        self.hook = shape.hook
        self.by_index = tuple(listed[position] for position in shape.chosen)
        self.typed = shape.typed
        self.typed_decode = shape.typed.decode

    @property
    def specs(self) -> dict[type, ParamsSpec]:
        """Envelope class -> the :class:`ParamsSpec` of its method."""
        return dict(zip(self._shape.classes, self.by_index, strict=True))

    def __bool__(self) -> bool:
        return bool(self._shape.chosen)

    def tags_last(self, data: bytes | bytearray) -> bool:
        """Whether ``data`` writes union tags after their payload.

        Serializers that order members alphabetically or by declaration in a
        base class (pydantic) write ``{"text": ..., "type": "text"}``: a
        msgspec tagged union must then skip the whole object to find the tag
        and scan it again to decode it. The cheap sign of that order: compact
        JSON that ends with a tag member (``"type":"text"``) and the closing
        brackets, i.e. whose last tagged object has its tag last. (Only a
        speed choice: either way the decoded values are the same.)
        """
        tail = data[-_TAIL:].rstrip(_CLOSERS)
        return tail[tail.rfind(b",") + 1 :] in self._shape.tag_members

    def decode_loose(self, data: bytes | bytearray) -> Call:
        """Decode a call to builtins, then convert its params (for tags-last input).

        Returns the same :class:`Call` as :attr:`typed` would.

        Raises:
            Exception: whatever msgspec or the ``dec_hook`` raise.
        """
        shape = self._shape
        env = shape.loose.decode(data)
        index = env.index
        if not shape.convertible[index]:
            typed: Call = shape.typed.decode(data)
            return typed
        spec = self.by_index[index]
        if self.hook is None:
            params = msgspec.convert(env.params, spec.type)
        else:
            params = msgspec.convert(env.params, spec.type, dec_hook=self.hook)
        call: Call = shape.classes[index](jsonrpc=env.jsonrpc, id=env.id, params=params)
        return call


def _choose(specs: list[ParamsSpec]) -> tuple[list[tuple[int, list[mi.Type]]], Any]:
    """The specs one union decoder can serve (by position), and its ``dec_hook``.

    A decoder has one ``dec_hook``: the specs using the most common hook are
    kept, plus those whose type needs no hook at all; the rest stay two-pass.
    """
    analysed: list[tuple[int, ParamsSpec, list[mi.Type], bool]] = []
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
        analysed.append((position, spec, nodes, needs_hook))
    counts: dict[Any, int] = {}
    for _, spec, _, needs in analysed:
        if needs:
            counts[spec.dec_hook] = counts.get(spec.dec_hook, 0) + 1
    hook = max(counts, key=counts.__getitem__) if counts else None
    chosen = [(p, n) for p, s, n, needs in analysed if not needs or s.dec_hook is hook]
    return chosen, hook
