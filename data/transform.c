#include "data/transform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "data/randaug.h"

void sv_rrc_box(uint64_t key, int W, int H, double scale_min, double scale_max, double ratio_min, double ratio_max,
                sv_box *b) {
    double area = (double)W * (double)H;
    double lr0 = log(ratio_min), lr1 = log(ratio_max);
    for (uint64_t t = 0; t < 10; t++) {
        double target = area * (scale_min + (scale_max - scale_min) * sv_rand_unit(key, 4 * t));
        double ar = exp(lr0 + (lr1 - lr0) * sv_rand_unit(key, 4 * t + 1));
        /* Python's round() is round-half-even, as nearbyint in the default rounding mode */
        long w = (long)nearbyint(sqrt(target * ar)), h = (long)nearbyint(sqrt(target / ar));
        if (w > 0 && w <= W && h > 0 && h <= H) {
            uint64_t i = sv_rand_u64(key, 4 * t + 2) % (uint64_t)(H - h + 1);
            uint64_t j = sv_rand_u64(key, 4 * t + 3) % (uint64_t)(W - w + 1);
            *b = (sv_box){(double)j, (double)i, (double)w, (double)h};
            return;
        }
    }
    double in_ratio = (double)W / (double)H;
    long w, h;
    if (in_ratio < ratio_min) {
        w = W;
        h = (long)nearbyint((double)w / ratio_min);
    } else if (in_ratio > ratio_max) {
        h = H;
        w = (long)nearbyint((double)h * ratio_max);
    } else {
        w = W;
        h = H;
    }
    *b = (sv_box){(double)((W - w) / 2), (double)((H - h) / 2), (double)w, (double)h};
}

void sv_eval_box(int W, int H, int img, double crop_pct, sv_box *b) {
    long size = (long)floor((double)img / crop_pct);
    long nw, nh;
    if (W <= H) {
        nw = size;
        nh = (long)((double)size * (double)H / (double)W);
    } else {
        nh = size;
        nw = (long)((double)size * (double)W / (double)H);
    }
    long top = (long)nearbyint((double)(nh - img) / 2.0), left = (long)nearbyint((double)(nw - img) / 2.0);
    double sx = (double)W / (double)nw, sy = (double)H / (double)nh;
    *b = (sv_box){(double)left * sx, (double)top * sy, (double)img * sx, (double)img * sy};
}

sv_status sv_load_image(sv_jpeg_ctx *jc, sv_resample_scratch *rs, const uint8_t *data, size_t len,
                        const sv_image_xform *x, float *dst) {
    int W, H, comps;
    SV_TRY(sv_jpeg_region_open(jc, data, len, &W, &H, &comps));
    if (W <= 0 || H <= 0 || (uint64_t)W * (uint64_t)H > x->max_pixels)
        return SV_FAIL(SV_ERR_FORMAT, "image %dx%d exceeds the %llu-pixel limit", W, H,
                       (unsigned long long)x->max_pixels);
    if (comps == 4) return SV_FAIL(SV_ERR_UNSUPPORTED, "CMYK JPEG is not supported");
    sv_box b;
    int flip = 0;
    if (x->train) {
        sv_rrc_box(x->key, W, H, x->scale_min, x->scale_max, x->ratio_min, x->ratio_max, &b);
        flip = x->hflip > 0 && sv_rand_unit(x->key, 63) < x->hflip;
    } else {
        sv_eval_box(W, H, x->img, x->crop_pct, &b);
    }
    /* DCT-domain scaling: only the SIMD-accelerated power-of-two factors, and only while the
     * scaled crop still has at least img pixels each way (no upsampling introduced) */
    int denom = 1;
    for (int d = 8; d >= 2; d /= 2) {
        double sw = ceil((double)W / d), sh = ceil((double)H / d);
        if (b.w * sw / W >= x->img && b.h * sh / H >= x->img) {
            denom = d;
            break;
        }
    }
    int sw = (W + denom - 1) / denom, sh = (H + denom - 1) / denom;
    /* Train crops then resizes (torchvision resized_crop): taps stay inside the crop. Eval
     * resizes the whole image then crops: taps may use pixels around the box. */
    int cx0 = 0, cy0 = 0, cx1 = sw, cy1 = sh;
    if (denom > 1) {
        double fx = (double)sw / W, fy = (double)sh / H;
        b = (sv_box){b.x * fx, b.y * fy, b.w * fx, b.h * fy};
    }
    if (x->train) {
        cx0 = (int)floor(b.x);
        cy0 = (int)floor(b.y);
        cx1 = (int)ceil(b.x + b.w);
        cy1 = (int)ceil(b.y + b.h);
        cx0 = cx0 < 0 ? 0 : cx0;
        cy0 = cy0 < 0 ? 0 : cy0;
        cx1 = cx1 > sw ? sw : cx1 <= cx0 ? cx0 + 1 : cx1;
        cy1 = cy1 > sh ? sh : cy1 <= cy0 ? cy0 + 1 : cy1;
    }
    SV_TRY(sv_resample_plan(rs, &b, cx0, cy0, cx1, cy1, x->img, x->channels, flip, x->interp));
    sv_jpeg_region r;
    SV_TRY(sv_jpeg_region_decode(jc, x->channels, denom, rs->x0, rs->y0, rs->x1, rs->y1, &r));
    if (r.fw != sw || r.fh != sh || r.x0 > rs->x0 || r.y0 > rs->y0 || r.x0 + r.w < rs->x1 || r.y0 + r.h < rs->y1)
        return SV_FAIL(SV_ERR_BACKEND, "JPEG decode: region %d,%d %dx%d of %dx%d does not cover %d,%d..%d,%d of %dx%d",
                       r.x0, r.y0, r.w, r.h, r.fw, r.fh, rs->x0, rs->y0, rs->x1, rs->y1, sw, sh);
    sv_resample_run(rs, r.pix, r.x0, r.y0, (size_t)r.w * (size_t)x->channels);
    if (x->train && x->randaug_n > 0) {
        uint8_t fill[3];
        for (int ch = 0; ch < x->channels; ch++) {
            float v = x->mean[ch] * 255.f + 0.5f;
            fill[ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
        sv_randaug(sv_hash2(x->key, 0x7a4dull), x->randaug_n, x->randaug_m, rs->img, x->img, x->channels, fill,
                   rs->img2);
    }
    sv_normalize_u8(rs->img, x->img, x->channels, x->mean, x->std, dst);
    return SV_OK;
}

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

void sv_mix_pair(float *a, float *b, int C, int side, int cutmix, uint64_t key, double *lam) {
    size_t plane = (size_t)side * (size_t)side;
    if (!cutmix) {
        float l = (float)*lam, m = 1.f - l;
        for (size_t e = 0; e < plane * (size_t)C; e++) {
            float va = a[e], vb = b[e];
            a[e] = l * va + m * vb;
            b[e] = l * vb + m * va;
        }
        return;
    }
    double r = sqrt(1.0 - *lam);
    int ch = (int)(side * r), cw = (int)(side * r);
    int cy = (int)(sv_rand_u64(key, 200) % (uint64_t)side), cx = (int)(sv_rand_u64(key, 201) % (uint64_t)side);
    int y0 = cy - ch / 2, y1 = cy + ch / 2, x0 = cx - cw / 2, x1 = cx + cw / 2;
    y0 = y0 < 0 ? 0 : y0;
    x0 = x0 < 0 ? 0 : x0;
    y1 = y1 > side ? side : y1;
    x1 = x1 > side ? side : x1;
    for (int c = 0; c < C; c++)
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++) {
                size_t e = (size_t)c * plane + (size_t)y * (size_t)side + (size_t)x;
                float t = a[e];
                a[e] = b[e];
                b[e] = t;
            }
    *lam = 1.0 - (double)(y1 - y0) * (double)(x1 - x0) / (double)plane;
}
