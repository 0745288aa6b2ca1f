/* Redpanda segments (layout/redpanda.py): the batches from byte 0, chained by their
 * little-endian size_bytes while each fits in the buffer and its header_crc (CRC-32C of the
 * header's bytes after it) holds; each one's position, and its header copied out. */
#ifndef KL_REDPANDA_H
#define KL_REDPANDA_H
/* The chain's cost is a cache miss per header (each is the first byte read of its batch, a
 * batch apart: nothing fetches it ahead), one after the other, as each header says where the
 * next is. A segment's batches are mostly of one size, so the header KL_RP_AHEAD batches on is
 * guessed at p + KL_RP_AHEAD * size and fetched ahead (a wrong guess costs a wasted fetch only;
 * a prefetch never faults): the misses overlap. */
#define KL_RP_AHEAD 8
#if defined(__GNUC__) || defined(__clang__)
#define KL_RP_PREFETCH(ptr) __builtin_prefetch((ptr), 0, 0)
#else
#define KL_RP_PREFETCH(ptr) ((void)0)
#endif
static int64_t kl_rp_chain(kl_bytes buf, kl_i64 out, kl_u8 headers, int64_t *stop) {
    int64_t p = 0, i = 0;
    while (buf.n - p >= RP_HEADER_SIZE && i < out.n && (i + 1) * RP_HEADER_SIZE <= headers.n) {
        int64_t size = (int64_t)(int32_t)LE32(buf, p + RP_SIZE_AT);
        if (size < RP_HEADER_SIZE || size > buf.n - p) break;
        if (size <= (buf.n - p) / (KL_RP_AHEAD + 1)) {  /* the guess lies within the buffer */
            const uint8_t *guess = buf.p + p + KL_RP_AHEAD * size;
            KL_RP_PREFETCH(guess);
            KL_RP_PREFETCH(guess + RP_HEADER_SIZE - 1);
        }
        if (kl_crc32c(buf, p + RP_HEADER_CRC_FROM, p + RP_HEADER_SIZE) != LE32(buf, p)) break;
        IX(out, i) = p;
        if (SPAN_OK(headers, i * RP_HEADER_SIZE, RP_HEADER_SIZE))
            memcpy(SPAN(headers, i * RP_HEADER_SIZE, RP_HEADER_SIZE),
                   SPAN(buf, p, RP_HEADER_SIZE), RP_HEADER_SIZE);
        i++;
        p += size;
    }
    *stop = p;
    return i;
}
/* rows[i] (width bytes each) copied to dst at at[i] - base, where it fits wholly: the
 * rewritten headers of a Redpanda segment's Kafka view laid over the file's bytes. Returns how
 * many were copied. */
static int64_t kl_put_rows(kl_u8 dst, int64_t base, kl_ci64 at, kl_bytes rows, int64_t width) {
    int64_t done = 0;
    for (int64_t i = 0; i < at.n; i++) {
        int64_t off = IX(at, i) - base;
        if (off < 0 || off > dst.n - width || (i + 1) * width > rows.n) continue;
        memcpy(SPAN(dst, off, width), SPAN(rows, i * width, width), (size_t)width);
        done++;
    }
    return done;
}
#endif
