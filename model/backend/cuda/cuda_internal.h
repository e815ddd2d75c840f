/* CUDA backend internals, shared by the C host files (backend_cuda.c, gemm.c, attention_cudnn.c)
 * and the kernel files (*.cu). Not part of any public interface.
 *
 * Split of work: host-only code (cuBLASLt, cuDNN graph, memory, streams) is plain C11 against the
 * C APIs of those libraries; the .cu files hold the kernels and export extern "C" launchers that
 * enqueue on a given stream and return the launch's cudaError_t. The C side turns every error
 * into SV_ERR_BACKEND with the library's message (SV_CUDA_TRY and friends below).
 *
 * Compute buffers hold `float` (compute dtype fp32) or bf16 bit patterns (uint16_t storage,
 * bit-identical to __nv_bfloat16) and every kernel converts with sv_f32_to_bf16/sv_bf16_to_f32
 * from core/elementwise.h, so rounding matches the CPU backend's emulation exactly. */
#ifndef SV_MODEL_BACKEND_CUDA_INTERNAL_H
#define SV_MODEL_BACKEND_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel launchers (kernels_*.cu, attention_fallback.cu) ----
 * `bf16` selects the compute-buffer storage: 1 = bf16 bits (uint16), 0 = float. Each returns
 * cudaGetLastError() after the launch; all work is enqueued on `s`. */

/* Deterministic sum of squares: SV_CUDA_SUMSQ_BLOCKS fixed partials, then one block sums them
 * in a fixed tree order into *out_dev. partials: SV_CUDA_SUMSQ_BLOCKS doubles. */
#define SV_CUDA_SUMSQ_BLOCKS 1024
cudaError_t sv_cuk_sumsq(cudaStream_t s, const float *p, size_t n, double *partials, double *out_dev);

cudaError_t sv_cuk_f32_to_compute(cudaStream_t s, int bf16, void *dst, const float *src, size_t n);
cudaError_t sv_cuk_compute_to_f32(cudaStream_t s, int bf16, float *dst, const void *src, size_t n);
cudaError_t sv_cuk_f32_to_bf16(cudaStream_t s, uint16_t *dst, const float *src, size_t n);
cudaError_t sv_cuk_bf16_to_f32(cudaStream_t s, float *dst, const uint16_t *src, size_t n);
cudaError_t sv_cuk_add_f32(cudaStream_t s, float *y, const float *x, size_t n);

cudaError_t sv_cuk_gelu_fwd(cudaStream_t s, int bf16, void *out, const void *x, size_t n);
cudaError_t sv_cuk_gelu_bwd(cudaStream_t s, int bf16, void *d_x, const void *d_out, const void *x, size_t n);
cudaError_t sv_cuk_residual_add(cudaStream_t s, int bf16, void *out, const void *a, const void *b, size_t n);
/* The linear forward's epilogue from the GEMM's fp32 result acc (M,N): with pre (GELU), per
 * element sv_bias_gelu_elem -> pre and out; without, out = acc + bias (bias may be NULL). out,
 * pre, bias: compute dtype. acc may alias pre (GELU) or out (no GELU) when bf16 == 0. */
cudaError_t sv_cuk_linear_epilogue(cudaStream_t s, int bf16, void *out, void *pre, const float *acc, const void *bias,
                                   int M, int N);
/* db (N) += column sums of d_out (M,N), deterministic: `partials` holds
 * sv_cuk_colsum_partials(M,N) floats. */
size_t sv_cuk_colsum_partials(int M, int N);
cudaError_t sv_cuk_colsum_acc(cudaStream_t s, int bf16, float *db, const void *d_out, int M, int N, float *partials);

cudaError_t sv_cuk_layernorm_fwd(cudaStream_t s, int bf16, void *out, float *mean, float *rstd, const void *x,
                                 const void *w, const void *b, int M, int C);
/* partials: 2 * sv_cuk_colsum_partials(M,C) floats */
cudaError_t sv_cuk_layernorm_bwd(cudaStream_t s, int bf16, void *d_x, float *dw, float *db, const void *d_out,
                                 const void *x, const void *w, const float *mean, const float *rstd, int M, int C,
                                 float *partials);

cudaError_t sv_cuk_softmax_xent(cudaStream_t s, int bf16, float *losses, void *d_logits, const void *logits,
                                const int32_t *labels, const float *soft_targets, int B, int K, float smoothing,
                                float grad_scale);
cudaError_t sv_cuk_im2col(cudaStream_t s, int bf16, void *patches, const float *img, int B, int C, int Himg, int Wimg,
                          int p);
cudaError_t sv_cuk_embed_fwd(cudaStream_t s, int bf16, void *x, const void *patch_out, const void *cls, const void *reg,
                             int R, const void *pos, int no_embed_class, int B, int T, int D);
cudaError_t sv_cuk_embed_bwd(cudaStream_t s, int bf16, void *d_patch_out, float *d_cls, float *d_reg, int R,
                             float *d_pos, int no_embed_class, const void *dx, int B, int T, int D);
cudaError_t sv_cuk_cls_select(cudaStream_t s, int bf16, void *out, const void *x, int B, int T, int D);
cudaError_t sv_cuk_cls_select_bwd(cudaStream_t s, int bf16, void *dx, const void *d_out, int B, int T, int D);
/* kernels_recipe.cu: the training-recipe ops of backend.h */
cudaError_t sv_cuk_drop(cudaStream_t s, int bf16, void *x, uint64_t key, uint64_t sample0, float keep, int B, size_t n,
                        size_t group);
cudaError_t sv_cuk_scale_cols(cudaStream_t s, int bf16, void *out, const void *x, const void *gamma, int M, int D);
cudaError_t sv_cuk_scale_cols_bwd(cudaStream_t s, int bf16, void *d_x, float *d_gamma, const void *d_out, const void *x,
                                  const void *gamma, int M, int D);
cudaError_t sv_cuk_token_mean(cudaStream_t s, int bf16, void *out, const void *x, int B, int T, int D, int first);
cudaError_t sv_cuk_token_mean_bwd(cudaStream_t s, int bf16, void *dx, const void *d_out, int B, int T, int D,
                                  int first);
cudaError_t sv_cuk_sigmoid_bce(cudaStream_t s, int bf16, float *losses, void *d_logits, const void *logits,
                               const int32_t *labels, const float *soft_targets, int B, int K, float smoothing,
                               float target_thresh, int sum_classes, float grad_scale);

/* AdamW hyper-parameters are copied by value into the launch. */
struct sv_adamw_hparams;
cudaError_t sv_cuk_adamw(cudaStream_t s, float *p, const float *g, float *m, float *v, size_t n,
                         const struct sv_adamw_hparams *h, float weight_decay);
cudaError_t sv_cuk_ema(cudaStream_t s, float *e, const float *x, size_t n, float w);
struct sv_optim_hparams;
cudaError_t sv_cuk_optim_elem(cudaStream_t s, int op, float *p, float *g, float *m, float *v, size_t n,
                              const struct sv_optim_hparams *h, float weight_decay);

/* Plain attention (attention_fallback.cu). qkv (B,T,3D), out (B,T,D) compute dtype;
 * lse (B,H,T) f32 = natural-log log-sum-exp of the scaled scores per query row (the same
 * statistics cuDNN saves, so without dropout either backward can consume either forward's
 * output). drop_*: attention-probability dropout with the mask of backend.h
 * sv_be_attention_fwd_drop (key, sample0, keep of its sv_drop); drop_keep >= 1 = no dropout,
 * the plain kernels. A forward with dropout pairs only with a backward given the same mask. */
cudaError_t sv_cuk_attn_fwd(cudaStream_t s, int bf16, void *out, float *lse, const void *qkv, int B, int T, int D,
                            int H, uint64_t drop_key, uint64_t drop_sample0, float drop_keep);
/* d_qkv (B,T,3D) overwritten; rowdot: (B,H,T) f32 scratch. */
cudaError_t sv_cuk_attn_bwd(cudaStream_t s, int bf16, void *d_qkv, const void *d_out, const void *qkv, const void *out,
                            const float *lse, float *rowdot, int B, int T, int D, int H, uint64_t drop_key,
                            uint64_t drop_sample0, float drop_keep);

#ifdef __cplusplus
}
#endif

#endif
