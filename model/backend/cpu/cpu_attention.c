/* CPU backend: multi-head self-attention (non-causal) with explicit probabilities.
 *
 * Per (batch, head) pair, with q/k/v read in place from qkv (B,T,3D) through BLAS leading
 * dimensions (row stride 3D; q at column h*dh, k at D + h*dh, v at 2D + h*dh):
 *   forward:  P = softmax(q k^T * scale) (saved, f32),  O = P v
 *   backward: dV = P^T dO,  dP = dO v^T,  dS = P * (dP - rowsum(dP * P)),
 *             dQ = dS k * scale,  dK = dS^T q * scale
 * Pairs are spread over the OpenMP workers, each calling single-threaded sgemm. P is kept in
 * fp32 (it is not a compute buffer); only O and d_qkv are rounded in bf16 mode. */
#include <cblas.h>
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

/* Round a (rows, cols) block with row stride ld in place. */
static void round_strided(int bf, float *p, int rows, int cols, int ld) {
    if (!bf) return;
    for (int r = 0; r < rows; r++) sv_cpu_round_block(1, p + (size_t)r * ld, (size_t)cols);
}

/* Split pairs [0, n) into nt contiguous ranges; range t is [*a, *b). */
static void split(int n, int nt, int t, int *a, int *b) {
    *a = (int)((long)n * t / nt);
    *b = (int)((long)n * (t + 1) / nt);
}

sv_status sv_cpu_attention_fwd(sv_backend *be, void *out_, void *saved, void *scratch,
                               const void *qkv_, int B, int T, int D, int H) {
    (void)scratch;
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_, *Pall = saved;
    const float *qkv = qkv_;
    const int bf = c->bf16, dh = D / H, ld = 3 * D, pairs = B * H;
    const float scale = 1.0f / sqrtf((float)dh);
    int nt = c->op_threads < pairs ? c->op_threads : pairs;
    if (nt > 1) sv_cpu_blas_threads(1);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        int i0, i1;
        split(pairs, nt, t, &i0, &i1);
        for (int i = i0; i < i1; i++) {
            int b = i / H, h = i % H;
            const float *q = qkv + (size_t)b * T * ld + (size_t)h * dh;
            const float *k = q + D, *v = q + 2 * D;
            float *P = Pall + (size_t)i * T * T;
            float *o = out + (size_t)b * T * D + (size_t)h * dh;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, scale, q, ld, k, ld,
                        0.0f, P, T);
            c->k->softmax_rows(P, T, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, 1.0f, P, T, v, ld,
                        0.0f, o, D);
            round_strided(bf, o, T, dh, D);
        }
    }
    if (nt > 1) sv_cpu_blas_threads(sv_cpu_blas_default(c));
    return SV_OK;
}

sv_status sv_cpu_attention_bwd(sv_backend *be, void *d_qkv_, void *scratch, const void *d_out_,
                               const void *qkv_, const void *out, const void *saved, int B,
                               int T, int D, int H) {
    (void)out; /* rowsum(dP * P) is taken from dP and P directly */
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_qkv = d_qkv_;
    const float *qkv = qkv_, *d_out = d_out_, *Pall = saved;
    const int bf = c->bf16, dh = D / H, ld = 3 * D, pairs = B * H;
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t tile = (((size_t)T * T * sizeof(float) + 255) / 256 * 256) / sizeof(float);
    int nt = c->op_threads < pairs ? c->op_threads : pairs;
    if (nt > 1) sv_cpu_blas_threads(1);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        float *dS = (float *)scratch + (size_t)t * tile;
        int i0, i1;
        split(pairs, nt, t, &i0, &i1);
        for (int i = i0; i < i1; i++) {
            int b = i / H, h = i % H;
            size_t qoff = (size_t)b * T * ld + (size_t)h * dh;
            const float *q = qkv + qoff, *k = q + D, *v = q + 2 * D;
            float *dq = d_qkv + qoff, *dk = dq + D, *dv = dq + 2 * D;
            const float *P = Pall + (size_t)i * T * T;
            const float *dO = d_out + (size_t)b * T * D + (size_t)h * dh;
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, dh, T, 1.0f, P, T, dO, D,
                        0.0f, dv, ld);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, 1.0f, dO, D, v, ld,
                        0.0f, dS, T);
            for (int r = 0; r < T; r++) {
                float *s = dS + (size_t)r * T;
                const float *p = P + (size_t)r * T;
                float acc[16] = {0};
                int j = 0;
                for (; j + 16 <= T; j += 16)
                    for (int l = 0; l < 16; l++) acc[l] += s[j + l] * p[j + l];
                for (; j < T; j++) acc[j & 15] += s[j] * p[j];
                for (int w = 8; w >= 1; w >>= 1)
                    for (int l = 0; l < w; l++) acc[l] += acc[l + w];
                float dot = acc[0];
                for (j = 0; j < T; j++) s[j] = p[j] * (s[j] - dot);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, scale, dS, T, k, ld,
                        0.0f, dq, ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, dh, T, scale, dS, T, q, ld,
                        0.0f, dk, ld);
            round_strided(bf, dq, T, dh, ld);
            round_strided(bf, dk, T, dh, ld);
            round_strided(bf, dv, T, dh, ld);
        }
    }
    if (nt > 1) sv_cpu_blas_threads(sv_cpu_blas_default(c));
    return SV_OK;
}
