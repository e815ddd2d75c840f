#include "data/synth.h"

#include <math.h>
#include <stddef.h>

#include "core/rng.h"

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

void sv_synth_render(uint64_t task_seed, uint64_t index, int label, int w, int h, int channels, uint8_t *out) {
    const float pi = 3.14159265f;
    uint64_t ck = sv_hash2(sv_hash2(task_seed, 0xc1a55ull), (uint64_t)label);
    uint64_t sk = sv_hash2(sv_hash2(task_seed, 0x5a3e1eull), index);
    float c0[3], c1[3], c2[3];
    for (int c = 0; c < 3; c++) {
        c0[c] = 30.f + 195.f * (float)sv_rand_unit(ck, (uint64_t)c);
        c1[c] = 30.f + 195.f * (float)sv_rand_unit(ck, 3 + (uint64_t)c);
        c2[c] = 30.f + 195.f * (float)sv_rand_unit(ck, 6 + (uint64_t)c);
    }
    /* orientation spreads the classes evenly over half a turn; frequency and blob add more
     * separable structure when there are many classes */
    float theta = pi * ((float)(label % 16) + (float)sv_rand_unit(ck, 9) * 0.3f) / 16.f;
    float freq = 2.f + (float)((label / 16) % 4) * 1.5f + (float)sv_rand_unit(ck, 10);
    float bx = 0.2f + 0.6f * (float)sv_rand_unit(ck, 11), by = 0.2f + 0.6f * (float)sv_rand_unit(ck, 12);
    float br = 0.12f + 0.15f * (float)sv_rand_unit(ck, 13);

    theta += (float)(sv_rand_unit(sk, 0) - 0.5) * pi / 24.f;
    float phase = 2.f * pi * (float)sv_rand_unit(sk, 1);
    bx += (float)(sv_rand_unit(sk, 2) - 0.5) * 0.15f;
    by += (float)(sv_rand_unit(sk, 3) - 0.5) * 0.15f;
    float bright = (float)(sv_rand_unit(sk, 4) - 0.5) * 40.f;
    float ga = 2.f * pi * (float)sv_rand_unit(sk, 5), gs = 30.f * (float)sv_rand_unit(sk, 6);
    float ct = cosf(theta), st = sinf(theta), gc = cosf(ga) * gs, gsn = sinf(ga) * gs;
    float inv_r2 = 1.f / (br * br);
    float aspect = (float)w / (float)h;
    uint64_t nk = sv_hash2(sk, 0x4015eull);

    for (int y = 0; y < h; y++) {
        float fy = ((float)y + 0.5f) / (float)h;
        for (int x = 0; x < w; x++) {
            float fx = ((float)x + 0.5f) / (float)w;
            float g = 0.5f + 0.5f * sinf(2.f * pi * freq * (fx * aspect * ct + fy * st) + phase);
            float dx = (fx - bx) * aspect, dy = fy - by;
            float blob = expf(-(dx * dx + dy * dy) * inv_r2);
            float grad = gc * (fx - 0.5f) + gsn * (fy - 0.5f) + bright;
            uint64_t r = sv_rand_u64(nk, (uint64_t)y * (uint64_t)w + (uint64_t)x);
            float v[3];
            for (int c = 0; c < 3; c++) {
                /* noise: sum of two 8-bit uniforms, triangular, about +-24 */
                float noise = ((float)((r >> (16 * c)) & 0xff) + (float)((r >> (16 * c + 8)) & 0xff) - 255.f) * 0.1f;
                float base = c0[c] + (c1[c] - c0[c]) * g;
                v[c] = base + (c2[c] - base) * blob * 0.85f + grad + noise;
            }
            uint8_t *p = out + ((size_t)y * (size_t)w + (size_t)x) * (size_t)channels;
            if (channels == 1) {
                p[0] = (uint8_t)clampf(0.299f * v[0] + 0.587f * v[1] + 0.114f * v[2] + 0.5f, 0.f, 255.f);
            } else {
                for (int c = 0; c < 3; c++) p[c] = (uint8_t)clampf(v[c] + 0.5f, 0.f, 255.f);
            }
        }
    }
}
