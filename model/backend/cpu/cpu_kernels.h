/* CPU backend: the element-wise inner loops, compiled once per instruction set and chosen at
 * backend creation (runtime dispatch, so one binary runs on any x86-64 and uses AVX2/AVX-512
 * where the CPU has them; other architectures get the generic table).
 *
 * Every variant is the same C source (cpu_kernels_impl.h) compiled under a different
 * `#pragma GCC target`; FMA is never enabled and nothing is reassociated, so all variants
 * produce identical bits (tests/ops checks it), with one exception: an add or multiply of two
 * NaNs returns one of them, and which one (its sign and payload) follows the operand order the
 * compiler picked for that loop; the result is a NaN either way. Kernels work on one contiguous range and never
 * fork threads: the ops in cpu_*.c split the work and call them per chunk. `bf`: round every
 * value written to a compute buffer to bf16 ("store" below: the value itself, or its nearest
 * bf16 when bf). */
#ifndef SV_MODEL_BACKEND_CPU_KERNELS_H
#define SV_MODEL_BACKEND_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/elementwise.h"

typedef struct sv_cpu_kernels {
    const char *isa; /* "generic", "avx2", "avx512" */
    /* z = o + bias (bias may be NULL); pre = z; o = gelu(z).  (n) each */
    void (*bias_gelu)(int bf, float *o, float *pre, const float *bias, size_t n);
    /* o = store(o + bias), or o = store(o) when bias is NULL  (n) */
    void (*bias_store)(int bf, float *o, const float *bias, size_t n);
    /* out = store(a + b); out may alias a or b  (n) */
    void (*add_store)(int bf, float *out, const float *a, const float *b, size_t n);
    /* bf16 storage: out16 = bf16(widen(a16) + widen(b16)); out16 may alias a16 or b16. The bits
     * of widen, add_store with bf = 1 and narrow.  (n) */
    void (*add16)(uint16_t *out16, const uint16_t *a16, const uint16_t *b16, size_t n);
    /* p = nearest bf16 of p, in place  (n) */
    void (*round_bf16)(float *p, size_t n);
    /* bf16 storage (cpu_backend.h act16): dst = the fp32 value of src (exact)  (n) */
    void (*widen)(float *dst, const uint16_t *src, size_t n);
    /* dst = nearest bf16 of src (round to nearest even; exact on bf16 values)  (n) */
    void (*narrow)(uint16_t *dst, const float *src, size_t n);
    /* bf16 storage epilogue of one output row (cpu_linear.c act16): z = o + bias (bias may be
     * NULL); with pre16: pre16 = bf16(z), out16 = bf16(gelu(z)); without: out16 = bf16(z). o is
     * only read. The bits of bias_gelu / bias_store with bf = 0 followed by narrow.  (n) each */
    void (*epi_narrow)(uint16_t *out16, uint16_t *pre16, const float *o, const float *bias, size_t n);
    /* out = gelu(x)  (n) */
    void (*gelu)(int bf, float *out, const float *x, size_t n);
    /* d_x = d_out * gelu'(x); d_x may alias d_out  (n) */
    void (*gelu_bwd)(int bf, float *d_x, const float *d_out, const float *x, size_t n);
    /* bf16 storage (cpu_linear.c act16), in place on the bf16 row d16: with x16, r = the bf16 of
     * widen(d16) * gelu'(widen(x16)) and d16 = r; without, r = widen(d16) and d16 is only read;
     * then db += r when db is not NULL (one fp32 add per lane). The bits of widen, gelu_bwd with
     * bf = 1, narrow and add_store with bf = 0 (the AVX-512 table reads gelu'(x) from the table
     * of every bf16 value on some CPUs: gelu_grad16.h, the same bits).  (n) each */
    void (*gelu_bwd16)(uint16_t *d16, const uint16_t *x16, float *db, size_t n);
    /* In-place softmax of each of `rows` rows of length T (row stride T) of S * scale (scale > 0),
     * max-subtracted: the bits of scaling S in place and then taking the softmax at scale 1. Row
     * sums in 16 fixed lanes. */
    void (*softmax_rows)(float *S, int rows, int T, float scale);
    /* Softmax backward in place over `rows` rows of T: dS = P * (dS - rowsum(dS * P)), where
     * dS holds dP on entry and P the probabilities (row stride T, 16 fixed summation lanes). */
    void (*softmax_bwd_rows)(float *dS, const float *P, int rows, int T);
    /* LayerNorm forward of `rows` rows of C (row stride C): out = (x - mean) * rstd * w + b,
     * mean/rstd per row (biased variance, SV_LN_EPS). Row sums in 16 fixed lanes. */
    void (*layernorm_fwd_rows)(int bf, float *out, float *mean, float *rstd, const float *x, const float *w,
                               const float *b, int rows, int C);
    /* LayerNorm input gradient of `rows` rows, accumulated: d_x += rstd * (g - mean(g) -
     * xhat * mean(g * xhat)), g = dy * w, xhat = (x - mean) * rstd. */
    void (*layernorm_bwd_rows)(int bf, float *d_x, const float *dy, const float *x, const float *w, const float *mean,
                               const float *rstd, int rows, int C);
    /* dw[i] += sum_m dy[m][i] * xhat[m][i], db[i] += sum_m dy[m][i] for columns [c0, c1), rows
     * summed in row order (same bits for any column split). */
    void (*layernorm_bwd_params)(float *dw, float *db, const float *dy, const float *x, const float *mean,
                                 const float *rstd, int M, int C, int c0, int c1);
    /* AdamW on n elements (sv_adamw_elem). */
    void (*adamw)(float *p, const float *g, float *m, float *v, size_t n, const sv_adamw_hparams *h, float wd);
    /* weight EMA on n elements (sv_ema_elem). */
    void (*ema)(float *e, const float *x, size_t n, float w);
    /* rule `op` (sv_optim_op: SGD, Lion, LAMB update / apply) of sv_optim_op_elem on n elements */
    void (*optim_elem)(int op, float *p, float *g, float *m, float *v, size_t n, const sv_optim_hparams *h, float wd);
    /* sum of squares of n elements in double: lane l (of 8) adds the elements i = l mod 8 in
     * order, then ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) */
    double (*sumsq_block)(const float *p, size_t n);
} sv_cpu_kernels;

/* The fixed pairwise tree that ends every 16-lane reduction of the tables (C loops and
 * intrinsics alike): lane l += lane l + w for w = 8, 4, 2, 1; returns the total (lane 0). The
 * order never depends on the vector width. */
static inline float k_tree16(float *acc) {
    for (int w = 8; w >= 1; w >>= 1)
        for (int l = 0; l < w; l++) acc[l] += acc[l + w];
    return acc[0];
}

extern const sv_cpu_kernels sv_cpu_kernels_generic;
extern const sv_cpu_kernels sv_cpu_kernels_avx2;   /* valid only where the CPU has AVX2 */
extern const sv_cpu_kernels sv_cpu_kernels_avx512; /* valid only where the CPU has AVX-512F/BW/DQ/VL */

/* The best table this CPU runs. `isa` NULL or "auto": best available; "generic" | "avx2" |
 * "avx512": that one if the CPU supports it, else NULL. */
const sv_cpu_kernels *sv_cpu_kernels_pick(const char *isa);

#endif
