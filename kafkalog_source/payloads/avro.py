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

Two paths compute the same columns, and agree on every value, valid or not
(tests/test_avro_differential.py checks it over random writer/reader evolutions):

* the compiled path (:mod:`kafkalog_source.kernel.avro`): each (writer, reader) pair compiles
  into a flat program that one C kernel interprets over the whole column, appending into
  column buffers that become Arrow arrays without a Python object per value. It supports every
  reader schema that has an Arrow type here (a recursive one has none: use ``as_json``) and
  every writer schema but a recursive one (a writer whose recursive field the reader dropped):
  a batch holding such a writer id takes the reference path.
* the reference path: ``fastavro.schemaless_reader`` per value with the writer schema (without
  logical types), resolved into the reader by :mod:`.avro_reference` as the kernel resolves,
  then ``pa.array``. It is used for ``as_json=True`` (with logical types) and when
  ``KAFKALOG_AVRO_KERNEL=0``.

Resolution follows Java's Avro (and Spark's ``from_avro``) where the specification leaves room,
but for units and scales: a timestamp's or time's unit is the writer's logical type's when it
names one, else the reader's (:func:`.avro_program.time_scale`); a decimal is rescaled exactly
from the writer's scale to the reader's (:func:`.avro_program.decimal_shift`: a value that would
lose digits is invalid); a union branch matching the writer's type exactly is taken before one
it promotes to; a bytes or fixed default
is its JSON string's code points 0-255, a union default fits the first branch it can. Invalid
values: a boolean byte other than 0 and 1, an ``int`` past 32 bits, a varint past 64 bits, an
enum or union index out of range, a string or map key that is not UTF-8, a map that holds a key
twice (Spark's maps refuse it; Java keeps the last; the reason names the map's field and the
first such key in the value's bytes, on both paths). Those are checked in what the reader
reads; a writer-only field is skipped as Java's decoder skips it, unchecked where Java does not
look (any boolean byte, any string bytes, any enum index, the items of a sized block), with
Java's own rules where it does (a union index must name a branch, a length must fit, an int's
varint is at most 5 bytes): :func:`.avro_reference.check_bounds`, ``kernel/csrc/kl_avro.h``.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import fastavro
import numpy as np
import pyarrow as pa

from ..format.registry import WIRE_PREFIX
from ..kernel import avro as K
from .avro_program import NoProgram, Program, run
from .avro_reference import Bounds, check_bounds, converter, duplicate_key_rows, fill_unread
from .avro_schema import (
    Node,
    ParsedSchema,
    SchemaError,
    arrow_type,
    parse_registered,
    reader_branch,
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
        self._converters: dict[int, Callable[[Any], Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_writers"] = {}  # parsed schemas and compiled programs are rebuilt on demand
        state["_converters"] = {}
        state["_program"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _convert(self, sid: int, writer: Node, v: Any) -> Any:
        """fastavro's raw value of writer ``sid`` as the kernel's (see :mod:`.avro_reference`)."""
        conv = self._converters.get(sid)
        if conv is None:
            assert self._reader is not None
            conv = self._converters[sid] = converter(writer, self._reader.node)
        return conv(v)

    # -- writer schemas and error texts

    def where(self, schema_id: int) -> str:
        """`` (subject s version v)`` for an id (:func:`.codec.held_by`), cached per id."""
        if schema_id not in self._where_cache:
            self._where_cache[schema_id] = held_by(self.registry, schema_id)
        return self._where_cache[schema_id]

    def _reader_node(self) -> Node | None:
        """The reader schema's node (None: each value is read whole with its writer's)."""
        return None if self._reader is None else self._reader.node

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
        values = out.values
        twice = duplicate_key_rows(values)
        if twice:  # the kernel keeps every entry; a map key twice is an invalid value
            for i, why in twice.items():
                sid = int(ids[i])
                try:  # the first duplicate in the value's bytes, as the fastavro path says
                    check_bounds(self.writer(sid).node, memoryview(data[i].as_py())[WIRE_PREFIX:],
                                 self._reader.node)  # fmt: skip
                except Bounds as e:
                    why = str(e)
                errors.append(PayloadError(i, sid, self.parse_reason(sid, why)))
            keep = np.ones(n, bool)
            keep[list(twice)] = False
            values = pc_if_else(keep, values)
        errors.sort(key=lambda e: e.row)
        return values, errors

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
                sid,
                f"{path or 'the value'}: a decimal of {arg} bytes does not fit its reader type "
                "(its precision, or its scale without losing digits)",
            )
        if code == K.E_OVERFLOW:
            return self.resolve_reason(
                sid, f"{path or 'the value'}: {arg} milliseconds are out of the microsecond range"
            )
        why = {
            K.E_TRUNCATED: f"the value ends early ({size} bytes)",
            K.E_VARINT: _varint_reason(arg),
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
        reader = None  # fastavro reads the writer's values; avro_reference resolves them
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
        if r.logical == "decimal":  # as the kernel: the serializer's raw bytes hold no decimal
            raise _RowError(
                self.resolve_reason(sid, "a raw top-level bytes value is not a decimal")
            )
        return v

    def _read_one(self, raw: bytes, sid: int, reader: Any) -> Any:
        try:
            writer = self.writer(sid)
        except _Unusable as e:
            raise _RowError(str(e)) from None
        payload = memoryview(raw)[WIRE_PREFIX:]
        body: memoryview | bytes = payload
        if writer.node.kind != "bytes":
            try:  # before fastavro, which trusts block counts: a 13-byte value could fill RAM
                reads = None if self.as_json else self._reader_node()
                unread = check_bounds(writer.node, payload, reads)
            except Bounds as e:
                raise _RowError(self.parse_reason(sid, str(e))) from None
            if unread:  # writer-only fields: skipped as Java skips them, unseen by fastavro
                body = fill_unread(payload, unread)
        buf = io.BytesIO(body)
        try:
            if writer.node.kind == "bytes":
                v = self._raw_bytes(bytes(payload), sid)
                buf.seek(len(payload))
            elif self.as_json:
                v = fastavro.schemaless_reader(buf, writer.parsed, None)
            else:  # the writer's raw values (no logical types), resolved as the kernel does
                v = fastavro.schemaless_reader(buf, writer.plain, None, return_named_type=True)
        except fastavro.read.SchemaResolutionError as e:
            raise _RowError(self.resolve_reason(sid, str(e))) from None
        except Exception as e:
            why = str(e) or type(e).__name__
            if isinstance(e, (EOFError, IndexError)) or "EOF" in why:
                why = f"the value ends early ({len(payload)} bytes): {why}"
            raise _RowError(self.parse_reason(sid, why)) from None
        left = len(body) - buf.tell()
        if left:
            raise _RowError(self.parse_reason(sid, f"{left} bytes remain after the value"))
        if self.as_json:
            return json.dumps(to_json(v), ensure_ascii=False, separators=(",", ":"))
        try:
            return self._convert(sid, writer.node, v)
        except Exception as e:
            raise _RowError(self.resolve_reason(sid, f"{type(e).__name__}: {e}")) from None


def _varint_reason(arg: int) -> str:
    """The reason of the kernel's ``E_VARINT`` (``arg``: 0, or the bytes Java reads at most of a
    skipped value's varint)."""
    if arg == 5:
        return "an int's varint is longer than 5 bytes (Java's readInt)"
    if arg == 10:
        return "a varint is longer than 10 bytes"
    return "a varint is longer than 10 bytes or holds more than 64 bits"


def pc_if_else(keep: np.ndarray, values: pa.Array) -> pa.Array:
    """``values`` with the rows not in ``keep`` made null."""
    import pyarrow.compute as pc

    return pc.if_else(pa.array(keep), values, pa.nulls(len(values), values.type))


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


class _RowError(Exception):
    """One value's error (the message is the reason)."""
