"""``kafkalog verify``, the index checks of one segment: ``.index``, ``.timeindex`` and
``.txnindex`` against the log (specified in :mod:`.verify`)."""

from __future__ import annotations

from bisect import bisect_left
from itertools import pairwise

import numpy as np

from ..format.batch import BatchHeader
from ..format.indexes import (
    OFFSET_INDEX_DTYPE,
    TIME_INDEX_DTYPE,
    TXN_INDEX_DTYPE,
    decode_entries,
    txn_entry_version,
)
from ..layout.indexes import read_index_bytes
from .verify_log import LISTED, RowFacts, SegmentReport


def _active_entries(
    path: str, data: bytes, dtype: np.dtype, is_last: bool, report: SegmentReport
) -> int:
    """How many entries of an index are written: Kafka stops at the first zero slot after entry
    0 (an all-zero entry 0 means none). Checks the length and that the rest is all zero."""
    if len(data) % dtype.itemsize:
        report.error(
            path,
            f"length {len(data)} is not a multiple of {dtype.itemsize} (the last "
            f"{len(data) % dtype.itemsize} "
            "bytes are not an entry)",
        )
    width = dtype.itemsize
    n = len(data) // width
    rels = decode_entries(data, dtype)["relative_offset"]
    cut = n
    for i in range(n):
        if (i > 0 and rels[i] == 0) or (i == 0 and not any(data[:width])):
            cut = i
            break
    rest = data[cut * width : n * width]
    if rest and any(rest):
        nonzero = next(j for j, b in enumerate(rest) if b) // width + cut
        report.error(
            path,
            f"entry {nonzero}: non-zero bytes after the zero-filled slots that start at entry {cut}",
        )
    elif rest and not is_last:
        report.warning(
            path,
            f"{n - cut} zero-filled slots at the end (not trimmed: the segment was not closed "
            "cleanly)",
        )
    return cut


def _written_entries(
    path: str, dtype: np.dtype, is_last: bool, report: SegmentReport
) -> np.ndarray | None:
    """The written entries of an index file (see :func:`_active_entries`), or None without one."""
    data = read_index_bytes(path)
    if data is None:
        return None
    cut = _active_entries(path, data, dtype, is_last, report)
    return decode_entries(data, dtype)[:cut]


def check_offset_index(
    path: str,
    base: int,
    headers: list[BatchHeader],
    walk_end: int,
    is_last: bool,
    report: SegmentReport,
    skipped: frozenset[int] = frozenset(),
) -> None:
    """The ``.index`` against the batches (``skipped``: positions of batches the reader
    skipped as malformed, reported already: entries pointing there are not checked)."""
    entries = _written_entries(path, OFFSET_INDEX_DTYPE, is_last, report)
    if entries is None:
        return
    cut = len(entries)
    by_pos = {h.position: k for k, h in enumerate(headers)}
    prev: tuple[int, int] | None = None
    listed = 0
    for i in range(cut):
        if listed >= LISTED:
            report.error(path, "more index problems (not listed)")
            break
        rel, pos = int(entries["relative_offset"][i]), int(entries["position"][i])
        offset = base + rel
        where = f"entry {i} (offset {offset}, position {pos})"
        problem = None
        if rel < 0 or pos < 0:
            problem = f"{where}: negative relative offset or position"
        elif prev is not None and (rel <= prev[0] or pos <= prev[1]):
            problem = f"{where}: not after the previous entry (offsets and positions must increase)"
        elif pos in skipped:
            pass
        elif pos not in by_pos:
            if pos >= walk_end:
                problem = f"{where}: points past the last complete batch (byte {walk_end})"
            else:
                problem = f"{where}: position {pos} is not the start of a batch"
        else:
            k = by_pos[pos]
            nxt = int(entries["position"][i + 1]) if i + 1 < cut else None
            ok = False
            for h in headers[k:]:
                if nxt is not None and h.position >= nxt:
                    break
                if h.last_offset == offset:
                    ok = True
                    break
                if h.last_offset > offset:
                    break
            if not ok:
                problem = (
                    f"{where}: no batch from byte {pos} up to the next entry ends at offset "
                    f"{offset} (the batch at {pos} holds offsets up to {headers[k].last_offset})"
                )
        if problem:
            report.error(path, problem)
            listed += 1
        prev = (rel, pos)


def _batch_holding(
    offset: int, headers: list[BatchHeader], lasts: list[int], rows: RowFacts
) -> BatchHeader | None:
    """The batch whose offsets include ``offset`` (headers in offset order)."""
    k = bisect_left(lasts, offset)
    if k == len(headers):
        return None
    h = headers[k]
    if h.magic >= 2:
        first = h.base_offset
    elif h.position in rows.per_batch:
        first = rows.per_batch[h.position][0]
    else:
        first = h.last_offset if h.codec == 0 else (lasts[k - 1] + 1 if k else -(2**63))
    return h if first <= offset <= h.last_offset else None


def check_time_index(
    path: str,
    base: int,
    headers: list[BatchHeader],
    rows: RowFacts,
    is_last: bool,
    report: SegmentReport,
    skipped: tuple[tuple[int, int], ...] = (),
) -> None:
    """The ``.timeindex`` against the batches (``skipped``: offset spans ``(after, before)``,
    exclusive, around batches the reader skipped as malformed: entries there are not
    checked)."""
    entries = _written_entries(path, TIME_INDEX_DTYPE, is_last, report)
    if entries is None:
        return
    cut = len(entries)
    lasts = [h.last_offset for h in headers]
    ordered = all(a < b for a, b in pairwise(lasts))
    prev: tuple[int, int] | None = None
    listed = 0
    for i in range(cut):
        if listed >= LISTED:
            report.error(path, "more time index problems (not listed)")
            break
        ts, offset = int(entries["timestamp"][i]), base + int(entries["relative_offset"][i])
        where = f"entry {i} (timestamp {ts}, offset {offset})"
        problem = None
        if prev is not None and ts <= prev[0]:
            problem = f"{where}: timestamp not above the previous entry's ({prev[0]})"
        elif prev is not None and offset < prev[1]:
            problem = f"{where}: offset below the previous entry's ({prev[1]})"
        elif any(a < offset < b for a, b in skipped):
            pass
        elif ordered:
            h = _batch_holding(offset, headers, lasts, rows)
            if h is None:
                problem = f"{where}: no batch in the log holds offset {offset}"
            else:
                max_ts = rows.per_batch.get(h.position, (0, h.max_timestamp))[1]
                if max_ts != ts:
                    problem = (
                        f"{where}: the batch holding offset {offset} (byte {h.position}) has "
                        f"max timestamp {max_ts}"
                    )
        if problem:
            report.error(path, problem)
            listed += 1
        prev = (ts, offset)


def check_txn_index(path: str, base: int, rows: RowFacts, report: SegmentReport) -> None:
    data = read_index_bytes(path)
    if data is None:
        return
    if len(data) % 34:
        report.error(path, f"length {len(data)} is not a multiple of 34")
    entries = decode_entries(data, TXN_INDEX_DTYPE)
    versions = txn_entry_version(entries)
    prev_last: int | None = None
    for i in range(len(entries)):
        version = int(versions[i])
        first, last = int(entries["first_offset"][i]), int(entries["last_offset"][i])
        where = f"entry {i} (producerId {int(entries['producer_id'][i])}, offsets {first}..{last})"
        if version != 0:
            report.error(path, f"{where}: unsupported version {version}")
        elif last < base:
            report.error(path, f"{where}: marker offset below the segment's base offset {base}")
        elif first > last:
            report.error(path, f"{where}: first offset above the ABORT marker's offset")
        elif prev_last is not None and last <= prev_last:
            report.error(path, f"{where}: not after the previous entry's marker ({prev_last})")
        elif last not in rows.aborts:
            report.error(path, f"{where}: there is no ABORT marker at offset {last} in the log")
        prev_last = last
