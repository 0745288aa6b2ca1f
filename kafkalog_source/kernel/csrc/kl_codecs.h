/* lz4 and snappy decoders for the common case, run for many batches per call.
 *
 * A fast path, not the authority: they take LZ4 frames in Kafka's subset without block
 * checksums and raw or xerial-framed snappy. On anything else (another codec, a block checksum
 * flag, a concatenated xerial stream, a malformed or oversized payload) they stop with
 * NEEDS_LIBRARY at that batch and the reader asks the library, which decodes it or raises the
 * precise error. Every read is checked against the payload end, every write against the arena
 * limit; the arena has KL_SLACK writable bytes past its limit and the source KL_SLACK readable
 * bytes past each payload, because short copies move 16 bytes at a time.
 */
#ifndef KL_CODECS_H
#define KL_CODECS_H

#include "kl_common.h"
#include "kl_libs.h"

#define KL_P1 0x9E3779B1u
#define KL_P2 0x85EBCA77u
#define KL_P3 0xC2B2AE3Du
#define KL_P4 0x27D4EB2Fu
#define KL_P5 0x165667B1u

KL_INLINE uint32_t kl_rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/* XXH32 (seed 0) of src[start:start + n] for n < 16 (LZ4 frame descriptors) */
static int64_t kl_xxh32_short(kl_bytes src, int64_t start, int64_t n) {
    uint32_t h = KL_P5 + (uint32_t)n;
    int64_t p = start, end = start + n;
    while (p + 4 <= end) {
        h = kl_rotl(h + (uint32_t)LE32(src, p) * KL_P3, 17) * KL_P4;
        p += 4;
    }
    while (p < end) {
        h = kl_rotl(h + (uint32_t)IX(src, p) * KL_P5, 11) * KL_P1;
        p++;
    }
    h ^= h >> 15;
    h *= KL_P2;
    h ^= h >> 13;
    h *= KL_P3;
    h ^= h >> 16;
    return h;
}

KL_INLINE void kl_mv16(kl_u8 dst, int64_t d, const uint8_t *s) { memcpy(SPAN(dst, d, 16), s, 16); }

/* copy n bytes; short copies move 16 bytes at a time (over-copying into the slack) */
KL_INLINE void kl_lit(kl_u8 dst, int64_t dp, kl_bytes src, int64_t sp, int64_t n) {
    if (n <= 64) {
        for (int64_t i = 0; i < n; i += 16) kl_mv16(dst, dp + i, SPAN(src, sp + i, 16));
    } else if (SPAN_OK(dst, dp, n) && SPAN_OK(src, sp, n)) {
        memcpy(dst.p + dp, src.p + sp, (size_t)n);
    }
}

/* a match of ml bytes from off bytes back (overlapping, as LZ77 means) */
KL_INLINE void kl_match(kl_u8 dst, int64_t dp, int64_t off, int64_t ml) {
    int64_t m = dp - off;
    if (off >= 16) {
        for (int64_t i = 0; i < ml; i += 16) {
            uint8_t t[16];
            memcpy(t, SPAN(dst, m + i, 16), 16);
            memcpy(SPAN(dst, dp + i, 16), t, 16);
        }
    } else if (off >= 8) {
        for (int64_t i = 0; i < ml; i += 8) {
            uint8_t t[8];
            memcpy(t, SPAN(dst, m + i, 8), 8);
            memcpy(SPAN(dst, dp + i, 8), t, 8);
        }
    } else {
        for (int64_t i = 0; i < ml; i++) IX(dst, dp + i) = IX(dst, m + i);
    }
}

/* an LZ4 length's extra bytes from src[*sp] (255 = one more): the sum, or -1 when the bytes
 * run past limit (callers guarantee *sp < limit) */
KL_INLINE int64_t kl_extra_length(kl_bytes src, int64_t *sp, int64_t limit) {
    int64_t total = 0;
    for (;;) {
        int64_t b = IX(src, *sp);
        (*sp)++;
        total += b;
        if (*sp > limit) return -1;
        if (b != 255) return total;
    }
}

/* Decode the LZ4 block src[sp:send] to dst[dp:], matches reaching back to dstart; dlimit is the
 * end of the block's output space. The new output position, or -1 (malformed, past dlimit, or a
 * rule liblz4 enforces: the library path reports it). */
static int64_t kl_lz4_block(kl_bytes src, int64_t sp, int64_t send, kl_u8 dst, int64_t dstart,
                            int64_t dp, int64_t dlimit) {
    for (;;) {
        /* fast path, far from both ends: short literals and matches need no length checks */
        if (send - sp >= 32 && dlimit - dp >= 64) {
            int64_t token = IX(src, sp);
            int64_t lit = token >> 4, ml = token & 15;
            if (lit < 15 && ml < 15) {
                kl_mv16(dst, dp, SPAN(src, sp + 1, 16));
                dp += lit;
                sp += 1 + lit;
                int64_t off = (int64_t)IX(src, sp) | ((int64_t)IX(src, sp + 1) << 8);
                sp += 2;
                if (off == 0 || off > dp - dstart) return -1;
                ml += 4;
                if (off >= 16) {
                    uint8_t t[16];
                    memcpy(t, SPAN(dst, dp - off, 16), 16);
                    memcpy(SPAN(dst, dp, 16), t, 16);
                    if (ml > 16) {
                        memcpy(t, SPAN(dst, dp - off + 16, 16), 16);
                        memcpy(SPAN(dst, dp + 16, 16), t, 16);
                    }
                } else {
                    kl_match(dst, dp, off, ml);
                }
                dp += ml;
                continue;
            }
        }
        if (sp >= send) return -1;
        int64_t token = IX(src, sp);
        sp++;
        int64_t lit = token >> 4;
        if (lit == 15) {
            /* liblz4 reads a literal length's extra bytes only before the last 15 input bytes */
            if (sp >= send - 15) return -1;
            int64_t extra = kl_extra_length(src, &sp, send - 15);
            if (extra < 0) return -1;
            lit += extra;
        }
        if (lit > send - sp || lit > dlimit - dp) return -1;
        kl_lit(dst, dp, src, sp, lit);
        dp += lit;
        sp += lit;
        if (dp > dlimit - 12 || sp > send - 8)
            /* liblz4's parsing limits: literals this close to either end must be the last
             * sequence, and end the block exactly */
            return sp == send ? dp : -1;
        int64_t off = (int64_t)IX(src, sp) | ((int64_t)IX(src, sp + 1) << 8);
        sp += 2;
        if (off == 0 || off > dp - dstart) return -1;
        int64_t ml = token & 15;
        if (ml == 15) {
            /* ... and a match length's extra bytes only before the last 4 (at least 6 remain) */
            int64_t extra = kl_extra_length(src, &sp, send - 4);
            if (extra < 0) return -1;
            ml += extra;
        }
        ml += 4;
        if (ml > dlimit - dp) return -1;
        kl_match(dst, dp, off, ml);
        dp += ml;
    }
}

/* Decode one Kafka-subset LZ4 frame src[start:end] to dst[dp:]: the output end, NEEDS_LIBRARY,
 * or ARENA_FULL when the frame's output bound exceeds dlimit */
static int64_t kl_lz4_frame(kl_bytes src, int64_t start, int64_t end, int64_t magic, kl_u8 dst,
                            int64_t dp, int64_t dlimit) {
    int64_t size = end - start;
    if (start < 0 || end > src.n || size < 7) return NEEDS_LIBRARY;
    if (IX(src, start) != 0x04 || IX(src, start + 1) != 0x22 || IX(src, start + 2) != 0x4D ||
        IX(src, start + 3) != 0x18)
        return NEEDS_LIBRARY;
    int64_t flg = IX(src, start + 4), bd = IX(src, start + 5);
    /* version 01, independent blocks; no reserved bit, dictionary id or block checksum */
    if ((flg & 0xF3) != 0x60 || (bd & 0x8F) != 0) return NEEDS_LIBRARY;
    int64_t size_id = bd >> 4;
    if (size_id < 4) return NEEDS_LIBRARY;
    int64_t block_max = (int64_t)1 << (2 * size_id + 8);
    int64_t hc_at = (flg & 0x08) ? 14 : 6;
    if (size <= hc_at) return NEEDS_LIBRARY;
    if (magic >= 1) {
        int64_t hc = (kl_xxh32_short(src, start + 4, hc_at - 4) >> 8) & 0xFF;
        if (hc != IX(src, start + hc_at)) return NEEDS_LIBRARY;
    }
    /* walk the block sizes first: the output bound, and a well-formed frame */
    int64_t pos = start + hc_at + 1, bound = 0;
    for (;;) {
        if (end - pos < 4) return NEEDS_LIBRARY;
        int64_t word = LE32(src, pos);
        int64_t length = word & 0x7FFFFFFF;
        if (length == 0) break;
        if (length > block_max || pos + 4 + length > end) return NEEDS_LIBRARY;
        bound += (word & 0x80000000) ? length : block_max;
        pos += 4 + length;
    }
    if ((flg & 0x04) && end - pos < 8) return NEEDS_LIBRARY; /* the content checksum is missing */
    if (bound > dlimit - dp) return ARENA_FULL;
    pos = start + hc_at + 1;
    for (;;) {
        int64_t word = LE32(src, pos);
        int64_t length = word & 0x7FFFFFFF;
        if (length == 0) return dp;
        pos += 4;
        if (word & 0x80000000) {
            kl_lit(dst, dp, src, pos, length);
            dp += length;
        } else {
            /* liblz4's own decoder when the lz4 package exports it (it never writes past its
             * capacity, so the block maximum is clipped to the space left) */
            int64_t blk = kl_lz4_decompress_safe
                              ? kl_lz4_block_lib(src, pos, pos + length, dst, dp,
                                                 dp + (block_max < dlimit - dp ? block_max
                                                                               : dlimit - dp))
                              : kl_lz4_block(src, pos, pos + length, dst, dp, dp, dp + block_max);
            if (blk < 0) return NEEDS_LIBRARY;
            dp = blk;
        }
        pos += length;
    }
}

/* the uncompressed length at the start of a raw snappy block: it, or -1 */
KL_INLINE int64_t kl_snappy_varint(kl_bytes src, int64_t *p, int64_t end) {
    int64_t v = 0;
    int shift = 0;
    while (*p < end && shift < 35) {
        int64_t b = IX(src, *p);
        (*p)++;
        v |= (b & 0x7F) << shift;
        if (b < 0x80) return v > 0xFFFFFFFFLL ? -1 : v;
        shift += 7;
    }
    return -1;
}

/* Decode one raw snappy block to dst[dp:]: the output end, NEEDS_LIBRARY, or ARENA_FULL */
static int64_t kl_snappy_raw(kl_bytes src, int64_t sp, int64_t send, kl_u8 dst, int64_t dp,
                             int64_t dlimit) {
    int64_t ulen = kl_snappy_varint(src, &sp, send);
    if (ulen < 0) return NEEDS_LIBRARY;
    if (ulen > dlimit - dp) return ARENA_FULL;
    int64_t out0 = dp, oend = dp + ulen;
    while (sp < send) {
        int64_t tag = IX(src, sp);
        sp++;
        int64_t kind = tag & 3, n, off;
        if (kind == 0) {
            n = (tag >> 2) + 1;
            if (n > 60) {
                int64_t extra = n - 60;
                if (send - sp < extra) return NEEDS_LIBRARY;
                n = 0;
                for (int64_t i = 0; i < extra; i++) n |= (int64_t)IX(src, sp + i) << (8 * i);
                n += 1;
                sp += extra;
            }
            if (n > send - sp || n > oend - dp) return NEEDS_LIBRARY;
            kl_lit(dst, dp, src, sp, n);
            dp += n;
            sp += n;
            continue;
        }
        if (kind == 1) {
            if (sp >= send) return NEEDS_LIBRARY;
            n = 4 + ((tag >> 2) & 7);
            off = ((tag >> 5) << 8) | (int64_t)IX(src, sp);
            sp += 1;
        } else if (kind == 2) {
            if (send - sp < 2) return NEEDS_LIBRARY;
            n = (tag >> 2) + 1;
            off = (int64_t)IX(src, sp) | ((int64_t)IX(src, sp + 1) << 8);
            sp += 2;
        } else {
            if (send - sp < 4) return NEEDS_LIBRARY;
            n = (tag >> 2) + 1;
            off = LE32(src, sp);
            sp += 4;
        }
        if (off == 0 || off > dp - out0 || n > oend - dp) return NEEDS_LIBRARY;
        kl_match(dst, dp, off, n);
        dp += n;
    }
    return dp != oend ? NEEDS_LIBRARY : dp;
}

/* Decode a raw or xerial-framed snappy payload src[start:end] to dst[dp:] */
static int64_t kl_snappy_payload(kl_bytes src, int64_t start, int64_t end, kl_u8 dst,
                                 int64_t dp, int64_t dlimit) {
    static const uint8_t magic[8] = {0x82, 0x53, 0x4E, 0x41, 0x50, 0x50, 0x59, 0x00};
    int64_t size = end - start;
    if (start < 0 || end > src.n || size <= 0) return NEEDS_LIBRARY;
    int xerial = size >= 16;
    for (int i = 0; xerial && i < 8; i++)
        if (IX(src, start + i) != magic[i]) xerial = 0;
    if (!xerial) return kl_snappy_raw(src, start, end, dst, dp, dlimit);
    int64_t pos = start + 16, bound = 0, chunks = 0;
    /* the chunks' declared lengths first: the output bound, and a well-formed stream */
    while (end - pos >= 4) {
        int64_t length = BE32U(src, pos);
        if (length == 0x82534E41 || length >= 0x80000000LL || length == 0)
            return NEEDS_LIBRARY; /* a concatenated stream, or an error the library reports */
        if (pos + 4 + length > end) return NEEDS_LIBRARY;
        int64_t q = pos + 4;
        int64_t ulen = kl_snappy_varint(src, &q, pos + 4 + length);
        if (ulen < 0) return NEEDS_LIBRARY;
        bound += ulen;
        chunks++;
        pos += 4 + length;
    }
    if (bound > dlimit - dp) return ARENA_FULL;
    pos = start + 16;
    for (int64_t c = 0; c < chunks; c++) {
        int64_t length = BE32U(src, pos);
        dp = kl_snappy_raw(src, pos + 4, pos + 4 + length, dst, dp, dlimit);
        if (dp < 0) return NEEDS_LIBRARY;
        pos += 4 + length;
    }
    return dp;
}

/* Decompress batch payloads src[starts[i]:ends[i]] one after another into dst (see
 * kafkalog_source.codecs.compiled.inflate_batches); *status 0 when all are done, else
 * NEEDS_LIBRARY or ARENA_FULL for the batch returned */
static int64_t kl_inflate_batches(kl_bytes src, kl_ci64 starts, kl_ci64 ends, kl_ci64 codecs,
                                  kl_ci64 counts, kl_u8 dst, int64_t dst_start, int64_t dst_limit,
                                  int64_t max_bytes, kl_i64 out_end, int64_t *status) {
    int64_t dp = dst_start;
    if (dst_limit > dst.n - KL_SLACK) dst_limit = dst.n - KL_SLACK; /* the slack stays free */
    int64_t n = starts.n;
    if (ends.n < n) n = ends.n;
    if (codecs.n < n) n = codecs.n;
    if (counts.n < n) n = counts.n;
    if (out_end.n < n) n = out_end.n;
    for (int64_t i = 0; i < n; i++) {
        int64_t codec = IX(codecs, i);
        int capped = dst_limit - dp > max_bytes;
        int64_t limit = capped ? dp + max_bytes : dst_limit;
        int64_t r;
        if (codec == 3)
            r = kl_lz4_frame(src, IX(starts, i), IX(ends, i), 2, dst, dp, limit);
        else if (codec == 2)
            r = kl_snappy_payload(src, IX(starts, i), IX(ends, i), dst, dp, limit);
        else if (codec == 4)
            r = kl_zstd_payload(src, IX(starts, i), IX(ends, i), dst, dp, limit);
        else
            r = NEEDS_LIBRARY;
        if (r == ARENA_FULL && capped) r = NEEDS_LIBRARY;
        if (r < 0) { *status = r; return i; }
        if (IX(counts, i) > (r - dp) / 7) { *status = NEEDS_LIBRARY; return i; }
        IX(out_end, i) = r;
        dp = r;
    }
    *status = 0;
    return n;
}

#endif
