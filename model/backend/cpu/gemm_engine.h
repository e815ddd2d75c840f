/* CPU backend: the packed-GEMM engines and how one is chosen at run time.
 *
 * Every engine computes C (m, n) = / += A (m, r) * B (r, n) on fp32 arrays in two steps, so that
 * the shared operand B (the one spanning the output columns) is packed once per layer call and
 * shared by all worker threads while each worker computes its own rows:
 *   1. pack: columns [j0, j1) of B into a buffer of pack_bytes(n, r) bytes (64-byte aligned);
 *      workers may pack disjoint ranges whose bounds are multiples of `nr` (or n).
 *   2. run:  rows of C from rows of A and the packed B, single-threaded, with a private scratch
 *      of scratch_bytes bytes (64-byte aligned). r == 0 zeroes C (or leaves it when accumulate).
 * Operands are strided views (sv_gemm_mat), so no layout needs a transposed copy.
 *
 * Numerics contract shared by all engines: each output is one fp32 accumulator that walks the
 * reduction in index order (an engine may add a fixed group of consecutive products at once:
 * a bf16 pair for VDPBF16PS, a 32-element k-step for AMX), so the result depends only on the
 * shapes and the engine, never on which rows a call or a worker covers: bitwise identical for
 * any thread count. Engines differ from each other in the last bits (different grouping).
 * bf16 engines round both operands to bf16 (nearest even) while packing, which is exact on the
 * bf16-representable compute buffers of bf16 mode, and flush denormals (the instructions ignore
 * MXCSR). fp32 engines use FMA (one rounding per multiply-add).
 *
 * Chunking: a caller may split the reduction into chunks and call run with accumulate for all but
 * the first, as long as every chunk except the last is a multiple of `red_block`; the result is
 * then bitwise the same as one call (each chunk is padded with zeros only at its end, and a
 * padded product adds +0).
 *
 * No function here allocates. Every entry point except `available` executes the engine's
 * instructions: call it only after available() returned 1 (sv_gemm_engine_pick checks). */
#ifndef SV_MODEL_BACKEND_CPU_GEMM_ENGINE_H
#define SV_MODEL_BACKEND_CPU_GEMM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

/* A strided matrix seen as (rows/columns i, reduction r): element (i, r) is at offset
 * i * ld + r when red_contig, else r * ld + i, of the fp32 array p, or, when h != NULL, of the
 * bf16 array h (bf16 storage: cpu_backend.h act16; then p is unused). Only the bf16 engines
 * accept bf16 operands (packing them is a copy, no rounding). */
typedef struct sv_gemm_mat {
    const float *p;
    size_t ld;
    int red_contig;
    const uint16_t *h;
} sv_gemm_mat;

static inline sv_gemm_mat sv_gemm_f32(const float *p, size_t ld, int red_contig) {
    return (sv_gemm_mat){.p = p, .ld = ld, .red_contig = red_contig, .h = NULL};
}
static inline sv_gemm_mat sv_gemm_h16(const uint16_t *h, size_t ld, int red_contig) {
    return (sv_gemm_mat){.p = NULL, .ld = ld, .red_contig = red_contig, .h = h};
}

/* The view moved by `elems` elements (along rows or reduction: the caller computes the offset). */
static inline sv_gemm_mat sv_gemm_mat_off(sv_gemm_mat v, size_t elems) {
    if (v.h)
        v.h += elems;
    else
        v.p += elems;
    return v;
}

/* An epilogue that an engine with run_ep applies to finished rows of C while they are still in
 * cache: fn(ep, i, rows) is called exactly once for every row i .. i + rows - 1 of the call's C
 * (all n columns), after those rows hold their final values, and may rewrite them in place. The
 * other fields belong to the caller (the engine never reads them). */
typedef struct sv_gemm_epi {
    void (*fn)(const struct sv_gemm_epi *ep, int i, int rows);
    float *out, *pre;
    const float *bias;
    size_t ld;
    int n, bf;
    const void *k;
    uint16_t *out16, *pre16; /* bf16 storage: where the finished rows go (cpu_linear.c) */
} sv_gemm_epi;

typedef struct sv_gemm_engine {
    const char *name; /* "amx-bf16" | "avx512-bf16" | "avx512-f32" | "avx2-f32" */
    int bf16;         /* 1: operands are rounded to bf16 (use only in bf16 mode) */
    int nr;           /* columns per packed panel: pack range bounds are multiples of it (or n) */
    int red_block;    /* reduction chunks (all but the last) must be multiples of this */
    /* 1 when this CPU and OS run the engine (for AMX: the kernel granted the tile state). */
    int (*available)(void);
    size_t (*pack_bytes)(int n, int r);
    size_t scratch_bytes;
    void (*pack)(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1);
    void (*run)(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                void *scratch);
    /* Optional (NULL when the engine has none): run, then ep->fn (ep may be NULL) on each strip of
     * finished rows as soon as it is finished, instead of the caller running its epilogue over
     * all rows afterwards. C gets the same bits as from run. */
    void (*run_ep)(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                   void *scratch, const sv_gemm_epi *ep);
} sv_gemm_engine;

extern const sv_gemm_engine sv_gemm_engine_amx_bf16;    /* gemm_amx.c */
extern const sv_gemm_engine sv_gemm_engine_avx512_bf16; /* gemm_bf16.c */
/* sv_gemm_engine_avx512_f32, sv_gemm_engine_avx2_f32: gemm_f32.h */

/* Engine by name (any of the above), NULL when unknown. Does not check availability. */
const sv_gemm_engine *sv_gemm_engine_by_name(const char *name);

/* Every value `--cpu-gemm` / SHARDVIT_CPU_GEMM accepts, as "a|b|...": the engines above, then
 * "openblas", "blas" (OpenBLAS with its own threads: cpu_backend.c) and "auto". */
extern const char sv_gemm_engine_names[];

/* 1 when name is one of sv_gemm_engine_names (whether it runs here is sv_gemm_engine_pick's
 * question), else 0. The commands check --cpu-gemm / SHARDVIT_CPU_GEMM with it before any work
 * (app/backend_env.h); sv_gemm_engine_pick's message for an unknown name lists the same string. */
int sv_gemm_engine_name_known(const char *name);

/* The engine for a compute dtype (bf16: 1 for bf16 mode), best first:
 *   bf16 mode: amx-bf16, avx512-bf16, then the fp32 engines (operands stay as the ops round them);
 *   fp32 mode: avx512-f32, avx2-f32;
 * NULL when none runs here (the caller then uses OpenBLAS). `force` (NULL/"" = auto): a name
 * from the list, which must be available and allowed for the mode, or "openblas" (returns NULL
 * with *forced_blas = 1). `amx_deny` (tests): treat AMX as refused by the kernel. On a bad `force`, returns NULL and writes the reason to why (else why is
 * ""); `note` receives a line explaining a fallback that the log should show (e.g. AMX refused
 * by the kernel), or "". why and note: buffers of at least 160 bytes (either may be NULL). */
const sv_gemm_engine *sv_gemm_engine_pick(int bf16, const char *force, int amx_deny, int *forced_blas, char *why,
                                          char *note);

/* 1 when this CPU has AMX-BF16 (+ the AVX-512 BF16 the packing uses) and the kernel granted this
 * process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM), else 0 with the reason in why (n
 * bytes; may be NULL). A simulated refusal (tests) is sv_gemm_engine_pick's amx_deny. */
int sv_gemm_amx_permission(char *why, size_t n);

/* The shapes every engine's run handles before its blocking: returns 1 when there is nothing to
 * multiply (m <= 0 or n <= 0: C untouched; r <= 0: C (m, n), row stride ldc, zeroed unless
 * accumulate, which leaves it as is), else 0 and does nothing. */
int sv_gemm_run_trivial(float *C, size_t ldc, int m, int n, int r, int accumulate);

/* Pack all n columns of B into `pack` (e->pack_bytes(n, r) bytes), then run on the calling thread. */
void sv_gemm_engine_gemm(const sv_gemm_engine *e, float *C, size_t ldc, sv_gemm_mat A, int m, sv_gemm_mat B, int n,
                         int r, int accumulate, void *pack, void *scratch);

#endif
