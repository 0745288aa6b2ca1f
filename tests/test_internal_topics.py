"""decode=: Kafka's internal topics as typed tables (issue 22).

Two kinds of evidence, each test saying which:

* real data: the broker-written fixtures in ../shared (``__consumer_offsets`` from Kafka 0.10.1
  to 4.x, ``__cluster_metadata`` from KRaft brokers), decoded in full and checked against the
  rest of the same archive (partition.metadata, meta.properties, the committed topics' logs);
* synthetic data, built from the schema tables by tests/internal_encoder.py (no real data
  stands behind these: the fixtures hold no ``__transaction_state``, share-group,
  remote-log-metadata, KIP-848 or snapshot data); every record type and version of the pinned
  specs, and records they do not know, are in tests/test_internal_specs.py.

KRaft snapshots and ``kafkalog dump``'s decoders are in tests/test_internal_dump.py.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, kp_v2_batch, require_shared
from internal_encoder import encode, kafka_json, sample

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
