"""A short run of the decoder fuzz harness (tests/decoder_fuzz.py: internal topics, Avro,
Protobuf and JSON values, ``_schemas`` records), and every failure its campaigns found, kept as
a regression test.

CI runs this file again against the bounds-checked and the sanitizer builds of the kernels. A
longer campaign: ``nice -n 10 python tests/decoder_fuzz.py --family all --inputs 1000000``;
``KAFKALOG_FUZZ_ITERATIONS`` scales the run here (inputs per family, default below).
"""

from __future__ import annotations

import faulthandler
import io
import json
import os
import random
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from decoder_fuzz import FAMILIES, run

import kafkalog_source as kl
from kafkalog_source.errors import UndecodablePayloadError, UndecodableRecordError

# inputs per family: the whole run takes a few seconds a family on one core
ITERATIONS = int(os.environ.get("KAFKALOG_FUZZ_ITERATIONS", "0")) or {
    "internal": 4000,
    "avro": 4000,
    "protobuf": 3000,
    "json": 4000,
    "schemas": 1000,
}
SEED = int(os.environ.get("KAFKALOG_FUZZ_SEED", "20261127"))


@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_fuzz(family: str, tmp_path: Path) -> None:
    """Mutated inputs of one family: only KafkaLogErrors, valid Arrow output, the modes
    agreeing, no input slower than the harness allows, and for Avro both paths agreeing."""
    n = ITERATIONS if isinstance(ITERATIONS, int) else ITERATIONS[family]
    faulthandler.dump_traceback_later(600, exit=True)  # a hang inside compiled code
    try:
        camp = run([family], n, SEED, tmp_path / "failures")
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert camp.inputs[family] >= n
    assert not camp.failures.get(family), camp.report()


# ---------------------------------------------------------------------------------------------
# findings of the campaigns (beyond the list, which tests/test_hostile_inputs.py holds)


def test_raw_row_of_a_snapshot_named_with_an_epoch_past_int32(tmp_path: Path) -> None:
    """Found by the internal family: decode=auto reads a topic it has no interpretation for
    raw, but a KRaft snapshot file name's id still fills snapshot_end_epoch: an epoch past
    int32 raised ArrowInvalid. Such a row goes through mode as any other."""
    from conftest import kp_v2_batch

    d = tmp_path / "orders-0"
    d.mkdir()
    snap = d / "00000000000000000978-9999999999.checkpoint"
    snap.write_bytes(kp_v2_batch([(1, b"k", b"v", [])]))
    with pytest.raises(UndecodableRecordError, match="snapshot_end_epoch 9999999999"):
        kl.read_table(snap, decode="auto")
    st = kl.ReadStats()
    t = kl.read_table(snap, decode="auto", mode="PERMISSIVE", stats=st)
    [row] = t.to_pylist()
    assert row["value"] == b"v" and "9999999999" in row["error"] and st.undecodable_records == 1
    assert row["snapshot_end_epoch"] is None
    assert kl.read_table(snap, decode="auto", mode="DROPMALFORMED").num_rows == 0


@pytest.mark.parametrize(
    "text,field",
    [
        (b'{"s": "\\udc80"}', "s"),
        (b'{"m": {"\\ud800": "x"}}', "m"),
        (b'{"any": ["\\udfff"]}', "any"),
    ],
)
def test_json_lone_surrogate_is_an_invalid_value(tmp_path: Path, text: bytes, field: str) -> None:
    """Found by the json family: a JSON string may escape a lone surrogate (``"\\udc80"``),
    which json.loads accepts and no string column can hold: UnicodeEncodeError ended the read.
    Now the value goes through mode, naming the field."""
    from decoder_fuzz_payloads import JSON_SCHEMA
    from test_hostile_inputs import _log_dir, _wire
    from test_registry import schema_key, schema_value

    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, json.dumps(JSON_SCHEMA), "JSON"))
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b'{"s": "ok"}'), _wire(1, text), text])
    with pytest.raises(UndecodablePayloadError, match=f"field {field}.*lone surrogate"):
        kl.read_table(d, valueFormat="json")
    t = kl.read_table(d, valueFormat="json", mode="PERMISSIVE")
    errors = t.column("value_error").to_pylist()
    assert errors[0] is None and all("lone surrogate" in e for e in errors[1:])
    assert t.column("value_decoded").to_pylist()[0]["s"] == "ok"


def _avro(writer: Any, reader: Any, payloads: list[bytes]) -> list[tuple[Any, Any]]:
    """Both paths over ``payloads`` (writer id 1): (values, error rows) of each."""
    from payload_registry import FakeRegistry, RegisteredSchema

    from kafkalog_source.payloads.avro import AvroDecoder

    reg = FakeRegistry()
    reg.add("w", 1, RegisteredSchema(1, "AVRO", json.dumps(writer)))
    r = reg.add("r", 1, RegisteredSchema(2, "AVRO", json.dumps(reader)))
    out = []
    for kernel in (True, False):
        d = AvroDecoder(reg, r)
        d.use_kernel = kernel
        got = d.decode(pa.array([b"\0\0\0\0\1" + p for p in payloads], pa.binary()))
        out.append((got.values.to_pylist(), {e.row: e.reason for e in got.errors}))
    return out


REC = {"type": "record", "name": "R", "fields": []}


def _rec(*fields: Any) -> dict:
    return dict(REC, fields=[{"name": f"f{i}", "type": t} for i, t in enumerate(fields)])


@pytest.mark.parametrize(
    "writer,reader,payload,why",
    [
        # fastavro indexed the symbols from the end
        (
            _rec({"type": "enum", "name": "E", "symbols": ["A", "B"]}),
            None,
            b"\x01",
            "enum index -1",
        ),
        # a 10-byte varint whose last byte holds more than the 64th bit: fastavro read a huge
        # union index, the kernel wrapped it to branch 0
        (_rec(["null", "int"]), None, b"\x80" * 9 + b"\x02", "more than 64 bits"),
        # string promoted to bytes: fastavro decoded the string first
        (_rec("string"), _rec("bytes"), b"\x02\xff", "not valid UTF-8"),
        # an int past 32 bits (both refuse it; the fastavro path now by the same check)
        (_rec("int"), None, b"\xfe\xff\xff\xff\x1f", "out of the 32-bit range"),
        # a map key twice: fastavro's dict kept the last, the kernel both entries
        (_rec({"type": "map", "values": "int"}), None, b"\x04\x02a\x02\x02a\x04\x00", "key twice"),
        # the same key twice, its length once as 1 byte and once as 2 (a varint not in its
        # shortest form): the fastavro path compared the encoded keys (found by a campaign)
        (
            _rec({"type": "map", "values": "boolean"}),
            None,
            b"\x02\x00\x00\x02\x80\x00\x01\x00",
            "key twice",
        ),
        # a negative block size in a block-counted array: fastavro ignored it
        (_rec({"type": "array", "items": "int"}), None, b"\x01\x01\x02\x00", "negative length"),
    ],
)
def test_avro_paths_agree_on_what_the_campaign_found(
    writer: Any, reader: Any, payload: bytes, why: str
) -> None:
    """Found by the avro family (the compiled program and the fastavro path disagreed):
    each is now an invalid value on both paths."""
    if reader is None:
        reader = writer
    else:
        reader = dict(reader, fields=[f for f in reader["fields"] if f["type"] is not None])
    (kv, ke), (rv, re_) = _avro(writer, reader, [payload])
    assert list(ke) == list(re_) == [0], (ke, re_)
    assert why in ke[0], ke  # the fastavro path words some reasons its own way
    assert kv == rv == [None]


def test_avro_string_the_reader_skips_is_not_looked_at() -> None:
    """Found by the avro family: a string the reader skips that is not UTF-8 was decoded by
    the fastavro path (an error) and not by the kernel. Both then refused it; now both skip it
    unread, as Java's decoder skips a writer-only field (issue 40 item 10): the value decodes.
    fastavro's own resolution (writer and reader schemas) skips it so too."""
    writer, reader = _rec("string", "int"), {**REC, "fields": [{"name": "f1", "type": "int"}]}
    (kv, ke), (rv, re_) = _avro(writer, reader, [b"\x02\xff\x02"])
    assert ke == re_ == {}
    expected = fastavro.schemaless_reader(
        io.BytesIO(b"\x02\xff\x02"), fastavro.parse_schema(writer), fastavro.parse_schema(reader)
    )
    assert kv == rv == [expected] == [{"f1": 1}]


def test_avro_union_branch_exact_before_promotion() -> None:
    """Found by the differential test while the fastavro path still let fastavro resolve
    unions: a writer string branch read into a reader union [bytes, ..., string] went to the
    first branch it promotes to (bytes, as fastavro resolves), the kernel's to the exact one
    (string, as Java resolves). Both take the exact one."""
    u = ["bytes", {"type": "record", "name": "Q", "fields": []}, "string"]
    w = _rec(u)
    (kv, ke), (rv, re_) = _avro(w, w, [b"\x04\x02x"])
    assert ke == re_ == {}
    assert kv == rv == [{"f0": {"member0": None, "member1": None, "member2": "x"}}]


def test_fuzz_helpers_mutate() -> None:
    """The harness's own mutators change their input and keep the framing they promise."""
    from decoder_fuzz import mutate_bytes, mutate_json
    from decoder_fuzz_payloads import _pb_bytes, _pb_fields, mutate_protobuf

    rnd = random.Random(5)
    seed = b"\x08\x96\x01\x12\x03abc"
    assert _pb_bytes(_pb_fields(seed)) == seed
    assert any(mutate_bytes(rnd, seed, [seed]) != seed for _ in range(5))
    assert all(_pb_fields(mutate_protobuf(rnd, seed)) is not None for _ in range(50))
    doc = {"a": [1, {"b": "c"}]}
    assert any(mutate_json(rnd, doc) != doc for _ in range(5)) and doc == {"a": [1, {"b": "c"}]}
