"""The v2 record kernel: walk the records of whole batches into columnar output buffers.

One call walks any number of batches whose record bytes sit in one source buffer (a run of
uncompressed batches in the file window, or one decompressed payload). It creates no Python
object per record: keys, values and headers are copied with slice copies (memcpy) straight into
the Arrow data buffers, and offsets/validity go into preallocated arrays.

Record layout (SEGMENT_SPEC §1.6): varint length, int8 attributes, varlong timestampDelta,
varint offsetDelta, varint keyLength (negative = null), key, varint valueLength, value,
varint headerCount, then per header varint keyLength (>= 0), key, varint valueLength, value.
Header keys are Java Strings: a key that is not well-formed UTF-8 stops the batch with
``E_HEADER_KEY_UTF8``, whether or not the headers column is wanted, so every projection of a read
drops or keeps the same batches. Copied keys are checked once per batch, side by side in the
output (then the error's position is the batch's records, not the record); keys that are not
copied are checked in place.
"""

from __future__ import annotations

import numpy as np

from ..format.batch import V2_CRC_BEFORE_RECORDS, V2_HEADER_SIZE
from .bytes import copy_bytes, is_ascii, read_only, utf8_error, varint, varlong
from .crc32c import crc32c_span
from .jit import kernel
from .status import (
    CAP_HEADER_KEYS,
    CAP_HEADER_VALUES,
    CAP_HEADERS,
    CAP_KEYS,
    CAP_RECORDS,
    CAP_VALUES,
    E_CAPACITY,
    E_CRC,
    E_HEADER_COUNT,
    E_HEADER_KEY_LENGTH,
    E_HEADER_KEY_UTF8,
    E_HEADER_VALUE_LENGTH,
    E_KEY_LENGTH,
    E_PREMATURE_EOF,
    E_RECORD_LENGTH,
    E_RECORD_OVERRUN,
    E_RECORD_SIZE_MISMATCH,
    E_RECORD_STRUCTURE,
    E_TRAILING_BYTES,
    E_VALUE_LENGTH,
    FULL,
    MAX_MS,
    N_HDR,
    N_HKEY,
    N_HVAL,
    N_KEY,
    N_NULL_TS,
    N_REC,
    N_VAL,
    NULL_TS,
    OK,
    fail,
)

# Columns of the batch-parameter matrix passed to decode_v2. BP_CRC is the stored CRC-32C, checked
# over bytes V2_CRC_FROM.. of the batch (BP_START - V2_CRC_BEFORE_RECORDS ..) when ``verify`` is
# set: uncompressed batches only.
BP_START, BP_END, BP_COUNT, BP_BASE_OFFSET, BP_BASE_TS, BP_MAX_TS, BP_LOG_APPEND, BP_META = range(8)
BP_CRC = 8
BP_WIDTH = 9

WANT_KEY = 1
WANT_VALUE = 2
WANT_HEADERS = 4


@kernel
def decode_v2(
    src,
    bp,
    want,
    verify,
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
    hk_off,
    hk_data,
    hv_off,
    hv_valid,
    hv_data,
    state,
):  # type: ignore[no-untyped-def]
    """Decode the records of every batch described by the rows of ``bp`` into the sink arrays.

    ``src`` must have at least ``PAD`` readable bytes after every batch end (varints are read
    without bounds checks; every position is checked against its record's end instead).

    Once the output holds ``row_limit`` rows or ``byte_limit`` key, value and header bytes, it
    stops after the current batch with ``FULL`` (``ERR_ITEM`` = the next batch) so the caller can
    hand over a record batch of bounded size and resume.

    With ``verify`` set, each batch's CRC-32C is checked right before its records are walked,
    while its bytes are in cache; a mismatch stops with ``E_CRC`` (details: computed, stored).

    Timestamps are written in microseconds, ready for Arrow.
    """
    n = state[N_REC]
    nk = state[N_KEY]
    nv = state[N_VAL]
    nh = state[N_HDR]
    nhk = state[N_HKEY]
    nhv = state[N_HVAL]
    null_ts = state[N_NULL_TS]
    want_key = (want & WANT_KEY) != 0
    want_val = (want & WANT_VALUE) != 0
    want_hdr = (want & WANT_HEADERS) != 0
    # A failure sets err (and its details) and breaks out of the loops to the one fail() below:
    # numba lowers every return with a release of each array still alive (two dozen), so one
    # exit instead of one per status halves the code LLVM optimizes (the cold compile).
    err = OK
    epos = ea = eb = np.int64(0)
    b = 0
    for b in range(bp.shape[0]):
        p = bp[b, BP_START]
        end = bp[b, BP_END]
        count = bp[b, BP_COUNT]
        base_offset = bp[b, BP_BASE_OFFSET]
        base_ts = bp[b, BP_BASE_TS]
        log_append = bp[b, BP_LOG_APPEND] != 0
        max_ts = bp[b, BP_MAX_TS]
        meta = bp[b, BP_META]
        tstype = 1 if log_append else 0
        if verify:
            crc = crc32c_span(crc_tables, src, p - V2_CRC_BEFORE_RECORDS, end)
            if crc != bp[b, BP_CRC]:
                err = E_CRC
                epos = p - V2_HEADER_SIZE
                ea = crc
                eb = bp[b, BP_CRC]
                break
        n0 = n
        nh0 = nh
        nhk0 = nhk
        for r in range(count):
            rec_start = p
            if n >= offsets.shape[0]:
                err = E_CAPACITY
                epos = p
                ea = CAP_RECORDS
                eb = n + 1
                break
            if p >= end:
                err = E_PREMATURE_EOF
                epos = p
                ea = count
                eb = r
                break
            length, q = varint(src, p)
            if q > end:
                err = E_RECORD_STRUCTURE
                epos = p
                ea = 0
                eb = 0
                break
            if length < 0:
                err = E_RECORD_LENGTH
                epos = p
                ea = length
                eb = end - q
                break
            body_end = q + length
            if body_end > end:
                err = E_RECORD_OVERRUN
                epos = p
                ea = length
                eb = end - q
                break
            p = q + 1  # attributes byte: unused
            ts_delta, p = varlong(src, p)
            if p > body_end:
                err = E_RECORD_STRUCTURE
                epos = rec_start
                ea = 0
                eb = 0
                break
            off_delta, p = varint(src, p)
            if p > body_end:
                err = E_RECORD_STRUCTURE
                epos = rec_start
                ea = 0
                eb = 0
                break
            # key
            klen, p = varint(src, p)
            if p > body_end:
                err = E_RECORD_STRUCTURE
                epos = rec_start
                ea = 0
                eb = 0
                break
            if klen >= 0:
                if klen > body_end - p:
                    err = E_KEY_LENGTH
                    epos = rec_start
                    ea = klen
                    eb = body_end - p
                    break
                if want_key:
                    if nk + klen > key_data.shape[0]:
                        err = E_CAPACITY
                        epos = p
                        ea = CAP_KEYS
                        eb = nk + klen
                        break
                    copy_bytes(key_data, nk, src, p, klen)
                    nk += klen
                p += klen
            # value
            vlen, p = varint(src, p)
            if p > body_end:
                err = E_RECORD_STRUCTURE
                epos = rec_start
                ea = 0
                eb = 0
                break
            if vlen >= 0:
                if vlen > body_end - p:
                    err = E_VALUE_LENGTH
                    epos = rec_start
                    ea = vlen
                    eb = body_end - p
                    break
                if want_val:
                    if nv + vlen > val_data.shape[0]:
                        err = E_CAPACITY
                        epos = p
                        ea = CAP_VALUES
                        eb = nv + vlen
                        break
                    copy_bytes(val_data, nv, src, p, vlen)
                    nv += vlen
                p += vlen
            # headers
            hcount, p = varint(src, p)
            if p > body_end:
                err = E_RECORD_STRUCTURE
                epos = rec_start
                ea = 0
                eb = 0
                break
            if hcount < 0 or hcount > body_end - p:
                err = E_HEADER_COUNT
                epos = rec_start
                ea = hcount
                eb = body_end - p
                break
            for _h in range(hcount):
                hklen, p = varint(src, p)
                if p > body_end:
                    err = E_RECORD_STRUCTURE
                    epos = rec_start
                    ea = 0
                    eb = 0
                    break
                if hklen < 0 or hklen > body_end - p:
                    err = E_HEADER_KEY_LENGTH
                    epos = rec_start
                    ea = hklen
                    eb = body_end - p
                    break
                if not want_hdr and not is_ascii(src, p, p + hklen):  # not copied: check here
                    bad = utf8_error(src, p, p + hklen)
                    if bad >= 0:
                        at = base_offset + off_delta
                        err = E_HEADER_KEY_UTF8
                        epos = rec_start
                        ea = at
                        eb = bad
                        break
                if want_hdr:
                    if nh + 1 >= hv_valid.shape[0]:
                        err = E_CAPACITY
                        epos = p
                        ea = CAP_HEADERS
                        eb = nh + 2
                        break
                    if nhk + hklen > hk_data.shape[0]:
                        err = E_CAPACITY
                        epos = p
                        ea = CAP_HEADER_KEYS
                        eb = nhk + hklen
                        break
                    copy_bytes(hk_data, nhk, src, p, hklen)
                    nhk += hklen
                p += hklen
                hvlen, p = varint(src, p)
                if p > body_end:
                    err = E_RECORD_STRUCTURE
                    epos = rec_start
                    ea = 0
                    eb = 0
                    break
                if hvlen > body_end - p:
                    err = E_HEADER_VALUE_LENGTH
                    epos = rec_start
                    ea = hvlen
                    eb = body_end - p
                    break
                if want_hdr:
                    if hvlen >= 0:
                        if nhv + hvlen > hv_data.shape[0]:
                            err = E_CAPACITY
                            epos = p
                            ea = CAP_HEADER_VALUES
                            eb = nhv + hvlen
                            break
                        copy_bytes(hv_data, nhv, src, p, hvlen)
                        nhv += hvlen
                        hv_valid[nh] = 1
                    else:
                        hv_valid[nh] = 0
                    nh += 1
                    hk_off[nh] = nhk
                    hv_off[nh] = nhv
                if hvlen > 0:
                    p += hvlen
            if err != OK:
                break
            if p != body_end:
                err = E_RECORD_SIZE_MISMATCH
                epos = rec_start
                ea = length
                eb = p - q
                break
            # emit
            offsets[n] = base_offset + off_delta
            ts = max_ts if log_append else base_ts + ts_delta
            if -MAX_MS <= ts <= MAX_MS:
                timestamps[n] = ts * 1000
            else:
                timestamps[n] = NULL_TS
                null_ts += 1
            ts_types[n] = tstype
            metas[n] = meta
            if want_key:
                key_valid[n] = 1 if klen >= 0 else 0
                key_off[n + 1] = nk
            if want_val:
                val_valid[n] = 1 if vlen >= 0 else 0
                val_off[n + 1] = nv
            if want_hdr:
                hdr_off[n + 1] = nh
            n += 1
        if err != OK:
            break
        if count > 0 and p != end:
            err = E_TRAILING_BYTES
            epos = p
            ea = count
            eb = end - p
            break
        # the batch's header keys, copied side by side: one ASCII check for all of them
        if want_hdr and not is_ascii(read_only(hk_data), nhk0, nhk):
            for h in range(nh0, nh):
                bad = utf8_error(read_only(hk_data), np.int64(hk_off[h]), np.int64(hk_off[h + 1]))
                if bad >= 0:
                    r = n0
                    while hdr_off[r + 1] <= h:
                        r += 1
                    err = E_HEADER_KEY_UTF8
                    epos = bp[b, BP_START]
                    ea = offsets[r]
                    eb = bad
                    break
            if err != OK:
                break
        # commit this batch: a later failure leaves the rows of earlier batches in place
        state[N_REC] = n
        state[N_KEY] = nk
        state[N_VAL] = nv
        state[N_HDR] = nh
        state[N_HKEY] = nhk
        state[N_HVAL] = nhv
        state[N_NULL_TS] = null_ts
        if b + 1 < bp.shape[0] and (n >= row_limit or nk + nv + nhk + nhv >= byte_limit):
            return fail(state, FULL, p, b + 1, 0, 0)
    if err != OK:
        return fail(state, err, epos, b, ea, eb)
    return OK
