"""decode=: KRaft snapshots and ``kafkalog dump``'s decoders (issue 22, continued from
tests/test_internal_topics.py).

Synthetic data built from the schema tables by tests/internal_encoder.py, each record printed as
Kafka's DumpLogSegments.java prints it, and the broker-written fixtures' snapshots where there
are some (``../shared``; skipped when absent).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, kp_v2_batch, require_shared
from internal_encoder import encode, sample, uvarint

from kafkalog_source import read_table
from kafkalog_source.errors import OptionError, UndecodableRecordError
from kafkalog_source.format.messages.schema import by_name
from kafkalog_source.stats import ReadStats

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
