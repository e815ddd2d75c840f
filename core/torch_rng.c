/* PyTorch's CPU generator (core/torch_rng.h). */
#include <math.h>

#include "core/torch_rng.h"

#define MT_N 624
#define MT_M 397

void sv_torch_gen_seed(sv_torch_gen *g, uint64_t seed) {
    g->state[0] = (uint32_t)(seed & 0xffffffffu);
    for (int j = 1; j < MT_N; j++)
        g->state[j] = 1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + (uint32_t)j;
    g->left = 1;
    g->next = 0;
    g->has_normal = 0;
    g->normal = 0;
}

static uint32_t twist(uint32_t u, uint32_t v) {
    return (((u & 0x80000000u) | (v & 0x7fffffffu)) >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
}

static void next_state(sv_torch_gen *g) {
    uint32_t *s = g->state;
    int j = 0;
    for (; j < MT_N - MT_M; j++) s[j] = s[j + MT_M] ^ twist(s[j], s[j + 1]);
    for (; j < MT_N - 1; j++) s[j] = s[j + MT_M - MT_N] ^ twist(s[j], s[j + 1]);
    s[MT_N - 1] = s[MT_M - 1] ^ twist(s[MT_N - 1], s[0]);
    g->left = MT_N;
    g->next = 0;
}

uint32_t sv_torch_gen_u32(sv_torch_gen *g) {
    if (--g->left == 0) next_state(g);
    uint32_t y = g->state[g->next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* at::uniform_real_distribution<double>(0, 1) */
static double uniform_double(sv_torch_gen *g) {
    uint64_t hi = sv_torch_gen_u32(g);
    uint64_t lo = sv_torch_gen_u32(g);
    uint64_t v = (hi << 32) | lo;
    return (double)(v & ((UINT64_C(1) << 53) - 1)) * (1.0 / (double)(UINT64_C(1) << 53));
}

double sv_torch_randn1(sv_torch_gen *g) {
    double x;
    if (g->has_normal) {
        g->has_normal = 0;
        x = g->normal;
    } else {
        double u1 = uniform_double(g);
        double u2 = uniform_double(g);
        double r = sqrt(-2.0 * log(1.0 - u2));
        double theta = 2.0 * M_PI * u1;
        g->normal = r * sin(theta);
        g->has_normal = 1;
        x = r * cos(theta);
    }
    return (double)(float)(x * 1.0 + 0.0); /* transformation::normal(x, mean 0, std 1), then the float32 tensor */
}

double sv_torch_rand1(sv_torch_gen *g) {
    float x = (float)(sv_torch_gen_u32(g) & ((1u << 24) - 1)) * (1.0f / (float)(1u << 24));
    return (double)(x * 1.0f + 0.0f); /* x * (to - from) + from */
}
