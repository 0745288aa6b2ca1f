"""Hostile input to the decoders above the segment decoder (issue 31): internal topics
(``decode=``), payload values (``valueFormat=``) and the ``_schemas`` replay.

Each test is one failure a fuzz campaign found (or the issue listed): a single bad record ended
or hung the whole read, or escaped as an exception that is not a ``KafkaLogError``. Each input
here is valid where the layer below checks it (the batch CRC holds, the ``_schemas`` record is
JSON, ...), so only the decoder under test can refuse it, and it must do so through ``mode``:
FAILFAST raises a ``KafkaLogError`` naming the file, the byte, the offset and what does not fit;
DROPMALFORMED drops the record or value and counts it; PERMISSIVE keeps it with the reason.
The fuzz harness that found them is tests/decoder_fuzz.py (tests/test_fuzz_decoders.py runs it).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import kp_v2_batch
from internal_encoder import encode, uvarint
from test_internal_dump import kraft_snapshot
from test_registry import schema_key, schema_value, subject_key

import kafkalog_source as kl
from kafkalog_source.errors import (
    InvalidSchemaError,
    KafkaLogError,
    SchemasRecordError,
    UndecodablePayloadError,
    UndecodableRecordError,
)
from kafkalog_source.format.messages.schema import by_name
from kafkalog_source.format.replay import replay

MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")

# ---------------------------------------------------------------------------------------------
# internal topics (decode=)

OFFSET_KEY = struct.pack(">h", 1) + encode(
    by_name("OffsetCommitKey"), 0, {"group": "g", "topic": "t", "partition": 2}
)


def _commit(commit_ts: int, expire_ts: int = -1, version: int = 1) -> bytes:
    fields = {"offset": 42, "metadata": "", "commitTimestamp": commit_ts}
    if version == 1:
        fields["expireTimestamp"] = expire_ts
    else:
        fields["leaderEpoch"] = 1
    return struct.pack(">h", version) + encode(by_name("OffsetCommitValue"), version, fields)


def _partition(root: Path, topic: str, records: list[tuple[Any, ...]]) -> Path:
    d = root / f"{topic}-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(records))
    return d


def _each_mode(path: Path, **options: Any) -> dict[str, Any]:
    """The table of every mode but FAILFAST, and FAILFAST's error (or table)."""
    out: dict[str, Any] = {}
    for mode in MODES:
        st = kl.ReadStats()
        try:
            out[mode] = (kl.read_table(path, mode=mode, stats=st, **options), st)
        except KafkaLogError as e:
            out[mode] = e
    return out


YEAR_10000_MS = 253_402_300_800_000  # 10000-01-01T00:00:00Z


def test_record_timestamp_past_year_9999_is_a_row(tmp_path: Path) -> None:
    """A record timestamp in the year 10000 (valid CRC): the raw read returns the row, so the
    decoded read does too, with the same microseconds (it raised OverflowError from
    ``to_pylist`` in every mode)."""
    d = _partition(
        tmp_path, "__consumer_offsets", [(YEAR_10000_MS + 7, OFFSET_KEY, _commit(5), [])]
    )
    raw = kl.read_table(d, columns=["timestamp"]).column(0).cast(pa.int64()).to_pylist()
    assert raw == [(YEAR_10000_MS + 7) * 1000]
    for mode in MODES:
        t = kl.read_table(d, decode="consumer_offsets", mode=mode)
        assert t.column("timestamp").cast(pa.int64()).to_pylist() == raw
        assert t.column("committed_offset").to_pylist() == [42]
        assert t.column("commit_timestamp").cast(pa.int64()).to_pylist() == [5000]


@pytest.mark.parametrize(
    "commit_ts,expire_ts,column",
    [(1 << 62, -1, "commit_timestamp"), (1_000, (1 << 63) - 1, "expire_timestamp")],
)
def test_typed_timestamp_past_64_bit_microseconds(
    tmp_path: Path, commit_ts: int, expire_ts: int, column: str
) -> None:
    """An OffsetCommit whose commitTimestamp (or expireTimestamp) is 2^62 ms: valid int64 on the
    wire, but its microseconds overflow the timestamp column (it raised OverflowError in every
    mode). Now an undecodable record: FAILFAST names file, byte, offset and the column; the
    others count it; PERMISSIVE keeps its bytes and the reason."""
    d = _partition(
        tmp_path,
        "__consumer_offsets",
        [
            (1, OFFSET_KEY, _commit(1_000), []),
            (2, OFFSET_KEY, _commit(commit_ts, expire_ts), []),
        ],
    )
    got = _each_mode(d, decode="consumer_offsets")
    e = got["FAILFAST"]
    assert isinstance(e, UndecodableRecordError)
    assert e.path.endswith("00000000000000000000.log") and e.position > 0
    assert "offset 1" in str(e) and column in str(e) and "out of the range" in str(e)
    t, st = got["DROPMALFORMED"]
    assert t.column("offset").to_pylist() == [0] and st.undecodable_records == 1
    t, st = got["PERMISSIVE"]
    rows = t.to_pylist()
    assert [r["offset"] for r in rows] == [0, 1] and st.undecodable_records == 1
    assert column in rows[1]["error"] and rows[1][column] is None
    assert rows[1]["value"] == _commit(commit_ts, expire_ts)
    assert rows[1]["record_type"] == "OffsetCommit" and rows[1]["record_version"] == 1


def test_transaction_timestamp_past_64_bit_microseconds(tmp_path: Path) -> None:
    """The other typed timestamp columns alike: a TransactionLog value whose
    transactionStartTimestampMs is 2^62 is an undecodable record naming the column (it raised
    OverflowError for the read)."""
    from internal_encoder import sample

    key = struct.pack(">h", 0) + encode(by_name("TransactionLogKey"), 0, {"transactionalId": "t"})
    spec = by_name("TransactionLogValue")
    fields = sample(spec.fields, 0)
    fields.update(transactionStartTimestampMs=1 << 62, transactionLastUpdateTimestampMs=5)
    value = struct.pack(">h", 0) + encode(spec, 0, fields)
    d = _partition(tmp_path, "__transaction_state", [(1, key, value, [])])
    got = _each_mode(d, decode="transaction_state")
    assert isinstance(got["FAILFAST"], UndecodableRecordError)
    assert "transaction_start_timestamp 4611686018427387904" in str(got["FAILFAST"])
    t, st = got["PERMISSIVE"]
    [row] = t.to_pylist()
    assert "transaction_start_timestamp" in row["error"] and st.undecodable_records == 1
    assert row["transaction_start_timestamp"] is None and row["record_type"] == "TransactionLog"


def test_record_version_past_int32(tmp_path: Path) -> None:
    """A metadata record claiming version 2^31 (an unsigned varint on the wire): a version the
    specs do not define, so kept raw in every mode (issue 34) as unknown:TopicRecord, with a
    null record_version and the claimed version in the error (it raised ArrowInvalid building
    the int32 column)."""
    value = uvarint(1) + uvarint(by_name("TopicRecord").api_key) + uvarint(1 << 31) + b"\0\0"
    d = _partition(tmp_path, "__cluster_metadata", [(1, None, value, [])])
    got = _each_mode(d, decode="cluster_metadata")
    for mode in MODES:
        t, st = got[mode]
        [row] = t.to_pylist()
        assert row["record_version"] is None and "2147483648" in row["error"]
        assert row["record_type"] == "unknown:TopicRecord" and row["value"] == value
        assert st.unknown_records == 1 and st.undecodable_records == 0


@pytest.mark.parametrize("decode", ["auto", "cluster_metadata"])
def test_snapshot_named_with_an_epoch_past_int32(tmp_path: Path, decode: str) -> None:
    """A KRaft snapshot file named ``...-9999999999.checkpoint`` (Kafka's Snapshots.parse
    refuses the epoch: Integer.parseInt): its rows go through mode (it raised ArrowInvalid from
    the int32 snapshot_end_epoch column, which broke decode=auto)."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    snap = d / "00000000000000000978-9999999999.checkpoint"
    snap.write_bytes(kraft_snapshot())
    got = _each_mode(snap, decode=decode)
    e = got["FAILFAST"]
    assert isinstance(e, UndecodableRecordError) and e.path == str(snap)
    assert "snapshot_end_epoch 9999999999" in str(e) and "offset 0" in str(e)
    t, st = got["DROPMALFORMED"]
    assert t.num_rows == 0 and st.undecodable_records == 5
    t, st = got["PERMISSIVE"]
    rows = t.to_pylist()
    assert len(rows) == 5 and all("9999999999" in r["error"] for r in rows)
    assert {r["snapshot_end_epoch"] for r in rows} == {None}


# ---------------------------------------------------------------------------------------------
# the _schemas topic


def _wire(schema_id: int, payload: bytes) -> bytes:
    return b"\0" + struct.pack(">i", schema_id) + payload


def _log_dir(
    root: Path, schemas: list[tuple[bytes | None, bytes | None]], values: list[bytes | None]
) -> Path:
    """A log directory: ``_schemas-0`` holding ``schemas`` (key, value) and ``t-0`` holding
    ``values``; returns ``t-0``."""
    _partition(root, "_schemas", [(1, k, v, []) for k, v in schemas])
    return _partition(root, "t", [(1, b"k", v, []) for v in values])


def _finishes(fn: Any, seconds: float = 120.0) -> Any:
    """``fn()``'s result; fails (instead of hanging the suite) when it has not returned in
    ``seconds``. A hang detector, not a speed goal: the work is linear and takes milliseconds."""
    import threading

    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"did not return in {seconds} s"
    return box[0]


AVRO_INT = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


def test_delete_subject_of_version_2147483647_does_not_hang(tmp_path: Path) -> None:
    """One DELETE_SUBJECT record with ``"version": 2147483647`` (a valid int32) made the replay
    walk every number up to it: every valueFormat read of the log directory spun for minutes.
    The replay now visits only the versions the store holds; the subject's versions are
    soft-deleted, their ids still resolve, and values still decode."""
    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, AVRO_INT)),
        (
            subject_key("DELETE_SUBJECT", "t-value"),
            json.dumps({"subject": "t-value", "version": 2147483647}).encode(),
        ),
    ]
    reg = _finishes(lambda: replay([(k, v, i) for i, (k, v) in enumerate(schemas)]))
    assert reg.versions("t-value", deleted=True) == [1] and reg.by_id(1).deleted
    d = _log_dir(tmp_path, schemas, [_wire(1, b"\x04")])
    t = _finishes(lambda: kl.read_table(d, valueFormat="avro", valueSchemaVersion=1))
    assert t.column("value_decoded").to_pylist() == [{"a": 2}]


def _record(*fields: dict) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": list(fields)})


def _avro_dir(root: Path, reader: str, writer: str | None, values: list[bytes]) -> Path:
    """Subject ``t-value`` version 1 (id 1) = ``reader``; subject ``w`` version 1 (id 2) =
    ``writer``; ``values`` in ``t-0``."""
    schemas = [(schema_key("t-value", 1), schema_value("t-value", 1, 1, reader))]
    if writer is not None:
        schemas.append((schema_key("w", 1), schema_value("w", 1, 2, writer)))
    return _log_dir(root, schemas, values)


def _payload_modes(d: Path, **options: Any) -> dict[str, Any]:
    got = _each_mode(d, **options)
    for mode in ("DROPMALFORMED", "PERMISSIVE"):
        if not isinstance(got[mode], KafkaLogError):
            t, st = got[mode]
            got[mode] = (t.select(["offset", "value_decoded", "value_error"]).to_pylist(), st)
    return got


def _only_value_two_fails(got: dict[str, Any], *words: str) -> None:
    """Offset 0 decodes to ``{"a": 1}``; offset 1 does not: FAILFAST names it (file, byte,
    offset, schema id and ``words``), DROPMALFORMED drops it, PERMISSIVE keeps it with the
    reason; both count it."""
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError), e
    assert e.offset == 1 and e.schema_id == 2 and e.path.endswith(".log") and e.position == 0
    for w in words:
        assert w in str(e), (w, str(e))
    rows, st = got["DROPMALFORMED"]
    assert [r["offset"] for r in rows] == [0] and st.undecodable_payloads == 1
    rows, st = got["PERMISSIVE"]
    assert [r["value_decoded"] for r in rows] == [{"a": 1}, None]
    assert rows[0]["value_error"] is None and st.undecodable_payloads == 1
    for w in words:
        assert w in rows[1]["value_error"], (w, rows[1]["value_error"])


@pytest.mark.parametrize("kernel", ["1", "0"])
def test_avro_boolean_byte_2_is_invalid(tmp_path: Path, monkeypatch: Any, kernel: str) -> None:
    """An Avro boolean stored as the byte 2 decoded as true with no error. Avro's
    specification allows only 0 and 1 (Java's decoder reads 2 as false): an invalid value,
    through mode, on the compiled path and the fastavro path alike."""
    monkeypatch.setenv("KAFKALOG_AVRO_KERNEL", kernel)
    reader = _record({"name": "a", "type": "int"}, {"name": "b", "type": "boolean"})
    d = _avro_dir(tmp_path, reader, reader, [_wire(1, b"\x02\x01"), _wire(2, b"\x02\x02")])
    got = _payload_modes(d, valueFormat="avro")
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError) and e.offset == 1
    assert "a boolean is the byte 2" in str(e) and "subject w version 1" in str(e)
    rows, st = got["PERMISSIVE"]
    assert rows[0]["value_decoded"] == {"a": 1, "b": True} and rows[1]["value_decoded"] is None
    assert "byte 2" in rows[1]["value_error"] and st.undecodable_payloads == 1


@pytest.mark.parametrize(
    "bad,words",
    [
        ({"name": ["x"], "type": "int"}, ["a name must be a string"]),
        (
            {"name": "f", "type": {"type": "fixed", "name": "F", "size": {}}},
            ["invalid or no size of fixed F"],
        ),
        ({"name": "a", "type": "string"}, ["duplicate field a in record R"]),
        ({"name": "n", "type": ["int", "int"]}, ["duplicate in union: int"]),
        ({"name": "\udc80", "type": "int"}, ["illegal initial character", "\\udc80"]),
    ],
)
def test_avro_writer_schema_that_avro_refuses(tmp_path: Path, bad: dict, words: list) -> None:
    """A writer schema Avro's own parser refuses (a field name that is a list, a fixed size
    that is an object, a duplicated field name, a duplicate union branch, a name that is a
    lone surrogate) raised TypeError (or ArrowInvalid from the compiled program, or decoded
    with one field lost) for the whole read. Now only its values are affected, naming the
    subject, version and id; a lone surrogate is quoted as its escape, so the reason can be
    written to value_error."""
    reader = _record({"name": "a", "type": "int"})
    writer = _record({"name": "a", "type": "int"}, bad)
    d = _avro_dir(tmp_path, reader, writer, [_wire(1, b"\x02"), _wire(2, b"\x02\x02\x02")])
    _only_value_two_fails(
        _payload_modes(d, valueFormat="avro"), "schema id 2 (subject w version 1)", *words
    )


@pytest.mark.parametrize(
    "reader,words",
    [
        (_record({"name": ["x"], "type": "int"}), ["a name must be a string"]),
        (_record({"name": "a", "type": "int"}, {"name": "a", "type": "string"}), ["duplicate"]),
        (_record({"name": "a", "type": "int"}, {"name": "\udc80", "type": "int"}), ["\\udc80"]),
        ("{not json", ["does not parse"]),
    ],
)
def test_avro_reader_schema_that_avro_refuses(tmp_path: Path, reader: str, words: list) -> None:
    """A reader schema (the one that types the column) that does not validate: TypeError,
    avro_schema.SchemaError (a ValueError) or, for a field named by a lone surrogate, a
    UnicodeEncodeError writing the reason of every value to value_error. Without it no column
    has a type, so the read fails in every mode, with an InvalidSchemaError (a KafkaLogError)
    naming the subject, version and id, and the ways out."""
    d = _avro_dir(tmp_path, reader, None, [_wire(1, b"\x02")])
    for mode in MODES:
        with pytest.raises(InvalidSchemaError) as e:
            kl.read_table(d, valueFormat="avro", mode=mode)
        assert (e.value.subject, e.value.version, e.value.schema_id) == ("t-value", 1, 1)
        assert "subject t-value version 1 (schema id 1)" in str(e.value)
        assert "payloadAs=json" in str(e.value)
        str(e.value).encode("utf-8")  # printable
        for w in words:
            assert w in str(e.value)


def test_avro_as_json_with_a_field_named_by_a_lone_surrogate(tmp_path: Path) -> None:
    """payloadAs=json, a writer whose field name is a lone surrogate: the JSON text could not
    be a string column, and the fallback reached an AssertionError (no reader schema). Now
    the writer schema does not validate: its values go through mode."""
    writer = _record({"name": "\udc80", "type": "int"})
    good = _record({"name": "a", "type": "int"})
    d = _avro_dir(tmp_path, good, writer, [_wire(1, b"\x02"), _wire(2, b"\x02")])
    got = _payload_modes(d, valueFormat="avro", payloadAs="json")
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError) and e.offset == 1 and "\\udc80" in str(e)
    rows, st = got["PERMISSIVE"]
    assert json.loads(rows[0]["value_decoded"]) == {"a": 1} and rows[1]["value_decoded"] is None
    assert "\\udc80" in rows[1]["value_error"] and st.undecodable_payloads == 1


def test_avro_reference_the_registry_lacks(tmp_path: Path) -> None:
    """A schema that references a subject the registry does not hold: SchemaNotFoundError (a
    KeyError) failed the whole read in every mode. As a writer schema only its values are
    affected; as the reader schema, InvalidSchemaError."""
    ref = [{"name": "X", "subject": "nope", "version": 1}]
    reader = _record({"name": "a", "type": "int"})
    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, reader)),
        (schema_key("w", 1), schema_value("w", 1, 2, reader, None, ref)),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b"\x02"), _wire(2, b"\x02")])
    _only_value_two_fails(
        _payload_modes(d, valueFormat="avro"), "subject w version 1", "'nope'", "does not hold"
    )
    for as_json in ("json", "struct"):
        got = _payload_modes(d, valueFormat="avro", payloadAs=as_json)
        assert isinstance(got["FAILFAST"], UndecodablePayloadError)
    d2 = _log_dir(
        tmp_path / "r",
        [(schema_key("t-value", 1), schema_value("t-value", 1, 1, reader, None, ref))],
        [_wire(1, b"\x02")],
    )
    with pytest.raises(InvalidSchemaError, match="'nope'"):
        kl.read_table(d2, valueFormat="avro", mode="PERMISSIVE")


def test_unreadable_schemas_record_names_file_byte_and_offset(tmp_path: Path) -> None:
    """A _schemas record the registry cannot read (not JSON) escaped as RegistryRecordError (a
    ValueError) under FAILFAST. Now a SchemasRecordError (an UndecodableRecordError) naming
    the _schemas file, its batch's byte and the record's offset; the other modes skip it as
    the registry does."""
    schemas = [
        (
            schema_key("t-value", 1),
            schema_value("t-value", 1, 1, _record({"name": "a", "type": "int"})),
        ),
        (schema_key("t-value", 2), b"{oops"),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b"\x02")])
    with pytest.raises(SchemasRecordError) as e:
        kl.read_table(d, valueFormat="avro")
    assert e.value.offset == 1 and e.value.position == 0
    assert e.value.path == str(tmp_path / "_schemas-0" / "00000000000000000000.log")
    assert "offset 1" in str(e.value) and "not JSON" in str(e.value)
    for mode in ("DROPMALFORMED", "PERMISSIVE"):
        t = kl.read_table(d, valueFormat="avro", mode=mode)
        assert t.column("value_decoded").to_pylist() == [{"a": 1}]


def test_skipped_schemas_records_are_counted_and_said(tmp_path: Path, caplog) -> None:
    """A _schemas record the registry cannot read, skipped outside FAILFAST as the registry
    skips it, is counted in ReadStats and its summary, with a warning naming its offset and why
    (review 1, item 15)."""
    schemas = [
        (schema_key("t-value", 2), b"{not json"),
        (
            schema_key("t-value", 1),
            schema_value("t-value", 1, 1, _record({"name": "a", "type": "int"})),
        ),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b"\x02")])
    for mode in ("DROPMALFORMED", "PERMISSIVE"):
        st = kl.ReadStats()
        caplog.clear()
        with caplog.at_level("WARNING", logger="kafkalog"):
            t = kl.read_table(d, valueFormat="avro", mode=mode, stats=st)
        assert t.column("value_decoded").to_pylist() == [{"a": 1}]
        assert st.skipped_schema_records == 1 and st.skipped
        assert "1 _schemas records the registry could not read, skipped" in st.summary()
        assert "at offset 0" in caplog.text and "not JSON" in caplog.text


@pytest.mark.parametrize(
    "bad", [{"type": "object", "properties": ["a"]}, {"properties": {"a": {"type": "strin"}}}]
)
def test_json_schema_that_json_schema_refuses(tmp_path: Path, bad: dict) -> None:
    """A JSON Schema whose keywords have the wrong type (``"properties": ["a"]`` raised
    AttributeError; an unknown type name was read as text): checked against its metaschema
    when loaded. As the reader schema: InvalidSchemaError; as a writer's: its values only."""
    good = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, good, "JSON")),
        (schema_key("w", 1), schema_value("w", 1, 2, json.dumps(bad), "JSON")),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b'{"a":1}'), _wire(2, b'{"a":1}')])
    _only_value_two_fails(
        _payload_modes(d, valueFormat="json"), "subject w version 1", "not a valid JSON Schema"
    )
    d2 = _log_dir(
        tmp_path / "r",
        [(schema_key("t-value", 1), schema_value("t-value", 1, 1, json.dumps(bad), "JSON"))],
        [_wire(1, b'{"a":1}')],
    )
    with pytest.raises(InvalidSchemaError, match="not a valid JSON Schema"):
        kl.read_table(d2, valueFormat="json", mode="PERMISSIVE")


# A schema is an object or a boolean (JSON Schema draft-06 on; the Schema Registry's
# JsonSchema.rawSchema builds TrueSchema/FalseSchema for true/false, and refuses any other
# non-object as "Invalid JSON Schema"): issue 40 item 9 (null and numbers raised TypeError)
SCHEMA_TEXTS = ["null", "42", '"a string"', "[]", "true", "1.5", "false"]


@pytest.mark.parametrize("fmt", ["json", "registry"])
@pytest.mark.parametrize("text", SCHEMA_TEXTS)
def test_json_schema_text_that_is_not_an_object(tmp_path: Path, text: str, fmt: str) -> None:
    """A _schemas SCHEMA record whose JSON Schema text is null or a number ended the read
    with a builtin TypeError (jsonschema's validator_for). As a writer's schema it is now
    what every other invalid schema is: FAILFAST an UndecodablePayloadError naming file,
    byte, offset and schema id; DROPMALFORMED a counted drop; PERMISSIVE a value_error. As
    the reader schema: InvalidSchemaError in every mode. true and false are valid schemas."""
    valid = isinstance(json.loads(text), bool)
    good = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, good, "JSON")),
        (schema_key("w", 1), schema_value("w", 1, 2, text, "JSON")),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b'{"a":1}'), _wire(2, b'{"a":1}')])
    got = _payload_modes(d, valueFormat=fmt)
    if valid:  # values written with it are read by the reader schema
        for mode in MODES:
            assert not isinstance(got[mode], KafkaLogError), (mode, got[mode])
        for mode in ("DROPMALFORMED", "PERMISSIVE"):
            rows, st = got[mode]
            assert [r["value_decoded"] for r in rows] == [{"a": 1}, {"a": 1}]
            assert [r["value_error"] for r in rows] == [None, None]
            assert st.undecodable_payloads == 0
    else:
        _only_value_two_fails(got, "subject w version 1", "not a valid JSON Schema")
    d2 = _log_dir(
        tmp_path / "r",
        [(schema_key("t-value", 1), schema_value("t-value", 1, 1, text, "JSON"))],
        [_wire(1, b'{"a":1}')],
    )
    for mode in MODES:
        if valid:
            t = kl.read_table(d2, valueFormat=fmt, mode=mode)
            assert t.column("value_error").to_pylist() == [None]
            assert t.column("value_schema_id").to_pylist() == [1]
        else:
            with pytest.raises(InvalidSchemaError, match="not a valid JSON Schema"):
                kl.read_table(d2, valueFormat=fmt, mode=mode)


def _varint(n: int) -> bytes:
    return uvarint(n)


PROTO_TS = (
    'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
    "message M { int32 a = 1; google.protobuf.Timestamp ts = 2; }\n"
)


@pytest.mark.parametrize("payload_as", ["struct", "json"])
def test_protobuf_timestamp_out_of_its_range(tmp_path: Path, payload_as: str) -> None:
    """A google.protobuf.Timestamp of seconds 2^62 (valid on the wire): OverflowError building
    the timestamp column, and with payloadAs=json protobuf's SerializeToJsonError escaped. The
    well-known type's range (years 1 to 9999) is checked before conversion: the value goes
    through mode, naming the field."""
    pytest.importorskip("grpc_tools")
    ts = b"\x08" + _varint(1 << 62)
    good = b"\x00" + b"\x08\x01"
    bad = b"\x00" + b"\x08\x01" + b"\x12" + _varint(len(ts)) + ts
    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, PROTO_TS, "PROTOBUF")),
        (schema_key("w", 1), schema_value("w", 1, 2, PROTO_TS, "PROTOBUF")),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, good), _wire(2, bad)])
    got = _each_mode(d, valueFormat="protobuf", payloadAs=payload_as)
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError) and e.offset == 1 and e.schema_id == 2
    assert "4611686018427387904" in str(e) and "ts" in str(e)
    t, st = got["PERMISSIVE"]
    rows = t.to_pylist()
    assert rows[0]["value_decoded"] is not None and rows[1]["value_decoded"] is None
    assert "4611686018427387904" in rows[1]["value_error"] and st.undecodable_payloads == 1
    t, st = got["DROPMALFORMED"]
    assert t.column("offset").to_pylist() == [0] and st.undecodable_payloads == 1


def test_protobuf_schema_past_the_runtime_limits(tmp_path: Path) -> None:
    """A valid .proto of about 20,000 fields compiles with protoc, but the protobuf runtime
    refuses it (upb: a message's fields take at most 64 KiB): TypeError from the descriptor
    pool ended the read. Now the values written with it go through mode."""
    pytest.importorskip("grpc_tools")
    numbers = [*range(1, 19000), *range(20000, 21100)]
    big = 'syntax = "proto3";\nmessage M {\n' + "".join(f"  int32 f{i} = {i};\n" for i in numbers)
    small = 'syntax = "proto3";\nmessage M { int32 f1 = 1; }\n'
    schemas = [
        (schema_key("t-value", 1), schema_value("t-value", 1, 1, small, "PROTOBUF")),
        (schema_key("w", 1), schema_value("w", 1, 2, big + "}\n", "PROTOBUF")),
    ]
    d = _log_dir(tmp_path, schemas, [_wire(1, b"\x00\x08\x01"), _wire(2, b"\x00\x08\x01")])
    got = _each_mode(d, valueFormat="protobuf")
    e = got["FAILFAST"]
    assert isinstance(e, UndecodablePayloadError) and e.offset == 1
    assert "subject w version 1" in str(e) and "runtime refuses it" in str(e)
    t, st = got["PERMISSIVE"]
    assert t.column("value_decoded").to_pylist() == [{"f1": 1}, None]
    assert st.undecodable_payloads == 1


def test_undecodable_record_of_a_snapshot_keeps_its_snapshot_id(tmp_path: Path) -> None:
    """PERMISSIVE's row for a record that does not decode, in a snapshot named as Kafka names
    them, still says which snapshot it comes from (only an id that does not fit is left out)."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    snap = d / "00000000000000000978-0000000003.checkpoint"
    snap.write_bytes(kp_v2_batch([(1, None, uvarint(1) + uvarint(200) + uvarint(0), [])]))
    [row] = kl.read_table(snap, decode="cluster_metadata", mode="PERMISSIVE").to_pylist()
    assert "unknown api key 200" in row["error"]
    assert (row["snapshot_end_offset"], row["snapshot_end_epoch"]) == (978, 3)
