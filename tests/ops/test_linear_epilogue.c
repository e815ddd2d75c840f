/* The linear forward's bias + GELU epilogue of the CPU backend is, bit for bit, the per-element
 * function the CUDA backend's epilogue kernel evaluates (core/elementwise.h sv_bias_gelu_elem,
 * compiled here as host code): z = acc + bias in fp32, pre_gelu = z and out = gelu(z) from the
 * same unrounded z, each rounded to the storage dtype on its own.
 *
 * K = 1 and in = 1 make the GEMM's result W's element itself on every engine (one exact
 * product), so out and pre_gelu depend only on the epilogue. Every element-wise kernel table
 * (generic, avx2, avx512 where this CPU has it), the fused and the separate epilogue, sgemm and
 * the best engine, fp32 and bf16 compute, fp32 and bf16 storage. In bf16 the test also checks
 * that it can tell the orders apart: GELU of the rounded pre-activation (the order the CUDA
 * backend used before its epilogue kernel) differs from the expected out for some inputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/elementwise.h"
#include "model/backend/backend.h"

enum { M = 24, N = 1536 };

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* W: magnitudes from 1e-6 to 60 of both signs (GELU's tails, its curved middle, values whose
 * bf16 rounding moves GELU by an ulp), never zero (0 * 1 summed into a zeroed C loses -0 on some
 * engines, which is the GEMM's business, not the epilogue's). bias: [-2, 2), every 7th zero. */
static void inputs(float *W, float *bias, int bf16) {
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (int n = 0; n < N; n++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = (double)(s >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
        float mag = (float)pow(10.0, -6.0 + 7.78 * u);
        float w = (s & 1) ? -mag : mag;
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float b = (n % 7 == 0) ? 0.0f : (float)((double)(s >> 11) * (4.0 / 9007199254740992.0) - 2.0);
        W[n] = bf16 ? sv_round_bf16(w) : w;
        bias[n] = bf16 ? sv_round_bf16(b) : b;
    }
}

static float store(float v, int bf16) { return bf16 ? sv_round_bf16(v) : v; }

/* A compute buffer of n values on backend be (rounded as the backend stores them). */
static void *cbuf(sv_backend *be, const float *h, size_t n) {
    float *tmp;
    void *d;
    CHECK_OK(sv_be_alloc(be, n * 4, (void **)&tmp));
    CHECK_OK(sv_be_alloc(be, n * sv_be_compute_elem_size(be), &d));
    CHECK_OK(sv_be_upload(be, tmp, h, n * 4));
    CHECK_OK(sv_be_f32_to_compute(be, d, tmp, n));
    sv_be_free(be, tmp);
    return d;
}
static void get_c(sv_backend *be, float *h, const void *d, size_t n) {
    float *tmp;
    CHECK_OK(sv_be_alloc(be, n * 4, (void **)&tmp));
    CHECK_OK(sv_be_compute_to_f32(be, tmp, d, n));
    CHECK_OK(sv_be_download(be, h, tmp, n * 4));
    sv_be_free(be, tmp);
}

/* One configuration: returns 1 when it ran (0: not available on this CPU). */
static int check_config(sv_dtype dt, const char *isa, const char *gemm, int unfused, int f32_storage, int with_bias) {
    sv_backend_config cfg = {.device = SV_DEVICE_CPU,
                             .compute_dtype = dt,
                             .threads = 2,
                             .cpu = {.isa = isa, .gemm = gemm, .unfused_epi = unfused, .f32_storage = f32_storage}};
    sv_backend *be = NULL;
    if (sv_backend_create(&cfg, &be) != SV_OK) {
        printf("  skip %s isa=%s gemm=%s: %s\n", sv_dtype_name(dt), isa, gemm ? gemm : "auto", sv_err_msg());
        sv_err_clear();
        return 0;
    }
    const int bf16 = dt == SV_BF16;
    static float W[N], bias[N], ones[M], out[M * N], pre[M * N];
    inputs(W, bias, bf16);
    for (int m = 0; m < M; m++) ones[m] = 1.0f;
    void *d_in = cbuf(be, ones, M), *d_W = cbuf(be, W, N), *d_b = with_bias ? cbuf(be, bias, N) : NULL;
    void *d_out, *d_pre;
    size_t es = sv_be_compute_elem_size(be);
    CHECK_OK(sv_be_alloc(be, (size_t)M * N * es, &d_out));
    CHECK_OK(sv_be_alloc(be, (size_t)M * N * es, &d_pre));
    CHECK_OK(sv_be_linear_fwd(be, d_out, d_pre, d_in, d_W, d_b, M, N, 1));
    get_c(be, out, d_out, (size_t)M * N);
    get_c(be, pre, d_pre, (size_t)M * N);
    int old_order_differs = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float z, g = sv_bias_gelu_elem(W[n], bias[n], with_bias, &z);
            float want_pre = store(z, bf16), want_out = store(g, bf16);
            size_t i = (size_t)m * N + n;
            if (bits_of(out[i]) != bits_of(want_out) || bits_of(pre[i]) != bits_of(want_pre)) {
                fprintf(stderr,
                        "%s isa=%s gemm=%s unfused=%d f32_storage=%d bias=%d: row %d col %d acc %.9g bias %.9g"
                        ": out %.9g pre %.9g, expected out %.9g pre %.9g\n",
                        sv_dtype_name(dt), isa, gemm ? gemm : "auto", unfused, f32_storage, with_bias, m, n,
                        (double)W[n], (double)bias[n], (double)out[i], (double)pre[i], (double)want_out,
                        (double)want_pre);
                CHECK(0);
            }
            old_order_differs += bits_of(store(sv_gelu(want_pre), bf16)) != bits_of(want_out);
        }
    if (bf16 && with_bias) CHECK(old_order_differs > 0); /* the test tells GELU(round(z)) from GELU(z) */
    printf("  ok %s isa=%s gemm=%s unfused=%d f32_storage=%d bias=%d (GELU of the rounded sum would differ in %d of "
           "%d)\n",
           sv_dtype_name(dt), isa, gemm ? gemm : "auto", unfused, f32_storage, with_bias, old_order_differs, M * N);
    sv_be_free(be, d_in), sv_be_free(be, d_W), sv_be_free(be, d_out), sv_be_free(be, d_pre);
    if (d_b) sv_be_free(be, d_b);
    sv_backend_destroy(be);
    return 1;
}

int main(void) {
    static const char *const isas[] = {"generic", "avx2", "avx512"};
    static const char *const gemms[] = {NULL, "openblas"};
    int ran = 0;
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 3; i++)
            for (int g = 0; g < 2; g++)
                for (int u = 0; u < 2; u++)
                    for (int s = 0; s < 2; s++) {
                        if (d == 0 && s == 0) continue; /* bf16 storage exists in bf16 compute only */
                        sv_dtype dt = d ? SV_BF16 : SV_F32;
                        for (int b = 0; b < 2; b++) ran += check_config(dt, isas[i], gemms[g], u, s, b);
                    }
    CHECK(ran >= 8); /* at least the generic kernels, both dtypes, both epilogue forms, with and without bias */
    printf("linear epilogue: %d configurations bit-identical to sv_bias_gelu_elem\n", ran);
    return 0;
}
