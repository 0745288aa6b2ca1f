/* Batch framing over a window (scan_window) and the v2 record kernel (decode_v2).
 *
 * scan_window reads the header of every complete batch of a window into a row of an int64
 * matrix. decode_v2 walks the records of whole batches whose bytes sit in one source buffer (a
 * run of uncompressed batches in the window, or decompressed payloads) into the columnar output
 * buffers: keys, values and headers are copied straight into the Arrow data buffers, offsets and
 * validity into preallocated arrays. No Python object per record.
 *
 * Record layout (SEGMENT_SPEC 1.6): varint length, int8 attributes, varlong timestampDelta,
 * varint offsetDelta, varint keyLength (negative = null), key, varint valueLength, value,
 * varint headerCount, then per header varint keyLength (>= 0), key, varint valueLength, value.
 * Header keys are Java Strings: a key that is not well-formed UTF-8 stops the batch with
 * E_HEADER_KEY_UTF8, whether or not the headers column is wanted, so every projection of a read
 * drops or keeps the same batches.
 */
#ifndef KL_V2_H
#define KL_V2_H

#include "kl_crc.h"

/* headers of complete batches in buf[:limit] into out; returns the rows, *stop the position of
 * the first batch not framed, *why the reason (STOP_*) */
static int64_t kl_scan_window(kl_bytes buf, int64_t limit, int64_t file_pos, kl_mat out,
                              int64_t *stop, int64_t *why) {
    int64_t p = 0, i = 0;
    if (limit > buf.n) limit = buf.n;
    for (;;) {
        if (limit - p < PREFIX_SIZE) { *why = STOP_END; break; }
        if (i >= out.rows) { *why = STOP_FULL; break; }
        int64_t size = BE32(buf, p + SIZE_AT);
        int64_t magic = (int8_t)IX(buf, p + MAGIC_AT);
        if (size < LEGACY_MIN_SIZE) { *why = STOP_BAD_SIZE; break; }
        int64_t total = LOG_OVERHEAD + size;
        if (total > limit - p) { *why = STOP_INCOMPLETE; break; }
        if (magic < 0 || magic > 2) { *why = STOP_BAD_MAGIC; break; }
        MX(out, i, H_POS) = file_pos + p;
        MX(out, i, H_WPOS) = p;
        MX(out, i, H_SIZE) = total;
        MX(out, i, H_MAGIC) = magic;
        MX(out, i, H_BASE_OFFSET) = BE64(buf, p + OFFSET_AT);
        if (magic == 2) {
            if (total < V2_HEADER_SIZE) { *why = STOP_V2_SMALL; break; }
            MX(out, i, H_PLE) = BE32(buf, p + V2_LEADER_EPOCH_AT);
            MX(out, i, H_CRC) = BE32U(buf, p + V2_CRC_AT);
            MX(out, i, H_ATTRS) = BE16(buf, p + V2_ATTRIBUTES_AT) & ATTRIBUTE_BITS;
            MX(out, i, H_LOD) = BE32(buf, p + V2_LAST_OFFSET_DELTA_AT);
            MX(out, i, H_BASE_TS) = BE64(buf, p + V2_BASE_TIMESTAMP_AT);
            MX(out, i, H_MAX_TS) = BE64(buf, p + V2_MAX_TIMESTAMP_AT);
            MX(out, i, H_PID) = BE64(buf, p + V2_PRODUCER_ID_AT);
            MX(out, i, H_EPOCH) = BE16(buf, p + V2_PRODUCER_EPOCH_AT);
            MX(out, i, H_BASE_SEQ) = BE32(buf, p + V2_BASE_SEQUENCE_AT);
            MX(out, i, H_COUNT) = BE32(buf, p + V2_RECORDS_COUNT_AT);
        } else {
            MX(out, i, H_PLE) = -1;
            MX(out, i, H_CRC) = BE32U(buf, p + LEGACY_CRC_AT);
            MX(out, i, H_ATTRS) = IX(buf, p + LEGACY_ATTRIBUTES_AT);
            MX(out, i, H_LOD) = 0;
            int64_t ts = -1;
            if (magic == 1 && total >= V1_TIMESTAMP_END) ts = BE64(buf, p + V1_TIMESTAMP_AT);
            MX(out, i, H_BASE_TS) = ts;
            MX(out, i, H_MAX_TS) = ts;
            MX(out, i, H_PID) = -1;
            MX(out, i, H_EPOCH) = -1;
            MX(out, i, H_BASE_SEQ) = -1;
            MX(out, i, H_COUNT) = -1;
        }
        i++;
        p += total;
    }
    *stop = p;
    return i;
}

/* the output columns both record kernels fill */
typedef struct {
    kl_i64 offsets, timestamps, metas;
    kl_i32 ts_types, key_off, val_off, hdr_off, hk_off, hv_off;
    kl_u8 key_valid, key_data, val_valid, val_data, hv_valid, hk_data, hv_data;
    kl_i64 state;
} kl_sink;

KL_INLINE int64_t kl_fail(kl_i64 state, int64_t code, int64_t pos, int64_t item, int64_t a,
                          int64_t b) {
    IX(state, ERR_CODE) = code;
    IX(state, ERR_POS) = pos;
    IX(state, ERR_ITEM) = item;
    IX(state, ERR_A) = a;
    IX(state, ERR_B) = b;
    return code;
}

KL_INLINE int64_t kl_ts_micros(int64_t ms, int64_t *nulls) {
    if (ms >= -MAX_MS && ms <= MAX_MS) return ms * 1000;
    (*nulls)++;
    return NULL_TS;
}

/* Decode the records of every batch described by the rows of bp into the sink. src has at least
 * KL_PAD readable bytes after every batch end. Stops after a batch once the output holds
 * row_limit rows or byte_limit key, value and header bytes (FULL, ERR_ITEM = the next batch).
 * With verify, each batch's CRC-32C is checked right after its records are walked (its bytes
 * then in cache), before the batch is committed; a bad CRC wins over any other error of it. */
static int64_t kl_decode_v2(kl_bytes src, kl_cmat bp, int64_t want, int verify,
                            int64_t row_limit, int64_t byte_limit, kl_sink s) {
    kl_i64 state = s.state;
    int64_t n = IX(state, N_REC), nk = IX(state, N_KEY), nv = IX(state, N_VAL);
    int64_t nh = IX(state, N_HDR), nhk = IX(state, N_HKEY), nhv = IX(state, N_HVAL);
    int64_t null_ts = IX(state, N_NULL_TS);
    const int want_key = (want & WANT_KEY) != 0;
    const int want_val = (want & WANT_VALUE) != 0;
    const int want_hdr = (want & WANT_HEADERS) != 0;
    const kl_bytes hk_ro = kl_ro(s.hk_data);
    int64_t err = OK, epos = 0, ea = 0, eb = 0, b = 0;
    int64_t q = 0, p = 0;
#define V2_FAIL(code, pos, a_, b_) \
    do { err = (code); epos = (pos); ea = (a_); eb = (b_); goto failed; } while (0)
    for (b = 0; b < bp.rows; b++) {
        p = MX(bp, b, BP_START);
        const int64_t end = MX(bp, b, BP_END);
        const int64_t count = MX(bp, b, BP_COUNT);
        const int64_t base_offset = MX(bp, b, BP_BASE_OFFSET);
        const int64_t base_ts = MX(bp, b, BP_BASE_TS);
        const int log_append = MX(bp, b, BP_LOG_APPEND) != 0;
        const int64_t max_ts = MX(bp, b, BP_MAX_TS);
        const int64_t meta = MX(bp, b, BP_META);
        const int32_t tstype = log_append ? 1 : 0;
        if (p < 0 || end < p || end > src.n) /* the callers' parameters, checked once */
            V2_FAIL(E_RECORD_OVERRUN, p, end - p, src.n - p);
        const int64_t n0 = n, nh0 = nh, nhk0 = nhk;
        for (int64_t r = 0; r < count; r++) {
            const int64_t rec_start = p;
            if (n >= s.offsets.n) V2_FAIL(E_CAPACITY, p, CAP_RECORDS, n + 1);
            if (p >= end) V2_FAIL(E_PREMATURE_EOF, p, count, r);
            int64_t length = kl_varint(src, p, &q);
            if (q > end) V2_FAIL(E_RECORD_STRUCTURE, p, 0, 0);
            if (length < 0) V2_FAIL(E_RECORD_LENGTH, p, length, end - q);
            const int64_t body_end = q + length;
            if (body_end > end) V2_FAIL(E_RECORD_OVERRUN, p, length, end - q);
            const int64_t body = q;
            p = q + 1; /* attributes byte: unused */
            int64_t ts_delta = kl_varlong(src, p, &p);
            if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
            int64_t off_delta = kl_varint(src, p, &p);
            if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
            /* key */
            int64_t klen = kl_varint(src, p, &p);
            if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
            if (klen >= 0) {
                if (klen > body_end - p) V2_FAIL(E_KEY_LENGTH, rec_start, klen, body_end - p);
                if (want_key) {
                    if (nk + klen > s.key_data.n) V2_FAIL(E_CAPACITY, p, CAP_KEYS, nk + klen);
                    kl_copy(s.key_data, nk, src, p, klen);
                    nk += klen;
                }
                p += klen;
            }
            /* value */
            int64_t vlen = kl_varint(src, p, &p);
            if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
            if (vlen >= 0) {
                if (vlen > body_end - p) V2_FAIL(E_VALUE_LENGTH, rec_start, vlen, body_end - p);
                if (want_val) {
                    if (nv + vlen > s.val_data.n) V2_FAIL(E_CAPACITY, p, CAP_VALUES, nv + vlen);
                    kl_copy(s.val_data, nv, src, p, vlen);
                    nv += vlen;
                }
                p += vlen;
            }
            /* headers */
            int64_t hcount = kl_varint(src, p, &p);
            if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
            if (hcount < 0 || hcount > body_end - p)
                V2_FAIL(E_HEADER_COUNT, rec_start, hcount, body_end - p);
            for (int64_t h = 0; h < hcount; h++) {
                int64_t hklen = kl_varint(src, p, &p);
                if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
                if (hklen < 0 || hklen > body_end - p)
                    V2_FAIL(E_HEADER_KEY_LENGTH, rec_start, hklen, body_end - p);
                if (!want_hdr && !kl_is_ascii(src, p, p + hklen)) { /* not copied: check here */
                    int64_t bad = kl_utf8_error(src, p, p + hklen);
                    if (bad >= 0) V2_FAIL(E_HEADER_KEY_UTF8, rec_start, kl_wadd(base_offset, off_delta), bad);
                }
                if (want_hdr) {
                    if (nh + 1 >= s.hv_valid.n) V2_FAIL(E_CAPACITY, p, CAP_HEADERS, nh + 2);
                    if (nhk + hklen > s.hk_data.n)
                        V2_FAIL(E_CAPACITY, p, CAP_HEADER_KEYS, nhk + hklen);
                    kl_copy(s.hk_data, nhk, src, p, hklen);
                    nhk += hklen;
                }
                p += hklen;
                int64_t hvlen = kl_varint(src, p, &p);
                if (p > body_end) V2_FAIL(E_RECORD_STRUCTURE, rec_start, 0, 0);
                if (hvlen > body_end - p)
                    V2_FAIL(E_HEADER_VALUE_LENGTH, rec_start, hvlen, body_end - p);
                if (want_hdr) {
                    if (hvlen >= 0) {
                        if (nhv + hvlen > s.hv_data.n)
                            V2_FAIL(E_CAPACITY, p, CAP_HEADER_VALUES, nhv + hvlen);
                        kl_copy(s.hv_data, nhv, src, p, hvlen);
                        nhv += hvlen;
                        IX(s.hv_valid, nh) = 1;
                    } else {
                        IX(s.hv_valid, nh) = 0;
                    }
                    nh++;
                    IX(s.hk_off, nh) = (int32_t)nhk;
                    IX(s.hv_off, nh) = (int32_t)nhv;
                }
                if (hvlen > 0) p += hvlen;
            }
            if (p != body_end) V2_FAIL(E_RECORD_SIZE_MISMATCH, rec_start, length, p - body);
            /* emit */
            IX(s.offsets, n) = kl_wadd(base_offset, off_delta);
            IX(s.timestamps, n) = kl_ts_micros(log_append ? max_ts : kl_wadd(base_ts, ts_delta), &null_ts);
            IX(s.ts_types, n) = tstype;
            IX(s.metas, n) = meta;
            if (want_key) {
                IX(s.key_valid, n) = klen >= 0;
                IX(s.key_off, n + 1) = (int32_t)nk;
            }
            if (want_val) {
                IX(s.val_valid, n) = vlen >= 0;
                IX(s.val_off, n + 1) = (int32_t)nv;
            }
            if (want_hdr) IX(s.hdr_off, n + 1) = (int32_t)nh;
            n++;
        }
        if (count > 0 && p != end) V2_FAIL(E_TRAILING_BYTES, p, count, end - p);

        /* the batch's header keys, copied side by side: one ASCII check for all of them */
        if (want_hdr && !kl_is_ascii(hk_ro, nhk0, nhk)) {
            for (int64_t h = nh0; h < nh; h++) {
                int64_t bad = kl_utf8_error(hk_ro, IX(s.hk_off, h), IX(s.hk_off, h + 1));
                if (bad >= 0) {
                    int64_t r = n0;
                    while (IX(s.hdr_off, r + 1) <= h) r++;
                    V2_FAIL(E_HEADER_KEY_UTF8, MX(bp, b, BP_START), IX(s.offsets, r), bad);
                }
            }
        }
        /* the batch's CRC-32C, after its walk: its bytes are in L1 now (checked first, the
         * data would come from memory twice); a failure above checks it too (see failed:) */
        if (verify) {
            const int64_t st = MX(bp, b, BP_START);
            int64_t crc = kl_crc32c(src, st - V2_CRC_BEFORE_RECORDS, end);
            if (crc != MX(bp, b, BP_CRC)) V2_FAIL(E_CRC, st - V2_HEADER_SIZE, crc, MX(bp, b, BP_CRC));
        }
        /* commit this batch: a later failure leaves the rows of earlier batches in place */
        IX(state, N_REC) = n;
        IX(state, N_KEY) = nk;
        IX(state, N_VAL) = nv;
        IX(state, N_HDR) = nh;
        IX(state, N_HKEY) = nhk;
        IX(state, N_HVAL) = nhv;
        IX(state, N_NULL_TS) = null_ts;
        if (b + 1 < bp.rows && (n >= row_limit || nk + nv + nhk + nhv >= byte_limit))
            return kl_fail(state, FULL, p, b + 1, 0, 0);
    }
    return OK;
failed:
    /* A bad CRC is the batch's error whatever else is wrong with it, as when the CRC was checked
     * before the walk: a structure error found first, or a buffer too small for the batch
     * (E_CAPACITY: the caller would grow it for a batch it then rejects), is replaced by E_CRC
     * when the CRC fails. */
    if (verify && err != E_CRC && b < bp.rows) {
        const int64_t st = MX(bp, b, BP_START), en = MX(bp, b, BP_END);
        if (st >= V2_CRC_BEFORE_RECORDS && en >= st && en <= src.n) {
            int64_t crc = kl_crc32c(src, st - V2_CRC_BEFORE_RECORDS, en);
            if (crc != MX(bp, b, BP_CRC)) {
                err = E_CRC;
                epos = st - V2_HEADER_SIZE;
                ea = crc;
                eb = MX(bp, b, BP_CRC);
            }
        }
    }
    return kl_fail(state, err, epos, b, ea, eb);
#undef V2_FAIL
}

#endif
