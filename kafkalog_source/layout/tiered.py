"""Kafka tiered-storage objects in the layout of Aiven's ``tiered-storage-for-apache-kafka`` plugin.

Facts taken from the plugin's source (github.com/Aiven-Open/tiered-storage-for-apache-kafka,
read at commit 8fb1581; paths under ``core/src/main/java/io/aiven/kafka/tieredstorage/``):

* Keys (``ObjectKeyFactory.java``; its test ``ObjectKeyFactoryTest.java``):
  ``{prefix}{topic}-{topicId}/{partition}/{baseOffset:020d}-{segmentId}.{log|indexes|rsm-manifest}``.
  ``topicId`` and ``segmentId`` are Kafka ``Uuid.toString()``: the 16 bytes in URL-safe base64
  without padding, 22 characters. The prefix (``rsm.config.key.prefix``) is any string.
* ``.rsm-manifest`` (``manifest/SegmentManifestV1.java``, ``SegmentIndexesV1.java``,
  ``SegmentIndexV1.java``, ``manifest/index/*ChunkIndex.java``, ``manifest/serde/*``; the JSON is
  pinned in ``SegmentManifestV1SerdeTest.java`` and ``ChunkIndexSerializationTest.java``): a Jackson
  JSON object ``{"version":"1", "chunkIndex":{...}, "segmentIndexes":{...}, "compression":bool,
  ["encryption":{"dataKey":"<keyId>:<base64>","aad":"<base64>"},] "remoteLogSegmentMetadata":{...}}``.
  ``chunkIndex`` is ``{"type":"fixed", "originalChunkSize", "originalFileSize",
  "transformedChunkSize", "finalTransformedChunkSize"}`` or ``{"type":"variable",
  "originalChunkSize", "originalFileSize", "transformedChunks"}``. Original chunks all have
  ``originalChunkSize`` bytes but the last (``originalFileSize - (count - 1) * originalChunkSize``);
  stored chunks follow each other from byte 0 of the ``.log`` object. ``transformedChunks``
  (``serde/TransformedChunksSerializer.java``, ``serde/ChunkSizesBinaryCodec.java``) is standard
  base64 of a zstd frame (with its content size) of: int32 count, then (count > 1) int32 base and
  one byte ``width``, ``count - 1`` values minus base as big-endian ``width``-byte integers, then
  the last value as a full int32 (all big-endian; count 1: count and the value only; count 0:
  the count only). ``segmentIndexes`` has ``offset``, ``timestamp``, ``producerSnapshot``,
  ``leaderEpoch`` and ``transaction`` (``null`` when the segment had no ``.txnindex``), each
  ``{"position", "size"}`` in the ``.indexes`` object.
* ``.log`` (``KafkaRemoteStorageManager.java``, ``transform/*ChunkEnumeration.java``,
  ``TransformFinisher.java``): the segment cut into ``chunk.size`` chunks; with compression each
  chunk is one zstd frame that records its content size (``CompressionChunkEnumeration``), and the
  index is "variable"; without any transform the object is the segment byte for byte and the index
  is "fixed" with stored sizes equal to original ones. Encryption (AES-GCM per chunk, 12-byte IV
  first) makes the index "fixed" (encryption only) or "variable" (compression first).
* ``.indexes`` (``KafkaRemoteStorageManager.uploadIndexes``/``transformIndex``): offset, time,
  producer-snapshot, leader-epoch and (if any) transaction index concatenated in that order, each
  encrypted when encryption is on but never compressed (the manifest's ``compression`` flag is
  about the ``.log`` chunks only); an empty index has size 0.

What kafkalog does with them: a plain (untransformed) ``.log`` object is a Kafka segment and is
read directly, with no :class:`ChunkedSource`; a compressed one is read through
:class:`ChunkedSource`, chunk by chunk with one ranged read per chunk; an encrypted one is refused
with :class:`~kafkalog_source.errors.EncryptedSegmentError` naming the manifest (the data keys are
wrapped with the RSA key pair in the broker's plugin configuration).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zstandard

from ..errors import CorruptDataError, DecompressionError, EncryptedSegmentError, FileChangedError
from ..format.tiered import chunk_sizes
from ..transport.filesystems import is_remote, local_path
from ..transport.source import ByteSource

LOG_SUFFIX = ".log"
INDEXES_SUFFIX = ".indexes"
MANIFEST_SUFFIX = ".rsm-manifest"

# Kafka's Uuid.toString(): 16 bytes, URL-safe base64, no padding; the last of its 22 characters
# carries 2 bits, so it is one of A, Q, g, w.
_UUID = r"[A-Za-z0-9_-]{21}[AQgw]"
_TOPIC_DIR = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<topic_id>" + _UUID + r")$")
_SEGMENT_NAME = re.compile(
    r"^(?P<offset>[0-9]{20})-(?P<segment_id>" + _UUID + r")\.(?P<suffix>log|indexes|rsm-manifest)$"
)
_PARTITION = re.compile(r"^(?:0|[1-9][0-9]{0,9})$")

# manifest segmentIndexes names, by the suffix of the local file each one was uploaded from
INDEX_NAMES = {
    ".index": "offset",
    ".timeindex": "timestamp",
    ".snapshot": "producerSnapshot",
    "leader-epoch-checkpoint": "leaderEpoch",
    ".txnindex": "transaction",
}
_REQUIRED_INDEXES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch")
# TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE: the plugin refuses larger encoded lists
_MAX_ENCODED_CHUNKS = 10 * 1024 * 1024
_INT_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class TieredKey:
    """The parts of a tiered segment's object key (``suffix`` is ``.log``, ``.indexes`` or
    ``.rsm-manifest``; ``stem`` is the key up to it)."""

    topic: str
    topic_id: str
    partition: int
    base_offset: int
    segment_id: str
    suffix: str
    stem: str


def parse_tiered_key(path: str) -> TieredKey | None:
    """The topic, partition, base offset and segment id of ``…/{topic}-{topicId}/{partition}/
    {20 digits}-{segmentId}.{log|indexes|rsm-manifest}``; None for any other path."""
    parts = path.rstrip("/").rsplit("/", 3)
    if len(parts) < 3:
        return None
    topic_dir, part, name = parts[-3], parts[-2], parts[-1]
    m = _SEGMENT_NAME.match(name)
    t = _TOPIC_DIR.match(topic_dir)
    if m is None or t is None or _PARTITION.match(part) is None or int(part) > _INT_MAX:
        return None
    suffix = "." + m.group("suffix")
    return TieredKey(
        topic=t.group("topic"),
        topic_id=t.group("topic_id"),
        partition=int(part),
        base_offset=int(m.group("offset")),
        segment_id=m.group("segment_id"),
        suffix=suffix,
        stem=path[: len(path) - len(suffix)],
    )


def is_tiered_topic_dir(name: str) -> bool:
    """True when a directory name is ``{topic}-{topicId}`` (a tiered-storage topic directory)."""
    return _TOPIC_DIR.match(name) is not None


def is_tiered_partition_dir(path: str) -> bool:
    """True when ``path`` is ``…/{topic}-{topicId}/{partition}``."""
    parts = path.rstrip("/").rsplit("/", 2)
    return (
        len(parts) == 3
        and _PARTITION.match(parts[2]) is not None
        and int(parts[2]) <= _INT_MAX
        and is_tiered_topic_dir(parts[1])
    )


def tiered_sibling(path: str, suffix: str) -> str:
    """The key of a tiered segment's ``.log``, ``.indexes`` or ``.rsm-manifest`` object, from the
    key of any of the three; ``ValueError`` when ``path`` ends in none of them."""
    if suffix not in (LOG_SUFFIX, INDEXES_SUFFIX, MANIFEST_SUFFIX):
        raise ValueError(f"not a tiered-storage object suffix: {suffix!r}")
    for own in (LOG_SUFFIX, INDEXES_SUFFIX, MANIFEST_SUFFIX):
        if path.endswith(own):
            return path[: len(path) - len(own)] + suffix
    raise ValueError(f"{path}: not a tiered-storage object key (.log, .indexes, .rsm-manifest)")


@dataclass(frozen=True)
class TieredManifest:
    """What kafkalog needs of one ``.rsm-manifest``.

    Chunk ``i`` holds original bytes ``[i * chunk_size, …)`` (the last one may be short) and is
    stored at ``stored_offsets[i]`` with ``stored_sizes[i]`` bytes in the ``.log`` object.
    ``indexes`` maps a ``segmentIndexes`` name to ``(position, size)`` in the ``.indexes``
    object, or None when the manifest has none (``transaction`` of a segment without one).
    """

    uri: str
    original_size: int
    chunk_size: int
    stored_sizes: tuple[int, ...]
    compression: bool
    encrypted: bool
    indexes: dict[str, tuple[int, int] | None]
    start_offset: int | None = None
    end_offset: int | None = None
    stored_offsets: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        offsets, at = [], 0
        for s in self.stored_sizes:
            offsets.append(at)
            at += s
        object.__setattr__(self, "stored_offsets", tuple(offsets))

    @property
    def chunk_count(self) -> int:
        """How many chunks the segment was cut into."""
        return len(self.stored_sizes)

    @property
    def stored_size(self) -> int:
        """Bytes the ``.log`` object should hold."""
        return sum(self.stored_sizes)

    def original_range(self, i: int) -> tuple[int, int]:
        """``(start, size)`` of chunk ``i`` in the original segment."""
        start = i * self.chunk_size
        return start, min(self.chunk_size, self.original_size - start)

    def stored_range(self, i: int) -> tuple[int, int]:
        """``(start, size)`` of chunk ``i`` in the ``.log`` object."""
        return self.stored_offsets[i], self.stored_sizes[i]

    @property
    def transformed(self) -> bool:
        """True when the ``.log`` object is not the segment byte for byte."""
        return self.compression or self.encrypted

    def check_readable(self) -> None:
        """Raise :class:`EncryptedSegmentError` (naming the manifest) when the segment is encrypted."""
        if self.encrypted:
            raise EncryptedSegmentError(
                "the tiered-storage plugin encrypted this segment (the manifest has an "
                '"encryption" entry): kafkalog cannot decrypt it; its data key is wrapped with the '
                "RSA key pair named in the broker's rsm.config.encryption.key.pair.id / "
                "encryption.key.pairs configuration",
                self.uri,
            )


def _bad(uri: str, reason: str) -> CorruptDataError:
    return CorruptDataError(f"malformed tiered-storage manifest: {reason}", uri)


def _int(obj: dict, key: str, uri: str, where: str, minimum: int = 0) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(uri, f"{where}{key} is {v!r}, not an integer")
    if not minimum <= v <= _INT_MAX:
        raise _bad(uri, f"{where}{key} is {v}, outside [{minimum}, {_INT_MAX}]")
    return v


def decode_chunk_sizes(encoded: str, uri: str = "<manifest>") -> list[int]:
    """A variable chunk index's ``transformedChunks`` string as the list of stored chunk sizes."""
    try:
        packed = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError, TypeError) as e:
        raise _bad(uri, f"chunkIndex.transformedChunks is not base64 ({e})") from None
    try:
        declared = zstandard.frame_content_size(packed)
    except zstandard.ZstdError as e:
        raise _bad(uri, f"chunkIndex.transformedChunks is not a zstd frame ({e})") from None
    if not 0 <= declared <= _MAX_ENCODED_CHUNKS:
        raise _bad(uri, f"chunkIndex.transformedChunks declares {declared} bytes of chunk sizes")
    try:
        raw = zstandard.ZstdDecompressor().decompress(packed, allow_extra_data=False)
    except zstandard.ZstdError as e:
        raise _bad(uri, f"chunkIndex.transformedChunks does not decompress ({e})") from None
    try:
        values = chunk_sizes(raw)
    except ValueError as e:
        raise _bad(uri, f"chunkIndex.transformedChunks {e}") from None
    if any(v < 0 or v > _INT_MAX for v in values):
        raise _bad(uri, "chunkIndex.transformedChunks holds a negative size")
    return values


def _chunk_index(ci: Any, uri: str) -> tuple[int, int, list[int]]:
    if not isinstance(ci, dict):
        raise _bad(uri, f"chunkIndex is {type(ci).__name__}, not an object")
    kind = ci.get("type")
    chunk = _int(ci, "originalChunkSize", uri, "chunkIndex.", minimum=1)
    size = _int(ci, "originalFileSize", uri, "chunkIndex.")
    count = -(-size // chunk)
    if kind == "fixed":
        each = _int(ci, "transformedChunkSize", uri, "chunkIndex.")
        last = _int(ci, "finalTransformedChunkSize", uri, "chunkIndex.")
        stored = [each] * (count - 1) + [last] if count else []
    elif kind == "variable":
        enc = ci.get("transformedChunks")
        if not isinstance(enc, str):
            raise _bad(uri, f"chunkIndex.transformedChunks is {enc!r}, not a string")
        stored = decode_chunk_sizes(enc, uri)
        if len(stored) != count:
            raise _bad(
                uri,
                f"chunkIndex lists {len(stored)} stored chunks, but {size} bytes in chunks of "
                f"{chunk} make {count}",
            )
    else:
        raise _bad(uri, f'chunkIndex.type is {kind!r}, not "fixed" or "variable"')
    return size, chunk, stored


def parse_manifest(data: bytes | str, uri: str) -> TieredManifest:
    """Parse an ``.rsm-manifest`` (``uri`` names it in errors); raises
    :class:`~kafkalog_source.errors.CorruptDataError` for anything the plugin would not write."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise _bad(uri, f"not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise _bad(uri, f"a JSON {type(doc).__name__}, not an object")
    version = doc.get("version")
    if version not in ("1", 1):
        raise _bad(uri, f"version is {version!r}; kafkalog knows version 1")
    for key in ("chunkIndex", "segmentIndexes", "compression"):
        if key not in doc:
            raise _bad(uri, f"no {key}")
    size, chunk, stored = _chunk_index(doc["chunkIndex"], uri)
    compression = doc["compression"]
    if not isinstance(compression, bool):
        raise _bad(uri, f"compression is {compression!r}, not true or false")
    encryption = doc.get("encryption")
    if encryption is not None and not isinstance(encryption, dict):
        raise _bad(uri, f"encryption is {encryption!r}, not an object")
    encrypted = encryption is not None
    si = doc["segmentIndexes"]
    if not isinstance(si, dict):
        raise _bad(uri, "segmentIndexes is not an object")
    indexes: dict[str, tuple[int, int] | None] = {}
    for name in (*_REQUIRED_INDEXES, "transaction"):
        entry = si.get(name)
        if entry is None:
            if name != "transaction":
                raise _bad(uri, f"no segmentIndexes.{name}")
            indexes[name] = None
            continue
        if not isinstance(entry, dict):
            raise _bad(uri, f"segmentIndexes.{name} is not an object")
        where = f"segmentIndexes.{name}."
        indexes[name] = (_int(entry, "position", uri, where), _int(entry, "size", uri, where))
    start = end = None
    meta = doc.get("remoteLogSegmentMetadata")
    if isinstance(meta, dict):
        s, e = meta.get("startOffset"), meta.get("endOffset")
        start = s if isinstance(s, int) and not isinstance(s, bool) else None
        end = e if isinstance(e, int) and not isinstance(e, bool) else None
    return TieredManifest(
        uri=uri,
        original_size=size,
        chunk_size=chunk,
        stored_sizes=tuple(stored),
        compression=compression,
        encrypted=encrypted,
        indexes=indexes,
        start_offset=start,
        end_offset=end,
    )


def read_manifest(src: ByteSource) -> TieredManifest:
    """Read and parse the ``.rsm-manifest`` object open as ``src`` (one ranged read)."""
    return parse_manifest(src.read(0, src.size), src.uri)


class ChunkedSource(ByteSource):
    """The original segment bytes of a compressed tiered ``.log`` object.

    A read of ``[pos, pos + n)`` fetches each stored chunk it touches with one ranged read of the
    inner source, decompresses it, and keeps the last ``cache_chunks`` decoded chunks, so that
    sequential window reads fetch every chunk once. ``bytes_read`` and ``requests`` count the
    stored bytes fetched and the ranged reads made; ``chunks_fetched`` the chunks decoded.
    Closing it closes the inner source.
    """

    def __init__(self, inner: ByteSource, manifest: TieredManifest, cache_chunks: int = 2) -> None:
        """Wrap ``inner`` (the ``.log`` object) as described by ``manifest``; raises
        :class:`EncryptedSegmentError` for an encrypted segment and
        :class:`~kafkalog_source.errors.CorruptDataError` when the object's size does not match
        the manifest's chunk index."""
        manifest.check_readable()
        super().__init__(inner.path, manifest.original_size)
        self.inner = inner
        self.manifest = manifest
        self.cache_chunks = max(1, cache_chunks)
        self.chunks_fetched = 0
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._dctx: Any = None
        if inner.size != manifest.stored_size:
            raise CorruptDataError(
                f"the tiered .log object holds {inner.size} bytes but its manifest "
                f"({manifest.uri}) lists {manifest.chunk_count} stored chunks of "
                f"{manifest.stored_size} bytes",
                inner.uri,
            )

    @property
    def uri(self) -> str:
        """The ``.log`` object's location."""
        return self.inner.uri

    def _chunk(self, i: int) -> bytes:
        data = self._cache.get(i)
        if data is not None:
            self._cache.move_to_end(i)
            return data
        start, stored = self.manifest.stored_range(i)
        _, want = self.manifest.original_range(i)
        raw = bytearray(stored)
        try:
            self.inner.read_fully_into(start, raw)
        except FileChangedError as e:
            raise FileChangedError(
                f"tiered chunk {i} (stored bytes [{start}, {start + stored})): {e.reason}",
                self.uri,
                e.position,
            ) from None
        self.bytes_read += stored
        self.requests += 1
        if self.manifest.compression:
            data = self._decompress(i, raw, start, want)
        else:
            data = bytes(raw)
        self.chunks_fetched += 1
        self._cache[i] = data
        while len(self._cache) > self.cache_chunks:
            self._cache.popitem(last=False)
        return data

    def _decompress(self, i: int, raw: bytearray, start: int, want: int) -> bytes:
        if self._dctx is None:
            self._dctx = zstandard.ZstdDecompressor()
        where = f"tiered chunk {i} (stored bytes [{start}, {start + len(raw)}))"
        try:
            declared = zstandard.frame_content_size(raw)
            if declared not in (-1, want):
                raise zstandard.ZstdError(f"its zstd frame declares {declared} bytes")
            data = self._dctx.decompress(raw, max_output_size=want + 1, allow_extra_data=False)
        except zstandard.ZstdError as e:
            raise DecompressionError(
                f"{where} does not decompress as zstd to {want} bytes: {e}", self.uri, start
            ) from None
        if len(data) != want:
            raise DecompressionError(
                f"{where} decompresses to {len(data)} bytes, not the {want} of its original chunk",
                self.uri,
                start,
            )
        return data

    def read_into(self, pos: int, buffer: Any) -> int:
        """See :meth:`ByteSource.read_into`."""
        if pos < 0:
            raise ValueError(f"negative position {pos}")
        view = memoryview(buffer).cast("B")
        end = min(pos + len(view), self.size)
        got = 0
        chunk_size = self.manifest.chunk_size
        while pos + got < end:
            at = pos + got
            i = at // chunk_size
            data = self._chunk(i)
            off = at - i * chunk_size
            n = min(len(data) - off, end - at)
            view[got : got + n] = memoryview(data)[off : off + n]
            got += n
        return got

    def read(self, pos: int, n: int) -> bytes:
        """See :meth:`ByteSource.read`."""
        buf = bytearray(max(0, min(n, self.size - pos)))
        got = self.read_into(pos, buf)
        return bytes(buf[:got])

    def will_need(self, pos: int, n: int) -> None:
        """Pass the hint on for the stored bytes of the chunks that hold ``[pos, pos + n)``."""
        if n <= 0 or pos >= self.size:
            return
        first = pos // self.manifest.chunk_size
        last = min(pos + n, self.size) - 1
        last //= self.manifest.chunk_size
        a = self.manifest.stored_offsets[first]
        b, s = self.manifest.stored_range(last)
        self.inner.will_need(a, b + s - a)

    def sequential(self, start: int = 0, end: int | None = None) -> None:
        """Pass the hint on for the stored bytes of the chunks that hold ``[start, end)``."""
        m = self.manifest
        end = self.size if end is None else min(end, self.size)
        if start >= end:
            return
        first, last = start // m.chunk_size, (end - 1) // m.chunk_size
        a = m.stored_offsets[first]
        b, s = m.stored_range(last)
        self.inner.sequential(a, b + s)

    def current_size(self) -> int:
        """The original size while the ``.log`` object keeps its size, else -1."""
        now = self.inner.current_size()
        return self.size if now == self.manifest.stored_size else -1

    def close(self) -> None:
        """Drop the cached chunks and close the inner source."""
        self._cache.clear()
        self.inner.close()


def open_chunked(inner: ByteSource, manifest: TieredManifest) -> ByteSource:
    """The segment bytes of a tiered ``.log`` object: ``inner`` itself when the manifest names no
    transform (the object is the segment), a :class:`ChunkedSource` when it is compressed; raises
    :class:`EncryptedSegmentError` when it is encrypted."""
    manifest.check_readable()
    if not manifest.transformed:
        if inner.size != manifest.original_size:
            raise CorruptDataError(
                f"the tiered .log object holds {inner.size} bytes but its manifest "
                f"({manifest.uri}) says the segment has {manifest.original_size}",
                inner.uri,
            )
        return inner
    return ChunkedSource(inner, manifest)


def tiered_index_bytes(indexes: ByteSource, manifest: TieredManifest, suffix: str) -> bytes | None:
    """The bytes of one of a tiered segment's index files (``suffix`` ``.index``,
    ``.timeindex``, ``.txnindex``, ``.snapshot`` or ``leader-epoch-checkpoint``) out of its
    ``.indexes`` object, with one ranged read; None when the manifest lists none. Index files are
    stored as they are (never compressed); an encrypted segment raises
    :class:`EncryptedSegmentError`."""
    name = INDEX_NAMES.get(suffix)
    if name is None:
        raise ValueError(f"no tiered-storage index for {suffix!r}")
    entry = manifest.indexes.get(name)
    if entry is None:
        return None
    manifest.check_readable()
    position, size = entry
    if size == 0:
        return b""
    data = indexes.read(position, size)
    if len(data) != size:
        raise CorruptDataError(
            f"the .indexes object ends at byte {position + len(data)}, but its manifest "
            f"({manifest.uri}) puts the {name} index at [{position}, {position + size})",
            indexes.uri,
            position,
        )
    return data


# ---------------------------------------------------------------------------- store integration
# ``opener`` is how the caller opens a location as stored (source.open_stored with its store
# options); these helpers only add the layout's rules on top.

Opener = Callable[[str], ByteSource]
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
_manifests: OrderedDict[tuple[str, int], TieredManifest] = OrderedDict()
_manifests_lock = threading.Lock()
_MANIFESTS_KEPT = 4096  # a few hundred bytes each


def is_tiered_log(path: str) -> bool:
    """True when ``path`` is the ``.log`` object of a tiered segment (by its key alone)."""
    k = parse_tiered_key(path)
    return k is not None and k.suffix == LOG_SUFFIX


def _cache_key(uri: str) -> tuple:
    """A remote manifest is keyed by its URI: the plugin writes it once, under a segment id that
    is never reused, so a cache hit costs no request. A local file (a copy one may edit) is keyed
    by its size and modification time too."""
    if is_remote(uri):
        return (uri,)
    try:
        st = os.stat(local_path(uri))
    except (OSError, ValueError):
        return (uri, None)
    return (uri, st.st_size, st.st_mtime_ns)


def load_manifest(path: str, opener: Opener) -> TieredManifest:
    """The parsed manifest of the tiered segment whose ``.log`` (or other object) is ``path``,
    read once per process (see :func:`_cache_key`); raises ``FileNotFoundError`` when there is
    none and :class:`~kafkalog_source.errors.CorruptDataError` when it is malformed."""
    uri = tiered_sibling(path, MANIFEST_SUFFIX)
    key = _cache_key(uri)
    with _manifests_lock:
        hit = _manifests.get(key)
        if hit is not None:
            _manifests.move_to_end(key)
            return hit
    with opener(uri) as src:
        manifest = read_manifest(src)
    with _manifests_lock:
        _manifests[key] = manifest
        while len(_manifests) > _MANIFESTS_KEPT:
            _manifests.popitem(last=False)
    return manifest


def open_tiered_log(path: str, opener: Opener) -> ByteSource:
    """The original segment bytes of the tiered ``.log`` object ``path`` (see
    :func:`open_chunked`); raises :class:`EncryptedSegmentError` for an encrypted segment."""
    manifest = load_manifest(path, opener)
    manifest.check_readable()
    inner = opener(path)
    try:
        return open_chunked(inner, manifest)
    except BaseException:
        inner.close()
        raise


def tiered_index_target(path: str) -> tuple[str, str] | None:
    """``(log key, suffix)`` when ``path`` names an index file (``.index``, ``.timeindex``,
    ``.txnindex``) beside a tiered ``.log`` key (what ``sibling_path`` makes of one); else None."""
    for suffix in _INDEX_SUFFIXES:
        if path.endswith(suffix):
            log_key = path[: len(path) - len(suffix)] + LOG_SUFFIX
            return (log_key, suffix) if is_tiered_log(log_key) else None
    return None


def read_tiered_index(path: str, suffix: str, opener: Opener) -> bytes | None:
    """The bytes of a tiered segment's index file ``suffix`` (``.index``, ``.timeindex``,
    ``.txnindex``) from its ``.indexes`` object, one ranged read; None when the manifest lists
    none (or has no manifest)."""
    try:
        manifest = load_manifest(path, opener)
    except FileNotFoundError:
        return None
    if manifest.indexes.get(INDEX_NAMES[suffix]) is None:
        return None
    with opener(tiered_sibling(path, INDEXES_SUFFIX)) as src:
        return tiered_index_bytes(src, manifest, suffix)


__all__ = [
    "INDEXES_SUFFIX",
    "LOG_SUFFIX",
    "MANIFEST_SUFFIX",
    "ChunkedSource",
    "TieredKey",
    "TieredManifest",
    "decode_chunk_sizes",
    "is_tiered_log",
    "is_tiered_partition_dir",
    "is_tiered_topic_dir",
    "load_manifest",
    "open_chunked",
    "open_tiered_log",
    "read_tiered_index",
    "parse_manifest",
    "parse_tiered_key",
    "read_manifest",
    "tiered_index_bytes",
    "tiered_index_target",
    "tiered_sibling",
]
