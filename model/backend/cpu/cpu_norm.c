/* CPU backend: LayerNorm forward/backward and fused softmax cross-entropy. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

/* LayerNorm rows run in the ISA-dispatched kernels (cpu_kernels.h: 16 fixed summation lanes,
 * so every variant and every row split gives the same bits). */

sv_status sv_cpu_layernorm_fwd(sv_backend *be, void *out_, float *mean, float *rstd, const void *x_, const void *w_,
                               const void *b_, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_, *w = w_, *b = b_;
    const int nt = sv_cpu_nt(c, (size_t)M * C * 4);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t m0, m1;
        sv_cpu_range((size_t)M, nt, t, &m0, &m1);
        if (m1 > m0)
            c->k->layernorm_fwd_rows(c->bf16, out + m0 * C, mean + m0, rstd + m0, x + m0 * C, w, b, (int)(m1 - m0), C);
    }
    return SV_OK;
}

sv_status sv_cpu_layernorm_bwd(sv_backend *be, void *d_x_, float *dw, float *db, const void *d_out_, const void *x_,
                               const void *w_, const float *mean, const float *rstd, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_x = d_x_;
    const float *dy = d_out_, *x = x_, *w = w_;
    const int nt = sv_cpu_nt(c, (size_t)M * C * 4);
    if (nt == 1) { /* row by row: each row's d_x and its dw/db terms while it is in cache */
        for (int m = 0; m < M; m++) {
            size_t off = (size_t)m * C;
            c->k->layernorm_bwd_rows(c->bf16, d_x + off, dy + off, x + off, w, mean + m, rstd + m, 1, C);
            c->k->layernorm_bwd_params(dw, db, dy + off, x + off, mean + m, rstd + m, 1, C, 0, C);
        }
        return SV_OK;
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t m0, m1;
        sv_cpu_range((size_t)M, nt, t, &m0, &m1);
        if (m1 > m0)
            c->k->layernorm_bwd_rows(c->bf16, d_x + m0 * C, dy + m0 * C, x + m0 * C, w, mean + m0, rstd + m0,
                                     (int)(m1 - m0), C);
    }
    int ntc = C >= 32 * nt ? nt : 1;
#pragma omp parallel for num_threads(ntc) schedule(static, 1)
    for (int t = 0; t < ntc; t++) {
        int nv = (C + 15) / 16;
        int c0 = 16 * (int)((long)nv * t / ntc), c1 = 16 * (int)((long)nv * (t + 1) / ntc);
        if (c1 > C) c1 = C;
        c->k->layernorm_bwd_params(dw, db, dy, x, mean, rstd, M, C, c0, c1);
    }
    return SV_OK;
}

sv_status sv_cpu_check_labels(const char *op, const int32_t *labels, int B, int K) {
    if (labels)
        for (int b = 0; b < B; b++)
            if (labels[b] < 0 || labels[b] >= K)
                return SV_FAIL(SV_ERR_INVALID, "%s: label %d of sample %d outside [0, %d)", op, (int)labels[b], b, K);
    return SV_OK;
}

sv_status sv_cpu_softmax_xent(sv_backend *be, float *losses, void *d_logits_, const void *logits_,
                              const int32_t *labels, const float *soft_targets, int B, int K, float smoothing,
                              float grad_scale) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_logits = d_logits_;
    const float *logits = logits_;
    const int bf = c->bf16;
    SV_TRY(sv_cpu_check_labels("softmax_xent", labels, B, K));
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *K * 8)) schedule(static)
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * K;
        const float *st = soft_targets ? soft_targets + (size_t)b * K : NULL;
        float mx = z[0];
        for (int k = 1; k < K; k++) mx = z[k] > mx ? z[k] : mx;
        double s = 0.0;
        for (int k = 0; k < K; k++) s += (double)expf(z[k] - mx);
        double lse = (double)mx + log(s);
        double loss = 0.0;
        for (int k = 0; k < K; k++) {
            float t = st ? st[k] : sv_smooth_target(k, labels[b], smoothing, K);
            loss += (double)t * (lse - (double)z[k]);
        }
        losses[b] = (float)loss;
        if (d_logits) {
            float *d = d_logits + (size_t)b * K;
            float inv = (float)(1.0 / s);
            for (int k = 0; k < K; k++) {
                float t = st ? st[k] : sv_smooth_target(k, labels[b], smoothing, K);
                d[k] = sv_cpu_store(bf, (expf(z[k] - mx) * inv - t) * grad_scale);
            }
        }
    }
    return SV_OK;
}
