"""What the ``dump`` and ``verify`` commands share: batch headers, CRC checks and reader rows.

Nothing here decodes records itself. Batch headers come from the framing layer
(:func:`~kafkalog_source.framing.walk.walk_classified`), records from the reader
(:class:`~kafkalog_source.reader.RangeReader`, the decoder behind the data source). Two facts the
reader's output does not carry are read here with the same layers:

* the CRC and validity of each inner message of a compressed legacy (v0/v1) wrapper: the wrapper
  is decompressed with :func:`kafkalog_source.codecs.decompress` and each inner entry's header is
  parsed with :func:`~kafkalog_source.framing.headers.parse_header`, then CRC-32 checked;
* the key and value sizes of control records other than transaction markers (the reader hands
  control records out with a null key and value): for an uncompressed control batch the length
  varints of its records are read; markers need no reading (key 4 bytes, value 6 bytes, as the
  broker writes them, SEGMENT_SPEC §4.1).

The reader is imported lazily, inside the functions that need it, so ``kafkalog dump`` without
``--deep-iteration`` never builds a decoder.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import crc32c

from ..format.batch import (
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    V2_CRC_FROM,
    V2_HEADER_SIZE,
    BatchHeader,
    parse_header,
    read_varint,
)
from ..format.legacy import LEGACY_CRC_FROM, LEGACY_HEADER, LEGACY_MAGIC_AT, key_and_value
from ..format.names import (
    increment_sequence,
)
from ..redact import redact_uri
from ..transport.filesystems import is_remote, local_path
from ..transport.source import ByteSource

LOWEST_OFFSET = -(2**63)
TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
MARKER_KEY_SIZE = 4  # version int16 + type int16
MARKER_VALUE_SIZE = 6  # version int16 + coordinatorEpoch int32


def sibling(path: str, name: str) -> str:
    """The file ``name`` in the directory of ``path``: beside a remote object, a URI in the same
    store (never a local path made of the URI); beside a local file, an absolute local path."""
    if is_remote(path):
        return path.rpartition("/")[0] + "/" + name
    return os.path.join(os.path.dirname(os.path.abspath(local_path(path))), name)


def shown_path(path: str) -> str:
    """``path`` as the stderr summaries name it: a local file's absolute path (as Kafka prints
    it), a remote URI as given (credentials masked)."""
    if is_remote(path):
        return redact_uri(path)
    return os.path.abspath(local_path(path))


def timestamp_type_name(h: BatchHeader) -> str:
    """The batch's timestamp type as Kafka's ``TimestampType`` prints it."""
    return TIMESTAMP_TYPES[h.timestamp_type]


def last_sequence(h: BatchHeader) -> int:
    """A v2 batch's last sequence (-1 when the base sequence is -1)."""
    if h.base_sequence == -1:
        return -1
    return increment_sequence(h.base_sequence, h.last_offset_delta)


def batch_is_valid(data: bytes | memoryview, h: BatchHeader) -> bool:
    """Kafka's ``isValid()`` for the batch bytes ``data``: size and stored CRC.

    v2: at least 61 bytes and CRC-32C over bytes 21..end; legacy: a message of at least 14 bytes
    and CRC-32 over the message from its magic byte (entry bytes 16..end).
    """
    if h.magic >= 2:
        return h.size >= V2_HEADER_SIZE and crc32c.crc32c(data[V2_CRC_FROM : h.size]) == h.crc
    if h.size - LOG_OVERHEAD < LEGACY_MIN_SIZE:
        return False
    return zlib.crc32(data[LEGACY_CRC_FROM : h.size]) == h.crc


def read_batch(src: ByteSource, h: BatchHeader) -> bytes:
    """The whole batch (``12 + size`` bytes) at its position."""
    return src.read(h.position, h.size)


def legacy_inner_checksums(
    data: bytes, h: BatchHeader, max_bytes: int
) -> list[tuple[int, bool]] | None:
    """``(crc, isValid)`` of each inner message of the compressed legacy wrapper ``data``.

    None when the wrapper cannot be decompressed (the reader reports that batch itself).
    """
    from ..codecs import decompress
    from ..errors import KafkaLogError

    try:
        _, _, q, vlen = key_and_value(data, 0, h.magic)
        if vlen < 0:
            return None
        inner = decompress(h.codec, memoryview(data)[q : q + vlen], h.magic, max_bytes)
    except (ValueError, KafkaLogError):
        return None
    out: list[tuple[int, bool]] = []
    at = 0
    n = len(inner)
    while n - at >= LEGACY_HEADER.size:
        if inner[at + LEGACY_MAGIC_AT] not in (0, 1):
            break
        ih = parse_header(inner, at, at)
        if ih.size < LOG_OVERHEAD + LEGACY_MIN_SIZE or at + ih.size > n:
            break
        valid = zlib.crc32(memoryview(inner)[at + LEGACY_CRC_FROM : at + ih.size]) == ih.crc
        out.append((ih.crc, valid))
        at += ih.size
    return out


def control_record_sizes(data: bytes, h: BatchHeader) -> list[tuple[int, int]]:
    """``(keySize, valueSize)`` of each record of an uncompressed v2 control batch ``data``.

    Reads only the length fields; stops (returning what it has) at anything malformed.
    """
    out: list[tuple[int, int]] = []
    if h.magic < 2 or h.codec != 0:
        return out
    p, end = V2_HEADER_SIZE, min(h.size, len(data))
    for _ in range(max(h.records_count, 0)):
        length, q = read_varint(data, p, end)
        if q < 0 or length < 0 or q + length > end:
            break
        nxt = q + length
        _, r = read_varint(data, q + 1, nxt)  # attributes byte, then timestampDelta
        _, r = read_varint(data, r, nxt) if r >= 0 else (0, -1)  # offsetDelta
        klen, r = read_varint(data, r, nxt) if r >= 0 else (0, -1)
        if r < 0:
            break
        r += max(klen, 0)
        vlen, r = read_varint(data, r, nxt)
        if r < 0:
            break
        out.append((klen if klen >= 0 else -1, vlen if vlen >= 0 else -1))
        p = nxt
    return out


def reader_options(verify: bool, mode: str = "DROPMALFORMED", **extra: Any) -> Any:
    """Reader options for the commands: control records included, offsets not bounded."""
    from ..options import parse_options

    return parse_options(
        {
            "verifyChecksums": verify,
            "mode": mode,
            "includeControlRecords": True,
            "includeMetadata": True,
            **extra,
        }
    )


def read_rows(
    path: str,
    start: int,
    end: int,
    columns: Sequence[str],
    options: Any,
    stats: Any = None,
) -> Iterator[Any]:
    """Arrow record batches of ``columns`` for the batches in ``[start, end)`` of ``path``.

    ``start`` and ``end`` must be batch boundaries (from the header walk). The range is read by
    the data source's own :class:`~kafkalog_source.reader.RangeReader` with every offset
    admitted (carved record sets may hold negative offsets).
    """
    from ..arrow.schema import projection_for
    from ..planning.splits import SegmentRange
    from ..reader import RangeReader

    rng = SegmentRange(path, start, end, at_file_end=False, offset_lo=LOWEST_OFFSET)
    return iter(RangeReader(rng, options, projection_for(list(columns)), stats))


# The commands read a segment in ranges of at most this many batches and bytes (cut at batch
# starts). Besides bounding memory, this keeps each range within one header scan of the reader:
# with metadata or control columns, RangeReader raises IndexError when it flushes an output batch
# in the middle of a run of compressed v2 batches after the first scan of a range (the batch-table
# numbering restarts at the flush while the run keeps its old base). 4096 is the reader's
# HEADER_ROWS and 4 MiB is well under its 8 MiB window.
CHUNK_BATCHES = 4096
CHUNK_BYTES = 4 << 20


def chunks(headers: Sequence[BatchHeader]) -> Iterator[list[BatchHeader]]:
    """Consecutive runs of ``headers``, each at most CHUNK_BATCHES batches and about CHUNK_BYTES
    (a single larger batch is a run of its own)."""
    run: list[BatchHeader] = []
    for h in headers:
        if run and (len(run) >= CHUNK_BATCHES or h.end - run[0].position > CHUNK_BYTES):
            yield run
            run = []
        run.append(h)
    if run:
        yield run


def timestamps_ms(column: Any) -> list[int | None]:
    """A ``timestamp[us]`` column as epoch milliseconds (None for null)."""
    import pyarrow as pa

    return [None if v is None else v // 1000 for v in column.cast(pa.int64()).to_pylist()]
