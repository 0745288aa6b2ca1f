"""decode=: Kafka's internal topics as typed tables (issue 22).

Two kinds of evidence, each test saying which:

* real data: the broker-written fixtures in ../shared (``__consumer_offsets`` from Kafka 0.10.1
  to 4.x, ``__cluster_metadata`` from KRaft brokers), decoded in full and checked against the
  rest of the same archive (partition.metadata, meta.properties, the committed topics' logs);
* synthetic data, built from the schema tables by tests/internal_encoder.py (no real data
  stands behind these: the fixtures hold no ``__transaction_state``, share-group,
  remote-log-metadata, KIP-848 or snapshot data); every record type and version of the pinned
  specs, and records they do not know, are in tests/test_internal_specs.py.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, kp_v2_batch, require_shared
from internal_encoder import encode, kafka_json, sample, uvarint

from kafkalog_source import read_table
from kafkalog_source.errors import OptionError, UndecodableRecordError
from kafkalog_source.format.messages.schema import by_name, release
from kafkalog_source.format.messages.topics import (
    INTERPRETATIONS,
    RecordDecodeError,
    decode_record,
    record_types,
)
from kafkalog_source.stats import ReadStats

# ---------------------------------------------------------------------------------------------
# synthetic: every record type and version of the pinned specs


def test_every_family_has_record_types() -> None:
    """The pinned specs define records for each interpretation (so the tables above are not
    vacuous), and the generated module says which release it is."""
    for interp in INTERPRETATIONS:
        assert record_types(interp), interp
    rel, commit = release()
    assert rel and len(commit) == 40
    names = {r for i in INTERPRETATIONS for r, _, _ in record_types(i)}
    for expected in (
        "OffsetCommit",
        "GroupMetadata",
        "ConsumerGroupMetadata",
        "ShareGroupMetadata",
        "TransactionLog",
        "TopicRecord",
        "PartitionRecord",
        "LeaderChange",
        "SnapshotHeader",
        "KRaftVoters",
        "RemoteLogSegmentMetadataRecord",
        "ShareSnapshot",
        "ShareUpdate",
    ):
        assert expected in names


def test_tombstone_and_consumer_protocol() -> None:
    """Synthetic: a deleted group is a tombstone row; a classic consumer group's member
    subscription and assignment are decoded with the consumer protocol."""
    key = struct.pack(">h", 2) + encode(by_name("GroupMetadataKey"), 0, {"group": "g"})
    d = decode_record("consumer_offsets", key, None)
    assert (d.record_type, d.tombstone, d.record_version, d.typed["group"]) == (
        "GroupMetadata",
        True,
        None,
        "g",
    )
    sub_spec, asg_spec = (
        by_name("ConsumerProtocolSubscription"),
        by_name("ConsumerProtocolAssignment"),
    )
    sub = sample(sub_spec.fields, 1)
    asg = sample(asg_spec.fields, 1)
    member = sample(by_name("GroupMetadataValue").fields[-1].fields, 3)
    member["subscription"] = struct.pack(">h", 1) + encode(sub_spec, 1, sub)
    member["assignment"] = struct.pack(">h", 1) + encode(asg_spec, 1, asg)
    value = {
        "protocolType": "consumer",
        "generation": 5,
        "protocol": "range",
        "leader": "m",
        "currentStateTimestamp": 1,
        "members": [member],
    }
    raw = struct.pack(">h", 3) + encode(by_name("GroupMetadataValue"), 3, value)
    d = decode_record("consumer_offsets", key, raw)
    m = d.value["members"][0]
    assert m["subscription"] == kafka_json(sub_spec.fields, 1, sub)
    assert m["assignment"] == kafka_json(asg_spec.fields, 1, asg)
    assert d.typed["protocol_type"] == "consumer" and d.typed["generation"] == 5


def test_bad_bytes_of_known_records_are_errors() -> None:
    """Synthetic: bytes of a known record type and version that do not parse raise (types and
    versions the specs do not know are kept: tests/test_internal_specs.py)."""
    key = struct.pack(">h", 1) + encode(
        by_name("OffsetCommitKey"), 0, {"group": "g", "topic": "t", "partition": 0}
    )
    with pytest.raises(RecordDecodeError, match="runs past the end"):
        decode_record("consumer_offsets", key, struct.pack(">h", 3) + b"\0" * 5)
    with pytest.raises(RecordDecodeError, match="left over"):
        v = encode(by_name("OffsetCommitValue"), 1, sample(by_name("OffsetCommitValue").fields, 1))
        decode_record("consumer_offsets", key, struct.pack(">h", 1) + v + b"!")


# ---------------------------------------------------------------------------------------------
# modes, through read_table (synthetic segment files)


BAD_VALUE = struct.pack(">h", 3) + b"\0" * 5


def _offsets_dir(tmp_path: Path) -> Path:
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    key = struct.pack(">h", 1) + encode(
        by_name("OffsetCommitKey"), 0, {"group": "g", "topic": "t", "partition": 2}
    )
    bad_key = struct.pack(">h", 1) + encode(
        by_name("OffsetCommitKey"), 0, {"group": "b", "topic": "t", "partition": 2}
    )
    value_spec = by_name("OffsetCommitValue")
    good = struct.pack(">h", 3) + encode(
        value_spec,
        3,
        {"offset": 42, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 1_700_000_000_000},
    )
    records = [
        (1_700_000_000_000, key, good, []),
        (1_700_000_000_001, bad_key, BAD_VALUE, []),  # OffsetCommit v3 that runs past the end
        (1_700_000_000_002, key, None, []),  # tombstone
    ]
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(records))
    return d


def test_modes(tmp_path: Path) -> None:
    """Synthetic: FAILFAST names file, byte, offset, type and version; DROPMALFORMED counts;
    PERMISSIVE keeps the bytes and the error."""
    d = _offsets_dir(tmp_path)
    with pytest.raises(UndecodableRecordError) as e:
        read_table(d, decode="consumer_offsets")
    msg = str(e.value)
    # the record's own byte (its length varint, attributes, timestamp and offset deltas and
    # key length take 1 byte each before the key) and where its value stops parsing
    data = (d / "00000000000000000000.log").read_bytes()
    key_at = data.index(b"\x00\x01b\x00\x01t") - 2  # the bad record's key: type 1, group b
    assert f"00000000000000000000.log: byte {key_at - 5}: " in msg and "offset 1" in msg
    assert e.value.position == key_at - 5
    value_at = data.index(BAD_VALUE, key_at)
    assert "in the batch at byte 0; its value stops parsing at byte " + str(value_at + 2) in msg
    assert "record type OffsetCommit" in msg and "version 3" in msg
    st = ReadStats()
    t = read_table(d, decode="consumer_offsets", mode="DROPMALFORMED", stats=st)
    assert t.column("offset").to_pylist() == [0, 2]
    assert st.undecodable_records == 1 and st.events_of("undecodable record")
    assert t.column("committed_offset").to_pylist() == [42, None]
    assert t.column("tombstone").to_pylist() == [False, True]
    assert t.column("committed_topic").to_pylist() == ["t", "t"]
    t = read_table(d, decode="consumer_offsets", mode="PERMISSIVE")
    row = t.to_pylist()[1]
    assert row["error"] and "runs past the end" in row["error"] and row["value"] == BAD_VALUE
    assert row["decoded"] is None and row["record_type"] == "OffsetCommit"


def test_columns_auto_and_option_errors(tmp_path: Path) -> None:
    """Synthetic: columns= of a decoded schema; decode=auto reads other topics raw."""
    d = _offsets_dir(tmp_path)
    other = tmp_path / "orders-0"
    other.mkdir()
    (other / "00000000000000000000.log").write_bytes(kp_v2_batch([(1, b"k", b"v", [])]))
    t = read_table(
        d, decode="consumer_offsets", columns=["group", "committed_offset"], mode="DROPMALFORMED"
    )
    assert t.column_names == ["group", "committed_offset"]
    with pytest.raises(OptionError, match="unknown column 'nope'"):
        read_table(d, decode="consumer_offsets", columns=["nope"])
    with pytest.raises(OptionError, match="decode"):
        read_table(d, decode="offsets")
    t = read_table(tmp_path, decode="auto", mode="DROPMALFORMED")
    rows = {r["topic"]: r for r in t.to_pylist()}
    assert rows["orders"]["value"] == b"v" and rows["orders"]["record_type"] is None
    assert rows["__consumer_offsets"]["record_type"] == "OffsetCommit"
    assert "transactional_id" in t.column_names and "topic_name" in t.column_names


# ---------------------------------------------------------------------------------------------
# real data: the broker-written fixtures

# Records a development build of Kafka wrote (apache/kafka's own test data of 2023-11, between
# releases): PartitionRecord version 1 then carried KIP-966's tagged fields, which no release
# has at version 1 (3.7.0 shipped v1 = Directories, v2 = ELR). They must fail, by name.
DEV_BUILD = ("kafka-1168504093769635972", "PartitionRecord", 1)


def _internal_partitions() -> list[Path]:
    root = require_shared(BROKER_WRITTEN)
    return sorted(
        p
        for p in root.rglob("__*-[0-9]*")
        if p.is_dir() and p.name.rsplit("-", 1)[0] in ("__consumer_offsets", "__cluster_metadata")
    )


def _read(p: Path, **kw):
    return read_table(p, decode="auto", mode="PERMISSIVE", **kw)


def test_real_internal_partitions_decode() -> None:
    """Real data: every record of every __consumer_offsets and __cluster_metadata partition
    decodes, with no skip, except the dev-build records named in DEV_BUILD."""
    parts = _internal_partitions()
    assert len(parts) >= 15
    seen = set()
    for p in parts:
        t = _read(p)
        assert t.num_rows > 0, p
        for r in t.to_pylist():
            seen.add((r["record_type"], r["record_version"]))
            if r["error"]:
                assert (DEV_BUILD[0] in str(p), r["record_type"], r["record_version"]) == (
                    True,
                    DEV_BUILD[1],
                    DEV_BUILD[2],
                ), (p, r["offset"], r["error"])
                continue
            assert r["decoded"], (p, r["offset"])
            assert r["record_type"]
    for expected in (
        ("OffsetCommit", 1),
        ("OffsetCommit", 3),
        ("OffsetCommit", 4),
        ("GroupMetadata", 1),
        ("GroupMetadata", 3),
        ("OffsetCommit", None),  # tombstones
        ("LeaderChange", 0),
        ("TopicRecord", 0),
        ("PartitionRecord", 2),
        ("PartitionChangeRecord", 2),
        ("RegisterBrokerRecord", 3),
    ):
        assert expected in seen


def _properties(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def test_real_metadata_consistent_with_the_archive() -> None:
    """Real data: each KRaft TopicRecord's topicId equals the topic_id of that topic's
    partition.metadata in the same log directory; the broker ids in partition records are the
    node.id of meta.properties (single-node clusters)."""
    checked_ids = checked_brokers = 0
    for p in _internal_partitions():
        if not p.name.startswith("__cluster_metadata"):
            continue
        t = _read(p)
        root = p.parent
        ids = {
            r["topic_name"]: r["topic_id"]
            for r in t.to_pylist()
            if r["record_type"] == "TopicRecord"
        }
        for name, topic_id in ids.items():
            for meta in root.glob(f"{name}-*/partition.metadata"):
                assert f"topic_id: {topic_id}" in meta.read_text(), (meta, topic_id)
                checked_ids += 1
        props = root / "meta.properties"
        if props.exists():
            node = int(_properties(props)["node.id"])
            for r in t.to_pylist():
                if r["record_type"] in ("PartitionRecord", "PartitionChangeRecord"):
                    assert set(r["replicas"] or [node]) == {node}
                    assert set(r["isr"] or [node]) == {node}
                    checked_brokers += 1
                if r["record_type"] == "RegisterBrokerRecord":
                    assert r["broker_id"] == node
    assert checked_ids >= 1 and checked_brokers >= 10


def _log_end(partition_dir: Path) -> int:
    """The log end offset of a partition: past its last record, or what the log directory's
    checkpoints say the log reached (segments of 4 MiB and more are absent from the fixtures)."""
    ends = []
    t = read_table(partition_dir, columns=["offset"], allowEmpty=True)
    if t.num_rows:
        ends.append(max(t.column("offset").to_pylist()) + 1)
    topic, part = partition_dir.name.rsplit("-", 1)
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        f = partition_dir.parent / name
        if f.exists():
            for line in f.read_text().splitlines()[2:]:
                fields = line.split()
                if len(fields) == 3 and fields[0] == topic and fields[1] == part:
                    ends.append(int(fields[2]))
    return max(ends) if ends else -1


def _listed(root: Path) -> set[tuple[str, int]]:
    """The partitions a log directory holds: its partition directories and those its
    checkpoint files list (the fixtures copied some partitions only)."""
    out = set()
    for d in root.iterdir():
        if d.is_dir() and "-" in d.name and d.name.rsplit("-", 1)[1].isdigit():
            out.add((d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1])))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        f = root / name
        if f.exists():
            for line in f.read_text().splitlines()[2:]:
                fields = line.split()
                if len(fields) == 3 and fields[1].isdigit():
                    out.add((fields[0], int(fields[1])))
    return out


def test_real_committed_offsets_within_the_log() -> None:
    """Real data: no group's committed offset is beyond the log end of the topic-partition it
    is for, when that partition is in the same archive; the partitions a consumer group
    member is assigned exist (for topics the archive holds)."""
    checked = assigned = 0
    for p in _internal_partitions():
        if not p.name.startswith("__consumer_offsets"):
            continue
        root = p.parent
        ends: dict[tuple[str, int], int] = {}
        t = _read(p)
        for r in t.to_pylist():
            if r["record_type"] == "OffsetCommit" and not r["tombstone"]:
                d = root / f"{r['committed_topic']}-{r['committed_partition']}"
                if d.is_dir():
                    key = (r["committed_topic"], r["committed_partition"])
                    if key not in ends:
                        ends[key] = _log_end(d)
                    if ends[key] < 0:  # neither records nor checkpoints in the copy
                        continue
                    assert r["committed_offset"] <= ends[key], (p, r["offset"], key)
                    checked += 1
            if r["record_type"] == "GroupMetadata" and r["protocol_type"] == "consumer":
                for m in json.loads(r["decoded"])["value"]["members"]:
                    if not isinstance(m["assignment"], dict):
                        continue
                    for tp in m["assignment"]["assignedPartitions"]:
                        known = _listed(root)
                        if any(t == tp["topic"] for t, _ in known):
                            for part in tp["partitions"]:
                                assert (tp["topic"], part) in known, (p, tp)
                                assigned += 1
    assert checked >= 100 and assigned >= 1


def test_real_offsets_dump_like_kafka(tmp_path: Path) -> None:
    """Real data: a classic group's record, decoded, has Kafka's JSON field names."""
    p = require_shared(BROKER_WRITTEN / "xpxwo100-bullShit/tmp/kafka-logs/__consumer_offsets-40")
    t = read_table(p, decode="consumer_offsets")
    first = json.loads(t.column("decoded")[0].as_py())
    assert first["key"] == {"group": "GroupA"}
    assert first["value"]["members"][0]["subscription"]["topics"] == ["foo"]
    assert t.column("committed_offset").to_pylist()[1] == 2
    groups = defaultdict(int)
    for g in t.column("group").to_pylist():
        groups[g] += 1
    assert groups["GroupA"] > 0


def test_spark_reads_the_same_table(spark) -> None:
    """Real data: Spark's decode=consumer_offsets equals the Arrow API's, typed columns and
    all; a column subset by a user schema; decode=cluster_metadata on a KRaft log."""
    p = require_shared(BROKER_WRITTEN / "xpxwo100-bullShit/tmp/kafka-logs/__consumer_offsets-40")
    df = spark.read.format("kafkalog").option("decode", "consumer_offsets").load(str(p))
    assert "committed_offset" in df.columns and "decoded" in df.columns
    got = df.orderBy("offset").select("offset", "group", "committed_offset", "decoded").collect()
    want = read_table(p, decode="consumer_offsets")
    assert [r["committed_offset"] for r in got] == want.column("committed_offset").to_pylist()
    assert [r["decoded"] for r in got] == want.column("decoded").to_pylist()
    sub = (
        spark.read.format("kafkalog")
        .schema("record_type string, `group` string")
        .option("decode", "consumer_offsets")
        .load(str(p))
    )
    assert sub.where("record_type = 'GroupMetadata'").count() == 5
    kraft = require_shared(BROKER_WRITTEN / "nomanazeem-Kafka-java/kafka-logs/__cluster_metadata-0")
    df = spark.read.format("kafkalog").option("decode", "cluster_metadata").load(str(kraft))
    names = {r["topic_name"] for r in df.where("record_type = 'TopicRecord'").collect()}
    assert "__consumer_offsets" in names


def test_cli_dump_decoders_and_query() -> None:
    """Real data: kafkalog dump --offsets-decoder / --cluster-metadata-decoder print key and
    payload as kafka-dump-log does; kafkalog query -o decode=auto has the typed columns."""
    from conftest import run_cli

    p = require_shared(BROKER_WRITTEN / "xpxwo100-bullShit/tmp/kafka-logs/__consumer_offsets-40")
    out = run_cli("dump", "--offsets-decoder", str(p / "00000000000000000000.log"))
    assert out.returncode == 0, out.stderr
    line = [x for x in out.stdout.splitlines() if x.startswith("| offset: 1 ")][0]
    assert 'key: {"type":"1","data":{"group":"GroupA","topic":"foo","partition":0}}' in line
    assert 'payload: {"version":"1","data":{"offset":2,' in line
    kraft = BROKER_WRITTEN / "nomanazeem-Kafka-java/kafka-logs"
    out = run_cli("dump", "--cluster-metadata-decoder", str(kraft / "__cluster_metadata-0"))
    assert out.returncode == 0, out.stderr
    assert 'payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":' in out.stdout
    out = run_cli(
        "query",
        str(kraft),
        "-o",
        "decode=auto",
        "select count(*) n from kafkalog where record_type = 'TopicRecord'",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2].strip() == "2"


# ---------------------------------------------------------------------------------------------
# KRaft snapshots (__cluster_metadata-0/<end offset>-<epoch>.checkpoint)

SNAPSHOT_NAME = "00000000000000000978-0000000003.checkpoint"
TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"  # bytes 0..15 as Kafka prints a Uuid


def _control_batch(records: list[tuple[int, bytes, bytes]], base: int, epoch: int) -> bytes:
    """A v2 control batch of ``(timestamp, key, value)`` records (attributes bit 5 set, the
    partition leader epoch ``epoch``, the CRC-32C recomputed), as Kafka's
    MemoryRecordsBuilder writes a snapshot's header and footer batches."""
    from kafka.record.util import calc_crc32c

    data = bytearray(kp_v2_batch([(t, k, v, []) for t, k, v in records], base_offset=base))
    struct.pack_into(">i", data, 12, epoch)
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x20)
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def _metadata_value(name: str, version: int, fields: dict) -> bytes:
    spec = by_name(name)
    return uvarint(1) + uvarint(spec.api_key) + uvarint(version) + encode(spec, version, fields)


def kraft_snapshot(epoch: int = 3) -> bytes:
    """A KRaft snapshot as RecordsSnapshotWriter lays it out: offsets from 0; a control batch
    with SnapshotHeader and KRaftVersion; a batch of metadata records (a topic and its
    partition); a control batch with SnapshotFooter. Every batch's leader epoch is the
    snapshot's epoch."""
    ts = 1_700_000_000_000
    ctl = by_name("SnapshotHeaderRecord")
    header = encode(ctl, 0, {"version": 0, "lastContainedLogTimestamp": ts - 5})
    kraft = encode(by_name("KRaftVersionRecord"), 0, {"version": 0, "kRaftVersion": 1})
    footer = encode(by_name("SnapshotFooterRecord"), 0, {"version": 0})
    topic = _metadata_value("TopicRecord", 0, {"name": "orders", "topicId": TOPIC_ID})
    part = sample(by_name("PartitionRecord").fields, 0)
    part.update(partitionId=0, topicId=TOPIC_ID, replicas=[1], isr=[1], leader=1)
    partition = _metadata_value("PartitionRecord", 0, part)
    out = _control_batch(
        [(ts, struct.pack(">hh", 0, 3), header), (ts, struct.pack(">hh", 0, 5), kraft)], 0, epoch
    )
    data = bytearray(kp_v2_batch([(ts, None, topic, []), (ts, None, partition, [])], base_offset=2))
    struct.pack_into(">i", data, 12, epoch)
    from kafka.record.util import calc_crc32c

    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    out += bytes(data)
    out += _control_batch([(ts, struct.pack(">hh", 0, 4), footer)], 4, epoch)
    return out


def _metadata_dir(tmp_path: Path) -> Path:
    """A __cluster_metadata-0 directory: a log of one TopicRecord (offset 0) and a snapshot."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    topic = _metadata_value("TopicRecord", 0, {"name": "later", "topicId": TOPIC_ID})
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch([(1, None, topic, [])]))
    (d / SNAPSHOT_NAME).write_bytes(kraft_snapshot())
    (d / "quorum-state").write_text("{}")
    return d


def test_a_kraft_snapshot_named_as_a_path_is_read(tmp_path: Path) -> None:
    """Synthetic (no real snapshot in the fixtures): a .checkpoint file named as a path reads
    as a record-batch file: the header, KRaft version, metadata records and footer, each row
    with the snapshot's id; offsets are the snapshot's own, from 0."""
    d = _metadata_dir(tmp_path)
    t = read_table(d / SNAPSHOT_NAME, decode="cluster_metadata")
    rows = t.to_pylist()
    assert [r["record_type"] for r in rows] == [
        "SnapshotHeader",
        "KRaftVersion",
        "TopicRecord",
        "PartitionRecord",
        "SnapshotFooter",
    ]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4]
    assert {(r["snapshot_end_offset"], r["snapshot_end_epoch"]) for r in rows} == {(978, 3)}
    assert {r["topic"] for r in rows} == {"__cluster_metadata"}
    assert rows[2]["topic_name"] == "orders" and rows[3]["replicas"] == [1]
    assert json.loads(rows[0]["decoded"])["value"]["lastContainedLogTimestamp"] == (
        1_700_000_000_000 - 5
    )
    # auto: the topic directory names the interpretation
    t = read_table(d / SNAPSHOT_NAME, decode="auto")
    assert t.column("record_type").to_pylist()[2] == "TopicRecord"
    # raw: the same file, the records' bytes
    t = read_table(d / SNAPSHOT_NAME, includeControlRecords=True, includeMetadata=True)
    assert t.num_rows == 5 and t.column("segmentBaseOffset").null_count == 5


def test_include_snapshots_in_a_partition_read(tmp_path: Path) -> None:
    """Synthetic: a partition directory reads its log only; includeSnapshots adds the
    snapshot, planned apart from the log (offsets 0.. again, no gap or overlap reported), its
    rows told apart by snapshot_end_offset; the raw schema tells them by segmentPath."""
    d = _metadata_dir(tmp_path)
    t = read_table(d, decode="cluster_metadata")
    assert t.column("topic_name").to_pylist() == ["later"]
    assert t.column("snapshot_end_offset").to_pylist() == [None]
    st = ReadStats()
    t = read_table(tmp_path, decode="auto", includeSnapshots=True, failOnDataLoss=True, stats=st)
    rows = t.to_pylist()
    log_rows = [r for r in rows if r["snapshot_end_offset"] is None]
    snap_rows = [r for r in rows if r["snapshot_end_offset"] == 978]
    assert [r["topic_name"] for r in log_rows] == ["later"]
    assert len(snap_rows) == 5 and not st.missing_offsets
    latest = [r for r in snap_rows if r["record_type"] == "TopicRecord"]
    assert latest[0]["topic_name"] == "orders"
    t = read_table(d, includeSnapshots=True, includeMetadata=True, includeControlRecords=True)
    paths = {Path(p).name for p in t.column("segmentPath").to_pylist()}
    assert paths == {"00000000000000000000.log", SNAPSHOT_NAME}


def test_snapshots_and_streams(tmp_path: Path) -> None:
    """Synthetic: a stream refuses includeSnapshots, by name."""
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.request import check_stream_options

    with pytest.raises(OptionError, match="includeSnapshots"):
        check_stream_options(parse_options({"includeSnapshots": "true"}, paths=str(tmp_path)))


def test_real_snapshots_decode() -> None:
    """Real data, when the shared fixtures hold KRaft snapshots (at the time of writing they
    hold none: the test skips): every record of every snapshot decodes, a header first and a
    footer last."""
    root = require_shared(BROKER_WRITTEN)
    found = sorted(p for p in root.rglob("*.checkpoint") if "__cluster_metadata" in str(p))
    found = [p for p in found if p.name[:20].isdigit()]
    if not found:
        pytest.skip("no KRaft snapshot (.checkpoint) in the broker-written fixtures")
    for p in found:
        t = read_table(p, decode="cluster_metadata", mode="PERMISSIVE")
        types = t.column("record_type").to_pylist()
        assert types[0] == "SnapshotHeader" and types[-1] == "SnapshotFooter", p
        assert not any(t.column("error").to_pylist()), p


def test_spark_reads_snapshots(spark, tmp_path: Path) -> None:
    """Synthetic: Spark's decode=cluster_metadata with includeSnapshots has the snapshot's rows
    (told apart by snapshot_end_offset) and the log's, as the Arrow API."""
    d = _metadata_dir(tmp_path)
    df = (
        spark.read.format("kafkalog")
        .option("decode", "cluster_metadata")
        .option("includeSnapshots", "true")
        .load(str(d))
    )
    got = sorted(
        (r["snapshot_end_offset"] or -1, r["offset"], r["record_type"]) for r in df.collect()
    )
    assert got == [
        (-1, 0, "TopicRecord"),
        (978, 0, "SnapshotHeader"),
        (978, 1, "KRaftVersion"),
        (978, 2, "TopicRecord"),
        (978, 3, "PartitionRecord"),
        (978, 4, "SnapshotFooter"),
    ]
    one = spark.read.format("kafkalog").option("decode", "cluster_metadata")
    assert one.load(str(d / SNAPSHOT_NAME)).count() == 5


# ---------------------------------------------------------------------------------------------
# kafkalog dump: the decoder flags and KRaft control records as DumpLogSegments.java prints them


def _dump(capfd, *args: str) -> list[str]:
    from kafkalog_source.cli.main import main

    code = main(["dump", *args])
    out = capfd.readouterr()
    assert code == 0, out.err
    return [line for line in out.out.splitlines() if line.startswith("|")]


def _coordinator(rtype: str, kv: int, key: dict, v: int | None, value: dict | None) -> tuple:
    k = struct.pack(">h", kv) + encode(by_name(rtype + "Key"), kv, key)
    if value is None:
        return k, None
    return k, struct.pack(">h", v) + encode(by_name(rtype + "Value"), v, value)


def test_dump_transaction_log_decoder(tmp_path: Path, capfd) -> None:
    """Synthetic (no real __transaction_state in the fixtures): key and payload as the Java
    tool's TransactionLogMessageParser prints them: the record type id as a string, the
    value's version as a string, tagged fields only when not at their default; a tombstone's
    payload is <DELETE>."""
    d = tmp_path / "__transaction_state-0"
    d.mkdir()
    base = {
        "producerId": 7,
        "producerEpoch": 1,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": 2,
        "transactionStartTimestampMs": 1,
    }
    k1, v1 = _coordinator("TransactionLog", 0, {"transactionalId": "tx-é"}, 1, base)
    k2, v2 = _coordinator(
        "TransactionLog", 0, {"transactionalId": "tx"}, 1, {**base, "nextProducerId": 9}
    )
    k3, _ = _coordinator("TransactionLog", 0, {"transactionalId": "tx"}, None, None)
    recs = [(1, k1, v1, []), (2, k2, v2, []), (3, k3, None, [])]
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(recs))
    lines = _dump(capfd, "--transaction-log-decoder", str(d / "00000000000000000000.log"))
    data = (
        '"producerId":7,"producerEpoch":1,"transactionTimeoutMs":60000,"transactionStatus":1,'
        '"transactionPartitions":[{"topic":"t","partitionIds":[0,1]}],'
        '"transactionLastUpdateTimestampMs":2,"transactionStartTimestampMs":1'
    )
    assert lines[0].endswith(
        'headerKeys: [] key: {"type":"0","data":{"transactionalId":"tx-é"}} '
        f'payload: {{"version":"1","data":{{{data}}}}}'
    )
    assert '"producerId":7,"nextProducerId":9,"producerEpoch":1' in lines[1]
    assert lines[2].endswith('key: {"type":"0","data":{"transactionalId":"tx"}} payload: <DELETE>')


def test_dump_share_group_state_decoder(tmp_path: Path, capfd) -> None:
    """Synthetic (no real __share_group_state in the fixtures): ShareSnapshot (type 0) and
    ShareUpdate (type 1) as the Java tool's ShareGroupStateMessageParser; an unknown type."""
    d = tmp_path / "__share_group_state-0"
    d.mkdir()
    key = {"groupId": "g", "topicId": TOPIC_ID, "partition": 3}
    batches = [{"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryCount": 1}]
    snap = {"snapshotEpoch": 1, "stateEpoch": 2, "leaderEpoch": 3, "startOffset": 0}
    snap |= {"createTimestamp": 10, "writeTimestamp": 11}  # ShareSnapshotValue as 4.1+ writes it
    k1, v1 = _coordinator("ShareSnapshot", 0, key, 0, {**snap, "stateBatches": batches})
    upd = {"snapshotEpoch": 1, "leaderEpoch": 3, "startOffset": 5, "stateBatches": []}
    k2, v2 = _coordinator("ShareUpdate", 1, key, 0, upd)
    recs = [(1, k1, v1, []), (2, k2, v2, []), (3, struct.pack(">h", 9) + b"x", b"\0\0", [])]
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(recs))
    lines = _dump(capfd, "--share-group-state-decoder", str(d / "00000000000000000000.log"))
    kjson = f'{{"groupId":"g","topicId":"{TOPIC_ID}","partition":3}}'
    assert lines[0].endswith(
        f'key: {{"type":"0","data":{kjson}}} payload: {{"version":"0","data":{{'
        '"snapshotEpoch":1,"stateEpoch":2,"leaderEpoch":3,"startOffset":0,"createTimestamp":10,'
        '"writeTimestamp":11,"stateBatches":'
        '[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}'
    )
    assert lines[1].endswith(
        f'key: {{"type":"1","data":{kjson}}} payload: {{"version":"0","data":{{'
        '"snapshotEpoch":1,"leaderEpoch":3,"startOffset":5,"stateBatches":[]}}'
    )
    assert lines[2].endswith("key: Unknown record type 9 at offset 2, skipping.")


def test_dump_remote_log_metadata_decoder(tmp_path: Path, capfd) -> None:
    """Synthetic (no real __remote_log_metadata in the fixtures): each record as the Java
    object's toString (RemoteLogSegmentMetadata{...} & co.); Kafka's own checks of the values
    (an empty segmentLeaderEpochs) are errors as there."""
    d = tmp_path / "__remote_log_metadata-0"
    d.mkdir()
    tip = {"name": "orders", "id": TOPIC_ID, "partition": 2}
    seg_id = "AQIDBAUGBwgJCgsMDQ4PEA"
    seg = {
        "remoteLogSegmentId": {"topicIdPartition": tip, "id": seg_id},
        "startOffset": 0,
        "endOffset": 99,
        "brokerId": 1,
        "maxTimestampMs": 5,
        "eventTimestampMs": 6,
        "segmentLeaderEpochs": [{"leaderEpoch": 1, "offset": 50}, {"leaderEpoch": 0, "offset": 0}],
        "segmentSizeInBytes": 1000,
        "customMetadata": b"abc",
        "remoteLogSegmentState": 0,
    }
    upd = {
        "remoteLogSegmentId": seg["remoteLogSegmentId"],
        "brokerId": 1,
        "eventTimestampMs": 7,
        "customMetadata": None,
        "remoteLogSegmentState": 1,
    }
    dele = {
        "topicIdPartition": tip,
        "brokerId": 1,
        "eventTimestampMs": 8,
        "remotePartitionDeleteState": 0,
    }
    values = [
        _metadata_value("RemoteLogSegmentMetadataRecord", 0, seg),
        _metadata_value("RemoteLogSegmentMetadataUpdateRecord", 0, upd),
        _metadata_value("RemotePartitionDeleteMetadataRecord", 0, dele),
        _metadata_value("RemoteLogSegmentMetadataRecord", 0, {**seg, "segmentLeaderEpochs": []}),
    ]
    recs = [(i, None, v, []) for i, v in enumerate(values)]
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(recs))
    lines = _dump(capfd, "--remote-log-metadata-decoder", str(d / "00000000000000000000.log"))
    sid = f"RemoteLogSegmentId{{topicIdPartition={TOPIC_ID}:orders-2, id={seg_id}}}"
    assert lines[0].endswith(
        f"headerKeys: [] payload: RemoteLogSegmentMetadata{{remoteLogSegmentId={sid}, "
        "startOffset=0, endOffset=99, brokerId=1, maxTimestampMs=5, eventTimestampMs=6, "
        "segmentLeaderEpochs={0=0, 1=50}, segmentSizeInBytes=1000, "
        "customMetadata=Optional[CustomMetadata{3 bytes}], state=COPY_SEGMENT_STARTED}"
    )
    assert lines[1].endswith(
        f"payload: RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={sid}, "
        "customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED, eventTimestampMs=7, "
        "brokerId=1}"
    )
    assert lines[2].endswith(
        f"payload: RemotePartitionDeleteMetadata{{topicPartition={TOPIC_ID}:orders-2, "
        "state=DELETE_PARTITION_MARKED, eventTimestampMs=8, brokerId=1}"
    )
    assert lines[3].endswith(
        "payload: Error at offset 3, skipping. segmentLeaderEpochs can not be null or empty"
    )


def test_dump_kraft_control_records_and_metadata_errors(tmp_path: Path, capfd) -> None:
    """Synthetic: a KRaft snapshot dumped: `Snapshot end offset: 978, epoch: 3`, the header,
    KRaft version and footer control records as the Java tool prints them (` SnapshotHeader
    {...}`), metadata records as `payload: {"type":"TOPIC_RECORD",...}`; the Scala format
    keeps its own form of a leader change; a metadata record that does not decode prints
    `Error at <offset>, skipping.` (no "offset", as Kafka)."""
    d = _metadata_dir(tmp_path)
    from kafkalog_source.cli.main import main

    assert main(["dump", "--cluster-metadata-decoder", str(d / SNAPSHOT_NAME)]) == 0
    out = capfd.readouterr().out.splitlines()
    assert "Snapshot end offset: 978, epoch: 3" in out
    lines = [x for x in out if x.startswith("|")]
    assert lines[0].endswith(
        'headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":1699999999995}'
    )
    assert lines[1].endswith('headerKeys: [] KRaftVersion {"version":0,"kRaftVersion":1}')
    assert (
        f'payload: {{"type":"TOPIC_RECORD","version":0,"data":{{"name":"orders","topicId":"{TOPIC_ID}"}}}}'
        in lines[2]
    )
    assert lines[4].endswith('headerKeys: [] SnapshotFooter {"version":0}')
    # a leader change (the Java tool) and the Scala tool's form of it
    lc = encode(
        by_name("LeaderChangeMessage"),
        0,
        {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": []},
    )
    log = tmp_path / "lc" / "__cluster_metadata-0"
    log.mkdir(parents=True)
    bad = uvarint(1) + uvarint(2) + uvarint(0) + b"\x00"
    (log / "00000000000000000000.log").write_bytes(
        _control_batch([(1, struct.pack(">hh", 0, 2), lc)], 0, 1)
        + kp_v2_batch([(2, None, bad, [])], base_offset=1)
    )
    f = str(log / "00000000000000000000.log")
    lines = _dump(capfd, "--cluster-metadata-decoder", f)
    assert lines[0].endswith(
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[]}'
    )
    assert "payload: Error at 1, skipping. " in lines[1]
    lines = _dump(capfd, "--deep-iteration", "--format", "scala", f)
    assert lines[0].endswith("controlType: LEADER_CHANGE(2)")
    # jsonl: KRaft control records carry `decoded` under --cluster-metadata-decoder
    from kafkalog_source.cli.main import main

    assert main(["dump", "--format", "jsonl", "--cluster-metadata-decoder", f]) == 0
    objs = [json.loads(x) for x in capfd.readouterr().out.splitlines()]
    recs = [o for o in objs if o["type"] == "record"]
    assert recs[0]["decoded"]["recordType"] == "LeaderChange"
    assert recs[0]["decoded"]["value"]["leaderId"] == 1
    assert recs[1]["decoded"]["error"]


def test_failfast_in_a_compressed_batch_names_the_batch(tmp_path: Path) -> None:
    """Synthetic: a record of a compressed batch has no byte of its own in the file; FAILFAST
    names its batch's byte (with the offset, exact); a value that stops parsing in an
    uncompressed batch is named by the value's byte."""
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    key = struct.pack(">h", 1) + encode(
        by_name("OffsetCommitKey"), 0, {"group": "g" * 40, "topic": "t" * 40, "partition": 2}
    )
    bad = struct.pack(">h", 3) + b"\0" * 5  # OffsetCommitValue v3 runs past the end
    first = kp_v2_batch([(1, key, None, [])])
    packed = kp_v2_batch([(2, key, None, []), (3, key, bad, [])], base_offset=1, codec=1)
    assert packed[22] & 0x07 == 1  # gzip did shrink it
    (d / "00000000000000000000.log").write_bytes(first + packed)
    with pytest.raises(UndecodableRecordError) as e:
        read_table(d, decode="consumer_offsets")
    assert e.value.position == len(first) and "offset 2 (in the batch at this byte)" in str(e.value)
    plain = kp_v2_batch([(2, key, None, []), (3, key, bad, [])], base_offset=1)
    (d / "00000000000000000000.log").write_bytes(first + plain)
    with pytest.raises(UndecodableRecordError) as e:
        read_table(d, decode="consumer_offsets")
    value_at = (first + plain).rindex(bad)
    assert f"its value stops parsing at byte {value_at + 2}" in str(e.value)
    assert len(first) + 61 < e.value.position < value_at


# ---------------------------------------------------------------------------------------------
# kafkalog query: one view per interpretation next to the raw one


def _lag_archive(tmp_path: Path) -> Path:
    """A log directory: __consumer_offsets-0 (a commit of t-2 at offset 42, an unknown record
    type, a tombstone) and the committed topic's partition t-2 (50 records)."""
    _offsets_dir(tmp_path)
    t = tmp_path / "t-2"
    t.mkdir()
    (t / "00000000000000000000.log").write_bytes(
        kp_v2_batch([(i, b"k", b"v", []) for i in range(50)])
    )
    return tmp_path


_LAG_SQL = (
    'SELECT c."group", c.committed_offset, e.log_end - c.committed_offset AS lag '
    "FROM consumer_offsets c JOIN (SELECT topic, partition, max(offset) + 1 AS log_end "
    "FROM kafkalog GROUP BY topic, partition) e "
    "ON e.topic = c.committed_topic AND e.partition = c.committed_partition "
    "WHERE c.record_type = 'OffsetCommit' AND NOT c.tombstone"
)


def test_query_views_per_interpretation(tmp_path: Path, capfd) -> None:
    """Synthetic: `kafkalog query` over a log directory holding __consumer_offsets has the view
    consumer_offsets (decoded) next to kafkalog (raw): a lag query joins them; the options of
    -o reach both views (mode=DROPMALFORMED drops the undecodable record); a view that is not
    there is named with the views there are."""
    from kafkalog_source.cli.main import main

    root = _lag_archive(tmp_path)
    assert main(["query", "-q", str(root), "-o", "mode=DROPMALFORMED", _LAG_SQL]) == 0
    out = capfd.readouterr().out.splitlines()
    assert [c.strip() for c in out[2].split("|")] == ["g", "42", "8"]
    assert main(["query", "-q", str(root), "SELECT count(*) FROM kafkalog"]) == 0
    assert capfd.readouterr().out.splitlines()[2].strip() == "53"
    code = main(["query", "-q", str(root), "SELECT count(*) FROM cluster_metadata"])
    err = capfd.readouterr().err
    assert code == 2
    assert (
        "the view kafkalog, and its internal topics decoded are the views consumer_offsets" in err
    )
    # only the views a query scans are read: the undecodable record fails only what reads it
    assert main(["query", "-q", str(root), "SELECT count(*) FROM kafkalog"]) == 0
    capfd.readouterr()
    assert main(["query", "-q", str(root), "SELECT count(*) FROM consumer_offsets"]) == 1
    assert "record type OffsetCommit" in capfd.readouterr().err


@pytest.mark.spark
@pytest.mark.slow
def test_query_views_per_interpretation_on_spark(tmp_path: Path) -> None:
    """Synthetic: the same views on the Spark engine."""
    from conftest import run_cli

    root = _lag_archive(tmp_path)
    sql = _LAG_SQL.replace('c."group"', "c.`group`").replace("(offset)", "(`offset`)")
    out = run_cli(
        "query", str(root), "-o", "mode=DROPMALFORMED", sql, "--engine", "spark", timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert [c.strip() for c in out.stdout.splitlines()[2].split("|")] == ["g", "42", "8"]


def test_real_kafka_4_consumer_offsets() -> None:
    """Real data written by Kafka 4.0.0 (ArthurArutunyan04-Backend_labs: apache/kafka:4.0.0 in
    KRaft mode, ../shared/fixtures/broker-written/PROVENANCE.md): its compacted
    ``__consumer_offsets-19`` decodes in full (FAILFAST) into the 7 records PROVENANCE lists,
    and each committed offset is within its partition's log as the log directory's checkpoints
    say (review 1, item 9)."""
    root = require_shared(BROKER_WRITTEN / "ArthurArutunyan04-Backend_labs" / "kafka-data")
    assert _properties(root / "meta.properties")["version"] == "1"  # a KRaft log directory
    stats = ReadStats()
    t = read_table(root / "__consumer_offsets-19", decode="consumer_offsets", stats=stats)
    rows = t.to_pylist()
    offsets = [r["offset"] for r in rows]
    assert len(rows) == 7 and (offsets[0], offsets[-1]) == (186795, 258526)  # PROVENANCE.md
    assert all(r["error"] is None and r["decoded"] for r in rows)
    assert stats.missing_offsets == 330479 - 258527  # the absent active segment, reported
    [group] = [r for r in rows if r["record_type"] == "GroupMetadata"]
    assert (group["record_version"], group["protocol_type"]) == (3, "consumer")
    value = json.loads(group["decoded"])["value"]
    assert value["protocol"] == "range" and value["members"]
    commits = [r for r in rows if r["record_type"] == "OffsetCommit"]
    assert len(commits) == 6 and {r["record_version"] for r in commits} == {3}
    assert {r["group"] for r in commits} == {group["group"]}
    ends = {}  # the broker's own log ends, of every partition (some are not in the copy)
    for line in (root / "replication-offset-checkpoint").read_text().splitlines()[2:]:
        topic, part, end = line.split()
        ends[(topic, int(part))] = int(end)
    for r in commits:
        end = ends[(r["committed_topic"], r["committed_partition"])]
        assert 0 < r["committed_offset"] <= end, (r["committed_topic"], end)


def _guide_sql(marker: str) -> str:
    """The SQL block of docs/guides/internal-topics.md that follows ``marker``."""
    text = (Path(__file__).resolve().parents[1] / "docs/guides/internal-topics.md").read_text()
    block = text[text.index(marker) :].split("```sql\n", 1)[1].split("```", 1)[0]
    return "\n".join(line for line in block.splitlines() if not line.startswith("--"))


def test_the_guides_lag_queries_take_legacy_commits(tmp_path: Path, capfd) -> None:
    """Synthetic: the guide's two consumer lag queries, run as written by `kafkalog query`,
    count a group whose commits are record type 0 (LegacyOffsetCommit, 0.8.2's key, which
    Kafka 4's specs name apart) as well as one of type 1 (review 1, item 14)."""
    from kafkalog_source.cli.main import main

    co = tmp_path / "__consumer_offsets-0"
    co.mkdir()
    records = []
    for rtype, name, group, offset in (
        (0, "LegacyOffsetCommit", "old", 40),
        (1, "OffsetCommit", "new", 45),
    ):
        key = struct.pack(">h", rtype) + encode(
            by_name(f"{name}Key"), 0, {"group": group, "topic": "t", "partition": 2}
        )
        vspec = by_name(f"{name}Value")
        version = 1 if rtype == 1 else 0
        value = {**sample(vspec.fields, version), "offset": offset}
        records.append(
            (
                1_700_000_000_000 + offset,
                key,
                struct.pack(">h", version) + encode(vspec, version, value),
                [],
            )
        )
    (co / "00000000000000000000.log").write_bytes(kp_v2_batch(records))
    t = tmp_path / "t-2"
    t.mkdir()
    (t / "00000000000000000000.log").write_bytes(
        kp_v2_batch([(i, b"k", b"v", []) for i in range(50)])
    )
    types = read_table(co, decode="consumer_offsets").column("record_type").to_pylist()
    assert types == ["LegacyOffsetCommit", "OffsetCommit"]
    history = _guide_sql("**Consumer lag history from an archive alone**")
    assert main(["query", "-q", str(tmp_path), "-o", "decode=auto", history]) == 0
    out = capfd.readouterr().out
    assert "old" in out and "new" in out, out
    at_end = _guide_sql("Consumer lag at the end of an archive:")
    assert main(["query", "-q", str(tmp_path), at_end]) == 0
    rows = [
        [c.strip() for c in line.split("|")] for line in capfd.readouterr().out.splitlines()[2:]
    ]
    assert sorted((r[0], r[3], r[4]) for r in rows if len(r) == 5) == [
        ("new", "45", "5"),
        ("old", "40", "10"),
    ]
