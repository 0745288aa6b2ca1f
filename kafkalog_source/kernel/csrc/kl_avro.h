/* The Avro kernel: run a compiled resolution program over every value of a column.
 *
 * A program (kafkalog_source.payloads.avro_program) is a flat int64 matrix of instructions
 * (op, col, a, b, c, d, path); this interpreter runs the program of each value's writer schema
 * and appends into growable column buffers (valid, ival, fval, data). The bytes are untrusted:
 * every read is checked against the value's end, and a bad value stops with an error status for
 * its row; the row's partial output is rolled back and a null appended.
 */
#ifndef KL_AVRO_H
#define KL_AVRO_H

#include <stdlib.h>

#include "kl_common.h"

typedef struct {
    kl_ci64 col_kind;
    kl_cmat lay;
    kl_i64 cnt, dlen;
    kl_u8 valid;
    kl_i64 ival;
    kl_f64 fval;
    kl_u8 data;
} kl_avro_cols;

/* zig-zag varint at buf[*p] inside [*p, end): the value, its status in *err */
KL_INLINE int64_t kl_avro_long(kl_bytes buf, int64_t *p, int64_t end, int64_t *err) {
    if (*p >= end) { *err = AE_TRUNCATED; return 0; }
    int64_t b = IX(buf, *p);
    if (b < 0x80) { (*p)++; *err = AE_OK; return (b >> 1) ^ -(b & 1); }
    uint64_t u = (uint64_t)(b & 0x7F);
    unsigned shift = 7;
    int64_t q = *p + 1;
    for (int i = 0; i < 9; i++) {
        if (q >= end) { *p = q; *err = AE_TRUNCATED; return 0; }
        uint64_t c = IX(buf, q);
        q++;
        if (shift == 63 && c > 1) { *p = q; *err = AE_VARINT; return 0; } /* past 64 bits */
        u |= (c & 0x7F) << shift;
        if (c < 0x80) {
            *p = q;
            *err = AE_OK;
            return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        }
        shift += 7;
    }
    *p = q;
    *err = AE_VARINT;
    return 0;
}

/* Values the reader skips (instructions with col < 0: a writer-only field, all of it) are read
 * as Apache Avro's Java decoder skips them, not checked as values the reader takes. The rules
 * are Avro 1.12.1's (git tag release-1.12.1, lang/java/avro/src/main/java/org/apache/avro/):
 * generic/GenericDatumReader.java `skip`, what the fast reader (io/FastReaderBuilder.java, on
 * by default since 1.12.1) runs for a writer-only field, over io/BinaryDecoder.java; the
 * resolving path (io/ResolvingDecoder.java, io/ParsingDecoder.java `skipTopSymbol`,
 * io/parsing/SkipParser.java, io/parsing/ResolvingGrammarGenerator.java: Symbol.skipAction)
 * skips alike:
 *   boolean       readBoolean: one byte, any value (not checked to be 0 or 1)
 *   int           readInt: at most 5 bytes (a fifth byte >= 0x80 is "Invalid int encoding"),
 *                 the bits past 32 dropped, no range check
 *   long          readLong: at most 10 bytes (a tenth byte >= 0x80 is invalid), bits past 64
 *                 dropped
 *   float, double, fixed   their 4, 8 or size bytes
 *   string, bytes skipString/skipBytes = doSkipBytes(readLong()): a length > 0 must fit (else
 *                 EOF), a length <= 0 skips nothing; no UTF-8 check
 *   enum          readEnum = readInt: the index is not checked against the symbols
 *   union         readIndex = readInt: the index must name a branch (getTypes().get(i)
 *                 throws), which is skipped
 *   array, map    skipArray/skipMap = doSkipItems: a count (readLong) < 0 is followed by a
 *                 byte size (readLong), and that many bytes are skipped unread (items not
 *                 parsed); a count > 0 is that many items, each skipped (a map's key as a
 *                 string: skipString); 0 ends
 * Kept from Avro's main branch (1.13.0-SNAPSHOT, AVRO-4300 in BinaryDecoder.doSkipItems): a
 * block count of INT64_MIN and a negative block byte size are refused (1.12.1 skips no bytes
 * for a negative size and takes INT64_MIN as a sized block). Main's resolving path also checks
 * a skipped enum index, its default fast reader does not: not checked here. Kept as kafkalog's
 * own limits: a block count must fit in the bytes left, at most ZERO_SIZE_ITEMS items of no
 * bytes per value (main bounds both too). Avro 1.11 (no fast reader by default) skips as
 * 1.12.1 but for a negative length, which moves its position back. */

/* a varint of at most maxb (5: Java's readInt, 10: readLong) bytes, the bits past 64 dropped,
 * not zig-zag decoded; a longer one is AE_VARINT with *arg = maxb */
KL_INLINE uint64_t kl_avro_jvarint(kl_bytes buf, int64_t *p, int64_t end, int maxb, int64_t *err,
                                   int64_t *arg) {
    uint64_t u = 0;
    int64_t q = *p;
    for (int i = 0; i < maxb; i++) {
        if (q >= end) { *p = q; *err = AE_TRUNCATED; return 0; }
        uint64_t c = IX(buf, q);
        q++;
        u |= (c & 0x7F) << (7 * i); /* i <= 9: the shift stays below 64 */
        if (c < 0x80) { *p = q; *err = AE_OK; return u; }
    }
    *p = q;
    *err = AE_VARINT;
    *arg = maxb;
    return 0;
}

/* Java's readInt of a skipped value: 5 bytes at most, zig-zag over the low 32 bits */
KL_INLINE int64_t kl_avro_jint(kl_bytes buf, int64_t *p, int64_t end, int64_t *err, int64_t *arg) {
    uint32_t w = (uint32_t)kl_avro_jvarint(buf, p, end, 5, err, arg);
    return (int64_t)((int32_t)(w >> 1) ^ -(int32_t)(w & 1));
}

/* Java's readLong of a skipped value: 10 bytes at most, zig-zag over the low 64 bits */
KL_INLINE int64_t kl_avro_jlong(kl_bytes buf, int64_t *p, int64_t end, int64_t *err, int64_t *arg) {
    uint64_t u = kl_avro_jvarint(buf, p, end, 10, err, arg);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* the little-endian integer of n (4 or 8) bytes at buf[p] (callers check bounds) */
KL_INLINE uint64_t kl_le_bits(kl_bytes buf, int64_t p, int n) {
    uint64_t u = 0;
    for (int k = 0; k < n; k++) u |= (uint64_t)IX(buf, p + k) << (8 * k);
    return u;
}

/* append a null entry to column c; 0 when the column is full */
static int kl_null_entry(kl_avro_cols *o, int64_t c) {
    int64_t kind = IX(o->col_kind, c), i = IX(o->cnt, c);
    if (i >= MX(o->lay, c, L_CAP)) return 0;
    IX(o->valid, MX(o->lay, c, L_VALID) + i) = 0;
    if (kind == K_FIXED) {
        IX(o->ival, MX(o->lay, c, L_INT) + i) = 0;
    } else if (kind == K_FLOAT) {
        IX(o->fval, MX(o->lay, c, L_FLOAT) + i) = 0.0;
    } else if (kind == K_VAR) {
        IX(o->ival, MX(o->lay, c, L_INT) + i) = IX(o->dlen, c);
    } else if (kind == K_LIST) { /* an empty list: its end is the previous entry's */
        IX(o->ival, MX(o->lay, c, L_INT) + i) = i > 0 ? IX(o->ival, MX(o->lay, c, L_INT) + i - 1) : 0;
    } else if (kind == K_DEC) {
        int64_t off = IX(o->dlen, c);
        if (off + 16 > MX(o->lay, c, L_DCAP)) return 0;
        int64_t b = MX(o->lay, c, L_DATA) + off;
        for (int k = 0; k < 16; k++) IX(o->data, b + k) = 0;
        IX(o->dlen, c) = off + 16;
    }
    IX(o->cnt, c) = i + 1;
    return 1;
}

static inline int kl_put_int(kl_avro_cols *o, int64_t c, int64_t v) {
    int64_t i = IX(o->cnt, c);
    if (i >= MX(o->lay, c, L_CAP)) return 0;
    IX(o->valid, MX(o->lay, c, L_VALID) + i) = 1;
    IX(o->ival, MX(o->lay, c, L_INT) + i) = v;
    IX(o->cnt, c) = i + 1;
    return 1;
}

static inline int kl_put_valid(kl_avro_cols *o, int64_t c) {
    int64_t i = IX(o->cnt, c);
    if (i >= MX(o->lay, c, L_CAP)) return 0;
    IX(o->valid, MX(o->lay, c, L_VALID) + i) = 1;
    IX(o->cnt, c) = i + 1;
    return 1;
}

static inline int kl_put_float(kl_avro_cols *o, int64_t c, double v) {
    int64_t i = IX(o->cnt, c);
    if (i >= MX(o->lay, c, L_CAP)) return 0;
    IX(o->valid, MX(o->lay, c, L_VALID) + i) = 1;
    IX(o->fval, MX(o->lay, c, L_FLOAT) + i) = v;
    IX(o->cnt, c) = i + 1;
    return 1;
}

static inline int kl_put_bytes(kl_avro_cols *o, int64_t c, kl_bytes buf, int64_t p, int64_t n) {
    int64_t i = IX(o->cnt, c), off = IX(o->dlen, c);
    if (i >= MX(o->lay, c, L_CAP) || off + n > MX(o->lay, c, L_DCAP)) return 0;
    if (n > 0) kl_copy(o->data, MX(o->lay, c, L_DATA) + off, buf, p, n);
    IX(o->dlen, c) = off + n;
    IX(o->valid, MX(o->lay, c, L_VALID) + i) = 1;
    IX(o->ival, MX(o->lay, c, L_INT) + i) = off + n;
    IX(o->cnt, c) = i + 1;
    return 1;
}

KL_INLINE void kl_neg128(uint64_t *lo, uint64_t *hi) {
    *lo = ~*lo + 1;
    *hi = ~*hi + (*lo == 0 ? 1 : 0);
}

/* Append the big-endian two's complement buf[p:p+n] at the writer's scale, moved to the reader's
 * by shift digits (times 10**shift; a negative shift divides, exactly), as a 16-byte
 * little-endian decimal128: 1 done, 0 the column is full, -1 it needs more than 16 bytes or
 * prec digits, or loses digits to the reader's scale */
static int kl_put_decimal(kl_avro_cols *o, int64_t c, kl_bytes buf, int64_t p, int64_t n,
                          int64_t prec, int64_t shift, kl_ci64 pow_hi, kl_ci64 pow_lo) {
    int64_t i = IX(o->cnt, c), off = IX(o->dlen, c);
    if (i >= MX(o->lay, c, L_CAP) || off + 16 > MX(o->lay, c, L_DCAP)) return 0;
    if (n > 16) { /* longer encodings are fine when the extra bytes are the sign */
        int fill = IX(buf, p + n - 16) >= 0x80 ? 0xFF : 0;
        for (int64_t k = 0; k < n - 16; k++)
            if (IX(buf, p + k) != fill) return -1;
        p += n - 16;
        n = 16;
    }
    int neg = n > 0 && IX(buf, p) >= 0x80;
    uint8_t fill = neg ? 0xFF : 0;
    int64_t b = MX(o->lay, c, L_DATA) + off;
    for (int64_t k = 0; k < 16; k++) IX(o->data, b + k) = k < n ? IX(buf, p + n - 1 - k) : fill;
    kl_bytes d = kl_ro(o->data);
    uint64_t lo = kl_le_bits(d, b, 8), hi = kl_le_bits(d, b + 8, 8);
    if (neg) kl_neg128(&lo, &hi); /* the magnitude */
    const uint64_t m32 = 0xFFFFFFFFu;
    for (int64_t s = 0; s < -shift; s++) { /* magnitude / 10 in 32-bit steps; a remainder loses a digit */
        uint64_t r = hi % 10;
        hi /= 10;
        uint64_t t = (r << 32) | (lo >> 32);
        uint64_t q1 = t / 10;
        t = ((t % 10) << 32) | (lo & m32);
        if (t % 10 != 0) return -1;
        lo = (q1 << 32) | (t / 10);
    }
    int64_t up = shift > 0 ? shift : 0;
    if (prec - up < 0 || prec - up >= pow_hi.n || prec - up >= pow_lo.n) return -1;
    uint64_t phi = (uint64_t)IX(pow_hi, prec - up), plo = (uint64_t)IX(pow_lo, prec - up);
    if (hi > phi || (hi == phi && lo >= plo)) return -1; /* |value| * 10**up >= 10**prec */
    for (int64_t s = 0; s < up; s++) { /* magnitude * 10, below 10**38 (< 2**127) by the check */
        uint64_t a = (lo & m32) * 10;
        uint64_t dd = (lo >> 32) * 10 + (a >> 32);
        lo = (dd << 32) | (a & m32);
        hi = hi * 10 + (dd >> 32);
    }
    if (shift != 0) {
        if (neg) kl_neg128(&lo, &hi);
        for (int k = 0; k < 8; k++) {
            IX(o->data, b + k) = (uint8_t)(lo >> (8 * k));
            IX(o->data, b + 8 + k) = (uint8_t)(hi >> (8 * k));
        }
    }
    IX(o->dlen, c) = off + 16;
    IX(o->valid, MX(o->lay, c, L_VALID) + i) = 1;
    IX(o->cnt, c) = i + 1;
    return 1;
}

KL_INLINE double kl_bits_f64(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }
KL_INLINE double kl_bits_f32(uint64_t u) { uint32_t w = (uint32_t)u; float f; memcpy(&f, &w, 4); return f; }

typedef struct { kl_i64 code, pos, arg, pc; } kl_avro_errs;

/* Decode row r's value src[starts[r]:ends[r]] with the program at entry[r] (ENTRY_NULL /
 * ENTRY_ERROR: a null value) into the columns, from row row0. Returns the row that found a
 * column full (*full = the column; its partial output rolled back), or the number of rows with
 * *full = -1 when every row is done. *full = -2: out of memory for the scratch arrays. */
/* whether every instruction of the program writes only columns that exist and whose kind has
 * the buffers it writes (the layout gives each kind only its own: an integer written into a
 * float column would land in another column's entries), and every aux range it reads exists */
static int kl_avro_program_ok(kl_cmat prog, kl_ci64 aux, const kl_avro_cols *o, int64_t ncols) {
    for (int64_t pc = 0; pc < prog.rows; pc++) {
        const int64_t op = MX(prog, pc, 0), col = MX(prog, pc, 1);
        const int64_t a = MX(prog, pc, 2), b = MX(prog, pc, 3);
        if (col < -1 || col >= ncols) return 0;
        const int64_t kind = col >= 0 ? IX(o->col_kind, col) : -1;
        /* the buffers each kind has (avro_program.Buffers._layout): integers for fixed-width,
         * variable-width and list columns, floats for float columns, bytes for variable-width
         * and decimal columns; validity for every kind */
        const int ints = kind == K_FIXED || kind == K_VAR || kind == K_LIST;
        int ok = 1;
        switch (op) {
        case OP_INT: case OP_LONG: ok = a == CV_FLOAT ? kind == K_FLOAT : ints; break;
        case OP_FLOAT: case OP_DOUBLE: ok = kind == K_FLOAT; break;
        case OP_BOOL: case OP_ENUM: ok = ints; break;
        case OP_BYTES: case OP_RAW: case OP_FIXED: ok = kind == K_VAR; break;
        case OP_DEC_BYTES: case OP_DEC_FIXED: ok = kind == K_VAR || kind == K_DEC; break;
        case OP_ARRAY:
            ok = ints;
            /* the child column is read only for an array the reader keeps */
            if (col >= 0 && (MX(prog, pc, 4) < 0 || MX(prog, pc, 4) >= ncols)) return 0;
            break;
        default: break;
        }
        if (col >= 0 && !ok) return 0;
        if (op == OP_NULLFILL || op == OP_UNION || op == OP_ENUM) {
            if (a < 0 || b < 0 || b > aux.n || a > aux.n - b) return 0;
            if (op == OP_NULLFILL)
                for (int64_t k = 0; k < b; k++)
                    if (IX(aux, a + k) < 0 || IX(aux, a + k) >= ncols) return 0;
        }
    }
    return 1;
}

static int64_t kl_decode_avro(kl_bytes src, kl_bytes consts, kl_ci64 starts, kl_ci64 ends,
                              kl_ci64 entry, int64_t row0, kl_cmat prog, kl_ci64 aux,
                              kl_ci64 pow_hi, kl_ci64 pow_lo, kl_ci64 top_fill, kl_avro_cols *o,
                              kl_mat stack, kl_avro_errs e, int64_t *full_out) {
    const int64_t ncols = o->cnt.n;
    int64_t nrows = starts.n;
    if (ends.n < nrows) nrows = ends.n;
    if (entry.n < nrows) nrows = entry.n;
    if (e.code.n < nrows || e.pos.n < nrows || e.arg.n < nrows || e.pc.n < nrows) {
        *full_out = -3;
        return 0;
    }
    if (o->dlen.n < ncols || o->col_kind.n < ncols || o->lay.rows < ncols || o->lay.cols < LAYOUT_WIDTH ||
        prog.cols < AVRO_WIDTH || stack.cols < 4) {
        *full_out = -3;
        return 0;
    }
    if (!kl_avro_program_ok(prog, aux, o, ncols)) {
        *full_out = -4;
        return 0;
    }
    int64_t *save = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)(ncols > 0 ? ncols : 1));
    if (!save) { *full_out = -2; return 0; }
    int64_t *save_dlen = save + ncols;
    for (int64_t row = row0; row < nrows; row++) {
        for (int64_t k = 0; k < ncols; k++) { save[k] = IX(o->cnt, k); save_dlen[k] = IX(o->dlen, k); }
        int64_t pc = IX(entry, row);
        IX(e.code, row) = AE_OK;
        int64_t full = -1, err = AE_OK, arg = 0;
        kl_bytes buf = src;
        int64_t pos = IX(starts, row), end = IX(ends, row);
        if (pc >= 0 && (pos < 0 || end < pos || end > src.n)) { /* the caller's spans */
            err = AE_TRUNCATED;
            pos = end = 0;
        }
        int64_t spos = 0, send = 0, sp = 0, zero_items = 0;
        int in_default = 0;
        while (err == AE_OK && pc >= 0) {
            if (pc >= prog.rows) { err = AE_RESOLVE; arg = -1; break; }
            int64_t op = MX(prog, pc, 0), col = MX(prog, pc, 1);
            if (col >= ncols) { err = AE_RESOLVE; arg = -1; break; }
            if (op == OP_END) break;
            if ((op == OP_LONG || op == OP_INT) && col < 0) { /* skipped: readInt/readLong */
                if (op == OP_INT) kl_avro_jint(buf, &pos, end, &err, &arg);
                else kl_avro_jlong(buf, &pos, end, &err, &arg);
                if (err != AE_OK) break;
                pc++;
            } else if (op == OP_LONG || op == OP_INT) {
                int64_t v = kl_avro_long(buf, &pos, end, &err);
                if (err != AE_OK) break;
                if (op == OP_INT && (v < -((int64_t)1 << 31) || v >= ((int64_t)1 << 31))) {
                    err = AE_INT_RANGE; arg = v; break;
                }
                if (col >= 0) {
                    int64_t cv = MX(prog, pc, 2);
                    int ok;
                    if (cv == CV_INT) ok = kl_put_int(o, col, v);
                    else if (cv == CV_FLOAT) ok = kl_put_float(o, col, (double)v);
                    else {
                        if (v > MAX_MS || v < -MAX_MS) { err = AE_OVERFLOW; arg = v; break; }
                        ok = kl_put_int(o, col, v * 1000);
                    }
                    if (!ok) { full = col; break; }
                }
                pc++;
            } else if (op == OP_BYTES || op == OP_RAW) {
                int64_t n;
                if (op == OP_BYTES && col < 0) { /* skipped: skipString/skipBytes, unchecked */
                    n = kl_avro_jlong(buf, &pos, end, &err, &arg);
                    if (err != AE_OK) break;
                    if (n > end - pos) { err = AE_TRUNCATED; arg = n; break; }
                    if (n > 0) pos += n; /* a length <= 0 skips nothing */
                    pc++;
                    continue;
                }
                if (op == OP_RAW) {
                    n = end - pos;
                } else {
                    n = kl_avro_long(buf, &pos, end, &err);
                    if (err != AE_OK) break;
                    if (n < 0) { err = AE_LENGTH; arg = n; break; }
                    if (n > end - pos) { err = AE_TRUNCATED; arg = n; break; }
                }
                if (MX(prog, pc, 2) == 1 && !kl_is_ascii(buf, pos, pos + n)) {
                    int64_t bad = kl_utf8_error(buf, pos, pos + n);
                    if (bad >= 0) { err = AE_UTF8; arg = bad; break; }
                }
                if (col >= 0 && !kl_put_bytes(o, col, buf, pos, n)) { full = col; break; }
                pos += n;
                pc++;
            } else if (op == OP_DOUBLE || op == OP_FLOAT) {
                int n = op == OP_DOUBLE ? 8 : 4;
                if (end - pos < n) { err = AE_TRUNCATED; arg = n; break; }
                if (col >= 0) {
                    uint64_t u = kl_le_bits(buf, pos, n);
                    double f = op == OP_DOUBLE ? kl_bits_f64(u) : kl_bits_f32(u);
                    if (!kl_put_float(o, col, f)) { full = col; break; }
                }
                pos += n;
                pc++;
            } else if (op == OP_STRUCT) {
                if (col >= 0 && !kl_put_valid(o, col)) { full = col; break; }
                pc++;
            } else if (op == OP_UNION) { /* c = 1: a union the reader skips (readIndex) */
                int64_t k = MX(prog, pc, 4) == 1 ? kl_avro_jint(buf, &pos, end, &err, &arg)
                                                 : kl_avro_long(buf, &pos, end, &err);
                if (err != AE_OK) break;
                if (k < 0 || k >= MX(prog, pc, 3)) { err = AE_BRANCH; arg = k; break; }
                pc = IX(aux, MX(prog, pc, 2) + k);
            } else if (op == OP_JUMP) {
                pc = MX(prog, pc, 2);
            } else if (op == OP_NULLFILL) {
                int64_t a = MX(prog, pc, 2);
                for (int64_t k = 0; k < MX(prog, pc, 3); k++) {
                    int64_t c = IX(aux, a + k);
                    if (!kl_null_entry(o, c)) { full = c; break; }
                }
                if (full >= 0) break;
                pc++;
            } else if (op == OP_ENUM && col < 0) { /* skipped: readEnum, the index unchecked */
                kl_avro_jint(buf, &pos, end, &err, &arg);
                if (err != AE_OK) break;
                pc++;
            } else if (op == OP_ENUM) {
                int64_t k = kl_avro_long(buf, &pos, end, &err);
                if (err != AE_OK) break;
                if (k < 0 || k >= MX(prog, pc, 3)) { err = AE_ENUM; arg = k; break; }
                int64_t sym = IX(aux, MX(prog, pc, 2) + k);
                if (sym < 0) { err = AE_ENUM_UNRESOLVED; arg = k; break; }
                if (col >= 0 && !kl_put_int(o, col, sym)) { full = col; break; }
                pc++;
            } else if (op == OP_BOOL) {
                if (pos >= end) { err = AE_TRUNCATED; arg = 1; break; }
                int64_t bit = IX(buf, pos);
                if (bit > 1 && col >= 0) { err = AE_BOOL; arg = bit; break; } /* the spec's 0 and 1 */
                /* skipped (col < 0): readBoolean takes any byte */
                if (col >= 0 && !kl_put_int(o, col, bit)) { full = col; break; }
                pos++;
                pc++;
            } else if (op == OP_ARRAY || op == OP_LOOP) {
                if (op == OP_LOOP) {
                    if (sp <= 0) { err = AE_RESOLVE; arg = -1; break; }
                    MX(stack, sp - 1, 0) -= 1;
                    if (MX(stack, sp - 1, 0) > 0) { pc = MX(stack, sp - 1, 1); continue; }
                }
                int64_t n;
                if ((op == OP_ARRAY ? col : MX(stack, sp - 1, 2)) < 0) {
                    /* skipped: doSkipItems, each sized block's bytes skipped unread */
                    n = kl_avro_jlong(buf, &pos, end, &err, &arg);
                    while (err == AE_OK && n < 0) {
                        if (n == INT64_MIN) { err = AE_LENGTH; arg = n; break; }
                        int64_t size = kl_avro_jlong(buf, &pos, end, &err, &arg);
                        if (err != AE_OK) break;
                        if (size < 0) { err = AE_LENGTH; arg = size; break; }
                        if (size > end - pos) { err = AE_TRUNCATED; arg = size; break; }
                        pos += size;
                        n = kl_avro_jlong(buf, &pos, end, &err, &arg);
                    }
                    if (err != AE_OK) break;
                } else {
                    n = kl_avro_long(buf, &pos, end, &err);
                    if (err != AE_OK) break;
                    if (n < 0) {
                        n = (int64_t)(0 - (uint64_t)n); /* INT64_MIN stays negative: E_LENGTH */
                        int64_t size = kl_avro_long(buf, &pos, end, &err);
                        if (err != AE_OK) break;
                        if (size < 0 || n < 0) { err = AE_LENGTH; arg = size < 0 ? size : n; break; }
                    }
                }
                int64_t a_pc = op == OP_ARRAY ? pc : MX(stack, sp - 1, 1) - 1;
                int64_t minb = MX(prog, a_pc, 3);
                if (minb > 0) {
                    if (n > (end - pos) / minb) { err = AE_BLOCK; arg = n; break; }
                } else {
                    if (n > ZERO_SIZE_ITEMS - zero_items) { err = AE_BLOCK; arg = n; break; }
                    zero_items += n;
                }
                if (n > 0) {
                    if (op == OP_ARRAY) {
                        if (sp >= stack.rows) { err = AE_RESOLVE; arg = -1; break; }
                        MX(stack, sp, 1) = pc + 1;
                        MX(stack, sp, 2) = col;
                        MX(stack, sp, 3) = MX(prog, pc, 4);
                        sp++;
                    }
                    MX(stack, sp - 1, 0) = n;
                    pc = MX(stack, sp - 1, 1);
                    continue;
                }
                int64_t child;
                if (op == OP_LOOP) { /* the array ends */
                    sp--;
                    col = MX(stack, sp, 2);
                    child = MX(stack, sp, 3);
                    pc++;
                } else {
                    child = MX(prog, pc, 4);
                    pc = MX(prog, pc, 2);
                }
                if (col >= 0 && !kl_put_int(o, col, IX(o->cnt, child))) { full = col; break; }
            } else if (op == OP_DEFAULT) {
                spos = pos;
                send = end;
                buf = consts;
                in_default = 1;
                pos = MX(prog, pc, 2);
                end = pos + MX(prog, pc, 3);
                if (pos < 0 || end < pos || end > consts.n) { err = AE_RESOLVE; arg = -1; break; }
                pc++;
            } else if (op == OP_END_DEFAULT) {
                buf = src;
                in_default = 0;
                pos = spos;
                end = send;
                pc++;
            } else if (op == OP_NULL) {
                if (col >= 0 && !kl_null_entry(o, col)) { full = col; break; }
                pc++;
            } else if (op == OP_FIXED || op == OP_DEC_FIXED) {
                int64_t n = MX(prog, pc, 2);
                if (end - pos < n) { err = AE_TRUNCATED; arg = n; break; }
                if (col >= 0) {
                    if (op == OP_FIXED) {
                        if (!kl_put_bytes(o, col, buf, pos, n)) { full = col; break; }
                    } else {
                        int got = kl_put_decimal(o, col, buf, pos, n, MX(prog, pc, 3),
                                                 MX(prog, pc, 4), pow_hi, pow_lo);
                        if (got == 0) { full = col; break; }
                        if (got < 0) { err = AE_DECIMAL; arg = n; break; }
                    }
                }
                pos += n;
                pc++;
            } else if (op == OP_DEC_BYTES) {
                int64_t n = kl_avro_long(buf, &pos, end, &err);
                if (err != AE_OK) break;
                if (n < 0) { err = AE_LENGTH; arg = n; break; }
                if (n > end - pos) { err = AE_TRUNCATED; arg = n; break; }
                if (col >= 0) {
                    int got = kl_put_decimal(o, col, buf, pos, n, MX(prog, pc, 2), MX(prog, pc, 3),
                                             pow_hi, pow_lo);
                    if (got == 0) { full = col; break; }
                    if (got < 0) { err = AE_DECIMAL; arg = n; break; }
                }
                pos += n;
                pc++;
            } else { /* OP_FAIL */
                err = AE_RESOLVE;
                arg = MX(prog, pc, 2);
                break;
            }
        }
        if (full < 0 && err == AE_OK && pc >= 0 && pos != end) {
            err = AE_TRAILING;
            arg = end - pos;
        }
        if (full < 0 && (err != AE_OK || pc < 0)) {
            if (err != AE_OK) {
                IX(e.code, row) = err;
                IX(e.pos, row) = in_default ? -1 : pos - IX(starts, row);
                IX(e.arg, row) = arg;
                IX(e.pc, row) = pc;
            }
            for (int64_t k = 0; k < ncols; k++) { IX(o->cnt, k) = save[k]; IX(o->dlen, k) = save_dlen[k]; }
            for (int64_t k = 0; k < top_fill.n; k++) {
                int64_t c = IX(top_fill, k);
                if (!kl_null_entry(o, c)) { full = c; break; }
            }
        }
        if (full >= 0) {
            for (int64_t k = 0; k < ncols; k++) { IX(o->cnt, k) = save[k]; IX(o->dlen, k) = save_dlen[k]; }
            free(save);
            *full_out = full;
            return row;
        }
    }
    free(save);
    *full_out = -1;
    return nrows;
}

#endif
