"""Avro payloads, continued from test_payload_avro.py (whose serializer, registry and schemas
these tests share): damaged bytes are errors on both paths, an id of another schema type, JSON
output with each writer schema, schema references, random values and damaged values on both
paths (the compiled kernel and the fastavro reference) compared, the kernel fuzzed.

CI runs this file again against the bounds-checked and the sanitizer builds of the kernels.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaReference as CSchemaReference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_payload_avro import (
    ALL,
    ENUM,
    PATHS,
    POINT,
    V1,
    V2,
    FakeRegistry,
    all_value,
    decode,
    decoder,
    new_client,
    register,
    serialize,
)

from kafkalog_source.format.registry import RegisteredSchema
from kafkalog_source.payloads.avro import NO_PREFIX, AvroDecoder

# ------------------------------------------------------------------------------- bad bytes


@pytest.mark.parametrize("path", PATHS)
def test_damaged_values_are_errors_not_exceptions(path: str) -> None:
    client = new_client()
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "s", "type": "string"},
            {"name": "a", "type": {"type": "array", "items": "long"}},
        ],
    }
    good = serialize(client, schema, [{"s": "hello", "a": [1, 2, 3]}])[0]
    blobs = [
        good,
        good[:-2],  # truncated
        good[:5],  # prefix only
        b"\x00\x00\x00\x00\x01" + b"\xff" * 12,  # garbage: a varint too long
        b"\x00\x00\x00\x00\x09" + good[5:],  # unknown id
        b"plain text",  # no prefix
        b"\x01\x00\x00\x00\x01" + good[5:],  # wrong magic byte
        b"",
        None,
        good + b"\x00",  # trailing byte
        b"\x00\x00\x00\x00\x01" + b"\x0a" + b"\xc3\x28abc" + b"\x00",  # bad UTF-8
        b"\x00\x00\x00\x00\x01" + b"\x01",  # negative length
    ]
    got, ids, errors = decode(decoder(client, path, 1), blobs)
    assert got == [{"s": "hello", "a": [1, 2, 3]}] + [None] * 11
    assert ids == [1, 1, 1, 1, 9, None, None, None, None, 1, 1, 1]
    by_row = {e.row: e for e in errors}
    assert sorted(by_row) == [1, 2, 3, 4, 5, 6, 7, 9, 10, 11]
    for r in (5, 6, 7):
        assert by_row[r].reason == NO_PREFIX and by_row[r].schema_id is None
    assert by_row[4].reason.startswith("schema id 9 is not in the registry")
    for r in (1, 2, 3, 9, 10, 11):
        assert by_row[r].reason.startswith("does not parse as Avro with schema id 1"), r
        assert by_row[r].schema_id == 1
    assert "remain after the value" in by_row[9].reason


@pytest.mark.parametrize("path", PATHS)
def test_an_id_of_another_schema_type(path: str) -> None:
    client = new_client()
    blobs = serialize(client, "string", ["x"])
    reg = FakeRegistry(client)
    reg.by_id = lambda i, _b=reg.by_id: (  # type: ignore[method-assign]
        RegisteredSchema(7, "PROTOBUF", "syntax = 'proto3';") if i == 7 else _b(i)
    )
    d = AvroDecoder(reg, reg.by_id(1))
    d.use_kernel = path == "kernel"
    out = d.decode(pa.array([b"\x00\x00\x00\x00\x07\x02x", blobs[0]]))
    assert out.values.to_pylist() == [None, "x"]
    assert [e.reason for e in out.errors] == ["schema id 7 is a PROTOBUF schema, not AVRO"]


# ------------------------------------------------------------------------------------ JSON


def test_as_json_uses_each_writer_schema() -> None:
    client = new_client()
    v = all_value(3)
    blobs = serialize(client, ALL, [v]) + serialize(
        client,
        V1,
        [
            {
                "id": 1,
                "amount": 2.5,
                "note": "n",
                "gone": [],
                "state": "NEW",
                "tag": None,
                "blob": "b",
                "any": 4,
                "old": "o",
            }
        ],
    )
    d = decoder(client, "reference", None, as_json=True)
    assert d.type == pa.string()
    got, ids, errors = decode(d, blobs + [b"junk"])
    assert ids == [1, 2, None] and [e.row for e in errors] == [2]
    doc = json.loads(got[0])
    assert doc["by"] == "AAECAwQFBgcI"  # base64
    assert (
        doc["u"] == {"x": 0.5, "y": 0.25} and doc["e"] == "HEARTS" and doc["dec"] == "-3703701.03"
    )
    assert doc["tsms"] == "2024-02-29T03:01:02.003000Z" and doc["date"] == "1978-03-20"
    assert doc["d"] == -0.75 and doc["m"] == {"k0": "", "k1": "v", "k2": "vv"}
    assert json.loads(got[1])["any"] == 4


# ------------------------------------------------------------------------------ references


@pytest.mark.parametrize("path", PATHS)
def test_schema_references(path: str) -> None:
    client = new_client()
    register(client, POINT, topic="points")  # subject points-value, version 1
    outer = {
        "type": "record",
        "name": "Line",
        "fields": [{"name": "a", "type": "Point"}, {"name": "b", "type": ["null", "Point"]}],
    }
    ref = CSchemaReference("Point", "points-value", 1)
    value = {"a": {"x": 1.0, "y": 2.0}, "b": None}
    blobs = serialize(client, outer, [value], topic="lines", refs=[ref])
    d = decoder(client, path, client.get_latest_version("lines-value").schema_id)
    got, _, errors = decode(d, blobs)
    assert errors == [] and got == [value]


# ------------------------------------------------------------------------------ properties

PROP = {
    "type": "record",
    "name": "P",
    "fields": [
        {"name": "l", "type": "long"},
        {"name": "s", "type": "string"},
        {"name": "o", "type": ["null", "double"]},
        {"name": "a", "type": {"type": "array", "items": ["null", "int", "string"]}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "boolean"}}},
        {"name": "b", "type": "bytes"},
        {
            "name": "r",
            "type": {
                "type": "record",
                "name": "Q",
                "fields": [{"name": "f", "type": "float"}, {"name": "e", "type": ENUM}],
            },
        },
    ],
}
_text = st.text(st.characters(codec="utf-8"), max_size=20)
_prop_value = st.fixed_dictionaries(
    {
        "l": st.integers(-(2**63), 2**63 - 1),
        "s": _text,
        "o": st.none() | st.floats(allow_nan=False),
        "a": st.lists(st.none() | st.integers(-(2**31), 2**31 - 1) | _text, max_size=5),
        "m": st.dictionaries(_text, st.lists(st.booleans(), max_size=3), max_size=3),
        "b": st.binary(max_size=20),
        "r": st.fixed_dictionaries(
            {"f": st.floats(width=32, allow_nan=False), "e": st.sampled_from(ENUM["symbols"])}
        ),
    }
)


def _prop_expected(v: dict[str, Any]) -> dict[str, Any]:
    out = dict(v)
    out["a"] = [
        None
        if x is None
        else {"member0": x, "member1": None}
        if isinstance(x, int)
        else {"member0": None, "member1": x}
        for x in v["a"]
    ]
    out["m"] = list(v["m"].items())
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_prop_value, max_size=20))
def test_random_values_on_both_paths(values: list[dict[str, Any]]) -> None:
    client = new_client()
    register(client, PROP)
    blobs = serialize(client, PROP, values)
    want = [_prop_expected(v) for v in values]
    for path in PATHS:
        got, _, errors = decode(decoder(client, path, 1), blobs)
        assert errors == [] and got == want, path


# ------------------------------------------------------------------- differential and fuzzing


def _mutants(blobs: list[bytes], rnd: Any, count: int) -> list[bytes]:
    """Damaged copies of wire-format values: bit flips, overwritten, inserted and deleted
    bytes, truncations and appended garbage (the prefix kept, so the payload is parsed)."""
    out = []
    for _ in range(count):
        b = bytearray(rnd.choice(blobs))
        for _ in range(rnd.randint(1, 3)):
            how = rnd.randrange(6)
            p = rnd.randrange(5, max(len(b), 6))
            if how == 0 and p < len(b):
                b[p] ^= 1 << rnd.randrange(8)
            elif how == 1 and p < len(b):
                b[p] = rnd.choice([0x00, 0x7F, 0x80, 0xFF, rnd.randrange(256)])
            elif how == 2:
                b[p:p] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
            elif how == 3:
                del b[p : p + rnd.randint(1, 4)]
            elif how == 4:
                del b[p:]
            else:
                b += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 9)))
        out.append(bytes(b))
    return out


def test_damaged_values_differential() -> None:
    """On damaged values both paths agree on which rows decode and on their values (an int
    beyond 32 bits too: the fastavro path refuses it as the kernel does)."""
    import random

    client = new_client()
    blobs = serialize(
        client,
        PROP,
        [
            {
                "l": i * 7919,
                "s": "é" * (i % 4),
                "o": None if i % 2 else 1.5,
                "a": [None, i, "x"][: i % 4],
                "m": {"k": [True, False]} if i % 3 else {},
                "b": bytes([i % 256]) * (i % 5),
                "r": {"f": 0.5, "e": "SPADES"},
            }
            for i in range(20)
        ],
    )
    rnd = random.Random(1234)
    mutants = _mutants(blobs, rnd, 600)
    k_vals, _, k_err = decode(decoder(client, "kernel", 1), mutants)
    r_vals, _, r_err = decode(decoder(client, "reference", 1), mutants)
    k_rows = {e.row for e in k_err}
    r_rows = {e.row for e in r_err}
    assert k_rows == r_rows
    for row in range(len(mutants)):
        if row not in k_rows:
            assert k_vals[row] == r_vals[row], row
    assert len(k_rows) > 300 and len(k_rows) < 600  # both kinds occur


FUZZ_ITERATIONS = int(__import__("os").environ.get("KAFKALOG_FUZZ_ITERATIONS", "3000"))


def test_kernel_fuzz() -> None:
    """Random damage to values of the every-type schema and the evolution pair, decoded by
    the kernel: only row errors, never an exception (CI runs this against the bounds-checked
    build, where any read or write out of bounds raises, and the sanitizer build)."""
    import random

    client = new_client()
    blobs = serialize(client, ALL, [all_value(k) for k in range(7)])
    old = serialize(
        client,
        V1,
        [
            {
                "id": 1,
                "amount": 2.5,
                "note": "n1",
                "gone": [{"a": b"x"}, {}],
                "state": "PAID",
                "tag": None,
                "blob": "é",
                "any": 7,
                "old": "o",
            }
        ],
    )
    register(client, V2)
    rnd = random.Random(99)
    every = decoder(client, "kernel", 1)
    evolved = decoder(client, "kernel", 3)
    done = 0
    while done < FUZZ_ITERATIONS:
        mutants = _mutants(blobs + old, rnd, 200) + [rnd.randbytes(rnd.randrange(40))]
        for d in (every, evolved):
            out = d.decode(pa.array(mutants, pa.binary()))
            assert len(out.values) == len(mutants)
            out.values.validate(full=True)
        done += len(mutants)


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_string_columns_that_fill_their_buffers(share: float, monkeypatch: Any) -> None:
    """String columns that fill their share of the buffers (the kernel grows them) next to each
    other: no column's bytes leak into the next one's (16-byte moves near a region's end; the
    benchmark's schema found it)."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    import payloads as bench

    from kafkalog_source.payloads import avro_program

    monkeypatch.setattr(avro_program, "DATA_SHARE", share)
    values = bench.make_values(20_000)
    client = new_client()
    sid = register(client, bench.SCHEMA)
    blobs = serialize(client, bench.SCHEMA, values)
    kernel, _, errors = decode(decoder(client, "kernel", sid), blobs)
    reference, _, _ = decode(decoder(client, "reference", sid), blobs)
    assert errors == [] and kernel == reference


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(
    "body",
    [
        b"\x80\x80\x80\x80\x80\x80\x80\x01",  # a block of ~2**48 null items in 8 bytes
        b"\xff\xff\xff\xff\xff\xff\xff\x01\x00",  # a negative count (then a block size)
    ],
)
def test_block_counts_are_bounded_on_every_path(as_json: bool, body: bytes) -> None:
    """Bytes built by hand (no serializer writes these): a value whose block count asks for
    more items than its bytes could hold is an error on the compiled path and on the fastavro
    path (payloadAs=json) alike, instead of fastavro allocating the items."""
    from kafkalog_source.format.registry import RegisteredSchema, Registry

    schema = RegisteredSchema(
        1,
        "AVRO",
        json.dumps(
            {
                "type": "record",
                "name": "R",
                "fields": [{"name": "xs", "type": {"type": "array", "items": "null"}}],
            }
        ),
    )
    reg = Registry.from_versions([("t-value", 1, schema)])
    dec = AvroDecoder(reg, None if as_json else schema, as_json=as_json)
    out = dec.decode(pa.array([b"\x00\x00\x00\x00\x01" + body], pa.binary()))
    assert out.values.to_pylist() == [None]
    [err] = out.errors
    assert "array or map block" in err.reason and err.schema_id == 1


# ------------------------------------------------- fields the reader skips (issue 40 item 10)

# A writer-only field is skipped as Apache Avro's Java decoder skips it (release-1.12.1:
# GenericDatumReader.skip over BinaryDecoder, what a Java consumer runs for a field its reader
# schema lacks): readBoolean takes any byte, skipString/skipBytes skip the length's bytes
# unread, readEnum's index is not checked, a union index must name a branch.


def _rec(*fields: tuple[str, Any], name: str = "R") -> dict:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


SKIP_W = _rec(("a", "int"), ("b", "boolean"), ("s", "string"), ("c", "int"))
SKIP_R = _rec(("a", "int"), ("c", "int"))  # b and s are writer-only
SKIPPED = [  # a = 1, c = 2, and b and s damaged as Java skips them unread
    b"\x02" + b"\x02" + b"\x02x" + b"\x04",  # b is the byte 2
    b"\x02" + b"\xff" + b"\x02x" + b"\x04",  # b is the byte 255
    b"\x02" + b"\x01" + b"\x04\xff\xfe" + b"\x04",  # s is ff fe: not UTF-8
    b"\x02" + b"\x02" + b"\x04\xc3\x28" + b"\x04",  # both (c3 28: a cut 2-byte sequence)
]


def _only_path(monkeypatch: Any, kernel: str) -> None:
    """Make ``KAFKALOG_AVRO_KERNEL`` choose the path, and the other path fail if it ran."""
    monkeypatch.setenv("KAFKALOG_AVRO_KERNEL", kernel)
    other = "decode_reference" if kernel == "1" else "decode_compiled"

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError(f"{other} ran with KAFKALOG_AVRO_KERNEL={kernel}")

    monkeypatch.setattr(AvroDecoder, other, refuse)


@pytest.mark.parametrize("kernel", ["1", "0"])
def test_fields_the_reader_skips_are_not_looked_at(
    tmp_path: Any, monkeypatch: Any, kernel: str
) -> None:
    """A writer-only boolean stored as the byte 2 or 255, and a writer-only string that is not
    UTF-8, made the whole value malformed on both paths; a Java consumer with the same reader
    schema reads it. Now both paths read it too (FAILFAST: no error), to the row fastavro's own
    resolution gives (its compiled reader skips writer-only booleans and strings unread, as
    Java does), which is {a: 1, c: 2} by hand."""
    from test_hostile_inputs import _avro_dir, _wire

    import kafkalog_source as kl

    _only_path(monkeypatch, kernel)
    w, r = fastavro.parse_schema(SKIP_W), fastavro.parse_schema(SKIP_R)
    expected = [fastavro.schemaless_reader(io.BytesIO(p), w, r) for p in SKIPPED]
    assert expected == [{"a": 1, "c": 2}] * len(SKIPPED)
    d = _avro_dir(tmp_path, json.dumps(SKIP_R), json.dumps(SKIP_W), [_wire(2, p) for p in SKIPPED])
    t = kl.read_table(d, valueFormat="avro")  # FAILFAST
    assert t.column("value_decoded").to_pylist() == expected
    assert t.column("value_schema_id").to_pylist() == [2] * len(SKIPPED)


@pytest.mark.parametrize("kernel", ["1", "0"])
@pytest.mark.parametrize(
    "payload,words",
    [
        (SKIPPED[0], ["a boolean is the byte 2"]),
        (SKIPPED[1], ["a boolean is the byte 255"]),
        (SKIPPED[2], ["utf-8"]),  # the kernel's and fastavro's words differ but for this
        (SKIPPED[3], ["a boolean is the byte 2"]),  # the first in the value's bytes
    ],
)
def test_the_same_bytes_in_fields_the_reader_reads_are_invalid(
    tmp_path: Any, monkeypatch: Any, kernel: str, payload: bytes, words: list[str]
) -> None:
    """The same bytes in fields the reader reads (the reader is the writer) stay invalid, as
    before: FAILFAST raises naming the offset and why, PERMISSIVE keeps the row with the reason
    in value_error, on both paths."""
    from test_hostile_inputs import _avro_dir, _payload_modes, _wire

    from kafkalog_source.errors import UndecodablePayloadError

    _only_path(monkeypatch, kernel)
    good = b"\x02" + b"\x01" + b"\x02x" + b"\x04"
    d = _avro_dir(tmp_path, json.dumps(SKIP_W), None, [_wire(1, good), _wire(1, payload)])
    got = _payload_modes(d, valueFormat="avro")
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError) and e.offset == 1 and e.schema_id == 1
    rows, st = got["PERMISSIVE"]
    assert rows[0]["value_decoded"] == {"a": 1, "b": True, "s": "x", "c": 2}
    assert rows[0]["value_error"] is None
    assert rows[1]["value_decoded"] is None and st.undecodable_payloads == 1
    for w in words:
        assert w in str(e).lower() and w in rows[1]["value_error"].lower(), (w, str(e))


@pytest.mark.parametrize("kernel", ["1", "0"])
@pytest.mark.parametrize("index", [b"\x0a", b"\x04", b"\x01"])  # branches 5, 2 and -1
def test_a_skipped_union_with_a_branch_out_of_range_fails(
    tmp_path: Any, monkeypatch: Any, kernel: str, index: bytes
) -> None:
    """Java checks what it needs to skip: a writer-only union's index must name a branch
    (GenericDatumReader.skip: ``getTypes().get(readIndex())`` throws); fastavro's resolution
    refuses an index past the branches too. FAILFAST raises, PERMISSIVE keeps the reason, on
    both paths."""
    from test_hostile_inputs import _avro_dir, _payload_modes, _wire

    from kafkalog_source.errors import UndecodablePayloadError

    _only_path(monkeypatch, kernel)
    writer = _rec(("a", "int"), ("u", ["null", "int"]), ("c", "int"))
    bad = b"\x02" + index + b"\x04"
    branch = {b"\x0a": 5, b"\x04": 2, b"\x01": -1}[index]
    if branch >= 0:  # fastavro takes -1 as Python does, the last branch (then ends early)
        with pytest.raises(IndexError):
            fastavro.schemaless_reader(
                io.BytesIO(bad), fastavro.parse_schema(writer), fastavro.parse_schema(SKIP_R)
            )
    values = [_wire(2, b"\x02" + b"\x02\x06" + b"\x04"), _wire(2, bad)]  # u = 3, then bad
    d = _avro_dir(tmp_path, json.dumps(SKIP_R), json.dumps(writer), values)
    got = _payload_modes(d, valueFormat="avro")
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError) and e.offset == 1
    assert f"union branch {branch} does not exist" in str(e)
    rows, st = got["PERMISSIVE"]
    assert [r["value_decoded"] for r in rows] == [{"a": 1, "c": 2}, None]
    assert f"union branch {branch} does not exist" in rows[1]["value_error"]


MAP_INT = {"type": "map", "values": "int"}
ENUM2 = {"type": "enum", "name": "E", "symbols": ["X", "Y"]}
ARRAY_LONG = {"type": "array", "items": "long"}


@pytest.mark.parametrize(
    "skipped,raw,why",
    [
        # decode: Java skips these without looking
        ("boolean", b"\x80", None),
        ("string", b"\x06\xed\xa0\x80", None),  # a lone surrogate's UTF-8 bytes
        ("string", b"\x01", None),  # length -1: doSkipBytes skips nothing (1.12.1)
        ("bytes", b"\x03", None),  # length -2
        (MAP_INT, b"\x02\x02\xff\x02\x00", None),  # a key that is not UTF-8
        (MAP_INT, b"\x04\x02a\x02\x02a\x04\x00", None),  # a key twice
        (ENUM2, b"\x12", None),  # index 9 of 2 symbols: readEnum does not check it
        (ENUM2, b"\xff\xff\xff\xff\x7f", None),  # an index past 32 bits, in 5 bytes
        ({"type": "enum", "name": "E0", "symbols": []}, b"\x06", None),  # no symbols at all
        ("int", b"\xfe\xff\xff\xff\x7f", None),  # past 32 bits: readInt drops the high bits
        ("long", b"\xff" * 9 + b"\x7f", None),  # a 10th byte past bit 64: dropped
        (["null", "int"], b"\x80\x80\x80\x80\x10", None),  # index 2**31, low 32 bits: 0
        (ARRAY_LONG, b"\x03\x06\xff\xff\xff\x00", None),  # a sized block: bytes skipped unread
        (ARRAY_LONG, b"\x03\x00\x00", None),  # 2 items in a block of 0 bytes: nothing read
        (
            _rec(("x", "boolean"), ("y", "string"), name="Q"),
            b"\x07\x02\xff",
            None,
        ),  # inside a record
        # fail: Java checks these (or cannot skip them)
        (["null", "int"], b"\x0a", "union branch 5 does not exist"),
        ("int", b"\x80\x80\x80\x80\x80\x00", "longer than 5 bytes"),  # readInt: 5 bytes at most
        (ENUM2, b"\x80\x80\x80\x80\x80\x00", "longer than 5 bytes"),
        ("long", b"\xff" * 10 + b"\x00", "longer than 10 bytes"),
        ("string", b"\x0a", "ends early"),  # 5 bytes that are not there
        (ARRAY_LONG, b"\x03\x0a\x00", "ends early"),  # a block of 5 bytes that are not there
        # refused as Avro's main branch refuses them (1.12.1 skips nothing for them)
        (ARRAY_LONG, b"\x03\x01\x00", "negative length -1"),  # a negative block size
        (ARRAY_LONG, b"\xff" * 9 + b"\x01\x00\x00", "negative length"),  # count INT64_MIN
    ],
)
def test_java_skip_rules_on_both_paths(skipped: Any, raw: bytes, why: str | None) -> None:
    """A writer-only field ``x`` between a = 1 and c = 2, its bytes built by hand: both paths
    decode the value to {a: 1, c: 2} exactly when Java's decoder skips ``x`` (the rules of
    kernel/csrc/kl_avro.h), else both fail saying why."""
    from payload_registry import FakeRegistry as Registry
    from payload_registry import RegisteredSchema as Registered

    writer = _rec(("a", "int"), ("x", skipped), ("c", "int"))
    reg = Registry()
    reg.add("w", 1, Registered(1, "AVRO", json.dumps(writer)))
    reader = reg.add("r", 1, Registered(2, "AVRO", json.dumps(SKIP_R)))
    blob = b"\0\0\0\0\1" + b"\x02" + raw + b"\x04"
    for path in PATHS:
        d = AvroDecoder(reg, reader)
        d.use_kernel = path == "kernel"
        out = d.decode(pa.array([blob], pa.binary()))
        if why is None:
            assert out.errors == [] and out.values.to_pylist() == [{"a": 1, "c": 2}], path
        else:
            [e] = out.errors
            assert why in e.reason and out.values.to_pylist() == [None], (path, e.reason)
