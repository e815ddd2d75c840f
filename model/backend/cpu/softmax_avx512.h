/* The attention softmax of the AVX-512 table (softmax_rows) in AVX-512F intrinsics. Included
 * only by cpu_kernels_avx512.c, after gelu_avx512.h (whose 16-lane exp it uses); it defines
 * k_softmax_rows and SV_CPU_SOFTMAX_KERNELS, so cpu_kernels_impl.h skips its C loop for it. (The
 * backward, softmax_bwd_rows, stays GCC's vectorisation of the C loop: no exp, and the same
 * written with masked tails measured slower, 9.8 -> 10.9 us per 197 x 197 block.)
 *
 * Contract: bit for bit the C loops (test_ops_simd compares the tables at T = 197, 50, 33, 16 and
 * 4000, with several scales). What GCC made of those loops at T = 197: a 16-lane body and a
 * scalar tail of T mod 16 elements for each pass (max, exp, sum, scale), the scalar exp taking
 * as long as several vector ones, and no overlap of one exp's latency chain with the next.
 * Here every tail is one masked vector, and the exp pass runs four blocks side by side. The
 * lanes do the C code's operations in its order:
 *   - the maximum: 16 lanes m[l] = s > m ? s : m (MAXPS(s, m) is that select, NaN included),
 *     the tail into lanes 0 .. T mod 16 - 1 under a mask, then the lanes folded in lane order;
 *   - exp(s * scale - mx): the mul and the sub rounded separately, then sv_exp_fast per lane
 *     (gv_exp2_parts with b = 0; its argument here is <= 0 or -inf, where gv_exp2_parts'
 *     conditions hold: the power of two stays in [-124, 0]);
 *   - the sum: lane l adds the elements j = l (mod 16) in order (masked lanes untouched), then
 *     k_tree16's fixed pairwise fold; the division, then one multiply per element. */
#ifndef SV_MODEL_BACKEND_CPU_SOFTMAX_AVX512_H
#define SV_MODEL_BACKEND_CPU_SOFTMAX_AVX512_H

#include "model/backend/cpu/cpu_kernels.h"
#include "model/backend/cpu/gelu_avx512.h"

#define SV_CPU_SOFTMAX_KERNELS 1

enum { SM_W = 4 }; /* exp blocks side by side */

/* lanes [0, min(16, T - j)) of the block at element j */
static inline __mmask16 sm_mask(int j, int T) {
    __mmask16 k;
    gv_masks(1, &k, (size_t)j, (size_t)T);
    return k;
}

/* k_tree16 on the lanes of v */
static inline float sm_tree16(__m512 v) {
    float acc[16];
    _mm512_storeu_ps(acc, v);
    return k_tree16(acc);
}

/* s[j] = exp(s[j] * scale - mx) for w blocks from s (masks m), their sum added into *acc */
static inline __attribute__((always_inline)) void sm_exp_step(int w, float *s, const __mmask16 *m, __m512 scale,
                                                              __m512 mx, __m512 *acc) {
    __m512 a[SM_W], ac[SM_W], z[SM_W], e[SM_W];
    for (int k = 0; k < w; k++) {
        a[k] = gv_sub(gv_mul(_mm512_maskz_loadu_ps(m[k], s + 16 * k), scale), mx);
        ac[k] = _mm512_max_ps(gv_c(SV_EXP_LO), a[k]); /* a < lo ? lo : a */
        z[k] = _mm512_setzero_ps();
    }
    gv_exp2_parts(w, 0, e, a, ac, z);
    for (int k = 0; k < w; k++) {
        _mm512_mask_storeu_ps(s + 16 * k, m[k], e[k]);
        *acc = _mm512_mask_add_ps(*acc, m[k], *acc, e[k]);
    }
}

static void k_softmax_rows(float *S, int rows, int T, float scale) {
    const __m512 vs = _mm512_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *s = S + (size_t)r * T;
        __m512 m = _mm512_set1_ps(s[0]);
        int j = 0;
        for (; j + 16 <= T; j += 16) m = _mm512_max_ps(_mm512_loadu_ps(s + j), m);
        if (j < T) {
            __mmask16 k = sm_mask(j, T);
            m = _mm512_mask_max_ps(m, k, _mm512_maskz_loadu_ps(k, s + j), m);
        }
        float ml[16];
        _mm512_storeu_ps(ml, m);
        float mx = ml[0];
        for (int l = 1; l < 16; l++) mx = ml[l] > mx ? ml[l] : mx;
        const __m512 vmx = _mm512_set1_ps(mx * scale);
        __m512 acc = _mm512_setzero_ps();
        __mmask16 full[SM_W] = {0xffff, 0xffff, 0xffff, 0xffff};
        for (j = 0; j + 16 * SM_W <= T; j += 16 * SM_W) sm_exp_step(SM_W, s + j, full, vs, vmx, &acc);
        for (; j < T; j += 16) {
            __mmask16 k = sm_mask(j, T);
            sm_exp_step(1, s + j, &k, vs, vmx, &acc);
        }
        const __m512 inv = _mm512_set1_ps(1.0f / sm_tree16(acc));
        for (j = 0; j < T; j += 16) {
            __mmask16 k = sm_mask(j, T);
            _mm512_mask_storeu_ps(s + j, k, gv_mul(_mm512_maskz_loadu_ps(k, s + j), inv));
        }
    }
}

#endif
