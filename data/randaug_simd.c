/* The pixel kernels of RandAugment at each level (contract: data/randaug_simd.h). */
#include "data/randaug_simd.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- scalar (any CPU) ---- */

static void lut_scalar(uint8_t *img, size_t npx, int c, const uint8_t lut[][256]) {
    int shared = 1;
    for (int ch = 1; ch < c; ch++) shared &= !memcmp(lut[0], lut[ch], 256);
    if (shared) { /* one flat pass over every byte */
        const uint8_t *t = lut[0];
        size_t n = npx * (size_t)c;
        for (size_t e = 0; e < n; e++) img[e] = t[img[e]];
    } else if (c == 3) {
        for (size_t p = 0; p < npx; p++, img += 3) {
            img[0] = lut[0][img[0]];
            img[1] = lut[1][img[1]];
            img[2] = lut[2][img[2]];
        }
    } else {
        for (size_t p = 0; p < npx; p++)
            for (int ch = 0; ch < c; ch++) img[p * (size_t)c + (size_t)ch] = lut[ch][img[p * (size_t)c + (size_t)ch]];
    }
}

/* Pillow's blend of one byte: the float clipped to [0, 255] before truncation, which is the
 * truncation of the in-range value and the clip of the out-of-range one alike. */
static inline uint8_t blend1(int a, int b, float alpha) {
    float t = (float)a + alpha * (float)(b - a);
    t = t < 0.0f ? 0.0f : t;
    t = t > 255.0f ? 255.0f : t;
    return (uint8_t)(int)t;
}

static void blend_buf_scalar(uint8_t *img, const uint8_t *deg, size_t n, float alpha) {
    for (size_t e = 0; e < n; e++) img[e] = blend1(deg[e], img[e], alpha);
}

static void blend_const_scalar(uint8_t *img, uint8_t a, size_t n, float alpha) {
    for (size_t e = 0; e < n; e++) img[e] = blend1(a, img[e], alpha);
}

static inline uint32_t luma1(const uint8_t *p) {
    return (p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16;
}

static void luma3_scalar(const uint8_t *rgb, uint8_t *out, size_t npx) {
    for (size_t p = 0; p < npx; p++) {
        uint8_t l = (uint8_t)luma1(rgb + 3 * p);
        out[3 * p] = out[3 * p + 1] = out[3 * p + 2] = l;
    }
}

static uint64_t luma_sum_scalar(const uint8_t *rgb, size_t npx) {
    uint64_t s = 0;
    for (size_t p = 0; p < npx; p++) s += luma1(rgb + 3 * p);
    return s;
}

/* Elements [e0, e1) of interior row y. */
static void smooth_span(const uint8_t *img, uint8_t *out, ptrdiff_t R, ptrdiff_t C, int y, ptrdiff_t e0, ptrdiff_t e1) {
    for (ptrdiff_t e = e0; e < e1; e++) {
        const uint8_t *q = img + y * R + e;
        int s = q[-R - C] + q[-R] + q[-R + C] + q[-C] + 5 * q[0] + q[C] + q[R - C] + q[R] + q[R + C];
        out[y * R + e] = (uint8_t)((s + 6) / 13);
    }
}

static void smooth_scalar(const uint8_t *img, uint8_t *out, int side, int c) {
    ptrdiff_t R = (ptrdiff_t)side * c, C = c;
    for (int y = 1; y < side - 1; y++) smooth_span(img, out, R, C, y, C, R - C);
}

static void gather_scalar(const uint8_t *src, int side, int c, int32_t xx, int32_t yy, int32_t a0, int32_t a3,
                          uint8_t *out, int len) {
    if (c == 3)
        for (int x = 0; x < len; x++, xx += a0, yy += a3, out += 3) {
            const uint8_t *sp = src + ((size_t)(yy >> 16) * (size_t)side + (size_t)(xx >> 16)) * 3;
            out[0] = sp[0];
            out[1] = sp[1];
            out[2] = sp[2];
        }
    else
        for (int x = 0; x < len; x++, xx += a0, yy += a3, out += c) {
            const uint8_t *sp = src + ((size_t)(yy >> 16) * (size_t)side + (size_t)(xx >> 16)) * (size_t)c;
            for (int ch = 0; ch < c; ch++) out[ch] = sp[ch];
        }
}

static const sv_ra_kernels k_scalar = {lut_scalar,      blend_buf_scalar, blend_const_scalar, luma3_scalar,
                                       luma_sum_scalar, smooth_scalar,    gather_scalar};

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SV_RA_HAVE_X86 1

/* (s + 6) / 13 for s <= 13 * 255 as the high half of (s + 6) * 5042 (exact on that range). */
enum { DIV13_MUL = 5042 };

/* ---- AVX2 ---- */

/* Blend of 8 bytes (b: image, a: degenerate) to 8 int32 in [0, 255]. */
__attribute__((target("avx2"))) static inline __m256i blend8_avx2(__m128i b8, __m128i a8, __m256 alpha) {
    const __m256i b = _mm256_cvtepu8_epi32(b8), a = _mm256_cvtepu8_epi32(a8);
    __m256 t = _mm256_add_ps(_mm256_cvtepi32_ps(a), _mm256_mul_ps(alpha, _mm256_cvtepi32_ps(_mm256_sub_epi32(b, a))));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    return _mm256_cvttps_epi32(t);
}

/* 32 bytes: deg_stride 1 reads deg[0..31], 0 the constant in a8 (broadcast). */
__attribute__((target("avx2"))) static inline __m256i blend32_avx2(const uint8_t *img, const uint8_t *deg, __m128i a8,
                                                                   __m256 alpha) {
    __m256i r[4];
    for (int k = 0; k < 4; k++) {
        __m128i b8 = _mm_loadl_epi64((const __m128i *)(img + 8 * k));
        r[k] = blend8_avx2(b8, deg ? _mm_loadl_epi64((const __m128i *)(deg + 8 * k)) : a8, alpha);
    }
    __m256i p = _mm256_packus_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

__attribute__((target("avx2"))) static void blend_buf_avx2(uint8_t *img, const uint8_t *deg, size_t n, float alpha) {
    const __m256 al = _mm256_set1_ps(alpha);
    size_t e = 0;
    for (; e + 32 <= n; e += 32)
        _mm256_storeu_si256((__m256i *)(img + e), blend32_avx2(img + e, deg + e, _mm_setzero_si128(), al));
    blend_buf_scalar(img + e, deg + e, n - e, alpha);
}

__attribute__((target("avx2"))) static void blend_const_avx2(uint8_t *img, uint8_t a, size_t n, float alpha) {
    const __m256 al = _mm256_set1_ps(alpha);
    const __m128i a8 = _mm_set1_epi8((char)a);
    size_t e = 0;
    for (; e + 32 <= n; e += 32) _mm256_storeu_si256((__m256i *)(img + e), blend32_avx2(img + e, NULL, a8, al));
    blend_const_scalar(img + e, a, n - e, alpha);
}

/* Luma of 8 RGB pixels (24 bytes at q) as 8 int32. */
__attribute__((target("avx2"))) static inline __m256i luma8_avx2(const uint8_t *q) {
    const __m128i lo = _mm_loadu_si128((const __m128i *)q), hi = _mm_loadl_epi64((const __m128i *)(q + 16));
    const __m128i lo_r = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                  lo_g = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                  lo_b = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                  hi_r = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1),
                  hi_g = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1),
                  hi_b = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1);
    __m256i r = _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, lo_r), _mm_shuffle_epi8(hi, hi_r)));
    __m256i g = _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, lo_g), _mm_shuffle_epi8(hi, hi_g)));
    __m256i b = _mm256_cvtepu8_epi32(_mm_or_si128(_mm_shuffle_epi8(lo, lo_b), _mm_shuffle_epi8(hi, hi_b)));
    __m256i s = _mm256_add_epi32(_mm256_mullo_epi32(r, _mm256_set1_epi32(19595)),
                                 _mm256_mullo_epi32(g, _mm256_set1_epi32(38470)));
    s = _mm256_add_epi32(s,
                         _mm256_add_epi32(_mm256_mullo_epi32(b, _mm256_set1_epi32(7471)), _mm256_set1_epi32(0x8000)));
    return _mm256_srli_epi32(s, 16);
}

__attribute__((target("avx2"))) static void luma3_avx2(const uint8_t *rgb, uint8_t *out, size_t npx) {
    const __m128i pick = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i ex_lo = _mm_setr_epi8(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5),
                  ex_hi = _mm_setr_epi8(5, 5, 6, 6, 6, 7, 7, 7, -1, -1, -1, -1, -1, -1, -1, -1);
    size_t p = 0;
    for (; p + 8 <= npx; p += 8) {
        __m256i y = luma8_avx2(rgb + 3 * p);
        __m128i y8 = _mm_unpacklo_epi32(_mm_shuffle_epi8(_mm256_castsi256_si128(y), pick),
                                        _mm_shuffle_epi8(_mm256_extracti128_si256(y, 1), pick));
        _mm_storeu_si128((__m128i *)(out + 3 * p), _mm_shuffle_epi8(y8, ex_lo));
        _mm_storel_epi64((__m128i *)(out + 3 * p + 16), _mm_shuffle_epi8(y8, ex_hi));
    }
    luma3_scalar(rgb + 3 * p, out + 3 * p, npx - p);
}

__attribute__((target("avx2"))) static uint64_t luma_sum_avx2(const uint8_t *rgb, size_t npx) {
    uint64_t total = 0;
    size_t p = 0;
    while (p + 8 <= npx) {
        __m256i acc = _mm256_setzero_si256(); /* at most 2^20 values of 255 per lane */
        for (size_t k = 0; k < (1u << 20) && p + 8 <= npx; k++, p += 8)
            acc = _mm256_add_epi32(acc, luma8_avx2(rgb + 3 * p));
        uint32_t v[8];
        _mm256_storeu_si256((__m256i *)v, acc);
        for (int i = 0; i < 8; i++) total += v[i];
    }
    return total + luma_sum_scalar(rgb + 3 * p, npx - p);
}

/* The 3x3 sum of 16 elements at q (row stride R, pixel stride C) as 16-bit lanes, then / 13. */
__attribute__((target("avx2"))) static inline __m128i smooth16_avx2(const uint8_t *q, ptrdiff_t R, ptrdiff_t C) {
#define SV_L(off) _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(q + (off))))
    const __m256i mid = SV_L(0);
    __m256i s = _mm256_add_epi16(_mm256_add_epi16(SV_L(-R - C), SV_L(-R)), _mm256_add_epi16(SV_L(-R + C), SV_L(-C)));
    s = _mm256_add_epi16(
        s, _mm256_add_epi16(_mm256_add_epi16(SV_L(C), SV_L(R - C)), _mm256_add_epi16(SV_L(R), SV_L(R + C))));
#undef SV_L
    s = _mm256_add_epi16(s, _mm256_add_epi16(_mm256_slli_epi16(mid, 2), mid));
    s = _mm256_mulhi_epu16(_mm256_add_epi16(s, _mm256_set1_epi16(6)), _mm256_set1_epi16(DIV13_MUL));
    return _mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

__attribute__((target("avx2"))) static void smooth_avx2(const uint8_t *img, uint8_t *out, int side, int c) {
    const ptrdiff_t R = (ptrdiff_t)side * c, C = c;
    for (int y = 1; y < side - 1; y++) {
        ptrdiff_t e = C;
        for (; e + 16 <= R - C; e += 16)
            _mm_storeu_si128((__m128i *)(out + y * R + e), smooth16_avx2(img + y * R + e, R, C));
        smooth_span(img, out, R, C, y, e, R - C);
    }
}

static const sv_ra_kernels k_avx2 = {lut_scalar,    blend_buf_avx2, blend_const_avx2, luma3_avx2,
                                     luma_sum_avx2, smooth_avx2,    gather_scalar};

/* ---- AVX-512 (F, BW, VL, VBMI) ---- */
#define SV_RA_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

/* 256-entry lookup of 64 bytes: two VPERMI2B over 128 entries each, picked by the top bit. */
SV_RA_T512 static inline __m512i lut64(__m512i v, const __m512i t[4]) {
    const __m512i lo = _mm512_permutex2var_epi8(t[0], v, t[1]), hi = _mm512_permutex2var_epi8(t[2], v, t[3]);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}

SV_RA_T512 static void lut_avx512(uint8_t *img, size_t npx, int c, const uint8_t lut[][256]) {
    int shared = 1;
    for (int ch = 1; ch < c; ch++) shared &= !memcmp(lut[0], lut[ch], 256);
    if (!shared && c != 3) {
        lut_scalar(img, npx, c, lut);
        return;
    }
    const int nt = shared ? 1 : 3;
    __m512i t[3][4];
    for (int k = 0; k < nt; k++)
        for (int q = 0; q < 4; q++) t[k][q] = _mm512_loadu_si512(lut[k] + 64 * q);
    /* channel masks of a 64-byte block starting at channel ph: byte j is channel (ph + j) % 3 */
    __mmask64 m1[3], m2[3];
    for (int ph = 0; ph < 3; ph++) {
        uint64_t a = 0, b = 0;
        for (int j = 0; j < 64; j++) {
            a |= (uint64_t)((ph + j) % 3 == 1) << j;
            b |= (uint64_t)((ph + j) % 3 == 2) << j;
        }
        m1[ph] = a;
        m2[ph] = b;
    }
    const size_t n = npx * (size_t)c;
    int ph = 0;
    for (size_t e = 0; e < n; e += 64, ph = ph == 2 ? 0 : ph + 1) {
        const __mmask64 lm = n - e >= 64 ? ~0ULL : (1ULL << (n - e)) - 1;
        const __m512i v = _mm512_maskz_loadu_epi8(lm, img + e);
        __m512i r = lut64(v, t[0]);
        if (nt == 3) {
            r = _mm512_mask_blend_epi8(m1[ph], r, lut64(v, t[1]));
            r = _mm512_mask_blend_epi8(m2[ph], r, lut64(v, t[2]));
        }
        _mm512_mask_storeu_epi8(img + e, lm, r);
    }
}

/* Blend of 16 bytes to 16 bytes. */
SV_RA_T512 static inline __m128i blend16_avx512(__m128i b8, __m128i a8, __m512 alpha) {
    const __m512i b = _mm512_cvtepu8_epi32(b8), a = _mm512_cvtepu8_epi32(a8);
    __m512 t = _mm512_add_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(alpha, _mm512_cvtepi32_ps(_mm512_sub_epi32(b, a))));
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(t));
}

SV_RA_T512 static void blend_buf_avx512(uint8_t *img, const uint8_t *deg, size_t n, float alpha) {
    const __m512 al = _mm512_set1_ps(alpha);
    size_t e = 0;
    for (; e + 16 <= n; e += 16)
        _mm_storeu_si128((__m128i *)(img + e),
                         blend16_avx512(_mm_loadu_si128((const __m128i *)(img + e)),
                                        _mm_loadu_si128((const __m128i *)(deg + e)), al));
    if (e < n) {
        const __mmask16 m = (__mmask16)((1u << (n - e)) - 1);
        _mm_mask_storeu_epi8(img + e, m,
                             blend16_avx512(_mm_maskz_loadu_epi8(m, img + e), _mm_maskz_loadu_epi8(m, deg + e), al));
    }
}

SV_RA_T512 static void blend_const_avx512(uint8_t *img, uint8_t a, size_t n, float alpha) {
    const __m512 al = _mm512_set1_ps(alpha);
    const __m128i a8 = _mm_set1_epi8((char)a);
    size_t e = 0;
    for (; e + 16 <= n; e += 16)
        _mm_storeu_si128((__m128i *)(img + e), blend16_avx512(_mm_loadu_si128((const __m128i *)(img + e)), a8, al));
    if (e < n) {
        const __mmask16 m = (__mmask16)((1u << (n - e)) - 1);
        _mm_mask_storeu_epi8(img + e, m, blend16_avx512(_mm_maskz_loadu_epi8(m, img + e), a8, al));
    }
}

/* Luma of the (at most 16) RGB pixels of win (3 bytes each from byte 0) as 16 int32: each
 * channel's bytes moved to the low byte of its pixel's lane by one VPERMB. */
SV_RA_T512 static inline __m512i luma16_avx512(__m512i win) {
#define SV_I(ch) \
    3 * 0 + ch, 0, 0, 0, 3 * 1 + ch, 0, 0, 0, 3 * 2 + ch, 0, 0, 0, 3 * 3 + ch, 0, 0, 0, 3 * 4 + ch, 0, 0, 0, \
        3 * 5 + ch, 0, 0, 0, 3 * 6 + ch, 0, 0, 0, 3 * 7 + ch, 0, 0, 0, 3 * 8 + ch, 0, 0, 0, 3 * 9 + ch, 0, 0, 0, \
        3 * 10 + ch, 0, 0, 0, 3 * 11 + ch, 0, 0, 0, 3 * 12 + ch, 0, 0, 0, 3 * 13 + ch, 0, 0, 0, 3 * 14 + ch, 0, 0, 0, \
        3 * 15 + ch, 0, 0, 0
    static const uint8_t ir[64] = {SV_I(0)}, ig[64] = {SV_I(1)}, ib[64] = {SV_I(2)};
#undef SV_I
    const __mmask64 low = 0x1111111111111111ULL;
    const __m512i r = _mm512_maskz_permutexvar_epi8(low, _mm512_loadu_si512(ir), win),
                  g = _mm512_maskz_permutexvar_epi8(low, _mm512_loadu_si512(ig), win),
                  b = _mm512_maskz_permutexvar_epi8(low, _mm512_loadu_si512(ib), win);
    __m512i s = _mm512_add_epi32(_mm512_mullo_epi32(r, _mm512_set1_epi32(19595)),
                                 _mm512_mullo_epi32(g, _mm512_set1_epi32(38470)));
    s = _mm512_add_epi32(s,
                         _mm512_add_epi32(_mm512_mullo_epi32(b, _mm512_set1_epi32(7471)), _mm512_set1_epi32(0x8000)));
    return _mm512_srli_epi32(s, 16);
}

SV_RA_T512 static void luma3_avx512(const uint8_t *rgb, uint8_t *out, size_t npx) {
    static const uint8_t ie[64] = {0,  0,  0,  4,  4,  4,  8,  8,  8,  12, 12, 12, 16, 16, 16, 20,
                                   20, 20, 24, 24, 24, 28, 28, 28, 32, 32, 32, 36, 36, 36, 40, 40,
                                   40, 44, 44, 44, 48, 48, 48, 52, 52, 52, 56, 56, 56, 60, 60, 60};
    const __m512i expand = _mm512_loadu_si512(ie);
    for (size_t p = 0; p < npx; p += 16) {
        const size_t k = npx - p >= 16 ? 16 : npx - p;
        const __mmask64 m = (1ULL << (3 * k)) - 1;
        const __m512i y = luma16_avx512(_mm512_maskz_loadu_epi8(m, rgb + 3 * p));
        _mm512_mask_storeu_epi8(out + 3 * p, m, _mm512_permutexvar_epi8(expand, y));
    }
}

SV_RA_T512 static uint64_t luma_sum_avx512(const uint8_t *rgb, size_t npx) {
    uint64_t total = 0;
    size_t p = 0;
    while (p < npx) {
        __m512i acc = _mm512_setzero_si512(); /* at most 2^20 values of 255 per lane */
        for (size_t k = 0; k < (1u << 20) && p < npx; k++, p += 16) {
            const size_t np = npx - p >= 16 ? 16 : npx - p;
            const __mmask64 m = (1ULL << (3 * np)) - 1;
            const __mmask16 lanes = (__mmask16)((1u << np) - 1);
            acc = _mm512_mask_add_epi32(acc, lanes, acc, luma16_avx512(_mm512_maskz_loadu_epi8(m, rgb + 3 * p)));
        }
        total += (uint32_t)_mm512_reduce_add_epi32(acc);
    }
    return total;
}

/* The 3x3 sum of 32 elements (the first k of them loaded: mask m) as 16-bit lanes, then / 13. */
SV_RA_T512 static inline __m256i smooth32_avx512(const uint8_t *q, ptrdiff_t R, ptrdiff_t C, __mmask32 m) {
#define SV_L(off) _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, q + (off)))
    const __m512i mid = SV_L(0);
    __m512i s = _mm512_add_epi16(_mm512_add_epi16(SV_L(-R - C), SV_L(-R)), _mm512_add_epi16(SV_L(-R + C), SV_L(-C)));
    s = _mm512_add_epi16(
        s, _mm512_add_epi16(_mm512_add_epi16(SV_L(C), SV_L(R - C)), _mm512_add_epi16(SV_L(R), SV_L(R + C))));
#undef SV_L
    s = _mm512_add_epi16(s, _mm512_add_epi16(_mm512_slli_epi16(mid, 2), mid));
    s = _mm512_mulhi_epu16(_mm512_add_epi16(s, _mm512_set1_epi16(6)), _mm512_set1_epi16(DIV13_MUL));
    return _mm512_cvtepi16_epi8(s);
}

SV_RA_T512 static void smooth_avx512(const uint8_t *img, uint8_t *out, int side, int c) {
    const ptrdiff_t R = (ptrdiff_t)side * c, C = c;
    for (int y = 1; y < side - 1; y++)
        for (ptrdiff_t e = C; e < R - C; e += 32) {
            const __mmask32 m = R - C - e >= 32 ? ~0u : (1u << (R - C - e)) - 1;
            _mm256_mask_storeu_epi8(out + y * R + e, m, smooth32_avx512(img + y * R + e, R, C, m));
        }
}

/* 16 samples per VPGATHERDD of 4-byte words at each sample's first byte; a block whose last
 * word would reach past the image's last byte is left to the scalar loop. VPERMB keeps each
 * word's first c bytes. */
SV_RA_T512 static void gather_avx512(const uint8_t *src, int side, int c, int32_t xx, int32_t yy, int32_t a0,
                                     int32_t a3, uint8_t *out, int len) {
    if (c == 2) {
        gather_scalar(src, side, c, xx, yy, a0, a3, out, len);
        return;
    }
    static const uint8_t pack3[64] = {0,  1,  2,  4,  5,  6,  8,  9,  10, 12, 13, 14, 16, 17, 18, 20,
                                      21, 22, 24, 25, 26, 28, 29, 30, 32, 33, 34, 36, 37, 38, 40, 41,
                                      42, 44, 45, 46, 48, 49, 50, 52, 53, 54, 56, 57, 58, 60, 61, 62};
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i pk = _mm512_loadu_si512(pack3), vside = _mm512_set1_epi32(side);
    /* the steps as 32-bit words: wrapping, the sums used are exact */
    const __m512i dx = _mm512_set1_epi32((int32_t)((uint32_t)a0 * 16u)),
                  dy = _mm512_set1_epi32((int32_t)((uint32_t)a3 * 16u));
    __m512i vx = _mm512_add_epi32(_mm512_set1_epi32(xx), _mm512_mullo_epi32(lane, _mm512_set1_epi32(a0)));
    __m512i vy = _mm512_add_epi32(_mm512_set1_epi32(yy), _mm512_mullo_epi32(lane, _mm512_set1_epi32(a3)));
    const __m512i last = _mm512_set1_epi32((int32_t)((size_t)side * (size_t)side * (size_t)c) - 4);
    int x = 0;
    for (; x + 16 <= len; x += 16, vx = _mm512_add_epi32(vx, dx), vy = _mm512_add_epi32(vy, dy)) {
        __m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srai_epi32(vy, 16), vside), _mm512_srai_epi32(vx, 16));
        if (c == 3) idx = _mm512_add_epi32(idx, _mm512_add_epi32(idx, idx));
        if (_mm512_cmpgt_epi32_mask(idx, last)) {
            gather_scalar(src, side, c, (int32_t)((uint32_t)xx + (uint32_t)x * (uint32_t)a0),
                          (int32_t)((uint32_t)yy + (uint32_t)x * (uint32_t)a3), a0, a3, out + (size_t)x * (size_t)c,
                          16);
            continue;
        }
        const __m512i g = _mm512_i32gather_epi32(idx, (const void *)src, 1);
        if (c == 3)
            _mm512_mask_storeu_epi8(out + 3 * (size_t)x, (1ULL << 48) - 1, _mm512_permutexvar_epi8(pk, g));
        else
            _mm_storeu_si128((__m128i *)(out + x), _mm512_cvtepi32_epi8(g));
    }
    gather_scalar(src, side, c, (int32_t)((uint32_t)xx + (uint32_t)x * (uint32_t)a0),
                  (int32_t)((uint32_t)yy + (uint32_t)x * (uint32_t)a3), a0, a3, out + (size_t)x * (size_t)c, len - x);
}

static const sv_ra_kernels k_avx512 = {lut_avx512,      blend_buf_avx512, blend_const_avx512, luma3_avx512,
                                       luma_sum_avx512, smooth_avx512,    gather_avx512};
#endif

/* ---- dispatch ---- */

static const char *const k_isa_names[] = {"scalar", "avx2", "avx512"};

const char *sv_ra_isa_name(sv_ra_isa isa) { return (unsigned)isa < 3 ? k_isa_names[isa] : "?"; }

sv_ra_isa sv_ra_simd_best(void) {
#ifdef SV_RA_HAVE_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vbmi"))
        return SV_RA_ISA_AVX512;
    if (__builtin_cpu_supports("avx2")) return SV_RA_ISA_AVX2;
#endif
    return SV_RA_ISA_SCALAR;
}

static const sv_ra_kernels *kernels_of(sv_ra_isa isa) {
#ifdef SV_RA_HAVE_X86
    if (isa == SV_RA_ISA_AVX512) return &k_avx512;
    if (isa == SV_RA_ISA_AVX2) return &k_avx2;
#endif
    (void)isa;
    return &k_scalar;
}

static _Atomic(const sv_ra_kernels *) g_kernels;

sv_ra_isa sv_ra_simd_set_level(sv_ra_isa isa) {
    sv_ra_isa best = sv_ra_simd_best();
    if ((unsigned)isa > (unsigned)best) isa = best;
    atomic_store_explicit(&g_kernels, kernels_of(isa), memory_order_release);
    return isa;
}

const sv_ra_kernels *sv_ra_kernels_get(void) {
    const sv_ra_kernels *k = atomic_load_explicit(&g_kernels, memory_order_acquire);
    if (k) return k;
    k = kernels_of(sv_ra_simd_best());
    atomic_store_explicit(&g_kernels, k, memory_order_release);
    return k;
}
