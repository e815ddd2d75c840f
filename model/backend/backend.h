/* shardvit compute backend: the one interface model code computes through.
 *
 * An opaque handle (sv_backend) behind a vtable (see backend_impl.h, for implementers only).
 * Model and FSDP code call the sv_be_* wrappers below, never the vtable. Implementations:
 * cpu/ (always built) and cuda/ (built when SHARDVIT_CUDA is ON); which ones exist is decided
 * by the files CMake links (cuda/ or cuda_absent.c), not by #ifdefs.
 *
 * Memory: every pointer passed to an op is a *device* pointer obtained from sv_be_alloc (on the
 * CPU backend that is ordinary host memory). Ops are enqueued in order on the backend's compute
 * stream; sv_be_sync waits for all of them. Host-visible results (sv_be_sumsq_f32 / _dev) synchronise.
 *
 * Dtypes: "compute" buffers (activations, gathered parameters, activation gradients) hold the
 * backend's compute dtype (sv_be_compute_dtype): fp32 or bf16, *stored* in
 * sv_be_compute_elem_size bytes per element. With compute dtype bf16 every op rounds the values
 * it writes to compute buffers to the nearest bf16 (round-to-nearest-even), so CPU numerics
 * track a GPU computing in bf16; the CPU backend stores them as bf16 (2 bytes) when its GEMM
 * engines read bf16 operands, else as fp32 holding bf16 values (4 bytes): the same bits. "f32" buffers are always float: master weights, optimizer
 * state, parameter gradients, statistics, losses. Parameter gradients are always fp32 and are
 * always ACCUMULATED (+=) into; the caller zeroes them.
 *
 * Shapes are row-major; comments give them as (dim0, dim1, ...). Linear weights use the
 * PyTorch/timm layout W (out_features, in_features). Tokens: T = 1 + num_patches. */
#ifndef SV_MODEL_BACKEND_H
#define SV_MODEL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/elementwise.h"
#include "core/status.h"

typedef enum sv_dtype { SV_F32 = 0, SV_BF16 = 1 } sv_dtype;
static inline size_t sv_dtype_size(sv_dtype d) { return d == SV_BF16 ? 2 : 4; }
const char *sv_dtype_name(sv_dtype d);

typedef enum sv_device_kind { SV_DEVICE_CPU = 0, SV_DEVICE_CUDA = 1 } sv_device_kind;

/* CPU backend choices (docs/backend_cpu.md). All-zero = the automatic choice for this CPU.
 * Strings must stay valid while the config is used (string literals, getenv results). The
 * backend never reads the environment: the documented SHARDVIT_CPU_* overrides are applied to
 * this struct by the application (app/backend_env.c), and error messages name a bad value by
 * its override's name. */
typedef struct sv_cpu_config {
    const char *gemm; /* SHARDVIT_CPU_GEMM: GEMM engine name (amx-bf16|avx512-bf16|avx512-f32|
                        * avx2-f32), "openblas" (sgemm split across the workers), "blas"
                        * (OpenBLAS threading each GEMM), NULL/""/"auto" = best available */
    const char *isa;  /* SHARDVIT_CPU_ISA: element-wise kernels generic|avx2|avx512, NULL/"auto" */
    int attn_sgemm;   /* SHARDVIT_CPU_ATTN_GEMM=0: 1 = attention GEMMs on OpenBLAS sgemm even
                        * when an engine runs the linear layers */
    int unfused_epi;  /* SHARDVIT_CPU_FUSED_EPI=0: 1 = linear epilogues as a separate pass */
    int amx_deny;     /* SHARDVIT_CPU_AMX_DENY=1: 1 = act as if the kernel refused AMX (tests) */
    int f32_storage;  /* SHARDVIT_CPU_BF16_STORAGE=0: 1 = bf16 mode keeps fp32 storage of the
                        * compute buffers (the bits are the same; A/B runs and tests); 0 (and
                        * -1, SHARDVIT_CPU_BF16_STORAGE=1) = bf16 storage wherever the GEMM
                        * engines allow it (docs/backend_cpu.md "Storage") */
    int op_threads;   /* OpenMP workers for the backend's own loops (0 = threads): a benchmark
                        * knob ("single-threaded ops + threaded BLAS"), not for training */
} sv_cpu_config;

typedef struct sv_backend_config {
    sv_device_kind device;
    sv_dtype compute_dtype; /* dtype of compute buffers (see above) */
    int threads;            /* CPU: worker threads for ops (0 = 1); CUDA: ignored */
    int device_index;       /* CUDA: the rank's index among the node's ranks; the GPU is
                             * sv_gpu_for_local_rank of it (core/gpus.h); CPU: ignored */
    int attn_fallback;      /* CUDA: 1 = plain CUDA attention kernel instead of cuDNN */
    sv_cpu_config cpu;      /* CPU only; ignored by CUDA */
} sv_backend_config;

/* Sizes that are pure functions of a configuration (device kind, compute dtype, and on the CPU
 * the engine and thread count it selects) and of the shapes: what the memory planner and the
 * arena carving need, without a backend instance. */
typedef struct sv_be_sizes {
    size_t compute_elem;      /* bytes per element of compute buffers as *stored* */
    size_t attention_saved;   /* sv_be_attention_fwd's `saved` for (B,T,D,H) */
    size_t attention_scratch; /* sv_be_attention_fwd/bwd's `scratch` for (B,T,D,H) */
} sv_be_sizes;
/* Fails (SV_ERR_UNSUPPORTED / SV_ERR_INVALID, with the message creation would give) when the
 * device kind is not built in or the configuration is invalid. Needs no device. Attention
 * sizes are 0 when B, T, D or H is 0. */
sv_status sv_be_sizes_query(const sv_backend_config *cfg, int B, int T, int D, int H, sv_be_sizes *out);

typedef struct sv_backend sv_backend; /* opaque */

/* Create a backend. Fails with SV_ERR_UNSUPPORTED (and a message saying why) when the device
 * kind is not built in or no device is usable. */
sv_status sv_backend_create(const sv_backend_config *cfg, sv_backend **out);
void sv_backend_destroy(sv_backend *be);
/* 1 when a backend of this kind is built in and a device is usable right now. */
int sv_backend_available(sv_device_kind kind);

const char *sv_be_name(const sv_backend *be);        /* "cpu", "cuda" */
const char *sv_be_device_name(const sv_backend *be); /* e.g. "AMD EPYC (2 threads)", "NVIDIA H200" */
sv_dtype sv_be_compute_dtype(const sv_backend *be);
/* The configuration the backend was created with (its sizes are sv_be_sizes_query of it: the
 * memory planner and the arena carving ask the configuration, never an instance). */
const sv_backend_config *sv_be_config(const sv_backend *be);
/* Bytes per element of compute buffers as *stored* (sv_be_sizes.compute_elem; CPU fp32 mode: 4;
 * CPU bf16 mode: 2 with bf16 storage, 4 with fp32 storage, docs/backend_cpu.md "Storage"). */
size_t sv_be_compute_elem_size(const sv_backend *be);
/* Dense bf16 peak FLOP/s of the device if known (for MFU), else 0. */
double sv_be_peak_flops(const sv_backend *be);
/* Native stream handle (cudaStream_t for CUDA, NULL for CPU): lets the NCCL comm order itself
 * against compute. */
void *sv_be_native_stream(const sv_backend *be);
/* What the backend's most recent call of one kind of work ran, as text for reports
 * (tests/gpu/gpu_ops_vs_cpu writes it per op): the CUDA backend names the cuBLASLt algorithm
 * (or the cuBLAS fallback) of each GEMM kind and the attention path (cuDNN engine, or the
 * fallback kernels and why). "" when the backend records nothing (the CPU backend) or that
 * kind has not run yet. The text stays valid until the next call of that kind of work. */
typedef enum sv_be_path_kind {
    SV_BE_PATH_GEMM_FWD = 0, /* sv_be_linear_fwd's GEMM */
    SV_BE_PATH_GEMM_DGRAD,   /* sv_be_linear_bwd's d_in GEMM */
    SV_BE_PATH_GEMM_WGRAD,   /* sv_be_linear_bwd's dW GEMM */
    SV_BE_PATH_ATTN_FWD,     /* sv_be_attention_fwd(_drop) */
    SV_BE_PATH_ATTN_BWD,     /* sv_be_attention_bwd(_drop) */
    SV_BE_PATH_KINDS
} sv_be_path_kind;
const char *sv_be_last_path(const sv_backend *be, sv_be_path_kind kind);

/* ---- memory ---- */
sv_status sv_be_alloc(sv_backend *be, size_t bytes, void **out); /* 256-byte aligned */
void sv_be_free(sv_backend *be, void *p);
/* Device bytes allocated through sv_be_alloc and not yet freed (live), and the most that were
 * ever live at once (peak), since the backend was created: the measured counterpart of the
 * memory plan (host memory from sv_be_host_alloc is not counted). Either pointer may be NULL. */
void sv_be_mem_stats(const sv_backend *be, size_t *live, size_t *peak);
/* Pinned host memory where the device has it (CUDA), else ordinary aligned host memory. */
sv_status sv_be_host_alloc(sv_backend *be, size_t bytes, void **out);
void sv_be_host_free(sv_backend *be, void *p);
sv_status sv_be_upload(sv_backend *be, void *dst, const void *host_src, size_t bytes);
/* Batch upload that does not block the host: the copy runs on the backend's copy stream after
 * the compute work enqueued so far, and every op enqueued afterwards runs after the copy. The
 * host buffer (pinned: sv_be_host_alloc) must stay untouched until sv_be_upload_fence returns.
 * CPU: a plain copy. */
sv_status sv_be_upload_async(sv_backend *be, void *dst, const void *host_src, size_t bytes);
/* Wait (host side) until every sv_be_upload_async has read its source. */
sv_status sv_be_upload_fence(sv_backend *be);
sv_status sv_be_download(sv_backend *be, void *host_dst, const void *src, size_t bytes);
sv_status sv_be_copy(sv_backend *be, void *dst, const void *src, size_t bytes);
sv_status sv_be_zero(sv_backend *be, void *p, size_t bytes);
sv_status sv_be_sync(sv_backend *be);

/* ---- casts and simple vector ops (n elements) ---- */
/* compute <- f32 (rounds to bf16 when the compute dtype is bf16) */
sv_status sv_be_f32_to_compute(sv_backend *be, void *dst, const float *src, size_t n);
/* f32 <- compute */
sv_status sv_be_compute_to_f32(sv_backend *be, float *dst, const void *src, size_t n);
/* raw bf16 (uint16 storage) <-> f32, round-to-nearest-even; used for bf16 reductions/export */
sv_status sv_be_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n);
sv_status sv_be_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n);
/* y += x */
sv_status sv_be_add_f32(sv_backend *be, float *y, const float *x, size_t n);
/* Sum of squares of an f32 buffer, summed in a fixed order independent of thread count
 * (deterministic); returned in double on the host (synchronises). */
sv_status sv_be_sumsq_f32(sv_backend *be, const float *p, size_t n, double *out);
/* The same sum (the same bits) written to *out_dev, one double of device memory (sv_be_alloc),
 * in stream order: enqueued like any op, no host synchronisation. The FSDP optimizer step
 * gathers such per-unit partials and reads them with one download per step. */
sv_status sv_be_sumsq_f32_dev(sv_backend *be, const float *p, size_t n, double *out_dev);

/* ---- layers ---- */

/* out (M,N) = in (M,K) @ W(N,K)^T + bias(N), then GELU if `pre_gelu` != NULL, in which case the
 * pre-activation is stored to pre_gelu (M,N) for the backward pass. bias may be NULL.
 * in/W/bias/out/pre_gelu: compute dtype. */
sv_status sv_be_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                           int M, int N, int K);

/* Backward of sv_be_linear_fwd. If pre_gelu != NULL, d_out is first overwritten in place with
 * d_out * gelu'(pre_gelu) (so d_out is clobbered). Then:
 *   d_in (M,K)  = d_out @ W          (overwritten; skipped when d_in == NULL)
 *   dW   (N,K) += d_out^T @ in       (fp32)
 *   db   (N)   += sum_rows d_out     (fp32; skipped when db == NULL) */
sv_status sv_be_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in, const void *W,
                           const void *pre_gelu, int M, int N, int K);

/* LayerNorm over the last dim C with eps SV_LN_EPS: out = (x-mean)*rstd*w + b.
 * x/out (M,C), w/b (C) compute dtype; mean/rstd (M) f32 saved for backward. */
sv_status sv_be_layernorm_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                              const void *b, int M, int C);
/* d_x (M,C) += dx contribution (ACCUMULATES into d_x: the residual stream), dw/db (C) += f32. */
sv_status sv_be_layernorm_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                              const void *w, const float *mean, const float *rstd, int M, int C);

/* Multi-head self-attention core (non-causal), timm layout:
 *   qkv (B,T,3*D) with D = H*dh, split as [q | k | v], each (H, dh) per token;
 *   out (B,T,D) = concat_h softmax(q_h k_h^T / sqrt(dh)) v_h.
 * `saved` (sv_be_attention_saved_bytes) keeps what the backward needs (CPU: probabilities,
 * cuDNN: softmax statistics); `scratch` (sv_be_attention_scratch_bytes) is transient. */
/* Both: sv_be_sizes_query on the backend's configuration. */
size_t sv_be_attention_saved_bytes(const sv_backend *be, int B, int T, int D, int H);
size_t sv_be_attention_scratch_bytes(const sv_backend *be, int B, int T, int D, int H);
sv_status sv_be_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                              int D, int H);
/* d_qkv (B,T,3D) overwritten. */
sv_status sv_be_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                              const void *out, const void *saved, int B, int T, int D, int H);

/* Standalone exact GELU (the fused form in linear_fwd is the hot path). */
sv_status sv_be_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n);
/* d_x = d_out * gelu'(x) (overwrites d_x; d_x may alias d_out). */
sv_status sv_be_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n);

/* out = a + b (n elements, compute dtype; out may alias a or b). */
sv_status sv_be_residual_add(sv_backend *be, void *out, const void *a, const void *b, size_t n);

/* Softmax cross-entropy, fused forward+backward.
 * logits (B,K) compute dtype. Targets: either labels (B) int32 device array with label
 * smoothing `smoothing`, or soft_targets (B,K) f32 (mixup/cutmix; then smoothing is already
 * folded in by the caller and `labels` is NULL).
 * losses (B) f32: per-sample loss. d_logits (B,K) compute dtype = (softmax - target)*grad_scale
 * (may be NULL when only the loss is wanted, e.g. evaluation). */
sv_status sv_be_softmax_xent(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                             const float *soft_targets, int B, int K, float smoothing, float grad_scale);

/* Patch extraction for the stride-p, kernel-p patch-embed convolution:
 * img (B,C,Himg,Wimg) f32 -> patches (B*P, C*p*p) compute dtype with column order (c, ky, kx),
 * matching patch_embed.proj.weight (D,C,p,p) flattened to (D, C*p*p); P = (Himg/p)*(Wimg/p),
 * patches in row-major grid order. */
sv_status sv_be_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Himg, int Wimg, int p);

/* Token assembly with P = (cls ? 1 : 0) + R prefix tokens (timm's order: class token, then the
 * R register tokens, then the patches): x[b,0,:] = cls + pos[0,:] (with a class token);
 * x[b,c+r,:] = reg[r,:] + pos[c+r,:] (c = 1 with a class token, else 0; r < R);
 * x[b,P+i,:] = patch_out[b,i,:] + pos[P+i,:]. x (B,T,D), patch_out (B,T-P,D), cls (D),
 * reg (R,D), pos (T,D): compute dtype. cls NULL: no class token; reg NULL with R = 0: none.
 * no_embed_class (timm no_embed_class=True): pos is (T-P,D), the patch tokens' rows only
 * (x[b,P+i,:] = patch_out[b,i,:] + pos[i,:]), and the prefix tokens get no position. */
sv_status sv_be_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                          const void *pos, int no_embed_class, int B, int T, int D);
/* d_patch_out (B,T-P,D) overwritten with dx's patch rows; d_cls (D) += sum_b dx[b,0];
 * d_reg (R,D) += sum_b dx[b,c:c+R]; d_pos (T,D) += sum_b dx[b] (no_embed_class: (T-P,D) += the
 * patch rows); each sum over b in order. d_cls / d_reg NULL: as cls / reg above. */
sv_status sv_be_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                          int no_embed_class, const void *dx, int B, int T, int D);

/* out (B,D) = x[:,0,:] from x (B,T,D) (class-token pooling). */
sv_status sv_be_cls_select(sv_backend *be, void *out, const void *x, int B, int T, int D);
/* dx (B,T,D) += scatter of d_out (B,D) into token 0 (ACCUMULATES). */
sv_status sv_be_cls_select_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D);

/* ---- training-recipe ops (docs/training.md): dropout, stochastic depth, LayerScale, average
 * pooling, binary cross-entropy ---- */

/* One dropout / stochastic-depth mask: multiplier sv_drop_mult(key, sample0 + b, unit, keep)
 * (core/elementwise.h) for row b of a batch. */
typedef struct sv_drop {
    uint64_t key;     /* mask stream (the caller hashes seed, epoch, block and site into it) */
    uint64_t sample0; /* global sample index of row 0 */
    float keep;       /* keep probability, (0, 1] */
} sv_drop;
/* x (B, n) compute dtype, in place: x[b,i] *= mult(b, unit = i / group). group == n: one draw
 * per sample (stochastic depth, timm drop_path); group == 1: per element (dropout). The
 * backward of the op is the op itself (same mask). */
sv_status sv_be_drop(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group);
/* sv_be_attention_fwd / _bwd with attention-probability dropout (timm attn_drop): the forward
 * computes P = softmax(q k^T scale) (saved as before), then O = (P * M) v with
 * M[b,h,i,j] = sv_drop_mult(drop->key, drop->sample0 + b, (h T + i) T + j, drop->keep); the
 * backward is exact for that: dV = (P M)^T dO, dP = (dO v^T) * M, then the softmax backward with P.
 * drop == NULL: the plain op, bit for bit. Both backends implement it; the CUDA backend runs a
 * call with a non-NULL drop, forward and backward, on its plain attention kernels (not cuDNN;
 * model/backend/cuda/attention_cudnn.c). */
sv_status sv_be_attention_fwd_drop(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                                   int D, int H, const sv_drop *drop);
sv_status sv_be_attention_bwd_drop(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                                   const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop);
/* LayerScale: out (M,D) = x (M,D) * gamma (D), compute dtype; out may alias x. */
sv_status sv_be_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D);
/* Its backward: d_gamma (D) += sum_m d_out[m,:] * x[m,:] (f32, fixed summation order), then
 * d_x (M,D) = d_out * gamma (compute dtype; d_x may alias d_out). */
sv_status sv_be_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                               const void *gamma, int M, int D);
/* Average pooling (timm global_pool "avg"): out (B,D) = mean over t in [first, T) of x (B,T,D). */
sv_status sv_be_token_mean(sv_backend *be, void *out, const void *x, int B, int T, int D, int first);
/* dx (B,T,D) += d_out[b,:] / (T - first) for t >= first (ACCUMULATES). */
sv_status sv_be_token_mean_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first);
/* Sigmoid binary cross-entropy (timm BinaryCrossEntropy), the contract of sv_be_softmax_xent:
 * targets t[b,k] are labels smoothed as sv_smooth_target, or soft (B,K); with target_thresh >= 0
 * each target becomes (t > target_thresh) (timm's target.gt(thresh); 0 binarises every positive
 * target, as DeiT III's BCE does after mixing); target_thresh < 0: targets as they are. losses[b] = mean_k bce(z, t) (sum_k when
 * sum_classes); d_logits = (sigmoid(z) - t) / K (or / 1) * grad_scale. */
sv_status sv_be_sigmoid_bce(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                            const float *soft_targets, int B, int K, float smoothing, float target_thresh,
                            int sum_classes, float grad_scale);

/* AdamW on a contiguous f32 range (one tensor's slice of a shard): see sv_adamw_elem.
 * `weight_decay` is the decay for this range (0 for biases, norms, pos_embed, cls_token, reg_token). */
sv_status sv_be_adamw(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n, const sv_adamw_hparams *h,
                      float weight_decay);
/* SGD / Lion / LAMB rule `op` (sv_optim_op, core/elementwise.h) on a contiguous f32 range, element
 * by element (sv_optim_op_elem). SGD and Lion read g and update p, m; LAMB_UPDATE updates m, v and
 * overwrites g with the update; LAMB_APPLY reads the update from g and updates p. v is unused
 * (may be NULL) except by LAMB_UPDATE. */
sv_status sv_be_optim_elem(sv_backend *be, int op, float *p, float *g, float *m, float *v, size_t n,
                           const sv_optim_hparams *h, float weight_decay);

/* Weight EMA on a contiguous f32 range: e[i] = sv_ema_elem(e[i], x[i], w), w = 1 - decay
 * (core/elementwise.h; fsdp/ema.h). e and x (n) device, distinct. */
sv_status sv_be_ema(sv_backend *be, float *e, const float *x, size_t n, float w);

#endif
