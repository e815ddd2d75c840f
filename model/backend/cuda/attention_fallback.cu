/* CUDA backend: plain attention kernels, used when cuDNN's fused attention is unavailable
 * (fp32 compute, cfg->attn_fallback, or a shape cuDNN refuses).
 *
 * Simple and exact rather than fast: one block per (query row, head, batch) in the forward
 * and dQ passes and one block per (key row, head, batch) for dK/dV, scores kept in shared
 * memory, all arithmetic in fp32. Probabilities are never stored: the forward saves the
 * per-row log-sum-exp (the statistics cuDNN saves) and the backward recomputes
 * P = exp(s - lse), which also keeps `saved` the same size for both paths. Every sum runs in
 * a fixed order, so results are deterministic (no atomics). */
#include "model/backend/cuda/kernels_common.cuh"

#define SV_ATT_THREADS 128

/* Element offsets inside qkv (B,T,3D) for token t of batch b, head h; which = 0 q, 1 k, 2 v. */
static __device__ __forceinline__ size_t qkv_at(int b, int t, int h, int which, int T, int D, int dh) {
    return ((size_t)b * T + t) * (size_t)(3 * D) + (size_t)which * D + (size_t)h * dh;
}
static __device__ __forceinline__ size_t o_at(int b, int t, int h, int T, int D, int dh) {
    return ((size_t)b * T + t) * (size_t)D + (size_t)h * dh;
}

/* Forward. shared: q (dh) | scores (T). */
template <int BF> __global__ void k_att_fwd(void *out, float *lse, const void *qkv, int T, int D, int H, float scale) {
    extern __shared__ float sh[];
    __shared__ float red[32];
    int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, dh = D / H;
    float *q = sh, *sc = sh + dh;
    size_t qa = qkv_at(b, i, h, 0, T, D, dh);
    for (int d = threadIdx.x; d < dh; d += blockDim.x) q[d] = sv_ct<BF>::ld(qkv, qa + d);
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        size_t ka = qkv_at(b, j, h, 1, T, D, dh);
        float s = 0.0f;
        for (int d = 0; d < dh; d++) s += q[d] * sv_ct<BF>::ld(qkv, ka + d);
        s *= scale;
        sc[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = sv_block_max(mx, red);
    float z = 0.0f;
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        z += e;
    }
    z = sv_block_sum(z, red); /* ends with a barrier: sc[] complete */
    size_t oa = o_at(b, i, h, T, D, dh);
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < T; j++) acc += sc[j] * sv_ct<BF>::ld(qkv, qkv_at(b, j, h, 2, T, D, dh) + d);
        sv_ct<BF>::st(out, oa + d, acc / z);
    }
    if (threadIdx.x == 0) lse[((size_t)b * H + h) * T + i] = mx + logf(z);
}

/* rowdot[b,h,i] = sum_d dO[b,i,h,d] * O[b,i,h,d] (the softmax-backward row term). */
template <int BF>
__global__ void k_att_rowdot(float *rowdot, const void *d_out, const void *out, int B, int T, int D, int H) {
    int dh = D / H;
    size_t n = (size_t)B * H * T;
    SV_CUK_FOR(r, n) {
        int i = (int)(r % (size_t)T);
        int h = (int)((r / (size_t)T) % (size_t)H);
        int b = (int)(r / ((size_t)T * H));
        size_t oa = o_at(b, i, h, T, D, dh);
        float acc = 0.0f;
        for (int d = 0; d < dh; d++) acc += sv_ct<BF>::ld(d_out, oa + d) * sv_ct<BF>::ld(out, oa + d);
        rowdot[r] = acc;
    }
}

/* dQ for query row i. shared: q (dh) | dO (dh) | dS (T). */
template <int BF>
__global__ void k_att_dq(void *d_qkv, const void *d_out, const void *qkv, const float *lse, const float *rowdot, int T,
                         int D, int H, float scale) {
    extern __shared__ float sh[];
    int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, dh = D / H;
    float *q = sh, *go = sh + dh, *ds = sh + 2 * dh;
    size_t qa = qkv_at(b, i, h, 0, T, D, dh), oa = o_at(b, i, h, T, D, dh);
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        q[d] = sv_ct<BF>::ld(qkv, qa + d);
        go[d] = sv_ct<BF>::ld(d_out, oa + d);
    }
    __syncthreads();
    size_t r = ((size_t)b * H + h) * T + i;
    float l = lse[r], rd = rowdot[r];
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        size_t ka = qkv_at(b, j, h, 1, T, D, dh), va = qkv_at(b, j, h, 2, T, D, dh);
        float s = 0.0f, dp = 0.0f;
        for (int d = 0; d < dh; d++) {
            s += q[d] * sv_ct<BF>::ld(qkv, ka + d);
            dp += go[d] * sv_ct<BF>::ld(qkv, va + d);
        }
        float p = expf(s * scale - l);
        ds[j] = p * (dp - rd);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < T; j++) acc += ds[j] * sv_ct<BF>::ld(qkv, qkv_at(b, j, h, 1, T, D, dh) + d);
        sv_ct<BF>::st(d_qkv, qa + d, acc * scale);
    }
}

/* dK, dV for key row j. shared: k (dh) | v (dh) | P (T) | dS (T). */
template <int BF>
__global__ void k_att_dkv(void *d_qkv, const void *d_out, const void *qkv, const float *lse, const float *rowdot, int T,
                          int D, int H, float scale) {
    extern __shared__ float sh[];
    int j = blockIdx.x, h = blockIdx.y, b = blockIdx.z, dh = D / H;
    float *k = sh, *v = sh + dh, *P = sh + 2 * dh, *ds = sh + 2 * dh + T;
    size_t ka = qkv_at(b, j, h, 1, T, D, dh), va = qkv_at(b, j, h, 2, T, D, dh);
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        k[d] = sv_ct<BF>::ld(qkv, ka + d);
        v[d] = sv_ct<BF>::ld(qkv, va + d);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < T; i += blockDim.x) {
        size_t qa = qkv_at(b, i, h, 0, T, D, dh), oa = o_at(b, i, h, T, D, dh);
        size_t r = ((size_t)b * H + h) * T + i;
        float s = 0.0f, dp = 0.0f;
        for (int d = 0; d < dh; d++) {
            s += sv_ct<BF>::ld(qkv, qa + d) * k[d];
            dp += sv_ct<BF>::ld(d_out, oa + d) * v[d];
        }
        float p = expf(s * scale - lse[r]);
        P[i] = p;
        ds[i] = p * (dp - rowdot[r]);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        float adv = 0.0f, adk = 0.0f;
        for (int i = 0; i < T; i++) {
            adv += P[i] * sv_ct<BF>::ld(d_out, o_at(b, i, h, T, D, dh) + d);
            adk += ds[i] * sv_ct<BF>::ld(qkv, qkv_at(b, i, h, 0, T, D, dh) + d);
        }
        sv_ct<BF>::st(d_qkv, va + d, adv);
        sv_ct<BF>::st(d_qkv, ka + d, adk * scale);
    }
}

extern "C" cudaError_t sv_cuk_attn_fwd(cudaStream_t s, int bf16, void *out, float *lse, const void *qkv, int B, int T,
                                       int D, int H) {
    int dh = D / H;
    float scale = 1.0f / sqrtf((float)dh);
    dim3 grid((unsigned)T, (unsigned)H, (unsigned)B);
    size_t shm = (size_t)(dh + T) * sizeof(float);
    SV_CUK_DISPATCH(bf16, k_att_fwd, grid, SV_ATT_THREADS, shm, s, out, lse, qkv, T, D, H, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t sv_cuk_attn_bwd(cudaStream_t s, int bf16, void *d_qkv, const void *d_out, const void *qkv,
                                       const void *out, const float *lse, float *rowdot, int B, int T, int D, int H) {
    int dh = D / H;
    float scale = 1.0f / sqrtf((float)dh);
    SV_CUK_DISPATCH(bf16, k_att_rowdot, sv_cuk_blocks((size_t)B * H * T), SV_CUK_THREADS, 0, s, rowdot, d_out, out, B,
                    T, D, H);
    dim3 grid((unsigned)T, (unsigned)H, (unsigned)B);
    SV_CUK_DISPATCH(bf16, k_att_dq, grid, SV_ATT_THREADS, (size_t)(2 * dh + T) * sizeof(float), s, d_qkv, d_out, qkv,
                    lse, rowdot, T, D, H, scale);
    SV_CUK_DISPATCH(bf16, k_att_dkv, grid, SV_ATT_THREADS, (size_t)(2 * dh + 2 * T) * sizeof(float), s, d_qkv, d_out,
                    qkv, lse, rowdot, T, D, H, scale);
    return cudaGetLastError();
}
