/* CUDA backend: layer kernels (layernorm, softmax cross-entropy, im2col, token embedding, class
 * token selection). One block per row where a row reduction is needed; all reductions combine
 * in a fixed order, so results are run-to-run deterministic. */
#include "model/backend/cuda/kernels_common.cuh"

/* ---- LayerNorm ---- */
#define SV_LN_THREADS 256

template <int BF>
__global__ void k_ln_fwd(void *out, float *mean, float *rstd, const void *x, const void *w, const void *b, int C) {
    __shared__ float red[32];
    size_t row = blockIdx.x, base = row * (size_t)C;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += sv_ct<BF>::ld(x, base + c);
    float mu = sv_block_sum(s, red) / (float)C;
    float q = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float d = sv_ct<BF>::ld(x, base + c) - mu;
        q += d * d;
    }
    float var = sv_block_sum(q, red) / (float)C;
    float rs = 1.0f / sqrtf(var + SV_LN_EPS);
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float xh = (sv_ct<BF>::ld(x, base + c) - mu) * rs;
        sv_ct<BF>::st(out, base + c, xh * sv_ct<BF>::ld(w, c) + sv_ct<BF>::ld(b, c));
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
}
extern "C" cudaError_t sv_cuk_layernorm_fwd(cudaStream_t s, int bf16, void *out, float *mean, float *rstd,
                                            const void *x, const void *w, const void *b, int M, int C) {
    SV_CUK_DISPATCH(bf16, k_ln_fwd, (unsigned)M, SV_LN_THREADS, 0, s, out, mean, rstd, x, w, b, C);
    return cudaGetLastError();
}

/* d_x[row] += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = d_out * w. */
template <int BF>
__global__ void k_ln_bwd_dx(void *d_x, const void *d_out, const void *x, const void *w, const float *mean,
                            const float *rstd, int C) {
    __shared__ float red[32];
    size_t row = blockIdx.x, base = row * (size_t)C;
    float mu = mean[row], rs = rstd[row];
    float s1 = 0.0f, s2 = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float g = sv_ct<BF>::ld(d_out, base + c) * sv_ct<BF>::ld(w, c);
        float xh = (sv_ct<BF>::ld(x, base + c) - mu) * rs;
        s1 += g;
        s2 += g * xh;
    }
    float m1 = sv_block_sum(s1, red) / (float)C;
    float m2 = sv_block_sum(s2, red) / (float)C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float g = sv_ct<BF>::ld(d_out, base + c) * sv_ct<BF>::ld(w, c);
        float xh = (sv_ct<BF>::ld(x, base + c) - mu) * rs;
        float dx = rs * (g - m1 - xh * m2);
        sv_ct<BF>::st(d_x, base + c, sv_ct<BF>::ld(d_x, base + c) + dx);
    }
}
/* Per row-chunk partial sums of d_out * xhat (dw) and d_out (db); partials (2, R, C). */
template <int BF>
__global__ void k_ln_bwd_partial(const void *d_out, const void *x, const float *mean, const float *rstd, int M, int C,
                                 int R, float *partials) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c >= C) return;
    int rows = (M + R - 1) / R;
    int lo = r * rows, hi = lo + rows < M ? lo + rows : M;
    float aw = 0.0f, ab = 0.0f;
    for (int i = lo; i < hi; i++) {
        size_t at = (size_t)i * C + c;
        float g = sv_ct<BF>::ld(d_out, at);
        aw += g * (sv_ct<BF>::ld(x, at) - mean[i]) * rstd[i];
        ab += g;
    }
    partials[(size_t)r * C + c] = aw;
    partials[(size_t)(R + r) * C + c] = ab;
}
__global__ void k_ln_bwd_final(float *dw, float *db, const float *partials, int R, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float aw = 0.0f, ab = 0.0f;
    for (int r = 0; r < R; r++) {
        aw += partials[(size_t)r * C + c];
        ab += partials[(size_t)(R + r) * C + c];
    }
    dw[c] += aw;
    db[c] += ab;
}
extern "C" cudaError_t sv_cuk_layernorm_bwd(cudaStream_t s, int bf16, void *d_x, float *dw, float *db,
                                            const void *d_out, const void *x, const void *w, const float *mean,
                                            const float *rstd, int M, int C, float *partials) {
    SV_CUK_DISPATCH(bf16, k_ln_bwd_dx, (unsigned)M, SV_LN_THREADS, 0, s, d_x, d_out, x, w, mean, rstd, C);
    int R = (int)(sv_cuk_colsum_partials(M, C) / (size_t)C);
    unsigned cb = (unsigned)((C + SV_CUK_THREADS - 1) / SV_CUK_THREADS);
    SV_CUK_DISPATCH(bf16, k_ln_bwd_partial, dim3(cb, (unsigned)R), SV_CUK_THREADS, 0, s, d_out, x, mean, rstd, M, C, R,
                    partials);
    k_ln_bwd_final<<<cb, SV_CUK_THREADS, 0, s>>>(dw, db, partials, R, C);
    return cudaGetLastError();
}

/* ---- softmax cross-entropy (fused forward + backward), one block per sample ----
 * loss = sum_k t_k (lse - z_k); d_logits = (softmax - t) * grad_scale. */
template <int BF>
__global__ void k_xent(float *losses, void *d_logits, const void *logits, const int32_t *labels, const float *soft,
                       int K, float smoothing, float grad_scale) {
    __shared__ float red[32];
    size_t row = blockIdx.x, base = row * (size_t)K;
    float mx = -INFINITY;
    for (int k = threadIdx.x; k < K; k += blockDim.x) mx = fmaxf(mx, sv_ct<BF>::ld(logits, base + k));
    mx = sv_block_max(mx, red);
    float se = 0.0f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) se += expf(sv_ct<BF>::ld(logits, base + k) - mx);
    float lse = mx + logf(sv_block_sum(se, red));
    int label = labels ? labels[row] : -1;
    float l = 0.0f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
        float z = sv_ct<BF>::ld(logits, base + k);
        float t = labels ? sv_smooth_target(k, label, smoothing, K) : soft[base + k];
        l += t * (lse - z);
        if (d_logits) sv_ct<BF>::st(d_logits, base + k, (expf(z - lse) - t) * grad_scale);
    }
    l = sv_block_sum(l, red);
    if (threadIdx.x == 0) losses[row] = l;
}
extern "C" cudaError_t sv_cuk_softmax_xent(cudaStream_t s, int bf16, float *losses, void *d_logits, const void *logits,
                                           const int32_t *labels, const float *soft_targets, int B, int K,
                                           float smoothing, float grad_scale) {
    SV_CUK_DISPATCH(bf16, k_xent, (unsigned)B, SV_CUK_THREADS, 0, s, losses, d_logits, logits, labels, soft_targets, K,
                    smoothing, grad_scale);
    return cudaGetLastError();
}

/* ---- im2col for the patch-embed convolution: column order (c, ky, kx) ---- */
template <int BF> __global__ void k_im2col(void *patches, const float *img, int B, int C, int Himg, int Wimg, int p) {
    int gw = Wimg / p, P = (Himg / p) * gw, cols = C * p * p;
    size_t n = (size_t)B * P * cols;
    SV_CUK_FOR(i, n) {
        int col = (int)(i % (size_t)cols);
        size_t row = i / (size_t)cols;
        int b = (int)(row / (size_t)P), pi = (int)(row % (size_t)P);
        int py = pi / gw, px = pi % gw;
        int c = col / (p * p), r = col % (p * p), ky = r / p, kx = r % p;
        size_t src = (((size_t)b * C + c) * Himg + (size_t)(py * p + ky)) * Wimg + (size_t)(px * p + kx);
        sv_ct<BF>::st(patches, i, img[src]);
    }
}
extern "C" cudaError_t sv_cuk_im2col(cudaStream_t s, int bf16, void *patches, const float *img, int B, int C, int Himg,
                                     int Wimg, int p) {
    size_t n = (size_t)B * (size_t)(Himg / p) * (size_t)(Wimg / p) * (size_t)C * p * p;
    SV_CUK_DISPATCH(bf16, k_im2col, sv_cuk_blocks(n), SV_CUK_THREADS, 0, s, patches, img, B, C, Himg, Wimg, p);
    return cudaGetLastError();
}

/* ---- token embedding: class token, register tokens, positional embedding (backend.h) ---- */
template <int BF>
__global__ void k_embed_fwd(void *x, const void *patch_out, const void *cls, const void *reg, int R, const void *pos,
                            int nec, int B, int T, int D) {
    size_t n = (size_t)B * T * D;
    const int c1 = cls ? 1 : 0, P = c1 + R;
    SV_CUK_FOR(i, n) {
        int d = (int)(i % (size_t)D);
        size_t bt = i / (size_t)D;
        int t = (int)(bt % (size_t)T);
        size_t b = bt / (size_t)T;
        /* token t < c1 is cls, c1 <= t < P register t - c1, t >= P patch t - P */
        float v = t < c1 ? sv_ct<BF>::ld(cls, d)
            : t < P      ? sv_ct<BF>::ld(reg, (size_t)(t - c1) * D + d)
                         : sv_ct<BF>::ld(patch_out, (b * (size_t)(T - P) + (size_t)(t - P)) * D + d);
        /* nec (no_embed_class): the prefix tokens have no position, patch t - P has row t - P */
        if (!(nec && t < P)) v += sv_ct<BF>::ld(pos, (size_t)(nec ? t - P : t) * D + d);
        sv_ct<BF>::st(x, i, v);
    }
}
/* d_patch_out copy; each thread owns one (t, d) of d_pos (and of d_cls / d_reg for a prefix
 * token) and sums over b in increasing order (deterministic). */
template <int BF>
__global__ void k_embed_bwd(void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos, int nec, const void *dx,
                            int B, int T, int D) {
    size_t n = (size_t)T * D;
    const int c1 = d_cls ? 1 : 0, P = c1 + R;
    SV_CUK_FOR(i, n) {
        int d = (int)(i % (size_t)D);
        int t = (int)(i / (size_t)D);
        float acc = 0.0f;
        for (int b = 0; b < B; b++) {
            float g = sv_ct<BF>::ld(dx, ((size_t)b * T + t) * D + d);
            acc += g;
            if (t >= P) sv_ct<BF>::st(d_patch_out, ((size_t)b * (T - P) + (t - P)) * D + d, g);
        }
        if (!(nec && t < P)) d_pos[(size_t)(nec ? t - P : t) * D + d] += acc;
        if (t < c1)
            d_cls[d] += acc;
        else if (t < P)
            d_reg[(size_t)(t - c1) * D + d] += acc;
    }
}
extern "C" cudaError_t sv_cuk_embed_fwd(cudaStream_t s, int bf16, void *x, const void *patch_out, const void *cls,
                                        const void *reg, int R, const void *pos, int no_embed_class, int B, int T,
                                        int D) {
    SV_CUK_DISPATCH(bf16, k_embed_fwd, sv_cuk_blocks((size_t)B * T * D), SV_CUK_THREADS, 0, s, x, patch_out, cls, reg,
                    R, pos, no_embed_class, B, T, D);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_embed_bwd(cudaStream_t s, int bf16, void *d_patch_out, float *d_cls, float *d_reg, int R,
                                        float *d_pos, int no_embed_class, const void *dx, int B, int T, int D) {
    SV_CUK_DISPATCH(bf16, k_embed_bwd, sv_cuk_blocks((size_t)T * D), SV_CUK_THREADS, 0, s, d_patch_out, d_cls, d_reg, R,
                    d_pos, no_embed_class, dx, B, T, D);
    return cudaGetLastError();
}

/* ---- class-token pooling ---- */
template <int BF> __global__ void k_cls_select(void *out, const void *x, int B, int T, int D) {
    size_t n = (size_t)B * D;
    SV_CUK_FOR(i, n) {
        size_t b = i / (size_t)D, d = i % (size_t)D;
        sv_ct<BF>::st(out, i, sv_ct<BF>::ld(x, b * (size_t)T * D + d));
    }
}
template <int BF> __global__ void k_cls_select_bwd(void *dx, const void *d_out, int B, int T, int D) {
    size_t n = (size_t)B * D;
    SV_CUK_FOR(i, n) {
        size_t b = i / (size_t)D, d = i % (size_t)D, at = b * (size_t)T * D + d;
        sv_ct<BF>::st(dx, at, sv_ct<BF>::ld(dx, at) + sv_ct<BF>::ld(d_out, i));
    }
}
extern "C" cudaError_t sv_cuk_cls_select(cudaStream_t s, int bf16, void *out, const void *x, int B, int T, int D) {
    SV_CUK_DISPATCH(bf16, k_cls_select, sv_cuk_blocks((size_t)B * D), SV_CUK_THREADS, 0, s, out, x, B, T, D);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_cls_select_bwd(cudaStream_t s, int bf16, void *dx, const void *d_out, int B, int T,
                                             int D) {
    SV_CUK_DISPATCH(bf16, k_cls_select_bwd, sv_cuk_blocks((size_t)B * D), SV_CUK_THREADS, 0, s, dx, d_out, B, T, D);
    return cudaGetLastError();
}
