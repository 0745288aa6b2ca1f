"""Transactions offline: read_committed, control records and producer metadata (issue 4).

Ground truth comes from outside the code under test:

* ``sample_segments/MANIFEST.json`` marks every data row of ``transactions-0`` with ``txn``
  (committed / aborted / open / null);
* the client-written fixtures (``../shared/fixtures/client-written/*txn*``) list their batches and
  mark control records; :func:`fixture_expected` applies SEGMENT_SPEC §4.4 to those lists;
* synthetic partition logs built here from a list of producer actions (data, commit, abort,
  markers without data, emptied markers, idempotent and plain batches, segment rolls) know the
  fate of every record they write.

Policy under test: ``read_committed`` drops aborted transactions batch by batch, and drops
undecided ones (no marker by the end of the log) the same way; non-transactional records after
the last stable offset are returned.

The expectations and the synthetic logs are in ``txn_support.py``; control records, metadata
columns and Spark are in ``test_transaction_records.py``.
"""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import CLIENT_WRITTEN, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from txn_support import (
    LEVELS,
    SAMPLE_TXN,
    STRADDLING,
    TXN_FIXTURES,
    SynLog,
    action,
    build_log,
    fixture_aborted,
    fixture_expected,
    load_fixture,
    marker,
    read_planned,
    read_rows,
    record_bytes,
    sample_expected,
    sample_txnindex,
    small_split_sizes,
    split_options,
    split_sizes,
    v2_batch,
)

from kafkalog_source.errors import ChecksumError
from kafkalog_source.options import parse_options
from kafkalog_source.planning import transactions as tx
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.pruning import Pruning
from kafkalog_source.planning.request import batch_request
from kafkalog_source.planning.splits import NO_LIMIT, SegmentRange
from kafkalog_source.reader import output_projection, read_range


@pytest.fixture(scope="module")
def straddling(tmp_path_factory: pytest.TempPathFactory) -> SynLog:
    return build_log(tmp_path_factory.mktemp("straddle") / "syn-0", STRADDLING)


# ============================================================================ collection


def test_sample_collects_aborted_and_undecided_transactions():
    lt = tx.log_transactions([str(SAMPLE_TXN / "00000000000000000000.log")])
    assert list(lt.aborted) == sample_txnindex()  # the .txnindex files, as the manifest lists
    assert lt.undecided == ((6000, 29),)  # the open transaction at the end
    assert lt.last_stable_offset == 29
    assert lt.notes == ()
    # sibling segments are found from one file: the marker of the straddling txn is in segment 2
    assert [Path(s.path).name for s in lt.segments] == [
        "00000000000000000000.log",
        "00000000000000000019.log",
    ]


def test_sample_without_txnindex_gives_the_same_entries(tmp_path):
    d = tmp_path / "transactions-0"
    shutil.copytree(SAMPLE_TXN, d, ignore=shutil.ignore_patterns("*.txnindex"))
    lt = tx.log_transactions([str(d / "00000000000000000019.log")])
    assert list(lt.aborted) == sample_txnindex()
    assert lt.undecided == ((6000, 29),)
    assert all(s.txn_index is None for s in lt.segments)


@pytest.mark.parametrize("name", TXN_FIXTURES)
def test_fixture_markers_from_headers(name):
    d, manifest, _ = load_fixture(name)
    lt = tx.log_transactions([str(d / manifest["segment"])])
    assert list(lt.aborted) == fixture_aborted(manifest)
    assert lt.undecided == ()
    assert lt.notes == ()


def test_straddling_log_collects_what_was_written(straddling):
    lt = tx.log_transactions([str(next(straddling.path.glob("*.log")))])
    assert straddling.segments == 5
    assert sorted(lt.aborted) == sorted(straddling.aborted)
    assert sorted(lt.undecided) == straddling.undecided
    assert sum(s.empty_markers for s in lt.segments) == 1
    assert lt.notes == ()


def test_inconsistent_txnindex_loses_to_the_log(tmp_path, caplog):
    d = tmp_path / "transactions-0"
    shutil.copytree(SAMPLE_TXN, d)
    bogus = [
        (4000, 15, 21, 17),  # correct
        (5000, 26, 27, 23),  # first offset after the first data the log shows (25)
        (2000, 23, 28, 29),  # names a COMMIT marker
    ]
    (d / "00000000000000000019.txnindex").write_bytes(
        b"".join(struct.pack(">hqqqq", 0, *e) for e in bogus)
    )
    (d / "00000000000000000000.txnindex").write_bytes(b"")  # present but empty: entry lost
    with caplog.at_level("WARNING", logger="kafkalog"):
        lt = tx.log_transactions([str(d / "00000000000000000000.log")])
    assert list(lt.aborted) == sample_txnindex()
    text = " | ".join(lt.notes)
    assert "disagrees with the log" in text
    assert "matches no ABORT marker" in text
    assert "lacks 1 aborted transaction" in text
    assert "read_committed:" in caplog.text
    assert read_rows(d, isolationLevel="read_committed") == sample_expected("read_committed")


def test_txnindex_first_offset_is_used_when_the_data_is_gone(tmp_path):
    """A marker whose data the log no longer holds (compaction, retention): the index's
    firstOffset stands; the walk alone would find nothing to drop, which reads the same."""
    d = tmp_path / "gone-0"
    d.mkdir()
    data = v2_batch(10, [(b"k", b"committed")], pid=7, epoch=0, seq=0, txn=True)
    (d / "00000000000000000010.log").write_bytes(
        marker(9, 7, abort=True) + data + marker(11, 7, False)
    )
    (d / "00000000000000000010.txnindex").write_bytes(struct.pack(">hqqqq", 0, 7, 3, 9, 10))
    lt = tx.log_transactions([str(d / "00000000000000000010.log")])
    assert lt.aborted == ((7, 3, 9),)
    assert read_rows(d, isolationLevel="read_committed") == [(10, b"committed")]


def test_walk_stops_quietly_at_corruption(tmp_path):
    d = tmp_path / "broken-0"
    d.mkdir()
    good = v2_batch(0, [(b"k", b"a")], pid=5, epoch=0, seq=0, txn=True) + marker(1, 5, True)
    garbage = struct.pack(">qiiB", 2, 100, 0, 9) + b"\x01" * 100  # magic 9
    (d / "00000000000000000000.log").write_bytes(good + garbage)
    # the index knows an abort after the damage
    (d / "00000000000000000000.txnindex").write_bytes(
        struct.pack(">hqqqq", 0, 5, 0, 1, 2) + struct.pack(">hqqqq", 0, 6, 2, 5, 6)
    )
    lt = tx.log_transactions([str(d / "00000000000000000000.log")])
    (seg,) = lt.segments
    assert seg.error is not None and "magic" in seg.error
    assert lt.aborted == ((5, 0, 1), (6, 2, 5))


def test_walks_are_cached_per_file_version(tmp_path):
    d = tmp_path / "cache-0"
    build_log(d, [("data", 101, 2, False), ("end", 101, True), ("roll",), ("data", 102, 1, False)])
    first = [str(p) for p in sorted(d.glob("*.log"))][:1]
    tx.log_transactions(first)
    n = tx.walk_count()
    again = tx.log_transactions(first)
    assert tx.walk_count() == n  # nothing walked again
    assert again.undecided == ((102, 3),)
    last = sorted(d.glob("*.log"))[-1]
    with open(last, "ab") as f:  # the active segment grows: its transaction ends
        f.write(marker(4, 102, abort=False))
    grown = tx.log_transactions(first)
    assert tx.walk_count() == n + 1  # only the changed segment
    assert grown.undecided == ()


def test_control_type_parser():
    rec = record_bytes(0, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 1))
    assert tx.control_type(rec) == tx.ABORT
    assert tx.control_type(record_bytes(0, struct.pack(">hh", 0, 2), None)) == 2
    assert tx.control_type(record_bytes(0, b"\x00\x01", None)) is None  # key too short
    assert tx.control_type(b"\xff") is None


# ============================================================================ the range rule


def _ranges(path: Path, **options: Any) -> list[SegmentRange]:
    opts = parse_options(options, paths=str(path), isolationLevel="read_committed")
    return [r for s in plan(batch_request(opts)) for r in s.ranges]


def test_a_marker_before_the_range_must_not_be_shipped():
    """Producer 2000 aborts (marker 14, segment 1), then commits offsets 23-24 (segment 2).
    The planner does not ship (2000, 3, 14) with segment 2's range."""
    lt = tx.log_transactions([str(SAMPLE_TXN / "00000000000000000000.log")])
    seg2 = SAMPLE_TXN / "00000000000000000019.log"
    size = seg2.stat().st_size
    opts = parse_options(isolationLevel="read_committed")
    proj = output_projection(opts)

    def offsets(aborted: tuple) -> list[int]:
        rng = SegmentRange(str(seg2), 0, size, topic="transactions", partition=0, aborted=aborted)
        return sorted(
            o for b in read_range(rng, opts, proj) for o in b.column("offset").to_pylist()
        )

    chosen, holds_marker = lt.for_range(str(seg2), 0, size)
    assert (2000, 3, 14) not in chosen and (4000, 15, 21) in chosen and holds_marker
    assert offsets(chosen) == [o for o, _ in sample_expected("read_committed") if o >= 19]
    # The reader also ignores an entry whose marker lies before the batch it is at, so even
    # every entry, unfiltered, gives the same rows (the planner's filtering keeps tasks small).
    assert offsets(lt.entries) == offsets(chosen)


def test_range_entries_follow_the_rule(straddling):
    """Every range gets exactly the entries with marker >= F and first < E (checked against the
    batches of the range, found by walking it independently)."""
    lt = tx.log_transactions([str(next(straddling.path.glob("*.log")))])
    for max_bytes in (60, 150, 333, 1000):
        for rng in _ranges(straddling.path, maxPartitionBytes=max_bytes, openCostInBytes=0):
            data = Path(rng.path).read_bytes()
            first = struct.unpack_from(">q", data, rng.start)[0]
            end = (
                struct.unpack_from(">q", data, rng.end)[0]
                if rng.end < len(data)
                else tx.summarize_segment(rng.path).next_offset
            )
            want = sorted(
                (e for e in lt.entries if e[2] >= first and e[1] < end),
                key=lambda e: (e[1], e[0], e[2]),
            )
            assert list(rng.aborted) == want, (rng.path, rng.start, rng.end)
            assert rng.last_stable_offset == NO_LIMIT


def test_ranges_carry_nothing_under_read_uncommitted(straddling):
    opts = parse_options(paths=str(straddling.path), maxPartitionBytes=100, openCostInBytes=0)
    assert all(r.aborted == () for s in plan(batch_request(opts)) for r in s.ranges)


# ============================================================================ rows: Arrow API


@pytest.mark.parametrize("level", LEVELS)
def test_sample_rows(level):
    assert read_rows(SAMPLE_TXN, isolationLevel=level) == sample_expected(level)


def test_sample_rows_kafka_spelling():
    got = read_rows(SAMPLE_TXN, **{"kafka.isolation.level": "read_committed"})
    assert got == sample_expected("read_committed")


def test_undecided_transaction_excluded_but_later_plain_records_kept():
    offsets = [o for o, _ in read_rows(SAMPLE_TXN, isolationLevel="read_committed")]
    assert 29 not in offsets and 30 not in offsets  # producer 6000: no marker yet
    assert 31 in offsets and 32 in offsets  # non-transactional, after the LSO (29)


@pytest.mark.parametrize("level", LEVELS)
def test_sample_without_txnindex_reads_the_same(tmp_path, level):
    d = tmp_path / "transactions-0"
    shutil.copytree(SAMPLE_TXN, d, ignore=shutil.ignore_patterns("*.txnindex"))
    assert read_rows(d, isolationLevel=level) == sample_expected(level)
    assert read_planned(d, isolationLevel=level, maxPartitionBytes=300, openCostInBytes=0) == (
        sample_expected(level)
    )


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", TXN_FIXTURES)
def test_fixture_rows(name, level):
    d, manifest, opts = load_fixture(name)
    expected = fixture_expected(manifest, level)
    assert read_rows(d, isolationLevel=level, **opts) == expected
    assert read_planned(
        d, isolationLevel=level, maxPartitionBytes=200, openCostInBytes=0, **opts
    ) == (expected)


def test_zero_crc_markers_fail_with_checksums_on():
    d, manifest, opts = load_fixture("rdkafka-v2-txn-none-0")
    assert opts == {"verifyChecksums": "false"}
    with pytest.raises(ChecksumError):
        read_rows(d, isolationLevel="read_committed")


@pytest.mark.parametrize("level", LEVELS)
def test_straddling_rows_under_every_split_size(straddling, level):
    """Many split sizes, exhaustively: every plan reads exactly the expected rows."""
    expected = straddling.expected(level)
    assert read_rows(straddling.path, isolationLevel=level) == expected
    total = sum(p.stat().st_size for p in straddling.path.glob("*.log"))
    for max_bytes in range(40, total + 200, 23):
        got = read_planned(
            straddling.path, isolationLevel=level, maxPartitionBytes=max_bytes, openCostInBytes=0
        )
        assert got == expected, max_bytes


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sizes=split_sizes, lo=st.integers(0, 45), span=st.one_of(st.none(), st.integers(0, 50)))
def test_property_straddling_random_plans(straddling, sizes, lo, span):
    bounds = {"startingOffsets": json.dumps({"syn": {"0": lo}})}
    hi = NO_LIMIT
    if span is not None:
        hi = lo + span
        bounds["endingOffsets"] = json.dumps({"syn": {"0": hi}})
    got = read_planned(
        straddling.path, isolationLevel="read_committed", **bounds, **split_options(sizes)
    )
    assert got == straddling.expected("read_committed", lo, hi)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    actions=st.lists(action, min_size=20, max_size=80),
    txnindex=st.booleans(),
    sizes=small_split_sizes,
)
def test_property_random_logs_random_plans(actions, txnindex, sizes):
    """Random producers, transactions and segment rolls; random split plans; both levels."""
    with tempfile.TemporaryDirectory() as tmp:
        syn = build_log(Path(tmp) / "syn-0", actions, txnindex=txnindex)
        if not syn.segments:
            return
        for level in LEVELS:
            expected = syn.expected(level)
            assert read_rows(syn.path, isolationLevel=level) == expected
            got = read_planned(syn.path, isolationLevel=level, **split_options(sizes))
            assert got == expected


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sizes=split_sizes, level=st.sampled_from(LEVELS), txnindex=st.booleans())
def test_property_sample_random_plans(tmp_path, sizes, level, txnindex):
    d = SAMPLE_TXN
    if not txnindex:
        d = tmp_path / "transactions-0"
        if not d.exists():
            shutil.copytree(SAMPLE_TXN, d, ignore=shutil.ignore_patterns("*.txnindex"))
    got = read_planned(d, isolationLevel=level, **split_options(sizes))
    assert got == sample_expected(level)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sizes=split_sizes, level=st.sampled_from(LEVELS))
def test_property_fixtures_random_plans(sizes, level):
    require_shared(CLIENT_WRITTEN)
    for name in TXN_FIXTURES:
        d, manifest, opts = load_fixture(name)
        got = read_planned(d, isolationLevel=level, **opts, **split_options(sizes))
        assert got == fixture_expected(manifest, level), name


def test_timestamp_pruning_never_skips_an_abort_marker():
    """librdkafka's mock writes markers with timestamp 0: a pushed ``timestamp >= T`` filter
    must not let the reader skip them, or the producer's next transaction would be dropped."""
    d, manifest, opts = load_fixture("rdkafka-v2-txn-gzip-crcfixed-0")
    t = min(r["timestamp"] for r in manifest["records"] if not r.get("control"))
    pruning = Pruning(timestamp_min_ms=t)
    got = read_planned(d, pruning=pruning, isolationLevel="read_committed", maxPartitionBytes=700)
    assert got == fixture_expected(manifest, "read_committed")
