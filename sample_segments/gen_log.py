"""``PartitionLog``: one partition replica directory of ``generate.py``, appended to as a
leader broker would, with kafka-python's record builders encoding every batch; it writes the
``.log``, ``.index``, ``.timeindex`` and ``.txnindex`` files and their manifest entries.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gen_format import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_LOG_APPEND_TIME,
    BIG_BATCH,
    CODEC_IDS,
    CONTROL_ABORT,
    CONTROL_NAMES,
    LEADER_EPOCH,
    V2_HEADER_SIZE,
    V2_LEADER_EPOCH,
    Entry,
    ProducerId,
    Rec,
    Segment,
    _codec_of_built_v2,
    expected_row,
    legacy_set_offset,
    legacy_set_timestamp,
    v2_assign,
    v2_patch,
)
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecordsBuilder


class PartitionLog:
    """One partition replica directory, appended to as a leader broker would."""

    def __init__(
        self,
        topic: str,
        partition: int,
        description: str,
        *,
        start_offset: int = 0,
        leader_epoch: int = LEADER_EPOCH,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.description = description
        self.leader_epoch = leader_epoch
        self.next_offset = start_offset
        self.segments = [Segment(start_offset)]
        self.sequences: dict[int, int] = {}
        self.open_txns: dict[int, int] = {}  # pid -> first offset of its open transaction
        self.open_rows: dict[int, list[dict[str, Any]]] = {}

    @property
    def name(self) -> str:
        """The partition directory name, ``<topic>-<partition>``."""
        return f"{self.topic}-{self.partition}"

    @property
    def active(self) -> Segment:
        """The active (last) segment."""
        return self.segments[-1]

    def roll(self) -> None:
        """Close the active segment and start a new one at the next offset."""
        self.active.close()
        self.segments.append(Segment(self.next_offset))

    def _add(self, entry: Entry) -> Entry:
        assert entry.base_offset >= self.next_offset, (entry.base_offset, self.next_offset)
        if entry.leader_epoch is None:
            entry.leader_epoch = self.leader_epoch
        batch_no = len(self.active.entries)
        for offset, ts, rec in entry.records:
            txn = None
            if entry.transactional and entry.control is None:
                txn = "open"
            row = expected_row(
                offset, ts, entry.timestamp_type, rec, batch_no, control=entry.control, txn=txn
            )
            entry.rows.append(row)
            if txn is not None and entry.producer is not None:
                self.open_rows.setdefault(entry.producer.pid, []).append(row)
        self.active.append(entry)
        self.next_offset = entry.last_offset + 1
        return entry

    def _next_sequence(self, producer: ProducerId | None, n: int) -> int:
        if producer is None:
            return -1
        seq = self.sequences.get(producer.pid, 0)
        self.sequences[producer.pid] = seq + n
        return seq

    # ---- magic 2

    def append_v2(
        self,
        records: Sequence[Rec],
        codec: str,
        *,
        producer: ProducerId | None = None,
        transactional: bool = False,
        log_append_time: int | None = None,
        use_memory_builder: bool = False,
    ) -> Entry:
        """Produce one v2 batch with kafka-python and append it at the log end offset."""
        assert records
        base = self.next_offset
        pid = producer.pid if producer else -1
        epoch = producer.epoch if producer else -1
        seq = self._next_sequence(producer, len(records))
        if use_memory_builder:
            mb = MemoryRecordsBuilder(
                magic=2,
                compression_type=CODEC_IDS[codec],
                batch_size=BIG_BATCH,
                offset=0,
                transactional=transactional,
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
            )
            for r in records:
                assert mb.append(r.ts, r.key, r.value, list(r.headers)) is not None
            mb.close()
            buf = bytearray(mb.buffer())
            source = "kafka-python MemoryRecordsBuilder(magic=2)"
        else:
            b = DefaultRecordBatchBuilder(
                magic=2,
                compression_type=CODEC_IDS[codec],
                is_transactional=transactional,
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                batch_size=BIG_BATCH,
            )
            for i, r in enumerate(records):
                assert b.append(i, r.ts, r.key, r.value, list(r.headers)) is not None
            buf = bytearray(b.build())
            source = "kafka-python DefaultRecordBatchBuilder"
        # kafka-python silently falls back to no compression when it does not pay off.
        assert _codec_of_built_v2(buf) == CODEC_IDS[codec], f"{codec} batch was not compressed"
        v2_assign(buf, base, self.leader_epoch)
        max_ts = max(r.ts for r in records)
        ts_type = 0
        if log_append_time is not None:
            # LogValidator with message.timestamp.type=LogAppendTime: setMaxTimestamp rewrites
            # only maxTimestamp and attribute bit 3, then recomputes the CRC (§1.5).
            v2_patch(buf, attrs_or=ATTR_LOG_APPEND_TIME, max_timestamp=log_append_time)
            max_ts, ts_type = log_append_time, 1
            source += " + broker LogAppendTime"
        if transactional and producer is not None and producer.pid not in self.open_txns:
            self.open_txns[producer.pid] = base
        return self._add(
            Entry(
                data=buf,
                magic=2,
                codec=codec,
                count=len(records),
                base_offset=base,
                last_offset=base + len(records) - 1,
                max_timestamp=max_ts,
                timestamp_type=ts_type,
                records=[
                    (base + i, log_append_time if ts_type else r.ts, r)
                    for i, r in enumerate(records)
                ],
                source=source,
                producer=producer,
                base_sequence=seq,
                transactional=transactional,
            )
        )

    def append_marker(
        self, producer: ProducerId, control_type: int, ts: int, coordinator_epoch: int = 0
    ) -> Entry:
        """Write a COMMIT/ABORT marker as the broker's writeEndTransactionalMarker does (§4.1)."""
        key = struct.pack(">hh", 0, control_type)
        value = struct.pack(">hi", 0, coordinator_epoch)
        b = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=True,
            producer_id=producer.pid,
            producer_epoch=producer.epoch,
            base_sequence=-1,
            batch_size=BIG_BATCH,
        )
        assert b.append(0, ts, key, value, []) is not None
        buf = bytearray(b.build())
        # kafka-python's builder has no way to set the control bit (only brokers write control
        # batches), so it is set here in the built bytes and the CRC-32C over [21, end) is
        # recomputed, exactly as the attribute lies inside the CRC (§1.2, §1.3).
        v2_patch(buf, attrs_or=ATTR_CONTROL)
        assert len(buf) == 78, len(buf)
        base = self.next_offset
        v2_assign(buf, base, self.leader_epoch)
        name = CONTROL_NAMES[control_type]
        pid = producer.pid
        first = self.open_txns.pop(pid, None)
        state = "aborted" if control_type == CONTROL_ABORT else "committed"
        for row in self.open_rows.pop(pid, []):
            row["txn"] = state
        if control_type == CONTROL_ABORT and first is not None:
            # ProducerStateManager.lastStableOffset: first offset of the earliest *other* open
            # transaction, else marker offset + 1 (§4.3).
            lso = min(self.open_txns.values(), default=base + 1)
            self.active.txnindex.append((pid, first, base, lso))
        return self._add(
            Entry(
                data=buf,
                magic=2,
                codec="none",
                count=1,
                base_offset=base,
                last_offset=base,
                max_timestamp=ts,
                timestamp_type=0,
                records=[(base, ts, Rec(ts, key, value))],
                source="kafka-python DefaultRecordBatchBuilder + control bit (broker marker)",
                producer=producer,
                transactional=True,
                control=name,
            )
        )

    def append_cleaned_v2(
        self,
        survivors: Sequence[tuple[int, Rec]],
        codec: str,
        *,
        base_offset: int,
        last_offset_delta: int,
        producer: ProducerId | None = None,
        base_sequence: int = -1,
        old_max_timestamp: int | None = None,
        delete_horizon: int | None = None,
    ) -> Entry:
        """Write a v2 batch as Kafka's cleaner rebuilds it after compaction (§1.4, §1.5)."""
        pid = producer.pid if producer else -1
        epoch = producer.epoch if producer else -1
        b = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=CODEC_IDS[codec],
            is_transactional=False,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=base_sequence,
            batch_size=BIG_BATCH,
        )
        if delete_horizon is not None:
            # Kafka's MemoryRecordsBuilder starts baseTimestamp at the delete horizon and encodes
            # every delta relative to it. kafka-python's builder takes its base timestamp from
            # the first append, so its two timestamp fields are seeded before appending; the
            # records themselves are still encoded by the builder.
            b._first_timestamp = delete_horizon
            b._max_timestamp = min(r.ts for _, r in survivors)
        for delta, r in survivors:
            assert b.append(delta, r.ts, r.key, r.value, list(r.headers)) is not None
        buf = bytearray(b.build())
        if survivors:
            assert _codec_of_built_v2(buf) == CODEC_IDS[codec], f"{codec} batch not compressed"
            max_ts = max(r.ts for _, r in survivors)
            source = "kafka-python DefaultRecordBatchBuilder + cleaner lastOffsetDelta override"
            if delete_horizon is not None:
                # overrideLastOffset and the hasDeleteHorizonMs attribute (bit 6).
                v2_patch(buf, attrs_or=ATTR_DELETE_HORIZON, last_offset_delta=last_offset_delta)
                source += " + delete horizon"
            else:
                v2_patch(buf, last_offset_delta=last_offset_delta)
        else:
            # writeEmptyHeader: count 0, baseTimestamp -1, maxTimestamp kept from the old batch,
            # lastOffsetDelta/sequence/producer preserved, codec NONE, CRC recomputed.
            assert codec == "none" and old_max_timestamp is not None
            assert len(buf) == V2_HEADER_SIZE
            max_ts = old_max_timestamp
            v2_patch(
                buf,
                last_offset_delta=last_offset_delta,
                base_timestamp=-1,
                max_timestamp=old_max_timestamp,
            )
            source = "kafka-python DefaultRecordBatchBuilder (0 records) + cleaner empty header"
        v2_assign(buf, base_offset, self.leader_epoch)
        return self._add(
            Entry(
                data=buf,
                magic=2,
                codec=codec,
                count=len(survivors),
                base_offset=base_offset,
                last_offset=base_offset + last_offset_delta,
                max_timestamp=max_ts,
                timestamp_type=0,
                records=[(base_offset + d, r.ts, r) for d, r in survivors],
                source=source,
                producer=producer,
                base_sequence=base_sequence,
                delete_horizon=delete_horizon,
            )
        )

    def append_raw_v2(
        self, data: bytes, records: Sequence[Rec], codec: str, source: str, **kw: Any
    ) -> Entry:
        """Append a v2 batch exactly as another broker (librdkafka's mock) stored it."""
        buf = bytearray(data)
        (base,) = struct.unpack_from(">q", buf, 0)
        (epoch,) = struct.unpack_from(">i", buf, V2_LEADER_EPOCH)
        assert base == self.next_offset, (base, self.next_offset)
        return self._add(
            Entry(
                data=buf,
                magic=2,
                codec=codec,
                count=len(records),
                base_offset=base,
                last_offset=base + len(records) - 1,
                max_timestamp=max(r.ts for r in records),
                timestamp_type=0,
                records=[(base + i, r.ts, r) for i, r in enumerate(records)],
                source=source,
                leader_epoch=epoch,
                **kw,
            )
        )

    # ---- magic 0 / 1

    def append_legacy(
        self,
        records: Sequence[Rec],
        magic: int,
        codec: str,
        *,
        log_append_time: int | None = None,
        inner_offsets: Sequence[int] | None = None,
        use_memory_builder: bool = False,
    ) -> list[Entry]:
        """Produce a v0/v1 message set with kafka-python and append it as a broker would (§2)."""
        assert records and magic in (0, 1) and codec != "zstd"
        assert log_append_time is None or magic == 1
        base = self.next_offset
        rel = list(inner_offsets) if inner_offsets is not None else list(range(len(records)))
        assert len(rel) == len(records) and rel[0] == 0
        ts_type = -1 if magic == 0 else (1 if log_append_time is not None else 0)

        def eff_ts(r: Rec) -> int | None:
            if magic == 0:
                return None
            return log_append_time if log_append_time is not None else r.ts

        if codec == "none":
            # Uncompressed: one log entry per message. The broker assigns absolute offsets in
            # place (the offset field lies outside the CRC), so they are passed straight in.
            offsets = [base + o for o in rel]
            sizes, buf, source = self._build_legacy(records, magic, 0, offsets, use_memory_builder)
            entries, pos = [], 0
            for off, size, r in zip(offsets, sizes, records, strict=True):
                piece = bytearray(buf[pos : pos + size])
                pos += size
                src = source
                if log_append_time is not None:
                    legacy_set_timestamp(piece, log_append_time, True)
                    src += " + broker LogAppendTime"
                entries.append(
                    self._add(
                        Entry(
                            data=piece,
                            magic=magic,
                            codec="none",
                            count=1,
                            base_offset=off,
                            last_offset=off,
                            max_timestamp=-1 if magic == 0 else eff_ts(r),  # type: ignore[arg-type]
                            timestamp_type=ts_type,
                            records=[(off, eff_ts(r), r)],
                            source=src,
                        )
                    )
                )
            assert pos == len(buf)
            return entries

        # Compressed wrapper. v1: inner offsets relative to the wrapper (§2.2); v0: absolute,
        # because the broker always rebuilds v0 compressed sets (emulated by building with the
        # absolute offsets).
        inner = rel if magic == 1 else [base + o for o in rel]
        _, buf, source = self._build_legacy(
            records, magic, CODEC_IDS[codec], inner, use_memory_builder
        )
        buf = bytearray(buf)
        last = base + rel[-1]
        legacy_set_offset(buf, last)  # wrapper offset = absolute offset of the last inner message
        max_ts = -1
        if magic == 1:
            # kafka-python writes the wrapper timestamp as 0; the broker's in-place path sets it to
            # the max inner timestamp (CreateTime) or the append time (LogAppendTime).
            if log_append_time is not None:
                max_ts = log_append_time
                legacy_set_timestamp(buf, log_append_time, True)
                source += " + broker LogAppendTime on wrapper"
            else:
                max_ts = max(r.ts for r in records)
                legacy_set_timestamp(buf, max_ts, False)
                source += " + broker wrapper timestamp"
        if inner_offsets is not None:
            source += " (cleaned: inner offset gaps)"
        return [
            self._add(
                Entry(
                    data=buf,
                    magic=magic,
                    codec=codec,
                    count=len(records),
                    base_offset=base,
                    last_offset=last,
                    max_timestamp=max_ts,
                    timestamp_type=ts_type,
                    records=[(base + o, eff_ts(r), r) for o, r in zip(rel, records, strict=True)],
                    source=source,
                )
            )
        ]

    @staticmethod
    def _build_legacy(
        records: Sequence[Rec],
        magic: int,
        codec_id: int,
        offsets: Sequence[int],
        use_memory_builder: bool,
    ) -> tuple[list[int], bytes, str]:
        sizes = []
        if use_memory_builder:
            start = offsets[0]
            mb = MemoryRecordsBuilder(
                magic=magic, compression_type=codec_id, batch_size=BIG_BATCH, offset=start
            )
            for off, r in zip(offsets, records, strict=True):
                if off > mb.next_offset():
                    mb.skip(off - mb.next_offset())
                meta = mb.append(r.ts, r.key, r.value)
                assert meta is not None and meta.offset == off
                sizes.append(meta.size)
            mb.close()
            return sizes, bytes(mb.buffer()), f"kafka-python MemoryRecordsBuilder(magic={magic})"
        lb = LegacyRecordBatchBuilder(magic=magic, compression_type=codec_id, batch_size=BIG_BATCH)
        for off, r in zip(offsets, records, strict=True):
            meta = lb.append(off, r.ts, r.key, r.value)
            assert meta is not None
            sizes.append(meta.size)
        return sizes, bytes(lb.build()), f"kafka-python LegacyRecordBatchBuilder(magic={magic})"

    # ---- output

    def write(self, root: Path) -> dict[str, Any]:
        """Close the active segment, write all files and return the manifest entries."""
        self.active.close()
        d = root / self.name
        d.mkdir(parents=True)
        files: dict[str, Any] = {}
        for seg in self.segments:
            stem = f"{seg.base_offset:020d}"
            (d / f"{stem}.log").write_bytes(bytes(seg.log))
            (d / f"{stem}.index").write_bytes(
                b"".join(struct.pack(">ii", o - seg.base_offset, p) for o, p in seg.index)
            )
            (d / f"{stem}.timeindex").write_bytes(
                b"".join(struct.pack(">qi", t, o - seg.base_offset) for t, o in seg.timeindex)
            )
            if seg.txnindex:  # created lazily on the first abort (§4.3)
                (d / f"{stem}.txnindex").write_bytes(
                    b"".join(struct.pack(">hqqqq", 0, *e) for e in seg.txnindex)
                )
            files[f"{self.name}/{stem}.log"] = {
                "topic": self.topic,
                "partition": self.partition,
                "segmentBaseOffset": seg.base_offset,
                "description": self.description,
                "batches": [_batch_facts(e) for e in seg.entries],
                "rows": [row for e in seg.entries for row in e.rows],
                "index": [[o, p] for o, p in seg.index],
                "timeindex": [[t, o] for t, o in seg.timeindex],
                "txnindex": [
                    {"producerId": p, "firstOffset": f, "lastOffset": la, "lastStableOffset": s}
                    for p, f, la, s in seg.txnindex
                ],
            }
        return files


def _batch_facts(e: Entry) -> dict[str, Any]:
    return {
        "position": e.position,
        "sizeInBytes": len(e.data),
        "baseOffset": e.base_offset,
        "lastOffset": e.last_offset,
        "magic": e.magic,
        "codec": e.codec,
        "count": e.count,
        "timestampType": e.timestamp_type,
        "maxTimestamp": e.max_timestamp,
        "partitionLeaderEpoch": e.leader_epoch if e.magic >= 2 else None,
        "producerId": e.producer.pid if e.producer else -1,
        "producerEpoch": e.producer.epoch if e.producer else -1,
        "baseSequence": e.base_sequence,
        "isTransactional": e.transactional,
        "isControl": e.control is not None,
        "deleteHorizonMs": e.delete_horizon,
        "source": e.source,
    }
