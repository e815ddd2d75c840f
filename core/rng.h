/* shardvit core: counter-based random numbers.
 *
 * Every random value in shardvit is a pure function of a key and a counter, never of a
 * mutable generator shared across threads, ranks or steps: parameter init uses
 * key = hash(seed, tensor name) and counter = element index, so a model initialised at any
 * world size (and on any thread layout) is bit-identical; augmentation uses
 * key = hash(seed, epoch, sample index). */
#ifndef SV_CORE_RNG_H
#define SV_CORE_RNG_H

#include <math.h>
#include <stdint.h>

#include "core/elementwise.h" /* sv_mix64, shared with the backends' mask kernels */

/* FNV-1a of a string, mixed: stable key for tensor names. */
static inline uint64_t sv_hash_str(uint64_t seed, const char *s) {
    uint64_t h = 0xcbf29ce484222325ull ^ sv_mix64(seed);
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return sv_mix64(h);
}

static inline uint64_t sv_hash2(uint64_t a, uint64_t b) { return sv_mix64(a ^ sv_mix64(b + 0x632be59bd9b4e019ull)); }

/* The i-th 64-bit value of stream `key`. */
static inline uint64_t sv_rand_u64(uint64_t key, uint64_t i) { return sv_mix64(key ^ sv_mix64(i)); }

/* Uniform in [0, 1) with 53 random bits. */
static inline double sv_rand_unit(uint64_t key, uint64_t i) {
    return (double)(sv_rand_u64(key, i) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in (0, 1]: safe for log(). */
static inline double sv_rand_unit_pos(uint64_t key, uint64_t i) {
    return ((double)(sv_rand_u64(key, i) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

/* Standard normal for counter i (Box-Muller on two derived uniforms). */
static inline double sv_rand_normal(uint64_t key, uint64_t i) {
    double u1 = sv_rand_unit_pos(key, 2 * i), u2 = sv_rand_unit(key, 2 * i + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Normal(0, std) truncated to [lo, hi] (timm trunc_normal_ with absolute bounds a=-2, b=2):
 * rejection sampling on sub-counters; deterministic for (key, i). */
static inline double sv_rand_trunc_normal(uint64_t key, uint64_t i, double std, double lo, double hi) {
    for (uint64_t k = 0;; k++) {
        double z = std * sv_rand_normal(sv_hash2(key, k), i);
        if (z >= lo && z <= hi) return z;
    }
}

#endif
