"""Avro schemas as the payload decoders see them: a :class:`Node` tree (named types and
registry references resolved), its Spark-compatible Arrow type, and Avro's resolution rules
(which writer schema matches which reader schema, and which branch of a reader union a writer
schema resolves to).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import fastavro
import pyarrow as pa

if TYPE_CHECKING:  # the registry helper writes these; decoders only use their documented API
    from ..format.registry import RegisteredSchema, Registry

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_KEYWORDS = _PRIMITIVES + ("record", "error", "enum", "fixed", "array", "map")


class SchemaError(ValueError):
    """A schema this decoder cannot use (does not parse, or has no Arrow type)."""


# ------------------------------------------------------------------------------ schema model


@dataclass(eq=False)
class Node:
    """One Avro schema, with named types resolved (shared nodes for one named type)."""

    kind: str  # a primitive, or record / enum / fixed / array / map / union
    logical: str | None = None
    name: str | None = None  # the full name of a named type
    aliases: tuple[str, ...] = ()
    size: int = 0  # fixed
    precision: int = 0  # decimal
    scale: int = 0
    symbols: tuple[str, ...] = ()  # enum
    enum_default: str | None = None
    items: Node | None = None  # array items, map values
    fields: list[FieldNode] = field(default_factory=list)  # record
    branches: list[Node] = field(default_factory=list)  # union
    recursive: bool = False  # a record that contains itself

    @property
    def short_name(self) -> str | None:
        """The unqualified name of a named type."""
        return None if self.name is None else self.name.rsplit(".", 1)[-1]


@dataclass(eq=False)
class FieldNode:
    """One record field: its name, aliases, schema and default (``has_default``)."""

    name: str
    node: Node
    has_default: bool
    default: Any
    aliases: tuple[str, ...] = ()


def _decimal_ok(p: Any, s: Any) -> bool:
    return isinstance(p, int) and isinstance(s, int) and 0 < p <= 38 and 0 <= s <= p


def build_node(parsed: Any, named: dict[str, Any]) -> Node:
    """The :class:`Node` tree of a schema parsed by ``fastavro.parse_schema`` (its named types
    in ``named``, full name -> parsed schema). Recursive records are marked ``recursive``."""
    done: dict[str, Node] = {}
    active: set[str] = set()

    def build(s: Any) -> Node:
        if isinstance(s, str):
            if s in _PRIMITIVES:
                return Node(s)
            if s in done:
                if s in active:
                    done[s].recursive = True
                return done[s]
            if s not in named:
                raise SchemaError(f"unknown Avro type {s!r}")
            return build(named[s])
        if isinstance(s, list):
            return Node("union", branches=[build(b) for b in s])
        t = s["type"]
        if isinstance(t, (dict, list)) or t not in _KEYWORDS:
            return build(t)  # {"type": {...}} or {"type": "some.Named"}
        logical = s.get("logicalType")
        if t in _PRIMITIVES:
            n = Node(t, logical=logical)
            if logical == "decimal":
                if t != "bytes" or not _decimal_ok(s.get("precision"), s.get("scale", 0)):
                    n.logical = None
                else:
                    n.precision, n.scale = s["precision"], s.get("scale", 0)
            return n
        if t == "array":
            return Node("array", items=build(s["items"]))
        if t == "map":
            return Node("map", items=build(s["values"]))
        name = s["name"]
        if name in done:  # fastavro expands each named type once; guard anyway
            return done[name]
        aliases = tuple(s.get("aliases", ()))
        if t == "fixed":
            n = Node("fixed", logical=s.get("logicalType"), name=name, size=s["size"])
            n.aliases = aliases
            if n.logical == "decimal":
                if _decimal_ok(s.get("precision"), s.get("scale", 0)):
                    n.precision, n.scale = s["precision"], s.get("scale", 0)
                else:
                    n.logical = None
            done[name] = n
            return n
        if t == "enum":
            n = Node("enum", name=name, aliases=aliases, symbols=tuple(s["symbols"]))
            n.enum_default = s.get("default")
            done[name] = n
            return n
        n = Node("record", name=name, aliases=aliases)
        done[name] = n
        active.add(name)
        for f in s["fields"]:
            n.fields.append(
                FieldNode(
                    f["name"],
                    build(f["type"]),
                    "default" in f,
                    f.get("default"),
                    tuple(f.get("aliases", ())),
                )
            )
        active.discard(name)
        return n

    return build(parsed)


def is_recursive(node: Node) -> bool:
    """Whether a record inside ``node`` contains itself."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.recursive:
            return True
        stack += [f.node for f in n.fields] + n.branches + ([n.items] if n.items else [])
    return False


def non_null(node: Node) -> list[Node]:
    """A union's branches other than ``null``."""
    return [b for b in node.branches if b.kind != "null"]


def union_shape(node: Node) -> str:
    """How a union maps to Arrow: ``null`` (only nulls), ``single`` (one non-null branch),
    ``merged`` (``[int, long]`` / ``[float, double]``, as Spark merges them) or ``struct``."""
    nn = non_null(node)
    if not nn:
        return "null"
    if len(nn) == 1:
        return "single"
    kinds = {(b.kind, b.logical) for b in nn}
    if kinds in ({("int", None), ("long", None)}, {("float", None), ("double", None)}):
        return "merged"
    return "struct"


def arrow_type(node: Node) -> pa.DataType:
    """The Spark-compatible Arrow type of an Avro schema (see the module's docstring)."""
    if node.recursive:
        raise SchemaError(
            f"the recursive Avro record {node.name} has no Arrow type (decode it as JSON)"
        )
    k, lg = node.kind, node.logical
    if k == "null":
        return pa.null()
    if k == "boolean":
        return pa.bool_()
    if k == "int":
        return pa.date32() if lg == "date" else pa.int32()
    if k == "long":
        if lg in ("timestamp-millis", "timestamp-micros"):
            return pa.timestamp("us", tz="UTC")
        if lg in ("local-timestamp-millis", "local-timestamp-micros"):
            return pa.timestamp("us")
        return pa.int64()
    if k == "float":
        return pa.float32()
    if k == "double":
        return pa.float64()
    if k in ("bytes", "fixed"):
        return pa.decimal128(node.precision, node.scale) if lg == "decimal" else pa.binary()
    if k in ("string", "enum"):
        return pa.string()
    if k == "array":
        assert node.items is not None
        return pa.list_(arrow_type(node.items))
    if k == "map":
        assert node.items is not None
        return pa.map_(pa.string(), arrow_type(node.items))
    if k == "record":
        return pa.struct([pa.field(f.name, arrow_type(f.node)) for f in node.fields])
    shape = union_shape(node)
    nn = non_null(node)
    if shape == "null":
        return pa.null()
    if shape == "single":
        return arrow_type(nn[0])
    if shape == "merged":
        return pa.float64() if nn[0].kind in ("float", "double") else pa.int64()
    return pa.struct([pa.field(f"member{i}", arrow_type(b)) for i, b in enumerate(nn)])


# ------------------------------------------------------------------------ parsing with references


@dataclass
class ParsedSchema:
    """A registered Avro schema parsed with its references: fastavro's form and the node tree."""

    schema_id: int
    parsed: Any
    node: Node


def parse_registered(registry: Registry, schema: RegisteredSchema) -> ParsedSchema:
    """Parse an Avro schema of the registry, its references (by full name) included."""
    named: dict[str, Any] = {}
    refs = registry.referenced(schema) if schema.references else {}
    pending = list(refs.values())
    while pending:  # references may name each other: parse those whose names are known first
        left = []
        last: Exception | None = None
        for ref in pending:
            trial = dict(named)
            try:
                fastavro.parse_schema(json.loads(ref.text), trial, _write_hint=False)
            except Exception as e:
                left.append(ref)
                last = e
                continue
            named = trial
        if len(left) == len(pending):
            raise SchemaError(f"a referenced schema does not parse: {last}")
        pending = left
    try:
        parsed = fastavro.parse_schema(json.loads(schema.text), named)
        node = build_node(parsed, named)
    except SchemaError:
        raise
    except Exception as e:
        raise SchemaError(f"does not parse as an Avro schema: {e}") from e
    return ParsedSchema(schema.id, parsed, node)


# ----------------------------------------------------------------------------- resolution rules

_PROMOTIONS = {
    "int": ("long", "float", "double"),
    "long": ("float", "double"),
    "float": ("double",),
    "string": ("bytes",),
    "bytes": ("string",),
}


def names_match(w: Node, r: Node) -> bool:
    """Avro's name rule for named types: the unqualified names are equal, or the writer's name
    is one of the reader's aliases (full or unqualified)."""
    if w.short_name == r.short_name:
        return True
    return any(a == w.name or a.rsplit(".", 1)[-1] == w.short_name for a in r.aliases)


def matches(w: Node, r: Node, exact: bool = False) -> bool:
    """Whether writer schema ``w`` matches reader schema ``r`` (neither a union) as Avro's
    resolution rules define it; ``exact`` excludes promotions."""
    if w.kind == r.kind:
        if w.kind in ("record", "enum"):
            return names_match(w, r)
        if w.kind == "fixed":
            return names_match(w, r) and w.size == r.size
        return True
    return not exact and r.kind in _PROMOTIONS.get(w.kind, ())


def reader_branch(w: Node, r: Node) -> int | None:
    """The reader union branch (index into ``r.branches``) a writer schema resolves to: the
    first that matches exactly, else the first it promotes to; None if none."""
    for exact in (True, False):
        for i, b in enumerate(r.branches):
            if b.kind != "union" and matches(w, b, exact):
                return i
    return None
