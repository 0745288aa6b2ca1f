"""CRC-32C (Castagnoli, the v2 batch checksum) inside kernels, on the CPU's CRC instruction.

x86-64 with SSE4.2 and AArch64 with the CRC extension compute CRC-32C in hardware. A kernel can
then check a batch's checksum right before walking its records, while the batch is in cache, and a
whole window of batches costs one call instead of one Python call per batch.

One instruction stream is bound by the instruction's latency (3 cycles per 8 bytes on x86), so
long spans run three independent streams over consecutive ``SHORT``-byte blocks and join them:
CRC is affine in its state, ``crc(c, A + B) = shift(crc(c, A), len(B)) ^ crc(0, B)``, and the shift
over ``SHORT`` zero bytes is four lookups in tables built once at import.

``HAVE_HW_CRC32C`` tells whether the kernels use the instruction (:mod:`.jit` decides: the CPU
numba compiles for must have it, so not with ``NUMBA_CPU_NAME=generic``, and
``KAFKALOG_SOFTWARE_CRC32C=1`` turns it off). When they do not, :func:`crc32c_span` is the
slicing-by-8 table loop of :mod:`.crc32` with the Castagnoli polynomial instead, and
``CRC32C_TABLES`` are its tables.
"""

from __future__ import annotations

import crc32c as _crc32c_pkg
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .bytes import load_u64
from .crc32 import crc32, slice_tables
from .jit import CRC32C_INSTRUCTION, helper_kernel, inline_kernel, kernel

SHORT = 256  # bytes per stream in one three-way block


_ISA = CRC32C_INSTRUCTION
HAVE_HW_CRC32C = _ISA is not None


def _shift_tables(n: int) -> np.ndarray:
    """Tables ``t[k][b]`` = raw CRC state ``b << 8k`` advanced over ``n`` zero bytes."""
    zeros = bytes(n)
    mask = 0xFFFFFFFF
    t = np.zeros((4, 256), dtype=np.uint32)
    for k in range(4):
        for b in range(256):
            state = b << (8 * k)
            # the package takes and returns the finalised (inverted) CRC
            t[k, b] = ~_crc32c_pkg.crc32c(zeros, ~state & mask) & mask
    return t


@intrinsic
def crc_u64(typingctx, crc, word):  # type: ignore[no-untyped-def]
    """The CPU's raw CRC-32C step over one little-endian 64-bit word (no inversion)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        i32, i64 = ir.IntType(32), ir.IntType(64)
        if _ISA == "arm":
            fnty = ir.FunctionType(i32, [i32, i64])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.aarch64.crc32cx")
            out = builder.call(fn, [builder.trunc(args[0], i32), args[1]])
            return builder.zext(out, i64)
        fnty = ir.FunctionType(i64, [i64, i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse42.crc32.64.64")
        return builder.call(fn, [args[0], args[1]])

    return sig, codegen


@intrinsic
def crc_u8(typingctx, crc, byte):  # type: ignore[no-untyped-def]
    """The CPU's raw CRC-32C step over one byte (no inversion)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        c = builder.trunc(args[0], i32)
        if _ISA == "arm":
            fnty = ir.FunctionType(i32, [i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.aarch64.crc32cb")
            out = builder.call(fn, [c, builder.trunc(args[1], i32)])
        else:
            fnty = ir.FunctionType(i32, [i32, i8])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse42.crc32.32.8")
            out = builder.call(fn, [c, builder.trunc(args[1], i8)])
        return builder.zext(out, i64)

    return sig, codegen


@inline_kernel
def _shift(tables, c):  # type: ignore[no-untyped-def]
    """Advance the raw state ``c`` over ``SHORT`` zero bytes."""
    return (
        np.uint64(tables[0, c & np.uint64(0xFF)])
        ^ np.uint64(tables[1, (c >> np.uint64(8)) & np.uint64(0xFF)])
        ^ np.uint64(tables[2, (c >> np.uint64(16)) & np.uint64(0xFF)])
        ^ np.uint64(tables[3, (c >> np.uint64(24)) & np.uint64(0xFF)])
    )


@helper_kernel
def _hw_span(tables, src, start, end):  # type: ignore[no-untyped-def]
    """CRC-32C of ``src[start:end]`` on the CRC instruction, three streams at a time."""
    c = np.uint64(0xFFFFFFFF)
    p = np.int64(start)
    zero = np.uint64(0)
    while end - p >= 3 * SHORT:
        c1 = zero
        c2 = zero
        q = p
        for _ in range(SHORT // 8):
            c = crc_u64(c, load_u64(src, q))
            c1 = crc_u64(c1, load_u64(src, q + SHORT))
            c2 = crc_u64(c2, load_u64(src, q + 2 * SHORT))
            q += 8
        c = _shift(tables, _shift(tables, c) ^ c1) ^ c2
        p += 3 * SHORT
    while end - p >= 8:
        c = crc_u64(c, load_u64(src, p))
        p += 8
    while p < end:
        c = crc_u8(c, np.uint64(src[p]))
        p += 1
    return np.int64(c ^ np.uint64(0xFFFFFFFF))


@inline_kernel
def _sw_span(tables, src, start, end):  # type: ignore[no-untyped-def]
    """CRC-32C of ``src[start:end]`` with slicing-by-8 tables."""
    return crc32(tables, src, start, end)


if HAVE_HW_CRC32C:
    CRC32C_TABLES = _shift_tables(SHORT)
    crc32c_span = _hw_span
else:
    CRC32C_TABLES = slice_tables(0x82F63B78)
    crc32c_span = _sw_span
crc32c_span.__doc__ = (
    "CRC-32C of ``src[start:end]``, as ``crc32c.crc32c`` gives (no bounds checks)."
)


@kernel
def crc32c_spans(tables, src, starts, ends, out):  # type: ignore[no-untyped-def]
    """``out[i]`` = CRC-32C of ``src[starts[i]:ends[i]]`` for every i (callers check bounds)."""
    for i in range(starts.shape[0]):
        out[i] = crc32c_span(tables, src, starts[i], ends[i])
