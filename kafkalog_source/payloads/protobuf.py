"""Protobuf values in the Schema Registry wire format, decoded with the ``.proto`` text the
registry stores.

Schemas are compiled offline by the ``protoc`` that grpcio-tools bundles (the schema and its
references written into a temporary directory under their import paths, the well-known types
from grpcio-tools' include directory); a schema stored as a base64 ``FileDescriptorProto`` (what
confluent-kafka's Python serializer sends) is used as it is. Each compiled schema gets its own
descriptor pool (two versions of one message share a full name), cached per process by id and
text.

A value is the magic byte, the 4-byte schema id, the *message indexes* (a zigzag varint count,
then that many zigzag varint indexes; a single 0 byte stands for ``[0]``, the file's first
message) and the serialized message. The indexes pick the written message inside the writer's
file: the first index among the file's top-level messages, each further one among the nested
messages of the previous.

Every value is parsed with the *reader's* message class: Protobuf resolves fields by number, so
a field the reader lacks is skipped and a field the writer lacks reads as its default. Before
that, each writer (schema id, message indexes) is checked once against the reader: the written
message must have the reader message's full name, and fields sharing a number must have
wire-compatible types (else every value of that writer is an error naming the field).

Arrow types (all Spark-compatible, every field nullable):

========================================  ===============================================
Protobuf                                  Arrow
========================================  ===============================================
int32, sint32, sfixed32                   int32
int64, sint64, sfixed64                   int64
uint32, fixed32                           int64
uint64, fixed64                           decimal128(20, 0)
float / double                            float32 / float64
bool / string / bytes                     bool / string / binary
enum                                      string: the value's name (a number the enum
                                          does not name: its decimal string)
message                                   struct (fields in declaration order)
repeated T                                list<T> (never null for a present message)
map<K, V>                                 map<string, V>; integer and bool keys as their
                                          ProtoJSON strings ("7", "true")
oneof                                     each member its own nullable field
google.protobuf.Timestamp                 timestamp("us", tz="UTC") (nanoseconds cut)
google.protobuf.*Value wrappers           the wrapped scalar, null when unset
google.protobuf.Duration                  struct<seconds int64, nanos int32> (exact)
google.protobuf.Struct / Value /          string: the ProtoJSON text
ListValue
a message inside itself (recursion)       string: the ProtoJSON text of that sub-message
========================================  ===============================================

Presence: a field with presence (proto3 ``optional``, proto2 ``optional``, oneof members,
message fields) is null when unset; a proto3 scalar without presence reads as its default (0,
``""``, false, first enum value), as Protobuf itself reads it.

``as_json=True``: a string per value, the message decoded with its own writer schema as
compact ProtoJSON (``json_format.MessageToDict``) with the ``.proto`` field names
(``preserving_proto_field_name=True``), fields without presence printed even when default,
enums by name, bytes in base64, Timestamps in RFC 3339, 64-bit integers as numbers when safe
(below 2^53) and strings otherwise.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..errors import KafkaLogError, OptionError
from ..format.registry import WIRE_PREFIX
from .codec import (
    NO_PREFIX,
    Decoded,
    PayloadDecoder,
    PayloadError,
    held_by,
    registered,
    split_wire,
)
from .protobuf_arrow import (
    SPECIAL,
    Conv,
    Misfit,
    converter,
    is_repeated,
    to_proto_json,
)

if TYPE_CHECKING:  # the Registry and RegisteredSchema of format/registry.py
    from ..format.registry import RegisteredSchema

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


# -- compiling -------------------------------------------------------------------------------


def _descriptor_modules() -> None:
    """Import the well-known types' modules, so the default pool holds their files."""
    from google.protobuf import (  # noqa: F401
        any_pb2,
        api_pb2,
        descriptor_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        source_context_pb2,
        struct_pb2,
        timestamp_pb2,
        type_pb2,
        wrappers_pb2,
    )


def _as_descriptor_proto(text: str) -> Any | None:
    """The ``FileDescriptorProto`` of a schema stored as base64 (None: ``.proto`` text)."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    s = "".join(text.split())
    if not s or not _BASE64.match(s):
        return None
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(s))
    except (ValueError, DecodeError):
        return None
    return fdp if fdp.name or fdp.message_type else None


def _protoc(files: dict[str, str], binary: list[Any], targets: list[str]) -> list[Any]:
    """Compile ``files`` (import path -> ``.proto`` text) with grpcio-tools' protoc; ``binary``
    (already compiled imports) go in through ``--descriptor_set_in``. Returns every file the
    targets need, imports included, as ``FileDescriptorProto``s."""
    import grpc_tools
    from google.protobuf import descriptor_pb2

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory(prefix="kafkalog-proto-") as tmp:
        src = os.path.join(tmp, "src")
        for name, text in files.items():
            path = os.path.normpath(os.path.join(src, name))
            if os.path.isabs(name) or not path.startswith(src + os.sep):
                raise ValueError(f"import path {name!r} leaves the schema tree")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "out.pb")
        args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{src}", f"-I{include}"]
        if binary:
            given = os.path.join(tmp, "given.pb")
            with open(given, "wb") as f:
                f.write(descriptor_pb2.FileDescriptorSet(file=binary).SerializeToString())
            args.append(f"--descriptor_set_in={given}")
        args += ["--include_imports", f"--descriptor_set_out={out}", *targets]
        done = subprocess.run(args, cwd=src, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().replace(src + os.sep, "")
            raise ValueError(why or f"protoc exited with {done.returncode}")
        with open(out, "rb") as f:
            return list(descriptor_pb2.FileDescriptorSet.FromString(f.read()).file)


def _build_pool(fdps: list[Any]) -> Any:
    """A fresh descriptor pool holding ``fdps`` (and the well-known types they import)."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    by_name = {f.name: f for f in fdps}
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, chain: tuple[str, ...]) -> None:
        if name in added:
            return
        if name in chain:
            raise ValueError(f"import cycle: {' -> '.join((*chain, name))}")
        fdp = by_name.get(name)
        if fdp is None:
            if not name.startswith("google/protobuf/"):
                raise ValueError(f"import {name!r} is not among the schema's references")
            _descriptor_modules()
            known = descriptor_pool.Default().FindFileByName(name)
            fdp = descriptor_pb2.FileDescriptorProto.FromString(known.serialized_pb)
        for dep in fdp.dependency:
            add(dep, (*chain, name))
        pool.Add(fdp)
        added.add(name)

    for name in by_name:
        add(name, ())
    return pool


@dataclass(frozen=True)
class _Compiled:
    """One schema compiled: its file's descriptor (in a pool of its own)."""

    file: Any  # google.protobuf.descriptor.FileDescriptor


_CACHE: dict[str, _Compiled] = {}
_CACHE_LOCK = threading.Lock()


def compile_schema(schema: RegisteredSchema, references: Mapping[str, RegisteredSchema]) -> Any:
    """Compile ``schema`` (with ``references``, import path -> schema, transitively) into a
    ``FileDescriptor`` in a descriptor pool of its own. Cached per process by id and text.

    Raises ``ValueError`` when the schema or a reference does not compile."""
    h = hashlib.sha256(f"{schema.id}\0{schema.text}".encode())
    for name in sorted(references):
        h.update(f"\0{name}\0{references[name].text}".encode())
    key = h.hexdigest()
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit.file
    binary: list[Any] = []
    texts: dict[str, str] = {}
    for name, ref in references.items():
        fdp = _as_descriptor_proto(ref.text)
        if fdp is None:
            texts[name] = ref.text
        else:
            fdp.name = name
            binary.append(fdp)
    main = _as_descriptor_proto(schema.text)
    if main is not None:
        main_name = main.name or f"kafkalog_schema_{schema.id}.proto"
        main.name = main_name
        fdps = binary + [main]
        if texts:
            fdps = _merge(fdps, _protoc(texts, binary, sorted(texts)))
    else:
        main_name = f"kafkalog/schema_{schema.id}.proto"
        while main_name in references:
            main_name = "_" + main_name
        texts[main_name] = schema.text
        fdps = _merge(binary, _protoc(texts, binary, [main_name]))
    try:  # the runtime's own limits (upb: a message of 64 KiB of fields at most, ...)
        pool = _build_pool(fdps)
        compiled = _Compiled(pool.FindFileByName(main_name))
        for desc in _all_messages(compiled.file):
            _message_class(desc)
    except ValueError:
        raise
    except Exception as e:  # TypeError from the pool, KeyError for a missing file
        raise ValueError(f"the protobuf runtime refuses it: {e}") from None
    with _CACHE_LOCK:
        _CACHE[key] = compiled
    return compiled.file


def _all_messages(file: Any) -> list[Any]:
    """Every message of ``file``, nested ones included."""
    out: list[Any] = []
    todo = list(file.message_types_by_name.values())
    while todo:
        d = todo.pop()
        out.append(d)
        todo.extend(d.nested_types)
    return out


def _merge(first: list[Any], second: list[Any]) -> list[Any]:
    names = {f.name for f in first}
    return first + [f for f in second if f.name not in names]


# -- message indexes -------------------------------------------------------------------------


def read_message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """The message indexes at ``data[pos:]`` and the position after them (Confluent's
    encoding: a zigzag varint count, then that many zigzag varints; count 0 means ``[0]``).

    Raises ``ValueError`` on truncated or absurd indexes."""

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(data):
                raise ValueError("the message indexes end early")
            b = data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return (value >> 1) ^ -(value & 1)
            if shift > 63:
                raise ValueError("a message index varint is longer than 10 bytes")

    count = varint()
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data) - pos:
        raise ValueError(f"message index count {count} is impossible")
    return [varint() for _ in range(count)], pos


def message_at(file: Any, indexes: list[int]) -> Any:
    """The message descriptor the message indexes select in ``file`` (ValueError if none)."""
    found = file.message_types_by_name
    choices = list(found.values())
    desc = None
    for depth, i in enumerate(indexes):
        if not 0 <= i < len(choices):
            where = "top-level" if depth == 0 else f"nested in {desc.full_name}"
            raise ValueError(
                f"message index {i} out of range ({len(choices)} {where} message(s), "
                f"indexes {indexes})"
            )
        desc = choices[i]
        choices = list(desc.nested_types)
    if desc is None:
        raise ValueError("empty message indexes")
    return desc


def find_message(file: Any, name: str | None) -> Any:
    """The message named ``name`` (full name, or relative to the file's package, nested names
    dotted: ``Order.Line``) in ``file``; the file's first message when ``name`` is None."""
    if name is None:
        if not file.message_types_by_name:
            raise OptionError("the Protobuf reader schema defines no message")
        return next(iter(file.message_types_by_name.values()))
    want = name.lstrip(".")
    names = {want, f"{file.package}.{want}" if file.package else want}

    def walk(descs: Any) -> Any:
        for d in descs:
            if d.full_name in names:
                return d
            hit = walk(d.nested_types)
            if hit is not None:
                return hit
        return None

    hit = walk(file.message_types_by_name.values())
    if hit is None:
        raise OptionError(
            f"message {name!r} is not in the Protobuf reader schema (messages: "
            f"{', '.join(d.full_name for d in file.message_types_by_name.values())})"
        )
    return hit


# -- writer/reader compatibility -------------------------------------------------------------

_KINDS = {
    # FieldDescriptor.TYPE_* -> what the wire holds and how it reads
    1: "double",
    2: "float",
    3: "varint",
    4: "varint",
    5: "varint",
    6: "fixed64",
    7: "fixed32",
    8: "varint",
    9: "bytes",
    10: "group",
    11: "message",
    12: "bytes",
    13: "varint",
    14: "varint",
    15: "fixed32",
    16: "fixed64",
    17: "zigzag",
    18: "zigzag",
}
_TYPE_NAMES = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    10: "group",
    11: "message",
    12: "bytes",
    13: "uint32",
    14: "enum",
    15: "sfixed32",
    16: "sfixed64",
    17: "sint32",
    18: "sint64",
}


def _type_name(f: Any) -> str:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        return "map"
    name = f.message_type.full_name if f.type == 11 else _TYPE_NAMES.get(f.type, str(f.type))
    return f"repeated {name}" if is_repeated(f) else name


def incompatibility(writer: Any, reader: Any) -> str | None:
    """Why values of message ``writer`` do not read as message ``reader`` by field number
    (None: they do). Walks message fields; a pair already checked is not walked again."""
    seen: set[tuple[str, str]] = set()

    def walk(w: Any, r: Any, path: str) -> str | None:
        if (w.full_name, r.full_name) in seen:
            return None
        seen.add((w.full_name, r.full_name))
        for rf in r.fields:
            wf = w.fields_by_number.get(rf.number)
            if wf is None:
                continue
            where = f"{path}{rf.name}"
            bad = (
                f"field {where} (number {rf.number}) is {_type_name(wf)} in the writer, "
                f"{_type_name(rf)} in the reader"
            )
            if _KINDS.get(wf.type) != _KINDS.get(rf.type) or is_repeated(wf) != is_repeated(rf):
                return bad
            if rf.type == 11:
                wm, rm = wf.message_type, rf.message_type
                if wm.GetOptions().map_entry != rm.GetOptions().map_entry:
                    return bad
                if (wm.full_name in SPECIAL or rm.full_name in SPECIAL) and (
                    wm.full_name != rm.full_name
                ):
                    return bad
                why = walk(wm, rm, f"{where}.")
                if why:
                    return why
        return None

    return walk(writer, reader, "")


# -- the decoder -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Writer:
    """What a (schema id, message indexes) pair reads as: the written message's class, or why
    its values cannot be read."""

    cls: Any = None
    error: str | None = None


class ProtobufDecoder(PayloadDecoder):
    """Decodes Protobuf values in the Schema Registry wire format into ``self.type``.

    ``registry``: the schemas (``by_id``, ``referenced``); ``reader``: the schema every value
    is read as (its message ``message_name``, a full name or one relative to the file's
    package, by default the file's first message); ``as_json=True``: a string column holding
    each value as ProtoJSON of its own writer schema (then ``reader`` may be None).
    Raises :class:`..errors.KafkaLogError` at construction when the reader schema is not a
    Protobuf schema or does not compile, :class:`..errors.OptionError` for an unknown message.
    """

    _ARGS = ("registry", "reader", "as_json", "message_name")

    def __init__(
        self,
        registry: Any,
        reader: RegisteredSchema | None,
        as_json: bool = False,
        message_name: str | None = None,
    ) -> None:
        self.registry = registry
        self.reader = reader
        self.as_json = as_json
        self.message_name = message_name
        self._setup()

    def _setup(self) -> None:
        self._files: dict[int, Any] = {}  # schema id -> FileDescriptor, or error text
        self._writers: dict[tuple[int, tuple[int, ...]], _Writer] = {}
        self._reader_desc = None
        self._reader_cls = None
        self._conv: Conv | None = None
        if self.reader is not None:
            r = self.reader
            if r.schema_type != "PROTOBUF":
                raise KafkaLogError(
                    f"the reader schema (id {r.id}) is a {r.schema_type} schema, not PROTOBUF"
                )
            try:
                file = compile_schema(r, self.registry.referenced(r))
            except (ValueError, KeyError, OSError, subprocess.SubprocessError) as e:
                raise KafkaLogError(
                    f"the Protobuf reader schema (id {r.id}) does not compile: {e}"
                ) from e
            self._files[r.id] = file
            self._reader_desc = find_message(file, self.message_name)
            self._reader_cls = _message_class(self._reader_desc)
            self._conv = converter(self._reader_desc)
        elif not self.as_json:
            raise KafkaLogError("a typed Protobuf column needs a reader schema (or as_json)")
        self.type = pa.string() if self.as_json else self._conv.type

    def _file(self, schema_id: int) -> Any:
        """The compiled file of ``schema_id``, or a str: why there is none."""
        hit = self._files.get(schema_id)
        if hit is not None:
            return hit
        schema, why = registered(self.registry, schema_id, "PROTOBUF")
        if why is not None:
            hit = why
        else:
            try:
                hit = compile_schema(schema, self.registry.referenced(schema))
            except (ValueError, KeyError, OSError, subprocess.SubprocessError) as e:
                hit = f"schema id {schema_id}{held_by(self.registry, schema_id)} does not compile: {e}"
        self._files[schema_id] = hit
        return hit

    def _writer(self, schema_id: int, indexes: list[int]) -> _Writer:
        key = (schema_id, tuple(indexes))
        hit = self._writers.get(key)
        if hit is not None:
            return hit
        file = self._file(schema_id)
        if isinstance(file, str):
            hit = _Writer(error=file)
        else:
            try:
                desc = message_at(file, indexes)
            except ValueError as e:
                hit = _Writer(
                    error=f"does not parse as Protobuf with schema id {schema_id}"
                    f"{held_by(self.registry, schema_id)}: {e}"
                )
            else:
                hit = self._resolve(schema_id, desc)
        self._writers[key] = hit
        return hit

    def _resolve(self, schema_id: int, desc: Any) -> _Writer:
        if self.as_json:
            return _Writer(cls=_message_class(desc))
        r = self._reader_desc
        if desc.full_name != r.full_name:
            return _Writer(
                error=f"schema id {schema_id} wrote message {desc.full_name}, not the reader's "
                f"{r.full_name}"
            )
        if desc is not r:
            why = incompatibility(desc, r)
            if why:
                return _Writer(
                    error=f"schema id {schema_id} does not resolve into the reader schema "
                    f"(id {self.reader.id}): {why}"
                )
        return _Writer(cls=self._reader_cls)

    def decode(self, data: pa.Array) -> Decoded:
        """Decode ``data`` (binary values in the wire format); see :class:`PayloadDecoder`."""
        from google.protobuf.message import DecodeError

        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        ids, has_prefix, is_null = split_wire(data)
        raw = data.to_pylist()
        n = len(raw)
        out: list[Any] = [None] * n
        errors: list[PayloadError] = []
        for i in range(n):
            if is_null[i]:
                continue
            if not has_prefix[i]:
                errors.append(PayloadError(i, None, NO_PREFIX))
                continue
            sid = int(ids[i])
            value = raw[i]
            try:
                indexes, pos = read_message_indexes(value, WIRE_PREFIX)
            except ValueError as e:
                why = f"does not parse as Protobuf with schema id {sid}{held_by(self.registry, sid)}: {e}"
                errors.append(PayloadError(i, sid, why))
                continue
            w = self._writer(sid, indexes)
            if w.error is not None:
                errors.append(PayloadError(i, sid, w.error))
                continue
            try:
                msg = w.cls.FromString(value[pos:])
            except (DecodeError, ValueError, RuntimeError) as e:
                why = (
                    f"does not parse as Protobuf with schema id {sid}"
                    f"{held_by(self.registry, sid)}: {e or type(e).__name__}"
                )
                errors.append(PayloadError(i, sid, why))
                continue
            if self.as_json:
                try:
                    out[i] = to_proto_json(msg)
                except Exception as e:  # json_format refuses it (a Timestamp out of range, ...)
                    why = f"schema id {sid}{held_by(self.registry, sid)}: no ProtoJSON text: {e}"
                    errors.append(PayloadError(i, sid, why))
            else:
                out[i] = msg
        id_mask = is_null | ~has_prefix
        schema_ids = pa.array(ids.astype(np.int32), type=pa.int32(), mask=id_mask)
        if self.as_json:
            values = pa.array(out, type=pa.string())
        else:
            values = self._typed(out, ids, errors)
        errors.sort(key=lambda e: e.row)
        return Decoded(schema_ids, values, errors)

    def _typed(self, msgs: list[Any], ids: np.ndarray, errors: list[PayloadError]) -> pa.Array:
        """The messages as the reader's Arrow type; a message that does not fit it (a
        Timestamp out of range, ...) is an error of its row and a null."""
        try:
            return self._conv.build(msgs)
        except Misfit:
            pass
        for i, m in enumerate(msgs):  # which ones: one at a time
            if m is None:
                continue
            try:
                self._conv.build([m])
            except Misfit as e:
                sid = int(ids[i])
                why = f"schema id {sid}{held_by(self.registry, sid)} does not fit the column: {e}"
                errors.append(PayloadError(i, sid, why))
                msgs[i] = None
        return self._conv.build(msgs)


def _message_class(desc: Any) -> Callable[..., Any]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(desc)
