/* shardvit core: per-element formulas shared by the CPU (C11) and CUDA backends.
 *
 * Everything here is `static inline` and, under nvcc, `__host__ __device__`, so the CPU and
 * GPU kernels evaluate the very same expressions and cannot drift apart. No state, no I/O.
 *
 * Same expressions give the same bits only when both compilers round every operation on its
 * own: the CPU kernel files compile with fp-contract off, and the CUDA kernel file that
 * evaluates the fp32 formulas here (model/backend/cuda/kernels_elem.cu: GELU, its gradient,
 * the linear epilogue, AdamW, SGD, Lion, LAMB) compiles with -fmad=false, since nvcc fuses
 * a*b+c into one FMA by default. Other CUDA files use only the bit-exact helpers here
 * (conversions, the dropout hash, the smoothing target) or libm functions whose GPU results
 * differ from glibc's anyway (sv_bce_*: compared with a tolerance). */
#ifndef SV_CORE_ELEMENTWISE_H
#define SV_CORE_ELEMENTWISE_H

#include <math.h>
#include <stddef.h>
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

/* ---- exp and GELU without libm calls ----
 * The loops that apply these run over every MLP activation; libm's erff/expf are scalar
 * calls that the compiler cannot vectorise, so these are written as straight-line float
 * arithmetic (no FMA, no branches: selects only), which vectorises and gives the same bits
 * on every instruction set. */

/* The constants of sv_exp2_parts and sv_two_phi, named once: the scalar forms below and the
 * AVX-512 intrinsics forms of the CPU GELU kernels (model/backend/cpu/gelu_avx512.h) evaluate
 * the same operations with them. */
#define SV_EXP_LO (-86.0f) /* below: exp is 0 */
#define SV_EXP_LOG2E 1.44269504088896341f
#define SV_EXP_RND 12582912.0f     /* 1.5 * 2^23: (f + it) - it rounds f to an integer */
#define SV_EXP_LN2_HI 0.693359375f /* ln2 = HI - LO_NEG, HI with few bits (fn * HI exact) */
#define SV_EXP_LN2_LO_NEG (-2.12194440e-4f)
#define SV_EXP_P0 1.9875691500e-4f /* Cephes expf polynomial, highest degree first */
#define SV_EXP_P1 1.3981999507e-3f
#define SV_EXP_P2 8.3334519073e-3f
#define SV_EXP_P3 4.1665795894e-2f
#define SV_EXP_P4 1.6666665459e-1f
#define SV_EXP_P5 5.0000001201e-1f
#define SV_ERFC_AX_MAX 20.0f             /* |x| clamp of sv_two_phi */
#define SV_RSQRT2 0.70710678118654752f   /* 1/sqrt(2) */
#define SV_RSQRT2PI 0.39894228040143268f /* 1/sqrt(2 pi) */
#define SV_ERFC_C9 0.17087277f           /* Numerical Recipes erfcc, highest degree first */
#define SV_ERFC_C8 (-0.82215223f)
#define SV_ERFC_C7 1.48851587f
#define SV_ERFC_C6 (-1.13520398f)
#define SV_ERFC_C5 0.27886807f
#define SV_ERFC_C4 (-0.18628806f)
#define SV_ERFC_C3 0.09678418f
#define SV_ERFC_C2 0.37409196f
#define SV_ERFC_C1 1.00002368f
#define SV_ERFC_C0 (-1.26551223f)
#define SV_SPLIT12_MASK 0xfffff000u /* sv_split12: keep the top 12 significand bits */

/* exp(a + b) where a carries the large part exactly and b is a small correction (|b| < ~4):
 * the range reduction subtracts n*ln2 from a before b is added, so the rounding error of a
 * large a + b does not reach the result. Cephes expf polynomial on [-ln2/2, ln2/2] (about
 * 1 ulp); 0 for a + b below about -86 (no denormals); Inf above about 88.7; NaN stays NaN. */
SV_HD float sv_exp2_parts(float a, float b) {
    const float lo = SV_EXP_LO;
    float ac = a < lo ? lo : a;
    float fn = (ac + b) * SV_EXP_LOG2E;
    fn = (fn + SV_EXP_RND) - SV_EXP_RND; /* round to nearest integer (|fn| < 2^22) */
    float r = ac - fn * SV_EXP_LN2_HI;   /* ln2 high part: fn * it is exact */
    r = r - fn * SV_EXP_LN2_LO_NEG;      /* ln2 low part */
    r = r + b;
    float p = SV_EXP_P0;
    p = p * r + SV_EXP_P1;
    p = p * r + SV_EXP_P2;
    p = p * r + SV_EXP_P3;
    p = p * r + SV_EXP_P4;
    p = p * r + SV_EXP_P5;
    float e = (p * r) * r + r + 1.0f;
    /* NaN or overflow (a + b > ~88.7): exponent 255, so the result is Inf (NaN stays NaN: a
     * NaN fn fails the comparison) and no out-of-range conversion or signed shift happens.
     * (An explicit `fn == fn &&` here stopped GCC 12 from vectorising exp(x) with b = 0: it
     * folded the clamped path into a boolean select it cannot vectorise.) */
    int32_t k = fn < 128.0f ? (int32_t)fn : 128;
    uint32_t bits = (uint32_t)(k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return a + b < lo ? 0.0f : e * scale;
}

SV_HD float sv_exp_fast(float x) { return sv_exp2_parts(x, 0.0f); }

/* Split x into hi + lo where hi keeps the top 12 significand bits, so hi*hi is exact. */
SV_HD void sv_split12(float x, float *hi, float *lo) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= SV_SPLIT12_MASK;
    memcpy(hi, &u, 4);
    *lo = x - *hi;
}

/* 2*Phi(x) written through erfc so that neither tail cancels:
 *   2*Phi(x) = erfc(-x/sqrt2) = x >= 0 ? 2 - erfc(z) : erfc(z),  z = |x|/sqrt2.
 * erfc(z) = t * exp(-z^2 + P(t)), t = 1/(1 + z/2): the Chebyshev fit of Numerical Recipes
 * (erfcc, fractional error < 1.2e-7 for all z >= 0). -z^2 = -x^2/2 is formed exactly
 * (hi part) plus a small correction, so large z lose no accuracy in the exponent.
 * *gauss (optional) receives exp(-x^2/2) for the GELU derivative. */
SV_HD float sv_two_phi(float x, float *gauss) {
    float ax = x < 0.0f ? -x : x;
    /* erfc(20/sqrt2) ~ 1e-89: 0 in float; keeps inf (and NaN) out of the split */
    ax = ax < SV_ERFC_AX_MAX ? ax : SV_ERFC_AX_MAX;
    float z = ax * SV_RSQRT2;
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = SV_ERFC_C9;
    p = p * t + SV_ERFC_C8;
    p = p * t + SV_ERFC_C7;
    p = p * t + SV_ERFC_C6;
    p = p * t + SV_ERFC_C5;
    p = p * t + SV_ERFC_C4;
    p = p * t + SV_ERFC_C3;
    p = p * t + SV_ERFC_C2;
    p = p * t + SV_ERFC_C1;
    p = p * t + SV_ERFC_C0;
    float h, l;
    sv_split12(ax, &h, &l);
    float a = -0.5f * (h * h);              /* exact */
    float corr = -(h * l + 0.5f * (l * l)); /* rest of -x^2/2 */
    float erfc_z = t * sv_exp2_parts(a, p + corr);
    if (gauss) *gauss = sv_exp2_parts(a, corr);
    return x >= 0.0f ? 2.0f - erfc_z : erfc_z;
}

/* ---- GELU, exact erf form (nn.GELU() default, approximate='none') ----
 * gelu(x) = x * Phi(x). Within ~3e-7 relative of the exact value (double-precision
 * reference) for all finite x where the result is normal; tests/ops checks it. */
SV_HD float sv_gelu(float x) { return 0.5f * x * sv_two_phi(x, 0); }

/* d/dx gelu(x) = Phi(x) + x * phi(x) */
SV_HD float sv_gelu_grad(float x) {
    float g;
    float two_phi = sv_two_phi(x, &g);
    return 0.5f * two_phi + x * (SV_RSQRT2PI * g);
}

/* One element of a linear layer's bias + GELU epilogue (sv_be_linear_fwd with pre_gelu) from
 * the GEMM's fp32 result `acc`: z = acc + bias (has_bias), else z = acc (no "+ 0", which would
 * turn -0 into +0); *pre = z, and the return value is gelu(z) of the same unrounded z. The
 * caller rounds each of the two to the storage dtype on its own. The CUDA backend's epilogue
 * kernel evaluates this function; the CPU backend's bias_gelu kernels (cpu_kernels_impl.h,
 * gelu_avx512.h) compute the same bits in their own loops (tests/ops/test_linear_epilogue.c). */
SV_HD float sv_bias_gelu_elem(float acc, float bias, int has_bias, float *pre) {
    float z = has_bias ? acc + bias : acc;
    *pre = z;
    return sv_gelu(z);
}

/* Reference forms through libm's erff/expf (tests compare the fast forms against these). */
SV_HD float sv_gelu_erff(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
SV_HD float sv_gelu_grad_erff(float x) {
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
    float bc1, bc2;   /* bias corrections 1-b1^t, 1-b2^t for the current step t */
    float grad_scale; /* multiply gradients by this (clipping coefficient) */
} sv_adamw_hparams;

SV_HD void sv_adamw_elem(float *p, float *m, float *v, float g, const sv_adamw_hparams *h, float wd) {
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

/* ---- weight EMA (fsdp/ema.h): e <- lerp(e, x, w), w = 1 - decay, torch.lerp_'s two forms
 * (timm ModelEmaV3 calls lerp_): w < 0.5: e + w * (x - e); else x - (x - e) * (1 - w), so
 * w = 1 (decay 0, the first update) copies x exactly. Every operation is rounded on its own (no
 * fused multiply-add: the CPU kernels compile with fp-contract off, CUDA uses the _rn
 * intrinsics), so both backends give the same bits. */
SV_HD float sv_ema_elem(float e, float x, float w) {
#ifdef __CUDA_ARCH__
    return w < 0.5f ? __fadd_rn(e, __fmul_rn(w, __fsub_rn(x, e)))
                    : __fsub_rn(x, __fmul_rn(__fsub_rn(x, e), __fsub_rn(1.0f, w)));
#else
    return w < 0.5f ? e + w * (x - e) : x - (x - e) * (1.0f - w);
#endif
}

/* ---- SGD, Lion, LAMB (fsdp/optim.h drives them; one tensor piece per call) ----
 * `g` is scaled by grad_scale (the clipping coefficient) first, as in sv_adamw_elem; `wd` is the
 * piece's weight decay (0 for no-decay tensors) and lr the piece's learning rate (layer decay
 * folded in). The expressions follow the reference implementations operation for operation. */
typedef struct sv_optim_hparams {
    float lr, beta1, beta2, eps;
    float bc1, bc2_sqrt; /* LAMB: 1 - b1^t and sqrt(1 - b2^t) */
    float grad_scale;
    float momentum; /* SGD */
    int nesterov;   /* SGD */
    float trust;    /* LAMB apply: the tensor's trust ratio */
} sv_optim_hparams;

/* torch.optim.SGD (dampening 0): g += wd p; buf = momentum buf + g (buf starts at zero, so the
 * first step gives buf = g exactly as torch's clone); d = nesterov ? g + momentum buf : buf;
 * p -= lr d. */
SV_HD void sv_sgd_elem(float *p, float *m, float g, const sv_optim_hparams *h, float wd) {
    g *= h->grad_scale;
    float pv = *p;
    g = g + wd * pv;
    float buf = h->momentum * *m + g;
    float d = h->nesterov ? g + h->momentum * buf : buf;
    *p = pv - h->lr * d;
    *m = buf;
}

/* Lion (timm.optim.Lion, Chen et al. 2023): p *= 1 - lr wd; p -= lr sign(b1 m + (1-b1) g);
 * m = b2 m + (1-b2) g. sign(0) = 0. */
SV_HD void sv_lion_elem(float *p, float *m, float g, const sv_optim_hparams *h, float wd) {
    g *= h->grad_scale;
    float pv = *p * (1.0f - h->lr * wd);
    float c = h->beta1 * *m + (1.0f - h->beta1) * g;
    float sgn = c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : 0.0f);
    *p = pv - h->lr * sgn;
    *m = h->beta2 * *m + (1.0f - h->beta2) * g;
}

/* LAMB, first pass (timm.optim.Lamb, bias correction on, grad averaging on): the moments, then
 * the update u = (m / bc1) / (sqrt(v) / sqrt(bc2) + eps) + wd p, written over the gradient
 * (the caller takes the tensor's norms of p and u, then applies sv_lamb_apply_elem). */
SV_HD void sv_lamb_update_elem(const float *p, float *g, float *m, float *v, const sv_optim_hparams *h, float wd) {
    float gv = *g * h->grad_scale;
    float mv = h->beta1 * *m + (1.0f - h->beta1) * gv;
    float vv = h->beta2 * *v + (1.0f - h->beta2) * gv * gv;
    float u = (mv / h->bc1) / (sqrtf(vv) / h->bc2_sqrt + h->eps);
    *g = u + wd * *p;
    *m = mv;
    *v = vv;
}

/* LAMB, second pass: p -= lr (trust u). */
SV_HD void sv_lamb_apply_elem(float *p, float u, const sv_optim_hparams *h) { *p = *p - h->lr * (h->trust * u); }

/* One element of backend op sv_be_optim_elem: which rule, on element i of a piece. */
typedef enum sv_optim_op {
    SV_OPTIM_OP_SGD = 0,
    SV_OPTIM_OP_LION,
    SV_OPTIM_OP_LAMB_UPDATE,
    SV_OPTIM_OP_LAMB_APPLY
} sv_optim_op;

SV_HD void sv_optim_op_elem(int op, float *p, float *g, float *m, float *v, size_t i, const sv_optim_hparams *h,
                            float wd) {
    switch (op) {
    case SV_OPTIM_OP_SGD: sv_sgd_elem(&p[i], &m[i], g[i], h, wd); break;
    case SV_OPTIM_OP_LION: sv_lion_elem(&p[i], &m[i], g[i], h, wd); break;
    case SV_OPTIM_OP_LAMB_UPDATE: sv_lamb_update_elem(&p[i], &g[i], &m[i], &v[i], h, wd); break;
    default: sv_lamb_apply_elem(&p[i], g[i], h); break;
    }
}

/* ---- label-smoothed cross-entropy target for class k ----
 * target distribution: (1 - s) one-hot + s / K uniform (timm LabelSmoothingCrossEntropy). */
SV_HD float sv_smooth_target(int k, int label, float smoothing, int num_classes) {
    return (k == label ? 1.0f - smoothing : 0.0f) + smoothing / (float)num_classes;
}

/* ---- counter-based hash (splitmix64 finaliser); core/rng.h builds every random stream on it ---- */
SV_HD uint64_t sv_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- dropout / stochastic-depth multiplier ----
 * Element (or sample) `unit` of global sample `sample` in mask stream `key` is kept with
 * probability `keep` (24 random bits against keep) and then scaled by 1/keep (inverted
 * dropout, as torch.nn.Dropout and timm's drop_path); dropped: 0. A pure function of its
 * arguments, so forward, backward and recompute draw the same mask on any backend, thread
 * layout or world size. */
SV_HD float sv_drop_mult(uint64_t key, uint64_t sample, uint64_t unit, float keep) {
    uint64_t r = sv_mix64(key ^ sv_mix64(sample ^ sv_mix64(unit + 0x5851f42d4c957f2dull)));
    float u = (float)(r >> 40) * (1.0f / 16777216.0f);
    return u < keep ? 1.0f / keep : 0.0f;
}

/* ---- sigmoid binary cross-entropy of one logit (timm BinaryCrossEntropy, i.e.
 * F.binary_cross_entropy_with_logits) in the stable form max(z,0) - z*t + log1p(exp(-|z|));
 * its gradient is sigmoid(z) - t. */
SV_HD float sv_bce_logit_loss(float z, float t) { return fmaxf(z, 0.0f) - z * t + log1pf(expf(-fabsf(z))); }
SV_HD float sv_bce_logit_grad(float z, float t) { return 1.0f / (1.0f + expf(-z)) - t; }

#endif
