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
"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from conftest import BROKER_WRITTEN, CLIENT_WRITTEN, SAMPLES, require_shared, zigzag_varint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_source.errors import ChecksumError
from kafkalog_source.layout.discovery import parse_partition_dir
from kafkalog_source.options import parse_options
from kafkalog_source.planning import transactions as tx
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.pruning import Pruning
from kafkalog_source.planning.request import batch_request
from kafkalog_source.planning.splits import NO_LIMIT, SegmentRange
from kafkalog_source.reader import output_projection, read_range, read_split, read_table

MANIFEST = json.loads((SAMPLES / "MANIFEST.json").read_text()) if SAMPLES.is_dir() else None
SAMPLE_TXN = SAMPLES / "transactions-0"
LEVELS = ("read_uncommitted", "read_committed")
INT32_MAX = 2**31 - 1

Row = tuple[int, bytes | None]  # (offset, value)


# ============================================================================ expected rows


def sample_expected(level: str) -> list[Row]:
    """transactions-0 rows from MANIFEST.json: all data rows, or committed + non-transactional."""
    if MANIFEST is None:
        pytest.skip("sample_segments/ not present")
    out = []
    for name, entry in MANIFEST["files"].items():
        if not name.startswith("transactions-0/"):
            continue
        for r in entry["rows"]:
            if r["isControl"]:
                continue
            if level == "read_committed" and r["txn"] not in (None, "committed"):
                continue
            out.append((r["offset"], _hex(r["value"])))
    return sorted(out)


def sample_txnindex() -> list[tuple[int, int, int]]:
    """Every ``.txnindex`` entry the manifest lists for transactions-0, as (pid, first, marker)."""
    assert MANIFEST is not None
    return sorted(
        (e["producerId"], e["firstOffset"], e["lastOffset"])
        for name, entry in MANIFEST["files"].items()
        if name.startswith("transactions-0/")
        for e in entry["txnindex"]
    )


def _hex(v: str | None) -> bytes | None:
    return None if v is None else bytes.fromhex(v)


def _txn_fixture_names() -> list[Any]:
    if not CLIENT_WRITTEN.is_dir():
        return [pytest.param("", id="shared-fixtures-absent")]
    return sorted(d.name for d in CLIENT_WRITTEN.iterdir() if d.is_dir() and "txn" in d.name)


TXN_FIXTURES = _txn_fixture_names()


def load_fixture(name: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """(partition dir, manifest, reader options) of a client-written transactional fixture."""
    if not name:
        require_shared(CLIENT_WRITTEN)
    d = require_shared(CLIENT_WRITTEN / name)
    manifest = json.loads(next(d.glob("*.manifest.json")).read_text())
    bad_crc = any(not b["crc_valid"] for b in manifest["batches"])
    return d, manifest, ({"verifyChecksums": "false"} if bad_crc else {})


def fixture_fates(manifest: dict[str, Any]) -> dict[int, str]:
    """§4.4 on a manifest's batch list: batch index -> ABORT / COMMIT / open, per transaction."""
    ctl = {r["offset"]: r["control"]["type"] for r in manifest["records"] if r.get("control")}
    fate: dict[int, str] = {}
    open_: dict[int, list[int]] = {}
    for i, b in enumerate(manifest["batches"]):
        pid = b["producer_id"]
        if b["magic"] < 2 or pid < 0:
            continue
        if b["is_control"]:
            t = ctl.get(b["base_offset"]) if b["record_count"] else None
            if t in ("ABORT", "COMMIT"):
                for j in open_.pop(pid, []):
                    fate[j] = t
        elif b["is_transactional"]:
            open_.setdefault(pid, []).append(i)
    for js in open_.values():
        for j in js:
            fate[j] = "open"
    return fate


def _batch_of(manifest: dict[str, Any], offset: int) -> int:
    for i, b in enumerate(manifest["batches"]):
        if b["base_offset"] <= offset <= b["last_offset"]:
            return i
    raise AssertionError(f"no batch holds offset {offset}")


def fixture_expected(manifest: dict[str, Any], level: str) -> list[Row]:
    """The data rows of a client-written fixture a consumer at ``level`` would see."""
    fate = fixture_fates(manifest)
    out = []
    for r in manifest["records"]:
        if r.get("control"):
            continue
        if level == "read_committed" and fate.get(_batch_of(manifest, r["offset"])) in (
            "ABORT",
            "open",
        ):
            continue
        out.append((r["offset"], _hex(r["value"])))
    return sorted(out)


def fixture_aborted(manifest: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(pid, first offset, ABORT marker offset) of the aborted transactions of a fixture."""
    ctl = {r["offset"]: r["control"]["type"] for r in manifest["records"] if r.get("control")}
    out, open_ = [], {}
    for b in manifest["batches"]:
        pid = b["producer_id"]
        if pid < 0:
            continue
        if b["is_control"]:
            first = open_.pop(pid, None)
            if ctl.get(b["base_offset"]) == "ABORT" and first is not None:
                out.append((pid, first, b["base_offset"]))
        elif b["is_transactional"]:
            open_.setdefault(pid, b["base_offset"])
    return sorted(out)


# ============================================================================ reading helpers


def rows_of(table: pa.Table | pa.RecordBatch) -> list[Row]:
    return list(
        zip(table.column("offset").to_pylist(), table.column("value").to_pylist(), strict=True)
    )


def read_rows(path: Any, **options: Any) -> list[Row]:
    """Single pass: the Arrow API (``read_table``)."""
    return sorted(rows_of(read_table(str(path), **options)))


def read_planned(path: Any, pruning: Pruning | None = None, **options: Any) -> list[Row]:
    """Plan with ``options`` and read every split on its own, as Spark tasks would."""
    opts = parse_options(options, paths=str(path))
    proj = output_projection(opts)
    out: list[Row] = []
    for split in plan(batch_request(opts), pruning=pruning):
        for batch in read_split(split, opts, proj):
            out.extend(rows_of(batch))
    return sorted(out)


split_sizes = st.fixed_dictionaries(
    {
        "maxPartitionBytes": st.integers(40, 4000),
        "openCostInBytes": st.one_of(st.just(0), st.integers(1, 4000)),
        "minPartitions": st.one_of(st.none(), st.integers(1, 24)),
    }
)


# split sizes around one to a few batches, for the small generated logs
small_split_sizes = st.fixed_dictionaries(
    {
        "maxPartitionBytes": st.integers(40, 900),
        "openCostInBytes": st.one_of(st.just(0), st.integers(1, 900)),
        "minPartitions": st.one_of(st.none(), st.integers(1, 24)),
    }
)


def _split_options(sizes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sizes.items() if v is not None}


# ============================================================================ synthetic logs


def _record(delta: int, key: bytes | None, value: bytes | None, ts_delta: int = 0) -> bytes:
    body = bytes([0]) + zigzag_varint(ts_delta) + zigzag_varint(delta)
    for part in (key, value):
        body += zigzag_varint(-1) if part is None else zigzag_varint(len(part)) + part
    body += zigzag_varint(0)  # no headers
    return zigzag_varint(len(body)) + body


def v2_batch(
    base: int,
    records: list[tuple[bytes | None, bytes | None]],
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    txn: bool = False,
    control: bool = False,
    gzip_it: bool = False,
    ts: int = 1_700_000_000_000,
    lod: int | None = None,
) -> bytes:
    """One magic-2 batch, as a broker stores it (CRC-32C over attributes..end)."""
    payload = b"".join(_record(i, k, v, i) for i, (k, v) in enumerate(records))
    attrs = (0x10 if txn else 0) | (0x20 if control else 0)
    if gzip_it:
        payload = gzip.compress(payload, mtime=0)
        attrs |= 1
    if lod is None:
        lod = max(len(records) - 1, 0)
    max_ts = ts + max(len(records) - 1, 0)
    after_crc = (
        struct.pack(">hiqqqhii", attrs, lod, ts, max_ts, pid, epoch, seq, len(records)) + payload
    )
    tail = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base, len(tail)) + tail


def marker(base: int, pid: int, abort: bool, epoch: int = 0, ts: int = 1_700_000_000_000) -> bytes:
    key = struct.pack(">hh", 0, 0 if abort else 1)
    value = struct.pack(">hi", 0, 5)
    return v2_batch(base, [(key, value)], pid=pid, epoch=epoch, txn=True, control=True, ts=ts)


@dataclass
class SynLog:
    """A generated partition log and the fate of everything in it."""

    path: Path
    rows: list[tuple[int, bytes, str | None]] = field(default_factory=list)
    aborted: list[tuple[int, int, int]] = field(default_factory=list)
    undecided: list[tuple[int, int]] = field(default_factory=list)
    segments: int = 0

    def expected(self, level: str, lo: int = 0, hi: int = NO_LIMIT) -> list[Row]:
        return sorted(
            (o, v)
            for o, v, fate in self.rows
            if lo <= o < hi and (level == "read_uncommitted" or fate in (None, "committed"))
        )


PIDS = (101, 102, 103, 104)

action = st.one_of(
    st.tuples(st.just("data"), st.sampled_from(PIDS), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("data"), st.sampled_from(PIDS), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("end"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("end"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("idempotent"), st.sampled_from(PIDS), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.integers(1, 3)),
    st.tuples(st.just("empty_marker"), st.sampled_from(PIDS)),
    st.tuples(st.just("roll")),
)


def build_log(directory: Path, actions: list[tuple], txnindex: bool = True) -> SynLog:
    """Write the segments (and ``.txnindex`` files, SEGMENT_SPEC §4.3) a broker would hold after
    ``actions``, into ``directory`` (a partition directory)."""
    directory.mkdir(parents=True, exist_ok=True)
    out = SynLog(directory)
    segments: list[tuple[int, list[bytes], list[bytes]]] = [(0, [], [])]
    offset = 0
    open_: dict[int, tuple[int, list[int]]] = {}  # pid -> (first offset, row indexes)
    seq = dict.fromkeys(PIDS, 0)
    ts = 1_700_000_000_000
    for a in actions:
        kind = a[0]
        ts += 100
        seg = segments[-1][1]
        if kind == "roll":
            if seg:
                segments.append((offset, [], []))
            continue
        if kind in ("data", "idempotent", "plain"):
            n = a[2] if kind != "plain" else a[1]
            recs = [(b"k%d" % (offset + i), b"v%d" % (offset + i)) for i in range(n)]
            pid = a[1] if kind != "plain" else -1
            seg.append(
                v2_batch(
                    offset,
                    recs,
                    pid=pid,
                    epoch=0 if pid >= 0 else -1,
                    seq=seq[pid] if pid >= 0 else -1,
                    txn=kind == "data",
                    gzip_it=kind == "data" and a[3],
                    ts=ts,
                )
            )
            if pid >= 0:
                seq[pid] += n
            for i in range(n):
                out.rows.append(
                    (offset + i, b"v%d" % (offset + i), "open" if kind == "data" else None)
                )
            if kind == "data":
                first, idx = open_.setdefault(pid, (offset, []))
                idx.extend(range(len(out.rows) - n, len(out.rows)))
            offset += n
        elif kind == "end":
            pid, abort = a[1], a[2]
            seg.append(marker(offset, pid, abort, ts=ts))
            txn = open_.pop(pid, None)
            if txn is not None:
                first, idx = txn
                for i in idx:
                    o, v, _ = out.rows[i]
                    out.rows[i] = (o, v, "aborted" if abort else "committed")
                if abort:
                    out.aborted.append((pid, first, offset))
                    lso = min((f for f, _ in open_.values()), default=offset + 1)
                    segments[-1][2].append(struct.pack(">hqqqq", 0, pid, first, offset, lso))
            offset += 1
        elif kind == "empty_marker":
            pid = a[1]
            if pid in open_:
                continue  # the cleaner empties a marker only once its transaction's data is gone
            seg.append(v2_batch(offset, [], pid=pid, epoch=0, txn=True, control=True, lod=0, ts=ts))
            offset += 1
    out.undecided = sorted((pid, first) for pid, (first, _) in open_.items())
    for base, batches, entries in segments:
        if not batches:
            continue
        (directory / f"{base:020d}.log").write_bytes(b"".join(batches))
        if txnindex and entries:
            (directory / f"{base:020d}.txnindex").write_bytes(b"".join(entries))
        out.segments += 1
    return out


# A fixed log whose transactions straddle segments and splits: 4 producers interleaved, an
# aborted transaction over three segments, a committed one over two, a producer aborting and then
# committing (its marker before later ranges is the trap), markers without data, an emptied marker,
# idempotent and plain batches, compressed transactional batches, two undecided transactions.
STRADDLING = [
    ("data", 101, 3, False),
    ("data", 102, 2, True),
    ("plain", 2),
    ("data", 103, 2, False),
    ("roll",),
    ("data", 101, 2, True),
    ("idempotent", 102, 2),
    ("end", 102, True),
    ("data", 103, 1, False),
    ("end", 104, True),  # a marker without data
    ("roll",),
    ("data", 102, 3, False),
    ("data", 101, 1, False),
    ("end", 101, True),  # aborts data from three segments
    ("empty_marker", 101),
    ("end", 103, False),  # commits data from two segments
    ("roll",),
    ("data", 102, 2, True),
    ("end", 102, False),  # producer 102: aborted before, committed now
    ("data", 104, 2, False),
    ("plain", 1),
    ("data", 101, 2, False),
    ("roll",),
    ("data", 103, 2, True),
    ("idempotent", 101, 1),
    ("end", 104, False),
    ("data", 102, 1, False),
    ("plain", 2),
]


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
    rec = _record(0, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 1))
    assert tx.control_type(rec) == tx.ABORT
    assert tx.control_type(_record(0, struct.pack(">hh", 0, 2), None)) == 2
    assert tx.control_type(_record(0, b"\x00\x01", None)) is None  # key too short
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
        straddling.path, isolationLevel="read_committed", **bounds, **_split_options(sizes)
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
            got = read_planned(syn.path, isolationLevel=level, **_split_options(sizes))
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
    got = read_planned(d, isolationLevel=level, **_split_options(sizes))
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
        got = read_planned(d, isolationLevel=level, **opts, **_split_options(sizes))
        assert got == fixture_expected(manifest, level), name


def test_timestamp_pruning_never_skips_an_abort_marker():
    """librdkafka's mock writes markers with timestamp 0: a pushed ``timestamp >= T`` filter
    must not let the reader skip them, or the producer's next transaction would be dropped."""
    d, manifest, opts = load_fixture("rdkafka-v2-txn-gzip-crcfixed-0")
    t = min(r["timestamp"] for r in manifest["records"] if not r.get("control"))
    pruning = Pruning(timestamp_min_ms=t)
    got = read_planned(d, pruning=pruning, isolationLevel="read_committed", maxPartitionBytes=700)
    assert got == fixture_expected(manifest, "read_committed")


# ============================================================================ control records


@pytest.mark.parametrize("level", LEVELS)
def test_control_records_hidden_by_default(level):
    t = read_table(str(SAMPLE_TXN), isolationLevel=level, includeMetadata="true")
    markers = {11, 14, 21, 22, 27, 28}
    assert not markers & set(t.column("offset").to_pylist())
    assert "control" not in t.column_names


@pytest.mark.parametrize("level", LEVELS)
def test_include_control_records(level):
    assert MANIFEST is not None
    t = read_table(str(SAMPLE_TXN), isolationLevel=level, includeControlRecords="true")
    got = {
        o: c
        for o, c in zip(
            t.column("offset").to_pylist(), t.column("control").to_pylist(), strict=True
        )
        if c is not None
    }
    expected = {}
    for name, entry in MANIFEST["files"].items():
        if name.startswith("transactions-0/"):
            for r in entry["rows"]:
                if r["isControl"]:
                    epoch = struct.unpack(">hi", bytes.fromhex(r["value"]))[1]
                    expected[r["offset"]] = {
                        "type": r["controlType"],
                        "version": 0,
                        "coordinatorEpoch": epoch,
                    }
    assert got == expected
    data = sorted(
        (o, v)
        for o, v, c in zip(
            *(t.column(n).to_pylist() for n in ("offset", "value", "control")), strict=True
        )
        if c is None
    )
    assert data == sample_expected(level)


@pytest.mark.parametrize("name", TXN_FIXTURES)
def test_fixture_control_records(name):
    d, manifest, opts = load_fixture(name)
    t = read_table(str(d), includeControlRecords="true", **opts)
    got = {
        o: (c["type"], c["version"], c["coordinatorEpoch"])
        for o, c in zip(
            t.column("offset").to_pylist(), t.column("control").to_pylist(), strict=True
        )
        if c is not None
    }
    expected = {
        r["offset"]: (
            r["control"]["type"],
            r["control"]["keyVersion"],
            r["control"]["coordinatorEpoch"],
        )
        for r in manifest["records"]
        if r.get("control")
    }
    assert got == expected


def test_control_records_have_null_key_and_value():
    """Control records come with null key and value; their content is in the control column."""
    t = read_table(str(SAMPLE_TXN), includeControlRecords="true")
    ctl = [
        (k, v)
        for k, v, c in zip(
            *(t.column(n).to_pylist() for n in ("key", "value", "control")), strict=True
        )
        if c is not None
    ]
    assert ctl and all(k is None and v is None for k, v in ctl)


# ============================================================================ metadata columns


def _kafka_sequence(base: int, delta: int) -> int:
    """``DefaultRecordBatch#incrementSequence``: wraps past Int32.MAX back to 0; -1 stays -1."""
    if base < 0:
        return -1
    if base > INT32_MAX - delta:
        return delta - (INT32_MAX - base) - 1
    return base + delta


def _meta_rows(t: pa.Table) -> list[tuple]:
    cols = ("offset", "producerId", "producerEpoch", "sequence", "isTransactional")
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True))


def test_metadata_columns_sample():
    assert MANIFEST is not None
    expected = []
    for name, entry in MANIFEST["files"].items():
        if name.startswith("transactions-0/"):
            for r in entry["rows"]:
                if r["isControl"]:
                    continue
                b = entry["batches"][r["batch"]]
                seq = _kafka_sequence(b["baseSequence"], r["offset"] - b["baseOffset"])
                expected.append(
                    (r["offset"], b["producerId"], b["producerEpoch"], seq, b["isTransactional"])
                )
    t = read_table(str(SAMPLE_TXN), includeMetadata="true")
    assert _meta_rows(t) == sorted(expected)


@pytest.mark.parametrize("name", TXN_FIXTURES)
def test_metadata_columns_fixtures(name):
    d, manifest, opts = load_fixture(name)
    expected = []
    for r in manifest["records"]:
        b = manifest["batches"][_batch_of(manifest, r["offset"])]
        seq = _kafka_sequence(b["base_sequence"], r["offset"] - b["base_offset"])
        expected.append(
            (r["offset"], b["producer_id"], b["producer_epoch"], seq, b["is_transactional"])
        )
    t = read_table(str(d), includeMetadata="true", includeControlRecords="true", **opts)
    assert _meta_rows(t) == sorted(expected)


def test_sequence_wraps_like_kafka(tmp_path):
    d = tmp_path / "wrap-0"
    d.mkdir()
    recs = [(b"k", b"v%d" % i) for i in range(4)]
    (d / "00000000000000000000.log").write_bytes(
        v2_batch(0, recs, pid=9, epoch=1, seq=INT32_MAX - 1)
        + v2_batch(4, recs[:2], pid=9, epoch=1, seq=-1)
    )
    t = read_table(str(d), includeMetadata="true")
    assert t.column("sequence").to_pylist() == [INT32_MAX - 1, INT32_MAX, 0, 1, -1, -1]
    assert t.column("producerEpoch").to_pylist() == [1] * 6


# ============================================================================ Spark


def _spark_rows(df: Any) -> list[Row]:
    return sorted(
        (r[0], None if r[1] is None else bytes(r[1]))
        for r in df.select("offset", "value").collect()
    )


@pytest.mark.spark
def test_spark_read_committed(spark):
    """Both option spellings, several splits per partition; the transactional fixtures in one
    load (their CRC-0 markers need verifyChecksums=false)."""
    for name in ("isolationLevel", "kafka.isolation.level"):
        df = (
            spark.read.format("kafkalog")
            .option(name, "read_committed")
            .option("maxPartitionBytes", "500")
            .option("openCostInBytes", "0")
            .load(str(SAMPLE_TXN))
        )
        assert df.rdd.getNumPartitions() > 1
        assert _spark_rows(df) == sample_expected("read_committed")
    if not CLIENT_WRITTEN.is_dir():
        return
    loaded = [load_fixture(n) for n in TXN_FIXTURES]
    for level in LEVELS:
        df = (
            spark.read.format("kafkalog")
            .option("isolationLevel", level)
            .option("verifyChecksums", "false")
            .option("maxPartitionBytes", "700")
            .load([str(d) for d, _, _ in loaded])
        )
        got = sorted(
            (r[0], r[1], None if r[2] is None else bytes(r[2]))
            for r in df.select("topic", "offset", "value").collect()
        )
        want = sorted(
            (m["topic"], o, v) for _, m, _ in loaded for o, v in fixture_expected(m, level)
        )
        assert got == want, level


AUDIT_SQL = """
WITH data AS (
  SELECT producerId, offset FROM txn_audit WHERE isTransactional AND control IS NULL
), markers AS (
  SELECT producerId, offset AS marker, control.type AS type FROM txn_audit
  WHERE control IS NOT NULL AND control.type IN ('ABORT', 'COMMIT')
), next_marker AS (
  SELECT d.producerId, d.offset, MIN(m.marker) AS marker
  FROM data d LEFT JOIN markers m ON m.producerId = d.producerId AND m.marker > d.offset
  GROUP BY d.producerId, d.offset
)
SELECT n.producerId, MIN(n.offset) AS firstOffset, MAX(n.offset) AS lastDataOffset, n.marker,
       COALESCE(m.type, 'UNDECIDED') AS outcome, COUNT(*) AS records
FROM next_marker n LEFT JOIN markers m ON m.producerId = n.producerId AND m.marker = n.marker
GROUP BY n.producerId, n.marker, m.type
ORDER BY firstOffset
"""


@pytest.mark.spark
def test_spark_sql_audit_finds_aborted_producer_ranges(spark):
    """read_uncommitted + includeMetadata + includeControlRecords: the aborted producer ranges
    come out of one SQL query, and match the .txnindex (and the manifest's txn marks)."""
    df = (
        spark.read.format("kafkalog")
        .option("includeMetadata", "true")
        .option("includeControlRecords", "true")
        .load(str(SAMPLE_TXN))
    )
    df.createOrReplaceTempView("txn_audit")
    try:
        rows = [r.asDict() for r in spark.sql(AUDIT_SQL).collect()]
    finally:
        spark.catalog.dropTempView("txn_audit")
    aborted = sorted(
        (r["producerId"], r["firstOffset"], r["marker"]) for r in rows if r["outcome"] == "ABORT"
    )
    assert aborted == sample_txnindex()
    undecided = [(r["producerId"], r["firstOffset"]) for r in rows if r["outcome"] == "UNDECIDED"]
    assert undecided == [(6000, 29)]
    lt = tx.log_transactions([str(SAMPLE_TXN / "00000000000000000000.log")])
    assert aborted == list(lt.aborted) and tuple(undecided) == lt.undecided
    # the records the query calls aborted/undecided are those the manifest marks so
    assert MANIFEST is not None
    marks = {
        r["offset"]: r["txn"]
        for n, e in MANIFEST["files"].items()
        if n.startswith("transactions-0/")
        for r in e["rows"]
    }
    fates = {"ABORT": "aborted", "COMMIT": "committed", "UNDECIDED": "open"}
    counted = {}
    for r in rows:
        counted[fates[r["outcome"]]] = counted.get(fates[r["outcome"]], 0) + r["records"]
    assert counted == {
        fate: sum(1 for v in marks.values() if v == fate)
        for fate in ("aborted", "committed", "open")
    }


# ============================================================================ reader gaps


def test_dropmalformed_zero_crc_abort_marker_keeps_later_committed_data():
    """A skipped (CRC-0) ABORT marker still ends its transaction: the marker offset is known."""
    d, manifest, _ = load_fixture("rdkafka-v2-txn-gzip-0")
    got = read_rows(d, isolationLevel="read_committed", mode="DROPMALFORMED")
    assert got == fixture_expected(manifest, "read_committed")


# ============================================================================ no transactions


def _plain_sample_dirs() -> list[str]:
    if not SAMPLES.is_dir():
        return []
    return sorted(
        d.name
        for d in SAMPLES.iterdir()
        if d.is_dir() and parse_partition_dir(d.name) and d.name != "transactions-0"
    )


@pytest.mark.parametrize("name", _plain_sample_dirs())
def test_read_committed_changes_nothing_without_transactions(name):
    """Every other sample (legacy formats, compaction with an empty batch, several segments)."""
    d = SAMPLES / name
    lt = tx.log_transactions([str(p) for p in d.glob("*.log")])
    assert lt.entries == () and lt.notes == ()
    assert read_rows(d, isolationLevel="read_committed") == read_rows(d)


def test_broker_written_logs_walk_cleanly():
    root = require_shared(BROKER_WRITTEN)
    dirs = sorted({p.parent for p in root.rglob("*.log")})
    assert dirs
    for d in dirs:
        lt = tx.log_transactions([str(p) for p in d.glob("*.log")])
        assert lt.notes == () and all(s.error is None for s in lt.segments), d
