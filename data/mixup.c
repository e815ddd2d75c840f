#include "data/mixup.h"

#include <math.h>
#include <stddef.h>

#include "core/rng.h"

static double rand_gamma(uint64_t key, uint64_t base, double alpha) {
    double boost = 1.0;
    if (alpha < 1.0) { /* Gamma(a) = Gamma(a+1) * U^(1/a) */
        boost = pow(sv_rand_unit_pos(key, base), 1.0 / alpha);
        alpha += 1.0;
    }
    double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (uint64_t k = 1;; k++) { /* Marsaglia-Tsang; deterministic sub-counters */
        double z = sv_rand_normal(sv_hash2(key, base + k), 0), v = 1.0 + c * z;
        if (v <= 0) continue;
        v = v * v * v;
        double u = sv_rand_unit_pos(sv_hash2(key, base + k), 7);
        if (log(u) < 0.5 * z * z + d - d * v + d * log(v)) return boost * d * v;
    }
}

double sv_rand_beta(uint64_t key, uint64_t base, double alpha) {
    double x = rand_gamma(key, base, alpha), y = rand_gamma(sv_hash2(key, 0xbe7a), base, alpha);
    return x + y > 0 ? x / (x + y) : 0.5;
}

int sv_mix_enabled(const sv_mix_cfg *c) { return c->mixup_alpha > 0 || c->cutmix_alpha > 0 || c->minmax_hi > 0; }

void sv_mix_draw(const sv_mix_cfg *c, uint64_t key, int *cutmix, double *lam) {
    double ca = c->minmax_hi > 0 ? 1.0 : c->cutmix_alpha;
    int cut = ca > 0 && (c->mixup_alpha <= 0 || sv_rand_unit(key, 0) < c->switch_prob);
    double alpha = cut ? ca : c->mixup_alpha;
    *lam = alpha > 0 ? sv_rand_beta(key, 16, alpha) : 1.0;
    *cutmix = cut;
    if (!(sv_rand_unit(key, 1) < c->prob)) {
        *lam = 1.0;
        *cutmix = 0;
    }
}

double sv_mix_box_draw(const sv_mix_cfg *c, uint64_t key, int side, double lam, sv_mix_box *b) {
    if (c->minmax_hi > 0) {
        int lo = (int)(side * c->minmax_lo), hi = (int)(side * c->minmax_hi);
        int ch = hi > lo ? lo + (int)(sv_rand_u64(key, 202) % (uint64_t)(hi - lo)) : lo;
        int cw = hi > lo ? lo + (int)(sv_rand_u64(key, 203) % (uint64_t)(hi - lo)) : lo;
        ch = ch > side ? side : ch;
        cw = cw > side ? side : cw;
        b->y0 = (int)(sv_rand_u64(key, 204) % (uint64_t)(side - ch + 1));
        b->x0 = (int)(sv_rand_u64(key, 205) % (uint64_t)(side - cw + 1));
        b->y1 = b->y0 + ch;
        b->x1 = b->x0 + cw;
    } else {
        double r = sqrt(1.0 - lam);
        int ch = (int)(side * r), cw = (int)(side * r);
        int cy = (int)(sv_rand_u64(key, 200) % (uint64_t)side), cx = (int)(sv_rand_u64(key, 201) % (uint64_t)side);
        int y0 = cy - ch / 2, y1 = cy + ch / 2, x0 = cx - cw / 2, x1 = cx + cw / 2;
        b->y0 = y0 < 0 ? 0 : y0;
        b->x0 = x0 < 0 ? 0 : x0;
        b->y1 = y1 > side ? side : y1;
        b->x1 = x1 > side ? side : x1;
    }
    return 1.0 - (double)(b->y1 - b->y0) * (double)(b->x1 - b->x0) / ((double)side * (double)side);
}

void sv_mix_pair(float *a, float *b, int C, int side, int cutmix, const sv_mix_box *box, double lam) {
    size_t plane = (size_t)side * (size_t)side;
    if (!cutmix) {
        float l = (float)lam, m = 1.f - l;
        for (size_t e = 0; e < plane * (size_t)C; e++) {
            float va = a[e], vb = b[e];
            a[e] = l * va + m * vb;
            b[e] = l * vb + m * va;
        }
        return;
    }
    for (int c = 0; c < C; c++)
        for (int y = box->y0; y < box->y1; y++)
            for (int x = box->x0; x < box->x1; x++) {
                size_t e = (size_t)c * plane + (size_t)y * (size_t)side + (size_t)x;
                float t = a[e];
                a[e] = b[e];
                b[e] = t;
            }
}

void sv_mix_into(float *dst, const float *src, int C, int side, int cutmix, const sv_mix_box *box, double lam) {
    size_t plane = (size_t)side * (size_t)side;
    if (!cutmix) {
        float l = (float)lam, m = 1.f - l;
        for (size_t e = 0; e < plane * (size_t)C; e++) dst[e] = l * dst[e] + m * src[e];
        return;
    }
    for (int c = 0; c < C; c++)
        for (int y = box->y0; y < box->y1; y++)
            for (int x = box->x0; x < box->x1; x++) {
                size_t e = (size_t)c * plane + (size_t)y * (size_t)side + (size_t)x;
                dst[e] = src[e];
            }
}
