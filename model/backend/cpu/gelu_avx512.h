/* The GELU kernels of the AVX-512 table (bias_gelu, gelu, gelu_bwd, gelu_bwd16, and the epilogue
 * bias_gelu_narrow) in AVX-512F intrinsics. Included only by cpu_kernels_avx512.c, after its
 * `#pragma GCC target`; it defines k_bias_gelu / k_gelu / k_gelu_bwd / k_gelu_bwd16 /
 * k_bias_gelu_narrow and SV_CPU_GELU_KERNELS, so cpu_kernels_impl.h skips its C loops for them.
 *
 * Contract: bit for bit the results of the C loops (kstore of sv_gelu / sv_gelu_grad of
 * core/elementwise.h) for every fp32 input, NaN payloads, Inf, -0 and denormals included
 * (tests/ops/test_ops_simd compares every bf16 bit pattern and 2^22 fp32 patterns spread over
 * all exponents; `test_ops_simd --exhaustive` all 2^32). gelu_bwd16 gathers gelu'(x) of its bf16
 * x from the table of gelu_grad16.h on the CPUs where that is faster (the same bits either way).
 * Each lane performs the scalar code's
 * IEEE operations in its order: no FMA, every mul/add/sub/div rounded on its own. What differs
 * is only how selects, negations and the power of two are formed, each exact:
 *   - `x < 0 ? -x : x` is an AND with the sign mask (-0 and +0 give the same bits downstream);
 *   - `a < b ? a : b` / `a < lo ? lo : a` are MINPS / MAXPS (the same operand rule for NaN);
 *   - `p + (-s)` is `p - s` (the same IEEE operation), so corr = -s is never formed;
 *   - `0.5 * (ax * c)` is `ax * (0.5 c)` (both exactly half of ax * c where that is normal; where
 *     it is not, ax < 2^-124, and 1 + either is 1, so t is the same);
 *   - `e * 2^k` is VSCALEFPS(e, fn), the final `a + b < lo ? 0 :` its zero mask;
 *   - the bf16 store is the integer rounding of sv_f32_to_bf16 on 16 lanes.
 * GCC's vectorisation of the C loops spent about a third of its instructions on these (blends
 * of constant-folded clamp paths, the int conversion of k, both bf16-store paths under a mask)
 * and processed one or two blocks at a time (see GV_W_* below). */
#ifndef SV_MODEL_BACKEND_CPU_GELU_AVX512_H
#define SV_MODEL_BACKEND_CPU_GELU_AVX512_H

#include "core/elementwise.h"
#include "model/backend/cpu/gelu_grad16.h"
#include "model/backend/cpu/vec_avx512.h"

#define SV_CPU_GELU_KERNELS 1

/* w independent 16-lane blocks are computed step by step side by side: one lane's chain (a
 * division, two Horner chains, the exp reduction) is ~200 cycles of latency for ~70-100
 * instructions, so a block or two at a time leaves the core waiting on latency however few
 * instructions it takes (measured: w = 1 was no faster than GCC's loop, w = 2 / 4 / 8 gave
 * 1.2x / 1.4x / 1.6x on the forward); 8 blocks interleaved in program order keep both vector ports busy.
 * GV_EACH loops unroll completely; the arrays live in registers (some spill at w = 8). */
#define GV_WMAX 8
#ifndef GV_W_FWD
#define GV_W_FWD 8 /* blocks side by side in gelu / bias_gelu */
#endif
#ifndef GV_W_BWD
#define GV_W_BWD 8 /* and in gelu_bwd */
#endif

/* p * r + c, two roundings (one Horner step of the scalar code) */
static inline __m512 gv_step(__m512 p, __m512 r, float c) { return gv_add(gv_mul(p, r), gv_c(c)); }

/* sv_exp2_parts(a, b) per lane (neg = 0), or sv_exp2_parts(a, -b) (neg = 1: every `+ (-b)` is
 * done as `- b`, the same IEEE operation); ac = the scalar code's clamp `a < lo ? lo : a`,
 * shared by the two calls of one lane. Only for the arguments sv_two_phi passes (a = -h^2/2
 * with h <= 20, |b| < 4, both finite): there k = fn lies in [-124, 1] wherever the result is
 * not the zero of `a + b < lo`, so e * 2^k is exact and equals VSCALEFPS(e, fn) (fn is already
 * an integer); the scalar code's k = 128 overflow path is never reached. */
static inline __attribute__((always_inline)) void gv_exp2_parts(int w, int neg, __m512 *out, const __m512 *a,
                                                                const __m512 *ac, const __m512 *b) {
#define GV_PLUS_B(v, k) (neg ? gv_sub(v, b[k]) : gv_add(v, b[k]))
    const __m512 lo = gv_c(SV_EXP_LO);
    __m512 fn[GV_WMAX], r[GV_WMAX], p[GV_WMAX];
    GV_EACH(k) fn[k] = gv_mul(GV_PLUS_B(ac[k], k), gv_c(SV_EXP_LOG2E));
    GV_EACH(k) fn[k] = gv_sub(gv_add(fn[k], gv_c(SV_EXP_RND)), gv_c(SV_EXP_RND));
    GV_EACH(k) r[k] = gv_sub(ac[k], gv_mul(fn[k], gv_c(SV_EXP_LN2_HI)));
    GV_EACH(k) r[k] = gv_sub(r[k], gv_mul(fn[k], gv_c(SV_EXP_LN2_LO_NEG)));
    GV_EACH(k) r[k] = GV_PLUS_B(r[k], k);
    GV_EACH(k) p[k] = gv_step(gv_c(SV_EXP_P0), r[k], SV_EXP_P1);
    GV_EACH(k) p[k] = gv_step(p[k], r[k], SV_EXP_P2);
    GV_EACH(k) p[k] = gv_step(p[k], r[k], SV_EXP_P3);
    GV_EACH(k) p[k] = gv_step(p[k], r[k], SV_EXP_P4);
    GV_EACH(k) p[k] = gv_step(p[k], r[k], SV_EXP_P5);
    GV_EACH(k) p[k] = gv_add(gv_add(gv_mul(gv_mul(p[k], r[k]), r[k]), r[k]), gv_c(1.0f));
    GV_EACH(k) {
        __mmask16 keep = _mm512_cmp_ps_mask(GV_PLUS_B(a[k], k), lo, _CMP_NLT_UQ); /* !(a + b < lo) */
        out[k] = _mm512_maskz_scalef_ps(keep, p[k], fn[k]);
    }
#undef GV_PLUS_B
}

/* sv_two_phi(x, gauss) per lane; `gauss` NULL or receives exp(-x^2/2). One exact rewrite:
 * 0.5 * (ax * c) is computed as ax * (0.5 c): both are exactly half of ax * c wherever that is
 * normal, and where it is not (ax < 2^-124) 1 + either is 1, so t is the same. */
static inline __attribute__((always_inline)) void gv_two_phi(int w, __m512 *out, const __m512 *x, __m512 *gauss) {
    __m512 ax[GV_WMAX], t[GV_WMAX], p[GV_WMAX], h[GV_WMAX], l[GV_WMAX], a[GV_WMAX], ac[GV_WMAX], s[GV_WMAX];
    __m512 e[GV_WMAX];
    GV_EACH(k) ax[k] = _mm512_min_ps(gv_and(x[k], 0x7fffffffu), gv_c(SV_ERFC_AX_MAX)); /* NaN -> max */
    GV_EACH(k) t[k] = gv_add(gv_c(1.0f), gv_mul(ax[k], gv_c(0.5f * SV_RSQRT2)));
    GV_EACH(k) t[k] = _mm512_div_ps(gv_c(1.0f), t[k]);
    GV_EACH(k) h[k] = gv_and(ax[k], SV_SPLIT12_MASK);
    GV_EACH(k) l[k] = gv_sub(ax[k], h[k]);
    GV_EACH(k) a[k] = gv_mul(gv_c(-0.5f), gv_mul(h[k], h[k]));
    GV_EACH(k) ac[k] = _mm512_max_ps(gv_c(SV_EXP_LO), a[k]); /* sv_exp2_parts: a < lo ? lo : a */
    GV_EACH(k) s[k] = gv_add(gv_mul(h[k], l[k]), gv_mul(gv_c(0.5f), gv_mul(l[k], l[k]))); /* corr = -s */
    /* exp(a + corr) first: it does not wait for the division, so it fills the ports meanwhile */
    if (gauss) gv_exp2_parts(w, 1, gauss, a, ac, s);
    GV_EACH(k) p[k] = gv_step(gv_c(SV_ERFC_C9), t[k], SV_ERFC_C8);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C7);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C6);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C5);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C4);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C3);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C2);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C1);
    GV_EACH(k) p[k] = gv_step(p[k], t[k], SV_ERFC_C0);
    GV_EACH(k) p[k] = gv_sub(p[k], s[k]); /* p + corr */
    gv_exp2_parts(w, 0, e, a, ac, p);
    GV_EACH(k) {
        __m512 erfc_z = gv_mul(t[k], e[k]);
        __mmask16 ge = _mm512_cmp_ps_mask(x[k], _mm512_setzero_ps(), _CMP_GE_OQ); /* x >= 0 */
        out[k] = _mm512_mask_sub_ps(erfc_z, ge, gv_c(2.0f), erfc_z);
    }
}

/* The loops: w blocks per step; the last, partial step under lane masks (lanes outside a mask
 * are neither read nor written). `w` and `bf` are compile-time constants at each call. */
#define GV_LOOP(w, n, STEP) \
    do { \
        size_t i_ = 0; \
        __mmask16 m_[GV_WMAX]; \
        GV_EACH(k) m_[k] = 0xffff; \
        for (; i_ + 16 * (size_t)(w) <= (n); i_ += 16 * (size_t)(w)) STEP(i_, m_); \
        if (i_ < (n)) { \
            gv_masks(w, m_, i_, n); \
            STEP(i_, m_); \
        } \
    } while (0)

static inline __attribute__((always_inline)) void gv_gelu_step(int w, int bf, float *out, const float *x,
                                                               const __mmask16 *m) {
    __m512 v[GV_WMAX], tp[GV_WMAX];
    GV_EACH(k) v[k] = _mm512_maskz_loadu_ps(m[k], x + 16 * k);
    gv_two_phi(w, tp, v, NULL);
    GV_EACH(k) {
        __m512 g = gv_mul(gv_mul(gv_c(0.5f), v[k]), tp[k]); /* sv_gelu */
        _mm512_mask_storeu_ps(out + 16 * k, m[k], gv_store_val(bf, g));
    }
}

/* sv_gelu_grad per lane of w blocks: gr = 0.5 two_phi(v) + v (RSQRT2PI gauss(v)) */
static inline __attribute__((always_inline)) void gv_gelu_grad(int w, __m512 *gr, const __m512 *v) {
    __m512 tp[GV_WMAX], g[GV_WMAX];
    gv_two_phi(w, tp, v, g);
    GV_EACH(k) gr[k] = gv_add(gv_mul(gv_c(0.5f), tp[k]), gv_mul(v[k], gv_mul(gv_c(SV_RSQRT2PI), g[k])));
}

static inline __attribute__((always_inline)) void gv_gelu_bwd_step(int w, int bf, float *d_x, const float *d_out,
                                                                   const float *x, const __mmask16 *m) {
    __m512 v[GV_WMAX], gr[GV_WMAX];
    GV_EACH(k) v[k] = _mm512_maskz_loadu_ps(m[k], x + 16 * k);
    gv_gelu_grad(w, gr, v);
    GV_EACH(k) {
        __m512 d = _mm512_maskz_loadu_ps(m[k], d_out + 16 * k);
        _mm512_mask_storeu_ps(d_x + 16 * k, m[k], gv_store_val(bf, gv_mul(d, gr[k])));
    }
}

static inline __attribute__((always_inline)) void gv_bias_gelu_step(int w, int bf, float *o, float *pre,
                                                                    const float *bias, const __mmask16 *m) {
    __m512 z[GV_WMAX], tp[GV_WMAX];
    GV_EACH(k) {
        z[k] = _mm512_maskz_loadu_ps(m[k], o + 16 * k);
        if (bias) z[k] = gv_add(z[k], _mm512_maskz_loadu_ps(m[k], bias + 16 * k));
        _mm512_mask_storeu_ps(pre + 16 * k, m[k], gv_store_val(bf, z[k]));
    }
    gv_two_phi(w, tp, z, NULL);
    GV_EACH(k) {
        __m512 g = gv_mul(gv_mul(gv_c(0.5f), z[k]), tp[k]); /* sv_gelu */
        _mm512_mask_storeu_ps(o + 16 * k, m[k], gv_store_val(bf, g));
    }
}

/* sv_f32_to_bf16 per lane: the upper halves of gv_round_bf16 (NaN: (u >> 16) | 0x40) */
static inline __m256i gv_bf16_bits(__m512 v) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(gv_round_bf16(v)), 16));
}

/* gv_bias_gelu_step with bf = 0, its two outputs narrowed to bf16 in registers */
static inline __attribute__((always_inline)) void gv_bias_gelu_narrow_step(int w, uint16_t *out16, uint16_t *pre16,
                                                                           const float *o, const float *bias,
                                                                           const __mmask16 *m) {
    __m512 z[GV_WMAX], tp[GV_WMAX];
    GV_EACH(k) {
        z[k] = _mm512_maskz_loadu_ps(m[k], o + 16 * k);
        if (bias) z[k] = gv_add(z[k], _mm512_maskz_loadu_ps(m[k], bias + 16 * k));
        _mm256_mask_storeu_epi16(pre16 + 16 * k, m[k], gv_bf16_bits(z[k]));
    }
    gv_two_phi(w, tp, z, NULL);
    GV_EACH(k) {
        __m512 g = gv_mul(gv_mul(gv_c(0.5f), z[k]), tp[k]); /* sv_gelu */
        _mm256_mask_storeu_epi16(out16 + 16 * k, m[k], gv_bf16_bits(g));
    }
}

/* bf16 lanes to fp32 (exact) */
static inline __m512 gv_widen16(__mmask16 m, const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

/* k_gelu_bwd16 on w blocks: gv_gelu_bwd_step with bf = 1 on the widened rows, the result
 * narrowed in registers (it is a bf16 value already: the upper halves are its bits) and added
 * into db. gelu'(x) is computed (gather = 0) or gathered from grad16, the table of every bf16
 * value (gather = 1; gelu_grad16.h: the same bits as computing it). */
static inline __attribute__((always_inline)) void gv_gelu_bwd16_step(int w, int gather, uint16_t *d16,
                                                                     const uint16_t *x16, float *db,
                                                                     const float *grad16, const __mmask16 *m) {
    __m512 r[GV_WMAX];
    GV_EACH(k) r[k] = gv_widen16(m[k], d16 + 16 * k);
    if (x16) {
        __m512 gr[GV_WMAX];
        if (gather) {
            GV_EACH(k) {
                __m512i ix = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m[k], x16 + 16 * k));
                gr[k] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m[k], ix, grad16, 4);
            }
        } else {
            __m512 v[GV_WMAX];
            GV_EACH(k) v[k] = gv_widen16(m[k], x16 + 16 * k);
            gv_gelu_grad(w, gr, v);
        }
        GV_EACH(k) {
            r[k] = gv_store_val(1, gv_mul(r[k], gr[k]));
            _mm256_mask_storeu_epi16(d16 + 16 * k, m[k],
                                     _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(r[k]), 16)));
        }
    }
    if (db) GV_EACH(k) _mm512_mask_storeu_ps(db + 16 * k, m[k], gv_add(_mm512_maskz_loadu_ps(m[k], db + 16 * k), r[k]));
}

static inline __attribute__((always_inline)) void gv_gelu_loop(int w, int bf, float *out, const float *x, size_t n) {
#define GV_S(i, m) gv_gelu_step(w, bf, out + (i), x + (i), m)
    GV_LOOP(w, n, GV_S);
#undef GV_S
}

static inline __attribute__((always_inline)) void gv_gelu_bwd_loop(int w, int bf, float *d_x, const float *d_out,
                                                                   const float *x, size_t n) {
#define GV_S(i, m) gv_gelu_bwd_step(w, bf, d_x + (i), d_out + (i), x + (i), m)
    GV_LOOP(w, n, GV_S);
#undef GV_S
}

static inline __attribute__((always_inline)) void gv_bias_gelu_loop(int w, int bf, float *o, float *pre,
                                                                    const float *bias, size_t n) {
#define GV_S(i, m) gv_bias_gelu_step(w, bf, o + (i), pre + (i), bias ? bias + (i) : NULL, m)
    GV_LOOP(w, n, GV_S);
#undef GV_S
}

static inline __attribute__((always_inline)) void
gv_bias_gelu_narrow_loop(int w, uint16_t *out16, uint16_t *pre16, const float *o, const float *bias, size_t n) {
#define GV_S(i, m) gv_bias_gelu_narrow_step(w, out16 + (i), pre16 + (i), o + (i), bias ? bias + (i) : NULL, m)
    GV_LOOP(w, n, GV_S);
#undef GV_S
}

static void k_bias_gelu_narrow(uint16_t *out16, uint16_t *pre16, const float *o, const float *bias, size_t n) {
    gv_bias_gelu_narrow_loop(GV_W_FWD, out16, pre16, o, bias, n);
}

static void k_gelu(int bf, float *out, const float *x, size_t n) {
    if (bf)
        gv_gelu_loop(GV_W_FWD, 1, out, x, n);
    else
        gv_gelu_loop(GV_W_FWD, 0, out, x, n);
}

static void k_gelu_bwd(int bf, float *d_x, const float *d_out, const float *x, size_t n) {
    if (bf)
        gv_gelu_bwd_loop(GV_W_BWD, 1, d_x, d_out, x, n);
    else
        gv_gelu_bwd_loop(GV_W_BWD, 0, d_x, d_out, x, n);
}

static inline __attribute__((always_inline)) void
gv_gelu_bwd16_loop(int w, int gather, uint16_t *d16, const uint16_t *x16, float *db, const float *grad16, size_t n) {
#define GV_S(i, m) gv_gelu_bwd16_step(w, gather, d16 + (i), x16 ? x16 + (i) : NULL, db ? db + (i) : NULL, grad16, m)
    GV_LOOP(w, n, GV_S);
#undef GV_S
}

/* The table where this CPU gathers faster than it computes (sv_cpu_gelu_bwd16_gather) */
static void k_gelu_bwd16(uint16_t *d16, const uint16_t *x16, float *db, size_t n) {
    if (x16 && sv_cpu_gelu_bwd16_gather())
        gv_gelu_bwd16_loop(GV_W_BWD, 1, d16, x16, db, sv_cpu_gelu_grad16(), n);
    else
        gv_gelu_bwd16_loop(GV_W_BWD, 0, d16, x16, db, NULL, n);
}

static void k_bias_gelu(int bf, float *o, float *pre, const float *bias, size_t n) {
    if (bf)
        gv_bias_gelu_loop(GV_W_FWD, 1, o, pre, bias, n);
    else
        gv_bias_gelu_loop(GV_W_FWD, 0, o, pre, bias, n);
}

#endif
