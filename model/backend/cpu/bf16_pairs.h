/* CPU backend: fp32 -> bf16 pair conversion for packing GEMM operands (VCVTNE2PS2BF16 /
 * VCVTNEPS2BF16, round to nearest even, denormals flushed). Internal to gemm_bf16.c and
 * gemm_amx.c: include it only after `#pragma GCC target` enabled AVX-512 F/BW/VL + BF16, and
 * call it only where the CPU has them. A "pair" is one 32-bit word holding two consecutive
 * reduction elements (the even one in the low half), as VDPBF16PS and TDPBF16PS consume them. */
#ifndef SV_MODEL_BACKEND_CPU_BF16_PAIRS_H
#define SV_MODEL_BACKEND_CPU_BF16_PAIRS_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "model/backend/cpu/gemm_engine.h"

static inline __mmask16 mask16(long cnt) {
    return cnt >= 16 ? (__mmask16)0xFFFF : cnt <= 0 ? (__mmask16)0 : (__mmask16)((1u << cnt) - 1u);
}

/* 16 pairs of consecutive floats p[0..31] (the first `cnt` floats valid, the rest read as 0)
 * -> 16 dwords, each (bf16 of the even element) | (bf16 of the odd element) << 16. */
static inline __m512i pairs16_contig(const float *p, long cnt) {
    __m512 lo = _mm512_maskz_loadu_ps(mask16(cnt), p);
    __m512 hi = _mm512_maskz_loadu_ps(mask16(cnt - 16), p + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* 16 dwords from two rows of 16 floats (each with `cnt` valid entries): row0's bf16 in the
 * low half, row1's (or zeros when row1 is NULL) in the high half. */
static inline __m512i pairs16_rows(const float *row0, const float *row1, long cnt) {
    __mmask16 k = mask16(cnt);
    __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, row0)));
    if (!row1) return lo;
    __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, row1)));
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* The same from bf16 storage: 32 consecutive bf16 (the first `cnt` valid) are 16 pairs as
 * they lie in memory. */
static inline __m512i pairs16_contig_h(const uint16_t *p, long cnt) {
    __mmask32 k = cnt >= 32 ? (__mmask32)0xFFFFFFFFu : cnt <= 0 ? (__mmask32)0 : (__mmask32)((1u << cnt) - 1u);
    return _mm512_maskz_loadu_epi16(k, p);
}
static inline __m512i pairs16_rows_h(const uint16_t *row0, const uint16_t *row1, long cnt) {
    __mmask16 k = mask16(cnt);
    __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, row0));
    if (!row1) return lo;
    __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, row1));
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* On an operand view (gemm_engine.h, fp32 or bf16 storage) at element offset `off`:
 * pairs16_contig, and pairs16_rows of the rows at off and (when row1) off + M->ld. */
static inline __m512i pairs16_at(const sv_gemm_mat *M, size_t off, long cnt) {
    return M->h ? pairs16_contig_h(M->h + off, cnt) : pairs16_contig(M->p + off, cnt);
}
static inline __m512i pairs16_rows_at(const sv_gemm_mat *M, size_t off, int row1, long cnt) {
    if (M->h) return pairs16_rows_h(M->h + off, row1 ? M->h + off + M->ld : NULL, cnt);
    return pairs16_rows(M->p + off, row1 ? M->p + off + M->ld : NULL, cnt);
}

/* 16 x 16 transpose of 32-bit words: on return r[j] holds column j of the input rows. */
static inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* now 4 x 4 blocks transposed inside each 128-bit lane */
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) { /* the 4 x 4 transpose of 128-bit lanes */
        __m512i x0 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x44), x1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xEE);
        __m512i y0 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x44);
        __m512i y1 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xEE);
        t[c] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        t[4 + c] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        t[8 + c] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        t[12 + c] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

#endif
