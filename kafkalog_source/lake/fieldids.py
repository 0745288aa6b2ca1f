"""Iceberg field ids: which field of a table each of kafkalog's columns is, whatever its name now.

An Iceberg table names its columns by field id; names are labels that other writers change
(Spark's ``ALTER TABLE ... RENAME COLUMN``, PyIceberg's ``update_schema().rename_column``), and a
column dropped and added again under its old name is a new field (a new id) that older data
files do not hold. kafkalog's columns have fixed names (``key``, ``value``, ``headers``, ...),
so a table remembers which field id each of them was given: every kafkalog commit records the
map of kafkalog's column paths to field ids (``kafkalog.fields`` in the snapshot summary and the
table properties; ``headers.element.key``: a list's element is ``element``, a map's entries
``key`` and ``value``). A table written before this map was recorded gets it from its schema
history: the name each field id had in the first schema that holds it (kafkalog creates and
adds fields under its own names; renames come later).

A run then writes each of its columns into the field id it had (a renamed column keeps being
written, under its new name), and refuses a table in which a column it writes was dropped
(:class:`~.spec.SchemaChangeError` naming the column: writing it again would be a new column
that the data written before does not belong to), or dropped and added again as a new field.

PyIceberg's schema objects are taken as they come (``pyiceberg.schema.Schema`` and its types);
this module imports nothing of PyIceberg's itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from .spec import SchemaChangeError

FIELDS = "kafkalog.fields"


def _children(t: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(path, NestedField) of the fields directly inside the Iceberg type ``t`` at ``path``."""
    kind = type(t).__name__
    if kind in ("StructType", "Schema"):
        for f in t.fields:
            yield (f"{path}.{f.name}" if path else f.name), f
    elif kind == "ListType":
        yield f"{path}.element", t.element_field
    elif kind == "MapType":
        yield f"{path}.key", t.key_field
        yield f"{path}.value", t.value_field


def field_paths(schema: Any) -> dict[str, int]:
    """Every field of the Iceberg ``schema`` (nested ones too) as ``{path: field id}``."""
    out: dict[str, int] = {}

    def walk(t: Any, path: str) -> None:
        for p, f in _children(t, path):
            out[p] = f.field_id
            walk(f.field_type, p)

    walk(schema.as_struct() if hasattr(schema, "as_struct") else schema, "")
    return out


def recorded(metadata: Any) -> dict[str, int] | None:
    """The map the table's newest kafkalog commit recorded (its snapshot lineage, else the table
    properties); None when none did."""
    snap = metadata.current_snapshot()
    while snap is not None:
        raw = snap.summary.get(FIELDS) if snap.summary is not None else None
        if raw:
            return _parsed(raw)
        parent = snap.parent_snapshot_id
        snap = metadata.snapshot_by_id(parent) if parent is not None else None
    raw = metadata.properties.get(FIELDS)
    return _parsed(raw) if raw else None


def _parsed(raw: str) -> dict[str, int] | None:
    try:
        data = json.loads(raw)
        return {str(k): int(v) for k, v in data.items()}
    except (ValueError, TypeError, AttributeError):
        return None  # unreadable: the schema history says the same for an intact table


def from_history(metadata: Any) -> dict[str, int]:
    """``{path: field id}`` from the table's schemas, oldest first: each id under the path it had
    in the first schema holding it; a path held by several ids (dropped and added again) is the
    first id's."""
    first: dict[int, str] = {}
    for schema in sorted(metadata.schemas, key=lambda s: s.schema_id):
        for path, fid in field_paths(schema).items():
            first.setdefault(fid, path)
    out: dict[str, int] = {}
    for fid in sorted(first):
        out.setdefault(first[fid], fid)
    return out


def kafkalog_ids(metadata: Any) -> dict[str, int]:
    """The field id of each of kafkalog's column paths in the table (see the module's
    description): the recorded map, completed from the schema history."""
    return {**from_history(metadata), **(recorded(metadata) or {})}


def _names(metadata: Any) -> tuple[dict[int, set[str]], dict[str, set[int]]]:
    """Every path each field id had, and every field id each path named, over the table's
    schemas and kafkalog's map."""
    paths: dict[int, set[str]] = {}
    ids: dict[str, set[int]] = {}
    maps = [field_paths(s) for s in metadata.schemas] + [kafkalog_ids(metadata)]
    for m in maps:
        for p, fid in m.items():
            paths.setdefault(fid, set()).add(p)
            ids.setdefault(p, set()).add(fid)
    return paths, ids


def renamed(metadata: Any) -> bool:
    """Whether any field of the table had another path, or a path named another field (a
    rename; a column dropped and added again): then data files may hold names that are not the
    fields' now, and only a reader that binds by field id reads them right."""
    paths, ids = _names(metadata)
    return any(len(v) > 1 for v in paths.values()) or any(len(v) > 1 for v in ids.values())


def nested_renamed(metadata: Any) -> bool:
    """Whether a field below the top level had another name, or a nested path named another
    field (a reader that binds top-level columns by field id and nested fields by name cannot
    read such files)."""
    paths, ids = _names(metadata)
    if any(len({p.rsplit(".", 1)[-1] for p in v}) > 1 for v in paths.values() if _nested(v)):
        return True
    return any(len(v) > 1 for p, v in ids.items() if "." in p)


def _nested(paths: set[str]) -> bool:
    return any("." in p for p in paths)


def rebuild(
    schema: pa.Schema,
    make: Callable[[pa.Field, str, Callable[[], pa.DataType]], pa.Field],
) -> pa.Schema:
    """``schema`` with every field, nested ones included, made anew by ``make(field, path,
    retype)``: ``path`` is kafkalog's column path (``headers.element.key``, as
    :func:`field_paths` names them), ``retype()`` the field's type with its children made the
    same way (called by ``make`` when it keeps the field, so that a refusal names the outermost
    field)."""

    def field(f: pa.Field, path: str) -> pa.Field:
        return make(f, path, lambda: typ(f.type, path))

    def typ(t: pa.DataType, path: str) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([field(c, f"{path}.{c.name}") for c in t])
        if pa.types.is_list(t):
            return pa.list_(field(t.value_field, f"{path}.element"))
        if pa.types.is_map(t):
            return pa.map_(field(t.key_field, f"{path}.key"), field(t.item_field, f"{path}.value"))
        return t

    return pa.schema([field(f, f.name) for f in schema])


class FieldMap:
    """kafkalog's column paths and a table's current schema, tied by field id."""

    def __init__(self, schema: Any, ids: Mapping[str, int], where: str) -> None:
        """``schema``: the table's current Iceberg schema; ``ids``: :func:`kafkalog_ids`;
        ``where``: the table as messages name it."""
        self.schema = schema
        self.ids = dict(ids)
        self.where = where
        self.current = field_paths(schema)  # current path -> id
        self.path_of = {fid: p for p, fid in self.current.items()}  # id -> current path
        self.kafkalog_of = {fid: p for p, fid in self.ids.items() if fid in self.path_of}

    def _refuse(self, path: str, why: str, renamed: bool = False) -> SchemaChangeError:
        back = "rename it back, or " if renamed else ""
        return SchemaChangeError(
            f"column {path} of {self.where} {why}; kafkalog writes each of its columns into "
            f"the field id it was created as and never adds one again as a new column: {back}"
            "convert into a new table (or replace this one with --mode overwrite)"
        )

    def check(self) -> None:
        """Refuse a table in which a kafkalog column was dropped and another field took its
        name (added again, or another field renamed to it)."""
        for path, fid in self.ids.items():
            if fid in self.path_of:
                continue
            other = self.current.get(self._current_parent(path))
            if other is not None and other not in self.kafkalog_of:
                raise self._refuse(
                    path,
                    f"(field id {fid}) was dropped by another writer and the table's "
                    f"{self._current_parent(path)} is now another field (id {other})",
                )

    def _current_parent(self, path: str) -> str:
        """``path`` with its parent's current path (its own last part as kafkalog names it)."""
        if "." not in path:
            return path
        parent, last = path.rsplit(".", 1)
        pid = self.ids.get(parent)
        return f"{self.path_of.get(pid, parent) if pid is not None else parent}.{last}"

    def id_of(self, path: str) -> int | None:
        """The field id kafkalog's column ``path`` writes into (None: a new field)."""
        fid = self.ids.get(path)
        if fid is not None:
            return fid if fid in self.path_of else None
        fid = self.current.get(self._current_parent(path))
        if fid is not None and fid not in self.kafkalog_of:
            return fid  # a field of that name (added by this run, or by another writer)
        return None

    def kafkalog_name(self, fid: int, current_name: str) -> str:
        """The name kafkalog's columns give the field ``fid`` (its own when not kafkalog's)."""
        p = self.kafkalog_of.get(fid)
        return p.rsplit(".", 1)[-1] if p is not None else current_name

    def as_kafkalog(self, arrow: pa.Schema) -> pa.Schema:
        """The table's current Arrow schema (``arrow``, field for field the Iceberg schema's)
        under kafkalog's names. Refuses (:meth:`check`) a table in which a column was dropped
        and its name taken by another field."""
        self.check()

        def rename(f: pa.Field, ice: Any) -> pa.Field:
            return pa.field(
                self.kafkalog_name(ice.field_id, f.name), typ(f.type, ice.field_type), True
            )

        def typ(t: pa.DataType, ice: Any) -> pa.DataType:
            kind = type(ice).__name__
            if pa.types.is_struct(t) and kind == "StructType":
                return pa.struct([rename(c, i) for c, i in zip(t, ice.fields, strict=True)])
            if (pa.types.is_list(t) or pa.types.is_large_list(t)) and kind == "ListType":
                return pa.list_(pa.field(t.value_field.name, typ(t.value_type, ice.element_type)))
            if pa.types.is_map(t) and kind == "MapType":
                return pa.map_(
                    pa.field(t.key_field.name, typ(t.key_type, ice.key_type), nullable=False),
                    pa.field(t.item_field.name, typ(t.item_type, ice.value_type)),
                )
            return t

        out = pa.schema([rename(f, i) for f, i in zip(arrow, self.schema.fields, strict=True)])
        self._unique(out, "")
        return out

    def _unique(self, fields: Any, path: str) -> None:
        """Refuse two fields of one name (kafkalog's column renamed and another field given its
        name)."""
        seen: set[str] = set()
        for f in fields:
            p = f"{path}.{f.name}" if path else f.name
            if f.name in seen:
                fid = self.ids.get(p)
                now = self.path_of.get(fid, p) if fid is not None else p
                raise self._refuse(
                    p,
                    f"(field id {fid}) was renamed to {now} by another writer, and another "
                    f"field is now named {p}",
                    renamed=True,
                )
            seen.add(f.name)
            if pa.types.is_struct(f.type):
                self._unique(list(f.type), p)

    def as_current(self, schema: pa.Schema) -> pa.Schema:
        """``schema`` (kafkalog's names) under the table's current names, for a schema update by
        name: a column kafkalog wrote keeps the field id it had. A column of ``schema`` that
        kafkalog wrote before and the table no longer has (dropped by another writer) is
        refused, naming it."""

        def field(f: pa.Field, path: str, retype: Callable[[], pa.DataType]) -> pa.Field:
            fid = self.ids.get(path)
            if fid is not None and fid not in self.path_of:
                raise self._refuse(path, f"(field id {fid}) was dropped by another writer")
            cur = self.path_of.get(fid) if fid is not None else None
            name = cur.rsplit(".", 1)[-1] if cur is not None else f.name
            return pa.field(name, retype(), f.nullable, f.metadata)

        return rebuild(schema, field)

    def written(self, schema: pa.Schema, new_schema: Any) -> dict[str, int]:
        """The map to record after a commit that wrote ``schema`` (kafkalog's names) into a
        table whose schema is now ``new_schema``: the old map and each new field's id."""
        after = FieldMap(new_schema, self.ids, self.where)
        out = dict(self.ids)

        def walk(t: pa.DataType, path: str) -> None:
            fid = out.get(path)
            if fid is None:
                fid = after.id_of(path)
                if fid is not None:
                    out[path] = fid
            if pa.types.is_struct(t):
                for c in t:
                    walk(c.type, f"{path}.{c.name}")
            elif pa.types.is_list(t):
                walk(t.value_type, f"{path}.element")
            elif pa.types.is_map(t):
                walk(t.key_type, f"{path}.key")
                walk(t.item_type, f"{path}.value")

        for f in schema:
            walk(f.type, f.name)
        return out


def _file_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(b"PARQUET:field_id")
    return int(raw) if raw is not None else None


def by_id(data: pa.Table, schema: Any, target: pa.Schema) -> pa.Table:
    """The rows of one data file (``data``, read with its Parquet field ids) as the Iceberg
    ``schema``'s columns, every field at every depth bound by field id: under ``target``'s
    names and types (``target`` is ``schema`` as Arrow, field for field); a field the file lacks
    is null. Values are kept as written (a null list stays null)."""
    columns = []
    for f, ice in zip(target, schema.fields, strict=True):
        i = _index_of(data.schema, ice.field_id)
        if i is None:
            columns.append(pa.nulls(data.num_rows, f.type))
            continue
        col = data.column(i).combine_chunks() if data.num_rows else None
        if col is None:
            columns.append(pa.array([], f.type))
            continue
        columns.append(_bind(col, data.schema.field(i).type, ice.field_type, f.type))
    return pa.Table.from_arrays(columns, schema=target)


def _index_of(fields: Any, fid: int) -> int | None:
    for i, f in enumerate(fields):
        if _file_id(f) == fid:
            return i
    return None


def _bind(arr: pa.Array, file_t: pa.DataType, ice: Any, t: pa.DataType) -> pa.Array:
    """``arr`` (the file's type ``file_t``) as ``t``, nested fields bound by the ids of the
    Iceberg type ``ice``."""
    kind = type(ice).__name__
    mask = arr.is_null() if arr.null_count else None
    if kind == "StructType" and pa.types.is_struct(file_t):
        file_fields = list(file_t)
        children = []
        for tf, ic in zip(t, ice.fields, strict=True):
            j = _index_of(file_fields, ic.field_id)
            if j is None:
                children.append(pa.nulls(len(arr), tf.type))
            else:
                children.append(_bind(arr.field(j), file_fields[j].type, ic.field_type, tf.type))
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if kind == "ListType" and (pa.types.is_list(file_t) or pa.types.is_large_list(file_t)):
        values = _bind(arr.values, file_t.value_type, ice.element_type, t.value_type)
        offsets = arr.offsets.cast(pa.int32()) if pa.types.is_list(t) else arr.offsets
        return pa.ListArray.from_arrays(offsets, values, type=t, mask=mask)
    if kind == "MapType" and pa.types.is_map(file_t):
        keys = _bind(arr.keys, file_t.key_type, ice.key_type, t.key_type)
        items = _bind(arr.items, file_t.item_type, ice.value_type, t.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=t, mask=mask)
    return arr if arr.type == t else arr.cast(t)


def to_json(ids: Mapping[str, int]) -> str:
    """The recorded form of a map (``kafkalog.fields``)."""
    return json.dumps(dict(sorted(ids.items())), separators=(",", ":"))


__all__ = [
    "FIELDS",
    "FieldMap",
    "by_id",
    "field_paths",
    "from_history",
    "kafkalog_ids",
    "nested_renamed",
    "recorded",
    "renamed",
    "to_json",
]
