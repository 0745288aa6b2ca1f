"""``kafkalog dump``, the index files: ``.index``, ``.timeindex``, ``.txnindex`` and producer
``.snapshot`` (the command is in :mod:`.dump`, the log printing in :mod:`.dump_log`).

Deviation from kafka-dump-log (deliberate):

* An index entry pointing where no complete batch starts is listed with log offset -1 in the
  ``Mismatches`` summary (Kafka dies with NoSuchElementException); a time index entry is matched
  against the log's batches from the start of the file, not from the offset index's position.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import pairwise

from ..errors import CorruptDataError, StorageError
from ..format.batch import V2_HEADER_SIZE, BatchHeader
from ..format.indexes import (
    OFFSET_INDEX_DTYPE,
    TIME_INDEX_DTYPE,
    TXN_INDEX_DTYPE,
    SnapshotError,
    decode_entries,
    decode_producer_snapshot,
    txn_entry_version,
)
from ..format.names import base_offset_from_name, decrement_sequence
from ..framing.walk import walk_classified
from ..layout.files import open_source
from ..layout.indexes import read_whole
from ..transport.source import ByteSource
from . import segments as seg
from .dump_log import EXIT_INCOMPLETE, optional_long


class IndexDump:
    """The index-file part of :class:`.dump.Dumper` (a mixin: it uses the Dumper's options,
    output helpers and summaries)."""

    # ------------------------------------------------------------------ .index
    def _log_headers(self, log_path: str) -> list[BatchHeader]:
        """Every batch header of a segment, up to the first unreadable framing."""
        with open_source(log_path) as src:
            out: list[BatchHeader] = []
            try:
                for item in walk_classified(src, log_path, 0, src.size):
                    if isinstance(item, BatchHeader):
                        out.append(item)
            except CorruptDataError as exc:
                self.warn(f"warning: {exc}; batches after it are not checked")
            return out

    def _log_headers_or_none(self, log_path: str) -> list[BatchHeader] | None:
        try:
            return self._log_headers(log_path)
        except OSError as e:
            self._log_unreadable(log_path, e)
            return None

    def _log_unreadable(self, log_path: str, e: OSError) -> None:
        """The segment beside an index cannot be opened: a warning, or with
        ``--verify-index-only`` (whose whole point is that check) an error and exit 1."""
        reason = (
            e.reason if isinstance(e, StorageError) else e.strerror or str(e) or type(e).__name__
        )
        if isinstance(e, FileNotFoundError):
            reason = "no such file"
        shown = seg.shown_path(log_path)
        if self.verify_only:
            self.fail(EXIT_INCOMPLETE, f"{shown}: {reason}; the index cannot be verified")
        else:
            self.warn(f"warning: {shown}: {reason}; index entries are not checked")

    def _index_base(self, path: str) -> tuple[int, str] | None:
        base = base_offset_from_name(path)
        if base is None:
            self.fail(EXIT_INCOMPLETE, f"{path}: no base offset in the file name")
            return None
        stem = path.rpartition("/")[2].split(".")[0]
        return base, seg.sibling(path, stem + ".log")

    def dump_index(self, path: str) -> None:
        """``offset: O position: P`` per entry; mismatches with the log go to the summary."""
        found = self._index_base(path)
        if found is None:
            return
        base, log_path = found
        entries = decode_entries(read_whole(path), OFFSET_INDEX_DTYPE).tolist()
        n = len(entries)
        if self.jsonl:
            self.obj(type="file", file=path, kind="index", baseOffset=base)
        if n == 0:
            if not self.jsonl:
                self.line(f"{path} is empty.")
            return
        log_src: ByteSource | None = None
        try:
            log_src = open_source(log_path)
        except OSError as e:
            self._log_unreadable(log_path, e)
        mismatches: dict[int, int] | list[tuple[int, int]] = [] if self.scala else {}
        try:
            for i in range(n):
                rel, position = entries[i]
                offset = base + rel
                if offset == base and i > 0:
                    break
                if log_src is not None:
                    end = min(position + self.max_message_size, log_src.size)
                    first = -1
                    try:
                        walk = walk_classified(
                            log_src, log_path, position, end, block=V2_HEADER_SIZE
                        )
                        for item in walk:
                            if isinstance(item, BatchHeader):
                                first = item.last_offset
                            break
                    except (CorruptDataError, OSError):
                        first = -1
                    if first != offset:
                        if isinstance(mismatches, list):
                            mismatches.insert(0, (offset, first))
                        else:
                            mismatches[offset] = first
                if self.verify_only:
                    continue
                if self.jsonl:
                    self.obj(type="indexEntry", file=path, offset=offset, position=position)
                else:
                    self.line(f"offset: {offset} position: {position}")
        finally:
            if log_src is not None:
                log_src.close()
        if mismatches:
            self.index_mismatches.append((seg.shown_path(path), mismatches))

    # ------------------------------------------------------------------ .timeindex
    def dump_time_index(self, path: str) -> None:
        """``timestamp: T offset: O`` per entry, checked against the batch holding ``O``."""
        found = self._index_base(path)
        if found is None:
            return
        base, log_path = found
        entries = decode_entries(read_whole(path), TIME_INDEX_DTYPE).tolist()
        if self.jsonl:
            self.obj(type="file", file=path, kind="timeindex", baseOffset=base)
        n = len(entries)
        loaded = False
        headers: list[BatchHeader] | None = None  # None: the log cannot be read
        lasts: list[int] = []
        ordered = True
        mismatch: list[tuple[int, int]] = []
        out_of_order: list[tuple[int, int]] = []
        not_found: list[tuple[int, int]] = []
        prev_ts = -1
        for i in range(n):
            ts, rel = entries[i]
            offset = base + rel
            if offset == base and i > 0:
                break
            if not loaded:
                loaded = True
                headers = self._log_headers_or_none(log_path)
                lasts = [h.last_offset for h in headers or []]
                ordered = all(a < b for a, b in pairwise(lasts))
            if headers is not None:
                # the first batch whose last offset reaches the entry's offset
                if ordered:
                    k = bisect_left(lasts, offset)
                else:
                    k = next((j for j, last in enumerate(lasts) if last >= offset), len(lasts))
                if k == len(lasts):
                    not_found.append((offset, -1))
                elif lasts[k] != offset:
                    not_found.append((offset, lasts[k]))
                else:
                    max_ts = self._max_record_timestamp(log_path, headers[k])
                    if max_ts != ts:
                        mismatch.append((ts, max_ts))
                    if prev_ts >= ts:
                        out_of_order.append((ts, prev_ts))
            if not self.verify_only:
                if self.jsonl:
                    self.obj(type="timeIndexEntry", file=path, timestamp=ts, offset=offset)
                else:
                    self.line(f"timestamp: {ts} offset: {offset}")
            prev_ts = ts
        where = seg.shown_path(path)
        if mismatch:
            self.time_mismatches.append((where, mismatch))
        if out_of_order:
            self.time_out_of_order.append((where, out_of_order))
        if not_found:
            self.time_not_found.append((where, not_found))

    def _max_record_timestamp(self, log_path: str, h: BatchHeader) -> int:
        """The largest record timestamp of one batch, from the reader (-1 for none)."""
        best = -1
        options = seg.reader_options(False, **self.reader_options)
        batches = seg.read_rows(log_path, h.position, h.end, ("timestamp",), options)
        for rb in batches:
            for ts in seg.timestamps_ms(rb.column(0)):
                best = max(best, -1 if ts is None else ts)
        return best

    # ------------------------------------------------------------------ .txnindex
    def dump_txn_index(self, path: str) -> None:
        """One line per aborted transaction entry."""
        entries = decode_entries(read_whole(path), TXN_INDEX_DTYPE)
        if self.jsonl:
            self.obj(
                type="file", file=path, kind="txnindex", baseOffset=base_offset_from_name(path)
            )
        versions = txn_entry_version(entries).tolist()
        for (_, pid, first, last, lso), version in zip(entries.tolist(), versions, strict=True):
            if version > 0:
                self.fail(
                    EXIT_INCOMPLETE,
                    f"Unexpected aborted transaction version {version} in transaction index "
                    f"{seg.shown_path(path)}, current version is 0",
                )
                return
            if self.jsonl:
                self.obj(
                    type="abortedTxn",
                    file=path,
                    version=version,
                    producerId=pid,
                    firstOffset=first,
                    lastOffset=last,
                    lastStableOffset=lso,
                )
            else:
                self.line(
                    f"version: {version} producerId: {pid} firstOffset: {first} "
                    f"lastOffset: {last} lastStableOffset: {lso}"
                )

    # ------------------------------------------------------------------ .snapshot
    def dump_producer_snapshot(self, path: str) -> None:
        """Producer-state snapshot entries (SEGMENT_SPEC §5.3)."""
        data = read_whole(path)
        if self.jsonl:
            self.obj(
                type="file",
                file=path,
                kind="producer-snapshot",
                baseOffset=base_offset_from_name(path),
            )
        try:
            entries = decode_producer_snapshot(data).tolist()
        except SnapshotError as e:
            self.err.write(f"{e}\n")
            return
        for pid, epoch, seq, offset, delta, ts, coord, txn_first in entries:
            first_txn = txn_first if txn_first >= 0 else None
            meta = offset >= 0
            if self.jsonl:
                self.obj(
                    type="producerState",
                    file=path,
                    producerId=pid,
                    producerEpoch=epoch,
                    coordinatorEpoch=coord,
                    currentTxnFirstOffset=first_txn,
                    lastTimestamp=ts,
                    firstSequence=decrement_sequence(seq, delta) if meta else None,
                    lastSequence=seq if meta else None,
                    lastOffset=offset if meta else None,
                    offsetDelta=delta if meta else None,
                    timestamp=ts if meta else None,
                )
                continue
            text = (
                f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coord} "
                f"currentTxnFirstOffset: {optional_long(first_txn)} lastTimestamp: {ts}"
            )
            sep = " "
            if self.scala:
                text += " "
                sep = ""
            if meta:
                text += (
                    f"{sep}firstSequence: {decrement_sequence(seq, delta)} "
                    f"lastSequence: {seq} lastOffset: {offset} offsetDelta: {delta} "
                    f"timestamp: {ts}"
                )
            self.line(text)
