"""The legacy (magic 0 and 1) message kernel.

Walks a message set (``offset int64, size int32, crc, magic, attributes, [timestamp], key, value``)
and writes uncompressed messages as rows. At a compressed wrapper it stops and returns
``WRAPPER``: Python decompresses the wrapper's value and calls the kernel again on the inner set,
then resumes after the wrapper. Every message's CRC-32 is checked here when asked to.

Runs of compressed wrappers (the usual legacy compressed file) take a faster route:
:func:`check_wrappers` checks all of a window's wrappers in one call, Python decompresses their
values, and :func:`decode_wrapped` walks many inner message sets in one call, applying the
wrapper's offset and timestamp rules itself. Anything unusual in a wrapper (a failed check, an
inner error, a nested wrapper, an empty set) sends that one wrapper back to the per-message path,
which reports it exactly.
"""

from __future__ import annotations

import numpy as np

from ..format.batch import CODEC_MASK, LOG_OVERHEAD, SIZE_AT, TIMESTAMP_TYPE_BIT
from ..format.legacy import (
    LEGACY_ATTRIBUTES_AT,
    LEGACY_CRC_AT,
    LEGACY_CRC_FROM,
    LEGACY_MAGIC_AT,
    LEGACY_MESSAGE_AT,
    LEGACY_MIN_SIZE,
    V1_MIN_SIZE,
    V1_TIMESTAMP_AT,
)
from .bytes import be32, be32u, be64, copy_bytes
from .crc32 import crc32_ieee
from .jit import kernel
from .status import (
    CAP_KEYS,
    CAP_RECORDS,
    CAP_VALUES,
    E_CAPACITY,
    E_KEY_LENGTH,
    E_LEGACY_CRC,
    E_LEGACY_MAGIC,
    E_LEGACY_SIZE,
    E_LEGACY_TRUNCATED,
    E_VALUE_LENGTH,
    ERR_A,
    ERR_B,
    ERR_ITEM,
    FULL,
    MAX_MS,
    N_KEY,
    N_NULL_TS,
    N_REC,
    N_VAL,
    NULL_TS,
    OK,
    REDO,
    WRAP_POS,
    WRAPPER,
    fail,
)


@kernel
def decode_legacy(
    src,
    start,
    end,
    meta_base,
    meta_step,
    verify,
    want,
    crc_tables,
    row_limit,
    byte_limit,
    offsets,
    timestamps,
    ts_types,
    metas,
    key_off,
    key_valid,
    key_data,
    val_off,
    val_valid,
    val_data,
    hdr_off,
    state,
):  # type: ignore[no-untyped-def]
    """Decode legacy messages in ``src[start:end]`` until the end or the next compressed wrapper.

    Message ``k`` of the run gets batch-table row ``meta_base + k * meta_step``. On ``WRAPPER``,
    ``state[WRAP_POS]`` holds the wrapper's position and ``state[ERR_ITEM]`` its index ``k``.
    At ``row_limit`` rows or ``byte_limit`` key and value bytes it stops with ``FULL`` before
    the next message (``ERR_POS``, ``ERR_ITEM``).
    """
    n = state[N_REC]
    nk = state[N_KEY]
    nv = state[N_VAL]
    want_key = (want & 1) != 0
    want_val = (want & 2) != 0
    want_hdr = (want & 4) != 0
    p = start
    k = 0
    while p < end:
        if end - p < LOG_OVERHEAD:
            return fail(state, E_LEGACY_TRUNCATED, p, k, 0, end - p)
        offset = be64(src, p)
        size = be32(src, p + SIZE_AT)
        if size < LEGACY_MIN_SIZE or size > end - p - LOG_OVERHEAD:
            return fail(state, E_LEGACY_SIZE, p, k, size, end - p - LOG_OVERHEAD)
        msg_end = p + LEGACY_MESSAGE_AT + size
        stored = be32u(src, p + LEGACY_CRC_AT)
        magic = src[p + LEGACY_MAGIC_AT]
        attrs = src[p + LEGACY_ATTRIBUTES_AT]
        if magic > 1:
            return fail(state, E_LEGACY_MAGIC, p, k, magic, 0)
        if verify:
            computed = crc32_ieee(crc_tables, src, p + LEGACY_CRC_FROM, msg_end)
            if computed != stored:
                return fail(state, E_LEGACY_CRC, p, k, stored, computed)
        q = p + V1_TIMESTAMP_AT  # v1: the timestamp; v0: the key length
        ts = -1
        tstype = -1
        if magic == 1:
            if size < V1_MIN_SIZE:
                return fail(state, E_LEGACY_SIZE, p, k, size, end - p - LOG_OVERHEAD)
            ts = be64(src, q)
            tstype = 1 if (attrs & TIMESTAMP_TYPE_BIT) != 0 else 0
            q += 8
        klen = be32(src, q)
        q += 4
        if klen > msg_end - q - 4:
            return fail(state, E_KEY_LENGTH, p, k, klen, msg_end - q)
        kpos = q
        if klen > 0:
            q += klen
        vlen = be32(src, q)
        q += 4
        if vlen > msg_end - q:
            return fail(state, E_VALUE_LENGTH, p, k, vlen, msg_end - q)
        if (attrs & CODEC_MASK) != 0:
            state[WRAP_POS] = p
            state[ERR_ITEM] = k
            state[N_REC] = n
            state[N_KEY] = nk
            state[N_VAL] = nv
            return WRAPPER
        if n >= offsets.shape[0]:
            return fail(state, E_CAPACITY, p, k, CAP_RECORDS, n + 1)
        if want_key and klen > 0 and nk + klen > key_data.shape[0]:
            return fail(state, E_CAPACITY, p, k, CAP_KEYS, nk + klen)
        if want_val and vlen > 0 and nv + vlen > val_data.shape[0]:
            return fail(state, E_CAPACITY, p, k, CAP_VALUES, nv + vlen)
        offsets[n] = offset
        if tstype != -1 and -MAX_MS <= ts <= MAX_MS:
            timestamps[n] = ts * 1000
        else:
            timestamps[n] = NULL_TS
            state[N_NULL_TS] += 1
        ts_types[n] = tstype
        metas[n] = meta_base + k * meta_step
        if want_key:
            if klen >= 0:
                copy_bytes(key_data, nk, src, kpos, klen)
                nk += klen
                key_valid[n] = 1
            else:
                key_valid[n] = 0
            key_off[n + 1] = nk
        if want_val:
            if vlen >= 0:
                copy_bytes(val_data, nv, src, q, vlen)
                nv += vlen
                val_valid[n] = 1
            else:
                val_valid[n] = 0
            val_off[n + 1] = nv
        if want_hdr:
            hdr_off[n + 1] = hdr_off[n]
        n += 1
        k += 1
        p = msg_end
        state[N_REC] = n
        state[N_KEY] = nk
        state[N_VAL] = nv
        if p < end and (n >= row_limit or nk + nv >= byte_limit):
            return fail(state, FULL, p, k, 0, 0)
    return OK


# decode_wrapped's parameter columns: one row per wrapper
W_START, W_END, W_META, W_MAGIC, W_OFFSET, W_LOG_APPEND, W_TS = range(7)
W_WIDTH = 7
UNLIMITED = 1 << 62


@kernel
def check_wrappers(src, wpos, sizes, verify, crc_tables, value_start, value_len):  # type: ignore[no-untyped-def]
    """Check the top-level messages ``src[wpos[i]:wpos[i] + sizes[i]]`` as compressed wrappers.

    These are the checks :func:`decode_legacy` makes before it returns ``WRAPPER`` (size, magic,
    CRC, key and value lengths), plus a non-null value. ``value_start[i]``/``value_len[i]`` give
    the compressed value; ``value_len[i]`` is -1 for a message that is not a plain wrapper.
    """
    for i in range(wpos.shape[0]):
        value_len[i] = -1
        p = wpos[i]
        size = sizes[i] - LOG_OVERHEAD
        if size < LEGACY_MIN_SIZE:
            continue
        msg_end = p + LEGACY_MESSAGE_AT + size
        magic = src[p + LEGACY_MAGIC_AT]
        attrs = src[p + LEGACY_ATTRIBUTES_AT]
        if magic > 1 or (attrs & CODEC_MASK) == 0:
            continue
        if verify and crc32_ieee(crc_tables, src, p + LEGACY_CRC_FROM, msg_end) != be32u(
            src, p + LEGACY_CRC_AT
        ):
            continue
        q = p + V1_TIMESTAMP_AT  # v1: the timestamp; v0: the key length
        if magic == 1:
            if size < V1_MIN_SIZE:
                continue
            q += 8
        klen = be32(src, q)
        q += 4
        if klen > msg_end - q - 4:
            continue
        if klen > 0:
            q += klen
        vlen = be32(src, q)
        q += 4
        if vlen < 0 or vlen > msg_end - q:
            continue
        value_start[i] = q
        value_len[i] = vlen


@kernel
def _restore(state, n, nk, nv, nulls):  # type: ignore[no-untyped-def]
    state[N_REC] = n
    state[N_KEY] = nk
    state[N_VAL] = nv
    state[N_NULL_TS] = nulls


@kernel
def decode_wrapped(
    src,
    wp,
    verify,
    want,
    crc_tables,
    row_limit,
    byte_limit,
    offsets,
    timestamps,
    ts_types,
    metas,
    key_off,
    key_valid,
    key_data,
    val_off,
    val_valid,
    val_data,
    hdr_off,
    state,
):  # type: ignore[no-untyped-def]
    """Decode the inner message sets of compressed wrappers, one row of ``wp`` each.

    Inner set ``w`` is ``src[wp[w, W_START]:wp[w, W_END]]`` (decompressed; ``PAD`` bytes follow
    the last). A v1 wrapper with a non-zero offset makes its inner offsets absolute (they are
    relative to its last one); a v1 wrapper gives its timestamp type to inner messages with a
    timestamp, and with LogAppendTime its timestamp too. The rows of a wrapper are kept only if
    all of it decodes: otherwise the output is left as it was before the wrapper and the call
    stops with ``REDO`` (or ``E_CAPACITY``: grow, then redo it), ``ERR_ITEM`` = the wrapper.
    Between wrappers it stops with ``FULL`` at ``row_limit`` rows or ``byte_limit`` bytes.
    """
    for w in range(wp.shape[0]):
        n0 = state[N_REC]
        nk0 = state[N_KEY]
        nv0 = state[N_VAL]
        z0 = state[N_NULL_TS]
        code = decode_legacy(
            src,
            wp[w, W_START],
            wp[w, W_END],
            wp[w, W_META],
            np.int64(0),  # np.int64, not literals: the signature Python calls it with, so
            verify,  # decode_legacy is compiled once, not again for literal arguments
            want,
            crc_tables,
            np.int64(UNLIMITED),
            np.int64(UNLIMITED),
            offsets,
            timestamps,
            ts_types,
            metas,
            key_off,
            key_valid,
            key_data,
            val_off,
            val_valid,
            val_data,
            hdr_off,
            state,
        )
        n1 = state[N_REC]
        if code != OK or n1 == n0:
            a = state[ERR_A]
            b = state[ERR_B]
            _restore(state, n0, nk0, nv0, z0)
            if code == E_CAPACITY:
                return fail(state, E_CAPACITY, wp[w, W_START], w, a, b)
            return fail(state, REDO, wp[w, W_START], w, 0, 0)
        if wp[w, W_MAGIC] == 1:
            wrapper_offset = wp[w, W_OFFSET]
            if wrapper_offset != 0:
                last = offsets[n1 - 1]
                if wrapper_offset < last:
                    _restore(state, n0, nk0, nv0, z0)
                    return fail(state, REDO, wp[w, W_START], w, 0, 0)
                shift = wrapper_offset - last
                for r in range(n0, n1):
                    offsets[r] += shift
            log_append = wp[w, W_LOG_APPEND] != 0
            wts = wp[w, W_TS]
            in_range = -MAX_MS <= wts <= MAX_MS
            for r in range(n0, n1):
                if ts_types[r] != -1:
                    if log_append:
                        ts_types[r] = 1
                        timestamps[r] = wts * 1000 if in_range else NULL_TS
                    else:
                        ts_types[r] = 0
            if log_append and not in_range:
                state[N_NULL_TS] += 1
        if w + 1 < wp.shape[0] and (
            state[N_REC] >= row_limit or state[N_KEY] + state[N_VAL] >= byte_limit
        ):
            return fail(state, FULL, wp[w + 1, W_START], w + 1, 0, 0)
    return OK
