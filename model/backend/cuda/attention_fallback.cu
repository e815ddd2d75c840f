/* CUDA backend: plain attention kernels, used when cuDNN's fused attention is unavailable
 * (fp32 compute, cfg->attn_fallback, or a shape cuDNN refuses).
 *
 * Simple and exact rather than fast: one block per (query row, head, batch) in the forward
 * and dQ passes and one block per (key row, head, batch) for dK/dV, scores kept in shared
 * memory, all arithmetic in fp32. Probabilities are never stored: the forward saves the
 * per-row log-sum-exp (the statistics cuDNN saves) and the backward recomputes
 * P = exp(s - lse), which also keeps `saved` the same size for both paths. Every sum runs in
 * a fixed order, so results are deterministic (no atomics).
 *
 * Attention-probability dropout (backend.h sv_be_attention_fwd_drop / _bwd_drop): every kernel
 * has a DR template flag. DR = 0 is the plain op (the code of the kernels without dropout, so
 * a NULL drop gives the same bits as before dropout existed); DR = 1 applies the mask
 * M[b,h,i,j] = sv_drop_mult(key, sample0 + b, (h T + i) T + j, keep) of core/elementwise.h,
 * the CPU backend's mask to the bit, recomputed from the counter hash wherever it is needed
 * (nothing is stored): forward O = (P M) v, backward dV = (P M)^T dO, dP = (dO v^T) M,
 * dS = P (dP - rowsum(dP P)). The saved statistics stay the softmax's log-sum-exp. */
#include "model/backend/cuda/kernels_common.cuh"

#define SV_ATT_THREADS 128

/* The dropout mask of one call (DR = 1 kernels only read it). */
struct att_drop {
    uint64_t key, sample0;
    float keep;
};
/* M[b,h,i,j]: query row i, key column j (the CPU backend's unit numbering). */
static __device__ __forceinline__ float att_mult(const att_drop &m, int b, int h, int i, int j, int T) {
    uint64_t unit = ((uint64_t)h * (uint64_t)T + (uint64_t)i) * (uint64_t)T + (uint64_t)j;
    return sv_drop_mult(m.key, m.sample0 + (uint64_t)b, unit, m.keep);
}

/* Launch kern<BF, DR> for the runtime compute dtype (bf16) and dropout flag (dr). */
#define SV_ATT_DISPATCH(bf16, dr, kern, grid, block, shmem, stream, ...) \
    do { \
        if (dr) \
            SV_ATT_DISPATCH_BF(bf16, 1, kern, grid, block, shmem, stream, __VA_ARGS__); \
        else \
            SV_ATT_DISPATCH_BF(bf16, 0, kern, grid, block, shmem, stream, __VA_ARGS__); \
    } while (0)
#define SV_ATT_DISPATCH_BF(bf16, DR, kern, grid, block, shmem, stream, ...) \
    do { \
        if (bf16) \
            kern<1, DR><<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__); \
        else \
            kern<0, DR><<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__); \
    } while (0)

/* Element offsets inside qkv (B,T,3D) for token t of batch b, head h; which = 0 q, 1 k, 2 v. */
static __device__ __forceinline__ size_t qkv_at(int b, int t, int h, int which, int T, int D, int dh) {
    return ((size_t)b * T + t) * (size_t)(3 * D) + (size_t)which * D + (size_t)h * dh;
}
static __device__ __forceinline__ size_t o_at(int b, int t, int h, int T, int D, int dh) {
    return ((size_t)b * T + t) * (size_t)D + (size_t)h * dh;
}

/* Forward. shared: q (dh) | scores (T). With DR the unnormalised probabilities exp(s - max) are
 * multiplied by M after the row sum z is taken, so out = sum_j (e_j M_ij) v_j / z = ((P M) v)_i
 * while lse stays the softmax's. */
template <int BF, int DR>
__global__ void k_att_fwd(void *out, float *lse, const void *qkv, int T, int D, int H, float scale, att_drop m) {
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
    if (DR) {
        for (int j = threadIdx.x; j < T; j += blockDim.x) sc[j] *= att_mult(m, b, h, i, j, T);
        __syncthreads();
    }
    size_t oa = o_at(b, i, h, T, D, dh);
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < T; j++) acc += sc[j] * sv_ct<BF>::ld(qkv, qkv_at(b, j, h, 2, T, D, dh) + d);
        sv_ct<BF>::st(out, oa + d, acc / z);
    }
    if (threadIdx.x == 0) lse[((size_t)b * H + h) * T + i] = mx + logf(z);
}

/* rowdot[b,h,i] = sum_d dO[b,i,h,d] * O[b,i,h,d] (the softmax-backward row term), summed over d
 * in increasing order by one thread. The softmax backward needs rowsum_j(dP_ij P_ij); without
 * dropout dP = dO v^T and O = P v, so that is dO_i . O_i. With dropout (dP_ij = M_ij dO_i . v_j,
 * O = (P M) v) it is still dO_i . O_i:
 *   sum_j P_ij M_ij (dO_i . v_j) = dO_i . sum_j (P_ij M_ij v_j) = dO_i . O_i,
 * so this kernel serves both (O being the forward's output, rounded to the compute dtype as the
 * plain path's is). */
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

/* dQ for query row i. shared: q (dh) | dO (dh) | dS (T). DR: dP_ij = M_ij (dO_i . v_j). */
template <int BF, int DR>
__global__ void k_att_dq(void *d_qkv, const void *d_out, const void *qkv, const float *lse, const float *rowdot, int T,
                         int D, int H, float scale, att_drop m) {
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
        if (DR) dp *= att_mult(m, b, h, i, j, T);
        ds[j] = p * (dp - rd);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < T; j++) acc += ds[j] * sv_ct<BF>::ld(qkv, qkv_at(b, j, h, 1, T, D, dh) + d);
        sv_ct<BF>::st(d_qkv, qa + d, acc * scale);
    }
}

/* dK, dV for key row j. shared: k (dh) | v (dh) | P (T) | dS (T). DR: P[i] holds P_ij M_ij (what
 * dV sums) and dP_ij = M_ij (dO_i . v_j). */
template <int BF, int DR>
__global__ void k_att_dkv(void *d_qkv, const void *d_out, const void *qkv, const float *lse, const float *rowdot, int T,
                          int D, int H, float scale, att_drop m) {
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
        if (DR) {
            float mij = att_mult(m, b, h, i, j, T);
            P[i] = p * mij;
            dp *= mij;
        } else {
            P[i] = p;
        }
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

/* keep >= 1: no dropout (the DR = 0 kernels). */
static att_drop att_drop_of(uint64_t key, uint64_t sample0, float keep) {
    att_drop m;
    m.key = key, m.sample0 = sample0, m.keep = keep;
    return m;
}

extern "C" cudaError_t sv_cuk_attn_fwd(cudaStream_t s, int bf16, void *out, float *lse, const void *qkv, int B, int T,
                                       int D, int H, uint64_t drop_key, uint64_t drop_sample0, float drop_keep) {
    int dh = D / H, dr = drop_keep < 1.0f;
    float scale = 1.0f / sqrtf((float)dh);
    att_drop m = att_drop_of(drop_key, drop_sample0, drop_keep);
    dim3 grid((unsigned)T, (unsigned)H, (unsigned)B);
    size_t shm = (size_t)(dh + T) * sizeof(float);
    SV_ATT_DISPATCH(bf16, dr, k_att_fwd, grid, SV_ATT_THREADS, shm, s, out, lse, qkv, T, D, H, scale, m);
    return cudaGetLastError();
}

extern "C" cudaError_t sv_cuk_attn_bwd(cudaStream_t s, int bf16, void *d_qkv, const void *d_out, const void *qkv,
                                       const void *out, const float *lse, float *rowdot, int B, int T, int D, int H,
                                       uint64_t drop_key, uint64_t drop_sample0, float drop_keep) {
    int dh = D / H, dr = drop_keep < 1.0f;
    float scale = 1.0f / sqrtf((float)dh);
    att_drop m = att_drop_of(drop_key, drop_sample0, drop_keep);
    SV_CUK_DISPATCH(bf16, k_att_rowdot, sv_cuk_blocks((size_t)B * H * T), SV_CUK_THREADS, 0, s, rowdot, d_out, out, B,
                    T, D, H);
    dim3 grid((unsigned)T, (unsigned)H, (unsigned)B);
    SV_ATT_DISPATCH(bf16, dr, k_att_dq, grid, SV_ATT_THREADS, (size_t)(2 * dh + T) * sizeof(float), s, d_qkv, d_out,
                    qkv, lse, rowdot, T, D, H, scale, m);
    SV_ATT_DISPATCH(bf16, dr, k_att_dkv, grid, SV_ATT_THREADS, (size_t)(2 * dh + 2 * T) * sizeof(float), s, d_qkv,
                    d_out, qkv, lse, rowdot, T, D, H, scale, m);
    return cudaGetLastError();
}
