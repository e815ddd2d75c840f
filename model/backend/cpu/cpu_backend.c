/* CPU backend: creation, memory, casts, vector ops, deterministic sum of squares, AdamW, and
 * the vtable. Layer ops live in cpu_linear.c, cpu_norm.c, cpu_attention.c, cpu_embed.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cpu/cpu_info.h"
#include "model/backend/cpu/cpu_backend.h"
#include "core/log.h"

/* OpenBLAS's own entry point, declared here so the file also compiles against a reference
 * cblas.h that lacks it (the library linked is always OpenBLAS). */
void openblas_set_num_threads(int num_threads);

void sv_cpu_blas_threads(int n) { openblas_set_num_threads(n); }

#define SV_CPU_ALIGN 256

/* ---- memory ---- */

static sv_status cpu_alloc(sv_backend *be, size_t bytes, void **out) {
    (void)be;
    size_t sz = (bytes + SV_CPU_ALIGN - 1) / SV_CPU_ALIGN * SV_CPU_ALIGN;
    if (sz == 0) sz = SV_CPU_ALIGN;
    *out = aligned_alloc(SV_CPU_ALIGN, sz);
    if (!*out) return SV_FAIL(SV_ERR_OOM, "cpu backend: cannot allocate %zu bytes", bytes);
    return SV_OK;
}
static void cpu_free(sv_backend *be, void *p) {
    (void)be;
    free(p);
}
static sv_status cpu_memcpy(sv_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    memmove(dst, src, bytes);
    return SV_OK;
}
static sv_status cpu_zero(sv_backend *be, void *p, size_t bytes) {
    (void)be;
    memset(p, 0, bytes);
    return SV_OK;
}

/* ---- casts and vector ops ---- */

static sv_status cpu_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n);
static sv_status cpu_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n);

/* With fp32 storage dst may be src (in place); with bf16 storage (act16) they must not overlap
 * (as on the CUDA backend), and the casts are the raw bf16 ones: narrowing src gives the bits of
 * narrowing its bf16 rounding (rounding to nearest even is idempotent; NaNs keep their quiet
 * pattern), widening is exact. */
static sv_status cpu_f32_to_compute(sv_backend *be, void *dst, const float *src, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d = dst;
    if (c->act16) return cpu_f32_to_bf16(be, dst, src, n);
    if (!c->bf16) {
        if (d != src) memmove(d, src, n * sizeof(float));
        return SV_OK;
    }
#pragma omp parallel for num_threads(sv_cpu_nt(c, n)) schedule(static)
    for (size_t i = 0; i < n; i++) d[i] = sv_round_bf16(src[i]);
    return SV_OK;
}
static sv_status cpu_compute_to_f32(sv_backend *be, float *dst, const void *src, size_t n) {
    if (sv_cpu(be)->act16) return cpu_bf16_to_f32(be, dst, src, n);
    if ((const void *)dst != src) memmove(dst, src, n * sizeof(float));
    return SV_OK;
}
static sv_status cpu_f32_to_bf16(sv_backend *be, uint16_t *dst, const float *src, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
#pragma omp parallel for num_threads(sv_cpu_nt(c, n)) schedule(static)
    for (size_t i = 0; i < n; i++) dst[i] = sv_f32_to_bf16(src[i]);
    return SV_OK;
}
static sv_status cpu_bf16_to_f32(sv_backend *be, float *dst, const uint16_t *src, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
#pragma omp parallel for num_threads(sv_cpu_nt(c, n)) schedule(static)
    for (size_t i = 0; i < n; i++) dst[i] = sv_bf16_to_f32(src[i]);
    return SV_OK;
}
static sv_status cpu_add_f32(sv_backend *be, float *y, const float *x, size_t n) {
    const sv_cpu_backend *c = sv_cpu(be);
#pragma omp parallel for num_threads(sv_cpu_nt(c, n)) schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
    return SV_OK;
}

/* Deterministic across thread counts: the buffer is cut into chunks of
 * SV_CPU_SUMSQ_CHUNK_BLOCKS blocks of SV_CPU_SUMSQ_BLOCK elements (fixed sizes); each chunk's
 * sum is its blocks summed in order, whichever thread computes it; chunk sums are then
 * added in index order, SV_CPU_SUMSQ_PARTIALS at a time. */
static sv_status cpu_sumsq_f32(sv_backend *be, const float *p, size_t n, double *out) {
    sv_cpu_backend *c = sv_cpu(be);
    const size_t chunk = (size_t)SV_CPU_SUMSQ_BLOCK * SV_CPU_SUMSQ_CHUNK_BLOCKS;
    size_t nchunks = (n + chunk - 1) / chunk;
    double total = 0.0;
    for (size_t c0 = 0; c0 < nchunks; c0 += SV_CPU_SUMSQ_PARTIALS) {
        size_t cn = nchunks - c0 < SV_CPU_SUMSQ_PARTIALS ? nchunks - c0 : SV_CPU_SUMSQ_PARTIALS;
        double *part = c->sumsq_partials;
        int nt = cn > 1 ? sv_cpu_nt(c, cn * chunk) : 1;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (size_t ci = 0; ci < cn; ci++) {
            size_t start = (c0 + ci) * chunk;
            size_t end = start + chunk < n ? start + chunk : n;
            double s = 0.0;
            for (size_t b = start; b < end; b += SV_CPU_SUMSQ_BLOCK)
                s += c->k->sumsq_block(p + b, end - b < SV_CPU_SUMSQ_BLOCK ? end - b : SV_CPU_SUMSQ_BLOCK);
            part[ci] = s;
        }
        for (size_t ci = 0; ci < cn; ci++) total += part[ci];
    }
    *out = total;
    return SV_OK;
}

static sv_status cpu_adamw(sv_backend *be, float *p, const float *g, float *m, float *v, size_t n,
                           const sv_adamw_hparams *h, float weight_decay) {
    const sv_cpu_backend *c = sv_cpu(be);
    CPU_SPLIT(c, n, 8 * n, c->k->adamw(p + a, g + a, m + a, v + a, b - a, h, weight_decay));
    return SV_OK;
}

static sv_status cpu_ema(sv_backend *be, float *e, const float *x, size_t n, float w) {
    const sv_cpu_backend *c = sv_cpu(be);
    CPU_SPLIT(c, n, 2 * n, c->k->ema(e + a, x + a, b - a, w));
    return SV_OK;
}

static sv_status cpu_optim_elem(sv_backend *be, int op, float *p, float *g, float *m, float *v, size_t n,
                                const sv_optim_hparams *h, float weight_decay) {
    const sv_cpu_backend *c = sv_cpu(be);
    CPU_SPLIT(c, n, 8 * n, c->k->optim_elem(op, p + a, g + a, m + a, v + a, b - a, h, weight_decay));
    return SV_OK;
}

sv_status sv_cpu_backend_set_isa(sv_backend *be, const char *isa) {
    const sv_cpu_kernels *k = sv_cpu_kernels_pick(isa);
    if (!k)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "cpu backend: kernels '%s' not available on this CPU (generic|avx2|avx512|auto)",
                       isa ? isa : "(null)");
    sv_cpu(be)->k = k;
    return SV_OK;
}

/* ---- lifetime ---- */

void *sv_cpu_gemm_scratch(const sv_cpu_backend *c, int t) {
    return (char *)c->gemm_scratch + (size_t)t * c->gemm->scratch_bytes;
}

static void cpu_destroy(sv_backend *be) {
    if (!be) return;
    free(sv_cpu(be)->sumsq_partials);
    free(sv_cpu(be)->gemm_pack);
    free(sv_cpu(be)->gemm_scratch);
    free(sv_cpu(be)->act16_buf);
    free(be);
}

/* Optional entries left NULL take their defaults (backend_impl.h): no peak (calibrated in
 * app/), no native stream, host memory = device memory, uploads are plain copies, ops are
 * complete on return (sync and the upload fence are no-ops). */
static const sv_backend_ops sv_cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = cpu_memcpy,
    .zero = cpu_zero,
    .f32_to_compute = cpu_f32_to_compute,
    .compute_to_f32 = cpu_compute_to_f32,
    .f32_to_bf16 = cpu_f32_to_bf16,
    .bf16_to_f32 = cpu_bf16_to_f32,
    .add_f32 = cpu_add_f32,
    .sumsq_f32 = cpu_sumsq_f32,
    .sumsq_f32_dev = cpu_sumsq_f32, /* device memory is host memory */
    .linear_fwd = sv_cpu_linear_fwd,
    .linear_bwd = sv_cpu_linear_bwd,
    .layernorm_fwd = sv_cpu_layernorm_fwd,
    .layernorm_bwd = sv_cpu_layernorm_bwd,
    .attention_fwd = sv_cpu_attention_fwd,
    .attention_bwd = sv_cpu_attention_bwd,
    .gelu_fwd = sv_cpu_gelu_fwd,
    .gelu_bwd = sv_cpu_gelu_bwd,
    .residual_add = sv_cpu_residual_add,
    .softmax_xent = sv_cpu_softmax_xent,
    .im2col = sv_cpu_im2col,
    .embed_fwd = sv_cpu_embed_fwd,
    .embed_bwd = sv_cpu_embed_bwd,
    .cls_select = sv_cpu_cls_select,
    .cls_select_bwd = sv_cpu_cls_select_bwd,
    .drop = sv_cpu_drop,
    .scale_cols = sv_cpu_scale_cols,
    .scale_cols_bwd = sv_cpu_scale_cols_bwd,
    .token_mean = sv_cpu_token_mean,
    .token_mean_bwd = sv_cpu_token_mean_bwd,
    .sigmoid_bce = sv_cpu_sigmoid_bce,
    .adamw = cpu_adamw,
    .ema = cpu_ema,
    .optim_elem = cpu_optim_elem,
};

/* What a configuration selects on this CPU: one function for creation and for the size
 * queries, so a plan sizes exactly what the backend then uses. Error messages name the
 * setting by its documented environment override (the users' way to set it). */
typedef struct cpu_choice {
    int threads, op_threads, bf16, act16;
    const sv_cpu_kernels *k;
    const sv_gemm_engine *gemm; /* NULL: OpenBLAS */
    int threaded_blas;          /* cpu.gemm "blas" */
    int attn_gemm;
    char note[160]; /* a fallback the log should show, or "" */
} cpu_choice;

static sv_status cpu_resolve(const sv_backend_config *cfg, cpu_choice *ch) {
    memset(ch, 0, sizeof *ch);
    if (cfg->threads < 0 || cfg->threads > 1024)
        return SV_FAIL(SV_ERR_INVALID, "cpu backend: threads=%d out of range [0, 1024]", cfg->threads);
    if (cfg->cpu.op_threads < 0 || cfg->cpu.op_threads > 1024)
        return SV_FAIL(SV_ERR_INVALID, "cpu backend: op_threads=%d out of range [0, 1024]", cfg->cpu.op_threads);
    if (cfg->compute_dtype != SV_F32 && cfg->compute_dtype != SV_BF16)
        return SV_FAIL(SV_ERR_INVALID, "cpu backend: unknown compute dtype %d", (int)cfg->compute_dtype);
    ch->threads = cfg->threads > 0 ? cfg->threads : 1;
    ch->op_threads = cfg->cpu.op_threads > 0 ? cfg->cpu.op_threads : ch->threads;
    /* What OpenMP will really start (OMP_THREAD_LIMIT, OMP_MAX_ACTIVE_LEVELS=0): the regions split
     * their work for the team they ask for (SV_CPU_TEAM), and dynamic teams are off (create) */
    int most = omp_get_max_active_levels() < 1 ? 1 : omp_get_thread_limit();
    if (most < 1) most = 1;
    if (ch->threads > most) ch->threads = most;
    if (ch->op_threads > most) ch->op_threads = most;
    ch->bf16 = cfg->compute_dtype == SV_BF16;
    const char *isa = cfg->cpu.isa;
    ch->k = sv_cpu_kernels_pick(isa);
    if (!ch->k)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "cpu backend: SHARDVIT_CPU_ISA=%s is not available on this CPU "
                       "(generic|avx2|avx512|auto)",
                       isa);
    const char *gm = cfg->cpu.gemm;
    int forced_blas = 0;
    char why[160];
    why[0] = '\0';
    ch->threaded_blas = gm && !strcmp(gm, "blas");
    ch->gemm =
        ch->threaded_blas ? NULL : sv_gemm_engine_pick(ch->bf16, gm, cfg->cpu.amx_deny, &forced_blas, why, ch->note);
    if (ch->threaded_blas) ch->note[0] = '\0';
    if (!ch->gemm && why[0] && !ch->threaded_blas)
        return SV_FAIL(SV_ERR_UNSUPPORTED, "cpu backend: GEMM engine '%s' (--cpu-gemm / SHARDVIT_CPU_GEMM): %s", gm,
                       why);
    ch->attn_gemm = ch->gemm && !cfg->cpu.attn_sgemm;
    if (cfg->cpu.f32_storage < -1 || cfg->cpu.f32_storage > 1)
        return SV_FAIL(SV_ERR_INVALID,
                       "cpu backend: SHARDVIT_CPU_BF16_STORAGE must be 0 or 1 (0 keeps bf16 mode's buffers in fp32)");
    /* bf16 storage needs every GEMM on a bf16 engine (they read bf16 operands; sgemm and the
     * fp32 engines read fp32) */
    ch->act16 = ch->bf16 && ch->gemm && ch->gemm->bf16 && ch->attn_gemm && cfg->cpu.f32_storage <= 0;
    return SV_OK;
}

sv_status sv_cpu_sizes(const sv_backend_config *cfg, int B, int T, int D, int H, sv_be_sizes *out) {
    cpu_choice ch;
    SV_TRY(cpu_resolve(cfg, &ch));
    out->compute_elem = ch.act16 ? 2 : 4; /* bf16 or fp32 storage (cpu_backend.h) */
    if (B && T && D && H) {
        int workers = ch.threads > ch.op_threads ? ch.threads : ch.op_threads;
        out->attention_saved = sv_cpu_attention_saved_for(B, T, H);
        out->attention_scratch =
            sv_cpu_attention_scratch_for(ch.attn_gemm ? ch.gemm : NULL, ch.act16, workers, T, D / H);
    }
    return SV_OK;
}

void sv_cpu_team_short(int want, int got) {
    fprintf(stderr,
            "shardvit: cpu backend: OpenMP started %d of the %d threads of a parallel region whose work is split "
            "for %d; stopping rather than leaving part of a result uncomputed\n",
            got, want, want);
    abort();
}

sv_status sv_cpu_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    *out = NULL;
    omp_set_dynamic(0); /* teams of the size asked for (OMP_DYNAMIC=true gave smaller ones: SV_CPU_TEAM) */
    cpu_choice ch;
    SV_TRY(cpu_resolve(cfg, &ch));
    sv_cpu_backend *c = calloc(1, sizeof *c);
    if (!c) return SV_FAIL(SV_ERR_OOM, "cpu backend: cannot allocate the backend struct");
    c->sumsq_partials = calloc(SV_CPU_SUMSQ_PARTIALS, sizeof(double));
    if (!c->sumsq_partials) {
        free(c);
        return SV_FAIL(SV_ERR_OOM, "cpu backend: cannot allocate sumsq partials");
    }
    c->base.ops = &sv_cpu_ops;
    c->base.cfg = *cfg;
    c->base.cfg.device = SV_DEVICE_CPU;
    c->base.cfg.threads = ch.threads; /* what it runs with (OpenMP's limits may lower the count asked for) */
    c->threads = ch.threads;
    c->op_threads = ch.op_threads;
    c->bf16 = ch.bf16;
    c->act16 = ch.act16;
    c->k = ch.k;
    /* GEMM engine: chosen here once, buffers allocated here once (the step never allocates) */
    c->gemm = ch.gemm;
    if (ch.note[0]) SV_WARN("cpu backend: %s", ch.note);
    c->gemm_split = !ch.threaded_blas;
    if (c->gemm) {
        size_t sb = c->gemm->scratch_bytes;
        c->gemm_slots = c->threads;
        c->gemm_pack = aligned_alloc(SV_CPU_ALIGN, SV_CPU_GEMM_PACK_BYTES);
        c->gemm_scratch = aligned_alloc(SV_CPU_ALIGN, sb * (size_t)c->gemm_slots);
        if (!c->gemm_pack || !c->gemm_scratch) {
            cpu_destroy(&c->base);
            return SV_FAIL(SV_ERR_OOM, "cpu backend: cannot allocate %zu bytes of GEMM buffers",
                           SV_CPU_GEMM_PACK_BYTES + sb * (size_t)c->threads);
        }
        c->attn_gemm = ch.attn_gemm;
        c->no_fused_epi = cfg->cpu.unfused_epi != 0;
        if (c->act16) {
            size_t ab = SV_CPU_ACT16_FLOATS * sizeof(float) * (size_t)c->gemm_slots;
            c->act16_buf = aligned_alloc(SV_CPU_ALIGN, ab);
            if (!c->act16_buf) {
                cpu_destroy(&c->base);
                return SV_FAIL(SV_ERR_OOM, "cpu backend: cannot allocate %zu bytes of bf16-storage buffers", ab);
            }
        }
    }
    /* the stored configuration names what was chosen (static strings: the caller's may go) */
    const char *gname = c->gemm ? c->gemm->name : ch.threaded_blas ? "openblas-threaded" : "openblas";
    c->base.cfg.cpu.gemm = c->gemm ? c->gemm->name : ch.threaded_blas ? "blas" : "openblas";
    c->base.cfg.cpu.isa = c->k->isa;
    char model[64]; /* leaves room for the thread count and the kernel/GEMM bracket */
    sv_cpu_model_name(model, sizeof model);
    /* the bracket names the element-wise kernels, the GEMM engine of the linear layers and the
     * one attention uses */
    snprintf(c->base.device_name, sizeof c->base.device_name, "%s (%d thread%s) [%s, gemm %s, attn %s%s]", model,
             c->threads, c->threads == 1 ? "" : "s", c->k->isa, gname, c->attn_gemm ? gname : "openblas",
             c->act16 ? ", bf16 storage" : "");
    sv_cpu_blas_threads(sv_cpu_blas_default(c));
    *out = &c->base;
    return SV_OK;
}
