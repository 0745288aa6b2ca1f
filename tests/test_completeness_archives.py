"""Complete or loud, continued from test_completeness.py (issue 19; its helpers shared): real
brokers' partitions damaged the way users damage them, and random cut points, read through every
front end; the expected rows come from kafka-python decoding each batch on its own, never from
kafkalog.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, SAMPLES, require_shared
from hypothesis import given, settings
from hypothesis import strategies as st
from test_completeness import (
    SAMPLE_PARTITIONS,
    cut_len,
    last_offset,
    missing,
    offsets,
    read,
    segmented,
    two_brokers,
)
from test_damage_order import entries

import kafkalog_source as kl
from kafkalog_source.errors import DataLossError


# ---------------------------------------------------------------------- real archives, damaged
def _multi_segment_partitions() -> list[Path]:
    if not BROKER_WRITTEN.is_dir():
        return []
    out = []
    for d in sorted(BROKER_WRITTEN.rglob("*-[0-9]*")):
        if d.is_dir() and len([f for f in d.glob("[0-9]" * 20 + ".log") if f.stat().st_size]) >= 2:
            out.append(d)
    return out[:8]


@pytest.mark.parametrize("damage", ["emptied", "deleted", "cut"])
def test_damaged_real_partitions_lose_nothing_silently(tmp_path: Path, damage: str) -> None:
    """For every real multi-segment partition: damage a segment that is not the last (empty it,
    delete it or cut it in half). The rows read are the undamaged rows minus the damaged segment's, every
    lost offset lies in a reported missing range (or the read raises under failOnDataLoss), and
    no reported range holds a row that was returned."""
    parts = _multi_segment_partitions()
    if not parts:
        pytest.skip("no broker-written fixtures with several segments (../shared absent)")
    for src in parts:
        part = tmp_path / damage / src.name
        shutil.copytree(src, part)
        for f in part.iterdir():
            f.chmod(0o644)
        full, _ = read(str(part))
        segs = sorted(part.glob("[0-9]" * 20 + ".log"))
        # a segment that is not the last; a deleted first segment leaves no trace without a
        # log-start-offset-checkpoint (as for Kafka, whose log then starts later): not checked
        victim = segs[1] if len(segs) >= 3 else segs[0]
        if damage == "deleted" and victim == segs[0]:
            continue
        size = victim.stat().st_size
        if damage == "emptied":
            victim.write_bytes(b"")
        elif damage == "deleted":
            for f in part.glob(victim.stem + ".*"):
                f.unlink()
        else:
            victim.write_bytes(victim.read_bytes()[: size // 2])
        got, stats = read(str(part), mode="DROPMALFORMED")
        lost = sorted(set(full) - set(got))
        assert set(got) <= set(full), src
        ranges = missing(stats)
        for o in lost:
            assert any(a <= o <= b for a, b in ranges) or stats.malformed_batches, (src, o)
        assert not any(a <= o <= b for o in got for a, b in ranges), src
        if lost:
            with pytest.raises(kl.KafkaLogError):
                kl.read_table(str(part), failOnDataLoss=True)


def test_missing_offsets_over_s3(s3_server, tmp_path: Path) -> None:
    """The same evidence on a remote store: an emptied middle segment, and a last segment cut
    short whose .index names the lost batches, read from a bucket (moto)."""
    part, segs = segmented(tmp_path / "logs", "magic2-gzip-0")
    segs[1][0].write_bytes(b"")
    log, _, chunk = segs[2]
    log.write_bytes(log.read_bytes()[: chunk[-1].position - chunk[0].position + 20])
    uri = s3_server.upload(part, "kafkalog-complete/logs/magic2-gzip-0")
    got, stats = read(uri, **s3_server.options)
    assert got == read(str(part))[0]
    lost_from = last_offset(segs[0][2][-1]) + 1
    assert missing(stats) == [
        (lost_from, segs[2][1] - 1),
        (last_offset(chunk[-2]) + 1, last_offset(chunk[-1])),
    ]
    with pytest.raises(DataLossError, match=f"{lost_from}.."):
        kl.read_table(uri, failOnDataLoss=True, **s3_server.options)


def test_stream_reports_a_cut_last_segment(tmp_path: Path, caplog) -> None:
    """A stream over a copy whose last segment was cut short: the offsets its .index names
    past the end are not waited for in silence. Once the file did not change between two
    triggers (a live broker writes the log before the index, so its file would have grown),
    the stream fails by default, or with failOnDataLoss=false counts and logs them once."""
    from kafkalog_source.options import parse_options
    from kafkalog_source.streaming.source import Limit, StreamSource

    part, segs = segmented(tmp_path / "logs", "magic2-zstd-0", parts=2)
    log, base, chunk = segs[-1]
    cut = chunk[len(chunk) // 2]
    log.write_bytes(log.read_bytes()[: cut.position - chunk[0].position + cut_len(cut)])
    first_lost, last_named = last_offset(chunk[len(chunk) // 2 - 1]) + 1, last_offset(chunk[-1])
    key = ("magic2-zstd", 0)
    # written a moment ago, it may still be being copied: not a cut yet
    fresh = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    assert fresh.latest(fresh.initial(), Limit()) == {key: first_lost}
    old = time.time() - 60  # a minute later: at rest
    os.utime(log, (old, old))
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    start = src.initial()
    with pytest.raises(DataLossError, match=f"{first_lost}..{last_named}.*cut short"):
        src.latest(start, Limit())
    lenient = StreamSource(parse_options(paths=str(tmp_path / "logs")), fail_on_data_loss=False)
    start = lenient.initial()
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        end = lenient.latest(start, Limit())
        assert lenient.latest(end, Limit()) == end  # reported once per version of the file
    assert end == {key: first_lost}
    assert lenient.lost == last_named - first_lost + 1
    assert sum("cut short" in r.getMessage() for r in caplog.records) == 1
    # the same partition without its index: nothing says more was written, nothing reported
    log.with_suffix(".index").unlink()
    log.with_suffix(".timeindex").unlink(missing_ok=True)
    quiet = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    assert quiet.latest(quiet.initial(), Limit()) == {key: first_lost}


def test_replicas_merge_read_committed_and_timestamps(tmp_path: Path) -> None:
    """Merged copies take read_committed (the transactions of the batches taken, markers from
    whichever copy holds them) and timestamp bounds, with the answers of one whole copy."""
    b1, b2 = two_brokers(tmp_path, "transactions-0")
    for f in b1.glob("00000000000000000019.*"):
        f.unlink()  # broker 1: the first segment only
    for f in b2.glob("00000000000000000000.*"):
        f.unlink()  # broker 2: the second only (its markers close broker 1's transactions)
    paths = [str(b1.parent), str(b2.parent)]
    whole = str(SAMPLES / "transactions-0")
    committed = read(whole, isolationLevel="read_committed")[0]
    assert committed != read(whole)[0], "the sample holds aborted records"
    assert read(paths, replicas="merge", isolationLevel="read_committed")[0] == committed
    assert read(paths, replicas="merge")[0] == read(whole)[0]
    # timestamps: the same first and last offsets as the whole copy
    t = kl.read_table(whole).select(["offset", "timestamp"]).to_pydict()
    ms = [int(x.timestamp() * 1000) for x in t["timestamp"]]
    mid, late = ms[len(ms) // 3], ms[2 * len(ms) // 3]
    for bounds in (
        {"startingTimestamp": mid},
        {"endingTimestamp": late},
        {"startingTimestamp": mid, "endingTimestamp": late},
    ):
        want = read(whole, **bounds)[0]
        assert want and read(paths, replicas="merge", **bounds)[0] == want, bounds


# ---------------------------------------------------------------------- random cut points
@dataclass(frozen=True)
class _Frame:
    """One top-level entry of a segment as its framing says: where it is, its offsets."""

    position: int
    size: int
    first: int  # a v2 batch's base offset; a legacy entry's: the one after the previous entry's
    last: int


def _frames(data: bytes, base: int) -> list[_Frame]:
    """The entries of a well-formed segment, from their 17-byte prefixes and v2 headers."""
    out: list[_Frame] = []
    pos, prev_last = 0, base - 1
    while len(data) - pos >= 17:
        offset, size = struct.unpack_from(">qi", data, pos)
        magic = data[pos + 16]
        if size < 14 or pos + 12 + size > len(data):
            break
        if magic >= 2:
            first, last = offset, offset + struct.unpack_from(">i", data, pos + 23)[0]
        else:
            first, last = prev_last + 1, offset
        out.append(_Frame(pos, 12 + size, first, last))
        pos += 12 + size
        prev_last = last
    return out


def _claimed(log: Path, ckpt_dir: Path | None, key: tuple[str, int]) -> int:
    """The highest offset the last segment's ``.index`` / ``.timeindex`` or the log directory's
    recovery point and high watermark say the log held (-1: nothing says anything)."""
    base = int(log.stem)
    hi = -1
    indexed = True
    index = log.with_suffix(".index")
    if indexed and index.exists():
        raw = index.read_bytes()
        entries = [struct.unpack_from(">ii", raw, i) for i in range(0, len(raw) - 7, 8)]
        for n, (rel, pos) in enumerate(entries):
            if n and rel == 0 and pos == 0:
                break  # a preallocated zero tail
            hi = max(hi, base + rel)
    timeindex = log.with_suffix(".timeindex")
    if indexed and timeindex.exists():
        raw = timeindex.read_bytes()
        for n, i in enumerate(range(0, len(raw) - 11, 12)):
            ts, rel = struct.unpack_from(">qi", raw, i)
            if n and ts == 0 and rel == 0:
                break
            hi = max(hi, base + rel)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        f = ckpt_dir / name if ckpt_dir is not None else None
        if f is not None and f.exists():
            for line in f.read_text().splitlines()[2:]:
                t, p, o = line.rsplit(" ", 2)
                if (t, int(p)) == key:
                    hi = max(hi, int(o) - 1)
    return hi


def _check_cut(
    part: Path, full: list[int], last_log: Path, cut: int, keep_index: bool, ckpt: Path | None
) -> None:
    """Cut ``last_log`` (the partition's last segment) at byte ``cut`` and read the partition:
    the rows are the undamaged rows before the first batch the cut reached, the read's reports
    start exactly there, every lost offset something could tell of is reported, and
    failOnDataLoss=true raises or returns the same rows with nothing reported."""
    key = (part.name.rsplit("-", 1)[0], int(part.name.rsplit("-", 1)[1]))
    data = last_log.read_bytes()
    frames = _frames(data, int(last_log.stem))
    last_log.write_bytes(data[:cut])
    if not keep_index:
        for suffix in (".index", ".timeindex"):
            last_log.with_suffix(suffix).unlink(missing_ok=True)
    claimed = _claimed(last_log, ckpt, key)
    lost = [f for f in frames if f.position + f.size > cut]
    end = lost[0].first if lost else None  # the first offset the cut took
    got, stats = read(str(part))
    assert got == [o for o in full if end is None or o < end]
    gone = sorted(set(full) - set(got))
    ranges = missing(stats)
    tails = stats.events_of("truncated tail", "zero tail")  # a cut in a base offset's zeros
    # a batch the cut went through is named where it starts, and the missing ranges start at
    # the first offset the cut took
    cut_through = [f for f in lost if f.position < cut]
    assert [e.position for e in tails] == [f.position for f in cut_through]
    if ranges:
        assert end is not None and min(a for a, _ in ranges) == end, (ranges, end)
    assert not any(a <= o <= b for o in got for a, b in ranges)
    tail_offsets = {o for f in cut_through for o in range(f.first, f.last + 1)}
    for o in gone:  # reported, unless nothing could tell (past every index entry and checkpoint)
        assert any(a <= o <= b for a, b in ranges) or o in tail_offsets or o > claimed, (o, ranges)
    if end is not None and claimed >= end:
        assert ranges, "the index or a checkpoint names lost offsets, yet nothing was reported"
    try:
        strict = kl.read_table(str(part), failOnDataLoss=True).column("offset").to_pylist()
    except DataLossError:
        return
    assert strict == got and not ranges


def test_an_emptied_last_segment_whose_index_names_offsets(tmp_path: Path) -> None:
    """A last segment emptied by a failed copy, its .index intact: the index is read (its
    first entry is written) and names what is gone; a preallocated zero index is not read."""
    part, segs = segmented(tmp_path, "magic2-none-0")
    log, base, chunk = segs[-1]
    log.write_bytes(b"")
    got, stats = read(str(part))
    assert got == offsets(segs[0][2]) + offsets(segs[1][2])
    assert missing(stats) == [(base, last_offset(chunk[-1]))]
    # an idle partition's active segment: empty, its index preallocated with zeros
    log.with_suffix(".index").write_bytes(bytes(10 << 20))
    log.with_suffix(".timeindex").write_bytes(bytes(10 << 20))
    got, stats = read(str(part))
    assert missing(stats) == [] and stats.missing_ranges == 0


SAMPLE_CUTS = [*SAMPLE_PARTITIONS, "multi-segment-0"]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_last_segment_cut_at_a_random_byte(data: st.DataObject) -> None:
    """A sample partition in segments (every magic and codec, one .index entry per batch; and
    multi-segment-0 with the broker's index spacing), its last segment cut at a random byte,
    with or without its .index and .timeindex."""
    name = data.draw(st.sampled_from(SAMPLE_CUTS), label="partition")
    keep_index = data.draw(st.booleans(), label="keep_index")
    with tempfile.TemporaryDirectory() as tmp:
        if name == "multi-segment-0":
            part = Path(tmp) / name
            shutil.copytree(SAMPLES / name, part)
            logs = sorted(part.glob("*.log"))
            full = [r[0] for log in logs for e in entries(log.read_bytes()) for r in e.rows]
        else:
            part, segs = segmented(Path(tmp), name)
            logs = [s[0] for s in segs]
            full = [o for s in segs for o in offsets(s[2])]
        size = logs[-1].stat().st_size
        cut = data.draw(st.integers(0, size - 1), label="cut")
        _check_cut(part, full, logs[-1], cut, keep_index, None)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_real_last_segment_cut_at_a_random_byte(data: st.DataObject) -> None:
    """The same on partitions real brokers wrote (several segments; their log directory's
    checkpoint files copied or not); the undamaged rows are the undamaged copy's."""
    parts = [p for p in _multi_segment_partitions() if _last_log(p).stat().st_size]
    if not parts:
        pytest.skip("no broker-written fixtures with several segments (../shared absent)")
    src = data.draw(st.sampled_from(parts), label="partition")
    keep_index = data.draw(st.booleans(), label="keep_index")
    checkpoints = data.draw(st.booleans(), label="checkpoints")
    with tempfile.TemporaryDirectory() as tmp:
        logdir = Path(tmp) / "logdir"
        part = logdir / src.name
        shutil.copytree(src, part)
        for f in part.iterdir():
            f.chmod(0o644)
        if checkpoints:
            for f in src.parent.glob("*-checkpoint"):
                shutil.copy(f, logdir / f.name)
        full = read(str(part))[0]
        last = _last_log(part)
        cut = data.draw(st.integers(0, last.stat().st_size - 1), label="cut")
        _check_cut(part, full, last, cut, keep_index, logdir if checkpoints else None)


def _last_log(part: Path) -> Path:
    return sorted(part.glob("[0-9]" * 20 + ".log"))[-1]


def test_leader_epoch_checkpoint_names_a_cut_last_segment(tmp_path: Path) -> None:
    """A partition's leader-epoch-checkpoint: the latest epoch began at the log's end offset
    then, so a last segment that ends below that start was cut. With no index and no log
    directory checkpoints, it is the only evidence; an epoch that began at the end (no batch
    of it yet, as on a live broker) says nothing."""
    part, segs = segmented(tmp_path, "magic2-none-0", parts=2)
    log, base, chunk = segs[-1]
    keep = chunk[: len(chunk) // 2]
    log.write_bytes(log.read_bytes()[: keep[-1].position - chunk[0].position + len(keep[-1].data)])
    log.with_suffix(".index").unlink(missing_ok=True)
    log.with_suffix(".timeindex").unlink(missing_ok=True)
    end = last_offset(keep[-1]) + 1
    whole_end = last_offset(chunk[-1]) + 1
    assert missing(read(str(part))[1]) == []  # nothing says more was written
    (part / "leader-epoch-checkpoint").write_text(f"0\n2\n0 0\n3 {whole_end}\n")
    got, stats = read(str(part))
    assert got == offsets(segs[0][2]) + offsets(keep)
    assert missing(stats) == [(end, whole_end - 1)]
    reason = stats.events_of("missing offsets")[0].reason
    assert f"leader-epoch-checkpoint (epoch 3 began at offset {whole_end})" in reason
    with pytest.raises(DataLossError, match="leader-epoch-checkpoint"):
        kl.read_table(str(part), failOnDataLoss=True)
    (part / "leader-epoch-checkpoint").write_text(f"0\n2\n0 0\n3 {end}\n")
    assert missing(read(str(part))[1]) == []
    (part / "leader-epoch-checkpoint").write_text("not a checkpoint\n")
    assert missing(read(str(part))[1]) == []


def test_real_leader_epoch_checkpoints_agree_with_their_logs() -> None:
    """In every real partition directory with a leader-epoch-checkpoint, the epochs start at or
    below the log's end, except where the copy lost its last segment: there the log directory's
    recovery point says so too (ArthurArutunyan's __consumer_offsets-19, whose active segment
    was left out)."""
    root = require_shared(BROKER_WRITTEN)
    dirs = sorted({p.parent for p in root.rglob("leader-epoch-checkpoint")})
    assert dirs
    seen: list[str] = []
    for d in dirs:
        if not any(d.glob("*.log")):
            continue
        _, stats = read(str(d), mode="DROPMALFORMED")
        reasons = [e.reason for e in stats.events_of("missing offsets")]
        for r in reasons:
            if "leader-epoch" in r:
                assert "recovery-point-offset-checkpoint" in r, (d, r)
                seen.append(d.name)
    assert seen == ["__consumer_offsets-19"]
