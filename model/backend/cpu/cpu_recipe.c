/* CPU backend: the training-recipe ops (dropout / stochastic-depth masks, LayerScale, average
 * pooling, sigmoid binary cross-entropy). Contracts in backend.h; per-element formulas in
 * core/elementwise.h (shared with the CUDA kernels). Every reduction runs in a fixed order
 * that does not depend on the thread count. With bf16 storage (act16) the loops run over stack
 * chunks (cpu_backend.h SV_CPU_CHUNKS) with the same formulas and the same orders. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

/* act16 row b of sv_cpu_drop (in place). */
static void drop_row16(const sv_cpu_backend *c, void *x, const sv_drop *d, int b, size_t n, size_t group) {
    _Alignas(64) float xs[SV_CPU_CHUNK];
    const uint64_t key = d->key, s = d->sample0 + (uint64_t)b;
    const float keep = d->keep, s1 = group == n ? sv_drop_mult(key, s, 0, keep) : 0.0f;
    SV_CPU_CHUNKS((size_t)b * n, (size_t)b * n + n, o, len, {
        const size_t i0 = o - (size_t)b * n; /* index in the row */
        sv_cpu_widen(c, xs, x, o, len);
        if (group == n)
            for (size_t j = 0; j < len; j++) xs[j] = sv_cpu_store(c->bf16, xs[j] * s1);
        else
            for (size_t j = 0; j < len; j++)
                xs[j] = sv_cpu_store(c->bf16, xs[j] * sv_drop_mult(key, s, (i0 + j) / group, keep));
        sv_cpu_narrow(c, x, o, xs, len);
    });
}

sv_status sv_cpu_drop(sv_backend *be, void *x_, const sv_drop *d, int B, size_t n, size_t group) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *x = x_;
    const int bf = c->bf16;
    const uint64_t key = d->key, s0 = d->sample0;
    const float keep = d->keep;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *n)) schedule(static)
    for (int b = 0; b < B; b++) {
        if (c->act16) {
            drop_row16(c, x_, d, b, n, group);
            continue;
        }
        float *row = x + (size_t)b * n;
        if (group == n) { /* one draw for the whole sample */
            float s = sv_drop_mult(key, s0 + (uint64_t)b, 0, keep);
            for (size_t i = 0; i < n; i++) row[i] = sv_cpu_store(bf, row[i] * s);
        } else {
            for (size_t i = 0; i < n; i++)
                row[i] = sv_cpu_store(bf, row[i] * sv_drop_mult(key, s0 + (uint64_t)b, i / group, keep));
        }
    }
    return SV_OK;
}

/* act16 scale_rows_by_cols: each worker's rows [m0, m1) in column chunks, g's chunk widened
 * once per chunk. */
static void scale_rows_by_cols16(const sv_cpu_backend *c, void *out, const void *x, const void *g, int M, int D) {
    const int nt = sv_cpu_nt(c, (size_t)M * D);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; t++) {
        _Alignas(64) float xs[SV_CPU_CHUNK], gs[SV_CPU_CHUNK];
        size_t m0, m1;
        sv_cpu_range((size_t)M, nt, t, &m0, &m1);
        SV_CPU_CHUNKS(0, (size_t)D, o, len, {
            sv_cpu_widen(c, gs, g, o, len);
            for (size_t m = m0; m < m1; m++) {
                sv_cpu_widen(c, xs, x, m * D + o, len);
                for (size_t j = 0; j < len; j++) xs[j] = sv_cpu_store(c->bf16, xs[j] * gs[j]);
                sv_cpu_narrow(c, out, m * D + o, xs, len);
            }
        });
    }
}

/* out (M, D) = store(x * g), g (D) broadcast over the rows; out may be x (in place). The forward
 * of LayerScale and the d_x of its backward. */
static void scale_rows_by_cols(const sv_cpu_backend *c, float *out, const float *x, const float *g, int M, int D) {
    const int bf = c->bf16;
    if (c->act16) {
        scale_rows_by_cols16(c, out, x, g, M, D);
        return;
    }
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M *D)) schedule(static)
    for (int m = 0; m < M; m++)
        for (int d = 0; d < D; d++) out[(size_t)m * D + d] = sv_cpu_store(bf, x[(size_t)m * D + d] * g[d]);
}

sv_status sv_cpu_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D) {
    scale_rows_by_cols(sv_cpu(be), out, x, gamma, M, D);
    return SV_OK;
}

/* act16 d_gamma (D) += sum_m a[m,:] * b[m,:]: each worker's columns in chunks, a double per
 * column summing the rows in order (the fp32 loop's sums). */
static void col_dot16(const sv_cpu_backend *c, float *d_gamma, const void *a, const void *b, int M, int D) {
    const int nt = sv_cpu_nt(c, (size_t)M * D);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; t++) {
        _Alignas(64) float as[SV_CPU_CHUNK], bs[SV_CPU_CHUNK];
        _Alignas(64) double s[SV_CPU_CHUNK];
        size_t d0, d1;
        sv_cpu_range((size_t)D, nt, t, &d0, &d1);
        SV_CPU_CHUNKS(d0, d1, o, len, {
            for (size_t j = 0; j < len; j++) s[j] = 0.0;
            for (size_t m = 0; m < (size_t)M; m++) {
                sv_cpu_widen(c, as, a, m * D + o, len);
                sv_cpu_widen(c, bs, b, m * D + o, len);
                for (size_t j = 0; j < len; j++) s[j] += (double)as[j] * (double)bs[j];
            }
            for (size_t j = 0; j < len; j++) d_gamma[o + j] += (float)s[j];
        });
    }
}

sv_status sv_cpu_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out_, const void *x_,
                                const void *gamma, int M, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    const float *d_out = d_out_, *x = x_;
    /* d_gamma first (d_x may alias d_out): one column per thread, rows summed in order */
    if (c->act16) {
        col_dot16(c, d_gamma, d_out_, x_, M, D);
        scale_rows_by_cols(c, d_x, d_out, gamma, M, D);
        return SV_OK;
    }
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M *D)) schedule(static)
    for (int d = 0; d < D; d++) {
        double s = 0.0;
        for (int m = 0; m < M; m++) s += (double)d_out[(size_t)m * D + d] * (double)x[(size_t)m * D + d];
        d_gamma[d] += (float)s;
    }
    scale_rows_by_cols(c, d_x, d_out, gamma, M, D);
    return SV_OK;
}

/* act16 sample b of token_mean: a float per column summing the tokens in order (the fp32 sums). */
static void token_mean_row16(const sv_cpu_backend *c, void *out, const void *x, int b, int T, int D, int first,
                             float inv) {
    _Alignas(64) float xs[SV_CPU_CHUNK], s[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(0, (size_t)D, o, len, {
        for (size_t j = 0; j < len; j++) s[j] = 0.0f;
        for (int t = first; t < T; t++) {
            sv_cpu_widen(c, xs, x, ((size_t)b * T + t) * D + o, len);
            for (size_t j = 0; j < len; j++) s[j] += xs[j];
        }
        for (size_t j = 0; j < len; j++) s[j] = sv_cpu_store(c->bf16, s[j] * inv);
        sv_cpu_narrow(c, out, (size_t)b * D + o, s, len);
    });
}

/* act16 sample b of token_mean_bwd. */
static void token_mean_bwd_row16(const sv_cpu_backend *c, void *dx, const void *g, int b, int T, int D, int first,
                                 float inv) {
    _Alignas(64) float xs[SV_CPU_CHUNK], gs[SV_CPU_CHUNK];
    SV_CPU_CHUNKS(0, (size_t)D, o, len, {
        sv_cpu_widen(c, gs, g, (size_t)b * D + o, len);
        for (int t = first; t < T; t++) {
            const size_t xo = ((size_t)b * T + t) * D + o;
            sv_cpu_widen(c, xs, dx, xo, len);
            for (size_t j = 0; j < len; j++) xs[j] = sv_cpu_store(c->bf16, xs[j] + gs[j] * inv);
            sv_cpu_narrow(c, dx, xo, xs, len);
        }
    });
}

sv_status sv_cpu_token_mean(sv_backend *be, void *out_, const void *x_, int B, int T, int D, int first) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_;
    const int bf = c->bf16;
    const float inv = 1.0f / (float)(T - first);
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int b = 0; b < B; b++)
        if (c->act16)
            token_mean_row16(c, out_, x_, b, T, D, first, inv);
        else
            for (int d = 0; d < D; d++) {
                float s = 0.0f;
                for (int t = first; t < T; t++) s += x[((size_t)b * T + t) * D + d];
                out[(size_t)b * D + d] = sv_cpu_store(bf, s * inv);
            }
    return SV_OK;
}

sv_status sv_cpu_token_mean_bwd(sv_backend *be, void *dx_, const void *d_out_, int B, int T, int D, int first) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *dx = dx_;
    const float *g = d_out_;
    const int bf = c->bf16;
    const float inv = 1.0f / (float)(T - first);
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int b = 0; b < B; b++)
        if (c->act16)
            token_mean_bwd_row16(c, dx_, d_out_, b, T, D, first, inv);
        else
            for (int t = first; t < T; t++) {
                float *row = dx + ((size_t)b * T + t) * D;
                for (int d = 0; d < D; d++) row[d] = sv_cpu_store(bf, row[d] + g[(size_t)b * D + d] * inv);
            }
    return SV_OK;
}

/* act16 sample b of sigmoid_bce: the fp32 loop over widened chunks, classes in order. */
static void bce_row16(const sv_cpu_backend *c, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                      const float *soft_targets, int b, int K, float smoothing, float target_thresh, float norm,
                      float grad_scale) {
    _Alignas(64) float zs[SV_CPU_CHUNK], ds[SV_CPU_CHUNK];
    const size_t r0 = (size_t)b * K;
    double loss = 0.0;
    SV_CPU_CHUNKS(r0, r0 + (size_t)K, o, len, {
        sv_cpu_widen(c, zs, logits, o, len);
        for (size_t j = 0; j < len; j++) {
            int k = (int)(o - r0 + j);
            float t = soft_targets ? soft_targets[o + j] : sv_smooth_target(k, labels[b], smoothing, K);
            if (target_thresh > 0.0f) t = t > target_thresh ? 1.0f : 0.0f;
            loss += (double)sv_bce_logit_loss(zs[j], t);
            ds[j] = sv_cpu_store(c->bf16, sv_bce_logit_grad(zs[j], t) * norm * grad_scale);
        }
        if (d_logits) sv_cpu_narrow(c, d_logits, o, ds, len);
    });
    losses[b] = (float)(loss * (double)norm);
}

sv_status sv_cpu_sigmoid_bce(sv_backend *be, float *losses, void *d_logits_, const void *logits_, const int32_t *labels,
                             const float *soft_targets, int B, int K, float smoothing, float target_thresh,
                             int sum_classes, float grad_scale) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_logits = d_logits_;
    const float *logits = logits_;
    const int bf = c->bf16;
    SV_TRY(sv_cpu_check_labels("sigmoid_bce", labels, B, K));
    const float norm = sum_classes ? 1.0f : 1.0f / (float)K;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *K * 8)) schedule(static)
    for (int b = 0; b < B; b++) {
        if (c->act16) {
            bce_row16(c, losses, d_logits_, logits_, labels, soft_targets, b, K, smoothing, target_thresh, norm,
                      grad_scale);
            continue;
        }
        const float *z = logits + (size_t)b * K;
        double loss = 0.0;
        for (int k = 0; k < K; k++) {
            float t = soft_targets ? soft_targets[(size_t)b * K + k] : sv_smooth_target(k, labels[b], smoothing, K);
            if (target_thresh > 0.0f) t = t > target_thresh ? 1.0f : 0.0f;
            loss += (double)sv_bce_logit_loss(z[k], t);
            if (d_logits)
                d_logits[(size_t)b * K + k] = sv_cpu_store(bf, sv_bce_logit_grad(z[k], t) * norm * grad_scale);
        }
        losses[b] = (float)(loss * (double)norm);
    }
    return SV_OK;
}
