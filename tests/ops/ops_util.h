/* Helpers shared by the backend op tests: device buffers filled with counter-based random
 * values (rounded to bf16 when the backend computes in bf16, as real compute buffers are),
 * downloads, tolerance checks, and naive double-precision references of the ops. */
#ifndef SV_TESTS_OPS_UTIL_H
#define SV_TESTS_OPS_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/elementwise.h"
#include "core/rng.h"
#include "model/backend/backend.h"

typedef struct ops_ctx {
    sv_backend *be;
    int bf16;
    int threads;
} ops_ctx;

static inline void ops_ctx_init(ops_ctx *c, sv_dtype dt, int threads) {
    /* fp32 storage: these tests compare its numerics with references; bf16 storage gives the same
     * bits (test_ops_storage.c) */
    sv_backend_config cfg = {.device = SV_DEVICE_CPU, .compute_dtype = dt, .threads = threads, .cpu.f32_storage = 1};
    CHECK_OK(sv_backend_create(&cfg, &c->be));
    c->bf16 = dt == SV_BF16;
    c->threads = threads;
}
static inline void ops_ctx_free(ops_ctx *c) { sv_backend_destroy(c->be); }

static inline void *dev_alloc(ops_ctx *c, size_t bytes) {
    void *p = NULL;
    CHECK_OK(sv_be_alloc(c->be, bytes ? bytes : 4, &p));
    CHECK(((uintptr_t)p & 255) == 0);
    return p;
}

/* Device buffer of n values N(0, scale^2) from stream `key`; `host` (may be NULL) receives
 * the exact values stored (after bf16 rounding when `round` and the backend is bf16). */
static inline float *dev_rand(ops_ctx *c, size_t n, uint64_t key, double scale, int round, double *host) {
    float *tmp = malloc((n ? n : 1) * sizeof(float));
    CHECK(tmp);
    for (size_t i = 0; i < n; i++) {
        float v = (float)(scale * sv_rand_normal(key, i));
        if (round && c->bf16) v = sv_round_bf16(v);
        tmp[i] = v;
        if (host) host[i] = v;
    }
    float *d = dev_alloc(c, n * sizeof(float));
    CHECK_OK(sv_be_upload(c->be, d, tmp, n * sizeof(float)));
    free(tmp);
    return d;
}
/* compute-buffer random (rounded to bf16 in bf16 mode) */
static inline float *dev_rand_c(ops_ctx *c, size_t n, uint64_t key, double scale, double *host) {
    return dev_rand(c, n, key, scale, 1, host);
}

static inline float *dev_fill(ops_ctx *c, size_t n, float v) {
    float *d = dev_alloc(c, n * sizeof(float));
    float *tmp = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) tmp[i] = v;
    CHECK_OK(sv_be_upload(c->be, d, tmp, n * sizeof(float)));
    free(tmp);
    return d;
}

static inline void dev_set(ops_ctx *c, float *dev, const double *host, size_t n) {
    float *tmp = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) tmp[i] = (float)host[i];
    CHECK_OK(sv_be_upload(c->be, dev, tmp, n * sizeof(float)));
    free(tmp);
}

/* Download into a freshly malloc'd float array (caller frees). */
static inline float *dl(ops_ctx *c, const float *dev, size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    CHECK(h);
    CHECK_OK(sv_be_download(c->be, h, dev, n * sizeof(float)));
    return h;
}

static inline double *dalloc(size_t n) {
    double *p = calloc(n ? n : 1, sizeof(double));
    CHECK(p);
    return p;
}

static inline double rms_d(const double *r, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += r[i] * r[i];
    return n ? sqrt(s / (double)n) : 0.0;
}

/* |got - ref| <= rtol * (|ref| + rms(ref)) elementwise, and every value bf16-representable
 * when `bf16`. Prints the first failure with its index. */
static inline void check_vec(const char *what, const float *got, const double *ref, size_t n, double rtol, int bf16) {
    double rms = rms_d(ref, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]);
        double tol = rtol * (fabs(ref[i]) + rms) + 1e-30;
        if (!(err <= tol)) {
            fprintf(stderr, "%s: element %zu got %.9g want %.9g (err %.3g, tol %.3g)\n", what, i, (double)got[i],
                    ref[i], err, tol);
            exit(1);
        }
        if (bf16 && sv_round_bf16(got[i]) != got[i]) {
            fprintf(stderr, "%s: element %zu = %.9g is not bf16-representable\n", what, i, (double)got[i]);
            exit(1);
        }
        if (err / (fabs(ref[i]) + rms + 1e-30) > worst) worst = err / (fabs(ref[i]) + rms + 1e-30);
    }
    (void)worst;
}

/* Tolerances: fp32 storage and math vs double; bf16 adds one rounding of each output (2^-8
 * relative) plus rounded intermediates. */
static inline double tol_of(const ops_ctx *c) { return c->bf16 ? 1.6e-2 : 1e-5; }

/* ---- naive double-precision references ---- */

static inline double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static inline double ref_gelu_grad(double x) {
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

/* out (M,N) = in (M,K) W(N,K)^T + b; pre (may be NULL) receives z, out gelu(z) then. */
static inline void ref_linear(double *out, double *pre, const double *in, const double *W, const double *b, int M,
                              int N, int K) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = b ? b[n] : 0.0;
            for (int k = 0; k < K; k++) s += in[(size_t)m * K + k] * W[(size_t)n * K + k];
            if (pre) {
                pre[(size_t)m * N + n] = s;
                s = ref_gelu(s);
            }
            out[(size_t)m * N + n] = s;
        }
}

static inline void ref_layernorm(double *out, double *mean, double *rstd, const double *x, const double *w,
                                 const double *b, int M, int C) {
    for (int m = 0; m < M; m++) {
        const double *r = x + (size_t)m * C;
        double mu = 0, var = 0;
        for (int i = 0; i < C; i++) mu += r[i];
        mu /= C;
        for (int i = 0; i < C; i++) var += (r[i] - mu) * (r[i] - mu);
        var /= C;
        double rs = 1.0 / sqrt(var + (double)SV_LN_EPS);
        for (int i = 0; i < C; i++) out[(size_t)m * C + i] = (r[i] - mu) * rs * w[i] + b[i];
        mean[m] = mu;
        rstd[m] = rs;
    }
}

/* out (B,T,D) from qkv (B,T,3D); P (B,H,T,T) may be NULL. */
static inline void ref_attention(double *out, double *P, const double *qkv, int B, int T, int D, int H) {
    int dh = D / H;
    double scale = 1.0 / sqrt((double)dh);
    double *s = dalloc((size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * 3 * D + (size_t)h * dh;
                double mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    const double *k = qkv + ((size_t)b * T + j) * 3 * D + D + (size_t)h * dh;
                    double d = 0;
                    for (int e = 0; e < dh; e++) d += q[e] * k[e];
                    s[j] = d * scale;
                    if (s[j] > mx) mx = s[j];
                }
                double sum = 0;
                for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
                for (int j = 0; j < T; j++) s[j] /= sum;
                if (P)
                    for (int j = 0; j < T; j++) P[(((size_t)b * H + h) * T + i) * T + j] = s[j];
                for (int e = 0; e < dh; e++) {
                    double o = 0;
                    for (int j = 0; j < T; j++)
                        o += s[j] * qkv[((size_t)b * T + j) * 3 * D + 2 * D + (size_t)h * dh + e];
                    out[((size_t)b * T + i) * D + (size_t)h * dh + e] = o;
                }
            }
    free(s);
}

/* dq/dk/dv (in a (B,T,3D) buffer) of O = (P * M) v for d_out dO (B,T,D), in double, on the
 * probabilities P (B,H,T,T); M (same shape) is the attention-dropout multiplier, NULL = none:
 * dV = (P M)^T dO, dP = (dO v^T) * M, dS = P * (dP - rowsum(dP * P)), dQ = dS k scale,
 * dK = dS^T q scale. */
static inline void ref_attention_bwd(double *dqkv, const double *qkv, const double *P, const double *M,
                                     const double *dO_all, int B, int T, int D, int H) {
    const int dh = D / H, ld = 3 * D;
    const double scale = 1.0 / sqrt((double)dh);
    double *dS = dalloc((size_t)T * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const size_t po = ((size_t)b * H + h) * T * T;
            const double *q = qkv + (size_t)b * T * ld + (size_t)h * dh, *k = q + D, *v = q + 2 * D;
            const double *dO = dO_all + (size_t)b * T * D + (size_t)h * dh;
            double *dq = dqkv + (size_t)b * T * ld + (size_t)h * dh, *dk = dq + D, *dv = dq + 2 * D;
            for (int i = 0; i < T; i++) {
                double dot = 0;
                for (int j = 0; j < T; j++) {
                    double dp = 0;
                    for (int e = 0; e < dh; e++) dp += dO[(size_t)i * D + e] * v[(size_t)j * ld + e];
                    if (M) dp *= M[po + (size_t)i * T + j];
                    dS[(size_t)i * T + j] = dp;
                    dot += dp * P[po + (size_t)i * T + j];
                }
                for (int j = 0; j < T; j++)
                    dS[(size_t)i * T + j] = P[po + (size_t)i * T + j] * (dS[(size_t)i * T + j] - dot);
            }
            for (int i = 0; i < T; i++)
                for (int e = 0; e < dh; e++) {
                    double a = 0, bk = 0, c = 0;
                    for (int j = 0; j < T; j++) {
                        const size_t ji = po + (size_t)j * T + i;
                        a += dS[(size_t)i * T + j] * k[(size_t)j * ld + e];
                        bk += dS[(size_t)j * T + i] * q[(size_t)j * ld + e];
                        c += P[ji] * (M ? M[ji] : 1.0) * dO[(size_t)j * D + e];
                    }
                    dq[(size_t)i * ld + e] = a * scale;
                    dk[(size_t)i * ld + e] = bk * scale;
                    dv[(size_t)i * ld + e] = c;
                }
        }
    free(dS);
}

/* losses (B) and d_logits (B,K) = (softmax - target) * grad_scale. */
static inline void ref_xent(double *loss, double *dlog, const double *z, const int32_t *labels, const double *soft,
                            int B, int K, double smoothing, double gs) {
    for (int b = 0; b < B; b++) {
        const double *r = z + (size_t)b * K;
        double mx = -INFINITY, s = 0;
        for (int k = 0; k < K; k++) mx = r[k] > mx ? r[k] : mx;
        for (int k = 0; k < K; k++) s += exp(r[k] - mx);
        double lse = mx + log(s), l = 0;
        for (int k = 0; k < K; k++) {
            double t = soft ? soft[(size_t)b * K + k] : (k == labels[b] ? 1.0 - smoothing : 0.0) + smoothing / K;
            l += t * (lse - r[k]);
            dlog[(size_t)b * K + k] = (exp(r[k] - lse) - t) * gs;
        }
        loss[b] = l;
    }
}

#endif
