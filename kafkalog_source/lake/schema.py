"""A table's columns from the read's: relaxed, checked against the format, merged as the read's
schema evolves, and each record batch conformed to the table's schema before it is written.

Every column of a table kafkalog writes is nullable, nested fields too: a field a later version
of a payload schema removes (Avro's schema evolution) stays in the table, null in new rows, and
both formats can add a nullable field but not a required one. ``null``-typed columns (a plain
JSON field that was null in every sampled value) become strings, which neither format lacks.

Evolution (:func:`merge`), field by field, by name: a field the read no longer has stays; a new
field is added at the end of its struct (Iceberg gives it a new field id, the old ids do not
change); a field whose type is narrower in the read than in the table keeps the table's type
(its values are widened as they are written); a wider type is taken where the format can widen
the column (Iceberg: ``int`` to ``long``, ``float`` to ``double``, a decimal's precision up;
Delta tables as the ``deltalake`` package writes them: none), and any other change is refused
(:class:`~.spec.SchemaChangeError`) naming the column, both types and, for decoded payload
columns, the subject and versions that typed them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from .spec import SchemaChangeError, TableError

# ints by width (Arrow's signed types); Iceberg has int (32) and long (64)
_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def relaxed(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable, at every depth, and ``null`` types as strings."""
    return pa.schema([_relax_field(f) for f in schema], metadata=None)


def _relax_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, _relax_type(f.type), nullable=True)


def _relax_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_null(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([_relax_field(c) for c in t])
    if pa.types.is_map(t):
        key = pa.field(t.key_field.name, _relax_type(t.key_type), nullable=False)
        return pa.map_(key, _relax_field(t.item_field))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        make = pa.list_ if pa.types.is_list(t) else pa.large_list
        return make(_relax_field(t.value_field))
    return t


_UNSUPPORTED = {
    "iceberg": (
        pa.types.is_dictionary,
        pa.types.is_union,
        pa.types.is_duration,
        pa.types.is_interval,
        pa.types.is_float16,
        pa.types.is_uint64,
    ),
    "delta": (
        pa.types.is_dictionary,
        pa.types.is_union,
        pa.types.is_duration,
        pa.types.is_interval,
        pa.types.is_float16,
        pa.types.is_unsigned_integer,
        pa.types.is_time,
    ),
}


def check_types(schema: pa.Schema, fmt: str) -> None:
    """Raise :class:`~.spec.TableError` naming the first column whose type ``fmt`` cannot
    store."""
    bad = _UNSUPPORTED[fmt]

    def walk(t: pa.DataType, path: str) -> None:
        if any(test(t) for test in bad):
            raise TableError(
                f"column {path} has the type {t}, which {fmt.capitalize()} tables cannot hold; "
                "leave it out of the read (a narrower valueFormat/keyFormat reader schema, or "
                "payloadAs=json)"
            )
        if pa.types.is_struct(t):
            for c in t:
                walk(c.type, f"{path}.{c.name}")
        elif pa.types.is_map(t):
            walk(t.key_type, f"{path}.key")
            walk(t.item_type, f"{path}.value")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_type, f"{path}.element")

    for f in schema:
        walk(f.type, f.name)


def _widen(fmt: str, old: pa.DataType, new: pa.DataType) -> pa.DataType | None:
    """The type a column of ``old`` takes for values of ``new``: ``old`` when ``new`` is
    narrower (its values are widened when written), ``new`` when ``fmt`` can widen the column to
    it, None when neither holds."""
    if old in _INT_BITS and new in _INT_BITS:
        if _INT_BITS[new] <= _INT_BITS[old]:
            return old
        if fmt == "iceberg" and _INT_BITS[old] <= 32 and _INT_BITS[new] <= 32:
            return new  # one Iceberg int: the data files hold int32 either way
        if fmt == "iceberg" and new == pa.int64():
            return new
        return None
    if pa.types.is_floating(old) and pa.types.is_floating(new):
        if new.bit_width <= old.bit_width:
            return old
        return new if fmt == "iceberg" else None
    if pa.types.is_decimal(old) and pa.types.is_decimal(new) and old.scale == new.scale:
        if new.precision <= old.precision:
            return old
        if fmt == "iceberg" and new.precision <= 38:
            return pa.decimal128(new.precision, new.scale)
    return None


def _describe(origin: Mapping[str, Any] | None) -> str:
    if not origin or origin.get("subject") is None:
        return ""
    text = f"subject {origin['subject']} version {origin.get('version')}"
    if origin.get("id") is not None:
        text += f", schema id {origin['id']}"
    return text


def merge(
    table: pa.Schema,
    read: pa.Schema,
    fmt: str,
    old_origins: Mapping[str, Mapping[str, Any]] | None = None,
    new_origins: Mapping[str, Mapping[str, Any]] | None = None,
) -> pa.Schema:
    """The table's schema after a run that reads ``read`` (both relaxed, see :func:`relaxed`).

    ``old_origins`` and ``new_origins`` say, per decoded payload column (``value_decoded``),
    which subject, version and schema id typed it in the table and in this read; a refusal names
    them. Raises :class:`~.spec.SchemaChangeError`."""
    fields = []
    incoming = {f.name: f for f in read}
    for f in table:
        if f.name not in incoming:
            fields.append(f)
            continue
        top = f.name
        t = _merge_type(
            f.type,
            incoming[f.name].type,
            f.name,
            fmt,
            (old_origins or {}).get(top),
            (new_origins or {}).get(top),
        )
        fields.append(pa.field(f.name, t, nullable=True))
    known = {f.name for f in table}
    fields += [f for f in read if f.name not in known]
    return pa.schema(fields)


def _merge_type(
    old: pa.DataType,
    new: pa.DataType,
    path: str,
    fmt: str,
    old_origin: Mapping[str, Any] | None,
    new_origin: Mapping[str, Any] | None,
) -> pa.DataType:
    if old == new:
        return old
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        have = {c.name: c for c in new}
        out = []
        for c in old:
            if c.name in have:
                t = _merge_type(
                    c.type, have[c.name].type, f"{path}.{c.name}", fmt, old_origin, new_origin
                )
                out.append(pa.field(c.name, t, nullable=True))
            else:
                out.append(c)
        names = {c.name for c in old}
        out += [c for c in new if c.name not in names]
        return pa.struct(out)
    if pa.types.is_list(old) and pa.types.is_list(new):
        item = _merge_type(
            old.value_type, new.value_type, f"{path}.element", fmt, old_origin, new_origin
        )
        return pa.list_(pa.field(old.value_field.name, item, nullable=True))
    if pa.types.is_map(old) and pa.types.is_map(new):
        key = _merge_type(old.key_type, new.key_type, f"{path}.key", fmt, old_origin, new_origin)
        item = _merge_type(
            old.item_type, new.item_type, f"{path}.value", fmt, old_origin, new_origin
        )
        return pa.map_(
            pa.field(old.key_field.name, key, nullable=False),
            pa.field(old.item_field.name, item, nullable=True),
        )
    wider = _widen(fmt, old, new)
    if wider is not None:
        return wider
    was, now = _describe(old_origin), _describe(new_origin)
    if was and now and was != now:
        whence = f" (the table's type from {was}; this read's from {now})"
    elif now:
        whence = f" ({now})"
    else:
        whence = ""
    allowed = (
        "Iceberg widens only int to long, float to double and a decimal's precision"
        if fmt == "iceberg"
        else "Delta tables written by the deltalake package cannot change a column's type"
    )
    raise SchemaChangeError(
        f"column {path} is {old} in the table but {new} in this read{whence}: {allowed}; "
        "convert into a new table (or replace this one with --mode overwrite)"
    )


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns, in its order: missing columns and struct fields
    null, narrower types widened, every field nullable."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    n = batch.num_rows
    arrays = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        arr = batch.column(i) if i >= 0 else pa.nulls(n, f.type)
        arrays.append(_conform_array(arr, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _conform_array(arr: pa.Array, t: pa.DataType) -> pa.Array:
    if arr.type == t:
        return arr
    try:
        return arr.cast(t)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        if not pa.types.is_struct(t) or not pa.types.is_struct(arr.type):
            raise
    # an older pyarrow that casts structs only field for field: rebuild it
    names = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    children = [
        _conform_array(arr.field(names[c.name]), c.type)
        if c.name in names
        else pa.nulls(len(arr), c.type)
        for c in t
    ]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)


__all__ = ["check_types", "conform", "merge", "relaxed"]
