/* CRC-32C (Castagnoli, the v2 batch checksum) and CRC-32 (IEEE, v0/v1 messages), chosen at run
 * time from what this CPU has.
 *
 * CRC-32C: the CPU's CRC instruction (x86-64 SSE4.2, AArch64 CRC extension), three independent
 * streams over consecutive KL_SHORT-byte blocks joined by a shift table (CRC is affine in its
 * state: crc(c, A + B) = shift(crc(c, A), len(B)) ^ crc(0, B)); elsewhere slicing-by-8 tables.
 *
 * CRC-32: on x86-64 with PCLMULQDQ, spans of 64 bytes or more fold with carry-less
 * multiplication, four 16-byte lanes at a time (Intel's "Fast CRC Computation Using PCLMULQDQ",
 * the constants zlib-ng uses), the last 16 bytes and the tail by table; elsewhere tables.
 *
 * One binary serves every CPU of an architecture: the instruction paths are compiled with
 * function target attributes and taken only when kl_crc_init found the feature
 * (KAFKALOG_SOFTWARE_CRC32C=1 / KAFKALOG_SOFTWARE_CRC32=1 turn them off from Python).
 */
#ifndef KL_CRC_H
#define KL_CRC_H

#include "kl_common.h"

#if defined(__x86_64__) || defined(_M_X64)
#define KL_X86 1
#include <immintrin.h>
#include <cpuid.h>
#elif defined(__aarch64__)
#define KL_ARM 1
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define KL_SHORT 256

static uint32_t kl_crc32_tab[8][256];   /* IEEE, slicing-by-8 */
static uint32_t kl_crc32c_tab[8][256];  /* Castagnoli, slicing-by-8 */
static uint32_t kl_crc32c_shift[4][256];/* raw state b << 8k advanced over KL_SHORT zero bytes */
static int kl_hw_crc32c = 0;            /* 1: the CRC instruction */
static int kl_clmul = 0;                /* 1: PCLMULQDQ folding for CRC-32 */
static int kl_crc_ready = 0;

static void kl_slice_tables(uint32_t t[8][256], uint32_t poly) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        t[0][i] = c;
    }
    for (int i = 0; i < 256; i++) {
        uint32_t c = t[0][i];
        for (int k = 1; k < 8; k++) {
            c = t[0][c & 0xFF] ^ (c >> 8);
            t[k][i] = c;
        }
    }
}

/* the raw state c advanced over the 8 little-endian bytes of w */
KL_INLINE uint64_t kl_step8(uint32_t t[8][256], uint64_t c, uint64_t w) {
    uint64_t x = w ^ c;
    return (uint64_t)t[7][x & 0xFF] ^ t[6][(x >> 8) & 0xFF] ^ t[5][(x >> 16) & 0xFF] ^
           t[4][(x >> 24) & 0xFF] ^ t[3][(x >> 32) & 0xFF] ^ t[2][(x >> 40) & 0xFF] ^
           t[1][(x >> 48) & 0xFF] ^ t[0][x >> 56];
}

/* the raw state c advanced over a[p:end] with tables */
static inline uint64_t kl_table_run(uint32_t t[8][256], uint64_t c, kl_bytes a, int64_t p,
                                    int64_t end) {
    while (end - p >= 8) { c = kl_step8(t, c, LE64(a, p)); p += 8; }
    while (p < end) { c = t[0][(c ^ IX(a, p)) & 0xFF] ^ (c >> 8); p++; }
    return c;
}

/* raw (not inverted) state advanced over n zero bytes, bit by bit (table set-up only) */
static uint32_t kl_crc32c_zeros(uint32_t c, int64_t n) {
    for (int64_t i = 0; i < n; i++) c = kl_crc32c_tab[0][c & 0xFF] ^ (c >> 8);
    return c;
}

/* ------------------------------------------------------------------ CRC-32C instruction */
#if defined(KL_X86)
#define KL_HW_CRC 1
#define KL_HW_TARGET __attribute__((target("sse4.2")))
#define KL_CRC_STEP64(c, w) _mm_crc32_u64((c), (w))
#define KL_CRC_STEP8(c, b) _mm_crc32_u8((uint32_t)(c), (b))
#elif defined(KL_ARM)
#define KL_HW_CRC 1
#define KL_HW_TARGET __attribute__((target("+crc")))
#define KL_CRC_STEP64(c, w) __builtin_aarch64_crc32cx((uint32_t)(c), (w))
#define KL_CRC_STEP8(c, b) __builtin_aarch64_crc32cb((uint32_t)(c), (b))
#endif

/* the raw state c advanced over KL_SHORT zero bytes */
KL_INLINE uint64_t kl_crc32c_shift_short(uint64_t c) {
    return kl_crc32c_shift[0][c & 0xFF] ^ kl_crc32c_shift[1][(c >> 8) & 0xFF] ^
           kl_crc32c_shift[2][(c >> 16) & 0xFF] ^ kl_crc32c_shift[3][(c >> 24) & 0xFF];
}

#ifdef KL_HW_CRC
/* CRC-32C on the CPU's instruction: three streams over consecutive KL_SHORT-byte blocks */
KL_HW_TARGET static int64_t kl_crc32c_hw(kl_bytes a, int64_t start, int64_t end) {
    uint64_t c = 0xFFFFFFFFu;
    int64_t p = start;
    while (end - p >= 3 * KL_SHORT) {
        uint64_t c1 = 0, c2 = 0;
        int64_t q = p;
        for (int i = 0; i < KL_SHORT / 8; i++) {
            c = KL_CRC_STEP64(c, LE64(a, q));
            c1 = KL_CRC_STEP64(c1, LE64(a, q + KL_SHORT));
            c2 = KL_CRC_STEP64(c2, LE64(a, q + 2 * KL_SHORT));
            q += 8;
        }
        c = kl_crc32c_shift_short(kl_crc32c_shift_short(c) ^ c1) ^ c2;
        p += 3 * KL_SHORT;
    }
    while (end - p >= 8) { c = KL_CRC_STEP64(c, LE64(a, p)); p += 8; }
    while (p < end) { c = KL_CRC_STEP8(c, IX(a, p)); p++; }
    return (int64_t)(c ^ 0xFFFFFFFFu);
}
#endif

/* CRC-32C of a[start:end], as the crc32c package gives it */
static inline int64_t kl_crc32c(kl_bytes a, int64_t start, int64_t end) {
#ifdef KL_HW_CRC
    if (kl_hw_crc32c) return kl_crc32c_hw(a, start, end);
#endif
    return (int64_t)(kl_table_run(kl_crc32c_tab, 0xFFFFFFFFu, a, start, end) ^ 0xFFFFFFFFu);
}

/* ------------------------------------------------------------------ CRC-32 by folding */
#ifdef KL_X86
/* folding constants for the reflected CRC-32 polynomial: over 64 bytes (4 lanes), over 16 */
#define KL_K4_HI 0x1C6E41596ULL
#define KL_K4_LO 0x154442BD4ULL
#define KL_K1_HI 0xCCAA009EULL
#define KL_K1_LO 0x1751997D0ULL

__attribute__((target("pclmul,sse4.1"))) static inline __m128i kl_fold(__m128i x, __m128i k) {
    /* x's high half times k's low lane constant (hi), x's low half times k's high (lo) */
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x01), _mm_clmulepi64_si128(x, k, 0x10));
}

__attribute__((target("pclmul,sse4.1"))) static int64_t kl_crc32_folded(kl_bytes a,
                                                                         int64_t start,
                                                                         int64_t end) {
    /* k4/k1: low 64 bits multiply the lane's high half, high 64 bits its low half */
    const __m128i k4 = _mm_set_epi64x((long long)KL_K4_LO, (long long)KL_K4_HI);
    const __m128i k1 = _mm_set_epi64x((long long)KL_K1_LO, (long long)KL_K1_HI);
    int64_t p = start;
    const uint8_t *q = SPAN(a, p, 64);
    __m128i x0 = _mm_loadu_si128((const __m128i *)q);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(q + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(q + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(q + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)0xFFFFFFFF));
    p += 64;
    while (end - p >= 64) {
        q = SPAN(a, p, 64);
        x0 = _mm_xor_si128(kl_fold(x0, k4), _mm_loadu_si128((const __m128i *)q));
        x1 = _mm_xor_si128(kl_fold(x1, k4), _mm_loadu_si128((const __m128i *)(q + 16)));
        x2 = _mm_xor_si128(kl_fold(x2, k4), _mm_loadu_si128((const __m128i *)(q + 32)));
        x3 = _mm_xor_si128(kl_fold(x3, k4), _mm_loadu_si128((const __m128i *)(q + 48)));
        p += 64;
    }
    __m128i x = _mm_xor_si128(kl_fold(x0, k1), x1);
    x = _mm_xor_si128(kl_fold(x, k1), x2);
    x = _mm_xor_si128(kl_fold(x, k1), x3);
    while (end - p >= 16) {
        x = _mm_xor_si128(kl_fold(x, k1), _mm_loadu_si128((const __m128i *)SPAN(a, p, 16)));
        p += 16;
    }
    /* the 16 folded bytes stand for everything read so far: finish them and the tail by table */
    uint64_t lo = (uint64_t)_mm_cvtsi128_si64(x);
    uint64_t hi = (uint64_t)_mm_extract_epi64(x, 1);
    uint64_t c = kl_step8(kl_crc32_tab, 0, lo);
    c = kl_step8(kl_crc32_tab, c, hi);
    c = kl_table_run(kl_crc32_tab, c, a, p, end);
    return (int64_t)(c ^ 0xFFFFFFFFu);
}
#endif

/* CRC-32 (IEEE) of a[start:end], as zlib.crc32 gives it */
static inline int64_t kl_crc32(kl_bytes a, int64_t start, int64_t end) {
#ifdef KL_X86
    if (kl_clmul && end - start >= 64) return kl_crc32_folded(a, start, end);
#endif
    return (int64_t)(kl_table_run(kl_crc32_tab, 0xFFFFFFFFu, a, start, end) ^ 0xFFFFFFFFu);
}

/* ------------------------------------------------------------------ set-up */
/* what this CPU offers: bit 0 the CRC-32C instruction, bit 1 carry-less multiplication */
static int kl_cpu_features(void) {
    int f = 0;
#ifdef KL_X86
    unsigned int eax, ebx, ecx, edx;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        if (ecx & bit_SSE4_2) f |= 1;
        if ((ecx & bit_PCLMUL) && (ecx & bit_SSE4_1)) f |= 2;
    }
#elif defined(KL_ARM)
    if (getauxval(AT_HWCAP) & HWCAP_CRC32) f |= 1;
#endif
    return f;
}

/* build the tables and choose the paths: what the CPU has, less what the caller turns off */
static void kl_crc_init(int allow_hw_crc32c, int allow_clmul) {
    if (!kl_crc_ready) {
        kl_slice_tables(kl_crc32_tab, 0xEDB88320u);
        kl_slice_tables(kl_crc32c_tab, 0x82F63B78u);
        for (int k = 0; k < 4; k++)
            for (uint32_t b = 0; b < 256; b++)
                kl_crc32c_shift[k][b] = kl_crc32c_zeros(b << (8 * k), KL_SHORT);
        kl_crc_ready = 1;
    }
    int f = kl_cpu_features();
    kl_hw_crc32c = allow_hw_crc32c && (f & 1);
    kl_clmul = allow_clmul && (f & 2);
}

#endif
