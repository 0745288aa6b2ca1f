"""Avro schemas as the payload decoders see them: a :class:`Node` tree (named types and
registry references resolved), its Spark-compatible Arrow type, and Avro's resolution rules
(which writer schema matches which reader schema, and which branch of a reader union a writer
schema resolves to).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import fastavro
import pyarrow as pa

from ..errors import InvalidSchemaError

if TYPE_CHECKING:  # the registry helper writes these; decoders only use their documented API
    from ..format.registry import RegisteredSchema, Registry

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_KEYWORDS = _PRIMITIVES + ("record", "error", "enum", "fixed", "array", "map")


class SchemaError(InvalidSchemaError):
    """A schema this decoder cannot use (does not parse, or has no Arrow type)."""


# ----------------------------------------------------------------------- validation (Avro's)

# What Avro's own parser refuses (Java, apache/avro trunk at 87212a6 (2026-08), Schema.Parser,
# Schema.java and NameValidator.UTF_VALIDATOR; the same rules since 1.9 unless said), checked
# before fastavro sees a schema: fastavro accepts some of these (duplicate field names, a
# fixed size that is not an integer, nested or duplicate union branches, names that are not
# names), and the decoders would then fail on every value, or build mismatched columns.
_MAX_FIXED = (1 << 31) - 9  # SystemLimitException.MAX_ARRAY_VM_LIMIT
_ORDERS = ("ascending", "descending", "ignore")
_NAMED = ("record", "error", "enum", "fixed")


def _name_error(name: Any) -> str | None:
    """NameValidator.UTF_VALIDATOR: a letter or ``_``, then letters, digits or ``_`` (Java's
    Character.isLetter / isLetterOrDigit, on UTF-16 units: no character past U+FFFF)."""
    if not isinstance(name, str):
        return f"a name must be a string, not {json.dumps(name)[:60]}"
    if not name:
        return "empty name"
    for i, c in enumerate(name):
        cat = unicodedata.category(c) if ord(c) <= 0xFFFF else ""
        if not (c == "_" or cat.startswith("L") or (i and cat == "Nd")):
            what = "initial character" if i == 0 else "character"
            return f"illegal {what} in the name {name!r}"
    return None


def checked(schema: Any) -> Any:
    """``schema`` (parsed JSON) checked as Avro's parser checks it, or :class:`SchemaError`
    naming what is wrong. Returns a copy with what that parser ignores taken out (a
    ``namespace``, ``doc``, ``logicalType`` or enum ``default`` that is not a string is read as
    absent), so that fastavro reads the same schema."""
    defined: set[str] = set()

    def full(name: str, space: str | None) -> str:
        return name if "." in name or not space else f"{space}.{name}"

    def named(s: dict, space: str | None) -> tuple[str, str | None]:
        name = s.get("name")
        if not isinstance(name, str):
            raise SchemaError(f"no name in a {s.get('type')} schema (it must be a string)")
        why = _name_error(name.rsplit(".", 1)[-1])
        if why:
            raise SchemaError(why)
        ns = s.get("namespace") if isinstance(s.get("namespace"), str) else None
        if "." in name:
            ns = name.rsplit(".", 1)[0]
        elif ns is None:
            ns = space
        fullname = full(name, ns or None)
        if fullname in _PRIMITIVES:
            raise SchemaError(f"schemas may not be named after primitives: {fullname}")
        if fullname in defined:
            raise SchemaError(f"can't redefine: {fullname}")
        defined.add(fullname)
        aliases = s.get("aliases")
        if aliases is not None and (
            not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases)
        ):
            raise SchemaError(f"the aliases of {fullname} are not a list of strings")
        return fullname, ns or None

    def member(s: Any, space: str | None) -> str:
        """What makes a union branch unique (Schema.getFullName)."""
        if isinstance(s, str):
            return s if s in _PRIMITIVES else full(s, space)
        if isinstance(s, dict):
            t = s.get("type")
            if t in _NAMED and isinstance(s.get("name"), str):
                name = s["name"]
                ns = s.get("namespace") if isinstance(s.get("namespace"), str) else space
                return full(name, ns or None)
            return str(t)
        return "union"

    def walk(s: Any, space: str | None, depth: int) -> Any:
        if depth > 200:
            raise SchemaError("a schema nested deeper than 200 levels")
        if isinstance(s, str):
            return s
        if isinstance(s, list):
            seen: set[str] = set()
            for b in s:
                if isinstance(b, list):
                    raise SchemaError("a union directly inside a union")
                m = member(b, space)
                if m in seen:
                    raise SchemaError(f"duplicate in union: {m}")
                seen.add(m)
            return [walk(b, space, depth + 1) for b in s]
        if not isinstance(s, dict):
            raise SchemaError(f"not a schema: {json.dumps(s)[:60]}")
        t = s.get("type")
        if not isinstance(t, str):
            raise SchemaError(f"no type (it must be a string): {json.dumps(s)[:80]}")
        out = {k: v for k, v in s.items() if k not in ("namespace", "doc", "logicalType")}
        for k in ("namespace", "doc", "logicalType"):
            if isinstance(s.get(k), str):
                out[k] = s[k]
        if t in ("record", "error"):
            fullname, ns = named(s, space)
            fields = s.get("fields")
            if not isinstance(fields, list):
                raise SchemaError(f"record {fullname} has no fields (a list)")
            names: set[str] = set()
            out["fields"] = []
            for f in fields:
                if not isinstance(f, dict):
                    raise SchemaError(f"a field of record {fullname} is not an object")
                why = _name_error(f.get("name"))
                if why:
                    raise SchemaError(f"a field of record {fullname}: {why}")
                if f["name"] in names:
                    raise SchemaError(f"duplicate field {f['name']} in record {fullname}")
                names.add(f["name"])
                if "type" not in f:
                    raise SchemaError(f"no type for field {f['name']} of record {fullname}")
                order = f.get("order")
                if order is not None and (
                    not isinstance(order, str) or order.lower() not in _ORDERS
                ):
                    raise SchemaError(
                        f"field {f['name']} of record {fullname}: bad order {order!r}"
                    )
                aliases = f.get("aliases")
                if aliases is not None and (
                    not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases)
                ):
                    raise SchemaError(f"the aliases of field {f['name']} are not a list of strings")
                g = {k: v for k, v in f.items() if k != "doc"}
                if isinstance(f.get("doc"), str):
                    g["doc"] = f["doc"]
                g["type"] = walk(f["type"], ns, depth + 1)
                out["fields"].append(g)
        elif t == "enum":
            fullname, _ = named(s, space)
            symbols = s.get("symbols")
            if not isinstance(symbols, list):
                raise SchemaError(f"enum {fullname} has no symbols (a list)")
            for sym in symbols:
                why = _name_error(sym)
                if why:
                    raise SchemaError(f"a symbol of enum {fullname}: {why}")
            if len(set(symbols)) != len(symbols):
                raise SchemaError(f"duplicate symbol in enum {fullname}")
            default = s.get("default")
            if not isinstance(default, str):
                out.pop("default", None)
            elif default not in symbols:
                raise SchemaError(f"the default {default!r} of enum {fullname} is not a symbol")
        elif t == "fixed":
            fullname, _ = named(s, space)
            size = s.get("size")
            if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= _MAX_FIXED:
                raise SchemaError(
                    f"invalid or no size of fixed {fullname}: {json.dumps(size)[:40]}"
                )
        elif t == "array":
            if "items" not in s:
                raise SchemaError("an array has no items type")
            out["items"] = walk(s["items"], space, depth + 1)
        elif t == "map":
            if "values" not in s:
                raise SchemaError("a map has no values type")
            out["values"] = walk(s["values"], space, depth + 1)
        elif t not in _PRIMITIVES:
            # a named type's name as a type (Avro 1.11 reads {"type": "a.Named"} so)
            return t
        return out

    return walk(schema, None, 0)


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
    """A registered Avro schema parsed with its references: fastavro's form, fastavro's form
    without logical types (``plain``: what the typed fastavro path reads with, converting raw
    values itself as the kernel does) and the node tree."""

    schema_id: int
    parsed: Any
    node: Node
    plain: Any = None


def strip_logical(schema: Any) -> Any:
    """``schema`` (checked JSON) without any ``logicalType``: fastavro then reads raw ints,
    longs, strings and bytes, which cannot fail on a date past year 9999 or a malformed uuid."""
    if isinstance(schema, list):
        return [strip_logical(b) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "logicalType"}
    for k in ("items", "values"):
        if k in out:
            out[k] = strip_logical(out[k])
    if isinstance(out.get("fields"), list):
        out["fields"] = [
            {**f, "type": strip_logical(f["type"])} if isinstance(f, dict) and "type" in f else f
            for f in out["fields"]
        ]
    return out


def _fillable(schema: Any) -> Any:
    """``schema`` (checked JSON) with one placeholder symbol in each enum that has none: the
    fastavro path reads a writer-only field's bytes replaced by a value of its type
    (:func:`.avro_reference.filler`), and an enum of no symbols has none (Java skips its index
    unread). An enum the reader reads still has no value: its index is refused before fastavro
    reads it."""
    if isinstance(schema, list):
        return [_fillable(b) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") == "enum" and out.get("symbols") == []:
        out["symbols"] = ["KAFKALOG_NO_SYMBOL"]
    for k in ("items", "values"):
        if k in out:
            out[k] = _fillable(out[k])
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = _fillable(out["type"])
    if isinstance(out.get("fields"), list):
        out["fields"] = [_fillable(f) if isinstance(f, dict) else f for f in out["fields"]]
    return out


def _parse_all(texts: list[Any], main: Any, plain: bool) -> Any:
    """fastavro's form of ``main`` (checked JSON) with the referenced schemas ``texts``
    (checked JSON) known by name; without logical types and with a symbol in every enum
    (:func:`_fillable`) when ``plain``."""
    named: dict[str, Any] = {}
    pending = [_fillable(strip_logical(t)) if plain else t for t in texts]
    while pending:  # references may name each other: parse those whose names are known first
        left = []
        last: Exception | None = None
        for ref in pending:
            trial = dict(named)
            try:
                fastavro.parse_schema(ref, trial, _write_hint=False)
            except Exception as e:
                left.append(ref)
                last = e
                continue
            named = trial
        if len(left) == len(pending):
            raise SchemaError(f"a referenced schema does not parse: {last}")
        pending = left
    return fastavro.parse_schema(_fillable(strip_logical(main)) if plain else main, named), named


def parse_registered(registry: Registry, schema: RegisteredSchema) -> ParsedSchema:
    """Parse an Avro schema of the registry, its references (by full name) included."""
    try:
        refs = registry.referenced(schema) if schema.references else {}
    except KeyError as e:  # SchemaNotFoundError: a reference the registry does not hold
        raise SchemaError(f"has a reference the registry does not hold: {e}") from None
    try:
        texts = [checked(json.loads(ref.text)) for ref in refs.values()]
    except SchemaError as e:
        raise SchemaError(f"a referenced schema is not a valid Avro schema: {e}") from None
    except Exception as e:
        raise SchemaError(f"a referenced schema does not parse: {e}") from None
    try:
        main = checked(json.loads(schema.text))
        parsed, named = _parse_all(texts, main, False)
        node = build_node(parsed, named)
        plain = _parse_all(texts, main, True)[0]
    except SchemaError as e:
        raise SchemaError(f"is not a valid Avro schema: {e}") from None
    except Exception as e:
        raise SchemaError(f"does not parse as an Avro schema: {e}") from e
    return ParsedSchema(schema.id, parsed, node, plain)


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
