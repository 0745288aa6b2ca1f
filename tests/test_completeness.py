"""Complete or loud (issue 19): a read returns every record the archive holds exactly once, or
says which offsets of which partition are missing and why, from the archive's own evidence.

Damage is made the way users make it: a middle segment emptied or deleted (a failed copy), the
last segment cut short (a copy taken while the broker wrote), a second broker's copy of the same
partition, checkpoint files that say the log went further. The partitions are real data: the
samples (written by real clients, split into segments at batch boundaries as a broker rolls) and,
when ``../shared/fixtures`` is present, partitions written by real brokers. Expected rows come
from kafka-python decoding each batch on its own (``test_damage_order.entries``), never from
kafkalog. Real archives damaged, and random cut points, are in test_completeness_archives.py.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import struct
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, SAMPLES, require_shared, run_cli
from test_damage_order import Entry, entries

import kafkalog_source as kl
from kafkalog_source.errors import DataLossError, OptionError, PathError

# every magic, compressed and not
SAMPLE_PARTITIONS = [
    "magic2-none-0",
    "magic2-lz4-0",
    "magic2-zstd-0",
    "magic1-gzip-0",
    "magic1-none-0",
    "magic0-snappy-0",
]
ORDERS = BROKER_WRITTEN / "rjmfernandes-flink-on-prem" / "data"
ARTHUR = BROKER_WRITTEN / "ArthurArutunyan04-Backend_labs" / "kafka-data"


def last_offset(e: Entry) -> int:
    return max(r[0] for r in e.rows) if e.rows else e.offset_field


def _write_index(log: Path, base: int, ents: list[Entry], start: int) -> None:
    """A ``.index`` beside ``log`` with one entry per batch (relative last offset, position)
    but the first (a broker never indexes a segment's first append)."""
    out = bytearray()
    for e in ents:
        if e.rows and e.position > start:
            out += struct.pack(">ii", last_offset(e) - base, e.position - start)
    log.with_suffix(".index").write_bytes(bytes(out))


def segmented(tmp: Path, name: str, parts: int = 3, index: bool = True) -> tuple[Path, list]:
    """Copy a sample partition as ``parts`` segments cut at batch boundaries, each named by the
    next offset after the previous one (as a broker names a rolled segment). Returns the
    partition directory and, per segment, (path, base offset, entries)."""
    src = SAMPLES / name / "00000000000000000000.log"
    ents = entries(src.read_bytes())
    assert len(ents) >= parts
    part = tmp / name
    part.mkdir(parents=True)
    cuts = [len(ents) * i // parts for i in range(parts + 1)]
    segs = []
    base = 0
    for i in range(parts):
        chunk = ents[cuts[i] : cuts[i + 1]]
        log = part / f"{base:020d}.log"
        log.write_bytes(b"".join(e.data for e in chunk))
        if index:
            _write_index(log, base, chunk, chunk[0].position)
        segs.append((log, base, chunk))
        base = last_offset(chunk[-1]) + 1
    return part, segs


def offsets(chunk: list[Entry]) -> list[int]:
    return [r[0] for e in chunk for r in e.rows]


def read(path: str | list[str], **options: object) -> tuple[list[int], kl.ReadStats]:
    stats = kl.ReadStats()
    table = kl.read_table(path, stats=stats, **options)
    return table.column("offset").to_pylist(), stats


def missing(stats: kl.ReadStats) -> list[tuple[int, int]]:
    return [
        (e.base_offset, e.base_offset + _count(e.message) - 1)
        for e in stats.events_of("missing offsets")
    ]


def _count(message: str) -> int:
    found = re.search(r"\((\d+) offsets?\) are missing", message)
    assert found is not None, message
    return int(found[1])


# ---------------------------------------------------------------------- a middle segment
@pytest.mark.parametrize("name", SAMPLE_PARTITIONS)
@pytest.mark.parametrize("damage", ["emptied", "deleted"])
def test_middle_segment_emptied_or_deleted(tmp_path: Path, name: str, damage: str) -> None:
    part, segs = segmented(tmp_path, name)
    (log, base, _), (_, next_base, _) = segs[1], segs[2]
    whole = [o for s in segs for o in offsets(s[2])]
    assert read(str(part))[0] == whole  # the split copy reads whole, quietly
    assert read(str(part))[1].missing_ranges == 0
    if damage == "emptied":
        log.write_bytes(b"")
    else:
        for f in part.glob(f"{base:020d}.*"):
            f.unlink()
    got, stats = read(str(part))
    assert got == offsets(segs[0][2]) + offsets(segs[2][2])
    # the lost offsets are named: from the end of the first segment to the next file's base
    lost_from = last_offset(segs[0][2][-1]) + 1
    assert missing(stats) == [(lost_from, next_base - 1)]
    assert stats.missing_offsets == next_base - lost_from
    assert stats.skipped and "offsets missing" in stats.summary()
    # failOnDataLoss=true raises, naming the file and the offsets
    with pytest.raises(DataLossError) as err:
        kl.read_table(str(part), failOnDataLoss=True)
    assert f"{lost_from}..{next_base - 1}" in str(err.value)
    assert (f"{base:020d}.log" if damage == "emptied" else f"{next_base:020d}.log") in str(
        err.value
    )
    # offsets outside the read's bounds are not reported
    bound = json.dumps({name[:-2]: {"0": 1}})
    assert missing(read(str(part), endingOffsets=bound)[1]) == []


@pytest.mark.parametrize("damage", ["cut", "deleted"])
def test_a_start_past_the_data_of_a_segment_that_is_not_the_last(
    tmp_path: Path, damage: str
) -> None:
    """A read that starts inside a segment whose batches all end below its start (the segment
    after it deleted, or it cut short): no range is read there, so the planner names the
    offsets up to the next file."""
    part, segs = segmented(tmp_path, "magic2-none-0", parts=2 if damage == "cut" else 3)
    log0, _, chunk0 = segs[0]
    if damage == "cut":  # the first of two segments keeps its first batch
        log0.write_bytes(chunk0[0].data)
        lo = last_offset(chunk0[0]) + 1
    else:  # the middle one of three is deleted
        for f in part.glob(f"{segs[1][1]:020d}.*"):
            f.unlink()
        lo = segs[1][1]
    _, hi, last = segs[-1]
    hi -= 1
    bound = json.dumps({"magic2-none": {"0": lo}})
    got, stats = read(str(part), startingOffsets=bound)
    assert got == offsets(last)
    assert missing(stats) == [(lo, hi)]
    with pytest.raises(DataLossError, match=f"{lo}..{hi}") as err:
        kl.read_table(str(part), startingOffsets=bound, failOnDataLoss=True)
    assert log0.name in str(err.value)


# ---------------------------------------------------------------------- the last segment
@pytest.mark.parametrize("name", SAMPLE_PARTITIONS)
def test_last_segment_cut_short(tmp_path: Path, name: str) -> None:
    part, segs = segmented(tmp_path, name, parts=2)
    log, base, chunk = segs[-1]
    data = log.read_bytes()
    assert len(chunk) > 1  # the index names batches after the first
    cut = chunk[max(1, len(chunk) // 2)]  # cut in the middle of this batch
    log.write_bytes(data[: cut.position - chunk[0].position + cut_len(cut)])
    kept = [e for e in chunk if e.position < cut.position]
    got, stats = read(str(part))
    assert got == offsets(segs[0][2]) + offsets(kept)
    first_lost = last_offset(kept[-1]) + 1 if kept else base
    # the .index names the last batch, past the end of the cut file
    assert missing(stats) == [(first_lost, last_offset(chunk[-1]))]
    assert ".index" in stats.events_of("missing offsets")[0].reason
    with pytest.raises(DataLossError, match="cut short"):
        kl.read_table(str(part), failOnDataLoss=True)
    # without an index or checkpoint, the cut batch's own header still names its offsets
    # (its base offset and lastOffsetDelta; a legacy entry its last offset): they are missing
    log.with_suffix(".index").unlink()
    got, stats = read(str(part))
    assert missing(stats) == [(first_lost, last_offset(cut))] and stats.truncated_tails == 1


def cut_len(e: Entry) -> int:
    return max(17, len(e.data) // 2)


@pytest.mark.parametrize("keep_index", [True, False])
def test_real_broker_partition_cut_in_half(tmp_path: Path, keep_index: bool) -> None:
    """orders-0, 17,212 records written by a real broker, with its log directory's
    checkpoints: cut in half, the read names the 8,549 offsets that are gone."""
    require_shared(ORDERS)
    logdir = tmp_path / "data"
    shutil.copytree(ORDERS / "orders-0", logdir / "orders-0")
    for f in ORDERS.glob("*checkpoint*"):
        shutil.copy(f, logdir / f.name)
    for f in (logdir / "orders-0").iterdir():
        f.chmod(0o644)
    log = logdir / "orders-0" / "00000000000000000000.log"
    full = read(str(logdir / "orders-0"))
    assert len(full[0]) == 17212 and full[1].missing_ranges == 0
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    if not keep_index:
        log.with_suffix(".index").unlink()
        log.with_suffix(".timeindex").unlink()
    got, stats = read(str(logdir / "orders-0"))
    assert got == list(range(len(got)))
    assert missing(stats) == [(len(got), 17211)]
    assert len(got) + stats.missing_offsets == 17212
    reason = stats.events_of("missing offsets")[0].reason
    assert "recovery-point-offset-checkpoint" in reason
    assert (".index" in reason) == keep_index
    # the whole log directory, through the CLI: the summary line says what is missing
    res = run_cli("query", str(logdir), "SELECT count(*) AS n FROM kafkalog")
    assert res.returncode == 0 and str(len(got)) in res.stdout
    assert "offsets 8663..17211 (8549 offsets) are missing" in res.stderr
    res = run_cli(
        "query", str(logdir), "SELECT count(*) FROM kafkalog", "-o", "failOnDataLoss=true"
    )
    assert res.returncode == 1 and "8663..17211" in res.stderr
    # verify knows what every read knows: the same evidence, an error (exit 1)
    res = run_cli("verify", str(logdir), "--quiet")
    assert res.returncode == 1
    assert "orders-0: error: offsets 8663..17211 (8549 offsets) are missing" in res.stdout
    assert "recovery-point-offset-checkpoint" in res.stdout


def test_real_missing_active_segment_found_by_checkpoints() -> None:
    """A real copy whose active segment was left out (it is over 4 MiB): the recovery point
    and high watermark say the log went on; the cleaned first segment's own gaps (compaction,
    below the cleaner's checkpoint) are not reported."""
    require_shared(ARTHUR)
    got, stats = read(str(ARTHUR / "__consumer_offsets-19"))
    assert len(got) == 7
    assert missing(stats) == [(258527, 330478)]
    # the cleaner's checkpoint (258527) covers the cleaned segment: with the copy's
    # checkpoint files, failOnDataLoss does not call compaction loss
    with pytest.raises(DataLossError, match="258527..330478"):
        kl.read_table(str(ARTHUR / "__consumer_offsets-19"), failOnDataLoss=True)
    assert read(str(ARTHUR / "__consumer_offsets-19"), endingOffsets="latest")[0] == got
    res = run_cli("verify", str(ARTHUR / "__consumer_offsets-19"), "--quiet")
    assert res.returncode == 1
    assert "error: offsets 258527..330478 (71952 offsets) are missing" in res.stdout


# ---------------------------------------------------------------------- checkpoints and rules
def _checkpoint(path: Path, entries_: list[tuple[str, int, int]]) -> None:
    lines = ["0", str(len(entries_))] + [f"{t} {p} {o}" for t, p, o in entries_]
    path.write_text("\n".join(lines) + "\n")


def test_log_start_checkpoint_finds_missing_first_segments(tmp_path: Path) -> None:
    part, segs = segmented(tmp_path / "logdir", "magic2-gzip-0")
    for f in part.glob("00000000000000000000.*"):
        f.unlink()
    _checkpoint(tmp_path / "logdir" / "log-start-offset-checkpoint", [("magic2-gzip", 0, 0)])
    got, stats = read(str(part))
    assert got == offsets(segs[1][2]) + offsets(segs[2][2])
    assert missing(stats) == [(0, segs[1][1] - 1)]
    assert "log-start-offset-checkpoint" in stats.events_of("missing offsets")[0].reason
    res = run_cli("verify", str(part), "--quiet")
    assert res.returncode == 1
    assert f"error: offsets 0..{segs[1][1] - 1} ({segs[1][1]} offsets) are missing" in res.stdout
    assert "log-start-offset-checkpoint" in res.stdout


def test_offset_gaps_rule_and_cleaner_checkpoint(tmp_path: Path) -> None:
    """A deleted middle segment is loss by default; compaction when the cleaner's checkpoint
    covers it, or with offsetGaps=compacted; offsetGaps=loss ignores the checkpoint."""
    part, segs = segmented(tmp_path / "logdir", "magic2-snappy-0")
    for f in part.glob(f"{segs[1][1]:020d}.*"):
        f.unlink()
    assert len(missing(read(str(part))[1])) == 1
    res = run_cli("verify", str(part), "--strict", "--quiet")
    assert res.returncode == 1 and "no file holds them" in res.stdout
    assert missing(read(str(part), offsetGaps="compacted")[1]) == []
    kl.read_table(str(part), offsetGaps="compacted", failOnDataLoss=True)  # no raise
    _checkpoint(
        tmp_path / "logdir" / "cleaner-offset-checkpoint", [("magic2-snappy", 0, segs[2][1])]
    )
    assert missing(read(str(part))[1]) == []
    kl.read_table(str(part), failOnDataLoss=True)  # compaction, not loss
    res = run_cli("verify", str(part), "--strict", "--quiet")  # verify applies the same rule
    assert res.returncode == 0 and res.stdout == "", res.stdout
    assert len(missing(read(str(part), offsetGaps="loss")[1])) == 1
    with pytest.raises(OptionError, match="offsetGaps"):
        kl.read_table(str(part), offsetGaps="maybe")


def test_empty_partition_with_checkpoint_past_it(tmp_path: Path) -> None:
    """Nothing to read, but the recovery point says there was: reported, not silent."""
    part = tmp_path / "logdir" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"")
    _checkpoint(tmp_path / "logdir" / "recovery-point-offset-checkpoint", [("t", 0, 5)])
    got, stats = read(str(part))
    assert got == [] and missing(stats) == [(0, 4)]


# ---------------------------------------------------------------------- replicas
def two_brokers(tmp_path: Path, name: str = "multi-segment-0") -> tuple[Path, Path]:
    b1, b2 = tmp_path / "b1" / name, tmp_path / "b2" / name
    shutil.copytree(SAMPLES / name, b1)
    shutil.copytree(SAMPLES / name, b2)
    return b1, b2


def test_replicas_refused_by_default_everywhere(tmp_path: Path) -> None:
    b1, b2 = two_brokers(tmp_path)
    paths = [str(b1.parent), str(b2.parent)]
    with pytest.raises(PathError) as err:
        kl.read_table(paths)
    assert str(b1) in str(err.value) and str(b2) in str(err.value)
    assert "replicas=merge" in str(err.value)
    with pytest.raises(PathError):
        kl.open_reader(paths)
    res = run_cli("query", str(tmp_path / "*"), "SELECT count(*) FROM kafkalog")
    assert res.returncode == 1 and "replicas=merge" in res.stderr
    # different topic ids: different topics of one name
    (b1 / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    (b2 / "partition.metadata").write_text("version: 0\ntopic_id: BBBBBBBBBBBBBBBBBBBBBB\n")
    with pytest.raises(PathError, match="different topics"):
        kl.read_table(paths)
    # separate: every copy as it is
    got, _ = read(paths, replicas="separate")
    assert len(got) == 2 * 144


def test_replicas_merge_recovers_a_partition_from_two_broken_copies(tmp_path: Path) -> None:
    b1, b2 = two_brokers(tmp_path)
    want = read(str(SAMPLES / "multi-segment-0"))[0]
    assert read([str(b1.parent), str(b2.parent)], replicas="merge")[0] == want
    # broker 1 lost its last segment, broker 2 its first: together they hold everything
    for f in b1.glob("00000000000000001096.*"):
        f.unlink()
    (b2 / "00000000000000001000.log").write_bytes(b"")
    got, stats = read([str(b1.parent), str(b2.parent)], replicas="merge")
    assert got == want and stats.missing_ranges == 0
    # both lost the middle segment: its offsets are named
    for b in (b1, b2):
        (b / "00000000000000001048.log").write_bytes(b"")
    got, stats = read([str(b1.parent), str(b2.parent)], replicas="merge")
    assert got == [o for o in want if not 1048 <= o < 1096]
    assert missing(stats) == [(1048, 1095)]


def test_replicas_merge_reports_divergence(tmp_path: Path, caplog) -> None:
    b1, b2 = two_brokers(tmp_path, "magic2-none-0")
    log2 = b2 / "00000000000000000000.log"
    data = bytearray(log2.read_bytes())
    data[17:21] = bytes(b ^ 0xFF for b in data[17:21])  # another CRC: other data at offset 0
    log2.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        got, _ = read([str(b1.parent), str(b2.parent)], replicas="merge")
    assert got == read(str(SAMPLES / "magic2-none-0"))[0]  # the first copy's
    assert any("diverge" in r.message and str(b2) in r.message for r in caplog.records)
    with pytest.raises(DataLossError, match="disagree"):
        kl.read_table([str(b1.parent), str(b2.parent)], replicas="merge", failOnDataLoss=True)


# ---------------------------------------------------------------------- through Spark
def test_spark_batch_and_stream_report_an_emptied_segment(spark, tmp_path: Path) -> None:
    """Spark's batch read counts what is there and fails under failOnDataLoss=true; a stream
    (whose failOnDataLoss is true by default, as Spark's Kafka source) fails naming the offsets
    instead of writing a result with a hole that a later run would never fill."""
    part, segs = segmented(tmp_path / "logs", "magic2-lz4-0")
    segs[1][0].write_bytes(b"")
    present = offsets(segs[0][2]) + offsets(segs[2][2])
    df = spark.read.format("kafkalog").load(str(part))
    assert sorted(r.offset for r in df.select("offset").collect()) == present
    with pytest.raises(Exception, match="offsets .* are missing"):
        spark.read.format("kafkalog").option("failOnDataLoss", "true").load(str(part)).count()
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run(**options: str):
        q = (
            spark.readStream.format("kafkalog")
            .options(**options)
            .load(str(tmp_path / "logs"))
            .select("offset")
            .writeStream.format("parquet")
            .option("checkpointLocation", str(ckpt))
            .option("path", str(out))
            .trigger(availableNow=True)
            .start()
        )
        try:
            q.awaitTermination(300)
        except Exception as e:  # the query failed: awaitTermination raises its exception
            return e
        return q.exception()

    err = run()
    assert err is not None and "are missing" in str(err) and f"{segs[1][1]:020d}.log" in str(err)
    assert run(failOnDataLoss="false") is None
    got = sorted(r.offset for r in spark.read.parquet(str(out)).collect())
    assert got == present


def test_spark_refuses_replicas(spark, tmp_path: Path) -> None:
    b1, b2 = two_brokers(tmp_path)
    with pytest.raises(Exception, match="replicas=merge"):
        spark.read.format("kafkalog").load([str(b1.parent), str(b2.parent)]).count()
    df = (
        spark.read.format("kafkalog")
        .option("replicas", "merge")
        .load([str(b1.parent), str(b2.parent)])
    )
    assert df.count() == 144
