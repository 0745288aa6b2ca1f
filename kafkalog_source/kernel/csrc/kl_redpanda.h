/* Redpanda segments (layout/redpanda.py): the batches from byte 0, chained by their
 * little-endian size_bytes while each fits in the buffer; the caller checks their header CRCs
 * (crc32c_spans) and reads their fields. */
#ifndef KL_REDPANDA_H
#define KL_REDPANDA_H
static int64_t kl_rp_chain(kl_bytes buf, kl_i64 out, int64_t *stop) {
    int64_t p = 0, i = 0;
    while (buf.n - p >= RP_HEADER_SIZE && i < out.n) {
        int64_t size = (int64_t)(int32_t)LE32(buf, p + RP_SIZE_AT);
        if (size < RP_HEADER_SIZE || size > buf.n - p) break;
        IX(out, i) = p;
        i++;
        p += size;
    }
    *stop = p;
    return i;
}
#endif
