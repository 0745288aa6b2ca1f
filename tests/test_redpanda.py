"""Redpanda archives (issue 42): data directories, partition directories, single segments and
tiered-storage buckets read as a Kafka consumer sees them; Redpanda's own namespaces skipped
and counted, or read raw; damage as loud as Kafka's; a path mixing Kafka and Redpanda refused.

The segments are built with ``tests/redpanda_reference.py`` (an encoder and decoder written
from Redpanda's source, not from kafkalog's), and the expected Kafka offsets are written out by
hand from the rule in ``storage/offset_translator_state.h`` (redpanda-data/redpanda 1c6cff34):
Kafka offset = raft offset minus the offsets taken before it by batches of types 2, 19, 23, 25,
34, 38. The comparison of every fixture and every codec with that decoder is
``tests/test_redpanda_reference.py``.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
import redpanda_reference as rr
from conftest import SAMPLES, run_cli

import kafkalog_source as kl
from kafkalog_source.errors import CorruptDataError, OptionError, PathError

TS = 1_700_000_000_000


def _data(raft_first: int, n: int, codec: str = "none", **kw: Any) -> bytes:
    """A raft_data batch of ``n`` records at raft offsets raft_first.., values naming them."""
    recs = [rr.encode_record(i, i, b"k%d" % (raft_first + i), b"raft-%d" % (raft_first + i), [])
            for i in range(n)]  # fmt: skip
    return rr.encode_batch(raft_first, recs, codec=codec, first_timestamp=TS + raft_first, **kw)


def _other(raft: int, batch_type: int) -> bytes:
    """A one-record batch of a non-data type."""
    return rr.encode_batch(raft, [rr.encode_record(0, 0, None, b"state", [])],
                           batch_type=batch_type, first_timestamp=TS + raft)  # fmt: skip


# raft offset -> Kafka offset of every data record, by hand:
#   0-1-v1.log: raft_configuration@0 (no Kafka offset), data@1-3 -> 0-2, tx_fence@4 -> 3 (no
#               record), data@5-6 -> 4-5
#   7-2-v1.log: raft_configuration@7, archival_metadata@8 (none), data@9-11 -> 6-8
#   12-3-v1.log: raft_configuration@12, data@13-14 -> 9-10, then a zero tail
EXPECTED = {1: 0, 2: 1, 3: 2, 5: 4, 6: 5, 9: 6, 10: 7, 11: 8, 13: 9, 14: 10}
SEGMENTS = {
    "0-1-v1.log": [_other(0, 2), _data(1, 3), _other(4, 10), _data(5, 2)],
    "7-2-v1.log": [_other(7, 2), _other(8, 19), _data(9, 3)],
    "12-3-v1.log": [_other(12, 2), _data(13, 2, codec="zstd"), bytes(1000)],
}


def _partition(root: Path, ns: str = "kafka", topic: str = "orders", part: int = 0,
               rev: int = 7, skip: tuple[str, ...] = ()) -> Path:  # fmt: skip
    d = root / ns / topic / f"{part}_{rev}"
    d.mkdir(parents=True, exist_ok=True)
    for name, batches in SEGMENTS.items():
        if name not in skip:
            (d / name).write_bytes(b"".join(batches))
    return d


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    """A data directory: kafka/orders/0_7 (above), kafka_internal/tx/0_3 and redpanda/kvstore."""
    root = tmp_path / "data"
    _partition(root)
    for ns, topic, t in (("kafka_internal", "tx", 11), ("redpanda", "kvstore", 4)):
        d = root / ns / topic / "0_3"
        d.mkdir(parents=True)
        (d / "0-1-v1.log").write_bytes(_other(0, 2) + _other(1, t) + _other(2, t))
    return root


def _cli(*args: str) -> tuple[int, str, str]:
    done = run_cli(*args)
    return done.returncode, done.stdout, done.stderr


def _rows(table: Any) -> list[tuple]:
    return list(zip(*(table.column(c).to_pylist() for c in ("offset", "value")), strict=True))


def _expected_rows() -> list[tuple[int, bytes]]:
    return [(k, b"raft-%d" % r) for r, k in sorted(EXPECTED.items())]


def test_every_shape_of_path_reads_the_kafka_offsets(data_dir: Path) -> None:
    part = data_dir / "kafka" / "orders" / "0_7"
    for path in (data_dir, data_dir / "kafka", data_dir / "kafka" / "orders", part):
        stats = kl.ReadStats()
        table = kl.read_table(path, stats=stats)
        assert _rows(table) == _expected_rows(), path
        assert set(table.column("topic").to_pylist()) == {"orders"}
        assert set(table.column("partition").to_pylist()) == {0}
        assert table.column("timestamp").to_pylist()[0].timestamp() * 1000 == TS + 1
        assert stats.zero_tails == 1 and not stats.malformed_batches
    # Redpanda's own namespaces: skipped and counted (the data directory holds two)
    stats = kl.ReadStats()
    kl.read_table(data_dir, stats=stats)
    assert stats.redpanda_internal_partitions == 2
    assert "skipped 2 partitions of Redpanda's own namespaces" in stats.summary()
    with pytest.raises(PathError, match="redpanda=raw"):
        kl.read_table(data_dir / "redpanda")


def test_a_segment_named_alone_is_translated_from_its_siblings(data_dir: Path) -> None:
    part = data_dir / "kafka" / "orders" / "0_7"
    table = kl.read_table(part / "7-2-v1.log")
    assert _rows(table) == [(k, b"raft-%d" % r) for r, k in EXPECTED.items() if 9 <= r <= 11]
    # without the segments before it, its Kafka offsets cannot be known: refused, saying why
    alone = data_dir.parent / "alone" / "kafka" / "orders" / "0_7"
    alone.mkdir(parents=True)
    shutil.copy(part / "7-2-v1.log", alone)
    with pytest.raises(CorruptDataError, match="cannot be known") as info:
        kl.read_table(alone)
    assert "redpanda=raw" in str(info.value)
    # raw: the raft offsets, every batch
    raw = kl.read_table(alone, redpanda="raw", includeMetadata=True)
    assert raw.column("offset").to_pylist() == [7, 8, 9, 10, 11]
    assert raw.column("redpandaBatchType").to_pylist() == [
        "raft_configuration", "archival_metadata", "raft_data", "raft_data", "raft_data"
    ]  # fmt: skip


def test_raw_reads_every_namespace_and_batch(data_dir: Path) -> None:
    table = kl.read_table(data_dir, redpanda="raw", includeMetadata=True)
    got = {}
    for topic, off, kind in zip(
        *(table.column(c).to_pylist() for c in ("topic", "offset", "redpandaBatchType")),
        strict=True,
    ):
        got.setdefault(topic, []).append((off, kind))
    assert got["kafka_internal/tx"] == [(0, "raft_configuration"), (1, "tm_update"),
                                        (2, "tm_update")]  # fmt: skip
    assert got["redpanda/kvstore"][1] == (1, "kvstore")
    # the user topic: every raft offset holding a record, the tx_fence's record included
    assert [o for o, _ in got["orders"]] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert dict(got["orders"])[4] == "tx_fence"


def test_positions_are_the_files(data_dir: Path) -> None:
    part = data_dir / "kafka" / "orders" / "0_7"
    table = kl.read_table(part, includeMetadata=True)
    sizes = [len(b) for b in SEGMENTS["0-1-v1.log"]]
    # the first data batch follows the raft_configuration batch in the file
    assert table.column("batchPosition").to_pylist()[0] == sizes[0]
    assert table.column("segmentBaseOffset").to_pylist()[0] == 0
    assert table.column("partitionLeaderEpoch").to_pylist()[-1] == 3  # the segment's term


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_damage_is_loud_and_names_the_file_byte(data_dir: Path) -> None:
    part = data_dir / "kafka" / "orders" / "0_7"
    seg = part / "7-2-v1.log"
    at = len(SEGMENTS["7-2-v1.log"][0]) + len(SEGMENTS["7-2-v1.log"][1])  # the data batch
    # a flipped byte in the header (its base offset): header_crc fails
    _flip(seg, at + 9)
    with pytest.raises(CorruptDataError, match="header_crc") as info:
        kl.read_table(part)
    assert info.value.path == str(seg) and info.value.position == at
    stats = kl.ReadStats()
    table = kl.read_table(part, mode="DROPMALFORMED", stats=stats)
    assert stats.malformed_batches == 1
    assert [o for o, _ in _rows(table)] == [0, 1, 2, 4, 5, 9, 10]
    assert any("header_crc" in e.reason for e in stats.events)
    code, out, err = _cli("verify", str(part))
    assert code == 1 and "header_crc" in out + err
    code, out, err = _cli("dump", str(seg))
    assert code == 1 and "headerCrcValid: false" in out
    _flip(seg, at + 9)  # repaired
    # a flipped byte in the records: Kafka's CRC (Redpanda's crc) fails
    _flip(seg, at + 70)
    with pytest.raises(CorruptDataError, match="CRC") as info:
        kl.read_table(part)
    assert info.value.position == at and "raft_data" in str(info.value)
    _flip(seg, at + 70)
    assert _rows(kl.read_table(part)) == _expected_rows()


def test_a_cut_last_batch_and_a_missing_middle_segment(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    last = part / "12-3-v1.log"
    data = last.read_bytes()
    last.write_bytes(data[: len(SEGMENTS["12-3-v1.log"][0]) + 30])  # cut inside its data batch
    stats = kl.ReadStats()
    assert [o for o, _ in _rows(kl.read_table(part, stats=stats))] == list(range(9))[:3] + [
        4, 5, 6, 7, 8
    ]  # fmt: skip
    assert stats.truncated_tails == 1  # quiet at the end of the partition, as for Kafka
    # a missing middle segment: its offsets are missing, loud under failOnDataLoss
    gap = _partition(tmp_path / "gap", skip=("7-2-v1.log",))
    with pytest.raises(CorruptDataError, match="missing"):
        kl.read_table(gap, failOnDataLoss="true")
    stats = kl.ReadStats()
    kl.read_table(gap, stats=stats)
    assert stats.missing_ranges == 1
    assert any(e.kind == "redpanda hole" for e in stats.events)


def test_kafka_and_redpanda_in_one_read_are_refused(data_dir: Path, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(data_dir, mixed)
    shutil.copytree(SAMPLES / "orders-0", mixed / "orders-0")
    with pytest.raises(OptionError, match="both Kafka and Redpanda") as info:
        kl.read_table(mixed)
    assert "orders-0" in str(info.value) and "0_7" in str(info.value)


def test_transactions_read_committed(tmp_path: Path) -> None:
    """tx_fence, a transactional batch, tx_prepare, a COMMIT marker (as the ksqlDB fixture);
    and an aborted transaction of another producer."""
    d = tmp_path / "kafka" / "t" / "0_1"
    d.mkdir(parents=True)

    def marker(raft: int, pid: int, commit: bool) -> bytes:
        key = struct.pack(">hh", 0, 1 if commit else 0)
        value = struct.pack(">hi", 0, 0)
        return rr.encode_batch(raft, [rr.encode_record(0, 0, key, value, [])],
                               attrs=0x30, producer_id=pid, producer_epoch=0,
                               first_timestamp=TS)  # fmt: skip

    tx = {"attrs": 0x10, "producer_epoch": 0, "base_sequence": 0}
    batches = [
        _other(0, 2),
        rr.encode_batch(
            1,
            [rr.encode_record(0, 0, None, b"f", [])],
            batch_type=10,
            attrs=0x20,
            producer_id=5,
            producer_epoch=0,
        ),  # fmt: skip
        _data(2, 2, producer_id=5, **tx),  # Kafka 1-2, committed
        _data(4, 1, producer_id=6, **tx),  # Kafka 3, aborted
        rr.encode_batch(
            5,
            [rr.encode_record(0, 0, None, b"p", [])],
            batch_type=9,
            attrs=0x20,
            producer_id=5,
            producer_epoch=0,
        ),  # fmt: skip
        marker(6, 5, True),  # Kafka 5
        marker(7, 6, False),  # Kafka 6
    ]
    (d / "0-1-v1.log").write_bytes(b"".join(batches))
    assert [o for o, _ in _rows(kl.read_table(d))] == [1, 2, 3]
    committed = kl.read_table(d, isolationLevel="read_committed")
    assert _rows(committed) == [(1, b"raft-2"), (2, b"raft-3")]


# ------------------------------------------------------------------ tiered storage (moto S3)


def _bucket(root: Path, manifest: str | None) -> None:
    """A tiered-storage copy of the partition: hashed segment keys (archiver term 1) and a
    JSON partition manifest with each segment's delta (or a binary one, or none)."""
    segs, delta, deltas = {}, 0, {}
    for name, batches in SEGMENTS.items():
        base, term = rr.segment_name(name)
        body = b"".join(b for b in batches if any(b))  # no zero tail in a bucket
        key = rr.remote_segment_key("kafka", "orders", 0, 7, name, 1)
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(body)
        deltas[name] = delta
        delta += sum(1 for b in batches if any(b) and b[16] in (2, 19))
        segs[name] = {"base_offset": base, "committed_offset": base + len(batches) + 1,
                      "size_bytes": len(body), "delta_offset": deltas[name],
                      "segment_term": term, "archiver_term": 1, "sname_format": 1}  # fmt: skip
    segs["0-1-v1.log"]["committed_offset"] = 6
    segs["7-2-v1.log"]["committed_offset"] = 11
    segs["12-3-v1.log"]["committed_offset"] = 14
    key = root / rr.partition_manifest_key("kafka", "orders", 0, 7)
    key.parent.mkdir(parents=True, exist_ok=True)
    if manifest == "json":
        doc = {"version": 1, "namespace": "kafka", "topic": "orders", "partition": 0,
               "revision": 7, "segments": segs}  # fmt: skip
        key.write_text(json.dumps(doc))
    elif manifest == "bin":
        key.with_name("manifest.bin").write_bytes(b"\x01\x02serde")


@pytest.mark.parametrize("manifest", ["json", "bin"])
def test_tiered_storage_from_s3(s3_server, tmp_path: Path, manifest: str) -> None:
    from remote_support import BUCKET
    from test_remote_requests import DelayProxy, request_kind

    local = tmp_path / "bucket"
    _bucket(local, manifest)
    prefix = f"rp-{manifest}"
    s3_server.upload(local, f"{BUCKET}/{prefix}")
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with DelayProxy(port, delay=0) as proxy:
        options = {**s3_server.options, "fs.s3.endpoint_override": f"http://127.0.0.1:{proxy.port}"}
        stats = kl.ReadStats()
        table = kl.read_table(f"s3://{BUCKET}/{prefix}", stats=stats, **options)
        kinds = [request_kind(line) for line in proxy.request_lines]
    assert _rows(table) == _expected_rows()
    # one listing, no HEAD, one GET per object read: the segments (walked whole, then read from
    # memory) and the JSON manifest (a binary one is not read)
    assert kinds.count("LIST") == 1 and "HEAD" not in kinds, kinds
    assert kinds.count("GET") == len(SEGMENTS) + (manifest == "json"), kinds
    said = [e for e in stats.events if e.kind == "redpanda manifest"]
    assert bool(said) == (manifest == "bin")
    if said:
        assert "cannot read yet" in said[0].message


# ------------------------------------------------------------------ the command


def test_dump_prints_types_and_both_offsets(data_dir: Path) -> None:
    seg = data_dir / "kafka" / "orders" / "0_7" / "0-1-v1.log"
    code, out, err = _cli("dump", str(seg))
    assert code == 0, err
    assert "redpanda type: 2 raft_configuration raftOffset: 0-0 kafkaOffset: -" in out
    assert "redpanda type: 10 tx_fence raftOffset: 4-4 kafkaOffset: 3" in out
    assert "redpanda type: 1 raft_data raftOffset: 5-6 kafkaOffset: 4" in out
    code, out, err = _cli("verify", str(data_dir))
    assert code == 0, out + err
    code, out, err = _cli("query", str(data_dir), "SELECT count(*) AS n, max(offset) AS m "
                             "FROM kafkalog")  # fmt: skip
    assert code == 0 and "10" in out, out + err
    target = data_dir.parent / "out.parquet"
    code, out, err = _cli("convert", "--engine", "arrow", str(data_dir), str(target))
    assert code == 0, err
    import pyarrow.dataset as ds

    assert ds.dataset(target).to_table().num_rows == 10


def test_hostile_bytes_are_loud_never_a_crash(tmp_path: Path) -> None:
    """Random bytes, and a good segment with random bytes written over it, under a Redpanda
    name: every read ends in rows and counted damage or a KafkaLogError, in every mode."""
    import random

    rng = random.Random(42)
    good = b"".join(b"".join(v) for v in SEGMENTS.values())[:2000]
    for i in range(40):
        data = bytearray(good if i % 2 else rng.randbytes(rng.randrange(1, 3000)))
        for _ in range(rng.randrange(1, 6)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        d = tmp_path / f"c{i}" / "kafka" / "t" / "0_1"
        d.mkdir(parents=True)
        (d / "0-1-v1.log").write_bytes(bytes(data))
        for mode in ("FAILFAST", "DROPMALFORMED", "PERMISSIVE"):
            stats = kl.ReadStats()
            try:
                kl.read_table(d, mode=mode, stats=stats)
            except kl.KafkaLogError:
                continue
            assert stats.unaccounted_bytes == 0


def test_both_modes_in_one_process(data_dir: Path) -> None:
    """A raw read and a Kafka read of the same files, interleaved in one process, each as asked."""
    part = data_dir / "kafka" / "orders" / "0_7"
    kafka = kl.read_table(part)
    raw = kl.read_table(part, redpanda="raw")
    again = kl.read_table(part, threads=2, maxPartitionBytes=200)
    assert _rows(kafka) == _rows(again) == _expected_rows()
    assert raw.column("offset").to_pylist()[0] == 0 and len(raw) == 15


# ------------------------------------------------------------------ quiet tails, file positions


def test_zero_tails_end_a_segment_quietly(data_dir: Path, caplog: Any) -> None:
    """Redpanda preallocates its segments: a zero tail is where the data ends. Counted (bytes
    under "zero tail", at the file's byte), never a warning, in the read nor in verify."""
    import logging

    part = data_dir / "kafka" / "orders" / "0_7"
    tail_at = sum(len(b) for b in SEGMENTS["12-3-v1.log"][:2])
    stats = kl.ReadStats()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        assert _rows(kl.read_table(part, stats=stats)) == _expected_rows()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert (stats.zero_tails, stats.preallocated_tails, stats.zero_tail_bytes) == (1, 1, 1000)
    assert not stats.skipped and stats.unaccounted_bytes == 0
    (event,) = stats.events_of("zero tail")
    assert event.position == tail_at and event.path.endswith("12-3-v1.log")
    code, out, err = _cli("verify", "--strict", str(part))
    assert code == 0 and "zero-filled" not in out + err, out + err


def test_verify_and_dump_name_the_file_byte(tmp_path: Path) -> None:
    """verify's own lines (offsets going back), its byte counts and dump's positions are the
    file's, not the Kafka view's (which leaves the raft_configuration batch out)."""
    d = tmp_path / "kafka" / "t" / "0_1"
    d.mkdir(parents=True)
    batches = [_other(0, 2), _data(1, 3), _data(2, 2)]  # raft 2-3 again: offsets go back
    seg = d / "0-1-v1.log"
    seg.write_bytes(b"".join(batches))
    second = len(batches[0]) + len(batches[1])
    code, out, err = _cli("verify", str(d))
    assert code == 1, out + err
    assert f"error: byte {second}: batch with offsets 1..2 does not follow" in out, out
    assert f"{seg.stat().st_size} bytes" in out
    code, out, err = _cli("dump", "--deep", str(seg))
    kafka = out.split("As a Kafka client reads it", 1)[1]
    assert f"position: {len(batches[0])} " in kafka and f"position: {second} " in kafka, out
    assert kafka.count("| offset: ") == 5, out  # every record, found by its file position


def test_raw_remote_reads_open_ahead_in_the_read_s_mode(s3_server, tmp_path: Path) -> None:
    """redpanda=raw over a bucket: the segments opened ahead on the prefetch's threads (the
    first ones before any range decodes) are opened raw too, also in a process that translated
    the same objects the Kafka way first (a Spark executor's worker reused)."""
    from remote_support import BUCKET

    from kafkalog_source.layout.redpanda import forget

    local = tmp_path / "bucket"
    _bucket(local, "json")
    prefix = "rp-raw-ahead"
    s3_server.upload(local, f"{BUCKET}/{prefix}")
    uri = f"s3://{BUCKET}/{prefix}"
    want = kl.read_table(_partition(tmp_path / "local"), redpanda="raw")  # the same batches
    assert len(want) == 15
    for kafka_first in (False, True):
        forget()
        if kafka_first:
            assert _rows(kl.read_table(uri, **s3_server.options)) == _expected_rows()
        got = kl.read_table(uri, redpanda="raw", remoteConcurrency="4", **s3_server.options)
        assert _rows(got) == _rows(want), kafka_first
        # and the Kafka way again, after the raw read
        assert _rows(kl.read_table(uri, **s3_server.options)) == _expected_rows()
    # a Spark executor: the splits planned elsewhere, read in a process that translated nothing
    from kafkalog_source.arrow.schema import output_projection
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request
    from kafkalog_source.reader import read_split

    o = parse_options({**s3_server.options, "redpanda": "raw", "remoteConcurrency": "4"}, paths=uri)
    splits = plan(batch_request(o))
    forget()
    rows = []
    for split in splits:
        for b in read_split(split, o, output_projection(o)):
            rows += zip(*(b.column(c).to_pylist() for c in ("offset", "value")), strict=True)
    assert sorted(rows) == sorted(_rows(want))
