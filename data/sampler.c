#include "data/sampler.h"

#include "core/rng.h"

void sv_sampler_perm(uint64_t seed, uint64_t epoch, uint32_t *perm, uint64_t n) {
    uint64_t key = sv_hash2(sv_hash2(seed, 0x5a3d1e5eull), epoch);
    for (uint64_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (uint64_t i = n; i > 1; i--) {
        /* multiply-high maps 64 random bits onto [0, i) without a division */
        uint64_t r = sv_rand_u64(key, i);
        uint64_t j = (uint64_t)(((unsigned __int128)r * i) >> 64);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

int sv_sampler_normalise(int train, uint64_t n, uint64_t G, uint64_t *epoch, uint64_t *cursor) {
    if (train) {
        if (*cursor + G > n) {
            *epoch += 1;
            *cursor = 0;
        }
        return 1;
    }
    return *cursor < n;
}
