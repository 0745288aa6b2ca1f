"""decode=: every record type and version of the pinned Kafka specs, and records they do not
know (issue 34).

Synthetic data, built with Kafka's own encoder layout from the JSON specs by the spec-driven
encoder of tests/internal_encoder.py: no public repository found holds a Kafka 4.x log
directory with new-protocol, streams or share-group records (docs/guides/internal-topics.md,
"Kafka 4.x data"); the one 4.0.0 log directory in ../shared holds classic-group records only. The expected JSON is what Kafka's
generated JSON converter writes (a tagged field only when not at its default), computed by the
test encoder from the specs, independently of the decoder.
"""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import BROKER_WRITTEN, kp_v2_batch, require_shared
from internal_encoder import encode, jackson, kafka_json, sample, spec_default, uvarint

from kafkalog_source import read_table
from kafkalog_source.cli.decoders import key_and_payload
from kafkalog_source.errors import UndecodableRecordError
from kafkalog_source.format.messages.schema import (
    Message,
    all_messages,
    by_name,
    coordinator_keys,
    release,
    value_for_key,
)
from kafkalog_source.format.messages.topics import (
    INTERPRETATIONS,
    RAFT_CONTROL,
    decode_record,
    metadata_type_name,
)
from kafkalog_source.stats import ReadStats

CONTROL_TYPE = {rtype: ctype for ctype, (_, rtype) in RAFT_CONTROL.items()}


def _versions(m: Message) -> range:
    return range(m.valid[0], m.valid[1] + 1)


def _cases() -> list:
    """(interpretation, record type number or name, key spec, value spec, value version)."""
    out = []
    for interp, (_, fam) in INTERPRETATIONS.items():
        if fam in ("metadata", "remote"):
            for m in (m for m in all_messages() if m.family == fam):
                for v in _versions(m):
                    out.append(pytest.param(interp, m.api_key, None, m, v, id=f"{m.name}-v{v}"))
            continue
        for rtype, key_spec in coordinator_keys(fam):
            value_spec = value_for_key(key_spec)
            for v in _versions(value_spec):
                name = key_spec.name[:-3]
                out.append(
                    pytest.param(interp, rtype, key_spec, value_spec, v, id=f"{name}-{rtype}-v{v}")
                )
    for rtype, ctype in CONTROL_TYPE.items():
        m = by_name(RAFT_CONTROL[ctype][0])
        for v in _versions(m):
            out.append(pytest.param("cluster_metadata", ctype, None, m, v, id=f"{rtype}-v{v}"))
    return out


def _tagged(fields, version) -> set[str]:
    return {f.json_name for f in fields if f.exists_in(version) and f.tagged_in(version)}


def _value_dict(spec: Message, version: int, tagged: str) -> dict:
    """A value with every field set; ``tagged``: ``set`` (not at their defaults), ``absent``
    (left out of the bytes, as Kafka's writer leaves defaults out) or ``default`` (written, at
    their defaults)."""
    d = sample(spec.fields, version, seed=7)
    if spec.name == "GroupMetadataValue":
        d["protocolType"] = "other"  # not consumer: member bytes stay bytes here
    if spec.family == "raft":
        d["version"] = version  # a KRaft control record's first field is its version
    names = _tagged(spec.fields, version)
    if tagged == "absent":
        d = {k: x for k, x in d.items() if k not in names}
    elif tagged == "default":
        for f in spec.fields:
            if f.json_name in names:
                d[f.json_name] = spec_default(f, version)
        d = {k: x for k, x in d.items() if x is not None or k not in names}
    return d


def _record(interp, rtype, key_spec, spec, version, tagged="set"):
    """``(key bytes, value bytes, control, expected key JSON or None, expected value JSON)``."""
    val = _value_dict(spec, version, tagged)
    want_v = kafka_json(spec.fields, version, val)
    if spec.family == "raft":
        return struct.pack(">hh", 0, rtype), encode(spec, version, val), True, None, want_v
    if key_spec is None:  # metadata-log framing: frame version 1, api key, version
        body = uvarint(1) + uvarint(spec.api_key) + uvarint(version) + encode(spec, version, val)
        return None, body, False, None, want_v
    kv = 0 if key_spec.kind == "coordinator-key" else rtype
    k = sample(key_spec.fields, kv)
    key = struct.pack(">h", rtype) + encode(key_spec, kv, k)
    value = struct.pack(">h", version) + encode(spec, version, val)
    return key, value, False, kafka_json(key_spec.fields, kv, k), want_v


@pytest.mark.parametrize("interp,rtype,key_spec,spec,version", _cases())
@pytest.mark.parametrize("tagged", ["set", "absent", "default"])
def test_every_record_type_and_version_round_trips(interp, rtype, key_spec, spec, version, tagged):
    """Synthetic: each record type and version of the pinned specs, encoded from the specs
    (tagged fields set, left out, or written at their defaults), decodes to what Kafka's JSON
    converter writes for it, and `dump` prints key and payload as kafka-dump-log does."""
    key, value, control, want_k, want_v = _record(interp, rtype, key_spec, spec, version, tagged)
    d = decode_record(interp, key, value, control=control)
    assert d.unknown is None and not d.tombstone
    assert jackson(d.value) == jackson(want_v)
    if tagged != "set":
        assert not _tagged(spec.fields, version) & set(d.value)
    if want_k is not None:
        assert jackson(d.key) == jackson(want_k)
        assert d.record_type == key_spec.name[:-3] and d.key_version == rtype
    if control:
        return
    k_text, p_text = key_and_payload(interp, key, value, 7)
    if key_spec is not None:
        assert k_text == jackson({"type": str(rtype), "data": want_k})
        assert p_text == jackson({"version": str(version), "data": want_v})
    elif interp == "cluster_metadata":
        body = {"type": metadata_type_name(spec.name), "version": version, "data": want_v}
        assert k_text is None and p_text == jackson(body)


def _segment(tmp_path: Path, topic: str, records: list, control: list | None = None) -> Path:
    d = tmp_path / f"{topic}-0"
    d.mkdir(parents=True)
    recs = [(1_700_000_000_000 + i, k, v, []) for i, (k, v) in enumerate(records)]
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(recs))
    return d


@pytest.mark.parametrize("interp", list(INTERPRETATIONS))
def test_decoded_column_is_what_kafka_prints(tmp_path: Path, interp: str) -> None:
    """Synthetic: read_table's `decoded` of every record type and version of a topic (its data
    records: KRaft control records are covered above) is {"key": ..., "value": ...} as Kafka's
    JSON converter writes them, tagged fields left out of the bytes absent from it."""
    cases = [c.values for c in _cases() if c.values[0] == interp]
    built = [_record(*c, tagged="absent") for c in cases]
    built = [b for b in built if not b[2]]
    topic = INTERPRETATIONS[interp][0]
    t = read_table(_segment(tmp_path, topic, [(k, v) for k, v, *_ in built]), decode=interp)
    assert t.num_rows == len(built)
    for row, (_, _, _, want_k, want_v) in zip(t.to_pylist(), built, strict=True):
        assert row["error"] is None
        got = json.loads(row["decoded"])
        assert got == json.loads(jackson({"key": want_k, "value": want_v}))


def test_the_specs_know_kafka_4_record_types() -> None:
    """The pinned specs define Kafka 4.x's record types (KIP-848 regular expressions, KIP-1071
    streams groups, KIP-966 ClearElr, KIP-853 UnregisterController, the share coordinator's
    records as 4.2 writes them), and record where each came from."""
    types = {rtype: m.name[:-3] for rtype, m in coordinator_keys("group")}
    assert types[0] == "LegacyOffsetCommit" and types[1] == "OffsetCommit"
    assert types[16] == "ConsumerGroupRegularExpression"
    assert [types[t] for t in range(17, 25)] == [
        "StreamsGroupMetadata",
        "StreamsGroupPartitionMetadata",
        "StreamsGroupMemberMetadata",
        "StreamsGroupTargetAssignmentMetadata",
        "StreamsGroupTargetAssignmentMember",
        "StreamsGroupCurrentMemberAssignment",
        "StreamsGroupTopology",
        "StreamsGroupTargetAssignmentResolvedTopicIds",
    ]
    assert by_name("ClearElrRecord").api_key == 28
    assert by_name("UnregisterControllerRecord").api_key == 29
    snap = {f.json_name for f in by_name("ShareSnapshotValue").fields}
    assert {"createTimestamp", "writeTimestamp", "deliveryCompleteCount"} <= snap
    txn = by_name("TransactionLogValue")
    assert _tagged(txn.fields, 1) == {
        "previousProducerId",
        "nextProducerId",
        "clientTransactionVersion",
    }
    rel, base = release()
    assert rel and len(base) == 40
    for m in all_messages():
        path, commit = m.src.split("@")
        assert path.endswith(".json") and len(commit) == 40, m.name


# ---------------------------------------------------------------------------------------------
# records the specs do not know: kept in every mode, counted, warned once


def _offset_key(group: str, rtype: int = 1) -> bytes:
    return struct.pack(">h", rtype) + encode(
        by_name("OffsetCommitKey"), 0, {"group": group, "topic": "t", "partition": 2}
    )


def _good_value() -> bytes:
    return struct.pack(">h", 3) + encode(
        by_name("OffsetCommitValue"),
        3,
        {"offset": 42, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 1_700_000_000_000},
    )


UNKNOWN_TYPE = (struct.pack(">h", 99) + b"\x00\x01g", struct.pack(">h", 0) + b"\x07")
UNKNOWN_VERSION = (_offset_key("g2"), struct.pack(">h", 9) + b"\0" * 30)
BAD_BYTES = (_offset_key("bad"), struct.pack(">h", 3) + b"\0" * 5)  # v3 runs past the end


@pytest.mark.parametrize("mode", ["FAILFAST", "DROPMALFORMED", "PERMISSIVE"])
def test_unknown_records_are_kept_in_every_mode(tmp_path: Path, mode: str, caplog) -> None:
    """Synthetic: a __consumer_offsets partition holding a record type the specs do not know
    (99) and an unknown version (9) of a known type reads in every mode: both rows kept with
    their bytes, `record_type` unknown:99 and unknown:OffsetCommit (its key columns filled),
    the reason in `error`, counted in ReadStats.unknown_records, one warning for the read."""
    d = _segment(
        tmp_path,
        "__consumer_offsets",
        [(_offset_key("g"), _good_value()), UNKNOWN_TYPE, UNKNOWN_VERSION],
    )
    st = ReadStats()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        t = read_table(d, decode="consumer_offsets", mode=mode, stats=st)
    rows = t.to_pylist()
    assert [r["record_type"] for r in rows] == [
        "OffsetCommit",
        "unknown:99",
        "unknown:OffsetCommit",
    ]
    assert [r["record_version"] for r in rows] == [3, 0, 9]
    assert rows[1]["key"] == UNKNOWN_TYPE[0] and rows[1]["value"] == UNKNOWN_TYPE[1]
    assert rows[1]["decoded"] is None and "unknown record type 99" in rows[1]["error"]
    assert rows[2]["group"] == "g2" and rows[2]["committed_topic"] == "t"
    assert "OffsetCommitValue version 9 is not defined" in rows[2]["error"]
    assert rows[2]["committed_offset"] is None and not rows[2]["tombstone"]
    assert st.unknown_records == 2 and st.undecodable_records == 0
    assert len(st.events_of("unknown record")) == 2
    warned = [r for r in caplog.records if "unknown record type 99" in r.getMessage()]
    assert len(warned) == 1 and "OffsetCommitValue version 9" not in caplog.text
    assert "2 records of types or versions" in st.summary()
    assert "(decode=consumer_offsets)" in st.summary()


def test_failfast_only_for_a_known_record_that_does_not_decode(tmp_path: Path) -> None:
    """Synthetic: with an unknown type, an unknown version and a known record whose bytes do
    not parse, FAILFAST fails on the last only (naming it); DROPMALFORMED drops only it,
    PERMISSIVE keeps it with its error; the summary names the interpretation."""
    d = _segment(tmp_path, "__consumer_offsets", [UNKNOWN_TYPE, UNKNOWN_VERSION, BAD_BYTES])
    with pytest.raises(UndecodableRecordError) as e:
        read_table(d, decode="consumer_offsets")
    assert "offset 2" in str(e.value) and "record type OffsetCommit, version 3" in str(e.value)
    st = ReadStats()
    t = read_table(d, decode="consumer_offsets", mode="DROPMALFORMED", stats=st)
    assert t.column("offset").to_pylist() == [0, 1]
    assert (st.unknown_records, st.undecodable_records) == (2, 1)
    assert "1 records that did not decode (decode=consumer_offsets)" in st.summary()
    t = read_table(d, decode="consumer_offsets", mode="PERMISSIVE")
    assert t.column("record_type").to_pylist() == [
        "unknown:99",
        "unknown:OffsetCommit",
        "OffsetCommit",
    ]
    assert "runs past the end" in t.column("error").to_pylist()[2]


def test_unknown_metadata_and_control_records_are_kept(tmp_path: Path) -> None:
    """Synthetic: an api key (200) and a version (PartitionRecord v99) of __cluster_metadata
    the specs do not know, and an unknown KRaft control record type, are rows in FAILFAST."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    unknown_api = uvarint(1) + uvarint(200) + uvarint(0) + b"\x00"
    unknown_version = uvarint(1) + uvarint(3) + uvarint(99) + b"\x00"
    from test_internal_dump import _control_batch

    data = kp_v2_batch([(1, None, unknown_api, []), (2, None, unknown_version, [])])
    data += _control_batch([(3, struct.pack(">hh", 0, 17), b"\x00\x00")], 2, 1)
    (d / "00000000000000000000.log").write_bytes(data)
    st = ReadStats()
    t = read_table(d, decode="cluster_metadata", stats=st)
    assert t.column("record_type").to_pylist() == [
        "unknown:200",
        "unknown:PartitionRecord",
        "unknown:control:17",
    ]
    assert t.column("record_version").to_pylist() == [0, 99, 0]
    assert st.unknown_records == 3


# ---------------------------------------------------------------------------------------------
# typed columns and `decoded` as Kafka prints them: absent tagged fields are absent


def test_typed_columns_are_null_when_tagged_fields_are_absent() -> None:
    """Synthetic: a TransactionLog v1 without its tagged fields has previous_producer_id,
    next_producer_id and client_transaction_version null (not -1, -1, 0); with them, set."""
    spec = by_name("TransactionLogValue")
    base = _value_dict(spec, 1, "absent")
    key = struct.pack(">h", 0) + encode(by_name("TransactionLogKey"), 0, {"transactionalId": "x"})
    d = decode_record("transaction_state", key, struct.pack(">h", 1) + encode(spec, 1, base))
    assert (
        d.typed["previous_producer_id"],
        d.typed["next_producer_id"],
        d.typed["client_transaction_version"],
    ) == (None, None, None)
    full = {**base, "previousProducerId": 5, "nextProducerId": -1, "clientTransactionVersion": 2}
    d = decode_record("transaction_state", key, struct.pack(">h", 1) + encode(spec, 1, full))
    # -1 is NextProducerId's default: Kafka's converter leaves it out, so does the column
    assert (d.typed["previous_producer_id"], d.typed["next_producer_id"]) == (5, None)
    assert d.typed["client_transaction_version"] == 2 and "nextProducerId" not in d.value


def test_real_partition_change_records_print_as_kafka() -> None:
    """Real data: no PartitionChangeRecord of the broker-written KRaft logs prints a tagged
    field at its default (`"leader":-2`, `"isr":null`, ...); their typed columns are null
    where the record does not set them."""
    root = require_shared(BROKER_WRITTEN)
    seen = 0
    for p in sorted(root.rglob("__cluster_metadata-0")):
        t = read_table(p, decode="cluster_metadata", mode="PERMISSIVE")
        for r in t.to_pylist():
            if r["record_type"] != "PartitionChangeRecord":
                continue
            value = json.loads(r["decoded"])["value"]
            assert '"leader":-2' not in r["decoded"] and None not in value.values()
            assert r["leader"] == value.get("leader") and r["isr"] == value.get("isr")
            seen += 1
    assert seen >= 1


def test_controller_id_column() -> None:
    """Synthetic: RegisterControllerRecord's and UnregisterControllerRecord's controller id is
    controller_id, not broker_id."""
    spec = by_name("UnregisterControllerRecord")
    value = uvarint(1) + uvarint(spec.api_key) + uvarint(0) + encode(spec, 0, {"controllerId": 3})
    d = decode_record("cluster_metadata", None, value)
    assert (d.typed["controller_id"], d.typed["broker_id"]) == (3, None)


def test_bootstrap_checkpoint_is_read(tmp_path: Path) -> None:
    """Synthetic: KRaft's bootstrap.checkpoint (a record file, as `kafkalog dump` reads it) is
    read by read_table when named, its records as __cluster_metadata's."""
    spec = by_name("FeatureLevelRecord")
    value = uvarint(1) + uvarint(spec.api_key) + uvarint(0)
    value += encode(spec, 0, {"name": "metadata.version", "featureLevel": 21})
    f = tmp_path / "bootstrap.checkpoint"
    f.write_bytes(kp_v2_batch([(1, None, value, [])]))
    t = read_table(f, decode="auto")
    row = t.to_pylist()[0]
    assert (row["topic"], row["record_type"]) == ("__cluster_metadata", "FeatureLevelRecord")
    assert json.loads(row["decoded"])["value"] == {"name": "metadata.version", "featureLevel": 21}
    # read as the bootstrap snapshot (Kafka's BOOTSTRAP_SNAPSHOT_ID), apart from the log
    assert (row["snapshot_end_offset"], row["snapshot_end_epoch"]) == (0, 0)


def test_bootstrap_checkpoint_beside_the_metadata_log(tmp_path: Path) -> None:
    """Synthetic: bootstrap.checkpoint read with __cluster_metadata-0 (review 1, item 13): its
    rows are the bootstrap snapshot's (snapshot id 0, 0), not a second copy of the partition's
    first offsets; a directory read leaves it out, with or without includeSnapshots."""
    spec = by_name("FeatureLevelRecord")

    def rec(level: int) -> bytes:
        value = uvarint(1) + uvarint(spec.api_key) + uvarint(0)
        return value + encode(spec, 0, {"name": "metadata.version", "featureLevel": level})

    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(
        kp_v2_batch([(1, None, rec(21), []), (2, None, rec(22), [])])
    )
    (tmp_path / "bootstrap.checkpoint").write_bytes(kp_v2_batch([(1, None, rec(20), [])]))

    def rows(t: Any) -> list[tuple]:
        return [
            (
                r["offset"],
                r["snapshot_end_offset"],
                r["snapshot_end_epoch"],
                json.loads(r["decoded"])["value"]["featureLevel"],
            )
            for r in t.to_pylist()
        ]

    both = read_table([str(part), str(tmp_path / "bootstrap.checkpoint")], decode="auto")
    assert sorted(rows(both), key=lambda r: (r[1] is not None, r)) == [
        (0, None, None, 21),
        (1, None, None, 22),
        (0, 0, 0, 20),
    ]
    for opts in ({}, {"includeSnapshots": "true"}):
        assert rows(read_table(tmp_path, decode="auto", **opts)) == [
            (0, None, None, 21),
            (1, None, None, 22),
        ]
