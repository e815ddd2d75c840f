/* pos_embed and patch_embed resampling (model/resample.h). */
#include "model/resample.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Keys' cubic convolution kernel with parameter a (PyTorch's cubic_convolution1/2). */
static double keys(double x, double a) {
    x = fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    return 0.0;
}

/* One axis as sparse rows: output o reads inputs lo[o] .. lo[o] + cnt[o] - 1 with weights
 * w[o * width + k]. */
typedef struct {
    int in, out, width;
    int *lo, *cnt;
    double *w;
} axis_rows;

static void axis_free(axis_rows *a) {
    free(a->lo);
    free(a->cnt);
    free(a->w);
    memset(a, 0, sizeof *a);
}

static sv_status axis_build(axis_rows *a, int in, int out, int antialias) {
    double s = (double)in / (double)out;
    double support = antialias && s >= 1.0 ? 2.0 * s : 2.0;
    int width = antialias ? (int)ceil(2.0 * support) + 2 : 4;
    if (width > in + 3) width = in + 3;
    memset(a, 0, sizeof *a);
    a->in = in, a->out = out, a->width = width;
    a->lo = malloc((size_t)out * sizeof *a->lo);
    a->cnt = malloc((size_t)out * sizeof *a->cnt);
    a->w = calloc((size_t)out * (size_t)width, sizeof *a->w);
    if (!a->lo || !a->cnt || !a->w) {
        axis_free(a);
        return SV_FAIL(SV_ERR_OOM, "resize weights (%d -> %d)", in, out);
    }
    for (int o = 0; o < out; o++) {
        double *w = a->w + (size_t)o * (size_t)width;
        if (antialias) { /* _upsample_bicubic2d_aa: normalised, clipped window */
            double c = s * (o + 0.5), inv = s >= 1.0 ? 1.0 / s : 1.0, total = 0.0;
            long lo = (long)(c - support + 0.5), hi = (long)(c + support + 0.5);
            if (lo < 0) lo = 0;
            if (hi > in) hi = in;
            a->lo[o] = (int)lo, a->cnt[o] = (int)(hi - lo);
            for (long j = lo; j < hi; j++) total += w[j - lo] = keys(((double)j - c + 0.5) * inv, -0.5);
            if (total != 0.0)
                for (int k = 0; k < a->cnt[o]; k++) w[k] /= total;
        } else { /* upsample_bicubic2d: four taps, indices clamped to the border */
            double x = s * (o + 0.5) - 0.5;
            int ix = (int)floor(x);
            if (ix > in - 1) ix = in - 1;
            double t = x - ix;
            int lo = ix - 1 < 0 ? 0 : ix - 1 > in - 1 ? in - 1 : ix - 1;
            int hi = ix + 2 < 0 ? 0 : ix + 2 > in - 1 ? in - 1 : ix + 2;
            a->lo[o] = lo, a->cnt[o] = hi - lo + 1;
            for (int k = 0; k < 4; k++) {
                int j = ix - 1 + k;
                j = j < 0 ? 0 : j > in - 1 ? in - 1 : j;
                w[j - lo] += keys(t + 1.0 - k, -0.75);
            }
        }
    }
    return SV_OK;
}

sv_status sv_resize_matrix(int in, int out, int antialias, double *R) {
    memset(R, 0, (size_t)in * (size_t)out * sizeof *R);
    axis_rows a;
    SV_TRY(axis_build(&a, in, out, antialias));
    for (int o = 0; o < out; o++)
        for (int k = 0; k < a.cnt[o]; k++)
            R[(size_t)o * (size_t)in + (size_t)(a.lo[o] + k)] = a.w[(size_t)o * a.width + k];
    axis_free(&a);
    return SV_OK;
}

sv_status sv_vit_resample_pos_embed(const float *src, int gi, float *dst, int go, int D, int prefix, int antialias) {
    const size_t pre = (size_t)prefix * (size_t)D;
    memcpy(dst, src, pre * sizeof(float)); /* class position(s), kept */
    src += pre;
    dst += pre;
    if (gi == go) {
        memcpy(dst, src, (size_t)gi * (size_t)gi * (size_t)D * sizeof(float));
        return SV_OK;
    }
    axis_rows a;
    SV_TRY(axis_build(&a, gi, go, antialias));
    double *tmp = malloc((size_t)gi * (size_t)go * (size_t)D * sizeof *tmp), *acc = malloc((size_t)D * sizeof *acc);
    if (!tmp || !acc) {
        free(tmp);
        free(acc);
        axis_free(&a);
        return SV_FAIL(SV_ERR_OOM, "pos_embed resampling (%dx%d -> %dx%d, width %d)", gi, gi, go, go, D);
    }
    const float *g = src;
    /* rows first (x: the contiguous axis), as PyTorch's separable kernel: tmp[y][ox][d] */
    for (int y = 0; y < gi; y++)
        for (int ox = 0; ox < go; ox++) {
            double *t = tmp + ((size_t)y * (size_t)go + (size_t)ox) * (size_t)D;
            memset(t, 0, (size_t)D * sizeof *t);
            for (int k = 0; k < a.cnt[ox]; k++) {
                double w = a.w[(size_t)ox * a.width + k];
                const float *p = g + ((size_t)y * (size_t)gi + (size_t)(a.lo[ox] + k)) * (size_t)D;
                for (int d = 0; d < D; d++) t[d] += w * p[d];
            }
        }
    /* then columns (y) */
    for (int oy = 0; oy < go; oy++)
        for (int ox = 0; ox < go; ox++) {
            memset(acc, 0, (size_t)D * sizeof *acc);
            for (int k = 0; k < a.cnt[oy]; k++) {
                double w = a.w[(size_t)oy * a.width + k];
                const double *t = tmp + ((size_t)(a.lo[oy] + k) * (size_t)go + (size_t)ox) * (size_t)D;
                for (int d = 0; d < D; d++) acc[d] += w * t[d];
            }
            float *o = dst + ((size_t)oy * (size_t)go + (size_t)ox) * (size_t)D;
            for (int d = 0; d < D; d++) o[d] = (float)acc[d];
        }
    free(tmp);
    free(acc);
    axis_free(&a);
    return SV_OK;
}

/* In-place Cholesky inverse of the SPD n x n matrix G (row-major). 0 when a pivot falls below
 * 1e-12 of the largest diagonal entry (numerically rank deficient). */
static int spd_inverse(double *G, int n) {
    double *L = calloc((size_t)n * (size_t)n, sizeof *L), *Li = calloc((size_t)n * (size_t)n, sizeof *Li);
    double dmax = 0.0;
    int ok = L && Li;
    for (int i = 0; ok && i < n; i++) dmax = fmax(dmax, G[(size_t)i * n + i]);
    for (int j = 0; ok && j < n; j++) {
        double s = G[(size_t)j * n + j];
        for (int k = 0; k < j; k++) s -= L[(size_t)j * n + k] * L[(size_t)j * n + k];
        if (!(s > 1e-12 * dmax)) {
            ok = 0;
            break;
        }
        L[(size_t)j * n + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = G[(size_t)i * n + j];
            for (int k = 0; k < j; k++) t -= L[(size_t)i * n + k] * L[(size_t)j * n + k];
            L[(size_t)i * n + j] = t / L[(size_t)j * n + j];
        }
    }
    for (int c = 0; ok && c < n; c++) /* Li = L^-1 (lower), column by column */
        for (int i = c; i < n; i++) {
            double t = i == c ? 1.0 : 0.0;
            for (int k = c; k < i; k++) t -= L[(size_t)i * n + k] * Li[(size_t)k * n + c];
            Li[(size_t)i * n + c] = t / L[(size_t)i * n + i];
        }
    for (int i = 0; ok && i < n; i++) /* G^-1 = Li^T Li */
        for (int j = 0; j < n; j++) {
            double t = 0.0;
            for (int k = i > j ? i : j; k < n; k++) t += Li[(size_t)k * n + i] * Li[(size_t)k * n + j];
            G[(size_t)i * n + j] = t;
        }
    free(L);
    free(Li);
    return ok;
}

/* P = pinv(R), R out x in (row-major), P in x out. 0 when R is rank deficient (or no memory). */
static int pinv_axis(const double *R, int in, int out, double *P) {
    int n = out >= in ? in : out; /* the full-rank side */
    double *G = calloc((size_t)n * (size_t)n, sizeof *G);
    if (!G) return 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double t = 0.0;
            if (out >= in) /* R^T R */
                for (int k = 0; k < out; k++) t += R[(size_t)k * in + i] * R[(size_t)k * in + j];
            else /* R R^T */
                for (int k = 0; k < in; k++) t += R[(size_t)i * in + k] * R[(size_t)j * in + k];
            G[(size_t)i * n + j] = t;
        }
    int ok = spd_inverse(G, n);
    for (int i = 0; ok && i < in; i++)
        for (int o = 0; o < out; o++) {
            double t = 0.0;
            if (out >= in) /* (R^T R)^-1 R^T */
                for (int k = 0; k < in; k++) t += G[(size_t)i * n + k] * R[(size_t)o * in + k];
            else /* R^T (R R^T)^-1 */
                for (int k = 0; k < out; k++) t += R[(size_t)k * in + i] * G[(size_t)k * n + o];
            P[(size_t)i * out + o] = t;
        }
    free(G);
    return ok;
}

sv_status sv_vit_resample_patch_embed(const float *src, int pi, float *dst, int po, long long n, int antialias) {
    if (pi < 1 || po < 1 || pi > SV_PATCH_RESAMPLE_MAX || po > SV_PATCH_RESAMPLE_MAX)
        return SV_FAIL(SV_ERR_INVALID, "patch_embed resampling %d -> %d: patch sizes must be in [1, %d]", pi, po,
                       SV_PATCH_RESAMPLE_MAX);
    if (pi == po) {
        memcpy(dst, src, (size_t)n * (size_t)pi * (size_t)pi * sizeof(float));
        return SV_OK;
    }
    double *R = malloc((size_t)pi * po * sizeof *R), *P = malloc((size_t)pi * po * sizeof *P),
           *tmp = malloc((size_t)pi * po * sizeof *tmp);
    sv_status st = R && P && tmp ? SV_OK : SV_FAIL(SV_ERR_OOM, "patch_embed resampling");
    if (st == SV_OK) st = sv_resize_matrix(pi, po, antialias, R);
    if (st == SV_OK && !pinv_axis(R, pi, po, P))
        st = SV_FAIL(SV_ERR_INVALID, "patch_embed resampling %d -> %d: the resize is rank deficient", pi, po);
    for (long long r = 0; r < n && st == SV_OK; r++) {
        const float *k = src + (size_t)r * pi * pi;
        for (int iy = 0; iy < pi; iy++) /* tmp[iy][nx] = sum_ix k[iy][ix] P[ix][nx] */
            for (int nx = 0; nx < po; nx++) {
                double t = 0.0;
                for (int ix = 0; ix < pi; ix++) t += (double)k[iy * pi + ix] * P[(size_t)ix * po + nx];
                tmp[(size_t)iy * po + nx] = t;
            }
        float *o = dst + (size_t)r * po * po;
        for (int ny = 0; ny < po; ny++) /* k'[ny][nx] = sum_iy P[iy][ny] tmp[iy][nx] */
            for (int nx = 0; nx < po; nx++) {
                double t = 0.0;
                for (int iy = 0; iy < pi; iy++) t += P[(size_t)iy * po + ny] * tmp[(size_t)iy * po + nx];
                o[ny * po + nx] = (float)t;
            }
    }
    free(R);
    free(P);
    free(tmp);
    return st;
}
