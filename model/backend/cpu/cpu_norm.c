/* CPU backend: LayerNorm forward/backward and fused softmax cross-entropy. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

/* LayerNorm rows run in the ISA-dispatched kernels (cpu_kernels.h: 16 fixed summation lanes,
 * so every variant and every row split gives the same bits). */

/* Both storages run the same row loops: each row goes to the kernel through sv_cpu_rd / sv_cpu_wr
 * (cpu_backend.h), as it is with fp32 storage, widened onto the stack with bf16 storage (each
 * row's result does not depend on the rows around it); w and b are read once per worker. Rows
 * longer than SV_CPU_ROW_MAX are refused with bf16 storage (sv_cpu_row_fits). */
static void ln_fwd_rows(const sv_cpu_backend *c, void *out, float *mean, float *rstd, const void *x, const void *w,
                        const void *b, size_t m0, size_t m1, int C) {
    _Alignas(64) float xs[SV_CPU_ROW_MAX], os[SV_CPU_ROW_MAX], ws[SV_CPU_ROW_MAX], bs[SV_CPU_ROW_MAX];
    const float *wf = sv_cpu_rd(c, ws, w, 0, (size_t)C), *bf = sv_cpu_rd(c, bs, b, 0, (size_t)C);
    for (size_t m = m0; m < m1; m++) {
        float *o = sv_cpu_wr(c, os, out, m * C, (size_t)C, 0);
        c->k->layernorm_fwd_rows(c->bf16, o, mean + m, rstd + m, sv_cpu_rd(c, xs, x, m * C, (size_t)C), wf, bf, 1, C);
        sv_cpu_wr_end(c, out, m * C, o, (size_t)C);
    }
}

sv_status sv_cpu_layernorm_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                               const void *b, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    SV_TRY(sv_cpu_row_fits(c, "layernorm_fwd", C));
    const int nt = sv_cpu_nt(c, (size_t)M * C * 4);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t m0, m1;
        sv_cpu_range((size_t)M, nt, t, &m0, &m1);
        ln_fwd_rows(c, out, mean, rstd, x, w, b, m0, m1, C);
    }
    return SV_OK;
}

/* Rows [m0, m1) of the backward: d_x += the row's input gradient; with `params` also each row's
 * dw/db terms while it is in cache (the single-worker order). */
static void ln_bwd_rows(const sv_cpu_backend *c, void *d_x, float *dw, float *db, const void *dy, const void *x,
                        const void *w, const float *mean, const float *rstd, size_t m0, size_t m1, int C, int params) {
    _Alignas(64) float dxs[SV_CPU_ROW_MAX], dys[SV_CPU_ROW_MAX], xs[SV_CPU_ROW_MAX], ws[SV_CPU_ROW_MAX];
    const float *wf = sv_cpu_rd(c, ws, w, 0, (size_t)C);
    for (size_t m = m0; m < m1; m++) {
        const size_t off = m * C;
        const float *dyf = sv_cpu_rd(c, dys, dy, off, (size_t)C), *xf = sv_cpu_rd(c, xs, x, off, (size_t)C);
        float *dxf = sv_cpu_wr(c, dxs, d_x, off, (size_t)C, 1);
        c->k->layernorm_bwd_rows(c->bf16, dxf, dyf, xf, wf, mean + m, rstd + m, 1, C);
        sv_cpu_wr_end(c, d_x, off, dxf, (size_t)C);
        if (params) c->k->layernorm_bwd_params(dw, db, dyf, xf, mean + m, rstd + m, 1, C, 0, C);
    }
}

/* dw/db of columns [c0, c1), every column summed over the rows in row order: in one call over
 * the buffers with fp32 storage; in column chunks widened row by row with bf16 storage (the
 * same bits). */
static void ln_bwd_params(const sv_cpu_backend *c, float *dw, float *db, const void *dy, const void *x,
                          const float *mean, const float *rstd, int M, int C, int c0, int c1) {
    if (!c->act16) {
        c->k->layernorm_bwd_params(dw, db, dy, x, mean, rstd, M, C, c0, c1);
        return;
    }
    _Alignas(64) float dys[SV_CPU_CHUNK], xs[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(c0, c1, o, len, {
        for (int m = 0; m < M; m++) {
            const size_t off = (size_t)m * C + o;
            c->k->layernorm_bwd_params(dw + o, db + o, sv_cpu_widen(c, dys, dy, off, len),
                                       sv_cpu_widen(c, xs, x, off, len), mean + m, rstd + m, 1, (int)len, 0, (int)len);
        }
    });
}

sv_status sv_cpu_layernorm_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                               const void *w, const float *mean, const float *rstd, int M, int C) {
    const sv_cpu_backend *c = sv_cpu(be);
    SV_TRY(sv_cpu_row_fits(c, "layernorm_bwd", C));
    const int nt = sv_cpu_nt(c, (size_t)M * C * 4);
    if (nt == 1) { /* row by row: each row's d_x and its dw/db terms while it is in cache */
        ln_bwd_rows(c, d_x, dw, db, d_out, x, w, mean, rstd, 0, (size_t)M, C, 1);
        return SV_OK;
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t m0, m1;
        sv_cpu_range((size_t)M, nt, t, &m0, &m1);
        ln_bwd_rows(c, d_x, NULL, NULL, d_out, x, w, mean, rstd, m0, m1, C, 0);
    }
    int ntc = C >= 32 * nt ? nt : 1;
#pragma omp parallel for num_threads(ntc) schedule(static, 1)
    for (int t = 0; t < ntc; t++) {
        int nv = (C + 15) / 16;
        int c0 = 16 * (int)((long)nv * t / ntc), c1 = 16 * (int)((long)nv * (t + 1) / ntc);
        if (c1 > C) c1 = C;
        ln_bwd_params(c, dw, db, d_out, x, mean, rstd, M, C, c0, c1);
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
