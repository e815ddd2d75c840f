/* The attention softmax of the AVX-512 table (softmax_rows) in AVX-512F intrinsics. Included
 * only by cpu_kernels_avx512.c, after gelu_avx512.h (whose 16-lane exp it uses); it defines
 * k_softmax_rows and SV_CPU_SOFTMAX_KERNELS, so cpu_kernels_impl.h skips its C loop for it. The
 * backward (softmax_bwd_rows) is GCC's vectorisation of the C loop for rows longer than
 * SM_SHORT and intrinsics up to it (k_softmax_bwd_short, same bits): the C loop's scalar tail
 * and memory fold dominate a short row, and a masked tail measured slower at T = 197 (9.8 -> 10.9
 * us per 197 x 197 block).
 *
 * Contract: bit for bit the C loops (test_ops_simd compares the tables at T = 197, 65, 64, 50, 33,
 * 26, 16, 5 and 4000, with several scales). What GCC made of those loops at T = 197: a 16-lane body and a
 * scalar tail of T mod 16 elements for each pass (max, exp, sum, scale), the scalar exp taking
 * as long as several vector ones, and no overlap of one exp's latency chain with the next.
 * Here every tail is one masked vector, and the exp pass runs several blocks side by side: two
 * rows at a time, up to four blocks of each (k_softmax_rows); rows of up to 64 elements are done
 * in groups of four or two with everything between the load and the store in registers
 * (sm_rows_reg). The lanes do the C code's operations in its order:
 *   - the maximum: 16 lanes m[l] = s > m ? s : m (MAXPS(s, m) is that select, NaN included),
 *     the tail into lanes 0 .. T mod 16 - 1 under a mask, then the lanes folded pairwise in
 *     registers (gv_hmax16: the same maximum as the C loop's lane-order fold, see there);
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

enum { SM_W = 4 };             /* exp blocks of one row side by side */
enum { SM_SHORT = 16 * SM_W }; /* rows up to this length go in groups in registers, both ways */

/* s_r[j] = exp(s_r[j] * scale - mx_r) for w blocks of each of nr rows s_0 = s0, s_1 = s1 (the
 * same masks m, the same length; s1, mx1 and acc1 unused when nr = 1), nr * w blocks side by
 * side; row r's blocks add into *acc_r in block order. nr and w are constants at every call. */
static inline __attribute__((always_inline)) void sm_exp_step(int nr, int w, float *s0, float *s1, const __mmask16 *m,
                                                              __m512 scale, __m512 mx0, __m512 mx1, __m512 *acc0,
                                                              __m512 *acc1) {
    __m512 a[2 * SM_W], ac[2 * SM_W], z[2 * SM_W], e[2 * SM_W];
    for (int k = 0; k < nr * w; k++) {
        const int b = k < w ? k : k - w;
        a[k] = gv_sub(gv_mul(_mm512_maskz_loadu_ps(m[b], (k < w ? s0 : s1) + 16 * b), scale), k < w ? mx0 : mx1);
        ac[k] = _mm512_max_ps(gv_c(SV_EXP_LO), a[k]); /* a < lo ? lo : a */
        z[k] = _mm512_setzero_ps();
    }
    gv_exp2_parts(nr * w, 0, e, a, ac, z);
    for (int k = 0; k < w; k++) {
        _mm512_mask_storeu_ps(s0 + 16 * k, m[k], e[k]);
        *acc0 = _mm512_mask_add_ps(*acc0, m[k], *acc0, e[k]);
    }
    for (int k = 0; nr > 1 && k < w; k++) {
        _mm512_mask_storeu_ps(s1 + 16 * k, m[k], e[w + k]);
        *acc1 = _mm512_mask_add_ps(*acc1, m[k], *acc1, e[w + k]);
    }
}

/* max(s[0 .. T)) * scale, broadcast: the lanes' maxima, then the lanes folded (gv_hmax16) */
static inline __m512 sm_row_max(const float *s, int T, float scale) {
    __m512 m = _mm512_set1_ps(s[0]);
    int j = 0;
    for (; j + 16 <= T; j += 16) m = _mm512_max_ps(_mm512_loadu_ps(s + j), m);
    if (j < T) {
        __mmask16 k = gv_mask(j, T);
        m = _mm512_mask_max_ps(m, k, _mm512_maskz_loadu_ps(k, s + j), m);
    }
    return _mm512_set1_ps(gv_hmax16(m) * scale);
}

/* s *= 1 / (the lanes of acc summed by k_tree16), T elements */
static inline void sm_row_scale(float *s, int T, __m512 acc) {
    const __m512 inv = _mm512_set1_ps(1.0f / gv_hsum16(acc));
    for (int j = 0; j < T; j += 16) {
        __mmask16 k = gv_mask(j, T);
        _mm512_mask_storeu_ps(s + j, k, gv_mul(_mm512_maskz_loadu_ps(k, s + j), inv));
    }
}

/* The softmax of nr (a constant: 1 or 2) rows of T elements starting at S, row stride T: their
 * maxima, the exp pass in steps of up to SM_W blocks of each row, the scaling. */
static inline __attribute__((always_inline)) void sm_rows(int nr, float *S, int T, __m512 vs, float scale) {
    float *s0 = S, *s1 = S + (nr > 1 ? T : 0);
    const __m512 mx0 = sm_row_max(s0, T, scale), mx1 = nr > 1 ? sm_row_max(s1, T, scale) : mx0;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int j = 0; j < T;) {
        const int left = (T - j + 15) / 16, w = left < SM_W ? left : SM_W;
        __mmask16 mk[SM_W];
        gv_masks(w, mk, (size_t)j, (size_t)T);
        switch (w) { /* a constant w per call: the blocks' chains stay in registers */
        case 1: sm_exp_step(nr, 1, s0 + j, s1 + j, mk, vs, mx0, mx1, &acc0, &acc1); break;
        case 2: sm_exp_step(nr, 2, s0 + j, s1 + j, mk, vs, mx0, mx1, &acc0, &acc1); break;
        case 3: sm_exp_step(nr, 3, s0 + j, s1 + j, mk, vs, mx0, mx1, &acc0, &acc1); break;
        default: sm_exp_step(nr, 4, s0 + j, s1 + j, mk, vs, mx0, mx1, &acc0, &acc1); break;
        }
        j += 16 * w;
    }
    sm_row_scale(s0, T, acc0);
    if (nr > 1) sm_row_scale(s1, T, acc1);
}

/* Rows [0, rows - rows % 2) in pairs; returns how many were done. */
static inline __attribute__((always_inline)) int sm_pairs(float *S, int rows, int T, __m512 vs, float scale) {
    int r = 0;
    for (; r + 1 < rows; r += 2) sm_rows(2, S + (size_t)r * T, T, vs, scale);
    return r;
}

/* nr rows of wb <= 4 blocks each (nr * wb <= 8; both constants at every call) side by side: each
 * row's maximum (sm_row_max), one exp step over the nr * wb blocks, each row's sum in block order
 * from zero and its scaling (sm_row_scale's multiply, on the exps kept in registers rather than
 * stored and loaded back): sm_rows' operations per row. A short row is mostly latency, and a
 * masked store read back at once waits for the store to complete. */
static inline __attribute__((always_inline)) void sm_rows_reg(int nr, int wb, float *S, int T, __m512 vs, float scale) {
    __mmask16 mk[SM_W];
    gv_masks(wb, mk, 0, (size_t)T);
    __m512 a[8], ac[8], z[8], e[8], acc[4];
    for (int r = 0; r < nr; r++) {
        const float *s = S + (size_t)r * T;
        const __m512 mx = sm_row_max(s, T, scale);
        for (int b = 0; b < wb; b++) {
            const int k = r * wb + b;
            a[k] = gv_sub(gv_mul(_mm512_maskz_loadu_ps(mk[b], s + 16 * b), vs), mx);
            ac[k] = _mm512_max_ps(gv_c(SV_EXP_LO), a[k]); /* a < lo ? lo : a */
            z[k] = _mm512_setzero_ps();
        }
    }
    gv_exp2_parts(nr * wb, 0, e, a, ac, z);
    for (int r = 0; r < nr; r++) {
        acc[r] = _mm512_setzero_ps();
        for (int b = 0; b < wb; b++) acc[r] = _mm512_mask_add_ps(acc[r], mk[b], acc[r], e[r * wb + b]);
    }
    for (int r = 0; r < nr; r++) { /* sm_row_scale on the exps still in registers */
        const __m512 inv = _mm512_set1_ps(1.0f / gv_hsum16(acc[r]));
        for (int b = 0; b < wb; b++)
            _mm512_mask_storeu_ps(S + (size_t)r * T + 16 * b, mk[b], gv_mul(e[r * wb + b], inv));
    }
}

/* Rows of T <= 64 in groups of 4 (up to 2 blocks) or 2 (3-4 blocks); returns how many were done. */
static int sm_groups(float *S, int rows, int T, __m512 vs, float scale) {
    int r = 0;
    switch ((T + 15) / 16) {
    case 1:
        for (; r + 3 < rows; r += 4) sm_rows_reg(4, 1, S + (size_t)r * T, T, vs, scale);
        break;
    case 2:
        for (; r + 3 < rows; r += 4) sm_rows_reg(4, 2, S + (size_t)r * T, T, vs, scale);
        break;
    case 3:
        for (; r + 1 < rows; r += 2) sm_rows_reg(2, 3, S + (size_t)r * T, T, vs, scale);
        break;
    default:
        for (; r + 1 < rows; r += 2) sm_rows_reg(2, 4, S + (size_t)r * T, T, vs, scale);
        break;
    }
    return r;
}

/* Rows two at a time, both rows' exp chains in one step (a row of T = 50 alone is four dependent
 * chains, one per block, each a full latency), a last odd row alone. Measured on Zen 4 (one
 * thread, the softmax alone, 197 / 50 / 17 rows of T = 197 / 50 / 17): 29.0 / 4.0 / 1.06 us with
 * one row at a time, 24.0 / 2.35 / 0.66 us like this; one row of 6 or 8 blocks at a time gave
 * 27.2 / 30.2 us at T = 197. */
static void k_softmax_rows(float *S, int rows, int T, float scale) {
    const __m512 vs = _mm512_set1_ps(scale);
    const int q = T <= SM_SHORT ? sm_groups(S, rows, T, vs, scale) : 0;
    S += (size_t)q * T, rows -= q; /* short rows: at most three left */
    const int r = sm_pairs(S, rows, T, vs, scale);
    if (r < rows) sm_rows(1, S + (size_t)r * T, T, vs, scale);
}

/* ---- backward: dS = P * (dS - rowsum(dS * P)) ---- */

static void k_softmax_bwd_rows(float *dS, const float *P, int rows, int T); /* the C loop */

/* One row: the dot in 16 lanes (lane l adds s[j] p[j] for j = l mod 16 in order, the product
 * rounded, then added: the C loop's operations), the masked tail into lanes 0 .. T mod 16 - 1,
 * gv_hsum16, then s = p (s - dot). */
static inline void smb_row(float *s, const float *p, int T) {
    __m512 acc = _mm512_setzero_ps();
    int j = 0;
    for (; j + 16 <= T; j += 16) acc = gv_add(acc, gv_mul(_mm512_loadu_ps(s + j), _mm512_loadu_ps(p + j)));
    if (j < T) {
        const __mmask16 k = gv_mask(j, T);
        acc = _mm512_mask_add_ps(acc, k, acc, gv_mul(_mm512_maskz_loadu_ps(k, s + j), _mm512_maskz_loadu_ps(k, p + j)));
    }
    const __m512 dot = _mm512_set1_ps(gv_hsum16(acc));
    for (j = 0; j < T; j += 16) {
        const __mmask16 k = gv_mask(j, T);
        _mm512_mask_storeu_ps(s + j, k,
                              gv_mul(_mm512_maskz_loadu_ps(k, p + j), gv_sub(_mm512_maskz_loadu_ps(k, s + j), dot)));
    }
}

/* nr rows of wb <= 4 blocks (nr * wb <= 8; both constants at every call): smb_row's operations
 * per row, the operands kept in registers between the dot and the update. */
static inline __attribute__((always_inline)) void smb_rows_reg(int nr, int wb, float *dS, const float *P, int T) {
    __mmask16 mk[SM_W];
    gv_masks(wb, mk, 0, (size_t)T);
    __m512 sv[8], pv[8], dot[4];
    for (int r = 0; r < nr; r++) {
        __m512 acc = _mm512_setzero_ps();
        for (int b = 0; b < wb; b++) {
            const int k = r * wb + b;
            sv[k] = _mm512_maskz_loadu_ps(mk[b], dS + (size_t)r * T + 16 * b);
            pv[k] = _mm512_maskz_loadu_ps(mk[b], P + (size_t)r * T + 16 * b);
            acc = _mm512_mask_add_ps(acc, mk[b], acc, gv_mul(sv[k], pv[k]));
        }
        dot[r] = _mm512_set1_ps(gv_hsum16(acc));
    }
    for (int r = 0; r < nr; r++)
        for (int b = 0; b < wb; b++) {
            const int k = r * wb + b;
            _mm512_mask_storeu_ps(dS + (size_t)r * T + 16 * b, mk[b], gv_mul(pv[k], gv_sub(sv[k], dot[r])));
        }
}

/* Measured on Zen 4 (one thread, 320 blocks of T rows): T = 26 / 50: see docs/performance.md. */
static void k_softmax_bwd_short(float *dS, const float *P, int rows, int T) {
    if (T > SM_SHORT) {
        k_softmax_bwd_rows(dS, P, rows, T);
        return;
    }
    int r = 0;
#define SMB_GROUPS(nr, wb) \
    for (; r + (nr)-1 < rows; r += (nr)) smb_rows_reg(nr, wb, dS + (size_t)r * T, P + (size_t)r * T, T)
    switch ((T + 15) / 16) {
    case 1: SMB_GROUPS(4, 1); break;
    case 2: SMB_GROUPS(4, 2); break;
    case 3: SMB_GROUPS(2, 3); break;
    default: SMB_GROUPS(2, 4); break;
    }
#undef SMB_GROUPS
    for (; r < rows; r++) smb_row(dS + (size_t)r * T, P + (size_t)r * T, T);
}
#define SV_CPU_SOFTMAX_BWD k_softmax_bwd_short

#endif
