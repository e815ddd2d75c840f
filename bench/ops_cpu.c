/* Benchmark of the CPU backend: one pre-norm ViT block forward + backward, timed per op kind.
 * Never run as a test. Build (from the repository root, after building sv_backend):
 *   gcc -O3 -std=c11 -D_GNU_SOURCE -fopenmp -I. -I/usr/include/x86_64-linux-gnu bench/ops_cpu.c \
 *       BUILD/model/libsv_backend.a BUILD/core/libsv_core.a -lopenblas -lm -lpthread -o ops_cpu
 * Usage: ops_cpu B T D H THREADS OP_THREADS DTYPE(fp32|bf16) [REPS]
 * OP_THREADS = 1 with THREADS = 2 measures "single-threaded ops + threaded BLAS". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "model/backend/backend.h"
#include "model/backend/cpu/cpu_backend.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { K_GEMM, K_ATTN, K_LN, K_GELU_EPI, K_OTHER, K_N };
static const char *kname[K_N] = {"linear", "attention", "layernorm", "mlp(fc1+gelu)", "residual"};

static float *buf(sv_backend *be, size_t n, uint64_t key) {
    void *p;
    if (sv_be_alloc(be, n * 4, &p) != SV_OK) exit(1);
    float *f = p;
    for (size_t i = 0; i < n; i++) f[i] = (float)(0.05 * sv_rand_normal(key, i));
    return f;
}

#define TIMED(k, expr) \
    do { \
        double t0_ = now(); \
        if ((expr) != SV_OK) { \
            fprintf(stderr, "%s failed: %s\n", #expr, sv_err_msg()); \
            exit(1); \
        } \
        acc[k] += now() - t0_; \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: %s B T D H THREADS OP_THREADS fp32|bf16 [REPS]\n", argv[0]);
        return 2;
    }
    int B = atoi(argv[1]), T = atoi(argv[2]), D = atoi(argv[3]), H = atoi(argv[4]);
    int threads = atoi(argv[5]), opt = atoi(argv[6]);
    int reps = argc > 8 ? atoi(argv[8]) : 3;
    sv_backend_config cfg = {.device = SV_DEVICE_CPU,
                             .threads = threads,
                             .compute_dtype = strcmp(argv[7], "bf16") == 0 ? SV_BF16 : SV_F32,
                             .cpu = {.op_threads = opt}};
    sv_backend *be;
    if (sv_backend_create(&cfg, &be) != SV_OK) return 1;
    const int M = B * T, F = 4 * D;
    float *x = buf(be, (size_t)M * D, 1), *h1 = buf(be, (size_t)M * D, 2), *qkv = buf(be, (size_t)M * 3 * D, 3);
    float *att = buf(be, (size_t)M * D, 4), *x2 = buf(be, (size_t)M * D, 5), *h2 = buf(be, (size_t)M * D, 6);
    float *f1 = buf(be, (size_t)M * F, 7), *pre = buf(be, (size_t)M * F, 8), *y = buf(be, (size_t)M * D, 9);
    float *wqkv = buf(be, (size_t)3 * D * D, 10), *wp = buf(be, (size_t)D * D, 11);
    float *w1 = buf(be, (size_t)F * D, 12), *w2 = buf(be, (size_t)D * F, 13), *bias = buf(be, F * 3, 14);
    float *lnw = buf(be, D, 15), *mean = buf(be, M, 16), *rstd = buf(be, M, 17), *mean2 = buf(be, M, 18),
          *rstd2 = buf(be, M, 19);
    float *gW = buf(be, (size_t)F * D, 20), *gb = buf(be, F * 3, 21), *gl = buf(be, D * 2, 22);
    float *dy = buf(be, (size_t)M * D, 23), *dh = buf(be, (size_t)M * D, 24), *df1 = buf(be, (size_t)M * F, 25);
    float *dqkv = buf(be, (size_t)M * 3 * D, 26), *datt = buf(be, (size_t)M * D, 27);
    void *saved, *scratch;
    sv_be_alloc(be, sv_be_attention_saved_bytes(be, B, T, D, H), &saved);
    sv_be_alloc(be, sv_be_attention_scratch_bytes(be, B, T, D, H), &scratch);
    double acc[K_N], best = 1e30, bestacc[K_N];
    for (int r = 0; r < reps; r++) {
        memset(acc, 0, sizeof acc);
        double t0 = now();
        /* forward */
        TIMED(K_LN, sv_be_layernorm_fwd(be, h1, mean, rstd, x, lnw, bias, M, D));
        TIMED(K_GEMM, sv_be_linear_fwd(be, qkv, NULL, h1, wqkv, bias, M, 3 * D, D));
        TIMED(K_ATTN, sv_be_attention_fwd(be, att, saved, scratch, qkv, B, T, D, H));
        TIMED(K_GEMM, sv_be_linear_fwd(be, x2, NULL, att, wp, bias, M, D, D));
        TIMED(K_OTHER, sv_be_residual_add(be, x2, x2, x, (size_t)M * D));
        TIMED(K_LN, sv_be_layernorm_fwd(be, h2, mean2, rstd2, x2, lnw, bias, M, D));
        TIMED(K_GELU_EPI, sv_be_linear_fwd(be, f1, pre, h2, w1, bias, M, F, D));
        TIMED(K_GEMM, sv_be_linear_fwd(be, y, NULL, f1, w2, bias, M, D, F));
        TIMED(K_OTHER, sv_be_residual_add(be, y, y, x2, (size_t)M * D));
        /* backward */
        TIMED(K_GEMM, sv_be_linear_bwd(be, df1, gW, gb, dy, f1, w2, NULL, M, D, F));
        TIMED(K_GELU_EPI, sv_be_linear_bwd(be, dh, gW, gb, df1, h2, w1, pre, M, F, D));
        TIMED(K_LN, sv_be_layernorm_bwd(be, dy, gl, gl + D, dh, x2, lnw, mean2, rstd2, M, D));
        TIMED(K_GEMM, sv_be_linear_bwd(be, datt, gW, gb, dy, att, wp, NULL, M, D, D));
        TIMED(K_ATTN, sv_be_attention_bwd(be, dqkv, scratch, datt, qkv, att, saved, B, T, D, H));
        TIMED(K_GEMM, sv_be_linear_bwd(be, dh, gW, gb, dqkv, h1, wqkv, NULL, M, 3 * D, D));
        TIMED(K_LN, sv_be_layernorm_bwd(be, dy, gl, gl + D, dh, x, lnw, mean, rstd, M, D));
        double t = now() - t0;
        if (t < best) {
            best = t;
            memcpy(bestacc, acc, sizeof acc);
        }
    }
    /* matmul FLOPs of one block, forward + backward (3x forward) */
    double flops = 3.0 * (2.0 * M * D * (3.0 * D + D + 2.0 * F) + 4.0 * B * H * (double)T * T * (D / H));
    printf("B=%d T=%d D=%d H=%d threads=%d op_threads=%d %s: block fwd+bwd %.1f ms  %.1f GFLOP/s  "
           "%.1f img/s/block\n",
           B, T, D, H, threads, opt, argv[7], best * 1e3, flops / best * 1e-9, B / best);
    for (int k = 0; k < K_N; k++) printf("  %-14s %7.1f ms\n", kname[k], bestacc[k] * 1e3);
    sv_backend_destroy(be);
    return 0;
}
