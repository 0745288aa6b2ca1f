"""Lay real Kafka segments out as Aiven's tiered-storage plugin uploads them (test data only).

Written from the plugin's formats (github.com/Aiven-Open/tiered-storage-for-apache-kafka,
``core/src/main/java/io/aiven/kafka/tieredstorage/``), independently of
``kafkalog_source.layout.tiered``:

* keys: ``ObjectKeyFactory.mainPath`` + ``"." + suffix``, ids as Kafka ``Uuid.toString()``;
* ``.log``: ``BaseTransformChunkEnumeration`` cuts ``chunk.size`` chunks, and
  ``CompressionChunkEnumeration`` makes each one zstd frame with its content size;
* ``.rsm-manifest``: Jackson's compact JSON of ``SegmentManifestV1`` with the chunk index of
  ``TransformFinisher`` ("fixed" without compression, "variable" with it, sizes packed by
  ``ChunkSizesBinaryCodec``, zstd-compressed and base64-encoded by
  ``TransformedChunksSerializer``);
* ``.indexes``: ``KafkaRemoteStorageManager.uploadIndexes``: offset, time, producer-snapshot,
  leader-epoch and (when present) transaction index, concatenated, never compressed.

``encryption=True`` writes an encrypted segment's manifest ("fixed" chunk index whose stored
chunks are 12-byte IV + AES-GCM output, and an ``encryption`` entry) with random bytes of those
sizes in place of the ciphertext: kafkalog must refuse it before reading any chunk.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import zstandard

GCM_IV = 12  # SegmentEncryptionMetadataV1.IV_SIZE
GCM_TAG = 16  # AES/GCM/NoPadding with a 128-bit tag


def kafka_uuid(raw: bytes) -> str:
    """Kafka ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    assert len(raw) == 16
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def main_path(topic: str, topic_id: str, partition: int, start_offset: int, segment_id: str) -> str:
    """``ObjectKeyFactory.mainPath``: ``topic-topicId/partition/<20 digits>-segmentId``."""
    return f"{topic}-{topic_id}/{partition}/{start_offset:020d}-{segment_id}"


def pack_chunk_sizes(values: list[int]) -> bytes:
    """``ChunkSizesBinaryCodec.encode``."""
    if not values:
        return struct.pack(">i", 0)
    if len(values) == 1:
        return struct.pack(">ii", 1, values[0])
    head = values[:-1]
    base = min(head)
    width = max(1 if v - base <= 0xFF else 2 if v - base <= 0xFFFF else 3 if v - base <= 0xFFFFFF else 4 for v in head)  # fmt: skip
    body = b"".join((v - base).to_bytes(4, "big")[4 - width :] for v in head)
    return struct.pack(">iiB", len(values), base, width) + body + struct.pack(">i", values[-1])


def encode_chunk_sizes(values: list[int]) -> str:
    """``TransformedChunksSerializer``: base64 of a zstd frame (content size set) of the packing."""
    packed = pack_chunk_sizes(values)
    frame = zstandard.ZstdCompressor(level=3, write_content_size=True).compress(packed)
    return base64.b64encode(frame).decode()


def fixed_chunk_index(chunk: int, size: int, each: int, last: int) -> dict:
    """A ``FixedSizeChunkIndex`` as Jackson writes it."""
    return {
        "type": "fixed",
        "originalChunkSize": chunk,
        "originalFileSize": size,
        "transformedChunkSize": each,
        "finalTransformedChunkSize": last,
    }


def variable_chunk_index(chunk: int, size: int, stored: list[int]) -> dict:
    """A ``VariableSizeChunkIndex`` as Jackson writes it."""
    return {
        "type": "variable",
        "originalChunkSize": chunk,
        "originalFileSize": size,
        "transformedChunks": encode_chunk_sizes(stored),
    }


def segment_indexes(sizes: list[int | None]) -> dict:
    """``SegmentIndexesV1Builder``: offset, timestamp, producerSnapshot, leaderEpoch, transaction
    at consecutive positions (a None transaction size: no transaction index, JSON null)."""
    out, pos = {}, 0
    for name, size in zip(
        ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction"),
        sizes,
        strict=True,
    ):
        if size is None:
            out[name] = None
            continue
        out[name] = {"position": pos, "size": size}
        pos += size
    return out


def segment_metadata(
    topic: str,
    topic_id: str,
    partition: int,
    segment_id: str,
    start: int,
    end: int,
    max_timestamp_ms: int = 0,
    broker_id: int = 1,
    event_timestamp_ms: int = 0,
    leader_epochs: dict[int, int] | None = None,
) -> dict:
    """``RemoteLogSegmentMetadata`` through ``KafkaTypeSerdeModule``'s mixins."""
    return {
        "remoteLogSegmentId": {
            "topicIdPartition": {
                "topicId": topic_id,
                "topicPartition": {"topic": topic, "partition": partition},
            },
            "id": segment_id,
        },
        "startOffset": start,
        "endOffset": end,
        "maxTimestampMs": max_timestamp_ms,
        "brokerId": broker_id,
        "eventTimestampMs": event_timestamp_ms,
        "segmentLeaderEpochs": {
            str(k): v
            for k, v in (leader_epochs if leader_epochs is not None else {0: start}).items()
        },
    }


def manifest_json(
    chunk_index: dict,
    indexes: dict,
    compression: bool,
    metadata: dict,
    encryption: dict | None = None,
) -> str:
    """``SegmentManifestV1`` as the plugin's ObjectMapper writes it (compact, in field order;
    ``encryption`` only when present)."""
    doc: dict = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": indexes}
    doc["compression"] = compression
    if encryption is not None:
        doc["encryption"] = encryption
    doc["remoteLogSegmentMetadata"] = metadata
    return json.dumps(doc, separators=(",", ":"))


@dataclass
class TieredSegment:
    """The three objects written for one segment, and what went into them."""

    log: Path
    indexes: Path
    manifest: Path
    original: bytes
    stored_sizes: list[int]
    index_files: dict[str, bytes | None]


def write_tiered(
    dest: Path,
    segment: Path,
    *,
    prefix: str = "tiered/",
    topic: str = "orders",
    topic_id: bytes = bytes(range(1, 17)),
    partition: int = 0,
    segment_id: bytes = bytes(range(100, 116)),
    chunk_size: int = 4096,
    compression: bool = True,
    encryption: bool = False,
    end_offset: int | None = None,
) -> TieredSegment:
    """Upload ``segment`` (a local ``.log`` with its sibling index files) under ``dest`` as the
    plugin would; returns the written paths."""
    data = segment.read_bytes()
    start = int(segment.name[:20])
    tid, sid = kafka_uuid(topic_id), kafka_uuid(segment_id)
    stem = dest / (prefix + main_path(topic, tid, partition, start, sid))
    stem.parent.mkdir(parents=True, exist_ok=True)

    chunks = [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]
    if compression:
        cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
        stored = [cctx.compress(c) for c in chunks]
    else:
        stored = list(chunks)
    if encryption:
        stored = [os.urandom(GCM_IV + len(c) + GCM_TAG) for c in stored]
    sizes = [len(c) for c in stored]
    if compression:
        ci = variable_chunk_index(chunk_size, len(data), sizes)
    else:
        each = sizes[0] if len(sizes) > 1 else chunk_size + (GCM_IV + GCM_TAG if encryption else 0)
        ci = fixed_chunk_index(chunk_size, len(data), each, sizes[-1] if sizes else 0)

    def sibling(suffix: str) -> bytes | None:
        p = segment.with_suffix(suffix)
        return p.read_bytes() if p.exists() else None

    files = {
        ".index": sibling(".index") or b"",
        ".timeindex": sibling(".timeindex") or b"",
        ".snapshot": sibling(".snapshot") or b"",
        "leader-epoch-checkpoint": f"0\n1\n0 {start}\n".encode(),
        ".txnindex": sibling(".txnindex"),
    }
    blobs = [files[k] for k in (".index", ".timeindex", ".snapshot", "leader-epoch-checkpoint")]
    txn = files[".txnindex"]
    if encryption:
        blobs = [os.urandom(GCM_IV + len(b) + GCM_TAG) if b else b"" for b in blobs]
    idx_sizes: list[int | None] = [len(b) for b in blobs] + [None if txn is None else len(txn)]
    if txn is not None:
        blobs.append(txn)
    enc = None
    if encryption:
        enc = {
            "dataKey": "key-pair-1:" + base64.b64encode(os.urandom(256)).decode(),
            "aad": base64.b64encode(os.urandom(32)).decode(),
        }
    meta = segment_metadata(
        topic, tid, partition, sid, start, start if end_offset is None else end_offset
    )
    log_path = Path(str(stem) + ".log")
    log_path.write_bytes(b"".join(stored))
    idx_path = Path(str(stem) + ".indexes")
    idx_path.write_bytes(b"".join(blobs))
    man_path = Path(str(stem) + ".rsm-manifest")
    man_path.write_text(manifest_json(ci, segment_indexes(idx_sizes), compression, meta, enc))
    return TieredSegment(log_path, idx_path, man_path, data, sizes, files)
