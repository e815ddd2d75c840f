/* Shared device helpers for the CUDA backend's kernel files: compute-dtype load/store through
 * the core/elementwise.h conversions, block reductions, launch sizing, dtype dispatch. */
#ifndef SV_MODEL_BACKEND_CUDA_KERNELS_COMMON_CUH
#define SV_MODEL_BACKEND_CUDA_KERNELS_COMMON_CUH

/* System headers first: elementwise.h includes them too and must see them already included. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>

#include "core/elementwise.h"
#include "model/backend/cuda/cuda_internal.h"

/* Compute-dtype storage: BF = 1 -> bf16 bits in uint16_t, BF = 0 -> float. Conversions go
 * through core/elementwise.h so device rounding is the CPU backend's rounding. */
template <int BF> struct sv_ct;
template <> struct sv_ct<1> {
    typedef uint16_t T;
    static __device__ __forceinline__ float ld(const void *p, size_t i) {
        return sv_bf16_to_f32(((const uint16_t *)p)[i]);
    }
    static __device__ __forceinline__ void st(void *p, size_t i, float v) { ((uint16_t *)p)[i] = sv_f32_to_bf16(v); }
};
template <> struct sv_ct<0> {
    typedef float T;
    static __device__ __forceinline__ float ld(const void *p, size_t i) { return ((const float *)p)[i]; }
    static __device__ __forceinline__ void st(void *p, size_t i, float v) { ((float *)p)[i] = v; }
};

/* Launch `kern<1>` or `kern<0>` depending on the runtime dtype flag. */
#define SV_CUK_DISPATCH(bf16, kern, grid, block, shmem, stream, ...) \
    do { \
        if (bf16) \
            kern<1><<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__); \
        else \
            kern<0><<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__); \
    } while (0)

#define SV_CUK_THREADS 256

/* Grid for a grid-stride loop over n elements: enough blocks to fill any current GPU, capped so
 * huge n does not exceed the grid limit (the loop covers the rest). */
static inline unsigned sv_cuk_blocks(size_t n) {
    size_t b = (n + SV_CUK_THREADS - 1) / SV_CUK_THREADS;
    if (b > 16384) b = 16384;
    return b ? (unsigned)b : 1u;
}

#define SV_CUK_FOR(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* Block-wide sum/max of one float per thread (blockDim.x a multiple of 32, <= 1024). The
 * result is returned to every thread. `red` is 32 floats of shared memory; the function ends
 * with a barrier so `red` may be reused right away. The combination order is fixed by thread
 * index (deterministic): a butterfly within each warp, then the warps' results by warp index.
 * R (sv_red_sum, sv_red_max) gives the combining op(acc, other) and the value of idle lanes. */
struct sv_red_sum {
    static __device__ __forceinline__ float op(float a, float b) { return a + b; }
    static __device__ __forceinline__ float identity() { return 0.0f; }
};
struct sv_red_max {
    static __device__ __forceinline__ float op(float a, float b) { return fmaxf(a, b); }
    static __device__ __forceinline__ float identity() { return -INFINITY; }
};
template <class R> static __device__ __forceinline__ float sv_warp_reduce(float v) {
    for (int o = 16; o > 0; o >>= 1) v = R::op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <class R> static __device__ __forceinline__ float sv_block_reduce(float v, float *red) {
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = sv_warp_reduce<R>(v);
    if (lane == 0) red[wid] = v;
    __syncthreads();
    v = (lane < nw) ? red[lane] : R::identity();
    v = sv_warp_reduce<R>(v);
    __syncthreads();
    return v;
}
static __device__ __forceinline__ float sv_warp_sum(float v) { return sv_warp_reduce<sv_red_sum>(v); }
static __device__ __forceinline__ float sv_warp_max(float v) { return sv_warp_reduce<sv_red_max>(v); }
static __device__ __forceinline__ float sv_block_sum(float v, float *red) {
    return sv_block_reduce<sv_red_sum>(v, red);
}
static __device__ __forceinline__ float sv_block_max(float v, float *red) {
    return sv_block_reduce<sv_red_max>(v, red);
}

#endif
