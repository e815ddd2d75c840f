#include "data/transform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "data/augment3.h"
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
    long snw = 0, snh = 0, stop = 0, sleft = 0; /* simple crop geometry */
    if (x->train && x->simple_crop) {
        double bb[4];
        sv_simple_crop_box(x->key, W, H, x->img, &snw, &snh, &stop, &sleft, bb);
        b = (sv_box){bb[0], bb[1], bb[2], bb[3]};
        flip = x->hflip > 0 && sv_rand_unit(x->key, 63) < x->hflip;
    } else if (x->train) {
        sv_rrc_box(x->key, W, H, x->scale_min, x->scale_max, x->ratio_min, x->ratio_max, &b);
        flip = x->hflip > 0 && sv_rand_unit(x->key, 63) < x->hflip;
    } else {
        sv_eval_box(W, H, x->img, x->crop_pct, &b);
    }
    /* DCT-domain scaling: only the SIMD-accelerated power-of-two factors, and only while the crop
     * is at least d x img pixels each way (no upsampling introduced; a crop below 2 x img is never
     * scaled, so it resamples exactly Pillow's pixels: the scaled image's rounded-up size ceil(W/d)
     * let an odd-sized crop just under 2 x img through) */
    int denom = 1;
    for (int d = 8; d >= 2; d /= 2) {
        if (b.w >= (double)d * x->img && b.h >= (double)d * x->img) {
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
    if (x->train && !x->simple_crop) {
        cx0 = (int)floor(b.x);
        cy0 = (int)floor(b.y);
        cx1 = (int)ceil(b.x + b.w);
        cy1 = (int)ceil(b.y + b.h);
        cx0 = cx0 < 0 ? 0 : cx0;
        cy0 = cy0 < 0 ? 0 : cy0;
        cx1 = cx1 > sw ? sw : cx1 <= cx0 ? cx0 + 1 : cx1;
        cy1 = cy1 > sh ? sh : cy1 <= cy0 ? cy0 + 1 : cy1;
    }
    int simple = x->train && x->simple_crop;
    SV_TRY(sv_resample_plan(rs, &b, cx0, cy0, cx1, cy1, x->img, x->channels, simple ? 0 : flip, x->interp));
    sv_jpeg_region r;
    SV_TRY(sv_jpeg_region_decode(jc, x->channels, denom, rs->x0, rs->y0, rs->x1, rs->y1, &r));
    if (r.fw != sw || r.fh != sh || r.x0 > rs->x0 || r.y0 > rs->y0 || r.x0 + r.w < rs->x1 || r.y0 + r.h < rs->y1)
        return SV_FAIL(SV_ERR_BACKEND, "JPEG decode: region %d,%d %dx%d of %dx%d does not cover %d,%d..%d,%d of %dx%d",
                       r.x0, r.y0, r.w, r.h, r.fw, r.fh, rs->x0, rs->y0, rs->x1, rs->y1, sw, sh);
    sv_resample_run(rs, r.pix, r.x0, r.y0, (size_t)r.w * (size_t)x->channels);
    if (simple) {
        sv_reflect_fix(rs->img, x->img, x->channels, snw, snh, stop, sleft);
        size_t px = (size_t)x->channels, row = (size_t)x->img * px;
        for (int y = 0; flip && y < x->img; y++)
            for (int i = 0, j = x->img - 1; i < j; i++, j--)
                for (size_t ch = 0; ch < px; ch++) {
                    uint8_t t = rs->img[y * row + (size_t)i * px + ch];
                    rs->img[y * row + (size_t)i * px + ch] = rs->img[y * row + (size_t)j * px + ch];
                    rs->img[y * row + (size_t)j * px + ch] = t;
                }
    }
    if (x->train) {
        uint8_t fill[3];
        for (int ch = 0; ch < x->channels; ch++) {
            float v = x->mean[ch] * 255.f + 0.5f;
            fill[ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
        sv_augment_u8(x, x->key, rs->img, x->img, x->channels, fill, rs->img2);
    }
    sv_normalize_u8(rs->img, x->img, x->channels, x->mean, x->std, dst);
    if (x->train) sv_augment_f32(x, x->key, dst, x->img, x->channels);
    return SV_OK;
}

void sv_augment_u8(const sv_image_xform *x, uint64_t key, uint8_t *img, int side, int c, const uint8_t *fill,
                   uint8_t *scratch) {
    if (x->randaug_n > 0) sv_randaug(sv_hash2(key, 0x7a4dull), x->randaug_n, x->randaug_m, img, side, c, fill, scratch);
    if (x->aa && x->aa->n > 0) sv_randaug_timm_run(x->aa, sv_hash2(key, 0x7a4eull), img, side, c, fill, scratch);
    if (x->three_aug) sv_three_augment(sv_hash2(key, 0x3a6ull), img, side, c, scratch);
    if (x->color_jitter > 0)
        sv_color_jitter(sv_hash2(key, 0xc17ull), x->color_jitter, img, side, c, scratch, NULL, NULL);
}

void sv_augment_f32(const sv_image_xform *x, uint64_t key, float *img, int side, int c) {
    if (x->erase.prob > 0) sv_random_erase(sv_hash2(key, 0xe7a5ull), &x->erase, img, c, side, side);
}
