/* CPU backend internals: shared by the cpu_*.c files only (model code uses backend.h).
 *
 * Values: with compute dtype bf16 each op rounds the values it writes to compute buffers with
 * sv_round_bf16, inside its own output loop (sv_cpu_store below), so no op needs an extra rounding
 * pass except after a BLAS call, where the pass runs over the block the GEMM just produced while
 * it is still in cache.
 *
 * Storage (docs/backend_cpu.md "Storage"): compute buffers are fp32 arrays, except with
 * `act16` (bf16 mode whose linear and attention GEMMs all run a bf16 engine, the default there),
 * where they are bf16 arrays (uint16_t, the high half of the fp32 pattern). An act16 op computes
 * exactly what the fp32-storage op computes, in fp32: it widens its compute inputs (exact), runs
 * the same kernels with rounding on, and narrows its compute outputs (exact: they are already bf16
 * values), in chunks of SV_CPU_CHUNK elements or whole rows on the stack, or the GEMM engines read
 * the bf16 operands directly (gemm_engine.h, sv_gemm_mat.h16). So both storages give the same bits
 * (tests/ops/test_ops_storage.c compares every op); bf16 storage moves half the bytes.
 *
 * Threading (see docs/backend_cpu.md for the measurements behind it): `threads` OpenMP
 * workers for the element-wise, row-wise and per-(batch, head) loops; OpenBLAS gets the same
 * count for the large linear GEMMs and one thread inside parallel regions. Every reduction
 * is ordered by data index, not by thread, so results do not depend on the thread count. */
#ifndef SV_MODEL_BACKEND_CPU_BACKEND_H
#define SV_MODEL_BACKEND_CPU_BACKEND_H

#include <stddef.h>

#include "model/backend/backend_impl.h"
#include "model/backend/cpu/cpu_kernels.h"
#include "model/backend/cpu/gemm_engine.h"

/* Elements per block of the deterministic sum of squares, and blocks per partial that one
 * thread produces; the partials are then summed in index order on the calling thread. */
#define SV_CPU_SUMSQ_BLOCK 4096
#define SV_CPU_SUMSQ_CHUNK_BLOCKS 64
#define SV_CPU_SUMSQ_PARTIALS 4096

typedef struct sv_cpu_backend {
    sv_backend base;
    int threads;             /* worker threads for OpenBLAS (>= 1) */
    int op_threads;          /* OpenMP workers for the backend's own loops (cfg.cpu.op_threads, else threads) */
    int bf16;                /* 1: round every value written to a compute buffer to bf16 */
    int act16;               /* 1: compute buffers are stored as bf16 (see the top of this file) */
    double *sumsq_partials;  /* SV_CPU_SUMSQ_PARTIALS doubles, allocated in create */
    const sv_cpu_kernels *k; /* element-wise kernels for this CPU (cpu_kernels.h) */
    /* The packed-GEMM engine of the linear layers (gemm_engine.h), chosen at creation from the
     * CPU and the compute dtype (cfg.cpu.gemm = <engine>|openblas|blas|auto forces one; its
     * override is SHARDVIT_CPU_GEMM); NULL: OpenBLAS sgemm. Engine GEMMs always split across the OpenMP workers. */
    const sv_gemm_engine *gemm;
    /* OpenBLAS path only. 1 (default, cpu.gemm "openblas" or auto without an engine):
     * linear GEMMs are split across the OpenMP workers, each calling single-threaded OpenBLAS,
     * so OpenBLAS never runs its own threads next to the OpenMP pool. 0 (cpu.gemm "blas"):
     * OpenBLAS threads each whole GEMM (`threads` workers). */
    int gemm_split;
    void *gemm_pack;    /* SV_CPU_GEMM_PACK_BYTES, the packed shared operand (gemm != NULL) */
    void *gemm_scratch; /* gemm_slots x gemm->scratch_bytes, one per worker */
    int gemm_slots;     /* workers an engine GEMM may use (= threads at creation) */
    /* 1: gemm != NULL and the attention GEMMs (per (batch, head): QK^T, PV and the four of the
     * backward) run it too (cpu_attention.c), unless cfg.cpu.attn_sgemm at creation keeps
     * them on OpenBLAS. Fixed at creation: the attention scratch size depends on it. */
    int attn_gemm;
    /* 1 (cfg.cpu.unfused_epi at creation, for A/B runs and tests): the linear
     * layers run their bias/GELU/rounding epilogue as a separate pass after the GEMM even where
     * the engine can fuse it into its tile stores (run_ep); the bits are the same either way. */
    int no_fused_epi;
    /* act16 only: per GEMM worker (gemm_slots), SV_CPU_ACT16_FLOATS floats: the fp32 strip a
     * linear layer's GEMM writes before its epilogue narrows it into the bf16 output, and one
     * fp32 row (the widened bias); cpu_linear.c */
    float *act16_buf;
} sv_cpu_backend;

/* Widest linear output (columns) with bf16 storage, and the fp32 strip of each worker. */
#define SV_CPU_ACT16_WIDE 65536
#define SV_CPU_ACT16_STRIP ((size_t)1 << 19)
#define SV_CPU_ACT16_FLOATS (SV_CPU_ACT16_STRIP + (size_t)SV_CPU_ACT16_WIDE)

/* A GEMM operand view (gemm_engine.h) of a compute buffer, in its storage. */
static inline sv_gemm_mat sv_cpu_cmat(const sv_cpu_backend *c, const void *p, size_t ld, int red_contig) {
    return c->act16 ? sv_gemm_h16((const uint16_t *)p, ld, red_contig) : sv_gemm_f32((const float *)p, ld, red_contig);
}

/* Capacity of the packed shared GEMM operand: a bf16 weight of up to ~4M elements (ViT-B's
 * 3072 x 768 fc1; half that for an fp32 engine) packs in one piece; larger operands are packed
 * in reduction chunks. */
#define SV_CPU_GEMM_PACK_BYTES ((size_t)8 << 20)

static inline sv_cpu_backend *sv_cpu(sv_backend *be) { return (sv_cpu_backend *)be; }
static inline const sv_cpu_backend *sv_cpu_c(const sv_backend *be) { return (const sv_cpu_backend *)be; }

/* Worker t's slot of gemm_scratch (t < gemm_slots; gemm != NULL only). */
void *sv_cpu_gemm_scratch(const sv_cpu_backend *c, int t);

/* Elements per stack chunk of an act16 element-wise op (widen, compute, narrow). */
#define SV_CPU_CHUNK 2048
/* Longest row an act16 row-wise op (LayerNorm, softmax) widens onto the stack. */
#define SV_CPU_ROW_MAX 16384

/* The act16 loop: BODY runs once per chunk [o, o + len) of [i0, i1), len <= SV_CPU_CHUNK, in
 * order (o and len are size_t names the macro declares). A BODY widens the chunk's compute
 * inputs into stack buffers (sv_cpu_widen), runs the fp32 kernel on them and narrows its
 * outputs (sv_cpu_narrow); chunks never change a result (the kernels are element-wise, and
 * any reduction a BODY carries across chunks keeps its element order). */
#define SV_CPU_CHUNKS(i0, i1, o, len, BODY) \
    for (size_t o = (i0), len = 0; o < (size_t)(i1); o += len) { \
        len = (size_t)(i1)-o < SV_CPU_CHUNK ? (size_t)(i1)-o : SV_CPU_CHUNK; \
        BODY; \
    }

/* act16: buf (n) = the fp32 values of elements [off, off + n) of the bf16 buffer src; returns buf. */
static inline float *sv_cpu_widen(const sv_cpu_backend *c, float *buf, const void *src, size_t off, size_t n) {
    c->k->widen(buf, (const uint16_t *)src + off, n);
    return buf;
}
/* act16: elements [off, off + n) of the bf16 buffer dst = buf (n), already bf16 values (exact). */
static inline void sv_cpu_narrow(const sv_cpu_backend *c, void *dst, size_t off, const float *buf, size_t n) {
    c->k->narrow((uint16_t *)dst + off, buf, n);
}
/* One loop for both storages: elements [off, off + n) of a compute buffer as fp32 values to read:
 * the buffer itself with fp32 storage, buf holding them widened with bf16 storage. */
static inline const float *sv_cpu_rd(const sv_cpu_backend *c, float *buf, const void *src, size_t off, size_t n) {
    return c->act16 ? sv_cpu_widen(c, buf, src, off, n) : (const float *)src + off;
}
/* ... and to write: the buffer itself (fp32), or buf (bf16; holding the widened values when
 * `load`, for ops that update in place) that sv_cpu_wr_end then narrows into the buffer. */
static inline float *sv_cpu_wr(const sv_cpu_backend *c, float *buf, void *dst, size_t off, size_t n, int load) {
    if (!c->act16) return (float *)dst + off;
    if (load) sv_cpu_widen(c, buf, dst, off, n);
    return buf;
}
static inline void sv_cpu_wr_end(const sv_cpu_backend *c, void *dst, size_t off, const float *buf, size_t n) {
    if (c->act16) sv_cpu_narrow(c, dst, off, buf, n);
}
/* act16 row-wise ops widen whole rows onto the stack: SV_ERR_UNSUPPORTED naming `op` when a
 * row of `len` elements is longer than SV_CPU_ROW_MAX; SV_OK otherwise and without act16. */
static inline sv_status sv_cpu_row_fits(const sv_cpu_backend *c, const char *op, int len) {
    if (c->act16 && len > SV_CPU_ROW_MAX)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "cpu backend: %s: rows of %d elements exceed the %d that bf16 storage supports "
                       "(SHARDVIT_CPU_BF16_STORAGE=0 keeps fp32 storage)",
                       op, len, SV_CPU_ROW_MAX);
    return SV_OK;
}

/* The value an op stores into a compute buffer: v itself (fp32) or its nearest bf16. */
static inline float sv_cpu_store(int bf16, float v) { return bf16 ? sv_round_bf16(v) : v; }

/* Element i of a compute buffer in either storage, for the ops whose loops are not in the kernel
 * tables (losses, embedding, recipe ops): its fp32 value (exact), and storing v as every op
 * stores it (sv_cpu_store; with bf16 storage the narrowing is that same rounding, so both
 * storages hold the same value). One loop serves both storages. */
static inline float sv_cpu_ld(const sv_cpu_backend *c, const void *p, size_t i) {
    return c->act16 ? sv_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static inline void sv_cpu_st(const sv_cpu_backend *c, void *p, size_t i, float v) {
    if (c->act16)
        ((uint16_t *)p)[i] = sv_f32_to_bf16(v);
    else
        ((float *)p)[i] = sv_cpu_store(c->bf16, v);
}

/* Threads worth using for a loop of `work` scalar operations: forking costs a few
 * microseconds, so small loops stay on the calling thread. */
static inline int sv_cpu_nt(const sv_cpu_backend *c, size_t work) {
    return (c->op_threads > 1 && work >= 32768) ? c->op_threads : 1;
}

/* Run the element-wise kernels of instruction set `isa` ("generic" | "avx2" | "avx512" |
 * "auto"); SV_ERR_UNSUPPORTED when this CPU lacks it. All variants give identical bits; this
 * exists for tests and A/B benchmarks (also: cfg.cpu.isa at creation). */
sv_status sv_cpu_backend_set_isa(sv_backend *be, const char *isa);

/* Split [0, n) into nt near-equal contiguous ranges; range t is [*a, *b). */
/* The first statement of each `#pragma omp parallel num_threads(nt)` region that splits its work
 * for nt workers by thread number (cpu_linear.c; `parallel for` loops distribute their iterations
 * over any team and need none): the team must have nt threads. The backend turns dynamic teams
 * off and keeps its thread counts within OpenMP's limits (cpu_backend.c), so a smaller team means
 * the runtime could not start a thread: sv_cpu_team_short then stops the process with a message
 * instead of leaving the missing workers' rows uncomputed (OMP_DYNAMIC=true once did that: other
 * losses and accuracies, exit 0). Needs <omp.h>. */
#define SV_CPU_TEAM(nt) \
    do { \
        if (omp_get_num_threads() != (nt)) sv_cpu_team_short((nt), omp_get_num_threads()); \
    } while (0)
void sv_cpu_team_short(int want, int got) __attribute__((noreturn));

static inline void sv_cpu_range(size_t n, int nt, int t, size_t *a, size_t *b) {
    *a = n * (size_t)t / (size_t)nt;
    *b = n * (size_t)(t + 1) / (size_t)nt;
}

/* The element-wise ops: [0, n) cut into one equal range [a, b) per worker (the worker count from
 * the op's cost, sv_cpu_nt), BODY run on each (it may use a, b and t_). */
#define CPU_SPLIT(c, n, cost, BODY) \
    do { \
        int nt_ = sv_cpu_nt(c, cost); \
        _Pragma("omp parallel for num_threads(nt_) schedule(static)") for (int t_ = 0; t_ < nt_; t_++) { \
            size_t a, b; \
            sv_cpu_range(n, nt_, t_, &a, &b); \
            BODY; \
        } \
    } while (0)

/* OpenBLAS's thread count outside parallel regions for this backend's GEMM mode. */
static inline int sv_cpu_blas_default(const sv_cpu_backend *c) { return c->gemm_split ? 1 : c->threads; }

/* OpenBLAS's worker count is process-wide; ops set it around regions that call sgemm from
 * several OpenMP threads at once (one BLAS thread each) and restore it afterwards. */
void sv_cpu_blas_threads(int n);

/* Op entry points, grouped by file. */
/* cpu_linear.c */
sv_status sv_cpu_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                            int M, int N, int K);
sv_status sv_cpu_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in,
                            const void *W, const void *pre_gelu, int M, int N, int K);
/* cpu_eltwise.c */
sv_status sv_cpu_gelu_fwd(sv_backend *be, void *out, const void *x, size_t n);
sv_status sv_cpu_gelu_bwd(sv_backend *be, void *d_x, const void *d_out, const void *x, size_t n);
sv_status sv_cpu_residual_add(sv_backend *be, void *out, const void *a, const void *b, size_t n);
/* cpu_norm.c */
sv_status sv_cpu_layernorm_fwd(sv_backend *be, void *out, float *mean, float *rstd, const void *x, const void *w,
                               const void *b, int M, int C);
sv_status sv_cpu_layernorm_bwd(sv_backend *be, void *d_x, float *dw, float *db, const void *d_out, const void *x,
                               const void *w, const float *mean, const float *rstd, int M, int C);
/* SV_ERR_INVALID naming `op`, the sample and the label when a label (labels (B); NULL: none)
 * lies outside [0, K): the loss ops' shared input check. */
sv_status sv_cpu_check_labels(const char *op, const int32_t *labels, int B, int K);
sv_status sv_cpu_softmax_xent(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                              const float *soft_targets, int B, int K, float smoothing, float grad_scale);
/* cpu_attention.c. Sizes (sv_cpu_sizes): `attn` is the engine running the attention GEMMs
 * (NULL: sgemm), `act16` bf16 storage, `workers` = max(threads, op_threads). */
size_t sv_cpu_attention_saved_for(int B, int T, int H);
size_t sv_cpu_attention_scratch_for(const sv_gemm_engine *attn, int act16, int workers, int T, int dh);
sv_status sv_cpu_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                               int D, int H, const sv_drop *drop);
sv_status sv_cpu_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                               const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop);
/* cpu_embed.c */
sv_status sv_cpu_im2col(sv_backend *be, void *patches, const float *img, int B, int C, int Himg, int Wimg, int p);
sv_status sv_cpu_embed_fwd(sv_backend *be, void *x, const void *patch_out, const void *cls, const void *reg, int R,
                           const void *pos, int no_embed_class, int B, int T, int D);
sv_status sv_cpu_embed_bwd(sv_backend *be, void *d_patch_out, float *d_cls, float *d_reg, int R, float *d_pos,
                           int no_embed_class, const void *dx, int B, int T, int D);
sv_status sv_cpu_cls_select(sv_backend *be, void *out, const void *x, int B, int T, int D);
sv_status sv_cpu_cls_select_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D);
/* cpu_recipe.c */
sv_status sv_cpu_drop(sv_backend *be, void *x, const sv_drop *d, int B, size_t n, size_t group);
sv_status sv_cpu_scale_cols(sv_backend *be, void *out, const void *x, const void *gamma, int M, int D);
sv_status sv_cpu_scale_cols_bwd(sv_backend *be, void *d_x, float *d_gamma, const void *d_out, const void *x,
                                const void *gamma, int M, int D);
sv_status sv_cpu_token_mean(sv_backend *be, void *out, const void *x, int B, int T, int D, int first);
sv_status sv_cpu_token_mean_bwd(sv_backend *be, void *dx, const void *d_out, int B, int T, int D, int first);
sv_status sv_cpu_sigmoid_bce(sv_backend *be, float *losses, void *d_logits, const void *logits, const int32_t *labels,
                             const float *soft_targets, int B, int K, float smoothing, float target_thresh,
                             int sum_classes, float grad_scale);

#endif
