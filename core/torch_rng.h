/* PyTorch's CPU random generator (torch.Generator() on the CPU), for the few values shardvit
 * must draw exactly as torch draws them: timm's LR-schedule noise (core/lr_sched.h), which seeds
 * a fresh generator with noise_seed + t and takes torch.randn(1) or torch.rand(1) from it.
 *
 * What torch does, reproduced here (ATen CPUGeneratorImpl, at::mt19937 and the CPU distribution
 * templates, for a one-element float32 tensor):
 *   manual_seed(s): the 32-bit Mersenne Twister MT19937 seeded with the low 32 bits of s (the
 *     standard init_genrand), and no cached normal sample;
 *   randn(1): a tensor under 16 elements takes the serial path, at::normal_distribution<double>:
 *     a cached double sample when there is one, else u1, u2 uniform doubles in [0, 1), each from
 *     random64() = (first 32-bit output << 32 | second) & (2^53 - 1), times 2^-53;
 *     r = sqrt(-2 log(1 - u2)), theta = 2 pi u1; r sin(theta) is cached for the next call and
 *     r cos(theta) returned; the float32 element is that double rounded to float (torch 1.13
 *     writes log(1 - u2), torch 2.x log1p(-u2): the doubles can differ in the last bits, the
 *     float32 results agreed for 20,000 seeds against torch 2.15; timm's noise is compared with
 *     the torch of the test venv);
 *   rand(1): at::uniform_real_distribution<float>: (32-bit output & (2^24 - 1)) * 2^-24 as float.
 * tests/core/test_torch_rng.c compares both with the torch of the test venv for many seeds. */
#ifndef SV_CORE_TORCH_RNG_H
#define SV_CORE_TORCH_RNG_H

#include <stdint.h>

typedef struct sv_torch_gen {
    uint32_t state[624];
    int next, left;
    int has_normal; /* a cached double normal sample (the second Box-Muller value) */
    double normal;
} sv_torch_gen;

/* torch.Generator().manual_seed(seed) (seed as the unsigned 64-bit value torch stores). */
void sv_torch_gen_seed(sv_torch_gen *g, uint64_t seed);
/* The next 32-bit output of the generator's MT19937. */
uint32_t sv_torch_gen_u32(sv_torch_gen *g);
/* torch.randn(1, generator=g).item(): the float32 value, widened. */
double sv_torch_randn1(sv_torch_gen *g);
/* torch.rand(1, generator=g).item(). */
double sv_torch_rand1(sv_torch_gen *g);

#endif
