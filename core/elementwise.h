/* shardvit core: per-element formulas shared by the CPU (C11) and CUDA backends.
 *
 * Everything here is `static inline` and, under nvcc, `__host__ __device__`, so the CPU and
 * GPU kernels evaluate the very same expressions and cannot drift apart. No state, no I/O. */
#ifndef SV_CORE_ELEMENTWISE_H
#define SV_CORE_ELEMENTWISE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SV_HD __host__ __device__ __forceinline__
#else
#define SV_HD static inline
#endif

/* LayerNorm epsilon used by timm's ViT (partial(nn.LayerNorm, eps=1e-6)). */
#define SV_LN_EPS 1e-6f

/* ---- bf16 <-> fp32, round-to-nearest-even; NaN stays a (quiet) NaN ---- */
SV_HD uint16_t sv_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

SV_HD float sv_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round an fp32 value to the nearest bf16-representable fp32 value (CPU bf16 emulation). */
SV_HD float sv_round_bf16(float f) { return sv_bf16_to_f32(sv_f32_to_bf16(f)); }

/* ---- GELU, exact erf form (nn.GELU() default, approximate='none') ---- */
SV_HD float sv_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* d/dx gelu(x) = Phi(x) + x * phi(x) */
SV_HD float sv_gelu_grad(float x) {
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    return cdf + x * pdf;
}

/* ---- AdamW (decoupled weight decay, PyTorch torch.optim.AdamW semantics) ----
 * p <- p - lr*wd*p ; m <- b1 m + (1-b1) g ; v <- b2 v + (1-b2) g^2 ;
 * p <- p - lr * (m / bc1) / (sqrt(v / bc2) + eps), bc_i = 1 - b_i^t.
 * `g` is already clipped/scaled by the caller (grad_scale folded in). */
typedef struct sv_adamw_hparams {
    float lr, beta1, beta2, eps, weight_decay;
    float bc1, bc2;     /* bias corrections 1-b1^t, 1-b2^t for the current step t */
    float grad_scale;   /* multiply gradients by this (clipping coefficient) */
} sv_adamw_hparams;

SV_HD void sv_adamw_elem(float *p, float *m, float *v, float g, const sv_adamw_hparams *h,
                         float wd) {
    g *= h->grad_scale;
    float pv = *p;
    pv -= h->lr * wd * pv;
    float mv = h->beta1 * *m + (1.0f - h->beta1) * g;
    float vv = h->beta2 * *v + (1.0f - h->beta2) * g * g;
    float mhat = mv / h->bc1;
    float vhat = vv / h->bc2;
    pv -= h->lr * mhat / (sqrtf(vhat) + h->eps);
    *p = pv;
    *m = mv;
    *v = vv;
}

/* ---- label-smoothed cross-entropy target for class k ----
 * target distribution: (1 - s) one-hot + s / K uniform (timm LabelSmoothingCrossEntropy). */
SV_HD float sv_smooth_target(int k, int label, float smoothing, int num_classes) {
    return (k == label ? 1.0f - smoothing : 0.0f) + smoothing / (float)num_classes;
}

#endif
