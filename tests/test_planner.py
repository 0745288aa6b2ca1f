"""The planner: batch-aligned splits, index verification, offset and timestamp bounds, pruning."""

from __future__ import annotations

import functools
import os
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import BROKER_WRITTEN, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_source.errors import OptionError, PathError
from kafkalog_source.format.batch import BatchHeader
from kafkalog_source.framing.headers import Tail
from kafkalog_source.framing.walk import walk_headers
from kafkalog_source.layout.discovery import SegmentFile, discover
from kafkalog_source.layout.indexes import (
    read_offset_index,
    read_time_index,
    read_txn_index,
    sibling_path,
)
from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import SegmentProbe, max_split_bytes, plan
from kafkalog_source.planning.pruning import Pruning
from kafkalog_source.planning.request import batch_request
from kafkalog_source.planning.splits import NO_LIMIT, NO_LOWER, SegmentRange, Split

ARTHUR = BROKER_WRITTEN / "ArthurArutunyan04-Backend_labs" / "kafka-data"
DIPENDRA = BROKER_WRITTEN / "dipendrasaini-kafka-learning" / "tmp" / "kafka-logs-1"
MASHA = BROKER_WRITTEN / "MashaKosher-Internship" / "kafka" / "data"
NIKHIL = BROKER_WRITTEN / "NikhilDighe9975-kafka_setup" / "kafka-logs"
DONALD = BROKER_WRITTEN / "DonaldY-kafka-2.7.1" / "kafka-logs"
LEGACY = BROKER_WRITTEN / "xpxwo100-bullShit" / "tmp" / "kafka-logs"  # magic v1
MULTI = (ARTHUR, DIPENDRA, MASHA, NIKHIL, DONALD)
STATUS_LOG = ARTHUR / "oms_order_status_changed-2" / "00000000000000010917.log"


# -- brute force ------------------------------------------------------------------------------

_WALKS: dict[str, tuple[list[BatchHeader], Tail]] = {}


def full_walk(path: str) -> tuple[list[BatchHeader], Tail]:
    """Every batch header of a file (61-byte reads), and how it ends; cached per path."""
    if path not in _WALKS:
        fd = os.open(path, os.O_RDONLY)
        try:
            items = list(walk_headers(fd, path, 0, os.fstat(fd).st_size, full=True))
        finally:
            os.close(fd)
        _WALKS[path] = ([h for h in items if isinstance(h, BatchHeader)], items[-1])
    return _WALKS[path]


def walk_range(r: SegmentRange) -> tuple[list[int], Tail]:
    return _walk_range(r.path, r.start, r.end)


@functools.lru_cache(maxsize=4096)
def _walk_range(path: str, start: int, end: int) -> tuple[list[int], Tail]:
    fd = os.open(path, os.O_RDONLY)
    try:
        items = list(walk_headers(fd, path, start, end))
    finally:
        os.close(fd)
    return [h.position for h in items if isinstance(h, BatchHeader)], items[-1]


def check_plan(splits: list[Split], segments: list[SegmentFile], complete: bool = True) -> Counter:
    """Every range starts and ends on a batch boundary and no batch is read twice; with
    ``complete``, every batch of every segment is read exactly once."""
    seen: Counter = Counter()
    assert [s.index for s in splits] == list(range(len(splits)))
    sizes = {s.path: s.size for s in segments}
    for split in splits:
        assert split.ranges
        for r in split.ranges:
            starts = {h.position for h in full_walk(r.path)[0]}
            size = sizes[r.path]
            assert 0 <= r.start < r.end <= size
            assert r.start in starts
            assert r.end in starts or r.end == size
            assert r.at_file_end == (r.end == size)
            positions, tail = walk_range(r)
            if not r.at_file_end:
                assert tail.clean, (r, tail)
            for p in positions:
                seen[(r.path, p)] += 1
    dupes = [k for k, n in seen.items() if n > 1]
    assert not dupes, dupes[:5]
    if complete:
        expected = {(s.path, h.position) for s in segments for h in full_walk(s.path)[0]}
        assert set(seen) == expected
    return seen


def all_ranges(splits: list[Split]) -> list[SegmentRange]:
    return sorted(
        (r for s in splits for r in s.ranges),
        key=lambda r: (r.topic or "", r.partition or 0, r.segment_base_offset or 0, r.start),
    )


def partition_batches(segments: list[SegmentFile]) -> list[tuple[SegmentFile, BatchHeader]]:
    """All batches of one partition in offset order."""
    out = []
    for s in sorted(segments, key=lambda s: s.base_offset):
        out.extend((s, h) for h in full_walk(s.path)[0])
    return out


def expected_time_batch(batches, t: int):
    for seg, h in batches:
        if h.max_timestamp >= t and (h.magic < 2 or h.records_count != 0):
            return seg, h
    return None


# -- packing and sizes ------------------------------------------------------------------------


def test_max_split_bytes_follows_spark():
    o = parse_options(maxPartitionBytes="128m", openCostInBytes="4m")
    assert max_split_bytes(o, 10**12) == 128 * 2**20
    o = o.replace(min_partitions=10)
    assert max_split_bytes(o, 100 * 2**20) == 10 * 2**20
    assert max_split_bytes(o, 10 * 2**20) == 4 * 2**20  # open cost floor
    assert max_split_bytes(o, 10**12) == 128 * 2**20


def test_small_segments_are_packed_together():
    require_shared(MASHA)
    segs = discover(parse_options(path=str(MASHA)))
    splits = plan(batch_request(parse_options(path=str(MASHA))), segs)
    assert len(splits) == 1 and len(splits[0].ranges) == 4
    check_plan(splits, segs)
    # with a large open cost every file weighs more than a split and goes alone
    o = parse_options(path=str(MASHA), maxPartitionBytes="200k", openCostInBytes="200k")
    splits = plan(batch_request(o), segs)
    assert len(splits) == 4
    check_plan(splits, segs)


def test_large_segments_are_split_on_boundaries():
    require_shared(ARTHUR)
    o = parse_options(path=str(ARTHUR), maxPartitionBytes="256k", openCostInBytes="0")
    segs = discover(o)
    splits = plan(batch_request(o), segs)
    check_plan(splits, segs)
    big = [r for r in all_ranges(splits) if r.segment_base_offset == 81908]
    assert len(big) == 12  # 3098017 bytes in pieces of about 256 KiB
    assert all(abs((r.end - r.start) - 256 * 1024) < 16 * 1024 for r in big[:-1])
    assert [r.at_file_end for r in big] == [False] * 11 + [True]
    assert all(r.offset_lo == NO_LOWER and r.offset_hi == NO_LIMIT for r in big)


def test_min_partitions_splits_further():
    require_shared(DIPENDRA)
    o = parse_options(path=str(DIPENDRA), minPartitions=12, openCostInBytes="1k")
    segs = discover(o)
    assert len(plan(batch_request(o.replace(min_partitions=None)), segs)) == 1
    splits = plan(batch_request(o), segs)
    assert len(splits) >= 12
    check_plan(splits, segs)
    # below the open-cost floor too (best effort, never inside a batch)
    o = parse_options(path=str(DIPENDRA), minPartitions=40, openCostInBytes="4m")
    splits = plan(batch_request(o), segs)
    assert len(splits) >= 40
    check_plan(splits, segs)


def test_nothing_to_plan(tmp_path):
    assert plan(batch_request(parse_options(path=str(tmp_path))), []) == []
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / ("0" * 20 + ".log")).write_bytes(b"")
    assert plan(batch_request(parse_options(path=str(tmp_path)))) == []


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    max_bytes=st.integers(12, 22).flatmap(lambda e: st.integers(2**e, 2 ** (e + 1))),
    open_cost=st.one_of(st.just(0), st.integers(1, 8 * 2**20)),
    min_partitions=st.one_of(st.none(), st.integers(1, 64)),
    which=st.sets(st.sampled_from(range(len(MULTI))), min_size=1),
)
def test_property_every_batch_exactly_once(max_bytes, open_cost, min_partitions, which):
    for d in MULTI:
        require_shared(d)
    opts = parse_options(
        paths=[str(MULTI[i]) for i in sorted(which)],
        maxPartitionBytes=max_bytes,
        openCostInBytes=open_cost,
        minPartitions=min_partitions,
    )
    segs = discover(opts)
    splits = plan(batch_request(opts), segs)
    check_plan(splits, segs)
    if min_partitions is not None:
        n_batches = sum(len(full_walk(s.path)[0]) for s in segs)
        assert len(splits) >= min(min_partitions, n_batches)
    for split in splits:
        # a split holds one piece alone, or pieces that fit the next-fit rule
        if len(split.ranges) > 1:
            limit = max_split_bytes(opts, sum(s.size for s in segs) + open_cost * len(segs))
            assert split.size <= max(limit, max_bytes) + open_cost * len(split.ranges)


# -- indexes ----------------------------------------------------------------------------------


def _link_segment(tmp_path: Path, log: Path, part: str = "t-0") -> Path:
    d = tmp_path / part
    d.mkdir(parents=True, exist_ok=True)
    dst = d / log.name
    dst.symlink_to(log)
    return dst


def test_index_readers_on_real_files():
    require_shared(STATUS_LOG)
    idx = read_offset_index(sibling_path(str(STATUS_LOG), ".index"))
    tix = read_time_index(sibling_path(str(STATUS_LOG), ".timeindex"))
    assert len(idx) == 69 and len(tix) == 72
    assert int(idx["relative_offset"][0]) + 10917 == 10963 and int(idx["position"][0]) == 4285
    assert int(tix["timestamp"][-1]) == 1766802777997
    starts = {h.position for h in full_walk(str(STATUS_LOG))[0]}
    assert set(idx["position"].tolist()) <= starts
    assert read_offset_index(str(STATUS_LOG) + ".missing") is None
    assert read_txn_index(sibling_path(str(STATUS_LOG), ".txnindex")) is None


def test_zero_filled_and_partial_index_tails(tmp_path):
    require_shared(STATUS_LOG)
    log_path = _link_segment(tmp_path, STATUS_LOG)
    real_idx = Path(sibling_path(str(STATUS_LOG), ".index")).read_bytes()
    real_tix = Path(sibling_path(str(STATUS_LOG), ".timeindex")).read_bytes()
    Path(sibling_path(str(log_path), ".index")).write_bytes(real_idx + bytes(8 * 1000) + b"\0\0\0")
    Path(sibling_path(str(log_path), ".timeindex")).write_bytes(real_tix + bytes(12 * 500 + 7))
    idx = read_offset_index(sibling_path(str(log_path), ".index"))
    tix = read_time_index(sibling_path(str(log_path), ".timeindex"))
    assert idx.tobytes() == real_idx and tix.tobytes() == real_tix
    # a preallocated index nobody wrote to is empty, not one (base, 0) entry
    empty = tmp_path / "empty.index"
    empty.write_bytes(bytes(8 * 64))
    assert len(read_offset_index(str(empty))) == 0
    empty_t = tmp_path / "empty.timeindex"
    empty_t.write_bytes(bytes(12 * 64))
    assert len(read_time_index(str(empty_t))) == 0
    # planning uses the good prefix; every batch exactly once
    o = parse_options(path=str(tmp_path / "t-0"), maxPartitionBytes=20000, openCostInBytes=0)
    segs = discover(o)
    check_plan(plan(batch_request(o), segs), segs)


def test_txn_index_reader(tmp_path):
    entry = struct.Struct(">hqqqq")
    data = entry.pack(0, 7, 10, 20, 21) + entry.pack(0, 8, 30, 40, 41) + b"\1\2\3"
    p = tmp_path / "x.txnindex"
    p.write_bytes(data)
    got = read_txn_index(str(p))
    assert got["producer_id"].tolist() == [7, 8]
    assert got["last_offset"].tolist() == [20, 40]
    p.write_bytes(entry.pack(0, 7, 10, 20, 21) + entry.pack(256, 8, 30, 40, 41))
    assert len(read_txn_index(str(p))) == 1
    (tmp_path / "e.txnindex").write_bytes(b"")
    assert len(read_txn_index(str(tmp_path / "e.txnindex"))) == 0


def test_out_of_order_index_entries_are_cut(tmp_path):
    p = tmp_path / "x.index"
    p.write_bytes(struct.pack(">iiiiiiii", 5, 100, 9, 200, 7, 300, 20, 400))
    assert read_offset_index(str(p))["position"].tolist() == [100, 200]


def _write_index(path: Path, base: int, entries: list[tuple[int, int]]) -> None:
    path.write_bytes(b"".join(struct.pack(">ii", o - base, p) for o, p in entries))


@pytest.mark.parametrize("kind", ["inside_batches", "wrong_offsets", "beyond_file", "shifted"])
def test_garbage_index_falls_back_to_walking(tmp_path, kind):
    require_shared(STATUS_LOG)
    log_path = _link_segment(tmp_path, STATUS_LOG)
    base = 10917
    headers = full_walk(str(STATUS_LOG))[0]
    picks = headers[5::20]
    if kind == "inside_batches":
        entries = [(h.last_offset, h.position + 9) for h in picks]
    elif kind == "wrong_offsets":  # real positions, offsets that contradict the batches there
        entries = [(base + 1 + i, h.position) for i, h in enumerate(picks)]
    elif kind == "beyond_file":
        entries = [(base + 100 * (i + 1), STATUS_LOG.stat().st_size + 1000 * i) for i in range(20)]
    else:  # each entry points at the batch *after* the one it names
        entries = [(h.last_offset, h.end - 1) for h in picks]
    _write_index(Path(sibling_path(str(log_path), ".index")), base, entries)
    o = parse_options(path=str(log_path.parent), maxPartitionBytes=15000, openCostInBytes=0)
    segs = discover(o)
    splits = plan(batch_request(o), segs)
    check_plan(splits, segs)
    assert len(splits) >= 15
    # offset bounds still land on the exact batch
    o2 = o.replace(starting_offsets={("t", 0): 12000}, ending_offsets={("t", 0): 13000})
    rs = all_ranges(plan(batch_request(o2), segs))
    first = next(h for h in headers if h.last_offset >= 12000)
    assert rs[0].start == first.position
    end_batch = next(h for h in headers if h.last_offset >= 13000)
    assert rs[-1].end in (end_batch.position, end_batch.end)


def test_index_verification_rejects_garbage_positions():
    require_shared(STATUS_LOG)
    seg = discover(parse_options(path=str(STATUS_LOG)))[0]
    probe = SegmentProbe(seg)
    try:
        headers = full_walk(str(STATUS_LOG))[0]
        h = headers[100]
        assert probe.verified(h.position, headers[99].last_offset, h.last_offset) == h
        assert probe.verified(h.position, h.base_offset, None) is None  # window: base > after
        assert probe.verified(h.position, None, h.base_offset - 1) is None  # base <= at_most
        for delta in (1, 8, 12, 16, 17, 61):
            assert probe.verified(h.position + delta, None, None) is None
    finally:
        probe.close()


# -- offsets ----------------------------------------------------------------------------------


def test_starting_and_ending_offsets_prune_segments_and_bytes():
    require_shared(DIPENDRA)
    o = parse_options(
        path=str(DIPENDRA),
        startingOffsets='{"invoice": {"0": 35000}}',
        endingOffsets='{"invoice": {"0": 70000}}',
        maxPartitionBytes="200k",
    )
    segs = discover(o)
    splits = plan(batch_request(o), segs)
    check_plan(splits, segs, complete=False)
    rs = all_ranges(splits)
    assert {r.segment_base_offset for r in rs} == {30626, 60611}
    assert all(r.offset_lo == 35000 and r.offset_hi == 70000 for r in rs)
    batches = partition_batches(segs)
    first = next((s, h) for s, h in batches if h.last_offset >= 35000)
    assert (rs[0].path, rs[0].start) == (first[0].path, first[1].position)
    assert first[1].base_offset <= 35000
    last = next(h for s, h in batches if h.last_offset >= 70000)
    assert rs[-1].end == (last.position if last.base_offset >= 70000 else last.end)
    # the ranges hold exactly the batches that can hold offsets in [35000, 70000)
    covered = {(r.path, p) for r in rs for p in walk_range(r)[0]}
    wanted = {
        (s.path, h.position) for s, h in batches if h.last_offset >= 35000 and h.base_offset < 70000
    }
    assert covered == wanted


def test_offsets_earliest_latest_and_other_partitions(caplog):
    require_shared(ARTHUR)
    every = {"oms_order_created": {"1": 90000}, "__consumer_offsets": {"19": -2}}
    every["oms_order_status_changed"] = {"2": -2}
    o = parse_options(
        path=str(ARTHUR),
        startingOffsets=every,
        endingOffsets={k: {p: -1 for p in v} for k, v in every.items()},
    )
    segs = discover(o)
    rs = all_ranges(plan(batch_request(o), segs))
    by_topic = {r.topic: r for r in rs}
    assert by_topic["__consumer_offsets"].start == 0
    assert by_topic["oms_order_created"].offset_lo == 90000
    assert by_topic["oms_order_created"].offset_hi == NO_LIMIT
    assert by_topic["oms_order_created"].start > 0
    assert by_topic["oms_order_status_changed"].start == 0
    # a partition left out: refused, as Spark's Kafka source asserts (issue 40 item 6)
    with pytest.raises(OptionError, match="Missing: oms_order_status_changed-2"):
        plan(batch_request(parse_options(path=str(ARTHUR), startingOffsets=every | {
            "oms_order_status_changed": {}})), segs)  # fmt: skip
    # an offset past the end: no byte of that partition read, and a data loss
    o = parse_options(
        path=str(ARTHUR), startingOffsets={**every, "oms_order_created": {"1": 10**9}}
    )
    with caplog.at_level("WARNING", logger="kafkalog"):
        rs = all_ranges(plan(batch_request(o), segs))
    assert all(r.end == r.start for r in rs if r.topic == "oms_order_created")
    assert "oms_order_created-1's offset was changed from 1000000000 to " in caplog.text
    with pytest.raises(OptionError, match="latest"):
        plan(
            batch_request(
                parse_options(path=str(ARTHUR), startingOffsets={"oms_order_created": {"1": -1}})
            )
        )
    with pytest.raises(OptionError, match="earliest"):
        plan(
            batch_request(
                parse_options(path=str(ARTHUR), endingOffsets={"oms_order_created": {"1": -2}})
            )
        )


# -- timestamps -------------------------------------------------------------------------------


def _timestamps_to_try(batches, n: int = 12) -> list[int]:
    ts = sorted({h.max_timestamp for _, h in batches if h.max_timestamp >= 0})
    rng = np.random.default_rng(7)
    picks = [int(t) for t in rng.choice(ts, size=min(n, len(ts)), replace=False)]
    return sorted({0, ts[0] - 1, ts[0], ts[-1], ts[-1] + 1, *picks, *(t + 1 for t in picks)})


@pytest.mark.parametrize(
    "where,topic,partition",
    [
        (DIPENDRA, "invoice", 0),
        (ARTHUR, "oms_order_created", 1),
        (ARTHUR, "oms_order_status_changed", 2),
        (MASHA, "jwtCheckRequest", 0),
        (MASHA, "__consumer_offsets", 15),
        (LEGACY, "TEST-TOPIC", 0),
    ],
)
def test_starting_timestamp_resolves_to_first_batch(where, topic, partition):
    require_shared(where)
    part_dir = where / f"{topic}-{partition}"
    segs = discover(parse_options(path=str(part_dir)))
    batches = partition_batches(segs)
    index_of = {(s.path, h.position): i for i, (s, h) in enumerate(batches)}
    for t in _timestamps_to_try(batches, 3 if where == LEGACY else 12):
        o = parse_options(path=str(part_dir), startingTimestamp=t, maxPartitionBytes="100k")
        expected = expected_time_batch(batches, t)
        if expected is None:  # Spark's startingOffsetsByTimestampStrategy: error, or latest
            with pytest.raises(OptionError, match=rf"topic-partition {topic}-{partition} and"):
                plan(batch_request(o), segs)
            latest = o.replace(starting_offsets_by_timestamp_strategy="latest")
            assert plan(batch_request(latest), segs) == [], t
            continue
        splits = plan(batch_request(o), segs)
        check_plan(splits, segs, complete=False)
        rs = all_ranges(splits)
        seg, h = expected
        assert (rs[0].path, rs[0].start) == (seg.path, h.position), t
        assert rs[0].timestamp_start == t
        assert all(r.timestamp_start is None for r in rs[1:])
        if h.magic >= 2:
            assert all(r.offset_lo == h.base_offset for r in rs)
        # everything from that batch on is read, nothing before it
        covered = {(r.path, p) for r in rs for p in walk_range(r)[0]}
        i = index_of[(seg.path, h.position)]
        assert covered == {(s.path, b.position) for s, b in batches[i:]}


@pytest.mark.parametrize(
    "where,topic,partition",
    [(DIPENDRA, "invoice", 0), (ARTHUR, "oms_order_created", 1)],
)
def test_ending_timestamp_and_by_partition_forms(where, topic, partition):
    require_shared(where)
    segs = discover(parse_options(path=str(where)))
    mine = [s for s in segs if (s.topic, s.partition) == (topic, partition)]
    batches = partition_batches(mine)
    ts = _timestamps_to_try(batches)
    t_start, t_end = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    js = lambda t: f'{{"{topic}": {{"{partition}": {t}}}}}'  # noqa: E731
    o = parse_options(
        path=str(where),
        startingOffsetsByTimestamp=js(t_start),
        endingOffsetsByTimestamp=js(t_end),
        maxPartitionBytes="64k",
    )
    splits = plan(batch_request(o), segs)
    check_plan(splits, segs, complete=False)
    rs = [r for r in all_ranges(splits) if (r.topic, r.partition) == (topic, partition)]
    s_seg, s_h = expected_time_batch(batches, t_start)
    e_seg, e_h = expected_time_batch(batches, t_end)
    assert (rs[0].path, rs[0].start, rs[0].timestamp_start) == (s_seg.path, s_h.position, t_start)
    assert (rs[-1].path, rs[-1].end, rs[-1].timestamp_end) == (e_seg.path, e_h.end, t_end)
    assert all(r.offset_hi == e_h.last_offset + 1 for r in rs)
    assert all(r.timestamp_end is None for r in rs[:-1])
    # other partitions are not bounded by the per-partition forms
    others = [r for r in all_ranges(splits) if (r.topic, r.partition) != (topic, partition)]
    assert all(r.timestamp_start is None and r.offset_lo == NO_LOWER for r in others)
    # a global ending timestamp past every record leaves the partition unbounded
    o = parse_options(path=str(where), endingTimestamp=10**15)
    rs = all_ranges(plan(batch_request(o), segs))
    assert all(r.offset_hi == NO_LIMIT and r.timestamp_end is None for r in rs)


def test_time_index_skips_segments_only_when_the_log_agrees(tmp_path):
    require_shared(DIPENDRA)
    part = DIPENDRA / "invoice-0"
    segs = discover(parse_options(path=str(part)))
    probes = [SegmentProbe(s) for s in segs]
    try:
        for p in probes[:3]:
            assert p.verified_max_timestamp() == max(h.max_timestamp for h in full_walk(p.path)[0])
        assert probes[3].verified_max_timestamp() is None  # no .timeindex
    finally:
        for p in probes:
            p.close()
    # a lying time index (claims an older maximum) is not believed
    d = tmp_path / "invoice-0"
    d.mkdir()
    log = d / segs[0].path.rsplit("/", 1)[1]
    log.symlink_to(segs[0].path)
    (d / log.name.replace(".log", ".index")).symlink_to(sibling_path(segs[0].path, ".index"))
    real = read_time_index(sibling_path(segs[0].path, ".timeindex"))
    fake = real[:-1]  # drop the true last entry: the index now claims an older maximum
    (d / log.name.replace(".log", ".timeindex")).write_bytes(fake.tobytes())
    seg = discover(parse_options(path=str(d)))[0]
    probe = SegmentProbe(seg)
    try:
        assert probe.verified_max_timestamp() is None
    finally:
        probe.close()
    batches = partition_batches([seg])
    t = int(real["timestamp"][-1])
    rs = all_ranges(plan(batch_request(parse_options(path=str(d), startingTimestamp=t)), [seg]))
    assert rs[0].start == expected_time_batch(batches, t)[1].position


# -- pruning ----------------------------------------------------------------------------------


def test_pruning_by_topic_partition_and_offsets():
    require_shared(ARTHUR)
    o = parse_options(path=str(ARTHUR))
    segs = discover(o)
    rs = all_ranges(plan(batch_request(o), segs, Pruning(topics=frozenset({"oms_order_created"}))))
    assert {r.topic for r in rs} == {"oms_order_created"}
    rs = all_ranges(plan(batch_request(o), segs, Pruning(partitions=frozenset({2, 19}))))
    assert {r.partition for r in rs} == {2, 19}
    assert plan(batch_request(o), segs, Pruning(topics=frozenset())) == []
    p = Pruning(topics=frozenset({"oms_order_created"}), offset_min=90000, offset_max=91000)
    rs = all_ranges(plan(batch_request(o), segs, p))
    batches = partition_batches([s for s in segs if s.topic == "oms_order_created"])
    wanted = {
        (s.path, h.position)
        for s, h in batches
        if h.last_offset >= 90000 and h.base_offset <= 91000
    }
    covered = {(r.path, q) for r in rs for q in walk_range(r)[0]}
    assert wanted <= covered
    assert len(covered) <= len(wanted) + 2
    # a hint never sets the exact bounds
    assert all(r.offset_lo == NO_LOWER and r.offset_hi == NO_LIMIT for r in rs)


def test_pruning_by_min_timestamp_skips_proven_segments():
    require_shared(DIPENDRA)
    o = parse_options(path=str(DIPENDRA))
    segs = discover(o)
    seg_max = [max(h.max_timestamp for h in full_walk(s.path)[0]) for s in segs]
    t = seg_max[1] + 1  # newer than everything in the first two segments
    rs = all_ranges(plan(batch_request(o), segs, Pruning(timestamp_min_ms=t)))
    assert {r.segment_base_offset for r in rs} == {60611, 90867}
    assert all(r.min_timestamp_hint == t for r in rs)
    rs = all_ranges(plan(batch_request(o), segs, Pruning(timestamp_min_ms=10**15)))
    # the last segment has no .timeindex: it cannot be proven old, so it is kept
    assert {r.segment_base_offset for r in rs} == {90867}


def test_pruning_intersect():
    a = Pruning(topics=frozenset({"a", "b"}), offset_min=5)
    b = Pruning(topics=frozenset({"b"}), offset_min=3, offset_max=9, timestamp_min_ms=1)
    c = a.intersect(b)
    assert c == Pruning(frozenset({"b"}), None, 5, 9, 1)
    assert Pruning(offset_min=5, offset_max=4).empty
    assert not Pruning().empty


# -- damaged logs -----------------------------------------------------------------------------


def _damaged_copy(tmp_path: Path, src: Path, data: bytes, name: str | None = None) -> Path:
    d = tmp_path / "t-0"
    d.mkdir(exist_ok=True)
    dst = d / (name or src.name)
    dst.write_bytes(data)
    return dst


def _contiguous(splits: list[Split], size: int) -> list[tuple[int, int]]:
    spans = sorted((r.start, r.end) for s in splits for r in s.ranges)
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    return spans


@pytest.mark.parametrize("tail", ["zeros", "truncated"])
def test_zero_and_truncated_log_tails(tmp_path, tail):
    require_shared(STATUS_LOG)
    real = STATUS_LOG.read_bytes()
    data = real + bytes(50_000) if tail == "zeros" else real[:-100]
    dst = _damaged_copy(tmp_path, STATUS_LOG, data)
    for suffix in (".index", ".timeindex"):
        Path(sibling_path(str(dst), suffix)).symlink_to(sibling_path(str(STATUS_LOG), suffix))
    o = parse_options(path=str(dst.parent), maxPartitionBytes=30000, openCostInBytes=0)
    segs = discover(o)
    splits = plan(batch_request(o), segs)
    check_plan(splits, segs)
    last = all_ranges(splits)[-1]
    assert last.at_file_end and last.end == len(data)
    assert walk_range(last)[1].kind == tail
    # a timestamp past every batch finds nothing, zeros or not (startingOffsetsByTimestamp
    # Strategy=latest; with error, the default, the read fails naming the partition)
    t = max(h.max_timestamp for h in full_walk(str(STATUS_LOG))[0]) + 1
    late = o.replace(starting_timestamp=t, starting_offsets_by_timestamp_strategy="latest")
    assert plan(batch_request(late), segs) == []
    with pytest.raises(OptionError, match="No offset matched from request of topic-partition"):
        plan(batch_request(o.replace(starting_timestamp=t)), segs)


def test_corruption_in_the_middle_does_not_stop_planning(tmp_path):
    require_shared(STATUS_LOG)
    headers = full_walk(str(STATUS_LOG))[0]
    bad = headers[len(headers) // 2]
    data = bytearray(STATUS_LOG.read_bytes())
    data[bad.position + 8 : bad.position + 12] = struct.pack(">i", 5)  # size 5 < 14, not zeros
    dst = _damaged_copy(tmp_path, STATUS_LOG, bytes(data), "records.bin")  # no index either
    o = parse_options(path=str(dst), maxPartitionBytes=20000, openCostInBytes=0)
    segs = discover(o)
    assert segs[0].base_offset is None and segs[0].topic == "t"
    splits = plan(batch_request(o), segs)
    spans = _contiguous(splits, len(data))
    starts = {h.position for h in headers}
    assert all(a in starts for a, _ in spans)
    # boundaries before the damage are exact; the damaged batch is inside the last range
    assert spans[-1][0] <= bad.position
    assert len(spans) > 1


def test_plan_without_discovery_results_and_probe_cleanup():
    require_shared(DONALD)
    o = parse_options(path=str(DONALD))
    segs = discover(o)
    splits = plan(batch_request(o))
    assert [r.segment_base_offset for r in all_ranges(splits)] == [0, 18]
    check_plan(splits, segs)


def test_same_partition_in_two_log_dirs_is_two_logs():
    nomanazeem = BROKER_WRITTEN / "nomanazeem-Kafka-java" / "kafka-logs"
    require_shared(MASHA)
    require_shared(nomanazeem)
    paths = [str(MASHA / "__consumer_offsets-15"), str(nomanazeem / "__consumer_offsets-15")]
    o = parse_options(paths=paths, maxPartitionBytes="16k", openCostInBytes=0)
    segs = discover(o)
    # by default the same topic-partition in two directories is refused, naming both
    with pytest.raises(PathError) as err:
        plan(batch_request(o), segs)
    assert all(p in str(err.value) for p in paths)
    o = o.replace(replicas="separate")
    assert [s.base_offset for s in segs] == [0, 0, 669]  # two base-0 segments, two dirs
    check_plan(plan(batch_request(o), segs), segs)
    o = o.replace(starting_offsets={("__consumer_offsets", 15): 600})
    # (the copy that ends below offset 600 is read from nowhere: a range of no bytes, carrying
    # the data loss of a start past its end)
    rs = [r for r in all_ranges(plan(batch_request(o), segs)) if r.end > r.start]
    assert {(Path(r.path).parent.parent.name, r.segment_base_offset) for r in rs} == {
        ("data", 0),
        ("data", 669),
    }
    masha0 = [r for r in rs if r.segment_base_offset == 0][0]
    first = next(h for h in full_walk(masha0.path)[0] if h.last_offset >= 600)
    assert masha0.start == first.position
