"""The inputs and the on-disk facts of ``generate.py``: records as fed to a client library,
producer identities, the manifest row, the batch header offsets and flags of SEGMENT_SPEC, the
broker's in-place header rewrites (offsets, leader epoch, LogAppendTime, control bit, cleaner
overrides, each with its CRC recomputed) and a segment's sparse index bookkeeping.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import crc32c

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
