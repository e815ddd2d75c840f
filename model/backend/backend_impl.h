/* For backend implementers only (cpu/, cuda/): the vtable behind sv_backend.
 * Model code includes backend.h, never this file.
 *
 * Each implementation defines one `const sv_backend_ops` with designated initialisers and a
 * create function that allocates a struct whose first member is `sv_backend` (the base), so
 * the implementation casts sv_backend* to its own type. Entries marked "optional" may be left
 * NULL and then get the default stated next to them; every other entry is mandatory
 * (sv_backend_create refuses an implementation that lacks one). The wrappers in backend.c
 * check arguments that are cheap to check, then dispatch. Shapes, dtypes and semantics are
 * exactly those documented in backend.h.
 *
 * Sizes are not in the vtable: each implementation answers sv_be_sizes_query for its device
 * kind from the configuration alone (sv_cpu_sizes, sv_cuda_sizes below), so planning needs no
 * instance and no device. */
#ifndef SV_MODEL_BACKEND_IMPL_H
#define SV_MODEL_BACKEND_IMPL_H

#include "model/backend/backend.h"

typedef struct sv_backend_ops {
    const char *name;
    void (*destroy)(sv_backend *be);
    double (*peak_flops)(const sv_backend *be);   /* optional: NULL = unknown (0) */
    void *(*native_stream)(const sv_backend *be); /* optional: NULL = no native stream */
    /* optional: NULL = nothing recorded ("") */
    const char *(*last_path)(const sv_backend *be, sv_be_path_kind kind);

    sv_status (*alloc)(sv_backend *be, size_t bytes, void **out);
    void (*free)(sv_backend *be, void *p);
    /* optional (both or neither): NULL = alloc/free (host memory is device memory) */
    sv_status (*host_alloc)(sv_backend *be, size_t bytes, void **out);
    void (*host_free)(sv_backend *be, void *p);
    sv_status (*upload)(sv_backend *be, void *dst, const void *src, size_t bytes);
    /* optional: NULL = upload (nothing to overlap) */
    sv_status (*upload_async)(sv_backend *be, void *dst, const void *src, size_t bytes);
    sv_status (*upload_fence)(sv_backend *be); /* optional: NULL = nothing in flight (SV_OK) */
    sv_status (*download)(sv_backend *be, void *dst, const void *src, size_t bytes);
    sv_status (*copy)(sv_backend *be, void *dst, const void *src, size_t bytes);
    sv_status (*zero)(sv_backend *be, void *p, size_t bytes);
    sv_status (*sync)(sv_backend *be); /* optional: NULL = ops complete on return (SV_OK) */

    sv_status (*f32_to_compute)(sv_backend *be, void *dst, const float *src, size_t n);
    sv_status (*compute_to_f32)(sv_backend *be, float *dst, const void *src, size_t n);
    sv_status (*f32_to_bf16)(sv_backend *be, uint16_t *dst, const float *src, size_t n);
    sv_status (*bf16_to_f32)(sv_backend *be, float *dst, const uint16_t *src, size_t n);
    sv_status (*add_f32)(sv_backend *be, float *y, const float *x, size_t n);
    sv_status (*sumsq_f32)(sv_backend *be, const float *p, size_t n, double *out);
    /* optional: NULL = sumsq_f32 on the host, then upload of the double (synchronises) */
    sv_status (*sumsq_f32_dev)(sv_backend *be, const float *p, size_t n, double *out_dev);

    sv_status (*linear_fwd)(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                            int M, int N, int K);
    sv_status (*linear_bwd)(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in,
                            const void *W, const void *pre_gelu, int M, int N, int K);
    sv_status (*layernorm_fwd)(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                               const void *b, int M, int C);
    sv_status (*layernorm_bwd)(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                               const void *w, const float *mean, const float *rstd, int M, int C);
    /* drop: attention-probability dropout (sv_be_attention_fwd_drop), NULL = off */
    sv_status (*attention_fwd)(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                               int D, int H, const sv_drop *drop);
    sv_status (*attention_bwd)(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                               const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop);
    sv_status (*gelu_fwd)(sv_backend *be, void *out, const void *x, size_t n);
    sv_status (*gelu_bwd)(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n);
    sv_status (*residual_add)(sv_backend *be, void *out, const void *a, const void *b, size_t n);
    sv_status (*softmax_xent)(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                              const float *soft_targets, int B, int K, float smoothing, float grad_scale);
    sv_status (*im2col)(sv_backend *be, void *patches, const float *img, int B, int C, int Himg, int Wimg, int p);
    sv_status (*embed_fwd)(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                           const void *pos, int no_embed_class, int B, int T, int D);
    sv_status (*embed_bwd)(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                           int no_embed_class, const void *dx, int B, int T, int D);
    sv_status (*cls_select)(sv_backend *be, void *out, const void *x, int B, int T, int D);
    sv_status (*cls_select_bwd)(sv_backend *be, void *dx, const void *d_out, int B, int T, int D);
    sv_status (*drop)(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group);
    sv_status (*scale_cols)(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D);
    sv_status (*scale_cols_bwd)(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                                const void *gamma, int M, int D);
    sv_status (*token_mean)(sv_backend *be, void *out, const void *x, int B, int T, int D, int first);
    sv_status (*token_mean_bwd)(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first);
    sv_status (*sigmoid_bce)(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                             const float *soft_targets, int B, int K, float smoothing, float target_thresh,
                             int sum_classes, float grad_scale);
    sv_status (*adamw)(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n,
                       const sv_adamw_hparams *h, float weight_decay);
    sv_status (*ema)(sv_backend *be, float *e, const float *x, size_t n, float w);
    sv_status (*optim_elem)(sv_backend *be, int op, float *p, float *g, float *m, float *v, size_t n,
                            const sv_optim_hparams *h, float weight_decay);
} sv_backend_ops;

/* Base of every backend instance (first member of the implementation's struct). */
typedef struct sv_be_live {
    void *p;
    size_t bytes;
} sv_be_live;

struct sv_backend {
    const sv_backend_ops *ops;
    sv_backend_config cfg; /* as created; the CPU backend stores its resolved engine/kernel names */
    char device_name[128];
    size_t compute_elem; /* sv_be_sizes.compute_elem of cfg, filled by sv_backend_create */
    /* device memory accounting of the generic layer (backend.c; implementations leave it 0) */
    sv_be_live *live;
    int n_live, cap_live;
    size_t mem_live, mem_peak;
};

/* Implementation entry points, defined by cpu/ and, for CUDA, by cuda_loaded.c (which forwards to
 * the CUDA module built from cuda/: core/cuda_module.h) or cuda_absent.c in builds without CUDA;
 * sv_cuda_sizes in cuda_sizes.c and sv_cuda_peak_flops_for in cuda_peak.c, in every build. The
 * sizes functions implement sv_be_sizes_query for their kind. */
sv_status sv_cpu_backend_create(const sv_backend_config *cfg, sv_backend **out);
sv_status sv_cpu_sizes(const sv_backend_config *cfg, int B, int T, int D, int H, sv_be_sizes *out);
sv_status sv_cuda_backend_create(const sv_backend_config *cfg, sv_backend **out);
sv_status sv_cuda_sizes(const sv_backend_config *cfg, int B, int T, int D, int H, sv_be_sizes *out);
/* The dense peak (FLOP/s) the CUDA backend states MFU against, by device name (cudaDeviceProp.name)
 * and compute precision: bf16 the tensor-core bf16 rate (fp32 accumulate); otherwise the CUDA-core
 * fp32 rate, since the fp32 GEMMs run CUBLAS_COMPUTE_32F without TF32. Datasheet figures; a model
 * name matches as a whole word ("A100" is not "RTX A1000"); 0 for devices not in the table. */
double sv_cuda_peak_flops_for(const char *name, int bf16);
int sv_cuda_backend_available(void);

#endif
