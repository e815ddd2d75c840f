#include "data/randaug.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "data/randaug_simd.h"

static const char *const k_names[SV_RA_NUM_OPS] = {
    "Identity", "AutoContrast", "Equalize",   "Invert",    "Rotate", "Posterize", "Solarize",   "SolarizeAdd",
    "Color",    "Contrast",     "Brightness", "Sharpness", "ShearX", "ShearY",    "TranslateX", "TranslateY"};

const char *sv_randaug_op_name(sv_ra_op op) { return op >= 0 && op < SV_RA_NUM_OPS ? k_names[op] : "?"; }

static void apply_lut(uint8_t *img, size_t n, int c, const uint8_t lut[][256]) {
    sv_ra_kernels_get()->lut(img, n, c, lut);
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
/* Keep the top `bits` bits: 8 or more keep all (timm's posterize returns the image), none or
 * fewer keep none (Pillow's mask 2**(8 - bits) - 1 covers every bit then); no shift of a
 * negative or too wide count. */
static int f_posterize(int v, int bits) {
    int drop = 8 - bits;
    return drop <= 0 ? v : drop >= 8 ? 0 : v & ~((1 << drop) - 1);
}
static int f_solarize(int v, int thresh) { return v >= thresh ? 255 - v : v; }
static int f_solarize_add(int v, int add) { return v < 128 ? v + add : v; }

/* Per-channel histograms of n pixels, counted into four interleaved sub-histograms (so that
 * runs of one value do not chain every increment through the same counter) and summed. */
static void histograms(const uint8_t *img, size_t n, int c, uint32_t h[][256]) {
    uint32_t sub[4][3][256];
    memset(sub, 0, sizeof sub);
    size_t p = 0;
    if (c == 1)
        for (; p + 4 <= n; p += 4) {
            sub[0][0][img[p]]++;
            sub[1][0][img[p + 1]]++;
            sub[2][0][img[p + 2]]++;
            sub[3][0][img[p + 3]]++;
        }
    else if (c == 3)
        for (; p + 4 <= n; p += 4) {
            const uint8_t *q = img + 3 * p;
            for (int k = 0; k < 4; k++) {
                sub[k][0][q[3 * k]]++;
                sub[k][1][q[3 * k + 1]]++;
                sub[k][2][q[3 * k + 2]]++;
            }
        }
    for (; p < n; p++)
        for (int ch = 0; ch < c; ch++) sub[0][ch][img[p * (size_t)c + (size_t)ch]]++;
    for (int ch = 0; ch < c; ch++)
        for (int v = 0; v < 256; v++) h[ch][v] = sub[0][ch][v] + sub[1][ch][v] + sub[2][ch][v] + sub[3][ch][v];
}

/* Per channel the least and greatest value of n pixels (c = 1..3): the first and last non-empty
 * bins of its histogram. Blocks of 96 bytes (a multiple of every c) are folded bytewise, which
 * vectorises; byte j of a block is channel j % c. */
static void channel_range(const uint8_t *img, size_t n, int c, int lo[3], int hi[3]) {
    uint8_t mn[96], mx[96];
    memset(mn, 255, sizeof mn);
    memset(mx, 0, sizeof mx);
    size_t len = n * (size_t)c, e = 0;
    for (; e + 96 <= len; e += 96)
        for (int j = 0; j < 96; j++) {
            uint8_t v = img[e + (size_t)j];
            mn[j] = v < mn[j] ? v : mn[j];
            mx[j] = v > mx[j] ? v : mx[j];
        }
    for (int ch = 0; ch < c; ch++) lo[ch] = 256, hi[ch] = -1;
    if (e) /* a block was folded (else mn, mx hold no pixel) */
        for (int j = 0; j < 96; j++) {
            int ch = j % c;
            lo[ch] = mn[j] < lo[ch] ? mn[j] : lo[ch];
            hi[ch] = mx[j] > hi[ch] ? mx[j] : hi[ch];
        }
    for (; e < len; e++) {
        int ch = (int)(e % (size_t)c);
        lo[ch] = img[e] < lo[ch] ? img[e] : lo[ch];
        hi[ch] = img[e] > hi[ch] ? img[e] : hi[ch];
    }
}

static void autocontrast(uint8_t *img, size_t n, int c) { /* PIL ImageOps.autocontrast, cutoff 0 */
    uint8_t lut[3][256];
    int lows[3], highs[3];
    channel_range(img, n, c, lows, highs);
    for (int ch = 0; ch < c; ch++) {
        int lo = lows[ch], hi = highs[ch];
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

/* PIL ImagingBlend(degenerate, img, alpha) is the blend kernels' (data/randaug_simd.h):
 * degenerate + alpha (img - degenerate) in float, truncated toward zero; clipped when
 * extrapolating. PIL convert("L") (ITU-R 601-2, 16-bit fixed point) is their luma. */

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

static int clip_side(int v, int side) { return v < 0 ? 0 : v < side ? v : side - 1; } /* XCLIP / YCLIP */

/* Pillow's BILINEAR / BICUBIC of one line of samples (Geometry.c; exact in double for bytes). */
static double lerp_px(double a, double b, double d) { return a + (b - a) * d; }
static double cubic_px(double v1, double v2, double v3, double v4, double d) {
    double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
    return p1 + d * (p2 + d * (p3 + d * p4));
}

/* src at Pillow input point (xin, yin), every channel: 0 when it is outside the image (the
 * caller keeps the fill), else 1 with the filtered bytes in out[0..c-1]. Pillow's
 * bilinear_filter8 / bicubic_filter8 (and their 32RGB twins, per band): taps clipped to the
 * image in x, in y the first row clipped and later rows outside it repeating the previous row's
 * value. The taps' positions are found once for all channels (each channel's arithmetic is
 * unchanged). */
static int filter_px(const uint8_t *src, int side, int c, double xin, double yin, sv_ra_interp f, uint8_t *out) {
    if (xin < 0.0 || xin >= side || yin < 0.0 || yin >= side) return 0;
    xin -= 0.5;
    yin -= 0.5;
    int x = xin < 0.0 ? (int)floor(xin) : (int)xin, y = yin < 0.0 ? (int)floor(yin) : (int)yin; /* FLOOR */
    double dx = xin - x, dy = yin - y;
    const int taps = f == SV_RA_BICUBIC ? 4 : 2;
    if (taps == 4) x--, y--;
    const uint8_t *rowp[4]; /* NULL: repeat the previous row's value */
    size_t col[4];
    for (int r = 0; r < taps; r++) {
        int yy = r == 0 ? clip_side(y, side) : y + r;
        rowp[r] = r > 0 && (yy < 0 || yy >= side) ? NULL : src + (size_t)yy * (size_t)side * (size_t)c;
        col[r] = (size_t)clip_side(x + r, side) * (size_t)c;
    }
    for (int ch = 0; ch < c; ch++) {
        double row[4];
        for (int r = 0; r < taps; r++) {
            if (!rowp[r]) {
                row[r] = row[r - 1];
                continue;
            }
            const uint8_t *q = rowp[r] + ch;
            row[r] = taps == 4 ? cubic_px(q[col[0]], q[col[1]], q[col[2]], q[col[3]], dx)
                               : lerp_px(q[col[0]], q[col[1]], dx);
        }
        if (taps == 2) {
            out[ch] = (uint8_t)lerp_px(row[0], row[1], dy);
            continue;
        }
        double v = cubic_px(row[0], row[1], row[2], row[3], dy);
        out[ch] = v <= 0.0 ? 0 : v >= 255.0 ? 255 : (uint8_t)v;
    }
    return 1;
}

/* Pillow's ImagingGenericTransform with affine_transform: the input point of every output pixel
 * computed afresh, a0 (x + .5) + a1 (y + .5) + a2, and filtered; outside points keep `fill`. */
static void affine_filtered(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill,
                            const uint8_t *scratch, sv_ra_interp f) {
    for (int y = 0; y < side; y++)
        for (int x = 0; x < side; x++) {
            double xi = x + 0.5, yi = y + 0.5;
            double xx = m[0] * xi + m[1] * yi + m[2], yy = m[3] * xi + m[4] * yi + m[5];
            uint8_t *d = img + ((size_t)y * (size_t)side + (size_t)x) * (size_t)c;
            if (!filter_px(scratch, side, c, xx, yy, f, d))
                for (int ch = 0; ch < c; ch++) d[ch] = fill[ch];
        }
}

/* Output pixels [x0, x1) of row d take fill. */
static void fill_run(uint8_t *d, int c, int x0, int x1, const uint8_t *fill) {
    if (c == 1) {
        if (x1 > x0) memset(d + x0, fill[0], (size_t)(x1 - x0));
        return;
    }
    for (int x = x0; x < x1; x++)
        for (int ch = 0; ch < c; ch++) d[(size_t)x * (size_t)c + (size_t)ch] = fill[ch];
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Narrow [*lo, *hi) to the x where lo_v <= v0 + x dv <= hi_v. */
static void keep_inside(int64_t v0, int64_t dv, int64_t lo_v, int64_t hi_v, int64_t *lo, int64_t *hi) {
    int64_t a, b; /* inclusive */
    if (dv == 0) {
        if (v0 < lo_v || v0 > hi_v) *hi = *lo;
        return;
    }
    if (dv > 0) {
        a = -floor_div(v0 - lo_v, dv); /* ceil((lo_v - v0) / dv) */
        b = floor_div(hi_v - v0, dv);
    } else {
        a = -floor_div(v0 - hi_v, dv);
        b = floor_div(lo_v - v0, dv);
    }
    if (a > *lo) *lo = a;
    if (b + 1 < *hi) *hi = b + 1;
    if (*hi < *lo) *hi = *lo;
}

enum { MAX_TABLE_SIDE = 2048 }; /* sides up to this use the fast scale/translate rows */

/* Pillow's pure scale/translate walk: the doubles xo stepped along a row are the same on every
 * row, so the columns' source indices (and their runs of consecutive inside pixels, one memcpy
 * each) are worked out once. */
static void affine_translate(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill,
                             const uint8_t *scratch) {
    int32_t run_x[MAX_TABLE_SIDE], run_len[MAX_TABLE_SIDE], run_src[MAX_TABLE_SIDE]; /* src -1: fill */
    int nrun = 0;
    double xo = m[2] + m[0] * 0.5;
    for (int x = 0; x < side; x++, xo += m[0]) {
        int ix = coord(xo), src = ix >= 0 && ix < side ? ix : -1;
        if (nrun &&
            (src < 0 ? run_src[nrun - 1] < 0 : run_src[nrun - 1] >= 0 && run_src[nrun - 1] + run_len[nrun - 1] == src))
            run_len[nrun - 1]++;
        else
            run_x[nrun] = x, run_len[nrun] = 1, run_src[nrun++] = src;
    }
    const size_t row = (size_t)side * (size_t)c;
    double yo = m[5] + m[4] * 0.5;
    for (int y = 0; y < side; y++, yo += m[4]) {
        int iy = coord(yo);
        uint8_t *d = img + (size_t)y * row;
        if (iy < 0 || iy >= side) {
            fill_run(d, c, 0, side, fill);
            continue;
        }
        const uint8_t *s = scratch + (size_t)iy * row;
        for (int r = 0; r < nrun; r++)
            if (run_src[r] < 0)
                fill_run(d, c, run_x[r], run_x[r] + run_len[r], fill);
            else
                memcpy(d + (size_t)run_x[r] * (size_t)c, s + (size_t)run_src[r] * (size_t)c,
                       (size_t)run_len[r] * (size_t)c);
    }
}

/* Pillow's 16.16 fixed-point walk, row by row: on row y the source point of column x is
 * (xx0 + x a0, yy0 + x a3) >> 16, so the columns whose point is inside form one range, found
 * exactly in integers; the rest take the fill. A row whose int32 walk would wrap takes the
 * per-pixel walk as before. */
static void affine_fixed(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill,
                         const uint8_t *scratch) {
    int32_t a0 = (int32_t)floor(m[0] * 65536.0 + 0.5), a1 = (int32_t)floor(m[1] * 65536.0 + 0.5);
    int32_t a3 = (int32_t)floor(m[3] * 65536.0 + 0.5), a4 = (int32_t)floor(m[4] * 65536.0 + 0.5);
    int32_t a2 = (int32_t)floor((m[2] + m[0] * 0.5 + m[1] * 0.5) * 65536.0 + 0.5);
    int32_t a5 = (int32_t)floor((m[5] + m[3] * 0.5 + m[4] * 0.5) * 65536.0 + 0.5);
    const size_t row = (size_t)side * (size_t)c;
    const int64_t top = ((int64_t)side << 16) - 1, last = side - 1;
    for (int y = 0; y < side; y++, a2 += a1, a5 += a4) {
        uint8_t *d = img + (size_t)y * row;
        const int64_t xe = a2 + last * a0, ye = a5 + last * a3;
        if (xe < INT32_MIN || xe > INT32_MAX || ye < INT32_MIN || ye > INT32_MAX) {
            int32_t xx = a2, yy = a5;
            for (int x = 0; x < side; x++, xx += a0, yy += a3)
                put(img, side, c, x, y, scratch, xx >> 16, yy >> 16, fill);
            continue;
        }
        int64_t lo = 0, hi = side;
        keep_inside(a2, a0, 0, top, &lo, &hi);
        keep_inside(a5, a3, 0, top, &lo, &hi);
        if (lo > side) lo = hi = side; /* no column inside (the range lies past the row): all fill */
        fill_run(d, c, 0, (int)lo, fill);
        fill_run(d, c, (int)hi, side, fill);
        if (hi <= lo) continue;
        int32_t xx = (int32_t)(a2 + lo * a0), yy = (int32_t)(a5 + lo * a3);
        uint8_t *o = d + (size_t)lo * (size_t)c;
        const int len = (int)(hi - lo);
        if (a0 == 65536 && a3 == 0) { /* a row of the source, shifted (ShearX) */
            memcpy(o, scratch + ((size_t)(yy >> 16) * (size_t)side + (size_t)(xx >> 16)) * (size_t)c,
                   (size_t)len * (size_t)c);
        } else {
            sv_ra_kernels_get()->gather(scratch, side, c, xx, yy, a0, a3, o, len);
        }
    }
}

/* Sample img through the PIL affine map (output pixel centre (x+.5, y+.5) -> input
 * (a x + b y + c, d x + e y + f)), fill outside. Bilinear / bicubic: affine_filtered. Nearest:
 * the arithmetic of Pillow's ImagingTransformAffine for NEAREST: a pure scale/translate walks
 * doubles per axis (affine_translate); otherwise 16.16 fixed point stepped per pixel when the
 * coordinates fit (affine_fixed), else doubles stepped likewise. */
static void affine(uint8_t *img, int side, int c, const double m[6], const uint8_t *fill, uint8_t *scratch,
                   sv_ra_interp f) {
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    memcpy(scratch, img, n);
    if (f == SV_RA_BILINEAR || f == SV_RA_BICUBIC) {
        affine_filtered(img, side, c, m, fill, scratch, f);
        return;
    }
    if (m[1] == 0 && m[3] == 0) {
        if (side <= MAX_TABLE_SIDE) {
            affine_translate(img, side, c, m, fill, scratch);
            return;
        }
        double yo = m[5] + m[4] * 0.5;
        for (int y = 0; y < side; y++, yo += m[4]) {
            double xo = m[2] + m[0] * 0.5;
            int iy = coord(yo);
            for (int x = 0; x < side; x++, xo += m[0]) put(img, side, c, x, y, scratch, coord(xo), iy, fill);
        }
        return;
    }
    if (fits_fixed(m, 0, 0) && fits_fixed(m, side, side)) {
        affine_fixed(img, side, c, m, fill, scratch);
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

/* One op with its final argument: bits kept (Posterize), threshold (Solarize), addend
 * (SolarizeAdd), blend factor (Color, Contrast, Brightness, Sharpness), degrees (Rotate), shear,
 * pixels (Translate). The magnitude -> argument mappings (legacy and timm) live in their callers. */
static void apply_arg(sv_ra_op op, double arg, uint8_t *img, int side, int c, const uint8_t *fill, uint8_t *scratch,
                      sv_ra_interp interp) {
    size_t npx = (size_t)side * (size_t)side, n = npx * (size_t)c;
    uint8_t lut[3][256];
    const sv_ra_kernels *k = sv_ra_kernels_get();
    switch (op) {
    case SV_RA_IDENTITY:
    case SV_RA_NUM_OPS: return;
    case SV_RA_AUTOCONTRAST: autocontrast(img, npx, c); return;
    case SV_RA_EQUALIZE: equalize(img, npx, c); return;
    case SV_RA_INVERT:
        same_lut(lut, c, f_invert, 0);
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_POSTERIZE:
        same_lut(lut, c, f_posterize, (int)arg);
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_SOLARIZE:
        same_lut(lut, c, f_solarize, (int)arg);
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_SOLARIZE_ADD:
        same_lut(lut, c, f_solarize_add, (int)arg);
        apply_lut(img, npx, c, lut);
        return;
    case SV_RA_COLOR: /* blend with the grey (luma) of each pixel */
        if (c != 3) return;
        k->luma3(img, scratch, npx);
        k->blend_buf(img, scratch, n, (float)arg);
        return;
    case SV_RA_CONTRAST: { /* the sum of integers is exact in double: the same mean either way */
        uint64_t sum = 0;
        if (c == 3)
            sum = k->luma_sum(img, npx);
        else
            for (size_t p = 0; p < npx; p++) sum += img[p];
        uint8_t mean = (uint8_t)(int)((double)sum / (double)npx + 0.5);
        k->blend_const(img, mean, n, (float)arg);
        return;
    }
    case SV_RA_BRIGHTNESS: k->blend_const(img, 0, n, (float)arg); return;
    case SV_RA_SHARPNESS: { /* PIL SMOOTH: 3x3 [1 1 1; 1 5 1; 1 1 1] / 13, border pixels kept */
        size_t R = (size_t)side * (size_t)c;
        if (side <= 2) { /* no interior: every pixel is kept */
            memcpy(scratch, img, n);
        } else { /* the border of scratch = img's (it blends to itself), the interior SMOOTH */
            memcpy(scratch, img, R);
            memcpy(scratch + n - R, img + n - R, R);
            for (size_t y = 1; y + 1 < (size_t)side; y++) {
                memcpy(scratch + y * R, img + y * R, (size_t)c);
                memcpy(scratch + y * R + R - (size_t)c, img + y * R + R - (size_t)c, (size_t)c);
            }
            k->smooth(img, scratch, side, c);
        }
        k->blend_buf(img, scratch, n, (float)arg);
        return;
    }
    case SV_RA_ROTATE: { /* PIL Image.rotate(deg) about (side/2, side/2), counter-clockwise */
        double ang = -arg * 3.14159265358979323846 / 180.0;
        double a = round15(cos(ang)), b = round15(sin(ang)), d = round15(-sin(ang)), e = a, cx = side / 2.0;
        double mtx[6] = {a, b, a * -cx + b * -cx + cx, d, e, d * -cx + e * -cx + cx};
        affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_SHEAR_X: {
        double mtx[6] = {1, arg, 0, 0, 1, 0};
        affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_SHEAR_Y: {
        double mtx[6] = {1, 0, 0, arg, 1, 0};
        affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_TRANSLATE_X: {
        double mtx[6] = {1, 0, arg, 0, 1, 0};
        affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    case SV_RA_TRANSLATE_Y: {
        double mtx[6] = {1, 0, 0, 0, 1, arg};
        affine(img, side, c, mtx, fill, scratch, interp);
        return;
    }
    }
}

void sv_randaug_apply(sv_ra_op op, double m, int negate, uint8_t *img, int side, int c, const uint8_t *fill,
                      uint8_t *scratch) {
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
    apply_arg(op, arg, img, side, c, fill, scratch, SV_RA_NEAREST);
}

void sv_image_enhance(sv_ra_op op, double factor, uint8_t *img, int side, int c, uint8_t *scratch) {
    if (op == SV_RA_COLOR || op == SV_RA_CONTRAST || op == SV_RA_BRIGHTNESS || op == SV_RA_SHARPNESS)
        apply_arg(op, (float)factor, img, side, c, NULL, scratch, SV_RA_NEAREST);
}

void sv_image_solarize(uint8_t *img, int side, int c, int thresh) {
    apply_arg(SV_RA_SOLARIZE, thresh, img, side, c, NULL, NULL, SV_RA_NEAREST);
}

void sv_image_grayscale(uint8_t *img, int side, int c) {
    if (c != 3) return;
    sv_ra_kernels_get()->luma3(img, img, (size_t)side * (size_t)side);
}

/* timm's _RAND_TRANSFORMS / _RAND_INCREASING_TRANSFORMS order (15 ops, no Identity). */
static const sv_ra_op k_timm_ops[SV_RA_TIMM_NUM_OPS] = {
    SV_RA_AUTOCONTRAST, SV_RA_EQUALIZE,     SV_RA_INVERT,  SV_RA_ROTATE,      SV_RA_POSTERIZE,
    SV_RA_SOLARIZE,     SV_RA_SOLARIZE_ADD, SV_RA_COLOR,   SV_RA_CONTRAST,    SV_RA_BRIGHTNESS,
    SV_RA_SHARPNESS,    SV_RA_SHEAR_X,      SV_RA_SHEAR_Y, SV_RA_TRANSLATE_X, SV_RA_TRANSLATE_Y};

sv_ra_op sv_randaug_timm_op(int i) { return i >= 0 && i < SV_RA_TIMM_NUM_OPS ? k_timm_ops[i] : SV_RA_IDENTITY; }

double sv_randaug_timm_arg(sv_ra_op op, double mag, int increasing, int negate, int side) {
    double f = mag / 10.0, sgn = negate ? -1.0 : 1.0;
    switch (op) {
    case SV_RA_ROTATE: return sgn * 30.0 * f;
    case SV_RA_POSTERIZE: return increasing ? 4 - (int)(f * 4.0) : (int)(f * 4.0);
    case SV_RA_SOLARIZE: {
        int t = (int)(f * 256.0);
        t = t < 256 ? t : 256;
        return increasing ? 256 - t : t;
    }
    case SV_RA_SOLARIZE_ADD: {
        int a = (int)(f * 110.0);
        return a < 128 ? a : 128;
    }
    case SV_RA_COLOR:
    case SV_RA_CONTRAST:
    case SV_RA_BRIGHTNESS:
    case SV_RA_SHARPNESS: {
        if (!increasing) return f * 1.8 + 0.1;
        double v = 1.0 + sgn * 0.9 * f;
        return v > 0.1 ? v : 0.1;
    }
    case SV_RA_SHEAR_X:
    case SV_RA_SHEAR_Y: return sgn * 0.3 * f;
    case SV_RA_TRANSLATE_X:
    case SV_RA_TRANSLATE_Y: return sgn * 0.45 * f * side;
    default: return 0;
    }
}

double sv_randaug_timm_magnitude(const sv_randaug_timm *t, uint64_t key, uint64_t i) {
    double m = t->m, hi = t->mmax > 0 ? t->mmax : 10.0;
    if (isinf(t->mstd))
        m = sv_rand_unit(key, 4 * i + 2) * m;
    else if (t->mstd > 0)
        m = m + t->mstd * sv_rand_normal(sv_hash2(key, 4 * i + 2), 0);
    return m < 0 ? 0 : m > hi ? hi : m;
}

static int is_geometric(sv_ra_op op) {
    return op == SV_RA_ROTATE || op == SV_RA_SHEAR_X || op == SV_RA_SHEAR_Y || op == SV_RA_TRANSLATE_X ||
        op == SV_RA_TRANSLATE_Y;
}

/* Layer i of t for stream key: 1 and *l when it is applied, 0 when skipped (p). */
static int plan_layer(const sv_randaug_timm *t, uint64_t key, int side, uint64_t k, sv_ra_layer *l) {
    sv_ra_op op = k_timm_ops[sv_rand_u64(key, 4 * k) % SV_RA_TIMM_NUM_OPS];
    if (!(sv_rand_unit(key, 4 * k + 1) < t->p)) return 0;
    double mag = sv_randaug_timm_magnitude(t, key, k);
    int neg = sv_rand_unit(key, 4 * k + 3) > 0.5;
    sv_ra_interp f = is_geometric(op) ? t->interp : SV_RA_NEAREST;
    if (f == SV_RA_RANDOM) f = sv_rand_unit(sv_hash2(key, 0x1e7bull), k) < 0.5 ? SV_RA_BILINEAR : SV_RA_BICUBIC;
    *l = (sv_ra_layer){op, sv_randaug_timm_arg(op, mag, t->inc, neg, side), f};
    return 1;
}

int sv_randaug_timm_plan(const sv_randaug_timm *t, uint64_t key, int side, sv_ra_layer *out) {
    int n = 0;
    for (int i = 0; i < t->n; i++) n += plan_layer(t, key, side, (uint64_t)i, &out[n]);
    return n;
}

void sv_randaug_layer_apply(const sv_ra_layer *l, uint8_t *img, int side, int c, const uint8_t *fill,
                            uint8_t *scratch) {
    apply_arg(l->op, l->arg, img, side, c, fill, scratch, l->interp);
}

void sv_randaug_timm_run(const sv_randaug_timm *t, uint64_t key, uint8_t *img, int side, int c, const uint8_t *fill,
                         uint8_t *scratch) {
    sv_ra_layer l;
    for (int i = 0; i < t->n; i++)
        if (plan_layer(t, key, side, (uint64_t)i, &l)) sv_randaug_layer_apply(&l, img, side, c, fill, scratch);
}

static const char *const k_interp_names[] = {"nearest", "bilinear", "bicubic", "random"};

const char *sv_randaug_interp_name(sv_ra_interp i) { return (unsigned)i < 4 ? k_interp_names[i] : "?"; }

sv_status sv_randaug_interp_parse(const char *s, sv_ra_interp *out) {
    for (int i = 0; i < 4; i++)
        if (s && !strcmp(s, k_interp_names[i])) {
            *out = (sv_ra_interp)i;
            return SV_OK;
        }
    return SV_FAIL(SV_ERR_INVALID, "--aa-interp: invalid value '%s' (expected nearest, bilinear, bicubic or random)",
                   s ? s : "");
}

static int parse_num(const char *s, size_t len, int integer, double *v) {
    char buf[64], *end;
    if (len == 0 || len >= sizeof buf) return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (integer) {
        long x = strtol(buf, &end, 10);
        *v = (double)x;
    } else {
        *v = strtod(buf, &end);
    }
    return *end == 0 && *v == *v;
}

sv_status sv_randaug_timm_parse(const char *spec, sv_randaug_timm *t) {
    *t = (sv_randaug_timm){.n = 2, .m = 10, .mstd = 0, .p = 0.5, .mmax = 0, .inc = 0};
    if (strncmp(spec, "rand", 4) || (spec[4] && spec[4] != '-') || (spec[4] == '-' && !spec[5]))
        return SV_FAIL(SV_ERR_INVALID,
                       "--aa '%s': expected rand[-m<int>][-n<int>][-mstd<float>][-mmax<int>][-inc<0|1>]"
                       "[-p<float>] (timm rand_augment_transform; only 'rand' is supported)",
                       spec);
    for (const char *s = spec[4] ? spec + 5 : spec + 4; *s;) {
        const char *e = strchr(s, '-');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        size_t k = 0;
        while (k < len && !(s[k] >= '0' && s[k] <= '9') && s[k] != '.') k++;
        double v = 0;
        const char *key = NULL;
        int ok = 0;
#define SV_AA_KEY(name) (k == sizeof(name) - 1 && !strncmp(s, name, k))
        if (SV_AA_KEY("m")) {
            key = "m (magnitude, integer 0..30)";
            ok = parse_num(s + k, len - k, 1, &v) && v >= 0 && v <= 30;
            t->m = v;
        } else if (SV_AA_KEY("n")) {
            key = "n (ops per image, integer 1..16)";
            ok = parse_num(s + k, len - k, 1, &v) && v >= 1 && v <= 16;
            t->n = (int)v;
        } else if (SV_AA_KEY("mstd")) {
            key = "mstd (magnitude noise std >= 0; > 100: uniform in [0, m])";
            ok = parse_num(s + k, len - k, 0, &v) && v >= 0;
            t->mstd = v > 100 ? INFINITY : v;
        } else if (SV_AA_KEY("mmax")) {
            key = "mmax (magnitude upper bound, integer 0..30)";
            ok = parse_num(s + k, len - k, 1, &v) && v >= 0 && v <= 30;
            t->mmax = v;
        } else if (SV_AA_KEY("inc")) {
            key = "inc (0 or 1)";
            ok = parse_num(s + k, len - k, 1, &v) && (v == 0 || v == 1);
            t->inc = (int)v;
        } else if (SV_AA_KEY("p")) {
            key = "p (per-op probability in [0, 1])";
            ok = parse_num(s + k, len - k, 0, &v) && v >= 0 && v <= 1;
            t->p = v;
        }
#undef SV_AA_KEY
        if (!key)
            return SV_FAIL(SV_ERR_INVALID,
                           "--aa '%s': unknown or malformed section '%.*s' (known: m, n, mstd, mmax, inc, p, each "
                           "followed by its number)",
                           spec, (int)len, s);
        if (!ok) return SV_FAIL(SV_ERR_INVALID, "--aa '%s': bad value in section '%.*s': %s", spec, (int)len, s, key);
        s += len;
        if (*s == '-') {
            s++;
            if (!*s) return SV_FAIL(SV_ERR_INVALID, "--aa '%s': empty section after the last '-'", spec);
        }
    }
    return SV_OK;
}

void sv_randaug(uint64_t key, int n, double m, uint8_t *img, int side, int c, const uint8_t *fill, uint8_t *scratch) {
    for (int i = 0; i < n; i++) {
        sv_ra_op op = (sv_ra_op)(sv_rand_u64(key, 2 * (uint64_t)i) % SV_RA_NUM_OPS);
        int neg = sv_rand_unit(key, 2 * (uint64_t)i + 1) < 0.5;
        sv_randaug_apply(op, m, neg, img, side, c, fill, scratch);
    }
}
