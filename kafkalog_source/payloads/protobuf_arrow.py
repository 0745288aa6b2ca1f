"""Protobuf messages as Arrow: the type of each message and field (see :mod:`.protobuf`'s
table), and converters that build one Arrow array from a list of parsed messages, checking
what a type's range allows before converting (a ``google.protobuf.Timestamp`` outside years 1 to
9999, a value with no ProtoJSON text raise :class:`Misfit`, naming the field)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

TIMESTAMP = "google.protobuf.Timestamp"
JSON_TYPES = frozenset(
    {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
)
WRAPPERS = frozenset(
    f"google.protobuf.{n}Value"
    for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)


def is_repeated(f: Any) -> bool:
    """Whether field descriptor ``f`` is repeated (protobuf >= 6: ``is_repeated``; ``label``
    before, gone in 7)."""
    rep = getattr(f, "is_repeated", None)
    return bool(f.label == 3 if rep is None else rep)


SPECIAL = WRAPPERS | JSON_TYPES | {TIMESTAMP}
_SCALARS: dict[int, pa.DataType] = {
    1: pa.float64(),
    2: pa.float32(),
    3: pa.int64(),
    4: pa.decimal128(20, 0),
    5: pa.int32(),
    6: pa.decimal128(20, 0),
    7: pa.int64(),
    8: pa.bool_(),
    9: pa.string(),
    12: pa.binary(),
    13: pa.int64(),
    15: pa.int32(),
    16: pa.int64(),
    17: pa.int32(),
    18: pa.int64(),
}


def to_proto_json(m: Any) -> str:
    from google.protobuf import json_format

    d = json_format.MessageToDict(
        m,
        always_print_fields_with_no_presence=True,
        preserving_proto_field_name=True,
        descriptor_pool=m.DESCRIPTOR.file.pool,
        unquote_int64_if_possible=True,
    )
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


class Misfit(ValueError):
    """A value that parsed but does not fit its column (``path`` names the field)."""

    def __init__(self, why: str, path: str = "") -> None:
        self.why = why
        self.path = path
        super().__init__(f"field {path}: {why}" if path else why)

    def under(self, name: str) -> Misfit:
        """The same error one message further out."""
        return Misfit(self.why, f"{name}.{self.path}" if self.path else name)


# google/protobuf/timestamp.proto: "Range is from 0001-01-01T00:00:00Z to
# 9999-12-31T23:59:59.999999999Z", nanos in [0, 999999999] (json_format refuses others too)
TIMESTAMP_SECONDS = (-62_135_596_800, 253_402_300_799)


class Conv:
    """Turns a list of Python values (messages, scalars or None) into one Arrow array; raises
    :class:`Misfit` for a value that does not fit it."""

    type: pa.DataType

    def build(self, values: list[Any]) -> pa.Array:
        raise NotImplementedError


class _Scalar(Conv):
    def __init__(self, t: pa.DataType) -> None:
        self.type = t

    def build(self, values: list[Any]) -> pa.Array:
        return pa.array(values, type=self.type)


class _Enum(Conv):
    type = pa.string()

    def __init__(self, enum: Any) -> None:
        self.names = {v.number: v.name for v in enum.values}

    def build(self, values: list[Any]) -> pa.Array:
        names = self.names
        return pa.array(
            [None if v is None else names.get(v, str(v)) for v in values], type=pa.string()
        )


class _Json(Conv):
    type = pa.string()

    def build(self, values: list[Any]) -> pa.Array:
        out = []
        for m in values:
            try:
                out.append(None if m is None else to_proto_json(m))
            except Exception as e:  # json_format's SerializeToJsonError, a NaN in a Value, ...
                raise Misfit(f"no ProtoJSON text: {e}") from None
        return pa.array(out, type=pa.string())


class _Timestamp(Conv):
    type = pa.timestamp("us", tz="UTC")

    def build(self, values: list[Any]) -> pa.Array:
        lo, hi = TIMESTAMP_SECONDS
        for m in values:
            if m is not None and not (lo <= m.seconds <= hi and 0 <= m.nanos <= 999_999_999):
                raise Misfit(
                    f"a google.protobuf.Timestamp of seconds {m.seconds} and nanos {m.nanos} "
                    "is out of its range (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z)"
                )
        return pa.array(
            [None if m is None else m.seconds * 1_000_000 + m.nanos // 1000 for m in values],
            type=pa.int64(),
        ).cast(self.type)


class _Wrapper(Conv):
    def __init__(self, inner: Conv) -> None:
        self.inner = inner
        self.type = inner.type

    def build(self, values: list[Any]) -> pa.Array:
        return self.inner.build([None if m is None else m.value for m in values])


@dataclass
class _Field:
    name: str
    conv: Conv
    repeated: bool
    is_map: bool
    presence: bool
    key: Conv | None = None  # maps: keys (to strings)


class _Message(Conv):
    def __init__(self, fields: list[_Field]) -> None:
        self.fields = fields
        self.type = pa.struct([pa.field(f.name, _field_type(f)) for f in fields])

    def build(self, values: list[Any]) -> pa.Array:
        mask = None
        if any(m is None for m in values):
            mask = pa.array([m is None for m in values], type=pa.bool_())
        if not self.fields:
            return pa.array([None if m is None else {} for m in values], type=self.type)
        children = [_build_field(f, values) for f in self.fields]
        return pa.StructArray.from_arrays(children, fields=list(self.type), mask=mask)


def _field_type(f: _Field) -> pa.DataType:
    if f.is_map:
        return pa.map_(pa.string(), f.conv.type)
    if f.repeated:
        return pa.list_(f.conv.type)
    return f.conv.type


def _map_key(k: Any) -> str:
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)


def _build_field(f: _Field, msgs: list[Any]) -> pa.Array:
    try:
        return _build_field_values(f, msgs)
    except Misfit as e:
        raise e.under(f.name) from None


def _build_field_values(f: _Field, msgs: list[Any]) -> pa.Array:
    name = f.name
    if not f.repeated:
        if f.presence:
            vals = [None if m is None or not m.HasField(name) else getattr(m, name) for m in msgs]
        else:
            vals = [None if m is None else getattr(m, name) for m in msgs]
        return f.conv.build(vals)
    offsets = np.zeros(len(msgs) + 1, dtype=np.int32)
    flat: list[Any] = []
    keys: list[str] = []
    for i, m in enumerate(msgs):
        if m is not None:
            seq = getattr(m, name)
            if f.is_map:
                for k in seq:
                    keys.append(_map_key(k))
                    flat.append(seq[k])
            else:
                flat.extend(seq)
        offsets[i + 1] = len(flat)
    mask = None
    if any(m is None for m in msgs):
        mask = pa.array([m is None for m in msgs], type=pa.bool_())
    items = f.conv.build(flat)
    if f.is_map:
        return pa.MapArray.from_arrays(
            pa.array(offsets), pa.array(keys, type=pa.string()), items, mask=mask
        )
    return pa.ListArray.from_arrays(pa.array(offsets), items, mask=mask)


def converter(desc: Any) -> Conv:
    """The converter (and so the Arrow type) of message ``desc``; see the module's table."""

    def message(d: Any, stack: tuple[str, ...]) -> Conv:
        if d.full_name == TIMESTAMP:
            return _Timestamp()
        if d.full_name in JSON_TYPES or d.full_name in stack:
            return _Json()
        if d.full_name in WRAPPERS:
            return _Wrapper(field_conv(d.fields_by_name["value"], stack))
        stack = (*stack, d.full_name)
        fields = []
        for f in d.fields:
            mt = f.message_type
            if mt is not None and mt.GetOptions().map_entry:
                fields.append(
                    _Field(
                        f.name,
                        field_conv(mt.fields_by_name["value"], stack),
                        repeated=True,
                        is_map=True,
                        presence=False,
                    )
                )
                continue
            rep = is_repeated(f)
            fields.append(
                _Field(
                    f.name,
                    field_conv(f, stack),
                    repeated=rep,
                    is_map=False,
                    presence=not rep and bool(f.has_presence),
                )
            )
        return _Message(fields)

    def field_conv(f: Any, stack: tuple[str, ...]) -> Conv:
        if f.type in (10, 11):
            return message(f.message_type, stack)
        if f.type == 14:
            return _Enum(f.enum_type)
        return _Scalar(_SCALARS[f.type])

    return message(desc, ())
