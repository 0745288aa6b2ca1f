"""Avro payloads: values written by confluent-kafka's real ``AvroSerializer`` (a ``mock://``
registry) decoded by :class:`AvroDecoder`, on both paths (the compiled kernel and the fastavro
reference), against the serializer's input values; schema evolution. Damaged bytes, JSON,
references and the two paths' differential tests are in test_payload_avro_damage.py.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalog_source.payloads.avro import AvroDecoder

try:
    from kafkalog_source.format.registry import RegisteredSchema, SchemaReference
except ImportError:  # the registry helper's classes are not merged yet: the documented shape

    @dataclass(frozen=True)
    class SchemaReference:  # type: ignore[no-redef]
        name: str
        subject: str
        version: int

    @dataclass(frozen=True)
    class RegisteredSchema:  # type: ignore[no-redef]
        id: int
        schema_type: str
        text: str
        references: tuple = ()


UTC = datetime.timezone.utc
PATHS = ["kernel", "reference"]


class FakeRegistry:
    """The decoders' Registry API over confluent-kafka's mock registry client's contents."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def by_id(self, schema_id: int) -> RegisteredSchema:
        try:
            s = self.client.get_schema(schema_id)
        except Exception as e:
            raise KeyError(schema_id) from e
        refs = tuple(SchemaReference(r.name, r.subject, r.version) for r in s.references or ())
        return RegisteredSchema(schema_id, s.schema_type or "AVRO", s.schema_str, refs)

    def version(self, subject: str, version: int | None = None) -> tuple[int, RegisteredSchema]:
        try:
            if version is None:
                r = self.client.get_latest_version(subject)
            else:
                r = self.client.get_version(subject, version)
        except Exception as e:
            raise KeyError(subject) from e
        return r.version, self.by_id(r.schema_id)

    def subjects(self) -> list[str]:
        return list(self.client.get_subjects())

    def referenced(self, schema: RegisteredSchema) -> dict[str, RegisteredSchema]:
        out: dict[str, RegisteredSchema] = {}
        todo = list(schema.references)
        while todo:
            ref = todo.pop()
            if ref.name in out:
                continue
            _, rs = self.version(ref.subject, ref.version)
            out[ref.name] = rs
            todo += list(rs.references)
        return out


def new_client() -> Any:
    return SchemaRegistryClient.new_client({"url": "mock://test"})


def serialize(client: Any, schema: Any, values: list[Any], topic: str = "t", refs=()) -> list:
    """The serializer's bytes for each value (None stays None)."""
    from confluent_kafka.schema_registry import Schema

    text = json.dumps(schema)
    if refs:
        text = Schema(text, "AVRO", list(refs))
    ser = AvroSerializer(client, text, conf={"auto.register.schemas": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [None if v is None else ser(v, ctx) for v in values]


def register(client: Any, schema: Any, topic: str = "t") -> int:
    """Register a schema under ``<topic>-value`` without serializing anything; its id."""
    from confluent_kafka.schema_registry import Schema

    return client.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO"))


def decoder(client: Any, path: str, reader_id: int | None = None, **kw: Any) -> AvroDecoder:
    reg = FakeRegistry(client)
    reader = None if reader_id is None else reg.by_id(reader_id)
    d = AvroDecoder(reg, reader, **kw)
    d.use_kernel = path == "kernel"
    return d


def decode(d: AvroDecoder, blobs: list) -> tuple[list, list, list]:
    out = d.decode(pa.array(blobs, pa.binary()))
    assert out.values.type == d.type
    assert len(out.values) == len(blobs) == len(out.schema_ids)
    return out.values.to_pylist(), out.schema_ids.to_pylist(), out.errors


# ----------------------------------------------------------------------------- every type

ENUM = {"type": "enum", "name": "Suit", "symbols": ["HEARTS", "SPADES", "CLUBS"]}
POINT = {
    "type": "record",
    "name": "Point",
    "fields": [{"name": "x", "type": "double"}, {"name": "y", "type": "double"}],
}
ALL = {
    "type": "record",
    "name": "All",
    "namespace": "com.example",
    "fields": [
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "by", "type": "bytes"},
        {"name": "n", "type": "null"},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "e", "type": ENUM},
        {"name": "p", "type": POINT},
        {"name": "arr", "type": {"type": "array", "items": "long"}},
        {"name": "m", "type": {"type": "map", "values": "string"}},
        {"name": "opt", "type": ["null", "string"], "default": None},
        {"name": "optp", "type": ["null", "Point"], "default": None},
        {"name": "u", "type": ["null", "int", "string", "Point"], "default": None},
        {"name": "il", "type": ["int", "long"]},
        {
            "name": "dec",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {
            "name": "decf",
            "type": {
                "type": "fixed",
                "name": "D16",
                "size": 16,
                "logicalType": "decimal",
                "precision": 38,
                "scale": 4,
            },
        },
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "ltsms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "ltsus", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {
            "name": "nested",
            "type": {"type": "array", "items": {"type": "map", "values": ["null", ENUM["name"]]}},
        },
        {"name": "recs", "type": {"type": "array", "items": "Point"}},
    ],
}

ALL_TYPE = pa.struct(
    [
        ("b", pa.bool_()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("s", pa.string()),
        ("by", pa.binary()),
        ("n", pa.null()),
        ("fx", pa.binary()),
        ("e", pa.string()),
        ("p", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        ("arr", pa.list_(pa.int64())),
        ("m", pa.map_(pa.string(), pa.string())),
        ("opt", pa.string()),
        ("optp", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        (
            "u",
            pa.struct(
                [
                    ("member0", pa.int32()),
                    ("member1", pa.string()),
                    ("member2", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
                ]
            ),
        ),
        ("il", pa.int64()),
        ("dec", pa.decimal128(10, 2)),
        ("decf", pa.decimal128(38, 4)),
        ("date", pa.date32()),
        ("tms", pa.int32()),
        ("tus", pa.int64()),
        ("tsms", pa.timestamp("us", tz="UTC")),
        ("tsus", pa.timestamp("us", tz="UTC")),
        ("ltsms", pa.timestamp("us")),
        ("ltsus", pa.timestamp("us")),
        ("uid", pa.string()),
        ("nested", pa.list_(pa.map_(pa.string(), pa.string()))),
        ("recs", pa.list_(pa.struct([("x", pa.float64()), ("y", pa.float64())]))),
    ]
)


def all_value(k: int) -> dict[str, Any]:
    """One input value of ALL (varied by ``k``)."""
    return {
        "b": k % 2 == 0,
        "i": -(2**31) if k == 3 else k * 1000 - 7,
        "l": 2**63 - 1 if k == 2 else -k * 10**12,
        "f": 1.5 * k,
        "d": -0.25 * k if k != 4 else float("inf"),
        "s": "" if k == 1 else f"héllo {k} ✓" * k,
        "by": bytes(range(k * 3)),
        "n": None,
        "fx": bytes([k, 255, 0, 7]),
        "e": ENUM["symbols"][k % 3],
        "p": {"x": k / 3, "y": -k},
        "arr": list(range(k * 2)) + ([-(2**63)] if k == 2 else []),
        "m": {f"k{j}": "v" * j for j in range(k)},
        "opt": None if k % 2 else f"o{k}",
        "optp": {"x": 1.0, "y": 2.0} if k % 3 == 0 else None,
        "u": [None, 42 + k, f"str{k}", {"x": 0.5, "y": 0.25}][k % 4],
        "il": k * 99,
        "dec": decimal.Decimal(f"{'-' if k % 2 else ''}{k * 1234567}.{k:02d}"),
        "decf": decimal.Decimal(f"-{'9' * 30}.{k:04d}") if k == 2 else decimal.Decimal(k) / 4,
        "date": datetime.date(1970, 1, 1) + datetime.timedelta(days=k * 4000 - 9000),
        "tms": datetime.time(k, 59, 58, k * 1000),
        "tus": datetime.time(23, k, 1, 123456 + k),
        "tsms": datetime.datetime(2024, 2, 29, k, 1, 2, k * 1000, tzinfo=UTC),
        "tsus": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999 - k, tzinfo=UTC),
        "ltsms": datetime.datetime(2001, 1, 1, 0, 0, k, 5000),
        "ltsus": datetime.datetime(9999, 12, 31, 23, 59, 59, k),
        "uid": uuid.UUID(int=k * 2**100 + k),
        "nested": [{"a": "HEARTS", "b": None}, {}] * (k % 3),
        "recs": [{"x": float(j), "y": float(-j)} for j in range(k)],
    }


def all_expected(v: dict[str, Any]) -> dict[str, Any]:
    """What the decoded row must be: the input, in Arrow's Python forms."""
    out = dict(v)
    out["m"] = list(v["m"].items())
    u = v["u"]
    if u is None:
        out["u"] = None
    else:
        slot = {int: "member0", str: "member1", dict: "member2"}[type(u)]
        out["u"] = {"member0": None, "member1": None, "member2": None, slot: u}
    out["tms"] = ((v["tms"].hour * 60 + v["tms"].minute) * 60 + v["tms"].second) * 1000 + (
        v["tms"].microsecond // 1000
    )
    t = v["tus"]
    out["tus"] = ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond
    out["uid"] = str(v["uid"])
    out["nested"] = [list(m.items()) for m in v["nested"]]
    return out


@pytest.mark.parametrize("path", PATHS)
def test_every_type(path: str) -> None:
    client = new_client()
    values = [all_value(k) for k in range(7)]
    blobs = serialize(client, ALL, values)
    d = decoder(client, path, 1)
    assert d.type == ALL_TYPE
    got, ids, errors = decode(d, blobs + [None])
    assert errors == []
    assert ids == [1] * 7 + [None]
    assert got == [all_expected(v) for v in values] + [None]


def test_arrow_type_is_spark_compatible() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.pandas.types import from_arrow_type

    from_arrow_type(ALL_TYPE)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("schema", "values", "expected"),
    [
        ("string", ["", "a", "ü" * 40], None),
        ("long", [0, -1, 2**63 - 1, -(2**63)], None),
        ("int", [0, 2**31 - 1, -(2**31)], None),
        ("double", [0.0, -1.5, 1e308], None),
        ("float", [0.0, -1.5, 3.25], None),
        ("boolean", [True, False], None),
        ("bytes", [b"", b"\x00\xff", b"x" * 300], None),  # written raw, as Confluent does
        (["null", "long"], [None, 5, -5], None),
        ({"type": "array", "items": ["null", "string"]}, [[], ["a", None, "b"]], None),
        ({"type": "map", "values": "double"}, [{}, {"a": 1.0}], [[], [("a", 1.0)]]),
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, ["B", "A"], None),
    ],
)
def test_top_level_schemas(path: str, schema: Any, values: list, expected: list | None) -> None:
    client = new_client()
    blobs = serialize(client, schema, values)
    got, _, errors = decode(decoder(client, path, 1), blobs)
    assert errors == []
    assert got == (values if expected is None else expected)


# ------------------------------------------------------------------------------- evolution

V1 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "amount", "type": "float"},
        {"name": "note", "type": "string"},
        {"name": "gone", "type": {"type": "array", "items": {"type": "map", "values": "bytes"}}},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
        {"name": "tag", "type": ["null", "string"]},
        {"name": "blob", "type": "string"},
        {"name": "any", "type": ["int", "string"]},
        {"name": "old", "type": "string"},
    ],
}
V2 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},  # int -> long
        {"name": "amount", "type": "double"},  # float -> double
        {"name": "note", "type": "string"},
        # "gone" removed
        {
            "name": "state",
            "type": {
                "type": "enum",
                "name": "State",
                "symbols": ["NEW", "PAID", "SHIPPED", "UNKNOWN"],
                "default": "UNKNOWN",
            },
        },
        {"name": "tag", "type": ["null", "string"], "default": None},
        {"name": "blob", "type": "bytes"},  # string -> bytes
        {"name": "any", "type": ["null", "long", "string"]},
        {"name": "added", "type": "string", "default": "none"},
        {"name": "added_rec", "type": POINT, "default": {"x": 1.5, "y": -2.0}},
        {"name": "added_arr", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
        {"name": "added_u", "type": ["null", "int"], "default": None},
        {"name": "renamed", "aliases": ["old"], "type": "string", "default": "x"},
    ],
}


@pytest.mark.parametrize("path", PATHS)
def test_schema_evolution(path: str) -> None:
    client = new_client()
    old = [
        {
            "id": 1,
            "amount": 2.5,
            "note": "n1",
            "gone": [{"a": b"x"}],
            "state": "PAID",
            "tag": None,
            "blob": "é",
            "any": 7,
            "old": "o1",
        },
        {
            "id": -(2**31),
            "amount": -0.5,
            "note": "",
            "gone": [],
            "state": "NEW",
            "tag": "t",
            "blob": "",
            "any": "s",
            "old": "",
        },
    ]
    new = [
        {
            "id": 2**40,
            "amount": 1e300,
            "note": "n2",
            "state": "SHIPPED",
            "tag": "x",
            "blob": b"\xff",
            "any": None,
            "added": "yes",
            "added_rec": {"x": 0.0, "y": 0.0},
            "added_arr": [],
            "added_u": 3,
            "renamed": "r",
        },
    ]
    blobs = serialize(client, V1, old) + serialize(client, V2, new)
    d = decoder(client, path, 2)
    got, ids, errors = decode(d, blobs)
    assert errors == []
    assert ids == [1, 1, 2]
    defaults = {
        "added": "none",
        "added_rec": {"x": 1.5, "y": -2.0},
        "added_arr": [1, 2],
        "added_u": None,
    }
    want = []
    for v in old:
        w = {k: v[k] for k in ("id", "amount", "note", "state", "tag")}
        w |= {"blob": v["blob"].encode(), "any": {"member0": None, "member1": None}, **defaults}
        w["any"] = (
            {"member0": v["any"], "member1": None}
            if isinstance(v["any"], int)
            else {"member0": None, "member1": v["any"]}
        )
        w["renamed"] = v["old"]
        want.append(w)
    want.append({**new[0], "any": None})
    assert got == want


@pytest.mark.parametrize("path", PATHS)
def test_values_that_do_not_resolve(path: str) -> None:
    client = new_client()
    v1 = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
            {"name": "u", "type": ["null", "string", "int"]},
        ],
    }
    v2 = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
            {"name": "u", "type": ["null", "string"]},
        ],
    }
    blobs = serialize(client, v1, [{"e": "A", "u": "s"}, {"e": "C", "u": None}, {"e": "B", "u": 3}])
    assert register(client, v2) == 2
    no_default = {"type": "record", "name": "R", "fields": [{"name": "z", "type": "int"}]}
    assert register(client, no_default) == 3
    d = decoder(client, path, 2)
    got, _, errors = decode(d, blobs)
    assert got == [{"e": "A", "u": "s"}, None, None]
    assert [e.row for e in errors] == [1, 2]
    assert all("cannot be resolved into the reader schema (id 2)" in e.reason for e in errors)
    assert "C" in errors[0].reason
    d3 = decoder(client, path, 3)
    got, _, errors = decode(d3, blobs[:1])
    assert got == [None]
    assert "z" in errors[0].reason and "cannot be resolved" in errors[0].reason


def _ts(logical: str, t: str = "long") -> dict:
    return {"type": t, "logicalType": logical}


@pytest.mark.parametrize("path", PATHS)
def test_timestamp_units_resolve_by_the_writer(path: str) -> None:
    """A writer's time unit survives a reader schema of another unit (review 1, item 3): the
    values are the instants fastavro reads with the writer schema alone (its logical types),
    not the writer's number taken in the reader's unit (dates in 1970)."""
    import io

    import fastavro

    client = new_client()
    units = [  # (writer type, reader type)
        (_ts("timestamp-millis"), _ts("timestamp-micros")),
        (_ts("local-timestamp-millis"), _ts("local-timestamp-micros")),
        (_ts("timestamp-micros"), _ts("timestamp-millis")),
        (_ts("local-timestamp-micros"), _ts("local-timestamp-millis")),
        (_ts("timestamp-millis"), _ts("local-timestamp-micros")),
        (_ts("time-millis", "int"), _ts("time-micros")),
        ("long", _ts("timestamp-millis")),  # no writer unit: the reader's (milliseconds)
    ]
    writer = {
        "type": "record",
        "name": "R",
        "fields": [{"name": f"f{i}", "type": w} for i, (w, _) in enumerate(units)],
    }
    reader = {
        "type": "record",
        "name": "R",
        "fields": [{"name": f"f{i}", "type": r} for i, (_, r) in enumerate(units)],
    }
    at = datetime.datetime(2024, 2, 29, 13, 14, 15, 123456, tzinfo=UTC)
    values = []
    for k in range(3):
        t = at + datetime.timedelta(days=400 * k - 400, microseconds=k)
        naive = t.replace(tzinfo=None)
        values.append(
            {
                "f0": t,
                "f1": naive,
                "f2": t,
                "f3": naive,
                "f4": t,
                "f5": t.time().replace(microsecond=t.microsecond // 1000 * 1000),
                "f6": 1_709_212_455_123 + k,
            }
        )
    blobs = serialize(client, writer, values)
    assert register(client, reader) == 2
    parsed = fastavro.parse_schema(writer)
    expect = []
    for b in blobs:  # fastavro with the writer schema, independent of kafkalog's resolution
        v = fastavro.schemaless_reader(io.BytesIO(b[5:]), parsed, None)
        tod = v["f5"]
        v["f5"] = ((tod.hour * 60 + tod.minute) * 60 + tod.second) * 10**6 + tod.microsecond
        v["f6"] = datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(
            milliseconds=v["f6"]
        )
        v["f4"] = v["f4"].replace(tzinfo=None)  # into a local timestamp: the same numbers
        expect.append(v)
    d = decoder(client, path, 2)
    got, ids, errors = decode(d, blobs)
    assert errors == []
    assert ids == [1, 1, 1]
    assert got == expect
    assert got[0]["f0"] == datetime.datetime(2023, 1, 25, 13, 14, 15, 123000, tzinfo=UTC)
    assert got[2]["f2"] == values[2]["f2"]  # microseconds kept in a reader's millis timestamp


@pytest.mark.parametrize("path", PATHS)
def test_nanosecond_timestamps_do_not_resolve_into_microseconds(path: str) -> None:
    """A ``timestamp-nanos`` writer read as a microsecond timestamp is a value that cannot be
    resolved, not a date a thousand times too far (review 1, item 3)."""
    client = new_client()
    w = {"type": "record", "name": "R", "fields": [{"name": "t", "type": _ts("timestamp-nanos")}]}
    r = {"type": "record", "name": "R", "fields": [{"name": "t", "type": _ts("timestamp-micros")}]}
    blobs = serialize(client, w, [{"t": 1_709_212_455_123_456_789}])
    assert register(client, r) == 2
    got, _, errors = decode(decoder(client, path, 2), blobs)
    assert got == [None]
    assert len(errors) == 1 and "timestamp-nanos" in errors[0].reason
    assert "cannot be resolved into the reader schema (id 2)" in errors[0].reason


def _dec(precision: int, scale: int, size: int | None = None) -> dict:
    if size is None:
        return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    return {
        "type": "fixed",
        "name": f"F{size}",
        "size": size,
        "logicalType": "decimal",
        "precision": precision,
        "scale": scale,
    }


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fixed", [False, True])
def test_decimals_are_rescaled_exactly_to_the_readers_scale(path: str, fixed: bool) -> None:
    """A decimal written with scale 2 and read with another scale is the same number when the
    reader's type holds it exactly, else an invalid value through ``mode``, never a number
    10**k off (review 1, item 4). Expected values: fastavro's reading with the writer schema."""
    import io

    import fastavro

    client = new_client()
    size = 9 if fixed else None
    writer = {"type": "record", "name": "R", "fields": [{"name": "d", "type": _dec(12, 2, size)}]}
    numbers = ["1.23", "-4.50", "1234567.89", "0.00", "-9999999999.99", "7.00"]
    values = [{"d": decimal.Decimal(x)} for x in numbers]
    blobs = serialize(client, writer, values)
    parsed = fastavro.parse_schema(writer)
    written = [fastavro.schemaless_reader(io.BytesIO(b[5:]), parsed, None)["d"] for b in blobs]
    assert [str(x) for x in written] == numbers

    def read(precision: int, scale: int) -> tuple[list, list[int]]:
        reader = {
            "type": "record",
            "name": "R",
            "fields": [{"name": "d", "type": _dec(precision, scale, size)}],
        }
        sid = register(client, reader)
        got, _, errors = decode(decoder(client, path, sid), blobs)
        assert all("does not fit" in e.reason for e in errors), errors
        return [None if g is None else g["d"] for g in got], [e.row for e in errors]

    # scale 4: every value, exactly (as Java reads it: 0.0123, -0.0450, ...)
    got, bad = read(16, 4)
    assert bad == [] and got == written and str(got[0]) == "1.2300"
    # scale 1: the values whose last digit is 0; the others would lose it
    got, bad = read(12, 1)
    assert bad == [0, 2, 4]
    assert got == [None, written[1], None, written[3], None, written[5]]
    assert str(got[1]) == "-4.5"
    # scale 0 and precision 3: 0 and 7; -4.50 loses a digit, the others pass the precision
    got, bad = read(3, 0)
    assert got == [None, None, None, 0, None, 7] and bad == [0, 1, 2, 4]
    # a higher scale past the precision: 1234567.89 needs 11 digits at scale 4
    got, bad = read(10, 4)
    assert bad == [2, 4] and got[0] == written[0]
