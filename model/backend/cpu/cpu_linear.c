/* CPU backend: linear layers (a packed-GEMM engine of gemm_engine.h, or OpenBLAS sgemm, + fused
 * epilogues). */
#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "model/backend/cpu/cpu_backend.h"

/* Rows per epilogue slice: small enough that a slice of the GEMM output is still in L2 when
 * the bias/GELU/rounding loop reads it back, large enough that sgemm stays efficient. */
#define SV_CPU_LINEAR_ROWS 256

/* Epilogue over rows [m0, m1) of out (M,N) on the calling thread: bias, optional GELU
 * (pre-activation saved), bf16 rounding. GELU is applied to the unrounded fp32 sum, as a
 * fused GPU epilogue does. */
static void epilogue_rows(const sv_cpu_backend *c, float *out, float *pre, const float *bias, int m0, int m1, int N) {
    const int bf = c->bf16;
    for (int m = m0; m < m1; m++) {
        float *o = out + (size_t)m * N;
        if (pre)
            c->k->bias_gelu(bf, o, pre + (size_t)m * N, bias, (size_t)N);
        else
            c->k->bias_store(bf, o, bias, (size_t)N);
    }
}

/* Workers (at most nt) for a GEMM of m*n*k multiply-adds whose split dimension has `split`
 * entries: each worker needs enough rows to keep the GEMM efficient. */
static int split_threads(int nt, int split, double mnk) {
    if (mnk < 4e6) return 1;
    while (nt > 1 && split / nt < 32) nt--;
    return nt;
}

/* sgemm path: split across the OpenMP workers only in gemm_split mode. */
static int gemm_threads(const sv_cpu_backend *c, int split, double mnk) {
    return split_threads(c->gemm_split ? c->op_threads : 1, split, mnk);
}

/* ---- engine path (c->gemm; see gemm_engine.h) ----
 * The shared operand (W, or `in` for dW) is packed once per call into c->gemm_pack, the
 * workers packing disjoint column panels, then each worker computes its own rows with its own
 * scratch. An operand larger than the pack buffer is processed in chunks of the reduction
 * dimension (multiples of the engine's red_block, so the chunking does not change a sum); the
 * chunking depends only on the shapes, and the engine carries each output's fp32 sum across
 * chunks unchanged, so results are bitwise independent of the worker count. */

/* Engine path: always split, over at most gemm_slots workers (one scratch slot each). */
static int eng_threads(const sv_cpu_backend *c, int split, double mnk) {
    return split_threads(c->op_threads < c->gemm_slots ? c->op_threads : c->gemm_slots, split, mnk);
}

/* Reduction length per chunk so that the packed operand (n columns) fits the pack buffer. */
static int eng_chunk(const sv_cpu_backend *c, int n, int r) {
    const int rb = c->gemm->red_block;
    size_t per = c->gemm->pack_bytes(n, rb); /* bytes per red_block reduction entries */
    size_t blocks = per ? SV_CPU_GEMM_PACK_BYTES / per : (size_t)r;
    if (blocks < 1) blocks = 1;
    return (size_t)r <= blocks * rb ? r : (int)(blocks * rb);
}

/* Worker t of nt packs its share of the panels of B (n columns) for reduction [r0, r0 + rl). */
static void eng_pack_share(const sv_cpu_backend *c, sv_gemm_mat B, int n, int rl, int t, int nt) {
    const int nr = c->gemm->nr, npan = (n + nr - 1) / nr;
    int p0 = (int)((long)npan * t / nt), p1 = (int)((long)npan * (t + 1) / nt);
    if (p1 > p0) c->gemm->pack(c->gemm_pack, B, n, rl, p0 * nr, p1 * nr);
}

/* Offset a view to reduction index r0. */
static sv_gemm_mat eng_at(sv_gemm_mat v, int r0) {
    return sv_gemm_mat_off(v, v.red_contig ? (size_t)r0 : (size_t)r0 * v.ld);
}
/* Offset a view to row (or column) i. */
static sv_gemm_mat eng_row(sv_gemm_mat v, size_t i) { return sv_gemm_mat_off(v, v.red_contig ? i * v.ld : i); }

/* The epilogue callback of the engine's run_ep (gemm_engine.h): rows [i, i + rows) of the call's
 * C (ep->out, ep->pre: row 0 of the call), the same kernels as epilogue_rows. */
static void eng_epi(const sv_gemm_epi *ep, int i, int rows) {
    const sv_cpu_kernels *k = ep->k;
    for (int m = i; m < i + rows; m++) {
        float *o = ep->out + (size_t)m * ep->ld;
        if (ep->pre)
            k->bias_gelu(ep->bf, o, ep->pre + (size_t)m * ep->ld, ep->bias, (size_t)ep->n);
        else
            k->bias_store(ep->bf, o, ep->bias, (size_t)ep->n);
    }
}

/* The epilogue for rows starting at `row` of out (and pre), or NULL when the engine cannot fuse
 * one (then the caller runs it as a separate pass). */
static const sv_gemm_epi *eng_epi_at(const sv_cpu_backend *c, sv_gemm_epi *ep, float *out, float *pre,
                                     const float *bias, int n, size_t row) {
    if (!c->gemm->run_ep || c->no_fused_epi) return NULL;
    *ep = (sv_gemm_epi){.fn = eng_epi,
                        .out = out + row * (size_t)n,
                        .pre = pre ? pre + row * (size_t)n : NULL,
                        .bias = bias,
                        .ld = (size_t)n,
                        .n = n,
                        .bf = c->bf16,
                        .k = c->k};
    return ep;
}

/* rows of C (this worker's) = / += A B over one reduction chunk, with the epilogue `ep` (may be
 * NULL) on the last chunk only. */
static void eng_run(const sv_cpu_backend *c, float *C, size_t ldc, sv_gemm_mat A, int rows, int n, int rl,
                    int accumulate, void *scratch, const sv_gemm_epi *ep) {
    if (ep)
        c->gemm->run_ep(C, ldc, A, rows, c->gemm_pack, n, rl, accumulate, scratch, ep);
    else
        c->gemm->run(C, ldc, A, rows, c->gemm_pack, n, rl, accumulate, scratch);
}

/* Inside a parallel region of nt workers, worker t: rows [a, b) of C (n columns, row stride
 * ldc) = (or += when accumulate) A B over reduction length r, in chunks of kc (eng_chunk). All
 * workers pack their share of each chunk of B and meet at the barriers, whatever their rows.
 * `ep` (may be NULL): the epilogue the engine runs on the finished rows (last chunk only). */
static void eng_rows_chunked(const sv_cpu_backend *c, float *C, size_t ldc, sv_gemm_mat A, size_t a, size_t b,
                             sv_gemm_mat B, int n, int r, int kc, int accumulate, int t, int nt, void *scratch,
                             const sv_gemm_epi *ep) {
    for (int r0 = 0; r0 < r; r0 += kc) {
        int rl = r - r0 < kc ? r - r0 : kc;
        eng_pack_share(c, eng_at(B, r0), n, rl, t, nt);
#pragma omp barrier
        if (b > a) {
            sv_gemm_mat Am = eng_row(eng_at(A, r0), a); /* first row of this worker */
            eng_run(c, C + a * ldc, ldc, Am, (int)(b - a), n, rl, accumulate || r0 > 0, scratch,
                    r0 + rl == r ? ep : NULL);
        }
#pragma omp barrier
    }
}

static void linear_fwd_eng(const sv_cpu_backend *c, float *out, float *pre_gelu, const float *in, const float *W,
                           const float *bias, int M, int N, int K) {
    const sv_gemm_mat Bw = sv_gemm_f32(W, (size_t)K, 1), Ai = sv_gemm_f32(in, (size_t)K, 1);
    const int nt = eng_threads(c, M, (double)M * N * K), kc = eng_chunk(c, N, K);
#pragma omp parallel num_threads(nt)
    {
        SV_CPU_TEAM(nt);
        int t = nt > 1 ? omp_get_thread_num() : 0;
        size_t a, b;
        sv_cpu_range((size_t)M, nt, t, &a, &b);
        sv_gemm_epi epb;
        const sv_gemm_epi *ep = eng_epi_at(c, &epb, out, pre_gelu, bias, N, a);
        if (ep) {
            /* the engine runs the epilogue on each strip of rows it finishes: one call per chunk */
            eng_rows_chunked(c, out, (size_t)N, Ai, a, b, Bw, N, K, kc, 0, t, nt, sv_cpu_gemm_scratch(c, t), ep);
        } else {
            for (int r0 = 0; r0 < K; r0 += kc) {
                int rl = K - r0 < kc ? K - r0 : kc, last = r0 + rl == K;
                eng_pack_share(c, eng_at(Bw, r0), N, rl, t, nt);
#pragma omp barrier
                /* row slices so the epilogue reads each block of the output while it is cache-hot */
                for (int m0 = (int)a; m0 < (int)b; m0 += SV_CPU_LINEAR_ROWS) {
                    int mr = (int)b - m0 < SV_CPU_LINEAR_ROWS ? (int)b - m0 : SV_CPU_LINEAR_ROWS;
                    sv_gemm_mat Am = eng_row(eng_at(Ai, r0), (size_t)m0);
                    c->gemm->run(out + (size_t)m0 * N, (size_t)N, Am, mr, c->gemm_pack, N, rl, r0 > 0,
                                 sv_cpu_gemm_scratch(c, t));
                    if (last) epilogue_rows(c, out, pre_gelu, bias, m0, m0 + mr, N);
                }
#pragma omp barrier
            }
        }
    }
}

/* d_in (M,K) = d_out (M,N) W (N,K) on rows split across workers, then dW (N,K) += d_out^T in
 * on rows of dW split across workers (each summing over all M). */
static void linear_bwd_eng(const sv_cpu_backend *c, float *d_in, float *dW, const float *d_out, const float *in,
                           const float *W, int M, int N, int K) {
    const int nt_in = d_in ? eng_threads(c, M, (double)M * N * K) : 1;
    const int nt_w = eng_threads(c, N, (double)M * N * K);
    const int nt = nt_in > nt_w ? nt_in : nt_w;
    const int kc_in = eng_chunk(c, K, N), kc_w = eng_chunk(c, K, M);
    const sv_gemm_mat Bw = sv_gemm_f32(W, (size_t)K, 0), Ad = sv_gemm_f32(d_out, (size_t)N, 1);
    const sv_gemm_mat Bi = sv_gemm_f32(in, (size_t)K, 0), Adt = sv_gemm_f32(d_out, (size_t)N, 0);
#pragma omp parallel num_threads(nt)
    {
        SV_CPU_TEAM(nt);
        int t = nt > 1 ? omp_get_thread_num() : 0;
        size_t a, b;
        void *sc = sv_cpu_gemm_scratch(c, t);
        if (d_in) {
            sv_cpu_range((size_t)M, nt_in, t, &a, &b);
            if (t >= nt_in) a = b = 0;
            sv_gemm_epi epb;
            const sv_gemm_epi *ep = c->bf16 ? eng_epi_at(c, &epb, d_in, NULL, NULL, K, a) : NULL;
            eng_rows_chunked(c, d_in, (size_t)K, Ad, a, b, Bw, K, N, kc_in, 0, t, nt, sc, ep);
            if (b > a && c->bf16 && !ep) c->k->round_bf16(d_in + a * K, (b - a) * (size_t)K);
        }
        sv_cpu_range((size_t)N, nt_w, t, &a, &b);
        if (t >= nt_w) a = b = 0;
        eng_rows_chunked(c, dW, (size_t)K, Adt, a, b, Bi, K, M, kc_w, 1, t, nt, sc, NULL);
    }
}

/* ---- bf16 storage (act16; cpu_backend.h) ----
 * The engines write fp32 C; a bf16 output gets it through the worker's fp32 strip
 * (act16_buf): each call computes a strip of rows into it, and the epilogue (bias, GELU, the
 * bf16 rounding as the narrowing) writes the strip's rows to the bf16 output and
 * pre-activations. The kernels run with rounding off and the narrowing rounds once (round to
 * nearest even is idempotent), so every stored value is the one fp32 storage stores. */

/* Rows per strip for outputs of n columns: whole AMX strips (32 rows) where they fit. */
static int strip_rows(int n) {
    size_t r = SV_CPU_ACT16_STRIP / (size_t)n;
    if (r >= 256) return 256;
    return r >= 32 ? (int)(r / 32 * 32) : (int)(r / 8 * 8);
}

/* The act16 epilogue: rows [i, i + rows) of the strip (ep->out, row stride ep->ld) -> bias,
 * GELU, narrowed to ep->out16 / ep->pre16 (same rows), in one pass per row (epi_narrow). */
static void eng_epi16(const sv_gemm_epi *ep, int i, int rows) {
    const sv_cpu_kernels *k = ep->k;
    const size_t n = (size_t)ep->n;
    for (int m = i; m < i + rows; m++)
        k->epi_narrow(ep->out16 + (size_t)m * n, ep->pre16 ? ep->pre16 + (size_t)m * n : NULL,
                      ep->out + (size_t)m * ep->ld, ep->bias, n);
}

/* Inside a parallel region of nt workers, worker t: rows [a, b) of the bf16 output (n
 * columns; ep: out16/pre16 at row 0 of the whole output, bias widened or NULL) = A B over
 * reduction r, strip by strip through the worker's fp32 strip. Every worker walks the same
 * number of strips (`strips`, from the largest row range) so that they meet at the packing
 * barriers; with one reduction chunk B is packed once. */
static void eng_strips16(const sv_cpu_backend *c, const sv_gemm_epi *ep, sv_gemm_mat A, size_t a, size_t b,
                         sv_gemm_mat B, int n, int r, int kc, int strips, int t, int nt, float *strip) {
    const int sr = strip_rows(n);
    void *sc = sv_cpu_gemm_scratch(c, t);
    const int fuse = c->gemm->run_ep && !c->no_fused_epi;
    if (kc >= r) {
        eng_pack_share(c, B, n, r, t, nt);
#pragma omp barrier
    }
    for (int s = 0; s < strips; s++) {
        size_t m0 = a + (size_t)s * sr;
        int mr = m0 < b ? (b - m0 < (size_t)sr ? (int)(b - m0) : sr) : 0;
        sv_gemm_epi e = *ep;
        e.out = strip;
        e.ld = (size_t)n;
        e.out16 = ep->out16 + m0 * (size_t)n;
        e.pre16 = ep->pre16 ? ep->pre16 + m0 * (size_t)n : NULL;
        sv_gemm_mat Am = eng_row(A, m0);
        for (int r0 = 0; r0 < r; r0 += kc) {
            int rl = r - r0 < kc ? r - r0 : kc, last = r0 + rl == r;
            if (kc < r) {
                eng_pack_share(c, eng_at(B, r0), n, rl, t, nt);
#pragma omp barrier
            }
            if (mr > 0) {
                if (fuse)
                    c->gemm->run_ep(strip, (size_t)n, eng_at(Am, r0), mr, c->gemm_pack, n, rl, r0 > 0, sc,
                                    last ? &e : NULL);
                else
                    c->gemm->run(strip, (size_t)n, eng_at(Am, r0), mr, c->gemm_pack, n, rl, r0 > 0, sc);
                if (last && !fuse) eng_epi16(&e, 0, mr);
            }
            if (kc < r) {
#pragma omp barrier
            }
        }
        if (r <= 0 && mr > 0) { /* no reduction: the output is the bias (or zero) */
            for (int i = 0; i < mr; i++) memset(strip + (size_t)i * n, 0, (size_t)n * sizeof(float));
            eng_epi16(&e, 0, mr);
        }
    }
    if (kc >= r) {
        /* the packed B is read until here; the caller's next GEMM packs over it */
#pragma omp barrier
    }
}

/* Strips per worker: of the largest of nt near-equal row ranges of m rows. */
static int strips_for(int m, int nt, int n) {
    int most = (m + nt - 1) / nt, sr = strip_rows(n);
    return (most + sr - 1) / sr;
}

/* The worker's act16 buffer: the widened bias (or NULL), the strip. */
static sv_gemm_epi epi16_setup(const sv_cpu_backend *c, int t, uint16_t *out, uint16_t *pre, const uint16_t *bias,
                               int n, float **strip) {
    float *buf = c->act16_buf + (size_t)t * SV_CPU_ACT16_FLOATS;
    if (bias) c->k->widen(buf, bias, (size_t)n);
    *strip = buf + (size_t)SV_CPU_ACT16_WIDE;
    return (sv_gemm_epi){.fn = eng_epi16, .bias = bias ? buf : NULL, .n = n, .k = c->k, .out16 = out, .pre16 = pre};
}

static sv_status wide_check(int n, const char *what) {
    if (n > SV_CPU_ACT16_WIDE)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "cpu backend: %s with %d output columns exceeds the bf16-storage limit of %d "
                       "(SHARDVIT_CPU_BF16_STORAGE=0 keeps fp32 storage)",
                       what, n, SV_CPU_ACT16_WIDE);
    return SV_OK;
}

static void linear_fwd_eng16(const sv_cpu_backend *c, uint16_t *out, uint16_t *pre, const uint16_t *in,
                             const uint16_t *W, const uint16_t *bias, int M, int N, int K) {
    const sv_gemm_mat Bw = sv_gemm_h16(W, (size_t)K, 1), Ai = sv_gemm_h16(in, (size_t)K, 1);
    const int nt = eng_threads(c, M, (double)M * N * K), kc = eng_chunk(c, N, K), strips = strips_for(M, nt, N);
#pragma omp parallel num_threads(nt)
    {
        SV_CPU_TEAM(nt);
        int t = nt > 1 ? omp_get_thread_num() : 0;
        size_t a, b;
        sv_cpu_range((size_t)M, nt, t, &a, &b);
        float *strip;
        sv_gemm_epi ep = epi16_setup(c, t, out, pre, bias, N, &strip);
        eng_strips16(c, &ep, Ai, a, b, Bw, N, K, kc, strips, t, nt, strip);
    }
}

/* d_in (M,K) = d_out W through the strips, then dW += d_out^T in (fp32, as with fp32 storage). */
static void linear_bwd_eng16(const sv_cpu_backend *c, uint16_t *d_in, float *dW, const uint16_t *d_out,
                             const uint16_t *in, const uint16_t *W, int M, int N, int K) {
    const int nt_in = d_in ? eng_threads(c, M, (double)M * N * K) : 1;
    const int nt_w = eng_threads(c, N, (double)M * N * K);
    const int nt = nt_in > nt_w ? nt_in : nt_w;
    const int kc_in = eng_chunk(c, K, N), kc_w = eng_chunk(c, K, M), strips = strips_for(M, nt_in, K);
    const sv_gemm_mat Bw = sv_gemm_h16(W, (size_t)K, 0), Ad = sv_gemm_h16(d_out, (size_t)N, 1);
    const sv_gemm_mat Bi = sv_gemm_h16(in, (size_t)K, 0), Adt = sv_gemm_h16(d_out, (size_t)N, 0);
#pragma omp parallel num_threads(nt)
    {
        SV_CPU_TEAM(nt);
        int t = nt > 1 ? omp_get_thread_num() : 0;
        size_t a, b;
        if (d_in) {
            sv_cpu_range((size_t)M, nt_in, t, &a, &b);
            if (t >= nt_in) a = b = 0;
            float *strip;
            sv_gemm_epi ep = epi16_setup(c, t, d_in, NULL, NULL, K, &strip);
            eng_strips16(c, &ep, Ad, a, b, Bw, K, N, kc_in, strips, t, nt, strip);
        }
        sv_cpu_range((size_t)N, nt_w, t, &a, &b);
        if (t >= nt_w) a = b = 0;
        eng_rows_chunked(c, dW, (size_t)K, Adt, a, b, Bi, K, M, kc_w, 1, t, nt, sv_cpu_gemm_scratch(c, t), NULL);
    }
}

/* GELU backward in place on d_out (columns [n0, n1) of every row) and the bias-gradient column
 * sums, each column summed in row order (one IEEE add per element and row, whatever the vector
 * width). With bf16 storage one pass over the bf16 rows (the kernel table's gelu_bwd16: the bits
 * of widening, gelu_bwd, narrowing and add_store). */
static void gelu_db_cols(const sv_cpu_backend *c, void *d_out, float *db, const void *pre, int M, int N, int n0,
                         int n1) {
    if (c->act16) { /* the same bits in one pass over the bf16 rows (gelu_bwd16) */
        for (int m = 0; m < M; m++) {
            const size_t off = (size_t)m * N + n0;
            c->k->gelu_bwd16((uint16_t *)d_out + off, pre ? (const uint16_t *)pre + off : NULL, db ? db + n0 : NULL,
                             (size_t)(n1 - n0));
        }
        return;
    }
    _Alignas(64) float ds[SV_CPU_CHUNK], xs[SV_CPU_CHUNK];
    for (int m = 0; m < M; m++)
        SV_CPU_CHUNKS(n0, n1, o, len, {
            const size_t off = (size_t)m * N + o;
            float *d = sv_cpu_wr(c, ds, d_out, off, len, 1);
            if (pre) {
                c->k->gelu_bwd(c->bf16, d, d, sv_cpu_rd(c, xs, pre, off, len), len);
                sv_cpu_wr_end(c, d_out, off, d, len);
            }
            if (db) c->k->add_store(0, db + o, db + o, d, len); /* db += d, in the table's ISA */
        });
}

sv_status sv_cpu_linear_fwd(sv_backend *be, void *out_, void *pre_gelu, const void *in_, const void *W_,
                            const void *bias, int M, int N, int K) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *out = out_;
    const float *in = in_, *W = W_;
    int need_epilogue = bias || pre_gelu || c->bf16;
    if (c->act16) {
        SV_TRY(wide_check(N, "linear_fwd"));
        linear_fwd_eng16(c, out_, pre_gelu, in_, W_, bias, M, N, K);
        return SV_OK;
    }
    if (c->gemm) {
        linear_fwd_eng(c, out, pre_gelu, in, W, bias, M, N, K);
        return SV_OK;
    }
    /* Rows are split across the workers, each running single-threaded sgemm on row slices
     * and the epilogue on each slice while it is cache-hot (gemm_split; see cpu_backend.h).
     * Otherwise one sgemm over all rows, threaded inside OpenBLAS. Every output element is
     * the same K-long dot product either way. */
    int nt = gemm_threads(c, M, (double)M * N * K);
    int rows = (need_epilogue && (c->gemm_split || c->threads == 1)) ? SV_CPU_LINEAR_ROWS : M;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int t = 0; t < nt; t++) {
        size_t a, b;
        sv_cpu_range((size_t)M, nt, t, &a, &b);
        for (int m0 = (int)a; m0 < (int)b; m0 += rows) {
            int mr = (int)b - m0 < rows ? (int)b - m0 : rows;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mr, N, K, 1.0f, in + (size_t)m0 * K, K, W, K, 0.0f,
                        out + (size_t)m0 * N, N);
            if (need_epilogue) epilogue_rows(c, out, pre_gelu, bias, m0, m0 + mr, N);
        }
    }
    return SV_OK;
}

sv_status sv_cpu_linear_bwd(sv_backend *be, void *d_in_, float *dW, float *db, void *d_out_, const void *in_,
                            const void *W_, const void *pre_gelu_, int M, int N, int K) {
    const sv_cpu_backend *c = sv_cpu(be);
    float *d_in = d_in_, *d_out = d_out_;
    const float *in = in_, *W = W_, *pre = pre_gelu_;
    const int bf = c->bf16;
    if (c->act16 && d_in) SV_TRY(wide_check(K, "linear_bwd")); /* before d_out is touched */

    /* GELU backward in place, fused with the bias-gradient column sums. Threads split the
     * columns, each summing its columns over all rows in row order, so db is the same for
     * any thread count. */
    if (pre || db) {
        int nt = sv_cpu_nt(c, (size_t)M * N * (pre ? 16 : 1));
        if (nt > N / 16) nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
        for (int t = 0; t < nt; t++) {
            /* column ranges in whole 16-float vectors */
            int nv = (N + 15) / 16;
            int n0 = 16 * (int)((long)nv * t / nt), n1 = 16 * (int)((long)nv * (t + 1) / nt);
            if (n1 > N) n1 = N;
            gelu_db_cols(c, d_out_, db, pre_gelu_, M, N, n0, n1);
        }
    }
    if (c->act16) {
        linear_bwd_eng16(c, d_in_, dW, d_out_, in_, W_, M, N, K);
        return SV_OK;
    }
    if (c->gemm) {
        linear_bwd_eng(c, d_in, dW, d_out, in, W, M, N, K);
        return SV_OK;
    }
    /* d_in (M,K) = d_out (M,N) W (N,K): workers take row ranges of d_in. dW (N,K) += d_out^T in:
     * workers take row ranges of dW, each summing over all M in sgemm's own order, so the
     * result does not depend on the number of workers. */
    int nt_in = d_in ? gemm_threads(c, M, (double)M * N * K) : 1;
    int nt_w = gemm_threads(c, N, (double)M * N * K);
    int nt = nt_in > nt_w ? nt_in : nt_w;
#pragma omp parallel num_threads(nt)
    {
        SV_CPU_TEAM(nt);
        int t = nt > 1 ? omp_get_thread_num() : 0;
        size_t a, b;
        if (d_in && t < nt_in) {
            sv_cpu_range((size_t)M, nt_in, t, &a, &b);
            if (b > a) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(b - a), K, N, 1.0f, d_out + a * N, N, W, K,
                            0.0f, d_in + a * K, K);
                if (bf) c->k->round_bf16(d_in + a * K, (b - a) * (size_t)K);
            }
        }
        if (t < nt_w) {
            sv_cpu_range((size_t)N, nt_w, t, &a, &b);
            if (b > a)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(b - a), K, M, 1.0f, d_out + a, N, in, K,
                            1.0f, dW + a * K, K);
        }
    }
    return SV_OK;
}
