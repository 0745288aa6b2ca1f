"""An independent reference decoder (and test encoder) for Redpanda log segments.

Written from Redpanda's own source, redpanda-data/redpanda at commit
1c6cff34ea8b4b65db02eb603d21dfef59c0f61c (2024-12-20), and from nothing in kafkalog_source:
the tests compare kafkalog's reader against it (tests/test_redpanda_reference.py). Pure Python:
stdlib, ``crc32c`` and the codec libraries (gzip, python-snappy, lz4, zstandard).

Facts taken, with their place in the source at that commit:

* Batch header on disk (``storage/record_batch_utils.cc:17-40``, ``batch_header_to_disk_iobuf``;
  fields ``model/record.h:485-508``): 61 bytes (``model/record.h:700-714``), little-endian
  (reflection ``adl`` of integers): header_crc u32, size_bytes i32 (header included), base_offset
  i64, type i8, crc u32, attrs i16, last_offset_delta i32, first_timestamp i64, max_timestamp
  i64, producer_id i64, producer_epoch i16, base_sequence i32, record_count i32.
* header_crc (``model/record_utils.cc:33-54``, ``internal_header_only_crc``): CRC-32C of the
  little-endian encoding of size_bytes..record_count, which is exactly header bytes 4..61.
* crc (``model/record_utils.cc:67-87``, ``crc_record_batch``): CRC-32C of the *big-endian*
  encoding of attrs..record_count followed by the records section (Kafka v2's CRC).
* A header of 61 zero bytes is a preallocated (fallocated) tail, not a batch
  (``storage/parser.cc:141-146``); a header whose header_crc does not match stops the parser
  (``storage/parser.cc:149-170``).
* Attributes (``model/record.h:317-366``): compression = attrs & 7 (0 none, 1 gzip, 2 snappy,
  3 lz4, 4 zstd), bit 3 (0x8) LogAppendTime, 0x10 transactional, 0x20 control.
  LogAppendTime (``model/record.h:837-847``, ``set_max_timestamp``; used by
  ``kafka/server/handlers/produce.cc:347-353``) only sets bit 3 and max_timestamp, so a consumer
  takes max_timestamp for every record of such a batch, as in Kafka.
* Records (``model/record_utils.cc:93-176``): Kafka v2 records: length varint, attributes i8,
  timestamp delta varlong, offset delta varint, key length + key, value length + value,
  header count, each header key length + key, value length + value; every varint is a zig-zag
  varint (``utils/vint.h``); a negative length is null.
* Codecs (``compression/compression.cc:36-72``): gzip, snappy in the snappy-java (xerial)
  framing, falling back to raw snappy when the magic is absent
  (``compression/internal/snappy_java_compressor.cc``; Redpanda itself writes the framing's
  version words little-endian, Java big-endian: neither is checked beyond min_version), LZ4
  frames, zstd frames.
* Batch types (``model/record_batch_types.h:20-62``); the types that take no Kafka offset
  (``model/record_batch_types.h:66-80``, ``offset_translator_batch_types``):
  raft_configuration (2), archival_metadata (19), version_fence (23), prefix_truncate (25),
  partition_properties_update (34), datalake_translation_state (38). Translation applies only in
  the ``kafka`` namespace (``raft/consensus.cc:88-95``). Each such batch is a gap of
  ``last_offset - base_offset + 1`` offsets (``storage/offset_translator.cc:65-69`` ->
  ``storage/offset_translator_state.cc`` ``add_gap``); Kafka offset = raft offset - delta, delta
  = the sum of the gaps before it (``offset_translator_state.cc:28-84``, ``delta`` /
  ``from_log_offset``); an offset inside a gap maps to the next Kafka offset. Every other type
  (tx_fence 10, tx_prepare 9, ...) keeps its Kafka offsets, but Kafka fetches return only
  raft_data (1) batches (``kafka/data/replicated_partition.cc:187-193``, ``type_filter``), so
  those offsets are holes a client never sees.
* Layout: ``<data_dir>/<ns>/<topic>/<partition>_<revision>/<base>-<term>-v1.log``
  (``storage/fs_utils.cc:19-41``); remote segment names ``<base>-<term>-v1.log`` (v1) or
  ``<base>-<committed>-<size>-<term>-v1.log`` (v2/v3), optionally ``.<archiver term>``
  (``cloud_storage/partition_manifest.cc:357-375``, ``cloud_storage/segment_path_utils.cc:20-50``).

Control records are Kafka's: key = version i16, type i16 (0 ABORT, 1 COMMIT), value = version
i16, coordinator epoch i32, all big-endian.
"""

from __future__ import annotations

import gzip
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crc32c

HEADER = struct.Struct("<IiqbIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
KAFKA_PART = struct.Struct(">hiqqqhii")  # attrs..record_count, as Kafka's CRC covers them
assert HEADER_SIZE == 61 and KAFKA_PART.size == 40

BATCH_TYPES = {
    1: "raft_data",
    2: "raft_configuration",
    3: "controller",
    4: "kvstore",
    5: "checkpoint",
    6: "topic_management_cmd",
    7: "ghost_batch",
    8: "id_allocator",
    9: "tx_prepare",
    10: "tx_fence",
    11: "tm_update",
    12: "user_management_cmd",
    13: "acl_management_cmd",
    14: "group_prepare_tx",
    15: "group_commit_tx",
    16: "group_abort_tx",
    17: "node_management_cmd",
    18: "data_policy_management_cmd",
    19: "archival_metadata",
    20: "cluster_config_cmd",
    21: "feature_update",
    22: "cluster_bootstrap_cmd",
    23: "version_fence",
    24: "tx_tm_hosted_trasactions",
    25: "prefix_truncate",
    26: "plugin_update",
    27: "tx_registry",
    28: "cluster_recovery_cmd",
    29: "compaction_placeholder",
    30: "role_management_cmd",
    31: "client_quota",
    32: "data_migration_cmd",
    33: "group_fence_tx",
    34: "partition_properties_update",
    35: "datalake_coordinator",
    36: "dl_placeholder",
    37: "dl_stm_command",
    38: "datalake_translation_state",
}
RAFT_DATA = 1
# model/record_batch_types.h:72-80 at 1c6cff34
NO_KAFKA_OFFSET_TYPES = frozenset({2, 19, 23, 25, 34, 38})
KAFKA_NAMESPACE = "kafka"

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CODEC_IDS = {name: i for i, name in CODECS.items()}
SNAPPY_JAVA_MAGIC = b"\x82SNAPPY\x00"

ATTR_CODEC = 0x7
ATTR_LOG_APPEND_TIME = 0x8
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

SEGMENT_NAME = re.compile(r"^(\d+)-(\d+)-v1\.log$")
REMOTE_SEGMENT_NAME = re.compile(r"^(\d+)-(?:(\d+)-(\d+)-)?(\d+)-v1\.log(?:\.(\d+))?$")
PARTITION_DIR = re.compile(r"^(\d+)_(\d+)$")


class DecodeError(ValueError):
    """Bytes the reference decoder refuses (it names file, position and reason)."""


# ---------------------------------------------------------------------------------- varints


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (utils/vint.h) at ``pos``: (value, next position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("varint runs past the end of its buffer")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(n: int) -> bytes:
    """The zig-zag varint of ``n`` (64-bit)."""
    u = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# ----------------------------------------------------------------------------------- codecs


def _snappy_raw_decompress(data: bytes) -> bytes:
    import snappy

    return snappy.uncompress(data)


def decompress(codec: int, data: bytes) -> bytes:
    """The records section of a batch compressed with ``codec`` (attrs & 7)."""
    if codec == 0:
        return data
    if codec == 1:
        return gzip.decompress(data)
    if codec == 2:
        if len(data) < 16 or data[:8] != SNAPPY_JAVA_MAGIC:
            return _snappy_raw_decompress(data)
        pos = 16  # magic, version, min_compatible_version (either byte order)
        out = bytearray()
        while pos < len(data):
            if pos + 4 > len(data):
                raise DecodeError("snappy-java chunk length cut short")
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if n < 0 or pos + n > len(data):
                raise DecodeError("snappy-java chunk runs past the data")
            out += _snappy_raw_decompress(data[pos : pos + n])
            pos += n
        return bytes(out)
    if codec == 3:
        import lz4.frame

        return lz4.frame.decompress(data)
    if codec == 4:
        import zstandard

        out = bytearray()
        rest = data
        while rest:  # one or more frames back to back
            dobj = zstandard.ZstdDecompressor().decompressobj()
            out += dobj.decompress(rest)
            if not dobj.eof:
                raise DecodeError("zstd frame cut short")
            rest = dobj.unused_data
        return bytes(out)
    raise DecodeError(f"unknown compression {codec}")


def compress(codec: str, data: bytes) -> bytes:
    """``data`` compressed as a Kafka client (or Redpanda) would store it.

    ``snappy`` is the snappy-java framing a Java client writes (version words big-endian, one
    chunk per 32 KiB); ``snappy-le`` the same framing as Redpanda's own compressor writes it
    (version words little-endian, compression/internal/snappy_java_compressor.cc).
    """
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data, mtime=0)
    if codec in ("snappy", "snappy-le"):
        import snappy

        order = ">" if codec == "snappy" else "<"
        out = bytearray(SNAPPY_JAVA_MAGIC + struct.pack(order + "ii", 1, 1))
        for i in range(0, max(len(data), 1), 32 * 1024):
            chunk = snappy.compress(data[i : i + 32 * 1024])
            out += struct.pack(">i", len(chunk)) + chunk
        return bytes(out)
    if codec == "lz4":
        import lz4.frame

        return lz4.frame.compress(data)
    if codec == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown codec {codec}")


# ---------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Record:
    """One Kafka v2 record of a batch."""

    attributes: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def _read_bytes(buf: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > end:
        raise DecodeError(f"{what} of {n} bytes runs past its record")
    return bytes(buf[pos : pos + n]), pos + n


def parse_records(section: bytes, count: int) -> list[Record]:
    """``count`` records from a (decompressed) records section, which they must fill exactly."""
    records = []
    pos = 0
    for i in range(count):
        length, pos = read_varint(section, pos)
        end = pos + length
        if length < 1 or end > len(section):
            raise DecodeError(f"record {i}: length {length} does not fit the records section")
        attributes = section[pos]
        pos += 1
        ts_delta, pos = read_varint(section, pos)
        off_delta, pos = read_varint(section, pos)
        key, pos = _read_bytes(section, pos, end, "key")
        value, pos = _read_bytes(section, pos, end, "value")
        n_headers, pos = read_varint(section, pos)
        if n_headers < 0:
            raise DecodeError(f"record {i}: negative header count {n_headers}")
        headers = []
        for _ in range(n_headers):
            hkey, pos = _read_bytes(section, pos, end, "header key")
            if hkey is None:
                raise DecodeError(f"record {i}: null header key")
            hval, pos = _read_bytes(section, pos, end, "header value")
            headers.append((hkey.decode("utf-8"), hval))
        if pos != end:
            raise DecodeError(f"record {i}: {end - pos} bytes left inside its length")
        records.append(Record(attributes, ts_delta, off_delta, key, value, tuple(headers)))
    if pos != len(section):
        raise DecodeError(f"{len(section) - pos} bytes after the last of {count} records")
    return records


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
    attributes: int = 0,
) -> bytes:
    """One Kafka v2 record (model/record_utils.cc:183-225, append_record_to_buffer)."""

    def blob(b: bytes | None) -> bytes:
        return write_varint(-1) if b is None else write_varint(len(b)) + b

    body = bytes([attributes]) + write_varint(timestamp_delta) + write_varint(offset_delta)
    body += blob(key) + blob(value) + write_varint(len(headers))
    for hk, hv in headers:
        body += blob(hk.encode("utf-8")) + blob(hv)
    return write_varint(len(body)) + body


# ---------------------------------------------------------------------------------- batches


@dataclass
class Batch:
    """One batch of a segment: its header, checks and records."""

    position: int
    header_crc: int
    size_bytes: int
    base_offset: int
    type: int
    crc: int
    attrs: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    header_crc_ok: bool
    crc_ok: bool
    records: list[Record] = field(default_factory=list)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def codec(self) -> str:
        return CODECS.get(self.attrs & ATTR_CODEC, f"unknown({self.attrs & ATTR_CODEC})")

    @property
    def is_control(self) -> bool:
        return bool(self.attrs & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attrs & ATTR_TRANSACTIONAL)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attrs & ATTR_LOG_APPEND_TIME)

    @property
    def type_name(self) -> str:
        return BATCH_TYPES.get(self.type, f"unknown({self.type})")

    def record_timestamp(self, r: Record) -> int:
        """The timestamp (ms) a Kafka consumer sees for ``r``."""
        return (
            self.max_timestamp if self.log_append_time else self.first_timestamp + r.timestamp_delta
        )


@dataclass
class Segment:
    """A decoded segment: its batches, where the data ended and the zero tail after it."""

    path: str
    batches: list[Batch]
    data_end: int
    zero_tail: int


def parse_segment(data: bytes, path: str = "<bytes>", *, strict: bool = True) -> Segment:
    """Decode every batch of a segment's bytes.

    ``strict`` raises :class:`DecodeError` on a bad header_crc or crc; otherwise the batch is
    kept with ``header_crc_ok`` / ``crc_ok`` false (records still decoded when they can be, as a
    summary tool would). A 61-byte zero header (or a zero remainder shorter than that) ends the
    data; whatever follows it must be zeros too.
    """
    batches: list[Batch] = []
    pos = 0
    n = len(data)
    while pos < n:
        rest = data[pos : pos + HEADER_SIZE]
        if not any(rest):
            if any(data[pos:]):
                first = pos + next(i for i, b in enumerate(data[pos:]) if b)
                raise DecodeError(f"{path}: byte {first}: data after the zero tail at {pos}")
            return Segment(path, batches, pos, n - pos)
        if len(rest) < HEADER_SIZE:
            raise DecodeError(f"{path}: byte {pos}: {len(rest)} bytes, a cut batch header")
        fields = HEADER.unpack(rest)
        header_crc, size_bytes = fields[0], fields[1]
        header_crc_ok = crc32c.crc32c(rest[4:]) == header_crc
        if strict and not header_crc_ok:
            raise DecodeError(f"{path}: byte {pos}: header_crc mismatch")
        if size_bytes < HEADER_SIZE or pos + size_bytes > n:
            raise DecodeError(f"{path}: byte {pos}: size_bytes {size_bytes} does not fit")
        section = data[pos + HEADER_SIZE : pos + size_bytes]
        attrs = fields[5]
        kafka_part = KAFKA_PART.pack(*fields[5:])
        crc_ok = crc32c.crc32c(section, crc32c.crc32c(kafka_part)) == fields[4]
        if strict and not crc_ok:
            raise DecodeError(f"{path}: byte {pos}: crc mismatch (batch at {fields[2]})")
        batch = Batch(pos, *fields, header_crc_ok, crc_ok)
        try:
            batch.records = parse_records(
                decompress(attrs & ATTR_CODEC, section), batch.record_count
            )
        except DecodeError as e:
            raise DecodeError(f"{path}: byte {pos}: batch at {batch.base_offset}: {e}") from None
        batches.append(batch)
        pos += size_bytes
    return Segment(path, batches, pos, 0)


def encode_batch(
    base_offset: int,
    records: Sequence[bytes] | Sequence[Record],
    *,
    batch_type: int = RAFT_DATA,
    codec: str = "none",
    attrs: int = 0,
    first_timestamp: int = 0,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A Redpanda batch (61-byte header + records) with both CRCs right.

    ``records`` are encoded records or :class:`Record` objects; ``attrs`` carries the flags
    (0x8, 0x10, 0x20), the codec's bits are added from ``codec``; ``last_offset_delta`` defaults
    to the largest offset delta and ``max_timestamp`` to the largest record timestamp.
    """
    raw = [
        r
        if isinstance(r, bytes)
        else encode_record(
            r.offset_delta, r.timestamp_delta, r.key, r.value, r.headers, r.attributes
        )
        for r in records
    ]
    parsed = parse_records(b"".join(raw), len(raw))
    if last_offset_delta is None:
        last_offset_delta = max((r.offset_delta for r in parsed), default=0)
    if max_timestamp is None:
        max_timestamp = first_timestamp + max((r.timestamp_delta for r in parsed), default=0)
    codec_id = CODEC_IDS["snappy" if codec == "snappy-le" else codec]
    attrs = (attrs & ~ATTR_CODEC) | codec_id
    section = b"".join(raw)
    if codec_id:
        section = compress(codec, section)
    tail = (
        attrs,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(raw),
    )
    crc = crc32c.crc32c(section, crc32c.crc32c(KAFKA_PART.pack(*tail)))
    size_bytes = HEADER_SIZE + len(section)
    header = HEADER.pack(0, size_bytes, base_offset, batch_type, crc, *tail)
    header_crc = crc32c.crc32c(header[4:])
    return struct.pack("<I", header_crc) + header[4:] + section


# ------------------------------------------------------------------------- partitions, rows


@dataclass(frozen=True)
class Row:
    """One record as a Kafka consumer of the partition sees it (raft_data batches only)."""

    topic: str | None
    partition: int | None
    kafka_offset: int
    raft_offset: int
    timestamp: int  # ms
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    batch_type: int
    is_control: bool
    is_transactional: bool
    producer_id: int
    producer_epoch: int
    segment: str
    control_type: int | None = None  # 0 ABORT, 1 COMMIT, ... for control records


@dataclass
class PartitionLog:
    """A partition directory decoded: its segments in offset order and its consumer rows."""

    namespace: str | None
    topic: str | None
    partition: int | None
    revision: int | None
    segments: list[Segment]
    rows: list[Row]
    raft_gaps: list[tuple[int, int]]  # (expected next raft offset, found) where offsets jump
    kafka_next_offset: int | None


def segment_name(name: str) -> tuple[int, int] | None:
    """(base offset, term) of a local segment file name ``<base>-<term>-v1.log``."""
    m = SEGMENT_NAME.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def partition_of(path: Path) -> tuple[str | None, str | None, int | None, int | None]:
    """(namespace, topic, partition, revision) from ``<ns>/<topic>/<p>_<rev>``."""
    m = PARTITION_DIR.match(path.name)
    if not m:
        return None, None, None, None
    return path.parent.parent.name, path.parent.name, int(m.group(1)), int(m.group(2))


def kafka_offset_map(batches: Iterable[Batch], namespace: str | None, base_delta: int = 0):
    """For each batch, (batch, delta): Kafka offset = raft offset - delta for its records.

    Outside the ``kafka`` namespace nothing is translated (delta 0). A batch of a type in
    :data:`NO_KAFKA_OFFSET_TYPES` adds ``last_offset - base_offset + 1`` to the delta of every
    later batch (its own offsets map to the next Kafka offset).
    """
    delta = base_delta
    out = []
    for b in batches:
        out.append((b, delta))
        if namespace == KAFKA_NAMESPACE and b.type in NO_KAFKA_OFFSET_TYPES:
            delta += b.last_offset_delta + 1
    return out, delta


def batch_rows(
    b: Batch, delta: int, topic: str | None, partition: int | None, segment: str
) -> list[Row]:
    """The consumer rows of one raft_data batch (control records included, flagged)."""
    rows = []
    for r in b.records:
        control_type = None
        if b.is_control and r.key is not None and len(r.key) >= 4:
            control_type = struct.unpack_from(">h", r.key, 2)[0]
        raft = b.base_offset + r.offset_delta
        rows.append(
            Row(
                topic,
                partition,
                raft - delta,
                raft,
                b.record_timestamp(r),
                1 if b.log_append_time else 0,
                r.key,
                r.value,
                r.headers,
                b.type,
                b.is_control,
                b.is_transactional,
                b.producer_id,
                b.producer_epoch,
                segment,
                control_type,
            )
        )
    return rows


def read_partition(
    directory: str | Path, *, strict: bool = True, base_delta: int = 0
) -> PartitionLog:
    """Decode every ``<base>-<term>-v1.log`` of a partition directory, in base-offset order.

    Rows are those a Kafka fetch returns: records of raft_data batches (control records
    included, flagged), with Kafka offsets translated in the ``kafka`` namespace (``base_delta``
    is the delta at the first segment, 0 for a log that starts at raft offset 0).
    """
    directory = Path(directory)
    ns, topic, partition, revision = partition_of(directory)
    files = sorted((segment_name(p.name), p) for p in directory.iterdir() if segment_name(p.name))
    segments = [parse_segment(p.read_bytes(), str(p), strict=strict) for _, p in files]
    all_batches = [(s, b) for s in segments for b in s.batches]
    mapped, delta = kafka_offset_map((b for _, b in all_batches), ns, base_delta)
    rows: list[Row] = []
    gaps = []
    expected = None
    for (seg, b), (_, d) in zip(all_batches, mapped, strict=True):
        if expected is not None and b.base_offset != expected:
            gaps.append((expected, b.base_offset))
        expected = b.last_offset + 1
        if b.type == RAFT_DATA:
            rows.extend(batch_rows(b, d, topic, partition, seg.path))
    next_kafka = None if expected is None else expected - delta
    if ns != KAFKA_NAMESPACE:
        next_kafka = None
    return PartitionLog(ns, topic, partition, revision, segments, rows, gaps, next_kafka)


def read_committed(rows: Sequence[Row]) -> list[Row]:
    """``rows`` as a read_committed consumer of the archive sees them.

    A transactional batch's records are kept when the producer's next control record after them
    is COMMIT, dropped when it is ABORT or when no marker follows (undecided). Control records
    and non-transactional records are kept (control records are never data rows).
    """
    decided: dict[int, int] = {}  # row index -> control type that decides it
    open_rows: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        if r.is_control:
            for j in open_rows.pop(r.producer_id, []):
                decided[j] = r.control_type if r.control_type is not None else -1
        elif r.is_transactional:
            open_rows.setdefault(r.producer_id, []).append(i)
    return [
        r
        for i, r in enumerate(rows)
        if r.is_control or not r.is_transactional or decided.get(i) == 1
    ]


def row_dicts(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Rows in the shape compared against the product (timestamps in ms)."""
    return [
        {
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.kafka_offset,
            "timestamp_ms": r.timestamp,
            "timestampType": r.timestamp_type,
            "key": r.key,
            "value": r.value,
            "headers": list(r.headers) or None,
        }
        for r in rows
    ]


# ------------------------------------------------------------------------- tiered storage

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxhash32(data: bytes, seed: int = 0) -> int:
    """XXH32 (hashing/xx.h ``xxhash_32``, seed 0), for Tiered Storage object keys."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos + 4 * i)
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def remote_segment_key(
    ns: str, topic: str, partition: int, revision: int, name: str, archiver_term: int | None
) -> str:
    """A segment's object key (cloud_storage/segment_path_utils.cc:39-50, prefixed_segment_path)."""
    path = f"{ns}/{topic}/{partition}_{revision}/{name}"
    suffix = "" if archiver_term is None else f".{archiver_term}"
    return f"{xxhash32(path.encode()):08x}/{path}{suffix}"


def partition_manifest_key(ns: str, topic: str, partition: int, revision: int) -> str:
    """A partition manifest's JSON object key (cloud_storage/partition_path_utils.cc:32-50)."""
    ntp_rev = f"{ns}/{topic}/{partition}_{revision}"
    return f"{xxhash32(ntp_rev.encode()) & 0xF0000000:08x}/meta/{ntp_rev}/manifest.json"
