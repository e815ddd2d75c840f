/* The LayerNorm rows of the AVX-512 table (layernorm_fwd_rows, layernorm_bwd_rows) in AVX-512F
 * intrinsics. Included only by cpu_kernels_avx512.c (its mask and 16-lane fold come from
 * vec_avx512.h); it defines SV_CPU_LN_KERNELS, so cpu_kernels_impl.h skips its C loops
 * for these two.
 *
 * Contract: bit for bit the C loops (test_ops_simd compares the tables on rows of 203, 192, 160
 * and 128, both store modes). Lane l of each row reduction adds the elements i = l (mod 16) in
 * order (the tail into lanes 0 .. C mod 16 - 1 under a mask, masked lanes untouched), then
 * k_tree16's fixed fold, here in registers (gv_hsum16); every other operation is the C code's, in
 * its order, rounded where it rounds (no FMA). What the C loops paid for a row of 128-192 was
 * the fold: GCC stores the 16 lanes and reloads them in narrower pieces, which waits for the
 * store (two folds per row, forward and backward). */
#ifndef SV_MODEL_BACKEND_CPU_LAYERNORM_AVX512_H
#define SV_MODEL_BACKEND_CPU_LAYERNORM_AVX512_H

#include "model/backend/cpu/vec_avx512.h"

#define SV_CPU_LN_KERNELS 1

/* out = (x - mean) * rstd * w + b per row, mean / rstd per row (biased variance, SV_LN_EPS). */
static void k_layernorm_fwd_rows(int bf, float *out, float *mean, float *rstd, const float *x, const float *w,
                                 const float *b, int rows, int C) {
    const int full = C / 16 * 16;
    const __mmask16 kt = full < C ? gv_mask(full, C) : 0;
    for (int m = 0; m < rows; m++) {
        const float *xr = x + (size_t)m * C;
        float *o = out + (size_t)m * C;
        __m512 acc = _mm512_setzero_ps();
        for (int i = 0; i < full; i += 16) acc = gv_add(acc, _mm512_loadu_ps(xr + i));
        if (kt) acc = _mm512_mask_add_ps(acc, kt, acc, _mm512_maskz_loadu_ps(kt, xr + full));
        const float mu = gv_hsum16(acc) / (float)C;
        const __m512 vmu = _mm512_set1_ps(mu);
        acc = _mm512_setzero_ps();
        for (int i = 0; i < full; i += 16) {
            const __m512 d = gv_sub(_mm512_loadu_ps(xr + i), vmu);
            acc = gv_add(acc, gv_mul(d, d));
        }
        if (kt) {
            const __m512 d = gv_sub(_mm512_maskz_loadu_ps(kt, xr + full), vmu);
            acc = _mm512_mask_add_ps(acc, kt, acc, gv_mul(d, d));
        }
        const float var = gv_hsum16(acc) / (float)C; /* biased, as torch */
        const float rs = 1.0f / sqrtf(var + SV_LN_EPS);
        const __m512 vrs = _mm512_set1_ps(rs);
        for (int i = 0; i < C; i += 16) {
            const __mmask16 k = i < full ? (__mmask16)0xffff : kt;
            const __m512 y = gv_add(
                gv_mul(gv_mul(gv_sub(_mm512_maskz_loadu_ps(k, xr + i), vmu), vrs), _mm512_maskz_loadu_ps(k, w + i)),
                _mm512_maskz_loadu_ps(k, b + i));
            _mm512_mask_storeu_ps(o + i, k, gv_store_val(bf, y));
        }
        mean[m] = mu;
        rstd[m] = rs;
    }
}

/* d_x += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w, xhat = (x - mean) * rstd. */
static void k_layernorm_bwd_rows(int bf, float *d_x, const float *dy, const float *x, const float *w, const float *mean,
                                 const float *rstd, int rows, int C) {
    const int full = C / 16 * 16;
    const __mmask16 kt = full < C ? gv_mask(full, C) : 0;
    for (int m = 0; m < rows; m++) {
        float *dxr = d_x + (size_t)m * C;
        const float *dyr = dy + (size_t)m * C, *xr = x + (size_t)m * C;
        const __m512 vmu = _mm512_set1_ps(mean[m]), vrs = _mm512_set1_ps(rstd[m]);
        __m512 a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps();
        for (int i = 0; i < C; i += 16) {
            const __mmask16 k = i < full ? (__mmask16)0xffff : kt;
            const __m512 g = gv_mul(_mm512_maskz_loadu_ps(k, dyr + i), _mm512_maskz_loadu_ps(k, w + i));
            const __m512 xh = gv_mul(gv_sub(_mm512_maskz_loadu_ps(k, xr + i), vmu), vrs);
            a1 = _mm512_mask_add_ps(a1, k, a1, g);
            a2 = _mm512_mask_add_ps(a2, k, a2, gv_mul(g, xh));
        }
        const __m512 mg = _mm512_set1_ps(gv_hsum16(a1) / (float)C), mgx = _mm512_set1_ps(gv_hsum16(a2) / (float)C);
        for (int i = 0; i < C; i += 16) {
            const __mmask16 k = i < full ? (__mmask16)0xffff : kt;
            const __m512 xh = gv_mul(gv_sub(_mm512_maskz_loadu_ps(k, xr + i), vmu), vrs);
            const __m512 g = gv_mul(_mm512_maskz_loadu_ps(k, dyr + i), _mm512_maskz_loadu_ps(k, w + i));
            const __m512 t = gv_sub(gv_sub(g, mg), gv_mul(xh, mgx));
            const __m512 y = gv_add(_mm512_maskz_loadu_ps(k, dxr + i), gv_mul(vrs, t));
            _mm512_mask_storeu_ps(dxr + i, k, gv_store_val(bf, y));
        }
    }
}

#endif
