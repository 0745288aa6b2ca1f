"""The payload families of the decoder fuzz harness (tests/decoder_fuzz.py): Avro (the
compiled program and the fastavro path must also agree), Protobuf and JSON values, mutated and
decoded in batches by each format's decoder and the payload step, in every mode."""

from __future__ import annotations

import io
import json
import random
import struct
from typing import Any

import pyarrow as pa
from decoder_fuzz import (
    BOUNDARY,
    Campaign,
    _shape,
    dumps,
    guarded,
    mutate_bytes,
    mutate_json,
    uvarint,
)


class Registry:
    """The decoders' registry API over a dict (``by_id``, ``version``, ``subjects``,
    ``referenced``, ``holders``), filled by :meth:`add`."""

    def __init__(self) -> None:
        from kafkalog_source.format.registry import Registry as Real

        self._entries: list[tuple[str, int, Any]] = []
        self._real = Real.from_versions([])

    def add(self, subject: str, version: int, schema_id: int, text: str, kind: str) -> Any:
        from kafkalog_source.format.registry import RegisteredSchema

        schema = RegisteredSchema(schema_id, kind, text)
        self._entries.append((subject, version, schema))
        from kafkalog_source.format.registry import Registry as Real

        self._real = Real.from_versions(self._entries)
        return schema

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _wire(schema_id: int, payload: bytes) -> bytes:
    return b"\0" + struct.pack(">i", schema_id) + payload


def _payload_batch(
    camp: Campaign, family: str, rnd: random.Random, decoders: list[Any], values: list[Any]
) -> list[Any]:
    """Decode ``values`` with each decoder (never an exception, a valid array of the declared
    type, as long as the input) and push them through the payload step in every mode."""
    from kafkalog_source.payloads.step import ColumnPlan, PayloadPlan, PayloadStep
    from kafkalog_source.stats import ReadStats

    arr = pa.array(values, pa.binary())
    results = []
    for dec in decoders:

        def run(dec: Any = dec) -> Any:
            out = dec.decode(arr)
            if len(out.values) != len(values) or out.values.type != dec.type:
                raise AssertionError(f"{len(out.values)} values of {out.values.type}")
            out.values.validate(full=True)
            return out

        results.append(guarded(camp, family, values, run))
    if rnd.random() < 0.1:  # the step: error texts into value_error, modes, counts
        dec = rnd.choice(decoders)
        n = len(values)
        batch = pa.RecordBatch.from_arrays(
            [arr, pa.array(["t"] * n), pa.array(range(n), pa.int64()), pa.array(["f"] * n)]
            + [pa.array([0] * n, pa.int64())],
            names=["value", "topic", "offset", "segmentPath", "batchPosition"],
        )
        for mode in ("PERMISSIVE", "DROPMALFORMED", "FAILFAST"):
            plan = PayloadPlan((ColumnPlan("value", family, dec),), mode)
            step = PayloadStep(plan, ReadStats())
            guarded(camp, family, values, lambda step=step: step.apply(batch).validate(full=True))
    return results


# Avro ------------------------------------------------------------------------------------


def _avro_seeds() -> list[tuple[dict, dict, list[Any]]]:
    """(writer schema, reader schema, values) pairs: every type, and evolutions."""
    enum = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"], "default": "A"}
    every = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "b", "type": "boolean"},
            {"name": "i", "type": "int"},
            {"name": "l", "type": "long"},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "double"},
            {"name": "s", "type": "string"},
            {"name": "y", "type": "bytes"},
            {"name": "e", "type": enum},
            {"name": "x", "type": {"type": "fixed", "name": "F", "size": 3}},
            {"name": "a", "type": {"type": "array", "items": ["null", "long", "string"]}},
            {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
            {"name": "u", "type": ["null", "double"]},
            {
                "name": "dec",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            },
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "tu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {
                "name": "n",
                "type": {"type": "record", "name": "N", "fields": [{"name": "q", "type": "int"}]},
            },
        ],
    }
    import decimal
    import uuid

    def value(k: int) -> dict:
        return {
            "b": k % 2 == 0,
            "i": k * 1000 - 7,
            "l": k << 40,
            "f": k / 3,
            "d": -k / 7,
            "s": "é" * k,
            "y": bytes(range(k)),
            "e": "ABC"[k % 3],
            "x": bytes([k, k, k]),
            "a": [None, k, "s"][: k % 4],
            "m": {f"k{j}": list(range(j)) for j in range(k % 3)},
            "u": None if k % 2 else k * 0.5,
            "dec": decimal.Decimal(k * 101) / 100,
            "ts": 1_700_000_000_000 + k,
            "tu": 1_700_000_000_000_000 + k,
            "dt": 19_000 + k,
            "id": str(uuid.UUID(int=k)),
            "n": {"q": k},
        }

    evolved = json.loads(json.dumps(every))
    fields = evolved["fields"]
    fields[1]["type"] = "long"  # int -> long
    fields[2]["type"] = "double"  # long -> double
    fields[5]["type"] = "bytes"  # string -> bytes
    fields[7]["type"] = {"type": "enum", "name": "E", "symbols": ["B", "A"], "default": "A"}
    del fields[3]  # f gone
    fields.append({"name": "new", "type": "bytes", "default": "\u00ff\u0080"})
    fields.append({"name": "nu", "type": ["bytes", "double"], "default": "\u00ff"})
    fields.append(
        {"name": "nf", "type": {"type": "fixed", "name": "G", "size": 2}, "default": "ab"}
    )
    fields.append({"name": "na", "type": {"type": "array", "items": "E"}, "default": ["B"]})
    fields.append(
        {
            "name": "nr",
            "type": {
                "type": "record",
                "name": "NR",
                "fields": [{"name": "z", "type": ["null", "long"], "default": None}],
            },
            "default": {"z": None},
        }
    )
    fields.append({"name": "ren", "type": "double", "aliases": ["f"]})  # f, renamed
    top = [
        ("string", "string", ["", "é", "x" * 50]),
        ("long", "double", [0, -1, 1 << 60]),
        (["null", "int", "string"], ["string", "long", "null"], [None, 5, "s"]),
        ({"type": "array", "items": "float"}, {"type": "array", "items": "double"}, [[0.5], []]),
        ({"type": "map", "values": "boolean"}, {"type": "map", "values": "boolean"}, [{"a": True}]),
    ]
    out = [
        (every, every, [value(k) for k in range(6)]),
        (every, evolved, [value(k) for k in range(6)]),
    ]
    out += [(w, r, v) for w, r, v in top]
    return out


def fuzz_avro(camp: Campaign, rnd: random.Random, inputs: int, batch: int = 200) -> None:
    """The ``avro`` family (see the module docstring)."""
    import fastavro

    from kafkalog_source.payloads.avro import AvroDecoder

    seeds = _avro_seeds()
    reg = Registry()
    pairs = []
    for i, (w, r, vals) in enumerate(seeds):
        wid, rid = 2 * i + 1, 2 * i + 2
        reg.add(f"w{i}", 1, wid, json.dumps(w), "AVRO")
        reader = reg.add(f"r{i}", 1, rid, json.dumps(r), "AVRO")
        parsed = fastavro.parse_schema(w)
        blobs = []
        for v in vals:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, v)
            blobs.append(_wire(wid, buf.getvalue()))
        kernel = AvroDecoder(reg, reader)
        kernel.use_kernel = True
        ref = AvroDecoder(reg, reader)
        ref.use_kernel = False
        as_json = AvroDecoder(reg, None, as_json=True)
        pairs.append((blobs, kernel, ref, as_json))
    done = 0
    while done < inputs:
        blobs, kernel, ref, as_json = rnd.choice(pairs)
        values = [
            mutate_bytes(rnd, rnd.choice(blobs), blobs, start=5)
            if rnd.random() < 0.9
            else rnd.choice(blobs)
            for _ in range(batch)
        ]
        k, r, _ = _payload_batch(camp, "avro", rnd, [kernel, ref, as_json], values)
        if k is not None and r is not None:
            _agree(camp, values, k, r)
        done += batch
        camp.count("avro", batch)


def _agree(camp: Campaign, values: list[bytes], k: Any, r: Any) -> None:
    """The compiled program and the fastavro path: the same rows in error, the same values."""
    ke = {e.row for e in k.errors}
    re_ = {e.row for e in r.errors}
    if ke != re_:
        row = min(ke ^ re_)
        why = next((e.reason for e in k.errors + r.errors if e.row == row), "")
        camp.fail(
            "avro",
            f"paths disagree on errors: row in {'kernel' if row in ke else 'fastavro'} "
            f"only: {_shape(why)}",
            values[row],
        )
        return
    row = first_difference(k.values, r.values)
    if row is not None:
        a, b = k.values.slice(row, 1), r.values.slice(row, 1)
        camp.fail("avro", "paths disagree on a value", (values[row], str(a)[:3000], str(b)[:3000]))


def first_difference(a: pa.Array, b: pa.Array) -> int | None:
    """The first row where two arrays differ (NaN equal to NaN), or None."""
    if a.equals(b):
        return None
    if a.type != b.type or len(a) != len(b):
        return 0
    x, y = _plain_list(a), _plain_list(b)  # dates and timestamps as integers: any year compares
    return next((i for i in range(len(x)) if not same_value(x[i], y[i])), None)


def _plain_list(a: pa.Array) -> list[Any]:
    """``a.to_pylist()`` with dates and timestamps as integers, built child by child: pyarrow
    26's cast of a nested array that holds a null-typed child (a ``map<string, null>``, say)
    breaks its offsets, so only leaves are cast."""
    t = a.type
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        return a.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(t):
        return a.cast(pa.int32()).to_pylist()
    if pa.types.is_struct(t):
        valid = a.is_valid().to_pylist()
        kids = [(f.name, _plain_list(a.field(i))) for i, f in enumerate(t)]
        return [{n: k[i] for n, k in kids} if valid[i] else None for i in range(len(a))]
    if pa.types.is_list(t) or pa.types.is_map(t):
        valid = a.is_valid().to_pylist()
        offs = a.offsets.to_pylist()
        items = _plain_list(a.values)
        if pa.types.is_map(t):
            items = [(e["key"], e["value"]) for e in items]
        return [items[offs[i] : offs[i + 1]] if valid[i] else None for i in range(len(a))]
    return a.to_pylist()


def same_value(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[x], b[x]) for x in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b


# Protobuf --------------------------------------------------------------------------------

PROTO = """syntax = "proto3";
package fz;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
enum Color { RED = 0; GREEN = 1; }
message Inner { string s = 1; repeated int32 r = 2; Inner again = 3; }
message All {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
  float fl = 11; double db = 12; bool bo = 13; string st = 14; bytes by = 15; Color co = 16;
  Inner inner = 17; repeated Inner inners = 18; map<string, int64> ms = 19;
  map<int32, Inner> mi = 20; map<bool, string> mb = 21;
  oneof pick { string os = 22; int64 oi = 23; }
  optional int32 opt = 24;
  google.protobuf.Timestamp ts = 25; google.protobuf.Duration du = 26;
  google.protobuf.Int64Value w64 = 27; google.protobuf.StringValue wst = 28;
  google.protobuf.Struct stc = 29; google.protobuf.Value val = 30;
  google.protobuf.ListValue lst = 31; repeated google.protobuf.Timestamp tss = 32;
}
"""


def _proto_values(cls: Any, rnd: random.Random, n: int) -> list[bytes]:
    out = []
    for k in range(n):
        m = cls()
        m.i32, m.i64, m.u32, m.u64 = -k, k << 40, k, (1 << 64) - 1 - k
        m.s32, m.s64, m.f32, m.f64 = -k, -(k << 50), k, k << 60
        m.sf32, m.sf64, m.fl, m.db, m.bo = -k, k, k / 3, -k / 7, bool(k % 2)
        m.st, m.by, m.co = "é" * k, bytes(range(k)), k % 3
        m.inner.s = "x"
        m.inner.r.extend(range(k))
        m.inner.again.s = "y"
        m.inners.add().s = "z"
        m.ms["a"] = k
        m.mi[k].s = "v"
        m.mb[True] = "t"
        if k % 2:
            m.os = "o"
        else:
            m.oi = k
        m.opt = k
        m.ts.seconds, m.ts.nanos = 1_700_000_000 + k, k
        m.du.seconds = k
        m.w64.value = k
        m.wst.value = "w"
        m.stc.update({"a": 1, "b": [True, None, "x"]})
        m.val.number_value = k
        m.lst.values.add().string_value = "l"
        m.tss.add().seconds = k
        out.append(m.SerializeToString())
    return out


def _pb_fields(data: bytes) -> list[list[Any]] | None:
    """``[number, wire type, value]`` of each field of a serialized message (value: an int,
    or bytes for length-delimited fields), or None when it does not parse."""
    out: list[list[Any]] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        v = shift = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise ValueError
            b = data[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    try:
        while pos < len(data):
            tag = varint()
            num, wt = tag >> 3, tag & 7
            if wt == 0:
                out.append([num, wt, varint()])
            elif wt in (1, 5):
                n = 8 if wt == 1 else 4
                if pos + n > len(data):
                    return None
                out.append([num, wt, int.from_bytes(data[pos : pos + n], "little")])
                pos += n
            elif wt == 2:
                n = varint()
                if pos + n > len(data):
                    return None
                out.append([num, wt, data[pos : pos + n]])
                pos += n
            else:
                return None
    except ValueError:
        return None
    return out


def _pb_bytes(fields: list[list[Any]]) -> bytes:
    out = bytearray()
    for num, wt, v in fields:
        out += uvarint((num << 3) | wt)
        if wt == 0:
            out += uvarint(v)
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            out += (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
        else:
            out += uvarint(len(v)) + v
    return bytes(out)


def mutate_protobuf(rnd: random.Random, data: bytes, depth: int = 0) -> bytes:
    """A message with valid framing and hostile contents: a field's value set to a boundary
    number (a Timestamp's seconds to 2^62, say), its wire type changed, a field repeated or
    dropped, a nested message mutated in turn, a string's bytes made invalid UTF-8."""
    fields = _pb_fields(data)
    if not fields:
        return data
    for _ in range(rnd.randint(1, 2)):
        f = rnd.choice(fields)
        how = rnd.randrange(7)
        if how == 0 and f[1] != 2:
            f[2] = rnd.choice(BOUNDARY) % (1 << 64)
        elif how == 1 and f[1] == 2 and depth < 4:
            f[2] = mutate_protobuf(rnd, f[2], depth + 1)
        elif how == 2:
            fields.append(list(f))
        elif how == 3 and len(fields) > 1:
            fields.remove(f)
        elif how == 4 and f[1] == 2:
            f[2] = f[2] + rnd.choice([b"\xff", b"\xed\xb2\x80", b"\xc0\x80", b"\x00"])
        elif how == 5:
            f[1], f[2] = (0, rnd.choice(BOUNDARY) % (1 << 64)) if f[1] == 2 else (2, b"\x08\x01")
        else:
            f[0] = rnd.choice([f[0], 1, 2, 19000, (1 << 29) - 1, rnd.randint(1, 40)])
    return _pb_bytes(fields)


def fuzz_protobuf(camp: Campaign, rnd: random.Random, inputs: int, batch: int = 200) -> None:
    """The ``protobuf`` family (see the module docstring)."""
    from kafkalog_source.payloads.protobuf import ProtobufDecoder, compile_schema, find_message

    reg = Registry()
    reader = reg.add("p-value", 1, 1, PROTO, "PROTOBUF")
    # a writer whose field 1 changed type: values of id 2 fail the compatibility check
    reg.add("p2", 1, 2, PROTO.replace("int32 i32 = 1;", "string i32 = 1;"), "PROTOBUF")
    file = compile_schema(reader, {})
    cls = _message_class(find_message(file, "fz.All"))
    seeds = [b"\x02\x02" + v for v in _proto_values(cls, rnd, 8)]  # indexes [1]: All
    seeds += [b"\x00" + cls().SerializeToString()]  # indexes [0]: Inner (another message)
    typed = ProtobufDecoder(reg, reader, message_name="fz.All")
    as_json = ProtobufDecoder(reg, None, as_json=True)
    done = 0
    while done < inputs:
        values = []
        for _ in range(batch):
            raw = rnd.choice(seeds)
            r = rnd.random()
            if r < 0.6 and raw[:2] == b"\x02\x02":
                raw = raw[:2] + mutate_protobuf(rnd, raw[2:])
            elif r < 0.9:
                raw = mutate_bytes(rnd, raw, seeds)
            values.append(_wire(rnd.choice([1] * 18 + [2, 9]), raw))
        _payload_batch(camp, "protobuf", rnd, [typed, as_json], values)
        done += batch
        camp.count("protobuf", batch)


def _message_class(desc: Any) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(desc)


# JSON ------------------------------------------------------------------------------------

JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
    "properties": {
        "i": {"type": "integer"},
        "n": {"type": ["number", "null"]},
        "b": {"type": "boolean"},
        "s": {"type": "string", "format": "date-time"},
        "a": {"type": "array", "items": {"type": "integer"}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "p": {"$ref": "#/definitions/P"},
        "o": {"oneOf": [{"type": "null"}, {"type": "string"}]},
        "any": {},
        "e": {"enum": ["A", "B"]},
    },
}


def _json_values(rnd: random.Random) -> list[Any]:
    out = []
    for k in range(8):
        out.append(
            {
                "i": k << 40,
                "n": None if k % 2 else k / 3,
                "b": bool(k % 2),
                "s": "2024-01-01T00:00:00Z",
                "a": list(range(k)),
                "m": {f"k{j}": "v" for j in range(k % 3)},
                "p": {"x": k},
                "o": "o" if k % 2 else None,
                "any": [k, {"z": None}],
                "e": "AB"[k % 2],
            }
        )
    return out


def fuzz_json(camp: Campaign, rnd: random.Random, inputs: int, batch: int = 200) -> None:
    """The ``json`` family (see the module docstring)."""
    from kafkalog_source.payloads.jsonschema import JsonDecoder, infer_json_type

    reg = Registry()
    reader = reg.add("j-value", 1, 1, json.dumps(JSON_SCHEMA), "JSON")
    docs = _json_values(rnd)
    seeds = [dumps(d) for d in docs]
    typed = JsonDecoder(reg, reader)
    as_json = JsonDecoder(reg, None, as_json=True)
    inferred = JsonDecoder(None, None, inferred=infer_json_type(seeds))
    awkward = [
        b'{"i": 1e400}',
        b'{"i": 18446744073709551616}',
        b'{"s": "\\udc80"}',
        b'{"m": {"\\ud800": "x"}}',
        b'{"any": "\\udfff"}',
        b'{"i": NaN}',
        b"[" * 5000 + b"]" * 5000,
        b'{"a": ' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"i": 1, "i": "x"}',
        b"\xff\xfe",
        b"",
        b"null",
        b'"\\udc80"',
    ]
    done = 0
    while done < inputs:
        values = []
        for _ in range(batch):
            r = rnd.random()
            if r < 0.4:
                raw = mutate_bytes(rnd, rnd.choice(seeds), seeds)
            elif r < 0.8:
                raw = dumps(mutate_json(rnd, rnd.choice(docs)))
            elif r < 0.9:
                raw = rnd.choice(awkward)
            else:
                raw = rnd.choice(seeds)
            values.append(_wire(rnd.choice([1, 1, 1, 7]), raw) if rnd.random() < 0.7 else raw)
        _payload_batch(camp, "json", rnd, [typed, as_json, inferred], values)
        done += batch
        camp.count("json", batch)
