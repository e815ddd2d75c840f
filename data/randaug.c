#include "data/randaug.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/rng.h"

static const char *const k_names[SV_RA_NUM_OPS] = {
    "Identity", "AutoContrast", "Equalize",   "Invert",    "Rotate", "Posterize", "Solarize",   "SolarizeAdd",
    "Color",    "Contrast",     "Brightness", "Sharpness", "ShearX", "ShearY",    "TranslateX", "TranslateY"};

const char *sv_randaug_op_name(sv_ra_op op) { return op >= 0 && op < SV_RA_NUM_OPS ? k_names[op] : "?"; }

static void apply_lut(uint8_t *img, size_t n, int c, const uint8_t lut[][256]) {
    for (size_t p = 0; p < n; p++)
        for (int ch = 0; ch < c; ch++) img[p * (size_t)c + (size_t)ch] = lut[ch][img[p * (size_t)c + (size_t)ch]];
}

static void same_lut(uint8_t lut[][256], int c, int (*f)(int v, int arg), int arg) {
    for (int ch = 0; ch < c; ch++)
        for (int v = 0; v < 256; v++) {
            int r = f(v, arg);
            lut[ch][v] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        }
}

static int f_invert(int v, int arg) {
    (void)arg;
    return 255 - v;
}
static int f_posterize(int v, int bits) { return v & ~((1 << (8 - bits)) - 1); }
static int f_solarize(int v, int thresh) { return v >= thresh ? 255 - v : v; }
static int f_solarize_add(int v, int add) { return v < 128 ? v + add : v; }

static void histograms(const uint8_t *img, size_t n, int c, uint32_t h[][256]) {
    memset(h, 0, sizeof(uint32_t) * 256 * (size_t)c);
    for (size_t p = 0; p < n; p++)
        for (int ch = 0; ch < c; ch++) h[ch][img[p * (size_t)c + (size_t)ch]]++;
}

static void autocontrast(uint8_t *img, size_t n, int c) { /* PIL ImageOps.autocontrast, cutoff 0 */
    uint32_t h[3][256];
    uint8_t lut[3][256];
    histograms(img, n, c, h);
    for (int ch = 0; ch < c; ch++) {
        int lo = 0, hi = 255;
        while (lo < 256 && !h[ch][lo]) lo++;
        while (hi >= 0 && !h[ch][hi]) hi--;
        for (int v = 0; v < 256; v++) {
            if (hi <= lo) {
                lut[ch][v] = (uint8_t)v;
                continue;
            }
            double scale = 255.0 / (hi - lo), offset = -lo * scale;
            int r = (int)(v * scale + offset);
            lut[ch][v] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        }
    }
    apply_lut(img, n, c, lut);
}

static void equalize(uint8_t *img, size_t n, int c) { /* PIL ImageOps.equalize */
    uint32_t h[3][256];
    uint8_t lut[3][256];
    histograms(img, n, c, h);
    for (int ch = 0; ch < c; ch++) {
        uint64_t total = 0, last = 0;
        int used = 0;
        for (int v = 0; v < 256; v++)
            if (h[ch][v]) {
                total += h[ch][v];
                last = h[ch][v];
                used++;
            }
        uint64_t step = used <= 1 ? 0 : (total - last) / 255; /* as Pillow 9.4 */
        uint64_t acc = step / 2;
        for (int v = 0; v < 256; v++) {
            if (!step) {
                lut[ch][v] = (uint8_t)v;
                continue;
            }
            uint64_t r = acc / step;
            lut[ch][v] = (uint8_t)(r > 255 ? 255 : r);
            acc += h[ch][v];
        }
    }
    apply_lut(img, n, c, lut);
}

/* PIL ImagingBlend(degenerate, img, alpha): degenerate + alpha (img - degenerate), truncated
 * toward zero; clipped when extrapolating. deg may be a constant (deg_stride 0). */
static void blend(uint8_t *img, const uint8_t *deg, size_t deg_stride, size_t n, float alpha) {
    int interp = alpha >= 0 && alpha <= 1.0f;
    for (size_t e = 0; e < n; e++) {
        int a = deg[e * deg_stride], b = img[e];
        float t = (float)a + alpha * (float)(b - a);
        if (interp)
            img[e] = (uint8_t)t;
        else
            img[e] = t <= 0.0f ? 0 : t >= 255.0f ? 255 : (uint8_t)t;
    }
}

static uint8_t luma(const uint8_t *p) { /* PIL convert("L"): ITU-R 601-2, 16-bit fixed point */
    return (uint8_t)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
}

static int coord(double v) { return v < 0.0 ? -1 : (int)v; } /* PIL's COORD() */

static int fits_fixed(const double m[6], int x, int y) { /* PIL's check_fixed */
    return fabs(x * m[0] + y * m[1] + m[2]) < 32768.0 && fabs(x * m[3] + y * m[4] + m[5]) < 32768.0;
}

static void put(uint8_t *img, int side, int c, int x, int y, const uint8_t *scratch, int ix, int iy,
                const uint8_t *fill) {
    const uint8_t *s = ix >= 0 && ix < side && iy >= 0 && iy < side
        ? scratch + ((size_t)iy * (size_t)side + (size_t)ix) * (size_t)c
        : fill;
    uint8_t *d = img + ((size_t)y * (size_t)side + (size_t)x) * (size_t)c;
    for (int ch = 0; ch < c; ch++) d[ch] = s[ch];
}

/* Sample img through the PIL affine map (output pixel centre (x+.5, y+.5) -> input
 * (a x + b y + c, d x + e y + f)), nearest pixel, fill outside. The arithmetic is Pillow's
 * ImagingTransformAffine for NEAREST: a pure scale/translate walks doubles per axis; otherwise
 * 16.16 fixed point stepped per pixel when the coordinates fit, else doubles stepped likewise. */
static void affine(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill, uint8_t *scratch) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    memcpy(scratch, img, n);
    if (m[1] == 0 && m[3] == 0) {
        double yo = m[5] + m[4] * 0.5;
        for (int y = 0; y < side; y++, yo += m[4]) {
            double xo = m[2] + m[0] * 0.5;
            int iy = coord(yo);
            for (int x = 0; x < side; x++, xo += m[0]) put(img, side, c, x, y, scratch, coord(xo), iy, fill);
        }
        return;
    }
    if (fits_fixed(m, 0, 0) && fits_fixed(m, side, side)) {
        int32_t a0 = (int32_t)floor(m[0] * 65536.0 + 0.5), a1 = (int32_t)floor(m[1] * 65536.0 + 0.5);
        int32_t a3 = (int32_t)floor(m[3] * 65536.0 + 0.5), a4 = (int32_t)floor(m[4] * 65536.0 + 0.5);
        int32_t a2 = (int32_t)floor((m[2] + m[0] * 0.5 + m[1] * 0.5) * 65536.0 + 0.5);
        int32_t a5 = (int32_t)floor((m[5] + m[3] * 0.5 + m[4] * 0.5) * 65536.0 + 0.5);
        for (int y = 0; y < side; y++, a2 += a1, a5 += a4) {
            int32_t xx = a2, yy = a5;
            for (int x = 0; x < side; x++, xx += a0, yy += a3)
                put(img, side, c, x, y, scratch, xx >> 16, yy >> 16, fill);
        }
        return;
    }
    double xo = m[2] + m[1] * 0.5 + m[0] * 0.5, yo = m[5] + m[4] * 0.5 + m[3] * 0.5;
    for (int y = 0; y < side; y++, xo += m[1], yo += m[4]) {
        double xx = xo, yy = yo;
        for (int x = 0; x < side; x++, xx += m[0], yy += m[3])
            put(img, side, c, x, y, scratch, coord(xx), coord(yy), fill);
    }
}

static double round15(double v) { return nearbyint(v * 1e15) / 1e15; } /* Python round(v, 15) */

void sv_randaug_apply(sv_ra_op op, double m, int negate, uint8_t *img, int side, int c, const uint8_t *fill,
                      uint8_t *scratch) {
    double f = m / 10.0, sgn = negate ? -1.0 : 1.0;
    size_t npx = (size_t)side * (size_t)side, n = npx * (size_t)c;
    uint8_t lut[3][256];
    switch (op) {
    case SV_RA_IDENTITY:
    case SV_RA_NUM_OPS: return;
    case SV_RA_AUTOCONTRAST: autocontrast(img, npx, c); return;
    case SV_RA_EQUALIZE: equalize(img, npx, c); return;
    case SV_RA_INVERT:
        same_lut(lut, c, f_invert, 0);
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_POSTERIZE: {
        int bits = 8 - (int)nearbyint(4.0 * f);
        same_lut(lut, c, f_posterize, bits < 1 ? 1 : bits > 8 ? 8 : bits);
        apply_lut(img, npx, c, lut);
        return;
    }
    case SV_RA_SOLARIZE:
        same_lut(lut, c, f_solarize, 256 - (int)(f * 256.0));
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_SOLARIZE_ADD:
        same_lut(lut, c, f_solarize_add, (int)(f * 110.0));
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_COLOR:
        if (c != 3) return;
        for (size_t p = 0; p < npx; p++) scratch[p] = luma(img + 3 * p);
        for (size_t p = 0; p < npx; p++) blend(img + 3 * p, scratch + p, 0, 3, (float)(1.0 + sgn * 0.9 * f));
        return;
    case SV_RA_CONTRAST: {
        double sum = 0;
        for (size_t p = 0; p < npx; p++) sum += c == 3 ? luma(img + 3 * p) : img[p];
        uint8_t mean = (uint8_t)(int)(sum / (double)npx + 0.5);
        blend(img, &mean, 0, n, (float)(1.0 + sgn * 0.9 * f));
        return;
    }
    case SV_RA_BRIGHTNESS: {
        uint8_t zero = 0;
        blend(img, &zero, 0, n, (float)(1.0 + sgn * 0.9 * f));
        return;
    }
    case SV_RA_SHARPNESS: { /* PIL SMOOTH: 3x3 [1 1 1; 1 5 1; 1 1 1] / 13, border pixels kept */
        memcpy(scratch, img, n);
        ptrdiff_t R = (ptrdiff_t)side * c, C = c;
        for (int y = 1; y < side - 1; y++)
            for (ptrdiff_t e = C; e < R - C; e++) {
                const uint8_t *q = img + y * R + e;
                int s = q[-R - C] + q[-R] + q[-R + C] + q[-C] + 5 * q[0] + q[C] + q[R - C] + q[R] + q[R + C];
                scratch[y * R + e] = (uint8_t)((s + 6) / 13);
            }
        blend(img, scratch, 1, n, (float)(1.0 + sgn * 0.9 * f));
        return;
    }
    case SV_RA_ROTATE: { /* PIL Image.rotate(deg) about (side/2, side/2), counter-clockwise */
        double ang = -(sgn * 30.0 * f) * 3.14159265358979323846 / 180.0;
        double a = round15(cos(ang)), b = round15(sin(ang)), d = round15(-sin(ang)), e = a, cx = side / 2.0;
        double mtx[6] = {a, b, a * -cx + b * -cx + cx, d, e, d * -cx + e * -cx + cx};
        affine(img, side, c, mtx, fill, scratch);
        return;
    }
    case SV_RA_SHEAR_X: {
        double mtx[6] = {1, sgn * 0.3 * f, 0, 0, 1, 0};
        affine(img, side, c, mtx, fill, scratch);
        return;
    }
    case SV_RA_SHEAR_Y: {
        double mtx[6] = {1, 0, 0, sgn * 0.3 * f, 1, 0};
        affine(img, side, c, mtx, fill, scratch);
        return;
    }
    case SV_RA_TRANSLATE_X: {
        double mtx[6] = {1, 0, sgn * 0.45 * f * side, 0, 1, 0};
        affine(img, side, c, mtx, fill, scratch);
        return;
    }
    case SV_RA_TRANSLATE_Y: {
        double mtx[6] = {1, 0, 0, 0, 1, sgn * 0.45 * f * side};
        affine(img, side, c, mtx, fill, scratch);
        return;
    }
    }
}

void sv_randaug(uint64_t key, int n, double m, uint8_t *img, int side, int c, const uint8_t *fill, uint8_t *scratch) {
    for (int i = 0; i < n; i++) {
        sv_ra_op op = (sv_ra_op)(sv_rand_u64(key, 2 * (uint64_t)i) % SV_RA_NUM_OPS);
        int neg = sv_rand_unit(key, 2 * (uint64_t)i + 1) < 0.5;
        sv_randaug_apply(op, m, neg, img, side, c, fill, scratch);
    }
}
