"""Big-endian integer reads and zig-zag varints over uint8 arrays, for use inside kernels."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, config
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from .jit import helper_kernel, inline_kernel


def _be_load(nbytes: int, signed: bool):  # type: ignore[no-untyped-def]
    """An intrinsic: the big-endian integer of ``nbytes`` bytes at ``src[p]``, as int64.

    One unaligned load and a byte swap, emitted straight into the caller: no function of its own
    to compile (a kernel per width cost about 0.1 s of cold start each), and no call. Under
    ``NUMBA_BOUNDSCHECK=1`` the bytes are checked as numba checks ``src[p + i]``.
    """

    def typer(typingctx, src, p):  # type: ignore[no-untyped-def]
        if not (isinstance(src, types.Array) and src.ndim == 1 and src.dtype == types.uint8):
            return None
        if src.layout != "C" or not isinstance(p, types.Integer):
            return None
        sig = types.int64(src, types.int64)

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            arr = context.make_array(sig.args[0])(context, builder, args[0])
            _check_span(context, builder, arr, args[1], context.get_constant(types.int64, nbytes))
            ity = ir.IntType(8 * nbytes)
            ptr = builder.bitcast(builder.gep(arr.data, [args[1]]), ity.as_pointer())
            v = builder.load(ptr, align=1)
            if nbytes > 1:
                bswap = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(ity, [ity]), f"llvm.bswap.i{8 * nbytes}"
                )
                v = builder.call(bswap, [v])
            if nbytes == 8:
                return v
            i64 = ir.IntType(64)
            return builder.sext(v, i64) if signed else builder.zext(v, i64)

        return sig, codegen

    typer.__name__ = typer.__qualname__ = f"be{8 * nbytes}{'' if signed else 'u'}"
    return typer


be16 = intrinsic(_be_load(2, True))
be16.__doc__ = "Signed 16-bit big-endian integer at ``src[p]`` (kernels only)."
be32 = intrinsic(_be_load(4, True))
be32.__doc__ = "Signed 32-bit big-endian integer at ``src[p]`` (kernels only)."
be32u = intrinsic(_be_load(4, False))
be32u.__doc__ = "Unsigned 32-bit big-endian integer at ``src[p]`` (kernels only)."
be64 = intrinsic(_be_load(8, True))
be64.__doc__ = "Signed 64-bit big-endian integer at ``src[p]`` (kernels only)."


# Varints are read without bounds checks, for speed: callers guarantee at least PAD readable
# bytes after the end of the data they walk, and check every returned position against the end
# of the enclosing record. A varint longer than allowed returns a position past any real data
# (p + TOO_LONG), so that same check reports it.
PAD = 16
TOO_LONG = 1 << 40


@helper_kernel
def varint(src, p):  # type: ignore[no-untyped-def]
    """Zig-zag int32 varint at ``src[p]`` (at most 5 bytes) -> (value, next position)."""
    b0 = np.int64(src[p])
    if b0 < 0x80:  # fast paths: nearly every length, delta and count takes one or two bytes
        return (b0 >> 1) ^ -(b0 & 1), p + 1
    b1 = np.int64(src[p + 1])
    if b1 < 0x80:
        u = (b0 & 0x7F) | (b1 << 7)
        return (u >> 1) ^ -(u & 1), p + 2
    u = (b0 & 0x7F) | ((b1 & 0x7F) << 7)
    shift = 14
    q = p + 2
    for _ in range(3):
        b = np.int64(src[q])
        q += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            u &= 0xFFFFFFFF
            return (u >> 1) ^ -(u & 1), q
        shift += 7
    return np.int64(0), q + TOO_LONG


@helper_kernel
def varlong(src, p):  # type: ignore[no-untyped-def]
    """Zig-zag int64 varint at ``src[p]`` (at most 10 bytes) -> (value, next position)."""
    b0 = np.int64(src[p])
    if b0 < 0x80:
        return (b0 >> 1) ^ -(b0 & 1), p + 1
    b1 = np.int64(src[p + 1])
    if b1 < 0x80:
        u = (b0 & 0x7F) | (b1 << 7)
        return (u >> 1) ^ -(u & 1), p + 2
    r = np.uint64((b0 & 0x7F) | ((b1 & 0x7F) << 7))
    shift = np.uint64(14)
    q = p + 2
    for _ in range(8):
        b = np.uint64(src[q])
        q += 1
        r |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            return np.int64(r >> np.uint64(1)) ^ -np.int64(r & np.uint64(1)), q
        shift += np.uint64(7)
    return np.int64(0), q + TOO_LONG


def _check_span(context, builder, arr, off, n):  # type: ignore[no-untyped-def]
    """Under ``NUMBA_BOUNDSCHECK=1`` only: IndexError unless ``arr[off:off + n]`` (n > 0) lies
    inside the array, as numba checks its own indexing (these intrinsics bypass it)."""
    if not config.BOUNDSCHECK:
        return
    size = cgutils.unpack_tuple(builder, arr.shape, 1)[0]
    one = ir.Constant(n.type, 1)
    with builder.if_then(builder.icmp_signed(">", n, ir.Constant(n.type, 0))):
        cgutils.do_boundscheck(context, builder, off, size)
        cgutils.do_boundscheck(context, builder, builder.sub(builder.add(off, n), one), size)


def _memcpy_codegen(count):  # type: ignore[no-untyped-def]
    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        dst_arr = context.make_array(sig.args[0])(context, builder, args[0])
        src_arr = context.make_array(sig.args[2])(context, builder, args[2])
        n = args[4] if count is None else context.get_constant(types.int64, count)
        _check_span(context, builder, dst_arr, args[1], n)
        _check_span(context, builder, src_arr, args[3], n)
        d = builder.gep(dst_arr.data, [args[1]])
        s = builder.gep(src_arr.data, [args[3]])
        cgutils.raw_memcpy(builder, d, s, n, 1)
        return context.get_dummy_value()

    return codegen


@intrinsic
def memcpy(typingctx, dst, dst_off, src, src_off, n):  # type: ignore[no-untyped-def]
    """LLVM ``memcpy`` of ``n`` bytes from ``src[src_off:]`` to ``dst[dst_off:]`` (no checks)."""
    sig = types.void(dst, types.int64, src, types.int64, types.int64)
    return sig, _memcpy_codegen(None)


@intrinsic
def memcpy16(typingctx, dst, dst_off, src, src_off, n):  # type: ignore[no-untyped-def]
    """A 16-byte LLVM ``memcpy`` (compiled to two unaligned loads and stores); ``n`` unused."""
    sig = types.void(dst, types.int64, src, types.int64, types.int64)
    return sig, _memcpy_codegen(16)


@intrinsic
def memcpy8(typingctx, dst, dst_off, src, src_off, n):  # type: ignore[no-untyped-def]
    """An 8-byte LLVM ``memcpy`` (one unaligned load and store); ``n`` unused."""
    sig = types.void(dst, types.int64, src, types.int64, types.int64)
    return sig, _memcpy_codegen(8)


@intrinsic
def read_only(typingctx, arr):  # type: ignore[no-untyped-def]
    """The same array typed read-only (no copy), so that a kernel called on both read-only
    source bytes and a writable output buffer is compiled for one signature, not two."""
    if not isinstance(arr, types.Array):
        return None
    sig = arr.copy(readonly=True)(arr)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return impl_ret_borrowed(context, builder, sig.return_type, args[0])

    return sig, codegen


@intrinsic
def load_u64(typingctx, src, off):  # type: ignore[no-untyped-def]
    """Little-endian unsigned 64-bit load from ``src[off:off + 8]`` (unaligned, no checks;
    a little-endian host)."""
    sig = types.uint64(src, types.int64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        _check_span(context, builder, arr, args[1], context.get_constant(types.int64, 8))
        ptr = builder.bitcast(builder.gep(arr.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return sig, codegen


@inline_kernel
def _cont(src, q, lo, hi):  # type: ignore[no-untyped-def]
    """Whether ``src[q]`` is in ``[lo, hi]`` (a continuation byte's allowed range)."""
    c = np.int64(src[q])
    return lo <= c <= hi


@helper_kernel
def is_ascii(src, start, end):  # type: ignore[no-untyped-def]
    """Whether ``src[start:end]`` is all ASCII: 64-bit words, then the last bytes one by one."""
    acc = np.uint64(0)
    p = np.int64(start)
    while end - p >= 8:
        acc |= load_u64(src, p)
        p += 8
    while p < end:
        acc |= np.uint64(src[p])
        p += 1
    return (acc & np.uint64(0x8080808080808080)) == 0


@helper_kernel
def utf8_error(src, start, end):  # type: ignore[no-untyped-def]
    """-1 if ``src[start:end]`` is well-formed UTF-8, else the index (from ``start``) of the
    first byte of the first ill-formed sequence, as Python's strict decoder reports it.

    Well-formed sequences are those of Unicode's Table 3-7: no overlong forms, no surrogates,
    nothing above U+10FFFF. ASCII runs are checked eight bytes at a time. Not inlined: kernels
    call it only for text that :func:`is_ascii` rejects.
    """
    p = np.int64(start)
    while p < end:
        if end - p >= 8 and (load_u64(src, p) & np.uint64(0x8080808080808080)) == 0:
            p += 8
            continue
        b = np.int64(src[p])
        if b < 0x80:
            p += 1
            continue
        if 0xC2 <= b <= 0xDF:
            n, lo, hi = 1, 0x80, 0xBF
        elif b == 0xE0:
            n, lo, hi = 2, 0xA0, 0xBF
        elif 0xE1 <= b <= 0xEC or b == 0xEE or b == 0xEF:
            n, lo, hi = 2, 0x80, 0xBF
        elif b == 0xED:
            n, lo, hi = 2, 0x80, 0x9F
        elif b == 0xF0:
            n, lo, hi = 3, 0x90, 0xBF
        elif 0xF1 <= b <= 0xF3:
            n, lo, hi = 3, 0x80, 0xBF
        elif b == 0xF4:
            n, lo, hi = 3, 0x80, 0x8F
        else:
            return p - start
        if end - p <= n or not _cont(src, p + 1, lo, hi):
            return p - start
        for k in range(2, n + 1):
            if not _cont(src, p + k, 0x80, 0xBF):
                return p - start
        p += n + 1
    return np.int64(-1)


@helper_kernel
def copy_bytes(dst, dst_off, src, src_off, n):  # type: ignore[no-untyped-def]
    """Copy ``n`` bytes between uint8 arrays; callers check the bounds.

    Copies up to 128 bytes go 16 bytes at a time with fixed-size moves while at least 16 bytes remain in
    both arrays past the copy (the common case for keys and small values); anything longer, or
    near an array end, is one libc ``memcpy``.
    """
    d = np.int64(dst_off)
    s = np.int64(src_off)
    m = np.int64(n)
    if m <= 128 and d + 128 <= dst.shape[0] and s + 128 <= src.shape[0]:
        i = np.int64(0)
        while i < m:
            memcpy16(dst, d + i, src, s + i, np.int64(16))
            i += 16
    else:
        memcpy(dst, d, src, s, m)
