/* CPU backend: the training-recipe ops (dropout / stochastic-depth masks, LayerScale, average
 * pooling, sigmoid binary cross-entropy). Contracts in backend.h; per-element formulas in
 * core/elementwise.h (shared with the CUDA kernels). Every reduction runs in a fixed order
 * that does not depend on the thread count. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

sv_status sv_cpu_drop(sv_backend *be, void *x_, const sv_drop *d, int B, size_t n, size_t group) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *x = x_;
    const int bf = c->bf16;
    const uint64_t key = d->key, s0 = d->sample0;
    const float keep = d->keep;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *n)) schedule(static)
    for (int b = 0; b < B; b++) {
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

/* out (M, D) = store(x * g), g (D) broadcast over the rows; out may be x (in place). The forward
 * of LayerScale and the d_x of its backward. */
static void scale_rows_by_cols(const sv_cpu_backend *c, float *out, const float *x, const float *g, int M, int D) {
    const int bf = c->bf16;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M *D)) schedule(static)
    for (int m = 0; m < M; m++)
        for (int d = 0; d < D; d++) out[(size_t)m * D + d] = sv_cpu_store(bf, x[(size_t)m * D + d] * g[d]);
}

sv_status sv_cpu_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D) {
    scale_rows_by_cols(sv_cpu(be), out, x, gamma, M, D);
    return SV_OK;
}

sv_status sv_cpu_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out_, const void *x_,
                                const void *gamma, int M, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    const float *d_out = d_out_, *x = x_;
    /* d_gamma first (d_x may alias d_out): one column per thread, rows summed in order */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M *D)) schedule(static)
    for (int d = 0; d < D; d++) {
        double s = 0.0;
        for (int m = 0; m < M; m++) s += (double)d_out[(size_t)m * D + d] * (double)x[(size_t)m * D + d];
        d_gamma[d] += (float)s;
    }
    scale_rows_by_cols(c, d_x, d_out, gamma, M, D);
    return SV_OK;
}

sv_status sv_cpu_token_mean(sv_backend *be, void *out_, const void *x_, int B, int T, int D, int first) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *x = x_;
    const int bf = c->bf16;
    const float inv = 1.0f / (float)(T - first);
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int b = 0; b < B; b++)
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
        for (int t = first; t < T; t++) {
            float *row = dx + ((size_t)b * T + t) * D;
            for (int d = 0; d < D; d++) row[d] = sv_cpu_store(bf, row[d] + g[(size_t)b * D + d] * inv);
        }
    return SV_OK;
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
