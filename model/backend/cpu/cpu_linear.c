/* CPU backend: linear layers (OpenBLAS sgemm + fused epilogues), GELU, residual add. */
#include <cblas.h>

#include "model/backend/cpu/cpu_backend.h"

/* Rows per epilogue slice: small enough that a slice of the GEMM output is still in L2 when
 * the bias/GELU/rounding loop reads it back, large enough that sgemm stays efficient. */
#define SV_CPU_LINEAR_ROWS 256

/* Epilogue over rows [m0, m1) of out (M,N): bias, optional GELU (pre-activation saved),
 * bf16 rounding. GELU is applied to the unrounded fp32 sum, as a fused GPU epilogue does. */
static void linear_epilogue(const sv_cpu_backend *c, float *out, float *pre, const float *bias,
                            int m0, int m1, int N) {
    const int bf = c->bf16;
    int nt = sv_cpu_nt(c, (size_t)(m1 - m0) * N * (pre ? 16 : 1));
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int m = m0; m < m1; m++) {
        float *o = out + (size_t)m * N;
        if (pre) {
            float *pr = pre + (size_t)m * N;
            for (int n = 0; n < N; n++) {
                float z = o[n] + (bias ? bias[n] : 0.0f);
                pr[n] = sv_cpu_store(bf, z);
                o[n] = sv_cpu_store(bf, sv_gelu(z));
            }
        } else if (bias) {
            for (int n = 0; n < N; n++) o[n] = sv_cpu_store(bf, o[n] + bias[n]);
        } else if (bf) {
            for (int n = 0; n < N; n++) o[n] = sv_round_bf16(o[n]);
        }
    }
}

sv_status sv_cpu_linear_fwd(sv_backend *be, void *out_, void *pre_gelu, const void *in_,
                            const void *W_, const void *bias, int M, int N, int K) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *in = in_, *W = W_;
    int need_epilogue = bias || pre_gelu || c->bf16;
    /* Whole-matrix sgemm for the threaded case (OpenBLAS splits it across workers); row
     * slices when single-threaded so the epilogue reads cache-hot data. */
    int rows = (need_epilogue && c->threads == 1) ? SV_CPU_LINEAR_ROWS : M;
    for (int m0 = 0; m0 < M; m0 += rows) {
        int mr = M - m0 < rows ? M - m0 : rows;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mr, N, K, 1.0f, in + (size_t)m0 * K,
                    K, W, K, 0.0f, out + (size_t)m0 * N, N);
        if (need_epilogue) linear_epilogue(c, out, pre_gelu, bias, m0, m0 + mr, N);
    }
    return SV_OK;
}

sv_status sv_cpu_linear_bwd(sv_backend *be, void *d_in_, float *dW, float *db, void *d_out_,
                            const void *in_, const void *W_, const void *pre_gelu_, int M, int N,
                            int K) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_in = d_in_, *d_out = d_out_;
    const float *in = in_, *W = W_, *pre = pre_gelu_;
    const int bf = c->bf16;

    /* GELU backward in place, fused with the bias-gradient column sums. Threads split the
     * columns, each summing its columns over all rows in row order, so db is the same for
     * any thread count. */
    if (pre || db) {
        int nt = sv_cpu_nt(c, (size_t)M * N * (pre ? 16 : 1));
        if (nt > N / 16) nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            /* column ranges in whole 16-float vectors */
            int nv = (N + 15) / 16;
            int n0 = 16 * (int)((long)nv * t / nt), n1 = 16 * (int)((long)nv * (t + 1) / nt);
            if (n1 > N) n1 = N;
            for (int m = 0; m < M; m++) {
                float *d = d_out + (size_t)m * N;
                if (pre) {
                    const float *z = pre + (size_t)m * N;
                    for (int n = n0; n < n1; n++) d[n] = sv_cpu_store(bf, d[n] * sv_gelu_grad(z[n]));
                }
                if (db)
                    for (int n = n0; n < n1; n++) db[n] += d[n];
            }
        }
    }
    if (d_in) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.0f, d_out, N, W, K,
                    0.0f, d_in, K);
        if (bf) {
            int nt = sv_cpu_nt(c, (size_t)M * K);
#pragma omp parallel for num_threads(nt) schedule(static)
            for (int m = 0; m < M; m++) sv_cpu_round_block(1, d_in + (size_t)m * K, (size_t)K);
        }
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.0f, d_out, N, in, K, 1.0f, dW,
                K);
    return SV_OK;
}

sv_status sv_cpu_gelu_fwd(sv_backend *be, void *out_, const void *x_, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_;
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, 16 * n)) schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = sv_cpu_store(bf, sv_gelu(x[i]));
    return SV_OK;
}

sv_status sv_cpu_gelu_bwd(sv_backend *be, void *d_x_, const void *d_out_, const void *x_,
                          size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_x = d_x_;
    const float *d_out = d_out_, *x = x_;
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, 16 * n)) schedule(static)
    for (size_t i = 0; i < n; i++) d_x[i] = sv_cpu_store(bf, d_out[i] * sv_gelu_grad(x[i]));
    return SV_OK;
}

sv_status sv_cpu_residual_add(sv_backend *be, void *out_, const void *a_, const void *b_,
                              size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *a = a_, *b = b_;
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, n)) schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = sv_cpu_store(bf, a[i] + b[i]);
    return SV_OK;
}
