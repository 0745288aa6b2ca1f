/* liblz4's block decoder and libzstd's streaming decoder, reached through the symbols the lz4 and
 * zstandard Python packages' extension modules export (lz4.block._block, zstandard._cffi).
 *
 * The kernels decompress many batches per call straight into the arena, with the reference C
 * decoders and no Python object per batch. Nothing is linked at build time: kl_bind_libs opens
 * the two modules' files (RTLD_LOCAL: their symbols stay out of the process's namespace; the
 * modules are not imported by this) and looks the
 * functions up; a module or symbol that is missing leaves that path off, and the reader uses the
 * library path as before (kafkalog_source/kernel/compiled.py says which paths are on, and a test
 * fails when a release of either package stops exporting them). Only the stable, public ABI of
 * each library is used: LZ4_decompress_safe (lz4.h, since 1.7), and ZSTD_createDCtx,
 * ZSTD_DCtx_reset, ZSTD_decompressStream, ZSTD_isError (zstd.h, stable since 1.4).
 */
#ifndef KL_LIBS_H
#define KL_LIBS_H

#include <dlfcn.h>
#include <stddef.h>

#include "kl_common.h"

typedef struct { const void *src; size_t size; size_t pos; } kl_zstd_in;   /* ZSTD_inBuffer */
typedef struct { void *dst; size_t size; size_t pos; } kl_zstd_out;        /* ZSTD_outBuffer */

static int (*kl_lz4_decompress_safe)(const char *, char *, int, int);
static void *(*kl_zstd_create)(void);
static size_t (*kl_zstd_reset)(void *, int);
static size_t (*kl_zstd_stream)(void *, kl_zstd_out *, kl_zstd_in *);
static unsigned (*kl_zstd_is_error)(size_t);
#define KL_ZSTD_RESET_SESSION_ONLY 1

/* bind the functions from the two module files (either path may be NULL); returns bit 0 when
 * liblz4's decoder is bound, bit 1 when libzstd's is */
static int kl_bind_libs(const char *lz4_path, const char *zstd_path) {
    int got = 0;
    if (lz4_path) {
        void *h = dlopen(lz4_path, RTLD_LAZY | RTLD_LOCAL);
        if (h) *(void **)(&kl_lz4_decompress_safe) = dlsym(h, "LZ4_decompress_safe");
    }
    if (kl_lz4_decompress_safe) got |= 1;
    if (zstd_path) {
        void *h = dlopen(zstd_path, RTLD_LAZY | RTLD_LOCAL);
        if (h) {
            *(void **)(&kl_zstd_create) = dlsym(h, "ZSTD_createDCtx");
            *(void **)(&kl_zstd_reset) = dlsym(h, "ZSTD_DCtx_reset");
            *(void **)(&kl_zstd_stream) = dlsym(h, "ZSTD_decompressStream");
            *(void **)(&kl_zstd_is_error) = dlsym(h, "ZSTD_isError");
        }
    }
    if (kl_zstd_create && kl_zstd_reset && kl_zstd_stream && kl_zstd_is_error) got |= 2;
    else kl_zstd_create = NULL;
    return got;
}

/* this thread's decompression context, made on first use and kept for the thread's life (one
 * per decoding thread: a few hundred KiB each) */
static __thread void *kl_zstd_dctx;

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
    if (!kl_zstd_dctx) {
        kl_zstd_dctx = kl_zstd_create();
        if (!kl_zstd_dctx) return NEEDS_LIBRARY;
    }
    if (kl_zstd_is_error(kl_zstd_reset(kl_zstd_dctx, KL_ZSTD_RESET_SESSION_ONLY)))
        return NEEDS_LIBRARY;
    kl_zstd_in in = {src.p + start, (size_t)(end - start), 0};
    kl_zstd_out out = {dst.p + dp, (size_t)(dlimit - dp), 0};
    for (;;) {
        size_t in0 = in.pos, out0 = out.pos;
        size_t r = kl_zstd_stream(kl_zstd_dctx, &out, &in);
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
