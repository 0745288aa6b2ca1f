"""Redpanda's on-disk log format, as data (no I/O): the batch header, the batch types, which
types take a Kafka offset, the offset translation rule, and the names of segment files,
partition directories and tiered-storage objects.

Every fact here was read from redpanda-data/redpanda at commit 1c6cff34 (2024-12-20):

* ``src/v/storage/record_batch_utils.cc`` (``batch_header_to_disk_iobuf``) and
  ``src/v/model/record.h``: a segment is batches back to back; each starts with a 61-byte
  **little-endian** header: header_crc u32, size_bytes i32 (the whole batch, header included),
  base_offset i64 (a raft offset), type i8, crc u32, attrs i16, last_offset_delta i32,
  first_timestamp i64, max_timestamp i64, producer_id i64, producer_epoch i16, base_sequence
  i32, record_count i32; then the records, Kafka v2 records exactly (compressed by attrs & 7).
* ``src/v/model/record_utils.cc``: ``header_crc`` (``internal_header_only_crc``) is CRC-32C of
  the header's fields after it in their little-endian encoding, that is of header bytes 4..61;
  ``crc`` (``crc_record_batch``) is CRC-32C of the **big-endian** attrs..record_count followed
  by the records: Kafka v2's batch CRC, the same value over the same bytes once the header is
  written as Kafka's.
* ``src/v/storage/parser.cc``: a header of 61 zero bytes ends the data (a preallocated tail,
  ``fallocated_file_read_zero_bytes_for_header``); a header whose header_crc does not hold stops
  the parser (``header_only_crc_missmatch``).
* ``src/v/model/record_batch_types.h``: the batch types (:data:`BATCH_TYPES`); only
  ``raft_data`` (1) reaches Kafka clients. ``offset_translator_batch_types()`` lists the types
  that take **no** Kafka offset (:data:`NO_KAFKA_OFFSET`: raft_configuration, archival_metadata,
  version_fence, prefix_truncate, partition_properties_update, datalake_translation_state);
  every other type (tx_fence, tx_prepare, ghost_batch, the group_* transaction batches, ...)
  takes Kafka offsets like data, and a Kafka fetch skips it: consumers see a gap there.
* ``src/v/storage/offset_translator_state.h``: **Kafka offset = raft offset - delta**, where the
  delta at a raft offset is the number of offsets taken before it by batches of the
  :data:`NO_KAFKA_OFFSET` types (:func:`kafka_offset`). Redpanda keeps the delta at the start of
  its log in the kvstore (key space ``offset_translator``, keyed by raft group id, a serde
  ``persisted_batches_map``; ``storage/offset_translator.cc``), in the raft snapshot's
  ``log_start_delta``, and per uploaded segment in the partition manifest (``delta_offset``):
  it is not in the segment files, so a partition whose first segment on disk does not start
  at raft offset 0 cannot be translated from its segments alone.
* ``src/v/storage/fs_utils.cc`` and ``src/v/model/fundamental.h`` (``ntp::path``): local
  segments are ``<data_dir>/<namespace>/<topic>/<partition>_<revision>/<base>-<term>-v1.log``;
  user topics are in namespace ``kafka``, Redpanda's own state in ``kafka_internal`` and
  ``redpanda``.
* ``src/v/cloud_storage/segment_path_utils.cc``, ``partition_path_utils.cc`` and
  ``partition_manifest.cc``: tiered-storage segment objects are
  ``{hash:08x}/<ns>/<topic>/<p>_<rev>/<name>[.<archiver term>]`` (or
  ``<cluster uuid>/<ns>/<topic>/<p>_<rev>/...`` with a remote label), the name
  ``<base>-<term>-v1.log`` (format v1) or ``<base>-<committed>-<size>-<term>-v1.log`` (v2, v3);
  partition manifests ``{hash:08x}/meta/<ns>/<topic>/<p>_<rev>/manifest.{json,bin}``
  (``<uuid>/meta/...`` labelled), whose segments carry ``base_offset``, ``committed_offset``,
  ``delta_offset`` (the delta at the segment's base), ``delta_offset_end``, ``segment_term``,
  ``archiver_term``, ``size_bytes`` and ``sname_format``. A compacted remote segment's batch
  may cover many offsets with one record (``last_offset_delta`` is the span, not
  ``record_count - 1``).
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass

import numpy as np

from .batch import (
    CONTROL_BIT,
    LOG_OVERHEAD,
    TRANSACTIONAL_BIT,
    V2_CRC_AT,
    V2_CRC_FROM,
    V2_HEADER,
    V2_HEADER_SIZE,
)

HEADER = struct.Struct("<IiqbIhiqqqhii")
HEADER_SIZE = 61
assert HEADER.size == HEADER_SIZE == V2_HEADER_SIZE
HEADER_CRC_FROM = 4  # header_crc covers header bytes 4..61
SIZE_AT = 4
BASE_OFFSET_AT = 8
TYPE_AT = 16
CRC_AT = 17
ATTRS_AT = 21  # attrs..record_count: the same fields, in the same order, as Kafka's v2 header
ATTRS_TAIL = struct.Struct("<hiqqqhii")  # attrs..record_count, little-endian
ATTRS_TAIL_BE = struct.Struct(">hiqqqhii")  # the same, as Kafka's CRC covers them
ZERO_HEADER = bytes(HEADER_SIZE)
SIZE_FIELD = struct.Struct("<i")  # size_bytes, at SIZE_AT
# the header as a numpy record (packed: 61 bytes), and Kafka's v2 header the same way
HEADER_DTYPE = np.dtype(
    [
        ("header_crc", "<u4"),
        ("size", "<i4"),
        ("base_offset", "<i8"),
        ("type", "i1"),
        ("crc", "<u4"),
        ("attrs", "<i2"),
        ("last_offset_delta", "<i4"),
        ("first_timestamp", "<i8"),
        ("max_timestamp", "<i8"),
        ("producer_id", "<i8"),
        ("producer_epoch", "<i2"),
        ("base_sequence", "<i4"),
        ("record_count", "<i4"),
    ]
)
KAFKA_HEADER_DTYPE = np.dtype(
    [
        ("base_offset", ">i8"),
        ("length", ">i4"),
        ("leader_epoch", ">i4"),
        ("magic", "i1"),
        ("crc", ">u4"),
        ("attrs", ">i2"),
        ("last_offset_delta", ">i4"),
        ("first_timestamp", ">i8"),
        ("max_timestamp", ">i8"),
        ("producer_id", ">i8"),
        ("producer_epoch", ">i2"),
        ("base_sequence", ">i4"),
        ("record_count", ">i4"),
    ]
)
assert HEADER_DTYPE.itemsize == KAFKA_HEADER_DTYPE.itemsize == HEADER_SIZE
# the fields Kafka's header carries over unchanged (in its own byte order)
SHARED_FIELDS = (
    "crc",
    "attrs",
    "last_offset_delta",
    "first_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "record_count",
)

RAFT_DATA = 1
BATCH_TYPES: dict[int, str] = {
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
MAX_TYPE = 64  # above any type Redpanda defines (38 at 1c6cff34): a test for headers in noise
# offset_translator_batch_types(): batches of these types take no Kafka offset
NO_KAFKA_OFFSET = frozenset({2, 19, 23, 25, 34, 38})

KAFKA_NAMESPACE = "kafka"  # user topics; kafka_internal and redpanda hold Redpanda's own state
INTERNAL_NAMESPACES = ("kafka_internal", "redpanda")


def type_name(batch_type: int) -> str:
    """``raft_data`` for 1, ...; ``type_<n>`` for a type this version does not name."""
    return BATCH_TYPES.get(batch_type, f"type_{batch_type}")


def takes_kafka_offset(batch_type: int) -> bool:
    """Whether a batch of ``batch_type`` takes Kafka offsets (every type but
    :data:`NO_KAFKA_OFFSET`'s); only raft_data batches hold records a Kafka client reads."""
    return batch_type not in NO_KAFKA_OFFSET


def kafka_offset(raft_offset: int, delta: int) -> int:
    """The Kafka offset of ``raft_offset``, ``delta`` being the offsets taken before it by
    batches of the :data:`NO_KAFKA_OFFSET` types (``offset_translator_state::from_log_offset``)."""
    return raft_offset - delta


@dataclass(frozen=True, slots=True)
class Header:
    """One Redpanda batch header, decoded (offsets are raft offsets)."""

    header_crc: int
    size: int
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

    @property
    def last_offset(self) -> int:
        """The batch's last raft offset (base + last_offset_delta, never from record_count)."""
        return self.base_offset + self.last_offset_delta

    @property
    def offsets(self) -> int:
        """How many raft offsets the batch covers."""
        return self.last_offset_delta + 1


def unpack_header(data: bytes | memoryview, at: int = 0) -> Header:
    """The header at ``data[at:at + 61]``."""
    return Header(*HEADER.unpack_from(data, at))


def header_crc_input(data: bytes | memoryview, at: int = 0) -> bytes | memoryview:
    """The bytes header_crc covers, of the header at ``at``."""
    return data[at + HEADER_CRC_FROM : at + HEADER_SIZE]


def plausible(h: Header, room: int) -> bool:
    """Whether ``h`` frames a batch that fits in ``room`` bytes (from its first byte)."""
    return HEADER_SIZE <= h.size <= room and h.last_offset_delta >= 0 and h.base_offset >= 0


def kafka_header(
    data: bytes | memoryview,
    at: int,
    kafka_base: int,
    leader_epoch: int,
    size: int | None = None,
    empty: bool = False,
    clear_bits: int = 0,
    last_offset_delta: int | None = None,
) -> bytes:
    """The Kafka v2 header of the Redpanda batch whose header is at ``data[at:]``, based at
    Kafka offset ``kafka_base``: the same attrs..record_count and crc (Kafka's CRC covers the
    same bytes), batchLength ``size - 12``, magic 2, the partition leader epoch ``leader_epoch``
    (the raft term). ``empty``: the header of an empty batch covering the same offsets (a
    non-data batch that takes Kafka offsets; its CRC recomputed by the caller: :func:`empty_tail`).
    ``clear_bits``: attribute bits cleared (and the CRC then the caller's to fix)."""
    h = HEADER.unpack_from(data, at)
    attrs, delta, first_ts, max_ts, pid, epoch, seq, count = h[5:]
    if empty:
        attrs, count = attrs & ~(CONTROL_BIT | TRANSACTIONAL_BIT | 0x07), 0
    attrs &= ~clear_bits
    if last_offset_delta is not None:
        delta = last_offset_delta
    length = (h[1] if size is None else size) - LOG_OVERHEAD
    return V2_HEADER.pack(
        kafka_base,
        length,
        leader_epoch,
        2,
        h[4],
        attrs,
        delta,
        first_ts,
        max_ts,
        pid,
        epoch,
        seq,
        count,
    )


def crc_input_of_header(kafka_hdr: bytes) -> bytes:
    """The header part of what Kafka's CRC covers (attributes to the end), of a Kafka header."""
    return kafka_hdr[V2_CRC_FROM:V2_HEADER_SIZE]


def with_crc(kafka_hdr: bytes, crc: int) -> bytes:
    """``kafka_hdr`` with its CRC field set to ``crc``."""
    return kafka_hdr[:V2_CRC_AT] + struct.pack(">I", crc & 0xFFFFFFFF) + kafka_hdr[V2_CRC_FROM:]


def _records(raw: np.ndarray) -> np.ndarray:
    """Header rows ``raw`` ((n, 61) uint8) as packed records of :data:`HEADER_DTYPE` (a view)."""
    return np.ascontiguousarray(raw).reshape(-1).view(HEADER_DTYPE)


def header_columns(raw: np.ndarray) -> dict[str, np.ndarray]:
    """The fields the walk needs of every header row of ``raw`` ((n, 61) uint8), int64 each."""
    rec = _records(raw)
    return {
        name: rec[name].astype(np.int64)
        for name in ("size", "base_offset", "type", "last_offset_delta", "attrs", "record_count")
    }


def kafka_headers(
    raw: np.ndarray, kafka_base: np.ndarray, lengths: np.ndarray, term: int
) -> np.ndarray:
    """The Kafka v2 headers ((n, 61) uint8) of the Redpanda header rows ``raw``: base offsets
    ``kafka_base``, batchLength ``lengths``, leader epoch ``term``, magic 2, and the CRC and
    attrs..record_count carried over (:data:`SHARED_FIELDS`, big-endian as Kafka has them: numpy
    swaps the bytes field by field, from one packed record layout to the other)."""
    rec = _records(raw)
    out = np.empty(len(rec), dtype=KAFKA_HEADER_DTYPE)
    out["base_offset"] = kafka_base
    out["length"] = lengths
    out["leader_epoch"] = term
    out["magic"] = 2
    for name in SHARED_FIELDS:
        out[name] = rec[name]
    return out.view(np.uint8).reshape(len(rec), HEADER_SIZE)


# ---- names ----------------------------------------------------------------------------------

# local: <base>-<term>-v<version>.log
LOCAL_SEGMENT_NAME = re.compile(r"^(?P<base>[0-9]+)-(?P<term>[0-9]+)-v(?P<version>[0-9]+)\.log$")
# tiered storage v1: <base>-<term>-v1.log[.<archiver term>]
REMOTE_V1_NAME = re.compile(
    r"^(?P<base>[0-9]+)-(?P<term>[0-9]+)-v1\.log(?:\.(?P<archiver>[0-9]+))?$"
)
# tiered storage v2/v3: <base>-<committed>-<size>-<term>-v1.log[.<archiver term>]
REMOTE_V2_NAME = re.compile(
    r"^(?P<base>[0-9]+)-(?P<committed>[0-9]+)-(?P<size>[0-9]+)-(?P<term>[0-9]+)-v1\.log"
    r"(?:\.(?P<archiver>[0-9]+))?$"
)
PARTITION_DIR_NAME = re.compile(r"^(?P<partition>[0-9]+)_(?P<revision>[0-9]+)$")
# a tiered-storage bucket's first level: an 8-hex-digit hash, or a cluster uuid (labelled)
HASH_PREFIX = re.compile(
    r"^(?:[0-9a-f]{8}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"
)
MANIFEST_JSON = "manifest.json"
MANIFEST_BIN = "manifest.bin"
META_DIR = "meta"


@dataclass(frozen=True, slots=True)
class SegmentName:
    """What a Redpanda segment's file name says: its first raft offset and term; for a v2/v3
    tiered-storage name also the committed (last) raft offset and size; the archiver term of
    a tiered-storage object when the name has one."""

    base: int
    term: int
    committed: int | None = None
    size: int | None = None
    archiver_term: int | None = None


def parse_segment_name(name: str) -> SegmentName | None:
    """A Redpanda segment file or object name parsed; None for any other name."""
    m = REMOTE_V2_NAME.match(name)
    if m:
        arch = m.group("archiver")
        return SegmentName(
            int(m.group("base")),
            int(m.group("term")),
            int(m.group("committed")),
            int(m.group("size")),
            int(arch) if arch else None,
        )
    m = REMOTE_V1_NAME.match(name)
    if m:
        arch = m.group("archiver")
        return SegmentName(
            int(m.group("base")), int(m.group("term")), None, None, int(arch) if arch else None
        )
    m = LOCAL_SEGMENT_NAME.match(name)
    if m:
        return SegmentName(int(m.group("base")), int(m.group("term")))
    return None


def parse_partition_dir(name: str) -> tuple[int, int] | None:
    """``"3_17"`` → (partition 3, revision 17); None for another name."""
    m = PARTITION_DIR_NAME.match(name)
    return (int(m.group("partition")), int(m.group("revision"))) if m else None


# ---- partition manifests ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ManifestSegment:
    """One segment of a partition manifest (offsets are raft offsets)."""

    name: str  # the object name (without the archiver term suffix)
    base_offset: int
    committed_offset: int
    delta_offset: int | None
    delta_offset_end: int | None
    size_bytes: int
    segment_term: int
    archiver_term: int | None
    is_compacted: bool


@dataclass(frozen=True, slots=True)
class PartitionManifest:
    """A partition manifest (JSON, version 1): namespace, topic, partition, revision, its
    segments, sorted by base offset."""

    namespace: str
    topic: str
    partition: int
    revision: int
    start_offset: int | None
    last_offset: int | None
    segments: tuple[ManifestSegment, ...]

    def object_name(self, seg: ManifestSegment) -> str:
        """The segment object's name below the partition prefix (archiver term suffix too)."""
        return seg.name if seg.archiver_term is None else f"{seg.name}.{seg.archiver_term}"


def _int(obj: dict, key: str, default: int | None = None) -> int | None:
    value = obj.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key!r} is {value!r}, not an integer")
    return value


def parse_manifest_json(data: bytes | str) -> PartitionManifest:
    """A partition manifest in JSON (``partition_manifest::update``'s keys). Raises ValueError
    saying what is wrong."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if doc.get("version") != 1:
        raise ValueError(f"manifest version {doc.get('version')!r}, not 1")
    for key in ("namespace", "topic"):
        if not isinstance(doc.get(key), str):
            raise ValueError(f"no {key!r} string")
    segs = doc.get("segments") or {}
    if not isinstance(segs, dict):
        raise ValueError("'segments' is not an object")
    out = []
    for name, meta in segs.items():
        if not isinstance(meta, dict):
            raise ValueError(f"segment {name!r} is not an object")
        parsed = parse_segment_name(name)
        base = _int(meta, "base_offset", parsed.base if parsed else None)
        committed = _int(meta, "committed_offset")
        if base is None or committed is None:
            raise ValueError(f"segment {name!r} has no base_offset or committed_offset")
        fmt = _int(meta, "sname_format", 1)
        term = _int(meta, "segment_term", parsed.term if parsed else 0) or 0
        size = _int(meta, "size_bytes", 0) or 0
        if fmt in (2, 3):
            obj = f"{base}-{committed}-{size}-{term}-v1.log"
        else:
            obj = f"{base}-{term}-v1.log"
        out.append(
            ManifestSegment(
                obj,
                base,
                committed,
                _int(meta, "delta_offset"),
                _int(meta, "delta_offset_end"),
                size,
                term,
                _int(meta, "archiver_term"),
                bool(meta.get("is_compacted", False)),
            )
        )
    out.sort(key=lambda s: s.base_offset)
    return PartitionManifest(
        doc["namespace"],
        doc["topic"],
        _int(doc, "partition", 0) or 0,
        _int(doc, "revision", 0) or 0,
        _int(doc, "start_offset"),
        _int(doc, "last_offset"),
        tuple(out),
    )


__all__ = [
    "BATCH_TYPES",
    "HEADER",
    "HEADER_SIZE",
    "INTERNAL_NAMESPACES",
    "KAFKA_NAMESPACE",
    "NO_KAFKA_OFFSET",
    "RAFT_DATA",
    "Header",
    "ManifestSegment",
    "PartitionManifest",
    "SegmentName",
    "kafka_header",
    "kafka_offset",
    "parse_manifest_json",
    "parse_partition_dir",
    "parse_segment_name",
    "takes_kafka_offset",
    "type_name",
    "unpack_header",
]
