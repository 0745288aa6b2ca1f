"""CRC-32 (IEEE 802.3, as ``java.util.zip.CRC32``) inside kernels, for v0/v1 messages.

Legacy messages carry one CRC each, inner messages of compressed wrappers included, so it runs
per record and must be compiled.

* :func:`crc32` is slicing-by-8 tables, 8 bytes per 64-bit load (about 1.4 GB/s here). It also
  serves CRC-32C hosts without a CRC instruction, with Castagnoli tables.
* :func:`crc32_ieee` is what the legacy kernel calls. On x86-64 with PCLMULQDQ it folds spans of
  64 bytes or more with carry-less multiplication, four 16-byte lanes at a time (Intel's
  "Fast CRC Computation Using PCLMULQDQ", the constants zlib-ng uses), and finishes the last
  16-byte remainder and the tail with the tables. Elsewhere (another CPU, a portable build with
  ``NUMBA_CPU_NAME=generic``, or ``KAFKALOG_SOFTWARE_CRC32=1``: :mod:`.jit` decides) it is
  :func:`crc32`.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .bytes import load_u64
from .jit import PCLMUL, inline_kernel, kernel


def slice_tables(poly: int = 0xEDB88320) -> np.ndarray:
    """Slicing-by-8 tables for the reflected polynomial ``poly`` (CRC-32 by default)."""
    t = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t[0, i] = c
    for i in range(256):
        c = int(t[0, i])
        for k in range(1, 8):
            c = int(t[0, c & 0xFF]) ^ (c >> 8)
            t[k, i] = c
    return t


CRC32_TABLES = slice_tables()


HAVE_PCLMUL = PCLMUL  # chosen in .jit (host or NUMBA_CPU_NAME/FEATURES, KAFKALOG_SOFTWARE_CRC32)

# Folding constants for the reflected CRC-32 polynomial: x^(n) mod P, bit-reflected and shifted
# by one, for folds over 64 bytes (4 lanes) and over 16 bytes.
_K4_HI_LANE, _K4_LO_LANE = 0x1C6E41596, 0x154442BD4
_K1_HI_LANE, _K1_LO_LANE = 0xCCAA009E, 0x1751997D0


@intrinsic
def clmul(typingctx, a, b):  # type: ignore[no-untyped-def]
    """Carry-less product of two 64-bit values -> (low 64 bits, high 64 bits) (PCLMULQDQ)."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        i8, i64 = ir.IntType(8), ir.IntType(64)
        v2 = ir.VectorType(i64, 2)
        zero = ir.Constant(ir.IntType(32), 0)
        one = ir.Constant(ir.IntType(32), 1)
        va = builder.insert_element(ir.Constant(v2, None), args[0], zero)
        vb = builder.insert_element(ir.Constant(v2, None), args[1], zero)
        fnty = ir.FunctionType(v2, [v2, v2, i8])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.pclmulqdq")
        r = builder.call(fn, [va, vb, ir.Constant(i8, 0)])
        lo = builder.extract_element(r, zero)
        hi = builder.extract_element(r, one)
        return context.make_tuple(builder, sig.return_type, [lo, hi])

    return sig, codegen


@inline_kernel
def _step8(tables, c, w):  # type: ignore[no-untyped-def]
    """The raw state ``c`` advanced over the 8 little-endian bytes of ``w``."""
    m = np.uint64(0xFF)
    x = w ^ c
    return (
        np.uint64(tables[7, x & m])
        ^ np.uint64(tables[6, (x >> np.uint64(8)) & m])
        ^ np.uint64(tables[5, (x >> np.uint64(16)) & m])
        ^ np.uint64(tables[4, (x >> np.uint64(24)) & m])
        ^ np.uint64(tables[3, (x >> np.uint64(32)) & m])
        ^ np.uint64(tables[2, (x >> np.uint64(40)) & m])
        ^ np.uint64(tables[1, (x >> np.uint64(48)) & m])
        ^ np.uint64(tables[0, x >> np.uint64(56)])
    )


@inline_kernel
def _table_run(tables, c, src, p, end):  # type: ignore[no-untyped-def]
    """The raw state ``c`` advanced over ``src[p:end]`` with the tables."""
    while end - p >= 8:
        c = _step8(tables, c, load_u64(src, p))
        p += 8
    m = np.uint64(0xFF)
    while p < end:
        c = np.uint64(tables[0, (c ^ np.uint64(src[p])) & m]) ^ (c >> np.uint64(8))
        p += 1
    return c


@kernel
def crc32(tables, src, start, end):  # type: ignore[no-untyped-def]
    """CRC of ``src[start:end]`` with the slicing-by-8 ``tables`` (CRC-32 or CRC-32C)."""
    c = _table_run(tables, np.uint64(0xFFFFFFFF), src, np.int64(start), end)
    return np.int64(c ^ np.uint64(0xFFFFFFFF))


@inline_kernel
def _fold(xlo, xhi, k_hi_lane, k_lo_lane):  # type: ignore[no-untyped-def]
    """A 16-byte lane moved forward over the fold distance of its constants."""
    alo, ahi = clmul(xhi, np.uint64(k_hi_lane))
    blo, bhi = clmul(xlo, np.uint64(k_lo_lane))
    return alo ^ blo, ahi ^ bhi


@inline_kernel
def _folded(tables, src, start, end):  # type: ignore[no-untyped-def]
    """CRC-32 of ``src[start:end]`` (at least 64 bytes) by carry-less folding."""
    p = np.int64(start)
    a0 = load_u64(src, p) ^ np.uint64(0xFFFFFFFF)
    a1 = load_u64(src, p + 8)
    b0 = load_u64(src, p + 16)
    b1 = load_u64(src, p + 24)
    c0 = load_u64(src, p + 32)
    c1 = load_u64(src, p + 40)
    d0 = load_u64(src, p + 48)
    d1 = load_u64(src, p + 56)
    p += 64
    while end - p >= 64:
        a0, a1 = _fold(a0, a1, _K4_HI_LANE, _K4_LO_LANE)
        b0, b1 = _fold(b0, b1, _K4_HI_LANE, _K4_LO_LANE)
        c0, c1 = _fold(c0, c1, _K4_HI_LANE, _K4_LO_LANE)
        d0, d1 = _fold(d0, d1, _K4_HI_LANE, _K4_LO_LANE)
        a0 ^= load_u64(src, p)
        a1 ^= load_u64(src, p + 8)
        b0 ^= load_u64(src, p + 16)
        b1 ^= load_u64(src, p + 24)
        c0 ^= load_u64(src, p + 32)
        c1 ^= load_u64(src, p + 40)
        d0 ^= load_u64(src, p + 48)
        d1 ^= load_u64(src, p + 56)
        p += 64
    x0, x1 = _fold(a0, a1, _K1_HI_LANE, _K1_LO_LANE)
    x0 ^= b0
    x1 ^= b1
    x0, x1 = _fold(x0, x1, _K1_HI_LANE, _K1_LO_LANE)
    x0 ^= c0
    x1 ^= c1
    x0, x1 = _fold(x0, x1, _K1_HI_LANE, _K1_LO_LANE)
    x0 ^= d0
    x1 ^= d1
    while end - p >= 16:
        x0, x1 = _fold(x0, x1, _K1_HI_LANE, _K1_LO_LANE)
        x0 ^= load_u64(src, p)
        x1 ^= load_u64(src, p + 8)
        p += 16
    # the 16 folded bytes stand for everything read so far: finish them and the tail by table
    c = _step8(tables, np.uint64(0), x0)
    c = _step8(tables, c, x1)
    c = _table_run(tables, c, src, p, end)
    return np.int64(c ^ np.uint64(0xFFFFFFFF))


@inline_kernel
def _ieee_folding(tables, src, start, end):  # type: ignore[no-untyped-def]
    if end - start >= 64:
        return _folded(tables, src, start, end)
    return crc32(tables, src, start, end)


@inline_kernel
def _ieee_tables(tables, src, start, end):  # type: ignore[no-untyped-def]
    return crc32(tables, src, start, end)


crc32_ieee = _ieee_folding if HAVE_PCLMUL else _ieee_tables
crc32_ieee.__doc__ = (
    "CRC-32 of ``src[start:end]`` with the IEEE ``tables``, as ``zlib.crc32`` (no bounds checks)."
)


@kernel
def crc32_spans(tables, src, starts, ends, out):  # type: ignore[no-untyped-def]
    """``out[i]`` = CRC-32 of ``src[starts[i]:ends[i]]`` for every i (callers check bounds)."""
    for i in range(starts.shape[0]):
        out[i] = crc32_ieee(tables, src, starts[i], ends[i])
