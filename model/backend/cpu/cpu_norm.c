/* CPU backend: LayerNorm forward/backward and fused softmax cross-entropy. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

/* LayerNorm rows run in the ISA-dispatched kernels (cpu_kernels.h: 16 fixed summation lanes,
 * so every variant and every row split gives the same bits). */

/* act16 (bf16 storage): the kernels run on whole rows widened onto the stack, one row per call
 * (each row's result does not depend on the rows around it); w and b are widened once per
 * worker. Rows longer than SV_CPU_ROW_MAX are refused (sv_cpu_row_fits). */
static void ln_fwd_rows16(const sv_cpu_backend *c, void *out, float *mean, float *rstd, const void *x, const void *w,
                          const void *b, size_t m0, size_t m1, int C) {
    _Alignas(64) float xs[SV_CPU_ROW_MAX], os[SV_CPU_ROW_MAX], ws[SV_CPU_ROW_MAX], bs[SV_CPU_ROW_MAX];
    sv_cpu_widen(c, ws, w, 0, (size_t)C);
    sv_cpu_widen(c, bs, b, 0, (size_t)C);
    for (size_t m = m0; m < m1; m++) {
        c->k->layernorm_fwd_rows(c->bf16, os, mean + m, rstd + m, sv_cpu_widen(c, xs, x, m * C, (size_t)C), ws, bs, 1,
                                 C);
        sv_cpu_narrow(c, out, m * C, os, (size_t)C);
    }
}

sv_status sv_cpu_layernorm_fwd(sv_backend *be, void *out_, float *mean, float *rstd, const void *x_, const void *w_,
                               const void *b_, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_, *w = w_, *b = b_;
    SV_TRY(sv_cpu_row_fits(c, "layernorm_fwd", C));
    const int nt = sv_cpu_nt(c, (size_t)M * C * 4);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t m0, m1;
        sv_cpu_range((size_t)M, nt, t, &m0, &m1);
        if (m1 > m0 && c->act16)
            ln_fwd_rows16(c, out_, mean, rstd, x_, w_, b_, m0, m1, C);
        else if (m1 > m0)
            c->k->layernorm_fwd_rows(c->bf16, out + m0 * C, mean + m0, rstd + m0, x + m0 * C, w, b, (int)(m1 - m0), C);
    }
    return SV_OK;
}

/* act16 rows [m0, m1) of the backward: d_x += the row's input gradient; with `params` also each
 * row's dw/db terms while it is widened (the single-worker order of the fp32 path). */
static void ln_bwd_rows16(const sv_cpu_backend *c, void *d_x, float *dw, float *db, const void *dy, const void *x,
                          const void *w, const float *mean, const float *rstd, size_t m0, size_t m1, int C,
                          int params) {
    _Alignas(64) float dxs[SV_CPU_ROW_MAX], dys[SV_CPU_ROW_MAX], xs[SV_CPU_ROW_MAX], ws[SV_CPU_ROW_MAX];
    sv_cpu_widen(c, ws, w, 0, (size_t)C);
    for (size_t m = m0; m < m1; m++) {
        const size_t off = m * C;
        sv_cpu_widen(c, dys, dy, off, (size_t)C);
        sv_cpu_widen(c, xs, x, off, (size_t)C);
        c->k->layernorm_bwd_rows(c->bf16, sv_cpu_widen(c, dxs, d_x, off, (size_t)C), dys, xs, ws, mean + m, rstd + m, 1,
                                 C);
        sv_cpu_narrow(c, d_x, off, dxs, (size_t)C);
        if (params) c->k->layernorm_bwd_params(dw, db, dys, xs, mean + m, rstd + m, 1, C, 0, C);
    }
}

/* act16 dw/db of columns [c0, c1): column chunks widened row by row, rows in order for every
 * column (the bits of layernorm_bwd_params over all rows). */
static void ln_bwd_params16(const sv_cpu_backend *c, float *dw, float *db, const void *dy, const void *x,
                            const float *mean, const float *rstd, int M, int C, int c0, int c1) {
    _Alignas(64) float dys[SV_CPU_CHUNK], xs[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(c0, c1, o, len, {
        for (int m = 0; m < M; m++) {
            const size_t off = (size_t)m * C + o;
            c->k->layernorm_bwd_params(dw + o, db + o, sv_cpu_widen(c, dys, dy, off, len),
                                       sv_cpu_widen(c, xs, x, off, len), mean + m, rstd + m, 1, (int)len, 0, (int)len);
        }
    });
}

sv_status sv_cpu_layernorm_bwd(sv_backend *be, void *d_x_, float *dw, float *db, const void *d_out_, const void *x_,
                               const void *w_, const float *mean, const float *rstd, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_x = d_x_;
    const float *dy = d_out_, *x = x_, *w = w_;
    SV_TRY(sv_cpu_row_fits(c, "layernorm_bwd", C));
    const int nt = sv_cpu_nt(c, (size_t)M * C * 4);
    if (nt == 1 && c->act16) {
        ln_bwd_rows16(c, d_x_, dw, db, d_out_, x_, w_, mean, rstd, 0, (size_t)M, C, 1);
        return SV_OK;
    }
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
        if (m1 > m0 && c->act16)
            ln_bwd_rows16(c, d_x_, NULL, NULL, d_out_, x_, w_, mean, rstd, m0, m1, C, 0);
        else if (m1 > m0)
            c->k->layernorm_bwd_rows(c->bf16, d_x + m0 * C, dy + m0 * C, x + m0 * C, w, mean + m0, rstd + m0,
                                     (int)(m1 - m0), C);
    }
    int ntc = C >= 32 * nt ? nt : 1;
#pragma omp parallel for num_threads(ntc) schedule(static, 1)
    for (int t = 0; t < ntc; t++) {
        int nv = (C + 15) / 16;
        int c0 = 16 * (int)((long)nv * t / ntc), c1 = 16 * (int)((long)nv * (t + 1) / ntc);
        if (c1 > C) c1 = C;
        if (c->act16)
            ln_bwd_params16(c, dw, db, d_out_, x_, mean, rstd, M, C, c0, c1);
        else
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

/* Logits are read through sv_cpu_ld and d_logits written through sv_cpu_st (cpu_backend.h): one
 * loop for both storages, walking each row in index order (no limit on the class count). */
sv_status sv_cpu_softmax_xent(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                              const float *soft_targets, int B, int K, float smoothing, float grad_scale) {
    const sv_cpu_backend *c = sv_cpu(be);
    SV_TRY(sv_cpu_check_labels("softmax_xent", labels, B, K));
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *K * 8)) schedule(static)
    for (int b = 0; b < B; b++) {
        const size_t r = (size_t)b * K;
        const float *st = soft_targets ? soft_targets + r : NULL;
        float mx = sv_cpu_ld(c, logits, r);
        for (int k = 1; k < K; k++) {
            float z = sv_cpu_ld(c, logits, r + k);
            mx = z > mx ? z : mx;
        }
        double s = 0.0;
        for (int k = 0; k < K; k++) s += (double)expf(sv_cpu_ld(c, logits, r + k) - mx);
        double lse = (double)mx + log(s);
        double loss = 0.0;
        for (int k = 0; k < K; k++) {
            float t = st ? st[k] : sv_smooth_target(k, labels[b], smoothing, K);
            loss += (double)t * (lse - (double)sv_cpu_ld(c, logits, r + k));
        }
        losses[b] = (float)loss;
        if (d_logits) {
            float inv = (float)(1.0 / s);
            for (int k = 0; k < K; k++) {
                float t = st ? st[k] : sv_smooth_target(k, labels[b], smoothing, K);
                sv_cpu_st(c, d_logits, r + k, (expf(sv_cpu_ld(c, logits, r + k) - mx) * inv - t) * grad_scale);
            }
        }
    }
    return SV_OK;
}
