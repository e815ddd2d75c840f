#include "data/transform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

void sv_rrc_box(uint64_t key, int W, int H, double scale_min, double scale_max, double ratio_min,
                double ratio_max, sv_box *b) {
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

void sv_resample_scratch_free(sv_resample_scratch *s) {
    free(s->tmp);
    free(s->idx);
    free(s->wts);
    memset(s, 0, sizeof *s);
}

static sv_status grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return SV_OK;
    void *q = realloc(*p, need);
    if (!q) return SV_FAIL(SV_ERR_OOM, "resample: cannot allocate %zu bytes", need);
    *p = q;
    *cap = need;
    return SV_OK;
}

/* PIL's precompute_coeffs for the triangle filter over [in0, in0+len) of an axis of size n. */
static int coeffs(double in0, double len, int n, int out, int32_t *idx, float *w, int maxk) {
    double scale = len / out, fs = scale > 1.0 ? scale : 1.0, support = fs, ss = 1.0 / fs;
    for (int o = 0; o < out; o++) {
        double center = in0 + (o + 0.5) * scale;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > n) hi = n;
        if (hi <= lo) { /* box entirely at an edge: take the nearest pixel */
            lo = center < 0 ? 0 : (int)center < n ? (int)center : n - 1;
            hi = lo + 1;
        }
        int k = hi - lo;
        if (k > maxk) k = maxk;
        double sum = 0;
        float *wo = w + (size_t)o * (size_t)maxk;
        for (int t = 0; t < k; t++) {
            double d = fabs((t + lo - center + 0.5) * ss);
            double v = d < 1.0 ? 1.0 - d : 0.0;
            wo[t] = (float)v;
            sum += v;
        }
        if (sum <= 0) { wo[0] = 1.f; k = 1; sum = 1; }
        for (int t = 0; t < k; t++) wo[t] = (float)(wo[t] / sum);
        idx[2 * o] = lo;
        idx[2 * o + 1] = k;
    }
    return 0;
}

sv_status sv_resample(const uint8_t *src, int sw, int sh, int c, const sv_box *b, int out, int flip,
                      const float *mean, const float *std, float *dst, sv_resample_scratch *s) {
    double fsx = b->w / out > 1.0 ? b->w / out : 1.0, fsy = b->h / out > 1.0 ? b->h / out : 1.0;
    int kx = (int)ceil(fsx) * 2 + 2, ky = (int)ceil(fsy) * 2 + 2;
    SV_TRY(grow((void **)&s->idx, &s->idx_cap, sizeof(int32_t) * 4 * (size_t)out));
    SV_TRY(grow((void **)&s->wts, &s->wts_cap, sizeof(float) * (size_t)out * (size_t)(kx + ky)));
    int32_t *ix = s->idx, *iy = s->idx + 2 * out;
    float *wx = s->wts, *wy = s->wts + (size_t)out * (size_t)kx;
    coeffs(b->x, b->w, sw, out, ix, wx, kx);
    coeffs(b->y, b->h, sh, out, iy, wy, ky);
    int r0 = iy[0], r1 = iy[2 * (out - 1)] + iy[2 * (out - 1) + 1];
    for (int o = 0; o < out; o++) { /* rows needed by any output row (monotone, but be safe) */
        if (iy[2 * o] < r0) r0 = iy[2 * o];
        if (iy[2 * o] + iy[2 * o + 1] > r1) r1 = iy[2 * o] + iy[2 * o + 1];
    }
    size_t row = (size_t)out * (size_t)c;
    SV_TRY(grow((void **)&s->tmp, &s->tmp_cap, sizeof(float) * row * (size_t)(r1 - r0)));
    /* horizontal pass over the needed source rows into tmp (HWC floats) */
    for (int y = r0; y < r1; y++) {
        const uint8_t *sr = src + (size_t)y * (size_t)sw * (size_t)c;
        float *tr = s->tmp + (size_t)(y - r0) * row;
        for (int o = 0; o < out; o++) {
            const float *w = wx + (size_t)o * (size_t)kx;
            const uint8_t *p = sr + (size_t)ix[2 * o] * (size_t)c;
            int k = ix[2 * o + 1];
            if (c == 3) {
                float a0 = 0, a1 = 0, a2 = 0;
                for (int t = 0; t < k; t++, p += 3) {
                    a0 += w[t] * p[0];
                    a1 += w[t] * p[1];
                    a2 += w[t] * p[2];
                }
                tr[3 * o] = a0;
                tr[3 * o + 1] = a1;
                tr[3 * o + 2] = a2;
            } else {
                for (int ch = 0; ch < c; ch++) {
                    float a = 0;
                    for (int t = 0; t < k; t++) a += w[t] * p[t * c + ch];
                    tr[(size_t)o * (size_t)c + (size_t)ch] = a;
                }
            }
        }
    }
    /* vertical pass, normalise, de-interleave to CHW, mirror x when flipping */
    float ga[4], gb[4];
    for (int ch = 0; ch < c; ch++) {
        ga[ch] = 1.f / (255.f * std[ch]);
        gb[ch] = -mean[ch] / std[ch];
    }
    size_t plane = (size_t)out * (size_t)out;
    float acc[4 * 1024];
    if (out > 1024) return SV_FAIL(SV_ERR_INVALID, "resample: output side %d > 1024", out);
    for (int o = 0; o < out; o++) {
        const float *w = wy + (size_t)o * (size_t)ky;
        int k = iy[2 * o + 1];
        const float *t0 = s->tmp + (size_t)(iy[2 * o] - r0) * row;
        for (size_t e = 0; e < row; e++) acc[e] = w[0] * t0[e];
        for (int t = 1; t < k; t++) {
            const float *tt = t0 + (size_t)t * row;
            float wt = w[t];
            for (size_t e = 0; e < row; e++) acc[e] += wt * tt[e];
        }
        for (int ch = 0; ch < c; ch++) {
            float *d = dst + (size_t)ch * plane + (size_t)o * (size_t)out;
            float a = ga[ch], bb = gb[ch];
            if (flip)
                for (int x = 0; x < out; x++) d[out - 1 - x] = acc[(size_t)x * (size_t)c + (size_t)ch] * a + bb;
            else
                for (int x = 0; x < out; x++) d[x] = acc[(size_t)x * (size_t)c + (size_t)ch] * a + bb;
        }
    }
    return SV_OK;
}

sv_status sv_load_image(sv_jpeg_ctx *jc, sv_resample_scratch *rs, const uint8_t *data, size_t len,
                        const sv_image_xform *x, float *dst) {
    int W, H, comps;
    SV_TRY(sv_jpeg_header(jc, data, len, &W, &H, &comps));
    if (W <= 0 || H <= 0 || (uint64_t)W * (uint64_t)H > x->max_pixels)
        return SV_FAIL(SV_ERR_FORMAT, "image %dx%d exceeds the %llu-pixel limit", W, H,
                       (unsigned long long)x->max_pixels);
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
    int sw, sh;
    SV_TRY(sv_jpeg_decode(jc, data, len, x->channels, denom, &sw, &sh));
    if (denom > 1) {
        double fx = (double)sw / W, fy = (double)sh / H;
        b = (sv_box){b.x * fx, b.y * fy, b.w * fx, b.h * fy};
    }
    SV_TRY(sv_resample(jc->pix, sw, sh, x->channels, &b, x->img, flip, x->mean, x->std, dst, rs));
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
    y0 = y0 < 0 ? 0 : y0; x0 = x0 < 0 ? 0 : x0;
    y1 = y1 > side ? side : y1; x1 = x1 > side ? side : x1;
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
