# The compiled kernels' Python entry points (included by _native.pyx, _native_checked.pyx and
# _native_asan.pyx: one source, three builds).
#
# Each entry point takes typed memoryviews (the dtype, dimensions and contiguity are checked by
# Cython when the call is made: a wrong array is a ValueError, never a wild pointer), hands the
# C kernel plain pointers and lengths, and releases the GIL while the kernel runs. The kernels
# live in csrc/*.h; see kafkalog_source/kernel/__init__.py for the map.

from libc.stdint cimport int32_t, int64_t, uint8_t

import os as _os

import numpy as _np

cdef extern from "csrc/kl_all.h" nogil:
    ctypedef struct kl_bytes:
        const uint8_t *p
        int64_t n
    ctypedef struct kl_u8:
        uint8_t *p
        int64_t n
    ctypedef struct kl_i64:
        int64_t *p
        int64_t n
    ctypedef struct kl_ci64:
        const int64_t *p
        int64_t n
    ctypedef struct kl_i32:
        int32_t *p
        int64_t n
    ctypedef struct kl_f64:
        double *p
        int64_t n
    ctypedef struct kl_cmat:
        const int64_t *p
        int64_t rows
        int64_t cols
    ctypedef struct kl_mat:
        int64_t *p
        int64_t rows
        int64_t cols
    ctypedef struct kl_sink:
        kl_i64 offsets, timestamps, metas
        kl_i32 ts_types, key_off, val_off, hdr_off, hk_off, hv_off
        kl_u8 key_valid, key_data, val_valid, val_data, hv_valid, hk_data, hv_data
        kl_i64 state
    ctypedef struct kl_avro_cols:
        kl_ci64 col_kind
        kl_cmat lay
        kl_i64 cnt, dlen
        kl_u8 valid
        kl_i64 ival
        kl_f64 fval
        kl_u8 data
    ctypedef struct kl_avro_errs:
        kl_i64 code, pos, arg, pc
    ctypedef struct kl_oob_t:
        int line
        int64_t index
        int64_t length

    kl_oob_t kl_oob
    const char *KL_BUILD
    int kl_hw_crc32c
    int kl_clmul
    void kl_oob_reset()
    uint8_t IX(kl_bytes a, int64_t i)
    void kl_crc_init(int allow_hw_crc32c, int allow_clmul)
    int kl_cpu_features()
    int kl_bind_libs(const char *lz4_path, const char *zstd_path)
    int64_t kl_zstd_live
    int64_t kl_zstd_payload(kl_bytes src, int64_t start, int64_t end, kl_u8 dst, int64_t dp,
                            int64_t dlimit)
    int64_t kl_crc32c(kl_bytes a, int64_t start, int64_t end)
    int64_t kl_rp_chain(kl_bytes buf, kl_i64 out, kl_u8 headers, int64_t *stop)
    int64_t kl_put_rows(kl_u8 dst, int64_t base, kl_ci64 at, kl_bytes rows, int64_t width)
    int64_t kl_crc32(kl_bytes a, int64_t start, int64_t end)
    int64_t kl_scan_window(kl_bytes buf, int64_t limit, int64_t file_pos, kl_mat out,
                           int64_t *stop, int64_t *why)
    int64_t kl_decode_v2(kl_bytes src, kl_cmat bp, int64_t want, int verify,
                         int64_t row_limit, int64_t byte_limit, kl_sink s)
    int64_t kl_decode_legacy(kl_bytes src, int64_t start, int64_t end, int64_t meta_base,
                             int64_t meta_step, int verify, int64_t want, int64_t row_limit,
                             int64_t byte_limit, kl_sink s)
    void kl_check_wrappers(kl_bytes src, kl_ci64 wpos, kl_ci64 sizes, int verify,
                           kl_i64 value_start, kl_i64 value_len)
    int64_t kl_decode_wrapped(kl_bytes src, kl_cmat wp, int verify, int64_t want,
                              int64_t row_limit, int64_t byte_limit, kl_sink s)
    int64_t kl_xxh32_short(kl_bytes src, int64_t start, int64_t n)
    int64_t kl_lz4_frame(kl_bytes src, int64_t start, int64_t end, int64_t magic, kl_u8 dst,
                         int64_t dp, int64_t dlimit)
    int64_t kl_snappy_payload(kl_bytes src, int64_t start, int64_t end, kl_u8 dst,
                              int64_t dp, int64_t dlimit)
    int64_t kl_inflate_batches(kl_bytes src, kl_ci64 starts, kl_ci64 ends, kl_ci64 codecs,
                               kl_ci64 counts, kl_u8 dst, int64_t dst_start, int64_t dst_limit,
                               int64_t max_bytes, kl_i64 out_end, int64_t *status)
    int64_t kl_decode_avro(kl_bytes src, kl_bytes consts, kl_ci64 starts, kl_ci64 ends,
                           kl_ci64 entry, int64_t row0, kl_cmat prog, kl_ci64 aux,
                           kl_ci64 pow_hi, kl_ci64 pow_lo, kl_ci64 top_fill, kl_avro_cols *o,
                           kl_mat stack, kl_avro_errs e, int64_t *full_out)


BUILD = KL_BUILD.decode()

kl_crc_init(1, 1)  # the tables, and every CPU path this CPU has: configure_crc may turn some off
"""Which build this is: "release", "checked" (every index checked) or "asan" (sanitizers)."""

cdef uint8_t _empty_byte = 0


cdef object _c64(object a):
    """An int64 C-contiguous array of ``a``'s values: ``a`` itself when it is one already (the
    read-only parameter arrays may be column views or other integer types, as numpy gives)."""
    return _np.ascontiguousarray(a, dtype=_np.int64)


cdef inline kl_bytes _ro(const uint8_t[::1] a) noexcept:
    cdef kl_bytes r
    r.p = &a[0] if a.shape[0] else &_empty_byte
    r.n = a.shape[0]
    return r


cdef inline kl_u8 _u8(uint8_t[::1] a) noexcept:
    cdef kl_u8 r
    r.p = &a[0] if a.shape[0] else &_empty_byte
    r.n = a.shape[0]
    return r


cdef int64_t _empty_i64 = 0
cdef int32_t _empty_i32 = 0
cdef double _empty_f64 = 0


cdef inline kl_i64 _i64(int64_t[::1] a) noexcept:
    cdef kl_i64 r
    r.p = &a[0] if a.shape[0] else &_empty_i64
    r.n = a.shape[0]
    return r


cdef inline kl_ci64 _ci64(const int64_t[::1] a) noexcept:
    cdef kl_ci64 r
    r.p = &a[0] if a.shape[0] else &_empty_i64
    r.n = a.shape[0]
    return r


cdef inline kl_i32 _i32(int32_t[::1] a) noexcept:
    cdef kl_i32 r
    r.p = &a[0] if a.shape[0] else &_empty_i32
    r.n = a.shape[0]
    return r


cdef inline kl_f64 _f64(double[::1] a) noexcept:
    cdef kl_f64 r
    r.p = &a[0] if a.shape[0] else &_empty_f64
    r.n = a.shape[0]
    return r


cdef inline kl_cmat _cmat(const int64_t[:, ::1] a) noexcept:
    cdef kl_cmat r
    r.p = &a[0, 0] if a.shape[0] and a.shape[1] else &_empty_i64
    r.rows = a.shape[0] if a.shape[1] else 0
    r.cols = a.shape[1]
    return r


cdef inline kl_mat _mat(int64_t[:, ::1] a) noexcept:
    cdef kl_mat r
    r.p = &a[0, 0] if a.shape[0] and a.shape[1] else &_empty_i64
    r.rows = a.shape[0] if a.shape[1] else 0
    r.cols = a.shape[1]
    return r


cdef inline int _start() noexcept nogil:
    kl_oob_reset()
    return 0


cdef int _checked(str name) except -1:
    """Raise IndexError when the kernel touched memory outside an array (checked build)."""
    if kl_oob.line:
        line, index, length = kl_oob.line, kl_oob.index, kl_oob.length
        kl_oob_reset()
        raise IndexError(
            f"{name}: out-of-bounds access (kernel source line {line}: index or span {index},"
            f" array length {length})"
        )
    return 0


def probe_index(const uint8_t[::1] a, int64_t i):
    """``a[i]`` read the way the kernels read (tests of the builds only): the checked build
    raises IndexError outside ``a`` from its kernel-side check; the sanitizer build reports the
    overflow and aborts; the release build, whose kernels check nothing here, refuses ``i``
    outside ``a`` before reading."""
    cdef kl_bytes b = _ro(a)
    cdef int64_t v
    if BUILD == "release" and not 0 <= i < b.n:
        raise IndexError(f"probe_index: index {i} outside {b.n} bytes")
    _start()
    v = IX(b, i)
    _checked("probe_index")
    return v


def configure_crc(bint hw_crc32c, bint clmul):
    """Build the CRC tables and choose the CRC paths: the CPU's instructions where it has them
    and they are allowed. Returns ``(CRC-32C instruction used, CRC-32 folding used)``."""
    kl_crc_init(hw_crc32c, clmul)
    return bool(kl_hw_crc32c), bool(kl_clmul)


def bind_libraries(lz4_path, zstd_path):
    """Bind liblz4's block decoder and libzstd's stream decoder from the files of the lz4 and
    zstandard packages' extension modules (either may be None). Returns ``(lz4 bound, zstd
    bound)``; an unbound one leaves its batches to the library path."""
    cdef bytes a = _os.fsencode(lz4_path) if lz4_path else None
    cdef bytes b = _os.fsencode(zstd_path) if zstd_path else None
    cdef int got = kl_bind_libs(<const char *>a if a is not None else NULL,
                                <const char *>b if b is not None else NULL)
    return bool(got & 1), bool(got & 2)


def zstd_contexts():
    """How many threads' zstd decompression contexts are alive (each is freed when its thread
    ends)."""
    return kl_zstd_live


def zstd_payload(const uint8_t[::1] src, int64_t start, int64_t end, uint8_t[::1] dst,
                 int64_t dp, int64_t dlimit):
    """Decode every zstd frame of ``src[start:end]`` to ``dst[dp:dlimit]``: the output end,
    ``NEEDS_LIBRARY`` or ``ARENA_FULL`` (libzstd's stream decoder, see ``csrc/kl_libs.h``)."""
    cdef int64_t r
    cdef kl_bytes s = _ro(src)
    cdef kl_u8 d = _u8(dst)
    with nogil:
        _start()
        r = kl_zstd_payload(s, start, end, d, dp, dlimit)
    _checked("zstd_payload")
    return r


def cpu_features():
    """What this CPU offers the kernels: ``(CRC-32C instruction, carry-less multiplication)``."""
    cdef int f = kl_cpu_features()
    return bool(f & 1), bool(f & 2)


cdef int _crc_spans(str name, const uint8_t[::1] src, object starts_in, object ends_in,
                    int64_t[::1] out, bint castagnoli) except -1:
    """``out[i]`` = the CRC of ``src[starts[i]:ends[i]]``, every span checked first."""
    cdef const int64_t[::1] starts = _c64(starts_in)
    cdef const int64_t[::1] ends = _c64(ends_in)
    cdef kl_bytes s = _ro(src)
    cdef Py_ssize_t i, n = starts.shape[0]
    if ends.shape[0] < n or out.shape[0] < n:
        raise ValueError(f"{name}: starts, ends and out differ in length")
    for i in range(n):
        if starts[i] < 0 or ends[i] < starts[i] or ends[i] > s.n:
            raise IndexError(f"{name}: span {starts[i]}..{ends[i]} outside {s.n} bytes")
    with nogil:
        _start()
        for i in range(n):
            out[i] = (kl_crc32c if castagnoli else kl_crc32)(s, starts[i], ends[i])
    _checked(name)
    return 0


def crc32c_spans(const uint8_t[::1] src, starts, ends, int64_t[::1] out):
    """``out[i]`` = CRC-32C of ``src[starts[i]:ends[i]]`` for every i."""
    _crc_spans("crc32c_spans", src, starts, ends, out, True)


def crc32_spans(const uint8_t[::1] src, starts, ends, int64_t[::1] out):
    """``out[i]`` = CRC-32 (IEEE, as ``zlib.crc32``) of ``src[starts[i]:ends[i]]``."""
    _crc_spans("crc32_spans", src, starts, ends, out, False)


def rp_chain(const uint8_t[::1] buf, int64_t[::1] out, uint8_t[::1] headers):
    """The Redpanda batches from byte 0 of ``buf``, chained by their size fields while each
    fits and its header CRC holds (at most ``len(out)``): their positions in ``out``, their
    61-byte headers in ``headers``; ``(count, where the chain stopped)``."""
    cdef kl_bytes b = _ro(buf)
    cdef kl_i64 o = _i64(out)
    cdef kl_u8 h = _u8(headers)
    cdef int64_t stop = 0, n
    with nogil:
        _start()
        n = kl_rp_chain(b, o, h, &stop)
    _checked("rp_chain")
    return n, stop


def put_rows(uint8_t[::1] dst, int64_t base, const int64_t[::1] at, const uint8_t[::1] rows,
             int64_t width):
    """``rows`` (``width`` bytes each) copied into ``dst`` at ``at[i] - base``, each where it
    fits wholly; how many were copied."""
    cdef kl_u8 d = _u8(dst)
    cdef kl_ci64 a = _ci64(at)
    cdef kl_bytes r = _ro(rows)
    cdef int64_t n
    with nogil:
        _start()
        n = kl_put_rows(d, base, a, r, width)
    _checked("put_rows")
    return n


def scan_window(const uint8_t[::1] buf, int64_t limit, int64_t file_pos, int64_t[:, ::1] out):
    """Fill ``out`` with the headers of complete batches in ``buf[:limit]``.

    Returns ``(rows, stop position, why)``; see :mod:`kafkalog_source.framing.scan`."""
    cdef kl_bytes b = _ro(buf)
    cdef kl_mat o = _mat(out)
    cdef int64_t stop = 0, why = 0, rows
    if o.cols < 15:
        raise ValueError("scan_window: the header matrix needs 15 columns")
    with nogil:
        _start()
        rows = kl_scan_window(b, limit, file_pos, o, &stop, &why)
    _checked("scan_window")
    return rows, stop, why


cdef kl_sink _sink(int64_t[::1] offsets, int64_t[::1] timestamps, int32_t[::1] ts_types,
                   int64_t[::1] metas, int32_t[::1] key_off, uint8_t[::1] key_valid,
                   uint8_t[::1] key_data, int32_t[::1] val_off, uint8_t[::1] val_valid,
                   uint8_t[::1] val_data, int32_t[::1] hdr_off, int32_t[::1] hk_off,
                   uint8_t[::1] hk_data, int32_t[::1] hv_off, uint8_t[::1] hv_valid,
                   uint8_t[::1] hv_data, int64_t[::1] state, int64_t want) except *:
    cdef kl_sink s
    cdef int64_t r = offsets.shape[0]
    if state.shape[0] < 16:
        raise ValueError("the kernel state vector needs 16 slots")
    if timestamps.shape[0] < r or ts_types.shape[0] < r or metas.shape[0] < r:
        raise ValueError("the row arrays differ in length")
    if want & 1 and (key_valid.shape[0] < r or key_off.shape[0] < r + 1):
        raise ValueError("the key arrays are shorter than the row arrays")
    if want & 2 and (val_valid.shape[0] < r or val_off.shape[0] < r + 1):
        raise ValueError("the value arrays are shorter than the row arrays")
    if want & 4 and (hdr_off.shape[0] < r + 1 or hk_off.shape[0] < hv_valid.shape[0] + 1
                     or hv_off.shape[0] < hv_valid.shape[0] + 1):
        raise ValueError("the header arrays are shorter than their counts")
    s.offsets = _i64(offsets)
    s.timestamps = _i64(timestamps)
    s.ts_types = _i32(ts_types)
    s.metas = _i64(metas)
    s.key_off = _i32(key_off)
    s.key_valid = _u8(key_valid)
    s.key_data = _u8(key_data)
    s.val_off = _i32(val_off)
    s.val_valid = _u8(val_valid)
    s.val_data = _u8(val_data)
    s.hdr_off = _i32(hdr_off)
    s.hk_off = _i32(hk_off)
    s.hk_data = _u8(hk_data)
    s.hv_off = _i32(hv_off)
    s.hv_valid = _u8(hv_valid)
    s.hv_data = _u8(hv_data)
    s.state = _i64(state)
    return s


cdef int _state_in_range(int64_t[::1] state, int64_t[::1] offsets, int64_t want) except -1:
    # the state's counts index the buffers: a count past its buffer would write outside it
    if state[0] < 0 or state[0] > offsets.shape[0] or min(state[1], state[2], state[3],
                                                          state[4], state[5]) < 0:
        raise ValueError("the kernel state's counts are outside the sink buffers")
    return 0


def decode_v2(const uint8_t[::1] src, bp_in, int64_t want, bint verify,
              int64_t row_limit, int64_t byte_limit, int64_t[::1] offsets,
              int64_t[::1] timestamps, int32_t[::1] ts_types, int64_t[::1] metas,
              int32_t[::1] key_off, uint8_t[::1] key_valid, uint8_t[::1] key_data,
              int32_t[::1] val_off, uint8_t[::1] val_valid, uint8_t[::1] val_data,
              int32_t[::1] hdr_off, int32_t[::1] hk_off, uint8_t[::1] hk_data,
              int32_t[::1] hv_off, uint8_t[::1] hv_valid, uint8_t[::1] hv_data,
              int64_t[::1] state):
    """Decode the records of every batch described by the rows of ``bp`` into the sink arrays;
    see :func:`kafkalog_source.kernel.v2.decode_v2`. Returns the status code."""
    cdef const int64_t[:, ::1] bp = _c64(bp_in)
    cdef kl_sink s = _sink(offsets, timestamps, ts_types, metas, key_off, key_valid, key_data,
                           val_off, val_valid, val_data, hdr_off, hk_off, hk_data, hv_off,
                           hv_valid, hv_data, state, want)
    _state_in_range(state, offsets, want)
    cdef kl_bytes b = _ro(src)
    cdef kl_cmat m = _cmat(bp)
    cdef int64_t code
    if m.rows and m.cols < 9:
        raise ValueError("decode_v2: the batch parameter matrix needs 9 columns")
    cdef Py_ssize_t r
    for r in range(bp.shape[0]):  # the records and the padding the varints may read after them
        if (bp[r, 0] < (40 if verify else 0) or bp[r, 1] < bp[r, 0]
                or bp[r, 1] > b.n - 16):
            raise IndexError(
                f"decode_v2: batch {r}'s records {bp[r, 0]}..{bp[r, 1]} do not lie in the "
                f"{b.n}-byte source with 16 bytes of padding after them"
            )
    with nogil:
        _start()
        code = kl_decode_v2(b, m, want, verify, row_limit, byte_limit, s)
    _checked("decode_v2")
    return code


def decode_legacy(const uint8_t[::1] src, int64_t start, int64_t end, int64_t meta_base,
                  int64_t meta_step, bint verify, int64_t want, int64_t row_limit,
                  int64_t byte_limit, int64_t[::1] offsets, int64_t[::1] timestamps,
                  int32_t[::1] ts_types, int64_t[::1] metas, int32_t[::1] key_off,
                  uint8_t[::1] key_valid, uint8_t[::1] key_data, int32_t[::1] val_off,
                  uint8_t[::1] val_valid, uint8_t[::1] val_data, int32_t[::1] hdr_off,
                  int64_t[::1] state):
    """Decode legacy messages in ``src[start:end]`` until the end or the next compressed
    wrapper; see :func:`kafkalog_source.kernel.legacy.decode_legacy`."""
    cdef kl_sink s = _sink(offsets, timestamps, ts_types, metas, key_off, key_valid, key_data,
                           val_off, val_valid, val_data, hdr_off, hdr_off, key_data, hdr_off,
                           key_valid, key_data, state, want & 3)
    _state_in_range(state, offsets, want)
    if want & 4 and hdr_off.shape[0] < offsets.shape[0] + 1:
        raise ValueError("the header offsets are shorter than the row arrays")
    cdef kl_bytes b = _ro(src)
    cdef int64_t code
    with nogil:
        _start()
        code = kl_decode_legacy(b, start, end, meta_base, meta_step, verify, want, row_limit,
                                byte_limit, s)
    _checked("decode_legacy")
    return code


def check_wrappers(const uint8_t[::1] src, wpos_in, sizes_in,
                   bint verify, int64_t[::1] value_start, int64_t[::1] value_len):
    """Check the top-level messages at ``wpos`` as compressed wrappers; see
    :func:`kafkalog_source.kernel.legacy.check_wrappers`."""
    cdef const int64_t[::1] wpos = _c64(wpos_in)
    cdef const int64_t[::1] sizes = _c64(sizes_in)
    cdef Py_ssize_t n = wpos.shape[0]
    if sizes.shape[0] < n or value_start.shape[0] < n or value_len.shape[0] < n:
        raise ValueError("check_wrappers: the arrays differ in length")
    cdef kl_bytes b = _ro(src)
    cdef kl_ci64 w = _ci64(wpos)
    cdef kl_ci64 z = _ci64(sizes)
    cdef kl_i64 vs = _i64(value_start)
    cdef kl_i64 vl = _i64(value_len)
    with nogil:
        _start()
        kl_check_wrappers(b, w, z, verify, vs, vl)
    _checked("check_wrappers")


def decode_wrapped(const uint8_t[::1] src, wp_in, bint verify, int64_t want,
                   int64_t row_limit, int64_t byte_limit, int64_t[::1] offsets,
                   int64_t[::1] timestamps, int32_t[::1] ts_types, int64_t[::1] metas,
                   int32_t[::1] key_off, uint8_t[::1] key_valid, uint8_t[::1] key_data,
                   int32_t[::1] val_off, uint8_t[::1] val_valid, uint8_t[::1] val_data,
                   int32_t[::1] hdr_off, int64_t[::1] state):
    """Decode the inner message sets of compressed wrappers, one row of ``wp`` each; see
    :func:`kafkalog_source.kernel.legacy.decode_wrapped`."""
    cdef const int64_t[:, ::1] wp = _c64(wp_in)
    cdef kl_sink s = _sink(offsets, timestamps, ts_types, metas, key_off, key_valid, key_data,
                           val_off, val_valid, val_data, hdr_off, hdr_off, key_data, hdr_off,
                           key_valid, key_data, state, want & 3)
    _state_in_range(state, offsets, want)
    if want & 4 and hdr_off.shape[0] < offsets.shape[0] + 1:
        raise ValueError("the header offsets are shorter than the row arrays")
    cdef kl_bytes b = _ro(src)
    cdef kl_cmat m = _cmat(wp)
    cdef int64_t code
    if m.rows and m.cols < 7:
        raise ValueError("decode_wrapped: the wrapper parameter matrix needs 7 columns")
    with nogil:
        _start()
        code = kl_decode_wrapped(b, m, verify, want, row_limit, byte_limit, s)
    _checked("decode_wrapped")
    return code


def xxh32_short(const uint8_t[::1] src, int64_t start, int64_t n):
    """XXH32 (seed 0) of ``src[start:start + n]`` for ``n < 16`` (LZ4 frame descriptors)."""
    if n < 0 or n >= 16 or start < 0 or start > src.shape[0] - n:
        raise IndexError("xxh32_short: span outside the buffer, or 16 bytes or more")
    cdef int64_t h
    cdef kl_bytes s = _ro(src)
    with nogil:
        _start()
        h = kl_xxh32_short(s, start, n)
    _checked("xxh32_short")
    return h


def lz4_frame(const uint8_t[::1] src, int64_t start, int64_t end, int64_t magic,
              uint8_t[::1] dst, int64_t dp, int64_t dlimit):
    """Decode one Kafka-subset LZ4 frame ``src[start:end]`` to ``dst[dp:]`` (``dlimit`` at most
    ``len(dst) - SLACK``): the output end, ``NEEDS_LIBRARY`` or ``ARENA_FULL``."""
    if dp < 0 or dlimit < dp or dlimit > dst.shape[0] - 16 or end > src.shape[0] - 16:
        raise IndexError("lz4_frame: the spans leave no slack")
    cdef int64_t r
    cdef kl_bytes s = _ro(src)
    cdef kl_u8 d = _u8(dst)
    with nogil:
        _start()
        r = kl_lz4_frame(s, start, end, magic, d, dp, dlimit)
    _checked("lz4_frame")
    return r


def snappy_payload(const uint8_t[::1] src, int64_t start, int64_t end, uint8_t[::1] dst,
                   int64_t dp, int64_t dlimit):
    """Decode a raw or xerial-framed snappy payload ``src[start:end]`` to ``dst[dp:]``."""
    if dp < 0 or dlimit < dp or dlimit > dst.shape[0] - 16 or end > src.shape[0] - 16:
        raise IndexError("snappy_payload: the spans leave no slack")
    cdef int64_t r
    cdef kl_bytes s = _ro(src)
    cdef kl_u8 d = _u8(dst)
    with nogil:
        _start()
        r = kl_snappy_payload(s, start, end, d, dp, dlimit)
    _checked("snappy_payload")
    return r


def inflate_batches(const uint8_t[::1] src, starts_in, ends_in,
                    codecs_in, counts_in, uint8_t[::1] dst,
                    int64_t dst_start, int64_t dst_limit, int64_t max_bytes,
                    int64_t[::1] out_end):
    """Decompress batch payloads into ``dst`` one after another; see
    :func:`kafkalog_source.codecs.compiled.inflate_batches`. Returns ``(done, status)``."""
    cdef const int64_t[::1] starts = _c64(starts_in)
    cdef const int64_t[::1] ends = _c64(ends_in)
    cdef const int64_t[::1] codecs = _c64(codecs_in)
    cdef const int64_t[::1] counts = _c64(counts_in)
    cdef Py_ssize_t i, n = starts.shape[0]
    if ends.shape[0] < n or codecs.shape[0] < n or counts.shape[0] < n or out_end.shape[0] < n:
        raise ValueError("inflate_batches: the arrays differ in length")
    for i in range(n):  # the payloads and the source's slack after each (16-byte copies)
        if starts[i] < 0 or ends[i] < starts[i] or ends[i] + 16 > src.shape[0]:
            raise IndexError(f"inflate_batches: payload {starts[i]}..{ends[i]} leaves no slack")
    if dst_start < 0 or dst_start > dst_limit:
        raise IndexError("inflate_batches: the output span is empty or negative")
    cdef int64_t done, status = 0
    cdef kl_bytes s = _ro(src)
    cdef kl_ci64 a = _ci64(starts)
    cdef kl_ci64 b = _ci64(ends)
    cdef kl_ci64 c = _ci64(codecs)
    cdef kl_ci64 k = _ci64(counts)
    cdef kl_u8 d = _u8(dst)
    cdef kl_i64 o = _i64(out_end)
    with nogil:
        _start()
        done = kl_inflate_batches(s, a, b, c, k, d, dst_start, dst_limit, max_bytes, o, &status)
    _checked("inflate_batches")
    return done, status


def decode_avro(const uint8_t[::1] src, const uint8_t[::1] consts, starts_in,
                ends_in, entry_in, int64_t row0,
                prog_in, aux_in, pow_hi_in,
                pow_lo_in, top_fill_in,
                col_kind_in, lay_in, int64_t[::1] cnt,
                int64_t[::1] dlen, uint8_t[::1] valid, int64_t[::1] ival, double[::1] fval,
                uint8_t[::1] data, int64_t[:, ::1] stack, int64_t[::1] err_code,
                int64_t[::1] err_pos, int64_t[::1] err_arg, int64_t[::1] err_pc):
    """Run the Avro programs over the values of a column; see
    :func:`kafkalog_source.kernel.avro.decode_avro`. Returns ``(row, column)``."""
    cdef const int64_t[::1] starts = _c64(starts_in)
    cdef const int64_t[::1] ends = _c64(ends_in)
    cdef const int64_t[::1] entry = _c64(entry_in)
    cdef const int64_t[:, ::1] prog = _c64(prog_in)
    cdef const int64_t[::1] aux = _c64(aux_in)
    cdef const int64_t[::1] pow_hi = _c64(pow_hi_in)
    cdef const int64_t[::1] pow_lo = _c64(pow_lo_in)
    cdef const int64_t[::1] top_fill = _c64(top_fill_in)
    cdef const int64_t[::1] col_kind = _c64(col_kind_in)
    cdef const int64_t[:, ::1] lay = _c64(lay_in)
    cdef kl_avro_cols o
    cdef kl_avro_errs e
    o.col_kind = _ci64(col_kind)
    o.lay = _cmat(lay)
    o.cnt = _i64(cnt)
    o.dlen = _i64(dlen)
    o.valid = _u8(valid)
    o.ival = _i64(ival)
    o.fval = _f64(fval)
    o.data = _u8(data)
    e.code = _i64(err_code)
    e.pos = _i64(err_pos)
    e.arg = _i64(err_arg)
    e.pc = _i64(err_pc)
    cdef kl_bytes s = _ro(src)
    cdef kl_bytes c = _ro(consts)
    cdef kl_ci64 a = _ci64(starts)
    cdef kl_ci64 b = _ci64(ends)
    cdef kl_ci64 en = _ci64(entry)
    cdef kl_cmat pr = _cmat(prog)
    cdef kl_ci64 ax = _ci64(aux)
    cdef kl_ci64 ph = _ci64(pow_hi)
    cdef kl_ci64 pl = _ci64(pow_lo)
    cdef kl_ci64 tf = _ci64(top_fill)
    cdef kl_mat st = _mat(stack)
    cdef Py_ssize_t col, ncols = cnt.shape[0]
    cdef int64_t k
    if row0 < 0:
        raise IndexError(f"decode_avro: row {row0}")
    if lay.shape[0] < ncols or col_kind.shape[0] < ncols or dlen.shape[0] < ncols:
        raise ValueError("decode_avro: the layout, kinds and lengths must cover every column")
    for col in range(ncols):  # each column's entries and bytes lie inside the flat buffers
        k = col_kind[col]
        if (lay[col, 4] < 0 or lay[col, 5] < 0 or cnt[col] < 0 or cnt[col] > lay[col, 4] or dlen[col] < 0
                or dlen[col] > lay[col, 5] or lay[col, 0] < 0 or lay[col, 0] > valid.shape[0] - lay[col, 4]
                or (k in (1, 3, 6) and (lay[col, 1] < 0 or lay[col, 1] > ival.shape[0] - lay[col, 4]))
                or (k == 2 and (lay[col, 2] < 0 or lay[col, 2] > fval.shape[0] - lay[col, 4]))
                or (k in (3, 4) and (lay[col, 3] < 0
                                     or lay[col, 3] > data.shape[0] - lay[col, 5] - 128))):
            raise ValueError(f"decode_avro: column {col}'s layout lies outside its buffers")
    for col in range(top_fill.shape[0]):
        if top_fill[col] < 0 or top_fill[col] >= ncols:
            raise ValueError(f"decode_avro: top_fill names column {top_fill[col]}")
    cdef int64_t row, full = -1
    with nogil:
        _start()
        row = kl_decode_avro(s, c, a, b, en, row0, pr, ax, ph, pl, tf, &o, st, e, &full)
    _checked("decode_avro")
    if full == -2:
        raise MemoryError("decode_avro: no memory for the row rollback")
    if full == -3:
        raise ValueError("decode_avro: the column or error arrays are too short")
    if full == -4:
        raise ValueError("decode_avro: the program writes a column that cannot hold its values")
    return row, full
