/* The kernels' common ground: array views, checked access, big-endian loads, varints, UTF-8.
 *
 * Every kernel reads untrusted bytes. Each length read from the input is checked against the
 * end of its record, batch or value before it is used; these macros are the second line:
 *
 * - In the release build, IX/SPAN are plain pointer arithmetic.
 * - In the bounds-checked build (KL_BOUNDSCHECK, the extension _native_checked), every index and
 *   every span is checked against its array's length. A violation is recorded in a thread-local
 *   slot (source line, index, length), the access goes to a scratch buffer instead, and the
 *   Python wrapper raises IndexError when the kernel returns: a test fails, memory stays intact.
 * - The sanitizer build (KL_SANITIZE, _native_asan) is the release code compiled with
 *   AddressSanitizer and UndefinedBehaviorSanitizer.
 */
#ifndef KL_COMMON_H
#define KL_COMMON_H

#include <stdint.h>
#include <string.h>

#include "kl_layout.h"

typedef struct { const uint8_t *p; int64_t n; } kl_bytes;   /* read-only bytes */
typedef struct { uint8_t *p; int64_t n; } kl_u8;            /* writable bytes */
typedef struct { int64_t *p; int64_t n; } kl_i64;
typedef struct { const int64_t *p; int64_t n; } kl_ci64;
typedef struct { int32_t *p; int64_t n; } kl_i32;
typedef struct { double *p; int64_t n; } kl_f64;
/* a C-contiguous int64 matrix */
typedef struct { const int64_t *p; int64_t rows; int64_t cols; } kl_cmat;
typedef struct { int64_t *p; int64_t rows; int64_t cols; } kl_mat;

#define KL_INLINE static inline __attribute__((always_inline))
#define KL_LIKELY(x) __builtin_expect(!!(x), 1)
#define KL_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* the first out-of-bounds access of this thread's current kernel call (checked build) */
typedef struct { int line; int64_t index; int64_t length; } kl_oob_t;
static __thread kl_oob_t kl_oob;

static inline void kl_oob_reset(void) { kl_oob.line = 0; }

#ifdef KL_BOUNDSCHECK
#define KL_BUILD "checked"
static __thread uint64_t kl_scratch[64];

static inline int kl_in(int64_t off, int64_t n, int64_t len, int line) {
    if (off >= 0 && n >= 0 && n <= len && off <= len - n) return 1;
    if (!kl_oob.line) {
        kl_oob.line = line;
        kl_oob.index = off;
        kl_oob.length = len;
    }
    return 0;
}
/* element i of array view a */
#define IX(a, i) \
    (*(kl_in((i), 1, (a).n, __LINE__) ? &(a).p[(i)] : (__typeof__((a).p))(void *)kl_scratch))
/* element (r, c) of matrix view m */
#define MX(m, r, c)                                                                   \
    (*(kl_in((r), 1, (m).rows, __LINE__) && kl_in((c), 1, (m).cols, __LINE__)        \
           ? &(m).p[(r) * (m).cols + (c)]                                             \
           : (__typeof__((m).p))(void *)kl_scratch))
/* a pointer to n bytes at a.p + off, or to scratch (n at most its size) when outside */
#define SPAN(a, off, nb)                                                              \
    (kl_in((off), (nb), (a).n, __LINE__) ? (a).p + (off)                              \
                                         : (__typeof__((a).p))(void *)kl_scratch)
/* whether n bytes at off lie inside a (the copies skip what does not) */
#define SPAN_OK(a, off, nb) kl_in((off), (nb), (a).n, __LINE__)
#else
#ifdef KL_SANITIZE
#define KL_BUILD "asan"
#else
#define KL_BUILD "release"
#endif
#define IX(a, i) ((a).p[(i)])
#define MX(m, r, c) ((m).p[(r) * (m).cols + (c)])
#define SPAN(a, off, nb) ((a).p + (off))
#define SPAN_OK(a, off, nb) 1
#endif

/* ------------------------------------------------------------------ unaligned loads */
KL_INLINE uint64_t kl_ld64(const uint8_t *q) { uint64_t v; memcpy(&v, q, 8); return v; }
KL_INLINE uint32_t kl_ld32(const uint8_t *q) { uint32_t v; memcpy(&v, q, 4); return v; }
KL_INLINE uint16_t kl_ld16(const uint8_t *q) { uint16_t v; memcpy(&v, q, 2); return v; }

/* big-endian integers at a[p] (the hosts are little-endian: x86-64, AArch64) */
#define BE16(a, p) ((int64_t)(int16_t)__builtin_bswap16(kl_ld16(SPAN(a, p, 2))))
#define BE32(a, p) ((int64_t)(int32_t)__builtin_bswap32(kl_ld32(SPAN(a, p, 4))))
#define BE32U(a, p) ((int64_t)__builtin_bswap32(kl_ld32(SPAN(a, p, 4))))
#define BE64(a, p) ((int64_t)__builtin_bswap64(kl_ld64(SPAN(a, p, 8))))
/* little-endian 64 and 32 bits */
#define LE64(a, p) (kl_ld64(SPAN(a, p, 8)))
#define LE32(a, p) ((int64_t)kl_ld32(SPAN(a, p, 4)))

/* ------------------------------------------------------------------ varints
 * Read without bounds checks in the release build, for speed: callers guarantee at least
 * KL_PAD readable bytes after the data they walk and check every returned position against
 * the end of the enclosing record. A varint longer than allowed returns a position past any
 * real data (p + KL_TOO_LONG), so that same check reports it. */
#define KL_TOO_LONG ((int64_t)1 << 40)

/* zig-zag int32 varint at a[p] (at most 5 bytes); the next position in *next */
KL_INLINE int64_t kl_varint(kl_bytes a, int64_t p, int64_t *next) {
    int64_t b0 = IX(a, p);
    if (b0 < 0x80) { *next = p + 1; return (b0 >> 1) ^ -(b0 & 1); }
    int64_t b1 = IX(a, p + 1);
    if (b1 < 0x80) {
        int64_t u = (b0 & 0x7F) | (b1 << 7);
        *next = p + 2;
        return (u >> 1) ^ -(u & 1);
    }
    int64_t u = (b0 & 0x7F) | ((b1 & 0x7F) << 7);
    int shift = 14;
    int64_t q = p + 2;
    for (int i = 0; i < 3; i++) {
        int64_t b = IX(a, q);
        q++;
        u |= (b & 0x7F) << shift;
        if (b < 0x80) {
            u &= 0xFFFFFFFF;
            *next = q;
            return (u >> 1) ^ -(u & 1);
        }
        shift += 7;
    }
    *next = q + KL_TOO_LONG;
    return 0;
}

/* zig-zag int64 varint at a[p] (at most 10 bytes) */
KL_INLINE int64_t kl_varlong(kl_bytes a, int64_t p, int64_t *next) {
    int64_t b0 = IX(a, p);
    if (b0 < 0x80) { *next = p + 1; return (b0 >> 1) ^ -(b0 & 1); }
    int64_t b1 = IX(a, p + 1);
    if (b1 < 0x80) {
        int64_t u = (b0 & 0x7F) | (b1 << 7);
        *next = p + 2;
        return (u >> 1) ^ -(u & 1);
    }
    uint64_t r = (uint64_t)((b0 & 0x7F) | ((b1 & 0x7F) << 7));
    unsigned shift = 14;
    int64_t q = p + 2;
    for (int i = 0; i < 8; i++) {
        uint64_t b = IX(a, q);
        q++;
        r |= (b & 0x7F) << shift;
        if (b < 0x80) {
            *next = q;
            return (int64_t)(r >> 1) ^ -(int64_t)(r & 1);
        }
        shift += 7;
    }
    *next = q + KL_TOO_LONG;
    return 0;
}

/* ------------------------------------------------------------------ UTF-8 */
/* whether a[start:end] is all ASCII: 64-bit words, then the last bytes one by one */
static inline int kl_is_ascii(kl_bytes a, int64_t start, int64_t end) {
    uint64_t acc = 0;
    int64_t p = start;
    while (end - p >= 8) { acc |= LE64(a, p); p += 8; }
    while (p < end) { acc |= IX(a, p); p++; }
    return (acc & 0x8080808080808080ULL) == 0;
}

KL_INLINE int kl_cont(kl_bytes a, int64_t q, int lo, int hi) {
    int c = IX(a, q);
    return lo <= c && c <= hi;
}

/* -1 if a[start:end] is well-formed UTF-8 (Unicode Table 3-7: no overlong forms, surrogates or
 * code points above U+10FFFF), else the index from start of the first byte of the first
 * ill-formed sequence, as Python's strict decoder reports it */
static int64_t kl_utf8_error(kl_bytes a, int64_t start, int64_t end) {
    int64_t p = start;
    while (p < end) {
        if (end - p >= 8 && (LE64(a, p) & 0x8080808080808080ULL) == 0) { p += 8; continue; }
        int b = IX(a, p);
        if (b < 0x80) { p++; continue; }
        int n, lo, hi;
        if (b >= 0xC2 && b <= 0xDF) { n = 1; lo = 0x80; hi = 0xBF; }
        else if (b == 0xE0) { n = 2; lo = 0xA0; hi = 0xBF; }
        else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) { n = 2; lo = 0x80; hi = 0xBF; }
        else if (b == 0xED) { n = 2; lo = 0x80; hi = 0x9F; }
        else if (b == 0xF0) { n = 3; lo = 0x90; hi = 0xBF; }
        else if (b >= 0xF1 && b <= 0xF3) { n = 3; lo = 0x80; hi = 0xBF; }
        else if (b == 0xF4) { n = 3; lo = 0x80; hi = 0x8F; }
        else return p - start;
        if (end - p <= n || !kl_cont(a, p + 1, lo, hi)) return p - start;
        for (int k = 2; k <= n; k++)
            if (!kl_cont(a, p + k, 0x80, 0xBF)) return p - start;
        p += n + 1;
    }
    return -1;
}

/* ------------------------------------------------------------------ copies */
/* copy n bytes src[s:] -> dst[d:]; callers check the bounds. Copies up to 128 bytes move 16
 * bytes at a time while 128 bytes remain in both arrays past the start (keys, small values);
 * longer ones, or near an array end, are one memcpy. */
KL_INLINE void kl_copy(kl_u8 dst, int64_t d, kl_bytes src, int64_t s, int64_t n) {
    if (n <= 0) return;
#ifdef KL_BOUNDSCHECK
    if (!SPAN_OK(dst, d, n) || !SPAN_OK(src, s, n)) return;
    memcpy(dst.p + d, src.p + s, (size_t)n);
#else
    if (n <= 128 && d + 128 <= dst.n && s + 128 <= src.n) {
        uint8_t *o = dst.p + d;
        const uint8_t *i = src.p + s;
        for (int64_t k = 0; k < n; k += 16) memcpy(o + k, i + k, 16);
    } else {
        memcpy(dst.p + d, src.p + s, (size_t)n);
    }
#endif
}

/* a + b wrapping around as Java's long does (hostile offsets and timestamps may overflow) */
KL_INLINE int64_t kl_wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

KL_INLINE kl_bytes kl_ro(kl_u8 a) { kl_bytes r = {a.p, a.n}; return r; }

#endif
