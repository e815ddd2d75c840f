/* shardvit core: checked 64-bit integer arithmetic for sizes that come from outside input.
 *
 * Every product or sum of shape dimensions, element counts, byte counts or offsets read from a
 * file header (safetensors, checkpoint index.json, IDX, tar, JPEG) goes through these, so a
 * value that would wrap modulo 2^64 is an error instead of a small, plausible number that then
 * passes the next consistency check. Each returns 1 and stores the exact result when it fits,
 * and returns 0 (leaving *out unspecified) when it does not. */
#ifndef SV_CORE_CHECKED_H
#define SV_CORE_CHECKED_H

#include <stddef.h>
#include <stdint.h>

/* a * b */
static inline int sv_mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* a + b */
static inline int sv_add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }

/* The product of n signed dimensions (a shape). 0 when any dimension is negative or the product
 * overflows 64 bits; n == 0 gives 1 (a scalar). */
static inline int sv_shape_numel(const int64_t *dims, size_t n, uint64_t *out) {
    uint64_t p = 1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0 || !sv_mul_u64(p, (uint64_t)dims[i], &p)) return 0;
    }
    *out = p;
    return 1;
}

/* a * b * c, e.g. width x height x channels of an image. */
static inline int sv_mul3_u64(uint64_t a, uint64_t b, uint64_t c, uint64_t *out) {
    uint64_t ab;
    return sv_mul_u64(a, b, &ab) && sv_mul_u64(ab, c, out);
}

/* 1 when n is the square of an integer, with that root in *root; else 0 (*root = floor(sqrt n)).
 * Exact for every 64-bit n (a pos_embed row count read from a file): integer bisection, no
 * float rounding, and no product overflows (the root is below 2^32). */
static inline int sv_exact_sqrt_u64(uint64_t n, uint64_t *root) {
    uint64_t lo = 0, hi = UINT32_MAX;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (mid * mid <= n)
            lo = mid;
        else
            hi = mid - 1;
    }
    *root = lo;
    return lo * lo == n;
}

#endif
