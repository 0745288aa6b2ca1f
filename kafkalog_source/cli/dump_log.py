"""``kafkalog dump``, the ``.log`` and KRaft ``.checkpoint`` printing: batch lines, record lines
and the trailing-bytes line (the command is in :mod:`.dump`, the index files in
:mod:`.dump_indexes`).

Built on the data source's own layers: batch lines come from the framing layer's header walk plus
a CRC check of each batch; record lines from the reader's Arrow output
(``includeMetadata``/``includeControlRecords``, grouped by ``batchPosition``), read with
``verifyChecksums=false`` and ``mode=DROPMALFORMED`` so that, as in Kafka, an invalid batch is
still listed (``isvalid: false``) and its records printed when they decode; a batch whose
records cannot be decoded is reported on stderr. See :mod:`.segments` for the two facts read
beside the reader (legacy inner message CRCs and non-marker control record sizes).

Deviations from kafka-dump-log (deliberate):

* A zero-filled tail (preallocated or crashed segment) ends the dump with the trailing-bytes line
  instead of a ``CorruptRecordException`` stack trace; other unreadable framing (an unknown
  magic byte, a non-zero size field below 14, a v2 batch under 61 bytes) stops that file with one
  ``kafkalog: error:`` line on stderr (exit code 1) where Kafka prints garbage or a stack trace.
* A KRaft control record whose value does not decode prints Kafka's default form
  `` controlType: SNAPSHOT_HEADER(3)`` where Kafka's tools stop with an exception (the ones that
  decode print as the tools do: :mod:`.decoders`).
* ``--max-bytes`` is not limited to 2 GiB, and files larger than 2 GiB are read whole.
* The ``Non-consecutive offsets`` summary lists only records whose offset does not follow the
  previous record's (compaction gaps, lost data). The Java tool also lists the first record of
  every file, as following -1 (``-1 is followed by 19``), so that every healthy segment whose
  base offset is not 0 looked damaged; the 2024 Scala tool left it out too.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import replace
from typing import Any

from ..errors import CorruptDataError
from ..format.batch import PREFIX_SIZE, BatchHeader
from ..format.names import CONTROL_TYPE_IDS, base_offset_from_name
from ..format.redpanda import type_name
from ..framing.headers import Tail
from ..framing.walk import walk_classified
from ..layout.files import open_source
from ..layout.redpanda import RedpandaSource, describe_batch, is_redpanda_segment, redpanda_path
from ..layout.tiered import is_tiered_log
from ..transport.source import ByteSource
from . import segments as seg
from .decoders import control_text, decoded_object, key_and_payload

INT_MAX = 2**31 - 1
RECORD_INDENT = "|"
EXIT_INCOMPLETE = 1

_RECORD_COLUMNS = (
    "key",
    "value",
    "offset",
    "timestamp",
    "headers",
    "sequence",
    "batchPosition",
    "control",
    "rawKey",  # a control record's bytes (KRaft's are printed decoded)
    "rawValue",
)
_SNAPSHOT_NAME = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint$")


def _text(data: bytes) -> str:
    """Bytes as Java's ``new String(bytes, UTF_8)`` shows them (malformed input -> U+FFFD)."""
    return data.decode("utf-8", "replace")


def _strict_text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _bool(v: bool) -> str:
    return "true" if v else "false"


def optional_long(v: int | None) -> str:
    """Java's ``OptionalLong.toString()``."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


class _RecordCursor:
    """The reader's rows for one file, handed out batch by batch in file order."""

    def __init__(self, batches: Any) -> None:
        self._batches = batches
        self._cols: list[list[Any]] = []
        self._n = 0
        self._i = 0
        self._done = False

    def _fill(self) -> bool:
        for rb in self._batches:
            if rb.num_rows == 0:
                continue
            names = rb.schema.names
            cols = []
            for name in _RECORD_COLUMNS:
                col = rb.column(names.index(name))
                cols.append(seg.timestamps_ms(col) if name == "timestamp" else col.to_pylist())
            self._cols = cols
            self._n = rb.num_rows
            self._i = 0
            return True
        self._done = True
        return False

    def take(self, position: int) -> list[tuple[Any, ...]]:
        """The rows of the batch at ``position`` (rows of earlier positions are dropped)."""
        out: list[tuple[Any, ...]] = []
        pos_col = _RECORD_COLUMNS.index("batchPosition")
        while not self._done:
            if self._i >= self._n and not self._fill():
                break
            p = self._cols[pos_col][self._i]
            if p > position:
                break
            if p == position:
                out.append(tuple(c[self._i] for c in self._cols))
            self._i += 1
        return out


class LogDump:
    """The ``.log``/``.checkpoint`` part of :class:`.dump.Dumper` (a mixin: it uses the
    Dumper's options, output helpers and summaries)."""

    decoder: str | None = None  # --offsets-decoder etc.: the interpretation (cli/decoders.py)

    # ------------------------------------------------------------------ .log
    def dump_log(self, path: str) -> None:
        """Batch lines, record lines with deep iteration, and the trailing-bytes line."""
        name = os.path.basename(path)
        base = base_offset_from_name(path)
        if base is None and is_tiered_log(path):  # {offset}-{segmentId}.log (tiered storage)
            base = int(os.path.basename(path)[:20])
        kind = "log"
        header_line: str | None = None
        extra: dict[str, Any] = {}
        if is_redpanda_segment(path):
            self._dump_redpanda(path)
            return
        if name.endswith(".log"):
            if base is None:
                self.warn(f"warning: {path}: no base offset in the file name")
            else:
                header_line = f"Log starting offset: {base}"
        else:  # .checkpoint: a KRaft snapshot
            kind = "kraft-snapshot"
            base = None
            m = _SNAPSHOT_NAME.match(name)
            if name == "bootstrap.checkpoint":
                header_line = "KRaft bootstrap snapshot"
            elif m:
                header_line = f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}"
                extra = {"snapshotEndOffset": int(m.group(1)), "snapshotEpoch": int(m.group(2))}
            else:
                self.warn(f"warning: {path}: not a <offset>-<epoch>.checkpoint snapshot name")
        with open_source(path) as src:
            size = src.size
            if self.jsonl:
                self.obj(type="file", file=path, kind=kind, baseOffset=base, **extra)
            elif header_line is not None:
                self.line(header_line)
            limit = size if self.max_bytes == INT_MAX else min(size, self.max_bytes)
            self._dump_batches(src, path, limit)

    def _dump_redpanda(self, path: str) -> None:
        """A Redpanda segment: one line per Redpanda batch (its type, raft offsets, Kafka
        offsets, file position, size, records, header CRC), then its Kafka view dumped as a
        Kafka segment (the batches and records a Kafka client reads)."""
        with open_source(path) as src:
            view = src.view if isinstance(src, RedpandaSource) else None
            if view is None:  # pragma: no cover - open_source opens every Redpanda name so
                raise CorruptDataError("not a Redpanda segment", path, 0)
            rp = redpanda_path(path)
            term = rp.name.term if rp is not None else 0
            if self.jsonl:
                self.obj(type="file", file=path, kind="redpanda", raftBaseOffset=rp and
                         rp.name.base, term=term, rawView=view.raw)  # fmt: skip
            else:
                self.line(
                    f"Redpanda segment: raft base offset {rp.name.base if rp else '?'}, term "
                    f"{term}; {len(view.batches)} batches "
                    f"({'raw: every batch at its raft offset' if view.raw else 'Kafka offsets'})"
                )
            for b in view.batches:
                if self.jsonl:
                    self.obj(
                        type="redpanda_batch",
                        file=path,
                        position=b.file_pos,
                        size=b.size,
                        batchType=b.type,
                        batchTypeName=type_name(b.type),
                        raftBaseOffset=b.raft_base,
                        raftLastOffset=b.raft_last,
                        kafkaBaseOffset=None if view.raw else b.kafka_base,
                        count=b.record_count,
                        attributes=b.attrs,
                        headerCrcValid=b.damage is None,
                    )
                else:
                    line = "redpanda " + describe_batch(b, view.raw)
                    if b.damage is not None:
                        line += " headerCrcValid: false"
                    self.line(line)
                if b.damage is not None:
                    self.fail(EXIT_INCOMPLETE, f"{path}: {b.damage}")
            if not self.jsonl:
                self.line("As a Kafka client reads it (its Kafka view; positions in the file):")
            limit = src.size if self.max_bytes == INT_MAX else min(src.size, self.max_bytes)
            self._dump_batches(src, path, limit)

    def _dump_batches(self, src: ByteSource, path: str, limit: int) -> None:
        stats = None
        options = None
        if self.deep:
            from ..stats import ReadStats

            stats = ReadStats()
            options = seg.reader_options(False, **self.reader_options)
        pairs: Any = [] if self.scala else {}
        # the previous record's offset; None before the first record of the file
        state: dict[str, int | None] = {"last": None}
        tail: Tail | None = None
        start_done = self._done_bytes
        pending: list[BatchHeader] = []

        def flush() -> None:
            """Print the pending batches, with the reader's rows for them when deep."""
            if not pending:
                return
            rows = None
            if options is not None:
                start, end = pending[0].position, pending[-1].end
                rows = _RecordCursor(
                    seg.read_rows(path, start, end, _RECORD_COLUMNS, options, stats)
                )
            shown = pending
            if src.stored_size != src.size:
                import numpy as np

                # a Redpanda segment's view: the file's positions
                at = src.file_positions(np.array([h.position for h in pending], np.int64))
                shown = [replace(h, position=p) for h, p in zip(pending, at.tolist(), strict=True)]
            for h, h_shown in zip(pending, shown, strict=True):
                data = seg.read_batch(src, h)
                self._batch(path, h_shown, seg.batch_is_valid(data, h))
                if rows is not None:  # the reader's batchPosition: the file's byte
                    self._records(path, h_shown, data, rows.take(h_shown.position), pairs, state)
            self.progress.update(start_done + pending[-1].end)
            pending.clear()

        walker = walk_classified(src, path, 0, limit)
        last_offset: int | None = None  # of the last complete batch
        error: CorruptDataError | None = None
        while True:
            try:
                item = next(walker)
            except StopIteration:
                break
            except CorruptDataError as exc:
                at = exc.position if exc.position is not None else 0
                skipped = self._reader_skip(src, path, limit, at, pending)
                if skipped is None:
                    error = exc
                    break
                # the batch the reader skipped (a damaged length field: its CRC says where it
                # ends), in the reader's words; the dump goes on after it, as the reader does
                at, resume, detail = skipped
                pending[:] = [h for h in pending if h.position < at]
                self.fail(
                    EXIT_INCOMPLETE,
                    f"{path}: {detail}; the dump goes on at byte {int(src.file_positions(resume))}",
                )
                walker = walk_classified(src, path, resume, limit)
                continue
            if isinstance(item, Tail):
                skipped = None
                if item.kind == "truncated":
                    skipped = self._reader_skip(src, path, limit, item.position, pending)
                if skipped is None:
                    tail = item
                    break
                at, resume, detail = skipped
                pending[:] = [h for h in pending if h.position < at]
                self.fail(
                    EXIT_INCOMPLETE,
                    f"{path}: {detail}; the dump goes on at byte {int(src.file_positions(resume))}",
                )
                walker = walk_classified(src, path, resume, limit)
                continue
            last_offset = item.last_offset
            if pending and (
                len(pending) >= seg.CHUNK_BATCHES
                or item.end - pending[0].position > seg.CHUNK_BYTES
            ):
                flush()
            pending.append(item)
        try:
            flush()
        except CorruptDataError as exc:  # the reader gave up on a range (e.g. maxBatchBytes)
            self.fail(EXIT_INCOMPLETE, f"{exc}; the rest of the file cannot be dumped")
            tail = error = None
        if error is not None:
            at = error.position if error.position is not None else 0
            if limit - at <= PREFIX_SIZE:
                tail = Tail("short", at, limit - at)  # Kafka's reader stops here quietly
            else:
                self.fail(EXIT_INCOMPLETE, f"{error}; the rest of the file cannot be dumped")
        self._done_bytes = start_done + limit
        if tail is not None and tail.skipped_bytes > 0 and self.max_bytes == INT_MAX:
            if self.jsonl:
                self.obj(
                    type="trailingBytes",
                    file=path,
                    position=int(src.file_positions(tail.position)),
                    bytes=tail.skipped_bytes,
                    kind=tail.kind,
                )
            else:
                self.line(
                    f"Found {tail.skipped_bytes} invalid bytes at the end of "
                    f"{os.path.basename(path)}"
                )
        if tail is not None and tail.kind == "truncated":
            self._cut_batch(src, path, tail, last_offset)
        if stats is not None:
            for event in stats.events_of("malformed", "corrupt file"):
                # the message less its "DROPMALFORMED: " / "ignoreCorruptFiles: " prefix
                self.warn(f"warning: records not shown: {event.message.split(': ', 1)[1]}")
                self.exit_code = max(self.exit_code, EXIT_INCOMPLETE)  # bad data: exit 1
        if pairs:
            self.non_consecutive.append((seg.shown_path(path), pairs))

    def _reader_spans(self, src: ByteSource, path: str, limit: int) -> list[tuple[int, int, str]]:
        """The batches the reader skips reading the file in DROPMALFORMED: (position, where it
        resumed, its reason), in file order; read once per file, only after damage."""
        from ..arrow.schema import projection_for
        from ..planning.splits import SegmentRange
        from ..reader import RangeReader
        from ..stats import ReadStats

        key = (path, limit)
        if key not in self._spans:
            options = seg.reader_options(True, "DROPMALFORMED", **self.reader_options)
            rng = SegmentRange(
                path, 0, limit, at_file_end=limit == src.size, offset_lo=seg.LOWEST_OFFSET
            )
            stats = ReadStats()
            try:
                for _ in RangeReader(rng, options, projection_for(["offset"]), stats):
                    pass
            except (CorruptDataError, OSError):
                pass
            spans = []
            for e in stats.events_of("malformed"):
                if e.position is not None:  # the file's byte: the walk's (the view's) position
                    at = int(src.view_positions(e.position))
                    spans.append((at, at + e.bytes, e.detail))
            self._spans[key] = spans
        return self._spans[key]

    def _reader_skip(
        self,
        src: ByteSource,
        path: str,
        limit: int,
        stop: int,
        walked: list[BatchHeader],
    ) -> tuple[int, int, str] | None:
        """Where the reader skipped the damage the walk stopped at (byte ``stop``: an
        unreadable header, or a final batch running past the end), and read on: a batch it
        skipped covering ``stop``, or one the walk took with a length its CRC does not match
        (a damaged length field: the walk went past the batch's true end). (position, resume,
        reason); None when the reader could not read on either (the rest of the file is
        lost)."""
        if stop <= 0:
            return None
        ends = {h.position: h.end for h in walked}
        for at, resume, detail in self._reader_spans(src, path, limit):
            if resume >= limit or resume <= at:
                continue
            if at <= stop < resume or (at in ends and ends[at] != resume and at < stop):
                return at, resume, detail
        return None

    def _cut_batch(self, src: ByteSource, path: str, tail: Tail, after: int | None) -> None:
        """A final batch cut short whose header names its offsets: they are missing, said in
        the reader's words (:func:`~kafkalog_source.reader.dataloss.cut_batch`)."""
        from ..reader.dataloss import cut_batch

        base = base_offset_from_name(path) if after is None else None
        cut = cut_batch(src, tail.position, tail.skipped_bytes, after, base)
        if cut is None:
            return
        n = cut.last - cut.first + 1
        self.warn(
            f"warning: {seg.shown_path(path)}: offsets {cut.first}..{cut.last} "
            f"({n} offset{'' if n == 1 else 's'}) are missing: {cut.reason}"
        )

    def _batch(self, path: str, h: BatchHeader, valid: bool) -> None:
        ts_type = seg.timestamp_type_name(h)
        v2 = h.magic >= 2
        horizon = h.base_timestamp if h.has_delete_horizon else None
        if self.jsonl:
            self.obj(
                type="batch",
                file=path,
                position=h.position,
                size=h.size,
                magic=h.magic,
                baseOffset=h.base_offset if v2 else None,
                lastOffset=h.last_offset,
                count=h.records_count if v2 else None,
                baseSequence=h.base_sequence if v2 else None,
                lastSequence=seg.last_sequence(h) if v2 else None,
                producerId=h.producer_id if v2 else None,
                producerEpoch=h.producer_epoch if v2 else None,
                partitionLeaderEpoch=h.partition_leader_epoch if v2 else None,
                isTransactional=h.is_transactional,
                isControl=h.is_control,
                deleteHorizonMs=horizon,
                timestampType=ts_type,
                maxTimestamp=h.max_timestamp if h.magic > 0 else None,
                codec=h.codec_name,
                crc=h.crc,
                isValid=valid,
            )
            return
        if v2:
            head = (
                f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} "
                f"count: {h.records_count} baseSequence: {h.base_sequence} "
                f"lastSequence: {seg.last_sequence(h)} producerId: {h.producer_id} "
                f"producerEpoch: {h.producer_epoch} "
                f"partitionLeaderEpoch: {h.partition_leader_epoch} "
                f"isTransactional: {_bool(h.is_transactional)} "
                f"isControl: {_bool(h.is_control)} deleteHorizonMs: {optional_long(horizon)}"
            )
        else:
            head = f"offset: {h.last_offset}"
        self.line(
            f"{head} position: {h.position} {ts_type}: {h.max_timestamp} size: {h.size} "
            f"magic: {h.magic} compresscodec: {h.codec_name} crc: {h.crc} "
            f"isvalid: {_bool(valid)}"
        )

    def _records(
        self,
        path: str,
        h: BatchHeader,
        data: bytes,
        rows: list[tuple[Any, ...]],
        pairs: Any,
        state: dict[str, int | None],
    ) -> None:
        legacy: list[tuple[int, bool]] | None = None
        if h.magic < 2:
            if h.codec == 0:
                legacy = [(h.crc, seg.batch_is_valid(data, h))]
            else:
                legacy = seg.legacy_inner_checksums(data, h, 1 << 62) or []
        control_sizes: list[tuple[int, int]] | None = None
        ts_type = seg.timestamp_type_name(h)
        for i, row in enumerate(rows):
            key, value, offset, ts, headers, sequence, _pos, control, raw_key, raw_value = row
            # Kafka's offset bookkeeping for the "Non-consecutive offsets" summary: a record
            # whose offset does not follow the previous record's. The first record of a file
            # follows none (the Java tool reports it as following -1, which reads as an error
            # for every healthy segment whose base offset is not 0).
            last = state["last"]
            if last is not None and offset != last + 1:
                if self.scala:
                    pairs.insert(0, (last, offset))
                else:
                    pairs[last] = offset
            state["last"] = offset
            if control is not None:
                ctype = control["type"]
                if ctype in ("ABORT", "COMMIT"):
                    ksize, vsize = seg.MARKER_KEY_SIZE, seg.MARKER_VALUE_SIZE
                else:
                    if control_sizes is None:
                        control_sizes = seg.control_record_sizes(data, h)
                    ksize, vsize = control_sizes[i] if i < len(control_sizes) else (-1, -1)
            else:
                ksize = -1 if key is None else len(key)
                vsize = -1 if value is None else len(value)
            crc = valid = None
            if legacy is not None:
                crc, valid = legacy[i] if i < len(legacy) else (None, None)
            header_keys = [hd["key"] for hd in headers] if headers else []
            if self.jsonl:
                fields: dict[str, Any] = dict(
                    type="record",
                    file=path,
                    batchPosition=h.position,
                    offset=offset,
                    timestampType=ts_type,
                    timestamp=ts,
                    keySize=ksize,
                    valueSize=vsize,
                    sequence=sequence if h.magic >= 2 else None,
                    headerKeys=header_keys,
                    isValid=valid,
                    crc=crc,
                    control=control,
                )
                if self.print_data and control is None:
                    fields.update(
                        key=_b64(key),
                        keyText=_strict_text(key),
                        value=_b64(value),
                        valueText=_strict_text(value),
                        headers=[
                            {
                                "key": hd["key"],
                                "value": _b64(hd["value"]),
                                "valueText": _strict_text(hd["value"]),
                            }
                            for hd in headers or []
                        ],
                    )
                if self.decoder is not None and control is None:
                    fields["decoded"] = decoded_object(self.decoder, key, value)
                elif self.decoder == "cluster_metadata" and control is not None:
                    if control["type"] not in ("ABORT", "COMMIT"):
                        fields["decoded"] = decoded_object(
                            self.decoder, raw_key, raw_value, control=True
                        )
                self.obj(**fields)
                continue
            parts: list[str] = []
            if not self.skip_meta:
                parts.append(
                    f"{RECORD_INDENT} offset: {offset} {ts_type}: {-1 if ts is None else ts} "
                    f"keySize: {ksize} valueSize: {vsize}"
                )
                if h.magic >= 2:
                    parts.append(f" sequence: {sequence} headerKeys: [{','.join(header_keys)}]")
                if legacy is not None:
                    crc_text = "?" if crc is None else str(crc)
                    parts.append(f" isValid: {_bool(bool(valid))} crc: {crc_text}")
                    if self.scala:
                        parts.append("}")
                if control is not None:
                    parts.append(_control_info(control, raw_key, raw_value, self.scala))
            if self.decoder is not None and not h.is_control:
                prefix = f"{RECORD_INDENT} " if self.skip_meta else " "
                dkey, dpayload = key_and_payload(self.decoder, key, value, offset)
                if dkey is not None:
                    parts.append(f"{prefix}key: {dkey}")
                if dpayload is not None:
                    parts.append(f" payload: {dpayload}")
            elif self.print_data and not h.is_control:
                prefix = f"{RECORD_INDENT} " if self.skip_meta else " "
                if key is not None:
                    parts.append(f"{prefix}key: {_text(key)}")
                    prefix = " "
                if value is not None:
                    parts.append(f"{' ' if self.scala else prefix}payload: {_text(value)}")
            self.line("".join(parts))


def _control_info(
    control: dict[str, Any], key: bytes | None, value: bytes | None, scala: bool
) -> str:
    """The control-record part of a record line: a marker's type and coordinator epoch, a
    KRaft control record decoded (:func:`.decoders.control_text`), else its type."""
    ctype = control["type"]
    if ctype in ("ABORT", "COMMIT"):
        return f" endTxnMarker: {ctype} coordinatorEpoch: {control['coordinatorEpoch']}"
    text = control_text(key, value, scala)
    if text is not None:
        return text
    if ctype in CONTROL_TYPE_IDS:
        return f" controlType: {ctype}({CONTROL_TYPE_IDS[ctype]})"
    return f" controlType: {ctype}"  # UNKNOWN(9) as the reader names it; INVALID for a short key
