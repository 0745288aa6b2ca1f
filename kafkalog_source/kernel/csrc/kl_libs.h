/* liblz4's block decoder and libzstd's streaming decoder, reached through the symbols the lz4 and
 * zstandard Python packages' extension modules export (lz4.block._block, zstandard._cffi).
 *
 * The kernels decompress many batches per call straight into the arena, with the reference C
 * decoders and no Python object per batch. Nothing is linked at build time: kl_bind_libs opens
 * the two modules' files (RTLD_LOCAL: their symbols stay out of the process's namespace; the
 * modules' own initialisation does not run, though finding the files imports their parent
 * packages) and looks the
 * functions up; a module or symbol that is missing leaves that path off, and the reader uses the
 * library path as before (kafkalog_source/kernel/compiled.py says which paths are on, and a test
 * fails when a release of either package stops exporting them). Only the stable, public ABI of
 * each library is used, and only from the versions that have it (checked with
 * LZ4_versionNumber / ZSTD_versionNumber): LZ4_decompress_safe (lz4.h, 1.7 on), and
 * ZSTD_createDCtx, ZSTD_freeDCtx, ZSTD_DCtx_reset, ZSTD_decompressStream, ZSTD_isError (zstd.h,
 * stable since 1.4).
 */
#ifndef KL_LIBS_H
#define KL_LIBS_H

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "kl_common.h"

typedef struct { const void *src; size_t size; size_t pos; } kl_zstd_in;   /* ZSTD_inBuffer */
typedef struct { void *dst; size_t size; size_t pos; } kl_zstd_out;        /* ZSTD_outBuffer */

static int (*kl_lz4_decompress_safe)(const char *, char *, int, int);
static void *(*kl_zstd_create)(void);
static size_t (*kl_zstd_reset)(void *, int);
static size_t (*kl_zstd_stream)(void *, kl_zstd_out *, kl_zstd_in *);
static unsigned (*kl_zstd_is_error)(size_t);
static size_t (*kl_zstd_free)(void *);
static int kl_libs_bound = 0;
#define KL_ZSTD_RESET_SESSION_ONLY 1

/* bind the functions from the two module files (either path may be NULL); returns bit 0 when
 * liblz4's decoder is bound, bit 1 when libzstd's is */
static int kl_bind_libs(const char *lz4_path, const char *zstd_path) {
    int got = 0;
    if (kl_libs_bound) /* once per process: a kernel may be running on another thread */
        return (kl_lz4_decompress_safe ? 1 : 0) | (kl_zstd_create ? 2 : 0);
    kl_libs_bound = 1;
    if (lz4_path) {
        void *h = dlopen(lz4_path, RTLD_LAZY | RTLD_LOCAL);
        int (*version)(void) = NULL;
        if (h) {
            *(void **)(&version) = dlsym(h, "LZ4_versionNumber");
            if (version && version() >= 10700) /* LZ4_decompress_safe's contract since 1.7 */
                *(void **)(&kl_lz4_decompress_safe) = dlsym(h, "LZ4_decompress_safe");
        }
    }
    if (kl_lz4_decompress_safe) got |= 1;
    if (zstd_path) {
        void *h = dlopen(zstd_path, RTLD_LAZY | RTLD_LOCAL);
        unsigned (*version)(void) = NULL;
        if (h) {
            *(void **)(&version) = dlsym(h, "ZSTD_versionNumber");
            if (version && version() >= 10400) { /* ZSTD_DCtx_reset's stable form since 1.4 */
                *(void **)(&kl_zstd_create) = dlsym(h, "ZSTD_createDCtx");
                *(void **)(&kl_zstd_free) = dlsym(h, "ZSTD_freeDCtx");
                *(void **)(&kl_zstd_reset) = dlsym(h, "ZSTD_DCtx_reset");
                *(void **)(&kl_zstd_stream) = dlsym(h, "ZSTD_decompressStream");
                *(void **)(&kl_zstd_is_error) = dlsym(h, "ZSTD_isError");
            }
        }
    }
    if (kl_zstd_create && kl_zstd_free && kl_zstd_reset && kl_zstd_stream && kl_zstd_is_error)
        got |= 2;
    else
        kl_zstd_create = NULL;
    return got;
}

/* this thread's decompression context, made on first use and freed when the thread ends (the
 * reader starts decode threads per read: a context each would otherwise stay behind) */
static pthread_key_t kl_zstd_key;
static pthread_once_t kl_zstd_once = PTHREAD_ONCE_INIT;
static int kl_zstd_key_ok = 0;

static int64_t kl_zstd_live = 0; /* contexts made and not yet freed (tests read it) */

static void kl_zstd_release(void *dctx) {
    if (dctx && kl_zstd_free) {
        kl_zstd_free(dctx);
        __atomic_sub_fetch(&kl_zstd_live, 1, __ATOMIC_RELAXED);
    }
}

static void kl_zstd_key_init(void) {
    kl_zstd_key_ok = pthread_key_create(&kl_zstd_key, kl_zstd_release) == 0;
}

static void *kl_zstd_context(void) {
    pthread_once(&kl_zstd_once, kl_zstd_key_init);
    if (!kl_zstd_key_ok) return NULL;
    void *dctx = pthread_getspecific(kl_zstd_key);
    if (!dctx) {
        dctx = kl_zstd_create();
        if (dctx) __atomic_add_fetch(&kl_zstd_live, 1, __ATOMIC_RELAXED);
        if (dctx && pthread_setspecific(kl_zstd_key, dctx) != 0) {
            kl_zstd_release(dctx);
            dctx = NULL;
        }
    }
    return dctx;
}

#define KL_ZSTD_MAGIC 0xFD2FB528u
#define KL_ZSTD_SKIPPABLE 0x184D2A50u
#define KL_ZSTD_WINDOW_MAX (((int64_t)1 << 27) + 1) /* libzstd's default limit, as zstd-jni's */

/* Walk the frame headers of src[start:end] (RFC 8878) as codecs/zstd.py does: 1 when every
 * frame's window is within the default limit and names no dictionary, 0 for anything else
 * (the library path then decides and reports). libzstd's one-pass shortcut for a frame with a
 * content size would decode a frame whose window is over the limit; this keeps the two paths
 * agreeing on every payload. */
static int kl_zstd_frames_ok(kl_bytes src, int64_t start, int64_t end) {
    int64_t pos = start;
    while (pos < end) {
        if (end - pos < 8) return 0;
        uint32_t magic = (uint32_t)LE32(src, pos);
        if ((magic & 0xFFFFFFF0u) == KL_ZSTD_SKIPPABLE) {
            int64_t size = LE32(src, pos + 4);
            if (size > end - pos - 8) return 0;
            pos += 8 + size;
            continue;
        }
        if (magic != KL_ZSTD_MAGIC) return 0;
        int64_t p = pos + 4;
        int fhd = IX(src, p);
        p++;
        if (fhd & 0x08) return 0;
        int single = fhd & 0x20;
        int dict_len = (int[]){0, 1, 2, 4}[fhd & 3];
        int fcs_len = (int[]){single ? 1 : 0, 2, 4, 8}[fhd >> 6];
        if ((single ? 0 : 1) + dict_len + fcs_len > end - p) return 0;
        int64_t window = 0;
        if (!single) {
            int wd = IX(src, p);
            p++;
            int64_t base = (int64_t)1 << (10 + (wd >> 3));
            window = base + (base >> 3) * (wd & 7);
        }
        for (int k = 0; k < dict_len; k++)
            if (IX(src, p + k) != 0) return 0; /* a dictionary: Kafka configures none */
        p += dict_len;
        if (single) {
            uint64_t fcs = 0;
            for (int k = 0; k < fcs_len; k++) fcs |= (uint64_t)IX(src, p + k) << (8 * k);
            if (fcs_len == 2) fcs += 256;
            if (fcs > (uint64_t)KL_ZSTD_WINDOW_MAX) return 0;
            window = (int64_t)fcs;
        }
        p += fcs_len;
        if (window > KL_ZSTD_WINDOW_MAX) return 0;
        for (;;) { /* the blocks, to find the next frame */
            if (end - p < 3) return 0;
            int64_t h = (int64_t)IX(src, p) | ((int64_t)IX(src, p + 1) << 8) |
                        ((int64_t)IX(src, p + 2) << 16);
            int64_t kind = (h >> 1) & 3, size = h >> 3;
            if (kind == 3) return 0;
            int64_t body = kind == 1 ? 1 : size;
            if (body > end - p - 3) return 0;
            p += 3 + body;
            if (h & 1) break;
        }
        if (fhd & 0x04) { /* the content checksum */
            if (end - p < 4) return 0;
            p += 4;
        }
        pos = p;
    }
    return 1;
}

/* Decode every zstd frame of src[start:end] to dst[dp:dlimit] as zstd-jni's stream does
 * (frames back to back, skippable frames skipped, libzstd's default window limit): the output
 * end, ARENA_FULL when the output does not fit below dlimit, or NEEDS_LIBRARY for anything else
 * (an error libzstd reports, a truncated frame, trailing bytes, no libzstd bound): the library
 * path then decodes the payload or raises the precise error. */
static int64_t kl_zstd_payload(kl_bytes src, int64_t start, int64_t end, kl_u8 dst, int64_t dp,
                               int64_t dlimit) {
    if (!kl_zstd_create || start < 0 || end <= start || end > src.n || dp < 0 || dlimit < dp ||
        dlimit > dst.n)
        return NEEDS_LIBRARY;
    if (!kl_zstd_frames_ok(src, start, end)) return NEEDS_LIBRARY;
    void *dctx = kl_zstd_context();
    if (!dctx) return NEEDS_LIBRARY;
    if (kl_zstd_is_error(kl_zstd_reset(dctx, KL_ZSTD_RESET_SESSION_ONLY))) return NEEDS_LIBRARY;
    kl_zstd_in in = {src.p + start, (size_t)(end - start), 0};
    kl_zstd_out out = {dst.p + dp, (size_t)(dlimit - dp), 0};
    for (;;) {
        size_t in0 = in.pos, out0 = out.pos;
        size_t r = kl_zstd_stream(dctx, &out, &in);
        if (kl_zstd_is_error(r)) return NEEDS_LIBRARY;
        if (r == 0 && in.pos == in.size) return dp + (int64_t)out.pos; /* every frame whole */
        if (in.pos == in0 && out.pos == out0) /* no progress: the output space is full (more */
            return out.pos == out.size ? ARENA_FULL : NEEDS_LIBRARY; /* to write), or truncated */
    }
}

/* one LZ4 block with liblz4 (compressed src[sp:send] into dst[dp:dlimit]): the output end or -1 */
static inline int64_t kl_lz4_block_lib(kl_bytes src, int64_t sp, int64_t send, kl_u8 dst,
                                       int64_t dp, int64_t dlimit) {
    if (sp < 0 || send < sp || send > src.n || dp < 0 || dlimit < dp || dlimit > dst.n)
        return -1;
    int got = kl_lz4_decompress_safe((const char *)src.p + sp, (char *)dst.p + dp,
                                     (int)(send - sp), (int)(dlimit - dp));
    return got < 0 ? -1 : dp + got;
}

#endif
