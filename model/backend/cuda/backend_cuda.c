/* CUDA backend: creation, device/stream set-up, memory, copies and the simple ops; the vtable.
 *
 * Ordering model: one compute stream per backend. Every op, copy and fill is enqueued on it in
 * call order, so ops need no events among themselves. The NCCL comm gets the stream through
 * native_stream and orders its own stream against it with events. Host-visible transfers
 * (upload, download, sumsq) return only when the host buffer may be reused/read: they enqueue
 * on the compute stream and synchronise it, which keeps the backend.h contract identical to the
 * CPU backend's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gpus.h"
#include "core/log.h"
#include "model/backend/cuda/cuda_backend.h"

#define SV_CUDA_LT_WORKSPACE (32u << 20) /* cuBLASLt's recommendation for Hopper */

void sv_cuda_note(sv_cuda_backend *cb, sv_be_path_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cb->note[kind], sizeof cb->note[kind], fmt, ap);
    va_end(ap);
}

static const char *cuda_last_path(const sv_backend *be, sv_be_path_kind kind) { return sv_cuda_cbe(be)->note[kind]; }

sv_status sv_cuda_launch_check(cudaError_t e, const char *op) {
    if (e == cudaSuccess) return SV_OK;
    return SV_FAIL(SV_ERR_BACKEND, "CUDA kernel launch for %s failed: %s (%s)", op, cudaGetErrorString(e),
                   cudaGetErrorName(e));
}

sv_status sv_cuda_cudnn_fail(cudnnStatus_t st, const char *call, const char *file, int line) {
    char detail[512];
    detail[0] = 0;
    cudnnGetLastErrorString(detail, sizeof detail);
    return sv_fail_at(SV_ERR_BACKEND, file, line, "cuDNN error in %s: %s%s%s", call, cudnnGetErrorString(st),
                      detail[0] ? ": " : "", detail);
}

sv_status sv_cuda_reserve_red(sv_cuda_backend *cb, size_t floats) {
    if (floats <= cb->red_floats) return SV_OK;
    if (cb->red) {
        SV_CUDA_TRY(cudaStreamSynchronize(cb->stream));
        SV_CUDA_TRY(cudaFree(cb->red));
        cb->red = NULL;
        cb->red_floats = 0;
    }
    cudaError_t e = cudaMalloc((void **)&cb->red, floats * sizeof(float));
    if (e != cudaSuccess) {
        cudaGetLastError(); /* a failed allocation stays the last error: the next launch would report it */
        return SV_FAIL(SV_ERR_OOM, "CUDA: cannot allocate %zu bytes of reduction scratch: %s", floats * sizeof(float),
                       cudaGetErrorString(e));
    }
    cb->red_floats = floats;
    return SV_OK;
}

int sv_cuda_backend_available(void) {
    int n = 0;
    /* No driver or no device is an ordinary answer here, never an abort. */
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error state for later calls */
        return 0;
    }
    return n > 0;
}

static void cuda_destroy(sv_backend *be) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    if (cb->stream) cudaStreamSynchronize(cb->stream);
    sv_cuda_attn_free(cb);
    sv_cuda_gemm_free(cb);
    if (cb->lt) cublasLtDestroy(cb->lt);
    cudaFree(cb->lt_ws);
    cudaFree(cb->stage);
    cudaFree(cb->red);
    cudaFree(cb->sumsq_dev);
    cudaFreeHost(cb->sumsq_host);
    if (cb->copy_stream) cudaStreamSynchronize(cb->copy_stream);
    if (cb->ev_compute) cudaEventDestroy(cb->ev_compute);
    if (cb->ev_copied) cudaEventDestroy(cb->ev_copied);
    if (cb->copy_stream) cudaStreamDestroy(cb->copy_stream);
    if (cb->stream) cudaStreamDestroy(cb->stream);
    free(cb);
}

static double cuda_peak_flops(const sv_backend *be) { return sv_cuda_cbe(be)->peak; }
static void *cuda_native_stream(const sv_backend *be) { return (void *)sv_cuda_cbe(be)->stream; }

/* ---- memory ---- */
static sv_status cuda_alloc(sv_backend *be, size_t bytes, void **out) {
    (void)be;
    *out = NULL;
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 1); /* cudaMalloc aligns to >= 256 bytes */
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t freeb = 0, total = 0;
        cudaMemGetInfo(&freeb, &total);
        return SV_FAIL(SV_ERR_OOM, "cudaMalloc of %zu bytes failed: %s (device has %zu of %zu bytes free)", bytes,
                       cudaGetErrorString(e), freeb, total);
    }
    return SV_OK;
}
static void cuda_free(sv_backend *be, void *p) {
    (void)be;
    cudaFree(p);
}
static sv_status cuda_host_alloc(sv_backend *be, size_t bytes, void **out) {
    (void)be;
    *out = NULL;
    cudaError_t e = cudaMallocHost(out, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return SV_FAIL(SV_ERR_OOM, "cudaMallocHost (pinned) of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
    }
    return SV_OK;
}
static void cuda_host_free(sv_backend *be, void *p) {
    (void)be;
    cudaFreeHost(p);
}
static sv_status cuda_upload(sv_backend *be, void *dst, const void *src, size_t bytes) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    SV_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb->stream));
    SV_CUDA_TRY(cudaStreamSynchronize(cb->stream));
    return SV_OK;
}
/* Copy stream: waits for the compute work enqueued so far (which may still read `dst`), copies,
 * and the compute stream waits for the copy before any later op. The host does not block. */
static sv_status cuda_upload_async(sv_backend *be, void *dst, const void *src, size_t bytes) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    SV_CUDA_TRY(cudaEventRecord(cb->ev_compute, cb->stream));
    SV_CUDA_TRY(cudaStreamWaitEvent(cb->copy_stream, cb->ev_compute, 0));
    SV_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb->copy_stream));
    SV_CUDA_TRY(cudaEventRecord(cb->ev_copied, cb->copy_stream));
    SV_CUDA_TRY(cudaStreamWaitEvent(cb->stream, cb->ev_copied, 0));
    return SV_OK;
}
static sv_status cuda_upload_fence(sv_backend *be) {
    SV_CUDA_TRY(cudaStreamSynchronize(sv_cuda_be(be)->copy_stream));
    return SV_OK;
}
static sv_status cuda_download(sv_backend *be, void *dst, const void *src, size_t bytes) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    SV_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cb->stream));
    SV_CUDA_TRY(cudaStreamSynchronize(cb->stream));
    return SV_OK;
}
static sv_status cuda_copy(sv_backend *be, void *dst, const void *src, size_t bytes) {
    SV_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, sv_cuda_be(be)->stream));
    return SV_OK;
}
static sv_status cuda_zero(sv_backend *be, void *p, size_t bytes) {
    SV_CUDA_TRY(cudaMemsetAsync(p, 0, bytes, sv_cuda_be(be)->stream));
    return SV_OK;
}
static sv_status cuda_sync(sv_backend *be) {
    SV_CUDA_TRY(cudaStreamSynchronize(sv_cuda_be(be)->stream));
    return SV_OK;
}

/* ---- casts and vector ops ---- */
#define CB sv_cuda_be(be)
static sv_status cuda_f32_to_compute(sv_backend *be, void *dst, const float *src, size_t n) {
    return sv_cuda_launch_check(sv_cuk_f32_to_compute(CB->stream, CB->bf16, dst, src, n), "f32_to_compute");
}
static sv_status cuda_compute_to_f32(sv_backend *be, float *dst, const void *src, size_t n) {
    return sv_cuda_launch_check(sv_cuk_compute_to_f32(CB->stream, CB->bf16, dst, src, n), "compute_to_f32");
}
static sv_status cuda_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n) {
    return sv_cuda_launch_check(sv_cuk_f32_to_bf16(CB->stream, dst, src, n), "f32_to_bf16");
}
static sv_status cuda_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n) {
    return sv_cuda_launch_check(sv_cuk_bf16_to_f32(CB->stream, dst, src, n), "bf16_to_f32");
}
static sv_status cuda_add_f32(sv_backend *be, float *y, const float *x, size_t n) {
    return sv_cuda_launch_check(sv_cuk_add_f32(CB->stream, y, x, n), "add_f32");
}
static sv_status cuda_sumsq_f32(sv_backend *be, const float *p, size_t n, double *out) {
    sv_cuda_backend *cb = CB;
    double *res = cb->sumsq_dev + SV_CUDA_SUMSQ_BLOCKS;
    SV_TRY(sv_cuda_launch_check(sv_cuk_sumsq(cb->stream, p, n, cb->sumsq_dev, res), "sumsq_f32"));
    SV_CUDA_TRY(cudaMemcpyAsync(cb->sumsq_host, res, sizeof(double), cudaMemcpyDeviceToHost, cb->stream));
    SV_CUDA_TRY(cudaStreamSynchronize(cb->stream));
    *out = *cb->sumsq_host;
    return SV_OK;
}
static sv_status cuda_sumsq_f32_dev(sv_backend *be, const float *p, size_t n, double *out_dev) {
    return sv_cuda_launch_check(sv_cuk_sumsq(CB->stream, p, n, CB->sumsq_dev, out_dev), "sumsq_f32_dev");
}

/* ---- layers other than GEMM and attention ---- */
static sv_status cuda_layernorm_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                                    const void *b, int M, int C) {
    return sv_cuda_launch_check(sv_cuk_layernorm_fwd(CB->stream, CB->bf16, out, mean, rstd, x, w, b, M, C),
                                "layernorm_fwd");
}
static sv_status cuda_layernorm_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                                    const void *w, const float *mean, const float *rstd, int M, int C) {
    SV_TRY(sv_cuda_reserve_red(CB, 2 * sv_cuk_colsum_partials(M, C)));
    return sv_cuda_launch_check(
        sv_cuk_layernorm_bwd(CB->stream, CB->bf16, d_x, dw, db, d_out, x, w, mean, rstd, M, C, CB->red),
        "layernorm_bwd");
}
static sv_status cuda_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n) {
    return sv_cuda_launch_check(sv_cuk_gelu_fwd(CB->stream, CB->bf16, out, x, n), "gelu_fwd");
}
static sv_status cuda_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n) {
    return sv_cuda_launch_check(sv_cuk_gelu_bwd(CB->stream, CB->bf16, d_x, d_out, x, n), "gelu_bwd");
}
static sv_status cuda_residual_add(sv_backend *be, void *out, const void *a, const void *b, size_t n) {
    return sv_cuda_launch_check(sv_cuk_residual_add(CB->stream, CB->bf16, out, a, b, n), "residual_add");
}
static sv_status cuda_softmax_xent(sv_backend *be, float *losses, void *d_logits, const void *logits,
                                   const int32_t *labels, const float *soft_targets, int B, int K, float smoothing,
                                   float grad_scale) {
    return sv_cuda_launch_check(sv_cuk_softmax_xent(CB->stream, CB->bf16, losses, d_logits, logits, labels,
                                                    soft_targets, B, K, smoothing, grad_scale),
                                "softmax_xent");
}
static sv_status cuda_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Himg, int Wimg, int p) {
    return sv_cuda_launch_check(sv_cuk_im2col(CB->stream, CB->bf16, patches, img, B, C, Himg, Wimg, p), "im2col");
}
static sv_status cuda_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                                const void *pos, int no_embed_class, int B, int T, int D) {
    return sv_cuda_launch_check(
        sv_cuk_embed_fwd(CB->stream, CB->bf16, x, patch_out, cls, reg, R, pos, no_embed_class, B, T, D), "embed_fwd");
}
static sv_status cuda_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                                int no_embed_class, const void *dx, int B, int T, int D) {
    return sv_cuda_launch_check(
        sv_cuk_embed_bwd(CB->stream, CB->bf16, d_patch_out, d_cls, d_reg, R, d_pos, no_embed_class, dx, B, T, D),
        "embed_bwd");
}
static sv_status cuda_cls_select(sv_backend *be, void *out, const void *x, int B, int T, int D) {
    return sv_cuda_launch_check(sv_cuk_cls_select(CB->stream, CB->bf16, out, x, B, T, D), "cls_select");
}
static sv_status cuda_cls_select_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D) {
    return sv_cuda_launch_check(sv_cuk_cls_select_bwd(CB->stream, CB->bf16, dx, d_out, B, T, D), "cls_select_bwd");
}
static sv_status cuda_drop(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group) {
    return sv_cuda_launch_check(sv_cuk_drop(CB->stream, CB->bf16, x, d->key, d->sample0, d->keep, B, n, group), "drop");
}
static sv_status cuda_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D) {
    return sv_cuda_launch_check(sv_cuk_scale_cols(CB->stream, CB->bf16, out, x, gamma, M, D), "scale_cols");
}
static sv_status cuda_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                                     const void *gamma, int M, int D) {
    return sv_cuda_launch_check(sv_cuk_scale_cols_bwd(CB->stream, CB->bf16, d_x, d_gamma, d_out, x, gamma, M, D),
                                "scale_cols_bwd");
}
static sv_status cuda_token_mean(sv_backend *be, void *out, const void *x, int B, int T, int D, int first) {
    return sv_cuda_launch_check(sv_cuk_token_mean(CB->stream, CB->bf16, out, x, B, T, D, first), "token_mean");
}
static sv_status cuda_token_mean_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first) {
    return sv_cuda_launch_check(sv_cuk_token_mean_bwd(CB->stream, CB->bf16, dx, d_out, B, T, D, first),
                                "token_mean_bwd");
}
static sv_status cuda_sigmoid_bce(sv_backend *be, float *losses, void *d_logits, const void *logits,
                                  const int32_t *labels, const float *soft_targets, int B, int K, float smoothing,
                                  float target_thresh, int sum_classes, float grad_scale) {
    return sv_cuda_launch_check(sv_cuk_sigmoid_bce(CB->stream, CB->bf16, losses, d_logits, logits, labels, soft_targets,
                                                   B, K, smoothing, target_thresh, sum_classes, grad_scale),
                                "sigmoid_bce");
}
static sv_status cuda_adamw(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n,
                            const sv_adamw_hparams *h, float weight_decay) {
    return sv_cuda_launch_check(sv_cuk_adamw(CB->stream, p, g, m, v, n, h, weight_decay), "adamw");
}
static sv_status cuda_ema(sv_backend *be, float *e, const float *x, size_t n, float w) {
    return sv_cuda_launch_check(sv_cuk_ema(CB->stream, e, x, n, w), "ema");
}
static sv_status cuda_optim_elem(sv_backend *be, int op, float *p, float *g, float *m, float *v, size_t n,
                                 const sv_optim_hparams *h, float weight_decay) {
    return sv_cuda_launch_check(sv_cuk_optim_elem(CB->stream, op, p, g, m, v, n, h, weight_decay), "optim_elem");
}
#undef CB

static const sv_backend_ops cuda_ops = {
    .name = "cuda",
    .destroy = cuda_destroy,
    .peak_flops = cuda_peak_flops,
    .native_stream = cuda_native_stream,
    .last_path = cuda_last_path,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .upload = cuda_upload,
    .upload_async = cuda_upload_async,
    .upload_fence = cuda_upload_fence,
    .download = cuda_download,
    .copy = cuda_copy,
    .zero = cuda_zero,
    .sync = cuda_sync,
    .f32_to_compute = cuda_f32_to_compute,
    .compute_to_f32 = cuda_compute_to_f32,
    .f32_to_bf16 = cuda_f32_to_bf16,
    .bf16_to_f32 = cuda_bf16_to_f32,
    .add_f32 = cuda_add_f32,
    .sumsq_f32 = cuda_sumsq_f32,
    .sumsq_f32_dev = cuda_sumsq_f32_dev,
    .linear_fwd = sv_cuda_linear_fwd,
    .linear_bwd = sv_cuda_linear_bwd,
    .layernorm_fwd = cuda_layernorm_fwd,
    .layernorm_bwd = cuda_layernorm_bwd,
    .attention_fwd = sv_cuda_attention_fwd,
    .attention_bwd = sv_cuda_attention_bwd,
    .gelu_fwd = cuda_gelu_fwd,
    .gelu_bwd = cuda_gelu_bwd,
    .residual_add = cuda_residual_add,
    .softmax_xent = cuda_softmax_xent,
    .im2col = cuda_im2col,
    .embed_fwd = cuda_embed_fwd,
    .embed_bwd = cuda_embed_bwd,
    .cls_select = cuda_cls_select,
    .cls_select_bwd = cuda_cls_select_bwd,
    .drop = cuda_drop,
    .scale_cols = cuda_scale_cols,
    .scale_cols_bwd = cuda_scale_cols_bwd,
    .token_mean = cuda_token_mean,
    .token_mean_bwd = cuda_token_mean_bwd,
    .sigmoid_bce = cuda_sigmoid_bce,
    .adamw = cuda_adamw,
    .ema = cuda_ema,
    .optim_elem = cuda_optim_elem,
};

static sv_status cuda_init(sv_cuda_backend *cb, const sv_backend_config *cfg) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return SV_FAIL(SV_ERR_UNSUPPORTED, "no usable CUDA device (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    }
    const int device = sv_gpu_for_local_rank(cfg->device_index, n);
    if (device < 0)
        /* one rank's environment, not a flag all ranks share: SV_ERR_UNSUPPORTED (exit 1) makes
         * the others abort rather than wait for it in the NCCL bootstrap */
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "no CUDA device for local rank %d: this process sees %d devices (start at most %d ranks per "
                       "node, or bind one GPU to each rank)",
                       cfg->device_index, n, n);
    if (cfg->compute_dtype != SV_F32 && cfg->compute_dtype != SV_BF16)
        return SV_FAIL(SV_ERR_INVALID, "CUDA backend: unknown compute dtype %d", (int)cfg->compute_dtype);
    cb->device = device;
    cb->bf16 = cfg->compute_dtype == SV_BF16;
    SV_CUDA_TRY(cudaSetDevice(cb->device));
    struct cudaDeviceProp prop;
    SV_CUDA_TRY(cudaGetDeviceProperties(&prop, cb->device));
    snprintf(cb->base.device_name, sizeof cb->base.device_name, "%.*s", (int)sizeof cb->base.device_name - 1,
             prop.name);
    cb->peak = sv_cuda_peak_flops_for(prop.name, cb->bf16);
    SV_CUDA_TRY(cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking));
    SV_CUDA_TRY(cudaStreamCreateWithFlags(&cb->copy_stream, cudaStreamNonBlocking));
    SV_CUDA_TRY(cudaEventCreateWithFlags(&cb->ev_compute, cudaEventDisableTiming));
    SV_CUDA_TRY(cudaEventCreateWithFlags(&cb->ev_copied, cudaEventDisableTiming));

    SV_CUBLAS_TRY(cublasLtCreate(&cb->lt));
    cb->lt_ws_bytes = SV_CUDA_LT_WORKSPACE;
    SV_CUDA_TRY(cudaMalloc(&cb->lt_ws, cb->lt_ws_bytes));
    if (cb->bf16) SV_CUDA_TRY(cudaMalloc((void **)&cb->stage, SV_CUDA_STAGE_BYTES)); /* gemm.c: fp32 GEMM results */
    SV_TRY(sv_cuda_gemm_init(cb));
    SV_CUDA_TRY(cudaMalloc((void **)&cb->sumsq_dev, (SV_CUDA_SUMSQ_BLOCKS + 1) * sizeof(double)));
    SV_CUDA_TRY(cudaMallocHost((void **)&cb->sumsq_host, sizeof(double)));
    SV_TRY(sv_cuda_attn_init(cb));
    SV_INFO("cuda backend: %s (device %d, sm_%d%d, %.1f GiB), compute %s, attention %s, peak %.0f TFLOP/s", prop.name,
            cb->device, prop.major, prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
            cb->bf16 ? "bf16" : "fp32", cb->dnn ? "cuDNN fused (fallback kernel where refused)" : "fallback kernel",
            cb->peak / 1e12);
    return SV_OK;
}

sv_status sv_cuda_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    *out = NULL;
    sv_cuda_backend *cb = calloc(1, sizeof *cb);
    if (!cb) return SV_FAIL(SV_ERR_OOM, "CUDA backend: out of host memory");
    cb->base.ops = &cuda_ops;
    cb->base.cfg = *cfg;
    sv_status st = cuda_init(cb, cfg);
    if (st != SV_OK) {
        sv_err_frame(__FILE__, __LINE__);
        cuda_destroy(&cb->base);
        return st;
    }
    *out = &cb->base;
    return SV_OK;
}
