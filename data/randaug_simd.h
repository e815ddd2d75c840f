/* shardvit data: the pixel kernels of RandAugment (data/randaug.c), internal.
 *
 * Every kernel gives the same bytes at every level (scalar, AVX2, AVX-512 with VBMI) as the
 * plain C of its definition below, for every input: the levels differ in speed only
 * (tests/data/test_data_randaug_fast.c checks them all against the original scalar code).
 * Buffers may be unaligned; nothing outside the ranges named is read or written. n counts
 * bytes, npx pixels. The level is the best the CPU has, or a lower one set with
 * sv_ra_simd_set_level (tests; the binary's SHARDVIT_RA_ISA=scalar|avx2|avx512, read by
 * app/env_overrides.c). */
#ifndef SV_DATA_RANDAUG_SIMD_H
#define SV_DATA_RANDAUG_SIMD_H

#include <stddef.h>
#include <stdint.h>

typedef enum { SV_RA_ISA_SCALAR = 0, SV_RA_ISA_AVX2, SV_RA_ISA_AVX512 } sv_ra_isa;

typedef struct sv_ra_kernels {
    /* img[e] = lut[e % c][img[e]] for e < npx * c (c = 1..3). */
    void (*lut)(uint8_t *img, size_t npx, int c, const uint8_t lut[][256]);
    /* img[e] = clip((float)a + alpha * (float)(img[e] - a)), a = deg[e] (blend_buf) or the constant
     * a (blend_const): the float result truncated toward zero and clipped to [0, 255], which is
     * Pillow's ImagingBlend for every alpha (inside [0, 1] the result never leaves [0, 255]).
     * Separate multiply and add, never fused. deg may equal img only if it is img itself. */
    void (*blend_buf)(uint8_t *img, const uint8_t *deg, size_t n, float alpha);
    void (*blend_const)(uint8_t *img, uint8_t a, size_t n, float alpha);
    /* out[3p..3p+2] = L(rgb + 3p), L = Pillow's convert("L") (r 19595 + g 38470 + b 7471 +
     * 0x8000) >> 16, for p < npx; out may equal rgb (in place), else must not overlap it. */
    void (*luma3)(const uint8_t *rgb, uint8_t *out, size_t npx);
    /* The sum of L over npx RGB pixels. */
    uint64_t (*luma_sum)(const uint8_t *rgb, size_t npx);
    /* Pillow's SMOOTH filter [1 1 1; 1 5 1; 1 1 1] / 13 ((s + 6) / 13) of the interior of the
     * (side, side, c) image img into out (same shape, not overlapping img); border pixels of
     * out are left as they are. */
    void (*smooth)(const uint8_t *img, uint8_t *out, int side, int c);
    /* Nearest-neighbour samples of one output row, Pillow's 16.16 fixed-point walk: for x < len,
     * out[x c + ch] = src[((yy_x >> 16) side + (xx_x >> 16)) c + ch] with xx_x = xx + x a0,
     * yy_x = yy + x a3, where the caller guarantees every (xx_x, yy_x) is exact in int32 and lies
     * inside the (side, side, c) image src (c = 1..3). */
    void (*gather)(const uint8_t *src, int side, int c, int32_t xx, int32_t yy, int32_t a0, int32_t a3, uint8_t *out,
                   int len);
} sv_ra_kernels;

/* The kernels of the current level. */
const sv_ra_kernels *sv_ra_kernels_get(void);

/* The best level this build and CPU can run. */
sv_ra_isa sv_ra_simd_best(void);

/* Use level isa from now on (clamped to sv_ra_simd_best()); returns the level set. Not thread
 * safe: for tests, before any worker runs. */
sv_ra_isa sv_ra_simd_set_level(sv_ra_isa isa);

const char *sv_ra_isa_name(sv_ra_isa isa);

#endif
