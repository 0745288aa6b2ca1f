"""Generate the small, committed Kafka log segments under ``sample_segments/``.

Run from the repository root (needs the ``xxhash`` package as well)::

    .venv/bin/python sample_segments/generate.py

Every record batch is encoded by a real client library, never by hand:

* kafka-python's builders (``DefaultRecordBatchBuilder``, ``LegacyRecordBatchBuilder``,
  ``MemoryRecordsBuilder``) for magic 0, 1 and 2;
* librdkafka (through confluent-kafka) producing into its built-in mock cluster, whose stored
  record sets are fetched back raw with a FetchRequest v4 encoded by kafka-python's protocol
  classes.

What this script does to the built bytes is only what a broker (or its log cleaner) does on
append, per ``SEGMENT_SPEC`` §1.3-§1.5, §2.2, §4.1, §4.3 and §5.4-§5.5: assign offsets and the
partition leader epoch, stamp LogAppendTime (and recompute the CRC), set the control bit on
transaction markers, override ``lastOffsetDelta`` / the delete horizon for cleaned batches, and
write ``.index``, ``.timeindex`` and ``.txnindex`` files with ``index.interval.bytes`` = 1024.

``MANIFEST.json`` is written from the *inputs* fed to the libraries. At the end every ``.log`` is
decoded with kafka-python's pure-Python ``MemoryRecords`` and compared with the manifest.

The output is deterministic: fixed seeds and timestamps, the gzip header mtime pinned to 0, and
the random producer id that librdkafka's mock broker hands out rewritten to a fixed value.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import re
import shutil
import socket
import struct
import sys
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

OUT_DIR = Path(__file__).resolve().parent
SEED = 20241025
BASE_TS = 1_700_000_000_000  # 2023-11-14T22:13:20Z
PRE_1970_TS = -86_399_877  # 1969-12-31T00:00:00.123Z
INDEX_INTERVAL_BYTES = 1024
LEADER_EPOCH = 3
BIG_BATCH = 1 << 30  # batch_size for the builders: never refuse an append
INT32_MAX = 2**31 - 1

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}

# v2 batch header field positions (SEGMENT_SPEC §1.1).
V2_LEADER_EPOCH = 12
V2_CRC = 17
V2_ATTRIBUTES = 21
V2_LAST_OFFSET_DELTA = 23
V2_BASE_TIMESTAMP = 27
V2_MAX_TIMESTAMP = 35
V2_PRODUCER_ID = 43
V2_HEADER_SIZE = 61
ATTR_LOG_APPEND_TIME = 0x08
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

# legacy message field positions (SEGMENT_SPEC §2.1).
LEGACY_CRC = 12
LEGACY_MAGIC = 16
LEGACY_ATTRIBUTES = 17
LEGACY_TIMESTAMP = 18

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
CONTROL_NAMES = {CONTROL_ABORT: "ABORT", CONTROL_COMMIT: "COMMIT"}

FIXED_LIBRDKAFKA_PID = 880001  # replaces the random producer id of the mock broker


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Rec:
    """One record as fed to a client library."""

    ts: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class ProducerId:
    """An idempotent or transactional producer identity."""

    pid: int
    epoch: int = 0


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def expected_row(
    offset: int,
    ts: int | None,
    ts_type: int,
    rec: Rec,
    batch: int,
    *,
    control: str | None = None,
    txn: str | None = None,
) -> dict[str, Any]:
    """Build one manifest row from the inputs."""
    return {
        "offset": offset,
        "timestamp": ts,
        "timestampType": ts_type,
        "key": _hex(rec.key),
        "value": _hex(rec.value),
        "headers": [[k, _hex(v)] for k, v in rec.headers],
        "isControl": control is not None,
        "controlType": control,
        "txn": txn,
        "batch": batch,
    }


# --------------------------------------------------------------------------- broker emulation


def _v2_refresh_crc(buf: bytearray) -> None:
    """Recompute a v2 batch CRC-32C over bytes [21, end) (SEGMENT_SPEC §1.3)."""
    struct.pack_into(">I", buf, V2_CRC, crc32c.crc32c(memoryview(buf)[V2_ATTRIBUTES:]))


def v2_assign(buf: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Set baseOffset and partitionLeaderEpoch; both lie outside the CRC."""
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, V2_LEADER_EPOCH, leader_epoch)


def v2_patch(
    buf: bytearray,
    *,
    attrs_or: int = 0,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    producer_id: int | None = None,
) -> None:
    """Rewrite CRC-covered v2 header fields the way a broker/cleaner does, then fix the CRC."""
    if attrs_or:
        (attrs,) = struct.unpack_from(">h", buf, V2_ATTRIBUTES)
        struct.pack_into(">h", buf, V2_ATTRIBUTES, attrs | attrs_or)
    if last_offset_delta is not None:
        struct.pack_into(">i", buf, V2_LAST_OFFSET_DELTA, last_offset_delta)
    if base_timestamp is not None:
        struct.pack_into(">q", buf, V2_BASE_TIMESTAMP, base_timestamp)
    if max_timestamp is not None:
        struct.pack_into(">q", buf, V2_MAX_TIMESTAMP, max_timestamp)
    if producer_id is not None:
        struct.pack_into(">q", buf, V2_PRODUCER_ID, producer_id)
    _v2_refresh_crc(buf)


def legacy_set_offset(buf: bytearray, offset: int) -> None:
    """Set a legacy entry's offset field; the CRC starts at magic, so it is not affected."""
    struct.pack_into(">q", buf, 0, offset)


def legacy_set_timestamp(buf: bytearray, ts: int, log_append_time: bool) -> None:
    """Broker-style ``setMaxTimestamp`` on a v1 message: timestamp, bit 3, CRC-32 from magic."""
    assert buf[LEGACY_MAGIC] == 1
    attrs = buf[LEGACY_ATTRIBUTES] & ~ATTR_LOG_APPEND_TIME
    buf[LEGACY_ATTRIBUTES] = attrs | (ATTR_LOG_APPEND_TIME if log_append_time else 0)
    struct.pack_into(">q", buf, LEGACY_TIMESTAMP, ts)
    struct.pack_into(">I", buf, LEGACY_CRC, zlib.crc32(memoryview(buf)[LEGACY_MAGIC:]))


def _codec_of_built_v2(buf: bytes | bytearray) -> int:
    (attrs,) = struct.unpack_from(">h", buf, V2_ATTRIBUTES)
    return attrs & 0x07


@dataclass
class Entry:
    """One physical batch (v2 batch, legacy message or legacy wrapper) plus expectations."""

    data: bytearray
    magic: int
    codec: str
    count: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    timestamp_type: int
    records: list[tuple[int, int | None, Rec]]  # (offset, effective timestamp, input)
    source: str
    producer: ProducerId | None = None
    base_sequence: int = -1
    transactional: bool = False
    control: str | None = None
    delete_horizon: int | None = None
    leader_epoch: int | None = None
    position: int = -1
    rows: list[dict[str, Any]] = field(default_factory=list)


class Segment:
    """A segment being appended to, with the broker's sparse index bookkeeping (§5.4, §5.5)."""

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.entries: list[Entry] = []
        self.log = bytearray()
        self.index: list[tuple[int, int]] = []  # (absolute offset, position)
        self.timeindex: list[tuple[int, int]] = []  # (timestamp, absolute offset)
        self.txnindex: list[tuple[int, int, int, int]] = []  # (pid, first, last, lso)
        self._bytes_since_index = 0
        # An empty time index reports lastEntry = (NO_TIMESTAMP, baseOffset); that is also the
        # segment's initial "max timestamp so far".
        self._max_ts = -1
        self._offset_of_max_ts = base_offset
        self._last_time_entry = (-1, base_offset)

    def append(self, entry: Entry) -> None:
        """Append one batch the way LogSegment.append/recover does, one batch at a time."""
        assert entry.base_offset >= self.base_offset
        assert entry.last_offset - self.base_offset <= INT32_MAX
        position = len(self.log)
        if entry.max_timestamp > self._max_ts:
            self._max_ts = entry.max_timestamp
            self._offset_of_max_ts = entry.last_offset
        if self._bytes_since_index > INDEX_INTERVAL_BYTES:
            assert not self.index or entry.last_offset > self.index[-1][0]
            self.index.append((entry.last_offset, position))
            self._maybe_append_time(self._max_ts, self._offset_of_max_ts)
            self._bytes_since_index = 0
        self.log += entry.data
        self._bytes_since_index += len(entry.data)
        entry.position = position
        self.entries.append(entry)

    def _maybe_append_time(self, ts: int, offset: int) -> None:
        # TimeIndex.maybeAppend: only a strictly larger timestamp makes a new entry.
        if ts > self._last_time_entry[0]:
            self.timeindex.append((ts, offset))
            self._last_time_entry = (ts, offset)

    def close(self) -> None:
        """Roll or clean shutdown: force the final time-index entry (skipFullCheck=true)."""
        self._maybe_append_time(self._max_ts, self._offset_of_max_ts)


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


# --------------------------------------------------------------------------- record factories

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike "
    "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()


def _value(rng: random.Random, i: int, words: int = 6) -> bytes:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return json.dumps({"id": i, "text": body, "note": "lorem ipsum"}).encode()


def feature_records(rng: random.Random, ts: int) -> list[Rec]:
    """Records exercising headers, null/empty keys, tombstones and a pre-1970 timestamp."""
    headers = (
        ("trace-id", b"4bf92f3577b34da6a3ce929d0e0e4736"),
        ("empty-value", b""),
        ("null-value", None),
        ("clé-ünïcode", "värde €".encode()),
        ("日本語キー", "値".encode()),
        ("trace-id", b"duplicate header key"),
        ("binary", bytes(range(0, 256, 17))),
    )
    recs = [
        Rec(ts, b"user-0001", _value(rng, 0), headers),
        Rec(ts + 10, None, _value(rng, 1), (("only", b"one"),)),  # null key
        Rec(ts + 20, b"", _value(rng, 2)),  # empty (non-null) key
        Rec(ts + 30, b"user-0001", None, (("reason", b"delete"),)),  # tombstone
        Rec(PRE_1970_TS, b"user-1969", _value(rng, 4)),  # before the epoch
        Rec(ts + 50, b"user-0002", b""),  # empty value
        Rec(ts + 60, None, None),  # null key and null value
        Rec(ts + 40, b"user-0003", _value(rng, 7), (("e", b""), ("n", None))),  # out of order ts
    ]
    for i in range(8, 14):
        recs.append(Rec(ts + 10 * i, f"user-{i:04d}".encode(), _value(rng, i)))
    return recs


def plain_records(
    rng: random.Random, ts: int, n: int, start: int = 0, step: int = 100
) -> list[Rec]:
    """Simple keyed records with compressible JSON values and increasing timestamps."""
    return [
        Rec(ts + step * i, f"key-{start + i:05d}".encode(), _value(rng, start + i))
        for i in range(n)
    ]


def legacy_records(rng: random.Random, ts: int) -> list[Rec]:
    """Records for v0/v1: null key, empty key, tombstone, empty value, plain ones."""
    recs = [
        Rec(ts, b"legacy-0001", _value(rng, 0)),
        Rec(ts + 10, None, _value(rng, 1)),
        Rec(ts + 20, b"", _value(rng, 2)),
        Rec(ts + 30, b"legacy-0001", None),
        Rec(ts + 40, b"legacy-0004", b""),
    ]
    recs += [Rec(ts + 10 * i, f"legacy-{i:04d}".encode(), _value(rng, i)) for i in range(5, 9)]
    return recs


# --------------------------------------------------------------------------- librdkafka


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("mock broker closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def fetch_raw(host: str, port: int, topic: str, partition: int, end_offset: int) -> list[bytes]:
    """Fetch the raw stored batches of a partition with a FetchRequest v4 (kafka-python)."""
    from kafka.protocol.consumer import FetchRequest, FetchResponse

    batches: list[bytes] = []
    offset, correlation = 0, 0
    with socket.create_connection((host, port), timeout=10) as sock:
        while offset < end_offset:
            correlation += 1
            req = FetchRequest[4](
                replica_id=-1,
                max_wait_ms=100,
                min_bytes=0,
                max_bytes=1 << 20,
                isolation_level=0,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchTopic.FetchPartition(
                                partition=partition,
                                fetch_offset=offset,
                                partition_max_bytes=1 << 20,
                            )
                        ],
                    )
                ],
            )
            req.with_header(correlation_id=correlation, client_id="sample-segments")
            sock.sendall(req.encode(header=True, framed=True))
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            resp = FetchResponse[4].decode(_recv_exact(sock, size), header=True)
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0, part
            data = bytes(part.records or b"")
            assert data, f"empty fetch at offset {offset}"
            pos = 0
            # Split the record set into batches using only the common 12-byte prefix (§0).
            while pos + 12 <= len(data):
                (length,) = struct.unpack_from(">i", data, pos + 8)
                if pos + 12 + length > len(data):
                    break
                batch = data[pos : pos + 12 + length]
                (base,) = struct.unpack_from(">q", batch, 0)
                (delta,) = struct.unpack_from(">i", batch, V2_LAST_OFFSET_DELTA)
                if base + delta >= offset:
                    batches.append(batch)
                    offset = base + delta + 1
                pos += 12 + length
    return batches


def produce_with_librdkafka(
    topic: str, plan: Sequence[tuple[str, bool, Sequence[Rec]]]
) -> list[bytes]:
    """Produce each (codec, idempotent, records) as one batch into a mock cluster; fetch raw."""
    from confluent_kafka import Producer

    quiet = {"log_level": 2}  # hide the mock's notices and the teardown disconnect errors
    owner = Producer({"test.mock.num.brokers": 1, **quiet})
    broker = next(iter(owner.list_topics(timeout=10).brokers.values()))
    host, port = broker.host, broker.port
    total = 0
    for codec, idempotent, records in plan:
        producer = Producer(
            {
                "bootstrap.servers": f"{host}:{port}",
                "compression.type": codec,
                "enable.idempotence": idempotent,
                "linger.ms": 5000,
                "batch.num.messages": 100000,
                **quiet,
            }
        )
        # Learn the partition leader first, so that records go straight to the partition queue
        # and linger.ms holds them until flush(): one produce round = one batch.
        producer.list_topics(topic, timeout=10)
        errors: list[Any] = []

        def on_delivery(err: Any, _msg: Any, errors: list[Any] = errors) -> None:
            if err is not None:
                errors.append(err)

        for r in records:
            producer.produce(
                topic,
                key=r.key,
                value=r.value,
                partition=0,
                timestamp=r.ts,
                headers=list(r.headers),
                on_delivery=on_delivery,
            )
        assert producer.flush(30) == 0 and not errors, errors
        del producer
        total += len(records)
    batches = fetch_raw(host, port, topic, 0, total)
    del owner
    return batches


def produce_batches_with_librdkafka(
    topic: str, plan: Sequence[tuple[str, bool, Sequence[Rec]]], attempts: int = 5
) -> list[bytes]:
    """Like produce_with_librdkafka, retried until every round landed as exactly one batch."""
    for _ in range(attempts):
        batches = produce_with_librdkafka(topic, plan)
        counts = [struct.unpack_from(">i", b, 57)[0] for b in batches]
        if counts == [len(records) for _, _, records in plan]:
            return batches
        print(f"librdkafka split a batch ({counts}); producing again", file=sys.stderr)
    raise RuntimeError("librdkafka kept splitting batches")


def librdkafka_batch_fixup(raw: bytes, idempotent: bool) -> bytes:
    """Pin the mock broker's random producer id to a fixed value (CRC recomputed)."""
    buf = bytearray(raw)
    if idempotent:
        v2_patch(buf, producer_id=FIXED_LIBRDKAFKA_PID)
    return bytes(buf)


# --------------------------------------------------------------------------- scenarios


def build_magic2(codec: str, rng: random.Random) -> PartitionLog:
    """Magic 2, one codec, with headers, null/empty keys, tombstones and a pre-1970 record."""
    log = PartitionLog(
        f"magic2-{codec}",
        0,
        f"magic 2, codec {codec}: headers (empty/null values, non-ASCII keys, duplicate key), "
        "null and empty keys, tombstones, a pre-1970 timestamp, idempotent batches",
    )
    log.append_v2(feature_records(rng, BASE_TS), codec)
    log.append_v2(plain_records(rng, BASE_TS + 10_000, 15), codec, use_memory_builder=True)
    idem = ProducerId(7001, 2)
    log.append_v2(plain_records(rng, BASE_TS + 20_000, 10, 100), codec, producer=idem)
    log.append_v2(plain_records(rng, BASE_TS + 30_000, 10, 110), codec, producer=idem)
    return log


def build_magic2_log_append_time(rng: random.Random) -> PartitionLog:
    """Magic 2 batches whose maxTimestamp/bit 3 were stamped by the broker (LogAppendTime)."""
    log = PartitionLog(
        "magic2-logappendtime",
        0,
        "magic 2 with LogAppendTime stamped by the broker (bit 3 + maxTimestamp, CRC "
        "recomputed); record deltas keep producer create times",
    )
    log.append_v2(feature_records(rng, BASE_TS), "lz4", log_append_time=BASE_TS + 500_000)
    log.append_v2(plain_records(rng, BASE_TS + 1_000, 8), "none", log_append_time=BASE_TS + 600_000)
    log.append_v2(
        plain_records(rng, BASE_TS + 2_000, 8, 50), "zstd", log_append_time=BASE_TS + 600_001
    )
    return log


def build_legacy(magic: int, codec: str, rng: random.Random) -> PartitionLog:
    """Magic 0 or 1 with one codec: uncompressed entries or compressed wrappers."""
    what = {
        ("none", 0): "uncompressed v0 messages (no timestamps)",
        ("none", 1): "uncompressed v1 messages",
    }.get((codec, magic))
    if what is None:
        what = (
            f"{codec} wrappers with relative inner offsets, wrapper timestamp = max inner"
            if magic == 1
            else f"{codec} wrappers with absolute inner offsets (broker-rebuilt)"
        )
        if magic == 0 and codec == "lz4":
            what += ", old-Kafka LZ4 framing with the broken header checksum"
    log = PartitionLog(
        f"magic{magic}-{codec}", 0, f"magic {magic}: {what}; null/empty keys, tombstones"
    )
    log.append_legacy(legacy_records(rng, BASE_TS), magic, codec)
    log.append_legacy(
        plain_records(rng, BASE_TS + 10_000, 8, 20), magic, codec, use_memory_builder=True
    )
    log.append_legacy(plain_records(rng, BASE_TS + 20_000, 6, 40), magic, codec)
    return log


def build_magic1_log_append_time(rng: random.Random) -> PartitionLog:
    """Magic 1 with LogAppendTime set by the broker on wrappers and plain messages."""
    log = PartitionLog(
        "magic1-logappendtime",
        0,
        "magic 1 with LogAppendTime: gzip/lz4 wrappers stamped by the broker (inner messages "
        "still say CreateTime), plus uncompressed v1 messages stamped individually",
    )
    log.append_legacy(legacy_records(rng, BASE_TS), 1, "gzip", log_append_time=BASE_TS + 900_000)
    log.append_legacy(
        plain_records(rng, BASE_TS + 5_000, 6, 20), 1, "lz4", log_append_time=BASE_TS + 900_500
    )
    log.append_legacy(
        plain_records(rng, BASE_TS + 6_000, 3, 30), 1, "none", log_append_time=BASE_TS + 901_000
    )
    return log


def build_upgraded(rng: random.Random) -> PartitionLog:
    """One file mixing magic 0, 1 and 2 batches, as a topic upgraded over the years."""
    log = PartitionLog(
        "upgraded",
        0,
        "one segment mixing magic 0 (none, gzip), magic 1 (none, snappy, lz4) and magic 2 "
        "(snappy, none with headers, zstd) batches: a topic upgraded over time",
    )
    log.append_legacy(plain_records(rng, BASE_TS, 3), 0, "none")
    log.append_legacy(plain_records(rng, BASE_TS, 4, 3), 0, "gzip")
    log.append_legacy(plain_records(rng, BASE_TS + 1_000, 3, 7), 1, "none")
    log.append_legacy(plain_records(rng, BASE_TS + 2_000, 5, 10), 1, "snappy")
    log.append_legacy(plain_records(rng, BASE_TS + 3_000, 5, 15), 1, "lz4")
    log.append_v2(plain_records(rng, BASE_TS + 4_000, 6, 20), "snappy")
    hdr = (("schema", b"v2"), ("empty", b""))
    log.append_v2(
        [Rec(r.ts, r.key, r.value, hdr) for r in plain_records(rng, BASE_TS + 5_000, 4, 26)],
        "none",
    )
    log.append_v2(plain_records(rng, BASE_TS + 6_000, 6, 30), "zstd")
    return log


def build_compacted(rng: random.Random) -> PartitionLog:
    """A cleaned (compacted) partition: offset gaps, an empty batch, a delete horizon."""
    log = PartitionLog(
        "compacted",
        0,
        "compacted: v1 gzip wrapper with inner offset gaps; v2 batches with records removed at "
        "both ends and in the middle (count < lastOffsetDelta+1); an empty header-only batch; "
        "a batch with the delete-horizon bit 6 (deltas relative to the horizon, negative)",
    )
    orig = plain_records(rng, BASE_TS, 6)
    # v1 gzip wrapper: originally offsets 0..5, offsets 1, 3 and 4 cleaned away. The cleaner
    # rebuilds it relative to the first retained offset, so the inner offsets are 0, 2, 5.
    log.append_legacy(
        [orig[0], orig[2], orig[5]], 1, "gzip", inner_offsets=[0, 2, 5], use_memory_builder=True
    )
    # v2, none: originally 10 records at 6..15; deltas 0, 1 (start), 4, 6 (middle), 8, 9 (end)
    # removed.
    orig = plain_records(rng, BASE_TS + 1_000, 10, 6)
    keep = [2, 3, 5, 7]
    log.append_cleaned_v2([(d, orig[d]) for d in keep], "none", base_offset=6, last_offset_delta=9)
    # v2, gzip, from an idempotent producer: originally 16..27, survivors 1, 4, 8, 10.
    idem = ProducerId(7100, 1)
    orig = plain_records(rng, BASE_TS + 2_000, 12, 16)
    keep = [1, 4, 8, 10]
    log.append_cleaned_v2(
        [(d, orig[d]) for d in keep],
        "gzip",
        base_offset=16,
        last_offset_delta=11,
        producer=idem,
        base_sequence=0,
    )
    # Empty batch: all 5 records of an idempotent batch at 28..32 are gone, the header stays.
    gone = plain_records(rng, BASE_TS + 3_000, 5, 28)
    log.append_cleaned_v2(
        [],
        "none",
        base_offset=28,
        last_offset_delta=4,
        producer=idem,
        base_sequence=12,
        old_max_timestamp=max(r.ts for r in gone),
    )
    # Delete horizon: a batch still holding tombstones, rewritten with baseTimestamp = horizon.
    orig = plain_records(rng, BASE_TS + 4_000, 8, 33)
    orig[3] = Rec(orig[3].ts, orig[3].key, None)
    orig[6] = Rec(orig[6].ts, orig[6].key, None)
    horizon = BASE_TS + 86_400_000 * 3
    log.append_cleaned_v2(
        [(d, orig[d]) for d in (1, 3, 4, 6)],
        "none",
        base_offset=33,
        last_offset_delta=7,
        delete_horizon=horizon,
    )
    # Same, but compressed with lz4.
    orig = plain_records(rng, BASE_TS + 5_000, 8, 41)
    orig[0] = Rec(orig[0].ts, orig[0].key, None)
    log.append_cleaned_v2(
        [(d, orig[d]) for d in (0, 2, 5)],
        "lz4",
        base_offset=41,
        last_offset_delta=7,
        delete_horizon=horizon + 1,
    )
    # The last batch of a cleaning round, untouched.
    log.append_v2(plain_records(rng, BASE_TS + 6_000, 4, 49), "none")
    return log


def build_transactions(rng: random.Random) -> PartitionLog:
    """Interleaved transactions over two segments with markers and .txnindex files."""
    log = PartitionLog(
        "transactions",
        0,
        "transactions: producers 1000/2000/4000/5000/6000 interleaved, commits and aborts, an "
        "idempotent and a plain batch in between, an aborted txn spanning the two segments "
        "(data in 1, ABORT marker in 2), a txn left open at the end; .txnindex per ABORT",
    )
    p1, p2, p3 = ProducerId(1000, 0), ProducerId(2000, 4), ProducerId(3000, 0)
    p4, p5, p6 = ProducerId(4000, 1), ProducerId(5000, 0), ProducerId(6000, 2)
    t = BASE_TS
    log.append_v2(plain_records(rng, t, 3), "none", producer=p1, transactional=True)
    log.append_v2(plain_records(rng, t + 100, 2, 3), "lz4", producer=p2, transactional=True)
    log.append_v2(plain_records(rng, t + 200, 2, 5), "none", producer=p1, transactional=True)
    log.append_v2(plain_records(rng, t + 300, 2, 7), "none", producer=p3)  # idempotent only
    log.append_v2(plain_records(rng, t + 400, 2, 9), "none")  # plain
    log.append_marker(p1, CONTROL_COMMIT, t + 500, coordinator_epoch=7)
    log.append_v2(plain_records(rng, t + 600, 2, 12), "gzip", producer=p2, transactional=True)
    log.append_marker(p2, CONTROL_ABORT, t + 700, coordinator_epoch=7)
    log.append_v2(plain_records(rng, t + 800, 2, 15), "none", producer=p4, transactional=True)
    log.append_v2(plain_records(rng, t + 900, 2, 17), "zstd", producer=p1, transactional=True)
    log.roll()
    log.append_v2(plain_records(rng, t + 1000, 2, 19), "none", producer=p4, transactional=True)
    log.append_marker(p4, CONTROL_ABORT, t + 1100, coordinator_epoch=8)
    log.append_marker(p1, CONTROL_COMMIT, t + 1200, coordinator_epoch=8)
    log.append_v2(plain_records(rng, t + 1300, 2, 23), "snappy", producer=p2, transactional=True)
    log.append_v2(plain_records(rng, t + 1400, 2, 25), "none", producer=p5, transactional=True)
    log.append_marker(p5, CONTROL_ABORT, t + 1500, coordinator_epoch=8)
    log.append_marker(p2, CONTROL_COMMIT, t + 1600, coordinator_epoch=8)
    log.append_v2(plain_records(rng, t + 1700, 2, 29), "none", producer=p6, transactional=True)
    log.append_v2(plain_records(rng, t + 1800, 2, 31), "none")
    return log


def build_multi_segment(rng: random.Random) -> PartitionLog:
    """Three rolled segments with non-zero base offsets, an out-of-order timestamp batch."""
    log = PartitionLog(
        "multi-segment",
        0,
        "three segments (log start 1000 after retention) with .index/.timeindex every 1024 "
        "bytes; leader epoch bumps per segment; one batch with an older timestamp",
        start_offset=1000,
        leader_epoch=5,
    )
    t = BASE_TS + 3_600_000
    codecs = ["none", "lz4", "none", "gzip", "none", "zstd", "snappy", "none"]
    n = 0
    for seg in range(3):
        for i, codec in enumerate(codecs):
            ts = t + seg * 60_000 + i * 1_000
            if seg == 1 and i == 4:
                ts -= 30_000  # a late batch: the time index keeps the max so far
            log.append_v2(plain_records(rng, ts, 6, n, step=10), codec)
            n += 6
        if seg < 2:
            log.roll()
            log.leader_epoch += 1
    return log


def build_orders(partition: int, rng: random.Random) -> PartitionLog:
    """One partition of the two-partition ``orders`` topic."""
    codecs = ["lz4", "none", "lz4"] if partition == 0 else ["zstd", "gzip", "none"]
    log = PartitionLog(
        "orders",
        partition,
        f"orders partition {partition} of 2 (codecs {', '.join(codecs)}), JSON orders with "
        "content-type/source headers, for group-by-partition demos",
    )
    order_id = 10_000 + partition
    for b, codec in enumerate(codecs):
        recs = []
        for i in range(10):
            value = json.dumps(
                {
                    "order_id": order_id,
                    "customer": f"cust-{rng.randrange(50):03d}",
                    "amount": round(rng.uniform(5, 500), 2),
                    "currency": rng.choice(["EUR", "USD", "GBP"]),
                    "items": [rng.choice(WORDS) for _ in range(rng.randrange(1, 4))],
                },
                sort_keys=True,
            ).encode()
            headers = (
                ("content-type", b"application/json"),
                ("source", rng.choice([b"web", b"app", b"pos"])),
            )
            ts = BASE_TS + 86_400_000 + b * 60_000 + i * 1_500 + partition * 7
            recs.append(Rec(ts, f"order-{order_id}".encode(), value, headers))
            order_id += 2
        log.append_v2(recs, codec, use_memory_builder=bool(b % 2))
    return log


def librdkafka_plan(rng: random.Random) -> list[tuple[str, bool, list[Rec]]]:
    """What to produce through librdkafka: (codec, idempotent, records) per batch."""
    plan: list[tuple[str, bool, list[Rec]]] = []
    t = BASE_TS + 7 * 86_400_000
    for i, (codec, idem) in enumerate(
        [("none", False), ("lz4", True), ("snappy", False), ("gzip", False), ("zstd", True)]
    ):
        recs = []
        for j in range(8):
            headers: tuple[tuple[str, bytes | None], ...] = (
                ("producer", b"librdkafka"),
                ("codec", codec.encode()),
                ("ñame-ü", "wert ✓".encode()),
                ("empty", b""),
            )
            if j % 3 == 1:
                headers += (("null-value", None),)
            key = None if j == 5 else f"rk-{i}-{j}".encode()
            value = None if j == 6 else _value(rng, i * 8 + j)
            recs.append(Rec(t + i * 10_000 + j * 7, key, value, headers))
        plan.append((codec, idem, recs))
    return plan


def build_librdkafka(rng: random.Random) -> tuple[PartitionLog, PartitionLog]:
    """Batches written by librdkafka into its mock broker, stored byte-for-byte."""
    plan = librdkafka_plan(rng)
    raws = produce_batches_with_librdkafka("librdkafka", plan)
    log = PartitionLog(
        "librdkafka",
        0,
        "v2 batches produced by librdkafka (confluent-kafka) into its mock broker and fetched "
        "raw: none, lz4, raw-block snappy, gzip, zstd, with headers; idempotent producer ids "
        f"pinned to {FIXED_LIBRDKAFKA_PID}",
    )
    for (codec, idem, recs), raw in zip(plan, raws, strict=True):
        log.append_raw_v2(
            librdkafka_batch_fixup(raw, idem),
            recs,
            codec,
            "librdkafka mock broker (confluent-kafka), fetched raw"
            + (" + producer id pinned" if idem else ""),
            producer=ProducerId(FIXED_LIBRDKAFKA_PID, 0) if idem else None,
            base_sequence=0 if idem else -1,
        )

    mixed = PartitionLog(
        "snappy-mixed",
        0,
        "snappy framing mixed in one segment: a raw-block snappy batch from librdkafka, then "
        "xerial-framed snappy batches from kafka-python",
    )
    codec, idem, recs = plan[2]
    assert codec == "snappy" and not idem
    # Same bytes as stored by the mock broker, re-based to offset 0 of this partition; the base
    # offset and leader epoch are outside the CRC (§1.3).
    raw = bytearray(raws[2])
    v2_assign(raw, 0, 0)
    mixed.append_raw_v2(bytes(raw), recs, "snappy", "librdkafka mock broker, raw-block snappy")
    mixed.append_v2(feature_records(rng, BASE_TS + 8 * 86_400_000), "snappy")
    mixed.append_v2(plain_records(rng, BASE_TS + 8 * 86_400_000 + 500, 6, 60), "snappy")
    return log, mixed


# --------------------------------------------------------------------------- verification


def _decoded_rows(data: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Decode a .log with kafka-python's MemoryRecords into (batch facts, rows)."""
    batches: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    records = MemoryRecords(data)
    pos = 0
    while records.has_next():
        batch = records.next_batch()
        size = batch.size_in_bytes
        facts: dict[str, Any] = {
            "position": pos,
            "sizeInBytes": size,
            "magic": batch.magic,
            "codec": CODEC_NAMES[batch.compression_type],
        }
        assert batch.validate_crc(), f"bad CRC at position {pos}"
        if batch.magic >= 2:
            attrs = batch.attributes
            facts.update(
                baseOffset=batch.base_offset,
                lastOffset=batch.last_offset,
                count=batch.records_count,
                timestampType=batch.timestamp_type,
                maxTimestamp=batch.max_timestamp,
                partitionLeaderEpoch=batch.leader_epoch,
                producerId=batch.producer_id,
                producerEpoch=batch.producer_epoch,
                baseSequence=batch.base_sequence,
                isTransactional=batch.is_transactional,
                isControl=batch.is_control_batch,
                deleteHorizonMs=batch.first_timestamp if attrs & ATTR_DELETE_HORIZON else None,
            )
        n = 0
        for rec in batch:
            n += 1
            if batch.magic < 2:
                assert rec.validate_crc(), f"bad inner CRC at offset {rec.offset}"
            is_control = batch.magic >= 2 and batch.is_control_batch
            rows.append(
                {
                    "offset": rec.offset,
                    "timestamp": rec.timestamp,
                    "timestampType": -1 if rec.timestamp_type is None else rec.timestamp_type,
                    "key": _hex(rec.key),
                    "value": _hex(rec.value),
                    "headers": [[k, _hex(v)] for k, v in rec.headers] if batch.magic >= 2 else [],
                    "isControl": is_control,
                    "controlType": CONTROL_NAMES.get(rec.type) if is_control else None,
                    "batch": len(batches),
                }
            )
        if batch.magic < 2:
            batch_rows = [r for r in rows if r["batch"] == len(batches)]
            facts.update(
                baseOffset=batch_rows[0]["offset"],
                lastOffset=batch.base_offset,  # kafka-python: the wrapper/entry offset
                count=n,
                timestampType=-1 if batch.timestamp_type is None else batch.timestamp_type,
            )
        batches.append(facts)
        pos += size
    assert pos == len(data), f"{len(data) - pos} trailing bytes"
    return batches, rows


def verify(root: Path, manifest: dict[str, Any]) -> int:
    """Decode every .log with kafka-python and compare with MANIFEST.json; return file count."""
    logs = sorted(p.relative_to(root).as_posix() for p in root.glob("*-*/*.log"))
    assert logs == sorted(manifest["files"]), "manifest and files on disk differ"
    for rel in logs:
        info = manifest["files"][rel]
        path = root / rel
        got_batches, got_rows = _decoded_rows(path.read_bytes())
        want_batches = info["batches"]
        assert len(got_batches) == len(want_batches), (rel, len(got_batches), len(want_batches))
        for i, (got, want) in enumerate(zip(got_batches, want_batches, strict=True)):
            for k, v in got.items():
                assert want[k] == v, f"{rel} batch {i} {k}: manifest {want[k]!r}, decoded {v!r}"
        want_rows = info["rows"]
        assert len(got_rows) == len(want_rows), (rel, len(got_rows), len(want_rows))
        for got, want in zip(got_rows, want_rows, strict=True):
            for k, v in got.items():
                assert want[k] == v, f"{rel} offset {want['offset']} {k}: {want[k]!r} != {v!r}"
        # Index files: read back and check them against the decoded batches.
        base = info["segmentBaseOffset"]
        starts = {b["position"]: b["lastOffset"] for b in got_batches}
        raw = path.with_suffix(".index").read_bytes()
        index = [[base + o, p] for o, p in struct.iter_unpack(">ii", raw)]
        assert index == info["index"], rel
        for offset, position in index:
            assert starts.get(position) == offset, (rel, offset, position)
        raw = path.with_suffix(".timeindex").read_bytes()
        tindex = [[t, base + o] for t, o in struct.iter_unpack(">qi", raw)]
        assert tindex == info["timeindex"], rel
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in pairwise(tindex)), rel
        txn_path = path.with_suffix(".txnindex")
        aborts = {r["offset"] for r in got_rows if r["controlType"] == "ABORT"}
        if info["txnindex"]:
            entries = list(struct.iter_unpack(">hqqqq", txn_path.read_bytes()))
            assert [list(e[1:]) for e in entries] == [
                [t["producerId"], t["firstOffset"], t["lastOffset"], t["lastStableOffset"]]
                for t in info["txnindex"]
            ], rel
            assert all(e[0] == 0 and e[3] in aborts for e in entries), rel
        else:
            assert not txn_path.exists() and not aborts, rel
    return len(logs)


# --------------------------------------------------------------------------- main


@contextmanager
def pinned_gzip_mtime() -> Iterator[None]:
    """Make kafka-python's gzip output reproducible: gzip header mtime 0 (as Java writes)."""

    class _Clock:
        @staticmethod
        def time() -> float:
            return 0.0

    saved = gzip.time
    gzip.time = _Clock  # type: ignore[assignment]
    try:
        yield
    finally:
        gzip.time = saved


def build_all() -> list[PartitionLog]:
    """Build every sample partition (deterministically) in memory."""
    rng = random.Random(SEED)
    logs = [build_magic2(codec, rng) for codec in ("none", "gzip", "snappy", "lz4", "zstd")]
    logs.append(build_magic2_log_append_time(rng))
    logs += [build_legacy(1, codec, rng) for codec in ("none", "gzip", "snappy", "lz4")]
    logs.append(build_magic1_log_append_time(rng))
    logs += [build_legacy(0, codec, rng) for codec in ("none", "gzip", "snappy", "lz4")]
    logs.append(build_upgraded(rng))
    logs.append(build_compacted(rng))
    logs.append(build_transactions(rng))
    logs.append(build_multi_segment(rng))
    logs += [build_orders(p, rng) for p in (0, 1)]
    logs += list(build_librdkafka(rng))
    return logs


def dump_manifest(obj: Any, indent: int = 0) -> str:
    """JSON with one line per batch, row and txnindex entry, to keep the file small."""
    pad = " " * indent
    if isinstance(obj, dict) and indent < 4:
        items = [
            f"{pad} {json.dumps(k, ensure_ascii=False)}: {dump_manifest(v, indent + 1).lstrip()}"
            for k, v in obj.items()
        ]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}" + ("\n" if not indent else "")
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        items = [pad + "  " + json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


PAYLOADS_README = [
    "## Payloads: `payloads/`",
    "",
    "`payloads/` is a second log directory (its name is not a partition directory's, so reading",
    "`sample_segments/` does not descend into it) with values written by real serializers and",
    "the Schema Registry's storage topic next to them. `generate_payloads.py` writes it with",
    "confluent-kafka's `AvroSerializer`, `ProtobufSerializer` and `JSONSerializer` against its",
    "`mock://` registry (TopicNameStrategy), and this script's `PartitionLog` for the segments:",
    "",
    "| directory | contents |",
    "|---|---|",
    "| `_schemas-0/` | the registry's storage topic, records as Schema Registry 7.x writes them "
    "(Jackson JSON keys/values): NOOP, CONFIG (global BACKWARD), SCHEMA for every subject "
    "version the serializers registered (ids, versions and references as the mock registry "
    "assigned them), a soft-deleted version, a hard-deleted one (tombstone), DELETE_SUBJECT |",
    "| `orders-avro-0/` | Avro values, subject `orders-avro-value`, one segment per schema "
    "version (v2 adds a field with a default, v3 removes one); every Avro type and the "
    "decimal/date/timestamp-millis/uuid logical types; Avro keys (`orders-avro-key`); "
    "tombstones |",
    "| `orders-proto-0/` | Protobuf values (`payloads_src/shop/orders/orders.proto`, "
    "importing `shop/common/money.proto` as a registered reference and the well-known "
    "Timestamp): message indexes [0], [1] and [0, 0] |",
    "| `orders-json-0/` | JSON Schema values, subject `orders-json-value` |",
    "| `events-plainjson-0/` | plain JSON text values, no registry |",
    "| `orders-avro-bad-0/` | damaged values between good ones: no prefix, unknown magic "
    "byte, unknown schema id, truncated Avro body, a Protobuf schema's id |",
    "",
    "`payloads/MANIFEST.json` lists per partition and offset the serializer's input as JSON",
    "(its `notes` say how bytes, decimals, dates, timestamps and Protobuf are written), the",
    "schema id, subject and version, for Avro also the value resolved into the latest version;",
    "the registry's subjects, versions, ids and schema texts; and the batch/row/index facts of",
    "every `.log` as in `MANIFEST.json` above. The generator decodes every record back with",
    "confluent-kafka's deserializers and checks the files with kafka-python;",
    "`tests/test_payload_samples.py` does the same from kafkalog's raw reader. Regenerate",
    "(deterministic, byte-identical on re-run; needs confluent-kafka with its schema-registry",
    "extras, fastavro, protobuf and grpcio-tools, whose protoc compiles `payloads_src/` at",
    "generation time):",
    "",
    "```",
    ".venv/bin/python sample_segments/generate_payloads.py",
    "```",
    "",
]


def write_readme(root: Path, logs: Sequence[PartitionLog]) -> None:
    """Write README.md: one line per partition directory plus how to regenerate."""
    lines = [
        "# Sample Kafka log segments",
        "",
        "This directory is itself a Kafka *log directory*: each `<topic>-<partition>/` below is a",
        "partition replica directory holding `<20-digit base offset>.log` segments with their",
        "`.index`, `.timeindex` and (where a segment holds an ABORT marker) `.txnindex` files.",
        "Everything is generated by `generate.py` with real client libraries (kafka-python's",
        "record builders and librdkafka via confluent-kafka's mock cluster); the script only",
        "does what a broker does on append (offsets, leader epoch, LogAppendTime, control bit on",
        "markers, cleaner header overrides, and index files written with",
        f"`index.interval.bytes` = {INDEX_INTERVAL_BYTES}, one index entry per batch as segment",
        "recovery does). All segments are closed cleanly, so the index files are trimmed and the",
        "time index carries the final entry written on roll/close.",
        "",
        "`MANIFEST.json` lists, for every `.log`, the expected batches (magic, codec, count,",
        "offsets, position, ...) and rows (offset, timestamp, timestampType -1/0/1, key/value",
        "hex or null, headers, control flag, txn = committed/aborted/open) derived from the",
        "generator's inputs, plus the expected index entries (absolute offsets). For legacy",
        "batches `count` is the number of messages. The generator cross-checks every file by",
        "decoding it with kafka-python's `MemoryRecords`.",
        "",
        "The *segments* column lists the base offsets of each directory's segments.",
        "",
        "| directory | segments | contents |",
        "|---|---|---|",
    ]
    for log in logs:
        segs = ", ".join(str(s.base_offset) for s in log.segments)
        lines.append(f"| `{log.name}/` | {segs} | {log.description} |")
    lines += [
        "",
        "Regenerate (deterministic; byte-identical on re-run) from the repository root:",
        "",
        "```",
        ".venv/bin/python sample_segments/generate.py",
        "```",
        "",
        "It needs kafka-python 3.0.12, confluent-kafka (the bytes above come from its bundled",
        "librdkafka 2.16.0; another librdkafka may compress differently), crc32c, lz4, zstandard,",
        "python-snappy and `xxhash` (kafka-python uses it for the magic-0 LZ4 framing). It",
        "listens on nothing itself; librdkafka's mock broker binds to 127.0.0.1.",
        "",
        *PAYLOADS_README,
    ]
    (root / "README.md").write_text("\n".join(lines), encoding="utf-8")


def main() -> int:
    """Regenerate sample_segments/ and verify it."""
    if importlib.util.find_spec("xxhash") is None:
        # kafka-python computes the (deliberately wrong) magic-0 LZ4 header checksum with it.
        print(
            "generate.py needs the 'xxhash' package: .venv/bin/pip install xxhash", file=sys.stderr
        )
        return 2
    root = OUT_DIR
    with pinned_gzip_mtime():
        logs = build_all()
    names = [log.name for log in logs]
    assert len(set(names)) == len(names)
    for child in root.iterdir():
        if child.is_dir() and re.fullmatch(r".+-\d+", child.name):
            shutil.rmtree(child)
    files: dict[str, Any] = {}
    for log in logs:
        files.update(log.write(root))
    manifest = {
        "generator": "sample_segments/generate.py",
        "indexIntervalBytes": INDEX_INTERVAL_BYTES,
        "notes": (
            "timestamps are epoch ms (null for magic 0); timestampType -1 none, 0 CreateTime, "
            "1 LogAppendTime; key/value/header values are hex or null; txn is committed, "
            "aborted or open for transactional data rows, else null; index/timeindex offsets "
            "are absolute"
        ),
        "files": files,
    }
    text = dump_manifest(manifest)
    (root / "MANIFEST.json").write_text(text, encoding="utf-8")
    write_readme(root, logs)
    n = verify(root, json.loads(text))
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    print(f"wrote {len(logs)} partition dirs, {n} segments; verified; {total} bytes in total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
