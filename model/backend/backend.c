/* Wrappers over the backend vtable: cheap argument checks, defaults for optional entries,
 * then dispatch. Also the size queries (sv_be_sizes_query). */
#include <stdio.h>
#include <stdlib.h>

#include "model/backend/backend_impl.h"

const char *sv_dtype_name(sv_dtype d) { return d == SV_BF16 ? "bf16" : "fp32"; }

sv_status sv_be_sizes_query(const sv_backend_config *cfg, int B, int T, int D, int H, sv_be_sizes *out) {
    *out = (sv_be_sizes){0};
    if (B < 0 || T < 0 || D < 0 || H < 0 || (H > 0 && D % H))
        return SV_FAIL(SV_ERR_INVALID, "attention sizes: invalid shape B=%d T=%d D=%d H=%d", B, T, D, H);
    switch (cfg->device) {
    case SV_DEVICE_CPU: return sv_cpu_sizes(cfg, B, T, D, H, out);
    case SV_DEVICE_CUDA: return sv_cuda_sizes(cfg, B, T, D, H, out);
    }
    return SV_FAIL(SV_ERR_INVALID, "unknown device kind %d", (int)cfg->device);
}

/* Entries an implementation must fill (the others are optional: see backend_impl.h). */
static const char *missing_entry(const sv_backend_ops *o) {
#define NEED(e) \
    if (!o->e) return #e
    NEED(destroy);
    NEED(alloc);
    NEED(free);
    NEED(upload);
    NEED(download);
    NEED(copy);
    NEED(zero);
    NEED(f32_to_compute);
    NEED(compute_to_f32);
    NEED(f32_to_bf16);
    NEED(bf16_to_f32);
    NEED(add_f32);
    NEED(sumsq_f32);
    NEED(linear_fwd);
    NEED(linear_bwd);
    NEED(layernorm_fwd);
    NEED(layernorm_bwd);
    NEED(attention_fwd);
    NEED(attention_bwd);
    NEED(gelu_fwd);
    NEED(gelu_bwd);
    NEED(residual_add);
    NEED(softmax_xent);
    NEED(im2col);
    NEED(embed_fwd);
    NEED(embed_bwd);
    NEED(cls_select);
    NEED(cls_select_bwd);
    NEED(drop);
    NEED(scale_cols);
    NEED(scale_cols_bwd);
    NEED(token_mean);
    NEED(token_mean_bwd);
    NEED(sigmoid_bce);
    NEED(adamw);
    NEED(ema);
    NEED(optim_elem);
#undef NEED
    if (!o->host_alloc != !o->host_free) return "host_alloc/host_free (both or neither)";
    return NULL;
}

sv_status sv_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    *out = NULL;
    sv_be_sizes sz;
    SV_TRY(sv_be_sizes_query(cfg, 0, 0, 0, 0, &sz));
    sv_status st;
    switch (cfg->device) {
    case SV_DEVICE_CPU: st = sv_cpu_backend_create(cfg, out); break;
    case SV_DEVICE_CUDA: st = sv_cuda_backend_create(cfg, out); break;
    default: return SV_FAIL(SV_ERR_INVALID, "unknown device kind %d", (int)cfg->device);
    }
    if (st != SV_OK) return st;
    const char *miss = missing_entry((*out)->ops);
    if (miss) {
        sv_status e = SV_FAIL(SV_ERR_INVALID, "backend '%s' lacks the mandatory entry %s", (*out)->ops->name, miss);
        sv_backend_destroy(*out);
        *out = NULL;
        return e;
    }
    (*out)->compute_elem = sz.compute_elem;
    return SV_OK;
}

int sv_backend_available(sv_device_kind kind) { return kind == SV_DEVICE_CPU ? 1 : sv_cuda_backend_available(); }

void sv_backend_destroy(sv_backend *be) {
    if (!be) return;
    free(be->live);
    be->live = NULL;
    be->ops->destroy(be);
}

/* A mandatory entry (sv_backend_create refused a vtable lacking one). */
#define CALL(entry, ...) (be->ops->entry(be, __VA_ARGS__))

const char *sv_be_name(const sv_backend *be) { return be->ops->name; }
const char *sv_be_device_name(const sv_backend *be) { return be->device_name; }
sv_dtype sv_be_compute_dtype(const sv_backend *be) { return be->cfg.compute_dtype; }
const sv_backend_config *sv_be_config(const sv_backend *be) { return &be->cfg; }
size_t sv_be_compute_elem_size(const sv_backend *be) { return be->compute_elem; }
double sv_be_peak_flops(const sv_backend *be) { return be->ops->peak_flops ? be->ops->peak_flops(be) : 0.0; }
void *sv_be_native_stream(const sv_backend *be) { return be->ops->native_stream ? be->ops->native_stream(be) : NULL; }
const char *sv_be_last_path(const sv_backend *be, sv_be_path_kind kind) {
    if (!be->ops->last_path || (unsigned)kind >= (unsigned)SV_BE_PATH_KINDS) return "";
    const char *s = be->ops->last_path(be, kind);
    return s ? s : "";
}

/* Device memory accounting: every live sv_be_alloc block with its size (a handful per run: the
 * arena and a few small transient buffers), so sv_be_mem_stats reports what was really
 * allocated, whatever code asked for it. */
static sv_status track_alloc(sv_backend *be, void *p, size_t bytes) {
    if (be->n_live == be->cap_live) {
        int cap = be->cap_live ? 2 * be->cap_live : 16;
        sv_be_live *t = realloc(be->live, (size_t)cap * sizeof *t);
        if (!t) return SV_FAIL(SV_ERR_OOM, "backend allocation table (%d entries)", cap);
        be->live = t, be->cap_live = cap;
    }
    be->live[be->n_live++] = (sv_be_live){p, bytes};
    be->mem_live += bytes;
    if (be->mem_live > be->mem_peak) be->mem_peak = be->mem_live;
    return SV_OK;
}
static void track_free(sv_backend *be, void *p) {
    for (int i = be->n_live - 1; i >= 0; i--)
        if (be->live[i].p == p) {
            be->mem_live -= be->live[i].bytes;
            be->live[i] = be->live[--be->n_live];
            return;
        }
}

sv_status sv_be_alloc(sv_backend *be, size_t bytes, void **out) {
    *out = NULL;
    SV_TRY(CALL(alloc, bytes, out));
    sv_status st = track_alloc(be, *out, bytes);
    if (st != SV_OK) {
        be->ops->free(be, *out);
        *out = NULL;
    }
    return st;
}
void sv_be_free(sv_backend *be, void *p) {
    if (!p) return;
    track_free(be, p);
    be->ops->free(be, p);
}
void sv_be_mem_stats(const sv_backend *be, size_t *live, size_t *peak) {
    if (live) *live = be->mem_live;
    if (peak) *peak = be->mem_peak;
}
sv_status sv_be_host_alloc(sv_backend *be, size_t bytes, void **out) {
    if (!be->ops->host_alloc) { /* ordinary memory from the device allocator: not device memory */
        *out = NULL;
        return CALL(alloc, bytes, out);
    }
    return be->ops->host_alloc(be, bytes, out);
}
void sv_be_host_free(sv_backend *be, void *p) {
    if (!p) return;
    if (!be->ops->host_alloc)
        be->ops->free(be, p);
    else
        be->ops->host_free(be, p);
}
sv_status sv_be_upload(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? CALL(upload, dst, src, bytes) : SV_OK;
}
sv_status sv_be_upload_async(sv_backend *be, void *dst, const void *src, size_t bytes) {
    if (!bytes) return SV_OK;
    return be->ops->upload_async ? be->ops->upload_async(be, dst, src, bytes) : CALL(upload, dst, src, bytes);
}
sv_status sv_be_upload_fence(sv_backend *be) { return be->ops->upload_fence ? be->ops->upload_fence(be) : SV_OK; }
sv_status sv_be_download(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? CALL(download, dst, src, bytes) : SV_OK;
}
sv_status sv_be_copy(sv_backend *be, void *dst, const void *src, size_t bytes) {
    return (bytes && dst != src) ? CALL(copy, dst, src, bytes) : SV_OK;
}
sv_status sv_be_zero(sv_backend *be, void *p, size_t bytes) { return bytes ? CALL(zero, p, bytes) : SV_OK; }
sv_status sv_be_sync(sv_backend *be) { return be->ops->sync ? be->ops->sync(be) : SV_OK; }

sv_status sv_be_f32_to_compute(sv_backend *be, void *dst, const float *src, size_t n) {
    return n ? CALL(f32_to_compute, dst, src, n) : SV_OK;
}
sv_status sv_be_compute_to_f32(sv_backend *be, float *dst, const void *src, size_t n) {
    return n ? CALL(compute_to_f32, dst, src, n) : SV_OK;
}
sv_status sv_be_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n) {
    return n ? CALL(f32_to_bf16, dst, src, n) : SV_OK;
}
sv_status sv_be_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n) {
    return n ? CALL(bf16_to_f32, dst, src, n) : SV_OK;
}
sv_status sv_be_add_f32(sv_backend *be, float *y, const float *x, size_t n) {
    return n ? CALL(add_f32, y, x, n) : SV_OK;
}
sv_status sv_be_sumsq_f32(sv_backend *be, const float *p, size_t n, double *out) {
    if (!n) {
        *out = 0.0;
        return SV_OK;
    }
    return CALL(sumsq_f32, p, n, out);
}
sv_status sv_be_sumsq_f32_dev(sv_backend *be, const float *p, size_t n, double *out_dev) {
    if (be->ops->sumsq_f32_dev) return CALL(sumsq_f32_dev, p, n, out_dev);
    double s;
    SV_TRY(sv_be_sumsq_f32(be, p, n, &s));
    return CALL(upload, out_dev, &s, sizeof s);
}

#define SV_CHECK_DIMS(cond, what) \
    do { \
        if (!(cond)) return SV_FAIL(SV_ERR_INVALID, "%s: invalid shape (%s)", what, #cond); \
    } while (0)

sv_status sv_be_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                           int M, int N, int K) {
    SV_CHECK_DIMS(M > 0 && N > 0 && K > 0, "linear_fwd");
    return CALL(linear_fwd, out, pre_gelu, in, W, bias, M, N, K);
}
sv_status sv_be_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in, const void *W,
                           const void *pre_gelu, int M, int N, int K) {
    SV_CHECK_DIMS(M > 0 && N > 0 && K > 0, "linear_bwd");
    return CALL(linear_bwd, d_in, dW, db, d_out, in, W, pre_gelu, M, N, K);
}
sv_status sv_be_layernorm_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                              const void *b, int M, int C) {
    SV_CHECK_DIMS(M > 0 && C > 0, "layernorm_fwd");
    return CALL(layernorm_fwd, out, mean, rstd, x, w, b, M, C);
}
sv_status sv_be_layernorm_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                              const void *w, const float *mean, const float *rstd, int M, int C) {
    SV_CHECK_DIMS(M > 0 && C > 0, "layernorm_bwd");
    return CALL(layernorm_bwd, d_x, dw, db, d_out, x, w, mean, rstd, M, C);
}
/* The configuration was validated when the handle was created, so the query cannot fail on a
 * valid shape; an invalid one sizes nothing (the op then refuses the shape). */
size_t sv_be_attention_saved_bytes(const sv_backend *be, int B, int T, int D, int H) {
    sv_be_sizes sz;
    return sv_be_sizes_query(&be->cfg, B, T, D, H, &sz) == SV_OK ? sz.attention_saved : 0;
}
size_t sv_be_attention_scratch_bytes(const sv_backend *be, int B, int T, int D, int H) {
    sv_be_sizes sz;
    return sv_be_sizes_query(&be->cfg, B, T, D, H, &sz) == SV_OK ? sz.attention_scratch : 0;
}
sv_status sv_be_attention_fwd_drop(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                                   int D, int H, const sv_drop *drop) {
    SV_CHECK_DIMS(B > 0 && T > 0 && H > 0 && D % H == 0, "attention_fwd");
    if (drop && !(drop->keep > 0.0f && drop->keep <= 1.0f))
        return SV_FAIL(SV_ERR_INVALID, "attention dropout: keep probability %g not in (0, 1]", (double)drop->keep);
    return CALL(attention_fwd, out, saved, scratch, qkv, B, T, D, H, drop);
}
sv_status sv_be_attention_bwd_drop(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                                   const void *out, const void *saved, int B, int T, int D, int H,
                                   const sv_drop *drop) {
    SV_CHECK_DIMS(B > 0 && T > 0 && H > 0 && D % H == 0, "attention_bwd");
    if (drop && !(drop->keep > 0.0f && drop->keep <= 1.0f))
        return SV_FAIL(SV_ERR_INVALID, "attention dropout: keep probability %g not in (0, 1]", (double)drop->keep);
    return CALL(attention_bwd, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, drop);
}
sv_status sv_be_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                              int D, int H) {
    return sv_be_attention_fwd_drop(be, out, saved, scratch, qkv, B, T, D, H, NULL);
}
sv_status sv_be_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                              const void *out, const void *saved, int B, int T, int D, int H) {
    return sv_be_attention_bwd_drop(be, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, NULL);
}
sv_status sv_be_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n) {
    return n ? CALL(gelu_fwd, out, x, n) : SV_OK;
}
sv_status sv_be_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n) {
    return n ? CALL(gelu_bwd, d_x, d_out, x, n) : SV_OK;
}
sv_status sv_be_residual_add(sv_backend *be, void *out, const void *a, const void *b, size_t n) {
    return n ? CALL(residual_add, out, a, b, n) : SV_OK;
}
sv_status sv_be_softmax_xent(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                             const float *soft_targets, int B, int K, float smoothing, float grad_scale) {
    SV_CHECK_DIMS(B > 0 && K > 0, "softmax_xent");
    if ((labels == NULL) == (soft_targets == NULL))
        return SV_FAIL(SV_ERR_INVALID, "softmax_xent: exactly one of labels/soft_targets required");
    return CALL(softmax_xent, losses, d_logits, logits, labels, soft_targets, B, K, smoothing, grad_scale);
}
sv_status sv_be_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Himg, int Wimg, int p) {
    SV_CHECK_DIMS(B > 0 && C > 0 && p > 0 && Himg % p == 0 && Wimg % p == 0, "im2col");
    return CALL(im2col, patches, img, B, C, Himg, Wimg, p);
}
sv_status sv_be_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                          const void *pos, int no_embed_class, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && R >= 0 && (R == 0) == (reg == NULL) && T > (cls ? 1 : 0) + R && D > 0 &&
                      (no_embed_class == 0 || no_embed_class == 1),
                  "embed_fwd");
    return CALL(embed_fwd, x, patch_out, cls, reg, R, pos, no_embed_class, B, T, D);
}
sv_status sv_be_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                          int no_embed_class, const void *dx, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && R >= 0 && (R == 0) == (d_reg == NULL) && T > (d_cls ? 1 : 0) + R && D > 0 &&
                      (no_embed_class == 0 || no_embed_class == 1),
                  "embed_bwd");
    return CALL(embed_bwd, d_patch_out, d_cls, d_reg, R, d_pos, no_embed_class, dx, B, T, D);
}
sv_status sv_be_cls_select(sv_backend *be, void *out, const void *x, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && T > 0 && D > 0, "cls_select");
    return CALL(cls_select, out, x, B, T, D);
}
sv_status sv_be_cls_select_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D) {
    SV_CHECK_DIMS(B > 0 && T > 0 && D > 0, "cls_select_bwd");
    return CALL(cls_select_bwd, dx, d_out, B, T, D);
}
sv_status sv_be_drop(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group) {
    SV_CHECK_DIMS(B > 0 && group > 0 && n % group == 0, "drop");
    if (!(d->keep > 0.0f && d->keep <= 1.0f)) return SV_FAIL(SV_ERR_INVALID, "drop: keep probability %g", d->keep);
    return n && d->keep < 1.0f ? CALL(drop, x, d, B, n, group) : SV_OK;
}
sv_status sv_be_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D) {
    SV_CHECK_DIMS(M > 0 && D > 0, "scale_cols");
    return CALL(scale_cols, out, x, gamma, M, D);
}
sv_status sv_be_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                               const void *gamma, int M, int D) {
    SV_CHECK_DIMS(M > 0 && D > 0, "scale_cols_bwd");
    return CALL(scale_cols_bwd, d_x, d_gamma, d_out, x, gamma, M, D);
}
sv_status sv_be_token_mean(sv_backend *be, void *out, const void *x, int B, int T, int D, int first) {
    SV_CHECK_DIMS(B > 0 && D > 0 && first >= 0 && T > first, "token_mean");
    return CALL(token_mean, out, x, B, T, D, first);
}
sv_status sv_be_token_mean_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first) {
    SV_CHECK_DIMS(B > 0 && D > 0 && first >= 0 && T > first, "token_mean_bwd");
    return CALL(token_mean_bwd, dx, d_out, B, T, D, first);
}
sv_status sv_be_sigmoid_bce(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                            const float *soft_targets, int B, int K, float smoothing, float target_thresh,
                            int sum_classes, float grad_scale) {
    SV_CHECK_DIMS(B > 0 && K > 0, "sigmoid_bce");
    if ((labels == NULL) == (soft_targets == NULL))
        return SV_FAIL(SV_ERR_INVALID, "sigmoid_bce: exactly one of labels/soft_targets required");
    return CALL(sigmoid_bce, losses, d_logits, logits, labels, soft_targets, B, K, smoothing, target_thresh,
                sum_classes, grad_scale);
}
sv_status sv_be_adamw(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n, const sv_adamw_hparams *h,
                      float weight_decay) {
    return n ? CALL(adamw, p, g, m, v, n, h, weight_decay) : SV_OK;
}
sv_status sv_be_ema(sv_backend *be, float *e, const float *x, size_t n, float w) {
    return n ? CALL(ema, e, x, n, w) : SV_OK;
}
sv_status sv_be_optim_elem(sv_backend *be, int op, float *p, float *g, float *m, float *v, size_t n,
                           const sv_optim_hparams *h, float weight_decay) {
    if (op < SV_OPTIM_OP_SGD || op > SV_OPTIM_OP_LAMB_APPLY) return SV_FAIL(SV_ERR_INVALID, "optim_elem: op %d", op);
    return n ? CALL(optim_elem, op, p, g, m, v, n, h, weight_decay) : SV_OK;
}
