/* RandAugment's fast paths (data/randaug_simd.c, the row loops of data/randaug.c) against the
 * scalar code they replaced, kept below verbatim (renamed ref_*) as the oracle: every op through
 * the public entry points (sv_randaug_apply, sv_randaug_layer_apply, sv_image_enhance,
 * sv_image_solarize, sv_image_grayscale), c = 1, 2, 3, sides 1 .. 225, noise / constant /
 * two-valued / narrow-range / smooth images, magnitudes 0 .. 30 in fine steps with both signs,
 * every interpolation of the geometric ops, byte for byte, at each kernel level the CPU runs
 * (sv_ra_simd_set_level; levels it lacks are reported as skipped). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "data/randaug.h"
#include "data/randaug_simd.h"

/* ---- the oracle: data/randaug.c's pixel code before the fast paths, verbatim but renamed ---- */

/* inlined here with c from the test's loops, gcc 12 sees lut[ch] stores it cannot bound */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

SV_TEST_ORACLE static void ref_apply_lut(uint8_t *img, size_t n, int c, const uint8_t lut[][256]) {
    for (size_t p = 0; p < n; p++)
        for (int ch = 0; ch < c; ch++) img[p * (size_t)c + (size_t)ch] = lut[ch][img[p * (size_t)c + (size_t)ch]];
}

SV_TEST_ORACLE static void ref_same_lut(uint8_t lut[][256], int c, int (*f)(int v, int arg), int arg) {
    for (int ch = 0; ch < c; ch++)
        for (int v = 0; v < 256; v++) {
            int r = f(v, arg);
            lut[ch][v] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        }
}

SV_TEST_ORACLE static int ref_f_invert(int v, int arg) {
    (void)arg;
    return 255 - v;
}
/* (the one change to the copy: the shift of the original was undefined for bits > 8 or < -23,
 * which timm-mapped layers reach at magnitudes past 10; these are the values Pillow/timm give) */
SV_TEST_ORACLE static int ref_f_posterize(int v, int bits) {
    int drop = 8 - bits;
    return drop <= 0 ? v : drop >= 8 ? 0 : v & ~((1 << drop) - 1);
}
SV_TEST_ORACLE static int ref_f_solarize(int v, int thresh) { return v >= thresh ? 255 - v : v; }
SV_TEST_ORACLE static int ref_f_solarize_add(int v, int add) { return v < 128 ? v + add : v; }

SV_TEST_ORACLE static void ref_histograms(const uint8_t *img, size_t n, int c, uint32_t h[][256]) {
    memset(h, 0, sizeof(uint32_t) * 256 * (size_t)c);
    for (size_t p = 0; p < n; p++)
        for (int ch = 0; ch < c; ch++) h[ch][img[p * (size_t)c + (size_t)ch]]++;
}

SV_TEST_ORACLE static void ref_autocontrast(uint8_t *img, size_t n, int c) { /* PIL ImageOps.autocontrast, cutoff 0 */
    uint32_t h[3][256];
    uint8_t lut[3][256];
    ref_histograms(img, n, c, h);
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
    ref_apply_lut(img, n, c, lut);
}

SV_TEST_ORACLE static void ref_equalize(uint8_t *img, size_t n, int c) { /* PIL ImageOps.equalize */
    uint32_t h[3][256];
    uint8_t lut[3][256];
    ref_histograms(img, n, c, h);
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
    ref_apply_lut(img, n, c, lut);
}

/* PIL ImagingBlend(degenerate, img, alpha): degenerate + alpha (img - degenerate), truncated
 * toward zero; clipped when extrapolating. deg may be a constant (deg_stride 0). */
SV_TEST_ORACLE static void ref_blend(uint8_t *img, const uint8_t *deg, size_t deg_stride, size_t n, float alpha) {
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

SV_TEST_ORACLE static uint8_t ref_luma(const uint8_t *p) { /* PIL convert("L"): ITU-R 601-2, 16-bit fixed point */
    return (uint8_t)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
}

SV_TEST_ORACLE static int ref_coord(double v) { return v < 0.0 ? -1 : (int)v; } /* PIL's COORD() */

SV_TEST_ORACLE static int ref_fits_fixed(const double m[6], int x, int y) { /* PIL's check_fixed */
    return fabs(x * m[0] + y * m[1] + m[2]) < 32768.0 && fabs(x * m[3] + y * m[4] + m[5]) < 32768.0;
}

SV_TEST_ORACLE static void ref_put(uint8_t *img, int side, int c, int x, int y, const uint8_t *scratch, int ix, int iy,
                                   const uint8_t *fill) {
    const uint8_t *s = ix >= 0 && ix < side && iy >= 0 && iy < side
        ? scratch + ((size_t)iy * (size_t)side + (size_t)ix) * (size_t)c
        : fill;
    uint8_t *d = img + ((size_t)y * (size_t)side + (size_t)x) * (size_t)c;
    for (int ch = 0; ch < c; ch++) d[ch] = s[ch];
}

SV_TEST_ORACLE static int ref_clip_side(int v, int side) {
    return v < 0 ? 0 : v < side ? v : side - 1;
} /* XCLIP / YCLIP */

/* Pillow's BILINEAR / BICUBIC of one line of samples (Geometry.c; exact in double for bytes). */
SV_TEST_ORACLE static double ref_lerp_px(double a, double b, double d) { return a + (b - a) * d; }
SV_TEST_ORACLE static double ref_cubic_px(double v1, double v2, double v3, double v4, double d) {
    double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
    return p1 + d * (p2 + d * (p3 + d * p4));
}

/* Channel ch of src at Pillow input point (xin, yin): 0 when it is outside the image (the
 * caller keeps the fill), else 1 with the filtered byte in *out. Pillow's bilinear_filter8 /
 * bicubic_filter8 (and their 32RGB twins, per band): taps clipped to the image in x, in y the
 * first row clipped and later rows outside it repeating the previous row's value. */
SV_TEST_ORACLE static int ref_filter_px(const uint8_t *src, int side, int c, int ch, double xin, double yin,
                                        sv_ra_interp f, uint8_t *out) {
    if (xin < 0.0 || xin >= side || yin < 0.0 || yin >= side) return 0;
    xin -= 0.5;
    yin -= 0.5;
    int x = xin < 0.0 ? (int)floor(xin) : (int)xin, y = yin < 0.0 ? (int)floor(yin) : (int)yin; /* FLOOR */
    double dx = xin - x, dy = yin - y;
    int taps = f == SV_RA_BICUBIC ? 4 : 2;
    if (taps == 4) x--, y--;
    double row[4];
    for (int r = 0; r < taps; r++) {
        int yy = r == 0 ? ref_clip_side(y, side) : y + r;
        if (r > 0 && (yy < 0 || yy >= side)) {
            row[r] = row[r - 1];
            continue;
        }
        double v[4];
        for (int k = 0; k < taps; k++)
            v[k] = src[((size_t)yy * (size_t)side + (size_t)ref_clip_side(x + k, side)) * (size_t)c + (size_t)ch];
        row[r] = taps == 4 ? ref_cubic_px(v[0], v[1], v[2], v[3], dx) : ref_lerp_px(v[0], v[1], dx);
    }
    if (taps == 2) {
        *out = (uint8_t)ref_lerp_px(row[0], row[1], dy);
        return 1;
    }
    double v = ref_cubic_px(row[0], row[1], row[2], row[3], dy);
    *out = v <= 0.0 ? 0 : v >= 255.0 ? 255 : (uint8_t)v;
    return 1;
}

/* Pillow's ImagingGenericTransform with affine_transform: the input point of every output pixel
 * computed afresh, a0 (x + .5) + a1 (y + .5) + a2, and filtered; outside points keep `fill`. */
SV_TEST_ORACLE static void ref_affine_filtered(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill,
                                               const uint8_t *scratch, sv_ra_interp f) {
    for (int y = 0; y < side; y++)
        for (int x = 0; x < side; x++) {
            double xi = x + 0.5, yi = y + 0.5;
            double xx = m[0] * xi + m[1] * yi + m[2], yy = m[3] * xi + m[4] * yi + m[5];
            uint8_t *d = img + ((size_t)y * (size_t)side + (size_t)x) * (size_t)c;
            for (int ch = 0; ch < c; ch++)
                if (!ref_filter_px(scratch, side, c, ch, xx, yy, f, d + ch)) d[ch] = fill[ch];
        }
}

/* Sample img through the PIL affine map (output pixel centre (x+.5, y+.5) -> input
 * (a x + b y + c, d x + e y + f)), fill outside. Bilinear / bicubic: affine_filtered. Nearest:
 * the arithmetic of Pillow's ImagingTransformAffine for NEAREST: a pure scale/translate walks
 * doubles per axis; otherwise 16.16 fixed point stepped per pixel when the coordinates fit,
 * else doubles stepped likewise. */
SV_TEST_ORACLE static void ref_affine(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill,
                                      uint8_t *scratch, sv_ra_interp f) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    memcpy(scratch, img, n);
    if (f == SV_RA_BILINEAR || f == SV_RA_BICUBIC) {
        ref_affine_filtered(img, side, c, m, fill, scratch, f);
        return;
    }
    if (m[1] == 0 && m[3] == 0) {
        double yo = m[5] + m[4] * 0.5;
        for (int y = 0; y < side; y++, yo += m[4]) {
            double xo = m[2] + m[0] * 0.5;
            int iy = ref_coord(yo);
            for (int x = 0; x < side; x++, xo += m[0]) ref_put(img, side, c, x, y, scratch, ref_coord(xo), iy, fill);
        }
        return;
    }
    if (ref_fits_fixed(m, 0, 0) && ref_fits_fixed(m, side, side)) {
        int32_t a0 = (int32_t)floor(m[0] * 65536.0 + 0.5), a1 = (int32_t)floor(m[1] * 65536.0 + 0.5);
        int32_t a3 = (int32_t)floor(m[3] * 65536.0 + 0.5), a4 = (int32_t)floor(m[4] * 65536.0 + 0.5);
        int32_t a2 = (int32_t)floor((m[2] + m[0] * 0.5 + m[1] * 0.5) * 65536.0 + 0.5);
        int32_t a5 = (int32_t)floor((m[5] + m[3] * 0.5 + m[4] * 0.5) * 65536.0 + 0.5);
        for (int y = 0; y < side; y++, a2 += a1, a5 += a4) {
            int32_t xx = a2, yy = a5;
            for (int x = 0; x < side; x++, xx += a0, yy += a3)
                ref_put(img, side, c, x, y, scratch, xx >> 16, yy >> 16, fill);
        }
        return;
    }
    double xo = m[2] + m[1] * 0.5 + m[0] * 0.5, yo = m[5] + m[4] * 0.5 + m[3] * 0.5;
    for (int y = 0; y < side; y++, xo += m[1], yo += m[4]) {
        double xx = xo, yy = yo;
        for (int x = 0; x < side; x++, xx += m[0], yy += m[3])
            ref_put(img, side, c, x, y, scratch, ref_coord(xx), ref_coord(yy), fill);
    }
}

SV_TEST_ORACLE static double ref_round15(double v) { return nearbyint(v * 1e15) / 1e15; } /* Python round(v, 15) */

/* One op with its final argument: bits kept (Posterize), threshold (Solarize), addend
 * (SolarizeAdd), blend factor (Color, Contrast, Brightness, Sharpness), degrees (Rotate), shear,
 * pixels (Translate). The magnitude -> argument mappings (legacy and timm) live in their callers. */
SV_TEST_ORACLE static void ref_apply_arg(sv_ra_op op, double arg, uint8_t *img, int side, int c, const uint8_t *fill,
                                         uint8_t *scratch, sv_ra_interp interp) {
    size_t npx = (size_t)side * (size_t)side, n = npx * (size_t)c;
    uint8_t lut[3][256];
    switch (op) {
    case SV_RA_IDENTITY:
    case SV_RA_NUM_OPS: return;
    case SV_RA_AUTOCONTRAST: ref_autocontrast(img, npx, c); return;
    case SV_RA_EQUALIZE: ref_equalize(img, npx, c); return;
    case SV_RA_INVERT:
        ref_same_lut(lut, c, ref_f_invert, 0);
        ref_apply_lut(img, npx, c, lut);
        return;
    case SV_RA_POSTERIZE:
        ref_same_lut(lut, c, ref_f_posterize, (int)arg);
        ref_apply_lut(img, npx, c, lut);
        return;
    case SV_RA_SOLARIZE:
        ref_same_lut(lut, c, ref_f_solarize, (int)arg);
        ref_apply_lut(img, npx, c, lut);
        return;
    case SV_RA_SOLARIZE_ADD:
        ref_same_lut(lut, c, ref_f_solarize_add, (int)arg);
        ref_apply_lut(img, npx, c, lut);
        return;
    case SV_RA_COLOR:
        if (c != 3) return;
        for (size_t p = 0; p < npx; p++) scratch[p] = ref_luma(img + 3 * p);
        for (size_t p = 0; p < npx; p++) ref_blend(img + 3 * p, scratch + p, 0, 3, (float)arg);
        return;
    case SV_RA_CONTRAST: {
        double sum = 0;
        for (size_t p = 0; p < npx; p++) sum += c == 3 ? ref_luma(img + 3 * p) : img[p];
        uint8_t mean = (uint8_t)(int)(sum / (double)npx + 0.5);
        ref_blend(img, &mean, 0, n, (float)arg);
        return;
    }
    case SV_RA_BRIGHTNESS: {
        uint8_t zero = 0;
        ref_blend(img, &zero, 0, n, (float)arg);
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
        ref_blend(img, scratch, 1, n, (float)arg);
        return;
    }
    case SV_RA_ROTATE: { /* PIL Image.rotate(deg) about (side/2, side/2), counter-clockwise */
        double ang = -arg * 3.14159265358979323846 / 180.0;
        double a = ref_round15(cos(ang)), b = ref_round15(sin(ang)), d = ref_round15(-sin(ang)), e = a, cx = side / 2.0;
        double mtx[6] = {a, b, a * -cx + b * -cx + cx, d, e, d * -cx + e * -cx + cx};
        ref_affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_SHEAR_X: {
        double mtx[6] = {1, arg, 0, 0, 1, 0};
        ref_affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_SHEAR_Y: {
        double mtx[6] = {1, 0, 0, arg, 1, 0};
        ref_affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_TRANSLATE_X: {
        double mtx[6] = {1, 0, arg, 0, 1, 0};
        ref_affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_TRANSLATE_Y: {
        double mtx[6] = {1, 0, 0, 0, 1, arg};
        ref_affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    }
}

SV_TEST_ORACLE static void ref_randaug_apply(sv_ra_op op, double m, int negate, uint8_t *img, int side, int c,
                                             const uint8_t *fill, uint8_t *scratch) {
    double f = m / 10.0, sgn = negate ? -1.0 : 1.0, arg = 0;
    switch (op) {
    case SV_RA_POSTERIZE: {
        int bits = 8 - (int)nearbyint(4.0 * f);
        arg = bits < 1 ? 1 : bits > 8 ? 8 : bits;
        break;
    }
    case SV_RA_SOLARIZE: arg = 256 - (int)(f * 256.0); break;
    case SV_RA_SOLARIZE_ADD: arg = (int)(f * 110.0); break;
    case SV_RA_COLOR:
    case SV_RA_CONTRAST:
    case SV_RA_BRIGHTNESS:
    case SV_RA_SHARPNESS: arg = (float)(1.0 + sgn * 0.9 * f); break;
    case SV_RA_ROTATE: arg = sgn * 30.0 * f; break;
    case SV_RA_SHEAR_X:
    case SV_RA_SHEAR_Y: arg = sgn * 0.3 * f; break;
    case SV_RA_TRANSLATE_X:
    case SV_RA_TRANSLATE_Y: arg = sgn * 0.45 * f * side; break;
    default: break;
    }
    ref_apply_arg(op, arg, img, side, c, fill, scratch, SV_RA_NEAREST);
}

SV_TEST_ORACLE static void ref_image_enhance(sv_ra_op op, double factor, uint8_t *img, int side, int c,
                                             uint8_t *scratch) {
    if (op == SV_RA_COLOR || op == SV_RA_CONTRAST || op == SV_RA_BRIGHTNESS || op == SV_RA_SHARPNESS)
        ref_apply_arg(op, (float)factor, img, side, c, NULL, scratch, SV_RA_NEAREST);
}

SV_TEST_ORACLE static void ref_image_solarize(uint8_t *img, int side, int c, int thresh) {
    ref_apply_arg(SV_RA_SOLARIZE, thresh, img, side, c, NULL, NULL, SV_RA_NEAREST);
}

SV_TEST_ORACLE static void ref_image_grayscale(uint8_t *img, int side, int c) {
    if (c != 3) return;
    size_t npx = (size_t)side * (size_t)side;
    for (size_t p = 0; p < npx; p++) img[3 * p] = img[3 * p + 1] = img[3 * p + 2] = ref_luma(img + 3 * p);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* ---- the checks ---- */

enum { MAXS = 225, MAXN = MAXS * MAXS * 3 };
static uint8_t src[MAXN], got[MAXN], want[MAXN], scr_got[MAXN], scr_want[MAXN];
/* The kernel levels this CPU runs. Every case computes the oracle once (it does not depend on
 * the level) and then the fast path at each level in turn (EACH_LEVEL): the oracle was most of
 * the test's time when each level ran the whole set on its own. */
static sv_ra_isa g_levels[3];
static int g_nlevels, g_cur;
static long g_cases[3];
static const char *g_level = "?";

static int set_level(int l) {
    CHECK(sv_ra_simd_set_level(g_levels[l]) == g_levels[l]);
    g_cur = l;
    g_level = sv_ra_isa_name(g_levels[l]);
    return 1;
}
#define EACH_LEVEL(l) for (int l = 0; l < g_nlevels && set_level(l); l++)

/* The scratch of the fast path (side*side*c bytes, the API's contract), filled with a pattern of
 * this level's first: a kernel that reads scratch bytes it did not write would otherwise find
 * the previous level's (correct) intermediate there and pass. */
static uint8_t *scratch(size_t n) {
    memset(scr_got, 0xA5 ^ (0x3C * (g_cur + 1)), n);
    return scr_got;
}

static const char *const k_kinds[] = {"noise", "constant", "two-valued", "narrow", "smooth", "extremes"};
enum { NKIND = 6 };

static void make_image(int kind, uint64_t seed, int side, int c) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    uint8_t v0 = (uint8_t)sv_rand_u64(seed, 1000001), v1 = (uint8_t)sv_rand_u64(seed, 1000002);
    if (seed % 5 == 0) v0 = 0, v1 = 255;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = sv_rand_u64(seed, i);
        size_t p = i / (size_t)c, x = p % (size_t)side, y = p / (size_t)side;
        switch (kind) {
        case 0: src[i] = (uint8_t)r; break;
        case 1: src[i] = v0; break;
        case 2: src[i] = r & 1 ? v0 : v1; break;
        case 3: src[i] = (uint8_t)(v0 / 2 + r % 9); break;
        case 4: src[i] = (uint8_t)(v0 + (x * 7 + y * 3 + (i % (size_t)c) * 50) / 4 + (r & 3)); break;
        default: src[i] = r % 3 == 0 ? 0 : r % 3 == 1 ? 255 : (uint8_t)r; break;
        }
    }
}

static void compare(const char *what, int op, double arg, int side, int c, int kind, int interp) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    g_cases[g_cur]++;
    if (!memcmp(got, want, n)) return;
    size_t i = 0;
    while (got[i] == want[i]) i++;
    fprintf(stderr,
            "MISMATCH [%s] %s op %s arg %.17g side %d c %d image %s interp %d: byte %zu (pixel %zu, channel %zu) "
            "got %d want %d (source %d)\n",
            g_level, what, sv_randaug_op_name((sv_ra_op)op), arg, side, c, k_kinds[kind], interp, i, i / (size_t)c,
            i % (size_t)c, got[i], want[i], src[i]);
    exit(1);
}

static void check_apply(int op, double m, int neg, int side, int c, int kind, const uint8_t *fill) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    memcpy(want, src, n);
    ref_randaug_apply((sv_ra_op)op, m, neg, want, side, c, fill, scr_want);
    EACH_LEVEL(l) {
        memcpy(got, src, n);
        sv_randaug_apply((sv_ra_op)op, m, neg, got, side, c, fill, scratch(n));
        compare(neg ? "sv_randaug_apply (negated)" : "sv_randaug_apply", op, m, side, c, kind, 0);
    }
}

static void check_layer(int op, double arg, sv_ra_interp f, int side, int c, int kind, const uint8_t *fill) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    memcpy(want, src, n);
    ref_apply_arg((sv_ra_op)op, arg, want, side, c, fill, scr_want, f);
    const sv_ra_layer layer = {(sv_ra_op)op, arg, f};
    EACH_LEVEL(l) {
        memcpy(got, src, n);
        sv_randaug_layer_apply(&layer, got, side, c, fill, scratch(n));
        compare("sv_randaug_layer_apply", op, arg, side, c, kind, (int)f);
    }
}

static int is_geo(int op) {
    return op == SV_RA_ROTATE || op == SV_RA_SHEAR_X || op == SV_RA_SHEAR_Y || op == SV_RA_TRANSLATE_X ||
        op == SV_RA_TRANSLATE_Y;
}

static void run_image(int side, int c, int kind, uint64_t seed, double mstep) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    uint8_t fill[3] = {(uint8_t)sv_rand_u64(seed, 77), (uint8_t)sv_rand_u64(seed, 78), (uint8_t)sv_rand_u64(seed, 79)};
    make_image(kind, seed, side, c);
    /* the legacy ops at magnitudes 0 .. 30 */
    for (int op = 0; op < SV_RA_NUM_OPS; op++)
        for (double m = 0; m <= 30.0 + 1e-9; m += mstep)
            for (int neg = 0; neg < 2; neg++) check_apply(op, m, neg, side, c, kind, fill);
    /* timm's layers: random magnitudes, both mappings and signs, every interpolation */
    for (int i = 0; i < 3 * SV_RA_TIMM_NUM_OPS; i++) {
        int op = sv_randaug_timm_op(i % SV_RA_TIMM_NUM_OPS);
        double mag = 30.0 * sv_rand_unit(seed, 5000 + (uint64_t)i);
        int inc = i / SV_RA_TIMM_NUM_OPS % 2, neg = (int)(sv_rand_u64(seed, 6000 + (uint64_t)i) & 1);
        double arg = sv_randaug_timm_arg((sv_ra_op)op, mag, inc, neg, side);
        for (int f = 0; f < (is_geo(op) ? 3 : 1); f++) check_layer(op, arg, (sv_ra_interp)f, side, c, kind, fill);
    }
    /* geometric ops with free arguments (large shears and translations, any angle) */
    for (int i = 0; i < 12; i++) {
        double u = 2.0 * sv_rand_unit(seed, 7000 + (uint64_t)i) - 1.0;
        const double args[5] = {400.0 * u, 2.5 * u, 2.5 * u, 1.6 * side * u, 1.6 * side * u};
        const int ops[5] = {SV_RA_ROTATE, SV_RA_SHEAR_X, SV_RA_SHEAR_Y, SV_RA_TRANSLATE_X, SV_RA_TRANSLATE_Y};
        for (int k = 0; k < 5; k++)
            for (int f = 0; f < 3; f++) check_layer(ops[k], args[k], (sv_ra_interp)f, side, c, kind, fill);
    }
    const double exact_args[] = {0, 90, -90, 180, 45, 1, -1, 0.5, 0.25, 3, -3};
    for (size_t i = 0; i < sizeof exact_args / sizeof *exact_args; i++)
        for (int k = 0; k < 5; k++) {
            const int ops[5] = {SV_RA_ROTATE, SV_RA_SHEAR_X, SV_RA_SHEAR_Y, SV_RA_TRANSLATE_X, SV_RA_TRANSLATE_Y};
            check_layer(ops[k], exact_args[i], SV_RA_NEAREST, side, c, kind, fill);
        }
    /* the shared building blocks */
    const double factors[] = {0, 1, 0.5, -0.5, 2, 1.0000001, 0.9999999, 5.5, -3};
    for (int op = SV_RA_COLOR; op <= SV_RA_SHARPNESS; op++)
        for (int i = 0; i < 9 + 6; i++) {
            double fct = i < 9 ? factors[i] : 8.0 * sv_rand_unit(seed, 8000 + (uint64_t)(op * 16 + i)) - 2.0;
            memcpy(want, src, n);
            ref_image_enhance((sv_ra_op)op, fct, want, side, c, scr_want);
            EACH_LEVEL(l) {
                memcpy(got, src, n);
                sv_image_enhance((sv_ra_op)op, fct, got, side, c, scratch(n));
                compare("sv_image_enhance", op, fct, side, c, kind, 0);
            }
        }
    for (int t = -2; t <= 258; t += t < 250 ? 7 : 1) {
        memcpy(want, src, n);
        ref_image_solarize(want, side, c, t);
        EACH_LEVEL(l) {
            memcpy(got, src, n);
            sv_image_solarize(got, side, c, t);
            compare("sv_image_solarize", SV_RA_SOLARIZE, t, side, c, kind, 0);
        }
    }
    memcpy(want, src, n);
    ref_image_grayscale(want, side, c);
    EACH_LEVEL(l) {
        memcpy(got, src, n);
        sv_image_grayscale(got, side, c);
        compare("sv_image_grayscale", SV_RA_IDENTITY, 0, side, c, kind, 0);
    }
}

static void run_cases(void) {
    static const int small[] = {1, 2, 3, 7, 31, 64};
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof small / sizeof *small; s++)
        for (int c = 1; c <= 3; c++)
            for (int kind = 0; kind < NKIND; kind++) run_image(small[s], c, kind, seed++, small[s] < 64 ? 0.25 : 0.5);
    static const int big[] = {224, 225};
    static const int big_kinds[] = {0, 2, 4, 5};
    for (int s = 0; s < 2; s++)
        for (int c = 1; c <= 3; c += 2)
            for (int k = 0; k < 4; k++) run_image(big[s], c, big_kinds[k], seed++, 2.5);
}

int main(void) {
    const sv_ra_isa best = sv_ra_simd_best();
    for (int lv = SV_RA_ISA_SCALAR; lv <= SV_RA_ISA_AVX512; lv++) {
        if (lv > (int)best) {
            fprintf(stderr,
                    "*** randaug_fast: level %s SKIPPED: this CPU or build lacks it (best here: %s); not tested ***\n",
                    sv_ra_isa_name((sv_ra_isa)lv), sv_ra_isa_name(best));
            continue;
        }
        g_levels[g_nlevels++] = (sv_ra_isa)lv;
    }
    CHECK(g_nlevels >= 1);
    run_cases();
    for (int l = 0; l < g_nlevels; l++)
        printf("randaug_fast: level %s: %ld cases byte-exact with the scalar oracle\n", sv_ra_isa_name(g_levels[l]),
               g_cases[l]);
    CHECK(g_cases[0] > 0);
    for (int l = 1; l < g_nlevels; l++) CHECK(g_cases[l] == g_cases[0]);
    printf("randaug_fast: %d of 3 levels ran\n", g_nlevels);
    return 0;
}
