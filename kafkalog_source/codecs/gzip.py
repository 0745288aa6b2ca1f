"""gzip payloads (codec 1), read the way Java's ``GZIPInputStream`` reads them (SEGMENT_SPEC §3.1).

A payload is one or more RFC 1952 members. Each member's CRC-32 and ISIZE are verified (zlib does
it for ``wbits=31``). After a member, Java tries to parse another gzip header from the remaining
bytes: if that succeeds it decodes the next member, and if it fails (bad magic, wrong method,
header cut short, bad header CRC) the remaining bytes are silently ignored. This module does the
same; a member whose header parses but whose body or trailer is cut short is an error.

Bomb safety: each member is inflated by a ``zlib.decompressobj`` with ``max_length`` set to the
remaining budget plus one byte, so no more than ``max_bytes + 1`` bytes are ever produced.

Speed: the decompressobj path runs at the speed of ``zlib.decompress`` with its default buffer
(within noise). ``zlib.decompress(..., bufsize=exact)`` is about 20% faster, but it cannot bound
its output nor say where the first member ended, so it is not usable here.

Known divergence: zlib rejects a member header with reserved FLG bits set; Java accepts it.
"""

from __future__ import annotations

import zlib

from ..errors import DecompressionError
from .limits import too_large

_FHCRC = 0x02
_FEXTRA = 0x04
_FNAME = 0x08
_FCOMMENT = 0x10


def _is_member_header(buf: bytes) -> bool:
    """True when ``buf`` starts with a complete gzip header that Java's readHeader accepts."""
    n = len(buf)
    if n < 10 or buf[0] != 0x1F or buf[1] != 0x8B or buf[2] != 8:
        return False
    flg = buf[3]
    pos = 10
    if flg & _FEXTRA:
        if pos + 2 > n:
            return False
        pos += 2 + (buf[pos] | (buf[pos + 1] << 8))
    for bit in (_FNAME, _FCOMMENT):
        if flg & bit:
            end = buf.find(b"\x00", pos)
            if end < 0:
                return False
            pos = end + 1
    if flg & _FHCRC:
        if pos + 2 > n:
            return False
        if (buf[pos] | (buf[pos + 1] << 8)) != zlib.crc32(buf[:pos]) & 0xFFFF:
            return False
        pos += 2
    return pos <= n


def decompress_gzip(data: bytes | bytearray | memoryview, max_bytes: int) -> bytes:
    """Inflate all gzip members of ``data``; at most ``max_bytes`` of output."""
    size = len(data)
    if size == 0:
        raise DecompressionError("gzip: empty payload (no gzip header)")
    parts: list[bytes] = []
    total = 0
    start = 0
    rest: bytes | bytearray | memoryview = data
    while True:
        budget = max_bytes - total
        d = zlib.decompressobj(31)
        try:
            out = d.decompress(rest, budget + 1)
        except zlib.error as e:
            raise DecompressionError(
                f"gzip: member at payload byte {start} is corrupt: {e}"
            ) from None
        if len(out) > budget:
            raise too_large("gzip", max_bytes)
        if not d.eof:
            # max_length was not reached, so zlib consumed every input byte without
            # reaching the member's trailer.
            raise DecompressionError(
                f"gzip: stream ends before the end marker (member at payload byte {start}"
                f" is truncated; payload is {size} bytes)"
            )
        parts.append(out)
        total += len(out)
        tail = d.unused_data
        if not tail or not _is_member_header(tail):
            break
        start = size - len(tail)
        rest = tail
    return parts[0] if len(parts) == 1 else b"".join(parts)
