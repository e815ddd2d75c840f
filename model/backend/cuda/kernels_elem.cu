/* CUDA backend: element-wise kernels, casts, f32 vector ops, deterministic reductions, the
 * linear epilogue, AdamW and the other optimizers. Every per-element formula comes from
 * core/elementwise.h. This file compiles with -fmad=false (CMakeLists.txt): each operation of
 * those formulas is rounded on its own, as on the CPU backend, so the per-element results are
 * the CPU backend's bits for the same inputs. */
#include "model/backend/cuda/kernels_common.cuh"

/* ---- casts ---- */
template <int BF> __global__ void k_f32_to_compute(void *dst, const float *src, size_t n) {
    SV_CUK_FOR(i, n) sv_ct<BF>::st(dst, i, src[i]);
}
template <int BF> __global__ void k_compute_to_f32(float *dst, const void *src, size_t n) {
    SV_CUK_FOR(i, n) dst[i] = sv_ct<BF>::ld(src, i);
}
__global__ void k_f32_to_bf16(uint16_t *dst, const float *src, size_t n) {
    SV_CUK_FOR(i, n) dst[i] = sv_f32_to_bf16(src[i]);
}
__global__ void k_bf16_to_f32(float *dst, const uint16_t *src, size_t n) {
    SV_CUK_FOR(i, n) dst[i] = sv_bf16_to_f32(src[i]);
}
__global__ void k_add(float *y, const float *x, size_t n) { SV_CUK_FOR(i, n) y[i] += x[i]; }

extern "C" cudaError_t sv_cuk_f32_to_compute(cudaStream_t s, int bf16, void *dst, const float *src, size_t n) {
    SV_CUK_DISPATCH(bf16, k_f32_to_compute, sv_cuk_blocks(n), SV_CUK_THREADS, 0, s, dst, src, n);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_compute_to_f32(cudaStream_t s, int bf16, float *dst, const void *src, size_t n) {
    SV_CUK_DISPATCH(bf16, k_compute_to_f32, sv_cuk_blocks(n), SV_CUK_THREADS, 0, s, dst, src, n);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_f32_to_bf16(cudaStream_t s, uint16_t *dst, const float *src, size_t n) {
    k_f32_to_bf16<<<sv_cuk_blocks(n), SV_CUK_THREADS, 0, s>>>(dst, src, n);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_bf16_to_f32(cudaStream_t s, float *dst, const uint16_t *src, size_t n) {
    k_bf16_to_f32<<<sv_cuk_blocks(n), SV_CUK_THREADS, 0, s>>>(dst, src, n);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_add_f32(cudaStream_t s, float *y, const float *x, size_t n) {
    k_add<<<sv_cuk_blocks(n), SV_CUK_THREADS, 0, s>>>(y, x, n);
    return cudaGetLastError();
}

/* ---- deterministic sum of squares ----
 * The partition depends only on n (SV_CUDA_SUMSQ_BLOCKS contiguous chunks, fixed thread
 * strides, fixed shared-memory tree), never on the device, so the result is bitwise stable. */
__global__ void k_sumsq_partial(const float *p, size_t n, double *partials) {
    __shared__ double red[SV_CUK_THREADS];
    size_t chunk = (n + SV_CUDA_SUMSQ_BLOCKS - 1) / SV_CUDA_SUMSQ_BLOCKS;
    size_t lo = (size_t)blockIdx.x * chunk;
    size_t hi = lo + chunk < n ? lo + chunk : n;
    double acc = 0.0;
    for (size_t i = lo + threadIdx.x; i < hi; i += SV_CUK_THREADS) {
        double v = (double)p[i];
        acc += v * v;
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int w = SV_CUK_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = red[0];
}
__global__ void k_sumsq_final(const double *partials, double *out) {
    __shared__ double red[SV_CUDA_SUMSQ_BLOCKS];
    red[threadIdx.x] = partials[threadIdx.x];
    __syncthreads();
    for (int w = SV_CUDA_SUMSQ_BLOCKS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = red[0];
}
extern "C" cudaError_t sv_cuk_sumsq(cudaStream_t s, const float *p, size_t n, double *partials, double *out_dev) {
    k_sumsq_partial<<<SV_CUDA_SUMSQ_BLOCKS, SV_CUK_THREADS, 0, s>>>(p, n, partials);
    k_sumsq_final<<<1, SV_CUDA_SUMSQ_BLOCKS, 0, s>>>(partials, out_dev);
    return cudaGetLastError();
}

/* ---- GELU, residual ---- */
template <int BF> __global__ void k_gelu_fwd(void *out, const void *x, size_t n) {
    SV_CUK_FOR(i, n) sv_ct<BF>::st(out, i, sv_gelu(sv_ct<BF>::ld(x, i)));
}
template <int BF> __global__ void k_gelu_bwd(void *d_x, const void *d_out, const void *x, size_t n) {
    SV_CUK_FOR(i, n) {
        float g = sv_ct<BF>::ld(d_out, i) * sv_gelu_grad(sv_ct<BF>::ld(x, i));
        sv_ct<BF>::st(d_x, i, g);
    }
}
template <int BF> __global__ void k_residual(void *out, const void *a, const void *b, size_t n) {
    SV_CUK_FOR(i, n) sv_ct<BF>::st(out, i, sv_ct<BF>::ld(a, i) + sv_ct<BF>::ld(b, i));
}
extern "C" cudaError_t sv_cuk_gelu_fwd(cudaStream_t s, int bf16, void *out, const void *x, size_t n) {
    SV_CUK_DISPATCH(bf16, k_gelu_fwd, sv_cuk_blocks(n), SV_CUK_THREADS, 0, s, out, x, n);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_gelu_bwd(cudaStream_t s, int bf16, void *d_x, const void *d_out, const void *x,
                                       size_t n) {
    SV_CUK_DISPATCH(bf16, k_gelu_bwd, sv_cuk_blocks(n), SV_CUK_THREADS, 0, s, d_x, d_out, x, n);
    return cudaGetLastError();
}
extern "C" cudaError_t sv_cuk_residual_add(cudaStream_t s, int bf16, void *out, const void *a, const void *b,
                                           size_t n) {
    SV_CUK_DISPATCH(bf16, k_residual, sv_cuk_blocks(n), SV_CUK_THREADS, 0, s, out, a, b, n);
    return cudaGetLastError();
}

/* ---- linear epilogue and deterministic column sums ---- */

/* Row m of out/pre (M,N) from row m of acc (M,N, fp32): sv_bias_gelu_elem with pre, else
 * z = acc (+ bias) into out. acc may be pre (GELU) or out (no GELU) itself: each element is read
 * before the same thread writes it. */
template <int BF>
__global__ void k_linear_epilogue(void *out, void *pre, const float *acc, const void *bias, int M, int N) {
    size_t n = (size_t)M * N;
    SV_CUK_FOR(i, n) {
        float b = bias ? sv_ct<BF>::ld(bias, i % (size_t)N) : 0.0f;
        float a = acc[i];
        if (pre) {
            float z;
            float g = sv_bias_gelu_elem(a, b, bias != NULL, &z);
            sv_ct<BF>::st(pre, i, z);
            sv_ct<BF>::st(out, i, g);
        } else {
            sv_ct<BF>::st(out, i, bias ? a + b : a);
        }
    }
}
extern "C" cudaError_t sv_cuk_linear_epilogue(cudaStream_t s, int bf16, void *out, void *pre, const float *acc,
                                              const void *bias, int M, int N) {
    SV_CUK_DISPATCH(bf16, k_linear_epilogue, sv_cuk_blocks((size_t)M * N), SV_CUK_THREADS, 0, s, out, pre, acc, bias, M,
                    N);
    return cudaGetLastError();
}

/* Row chunks for column reductions: at most 64, so the second pass is short; the chunking is a
 * function of M only (deterministic). */
static int colsum_chunks(int M) { return M < 64 ? M : 64; }
extern "C" size_t sv_cuk_colsum_partials(int M, int N) { return (size_t)colsum_chunks(M) * (size_t)N; }

/* partials[r, c] = sum over rows of chunk r of d_out[row, c], rows in increasing order. */
template <int BF> __global__ void k_colsum_partial(const void *d_out, int M, int N, int R, float *partials) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c >= N) return;
    int rows = (M + R - 1) / R;
    int lo = r * rows, hi = lo + rows < M ? lo + rows : M;
    float acc = 0.0f;
    for (int i = lo; i < hi; i++) acc += sv_ct<BF>::ld(d_out, (size_t)i * N + c);
    partials[(size_t)r * N + c] = acc;
}
/* out[c] += sum_r partials[r, c] (r in increasing order). */
__global__ void k_colsum_final(float *out, const float *partials, int R, int N) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= N) return;
    float acc = 0.0f;
    for (int r = 0; r < R; r++) acc += partials[(size_t)r * N + c];
    out[c] += acc;
}
extern "C" cudaError_t sv_cuk_colsum_acc(cudaStream_t s, int bf16, float *db, const void *d_out, int M, int N,
                                         float *partials) {
    int R = colsum_chunks(M);
    dim3 grid((unsigned)((N + SV_CUK_THREADS - 1) / SV_CUK_THREADS), (unsigned)R);
    SV_CUK_DISPATCH(bf16, k_colsum_partial, grid, SV_CUK_THREADS, 0, s, d_out, M, N, R, partials);
    k_colsum_final<<<(unsigned)((N + SV_CUK_THREADS - 1) / SV_CUK_THREADS), SV_CUK_THREADS, 0, s>>>(db, partials, R, N);
    return cudaGetLastError();
}

/* ---- AdamW ---- */
__global__ void k_adamw(float *p, const float *g, float *m, float *v, size_t n, sv_adamw_hparams h, float wd) {
    SV_CUK_FOR(i, n) sv_adamw_elem(&p[i], &m[i], &v[i], g[i], &h, wd);
}
extern "C" cudaError_t sv_cuk_adamw(cudaStream_t s, float *p, const float *g, float *m, float *v, size_t n,
                                    const struct sv_adamw_hparams *h, float weight_decay) {
    k_adamw<<<sv_cuk_blocks(n), SV_CUK_THREADS, 0, s>>>(p, g, m, v, n, *h, weight_decay);
    return cudaGetLastError();
}

/* ---- weight EMA ---- */
__global__ void k_ema(float *e, const float *x, size_t n, float w) {
    SV_CUK_FOR(i, n) e[i] = sv_ema_elem(e[i], x[i], w);
}
extern "C" cudaError_t sv_cuk_ema(cudaStream_t s, float *e, const float *x, size_t n, float w) {
    k_ema<<<sv_cuk_blocks(n), SV_CUK_THREADS, 0, s>>>(e, x, n, w);
    return cudaGetLastError();
}
__global__ void k_optim_elem(int op, float *p, float *g, float *m, float *v, size_t n, sv_optim_hparams h, float wd) {
    SV_CUK_FOR(i, n) sv_optim_op_elem(op, p, g, m, v, i, &h, wd);
}
extern "C" cudaError_t sv_cuk_optim_elem(cudaStream_t s, int op, float *p, float *g, float *m, float *v, size_t n,
                                         const struct sv_optim_hparams *h, float weight_decay) {
    k_optim_elem<<<sv_cuk_blocks(n), SV_CUK_THREADS, 0, s>>>(op, p, g, m, v, n, *h, weight_decay);
    return cudaGetLastError();
}
