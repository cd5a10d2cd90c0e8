"""Read the ACP JSON schema into the intermediate form ``gen_acp_schema.py`` prints.

Part of the generator (see ``scripts/gen_acp_schema.py`` for the theory of
operation). Every schema construct is recognised by its shape; an unknown
shape raises :class:`SchemaShapeError` instead of producing a guess.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import re
from typing import Any

#: JSON-RPC envelopes and free-form extension payloads: not generated.
SKIPPED_DEFS = frozenset(
    {
        "AgentNotification",
        "AgentRequest",
        "AgentResponse",
        "ClientNotification",
        "ClientRequest",
        "ClientResponse",
        "ExtNotification",
        "ExtRequest",
        "ExtResponse",
    }
)

OTHER = "*other*"
UNTAGGED = "*untagged*"

#: Names of variant classes that do not exist in ``$defs``:
#: (union definition, tag value | OTHER | UNTAGGED) -> class name.
VARIANT_NAMES: dict[tuple[str, str], str] = {
    ("SessionUpdate", "user_message_chunk"): "UserMessageChunk",
    ("SessionUpdate", "agent_message_chunk"): "AgentMessageChunk",
    ("SessionUpdate", "agent_thought_chunk"): "AgentThoughtChunk",
    ("SessionUpdate", "tool_call_update"): "ToolCallProgress",
    ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
    ("SessionConfigOption", "select"): "SessionConfigOptionSelect",
    ("SessionConfigOption", "boolean"): "SessionConfigOptionBoolean",
    ("SetSessionConfigOptionRequest", "boolean"): "SetSessionConfigOptionBooleanRequest",
    ("SetSessionConfigOptionRequest", UNTAGGED): "SetSessionConfigOptionSelectRequest",
    ("CreateElicitationRequest", "form"): "CreateFormElicitationRequest",
    ("CreateElicitationRequest", "url"): "CreateUrlElicitationRequest",
    ("CreateElicitationRequest", OTHER): "CreateOtherElicitationRequest",
    ("CreateElicitationResponse", "accept"): "AcceptElicitationResponse",
    ("CreateElicitationResponse", "decline"): "DeclineElicitationResponse",
    ("CreateElicitationResponse", "cancel"): "CancelElicitationResponse",
    ("CreateElicitationResponse", OTHER): "OtherElicitationResponse",
    ("ElicitationPropertySchema", OTHER): "OtherPropertySchema",
    ("MultiSelectItems", OTHER): "OtherMultiSelectItems",
}

#: Unions of arrays (``anyOf: [array of A, array of B]``) become a list of a
#: per-item marker class: union definition -> item marker name.
ITEM_MARKERS: dict[str, str] = {"SessionConfigSelectOptions": "SessionConfigSelectItem"}

#: Names the generated annotations use; a field with one of these names gets
#: a trailing underscore so that it cannot shadow the type inside its class.
RESERVED = frozenset({"list", "dict", "str", "int", "float", "bool", "type_", "Any"})

WRITTEN_LISTS: dict[str, tuple[str, ...]] = {
    "McpServerStdio": ("args", "env"),
    "McpServerHttp": ("headers",),
    "McpServerSse": ("headers",),
}
"""Required lists a program may leave out when it builds the Struct (they
default to ``[]``, still written): the parts of an MCP server entry that are
usually empty. Inbound, a missing one reads as empty, as ``null`` already does."""

_FLAG_KEYS = (
    ("x-deserialize-default-on-error", "_E"),
    ("x-deserialize-skip-invalid-items", "_S"),
    ("x-deserialize-default-on-null", "_N"),
)
_DOC_KEYS = frozenset({"description", "title"})


class SchemaShapeError(Exception):
    """The schema uses a construct this generator does not know."""


# ---------------------------------------------------------------------------
# intermediate form
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Field:
    """One Struct field, as source snippets."""

    wire: str
    py: str
    ann: str
    required: bool
    default: str | None = None  # source of the default value
    factory: str | None = None  # source of the default factory
    flags: tuple[str, ...] = ()


@dataclasses.dataclass
class StructIR:
    """One Struct class to print."""

    name: str
    def_name: str  # the $def an encoded instance validates against
    doc: str
    fields: list[Field]
    parent: str = "Base"
    markers: list[str] = dataclasses.field(default_factory=list)
    tag_field: str | None = None
    tag: str | None = None
    checks: list[str] = dataclasses.field(default_factory=list)
    order: tuple[str, int] = ("", 0)


@dataclasses.dataclass
class UnionIR:
    """A union: a msgspec tagged union alias (``native``) or a marker class."""

    name: str
    doc: str
    tag_field: str | None
    tags: dict[str, str]  # tag value -> class
    other: str | None = None
    untagged: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    native: bool = False  # a msgspec tagged union (alias) instead of a marker


Alternative = tuple[dict[str, Any], list[str]]  # (properties, required) of one field group
Untagged = list[tuple[str, str | None]]  # (class, distinguishing key or None)


@dataclasses.dataclass
class Variant:
    """One ``oneOf``/``anyOf`` entry of a union definition, as parsed."""

    kind: str  # "tagged", "other", "untagged"
    tag_field: str | None
    tag: str | None
    ref: str | None
    inline: dict[str, Any]
    inline_required: list[str]
    groups: list[Any]
    doc: str


def snake(name: str) -> str:
    """``mimeType`` -> ``mime_type``; ``_meta`` -> ``meta``."""
    base = name.lstrip("_")
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", base).lower()
    if keyword.iskeyword(out) or out in RESERVED:
        out += "_"
    return out


def first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    para = text.strip().split("\n\n")[0].strip()
    return " ".join(line.strip() for line in para.splitlines())


def strip_docs(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: v for k, v in schema.items() if not (k in _DOC_KEYS and isinstance(v, str))}
    return schema


def ref_name(schema: dict[str, Any]) -> str | None:
    """The definition a schema points at directly or through a one-item allOf."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------


class Generator:
    """Builds the intermediate form from ``$defs`` (``build``, then ``finish``)."""

    def __init__(self, schema: dict[str, Any], meta: dict[str, Any]) -> None:
        self.defs: dict[str, dict[str, Any]] = schema["$defs"]
        self.meta = meta
        self.aliases: dict[str, tuple[str, str, bool]] = {}  # name -> (source, doc, refs_classes)
        self.structs: dict[str, StructIR] = {}
        self.unions: dict[str, UnionIR] = {}
        self.absorbed: set[str] = set()
        self.array_unions: set[str] = set()
        self.uses = self._count_uses()
        # variants found while building unions, applied by finish():
        # class -> (marker, union) pairs; class -> (tag field, tag, union, markers)
        self.pending_markers: dict[str, list[tuple[str, str | None]]] = {}
        self.pending_tags: dict[str, tuple[str | None, str | None, str, list[str]]] = {}

    # -- reading -----------------------------------------------------------

    def _count_uses(self) -> dict[str, int]:
        uses: dict[str, int] = {}

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for k, v in node.items():
                    if k == "$ref":
                        name = str(v).rsplit("/", 1)[-1]
                        uses[name] = uses.get(name, 0) + 1
                    else:
                        walk(v)
            elif isinstance(node, list):
                for item in node:
                    walk(item)

        for name, d in self.defs.items():
            if name not in SKIPPED_DEFS:
                walk(d)
        return uses

    def classify(self, name: str, d: dict[str, Any]) -> str:
        variants = d.get("oneOf") or d.get("anyOf")
        if "properties" in d or d.get("type") == "object":
            if variants and any(self._variant_has_tag(v) for v in variants):
                return "flattened"
            return "struct"
        if variants:
            kinds = [strip_docs(v) for v in variants]
            if all(v.get("type") == "string" and set(v) <= {"type", "const"} for v in kinds):
                return "enum"
            if all(v.get("type") == "integer" for v in kinds):
                return "int"
            if all("$ref" not in json.dumps(v) and "properties" not in v for v in kinds):
                if all(v.get("type") == "array" for v in kinds):
                    raise SchemaShapeError(f"{name}: array union of primitives")
                return "primitive_union"
            if all(v.get("type") == "array" for v in kinds):
                return "array_union"
            if len(kinds) == 1 and ref_name(kinds[0]) and set(kinds[0]) <= {"allOf"}:
                return "alias"
            return "object_union"
        if d.get("type") in ("string", "integer", "number", "boolean"):
            return "primitive"
        raise SchemaShapeError(f"{name}: unknown definition shape")

    @staticmethod
    def _variant_has_tag(v: dict[str, Any]) -> bool:
        props = v.get("properties", {})
        return any("const" in p or "not" in v for p in props.values())

    def parse_variant(self, union: str, v: dict[str, Any]) -> Variant:
        props = dict(v.get("properties", {}))
        required = list(v.get("required", []))
        tag_field = tag = None
        kind = "untagged"
        for key, p in props.items():
            if "const" in p:
                tag_field, tag, kind = key, p["const"], "tagged"
                break
        else:
            if "not" in v:
                candidates = [k for k, p in props.items() if strip_docs(p) == {"type": "string"}]
                if len(candidates) != 1:
                    raise SchemaShapeError(f"{union}: cannot find the open tag of a variant")
                tag_field, kind = candidates[0], "other"
        if tag_field is not None:
            props.pop(tag_field)
            required = [r for r in required if r != tag_field]
        groups = [self.alternatives(union, v["anyOf"])] if "anyOf" in v else []
        return Variant(
            kind=kind,
            tag_field=tag_field,
            tag=tag,
            ref=ref_name(v),
            inline=props,
            inline_required=required,
            groups=groups,
            doc=first_paragraph(v.get("description")),
        )

    def alternatives(self, owner: str, options: list[dict[str, Any]]) -> list[Alternative]:
        """An anyOf of untagged object definitions: one field group each."""
        alts = []
        for opt in options:
            name = ref_name(opt)
            if name is None:
                raise SchemaShapeError(f"{owner}: alternative without $ref")
            d = self.defs[name]
            if d.get("oneOf") or d.get("anyOf"):
                raise SchemaShapeError(f"{owner}: nested alternative {name}")
            self.absorbed.add(name)
            alts.append((dict(d.get("properties", {})), list(d.get("required", []))))
        return alts

    # -- types -------------------------------------------------------------

    def ann(self, owner: str, s: dict[str, Any]) -> tuple[str, bool]:
        """(annotation source, nullable) for a property schema."""
        name = ref_name(s)
        if name is not None:
            return self.ref_ann(owner, name), False
        if "anyOf" in s:
            members = [m for m in s["anyOf"] if strip_docs(m) != {"type": "null"}]
            if len(members) != 1:
                raise SchemaShapeError(f"{owner}: anyOf property")
            inner, _ = self.ann(owner, members[0])
            return inner, len(members) != len(s["anyOf"])
        t = s.get("type")
        nullable = False
        if isinstance(t, list):
            rest = [x for x in t if x != "null"]
            if len(rest) != 1:
                raise SchemaShapeError(f"{owner}: type list {t}")
            nullable, t = len(rest) != len(t), rest[0]
        if t is None:
            if set(strip_docs(s)) - {"x-deserialize-default-on-error", "default"}:
                raise SchemaShapeError(f"{owner}: untyped property {s}")
            return "Any", False
        return self.type_ann(owner, t, s), nullable

    def type_ann(self, owner: str, t: str, s: dict[str, Any]) -> str:
        if t == "string":
            if "minLength" in s:
                return f"Annotated[str, Meta(min_length={s['minLength']})]"
            return "str"
        if t == "integer":
            bounds = [f"{k}={s[j]}" for j, k in (("minimum", "ge"), ("maximum", "le")) if j in s]
            return f"Annotated[int, Meta({', '.join(bounds)})]" if bounds else "int"
        if t == "number":
            return "float"
        if t == "boolean":
            return "bool"
        if t == "array":
            return f"list[{self.ann(owner, s['items'])[0]}]"
        if t == "object":
            extra = s.get("additionalProperties")
            if isinstance(extra, dict):
                return f"dict[str, {self.ann(owner, extra)[0]}]"
            return "dict[str, Any]"
        raise SchemaShapeError(f"{owner}: type {t}")

    def ref_ann(self, owner: str, name: str) -> str:
        if name in SKIPPED_DEFS or name not in self.defs:
            raise SchemaShapeError(f"{owner}: reference to {name}")
        return name

    # -- fields ------------------------------------------------------------

    def field(self, owner: str, wire: str, s: dict[str, Any], required: bool) -> Field:
        """One Struct field: ``T``, ``T | None``, ``T | UnsetType [| None] = UNSET``, ..."""
        flags = tuple(code for key, code in _FLAG_KEYS if s.get(key))
        if wire == "_meta" and strip_docs(s).get("type") != ["object", "null"]:
            raise SchemaShapeError(f"{owner}: unusual _meta")
        ann, nullable = self.ann(owner, s)
        f = Field(wire, snake(wire), ann, required, flags=flags)
        if required:
            if "_E" in flags and not ann.startswith("list["):
                raise SchemaShapeError(f"{owner}.{wire}: required, default-on-error, not a list")
            if wire in WRITTEN_LISTS.get(owner, ()):
                f.factory = "_written_list"  # may be left out when built, always written
        elif "default" in s:
            f.default, f.factory = self.default_source(owner, wire, s)
        else:
            f.default = "UNSET"
            if ann != "Any":
                f.ann += " | UnsetType"
        if nullable:
            f.ann += " | None"
        return f

    def default_source(
        self, owner: str, wire: str, s: dict[str, Any]
    ) -> tuple[str | None, str | None]:
        """(default source, default factory source) of a schema ``default``."""
        value = s["default"]
        if isinstance(value, (bool, int, float, str)):
            return json.dumps(value) if isinstance(value, str) else repr(value), None
        if value == []:
            return None, "list"
        name = ref_name(s)
        if isinstance(value, dict):
            if name is None:
                if value != {}:
                    raise SchemaShapeError(f"{owner}.{wire}: object default")
                return None, "dict"
            self.check_default(f"{owner}.{wire}", name, value)
            return None, name
        raise SchemaShapeError(f"{owner}.{wire}: default {value!r}")

    def check_default(self, where: str, name: str, value: dict[str, Any]) -> None:
        """An object default must equal what the Struct's own defaults give."""
        props = self.defs[name].get("properties", {})
        for key, v in value.items():
            p = props.get(key)
            if p is None or "default" not in p:
                raise SchemaShapeError(f"{where}: default key {key} has no own default")
            if isinstance(v, dict):
                inner = ref_name(p)
                if inner is None or p["default"] != v:
                    raise SchemaShapeError(f"{where}: nested default {key}")
                self.check_default(where, inner, v)
            elif p["default"] != v:
                raise SchemaShapeError(f"{where}: default {key}={v!r} differs")

    def fields_of(
        self,
        owner: str,
        props: dict[str, Any],
        required: list[str],
        groups: list[Any] | None = None,
    ) -> tuple[list[Field], list[str]]:
        fields = [self.field(owner, k, s, k in required) for k, s in props.items()]
        checks: list[str] = []
        for alts in groups or []:
            alt_names: list[list[str]] = []
            for a_props, a_required in alts:
                for k, s in a_props.items():
                    if k not in props and all(f.wire != k for f in fields):
                        fields.append(self.field(owner, k, s, False))
                alt_names.append([k for k in a_required])
            checks.extend(self.group_check(fields, alt_names))
        for f in fields:
            if f.ann.split(" |")[0] in self.array_unions:
                checks.extend(self.homogeneity_check(f))
        meta = [f for f in fields if f.wire == "_meta"]
        rest = [f for f in fields if f.wire != "_meta"]
        return rest + meta, checks

    @staticmethod
    def group_check(fields: list[Field], alts: list[list[str]]) -> list[str]:
        py = {f.wire: f.py for f in fields}
        conds = []
        for names in alts:
            conds.append(" and ".join(f"self.{py[n]} is not UNSET" for n in names) or "True")
        wires = " or ".join("/".join(f"`{n}`" for n in names) for names in alts)
        return [
            f"if not ({' or '.join(f'({c})' for c in conds)}):",
            f'    raise ValueError("Object must contain {wires}")',
        ]

    @staticmethod
    def homogeneity_check(f: Field) -> list[str]:
        return [
            f"if len({{type(item) for item in self.{f.py}}}) > 1:",
            f'    raise ValueError("`{f.wire}` must not mix item kinds")',
        ]

    # -- definitions -------------------------------------------------------

    def build(self) -> None:
        kinds = {n: self.classify(n, d) for n, d in self.defs.items() if n not in SKIPPED_DEFS}
        self.array_unions = {n for n, k in kinds.items() if k == "array_union"}
        for name in sorted(kinds):
            getattr(self, f"build_{kinds[name]}")(name, self.defs[name])
        for name in self.absorbed:
            self.structs.pop(name, None)

    def check_references(self) -> None:
        """No generated annotation may name a definition that was absorbed."""
        sources = [f.ann for s in self.structs.values() for f in s.fields]
        sources += [s.parent for s in self.structs.values()]
        sources += [src for src, _doc, _refs in self.aliases.values()]
        for u in self.unions.values():
            sources += [*u.tags.values(), *(c for c, _ in u.untagged), u.other or ""]
        words = {w for src in sources for w in re.findall(r"[A-Za-z_]+", src)}
        clash = sorted(words & self.absorbed)
        if clash:
            raise SchemaShapeError(f"absorbed definitions still referenced: {clash}")

    def build_primitive(self, name: str, d: dict[str, Any]) -> None:
        src = self.type_ann(name, d["type"], d)
        self.aliases[name] = (src, first_paragraph(d.get("description")), False)

    def build_enum(self, name: str, d: dict[str, Any]) -> None:
        variants = [strip_docs(v) for v in (d.get("oneOf") or d["anyOf"])]
        values = [v["const"] for v in variants if "const" in v]
        doc = first_paragraph(d.get("description"))
        if any("const" not in v for v in variants):
            known = ", ".join(json.dumps(x) for x in values)
            self.aliases[name] = ("str", f"{doc} Open enumeration; known values: {known}.", False)
        else:
            self.aliases[name] = (
                f"Literal[{', '.join(json.dumps(x) for x in values)}]",
                doc,
                False,
            )

    def build_int(self, name: str, d: dict[str, Any]) -> None:
        values = [str(v["const"]) for v in d["anyOf"] if "const" in v]
        doc = first_paragraph(d.get("description"))
        self.aliases[name] = ("int", f"{doc} Known values: {', '.join(values)}.", False)

    def build_primitive_union(self, name: str, d: dict[str, Any]) -> None:
        members = []
        for v in d.get("oneOf") or d["anyOf"]:
            v = strip_docs(v)
            members.append("None" if v.get("type") == "null" else self.type_ann(name, v["type"], v))
        doc = first_paragraph(d.get("description"))
        self.aliases[name] = (f"Union[{', '.join(members)}]", doc, False)

    def build_alias(self, name: str, d: dict[str, Any]) -> None:
        target = ref_name((d.get("oneOf") or d["anyOf"])[0])
        assert target is not None
        self.aliases[name] = (target, first_paragraph(d.get("description")), True)

    def build_struct(self, name: str, d: dict[str, Any]) -> None:
        groups = [self.alternatives(name, d["anyOf"])] if "anyOf" in d else []
        fields, checks = self.fields_of(
            name, d.get("properties", {}), d.get("required", []), groups
        )
        self.structs[name] = StructIR(
            name,
            name,
            first_paragraph(d.get("description")),
            fields,
            checks=checks,
            order=(name, 0),
        )

    def build_array_union(self, name: str, d: dict[str, Any]) -> None:
        marker = ITEM_MARKERS.get(name)
        if marker is None:
            raise SchemaShapeError(f"{name}: array union without ITEM_MARKERS entry")
        untagged: list[tuple[str, str | None]] = []
        for v in d["anyOf"]:
            target = ref_name(v["items"])
            if target is None:
                raise SchemaShapeError(f"{name}: array union item without $ref")
            untagged.append((target, None))
            self.pending_markers.setdefault(target, []).append((marker, None))
        self.unions[marker] = UnionIR(
            marker,
            f"One item of {name}: " + first_paragraph(d.get("description")),
            None,
            {},
            untagged=self.presence_keys(name, untagged),
        )
        self.aliases[name] = (f"list[{marker}]", first_paragraph(d.get("description")), True)

    def presence_keys(self, name: str, untagged: Untagged) -> Untagged:
        if len(untagged) < 2:
            return untagged
        out: list[tuple[str, str | None]] = []
        for cls, _ in untagged:
            others = {
                k for c, _ in untagged if c != cls for k in self.defs[c].get("properties", {})
            }
            keys = [k for k in self.defs[cls].get("required", []) if k not in others]
            if not keys:
                raise SchemaShapeError(f"{name}: cannot tell {cls} apart")
            out.append((cls, keys[0]))
        return out

    def build_object_union(self, name: str, d: dict[str, Any]) -> None:
        variants = [self.parse_variant(name, v) for v in (d.get("oneOf") or d["anyOf"])]
        self.make_union(name, d, variants, base_props={}, base_required=[])

    def build_flattened(self, name: str, d: dict[str, Any]) -> None:
        variants = [self.parse_variant(name, v) for v in (d.get("oneOf") or d["anyOf"])]
        self.make_union(
            name,
            d,
            variants,
            base_props=d.get("properties", {}),
            base_required=d.get("required", []),
        )

    def make_union(
        self,
        name: str,
        d: dict[str, Any],
        variants: list[Variant],
        base_props: dict[str, Any],
        base_required: list[str],
    ) -> None:
        tag_fields = {v.tag_field for v in variants if v.tag_field}
        if len(tag_fields) > 1:
            raise SchemaShapeError(f"{name}: several tag fields")
        tag_field = next(iter(tag_fields), None)
        native = all(v.kind == "tagged" for v in variants)
        u = UnionIR(name, first_paragraph(d.get("description")), tag_field, {}, native=native)
        untagged: list[tuple[str, str | None]] = []
        for i, v in enumerate(variants):
            cls = self.variant_class(name, v, base_props, base_required, native, i)
            if v.kind == "tagged":
                assert v.tag is not None
                u.tags[v.tag] = cls
            elif v.kind == "other":
                u.other = cls
            else:
                untagged.append((cls, None))
        if untagged:
            u.untagged = self.presence_keys(name, untagged) if len(untagged) > 1 else untagged
        self.unions[name] = u

    def variant_class(
        self,
        union: str,
        v: Variant,
        base_props: dict[str, Any],
        base_required: list[str],
        native: bool,
        index: int,
    ) -> str:
        markers = [] if native else [union]
        simple = v.ref is not None and not v.inline and not v.groups and not base_props
        if simple and v.kind == "untagged":
            assert v.ref is not None
            self.pending_markers.setdefault(v.ref, []).extend((m, union) for m in markers)
            return v.ref
        if simple and v.kind == "tagged" and self.uses.get(v.ref or "", 0) == 1:
            assert v.ref is not None
            self.pending_tags[v.ref] = (v.tag_field, v.tag, union, markers)
            return v.ref
        key = v.tag if v.kind == "tagged" else (OTHER if v.kind == "other" else UNTAGGED)
        assert key is not None
        cls = VARIANT_NAMES.get((union, key))
        if cls is None:
            raise SchemaShapeError(f"{union}: variant {key!r} needs a VARIANT_NAMES entry")
        if simple and v.kind == "tagged":
            assert v.ref is not None
            self.structs[cls] = StructIR(
                cls,
                union,
                v.doc or "",
                [],
                parent=v.ref,
                markers=markers,
                tag_field=v.tag_field,
                tag=v.tag,
                order=(v.ref, 1 + index),
            )
            return cls
        props: dict[str, Any] = dict(base_props)
        required = list(base_required)
        groups = list(v.groups)
        if v.ref is not None:
            rd = self.defs[v.ref]
            if rd.get("oneOf"):
                raise SchemaShapeError(f"{union}: variant body {v.ref} is a union")
            props.update(rd.get("properties", {}))
            required += rd.get("required", [])
            if "anyOf" in rd:
                groups.append(self.alternatives(v.ref, rd["anyOf"]))
            self.absorbed.add(v.ref)
        props.update(v.inline)
        required += v.inline_required
        fields, checks = self.fields_of(cls, props, required, groups)
        if v.kind == "other":
            assert v.tag_field is not None
            fields.insert(0, Field(v.tag_field, snake(v.tag_field), "str", True))
            tags = [json.dumps(t) for t in sorted(self._known_tags(union))]
            known = f"({tags[0]},)" if len(tags) == 1 else f"({', '.join(tags)})"
            checks += [
                f"if self.{snake(v.tag_field)} in {known}:",
                f'    raise ValueError("`{v.tag_field}` must not be a known value here")',
            ]
        self.structs[cls] = StructIR(
            cls,
            union,
            v.doc or "",
            fields,
            markers=markers,
            tag_field=v.tag_field if v.kind == "tagged" else None,
            tag=v.tag if v.kind == "tagged" else None,
            checks=checks,
            order=(union, 1 + index),
        )
        return cls

    def _known_tags(self, union: str) -> list[str]:
        d = self.defs[union]
        return [
            p["const"]
            for v in (d.get("oneOf") or d["anyOf"])
            for p in v.get("properties", {}).values()
            if "const" in p
        ]

    def finish(self) -> None:
        """Give the variants found while building unions their markers and tags."""
        for name, pairs in self.pending_markers.items():
            s = self.structs[name]
            s.markers.extend(m for m, _ in pairs)
            unions = {u for _, u in pairs if u is not None}
            if len(unions) == 1:
                s.def_name = unions.pop()
        for name, (tag_field, tag, union, markers) in self.pending_tags.items():
            t = self.structs[name]
            t.tag_field, t.tag, t.def_name = tag_field, tag, union
            t.markers.extend(markers)
        self.check_references()

    # -- methods -----------------------------------------------------------

    def methods(self) -> list[tuple[str, str, str, str | None]]:
        """(method, side, params class, result class or None), sorted."""
        by_method: dict[str, dict[str, str]] = {}
        for name, d in self.defs.items():
            method = d.get("x-method")
            if method is None:
                continue
            slot = "result" if name.endswith("Response") else "params"
            entry = by_method.setdefault(method, {"side": d["x-side"]})
            if slot in entry or entry["side"] != d["x-side"]:
                raise SchemaShapeError(f"{method}: ambiguous definitions")
            entry[slot] = name
        sides = {"agent": "agentMethods", "client": "clientMethods", "protocol": "protocolMethods"}
        for side, key in sides.items():
            expected = set(self.meta[key].values())
            got = {m for m, e in by_method.items() if e["side"] == side}
            if expected != got:
                raise SchemaShapeError(f"{side} methods differ from meta.json: {expected ^ got}")
        return [(m, e["side"], e["params"], e.get("result")) for m, e in sorted(by_method.items())]
