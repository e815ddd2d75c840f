/* CUDA backend: the training-recipe ops (dropout / stochastic-depth masks, LayerScale, average
 * pooling, sigmoid binary cross-entropy). Masks and per-element formulas come from
 * core/elementwise.h, so they are the CPU backend's to the bit; reductions use a fixed order. */
#include "model/backend/cuda/kernels_common.cuh"

template <int BF>
__global__ void k_drop(void *x, uint64_t key, uint64_t sample0, float keep, int B, size_t n, size_t group) {
    size_t total = (size_t)B * n;
    SV_CUK_FOR(i, total) {
        size_t b = i / n, j = i % n;
        float s = sv_drop_mult(key, sample0 + b, j / group, keep);
        sv_ct<BF>::st(x, i, sv_ct<BF>::ld(x, i) * s);
    }
}
extern "C" cudaError_t sv_cuk_drop(cudaStream_t s, int bf16, void *x, uint64_t key, uint64_t sample0, float keep, int B,
                                   size_t n, size_t group) {
    SV_CUK_DISPATCH(bf16, k_drop, sv_cuk_blocks((size_t)B * n), SV_CUK_THREADS, 0, s, x, key, sample0, keep, B, n,
                    group);
    return cudaGetLastError();
}

template <int BF> __global__ void k_scale_cols(void *out, const void *x, const void *gamma, int M, int D) {
    size_t n = (size_t)M * D;
    SV_CUK_FOR(i, n) sv_ct<BF>::st(out, i, sv_ct<BF>::ld(x, i) * sv_ct<BF>::ld(gamma, i % (size_t)D));
}
/* d_gamma: one block per column, rows strided over the threads, block tree (deterministic). */
template <int BF> __global__ void k_scale_cols_dgamma(float *d_gamma, const void *d_out, const void *x, int M, int D) {
    __shared__ float red[32];
    int d = blockIdx.x;
    float acc = 0.0f;
    for (int m = threadIdx.x; m < M; m += blockDim.x) {
        size_t i = (size_t)m * D + d;
        acc += sv_ct<BF>::ld(d_out, i) * sv_ct<BF>::ld(x, i);
    }
    acc = sv_block_sum(acc, red);
    if (threadIdx.x == 0) d_gamma[d] += acc;
}
extern "C" cudaError_t sv_cuk_scale_cols(cudaStream_t s, int bf16, void *out, const void *x, const void *gamma, int M,
                                         int D) {
    SV_CUK_DISPATCH(bf16, k_scale_cols, sv_cuk_blocks((size_t)M * D), SV_CUK_THREADS, 0, s, out, x, gamma, M, D);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_scale_cols_bwd(cudaStream_t s, int bf16, void *d_x, float *d_gamma, const void *d_out,
                                             const void *x, const void *gamma, int M, int D) {
    /* the column sums read d_out before d_x (which may alias it) is written */
    SV_CUK_DISPATCH(bf16, k_scale_cols_dgamma, (unsigned)D, SV_CUK_THREADS, 0, s, d_gamma, d_out, x, M, D);
    SV_CUK_DISPATCH(bf16, k_scale_cols, sv_cuk_blocks((size_t)M * D), SV_CUK_THREADS, 0, s, d_x, d_out, gamma, M, D);
    return cudaGetLastError();
}

/* one thread per (b, d), tokens summed in increasing order (the CPU order) */
template <int BF> __global__ void k_token_mean(void *out, const void *x, int B, int T, int D, int first) {
    size_t n = (size_t)B * D;
    float inv = 1.0f / (float)(T - first);
    SV_CUK_FOR(i, n) {
        size_t b = i / (size_t)D, d = i % (size_t)D;
        float acc = 0.0f;
        for (int t = first; t < T; t++) acc += sv_ct<BF>::ld(x, (b * T + t) * D + d);
        sv_ct<BF>::st(out, i, acc * inv);
    }
}
template <int BF> __global__ void k_token_mean_bwd(void *dx, const void *d_out, int B, int T, int D, int first) {
    size_t n = (size_t)B * T * D;
    float inv = 1.0f / (float)(T - first);
    SV_CUK_FOR(i, n) {
        size_t d = i % (size_t)D, bt = i / (size_t)D, t = bt % (size_t)T, b = bt / (size_t)T;
        if ((int)t < first) continue;
        sv_ct<BF>::st(dx, i, sv_ct<BF>::ld(dx, i) + sv_ct<BF>::ld(d_out, b * D + d) * inv);
    }
}
extern "C" cudaError_t sv_cuk_token_mean(cudaStream_t s, int bf16, void *out, const void *x, int B, int T, int D,
                                         int first) {
    SV_CUK_DISPATCH(bf16, k_token_mean, sv_cuk_blocks((size_t)B * D), SV_CUK_THREADS, 0, s, out, x, B, T, D, first);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_token_mean_bwd(cudaStream_t s, int bf16, void *dx, const void *d_out, int B, int T, int D,
                                             int first) {
    SV_CUK_DISPATCH(bf16, k_token_mean_bwd, sv_cuk_blocks((size_t)B * T * D), SV_CUK_THREADS, 0, s, dx, d_out, B, T, D,
                    first);
    return cudaGetLastError();
}

/* one block per sample */
template <int BF>
__global__ void k_bce(float *losses, void *d_logits, const void *logits, const int32_t *labels, const float *soft,
                      int K, float smoothing, float thresh, float norm, float grad_scale) {
    __shared__ float red[32];
    size_t row = blockIdx.x, base = row * (size_t)K;
    int label = labels ? labels[row] : -1;
    float l = 0.0f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
        float z = sv_ct<BF>::ld(logits, base + k);
        float t = labels ? sv_smooth_target(k, label, smoothing, K) : soft[base + k];
        if (thresh >= 0.0f) t = t > thresh ? 1.0f : 0.0f;
        l += sv_bce_logit_loss(z, t);
        if (d_logits) sv_ct<BF>::st(d_logits, base + k, sv_bce_logit_grad(z, t) * norm * grad_scale);
    }
    l = sv_block_sum(l, red);
    if (threadIdx.x == 0) losses[row] = l * norm;
}
extern "C" cudaError_t sv_cuk_sigmoid_bce(cudaStream_t s, int bf16, float *losses, void *d_logits, const void *logits,
                                          const int32_t *labels, const float *soft_targets, int B, int K,
                                          float smoothing, float target_thresh, int sum_classes, float grad_scale) {
    float norm = sum_classes ? 1.0f : 1.0f / (float)K;
    SV_CUK_DISPATCH(bf16, k_bce, (unsigned)B, SV_CUK_THREADS, 0, s, losses, d_logits, logits, labels, soft_targets, K,
                    smoothing, target_thresh, norm, grad_scale);
    return cudaGetLastError();
}
