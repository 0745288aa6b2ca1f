"""snappy payloads (codec 2): xerial-framed or one raw block, detected per payload (SEGMENT_SPEC §3.2).

Detection follows xerial's ``SnappyInputStream``, which is what Kafka reads with: a payload of at
least 16 bytes whose first 8 bytes are ``82 'SNAPPY' 00`` is xerial-framed, anything else is one raw
snappy block. The version and compatible-version fields of the header are not checked (some
producers wrote them little-endian). In the framed stream each chunk is ``int32 BE length`` plus a
raw snappy block; a chunk-length slot holding the first 4 magic bytes starts a concatenated stream,
whose header must be complete (if its 8-byte magic is wrong, Java stops reading there, and so do
we). A negative length or one running past the end is an error; 1 to 3 stray bytes after the last
chunk are ignored, as Java's ``hasNextChunk`` ignores them.

Bomb safety: a raw snappy block starts with its uncompressed length as a varint. That length is
checked against the remaining budget before the block is decompressed, so nothing larger is ever
allocated; the library then verifies that the block decodes to exactly that length.

Speed: raw blocks go through ``cramjam.snappy.decompress_raw`` (what python-snappy 0.7 wraps, the
fastest snappy available here: ``decompress_raw_into`` a preallocated buffer and pyarrow's snappy
codec both measured slower). Its result is a ``cramjam.Buffer``; one copy turns it into ``bytes``
(framed chunks are joined, which is the same single copy). Input memoryviews are not copied.
"""

from __future__ import annotations

import struct

import cramjam

from ..errors import DecompressionError
from .limits import too_large

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEAD = 0x82534E41  # the first 4 magic bytes read as an int32 BE chunk length
_HEADER_SIZE = 16
_U32 = struct.Struct(">I")
_decompress_raw = cramjam.snappy.decompress_raw
_LibError = cramjam.DecompressionError


def _raw_length(buf: bytes | bytearray | memoryview, start: int, end: int) -> int:
    """Return the uncompressed length a raw snappy block at ``buf[start:end]`` declares."""
    value = 0
    shift = 0
    pos = start
    while pos < end and shift < 35:
        b = buf[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                break
            return value
        shift += 7
        pos += 1
    return -1


def _raw_block(
    buf: bytes | bytearray | memoryview,
    start: int,
    end: int,
    budget: int,
    max_bytes: int,
    what: str,
) -> cramjam.Buffer:
    """Decompress the raw block ``buf[start:end]`` after checking its declared length."""
    length = _raw_length(buf, start, end)
    if length < 0:
        raise DecompressionError(
            f"snappy: {what} at payload byte {start} does not start with a valid length varint"
        )
    if length > budget:
        raise too_large("snappy", max_bytes)
    block = buf if start == 0 and end == len(buf) else memoryview(buf)[start:end]
    try:
        return _decompress_raw(block)
    except _LibError as e:
        raise DecompressionError(
            f"snappy: {what} at payload byte {start} ({end - start} bytes, declaring"
            f" {length} uncompressed) is corrupt: {e}"
        ) from None


def decompress_snappy(data: bytes | bytearray | memoryview, max_bytes: int) -> bytes:
    """Decompress a xerial-framed or raw snappy payload; at most ``max_bytes`` of output."""
    size = len(data)
    if size == 0:
        raise DecompressionError("snappy: empty payload")
    if size < _HEADER_SIZE or data[:8] != XERIAL_MAGIC:
        return bytes(_raw_block(data, 0, size, max_bytes, max_bytes, "raw block"))
    return _xerial(data, size, max_bytes)


def _xerial(data: bytes | bytearray | memoryview, size: int, max_bytes: int) -> bytes:
    """Decompress the chunks of a xerial stream (header already recognised)."""
    parts: list[cramjam.Buffer] = []
    total = 0
    pos = _HEADER_SIZE
    while size - pos >= 4:
        (length,) = _U32.unpack_from(data, pos)
        if length == _XERIAL_HEAD:
            if size - pos < _HEADER_SIZE:
                raise DecompressionError(
                    f"snappy: concatenated xerial header at payload byte {pos} is cut short"
                    f" ({size - pos} of 16 bytes)"
                )
            if data[pos : pos + 8] != XERIAL_MAGIC:
                break  # Java's hasNextChunk ends the stream here
            pos += _HEADER_SIZE
            continue
        if length >= 0x80000000:
            raise DecompressionError(
                f"snappy: xerial chunk length {length - (1 << 32)} at payload byte {pos}"
                " is negative"
            )
        start = pos + 4
        end = start + length
        if end > size:
            raise DecompressionError(
                f"snappy: xerial chunk length {length} at payload byte {pos} runs past the end"
                f" (payload is {size} bytes)"
            )
        if length == 0:
            raise DecompressionError(f"snappy: xerial chunk at payload byte {pos} is empty")
        block = _raw_block(data, start, end, max_bytes - total, max_bytes, "xerial chunk")
        total += len(block)
        parts.append(block)
        pos = end
    if len(parts) == 1:
        return bytes(parts[0])
    return b"".join(parts)
