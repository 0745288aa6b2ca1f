"""Compiled lz4 and snappy decoders for the common case, run for many batches per call.

Per batch, the library path (:mod:`.lz4`, :mod:`.snappy`) costs a few microseconds of Python
around ~10 us of decompression, and each result is a new ``bytes`` object that is then copied
into a group. :func:`inflate_batches` instead decompresses a run of v2 batches straight into one
reusable arena, in a single call, so the record kernel walks each payload while it is still in
cache.

These decoders are a fast path, not the authority. They handle what producers write: LZ4 frames
in Kafka's subset without block checksums (a descriptor with a content size or a content checksum
flag is fine), and raw or xerial-framed snappy. On anything else (another codec, a block checksum
flag, a concatenated xerial stream, a malformed or oversized payload, a record count that cannot
fit) they stop with ``NEEDS_LIBRARY`` at that batch, and the reader decompresses it with the
library path, which either succeeds or raises the precise error. So a corrupt payload gets the
same message either way, and bomb limits (``max_bytes``) are enforced here before any write.

Every read is checked against the payload end, every write against the arena limit; the arena
needs ``SLACK`` writable bytes past its limit and the source ``SLACK`` readable bytes past each
payload (the window padding), because copies move 16 bytes at a time.
"""

from __future__ import annotations

import numpy as np

from ..kernel.bytes import memcpy, memcpy8, memcpy16
from ..kernel.jit import inline_kernel, kernel

SLACK = 16

NEEDS_LIBRARY = -1  # this batch must go through the library path (unsupported or malformed)
ARENA_FULL = -2  # the arena cannot hold this batch's output bound (grow it, or flush first)

_P1 = 0x9E3779B1
_P2 = 0x85EBCA77
_P3 = 0xC2B2AE3D
_P4 = 0x27D4EB2F
_P5 = 0x165667B1
_M32 = 0xFFFFFFFF


@inline_kernel
def _rotl(x, r):  # type: ignore[no-untyped-def]
    """Rotate the 32-bit value ``x`` (held in an int64) left by ``r``."""
    return ((x << r) | (x >> (32 - r))) & _M32


@inline_kernel
def _u32le(src, p):  # type: ignore[no-untyped-def]
    """Unsigned 32-bit little-endian integer at ``src[p]`` (as an int64)."""
    return (
        np.int64(src[p])
        | (np.int64(src[p + 1]) << 8)
        | (np.int64(src[p + 2]) << 16)
        | (np.int64(src[p + 3]) << 24)
    )


@kernel
def xxh32_short(src, start, n):  # type: ignore[no-untyped-def]
    """XXH32 (seed 0) of ``src[start:start + n]`` for ``n < 16`` (LZ4 frame descriptors)."""
    h = (_P5 + n) & _M32
    p = start
    end = start + n
    while p + 4 <= end:
        h = (_rotl((h + _u32le(src, p) * _P3) & _M32, 17) * _P4) & _M32
        p += 4
    while p < end:
        h = (_rotl((h + np.int64(src[p]) * _P5) & _M32, 11) * _P1) & _M32
        p += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


@inline_kernel
def _copy(dst, dp, src, sp, n):  # type: ignore[no-untyped-def]
    """Copy ``n`` bytes; short copies move 16 bytes at a time (over-copying into the slack)."""
    if n <= 64:
        i = 0
        while i < n:
            memcpy16(dst, dp + i, src, sp + i, 16)
            i += 16
    else:
        memcpy(dst, dp, src, sp, n)


@inline_kernel
def _match(dst, dp, off, ml):  # type: ignore[no-untyped-def]
    """Copy a match of ``ml`` bytes from ``off`` bytes back (overlapping, as LZ77 means)."""
    m = dp - off
    if off >= 16:
        i = 0
        while i < ml:
            memcpy16(dst, dp + i, dst, m + i, 16)
            i += 16
    elif off >= 8:
        i = 0
        while i < ml:
            memcpy8(dst, dp + i, dst, m + i, 8)
            i += 8
    else:
        for i in range(ml):
            dst[dp + i] = dst[m + i]


@inline_kernel
def _extra_length(src, sp, limit):  # type: ignore[no-untyped-def]
    """An LZ4 length's extra bytes from ``src[sp]`` (255 = one more) -> (sum, next position).

    The sum is -1 when the bytes run past ``limit`` (callers guarantee ``sp < limit``).
    """
    total = np.int64(0)
    while True:
        b = np.int64(src[sp])
        sp += 1
        total += b
        if sp > limit:
            return np.int64(-1), sp
        if b != 255:
            return total, sp


@kernel
def lz4_block(src, sp, send, dst, dstart, dp, dlimit):  # type: ignore[no-untyped-def]
    """Decode the LZ4 block ``src[sp:send]`` to ``dst[dp:]``, matches reaching back to ``dstart``.

    ``dlimit`` is the end of the block's output space (block start + block maximum), as liblz4
    sees it. Returns the new output position, or -1 if the block is malformed, would write past
    ``dlimit``, or breaks a rule liblz4 enforces (then the library path reports it).
    """
    while True:
        # fast path, far from both ends: short literals and matches need no length checks
        if send - sp >= 32 and dlimit - dp >= 64:
            token = np.int64(src[sp])
            lit = token >> 4
            ml = token & 15
            if lit < 15 and ml < 15:
                memcpy16(dst, dp, src, sp + 1, 16)
                dp += lit
                sp += 1 + lit
                off = np.int64(src[sp]) | (np.int64(src[sp + 1]) << 8)
                sp += 2
                if off == 0 or off > dp - dstart:
                    return -1
                ml += 4
                if off >= 16:
                    memcpy16(dst, dp, dst, dp - off, 16)
                    if ml > 16:
                        memcpy16(dst, dp + 16, dst, dp - off + 16, 16)
                else:
                    _match(dst, dp, off, ml)
                dp += ml
                continue
        if sp >= send:
            return -1
        token = np.int64(src[sp])
        sp += 1
        lit = token >> 4
        if lit == 15:
            # liblz4 reads a literal length's extra bytes only before the last 15 input bytes
            if sp >= send - 15:
                return -1
            extra, sp = _extra_length(src, sp, send - 15)
            if extra < 0:
                return -1
            lit += extra
        if lit > send - sp or lit > dlimit - dp:
            return -1
        _copy(dst, dp, src, sp, lit)
        dp += lit
        sp += lit
        if dp > dlimit - 12 or sp > send - 8:
            # liblz4's parsing limits: literals this close to either end must be the last
            # sequence, and end the block exactly
            return dp if sp == send else -1
        off = np.int64(src[sp]) | (np.int64(src[sp + 1]) << 8)
        sp += 2
        if off == 0 or off > dp - dstart:
            return -1
        ml = token & 15
        if ml == 15:
            # ... and a match length's extra bytes only before the last 4 (at least 6 remain)
            extra, sp = _extra_length(src, sp, send - 4)
            if extra < 0:
                return -1
            ml += extra
        ml += 4
        if ml > dlimit - dp:
            return -1
        _match(dst, dp, off, ml)
        dp += ml


@kernel
def lz4_frame(src, start, end, magic, dst, dp, dlimit):  # type: ignore[no-untyped-def]
    """Decode one Kafka-subset LZ4 frame ``src[start:end]`` to ``dst[dp:]``.

    Returns the output end, ``NEEDS_LIBRARY`` for anything this fast path does not take (see
    the module docstring), or ``ARENA_FULL`` when the frame's output bound exceeds ``dlimit``.
    """
    size = end - start
    if size < 7:
        return NEEDS_LIBRARY
    if src[start] != 0x04 or src[start + 1] != 0x22 or src[start + 2] != 0x4D:
        return NEEDS_LIBRARY
    if src[start + 3] != 0x18:
        return NEEDS_LIBRARY
    flg = np.int64(src[start + 4])
    bd = np.int64(src[start + 5])
    # version 01, independent blocks; no reserved bit, dictionary id or block checksum
    if (flg & 0xF3) != 0x60 or (bd & 0x8F) != 0:
        return NEEDS_LIBRARY
    size_id = bd >> 4
    if size_id < 4:
        return NEEDS_LIBRARY
    block_max = np.int64(1) << (2 * size_id + 8)
    hc_at = 14 if flg & 0x08 else 6
    if size <= hc_at:
        return NEEDS_LIBRARY
    if magic >= 1:
        hc = (xxh32_short(src, start + 4, hc_at - 4) >> 8) & 0xFF
        if hc != src[start + hc_at]:
            return NEEDS_LIBRARY
    # walk the block sizes first: the output bound, and a well-formed frame
    pos = start + hc_at + 1
    bound = np.int64(0)
    while True:
        if end - pos < 4:
            return NEEDS_LIBRARY
        word = _u32le(src, pos)
        length = word & 0x7FFFFFFF
        if length == 0:
            break
        if length > block_max or pos + 4 + length > end:
            return NEEDS_LIBRARY
        bound += length if word & 0x80000000 else block_max
        pos += 4 + length
    if flg & 0x04 and end - pos < 8:
        return NEEDS_LIBRARY  # the content checksum is missing
    if bound > dlimit - dp:
        return ARENA_FULL
    # decode
    pos = start + hc_at + 1
    while True:
        word = _u32le(src, pos)
        length = word & 0x7FFFFFFF
        if length == 0:
            return dp
        pos += 4
        if word & 0x80000000:
            _copy(dst, dp, src, pos, length)
            dp += length
        else:
            blk = lz4_block(src, pos, pos + length, dst, dp, dp, dp + block_max)  # independent
            if blk < 0:
                return NEEDS_LIBRARY
            dp = blk
        pos += length


@inline_kernel
def _snappy_varint(src, p, end):  # type: ignore[no-untyped-def]
    """The uncompressed length at the start of a raw snappy block -> (length or -1, next)."""
    v = np.int64(0)
    shift = 0
    while p < end and shift < 35:
        b = np.int64(src[p])
        p += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            if v > 0xFFFFFFFF:
                return np.int64(-1), p
            return v, p
        shift += 7
    return np.int64(-1), p


@kernel
def snappy_raw(src, sp, send, dst, dp, dlimit):  # type: ignore[no-untyped-def]
    """Decode one raw snappy block to ``dst[dp:]``.

    Returns the output end, ``NEEDS_LIBRARY`` if it is malformed, or ``ARENA_FULL`` when its
    declared length exceeds ``dlimit``.
    """
    ulen, sp = _snappy_varint(src, sp, send)
    if ulen < 0:
        return NEEDS_LIBRARY
    if ulen > dlimit - dp:
        return ARENA_FULL
    out0 = dp
    oend = dp + ulen
    while sp < send:
        tag = np.int64(src[sp])
        sp += 1
        kind = tag & 3
        if kind == 0:
            n = (tag >> 2) + 1
            if n > 60:
                extra = n - 60
                if send - sp < extra:
                    return NEEDS_LIBRARY
                n = np.int64(0)
                for i in range(extra):
                    n |= np.int64(src[sp + i]) << (8 * i)
                n += 1
                sp += extra
            if n > send - sp or n > oend - dp:
                return NEEDS_LIBRARY
            _copy(dst, dp, src, sp, n)
            dp += n
            sp += n
            continue
        if kind == 1:
            if sp >= send:
                return NEEDS_LIBRARY
            n = 4 + ((tag >> 2) & 7)
            off = ((tag >> 5) << 8) | np.int64(src[sp])
            sp += 1
        elif kind == 2:
            if send - sp < 2:
                return NEEDS_LIBRARY
            n = (tag >> 2) + 1
            off = np.int64(src[sp]) | (np.int64(src[sp + 1]) << 8)
            sp += 2
        else:
            if send - sp < 4:
                return NEEDS_LIBRARY
            n = (tag >> 2) + 1
            off = _u32le(src, sp)
            sp += 4
        if off == 0 or off > dp - out0 or n > oend - dp:
            return NEEDS_LIBRARY
        _match(dst, dp, off, n)
        dp += n
    if dp != oend:
        return NEEDS_LIBRARY
    return dp


@kernel
def snappy_payload(src, start, end, dst, dp, dlimit):  # type: ignore[no-untyped-def]
    """Decode a raw or xerial-framed snappy payload ``src[start:end]`` to ``dst[dp:]``."""
    size = end - start
    if size == 0:
        return NEEDS_LIBRARY
    xerial = size >= 16
    if xerial:
        magic = (0x82, 0x53, 0x4E, 0x41, 0x50, 0x50, 0x59, 0x00)
        for i in range(8):
            if src[start + i] != magic[i]:
                xerial = False
                break
    if not xerial:
        return snappy_raw(src, start, end, dst, dp, dlimit)
    pos = start + 16
    # the chunks' declared lengths first: the output bound, and a well-formed stream
    bound = np.int64(0)
    chunks = 0
    while end - pos >= 4:
        length = (
            (np.int64(src[pos]) << 24)
            | (np.int64(src[pos + 1]) << 16)
            | (np.int64(src[pos + 2]) << 8)
            | np.int64(src[pos + 3])
        )
        if length == 0x82534E41 or length >= 0x80000000 or length == 0:
            return NEEDS_LIBRARY  # a concatenated stream, or an error the library reports
        if pos + 4 + length > end:
            return NEEDS_LIBRARY
        ulen, _ = _snappy_varint(src, pos + 4, pos + 4 + length)
        if ulen < 0:
            return NEEDS_LIBRARY
        bound += ulen
        chunks += 1
        pos += 4 + length
    if bound > dlimit - dp:
        return ARENA_FULL
    pos = start + 16
    for _ in range(chunks):
        length = (
            (np.int64(src[pos]) << 24)
            | (np.int64(src[pos + 1]) << 16)
            | (np.int64(src[pos + 2]) << 8)
            | np.int64(src[pos + 3])
        )
        dp = snappy_raw(src, pos + 4, pos + 4 + length, dst, dp, dlimit)
        if dp < 0:
            return NEEDS_LIBRARY
        pos += 4 + length
    return dp


@kernel
def inflate_batches(  # type: ignore[no-untyped-def]
    src, starts, ends, codecs, counts, dst, dst_start, dst_limit, max_bytes, out_end
):
    """Decompress batch payloads ``src[starts[i]:ends[i]]`` one after another into ``dst``.

    Batch i's output goes to ``dst[out_end[i-1]:out_end[i]]`` (the first starts at
    ``dst_start``). Stops before a batch whose codec is not lz4 (3) or snappy (2), that needs the
    library path, whose record count ``counts[i]`` cannot fit its output (7 bytes a record), or
    whose output bound does not fit below ``dst_limit``. A batch whose bound exceeds
    ``max_bytes`` (maxBatchBytes) goes to the library path, which enforces that limit exactly.
    Returns ``(batches done, status)``: status 0 when all are done, else ``NEEDS_LIBRARY`` or
    ``ARENA_FULL`` for batch ``done``.
    """
    dp = dst_start
    for i in range(starts.shape[0]):
        codec = codecs[i]
        capped = dst_limit - dp > max_bytes
        limit = dp + max_bytes if capped else dst_limit
        if codec == 3:
            r = lz4_frame(src, starts[i], ends[i], 2, dst, dp, limit)
        elif codec == 2:
            r = snappy_payload(src, starts[i], ends[i], dst, dp, limit)
        else:
            r = NEEDS_LIBRARY
        if r == ARENA_FULL and capped:
            r = NEEDS_LIBRARY
        if r < 0:
            return i, r
        if counts[i] > (r - dp) // 7:
            return i, NEEDS_LIBRARY
        out_end[i] = r
        dp = r
    return starts.shape[0], 0
