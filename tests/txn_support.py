"""What the transaction tests share (issue 4): the expected rows of ``sample_segments``'
``transactions-0`` (from its MANIFEST.json) and of the client-written transactional fixtures
(SEGMENT_SPEC §4.4 applied to their batch lists), the reading helpers, and synthetic partition
logs built from a list of producer actions, which know the fate of every record they write."""

from __future__ import annotations

import gzip
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from conftest import CLIENT_WRITTEN, SAMPLES, require_shared, zigzag_varint
from hypothesis import strategies as st

from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.pruning import Pruning
from kafkalog_source.planning.request import batch_request
from kafkalog_source.planning.splits import NO_LIMIT
from kafkalog_source.reader import output_projection, read_split, read_table

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


def batch_of(manifest: dict[str, Any], offset: int) -> int:
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
        if level == "read_committed" and fate.get(batch_of(manifest, r["offset"])) in (
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


def split_options(sizes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sizes.items() if v is not None}


# ============================================================================ synthetic logs


def record_bytes(delta: int, key: bytes | None, value: bytes | None, ts_delta: int = 0) -> bytes:
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
    payload = b"".join(record_bytes(i, k, v, i) for i, (k, v) in enumerate(records))
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
