/* Redpanda segments (layout/redpanda.py): the batches from byte 0, chained by their
 * little-endian size_bytes while each fits in the buffer and its header_crc (CRC-32C of the
 * header's bytes after it) holds; each one's position, and its header copied out. */
#ifndef KL_REDPANDA_H
#define KL_REDPANDA_H
static int64_t kl_rp_chain(kl_bytes buf, kl_i64 out, kl_u8 headers, int64_t *stop) {
    int64_t p = 0, i = 0;
    while (buf.n - p >= RP_HEADER_SIZE && i < out.n && (i + 1) * RP_HEADER_SIZE <= headers.n) {
        int64_t size = (int64_t)(int32_t)LE32(buf, p + RP_SIZE_AT);
        if (size < RP_HEADER_SIZE || size > buf.n - p) break;
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
/* dst row i, bytes at..at + cols.n = src row i's bytes cols[0], cols[1], ... (rows of
 * src_width and dst_width bytes): Redpanda's little-endian header fields laid out as Kafka's
 * big-endian ones (the permutation is format/redpanda.py's). */
static void kl_gather_cols(kl_bytes src, int64_t src_width, kl_ci64 cols, kl_u8 dst,
                           int64_t dst_width, int64_t at) {
    int64_t rows = src_width > 0 ? src.n / src_width : 0;
    for (int64_t i = 0; i < rows && (i + 1) * dst_width <= dst.n; i++) {
        for (int64_t j = 0; j < cols.n; j++) {
            int64_t c = IX(cols, j);
            if (c < 0 || c >= src_width || at + j >= dst_width) continue;
            IX(dst, i * dst_width + at + j) = IX(src, i * src_width + c);
        }
    }
}
#endif
