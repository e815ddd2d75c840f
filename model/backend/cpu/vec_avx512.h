/* Small 16-lane AVX-512F helpers shared by the intrinsics kernels of the AVX-512 table
 * (gelu_avx512.h, softmax_avx512.h, layernorm_avx512.h). Included only from those headers,
 * which cpu_kernels_avx512.c includes after its `#pragma GCC target`.
 *
 * Contract: each helper is one IEEE operation per lane, or a fixed fold of the lanes whose order
 * matches the C loops' (k_tree16 / k_max16 of cpu_kernels_impl.h), so kernels built from them
 * keep the bits of the C loops they replace. No FMA anywhere: every mul and add rounds on its own. */
#ifndef SV_MODEL_BACKEND_CPU_VEC_AVX512_H
#define SV_MODEL_BACKEND_CPU_VEC_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* for each of the w blocks processed side by side (w a compile-time constant at every use) */
#define GV_EACH(k) for (int k = 0; k < w; k++)

static inline __m512 gv_c(float c) { return _mm512_set1_ps(c); }
static inline __m512 gv_mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
static inline __m512 gv_add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
static inline __m512 gv_sub(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
static inline __m512 gv_and(__m512 a, uint32_t m) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int32_t)m)));
}

/* sv_round_bf16 per lane: (u + 0x7fff + bit 16 of u) with the low half cleared; NaN: (u |
 * 0x00400000) with the low half cleared (quiet, payload kept). The NaN lanes are rewritten to
 * that value first: its low half is 0, so adding 0x7fff or 0x8000 carries nothing out of it. */
static inline __m512 gv_round_bf16(__m512 v) {
    const __m512i hi_half = _mm512_set1_epi32((int32_t)0xffff0000u);
    __m512i u = _mm512_castps_si512(v);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    /* ternary logic 0xA8 = (A | B) & C: u = (u | quiet bit) & hi_half in the NaN lanes */
    u = _mm512_mask_ternarylogic_epi32(u, nan, _mm512_set1_epi32(0x00400000), hi_half, 0xA8);
    __mmask16 odd = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000));
    __m512i r =
        _mm512_mask_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd, u, _mm512_set1_epi32(0x8000));
    return _mm512_castsi512_ps(_mm512_and_si512(r, hi_half));
}

static inline __m512 gv_store_val(int bf, __m512 v) { return bf ? gv_round_bf16(v) : v; }

/* Lane masks of the w blocks starting at element i of n (all-ones for full blocks, 0 past n). */
static inline __attribute__((always_inline)) void gv_masks(int w, __mmask16 *m, size_t i, size_t n) {
    GV_EACH(k) {
        size_t at = i + 16 * (size_t)k, left = at < n ? n - at : 0;
        m[k] = (__mmask16)(left >= 16 ? 0xffffu : (1u << left) - 1u);
    }
}

/* lanes [0, min(16, T - j)) of the one block at element j */
static inline __mmask16 gv_mask(int j, int T) {
    __mmask16 k;
    gv_masks(1, &k, (size_t)j, (size_t)T);
    return k;
}

/* k_tree16 on the lanes of v, in registers: lane l += lane l + w for w = 8, 4, 2, 1, the same
 * additions of the same pairs (lanes above w hold sums nobody reads). Through a store and
 * scalar reloads instead, the fold stalled on store forwarding: at T = 26 it was the largest
 * part of a row's time. */
static inline float gv_hsum16(__m512 v) {
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E)); /* lanes 0-7 += lanes 8-15 */
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1)); /* lanes 0-3 += lanes 4-7 */
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));       /* lanes 0-1 += lanes 2-3 */
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));       /* lane 0 += lane 1 */
    return _mm512_cvtss_f32(v);
}

/* The largest lane of v, folded as gv_hsum16 folds (m = a > m ? a : m at each step, which is
 * MAXPS(a, m)): the maximum of a set does not depend on the order it is taken in, ties between
 * +0 and -0 aside, which the softmax's s - max maps to the same exp (the argument of k_max16); a NaN
 * outside lane 0 is skipped by either order, one in lane 0 kept by both. */
static inline float gv_hmax16(__m512 v) {
    v = _mm512_max_ps(_mm512_shuffle_f32x4(v, v, 0x4E), v);
    v = _mm512_max_ps(_mm512_shuffle_f32x4(v, v, 0xB1), v);
    v = _mm512_max_ps(_mm512_permute_ps(v, 0x4E), v);
    v = _mm512_max_ps(_mm512_permute_ps(v, 0xB1), v);
    return _mm512_cvtss_f32(v);
}

#endif
