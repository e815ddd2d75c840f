#include "data/erase.h"

#include <math.h>
#include <string.h>

#include "core/rng.h"

int sv_erase_plan(uint64_t key, const sv_erase_opts *o, int H, int W, sv_erase_box *boxes, int *count) {
    if (count) *count = 0;
    if (!(o->prob > 0) || !(sv_rand_unit(key, 0) < o->prob)) return 0;
    int maxc = o->max_count < 1 ? 1 : o->max_count > SV_ERASE_MAX_COUNT ? SV_ERASE_MAX_COUNT : o->max_count;
    int cnt = maxc > 1 ? 1 + (int)(sv_rand_u64(key, 1) % (uint64_t)maxc) : 1;
    if (count) *count = cnt;
    double area = (double)H * (double)W, la0 = log(0.3), la1 = log(1.0 / 0.3);
    int nb = 0;
    for (int k = 0; k < cnt; k++)
        for (int t = 0; t < 10; t++) {
            uint64_t c = 2 + 4 * (10 * (uint64_t)k + (uint64_t)t);
            double target = (0.02 + (1.0 / 3.0 - 0.02) * sv_rand_unit(key, c)) * area / cnt;
            double ar = exp(la0 + (la1 - la0) * sv_rand_unit(key, c + 1));
            long h = (long)nearbyint(sqrt(target * ar)), w = (long)nearbyint(sqrt(target / ar));
            if (w < W && h < H) {
                int top = (int)(sv_rand_u64(key, c + 2) % (uint64_t)(H - h + 1));
                int left = (int)(sv_rand_u64(key, c + 3) % (uint64_t)(W - w + 1));
                boxes[nb++] = (sv_erase_box){top, left, (int)h, (int)w};
                break;
            }
        }
    return nb;
}

void sv_random_erase(uint64_t key, const sv_erase_opts *o, float *img, int C, int H, int W) {
    sv_erase_box bx[SV_ERASE_MAX_COUNT];
    int nb = sv_erase_plan(key, o, H, W, bx, NULL);
    size_t plane = (size_t)H * (size_t)W;
    for (int k = 0; k < nb; k++) {
        uint64_t vk = sv_hash2(key, 0x1000ull + (uint64_t)k);
        for (int ch = 0; ch < C; ch++) {
            float cv = o->mode == SV_ERASE_RAND ? (float)sv_rand_normal(vk, (uint64_t)ch) : 0.f;
            for (int y = bx[k].top; y < bx[k].top + bx[k].h; y++)
                for (int x = bx[k].left; x < bx[k].left + bx[k].w; x++) {
                    size_t e = (size_t)ch * plane + (size_t)y * (size_t)W + (size_t)x;
                    img[e] = o->mode == SV_ERASE_PIXEL ? (float)sv_rand_normal(vk, e) : cv;
                }
        }
    }
}

int sv_erase_mode_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "const")) return SV_ERASE_CONST;
    if (!strcmp(s, "rand")) return SV_ERASE_RAND;
    if (!strcmp(s, "pixel")) return SV_ERASE_PIXEL;
    return -1;
}
