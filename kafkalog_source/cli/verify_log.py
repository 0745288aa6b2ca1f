"""``kafkalog verify``, the log checks of one segment: the batch header walk and its tail, batch
and record offsets, and the reader's decode (CRCs and structure). The checks are specified in
:mod:`.verify`; the index checks are in :mod:`.verify_indexes`."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from ..errors import CorruptDataError, StorageError
from ..format.batch import BatchHeader
from ..framing.headers import Tail
from ..framing.walk import walk_classified
from ..transport.source import ByteSource
from . import segments as seg
from .progress import Progress

LISTED = 20  # problems of one kind listed per file; the rest are counted
_LISTED_MALFORMED = 100  # malformed batches listed per file (the reader's events)


@dataclass
class SegmentReport:
    """What was found in one segment."""

    path: str
    size: int = 0
    batches: int = 0
    records: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    next_offset: int | None = None  # the offset after the last batch (the base when none)

    def error(self, where: str, message: str) -> None:
        """Record an error about file ``where``."""
        self.errors.append(f"{where}: error: {message}")

    def warning(self, where: str, message: str) -> None:
        """Record a warning about file ``where``."""
        self.warnings.append(f"{where}: warning: {message}")


@dataclass
class PartitionState:
    """What carries over from one segment to the next in a partition directory."""

    last_offset: int | None = None  # last offset of the previous batch
    last_record: int | None = None  # offset of the previous record


def walk_segment(
    src: ByteSource,
    path: str,
    size: int,
    is_last: bool,
    report: SegmentReport,
    progress: Progress,
    done: int,
    max_batch_bytes: int | None = None,
) -> tuple[list[BatchHeader], int]:
    """Every batch header (framing layer), and the tail; returns the headers and where they end.
    A tail that cannot be an append in progress (too big, not a batch, not the last segment)
    is unreadable framing, an error."""
    headers: list[BatchHeader] = []
    end = 0
    try:
        for item in walk_classified(src, path, 0, size, is_last, max_batch_bytes):
            if isinstance(item, Tail):
                _tail(path, item, is_last, report)
                break
            headers.append(item)
            end = item.end
            progress.update(done + end // 2)
    except CorruptDataError as exc:
        at = exc.position if exc.position is not None else end
        report.error(
            path,
            f"byte {at}: unreadable batch framing ({exc.reason}); the last {size - at} bytes "
            "of the file cannot be walked",
        )
    return headers, end


def _tail(path: str, tail: Tail, is_last: bool, report: SegmentReport) -> None:
    if tail.kind == "clean":
        return
    what = {
        "truncated": "a truncated final batch",
        "zeros": "a zero-filled tail",
        "short": "stray bytes too short for a batch header",
    }[tail.kind]
    if is_last:
        report.warning(
            path,
            f"byte {tail.position}: {what} ({tail.skipped_bytes} bytes) in the last segment "
            "(an active segment copied mid-write, preallocated, or left by a crash)",
        )
    else:
        report.error(
            path,
            f"byte {tail.position}: {what} ({tail.skipped_bytes} bytes) in a segment that is not "
            "the last of its partition",
        )


def check_batch_offsets(
    path: str,
    headers: list[BatchHeader],
    base: int | None,
    next_base: int | None,
    state: PartitionState,
    report: SegmentReport,
) -> set[int]:
    """Batch offsets against each other, the file name and the next segment; flagged positions."""
    flagged: set[int] = set()
    prev = state.last_offset
    messages: list[str] = []
    for h in headers:
        first = h.base_offset if h.magic >= 2 else h.last_offset
        if h.magic >= 2 and h.last_offset_delta < 0:
            messages.append(f"byte {h.position}: negative lastOffsetDelta {h.last_offset_delta}")
            flagged.add(h.position)
        if prev is not None and first <= prev:
            what = "batch" if h.magic >= 2 else "message"
            shown = (
                f"offsets {h.base_offset}..{h.last_offset}"
                if h.magic >= 2
                else f"offset {h.last_offset}"
            )
            messages.append(
                f"byte {h.position}: {what} with {shown} does not follow the previous last "
                f"offset {prev} (offsets must increase)"
            )
            flagged.add(h.position)
        prev = h.last_offset
    for message in messages[:LISTED]:
        report.error(path, message)
    if len(messages) > LISTED:
        report.error(path, f"{len(messages) - LISTED} more batches out of offset order")
    if headers and base is not None:
        h = headers[0]
        if h.magic >= 2 and h.base_offset < base:
            report.error(
                path,
                f"byte 0: first offset {h.base_offset} is below the segment's base offset {base}",
            )
    if headers and next_base is not None and headers[-1].last_offset >= next_base:
        report.error(
            path,
            f"byte {headers[-1].position}: last offset {headers[-1].last_offset} reaches the next "
            f"segment, whose base offset is {next_base}",
        )
    return flagged


def check_batch_gaps(
    path: str, headers: list[BatchHeader], flagged: set[int], report: SegmentReport
) -> None:
    """failOnDataLoss: no offsets left out between two consecutive batches of the segment (as the
    reader checks: a v2 batch's base offset against the previous batch's last offset)."""
    messages = []
    for prev, h in pairwise(headers):
        if h.magic >= 2 and h.position not in flagged and h.base_offset > prev.last_offset + 1:
            messages.append(
                f"byte {h.position}: offsets {prev.last_offset + 1}..{h.base_offset - 1} are "
                f"missing between batches (the previous batch ends at {prev.last_offset}); "
                "failOnDataLoss"
            )
    for message in messages[:LISTED]:
        report.error(path, message)
    if len(messages) > LISTED:
        report.error(path, f"{len(messages) - LISTED} more gaps between batches")


@dataclass
class RowFacts:
    """What verify keeps of the reader's rows for a segment (nothing per row)."""

    count: int = 0
    aborts: set[int] = field(default_factory=set)  # offsets of ABORT markers
    # per batch position: (first record offset, max record timestamp in ms, -1 for none)
    per_batch: dict[int, tuple[int, int]] = field(default_factory=dict)
    # records whose offset does not exceed the previous record's: (batch position, offset, prev)
    out_of_order: list[tuple[int, int, int]] = field(default_factory=list)
    last_offset: int | None = None


def read_rows(
    path: str,
    headers: list[BatchHeader],
    state: PartitionState,
    options: Any,
    report: SegmentReport,
    progress: Progress,
    done: int,
) -> RowFacts:
    """Decode the segment with the data source's reader, range by range; its skipped batches
    become errors. Record offsets are checked on the way (they must increase)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..stats import ReadStats

    stats = ReadStats()
    rows = RowFacts()
    prev = state.last_record if state.last_record is not None else np.iinfo(np.int64).min
    columns = ("offset", "timestamp", "batchPosition", "control")
    half = headers[-1].end // 2 if headers else 0
    try:
        for chunk in seg.chunks(headers):
            start, end = chunk[0].position, chunk[-1].end
            for rb in seg.read_rows(path, start, end, columns, options, stats):
                n = rb.num_rows
                if not n:
                    continue
                offsets = rb.column(0).to_numpy()
                stamps = pc.fill_null(rb.column(1).cast(pa.int64()), -1000).to_numpy() // 1000
                positions = rb.column(2).to_numpy()
                before = np.empty(n, np.int64)
                before[0] = prev
                before[1:] = offsets[:-1]
                for i in np.flatnonzero(offsets <= before)[:1000].tolist():
                    rows.out_of_order.append((int(positions[i]), int(offsets[i]), int(before[i])))
                prev = int(offsets[-1])
                starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
                maxima = np.maximum.reduceat(stamps, starts)
                for p, o, m in zip(
                    positions[starts].tolist(),
                    offsets[starts].tolist(),
                    maxima.tolist(),
                    strict=True,
                ):
                    seen = rows.per_batch.get(p)
                    rows.per_batch[p] = (o, m) if seen is None else (seen[0], max(seen[1], m))
                control = rb.column(3)
                if control.null_count < n:
                    types = pc.struct_field(control, [0]).to_pylist()
                    rows.aborts.update(
                        o for o, t in zip(offsets.tolist(), types, strict=True) if t == "ABORT"
                    )
                rows.count += n
            progress.update(done + half + end // 2)
    except CorruptDataError as exc:
        report.error(path, f"the reader stopped: {exc}")
    except OSError as e:
        report.error(
            path, f"cannot read: {e.reason if isinstance(e, StorageError) else e.strerror or e}"
        )
    if rows.count:
        rows.last_offset = prev
    listed = stats.events_of("malformed")[:_LISTED_MALFORMED]
    for event in listed:
        report.error(path, event.detail)  # the reader's message, less the path
    shown = len(listed)
    if stats.malformed_batches > shown:
        report.error(path, f"{stats.malformed_batches - shown} more malformed batches")
    return rows


def check_record_offsets(
    path: str,
    rows: RowFacts,
    headers: list[BatchHeader],
    base: int | None,
    flagged: set[int],
    state: PartitionState,
    report: SegmentReport,
) -> None:
    """Record offsets increase (catches legacy wrappers whose first inner offset goes back)."""
    listed = 0
    for pos, offset, before in rows.out_of_order:
        if pos in flagged:
            continue
        flagged.add(pos)
        listed += 1
        if listed <= LISTED:
            report.error(
                path,
                f"byte {pos}: record offset {offset} does not follow the previous record's "
                f"offset {before} (offsets must increase)",
            )
    if listed > LISTED:
        report.error(path, f"{listed - LISTED} more records out of offset order")
    if rows.last_offset is not None:
        state.last_record = rows.last_offset
    if headers and base is not None and headers[0].magic < 2:
        first = rows.per_batch.get(headers[0].position, (None, 0))[0]
        if first is not None and first < base:
            report.error(
                path, f"byte 0: first offset {first} is below the segment's base offset {base}"
            )
