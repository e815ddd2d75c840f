/* CPU backend: the training-recipe ops (dropout / stochastic-depth masks, LayerScale, average
 * pooling, sigmoid binary cross-entropy). Contracts in backend.h; per-element formulas in
 * core/elementwise.h (shared with the CUDA kernels). Every reduction runs in a fixed order
 * that does not depend on the thread count. Compute buffers are read and written through
 * sv_cpu_ld / sv_cpu_st (cpu_backend.h), so one loop serves fp32 and bf16 storage. */
#include <math.h>

#include "model/backend/cpu/cpu_backend.h"

sv_status sv_cpu_drop(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group) {
    const sv_cpu_backend *c = sv_cpu(be);
    const uint64_t key = d->key, s0 = d->sample0;
    const float keep = d->keep;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *n)) schedule(static)
    for (int b = 0; b < B; b++) {
        const size_t r = (size_t)b * n;
        if (group == n) { /* one draw for the whole sample */
            float s = sv_drop_mult(key, s0 + (uint64_t)b, 0, keep);
            for (size_t i = 0; i < n; i++) sv_cpu_st(c, x, r + i, sv_cpu_ld(c, x, r + i) * s);
        } else {
            for (size_t i = 0; i < n; i++)
                sv_cpu_st(c, x, r + i, sv_cpu_ld(c, x, r + i) * sv_drop_mult(key, s0 + (uint64_t)b, i / group, keep));
        }
    }
    return SV_OK;
}

/* out (M, D) = store(x * g), g (D) broadcast over the rows; out may be x (in place). The forward
 * of LayerScale and the d_x of its backward. */
static void scale_rows_by_cols(const sv_cpu_backend *c, void *out, const void *x, const void *g, int M, int D) {
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M *D)) schedule(static)
    for (int m = 0; m < M; m++)
        for (int d = 0; d < D; d++) {
            const size_t i = (size_t)m * D + d;
            sv_cpu_st(c, out, i, sv_cpu_ld(c, x, i) * sv_cpu_ld(c, g, (size_t)d));
        }
}

sv_status sv_cpu_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D) {
    scale_rows_by_cols(sv_cpu(be), out, x, gamma, M, D);
    return SV_OK;
}

sv_status sv_cpu_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                                const void *gamma, int M, int D) {
    const sv_cpu_backend *c = sv_cpu(be);
    /* d_gamma first (d_x may alias d_out): one column per thread, rows summed in order */
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)M *D)) schedule(static)
    for (int d = 0; d < D; d++) {
        double s = 0.0;
        for (int m = 0; m < M; m++) {
            const size_t i = (size_t)m * D + d;
            s += (double)sv_cpu_ld(c, d_out, i) * (double)sv_cpu_ld(c, x, i);
        }
        d_gamma[d] += (float)s;
    }
    scale_rows_by_cols(c, d_x, d_out, gamma, M, D);
    return SV_OK;
}

sv_status sv_cpu_token_mean(sv_backend *be, void *out, const void *x, int B, int T, int D, int first) {
    const sv_cpu_backend *c = sv_cpu(be);
    const float inv = 1.0f / (float)(T - first);
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            float s = 0.0f;
            for (int t = first; t < T; t++) s += sv_cpu_ld(c, x, ((size_t)b * T + t) * D + d);
            sv_cpu_st(c, out, (size_t)b * D + d, s * inv);
        }
    return SV_OK;
}

sv_status sv_cpu_token_mean_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first) {
    const sv_cpu_backend *c = sv_cpu(be);
    const float inv = 1.0f / (float)(T - first);
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *T *D)) schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = first; t < T; t++) {
            const size_t r = ((size_t)b * T + t) * D;
            for (int d = 0; d < D; d++)
                sv_cpu_st(c, dx, r + d, sv_cpu_ld(c, dx, r + d) + sv_cpu_ld(c, d_out, (size_t)b * D + d) * inv);
        }
    return SV_OK;
}

sv_status sv_cpu_sigmoid_bce(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                             const float *soft_targets, int B, int K, float smoothing, float target_thresh,
                             int sum_classes, float grad_scale) {
    const sv_cpu_backend *c = sv_cpu(be);
    SV_TRY(sv_cpu_check_labels("sigmoid_bce", labels, B, K));
    const float norm = sum_classes ? 1.0f : 1.0f / (float)K;
#pragma omp parallel for num_threads(sv_cpu_nt(c, (size_t)B *K * 8)) schedule(static)
    for (int b = 0; b < B; b++) {
        const size_t r = (size_t)b * K;
        double loss = 0.0;
        for (int k = 0; k < K; k++) {
            const float z = sv_cpu_ld(c, logits, r + k);
            float t = soft_targets ? soft_targets[r + k] : sv_smooth_target(k, labels[b], smoothing, K);
            if (target_thresh >= 0.0f) t = t > target_thresh ? 1.0f : 0.0f;
            loss += (double)sv_bce_logit_loss(z, t);
            if (d_logits) sv_cpu_st(c, d_logits, r + k, sv_bce_logit_grad(z, t) * norm * grad_scale);
        }
        losses[b] = (float)(loss * (double)norm);
    }
    return SV_OK;
}
