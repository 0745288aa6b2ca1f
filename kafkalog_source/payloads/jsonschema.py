"""JSON values: the JSON Schema serializer's wire format (magic byte 0, the 4-byte schema id,
then the JSON text) or plain JSON text without a prefix (a JSON text never starts with byte 0;
its schema id is null).

The column's type comes from the reader JSON Schema, or, for plain JSON without a schema, from
:func:`infer_json_type` over a sample of values taken when the read is planned. Values are read
by property name, so values written with other schema ids resolve into the reader's type as
long as their properties fit it.

JSON Schema to Arrow (every field nullable; ``required`` is not enforced, a missing property
reads as null; properties the type lacks are ignored):

====================================================  =======================================
JSON Schema                                           Arrow
====================================================  =======================================
``object`` with ``properties``                        struct, fields in declaration order
``object`` with only ``additionalProperties: {S}``    map<string, S>
``array`` with ``items: {S}``                         list<S> (tuple-form ``items`` or
                                                      ``prefixItems``: a JSON string)
``integer`` / ``number`` / ``boolean``                int64 / float64 / bool
``string`` (any ``format``, ``date-time`` included)   string (as written: offsets kept)
``"type": [T, "null"]``; ``anyOf``/``oneOf`` of       T
T and ``{"type": "null"}``; ``allOf`` of one S
``$ref`` (``#/definitions``, ``#/$defs``, any JSON    the referenced schema
pointer; other documents through the registry's
references, by their ``$ref`` URL)
anything else: ``{}``, ``true``, several non-null     string: the JSON text of the sub-value
types, ``oneOf``/``anyOf``/``allOf`` of several
schemas, objects without properties, a ``$ref``
inside itself (recursion), ``enum``/``const`` of
non-strings
====================================================  =======================================

Decoding: values that are a single-line JSON object go through ``pyarrow.json.read_json`` with
the type as its explicit schema (in chunks); a chunk that does not read as a whole (a value
that does not fit, invalid UTF-8, a value holding two objects...) and every other value go
through ``json.loads`` one by one, so each bad value is an error of its own row naming the field
that does not fit. ``NaN`` and ``Infinity`` are not JSON and do not parse.

``as_json=True``: a string per value, the JSON text exactly as written (checked to parse).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..errors import KafkaLogError
from ..format.registry import WIRE_MAGIC, WIRE_PREFIX
from .codec import (
    NO_PREFIX,
    Decoded,
    PayloadDecoder,
    PayloadError,
    held_by,
    registered,
    split_wire,
)
from .jsonschema_check import check_schema

if TYPE_CHECKING:  # the Registry and RegisteredSchema of format/registry.py
    from ..format.registry import RegisteredSchema

CHUNK = 4096  # values per read_json call
_INT64 = (-(1 << 63), (1 << 63) - 1)


class _Misfit(ValueError):
    """A value that does not fit the type: ``path`` names the field."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"field {path}: {why}" if path else why)


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _text(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _unicode(s: str, path: str) -> str:
    """``s``, or :class:`_Misfit` when it holds a lone surrogate (JSON's ``"\\udc80"`` escape
    parses into one): no string column can hold it."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = s[e.start : e.end].encode("utf-8", "backslashreplace").decode()
        raise _Misfit(
            path, f"a string holds the lone surrogate {bad}, which is not Unicode"
        ) from None
    return s


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# -- converters: a JSON value (json.loads) -> the Python value pyarrow builds the type from -----


class _Node:
    type: pa.DataType
    fast = True  # pyarrow.json reads this type directly

    def convert(self, v: Any, path: str) -> Any:
        raise NotImplementedError


class _Int(_Node):
    type = pa.int64()

    def convert(self, v: Any, path: str) -> Any:
        if v is None:
            return None
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Misfit(path, f"expected integer, got {_kind(v)}")
        if not _INT64[0] <= v <= _INT64[1]:
            raise _Misfit(path, f"integer {v} is out of the int64 range")
        return v


class _Float(_Node):
    type = pa.float64()

    def convert(self, v: Any, path: str) -> Any:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Misfit(path, f"expected number, got {_kind(v)}")
        return float(v)


class _Bool(_Node):
    type = pa.bool_()

    def convert(self, v: Any, path: str) -> Any:
        if v is None or isinstance(v, bool):
            return v
        raise _Misfit(path, f"expected boolean, got {_kind(v)}")


class _Str(_Node):
    """A string; ``lenient`` (inferred types): any other value becomes its JSON text."""

    type = pa.string()

    def __init__(self, lenient: bool = False) -> None:
        self.lenient = lenient

    def convert(self, v: Any, path: str) -> Any:
        if v is None:
            return v
        if isinstance(v, str):
            return _unicode(v, path)
        if self.lenient:
            return _unicode(_text(v), path)
        raise _Misfit(path, f"expected string, got {_kind(v)}")


class _Text(_Node):
    """Any value, as its JSON text."""

    type = pa.string()
    fast = False

    def convert(self, v: Any, path: str) -> Any:
        return None if v is None else _unicode(_text(v), path)


class _List(_Node):
    def __init__(self, item: _Node) -> None:
        self.item = item
        self.type = pa.list_(item.type)
        self.fast = item.fast

    def convert(self, v: Any, path: str) -> Any:
        if v is None:
            return None
        if not isinstance(v, list):
            raise _Misfit(path, f"expected array, got {_kind(v)}")
        item = self.item
        return [item.convert(x, f"{path}[{i}]") for i, x in enumerate(v)]


class _Map(_Node):
    fast = False

    def __init__(self, value: _Node) -> None:
        self.value = value
        self.type = pa.map_(pa.string(), value.type)

    def convert(self, v: Any, path: str) -> Any:
        if v is None:
            return None
        if not isinstance(v, dict):
            raise _Misfit(path, f"expected object, got {_kind(v)}")
        return [(_unicode(k, path), self.value.convert(x, _join(path, k))) for k, x in v.items()]


class _Struct(_Node):
    def __init__(self, fields: list[tuple[str, _Node]]) -> None:
        self.fields = fields
        self.type = pa.struct([pa.field(n, f.type) for n, f in fields])
        self.fast = all(f.fast for _, f in fields)

    def convert(self, v: Any, path: str) -> Any:
        if v is None:
            return None
        if not isinstance(v, dict):
            raise _Misfit(path, f"expected object, got {_kind(v)}")
        return {n: f.convert(v.get(n), _join(path, n)) for n, f in self.fields}


# -- validation --------------------------------------------------------------------------------


def load_schema(text: str) -> Any:
    """A registered JSON Schema's text parsed and checked (:func:`check_schema`); ``ValueError``
    when it is not JSON or not a valid schema."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError("not JSON: nested too deep") from None
    check_schema(doc)
    return doc


# -- JSON Schema -> converter ---------------------------------------------------------------


def _pointer(doc: Any, fragment: str) -> Any:
    """The JSON pointer ``fragment`` (after ``#``) in ``doc``."""
    node = doc
    for part in fragment.lstrip("/").split("/") if fragment.strip("/") else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def schema_node(
    schema: Any, documents: Mapping[str, Any] | None = None, lenient: bool = False
) -> _Node:
    """The converter (and Arrow type, ``.type``) of JSON Schema ``schema`` (parsed);
    ``documents``: referenced schema documents by their ``$ref`` URL. See the module's table.

    Raises ``ValueError`` for a ``$ref`` that resolves to nothing."""
    documents = dict(documents or {})

    def resolve(ref: str, doc: Any) -> tuple[Any, Any, str]:
        url, _, fragment = ref.partition("#")
        if url:
            target = documents.get(url)
            if target is None:  # by the last path segment, or by a document's $id
                for name, d in documents.items():
                    if name.rsplit("/", 1)[-1] == url.rsplit("/", 1)[-1] or (
                        isinstance(d, dict) and d.get("$id") == url
                    ):
                        target = d
                        break
            if target is None:
                raise ValueError(f"$ref {ref!r} is neither in the schema nor a reference")
            doc = target
        try:
            return _pointer(doc, fragment), doc, f"{url}#{fragment}"
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise ValueError(f"$ref {ref!r} points to nothing") from e

    def node(s: Any, doc: Any, seen: tuple[str, ...]) -> _Node:
        if not isinstance(s, dict):
            return _Text()
        if "$ref" in s:
            target, tdoc, key = resolve(s["$ref"], doc)
            if key in seen:
                return _Text()
            return node(target, tdoc, (*seen, key))
        for key in ("anyOf", "oneOf"):
            if key in s:
                branches = [
                    b for b in s[key] if not (isinstance(b, dict) and b == {"type": "null"})
                ]
                return node(branches[0], doc, seen) if len(branches) == 1 else _Text()
        if "allOf" in s:
            return node(s["allOf"][0], doc, seen) if len(s["allOf"]) == 1 else _Text()
        t = s.get("type")
        if isinstance(t, list):
            kinds = [k for k in t if k != "null"]
            if set(kinds) == {"integer", "number"}:
                kinds = ["number"]
            if len(kinds) != 1:
                return _Str() if not kinds else _Text()
            t = kinds[0]
        if t is None:
            if "properties" in s or "additionalProperties" in s:
                t = "object"
            elif "items" in s:
                t = "array"
            elif "enum" in s or "const" in s:
                options = s.get("enum", [s.get("const")])
                t = "string" if all(isinstance(o, str) for o in options) else None
        if t == "object":
            props = s.get("properties") or {}
            if props:
                return _Struct([(n, node(p, doc, seen)) for n, p in props.items()])
            extra = s.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return _Map(node(extra, doc, seen))
            return _Text()
        if t == "array":
            items = s.get("items")
            if isinstance(items, dict) and "prefixItems" not in s:
                return _List(node(items, doc, seen))
            return _Text() if items is not None or "prefixItems" in s else _List(_Text())
        if t == "integer":
            return _Int()
        if t == "number":
            return _Float()
        if t == "boolean":
            return _Bool()
        if t in ("string", "null"):
            return _Str(lenient)
        return _Text()

    return node(schema, schema, ("#",))


def type_node(t: pa.DataType) -> _Node:
    """The converter of an Arrow type (an inferred one): strings lenient (a value of another
    kind becomes its JSON text). Raises ``ValueError`` for a type JSON cannot fill."""
    if pa.types.is_struct(t):
        return _Struct([(f.name, type_node(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _List(type_node(t.value_type))
    if pa.types.is_map(t) and pa.types.is_string(t.key_type):
        return _Map(type_node(t.item_type))
    if pa.types.is_string(t):
        return _Str(lenient=True)
    if t == pa.int64():
        return _Int()
    if pa.types.is_floating(t):
        return _Float()
    if pa.types.is_boolean(t):
        return _Bool()
    raise ValueError(f"JSON values cannot fill the Arrow type {t}")


# -- inference -------------------------------------------------------------------------------


def _strip(value: bytes) -> bytes:
    return value[WIRE_PREFIX:] if value[:1] == bytes([WIRE_MAGIC]) else value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: bytes) -> Any:
    return json.loads(text.decode("utf-8"), parse_constant=_reject_constant)


def infer_json_type(samples: list[bytes]) -> pa.DataType:
    """An Arrow type for JSON values ``samples`` (with or without the wire-format prefix;
    ones that do not parse are skipped): objects -> struct (keys in first-seen order), arrays
    -> list, integer -> int64 (integers and numbers mixed -> float64), number -> float64,
    boolean, string; a value seen with different kinds, an integer beyond int64, an empty
    object, or only nulls -> string (the JSON text of the sub-value)."""
    acc: Any = ("null",)
    for raw in samples:
        if raw is None:
            continue
        try:
            v = _loads(_strip(bytes(raw)))
        except ValueError:
            continue
        acc = _unify(acc, _shape(v))
    return _arrow(acc)


def _shape(v: Any) -> Any:
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool",)
    if isinstance(v, int):
        return ("int",) if _INT64[0] <= v <= _INT64[1] else ("json",)
    if isinstance(v, float):
        return ("float",)
    if isinstance(v, str):
        return ("str",)
    if isinstance(v, list):
        item: Any = ("null",)
        for x in v:
            item = _unify(item, _shape(x))
        return ("list", item)
    return ("obj", {k: _shape(x) for k, x in v.items()})


def _unify(a: Any, b: Any) -> Any:
    if a[0] == "null":
        return b
    if b[0] == "null":
        return a
    if {a[0], b[0]} == {"int", "float"}:
        return ("float",)
    if a[0] != b[0]:
        return ("json",)
    if a[0] == "list":
        return ("list", _unify(a[1], b[1]))
    if a[0] == "obj":
        merged = dict(a[1])
        for k, t in b[1].items():
            merged[k] = _unify(merged[k], t) if k in merged else t
        return ("obj", merged)
    return a


def _arrow(s: Any) -> pa.DataType:
    kind = s[0]
    if kind == "bool":
        return pa.bool_()
    if kind == "int":
        return pa.int64()
    if kind == "float":
        return pa.float64()
    if kind == "list":
        return pa.list_(_arrow(s[1]))
    if kind == "obj" and s[1]:
        return pa.struct([pa.field(k, _arrow(t)) for k, t in s[1].items()])
    return pa.string()  # str, json, null, {}


# -- the decoder -----------------------------------------------------------------------------


class JsonDecoder(PayloadDecoder):
    """Decodes JSON values (wire format or plain) into ``self.type``.

    ``registry`` (may be None: prefixed values are then read without checking their id) and
    ``reader`` (the JSON Schema whose type the column has) or ``inferred`` (a type from
    :func:`infer_json_type`, used when there is no reader); ``as_json=True``: a string column
    holding each value's JSON text as written. Raises :class:`..errors.KafkaLogError` at
    construction when the reader is not a JSON schema, does not parse, or no type is given.
    """

    _ARGS = ("registry", "reader", "as_json", "inferred")

    def __init__(
        self,
        registry: Any,
        reader: RegisteredSchema | None,
        as_json: bool = False,
        inferred: pa.DataType | None = None,
    ) -> None:
        self.registry = registry
        self.reader = reader
        self.as_json = as_json
        self.inferred = inferred
        self._setup()

    def _setup(self) -> None:
        self._checked: dict[int, str | None] = {}  # schema id -> why its values are refused
        self._node: _Node | None = None
        self._fit = "the inferred type"
        if self.reader is not None:
            r = self.reader
            if r.schema_type != "JSON":
                raise KafkaLogError(
                    f"the reader schema (id {r.id}) is a {r.schema_type} schema, not JSON"
                )
            try:
                documents = {}
                if self.registry is not None:
                    for name, ref in self.registry.referenced(r).items():
                        documents[name] = load_schema(ref.text)
                self._node = schema_node(load_schema(r.text), documents)
            except (ValueError, KeyError, TypeError, RecursionError) as e:
                raise KafkaLogError(f"the JSON reader schema (id {r.id}) is unusable: {e}") from e
            self._fit = f"the reader schema (id {r.id})"
        elif self.inferred is not None:
            try:
                self._node = type_node(self.inferred)
            except ValueError as e:
                raise KafkaLogError(str(e)) from e
        elif not self.as_json:
            raise KafkaLogError(
                "a typed JSON column needs a reader schema or an inferred type (or as_json)"
            )
        self.type = pa.string() if self.as_json else self._node.type

    def _refusal(self, schema_id: int) -> str | None:
        """Why values of ``schema_id`` are refused: not a JSON schema of the registry, or one
        that is not valid (checked once per id; the values are read by the reader's type)."""
        if self.registry is None:
            return None
        if schema_id not in self._checked:
            schema, why = registered(self.registry, schema_id, "JSON")
            if schema is not None:
                try:
                    for ref in self.registry.referenced(schema).values():
                        load_schema(ref.text)
                    load_schema(schema.text)
                except (ValueError, KeyError) as e:
                    where = held_by(self.registry, schema_id)
                    why = f"schema id {schema_id}{where} cannot be used: {e}"
            self._checked[schema_id] = why
        return self._checked[schema_id]

    def decode(self, data: pa.Array) -> Decoded:
        """Decode ``data`` (binary values, prefixed or plain JSON); see :class:`PayloadDecoder`."""
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        ids, has_prefix, is_null = split_wire(data)
        raw = data.to_pylist()
        n = len(raw)
        errors: list[PayloadError] = []
        rows: list[int] = []  # values to decode: row, payload, schema id
        payloads: list[bytes] = []
        sids: list[int | None] = []
        for i in range(n):
            if is_null[i]:
                continue
            v = raw[i]
            if has_prefix[i]:
                sid = int(ids[i])
                why = self._refusal(sid)
                if why is not None:
                    errors.append(PayloadError(i, sid, why))
                    continue
                rows.append(i)
                payloads.append(v[WIRE_PREFIX:])
                sids.append(sid)
            elif v[:1] == bytes([WIRE_MAGIC]):
                errors.append(PayloadError(i, None, NO_PREFIX))
            else:
                rows.append(i)
                payloads.append(v)
                sids.append(None)
        if self.as_json:
            out: list[Any] = [None] * n
            for i, p, sid in zip(rows, payloads, sids, strict=True):
                try:
                    _loads(p)
                    out[i] = p.decode("utf-8")
                except (ValueError, RecursionError) as e:
                    errors.append(PayloadError(i, sid, self._unparsable(sid, e)))
            values = pa.array(out, type=pa.string())
        else:
            values = self._typed(n, rows, payloads, sids, errors)
        errors.sort(key=lambda e: e.row)
        schema_ids = pa.array(ids.astype(np.int32), type=pa.int32(), mask=is_null | ~has_prefix)
        return Decoded(schema_ids, values, errors)

    def _unparsable(self, sid: int | None, e: Exception) -> str:
        where = "" if sid is None else f" with schema id {sid}{held_by(self.registry, sid)}"
        return f"does not parse as JSON{where}: {e}"

    def _typed(
        self,
        n: int,
        rows: list[int],
        payloads: list[bytes],
        sids: list[int | None],
        errors: list[PayloadError],
    ) -> pa.Array:
        node = self._node
        pieces: list[pa.Array] = []
        where = np.full(n, -1, dtype=np.int64)  # row -> index in the concatenated pieces
        base = 0
        fast_ok = node.fast and isinstance(node, _Struct)
        for start in range(0, len(rows), CHUNK):
            c_rows = rows[start : start + CHUNK]
            c_pay = payloads[start : start + CHUNK]
            c_sid = sids[start : start + CHUNK]
            piece = None
            slow: list[int] = list(range(len(c_rows)))
            if fast_ok:
                quick = [k for k, p in enumerate(c_pay) if _one_line_object(p)]
                if quick:
                    piece = self._read_json([c_pay[k] for k in quick])
                if piece is not None:
                    where[np.asarray([c_rows[k] for k in quick])] = base + np.arange(len(quick))
                    pieces.append(piece)
                    base += len(piece)
                    chosen = set(quick)
                    slow = [k for k in slow if k not in chosen]
            if not slow:
                continue
            out: list[Any] = []
            for k in slow:
                i, p, sid = c_rows[k], c_pay[k], c_sid[k]
                try:
                    v = _loads(p)
                except (ValueError, RecursionError) as e:
                    errors.append(PayloadError(i, sid, self._unparsable(sid, e)))
                    continue
                try:
                    out.append(node.convert(v, ""))
                except _Misfit as e:
                    errors.append(PayloadError(i, sid, f"does not fit {self._fit}: {e}"))
                    continue
                where[i] = base + len(out) - 1
            if out:
                pieces.append(pa.array(out, type=self.type))
                base += len(out)
        pieces.append(pa.nulls(1, type=self.type))
        where[where < 0] = base
        return pa.concat_arrays(pieces).take(pa.array(where))

    def _read_json(self, texts: list[bytes]) -> pa.Array | None:
        """``texts`` (single-line objects) read by pyarrow.json as one struct array, or None
        when they do not read as a whole (then each goes through ``json.loads``)."""
        import pyarrow.json as pj

        joined = b"\n".join(texts)
        try:
            table = pj.read_json(
                io.BytesIO(joined),
                read_options=pj.ReadOptions(use_threads=False, block_size=len(joined) + 1),
                parse_options=pj.ParseOptions(
                    explicit_schema=pa.schema(list(self.type)),
                    unexpected_field_behavior="ignore",
                ),
            )
            if table.num_rows != len(texts):
                return None
            table.validate(full=True)  # e.g. invalid UTF-8 inside a string
        except (pa.ArrowException, ValueError):
            return None
        batch = table.combine_chunks().to_batches()
        if not batch:
            return pa.array([{}] * 0, type=self.type)
        return pa.StructArray.from_arrays(batch[0].columns, fields=list(self.type))


def _one_line_object(p: bytes) -> bool:
    """Whether ``p`` may go to pyarrow.json: a JSON object on one line (pyarrow crashes on
    some top-level non-objects, and a newline would split the value)."""
    s = p.strip(b" \t")
    return s[:1] == b"{" and s[-1:] == b"}" and b"\n" not in s and b"\r" not in s
