"""XXH32, the 32-bit xxHash, in pure Python.

The LZ4 frame format uses XXH32 (seed 0) for the frame-descriptor checksum byte (HC), the optional
block checksums and the optional content checksum. Neither ``lz4`` nor ``cramjam`` exposes it. The
codecs layer needs it only for 2-byte descriptors (once per FLG/BD pair, then cached) and for error
messages, so a plain implementation of the algorithm as the xxHash specification describes it is
enough. liblz4 verifies block checksums and 10-byte descriptors in C (see
:mod:`kafkalog_source.codecs.lz4`).
"""

from __future__ import annotations

import struct

_P1 = 0x9E3779B1
_P2 = 0x85EBCA77
_P3 = 0xC2B2AE3D
_P4 = 0x27D4EB2F
_P5 = 0x165667B1
_M = 0xFFFFFFFF

_WORDS4 = struct.Struct("<4I")
_WORD = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """Return the XXH32 hash of ``data`` with ``seed``, as an unsigned 32-bit int."""
    buf = bytes(data)
    n = len(buf)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed & _M
        v4 = (seed - _P1) & _M
        limit = n - 16
        while pos <= limit:
            w1, w2, w3, w4 = _WORDS4.unpack_from(buf, pos)
            v1 = (_rotl((v1 + w1 * _P2) & _M, 13) * _P1) & _M
            v2 = (_rotl((v2 + w2 * _P2) & _M, 13) * _P1) & _M
            v3 = (_rotl((v3 + w3 * _P2) & _M, 13) * _P1) & _M
            v4 = (_rotl((v4 + w4 * _P2) & _M, 13) * _P1) & _M
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while pos + 4 <= n:
        (w,) = _WORD.unpack_from(buf, pos)
        h = (_rotl((h + w * _P3) & _M, 17) * _P4) & _M
        pos += 4
    while pos < n:
        h = (_rotl((h + buf[pos] * _P5) & _M, 11) * _P1) & _M
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h


def lz4_header_checksum(descriptor: bytes | bytearray | memoryview) -> int:
    """Return the LZ4 frame HC byte for the descriptor bytes after the magic (FLG, BD, ...)."""
    return (xxh32(descriptor) >> 8) & 0xFF
