/* CPU backend: multi-head self-attention (non-causal) with explicit probabilities.
 *
 * Per (batch, head) pair, with q/k/v read in place from qkv (B,T,3D) through leading
 * dimensions (row stride 3D; q at column h*dh, k at D + h*dh, v at 2D + h*dh):
 *   forward:  P = softmax(q k^T * scale) (saved, f32),  O = P v
 *   backward: dV = P^T dO,  dP = dO v^T,  dS = P * (dP - rowsum(dP * P)),
 *             dQ = dS k * scale,  dK = dS^T q * scale
 * Pairs are spread over the OpenMP workers; each pair is computed entirely by one worker, so
 * results do not depend on the worker count. The six per-pair GEMMs run either
 * single-threaded OpenBLAS sgemm, or (c->attn_gemm) the backend's GEMM engine (gemm_engine.h),
 * one-shot on the worker. A bf16 engine rounds its operands to bf16 when packing: q, k, v and dO
 * are already bf16 in bf16 mode (exact), P and dS are not (they get rounded as GEMM inputs; the
 * saved P, the softmax and its backward stay fp32). The scale is applied to the fp32 GEMM
 * result, as sgemm's alpha is. Only O and d_qkv are rounded as outputs in bf16 mode.
 *
 * Attention-probability dropout (drop != NULL, backend.h sv_be_attention_fwd_drop): the forward
 * writes P' = P * M into the worker's tile and multiplies P' v; the saved P stays the softmax.
 * The backward rebuilds P' in the tile for dV = P'^T dO, then overwrites it with dP' = dO v^T,
 * multiplies by M again (dP) and runs the softmax backward against P. M is recomputed from
 * (key, sample, head, row, column), nothing is stored. */
#include <cblas.h>
#include <math.h>

#include "core/checked.h"
#include "core/elementwise.h"
#include "model/backend/cpu/cpu_backend.h"

static size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

/* Per-worker scratch: a (T,T) fp32 tile (dP, then dS in place), followed, when the GEMM engine
 * runs attention, by the packed B operand of one head GEMM (k or v for the forward; dO, v, k,
 * q for the backward: at most max(pack(T, dh), pack(dh, T)) bytes), and with bf16 storage by a
 * (T, dh) fp32 stage that a head's output GEMM writes before it is narrowed into the bf16
 * output (O, dQ, dK, dV). All 256-byte aligned. */
static size_t tile_bytes(int T) { return align256((size_t)T * T * sizeof(float)); }
static size_t pack_area_bytes(const sv_gemm_engine *e, int T, int dh) {
    size_t a = e->pack_bytes(T, dh), b = e->pack_bytes(dh, T);
    return align256(a > b ? a : b);
}
static size_t stage_bytes(int T, int dh) { return align256((size_t)T * dh * sizeof(float)); }
/* attn: the engine that runs the attention GEMMs, NULL for sgemm; act16: bf16 storage. */
static size_t worker_bytes_for(const sv_gemm_engine *attn, int act16, int T, int dh) {
    return tile_bytes(T) + (attn ? pack_area_bytes(attn, T, dh) : 0) + (act16 ? stage_bytes(T, dh) : 0);
}
static size_t worker_bytes(const sv_cpu_backend *c, int T, int dh) {
    return worker_bytes_for(c->attn_gemm ? c->gemm : NULL, c->act16, T, dh);
}

/* Both SIZE_MAX when the size does not fit in 64 bits (a plan of a huge micro-batch; sv_vit_carve
 * refuses it), never a wrapped, small size. */
size_t sv_cpu_attention_saved_for(int B, int T, int H) {
    uint64_t bh, n; /* probabilities P (B,H,T,T) f32 */
    if (!sv_mul_u64((uint64_t)B, (uint64_t)H, &bh) || !sv_mul3_u64(bh, (uint64_t)T, (uint64_t)T, &n) ||
        !sv_mul_u64(n, sizeof(float), &n))
        return SIZE_MAX;
    return (size_t)n;
}
size_t sv_cpu_attention_scratch_for(const sv_gemm_engine *attn, int act16, int workers, int T, int dh) {
    uint64_t n;
    return sv_mul_u64(worker_bytes_for(attn, act16, T, dh), (uint64_t)workers, &n) ? (size_t)n : SIZE_MAX;
}

/* Round a (rows, cols) block with row stride ld in place (bf16 mode only). */
static void round_strided(const sv_cpu_backend *c, float *p, int rows, int cols, int ld) {
    if (!c->bf16) return;
    for (int r = 0; r < rows; r++) c->k->round_bf16(p + (size_t)r * ld, (size_t)cols);
}

/* p (rows, cols; row stride ld) = store(p * scale): the alpha of the engine path. */
static void scale_strided(int bf, float *p, int rows, int cols, int ld, float scale) {
    for (int r = 0; r < rows; r++) {
        float *row = p + (size_t)r * ld;
        for (int j = 0; j < cols; j++) row[j] = sv_cpu_store(bf, row[j] * scale);
    }
}

/* dst (T,T) = src * M for pair (b, h): M[i,j] = sv_drop_mult(key, sample0 + b, (h T + i) T + j,
 * keep). dst may alias src. */
static void drop_tile(float *dst, const float *src, const sv_drop *d, int b, int h, int T) {
    uint64_t sample = d->sample0 + (uint64_t)b, unit0 = (uint64_t)h * (uint64_t)T * (uint64_t)T;
    for (size_t e = 0; e < (size_t)T * T; e++) dst[e] = src[e] * sv_drop_mult(d->key, sample, unit0 + e, d->keep);
}

/* Split pairs [0, n) into nt contiguous ranges; range t is [*a, *b). */
static void split(int n, int nt, int t, int *a, int *b) {
    *a = (int)((long)n * t / nt);
    *b = (int)((long)n * (t + 1) / nt);
}

/* Workers for `pairs` (batch, head) pairs; the engine path also needs one of the backend's
 * GEMM scratch slots per worker. */
static int workers(const sv_cpu_backend *c, int pairs) {
    int nt = c->op_threads < pairs ? c->op_threads : pairs;
    if (c->attn_gemm && nt > c->gemm_slots) nt = c->gemm_slots;
    return nt;
}

/* Prefetch rows [0, rows) x cols elements of es bytes (row stride ld elements) towards L2. The
 * engine path reads each head's operands first in its packing loops, which stall on every new
 * row of a buffer too large for the cache; fetching the next pair's rows while this one
 * computes hides that. */
static void prefetch_rows(const void *p, int rows, int cols, size_t ld, size_t es) {
    const char *b = p;
    for (int r = 0; r < rows; r++)
        for (size_t j = 0; j < (size_t)cols * es; j += 64) __builtin_prefetch(b + ((size_t)r * ld) * es + j, 0, 2);
}

/* Element `off` of a compute buffer in its storage (es bytes per element). */
static const void *cat(const void *p, size_t off, size_t es) { return (const char *)p + off * es; }

/* Narrow a (T, dh) fp32 stage (row stride dh) into rows of a bf16 buffer (row stride ld). */
static void narrow_rows(const sv_cpu_backend *c, uint16_t *dst, size_t ld, const float *stage, int T, int dh) {
    for (int r = 0; r < T; r++) c->k->narrow(dst + (size_t)r * ld, stage + (size_t)r * dh, (size_t)dh);
}

/* Offset of pair i's head (batch i / H, head i % H) in a (B, T, row) buffer whose heads are
 * dh wide: q in qkv (row 3D), the output or dO (row D). */
static size_t head_off(int i, int H, int T, int row, int dh) {
    return (size_t)(i / H) * T * row + (size_t)(i % H) * dh;
}

/* Prefetch the q, k and v heads of one pair (q at qn, row stride 3D) towards L2. */
static void prefetch_qkv(const void *qn, int T, int D, int dh, size_t es) {
    for (int x = 0; x < 3; x++) prefetch_rows(cat(qn, (size_t)x * D, es), T, dh, (size_t)3 * D, es);
}

/* The work of one worker: pairs [i0, i1) on worker t, whose scratch is `tile` (a (T, T) fp32
 * tile) followed by `pack` (the packed-B area of the engine path). */
typedef void (*pairs_fn)(const void *ctx, int t, float *tile, void *pack, int i0, int i1);

/* Spread `pairs` (batch, head) pairs over the workers in contiguous ranges (split), each range
 * run by fn on one worker with its slice of `scratch` (worker_bytes each). On the sgemm path
 * with several workers, OpenBLAS runs single-threaded meanwhile and gets the backend's default
 * back after. */
static void for_pairs(const sv_cpu_backend *c, void *scratch, int pairs, int T, int dh, pairs_fn fn, const void *ctx) {
    const size_t wb = worker_bytes(c, T, dh);
    const int nt = workers(c, pairs), blas1 = nt > 1 && !c->attn_gemm;
    if (blas1) sv_cpu_blas_threads(1);
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        float *tile = (float *)((char *)scratch + (size_t)t * wb);
        int i0, i1;
        split(pairs, nt, t, &i0, &i1);
        fn(ctx, t, tile, (char *)tile + tile_bytes(T), i0, i1);
    }
    if (blas1) sv_cpu_blas_threads(sv_cpu_blas_default(c));
}

/* What every pair of one attention call shares, built once by the driver (call_of): the
 * backend, the dropout (nullable), sequence T, width D, heads H, head width dh = D / H, qkv row
 * stride ld = 3D, whether the GEMM engine runs the pair GEMMs (bfa), the storage bytes per
 * element es (2 with bf16 storage) and the score scale 1/sqrt(dh). */
typedef struct attn_call {
    const sv_cpu_backend *c;
    const sv_drop *drop;
    int T, D, H, dh, ld, bfa;
    size_t es;
    float scale;
} attn_call;

static attn_call call_of(sv_backend *be, int T, int D, int H, const sv_drop *drop) {
    const sv_cpu_backend *c = sv_cpu(be);
    const int dh = D / H;
    return (attn_call){.c = c,
                       .drop = drop,
                       .T = T,
                       .D = D,
                       .H = H,
                       .dh = dh,
                       .ld = 3 * D,
                       .bfa = c->attn_gemm,
                       .es = c->act16 ? 2 : 4,
                       .scale = 1.0f / sqrtf((float)dh)};
}

typedef struct fwd_ctx {
    attn_call a;
    void *out;
    float *Pall;
    const void *qkv;
} fwd_ctx;

static void fwd_pairs(const void *ctx, int t, float *tile, void *pack, int i0, int i1) {
    const fwd_ctx *x = ctx;
    const attn_call *a = &x->a;
    const sv_cpu_backend *c = a->c;
    const sv_drop *drop = a->drop;
    const int T = a->T, D = a->D, H = a->H, dh = a->dh, ld = a->ld;
    const size_t es = a->es;
    float *stage = c->act16 ? (float *)((char *)pack + pack_area_bytes(c->gemm, T, dh)) : NULL;
    for (int i = i0; i < i1; i++) {
        const size_t qoff = head_off(i, H, T, ld, dh), ooff = head_off(i, H, T, D, dh);
        float *P = x->Pall + (size_t)i * T * T, *Pd = drop ? tile : P; /* Pd: what multiplies v */
        if (a->bfa) {
            if (i + 1 < i1)
                prefetch_qkv(cat(x->qkv, head_off(i + 1, H, T, ld, dh), es), T, D, dh, es); /* the next pair */
            const sv_gemm_mat Aq = sv_cpu_cmat(c, cat(x->qkv, qoff, es), (size_t)ld, 1);
            const sv_gemm_mat Bk = sv_cpu_cmat(c, cat(x->qkv, qoff + D, es), (size_t)ld, 1);
            const sv_gemm_mat Ap = sv_gemm_f32(Pd, (size_t)T, 1);
            const sv_gemm_mat Bv = sv_cpu_cmat(c, cat(x->qkv, qoff + 2 * (size_t)D, es), (size_t)ld, 0);
            sv_gemm_engine_gemm(c->gemm, P, (size_t)T, Aq, T, Bk, T, dh, 0, pack, sv_cpu_gemm_scratch(c, t));
            c->k->softmax_rows(P, T, T, a->scale);
            if (drop) drop_tile(tile, P, drop, i / H, i % H, T);
            if (c->act16) {
                sv_gemm_engine_gemm(c->gemm, stage, (size_t)dh, Ap, T, Bv, dh, T, 0, pack, sv_cpu_gemm_scratch(c, t));
                narrow_rows(c, (uint16_t *)x->out + ooff, (size_t)D, stage, T, dh);
                continue;
            }
            sv_gemm_engine_gemm(c->gemm, (float *)x->out + ooff, (size_t)D, Ap, T, Bv, dh, T, 0, pack,
                                sv_cpu_gemm_scratch(c, t));
        } else {
            const float *q = (const float *)x->qkv + qoff, *k = q + D, *v = q + 2 * D;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, a->scale, q, ld, k, ld, 0.0f, P, T);
            c->k->softmax_rows(P, T, T, 1.0f);
            if (drop) drop_tile(tile, P, drop, i / H, i % H, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, 1.0f, Pd, T, v, ld, 0.0f,
                        (float *)x->out + ooff, D);
        }
        round_strided(c, (float *)x->out + ooff, T, dh, D);
    }
}

sv_status sv_cpu_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                               int D, int H, const sv_drop *drop) {
    const fwd_ctx x = {call_of(be, T, D, H, drop), out, saved, qkv};
    for_pairs(x.a.c, scratch, B * H, T, x.a.dh, fwd_pairs, &x);
    return SV_OK;
}

typedef struct bwd_ctx {
    attn_call a;
    void *d_qkv;
    const void *qkv, *d_out;
    const float *Pall;
} bwd_ctx;

/* One pair on the attention GEMM engine, for either storage. Each output GEMM writes fp32:
 * with fp32 storage into d_qkv itself (row stride 3D), then scaled / rounded in place; with bf16
 * storage into the fp32 stage, scaled there and narrowed into d_qkv (rounded once by the
 * narrowing). Operands are fp32 or bf16 views of the same values. */
typedef struct pair_io {
    const sv_cpu_backend *c;
    float *stage; /* bf16 storage: (T, dh) fp32; fp32 storage: NULL */
    int T, dh, ld;
} pair_io;

static sv_gemm_mat io_view(const pair_io *io, const void *p, size_t ld, int red_contig) {
    return io->stage ? sv_gemm_h16(p, ld, red_contig) : sv_gemm_f32(p, ld, red_contig);
}

/* where an output GEMM writes (C, ldc) */
static float *io_out(const pair_io *io, void *dst, size_t *ldc) {
    *ldc = io->stage ? (size_t)io->dh : (size_t)io->ld;
    return io->stage ? io->stage : (float *)dst;
}

/* the output GEMM's result -> dst: times `scale` unless it is 1, rounded to the compute dtype */
static void io_finish(const pair_io *io, void *dst, float scale) {
    const sv_cpu_backend *c = io->c;
    if (!io->stage) {
        if (scale != 1.0f)
            scale_strided(c->bf16, dst, io->T, io->dh, io->ld, scale);
        else
            round_strided(c, dst, io->T, io->dh, io->ld);
        return;
    }
    if (scale != 1.0f) scale_strided(0, io->stage, io->T, io->dh, io->dh, scale);
    narrow_rows(c, dst, (size_t)io->ld, io->stage, io->T, io->dh);
}

static void bwd_pair_eng(int t, float *dS, void *pack, const bwd_ctx *x, int i, const float *Pd) {
    const attn_call *a = &x->a;
    const sv_cpu_backend *c = a->c;
    const int T = a->T, D = a->D, H = a->H, dh = a->dh, ld = a->ld;
    const size_t es = a->es, qoff = head_off(i, H, T, ld, dh), L = (size_t)ld;
    const void *q = cat(x->qkv, qoff, es), *k = cat(q, D, es), *v = cat(q, 2 * (size_t)D, es);
    const void *dO = cat(x->d_out, head_off(i, H, T, D, dh), es);
    void *dq = (char *)x->d_qkv + qoff * es, *dk = (char *)dq + (size_t)D * es, *dv = (char *)dq + 2 * (size_t)D * es;
    const pair_io io = {c, c->act16 ? (float *)((char *)pack + pack_area_bytes(c->gemm, T, dh)) : NULL, T, dh, ld};
    void *gs = sv_cpu_gemm_scratch(c, t);
    size_t ldc;
    float *C = io_out(&io, dv, &ldc);
    sv_gemm_engine_gemm(c->gemm, C, ldc, sv_gemm_f32(Pd, (size_t)T, 0), T, io_view(&io, dO, (size_t)D, 0), dh, T, 0,
                        pack, gs);
    io_finish(&io, dv, 1.0f);
    sv_gemm_engine_gemm(c->gemm, dS, (size_t)T, io_view(&io, dO, (size_t)D, 1), T, io_view(&io, v, L, 1), T, dh, 0,
                        pack, gs);
    if (a->drop) drop_tile(dS, dS, a->drop, i / H, i % H, T); /* dP = dP' * M */
    c->k->softmax_bwd_rows(dS, x->Pall + (size_t)i * T * T, T, T);
    C = io_out(&io, dq, &ldc);
    sv_gemm_engine_gemm(c->gemm, C, ldc, sv_gemm_f32(dS, (size_t)T, 1), T, io_view(&io, k, L, 0), dh, T, 0, pack, gs);
    io_finish(&io, dq, a->scale);
    C = io_out(&io, dk, &ldc);
    sv_gemm_engine_gemm(c->gemm, C, ldc, sv_gemm_f32(dS, (size_t)T, 0), T, io_view(&io, q, L, 0), dh, T, 0, pack, gs);
    io_finish(&io, dk, a->scale);
}

static void bwd_pairs(const void *ctx, int t, float *dS, void *pack, int i0, int i1) {
    const bwd_ctx *x = ctx;
    const attn_call *a = &x->a;
    const sv_cpu_backend *c = a->c;
    const sv_drop *drop = a->drop;
    const int T = a->T, D = a->D, H = a->H, dh = a->dh, ld = a->ld;
    const size_t es = a->es;
    for (int i = i0; i < i1; i++) {
        const int b = i / H, h = i % H;
        const size_t qoff = head_off(i, H, T, ld, dh);
        const float *P = x->Pall + (size_t)i * T * T, *Pd = P; /* Pd: P' = P * M with dropout */
        if (drop) {
            drop_tile(dS, P, drop, b, h, T);
            Pd = dS; /* used by the dV GEMM before dS is overwritten */
        }
        if (a->bfa && i + 1 < i1) { /* q, k, v, dO and P of the next pair */
            prefetch_qkv(cat(x->qkv, head_off(i + 1, H, T, ld, dh), es), T, D, dh, es);
            prefetch_rows(cat(x->d_out, head_off(i + 1, H, T, D, dh), es), T, dh, (size_t)D, es);
            prefetch_rows(P + (size_t)T * T, 1, T * T, 0, sizeof(float));
        }
        if (a->bfa) {
            bwd_pair_eng(t, dS, pack, x, i, Pd);
            continue;
        }
        const float *q = (const float *)x->qkv + qoff, *k = q + D, *v = q + 2 * D;
        float *dq = (float *)x->d_qkv + qoff, *dk = dq + D, *dv = dq + 2 * D;
        const float *dO = (const float *)x->d_out + head_off(i, H, T, D, dh);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, dh, T, 1.0f, Pd, T, dO, D, 0.0f, dv, ld);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, 1.0f, dO, D, v, ld, 0.0f, dS, T);
        if (drop) drop_tile(dS, dS, drop, b, h, T); /* dP = dP' * M */
        c->k->softmax_bwd_rows(dS, P, T, T);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, a->scale, dS, T, k, ld, 0.0f, dq, ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, dh, T, a->scale, dS, T, q, ld, 0.0f, dk, ld);
        round_strided(c, dq, T, dh, ld);
        round_strided(c, dk, T, dh, ld);
        round_strided(c, dv, T, dh, ld);
    }
}

sv_status sv_cpu_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                               const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop) {
    (void)out; /* rowsum(dP * P) is taken from dP and P directly */
    const bwd_ctx x = {call_of(be, T, D, H, drop), d_qkv, qkv, d_out, saved};
    for_pairs(x.a.c, scratch, B * H, T, x.a.dh, bwd_pairs, &x);
    return SV_OK;
}
