"""Avro values in the Schema Registry wire format, decoded into one Arrow type.

:class:`AvroDecoder` decodes every value with its writer schema (the id in its wire-format
prefix, looked up in the registry) resolved into one reader schema, following Avro's schema
resolution rules (fields matched by name or alias, writer-only fields skipped, reader-only fields
filled from their defaults, int -> long -> float -> double and string <-> bytes promotions, enum
symbols by name with the reader's enum default, unions branch by branch).

Arrow types (Spark-compatible, see :func:`arrow_type`): records -> struct, arrays -> list, maps
-> map<string, T>, enums -> string, fixed -> binary, ``[null, T]`` -> a nullable T, other
unions -> struct<member0, member1, ...> over the non-null branches as Spark's ``from_avro`` names
them (``[int, long]`` -> int64 and ``[float, double]`` -> float64, as Spark merges them), a
``null`` schema -> Arrow null (Spark's NullType). Logical types: decimal -> decimal128(p, s)
(precision <= 38), date -> date32, time-millis -> int32 (milliseconds), time-micros -> int64
(microseconds), timestamp-millis/micros -> timestamp[us, UTC], local-timestamp-millis/micros
-> timestamp[us], uuid -> string; others are their underlying type.

Two paths compute the same columns:

* the compiled path (:mod:`kafkalog_source.kernel.avro`): each (writer, reader) pair compiles
  into a flat program that one numba kernel interprets over the whole column, appending into
  column buffers that become Arrow arrays without a Python object per value. It supports every
  reader schema that has an Arrow type here (a recursive one has none: use ``as_json``) and
  every writer schema but a recursive one (a writer whose recursive field the reader dropped):
  a batch holding such a writer id takes the reference path.

Where the paths differ, on bad data only: the kernel rejects an ``int`` beyond 32 bits (fastavro
reads it), keeps a map's duplicate keys as Arrow entries (fastavro's dict keeps the last), and
does not parse uuid strings (fastavro does, and fails on a malformed one).
* the reference path: ``fastavro.schemaless_reader`` per value, then ``pa.array``. It is used
  for ``as_json=True`` and when ``KAFKALOG_AVRO_KERNEL=0`` (and is what the tests compare the
  kernel with).

With ``as_json=True`` the type is ``pa.string()`` and each value is decoded with its own writer
schema (no reader) into a JSON document: records and maps as objects (field names as in the
schema), arrays as arrays, unions as the plain value of their branch (no ``{"type": value}``
wrapper), enums as their symbol, bytes and fixed as base64 text, decimals as strings of their
exact digits (``"12.30"``), dates as ``"YYYY-MM-DD"``, timestamps as ISO 8601 (``...Z`` for UTC
ones, no offset for local ones), time-millis/micros as ``"HH:MM:SS.ffffff"``, uuid as text, and
non-finite floats as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

Bad data never raises: a value without the wire-format prefix, an id the registry does not
have, an id of another schema type, bytes that do not parse under their writer schema (or leave
bytes after the value) and a value that cannot be resolved into the reader schema come back as
:class:`PayloadError` rows (the value null).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import math
import os
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import fastavro
import numpy as np
import pyarrow as pa

from ..format.registry import WIRE_PREFIX
from ..kernel import avro as K
from .avro_program import NoProgram, Program, min_size, run
from .avro_schema import (
    Node,
    ParsedSchema,
    SchemaError,
    arrow_type,
    non_null,
    parse_registered,
    reader_branch,
    union_shape,
)
from .codec import (
    NO_PREFIX,
    Decoded,
    PayloadDecoder,
    PayloadError,
    held_by,
    registered,
    split_wire,
)

if TYPE_CHECKING:  # the registry helper writes these; decoders only use their documented API
    from ..format.registry import RegisteredSchema, Registry

UTC = datetime.timezone.utc

# ------------------------------------------------------------------------ reference (fastavro)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_US = datetime.timedelta(microseconds=1)


def _micros(v: Any, logical: str | None) -> int:
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        return (v - _EPOCH) // _US
    if logical is not None and logical.endswith("millis"):
        return int(v) * 1000
    return int(v)


def _time_value(v: Any, unit: int) -> int:
    if isinstance(v, datetime.time):
        us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return us // unit
    return int(v)


def _signed_be(b: bytes) -> int:
    n = int(b.hex() or "0", 16)
    return n - (1 << (8 * len(b))) if b and b[0] & 0x80 else n


def converter(node: Node) -> Callable[[Any], Any]:
    """A function from fastavro's Python value (read with ``return_named_type=True``) of the
    reader schema ``node`` to the Python value ``pa.array`` takes for :func:`arrow_type`."""
    k, lg = node.kind, node.logical

    def same(v: Any) -> Any:
        return v

    if k in ("null", "boolean", "bytes", "fixed") and lg != "decimal":
        return same
    if k == "int":
        if lg == "date":
            return lambda v: (v - _EPOCH_DATE).days if isinstance(v, datetime.date) else int(v)
        if lg == "time-millis":
            return lambda v: _time_value(v, 1000)
        return same
    if k == "long":
        if lg is not None and "timestamp" in lg:
            return lambda v: _micros(v, lg)
        if lg == "time-micros":
            return lambda v: _time_value(v, 1)
        return same
    if k in ("float", "double"):
        return float
    if k in ("string", "enum"):
        return lambda v: v.decode() if isinstance(v, bytes) else str(v)
    if lg == "decimal":
        scale = node.scale

        def dec(v: Any) -> Any:
            if isinstance(v, (bytes, bytearray)):
                return decimal.Decimal(_signed_be(bytes(v))).scaleb(-scale)
            return v

        return dec
    if k == "array":
        assert node.items is not None
        item = converter(node.items)
        return lambda v: [item(x) for x in v]
    if k == "map":
        assert node.items is not None
        value = converter(node.items)
        return lambda v: [(key, value(x)) for key, x in v.items()]
    if k == "record":
        convs = [(f.name, converter(f.node)) for f in node.fields]
        return lambda v: {name: c(v.get(name)) for name, c in convs}
    # a union
    shape = union_shape(node)
    nn = non_null(node)
    if shape == "null":
        return lambda v: None
    convs = [converter(b) for b in nn]
    if shape in ("single", "merged"):
        c0 = (
            convs[0] if shape == "single" else (float if nn[0].kind in ("float", "double") else int)
        )

        def single(v: Any) -> Any:
            if v is None:
                return None
            return c0(v[1] if isinstance(v, tuple) else v)

        return single
    names = [f"member{i}" for i in range(len(nn))]

    def pick(v: Any) -> Any:
        if v is None:
            return None
        i = _branch_of(nn, v)
        out = dict.fromkeys(names)
        out[names[i]] = convs[i](v[1] if isinstance(v, tuple) else v)
        return out

    return pick


def _branch_of(branches: list[Node], v: Any) -> int:
    """Which branch of a reader union fastavro's value came from (named types come as a
    ``(name, value)`` tuple; the others are told apart by their Python type)."""
    if isinstance(v, tuple):
        for i, b in enumerate(branches):
            if b.name == v[0]:
                return i
        raise ValueError(f"no union branch named {v[0]}")
    for i, b in enumerate(branches):
        if _python_fits(b, v):
            return i
    raise ValueError(f"no union branch for a {type(v).__name__} value")


def _python_fits(b: Node, v: Any) -> bool:
    k, lg = b.kind, b.logical
    if isinstance(v, bool):
        return k == "boolean"
    if isinstance(v, datetime.datetime):
        return k == "long" and lg is not None and "timestamp" in lg
    if isinstance(v, datetime.date):
        return k == "int" and lg == "date"
    if isinstance(v, datetime.time):
        return lg in ("time-millis", "time-micros")
    if isinstance(v, decimal.Decimal):
        return lg == "decimal"
    if isinstance(v, uuid.UUID):
        return k == "string"
    if isinstance(v, int):
        return k in ("int", "long") and lg is None
    if isinstance(v, float):
        return k in ("float", "double")
    if isinstance(v, str):
        return k == "string"
    if isinstance(v, (bytes, bytearray)):
        return k == "bytes" and lg is None
    if isinstance(v, list):
        return k == "array"
    if isinstance(v, dict):
        return k == "map"
    return False


def to_json(v: Any) -> Any:
    """fastavro's Python value as a JSON-able value (the shape the module docstring gives)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return v.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"
        return v.isoformat()
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    return str(v)  # uuid.UUID


# -------------------------------------------------------------------------------- the decoder


class _Unusable(Exception):
    """A writer schema id that no value can be decoded with (the reason is the message)."""


class AvroDecoder(PayloadDecoder):
    """Avro values of the Schema Registry wire format -> one Arrow type (see the module).

    ``registry`` answers ``by_id``, ``version`` and ``referenced`` (format/registry.py's API);
    ``reader`` is the schema every value is resolved into (required unless ``as_json``).
    """

    def __init__(
        self, registry: Registry, reader: RegisteredSchema | None, as_json: bool = False
    ) -> None:
        self.registry = registry
        self.reader = reader
        self.as_json = as_json
        self._writers: dict[int, ParsedSchema | _Unusable] = {}
        self._where_cache: dict[int, str] = {}
        self._program: Program | None = None
        self.use_kernel = os.environ.get("KAFKALOG_AVRO_KERNEL", "1") != "0"
        """Whether :meth:`decode` takes the compiled path (else the fastavro reference)."""
        if as_json:
            self.type = pa.string()
            self._reader: ParsedSchema | None = None
            return
        if reader is None:
            raise SchemaError("an Avro reader schema is needed unless the values decode as JSON")
        if reader.schema_type.upper() != "AVRO":
            raise SchemaError(f"schema id {reader.id} is a {reader.schema_type} schema, not AVRO")
        self._reader = parse_registered(registry, reader)
        self.type = arrow_type(self._reader.node)
        self._convert = converter(self._reader.node)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_writers"] = {}  # parsed schemas and compiled programs are rebuilt on demand
        state.pop("_convert", None)
        state["_program"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._reader is not None:
            self._convert = converter(self._reader.node)

    # -- writer schemas and error texts

    def where(self, schema_id: int) -> str:
        """`` (subject s version v)`` for an id (:func:`.codec.held_by`), cached per id."""
        if schema_id not in self._where_cache:
            self._where_cache[schema_id] = held_by(self.registry, schema_id)
        return self._where_cache[schema_id]

    def writer(self, schema_id: int) -> ParsedSchema:
        """The parsed writer schema of an id; :class:`_Unusable` (with the row error's reason)
        when the registry has no Avro schema under it."""
        got = self._writers.get(schema_id)
        if got is None:
            rs, why = registered(self.registry, schema_id, "AVRO")
            if why is not None:
                got = _Unusable(why)
            else:
                try:
                    got = parse_registered(self.registry, rs)
                except SchemaError as e:
                    got = _Unusable(f"schema id {schema_id}{self.where(schema_id)} {e}")
            self._writers[schema_id] = got
        if isinstance(got, _Unusable):
            raise got
        return got

    def parse_reason(self, schema_id: int, why: str) -> str:
        """The reason of a value that does not parse under its writer schema."""
        return f"does not parse as Avro with schema id {schema_id}{self.where(schema_id)}: {why}"

    def resolve_reason(self, schema_id: int, why: str) -> str:
        """The reason of a value that does not resolve into the reader schema (as_json: that
        has no JSON text)."""
        if self.reader is None:
            return (
                f"schema id {schema_id}{self.where(schema_id)}: the value has no JSON text: {why}"
            )
        return (
            f"schema id {schema_id}{self.where(schema_id)} cannot be resolved into the reader "
            f"schema (id {self.reader.id}): {why}"
        )

    # -- decoding

    def decode(self, data: pa.Array) -> Decoded:
        """Decode a binary column of wire-format Avro values (see :class:`PayloadDecoder`)."""
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        if not (pa.types.is_binary(data.type) or pa.types.is_large_binary(data.type)):
            data = data.cast(pa.binary())
        ids, has_prefix, is_null = split_wire(data)
        schema_ids = pa.array(ids, pa.int64(), mask=~has_prefix).cast(pa.int32())
        if self.use_kernel and not self.as_json:
            values, errors = self.decode_compiled(data, ids, has_prefix, is_null)
        else:
            values, errors = self.decode_reference(data, ids, has_prefix, is_null)
        return Decoded(schema_ids, values, errors)

    def decode_compiled(
        self, data: pa.Array, ids: np.ndarray, has_prefix: np.ndarray, is_null: np.ndarray
    ) -> tuple[pa.Array, list[PayloadError]]:
        """The compiled path: each writer id's program run by the kernel over the column (see
        :mod:`.avro_program`); the fastavro path for a batch with a writer schema the kernel
        cannot run (a recursive one)."""
        assert self._reader is not None
        if self._program is None:
            self._program = Program(self._reader.node)
        n = len(data)
        entry = np.full(n, K.ENTRY_ERROR, np.int64)
        entry[is_null] = K.ENTRY_NULL
        known: list[PayloadError] = [
            PayloadError(int(i), None, NO_PREFIX) for i in np.flatnonzero(~has_prefix & ~is_null)
        ]
        for sid in np.unique(ids[has_prefix]).tolist():
            rows = np.flatnonzero(has_prefix & (ids == sid))
            try:
                pc = self._program.compile(sid, self.writer(sid).node)
            except _Unusable as e:
                known += [PayloadError(int(i), sid, str(e)) for i in rows]
                continue
            except NoProgram:
                return self.decode_reference(data, ids, has_prefix, is_null)
            entry[rows] = pc
        if pa.types.is_large_binary(data.type) or pa.types.is_binary(data.type):
            out = run(self._program, data, entry)
        else:
            out = run(self._program, data.cast(pa.binary()), entry)
        errors = known
        for i in np.flatnonzero(out.code).tolist():
            sid = int(ids[i])
            errors.append(PayloadError(i, sid, self._kernel_reason(sid, out, i, data)))
        errors.sort(key=lambda e: e.row)
        return out.values, errors

    def _kernel_reason(self, sid: int, out: Any, i: int, data: pa.Array) -> str:
        prog = self._program
        assert prog is not None
        code, arg, pc = int(out.code[i]), int(out.arg[i]), int(out.pc[i])
        pos = int(out.pos[i])
        where = "" if pos < 0 else f" at byte {pos + WIRE_PREFIX}"
        path = prog.paths[prog.ops[pc][6]] if pc < len(prog.ops) else ""
        field_ = f" (field {path})" if path else ""
        size = len(data[i].as_py())
        if code == K.E_RESOLVE:
            return self.resolve_reason(sid, prog.messages[arg])
        if code == K.E_ENUM_UNRESOLVED:
            writer = self.writer(sid).node
            sym = _enum_symbol(writer, path, arg)
            return self.resolve_reason(
                sid,
                f"{path or 'the value'}: the symbol {sym} is not in the reader's enum and "
                "it has no default",
            )
        if code == K.E_DECIMAL:
            return self.resolve_reason(
                sid, f"{path or 'the value'}: a decimal of {arg} bytes does not fit its reader type"
            )
        if code == K.E_OVERFLOW:
            return self.resolve_reason(
                sid, f"{path or 'the value'}: {arg} milliseconds are out of the microsecond range"
            )
        why = {
            K.E_TRUNCATED: f"the value ends early ({size} bytes)",
            K.E_VARINT: "a varint is longer than 10 bytes",
            K.E_INT_RANGE: f"the int {arg} is out of the 32-bit range",
            K.E_LENGTH: f"negative length {arg}",
            K.E_UTF8: f"a string is not valid UTF-8 (byte {arg} of the string)",
            K.E_BRANCH: f"union branch {arg} does not exist",
            K.E_ENUM: f"enum index {arg} does not exist",
            K.E_BLOCK: f"an array or map block of {arg} items does not fit in the value",
            K.E_TRAILING: f"{arg} bytes remain after the value",
            K.E_BOOL: f"a boolean is the byte {arg} (Avro's booleans are the bytes 0 and 1)",
        }.get(code, f"kernel status {code}")
        return self.parse_reason(sid, f"{why}{where}{field_}")

    def decode_reference(
        self, data: pa.Array, ids: np.ndarray, has_prefix: np.ndarray, is_null: np.ndarray
    ) -> tuple[pa.Array, list[PayloadError]]:
        """The fastavro path: one ``schemaless_reader`` call per value, then ``pa.array``."""
        values: list[Any] = []
        errors: list[PayloadError] = []
        reader = None if self._reader is None else self._reader.parsed
        for i, raw in enumerate(data):
            if is_null[i]:
                values.append(None)
                continue
            if not has_prefix[i]:
                values.append(None)
                errors.append(PayloadError(i, None, NO_PREFIX))
                continue
            sid = int(ids[i])
            try:
                value = self._read_one(raw.as_py(), sid, reader)
            except _RowError as e:
                values.append(None)
                errors.append(PayloadError(i, sid, str(e)))
                continue
            values.append(value)
        try:
            return pa.array(values, type=self.type), errors
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            pass
        out = []  # some value does not fit its Arrow type (a decimal's precision, say): which
        bad: dict[int, str] = {}
        for i, v in enumerate(values):
            try:
                pa.array([v], type=self.type)
                out.append(v)
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                out.append(None)
                sid = int(ids[i])
                bad[i] = self.resolve_reason(sid, f"the value does not fit {self.type}: {e}")
        errors += [PayloadError(i, int(ids[i]), r) for i, r in bad.items()]
        errors.sort(key=lambda e: e.row)
        return pa.array(out, type=self.type), errors

    def _raw_bytes(self, v: bytes, sid: int) -> Any:
        """A value of a top-level ``bytes`` writer schema: Confluent's serializers write its
        bytes as they are (no Avro length), and their deserializers read them so."""
        if self._reader is None:
            return v
        r = self._reader.node
        if r.kind == "union":
            i = reader_branch(Node("bytes"), r)
            if i is None:
                raise _RowError(self.resolve_reason(sid, "no reader union branch takes bytes"))
            r = r.branches[i]
        if r.kind == "string":
            return v.decode()
        if r.kind != "bytes":
            raise _RowError(self.resolve_reason(sid, f"bytes do not resolve into {r.kind}"))
        return v

    def _read_one(self, raw: bytes, sid: int, reader: Any) -> Any:
        try:
            writer = self.writer(sid)
        except _Unusable as e:
            raise _RowError(str(e)) from None
        payload = memoryview(raw)[WIRE_PREFIX:]
        if writer.node.kind != "bytes":
            try:  # before fastavro, which trusts block counts: a 13-byte value could fill RAM
                check_bounds(writer.node, payload)
            except _Bounds as e:
                raise _RowError(self.parse_reason(sid, str(e))) from None
        buf = io.BytesIO(payload)
        try:
            if writer.node.kind == "bytes":
                v = self._raw_bytes(bytes(payload), sid)
                buf.seek(len(payload))
            elif self.as_json:
                v = fastavro.schemaless_reader(buf, writer.parsed, None)
            else:
                v = fastavro.schemaless_reader(buf, writer.parsed, reader, return_named_type=True)
        except fastavro.read.SchemaResolutionError as e:
            raise _RowError(self.resolve_reason(sid, str(e))) from None
        except Exception as e:
            why = str(e) or type(e).__name__
            if isinstance(e, (EOFError, IndexError)) or "EOF" in why:
                why = f"the value ends early ({len(payload)} bytes): {why}"
            raise _RowError(self.parse_reason(sid, why)) from None
        left = len(payload) - buf.tell()
        if left:
            raise _RowError(self.parse_reason(sid, f"{left} bytes remain after the value"))
        if self.as_json:
            return json.dumps(to_json(v), ensure_ascii=False, separators=(",", ":"))
        try:
            return self._convert(v)
        except Exception as e:
            raise _RowError(self.resolve_reason(sid, f"{type(e).__name__}: {e}")) from None


def _enum_symbol(node: Node, path: str, index: int) -> str:
    """The name of symbol ``index`` of the writer enum at a field path (for an error)."""
    n: Node | None = node
    for part in [p for p in path.split(".") if p]:
        while n is not None and n.kind in ("union", "array", "map"):
            n = (
                next((b for b in n.branches if b.kind == "record"), None)
                if n.kind == "union"
                else n.items
            )
        n = None if n is None else next((f.node for f in n.fields if f.name == part), None)
    stack = [n] if n is not None else []
    while stack:
        m = stack.pop()
        if m.kind == "enum" and 0 <= index < len(m.symbols):
            return m.symbols[index]
        stack += m.branches + ([m.items] if m.items else [])
    return f"#{index}"


class _Bounds(Exception):
    """A value whose structure does not fit its bytes (see :func:`check_bounds`)."""


MAX_DEPTH = 256  # nested values (recursive schemas) a value may hold


def check_bounds(node: Node, payload: memoryview) -> None:
    """Walk an Avro value of ``node`` without building it, and raise :class:`_Bounds` when a
    length or block count asks for more than the bytes left could hold (the kernel's rules:
    ``n`` items of at least ``min_size`` bytes each, at most ``ZERO_SIZE_ITEMS`` items of zero
    bytes), or when nesting goes deeper than :data:`MAX_DEPTH`. What it does not check
    (UTF-8, enum indexes, ...) fastavro reports itself."""
    buf = bytes(payload)
    end = len(buf)
    zero = [0]

    def long_at(p: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            if p >= end:
                raise _Bounds(f"the value ends early ({end} bytes) at byte {p + WIRE_PREFIX}")
            b = buf[p]
            p += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), p
            shift += 7
            if shift > 63:
                raise _Bounds("a varint is longer than 10 bytes")

    def skip(n: Node, p: int, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _Bounds(f"values nested deeper than {MAX_DEPTH}")
        k = n.kind
        if k == "null":
            return p
        if k == "boolean":
            _need(p, 1)
            if buf[p] > 1:
                raise _Bounds(
                    f"a boolean is the byte {buf[p]} (Avro's booleans are the bytes 0 and 1) "
                    f"at byte {p + WIRE_PREFIX}"
                )
            return p + 1
        if k in ("int", "long", "enum"):
            return long_at(p)[1]
        if k == "float":
            return _need(p, 4)
        if k == "double":
            return _need(p, 8)
        if k == "fixed":
            return _need(p, n.size)
        if k in ("bytes", "string"):
            size, p = long_at(p)
            if size < 0:
                raise _Bounds(f"negative length {size}")
            return _need(p, size)
        if k == "record":
            for f in n.fields:
                p = skip(f.node, p, depth + 1)
            return p
        if k == "union":
            i, p = long_at(p)
            if not 0 <= i < len(n.branches):
                raise _Bounds(f"union branch {i} does not exist")
            return skip(n.branches[i], p, depth + 1)
        if k in ("array", "map"):
            assert n.items is not None
            least = min_size(n.items) + (1 if k == "map" else 0)
            while True:
                count, p = long_at(p)
                if count == 0:
                    return p
                if count < 0:
                    count = -count
                    _, p = long_at(p)  # the block's size in bytes
                if least == 0:
                    zero[0] += count
                    if zero[0] > K.ZERO_SIZE_ITEMS:
                        raise _Bounds(f"an array or map block of {count} items of no bytes")
                elif count > (end - p) // least:
                    raise _Bounds(
                        f"an array or map block of {count} items does not fit in the value"
                    )
                for _ in range(count):
                    if k == "map":
                        p = skip(Node("string"), p, depth + 1)
                    p = skip(n.items, p, depth + 1)
            return p
        return p

    def _need(p: int, size: int) -> int:
        if size > end - p:
            raise _Bounds(f"the value ends early ({end} bytes) at byte {p + WIRE_PREFIX}")
        return p + size

    skip(node, 0, 0)


class _RowError(Exception):
    """One value's error (the message is the reason)."""
