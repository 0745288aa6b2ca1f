"""``kafkalog report``: one pass over an archive, with ``verify``'s own evidence.

The pass *is* verify's (:mod:`..verify`): the data source's reader reads every selected
segment with verify's fixed options (checksums, ``DROPMALFORMED``, every missing offset
reported) and each segment is then walked and checked by :func:`~..verify.verify_segment`.
The report taps that pass rather than reading again: it folds the reader's rows (timestamps,
key and value sizes, transaction markers) and the walk's batch headers (sizes, codecs,
producers, timestamps) into aggregates as they go by, so its counts, gaps and problems are
verify's numbers and its exit status is verify's. Memory is bounded by the aggregates (time
buckets, fixed histogram bins, capped lists), not by the archive: the rows are never kept, and
a series with too many buckets is coarsened (minute, hour, day, week, ...) and says so.

Only the two internal topics whose *contents* the page shows (``__consumer_offsets``: consumer
groups and lag; ``__cluster_metadata``: brokers, topics, configuration changes) are read a
second time, decoded (``decode=consumer_offsets`` / ``cluster_metadata``); they are compacted
and small next to the data. Their counts and gaps are the verified pass's like any topic's.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...format.batch import CODEC_MASK, CONTROL_BIT, TRANSACTIONAL_BIT, BatchHeader
from ...format.messages.topics import TOPIC_INTERPRETATION
from ...format.names import CODEC_NAMES
from ...stats import ReadEvent, ReadStats

log = logging.getLogger("kafkalog")

# The natural units of a series, finest first: a series is bucketed by the finest unit whose
# number of buckets stays within MAX_POINTS per topic (the page draws no more points than that).
UNITS: tuple[tuple[str, int], ...] = (
    ("minute", 60_000),
    ("hour", 3_600_000),
    ("day", 86_400_000),
    ("week", 7 * 86_400_000),
    ("30 days", 30 * 86_400_000),
    ("365 days", 365 * 86_400_000),
)
MAX_POINTS = 1_500  # points of one topic's series on the page
MAX_KEPT_BUCKETS = 200_000  # buckets kept over every topic during the pass (then coarsened)
SIZE_EDGES = tuple(2**k for k in range(6, 31))  # batch size bins: 64 B .. 1 GiB, and above
RATIO_EDGES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0)
MAX_GAPS = 10_000  # gaps listed (ReadStats keeps at most MAX_EVENTS events anyway)
MAX_PRODUCERS = 100_000  # producer ids followed; the rest are counted
MAX_OPEN_LISTED = 1_000  # open transactions listed
MAX_PARTITIONS_A_PRODUCER = 100  # partitions counted for one producer id (then "100+")
MAX_CONFIG_CHANGES = 5_000  # configuration changes listed
MAX_SEGMENTS_LISTED = 10_000  # segments listed; beyond, their counts are in the partitions'
MAX_LANES = 120  # partitions drawn on the timelines (those with gaps first)
GAP_KINDS = ("malformed", "truncated tail", "zero tail", "corrupt file", "missing file")
NO_TIMESTAMP = -1  # Kafka's "no timestamp" (v0 messages, batches written without one)
# the reader's columns the report's tap reads, beyond verify's ROW_COLUMNS
TAP_COLUMNS = ("key", "value", "producerId")
# what a gap is, in the page's words (the event kinds of ReadStats)
GAP_TITLES = {
    "missing offsets": "offsets missing",
    "malformed": "damaged batch",
    "truncated tail": "cut tail",
    "zero tail": "zero-filled tail",
    "corrupt file": "unreadable file",
    "missing file": "file gone",
    "stopped": "read stopped",
    "replicas disagree": "replicas disagree",
}


def codec_name(c: int) -> str:
    """A codec id as Kafka's tools name it."""
    return CODEC_NAMES[c] if 0 <= c < len(CODEC_NAMES) else f"unknown({c})"


def is_internal(topic: str | None) -> bool:
    """Kafka's internal topics (and any other ``__`` topic, as Kafka's tools treat them)."""
    return bool(topic) and (topic in TOPIC_INTERPRETATION or topic.startswith("__"))


# -------------------------------------------------------------------------- aggregates


class Series:
    """Records and bytes per time bucket per topic, coarsened to keep the buckets bounded."""

    def __init__(self) -> None:
        self.unit = 0  # index into UNITS
        self.records: dict[str, Counter[int]] = defaultdict(Counter)
        self.bytes: dict[str, Counter[int]] = defaultdict(Counter)
        self.untimed_records: Counter[str] = Counter()
        self.untimed_bytes: Counter[str] = Counter()
        self.coarsened_in_pass = False  # more buckets than MAX_KEPT_BUCKETS during the pass
        self.capped = False  # more buckets a topic than MAX_POINTS at a finer unit

    @property
    def unit_ms(self) -> int:
        return UNITS[self.unit][1]

    def add(
        self, table: dict[str, Counter[int]], topic: str, ms: np.ndarray, w: np.ndarray
    ) -> None:
        """Add weights ``w`` at the times ``ms`` (milliseconds) to ``table[topic]``."""
        if not len(ms):
            return
        buckets = np.floor_divide(ms, self.unit_ms)
        keys, inverse = np.unique(buckets, return_inverse=True)
        sums = np.bincount(inverse, weights=w.astype(np.float64), minlength=len(keys))
        c = table[topic]
        for k, v in zip(keys.tolist(), sums.tolist(), strict=True):
            c[k] += int(v)
        if (
            sum(len(t) for t in self.records.values()) > MAX_KEPT_BUCKETS
            or sum(len(t) for t in self.bytes.values()) > MAX_KEPT_BUCKETS
        ):
            self.coarsen(self.unit + 1)
            self.coarsened_in_pass = True

    def coarsen(self, unit: int) -> None:
        """Re-bucket everything by ``UNITS[unit]``."""
        unit = min(unit, len(UNITS) - 1)
        if unit <= self.unit:
            return
        f = UNITS[unit][1] // UNITS[self.unit][1] if UNITS[unit][1] % self.unit_ms == 0 else None
        old = self.unit_ms
        self.unit = unit
        for table in (self.records, self.bytes):
            for topic, c in table.items():
                n: Counter[int] = Counter()
                for k, v in c.items():
                    n[(k // f) if f else (k * old) // self.unit_ms] += v
                table[topic] = n

    def finish(self) -> dict[str, Any]:
        """The series for the page: the finest unit with at most MAX_POINTS buckets a topic."""
        widest = max(
            [len(c) for c in self.records.values()] + [len(c) for c in self.bytes.values()] + [0]
        )
        while widest > MAX_POINTS and self.unit < len(UNITS) - 1:
            self.coarsen(self.unit + 1)
            self.capped = True
            widest = max(
                [len(c) for c in self.records.values()] + [len(c) for c in self.bytes.values()]
            )
        # the natural unit: the finest whose span has at most MAX_POINTS buckets
        keys = _bulk(self.records)
        if keys:
            span_ms = (keys[1] - keys[0] + 1) * self.unit_ms
            natural = next(
                (i for i, (_, ms) in enumerate(UNITS) if span_ms // ms <= MAX_POINTS),
                len(UNITS) - 1,
            )
            self.coarsen(natural)
        # what the page draws: the bulk, widened by a tenth of its span (or 10 buckets) each
        # side; a few records stamped decades away are counted apart, not drawn
        bulk = _bulk(self.records) or _bulk(self.bytes)
        drawn = None
        outside = {"records": 0, "bytes": 0}
        if bulk is not None:
            pad = max((bulk[1] - bulk[0]) // 10, 10)
            drawn = (bulk[0] - pad, bulk[1] + pad)
            for name, table in (("records", self.records), ("bytes", self.bytes)):
                outside[name] = sum(
                    v for c in table.values() for k, v in c.items() if not drawn[0] <= k <= drawn[1]
                )
        topics = sorted(set(self.records) | set(self.bytes))
        out: dict[str, list[list[int]]] = {}
        for t in topics:
            ks = sorted(set(self.records.get(t, {})) | set(self.bytes.get(t, {})))
            out[t] = [
                [
                    k * self.unit_ms,
                    self.records.get(t, Counter())[k],
                    self.bytes.get(t, Counter())[k],
                ]
                for k in ks
            ]
        return {
            "unit": UNITS[self.unit][0],
            "unit_ms": self.unit_ms,
            "columns": ["start_ms", "records", "bytes"],
            "drawn_ms": [drawn[0] * self.unit_ms, drawn[1] * self.unit_ms] if drawn else None,
            "outside_drawn": outside,
            "topics": out,
            "untimed": {
                t: {"records": self.untimed_records[t], "bytes": self.untimed_bytes[t]}
                for t in sorted(set(self.untimed_records) | set(self.untimed_bytes))
            },
        }


def _bulk(table: dict[str, Counter[int]]) -> tuple[int, int] | None:
    """The first and last bucket of the bulk of the records: a few stray timestamps (a record
    stamped 1969 in a 2023 log, at most 2% of the records at either end) do not make the
    unit of the whole series coarse; their buckets are still drawn."""
    total: Counter[int] = Counter()
    for c in table.values():
        total.update(c)
    if not total:
        return None
    keys = sorted(total)
    n = sum(total.values())
    cut = n * 0.02
    lo, seen = 0, 0
    while lo < len(keys) - 1 and seen + total[keys[lo]] <= cut:
        seen += total[keys[lo]]
        lo += 1
    hi, seen = len(keys) - 1, 0
    while hi > lo and seen + total[keys[hi]] <= cut:
        seen += total[keys[hi]]
        hi -= 1
    return keys[lo], keys[hi]


@dataclass
class SegmentTap:
    """What the report keeps of the reader's rows of one segment until its walk: key + value
    bytes per batch position (arrays, 16 bytes a batch), and the transaction markers (position
    -> producer id, type)."""

    positions: list[np.ndarray] = field(default_factory=list)
    sums: list[np.ndarray] = field(default_factory=list)
    markers: dict[int, tuple[int, str]] = field(default_factory=dict)
    # the first and last timestamp of the data records the reader returned
    stamp_lo: int | None = None
    stamp_hi: int | None = None

    def payload_at(self, pos: np.ndarray) -> np.ndarray:
        """Key + value bytes of the batches at ``pos`` (-1 where the reader returned no row)."""
        out = np.full(len(pos), -1, np.int64)
        if not self.positions:
            return out
        allp = np.concatenate(self.positions)
        keys, inverse = np.unique(allp, return_inverse=True)  # a batch cut across row batches
        sums = np.bincount(inverse, weights=np.concatenate(self.sums), minlength=len(keys))
        at = np.searchsorted(keys, pos)
        hit = (at < len(keys)) & (keys[np.minimum(at, len(keys) - 1)] == pos)
        out[hit] = sums[at[hit]].astype(np.int64)
        return out


@dataclass
class Partition:
    """One partition directory's aggregates."""

    topic: str | None
    partition: int | None
    directory: str
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    control_records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    # from the batch headers (a v2 batch's base and max timestamp, a v1 wrapper's timestamp)
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    # from the reader's data records: what the page says (the headers only where no record has
    # a timestamp): a v1 wrapper's timestamp is its last record's, a LogAppendTime batch's
    # base timestamp is not its records', and a record may be stamped before its batch's base
    record_first_timestamp: int | None = None
    record_last_timestamp: int | None = None
    errors: int = 0
    warnings: int = 0
    runs: list[list[int]] = field(default_factory=list)  # [first, last, bytes, segments]
    open_txns: dict[int, list[Any]] = field(default_factory=dict)  # pid -> [offset, path, pos]

    def add_range(self, first: int, last: int, size: int) -> None:
        """A segment's offsets: merged into the last run when they follow on from it."""
        if self.runs and first <= self.runs[-1][1] + 1:
            r = self.runs[-1]
            r[1] = max(r[1], last)
            r[2] += size
            r[3] += 1
        else:
            self.runs.append([first, last, size, 1])


@dataclass
class Gatherer:
    """Folds the verified pass into the report's aggregates (see the module docstring)."""

    topic_of: dict[str, tuple[str | None, int | None]]
    series: Series = field(default_factory=Series)
    taps: dict[str, SegmentTap] = field(default_factory=dict)
    partitions: dict[str, Partition] = field(default_factory=dict)
    segments: list[dict[str, Any]] = field(default_factory=list)
    codecs: Counter[str] = field(default_factory=Counter)  # batches per codec
    magics: Counter[int] = field(default_factory=Counter)  # batches per magic
    size_hist: dict[str, list[int]] = field(default_factory=dict)  # codec -> bin counts
    ratio_hist: dict[str, list[int]] = field(default_factory=dict)
    stored: Counter[str] = field(default_factory=Counter)  # codec -> stored bytes (data batches)
    payload: Counter[str] = field(default_factory=Counter)  # codec -> key + value bytes
    producers: dict[int, list[Any]] = field(default_factory=dict)
    producers_dropped: int = 0
    txn: Counter[str] = field(default_factory=Counter)
    open_listed: list[dict[str, Any]] = field(default_factory=list)
    markers: Counter[str] = field(default_factory=Counter)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    gaps_dropped: int = 0
    # replicas=separate: the batch headers of every copy of a partition held in several
    # directories: (topic, partition) -> directory -> [header arrays, segment paths]
    replicated: set[tuple[str | None, int | None]] = field(default_factory=set)
    copies: dict[tuple[Any, Any], dict[str, list[Any]]] = field(default_factory=dict)
    disagreements: int = 0
    # Redpanda segments: how many, their batches by type name, batches of types that take no
    # Kafka offset (left out of the Kafka view), whether read raw (redpanda=raw)
    redpanda_segments: int = 0
    redpanda_types: Counter[str] = field(default_factory=Counter)
    redpanda_left_out: int = 0
    redpanda_raw: bool = False

    def source(self, src: Any) -> None:
        """A segment's open source after verify's walk: a Redpanda segment's batch types."""
        from ...format.redpanda import type_name
        from ...layout.redpanda import RedpandaSource

        if not isinstance(src, RedpandaSource):
            return
        view = src.view
        self.redpanda_segments += 1
        self.redpanda_left_out += view.left_out
        self.redpanda_raw = self.redpanda_raw or view.raw
        for t, n in view.type_counts().items():
            self.redpanda_types[type_name(t)] += n

    # ---------------------------------------------------------------- the reader's rows
    def tap(
        self, path: str, rows: Any, offsets: np.ndarray, stamps: np.ndarray, positions: np.ndarray
    ) -> None:
        """One segment's slice of the reader's rows (see verify_log.collect_rows)."""
        import pyarrow.compute as pc

        t = self.taps.setdefault(path, SegmentTap())
        topic = self.topic_of.get(path, (None, None))[0] or "(no topic)"
        control = rows.column("control")
        data = None
        if control.null_count < len(control):
            data = pc.is_null(control).to_numpy(zero_copy_only=False)
            types = pc.struct_field(control, [0]).to_pylist()
            pids = rows.column("producerId").to_pylist()
            for i in np.flatnonzero(~data).tolist():
                t.markers[int(positions[i])] = (pids[i], types[i] or "UNKNOWN")
        ts = rows.column("timestamp")
        timed = pc.is_valid(ts).to_numpy(zero_copy_only=False)
        if data is not None:
            self.series.untimed_records[topic] += int((~timed & data).sum())
            timed &= data
        else:
            self.series.untimed_records[topic] += int((~timed).sum())
        if timed.any():
            self.series.add(
                self.series.records, topic, stamps[timed], np.ones(int(timed.sum()), np.int64)
            )
            lo, hi = int(stamps[timed].min()), int(stamps[timed].max())
            t.stamp_lo = lo if t.stamp_lo is None else min(t.stamp_lo, lo)
            t.stamp_hi = hi if t.stamp_hi is None else max(t.stamp_hi, hi)
        # key + value bytes per batch: the "uncompressed" side of the compression ratio
        kv = pc.fill_null(pc.binary_length(rows.column("key")), 0).to_numpy(zero_copy_only=False)
        kv = kv + pc.fill_null(pc.binary_length(rows.column("value")), 0).to_numpy(
            zero_copy_only=False
        )
        starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
        sums = np.add.reduceat(kv.astype(np.int64), starts)
        t.positions.append(positions[starts].astype(np.int64))
        t.sums.append(sums)

    # ---------------------------------------------------------------- the walk's headers
    def headers(
        self,
        part: Partition,
        path: str,
        headers: list[BatchHeader],
        events: list[ReadEvent],
        first_record: int | None = None,
    ) -> None:
        """One segment's batch headers (verify's walk), with the reader's events of the file and
        the offset of the first record the reader returned from it."""
        tap = self.taps.pop(path, SegmentTap())
        topic = part.topic or "(no topic)"
        self._gaps_of(part, path, headers, events)
        if tap.stamp_lo is not None and tap.stamp_hi is not None:
            lo, hi = part.record_first_timestamp, part.record_last_timestamp
            part.record_first_timestamp = tap.stamp_lo if lo is None else min(lo, tap.stamp_lo)
            part.record_last_timestamp = tap.stamp_hi if hi is None else max(hi, tap.stamp_hi)
        if not headers:
            return
        a = np.array(
            [
                (
                    h.position,
                    h.base_offset,
                    h.last_offset,
                    h.size,
                    h.magic,
                    h.attributes,
                    h.max_timestamp,
                    h.base_timestamp,
                    h.producer_id,
                    h.producer_epoch,
                    h.records_count,
                )
                for h in headers
            ],
            np.int64,
        )
        key = (part.topic, part.partition)
        if key in self.replicated:
            held = self.copies.setdefault(key, {}).setdefault(part.directory, [[], []])
            index = np.full(len(headers), len(held[1]), np.int64)
            held[0].append(
                np.column_stack([a[:, 1], a[:, 2], [h.crc for h in headers], a[:, 0], index])
            )
            held[1].append(path)
        pos, base, last, size, magic, attrs = (a[:, i] for i in range(6))
        max_ts, base_ts, pid, epoch, count = (a[:, i] for i in range(6, 11))
        codec = attrs & CODEC_MASK
        control = (magic >= 2) & ((attrs & CONTROL_BIT) != 0)
        txnl = (magic >= 2) & ((attrs & TRANSACTIONAL_BIT) != 0)
        for m, n in zip(*np.unique(magic, return_counts=True), strict=True):
            self.magics[int(m)] += int(n)
        # offsets covered: the first batch's first offset (a legacy entry's offset is its
        # last: the reader's first record of it), the last batch's last offset
        first = int(base[0])
        if magic[0] < 2 and first_record is not None:
            first = min(first, first_record)
        part.add_range(first, int(last[-1]), int(size.sum()))
        part.first_offset = first if part.first_offset is None else min(part.first_offset, first)
        part.last_offset = (
            int(last[-1]) if part.last_offset is None else max(part.last_offset, int(last[-1]))
        )
        timed = (magic > 0) & (max_ts != NO_TIMESTAMP)
        if timed.any():
            lo = np.where((magic >= 2) & (base_ts != NO_TIMESTAMP), base_ts, max_ts)[timed].min()
            hi = max_ts[timed].max()
            part.first_timestamp = (
                int(lo) if part.first_timestamp is None else min(part.first_timestamp, int(lo))
            )
            part.last_timestamp = (
                int(hi) if part.last_timestamp is None else max(part.last_timestamp, int(hi))
            )
            self.series.add(self.series.bytes, topic, max_ts[timed], size[timed])
        self.series.untimed_bytes[topic] += int(size[~timed].sum())
        # codecs, sizes and compression of the data batches
        data = ~control
        bins = np.searchsorted(np.array(SIZE_EDGES), size, side="right")
        for c in np.unique(codec[data]).tolist():
            name = codec_name(int(c))
            sel = data & (codec == c)
            self.codecs[name] += int(sel.sum())
            h = self.size_hist.setdefault(name, [0] * (len(SIZE_EDGES) + 1))
            for b, n in zip(*np.unique(bins[sel], return_counts=True), strict=True):
                h[int(b)] += int(n)
        kv = tap.payload_at(pos)
        known = data & (kv >= 0)
        if known.any():
            ratio = kv[known] / size[known]
            rbins = np.searchsorted(np.array(RATIO_EDGES), ratio, side="right")
            for c in np.unique(codec[known]).tolist():
                name = codec_name(int(c))
                sel = codec[known] == c
                h = self.ratio_hist.setdefault(name, [0] * (len(RATIO_EDGES) + 1))
                for b, n in zip(*np.unique(rbins[sel], return_counts=True), strict=True):
                    h[int(b)] += int(n)
                self.stored[name] += int(size[known][sel].sum())
                self.payload[name] += int(kv[known][sel].sum())
        # producers (v2 batches that carry a producer id)
        has = (magic >= 2) & (pid >= 0) & data
        if has.any():
            p_ids, inv = np.unique(pid[has], return_inverse=True)
            nb = np.bincount(inv)
            nr = np.bincount(inv, weights=np.maximum(count[has], 0))
            ep = np.zeros(len(p_ids), np.int64)
            np.maximum.at(ep, inv, epoch[has])
            tx = np.zeros(len(p_ids), bool)
            np.logical_or.at(tx, inv, txnl[has])
            hts = np.where(timed[has], max_ts[has], np.iinfo(np.int64).min)
            last_ts = np.full(len(p_ids), np.iinfo(np.int64).min)
            np.maximum.at(last_ts, inv, hts)
            lts = np.where(timed[has], max_ts[has], np.iinfo(np.int64).max)
            first_ts = np.full(len(p_ids), np.iinfo(np.int64).max)
            np.minimum.at(first_ts, inv, lts)
            for k, p in enumerate(p_ids.tolist()):
                e = self.producers.get(p)
                if e is None:
                    if len(self.producers) >= MAX_PRODUCERS:
                        self.producers_dropped += 1
                        continue
                    e = self.producers[p] = [0, 0, -1, False, None, None, set()]
                e[0] += int(nb[k])
                e[1] += int(nr[k])
                e[2] = max(e[2], int(ep[k]))
                e[3] = e[3] or bool(tx[k])
                if first_ts[k] != np.iinfo(np.int64).max:
                    e[4] = int(first_ts[k]) if e[4] is None else min(e[4], int(first_ts[k]))
                    e[5] = int(last_ts[k]) if e[5] is None else max(e[5], int(last_ts[k]))
                if len(e[6]) < MAX_PARTITIONS_A_PRODUCER:
                    e[6].add(part.directory)
        # transactions: a transactional data batch opens its producer's transaction, the
        # producer's marker (COMMIT / ABORT, from the reader's control rows) closes it
        for k in np.flatnonzero(txnl).tolist():
            p = int(pid[k])
            if control[k]:
                what = tap.markers.get(int(pos[k]), (p, "UNKNOWN"))[1]
                self.markers[what] += 1
                opened = part.open_txns.pop(p, None)
                if what in ("COMMIT", "ABORT"):
                    self.txn["committed" if what == "COMMIT" else "aborted"] += 1
                    if opened is None:
                        self.txn["markers_without_data"] += 1
            elif p not in part.open_txns:
                part.open_txns[p] = [int(base[k]), path, int(pos[k])]

    def compare_copies(self) -> None:
        """replicas=separate: batches of two copies of a partition at the same base offset
        that differ (last offset or CRC: different data at the same offsets, as after an
        unclean leader election) are gaps of both copies, "replicas disagree"."""
        for held in self.copies.values():
            dirs = list(held)
            arrays = {d: np.concatenate(held[d][0]) for d in dirs}
            ref = dirs[0]
            a = arrays[ref]
            for other in dirs[1:]:
                b = arrays[other]
                _, ia, ib = np.intersect1d(a[:, 0], b[:, 0], return_indices=True)
                bad = (a[ia, 1] != b[ib, 1]) | (a[ia, 2] != b[ib, 2])
                for i, j in zip(ia[bad].tolist(), ib[bad].tolist(), strict=True):
                    self.disagreements += 1
                    for mine, theirs, row, orow in (
                        (ref, other, a[i], b[j]),
                        (other, ref, b[j], a[i]),
                    ):
                        e = ReadEvent(
                            "replicas disagree",
                            f"the batch at offsets {row[0]}..{row[1]} (CRC {row[2]:08x}) differs "
                            f"from {theirs}'s at offsets {orow[0]}..{orow[1]} (CRC {orow[2]:08x})",
                            held[mine][1][int(row[4])],
                            int(row[3]),
                            int(row[0]),
                        )
                        self.add_gap(self.partitions[mine], e, int(row[0]), int(row[1]))

    def _gaps_of(
        self, part: Partition, path: str, headers: list[BatchHeader], events: list[ReadEvent]
    ) -> None:
        """The reader's events of a file that are gaps or losses, with their offsets."""
        for e in events:
            if e.kind not in GAP_KINDS:
                continue
            first = last = None
            if e.position is not None and headers:
                before = [h.last_offset for h in headers if h.position < e.position]
                after = [
                    h.base_offset if h.magic >= 2 else h.last_offset
                    for h in headers
                    if h.position > e.position
                ]
                first = before[-1] + 1 if before else None
                last = after[0] - 1 if after else None
            if e.kind == "malformed" and e.base_offset is not None and first is None:
                first = e.base_offset
            self.add_gap(part, e, first, last)

    def add_gap(self, part: Partition, e: ReadEvent, first: int | None, last: int | None) -> None:
        """List a gap (capped at MAX_GAPS; the rest are counted)."""
        if len(self.gaps) >= MAX_GAPS:
            self.gaps_dropped += 1
            return
        self.gaps.append(
            {
                "kind": e.kind,
                "title": GAP_TITLES.get(e.kind, e.kind),
                "topic": part.topic,
                "partition": part.partition,
                "directory": part.directory,
                "path": e.path,
                "position": e.position,
                "bytes": e.bytes,
                "first_offset": first,
                "last_offset": last,
                "offsets": (last - first + 1) if first is not None and last is not None else None,
                "reason": e.reason,
            }
        )


# -------------------------------------------------------------------------- the pass


@dataclass
class Gathered:
    """What :func:`gather` found: the report's data (JSON-ready) and verify's exit status."""

    data: dict[str, Any]
    exit_code: int


def gather(
    paths: list[str],
    options: list[str],
    strict: bool = False,
    quiet: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> Gathered:
    """Read everything under ``paths`` once, as ``kafkalog verify`` does, and fold it into the
    report's data. ``options`` are ``-o KEY=VALUE`` items (verify's options)."""
    from ...layout.discovery import parent_directory, segment_bases
    from ..common import CommandError
    from ..progress import Progress, wanted
    from ..verify import (
        FIXED_OPTIONS,
        missing_lines,
        plan_verify,
        read_everything,
        verify_segment,
    )
    from ..verify_log import (
        ROW_COLUMNS,
        PartitionState,
        RowFacts,
        SegmentReport,
        data_end,
        with_next_bases,
    )

    started = time.monotonic()
    for item in options:
        key = item.partition("=")[0].strip()
        if key.lower() in FIXED_OPTIONS:
            raise CommandError(f"report: option {key!r} is fixed by the command")
    plan = plan_verify(
        "report", options, paths, "the report shows every copy, as verify checks every copy"
    )
    extra, selection, found, groups = plan.extra, plan.selection, plan.found, plan.groups
    total_bytes = plan.total_bytes
    progress = Progress("report", total_bytes, wanted(quiet))
    g = Gatherer(topic_of={s.path: (s.topic, s.partition) for s in found})
    keys = Counter((segs[0].topic, segs[0].partition) for segs in groups.values())
    g.replicated = {k for k, n in keys.items() if n > 1 and k[0] is not None}
    problems: list[str] = list(plan.skipped)
    totals = SegmentReport("total")
    totals.warnings += problems
    stats = ReadStats()
    facts: dict[str, RowFacts] = {}
    try:
        stopped = read_everything(
            list(paths),
            extra,
            stats,
            facts,
            progress,
            total_bytes,
            (*ROW_COLUMNS, *TAP_COLUMNS),
            g.tap,
        )
        by_path: dict[str, list[ReadEvent]] = {}
        for e in stats.events:
            by_path.setdefault(e.path or "", []).append(e)
        if stopped is not None:
            where = getattr(stopped, "path", None) or "report"
            totals.error(where, f"the read stopped: {stopped}")
            problems.append(totals.errors[-1])
        done = 0
        for directory, segs in groups.items():
            topic, number = segs[0].topic, segs[0].partition
            part = g.partitions[directory] = Partition(topic, number, directory)
            for line in missing_lines(directory, stats):
                totals.errors.append(line)
                problems.append(line)
                part.errors += 1
            for e in stats.events_of("missing offsets"):
                if e.path is not None and parent_directory(e.path) == directory:
                    g.add_gap(
                        part,
                        e,
                        e.base_offset,
                        e.last_offset if e.last_offset is not None else e.base_offset,
                    )
            state = PartitionState()
            for s, next_base, is_last in with_next_bases(
                segs, segment_bases(directory, selection.store)
            ):
                events = by_path.get(s.path, [])
                # the gaps: the reader's events verify counts as losses (not a data end)
                lost = [e for e in events if not data_end(s.path, e, is_last)]
                rows = facts.get(s.path, RowFacts())
                seen: list[bool] = []

                def walked(
                    hs: list[BatchHeader], p=part, s=s, ev=lost, rows=rows, seen=seen
                ) -> None:
                    seen.append(True)
                    first = rows.first[1] if rows.first is not None else None
                    g.headers(p, s.path, hs, ev, first)

                report = verify_segment(
                    s.path,
                    s.base_offset,
                    next_base,
                    is_last,
                    state,
                    rows,
                    events,
                    progress,
                    (total_bytes + done) // 2,
                    selection.fail_on_data_loss,
                    on_headers=walked,
                    on_source=g.source,
                )
                if not seen:  # not walked (a file that cannot be opened)
                    g.taps.pop(s.path, None)
                    g._gaps_of(part, s.path, [], lost)
                facts.pop(s.path, None)
                done += s.size
                problems.extend(report.errors + report.warnings)
                part.segments += 1
                part.bytes += report.size
                part.batches += report.batches
                part.records += report.records
                part.control_records += report.control_records
                part.errors += len(report.errors)
                part.warnings += len(report.warnings)
                totals.batches += report.batches
                totals.records += report.records
                totals.control_records += report.control_records
                totals.size += report.size
                totals.errors += report.errors
                totals.warnings += report.warnings
                if len(g.segments) < MAX_SEGMENTS_LISTED:
                    g.segments.append(
                        {
                            "path": s.path,
                            "directory": directory,
                            "base_offset": s.base_offset,
                            "bytes": report.size,
                            "batches": report.batches,
                            "records": report.records,
                            "control_records": report.control_records,
                            "errors": len(report.errors),
                            "warnings": len(report.warnings),
                        }
                    )
                if on_progress is not None:
                    on_progress(s.path)
            for p, (offset, path, position) in part.open_txns.items():
                g.txn["open"] += 1
                if len(g.open_listed) < MAX_OPEN_LISTED:
                    g.open_listed.append(
                        {
                            "topic": topic,
                            "partition": number,
                            "producer_id": p,
                            "first_offset": offset,
                            "path": path,
                            "position": position,
                        }
                    )
    finally:
        progress.close()
    g.compare_copies()
    if stopped is not None:
        g.gaps.append(
            {
                "kind": "stopped",
                "title": GAP_TITLES["stopped"],
                "topic": None,
                "partition": None,
                "directory": None,
                "path": getattr(stopped, "path", None),
                "position": None,
                "bytes": 0,
                "first_offset": None,
                "last_offset": None,
                "offsets": None,
                "reason": str(stopped),
            }
        )
    bad = bool(totals.errors) or (strict and bool(totals.warnings))
    data = assemble(g, found, groups, stats, totals, problems, list(paths), extra)
    data["verify"]["exit_code"] = 1 if bad else 0
    data["timing"] = {"pass_seconds": round(time.monotonic() - started, 3)}
    from .internal import internal_topics

    internal_topics(data, groups, extra)
    data["timing"]["total_seconds"] = round(time.monotonic() - started, 3)
    return Gathered(data, 1 if bad else 0)


def assemble(
    g: Gatherer,
    found: list[Any],
    groups: dict[str, list[Any]],
    stats: ReadStats,
    totals: Any,
    problems: list[str],
    paths: list[str],
    options: dict[str, str],
) -> dict[str, Any]:
    """The report's data from the aggregates: every number the page shows."""
    from ..main import version
    from ..verify import internal_line

    parts = list(g.partitions.values())
    labels = {p.directory: label_of(p.topic, p.partition, p.directory, g.replicated) for p in parts}
    for gap in g.gaps:
        gap["label"] = labels.get(gap["directory"], gap["directory"] or "–")
    topics = sorted({p.topic or "(no topic)" for p in parts})
    stamps = [t for p in parts for t in timestamps(p) if t is not None]
    notes: list[str] = []
    series = g.series.finish()
    if g.series.coarsened_in_pass or g.series.capped:
        notes.append(
            f"records and bytes over time are aggregated per {series['unit']}: the archive "
            f"has too many finer buckets to draw (at most {MAX_POINTS} points a topic)"
        )
    if g.gaps_dropped:
        notes.append(f"{g.gaps_dropped} more gaps are counted, not listed (at most {MAX_GAPS})")
    if stats.events_dropped:
        notes.append(
            f"the reader kept its first {len(stats.events)} events; {stats.events_dropped} more "
            "are counted in its ReadStats only"
        )
    if g.producers_dropped:
        notes.append(
            f"{g.producers_dropped} producer ids beyond the first {MAX_PRODUCERS} are not followed"
        )
    if len(parts) > MAX_LANES:
        notes.append(
            f"the timelines draw {MAX_LANES} of the {len(parts)} partitions (those with gaps "
            "first); the tables and the JSON hold them all"
        )
    if len(found) > MAX_SEGMENTS_LISTED:
        notes.append(f"{len(found) - MAX_SEGMENTS_LISTED} segments are counted, not listed")
    producers = sorted(g.producers.items(), key=lambda kv: (-kv[1][1], kv[0]))
    ratio = {
        c: {
            "batches": sum(g.ratio_hist.get(c, [])),
            "stored_bytes": g.stored[c],
            "key_value_bytes": g.payload[c],
            "ratio": round(g.payload[c] / g.stored[c], 4) if g.stored[c] else None,
        }
        for c in sorted(g.stored)
    }
    stat_fields = {k: v for k, v in vars(stats).items() if not k.startswith("_") and k != "events"}
    system = "redpanda" if g.redpanda_segments or stats.redpanda_internal_partitions else "kafka"
    redpanda = None
    if system == "redpanda":
        redpanda = {
            "internal_partitions_skipped": stats.redpanda_internal_partitions,
            "batch_types": dict(sorted(g.redpanda_types.items(), key=lambda kv: (-kv[1], kv[0]))),
            "batches_without_kafka_offsets": g.redpanda_left_out,
            "mode": "raw" if g.redpanda_raw else "kafka",
        }
        if stats.redpanda_internal_partitions:
            notes.append(internal_line(stats.redpanda_internal_partitions))
    return {
        "format": "kafkalog-report",
        "format_version": 1,
        "kafkalog_version": version(),
        "generated_at_ms": int(time.time() * 1000),
        "paths": paths,
        "options": {k: v for k, v in options.items() if not k.lower().startswith("fs.")},
        # which system wrote the archive (a read never mixes them): Redpanda's segments are
        # read as their Kafka view, so every other field means the same for both
        "system": system,
        "overview": {
            "system": system,
            "topics": len(topics),
            "topic_names": topics,
            "internal_topics": sorted(t for t in topics if is_internal(t)),
            "partitions": len(parts),
            "segments": len(found),
            "bytes": totals.size,
            "batches": totals.batches,
            "records": totals.records,
            "control_records": totals.control_records,
            "first_timestamp_ms": min(stamps) if stamps else None,
            "last_timestamp_ms": max(stamps) if stamps else None,
            "magics": {str(k): v for k, v in sorted(g.magics.items())},
            "codecs": {k: v for k, v in sorted(g.codecs.items()) if v},
            "missing_offsets": stats.missing_offsets,
            "missing_ranges": stats.missing_ranges,
            "malformed_batches": stats.malformed_batches,
            "malformed_bytes": stats.malformed_bytes,
            "truncated_tails": stats.truncated_tails,
            "zero_tails": stats.zero_tails,
            "corrupt_files": stats.corrupt_files,
            "missing_files": stats.missing_files,
            "replica_disagreements": g.disagreements,
            "gaps": len(g.gaps) + g.gaps_dropped,
            "errors": len(totals.errors),
            "warnings": len(totals.warnings),
            # Redpanda's own facts (None for Kafka): its internal namespaces' partitions found
            # and not read, the batches by Redpanda type, those left out of the Kafka view
            "redpanda": redpanda,
        },
        "verify": {
            "segments": len(found),
            "partition_directories": len(groups),
            "batches": totals.batches,
            "records": totals.records,
            "control_records": totals.control_records,
            "bytes": totals.size,
            "errors": len(totals.errors),
            "warnings": len(totals.warnings),
            "problems": problems,
        },
        "read_stats": stat_fields,
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "directory": p.directory,
                "label": labels[p.directory],
                "internal": is_internal(p.topic),
                "segments": p.segments,
                "bytes": p.bytes,
                "batches": p.batches,
                "records": p.records,
                "control_records": p.control_records,
                "first_offset": p.first_offset,
                "last_offset": p.last_offset,
                # the log end at the moment of the archive: after its last batch, or after
                # the last offset the reader's evidence (checkpoints, indexes, a cut batch's
                # header) says the log reached when that is later (a cut last segment)
                "log_end_offset": log_end(p, g.gaps),
                "log_end_from": "missing offsets"
                if (log_end(p, g.gaps) or 0)
                > (p.last_offset if p.last_offset is not None else -1) + 1
                else "last batch",
                "first_timestamp_ms": timestamps(p)[0],
                "last_timestamp_ms": timestamps(p)[1],
                "timestamps_from": "records"
                if p.record_first_timestamp is not None
                else "batch headers"
                if p.first_timestamp is not None
                else None,
                "errors": p.errors,
                "warnings": p.warnings,
                "runs": [
                    {"first_offset": a, "last_offset": b, "bytes": c, "segments": d}
                    for a, b, c, d in p.runs
                ],
            }
            for p in parts
        ],
        "segments": g.segments,
        "gaps": g.gaps,
        "series": series,
        "batch_sizes": {
            "edges": list(SIZE_EDGES),
            "counts": g.size_hist,
            "note": "bin i counts batches of size < edges[i] and >= edges[i-1]; the last bin is >= the last edge",
        },
        "compression": {
            "edges": list(RATIO_EDGES),
            "counts": g.ratio_hist,
            "codecs": ratio,
            "definition": "key + value bytes of a batch's records / the batch's bytes in the file",
        },
        "producers": {
            "count": len(g.producers) + g.producers_dropped,
            "transactional": sum(1 for e in g.producers.values() if e[3]),
            "listed": [
                {
                    "producer_id": p,
                    "batches": e[0],
                    "records": e[1],
                    "epoch": e[2],
                    "transactional": e[3],
                    "first_timestamp_ms": e[4],
                    "last_timestamp_ms": e[5],
                    "partitions": len(e[6]),
                }
                for p, e in producers[:200]
            ],
        },
        "transactions": {
            "committed": g.txn["committed"],
            "aborted": g.txn["aborted"],
            "open": g.txn["open"],
            "markers_without_data": g.txn["markers_without_data"],
            "markers": dict(g.markers),
            "open_listed": g.open_listed,
        },
        "notes": notes,
    }


def timestamps(p: Partition) -> tuple[int | None, int | None]:
    """A partition's first and last timestamp: its data records' (as a read returns them), or
    its batch headers' where no record has a timestamp (see :class:`Partition`)."""
    if p.record_first_timestamp is not None:
        return p.record_first_timestamp, p.record_last_timestamp
    return p.first_timestamp, p.last_timestamp


def log_end(p: Partition, gaps: list[dict[str, Any]]) -> int | None:
    """The partition's log end offset at the moment of the archive (see :func:`assemble`)."""
    ends = [p.last_offset] if p.last_offset is not None else []
    ends += [
        g["last_offset"]
        for g in gaps
        if g["kind"] == "missing offsets"
        and g["directory"] == p.directory
        and g["last_offset"] is not None
    ]
    return max(ends) + 1 if ends else None


def label_of(topic: str | None, partition: int | None, directory: str, replicated: set[Any]) -> str:
    """A partition's name on the page: ``topic-partition``, and the directory holding it when
    several copies of it are read (``replicas=separate``)."""
    if topic is None:
        return directory
    name = f"{topic}-{partition}"
    if (topic, partition) in replicated:
        parent = directory.rstrip("/").rsplit("/", 2)
        return f"{name} @ {parent[-2] if len(parent) > 1 else directory}"
    return name


def to_json(data: dict[str, Any]) -> str:
    """The report's data as JSON text (sets as sorted lists; NaN never appears)."""

    def default(o: Any) -> Any:
        if isinstance(o, set):
            return sorted(o)
        if isinstance(o, (np.integer,)):
            return int(o)
        if isinstance(o, (np.floating,)):
            return None if math.isnan(o) else float(o)
        raise TypeError(type(o).__name__)

    return json.dumps(data, indent=1, default=default, allow_nan=False)
