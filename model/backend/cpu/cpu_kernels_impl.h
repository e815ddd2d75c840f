/* Bodies of the CPU element-wise kernels (see cpu_kernels.h). Included once per instruction
 * set by cpu_kernels_<isa>.c, after that file's `#pragma GCC target`, with
 * SV_CPU_KERNELS_NAME set to the table's name. Loops are written so GCC vectorises them:
 * selects instead of branches, libm-free exp/erfc (core/elementwise.h). The including files
 * also set no-trapping-math (lets GCC if-convert the selects; results are unchanged), and
 * model/CMakeLists.txt compiles them with -fno-math-errno (sqrtf becomes one instruction; sqrt
 * is exact either way): as a `#pragma GCC optimize` GCC 12 ignored it for the core/elementwise.h
 * bodies inlined here, and the AdamW loop stayed scalar with a libm call. */
#include "model/backend/cpu/cpu_kernels.h"

static inline float kstore(int bf, float v) { return bf ? sv_round_bf16(v) : v; }

#ifndef SV_CPU_GELU_KERNELS /* an ISA file may bring its own (same bits: gelu_avx512.h) */
static void k_bias_gelu(int bf, float *o, float *pre, const float *bias, size_t n) {
    if (bias) {
        for (size_t i = 0; i < n; i++) {
            float z = o[i] + bias[i];
            pre[i] = kstore(bf, z);
            o[i] = kstore(bf, sv_gelu(z));
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float z = o[i];
            pre[i] = kstore(bf, z);
            o[i] = kstore(bf, sv_gelu(z));
        }
    }
}
#endif

static void k_bias_store(int bf, float *o, const float *bias, size_t n) {
    if (bias)
        for (size_t i = 0; i < n; i++) o[i] = kstore(bf, o[i] + bias[i]);
    else if (bf)
        for (size_t i = 0; i < n; i++) o[i] = sv_round_bf16(o[i]);
}

static void k_add_store(int bf, float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = kstore(bf, a[i] + b[i]);
}

static void k_add16(uint16_t *out16, const uint16_t *a16, const uint16_t *b16, size_t n) {
    for (size_t i = 0; i < n; i++) out16[i] = sv_f32_to_bf16(sv_bf16_to_f32(a16[i]) + sv_bf16_to_f32(b16[i]));
}

static void k_round_bf16(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = sv_round_bf16(p[i]);
}

static void k_widen(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = sv_bf16_to_f32(src[i]);
}

static void k_narrow(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = sv_f32_to_bf16(src[i]);
}

#ifndef SV_CPU_GELU_KERNELS
static void k_bias_gelu_narrow(uint16_t *out16, uint16_t *pre16, const float *o, const float *bias, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float z = bias ? o[i] + bias[i] : o[i];
        pre16[i] = sv_f32_to_bf16(z);
        out16[i] = sv_f32_to_bf16(sv_gelu(z));
    }
}
#endif

static void k_epi_narrow(uint16_t *out16, uint16_t *pre16, const float *o, const float *bias, size_t n) {
    if (pre16)
        k_bias_gelu_narrow(out16, pre16, o, bias, n);
    else if (bias)
        for (size_t i = 0; i < n; i++) out16[i] = sv_f32_to_bf16(o[i] + bias[i]);
    else
        k_narrow(out16, o, n);
}

#ifndef SV_CPU_GELU_KERNELS
static void k_gelu(int bf, float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = kstore(bf, sv_gelu(x[i]));
}

static void k_gelu_bwd(int bf, float *d_x, const float *d_out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) d_x[i] = kstore(bf, d_out[i] * sv_gelu_grad(x[i]));
}

static void k_gelu_bwd16(uint16_t *d16, const uint16_t *x16, float *db, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float r = sv_bf16_to_f32(d16[i]);
        if (x16) {
            r = kstore(1, r * sv_gelu_grad(sv_bf16_to_f32(x16[i])));
            d16[i] = sv_f32_to_bf16(r);
        }
        if (db) db[i] = db[i] + r;
    }
}
#endif

#if !defined(SV_CPU_SOFTMAX_KERNELS) || !defined(SV_CPU_LN_KERNELS)
/* Sum with 16 independent lanes (vectorises without reassociation; fixed order per row). */
static float k_sum16(const float *s, int T) {
    float acc[16] = {0};
    int j = 0;
    for (; j + 16 <= T; j += 16)
        for (int l = 0; l < 16; l++) acc[l] += s[j + l];
    for (; j < T; j++) acc[j & 15] += s[j];
    return k_tree16(acc);
}
#endif

#ifndef SV_CPU_SOFTMAX_KERNELS /* an ISA file may bring its own (same bits: softmax_avx512.h) */
/* max of s[0 .. T) (T >= 1) in 16 lanes, so that it vectorises (a serial max over one variable
 * does not: it was a third of the softmax's time at T = 197). The maximum of a set does not
 * depend on the order it is taken in (ties between +0 and -0 aside, which the softmax's
 * s - max then maps to the same exp), so the result is that of the serial loop. */
static float k_max16(const float *s, int T) {
    float m[16];
    for (int l = 0; l < 16; l++) m[l] = s[0];
    int j = 0;
    for (; j + 16 <= T; j += 16)
        for (int l = 0; l < 16; l++) m[l] = s[j + l] > m[l] ? s[j + l] : m[l];
    for (; j < T; j++) m[j & 15] = s[j] > m[j & 15] ? s[j] : m[j & 15];
    float mx = m[0];
    for (int l = 1; l < 16; l++) mx = m[l] > mx ? m[l] : mx;
    return mx;
}

/* Rounding is monotonic, so for scale > 0 the largest s * scale is max(s) * scale: the maximum
 * is taken on the unscaled row and scaled once. */
static void k_softmax_rows(float *S, int rows, int T, float scale) {
    for (int r = 0; r < rows; r++) {
        float *s = S + (size_t)r * T;
        const float mx = k_max16(s, T) * scale;
        for (int j = 0; j < T; j++) s[j] = sv_exp_fast(s[j] * scale - mx);
        float inv = 1.0f / k_sum16(s, T);
        for (int j = 0; j < T; j++) s[j] *= inv;
    }
}

#endif

#ifndef SV_CPU_SOFTMAX_BWD /* an ISA file may bring its own for some lengths (same bits) */
#define SV_CPU_SOFTMAX_BWD k_softmax_bwd_rows
#endif
static void k_softmax_bwd_rows(float *dS, const float *P, int rows, int T) {
    for (int r = 0; r < rows; r++) {
        float *s = dS + (size_t)r * T;
        const float *p = P + (size_t)r * T;
        float acc[16] = {0};
        int j = 0;
        for (; j + 16 <= T; j += 16)
            for (int l = 0; l < 16; l++) acc[l] += s[j + l] * p[j + l];
        for (; j < T; j++) acc[j & 15] += s[j] * p[j];
        const float dot = k_tree16(acc);
        for (j = 0; j < T; j++) s[j] = p[j] * (s[j] - dot);
    }
}

#ifndef SV_CPU_LN_KERNELS /* an ISA file may bring its own (same bits: layernorm_avx512.h) */
static float k_sumsq16_centered(const float *x, int n, float mean) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float d = x[i + j] - mean;
            acc[j] += d * d;
        }
    for (; i < n; i++) {
        float d = x[i] - mean;
        acc[i & 15] += d * d;
    }
    return k_tree16(acc);
}

static void k_layernorm_fwd_rows(int bf, float *out, float *mean, float *rstd, const float *x, const float *w,
                                 const float *b, int rows, int C) {
    for (int m = 0; m < rows; m++) {
        const float *xr = x + (size_t)m * C;
        float *o = out + (size_t)m * C;
        float mu = k_sum16(xr, C) / (float)C;
        float var = k_sumsq16_centered(xr, C, mu) / (float)C; /* biased, as torch */
        float rs = 1.0f / sqrtf(var + SV_LN_EPS);
        for (int i = 0; i < C; i++) o[i] = kstore(bf, (xr[i] - mu) * rs * w[i] + b[i]);
        mean[m] = mu;
        rstd[m] = rs;
    }
}

static void k_layernorm_bwd_rows(int bf, float *d_x, const float *dy, const float *x, const float *w, const float *mean,
                                 const float *rstd, int rows, int C) {
    for (int m = 0; m < rows; m++) {
        float *dxr = d_x + (size_t)m * C;
        const float *dyr = dy + (size_t)m * C, *xr = x + (size_t)m * C;
        const float mu = mean[m], rs = rstd[m];
        float a1[16] = {0}, a2[16] = {0};
        int i = 0;
        for (; i + 16 <= C; i += 16)
            for (int j = 0; j < 16; j++) {
                float g = dyr[i + j] * w[i + j];
                a1[j] += g;
                a2[j] += g * ((xr[i + j] - mu) * rs);
            }
        for (; i < C; i++) {
            float g = dyr[i] * w[i];
            a1[i & 15] += g;
            a2[i & 15] += g * ((xr[i] - mu) * rs);
        }
        const float mg = k_tree16(a1) / (float)C, mgx = k_tree16(a2) / (float)C;
        for (i = 0; i < C; i++) {
            float xh = (xr[i] - mu) * rs;
            dxr[i] = kstore(bf, dxr[i] + rs * (dyr[i] * w[i] - mg - xh * mgx));
        }
    }
}

#endif

static void k_layernorm_bwd_params(float *dw, float *db, const float *dy, const float *x, const float *mean,
                                   const float *rstd, int M, int C, int c0, int c1) {
    for (int m = 0; m < M; m++) {
        const float *dyr = dy + (size_t)m * C, *xr = x + (size_t)m * C;
        const float mu = mean[m], rs = rstd[m];
        for (int i = c0; i < c1; i++) {
            dw[i] += dyr[i] * ((xr[i] - mu) * rs);
            db[i] += dyr[i];
        }
    }
}

static void k_adamw(float *p, const float *g, float *m, float *v, size_t n, const sv_adamw_hparams *h, float wd) {
    const sv_adamw_hparams hp = *h;
    for (size_t i = 0; i < n; i++) sv_adamw_elem(&p[i], &m[i], &v[i], g[i], &hp, wd);
}

static void k_ema(float *e, const float *x, size_t n, float w) {
    for (size_t i = 0; i < n; i++) e[i] = sv_ema_elem(e[i], x[i], w);
}

/* The rules of sv_optim_op_elem, one loop per rule (the switch hoisted out of the loop). */
static void k_optim_elem(int op, float *p, float *g, float *m, float *v, size_t n, const sv_optim_hparams *h,
                         float wd) {
    const sv_optim_hparams hp = *h;
    switch (op) {
    case SV_OPTIM_OP_SGD:
        for (size_t i = 0; i < n; i++) sv_sgd_elem(&p[i], &m[i], g[i], &hp, wd);
        break;
    case SV_OPTIM_OP_LION:
        for (size_t i = 0; i < n; i++) sv_lion_elem(&p[i], &m[i], g[i], &hp, wd);
        break;
    case SV_OPTIM_OP_LAMB_UPDATE:
        for (size_t i = 0; i < n; i++) sv_lamb_update_elem(&p[i], &g[i], &m[i], &v[i], &hp, wd);
        break;
    default:
        for (size_t i = 0; i < n; i++) sv_lamb_apply_elem(&p[i], g[i], &hp);
        break;
    }
}

/* Sum of squares of one block in double; eight interleaved accumulators in a fixed order so
 * the loop pipelines without reassociation freedom (the result is a pure function of the
 * block's contents; each product of two floats is exact in double). */
static double k_sumsq_block(const float *p, size_t n) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += (double)p[i + j] * (double)p[i + j];
    for (; i < n; i++) a[i & 7] += (double)p[i] * (double)p[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

const sv_cpu_kernels SV_CPU_KERNELS_NAME = {
    .isa = SV_CPU_KERNELS_ISA,
    .bias_gelu = k_bias_gelu,
    .bias_store = k_bias_store,
    .add_store = k_add_store,
    .add16 = k_add16,
    .round_bf16 = k_round_bf16,
    .widen = k_widen,
    .narrow = k_narrow,
    .epi_narrow = k_epi_narrow,
    .gelu = k_gelu,
    .gelu_bwd = k_gelu_bwd,
    .gelu_bwd16 = k_gelu_bwd16,
    .softmax_rows = k_softmax_rows,
    .softmax_bwd_rows = SV_CPU_SOFTMAX_BWD,
    .layernorm_fwd_rows = k_layernorm_fwd_rows,
    .layernorm_bwd_rows = k_layernorm_bwd_rows,
    .layernorm_bwd_params = k_layernorm_bwd_params,
    .adamw = k_adamw,
    .ema = k_ema,
    .optim_elem = k_optim_elem,
    .sumsq_block = k_sumsq_block,
};
