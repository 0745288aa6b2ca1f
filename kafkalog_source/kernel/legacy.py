"""The legacy (magic 0 and 1) message kernel.

Walks a message set (``offset int64, size int32, crc, magic, attributes, [timestamp], key, value``)
and writes uncompressed messages as rows. At a compressed wrapper it stops and returns
``WRAPPER``: Python decompresses the wrapper's value and calls the kernel again on the inner set,
then resumes after the wrapper. Every message's CRC-32 is checked here when asked to.
"""

from __future__ import annotations

from .bytes import be32, be32u, be64, copy_bytes
from .crc32 import crc32
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
    ERR_ITEM,
    FULL,
    MAX_MS,
    N_KEY,
    N_NULL_TS,
    N_REC,
    N_VAL,
    NULL_TS,
    OK,
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
        if end - p < 12:
            return fail(state, E_LEGACY_TRUNCATED, p, k, 0, end - p)
        offset = be64(src, p)
        size = be32(src, p + 8)
        if size < 14 or size > end - p - 12:
            return fail(state, E_LEGACY_SIZE, p, k, size, end - p - 12)
        msg = p + 12
        msg_end = msg + size
        stored = be32u(src, msg)
        magic = src[msg + 4]
        attrs = src[msg + 5]
        if magic > 1:
            return fail(state, E_LEGACY_MAGIC, p, k, magic, 0)
        if verify:
            computed = crc32(crc_tables, src, msg + 4, msg_end)
            if computed != stored:
                return fail(state, E_LEGACY_CRC, p, k, stored, computed)
        q = msg + 6
        ts = -1
        tstype = -1
        if magic == 1:
            if size < 22:
                return fail(state, E_LEGACY_SIZE, p, k, size, end - p - 12)
            ts = be64(src, q)
            tstype = 1 if (attrs & 0x08) != 0 else 0
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
        if (attrs & 0x07) != 0:
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
