#include "data/augment3.h"

#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "data/randaug.h"

sv_aug3_op sv_three_augment_choice(uint64_t key, double *radius) {
    if (radius) *radius = 0.1 + (2.0 - 0.1) * sv_rand_unit(key, 1);
    return (sv_aug3_op)(sv_rand_u64(key, 0) % 3);
}

void sv_gaussian_blur(uint8_t *img, int side, int c, double sigma, uint8_t *scratch) {
    enum { MAXR = 64 };
    int r = (int)ceil(3.0 * sigma);
    r = r < 1 ? 1 : r > MAXR ? MAXR : r;
    double k[MAXR + 1], sum = 0;
    for (int t = 0; t <= r; t++) sum += (t ? 2.0 : 1.0) * (k[t] = exp(-0.5 * t * t / (sigma * sigma)));
    for (int t = 0; t <= r; t++) k[t] /= sum;
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *src = pass ? scratch : img;
        uint8_t *dst = pass ? img : scratch;
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++)
                for (int ch = 0; ch < c; ch++) {
                    double acc = 0;
                    for (int t = -r; t <= r; t++) {
                        int xx = pass ? x : x + t, yy = pass ? y + t : y;
                        xx = xx < 0 ? 0 : xx >= side ? side - 1 : xx;
                        yy = yy < 0 ? 0 : yy >= side ? side - 1 : yy;
                        acc +=
                            k[t < 0 ? -t : t] * src[((size_t)yy * (size_t)side + (size_t)xx) * (size_t)c + (size_t)ch];
                    }
                    int v = (int)floor(acc + 0.5);
                    dst[((size_t)y * (size_t)side + (size_t)x) * (size_t)c + (size_t)ch] = (uint8_t)(v < 0         ? 0
                                                                                                         : v > 255 ? 255
                                                                                                                   : v);
                }
    }
}

void sv_three_augment(uint64_t key, uint8_t *img, int side, int c, uint8_t *scratch) {
    double radius;
    switch (sv_three_augment_choice(key, &radius)) {
    case SV_AUG3_GRAY: sv_image_grayscale(img, side, c); return;
    case SV_AUG3_SOLARIZE: sv_image_solarize(img, side, c, 128); return;
    case SV_AUG3_BLUR: sv_gaussian_blur(img, side, c, radius, scratch); return;
    }
}

void sv_color_jitter(uint64_t key, double b, uint8_t *img, int side, int c, uint8_t *scratch, double *factors,
                     int *order) {
    double lo = 1.0 - b > 0 ? 1.0 - b : 0.0, hi = 1.0 + b, f[3];
    int ord[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++) f[i] = lo + (hi - lo) * sv_rand_unit(key, 8 + (uint64_t)i);
    for (int i = 2; i > 0; i--) { /* Fisher-Yates */
        int j = (int)(sv_rand_u64(key, 11 + (uint64_t)i) % (uint64_t)(i + 1)), t = ord[i];
        ord[i] = ord[j];
        ord[j] = t;
    }
    static const sv_ra_op ops[3] = {SV_RA_BRIGHTNESS, SV_RA_CONTRAST, SV_RA_COLOR};
    for (int i = 0; i < 3; i++) sv_image_enhance(ops[ord[i]], f[ord[i]], img, side, c, scratch);
    if (factors) memcpy(factors, f, sizeof f);
    if (order) memcpy(order, ord, sizeof ord);
}

void sv_simple_crop_box(uint64_t key, int W, int H, int img, long *nw, long *nh, long *top, long *left, double box[4]) {
    if (W <= H) {
        *nw = img;
        *nh = (long)((double)img * (double)H / (double)W);
    } else {
        *nh = img;
        *nw = (long)((double)img * (double)W / (double)H);
    }
    *top = (long)(sv_rand_u64(key, 40) % (uint64_t)(*nh + 8 - img + 1));
    *left = (long)(sv_rand_u64(key, 41) % (uint64_t)(*nw + 8 - img + 1));
    double sx = (double)W / (double)*nw, sy = (double)H / (double)*nh;
    box[0] = (double)(*left - 4) * sx;
    box[1] = (double)(*top - 4) * sy;
    box[2] = (double)img * sx;
    box[3] = (double)img * sy;
}

static long reflect(long v, long n) {
    if (n <= 1) return 0;
    while (v < 0 || v >= n) v = v < 0 ? -v : 2 * (n - 1) - v;
    return v;
}

void sv_reflect_fix(uint8_t *img, int side, int c, long nw, long nh, long top, long left) {
    long ox = left - 4, oy = top - 4;
    size_t px = (size_t)c, row = (size_t)side * px;
    for (int y = 0; y < side; y++) {
        if (oy + y < 0 || oy + y >= nh) continue;
        for (int x = 0; x < side; x++) {
            long sxr = reflect(ox + x, nw) - ox;
            if (sxr != x && sxr >= 0 && sxr < side)
                memcpy(img + y * row + x * px, img + y * row + (size_t)sxr * px, px);
        }
    }
    for (int y = 0; y < side; y++) {
        long syr = reflect(oy + y, nh) - oy;
        if (syr != y && syr >= 0 && syr < side) memcpy(img + y * row, img + (size_t)syr * row, row);
    }
}
