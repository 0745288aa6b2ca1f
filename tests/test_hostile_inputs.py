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
from test_internal_topics import kraft_snapshot
from test_registry import schema_key, schema_value, subject_key

import kafkalog_source as kl
from kafkalog_source.errors import KafkaLogError, UndecodableRecordError
from kafkalog_source.format.messages.schema import by_name
from kafkalog_source.format.replay import replay

MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")

# ---------------------------------------------------------------------------------------------
# internal topics (decode=)

OFFSET_KEY = struct.pack(">h", 1) + encode(
    by_name("OffsetCommitKey"), 1, {"group": "g", "topic": "t", "partition": 2}
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


def test_record_version_past_int32(tmp_path: Path) -> None:
    """A metadata record claiming version 2^31 (an unsigned varint on the wire): not defined,
    so undecodable; PERMISSIVE's row has a null record_version, the claimed version in the
    error (it raised ArrowInvalid building the int32 column)."""
    value = uvarint(1) + uvarint(by_name("TopicRecord").api_key) + uvarint(1 << 31) + b"\0\0"
    d = _partition(tmp_path, "__cluster_metadata", [(1, None, value, [])])
    got = _each_mode(d, decode="cluster_metadata")
    assert isinstance(got["FAILFAST"], UndecodableRecordError)
    assert "2147483648" in str(got["FAILFAST"]) and "offset 0" in str(got["FAILFAST"])
    t, st = got["DROPMALFORMED"]
    assert t.num_rows == 0 and st.undecodable_records == 1
    t, st = got["PERMISSIVE"]
    [row] = t.to_pylist()
    assert row["record_version"] is None and "2147483648" in row["error"]
    assert row["record_type"] == "TopicRecord" and row["value"] == value


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
