/* The legacy (magic 0 and 1) message kernels.
 *
 * decode_legacy walks a message set (offset int64, size int32, crc, magic, attributes,
 * [timestamp], key, value) and writes uncompressed messages as rows; at a compressed wrapper it
 * stops with WRAPPER and Python decompresses the wrapper's value. Runs of compressed wrappers take
 * a faster route: check_wrappers checks all of a window's wrappers in one call and
 * decode_wrapped walks many inner message sets in one call, applying the wrapper's offset and
 * timestamp rules itself. Anything unusual sends that one wrapper back to the per-message path.
 */
#ifndef KL_LEGACY_H
#define KL_LEGACY_H

#include "kl_v2.h"

#define KL_UNLIMITED ((int64_t)1 << 62)

/* Decode legacy messages in src[start:end] until the end or the next compressed wrapper.
 * Message k of the run gets batch-table row meta_base + k * meta_step. */
static int64_t kl_decode_legacy(kl_bytes src, int64_t start, int64_t end, int64_t meta_base,
                                int64_t meta_step, int verify, int64_t want, int64_t row_limit,
                                int64_t byte_limit, kl_sink s) {
    kl_i64 state = s.state;
    int64_t n = IX(state, N_REC), nk = IX(state, N_KEY), nv = IX(state, N_VAL);
    const int want_key = (want & WANT_KEY) != 0;
    const int want_val = (want & WANT_VALUE) != 0;
    const int want_hdr = (want & WANT_HEADERS) != 0;
    int64_t p = start, k = 0;
    if (start < 0 || end > src.n) return kl_fail(state, E_LEGACY_TRUNCATED, start, 0, 0, src.n);
    while (p < end) {
        if (end - p < LOG_OVERHEAD) return kl_fail(state, E_LEGACY_TRUNCATED, p, k, 0, end - p);
        int64_t offset = BE64(src, p);
        int64_t size = BE32(src, p + SIZE_AT);
        if (size < LEGACY_MIN_SIZE || size > end - p - LOG_OVERHEAD)
            return kl_fail(state, E_LEGACY_SIZE, p, k, size, end - p - LOG_OVERHEAD);
        int64_t msg_end = p + LEGACY_MESSAGE_AT + size;
        int64_t stored = BE32U(src, p + LEGACY_CRC_AT);
        int64_t magic = IX(src, p + LEGACY_MAGIC_AT);
        int64_t attrs = IX(src, p + LEGACY_ATTRIBUTES_AT);
        if (magic > 1) return kl_fail(state, E_LEGACY_MAGIC, p, k, magic, 0);
        if (verify) {
            int64_t computed = kl_crc32(src, p + LEGACY_CRC_FROM, msg_end);
            if (computed != stored) return kl_fail(state, E_LEGACY_CRC, p, k, stored, computed);
        }
        int64_t q = p + V1_TIMESTAMP_AT; /* v1: the timestamp; v0: the key length */
        int64_t ts = -1;
        int32_t tstype = -1;
        if (magic == 1) {
            if (size < V1_MIN_SIZE)
                return kl_fail(state, E_LEGACY_SIZE, p, k, size, end - p - LOG_OVERHEAD);
            ts = BE64(src, q);
            tstype = (attrs & TIMESTAMP_TYPE_BIT) != 0 ? 1 : 0;
            q += 8;
        }
        int64_t klen = BE32(src, q);
        q += 4;
        if (klen > msg_end - q - 4) return kl_fail(state, E_KEY_LENGTH, p, k, klen, msg_end - q);
        int64_t kpos = q;
        if (klen > 0) q += klen;
        int64_t vlen = BE32(src, q);
        q += 4;
        if (vlen > msg_end - q) return kl_fail(state, E_VALUE_LENGTH, p, k, vlen, msg_end - q);
        if ((attrs & CODEC_MASK) != 0) {
            IX(state, WRAP_POS) = p;
            IX(state, ERR_ITEM) = k;
            IX(state, N_REC) = n;
            IX(state, N_KEY) = nk;
            IX(state, N_VAL) = nv;
            return WRAPPER;
        }
        if (n >= s.offsets.n) return kl_fail(state, E_CAPACITY, p, k, CAP_RECORDS, n + 1);
        if (want_key && klen > 0 && nk + klen > s.key_data.n)
            return kl_fail(state, E_CAPACITY, p, k, CAP_KEYS, nk + klen);
        if (want_val && vlen > 0 && nv + vlen > s.val_data.n)
            return kl_fail(state, E_CAPACITY, p, k, CAP_VALUES, nv + vlen);
        IX(s.offsets, n) = offset;
        if (tstype != -1 && ts >= -MAX_MS && ts <= MAX_MS) {
            IX(s.timestamps, n) = ts * 1000;
        } else {
            IX(s.timestamps, n) = NULL_TS;
            IX(state, N_NULL_TS) += 1;
        }
        IX(s.ts_types, n) = tstype;
        IX(s.metas, n) = meta_base + k * meta_step;
        if (want_key) {
            if (klen >= 0) {
                kl_copy(s.key_data, nk, src, kpos, klen);
                nk += klen;
                IX(s.key_valid, n) = 1;
            } else {
                IX(s.key_valid, n) = 0;
            }
            IX(s.key_off, n + 1) = (int32_t)nk;
        }
        if (want_val) {
            if (vlen >= 0) {
                kl_copy(s.val_data, nv, src, q, vlen);
                nv += vlen;
                IX(s.val_valid, n) = 1;
            } else {
                IX(s.val_valid, n) = 0;
            }
            IX(s.val_off, n + 1) = (int32_t)nv;
        }
        if (want_hdr) IX(s.hdr_off, n + 1) = IX(s.hdr_off, n);
        n++;
        k++;
        p = msg_end;
        IX(state, N_REC) = n;
        IX(state, N_KEY) = nk;
        IX(state, N_VAL) = nv;
        if (p < end && (n >= row_limit || nk + nv >= byte_limit))
            return kl_fail(state, FULL, p, k, 0, 0);
    }
    return OK;
}

/* Check the top-level messages src[wpos[i]:wpos[i] + sizes[i]] as compressed wrappers: the
 * checks decode_legacy makes before WRAPPER, plus a non-null value. value_len[i] is -1 for a
 * message that is not a plain wrapper. */
static void kl_check_wrappers(kl_bytes src, kl_ci64 wpos, kl_ci64 sizes, int verify,
                              kl_i64 value_start, kl_i64 value_len) {
    for (int64_t i = 0; i < wpos.n; i++) {
        IX(value_len, i) = -1;
        int64_t p = IX(wpos, i);
        int64_t size = IX(sizes, i) - LOG_OVERHEAD;
        if (size < LEGACY_MIN_SIZE) continue;
        if (p < 0 || p > src.n || size > src.n - p - LEGACY_MESSAGE_AT) continue;
        int64_t msg_end = p + LEGACY_MESSAGE_AT + size;
        int64_t magic = IX(src, p + LEGACY_MAGIC_AT);
        int64_t attrs = IX(src, p + LEGACY_ATTRIBUTES_AT);
        if (magic > 1 || (attrs & CODEC_MASK) == 0) continue;
        if (verify && kl_crc32(src, p + LEGACY_CRC_FROM, msg_end) != BE32U(src, p + LEGACY_CRC_AT))
            continue;
        int64_t q = p + V1_TIMESTAMP_AT;
        if (magic == 1) {
            if (size < V1_MIN_SIZE) continue;
            q += 8;
        }
        int64_t klen = BE32(src, q);
        q += 4;
        if (klen > msg_end - q - 4) continue;
        if (klen > 0) q += klen;
        int64_t vlen = BE32(src, q);
        q += 4;
        if (vlen < 0 || vlen > msg_end - q) continue;
        IX(value_start, i) = q;
        IX(value_len, i) = vlen;
    }
}

KL_INLINE void kl_restore(kl_i64 state, int64_t n, int64_t nk, int64_t nv, int64_t nulls) {
    IX(state, N_REC) = n;
    IX(state, N_KEY) = nk;
    IX(state, N_VAL) = nv;
    IX(state, N_NULL_TS) = nulls;
}

/* Decode the inner message sets of compressed wrappers, one row of wp each (see the module
 * docstring of kafkalog_source.kernel.legacy for the rules). */
static int64_t kl_decode_wrapped(kl_bytes src, kl_cmat wp, int verify, int64_t want,
                                 int64_t row_limit, int64_t byte_limit, kl_sink s) {
    kl_i64 state = s.state;
    for (int64_t w = 0; w < wp.rows; w++) {
        int64_t n0 = IX(state, N_REC), nk0 = IX(state, N_KEY), nv0 = IX(state, N_VAL);
        int64_t z0 = IX(state, N_NULL_TS);
        int64_t code = kl_decode_legacy(src, MX(wp, w, W_START), MX(wp, w, W_END),
                                        MX(wp, w, W_META), 0, verify, want, KL_UNLIMITED,
                                        KL_UNLIMITED, s);
        int64_t n1 = IX(state, N_REC);
        if (code != OK || n1 == n0) {
            int64_t a = IX(state, ERR_A), b = IX(state, ERR_B);
            kl_restore(state, n0, nk0, nv0, z0);
            if (code == E_CAPACITY) return kl_fail(state, E_CAPACITY, MX(wp, w, W_START), w, a, b);
            return kl_fail(state, REDO, MX(wp, w, W_START), w, 0, 0);
        }
        if (MX(wp, w, W_MAGIC) == 1) {
            int64_t wrapper_offset = MX(wp, w, W_OFFSET);
            if (wrapper_offset != 0) {
                int64_t last = IX(s.offsets, n1 - 1);
                if (wrapper_offset < last) {
                    kl_restore(state, n0, nk0, nv0, z0);
                    return kl_fail(state, REDO, MX(wp, w, W_START), w, 0, 0);
                }
                int64_t shift = (int64_t)((uint64_t)wrapper_offset - (uint64_t)last);
                for (int64_t r = n0; r < n1; r++) IX(s.offsets, r) = kl_wadd(IX(s.offsets, r), shift);
            }
            int log_append = MX(wp, w, W_LOG_APPEND) != 0;
            int64_t wts = MX(wp, w, W_TS);
            int in_range = wts >= -MAX_MS && wts <= MAX_MS;
            for (int64_t r = n0; r < n1; r++) {
                if (IX(s.ts_types, r) != -1) {
                    if (log_append) {
                        IX(s.ts_types, r) = 1;
                        IX(s.timestamps, r) = in_range ? wts * 1000 : NULL_TS;
                    } else {
                        IX(s.ts_types, r) = 0;
                    }
                }
            }
            if (log_append && !in_range) IX(state, N_NULL_TS) += 1;
        }
        if (w + 1 < wp.rows &&
            (IX(state, N_REC) >= row_limit || IX(state, N_KEY) + IX(state, N_VAL) >= byte_limit))
            return kl_fail(state, FULL, MX(wp, w + 1, W_START), w + 1, 0, 0);
    }
    return OK;
}

#endif
