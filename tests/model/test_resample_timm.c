/* model/resample.h against timm's own numbers (tests/model/data/timm_resample.safetensors, written
 * once by tests/model/gen_timm_resample.py with timm's resample_abs_pos_embed and
 * resample_patch_embed at their defaults), and against the definitions they implement.
 *
 * Tolerances, relative to the largest |value| of the reference tensor:
 *   pos_embed vs timm (float32 PyTorch): 1e-6. PyTorch computes the weights and sums in float32
 *     (<= 9 taps per axis here: a few ulp, 2^-24 = 6e-8 each); shardvit in double, rounded once.
 *   patch_embed vs timm's float32 result: 4e-6. timm takes the pseudo-inverse in float32
 *     (torch.linalg.pinv, SVD); the generator measured 1.0e-6 between that and float64.
 *   patch_embed vs the same computation in float64: 2e-7 (shardvit rounds its double result to
 *     float once: <= 2^-24 relative, plus the double-precision pinv, ~1e-13).
 * The property checks (rows sum to 1, identity at equal sizes, <k', resize x> = <k, x> when
 * upsampling, the normal equations when downsampling) need no reference file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/safetensors.h"
#include "model/resample.h"

static sv_st_file g_file;

static float *load(const char *name, uint64_t *n) {
    const sv_st_tensor *t = sv_safetensors_find(&g_file, name);
    if (!t) fprintf(stderr, "reference tensor %s missing\n", name);
    CHECK(t);
    float *v = malloc(t->numel * sizeof *v);
    CHECK(v);
    CHECK_OK(sv_safetensors_read_f32(&g_file, t, 0, t->numel, v));
    *n = t->numel;
    return v;
}

/* An F64 tensor (little-endian, as the host). */
static double *load_f64(const char *name) {
    const sv_st_tensor *t = sv_safetensors_find(&g_file, name);
    CHECK(t && t->dtype == SV_ST_F64);
    double *d = malloc(t->numel * sizeof *d);
    CHECK(d);
    CHECK_OK(sv_safetensors_read_raw(&g_file, t, 0, t->numel * 8, d));
    return d;
}

/* max |got - want| / max |want| */
static double rel_err(const float *got, const double *want, uint64_t n) {
    double e = 0, m = 0;
    for (uint64_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)got[i] - want[i]));
        m = fmax(m, fabs(want[i]));
    }
    return e / (m > 0 ? m : 1);
}

static double rel_err_f(const float *got, const float *want, uint64_t n) {
    double *w = malloc(n * sizeof *w);
    CHECK(w);
    for (uint64_t i = 0; i < n; i++) w[i] = want[i];
    double e = rel_err(got, w, n);
    free(w);
    return e;
}

static void pos_case(const char *in_name, int gi, const char *out_name, int go, int antialias, double tol) {
    const int D = 6;
    uint64_t ni, no;
    float *in = load(in_name, &ni), *want = load(out_name, &no);
    CHECK(ni == (uint64_t)(1 + gi * gi) * D && no == (uint64_t)(1 + go * go) * D);
    float *got = malloc(no * sizeof *got);
    CHECK(got);
    CHECK_OK(sv_vit_resample_pos_embed(in, gi, got, go, D, 1, antialias));
    double e = rel_err_f(got, want, no);
    printf("pos_embed %2dx%-2d -> %2dx%-2d antialias %d: relative error to timm %.2e (tol %.0e)\n", gi, gi, go, go,
           antialias, e, tol);
    CHECK(e <= tol);
    for (int d = 0; d < D; d++) CHECK(got[d] == in[d]); /* class position copied */
    free(in);
    free(want);
    free(got);
}

static void patch_case(const char *in_name, int pi, const char *out_name, int po) {
    const int n = 3 * 2; /* (3, 2, p, p) */
    uint64_t ni, no;
    float *in = load(in_name, &ni), *want = load(out_name, &no);
    CHECK(ni == (uint64_t)n * pi * pi && no == (uint64_t)n * po * po);
    char f64[64];
    snprintf(f64, sizeof f64, "%s_f64", out_name);
    double *exact = load_f64(f64);
    float *got = malloc(no * sizeof *got);
    CHECK(got);
    CHECK_OK(sv_vit_resample_patch_embed(in, pi, got, po, n, 1));
    double e32 = rel_err_f(got, want, no), e64 = rel_err(got, exact, no);
    printf("patch_embed %2d -> %2d: relative error to timm %.2e (tol 4e-6), to its float64 twin %.2e (tol 2e-7)\n", pi,
           po, e32, e64);
    CHECK(e32 <= 4e-6);
    CHECK(e64 <= 2e-7);

    /* the definition: M = R (x) R; upsampling: <k', M x> = <k, x>; downsampling: M M^T k' = M k */
    double *R = malloc((size_t)pi * po * sizeof *R);
    CHECK(R);
    CHECK_OK(sv_resize_matrix(pi, po, 1, R));
    int Ni = pi * pi, No = po * po;
    double *M = malloc((size_t)Ni * No * sizeof *M);
    CHECK(M);
    for (int oy = 0; oy < po; oy++)
        for (int ox = 0; ox < po; ox++)
            for (int iy = 0; iy < pi; iy++)
                for (int ix = 0; ix < pi; ix++)
                    M[(size_t)(oy * po + ox) * Ni + iy * pi + ix] = R[oy * pi + iy] * R[ox * pi + ix];
    for (int r = 0; r < n; r++) {
        const float *k = in + (size_t)r * Ni, *kp = got + (size_t)r * No;
        double scale = 0;
        for (int i = 0; i < Ni; i++) scale = fmax(scale, fabs(k[i]));
        if (po > pi) {
            for (int trial = 0; trial < 4; trial++) {
                double lhs = 0, rhs = 0;
                for (int i = 0; i < Ni; i++) {
                    rhs += k[i] * sin(1.3 * i + trial);
                }
                for (int o = 0; o < No; o++) {
                    double mx = 0;
                    for (int i = 0; i < Ni; i++) mx += M[(size_t)o * Ni + i] * sin(1.3 * i + trial);
                    lhs += kp[o] * mx;
                }
                CHECK_CLOSE(lhs, rhs, 1e-5 * scale * Ni);
            }
        } else {
            for (int o = 0; o < No; o++) {
                double mk = 0, mmk = 0;
                for (int i = 0; i < Ni; i++) {
                    mk += M[(size_t)o * Ni + i] * k[i];
                    double mtk = 0; /* (M^T k')_i */
                    for (int q = 0; q < No; q++) mtk += M[(size_t)q * Ni + i] * kp[q];
                    mmk += M[(size_t)o * Ni + i] * mtk;
                }
                CHECK_CLOSE(mmk, mk, 1e-5 * scale);
            }
        }
    }
    free(M);
    free(R);
    free(in);
    free(want);
    free(exact);
    free(got);
}

/* Rows of both resize kinds sum to 1; equal sizes give the identity; the antialiased
 * downsampling filter is as wide as its definition says. */
static void test_matrix_properties(void) {
    int sizes[][2] = {{14, 4}, {7, 10}, {16, 8}, {4, 8}, {5, 5}, {9, 1}, {1, 6}, {37, 11}};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++)
        for (int aa = 0; aa <= 1; aa++) {
            int in = sizes[c][0], out = sizes[c][1];
            double *R = malloc((size_t)in * out * sizeof *R);
            CHECK(R);
            CHECK_OK(sv_resize_matrix(in, out, aa, R));
            for (int o = 0; o < out; o++) {
                double s = 0;
                int nz = 0;
                for (int i = 0; i < in; i++) s += R[o * in + i], nz += R[o * in + i] != 0;
                CHECK_CLOSE(s, 1.0, 1e-12);
                if (in == out)
                    for (int i = 0; i < in; i++) CHECK(R[o * in + i] == (i == o ? 1.0 : 0.0));
                if (aa && in > out) CHECK(nz <= (int)ceil(4.0 * in / out) + 1);
            }
            free(R);
        }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_resample_timm DATA.safetensors\n");
        return 2;
    }
    test_matrix_properties();
    CHECK_OK(sv_safetensors_open(&g_file, argv[1]));
    const char *tv = sv_safetensors_meta(&g_file, "timm");
    printf("reference: %s (timm %s)\n", argv[1], tv ? tv : "?");
    pos_case("pos14", 14, "pos14_to4", 4, 1, 1e-6);
    pos_case("pos7", 7, "pos7_to10", 10, 1, 1e-6);
    pos_case("pos14", 14, "pos14_to4_noaa", 4, 0, 1e-6);
    pos_case("pos7", 7, "pos7_to10_noaa", 10, 0, 1e-6);
    patch_case("patch16", 16, "patch16_to8", 8);
    patch_case("patch4", 4, "patch4_to8", 8);
    /* the antialiased downsampling is what timm does: not the plain bicubic (the 14 -> 4 grids
     * differ by far more than the tolerance) */
    uint64_t n1, n2;
    float *aa = load("pos14_to4", &n1), *plain = load("pos14_to4_noaa", &n2);
    CHECK(n1 == n2 && rel_err_f(aa, plain, n1) > 1e-2);
    free(aa);
    free(plain);
    sv_safetensors_close(&g_file);
    printf("test_resample_timm: all passed\n");
    return 0;
}
