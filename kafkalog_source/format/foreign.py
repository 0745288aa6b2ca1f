"""Files that are not Kafka segments, told by their first bytes (no I/O): a compressed or
archived copy of a segment, a Parquet or Avro file, text or JSON, or a Redpanda segment under
another name than Redpanda's (its batch header is little-endian, a CRC-32C over its 57 bytes
after the CRC; Redpanda segments named as Redpanda names them are read: ``layout/redpanda.py``). Each
signature would make a Kafka batch's base offset absurd (above 2**58), or is a CRC over 57 bytes.
"""

from __future__ import annotations

import struct

HEAD_BYTES = 512  # bytes read from the start of the file (a tar header needs 262)

_DECOMPRESS = "decompress it first"
# (first bytes, what the file is, what to do)
_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b\x08", "a gzip file", f"{_DECOMPRESS} (gunzip)"),
    (b"\x28\xb5\x2f\xfd", "a zstd file", f"{_DECOMPRESS} (zstd -d)"),
    (b"\x04\x22\x4d\x18", "an LZ4 frame file", f"{_DECOMPRESS} (lz4 -d)"),
    (b"\xfd7zXZ\x00", "an xz file", f"{_DECOMPRESS} (xz -d)"),
    (b"PK\x03\x04", "a zip archive", "extract it first (unzip)"),
    (b"PK\x05\x06", "an empty zip archive", "it holds no file"),
    (b"PAR1", "a Parquet file", "read it with a Parquet reader"),
    (b"Obj\x01", "an Avro container file", "read it with an Avro reader"),
)
# bzip2: "BZh", a block size digit, then a block's magic (pi) or the end of stream's (sqrt(pi))
_BZIP2_BLOCKS = (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")
# Redpanda's batch header: header_crc, size_bytes, base_offset, type, crc, attributes,
# last_offset_delta, first_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
# record_count, all little-endian; header_crc is CRC-32C over the 57 bytes after it
_REDPANDA = struct.Struct("<Iiqb")
_REDPANDA_HEADER = 61
_TEXT_CONTROLS = frozenset(b"\t\n\r\f")


def describe_foreign(head: bytes) -> str | None:
    """What a file that starts with ``head`` looks like, when it is not a Kafka segment: a
    sentence such as "this looks like a gzip file, not a Kafka segment: decompress it first
    (gunzip)"; None when its first bytes say nothing."""
    for magic, what, todo in _SIGNATURES:
        if head.startswith(magic):
            return _sentence(what, todo)
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in _BZIP2_BLOCKS:
        return _sentence("a bzip2 file", f"{_DECOMPRESS} (bunzip2)")
    if len(head) >= 262 and head[257:262] == b"ustar":
        return _sentence("a tar archive", "extract it first (tar -xf)")
    if _is_redpanda(head):
        return _sentence(
            "a Redpanda segment (Redpanda's own format: little-endian batch headers)",
            "kafkalog reads Redpanda segments by their names: keep Redpanda's "
            "<base>-<term>-v1.log name (in its <namespace>/<topic>/<partition>_<revision> "
            "directory for its topic, partition and offsets)",
        )
    text = _text(head)
    if text is not None:
        if _looks_like_json(text):
            return _sentence("a JSON (or JSON lines) file", _KAFKA_SEGMENTS)
        return _sentence("a text file (an application's log, say)", _KAFKA_SEGMENTS)
    return None


def _looks_like_json(text: str) -> bool:
    """Whether ``text`` starts a JSON document or JSON lines: an object, or an array of objects,
    arrays or strings (``[2024-03-01 10:00:00] INFO ...``, a log line, is not one)."""
    text = text.lstrip()
    if text.startswith("{"):
        return True
    return text.startswith("[") and text[1:].lstrip()[:1] in ("{", "[", '"', "]")


_KAFKA_SEGMENTS = (
    "Kafka's segments are binary files named <20-digit base offset>.log in <topic>-<partition> "
    "directories"
)


LOOKS_LIKE = "this looks like "  # how every description starts


def _sentence(what: str, todo: str) -> str:
    return f"{LOOKS_LIKE}{what}, not a Kafka segment: {todo}"


def _is_redpanda(head: bytes) -> bool:
    """Whether ``head`` starts with a Redpanda batch header whose header CRC holds."""
    if len(head) < _REDPANDA_HEADER:
        return False
    header_crc, size, _, _ = _REDPANDA.unpack_from(head, 0)
    # Imported here, not at the top: the crc32c package imports importlib.metadata (and email)
    # for its version, ~12 ms that every Spark planning worker would pay for a check that runs
    # only when a file is not a Kafka segment.
    import crc32c

    return size >= _REDPANDA_HEADER and crc32c.crc32c(head[4:_REDPANDA_HEADER]) == header_crc


def _text(head: bytes) -> str | None:
    """``head`` as text, when it is printable UTF-8 (a character cut at the end allowed) with no
    control character but tabs and line ends; None otherwise (and for fewer than 8 bytes)."""
    if len(head) < 8:
        return None
    for cut in range(4):  # a multi-byte character cut by the end of head
        try:
            text = head[: len(head) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return None
    if all(c.isprintable() or ord(c) in _TEXT_CONTROLS for c in text):
        return text
    return None
