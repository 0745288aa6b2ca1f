"""Admission control of a stream: every partition with data is served (issue 33).

Two limits used to starve partitions. ``maxOffsetsPerTrigger`` (and ``maxBytesPerTrigger``) gave
each partition ``int(share)`` of the limit, so a partition whose share was below one offset got
nothing; Spark's Kafka source rounds such a share up ("don't completely starve small
partitions"). ``maxFilesPerTrigger`` went round the partitions from the first one in sort order
at every trigger, so a partition sorting first that had new bytes at every trigger took every
slot. These tests drive the stream source directly, and through ``readStream`` with a
processing-time trigger.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stream_archive import Archive

from kafkalog_source.errors import OptionError
from kafkalog_source.layout.discovery import SegmentFile
from kafkalog_source.options import parse_options
from kafkalog_source.streaming.admission import (
    admit,
    admit_offsets,
    delay_batch,
    segment_spans,
    spark_rate_limit,
)
from kafkalog_source.streaming.offsets import (
    FILES_TURN_KEY,
    offsets_from_json,
    offsets_to_json,
    turn_from_json,
)
from kafkalog_source.streaming.snapshot import PartitionLog
from kafkalog_source.streaming.source import Limit, StreamSource

# -- the stream source directly -------------------------------------------------------------


def _big_and_small(root: Path) -> None:
    big = Archive(root, topic="big")
    big.append(0, batches=50, per_batch=100)  # offsets 0..4999
    big.sync()
    small = Archive(root, topic="small")
    small.append(0, batches=1, per_batch=3)  # offsets 0..2
    small.sync()


def test_a_small_partition_advances_at_the_first_trigger(tmp_path: Path) -> None:
    """big-0 holds 5,000 offsets and small-0 three: at maxOffsetsPerTrigger=100, small-0's
    share is 100 * 3 / 5003 = 0.06, rounded up to 1 as Spark's Kafka source does (it used to
    first advance at trigger 49); big-0's 99.94 is rounded down to 99."""
    _big_and_small(tmp_path / "logs")
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    start = src.initial()
    end = src.latest(start, Limit("offsets", 100))
    assert end == {("big", 0): 99, ("small", 0): 1}


def test_many_small_shares_still_admit_the_limit(tmp_path: Path) -> None:
    """Eleven partitions of 50 offsets at maxOffsetsPerTrigger=10: each share is 10/11, rounded
    up to one offset, so a trigger admits 11 offsets (it used to admit one)."""
    a = Archive(tmp_path / "logs")
    for p in range(11):
        a.append(p, batches=5, per_batch=10)
    a.sync()
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    start = src.initial()
    end = src.latest(start, Limit("offsets", 10))
    assert {k: end[k] - start[k] for k in end} == {("orders", p): 1 for p in range(11)}


def test_max_bytes_rounds_a_small_share_up_to_one_offset(tmp_path: Path) -> None:
    _big_and_small(tmp_path / "logs")
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    start = src.initial()
    size = sum(f.stat().st_size for f in (tmp_path / "logs").rglob("*.log"))
    end = src.latest(start, Limit("bytes", size // 50))  # about 100 of the 5,003 offsets
    assert end[("small", 0)] >= 1
    assert 90 <= end[("big", 0)] <= 110


def _busy_and_backlog(root: Path) -> tuple[Archive, Archive]:
    """``a-0``: one batch now, more before every trigger; ``b-0``: a backlog of three
    segment files."""
    a = Archive(root, topic="a")
    a.append(0, batches=1, per_batch=5)
    a.sync()
    b = Archive(root, topic="b")
    for i in range(3):
        if i:
            b.roll(0)
        b.append(0, batches=2, per_batch=5)
    b.sync()
    return a, b


def test_max_files_serves_a_backlog_beside_a_busy_partition(tmp_path: Path) -> None:
    """a-0 sorts first and receives 5 records before every trigger; b-0 holds three files. At
    maxFilesPerTrigger=1 the file slot goes round: b-0 advances at the second trigger (it never
    did: the round restarted at a-0 every trigger)."""
    a, _ = _busy_and_backlog(tmp_path / "logs")
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    start = src.initial()
    served = []
    for _ in range(5):
        end = src.latest(start, Limit("files", 1))
        served.append(sorted(k[0] for k in end if end[k] > start[k]))
        start = end
        a.append(0, batches=1, per_batch=5)
        a.sync()
    assert served == [["a"], ["b"], ["a"], ["b"], ["a"]]


# -- through readStream with a processing-time trigger --------------------------------------


def _processing_time(
    spark: Any, src: Path, ckpt: Path, options: dict, batches: int, between: Any = None
) -> list[list[tuple[str, int, int]]]:
    """Run a query with a processing-time trigger until ``batches`` micro-batches are done;
    each micro-batch's rows ``(topic, partition, offset)``, ``between(batch_id)`` run after each
    one (before the next trigger asks for offsets)."""
    seen: list[list[tuple[str, int, int]]] = []

    def each(df: Any, batch_id: int) -> None:
        rows = df.select("topic", "partition", "offset").collect()
        seen.append(sorted((r.topic, r.partition, r.offset) for r in rows))
        if between is not None:
            between(batch_id)

    q = (
        spark.readStream.format("kafkalog")
        .options(**options)
        .load(str(src))
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(ckpt))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        deadline = time.monotonic() + 180
        while len(seen) < batches and q.isActive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert q.exception() is None, q.exception()
    finally:
        q.stop()
    assert len(seen) >= batches
    return seen[:batches]


@pytest.mark.spark
def test_read_stream_serves_a_small_partition_in_the_first_micro_batch(
    spark: Any, tmp_path: Path
) -> None:
    _big_and_small(tmp_path / "logs")
    seen = _processing_time(
        spark, tmp_path / "logs", tmp_path / "ckpt", {"maxOffsetsPerTrigger": "100"}, 2
    )
    assert [sum(1 for t, _, _ in rows if t == "small") for rows in seen] == [1, 1]
    assert [len(rows) for rows in seen] == [100, 100]


@pytest.mark.spark
def test_read_stream_max_files_goes_round_while_a_partition_keeps_growing(
    spark: Any, tmp_path: Path
) -> None:
    a, b = _busy_and_backlog(tmp_path / "logs")

    def append(_: int) -> None:  # between two triggers: a busy producer
        a.append(0, batches=1, per_batch=5)
        a.sync()

    seen = _processing_time(
        spark, tmp_path / "logs", tmp_path / "ckpt", {"maxFilesPerTrigger": "1"}, 4, append
    )
    topics = [sorted({t for t, _, _ in rows}) for rows in seen]
    assert topics == [["a"], ["b"], ["a"], ["b"]]
    got_b = [o for rows in seen for t, _, o in rows if t == "b"]
    assert got_b == list(range(20))  # b-0's first two files, in order, once each


def test_the_file_rotation_goes_on_after_a_restart(tmp_path: Path) -> None:
    """The offsets carry the last partition served a file: a new query (a restart, another
    AvailableNow run) goes on with the next one instead of starting again at the first."""
    _busy_and_backlog(tmp_path / "logs")
    options = parse_options(paths=str(tmp_path / "logs"))
    first = StreamSource(options)
    start = first.initial()
    end = first.latest(start, Limit("files", 1))
    assert {k for k in end if end[k] > start[k]} == {("a", 0)}
    saved = json.loads(json.dumps(offsets_to_json(end, first.prints(end), first.turn)))
    assert saved[FILES_TURN_KEY] == ["a", 0]
    assert offsets_from_json(saved) == end
    again = StreamSource(options)
    after = again.latest(offsets_from_json(saved), Limit("files", 1), None, turn_from_json(saved))
    assert {k for k in after if after[k] > end[k]} == {("b", 0)}
    with pytest.raises(OptionError, match="filesTurn"):
        turn_from_json({FILES_TURN_KEY: "a-0"})


# -- the rules without an archive (hypothesis) -----------------------------------------------

KEYS = [(t, p) for t in ("a", "b", "c") for p in range(4)]


def _log(key: tuple[str, int], bounds: list[int], end: int) -> PartitionLog:
    """A partition whose segments start at ``bounds`` (100 bytes per offset), ending at
    ``end``."""
    segs = []
    for i, base in enumerate(bounds):
        nxt = bounds[i + 1] if i + 1 < len(bounds) else end
        segs.append(
            SegmentFile(
                f"/x/{key[0]}-{key[1]}/{base:020d}.log", *key, base, 100 * (nxt - base), 0.0
            )
        )
    return PartitionLog(key, segs, bounds[0], end)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(KEYS), st.integers(0, 10**6), min_size=1, max_size=12),
    st.integers(1, 10**6),
)
def test_offsets_limit_admits_the_limit_within_rounding_up_of_small_shares(
    backlog: dict, limit: int
) -> None:
    take = admit_offsets(limit, {k: n for k, n in backlog.items() if n})
    spark = spark_rate_limit(limit, backlog)
    total = sum(backlog.values())
    small = sum(1 for n in backlog.values() if n and limit * (n / total) < 1)
    assert set(take) == {k for k, n in backlog.items() if n}
    for k, n in take.items():
        assert 1 <= n <= backlog[k]  # every partition with data advances, never past its end
        assert spark[k] <= n <= spark[k] + 1  # Spark's share, or one more from the leftover
        if limit * (backlog[k] / total) < 1:
            assert n == spark[k]  # rounded up to one already: no leftover
    assert sum(take.values()) == max(min(limit, total), sum(spark.values()))
    assert sum(take.values()) <= min(limit, total) + small


def test_the_leftover_goes_to_shares_rounded_down() -> None:
    """Shares 45/45/9 of 10 (4.5, 4.5, 0.9): Spark's rounding gives 4/4/1, and the offset left
    goes to a share rounded down (largest remainder, then by name), not to the one rounded up."""
    a, b, c = KEYS[:3]
    assert spark_rate_limit(10, {a: 45, b: 45, c: 9}) == {a: 4, b: 4, c: 1}
    assert admit_offsets(10, {a: 45, b: 45, c: 9}) == {a: 5, b: 4, c: 1}


@dataclass
class _Run:
    """A stream over partitions that may grow before each trigger."""

    bounds: dict  # key -> segment base offsets
    end: dict  # key -> the end of the log
    delivered: dict  # key -> the offsets delivered, in order

    def logs(self) -> dict:
        return {k: _log(k, self.bounds[k], self.end[k]) for k in self.bounds}


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(KEYS),
        st.lists(st.integers(1, 300), min_size=1, max_size=4),  # segment lengths (offsets)
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["offsets", "bytes", "files"]),
    st.integers(1, 4) | st.integers(1, 2000),  # files per trigger are few
    st.lists(st.dictionaries(st.sampled_from(KEYS), st.integers(1, 50), max_size=3), max_size=6),
)
def test_a_run_delivers_every_offset_once_and_serves_every_partition(
    lengths: dict, kind: str, amount: int, appends: list
) -> None:
    """Any partitions and backlogs, any limit, appends before some triggers: every trigger
    admits min(limit, backlog) offsets (within rounding up of small shares), no partition with
    data waits longer than the documented bound (offsets and bytes: it advances at every
    trigger; files: every ceil(P / F) triggers), and every offset is delivered exactly once."""
    run = _Run({}, {}, {})
    for k, segs in lengths.items():
        run.bounds[k] = [sum(segs[:i]) for i in range(len(segs))]
        run.end[k] = sum(segs)
        run.delivered[k] = []
    keys = sorted(set(lengths) | {k for a in appends for k in a})
    for k in keys:
        run.bounds.setdefault(k, [0])
        run.end.setdefault(k, 0)
        run.delivered.setdefault(k, [])
    bound = 1 if kind != "files" else -(-len(keys) // amount)
    begin = {k: 0 for k in keys}
    waited = {k: 0 for k in keys}
    turn = None
    for trigger in range(10_000):
        if trigger < len(appends):
            for k, n in appends[trigger].items():
                run.end[k] += n  # the last segment grows
        avail = dict(run.end)
        backlog = {k: avail[k] - begin[k] for k in keys if avail[k] > begin[k]}
        if not backlog and trigger >= len(appends):
            break
        end, turn = admit(begin, avail, Limit(kind, amount), run.logs(), turn)
        took = {k: end[k] - begin[k] for k in keys}
        assert all(0 <= took[k] <= avail[k] - begin[k] for k in keys)
        if kind == "offsets" and backlog:
            total = sum(backlog.values())
            small = sum(1 for n in backlog.values() if amount * (n / total) < 1)
            assert min(amount, total) <= sum(took.values()) <= min(amount, total) + small
        if kind == "files":  # at most F files touched (each partition's from its position)
            touched = sum(
                1
                for k in keys
                for a, b, _ in segment_spans(run.logs()[k])
                if took[k] and a < end[k] and b > begin[k]
            )
            assert touched <= amount
        for k in keys:
            if k in backlog and not took[k]:
                waited[k] += 1
                assert waited[k] < bound, f"{k} waited {waited[k]} triggers"
            else:
                waited[k] = 0
            run.delivered[k].extend(range(begin[k], end[k]))
        begin = end
    for k in keys:
        assert run.delivered[k] == list(range(run.end[k]))  # every offset once, in order


def test_min_offsets_waits_until_enough_or_the_delay() -> None:
    """Spark's delayBatch: the first trigger runs (the last one is at 0), then a trigger waits
    for minOffsetsPerTrigger new offsets unless maxTriggerDelay has passed since the last."""
    assert delay_batch(100, 5, 1_000_000.0, 0.0, 900_000) == (False, 1_000_000.0)
    assert delay_batch(100, 5, 1_000_500.0, 1_000_000.0, 900_000) == (True, 1_000_000.0)
    assert delay_batch(100, 100, 1_000_500.0, 1_000_000.0, 900_000) == (False, 1_000_500.0)
    assert delay_batch(100, 0, 1_900_000.0, 1_000_000.0, 900_000) == (False, 1_900_000.0)
