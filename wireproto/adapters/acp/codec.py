"""Decode inbound ACP payloads into the generated Structs, with the schema's leniency.

Theory of operation
-------------------
The Structs of :mod:`wireproto.adapters.acp.schema` are strict, which is what
outbound data needs. Inbound data follows the schema's decoder annotations
(protocol-acp.md#lenient-decoding): ``x-deserialize-default-on-error`` (a malformed value becomes
the field's default), ``x-deserialize-skip-invalid-items`` (invalid array
items are dropped) and ``x-deserialize-default-on-null`` (``null`` means the
default). The generated ``LENIENCY`` table says which field has which rule.

:func:`decode` first tries a strict ``msgspec`` decoder built once per type:
valid input (nearly all of it) never pays for leniency. Only when that fails
is the payload decoded into plain Python objects, *cleaned* by walking it
alongside the target type (bottom-up, so a nested bad value is repaired
before its container is judged), and converted strictly once more. Whatever
is still wrong raises :class:`msgspec.ValidationError` with a single JSON
path, e.g. ``Expected `str`, got `int` - at `$.mcpServers[0].args[1]```.

Unions msgspec cannot dispatch by itself (an untagged stdio MCP server, text
vs blob resources, open "other" variants) are typed with marker classes;
msgspec hands their JSON value to :func:`dec_hook`, which picks the variant
with the generated ``UNIONS`` table (:func:`resolve_variant`). Build your own
msgspec decoders for these types with ``dec_hook=dec_hook``.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, overload

import msgspec
from msgspec import UnsetType

from wireproto.adapters.acp import extra, schema
from wireproto.adapters.acp.schema import UNIONS, Base, Leniency
from wireproto.jsonrpc.codec import too_deep

__all__ = ["convert", "dec_hook", "decode", "resolve_variant"]

T = TypeVar("T")

_AT = " - at `"
_NO_FLAGS = Leniency(0)
_LENIENCY: dict[type, dict[str, Leniency]] = {**schema.LENIENCY, **extra.LENIENCY}


def _json_kind(obj: Any) -> str:
    kinds = {dict: "object", list: "array", str: "str", bool: "bool", int: "int", float: "float"}
    return "null" if obj is None else kinds.get(type(obj), type(obj).__name__)


def resolve_variant(marker: type, obj: Any) -> type[Base]:
    """Pick the variant class of the marker union ``marker`` for a JSON value.

    Order: a known tag value; any other string tag (open unions); the
    variant whose distinguishing key is present; the untagged fallback.

    Raises:
        TypeError: ``obj`` is not a JSON object.
        ValueError: no variant fits.
    """
    name, tag_field, tags, other, presence, fallback = _SPECS[marker]
    if type(obj) is not dict:
        raise TypeError(f"Expected `object`, got `{_json_kind(obj)}`")
    if tag_field is not None and tag_field in obj:
        tag = obj[tag_field]
        if type(tag) is str:
            cls = tags.get(tag)
            if cls is not None:
                return cls
            if other is not None:
                return other
        if fallback is not None:
            return fallback
        raise ValueError(f"Invalid {name} `{tag_field}` {tag!r}{_AT}$.{tag_field}`")
    for key, cls in presence:
        if key in obj:
            return cls
    if fallback is not None:
        return fallback
    if tag_field is not None:
        raise ValueError(f"Object missing required field `{tag_field}`")
    keys = " or ".join(f"`{key}`" for key, _ in presence)
    raise ValueError(f"Object must contain {keys}")


def dec_hook(type_: Any, obj: Any) -> Any:
    """msgspec ``dec_hook`` for the marker unions of the generated schema.

    Raises:
        TypeError / ValueError: ``obj`` fits no variant (msgspec turns these
            into a :class:`msgspec.ValidationError` with the path).
    """
    if type_ not in _SPECS:
        raise TypeError(f"Unsupported type {type_!r}")
    cls = resolve_variant(type_, obj)
    try:
        if cls in _NEEDS_HOOK:
            return msgspec.convert(obj, cls, dec_hook=dec_hook)
        return msgspec.convert(obj, cls)
    except msgspec.ValidationError as exc:
        # msgspec appends the outer path; _merge_paths joins the two later.
        raise ValueError(str(exc)) from None


def _refers_to_marker(t: msgspec.inspect.Type) -> bool:
    """Whether a type (tree) holds a marker union somewhere."""
    if isinstance(t, msgspec.inspect.CustomType):
        return t.cls in _SPECS
    if isinstance(t, msgspec.inspect.StructType):
        return any(_refers_to_marker(f.type) for f in t.fields)
    if isinstance(t, msgspec.inspect.UnionType):
        return any(_refers_to_marker(m) for m in t.types)
    if isinstance(t, (msgspec.inspect.ListType, msgspec.inspect.DictType)):
        inner = t.item_type if isinstance(t, msgspec.inspect.ListType) else t.value_type
        return _refers_to_marker(inner)
    if isinstance(t, msgspec.inspect.Metadata):
        return _refers_to_marker(t.type)
    return False


_Spec = tuple[
    str,
    "str | None",
    "dict[str, type[Base]]",
    "type[Base] | None",
    "tuple[tuple[str, type[Base]], ...]",
    "type[Base] | None",
]
# Plain tuples: unpacking them is faster than NamedTuple attribute access.
_SPECS: dict[type, _Spec] = {
    marker: (spec.name, spec.tag_field, spec.tags, spec.other, spec.presence, spec.fallback)
    for marker, spec in UNIONS.items()
}
# Variants whose own fields hold marker unions need the hook when converted.
_NEEDS_HOOK = frozenset(
    cls
    for spec in UNIONS.values()
    for cls in (*spec.tags.values(), spec.other, spec.fallback, *(c for _, c in spec.presence))
    if cls is not None and _refers_to_marker(msgspec.inspect.type_info(cls))
)


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
_any_decoder = msgspec.json.Decoder()


@overload
def decode(data: bytes | bytearray | memoryview | str | msgspec.Raw, type_: type[T]) -> T: ...
@overload
def decode(data: bytes | bytearray | memoryview | str | msgspec.Raw, type_: Any) -> Any: ...
def decode(data: bytes | bytearray | memoryview | str | msgspec.Raw, type_: Any) -> Any:
    """Decode inbound JSON (bytes, ``msgspec.Raw`` or str) into ``type_`` leniently.

    ``type_`` is a generated Struct, marker union or union alias (e.g.
    ``SessionUpdate``), or any type built from them.

    Raises:
        msgspec.DecodeError: ``data`` is not JSON.
        msgspec.ValidationError: the data does not fit even after the
            leniency rules; the message ends with `` - at `$.json.path```.
            Also for data nested too deeply to decode.
    """
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_, dec_hook=dec_hook)
    try:
        try:
            return decoder.decode(data)
        except msgspec.ValidationError:
            pass
        return _lenient(_any_decoder.decode(data), type_)
    except RecursionError:
        raise too_deep() from None


@overload
def convert(obj: Any, type_: type[T]) -> T: ...
@overload
def convert(obj: Any, type_: Any) -> Any: ...
def convert(obj: Any, type_: Any) -> Any:
    """Like :func:`decode`, for an already parsed JSON value (dicts, lists, ...).

    ``obj`` is not modified.

    Raises:
        msgspec.ValidationError: as :func:`decode`.
    """
    try:
        try:
            return msgspec.convert(obj, type_, dec_hook=dec_hook)
        except msgspec.ValidationError:
            pass
        return _lenient(obj, type_)
    except RecursionError:
        raise too_deep() from None


def _lenient(obj: Any, type_: Any) -> Any:
    shape = _root_shapes.get(type_)
    if shape is None:
        shape = _root_shapes[type_] = _Shape(type_)
    cleaned = _clean(obj, shape)
    try:
        return msgspec.convert(cleaned, type_, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        raise msgspec.ValidationError(_merge_paths(str(exc))) from exc


def _merge_paths(text: str) -> str:
    """Join the nested `` - at `$...``` suffixes a dec_hook produces into one path."""
    paths: list[str] = []
    while True:
        head, sep, tail = text.rpartition(_AT)
        if not sep or not tail.startswith("$") or not tail.endswith("`"):
            break
        paths.append(tail[:-1])
        text = head
    if not paths:
        return text
    return f"{text}{_AT}{paths[0]}{''.join(p[1:] for p in paths[1:])}`"


# -- the cleaning walk ---------------------------------------------------------
#
# Type annotations are analysed once into _Shape (what a value of that type can
# be: which Structs by tag, a marker union, a list or dict of what) and _Field
# (a Struct field with its rules). Validity checks convert the value into a
# one-field Struct made per checked type: msgspec caches the decoding plan of
# Structs, not of bare unions, so this keeps the slow path reasonably quick.


class _Shape:
    """What a type annotation can hold, as far as cleaning is concerned."""

    __slots__ = ("_item", "_value", "item", "marker", "struct", "tag_field", "tagged", "value")

    def __init__(self, tp: Any) -> None:
        self.tag_field: str | None = None
        self.tagged: dict[str, type[msgspec.Struct]] = {}
        self.struct: type[msgspec.Struct] | None = None
        self.marker: type | None = None
        self.item: Any = None
        self.value: Any = None
        self._item: _Shape | None = None
        self._value: _Shape | None = None
        for m in _members(tp):
            origin = get_origin(m)
            if isinstance(m, type) and issubclass(m, msgspec.Struct):
                config = m.__struct_config__
                if config.tag_field is None:
                    self.struct = m
                else:
                    self.tag_field = config.tag_field
                    self.tagged[str(config.tag)] = m
            elif m in _SPECS:
                self.marker = m
            elif origin is list:
                self.item = get_args(m)[0]
            elif origin is dict:
                self.value = get_args(m)[1]

    def item_shape(self) -> _Shape:
        if self._item is None:
            self._item = _Shape(self.item)
        return self._item

    def value_shape(self) -> _Shape:
        if self._value is None:
            self._value = _Shape(self.value)
        return self._value


class _Field:
    """A Struct field with its leniency rules, analysed once."""

    __slots__ = (
        "empty",
        "item_check",
        "on_error",
        "on_null",
        "required",
        "shape",
        "skip",
        "type_check",
        "wire",
    )

    def __init__(self, info: msgspec.structs.FieldInfo, flags: Leniency) -> None:
        kept = tuple(m for m in _union_args(info.type) if m is not UnsetType)
        check = kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007 (runtime union)
        shapes = _members(check)
        items = [get_args(m)[0] for m in shapes if get_origin(m) is list]
        origins = {get_origin(m) or m for m in shapes}
        self.wire = info.encode_name
        self.shape = _Shape(info.type)
        self.on_error = bool(flags & Leniency.DEFAULT_ON_ERROR)
        self.skip = bool(flags & Leniency.SKIP_INVALID_ITEMS) and bool(items)
        self.on_null = bool(flags & Leniency.DEFAULT_ON_NULL)
        self.type_check = _checker(check) if self.on_error else None
        self.item_check = _checker(items[0]) if self.skip else None
        self.required = info.required
        self.empty: type | None = list if list in origins else dict if dict in origins else None


_fields: dict[type, tuple[_Field, ...]] = {}
_root_shapes: dict[Any, _Shape] = {}
_checkers: dict[Any, type[msgspec.Struct] | None] = {}


def _union_args(tp: Any) -> tuple[Any, ...]:
    """The members of a (possibly nested) union; ``Annotated`` members kept whole."""
    if get_origin(tp) is Union or isinstance(tp, types.UnionType):
        return tuple(m for arg in get_args(tp) for m in _union_args(arg))
    return (tp,)


def _members(tp: Any) -> tuple[Any, ...]:
    """The union members with ``Annotated`` stripped: what values can be, shape-wise."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tuple(get_args(m)[0] if get_origin(m) is Annotated else m for m in _union_args(tp))


def _checker(tp: Any) -> type[msgspec.Struct] | None:
    """A one-field Struct ``{"v": tp}`` to test values against (``None``: anything goes)."""
    if tp is Any:
        return None
    try:
        return _checkers[tp]
    except KeyError:
        pass
    checker = _checkers[tp] = msgspec.defstruct("_Check", [("v", tp)])
    return checker


def _valid(value: Any, checker: type[msgspec.Struct] | None) -> bool:
    if checker is None:
        return True
    try:
        msgspec.convert({"v": value}, checker, dec_hook=dec_hook)
    except msgspec.ValidationError:
        return False
    return True


def _struct_fields(cls: type) -> tuple[_Field, ...]:
    cached = _fields.get(cls)
    if cached is None:
        rules = _LENIENCY.get(cls, {})
        cached = _fields[cls] = tuple(
            _Field(info, rules.get(info.encode_name, _NO_FLAGS))
            for info in msgspec.structs.fields(cls)
        )
    return cached


def _clean(value: Any, shape: _Shape) -> Any:
    """Return ``value`` with the leniency rules of its type applied (never mutates it)."""
    if type(value) is dict:
        cls = _struct_for(value, shape)
        if cls is not None:
            return _clean_struct(value, cls)
        if shape.value is not None:
            inner = shape.value_shape()
            return {k: _clean(v, inner) for k, v in value.items()}
    elif type(value) is list and shape.item is not None:
        inner = shape.item_shape()
        return [_clean(v, inner) for v in value]
    return value


def _struct_for(value: dict[str, Any], shape: _Shape) -> type[msgspec.Struct] | None:
    if shape.tag_field is not None:
        tag = value.get(shape.tag_field)
        tagged = shape.tagged.get(tag) if type(tag) is str else None
        if tagged is not None:
            return tagged
    if shape.struct is not None:
        return shape.struct
    if shape.marker is not None:
        try:
            return resolve_variant(shape.marker, value)
        except (TypeError, ValueError):
            return None
    return None


def _clean_struct(value: dict[str, Any], cls: type) -> dict[str, Any]:
    out = dict(value)
    for f in _struct_fields(cls):
        if f.wire not in out:
            continue
        v = out[f.wire]
        if v is None and f.on_null:
            _set_default(out, f)
            continue
        v = _clean(v, f.shape)
        if f.skip and type(v) is list:
            v = [item for item in v if _valid(item, f.item_check)]
        if f.on_error and not _valid(v, f.type_check):
            _set_default(out, f)
            continue
        out[f.wire] = v
    return out


def _set_default(out: dict[str, Any], f: _Field) -> None:
    if not f.required:
        del out[f.wire]
    elif f.empty is not None:
        out[f.wire] = f.empty()
