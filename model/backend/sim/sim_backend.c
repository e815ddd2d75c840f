/* The virtual-time backend (sim_backend.h). */
#include "model/backend/sim/sim_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/clock.h"
#include "model/backend/backend_impl.h"

enum {
    OP_UPLOAD,
    OP_DOWNLOAD,
    OP_COPY,
    OP_ZERO,
    OP_F32_TO_COMPUTE,
    OP_COMPUTE_TO_F32,
    OP_F32_TO_BF16,
    OP_BF16_TO_F32,
    OP_ADD_F32,
    OP_SUMSQ,
    OP_LINEAR_FWD,
    OP_LINEAR_BWD,
    OP_LN_FWD,
    OP_LN_BWD,
    OP_ATTN_FWD,
    OP_ATTN_BWD,
    OP_GELU_FWD,
    OP_GELU_BWD,
    OP_RESIDUAL,
    OP_XENT,
    OP_IM2COL,
    OP_EMBED_FWD,
    OP_EMBED_BWD,
    OP_CLS,
    OP_CLS_BWD,
    OP_DROP,
    OP_SCALE,
    OP_SCALE_BWD,
    OP_TOKEN_MEAN,
    OP_TOKEN_MEAN_BWD,
    OP_BCE,
    OP_ADAMW,
    OP_EMA,
    OP_OPTIM_ELEM,
};

#define SIM_KEYS 7
#define SIM_SAMPLES 3
typedef struct sim_entry {
    int op;
    long long k[SIM_KEYS];
    double t;                   /* the op's time once known (analytic, or the samples' median) */
    double sample[SIM_SAMPLES]; /* calibrated: real times of its first occurrences in the step */
    int n;
} sim_entry;

typedef struct sim_map { /* one mapping handed out by alloc */
    void *p;
    size_t bytes;
} sim_map;

typedef struct sim_be {
    sv_backend base;
    sv_sim_backend_config cfg;
    sim_entry *ent;
    int n_ent, cap_ent;
    sim_map maps[64];
    int warmup; /* calibrated: every op runs for real, nothing is recorded */
    sv_sim_backend_stats st;
} sim_be;

static sim_be *S(sv_backend *be) { return (sim_be *)be; }

/* ---- memory --------------------------------------------------------------------------------- */

static sv_status s_alloc(sv_backend *be, size_t bytes, void **out) {
    sim_be *s = S(be);
    int i = 0;
    while (i < 64 && s->maps[i].p) i++;
    if (i == 64) return SV_FAIL(SV_ERR_OOM, "simulated backend: more than 64 allocations");
    int prot = s->cfg.real ? PROT_READ | PROT_WRITE : PROT_NONE;
    void *p = mmap(NULL, bytes ? bytes : 1, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return SV_FAIL(SV_ERR_OOM, "simulated backend: cannot reserve %.1f GiB of address space", bytes / 1073741824.0);
    s->maps[i] = (sim_map){p, bytes ? bytes : 1};
    *out = p;
    return SV_OK;
}

static void s_free(sv_backend *be, void *p) {
    sim_be *s = S(be);
    for (int i = 0; i < 64; i++)
        if (s->maps[i].p == p) {
            munmap(p, s->maps[i].bytes);
            s->maps[i].p = NULL;
        }
}

static void s_destroy(sv_backend *be) {
    sim_be *s = S(be);
    for (int i = 0; i < 64; i++)
        if (s->maps[i].p) munmap(s->maps[i].p, s->maps[i].bytes);
    free(s->ent);
    free(s);
}

static double s_peak(const sv_backend *be) {
    const sim_be *s = (const sim_be *)be;
    return s->cfg.real ? sv_be_peak_flops(s->cfg.real) : s->cfg.dev->peak_flops;
}

/* ---- charging ------------------------------------------------------------------------------- */

static sim_entry *lookup(sim_be *s, const sim_entry *k) {
    for (int i = s->n_ent - 1; i >= 0; i--) {
        sim_entry *e = &s->ent[i];
        if (e->op == k->op && !memcmp(e->k, k->k, sizeof e->k)) return e;
    }
    return NULL;
}

static sv_status insert(sim_be *s, const sim_entry *k, double t, sim_entry **out) {
    if (s->n_ent == s->cap_ent) {
        int cap = s->cap_ent ? 2 * s->cap_ent : 64;
        sim_entry *n = realloc(s->ent, (size_t)cap * sizeof *n);
        if (!n) return SV_FAIL(SV_ERR_OOM, "simulated backend: shape table");
        s->ent = n;
        s->cap_ent = cap;
    }
    sim_entry *e = &s->ent[s->n_ent++];
    *e = *k;
    e->t = t;
    s->st.shapes = s->n_ent;
    *out = e;
    return SV_OK;
}

static double analytic(const sim_be *s, double flops, double bytes, int host_copy) {
    const sv_sim_device *d = s->cfg.dev;
    if (host_copy) return d->launch_s + bytes / d->h2d_Bps;
    double tc = flops > 0 ? flops / (d->peak_flops * d->gemm_eff) : 0.0;
    double tm = bytes / (d->mem_Bps * d->mem_eff);
    return d->launch_s + (tc > tm ? tc : tm);
}

/* Advance the virtual clock by an op of (uncontended) time t. */
static sv_status charge(sim_be *s, double t, double flops) {
    t *= s->cfg.slowdown;
    if (s->cfg.op_seconds) t = s->cfg.op_seconds(s->cfg.op_ctx, t);
    *s->cfg.now += t;
    s->st.compute_s += t;
    s->st.gemm_flops += flops;
    return SV_OK;
}

static double median3(const double *t) {
    double a = t[0], b = t[1], c = t[2];
    if (a > b) {
        double x = a;
        a = b;
        b = x;
    }
    if (b > c) b = c;
    return a > b ? a : b;
}

/* The body of every op, keyed by op and shape. Analytic: the roofline, evaluated once per shape.
 * Calibrated: in the warm-up step every op runs for real (first touches, caches as a real step
 * leaves them; nothing recorded); afterwards each shape's first SIM_SAMPLES occurrences run for
 * real where they fall in the step (buffers, caches and the ops before them as in a real step),
 * each timed once and charged its own time; later occurrences are charged the samples' median
 * without running. GEMM: 1 when FLOPS count towards MFU. */
#define SIM_OP(ID, FLOPS, BYTES, HOSTCOPY, GEMM, REAL_CALL, ...) \
    do { \
        sim_be *s_ = S(be); \
        sim_entry k_ = {.op = ID, .k = {__VA_ARGS__}}; \
        sim_entry *e_ = lookup(s_, &k_); \
        if (!e_) { \
            double t_ = s_->cfg.real ? 0.0 : analytic(s_, (double)(FLOPS), (double)(BYTES), HOSTCOPY); \
            SV_TRY(insert(s_, &k_, t_, &e_)); \
        } \
        double c_ = e_->t; \
        if (s_->cfg.real && (s_->warmup || e_->n < SIM_SAMPLES)) { \
            sv_backend *rb_ = s_->cfg.real; \
            double t0_ = sv_now_real_s(); \
            SV_TRY(REAL_CALL); \
            SV_TRY(sv_be_sync(rb_)); \
            c_ = sv_now_real_s() - t0_; \
            s_->st.calibrate_s += c_; \
            if (!s_->warmup) { \
                e_->sample[e_->n++] = c_; \
                if (e_->n == SIM_SAMPLES) e_->t = median3(e_->sample); \
            } \
        } \
        return charge(s_, c_, (GEMM) ? (double)(FLOPS) : 0.0); \
    } while (0)

#define E ((double)be->compute_elem)

static sv_status s_upload(sv_backend *be, void *dst, const void *src, size_t bytes) {
    SIM_OP(OP_UPLOAD, 0, bytes, 1, 0, sv_be_upload(rb_, dst, src, bytes), (long long)bytes);
}
static sv_status s_download(sv_backend *be, void *dst, const void *src, size_t bytes) {
    if (!S(be)->cfg.real) memset(dst, 0, bytes); /* host memory: what the caller reads */
    SIM_OP(OP_DOWNLOAD, 0, bytes, 1, 0, sv_be_download(rb_, dst, src, bytes), (long long)bytes);
}
static sv_status s_copy(sv_backend *be, void *dst, const void *src, size_t bytes) {
    SIM_OP(OP_COPY, 0, 2.0 * bytes, 0, 0, sv_be_copy(rb_, dst, src, bytes), (long long)bytes);
}
static sv_status s_zero(sv_backend *be, void *p, size_t bytes) {
    SIM_OP(OP_ZERO, 0, bytes, 0, 0, sv_be_zero(rb_, p, bytes), (long long)bytes);
}
static sv_status s_f32_to_compute(sv_backend *be, void *dst, const float *src, size_t n) {
    SIM_OP(OP_F32_TO_COMPUTE, 0, (4 + E) * n, 0, 0, sv_be_f32_to_compute(rb_, dst, src, n), (long long)n);
}
static sv_status s_compute_to_f32(sv_backend *be, float *dst, const void *src, size_t n) {
    SIM_OP(OP_COMPUTE_TO_F32, 0, (4 + E) * n, 0, 0, sv_be_compute_to_f32(rb_, dst, src, n), (long long)n);
}
static sv_status s_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n) {
    SIM_OP(OP_F32_TO_BF16, 0, 6.0 * n, 0, 0, sv_be_f32_to_bf16(rb_, dst, src, n), (long long)n);
}
static sv_status s_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n) {
    SIM_OP(OP_BF16_TO_F32, 0, 6.0 * n, 0, 0, sv_be_bf16_to_f32(rb_, dst, src, n), (long long)n);
}
static sv_status s_add_f32(sv_backend *be, float *y, const float *x, size_t n) {
    SIM_OP(OP_ADD_F32, 0, 12.0 * n, 0, 0, sv_be_add_f32(rb_, y, x, n), (long long)n);
}
static sv_status s_sumsq(sv_backend *be, const float *p, size_t n, double *out) {
    *out = 0.0;
    SIM_OP(OP_SUMSQ, 0, 4.0 * n, 0, 0, sv_be_sumsq_f32(rb_, p, n, out), (long long)n);
}
static sv_status s_linear_fwd(sv_backend *be, void *out, void *pre, const void *in, const void *W, const void *b, int M,
                              int N, int K) {
    SIM_OP(OP_LINEAR_FWD, 2.0 * M * N * K, E * ((double)M * K + (double)N * K + (double)M * N * (pre ? 2 : 1)), 0, 1,
           sv_be_linear_fwd(rb_, out, pre, in, W, b, M, N, K), M, N, K, pre != NULL, b != NULL);
}
static sv_status s_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in,
                              const void *W, const void *pre, int M, int N, int K) {
    SIM_OP(OP_LINEAR_BWD, (d_in ? 4.0 : 2.0) * M * N * K,
           E * ((double)M * N * (pre ? 2 : 1) + (double)M * K * (d_in ? 2 : 1) + (double)N * K) + 8.0 * N * K, 0, 1,
           sv_be_linear_bwd(rb_, d_in, dW, db, d_out, in, W, pre, M, N, K), M, N, K, pre != NULL, db != NULL,
           d_in != NULL);
}
static sv_status s_ln_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                          const void *b, int M, int C) {
    SIM_OP(OP_LN_FWD, 0, E * 2.0 * M * C + 8.0 * M, 0, 0, sv_be_layernorm_fwd(rb_, out, mean, rstd, x, w, b, M, C), M,
           C);
}
static sv_status s_ln_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                          const void *w, const float *mean, const float *rstd, int M, int C) {
    SIM_OP(OP_LN_BWD, 0, E * 3.0 * M * C + 8.0 * M + 16.0 * C, 0, 0,
           sv_be_layernorm_bwd(rb_, d_x, dw, db, d_out, x, w, mean, rstd, M, C), M, C);
}
static sv_status s_attn_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T, int D,
                            int H, const sv_drop *drop) {
    SIM_OP(OP_ATTN_FWD, 4.0 * B * (double)T * T * D, E * 4.0 * B * T * D, 0, 1,
           sv_be_attention_fwd_drop(rb_, out, saved, scratch, qkv, B, T, D, H, drop), B, T, D, H);
}
static sv_status s_attn_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                            const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop) {
    SIM_OP(OP_ATTN_BWD, 10.0 * B * (double)T * T * D, E * 8.0 * B * T * D, 0, 1,
           sv_be_attention_bwd_drop(rb_, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, drop), B, T, D, H);
}
static sv_status s_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n) {
    SIM_OP(OP_GELU_FWD, 0, 2.0 * E * n, 0, 0, sv_be_gelu_fwd(rb_, out, x, n), (long long)n);
}
static sv_status s_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n) {
    SIM_OP(OP_GELU_BWD, 0, 3.0 * E * n, 0, 0, sv_be_gelu_bwd(rb_, d_x, d_out, x, n), (long long)n);
}
static sv_status s_residual(sv_backend *be, void *out, const void *a, const void *b, size_t n) {
    SIM_OP(OP_RESIDUAL, 0, 3.0 * E * n, 0, 0, sv_be_residual_add(rb_, out, a, b, n), (long long)n);
}
static sv_status s_xent(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                        const float *soft, int B, int K, float smoothing, float grad_scale) {
    SIM_OP(OP_XENT, 0, (2.0 * E + (soft ? 4.0 : 0.0)) * B * K, 0, 0,
           sv_be_softmax_xent(rb_, losses, d_logits, logits, labels, soft, B, K, smoothing, grad_scale), B, K,
           soft != NULL, d_logits != NULL);
}
static sv_status s_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Hi, int Wi, int p) {
    SIM_OP(OP_IM2COL, 0, (4.0 + E) * B * C * Hi * Wi, 0, 0, sv_be_im2col(rb_, patches, img, B, C, Hi, Wi, p), B, C, Hi,
           Wi, p);
}
static sv_status s_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                             const void *pos, int nec, int B, int T, int D) {
    SIM_OP(OP_EMBED_FWD, 0, E * (2.0 * B * T * D + (double)T * D), 0, 0,
           sv_be_embed_fwd(rb_, x, patch_out, cls, reg, R, pos, nec, B, T, D), B, T, D, (cls != NULL) + R, nec);
}
static sv_status s_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                             int nec, const void *dx, int B, int T, int D) {
    SIM_OP(OP_EMBED_BWD, 0, E * 2.0 * B * T * D + 8.0 * T * D, 0, 0,
           sv_be_embed_bwd(rb_, d_patch_out, d_cls, d_reg, R, d_pos, nec, dx, B, T, D), B, T, D, (d_cls != NULL) + R,
           nec);
}
static sv_status s_cls(sv_backend *be, void *out, const void *x, int B, int T, int D) {
    SIM_OP(OP_CLS, 0, E * 2.0 * B * D, 0, 0, sv_be_cls_select(rb_, out, x, B, T, D), B, T, D);
}
static sv_status s_cls_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D) {
    SIM_OP(OP_CLS_BWD, 0, E * ((double)B * T * D + B * D), 0, 0, sv_be_cls_select_bwd(rb_, dx, d_out, B, T, D), B, T,
           D);
}
static sv_status s_drop(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group) {
    SIM_OP(OP_DROP, 0, 2.0 * E * B * n, 0, 0, sv_be_drop(rb_, x, d, B, n, group), B, (long long)n, (long long)group);
}
static sv_status s_scale(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D) {
    SIM_OP(OP_SCALE, 0, 2.0 * E * M * D, 0, 0, sv_be_scale_cols(rb_, out, x, gamma, M, D), M, D);
}
static sv_status s_scale_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                             const void *gamma, int M, int D) {
    SIM_OP(OP_SCALE_BWD, 0, 3.0 * E * M * D, 0, 0, sv_be_scale_cols_bwd(rb_, d_x, d_gamma, d_out, x, gamma, M, D), M, D,
           d_x != NULL);
}
static sv_status s_token_mean(sv_backend *be, void *out, const void *x, int B, int T, int D, int first) {
    SIM_OP(OP_TOKEN_MEAN, 0, E * ((double)B * T * D + B * D), 0, 0, sv_be_token_mean(rb_, out, x, B, T, D, first), B, T,
           D, first);
}
static sv_status s_token_mean_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first) {
    SIM_OP(OP_TOKEN_MEAN_BWD, 0, E * ((double)B * T * D + B * D), 0, 0,
           sv_be_token_mean_bwd(rb_, dx, d_out, B, T, D, first), B, T, D, first);
}
static sv_status s_bce(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                       const float *soft, int B, int K, float smoothing, float thresh, int sum_classes,
                       float grad_scale) {
    SIM_OP(OP_BCE, 0, (2.0 * E + (soft ? 4.0 : 0.0)) * B * K, 0, 0,
           sv_be_sigmoid_bce(rb_, losses, d_logits, logits, labels, soft, B, K, smoothing, thresh, sum_classes,
                             grad_scale),
           B, K, soft != NULL, d_logits != NULL);
}
static sv_status s_adamw(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n,
                         const sv_adamw_hparams *h, float wd) {
    SIM_OP(OP_ADAMW, 0, 28.0 * n, 0, 0, sv_be_adamw(rb_, p, g, m, v, n, h, wd), (long long)n);
}
static sv_status s_ema(sv_backend *be, float *e, const float *x, size_t n, float w) {
    SIM_OP(OP_EMA, 0, 12.0 * n, 0, 0, sv_be_ema(rb_, e, x, n, w), (long long)n);
}
static sv_status s_optim_elem(sv_backend *be, int op, float *p, float *g, float *m, float *v, size_t n,
                              const sv_optim_hparams *h, float wd) {
    SIM_OP(OP_OPTIM_ELEM, 0, 28.0 * n, 0, 0, sv_be_optim_elem(rb_, op, p, g, m, v, n, h, wd), (long long)n, op);
}

#undef E

static const sv_backend_ops sim_ops = {
    .name = "sim",
    .destroy = s_destroy,
    .peak_flops = s_peak,
    .alloc = s_alloc,
    .free = s_free,
    .upload = s_upload,
    .download = s_download,
    .copy = s_copy,
    .zero = s_zero,
    .f32_to_compute = s_f32_to_compute,
    .compute_to_f32 = s_compute_to_f32,
    .f32_to_bf16 = s_f32_to_bf16,
    .bf16_to_f32 = s_bf16_to_f32,
    .add_f32 = s_add_f32,
    .sumsq_f32 = s_sumsq,
    .linear_fwd = s_linear_fwd,
    .linear_bwd = s_linear_bwd,
    .layernorm_fwd = s_ln_fwd,
    .layernorm_bwd = s_ln_bwd,
    .attention_fwd = s_attn_fwd,
    .attention_bwd = s_attn_bwd,
    .gelu_fwd = s_gelu_fwd,
    .gelu_bwd = s_gelu_bwd,
    .residual_add = s_residual,
    .softmax_xent = s_xent,
    .im2col = s_im2col,
    .embed_fwd = s_embed_fwd,
    .embed_bwd = s_embed_bwd,
    .cls_select = s_cls,
    .cls_select_bwd = s_cls_bwd,
    .drop = s_drop,
    .scale_cols = s_scale,
    .scale_cols_bwd = s_scale_bwd,
    .token_mean = s_token_mean,
    .token_mean_bwd = s_token_mean_bwd,
    .sigmoid_bce = s_bce,
    .adamw = s_adamw,
    .ema = s_ema,
    .optim_elem = s_optim_elem,
};

sv_status sv_sim_backend_create(const sv_sim_backend_config *cfg, sv_backend **out) {
    *out = NULL;
    if (!cfg->now || (!cfg->dev == !cfg->real))
        return SV_FAIL(SV_ERR_INVALID,
                       "simulated backend: needs a clock and exactly one of a device model or a real "
                       "backend");
    if (!(cfg->slowdown >= 1.0)) return SV_FAIL(SV_ERR_INVALID, "simulated backend: slowdown %g (>= 1)", cfg->slowdown);
    const sv_sim_device *d = cfg->dev;
    if (d &&
        !(d->peak_flops > 0 && d->mem_Bps > 0 && d->gemm_eff > 0 && d->mem_eff > 0 && d->h2d_Bps > 0 &&
          d->launch_s >= 0))
        return SV_FAIL(SV_ERR_INVALID, "simulated device '%s': peak, bandwidths and efficiencies must be > 0", d->name);
    sv_be_sizes sz;
    const sv_backend_config *bc = cfg->real ? &cfg->real->cfg : &cfg->bc;
    SV_TRY(sv_be_sizes_query(bc, 0, 0, 0, 0, &sz));
    sim_be *s = calloc(1, sizeof *s);
    if (!s) return SV_FAIL(SV_ERR_OOM, "simulated backend");
    s->base.ops = &sim_ops;
    s->base.cfg = *bc;
    s->base.compute_elem = sz.compute_elem;
    s->cfg = *cfg;
    if (cfg->real)
        snprintf(s->base.device_name, sizeof s->base.device_name, "simulated, calibrated on %s",
                 sv_be_device_name(cfg->real));
    else
        snprintf(s->base.device_name, sizeof s->base.device_name, "simulated %s", d->name);
    *out = &s->base;
    return SV_OK;
}

void sv_sim_backend_get_stats(const sv_backend *be, sv_sim_backend_stats *out) { *out = ((const sim_be *)be)->st; }

void sv_sim_backend_set_warmup(sv_backend *be, int on) { S(be)->warmup = on; }

int sv_sim_backend_untouchable(void *be, const void *p) {
    const sim_be *s = be;
    if (s->cfg.real) return 0;
    for (int i = 0; i < 64; i++)
        if (s->maps[i].p && (const char *)p >= (const char *)s->maps[i].p &&
            (const char *)p < (const char *)s->maps[i].p + s->maps[i].bytes)
            return 1;
    return 0;
}
