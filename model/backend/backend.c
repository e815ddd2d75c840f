/* Wrappers over the backend vtable: cheap argument checks, then dispatch. */
#include "model/backend/backend_impl.h"

const char *sv_dtype_name(sv_dtype d) { return d == SV_BF16 ? "bf16" : "fp32"; }

sv_status sv_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    *out = NULL;
    switch (cfg->device) {
    case SV_DEVICE_CPU: return sv_cpu_backend_create(cfg, out);
    case SV_DEVICE_CUDA: return sv_cuda_backend_create(cfg, out);
    }
    return SV_FAIL(SV_ERR_INVALID, "unknown device kind %d", (int)cfg->device);
}

sv_status sv_backend_create_sizing(const sv_backend_config *cfg, sv_backend **out) {
    *out = NULL;
    if (cfg->device == SV_DEVICE_CUDA) return sv_cuda_backend_create_sizing(cfg, out);
    return sv_backend_create(cfg, out); /* the CPU backend is cheap to create */
}

int sv_backend_available(sv_device_kind kind) {
    return kind == SV_DEVICE_CPU ? 1 : sv_cuda_backend_available();
}

void sv_backend_destroy(sv_backend *be) {
    if (be) be->ops->destroy(be);
}

const char *sv_be_name(const sv_backend *be) { return be->ops->name; }
const char *sv_be_device_name(const sv_backend *be) { return be->device_name; }
sv_dtype sv_be_compute_dtype(const sv_backend *be) { return be->cfg.compute_dtype; }
size_t sv_be_compute_elem_size(const sv_backend *be) {
    return be->cfg.device == SV_DEVICE_CPU ? 4 : sv_dtype_size(be->cfg.compute_dtype);
}
double sv_be_peak_flops(const sv_backend *be) { return be->ops->peak_flops(be); }
void *sv_be_native_stream(const sv_backend *be) { return be->ops->native_stream(be); }

sv_status sv_be_alloc(sv_backend *be, size_t bytes, void **out) { return be->ops->alloc(be, bytes, out); }
void sv_be_free(sv_backend *be, void *p) {
    if (p) be->ops->free(be, p);
}
sv_status sv_be_host_alloc(sv_backend *be, size_t bytes, void **out) {
    return be->ops->host_alloc(be, bytes, out);
}
void sv_be_host_free(sv_backend *be, void *p) {
    if (p) be->ops->host_free(be, p);
}
sv_status sv_be_upload(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? be->ops->upload(be, dst, src, bytes) : SV_OK;
}
sv_status sv_be_upload_async(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? be->ops->upload_async(be, dst, src, bytes) : SV_OK;
}
sv_status sv_be_upload_fence(sv_backend *be) { return be->ops->upload_fence(be); }
sv_status sv_be_download(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? be->ops->download(be, dst, src, bytes) : SV_OK;
}
sv_status sv_be_copy(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return (bytes && dst != src) ? be->ops->copy(be, dst, src, bytes) : SV_OK;
}
sv_status sv_be_zero(sv_backend *be, void *p, size_t bytes) {
    return bytes ? be->ops->zero(be, p, bytes) : SV_OK;
}
sv_status sv_be_sync(sv_backend *be) { return be->ops->sync(be); }

sv_status sv_be_f32_to_compute(sv_backend *be, void *dst, const float *src, size_t n) {
    return n ? be->ops->f32_to_compute(be, dst, src, n) : SV_OK;
}
sv_status sv_be_compute_to_f32(sv_backend *be, float *dst, const void *src, size_t n) {
    return n ? be->ops->compute_to_f32(be, dst, src, n) : SV_OK;
}
sv_status sv_be_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n) {
    return n ? be->ops->f32_to_bf16(be, dst, src, n) : SV_OK;
}
sv_status sv_be_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n) {
    return n ? be->ops->bf16_to_f32(be, dst, src, n) : SV_OK;
}
sv_status sv_be_round_bf16_f32(sv_backend *be, float *p, size_t n) {
    return n ? be->ops->round_bf16_f32(be, p, n) : SV_OK;
}
sv_status sv_be_fill_f32(sv_backend *be, float *p, size_t n, float value) {
    return n ? be->ops->fill_f32(be, p, n, value) : SV_OK;
}
sv_status sv_be_scale_f32(sv_backend *be, float *p, size_t n, float alpha) {
    return n ? be->ops->scale_f32(be, p, n, alpha) : SV_OK;
}
sv_status sv_be_add_f32(sv_backend *be, float *y, const float *x, size_t n) {
    return n ? be->ops->add_f32(be, y, x, n) : SV_OK;
}
sv_status sv_be_sumsq_f32(sv_backend *be, const float *p, size_t n, double *out) {
    if (!n) {
        *out = 0.0;
        return SV_OK;
    }
    return be->ops->sumsq_f32(be, p, n, out);
}

#define SV_CHECK_DIMS(cond, what)                                                             \
    do {                                                                                      \
        if (!(cond)) return SV_FAIL(SV_ERR_INVALID, "%s: invalid shape (%s)", what, #cond);  \
    } while (0)

sv_status sv_be_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W,
                           const void *bias, int M, int N, int K) {
    SV_CHECK_DIMS(M > 0 && N > 0 && K > 0, "linear_fwd");
    return be->ops->linear_fwd(be, out, pre_gelu, in, W, bias, M, N, K);
}
sv_status sv_be_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out,
                           const void *in, const void *W, const void *pre_gelu, int M, int N, int K) {
    SV_CHECK_DIMS(M > 0 && N > 0 && K > 0, "linear_bwd");
    return be->ops->linear_bwd(be, d_in, dW, db, d_out, in, W, pre_gelu, M, N, K);
}
sv_status sv_be_layernorm_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x,
                              const void *w, const void *b, int M, int C) {
    SV_CHECK_DIMS(M > 0 && C > 0, "layernorm_fwd");
    return be->ops->layernorm_fwd(be, out, mean, rstd, x, w, b, M, C);
}
sv_status sv_be_layernorm_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out,
                              const void *x, const void *w, const float *mean, const float *rstd,
                              int M, int C) {
    SV_CHECK_DIMS(M > 0 && C > 0, "layernorm_bwd");
    return be->ops->layernorm_bwd(be, d_x, dw, db, d_out, x, w, mean, rstd, M, C);
}
size_t sv_be_attention_saved_bytes(const sv_backend *be, int B, int T, int D, int H) {
    return be->ops->attention_saved_bytes(be, B, T, D, H);
}
size_t sv_be_attention_scratch_bytes(const sv_backend *be, int B, int T, int D, int H) {
    return be->ops->attention_scratch_bytes(be, B, T, D, H);
}
sv_status sv_be_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch,
                              const void *qkv, int B, int T, int D, int H) {
    SV_CHECK_DIMS(B > 0 && T > 0 && H > 0 && D % H == 0, "attention_fwd");
    return be->ops->attention_fwd(be, out, saved, scratch, qkv, B, T, D, H);
}
sv_status sv_be_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out,
                              const void *qkv, const void *out, const void *saved, int B, int T,
                              int D, int H) {
    SV_CHECK_DIMS(B > 0 && T > 0 && H > 0 && D % H == 0, "attention_bwd");
    return be->ops->attention_bwd(be, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H);
}
sv_status sv_be_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n) {
    return n ? be->ops->gelu_fwd(be, out, x, n) : SV_OK;
}
sv_status sv_be_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n) {
    return n ? be->ops->gelu_bwd(be, d_x, d_out, x, n) : SV_OK;
}
sv_status sv_be_residual_add(sv_backend *be, void *out, const void *a, const void *b, size_t n) {
    return n ? be->ops->residual_add(be, out, a, b, n) : SV_OK;
}
sv_status sv_be_softmax_xent(sv_backend *be, float *losses, void *d_logits, const void *logits,
                             const int32_t *labels, const float *soft_targets, int B, int K,
                             float smoothing, float grad_scale) {
    SV_CHECK_DIMS(B > 0 && K > 0, "softmax_xent");
    if ((labels == NULL) == (soft_targets == NULL))
        return SV_FAIL(SV_ERR_INVALID, "softmax_xent: exactly one of labels/soft_targets required");
    return be->ops->softmax_xent(be, losses, d_logits, logits, labels, soft_targets, B, K, smoothing,
                                 grad_scale);
}
sv_status sv_be_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Himg,
                       int Wimg, int p) {
    SV_CHECK_DIMS(B > 0 && C > 0 && p > 0 && Himg % p == 0 && Wimg % p == 0, "im2col");
    return be->ops->im2col(be, patches, img, B, C, Himg, Wimg, p);
}
sv_status sv_be_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls,
                          const void *pos, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && T > 1 && D > 0, "embed_fwd");
    return be->ops->embed_fwd(be, x, patch_out, cls, pos, B, T, D);
}
sv_status sv_be_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_pos,
                          const void *dx, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && T > 1 && D > 0, "embed_bwd");
    return be->ops->embed_bwd(be, d_patch_out, d_cls, d_pos, dx, B, T, D);
}
sv_status sv_be_cls_select(sv_backend *be, void *out, const void *x, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && T > 0 && D > 0, "cls_select");
    return be->ops->cls_select(be, out, x, B, T, D);
}
sv_status sv_be_cls_select_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && T > 0 && D > 0, "cls_select_bwd");
    return be->ops->cls_select_bwd(be, dx, d_out, B, T, D);
}
sv_status sv_be_adamw(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n,
                      const sv_adamw_hparams *h, float weight_decay) {
    return n ? be->ops->adamw(be, p, g, m, v, n, h, weight_decay) : SV_OK;
}
