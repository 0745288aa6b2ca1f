"""``kafkalog verify``, the log checks of one segment: what the reader found in it (its events and
its rows, :func:`collect_rows`), the batch header walk around what the reader skipped, batch and
record offsets. The checks are specified in :mod:`.verify`; the index checks are in
:mod:`.verify_indexes`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

import numpy as np

from ..format.batch import BatchHeader
from ..framing.walk import HeaderWalk
from ..layout.redpanda import is_redpanda_segment
from ..stats import ReadEvent
from ..transport.source import ByteSource
from .progress import Progress

LISTED = 20  # problems of one kind listed per file; the rest are counted
_LISTED_MALFORMED = 100  # malformed batches listed per file (the reader's events)


@dataclass
class SegmentReport:
    """What was found in one segment."""

    path: str
    size: int = 0
    batches: int = 0
    records: int = 0  # data records, as a read counts them (ReadStats.records)
    control_records: int = 0  # control records (transaction markers, KRaft records), apart
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

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
    holes: list[tuple[int, int]],
    report: SegmentReport,
    progress: Progress,
    done: int,
) -> tuple[list[BatchHeader], int]:
    """Every batch header of the segment (framing layer) outside ``holes``: the byte spans
    ``[start, end)`` the reader skipped in it (malformed batches, with the end the reader
    resumed at after a damaged length field; tails). A batch at a hole's start is the one the
    reader skipped, whose header fields (its length, its offsets) are not to be trusted: it is
    left out and the walk goes on at the hole's end, as the reader did; so does a walk that
    stops inside a hole. Returns the headers and where the last of them ends. A stop that no
    hole explains is unreadable framing the reader did not report (an error).

    Positions (``holes``, the headers', the errors') are the stored file's: a source that
    presents another layout's file as a Kafka segment (a Redpanda segment's Kafka view) is
    walked in its own positions, mapped from and back to the file's."""
    headers: list[BatchHeader] = []
    end = 0
    pos = 0
    spans = sorted(
        (int(src.view_positions(a)), int(src.view_positions(a)) + b - a) for a, b in holes
    )

    def hole_at(at: int) -> tuple[int, int] | None:
        return next(((a, b) for a, b in spans if a <= at < b), None)

    while pos < size:
        walk: HeaderWalk[BatchHeader] = HeaderWalk(src, pos, size)
        restart = None
        for h in walk:
            hole = hole_at(h.position)
            if hole is not None:
                restart = hole[1]
                break
            headers.append(h)
            end = h.end
            progress.update(done + end // 2)
        if restart is not None:
            pos = restart
            continue
        stop = walk.stop
        if stop is None or stop.position >= walk.end:
            break
        hole = hole_at(stop.position)
        if hole is None:
            at = int(src.file_positions(stop.position))
            report.error(
                path,
                f"byte {at}: unreadable batch framing; the last "
                f"{src.stored_size - at} bytes of the file cannot be walked",
            )
            break
        pos = hole[1]
    if headers and src.stored_size != size:  # another layout's file: its positions
        at = src.file_positions(np.array([h.position for h in headers], np.int64)).tolist()
        headers = [replace(h, position=p) for h, p in zip(headers, at, strict=True)]
    return headers, end


# What the reader skipped in a file: the event kinds that are spans of its bytes.
HOLE_KINDS = ("malformed", "truncated tail", "zero tail", "corrupt file")


def holes_of(events: list[ReadEvent]) -> list[tuple[int, int]]:
    """The byte spans of a file the reader did not decode, from its events."""
    return [
        (e.position, e.position + e.bytes)
        for e in events
        if e.kind in HOLE_KINDS and e.position is not None and e.bytes > 0
    ]


def data_end(path: str, e: ReadEvent, is_last: bool) -> bool:
    """Whether the reader's event ``e`` in ``path`` is where the data ends, not a loss: a zero
    fill ending a Redpanda partition's last segment (Redpanda preallocates its active segment)."""
    return (
        is_last
        and e.kind == "zero tail"
        and e.reason == "zero-filled tail"
        and is_redpanda_segment(path)
    )


def report_events(path: str, events: list[ReadEvent], is_last: bool, report: SegmentReport) -> None:
    """What the reader found in one file, as verify's lines: each malformed batch, a file it
    stopped reading, a file gone, an error; a tail (a truncated final batch, stray bytes, a zero
    fill) is a warning in the last segment of a partition and an error in any other (a rolled
    segment is never written again, so a damaged tail there means a damaged copy); a zero fill
    ends a Redpanda partition's last segment quietly (Redpanda preallocates it)."""
    malformed = [e for e in events if e.kind == "malformed"]
    for e in malformed[:_LISTED_MALFORMED]:
        report.error(path, e.detail)  # the reader's message, less the path
    if len(malformed) > _LISTED_MALFORMED:
        report.error(path, f"{len(malformed) - _LISTED_MALFORMED} more malformed batches")
    for e in events:
        if e.kind in ("corrupt file", "missing file"):
            report.error(path, e.message.split(": ", 1)[-1] if e.message else e.reason)
        elif e.kind in ("truncated tail", "zero tail"):
            what = {
                "zero-filled tail": "a zero-filled tail",
                "stray bytes": "stray bytes too short for a batch header",
            }.get(e.reason, "a truncated final batch")
            if data_end(path, e, is_last):
                continue
            if is_last:
                report.warning(
                    path,
                    f"byte {e.position}: {what} ({e.bytes} bytes) in the last segment "
                    "(an active segment copied mid-write, preallocated, or left by a crash)",
                )
            else:
                report.error(
                    path,
                    f"byte {e.position}: {what} ({e.bytes} bytes) in a segment that is not the "
                    "last of its partition",
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

    count: int = 0  # data records
    control: int = 0  # control records
    aborts: set[int] = field(default_factory=set)  # offsets of ABORT markers
    # per batch position: (first record offset, max record timestamp in ms, -1 for none)
    per_batch: dict[int, tuple[int, int]] = field(default_factory=dict)
    # records whose offset does not exceed the previous record's: (batch position, offset, prev)
    out_of_order: list[tuple[int, int, int]] = field(default_factory=list)
    first: tuple[int, int] | None = None  # (batch position, offset) of the first record
    last_offset: int | None = None

    def add(self, offsets: np.ndarray, stamps: np.ndarray, positions: np.ndarray, rb: Any) -> None:
        """Fold in rows of this segment (in file order): offsets, timestamps in ms (-1 for
        none), batch positions, and the record batch (for its control column)."""
        import pyarrow.compute as pc

        n = len(offsets)
        if not n:
            return
        if self.first is None:
            self.first = (int(positions[0]), int(offsets[0]))
        before = np.empty(n, np.int64)
        before[0] = self.last_offset if self.last_offset is not None else offsets[0] - 1
        before[1:] = offsets[:-1]
        for i in np.flatnonzero(offsets <= before)[:1000].tolist():
            self.out_of_order.append((int(positions[i]), int(offsets[i]), int(before[i])))
        self.last_offset = int(offsets[-1])
        starts = np.flatnonzero(np.r_[True, positions[1:] != positions[:-1]])
        maxima = np.maximum.reduceat(stamps, starts)
        for p, o, m in zip(
            positions[starts].tolist(), offsets[starts].tolist(), maxima.tolist(), strict=True
        ):
            seen = self.per_batch.get(p)
            self.per_batch[p] = (o, m) if seen is None else (seen[0], max(seen[1], m))
        control = rb.column("control")
        controls = n - control.null_count
        if controls:
            types = pc.struct_field(control, [0]).to_pylist()
            self.aborts.update(
                o for o, t in zip(offsets.tolist(), types, strict=True) if t == "ABORT"
            )
        self.count += n - controls
        self.control += controls


# The reader's columns verify needs.
ROW_COLUMNS = ("offset", "timestamp", "batchPosition", "control", "segmentPath")


def with_next_bases(segs: list[Any], later: list[int]) -> Iterator[tuple[Any, int | None, bool]]:
    """Each of a partition's segments (in order) with the base offset of the segment after it
    in its directory (``later``: every base offset there, :func:`segment_bases`; None when none
    follows) and whether it is the partition's last (a segment without a base offset in its name
    is last when it is the last of ``segs``)."""
    for i, s in enumerate(segs):
        if s.base_offset is not None:
            nxt = [b for b in later if b > s.base_offset]
            yield s, (min(nxt) if nxt else None), not nxt
        else:
            yield s, None, i == len(segs) - 1


def _int64s(column: Any) -> np.ndarray:
    """The values of an int64 (or timestamp) column, a view of its buffer: pyarrow's
    ``to_numpy``, ``fill_null`` with a Python scalar and ``pa.array`` import pandas (0.3 s of the
    command's start), which this command does not need."""
    return np.frombuffer(column.buffers()[1], np.int64, count=len(column), offset=column.offset * 8)


def _bools(column: Any) -> np.ndarray:
    """A boolean column without nulls as a numpy array."""
    bits = np.frombuffer(column.buffers()[1], np.uint8)
    return np.unpackbits(bits, bitorder="little")[column.offset : column.offset + len(column)] == 1


def _millis(column: Any) -> np.ndarray:
    """A timestamp column (microseconds) in milliseconds, -1 where null."""
    out = _int64s(column) // 1000
    if column.null_count:
        out[~_bools(column.is_valid())] = -1
    return out


def collect_rows(
    batches: Iterator[Any],
    facts: dict[str, RowFacts],
    tap: Callable[[str, Any, np.ndarray, np.ndarray, np.ndarray], None] | None = None,
) -> None:
    """Fold the reader's record batches (:data:`ROW_COLUMNS`) into ``facts``, per segment.
    ``tap(path, rows, offsets, stamps_ms, positions)`` sees each segment's slice of the rows too
    (``kafkalog report`` folds its own aggregates from the same read)."""
    import pyarrow.compute as pc

    for rb in batches:
        n = rb.num_rows
        if not n:
            continue
        offsets = _int64s(rb.column("offset"))
        stamps = _millis(rb.column("timestamp"))
        positions = _int64s(rb.column("batchPosition"))
        paths = rb.column("segmentPath")
        # a record batch holds one range's rows: one file, unless a runs boundary says more
        cuts = [0, n]
        if paths[0] != paths[n - 1] or pc.count_distinct(paths).as_py() > 1:
            same = _bools(pc.equal(paths.slice(1), paths.slice(0, n - 1)))
            cuts = [0, *(np.flatnonzero(~same) + 1).tolist(), n]
        for a, b in pairwise(cuts):
            path = paths[a].as_py()
            rows = rb.slice(a, b - a)
            facts.setdefault(path, RowFacts()).add(offsets[a:b], stamps[a:b], positions[a:b], rows)
            if tap is not None:
                tap(path, rows, offsets[a:b], stamps[a:b], positions[a:b])


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
    if (
        rows.first is not None
        and state.last_record is not None
        and rows.first[1] <= state.last_record
    ):
        pos, first = rows.first
        if pos not in flagged:
            report.error(
                path,
                f"byte {pos}: record offset {first} does not follow the previous record's "
                f"offset {state.last_record} (offsets must increase)",
            )
    if rows.last_offset is not None:
        state.last_record = rows.last_offset
    if headers and base is not None and headers[0].magic < 2:
        first = rows.per_batch.get(headers[0].position, (None, 0))[0]
        if first is not None and first < base:
            report.error(
                path, f"byte 0: first offset {first} is below the segment's base offset {base}"
            )
