/* Every backend op on the CUDA backend against the CPU backend, on random inputs, through the
 * public backend API only. Both backends get bit-identical inputs (the CPU backend rounds to
 * bf16 exactly as the GPU stores it); per output the test reports
 *   rel_err          max|cuda - cpu| / max|cpu|, checked against a tolerance for the compute
 *                    dtype (fp32: 1e-3, bf16: 3e-2, i.e. a few bf16 ulps after different
 *                    summation orders); casts, copies and the per-element formulas of
 *                    core/elementwise.h (GELU, the linear epilogue, the optimizers) must agree
 *                    exactly (tolerance 0);
 *   max_elem_rel_err max_i |cuda_i - cpu_i| / max(|cpu_i|, 1e-3 max|cpu|) (information);
 *   repeat           every op body runs twice on the GPU (cuda, cpu, cuda again): the two GPU
 *                    results must be bitwise identical (docs/gpu.md "Numerics");
 *   gemm_algo        for linear outputs: the cuBLASLt algorithm (or the cuBLAS fallback) that
 *                    computed it (sv_be_last_path);
 *   attn_path        for attention outputs: the cuDNN engine or the fallback kernels and why.
 *
 * Runs for compute dtypes fp32 and bf16, and for attention with cuDNN (where cuDNN accepts the
 * shape) and with the fallback kernel, at T = 65, 197 and 50; attention-probability dropout
 * (sv_be_attention_fwd_drop / _bwd_drop, always the fallback kernels on CUDA) at the model shape
 * B2 T50 D192 H3 and an odd one (T 131 > the kernels' 128 threads, head dim 12).
 *
 * Every op call goes through OP(): a failing call is recorded as a failed check with its
 * message, the rest of that run of the op group is skipped (its outputs are not compared), and
 * the test goes on with the next backend run and the next group; a backend that cannot be
 * created is recorded the same way. The JSON report (ops_report.h) is valid whenever the run
 * stops, also on SIGTERM/SIGINT/SIGHUP/SIGALRM or SIGKILL.
 * Usage: gpu_ops_vs_cpu [--json FILE]. Exit 77 at once when no CUDA device is usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/json.h"
#include "model/backend/backend.h"
#include "ops_report.h"

#define NOTE 256 /* bytes of a path note kept by a test */

/* ---- one run of an op group on one backend ---- */
enum { RUN_CUDA = 0, RUN_CPU = 1, RUN_REPEAT = 2, RUNS = 3 };
static const char *const run_name[RUNS] = {"cuda", "cpu", "cuda-repeat"};

typedef struct ctx {
    sv_backend *be;
    int idx;                     /* RUN_CUDA, RUN_CPU, RUN_REPEAT */
    const char *variant, *group; /* for failure records */
    int ok;                      /* 0 after a failed call: later calls of this run are skipped */
    void *ptrs[64];
    int n;
} ctx;

/* A host-side output of an op group: one array per run, and whether the run produced it. */
typedef struct outv {
    float *h[RUNS];
    int got[RUNS];
    size_t n;
} outv;

static outv out_new(size_t n) {
    outv o;
    memset(&o, 0, sizeof o);
    o.n = n;
    for (int r = 0; r < RUNS; r++) {
        o.h[r] = calloc(n ? n : 1, sizeof(float));
        CHECK(o.h[r]);
    }
    return o;
}
static void out_free(outv *o) {
    for (int r = 0; r < RUNS; r++) free(o->h[r]);
}

/* ---- records ---- */

/* A JSON object built with the core writer, handed to the report. */
static void emit(sv_json_writer *w, int ok) {
    const char *text;
    if (sv_json_writer_finish(w, &text, NULL) == SV_OK)
        opsrep_result(text, ok);
    else
        opsrep_result("{\"op\":\"(report writer error)\",\"ok\":false}", 0);
    sv_json_writer_free(w);
}

static void rec_begin(sv_json_writer *w, const char *op, const char *variant, const char *what) {
    sv_json_writer_init(w, 0);
    sv_json_obj_begin(w);
    sv_json_key(w, "op"), sv_json_str(w, op);
    sv_json_key(w, "variant"), sv_json_str(w, variant);
    sv_json_key(w, "output"), sv_json_str(w, what);
}

/* Record a failed call (its function name, the run, the library's message). */
static void record_error(const char *group, const char *variant, const char *call, const char *run, sv_status st,
                         const char *msg) {
    char what[96];
    size_t fn = strcspn(call, "(");
    snprintf(what, sizeof what, "%.*s on %s", (int)(fn < 64 ? fn : 64), call, run);
    printf("%-22s %-18s %s: %s: %s  FAIL\n", group, variant, what, sv_status_str(st), msg);
    sv_json_writer w;
    rec_begin(&w, group, variant, what);
    sv_json_key(&w, "error"), sv_json_str(&w, msg);
    sv_json_key(&w, "ok"), sv_json_bool(&w, 0);
    sv_json_obj_end(&w);
    emit(&w, 0);
}

/* The status of an op call on run c: SV_OK -> 1; a failure is recorded and stops the run
 * (c->ok = 0) -> 0; a call skipped after an earlier failure -> 0. */
static int op_call(ctx *c, const char *call, sv_status st) {
    if (!c->ok) return 0;
    if (st == SV_OK) return 1;
    record_error(c->group, c->variant, call, run_name[c->idx], st, sv_err_msg());
    sv_err_clear();
    c->ok = 0;
    return 0;
}
#define OP(c, call) op_call((c), #call, (c)->ok ? (call) : SV_OK)

/* ---- device buffers of a run ---- */
static void *dalloc(ctx *c, size_t bytes) {
    void *p = NULL;
    if (!OP(c, sv_be_alloc(c->be, bytes ? bytes : 4, &p))) return NULL;
    CHECK(c->n < 64);
    c->ptrs[c->n++] = p;
    return p;
}
static void release(ctx *c) {
    if (c->ok) OP(c, sv_be_sync(c->be));
    while (c->n) sv_be_free(c->be, c->ptrs[--c->n]);
}
static float *fbuf(ctx *c, const float *h, size_t n) {
    float *d = dalloc(c, n * 4);
    OP(c, sv_be_upload(c->be, d, h, n * 4));
    return d;
}
static void *cbuf(ctx *c, const float *h, size_t n) {
    float *tmp = fbuf(c, h, n);
    void *d = dalloc(c, n * sv_be_compute_elem_size(c->be));
    OP(c, sv_be_f32_to_compute(c->be, d, tmp, n));
    return d;
}
/* o's array of this run <- f32 device buffer d (o->n elements). */
static void get_f(ctx *c, outv *o, const float *d) {
    if (OP(c, sv_be_download(c->be, o->h[c->idx], d, o->n * 4))) o->got[c->idx] = 1;
}
/* o's array of this run <- compute-dtype device buffer d. */
static void get_c(ctx *c, outv *o, const void *d) {
    float *tmp = dalloc(c, o->n * 4);
    OP(c, sv_be_compute_to_f32(c->be, tmp, d, o->n));
    get_f(c, o, tmp);
}
/* The CUDA run's path note of `kind` into dst (other runs leave it). */
static void take_path(const ctx *c, char *dst, sv_be_path_kind kind) {
    if (c->idx == RUN_CUDA && c->ok) snprintf(dst, NOTE, "%s", sv_be_last_path(c->be, kind));
}

/* ---- random data ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}
static float *hrand(size_t n, float scale) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    CHECK(h);
    for (size_t i = 0; i < n; i++) h[i] = urand() * scale;
    return h;
}

/* ---- comparison ---- */

/* The variant's backends: runs 0 and 2 use the CUDA backend, run 1 the CPU backend. */
typedef struct pair {
    ctx c[RUNS];
    const char *variant;
    double tol;
} pair;

typedef struct errs {
    double rel, elem_rel;
    int nonfinite;
} errs;

static errs measure(const float *gpu, const float *cpu, size_t n) {
    double maxd = 0, maxr = 0;
    errs e = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(gpu[i]) != !isfinite(cpu[i])) e.nonfinite++;
        double d = fabs((double)gpu[i] - cpu[i]);
        if (d > maxd) maxd = d;
        if (fabs(cpu[i]) > maxr) maxr = fabs(cpu[i]);
    }
    double fl = 1e-3 * maxr > 1e-30 ? 1e-3 * maxr : 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)gpu[i] - cpu[i]), den = fabs(cpu[i]) > fl ? fabs(cpu[i]) : fl;
        if (d / den > e.elem_rel) e.elem_rel = d / den;
    }
    e.rel = maxd / (maxr > 1e-30 ? maxr : 1e-30);
    return e;
}

/* Compare output o of op `op` (CUDA vs CPU, and the two CUDA runs bitwise) and record it, with
 * the path note `pval` under `pkey` when given. Outputs a failed call kept from being computed
 * are not compared (the failure is recorded already). */
static void report(const pair *P, const char *op, const char *what, const outv *o, double tol, const char *pkey,
                   const char *pval) {
    if (!o->got[RUN_CUDA] || !o->got[RUN_CPU]) return;
    errs e = measure(o->h[RUN_CUDA], o->h[RUN_CPU], o->n);
    int repeat = o->got[RUN_REPEAT] ? memcmp(o->h[RUN_CUDA], o->h[RUN_REPEAT], o->n * sizeof(float)) == 0 : -1;
    /* the one-rounding contract: a split-K cuBLASLt algorithm may reduce only in the compute type
     * (scheme 2) or not at all (0); in place (1) or output type (4) rounds partial sums to bf16 */
    const char *rs = pkey && pval && !strcmp(pkey, "gemm_algo") ? strstr(pval, "reduction ") : NULL;
    unsigned scheme = 0;
    int red_ok = !rs || (sscanf(rs, "reduction %u", &scheme) == 1 && (scheme == 0 || scheme == 2));
    int ok = !e.nonfinite && e.rel <= tol && repeat != 0 && red_ok;
    printf("%-22s %-18s %-10s rel_err %.3e  tol %.1e%s%s  %s%s%s\n", op, P->variant, what, e.rel, tol,
           repeat == 0 ? "  REPEAT DIFFERS" : "", red_ok ? "" : "  SPLIT-K REDUCTION NOT IN FP32", ok ? "ok" : "FAIL",
           pval && *pval ? "  " : "", pval ? pval : "");
    sv_json_writer w;
    rec_begin(&w, op, P->variant, what);
    sv_json_key(&w, "rel_err"), sv_json_f64(&w, e.rel);
    sv_json_key(&w, "max_elem_rel_err"), sv_json_f64(&w, e.elem_rel);
    sv_json_key(&w, "tol"), sv_json_f64(&w, tol);
    sv_json_key(&w, "nonfinite"), sv_json_i64(&w, e.nonfinite);
    if (repeat >= 0) sv_json_key(&w, "repeat"), sv_json_bool(&w, repeat);
    if (pkey && pval && *pval) sv_json_key(&w, pkey), sv_json_str(&w, pval);
    sv_json_key(&w, "ok"), sv_json_bool(&w, ok);
    sv_json_obj_end(&w);
    emit(&w, ok);
}

/* Run `body` as run 0 (CUDA), 1 (CPU) and 2 (CUDA again) of op group `grp`: it fills the
 * runs' arrays of its outvs from ctx `c` (index c->idx). */
#define BOTH(P, grp, c, ...) \
    for (int r_ = 0; r_ < RUNS; r_++) { \
        ctx *c = &(P)->c[r_]; \
        c->group = (grp), c->variant = (P)->variant, c->ok = 1; \
        __VA_ARGS__; \
        release(c); \
    }
#define CMP(P, op, what, o, tol) report(P, op, what, &(o), tol, NULL, NULL)
#define CMP_GEMM(P, op, what, o, tol, note) report(P, op, what, &(o), tol, "gemm_algo", note)
#define CMP_ATTN(P, op, what, o, tol, note) report(P, op, what, &(o), tol, "attn_path", note)

/* ---- op groups ---- */
static void test_vector_ops(pair *P) {
    const size_t n = 10007;
    float *x = hrand(n, 3.0f), *y = hrand(n, 1.0f);
    outv rt = out_new(n), bfr = out_new(n), add = out_new(n), up = out_new(n), bits = out_new(n), ss = out_new(1);
    uint16_t *hb = malloc(n * 2);
    CHECK(hb);
    BOTH(P, "vector ops", c, {
        void *cb = cbuf(c, x, n);
        get_c(c, &rt, cb);
        float *dx = fbuf(c, x, n), *dy = fbuf(c, y, n);
        uint16_t *db = dalloc(c, n * 2);
        OP(c, sv_be_f32_to_bf16(c->be, db, dx, n));
        if (OP(c, sv_be_download(c->be, hb, db, n * 2))) { /* the bits, exactly, as floats */
            for (size_t i = 0; i < n; i++) bits.h[c->idx][i] = (float)hb[i];
            bits.got[c->idx] = 1;
        }
        float *back = dalloc(c, n * 4);
        OP(c, sv_be_bf16_to_f32(c->be, back, db, n));
        get_f(c, &bfr, back);
        OP(c, sv_be_add_f32(c->be, dy, back, n));
        get_f(c, &add, dy);
        double s = 0;
        if (OP(c, sv_be_sumsq_f32(c->be, back, n, &s))) ss.h[c->idx][0] = (float)s, ss.got[c->idx] = 1;
        /* async upload from pinned memory, ordered before a later op; fence, then reuse host */
        float *pin = NULL;
        if (OP(c, sv_be_host_alloc(c->be, n * 4, (void **)&pin))) {
            memcpy(pin, y, n * 4);
            float *dz = dalloc(c, n * 4);
            OP(c, sv_be_upload_async(c->be, dz, pin, n * 4));
            OP(c, sv_be_add_f32(c->be, dz, dz, n)); /* dz = 2 dz */
            OP(c, sv_be_upload_fence(c->be));
            memset(pin, 0, n * 4);
            get_f(c, &up, dz);
            sv_be_host_free(c->be, pin);
        }
    });
    for (size_t i = 0; i < n; i++) up.h[RUN_CPU][i] = 2.0f * y[i]; /* exact expectation, not just CPU == CUDA */
    CMP(P, "f32<->compute", "roundtrip", rt, 0.0);
    CMP(P, "f32_to_bf16/back", "values", bfr, 0.0);
    CMP(P, "f32_to_bf16", "bits", bits, 0.0);
    CMP(P, "add_f32", "values", add, 0.0);
    CMP(P, "upload_async", "values", up, 0.0);
    CMP(P, "sumsq_f32", "sum", ss, 1e-6);
    out_free(&rt), out_free(&bfr), out_free(&add), out_free(&up), out_free(&bits), out_free(&ss);
    free(x), free(y), free(hb);
}

static void test_linear(pair *P, int M, int N, int K, int with_bias, int with_gelu) {
    char op[40];
    snprintf(op, sizeof op, "linear %dx%dx%d%s%s", M, N, K, with_bias ? "+b" : "", with_gelu ? "+gelu" : "");
    float *in = hrand((size_t)M * K, 1.0f), *W = hrand((size_t)N * K, 0.1f), *bias = hrand(N, 0.5f);
    float *gout = hrand((size_t)M * N, 1.0f), *dW0 = hrand((size_t)N * K, 0.1f), *db0 = hrand(N, 0.1f);
    size_t mn = (size_t)M * N, mk = (size_t)M * K, nk = (size_t)N * K;
    outv out = out_new(mn), pre = out_new(mn), din = out_new(mk), dW = out_new(nk), db = out_new(N);
    char p_fwd[NOTE] = "", p_dgrad[NOTE] = "", p_wgrad[NOTE] = "";
    BOTH(P, op, c, {
        void *d_in = cbuf(c, in, mk), *d_W = cbuf(c, W, nk), *d_b = with_bias ? cbuf(c, bias, N) : NULL;
        void *d_pre = with_gelu ? cbuf(c, gout, mn) : NULL; /* overwritten by the forward */
        void *o = dalloc(c, mn * 4);
        OP(c, sv_be_linear_fwd(c->be, o, d_pre, d_in, d_W, d_b, M, N, K));
        take_path(c, p_fwd, SV_BE_PATH_GEMM_FWD);
        get_c(c, &out, o);
        if (d_pre) get_c(c, &pre, d_pre);
        void *g = cbuf(c, gout, mn), *gi = dalloc(c, mk * 4);
        float *gW = fbuf(c, dW0, nk), *gb = fbuf(c, db0, N);
        OP(c, sv_be_linear_bwd(c->be, gi, gW, with_bias ? gb : NULL, g, d_in, d_W, d_pre, M, N, K));
        take_path(c, p_dgrad, SV_BE_PATH_GEMM_DGRAD);
        take_path(c, p_wgrad, SV_BE_PATH_GEMM_WGRAD);
        get_c(c, &din, gi);
        get_f(c, &dW, gW);
        get_f(c, &db, gb);
    });
    CMP_GEMM(P, op, "out", out, P->tol, p_fwd);
    if (with_gelu) CMP_GEMM(P, op, "pre_gelu", pre, P->tol, p_fwd);
    CMP_GEMM(P, op, "d_in", din, P->tol, p_dgrad);
    CMP_GEMM(P, op, "dW(+=)", dW, P->tol, p_wgrad);
    if (with_bias) CMP(P, op, "db(+=)", db, P->tol);
    out_free(&out), out_free(&pre), out_free(&din), out_free(&dW), out_free(&db);
    free(in), free(W), free(bias), free(gout), free(dW0), free(db0);
}

/* The linear forward's epilogue, bit for bit: K = 1 and in = 1, so the GEMM's result is W's
 * element itself on both backends (one exact product) and out / pre_gelu depend only on the
 * per-element epilogue: the bias added in fp32 and GELU of that unrounded sum
 * (core/elementwise.h sv_bias_gelu_elem), or the BIAS epilogue of cuBLASLt without GELU. */
static void test_linear_epilogue(pair *P, int M, int N, int with_gelu) {
    char op[48];
    snprintf(op, sizeof op, "linear epilogue %dx%d%s", M, N, with_gelu ? "+gelu" : "");
    float *ones = malloc((size_t)M * sizeof(float)), *W = hrand(N, 6.0f), *bias = hrand(N, 1.0f);
    CHECK(ones);
    for (int m = 0; m < M; m++) ones[m] = 1.0f;
    outv out = out_new((size_t)M * N), pre = out_new((size_t)M * N);
    char p_fwd[NOTE] = "";
    BOTH(P, op, c, {
        void *d_in = cbuf(c, ones, M), *d_W = cbuf(c, W, N), *d_b = cbuf(c, bias, N);
        void *o = dalloc(c, (size_t)M * N * 4), *d_pre = with_gelu ? dalloc(c, (size_t)M * N * 4) : NULL;
        OP(c, sv_be_linear_fwd(c->be, o, d_pre, d_in, d_W, d_b, M, N, 1));
        take_path(c, p_fwd, SV_BE_PATH_GEMM_FWD);
        get_c(c, &out, o);
        if (d_pre) get_c(c, &pre, d_pre);
    });
    CMP_GEMM(P, op, "out", out, 0.0, p_fwd);
    if (with_gelu) CMP_GEMM(P, op, "pre_gelu", pre, 0.0, p_fwd);
    out_free(&out), out_free(&pre);
    free(ones), free(W), free(bias);
}

static void test_layernorm(pair *P, int M, int C) {
    size_t n = (size_t)M * C;
    float *x = hrand(n, 2.0f), *w = hrand(C, 1.0f), *bb = hrand(C, 0.5f), *go = hrand(n, 1.0f);
    float *dx0 = hrand(n, 0.5f), *dw0 = hrand(C, 0.1f), *db0 = hrand(C, 0.1f);
    for (size_t i = 0; i < n; i++) x[i] += 0.5f; /* nonzero mean */
    outv out = out_new(n), mean = out_new(M), rstd = out_new(M), dx = out_new(n), dw = out_new(C), db = out_new(C);
    const char *op = "layernorm";
    BOTH(P, op, c, {
        void *dxin = cbuf(c, x, n), *dwt = cbuf(c, w, C), *dbs = cbuf(c, bb, C), *o = dalloc(c, n * 4);
        float *mu = dalloc(c, M * 4), *rs = dalloc(c, M * 4);
        OP(c, sv_be_layernorm_fwd(c->be, o, mu, rs, dxin, dwt, dbs, M, C));
        get_c(c, &out, o), get_f(c, &mean, mu), get_f(c, &rstd, rs);
        void *g = cbuf(c, go, n), *gx = cbuf(c, dx0, n);
        float *gw = fbuf(c, dw0, C), *gb = fbuf(c, db0, C);
        OP(c, sv_be_layernorm_bwd(c->be, gx, gw, gb, g, dxin, dwt, mu, rs, M, C));
        get_c(c, &dx, gx), get_f(c, &dw, gw), get_f(c, &db, gb);
    });
    CMP(P, op, "out", out, P->tol);
    CMP(P, op, "mean", mean, P->tol);
    CMP(P, op, "rstd", rstd, P->tol);
    CMP(P, op, "d_x(+=)", dx, P->tol);
    CMP(P, op, "dw(+=)", dw, P->tol);
    CMP(P, op, "db(+=)", db, P->tol);
    out_free(&out), out_free(&mean), out_free(&rstd), out_free(&dx), out_free(&dw), out_free(&db);
    free(x), free(w), free(bb), free(go), free(dx0), free(dw0), free(db0);
}

/* Attention forward and backward, with attention-probability dropout when drop != NULL (the
 * same mask on both backends: CUDA runs the fallback kernels whatever the variant, the CPU
 * backend sv_cpu_attention with the mask). The mask comes from sv_drop_mult on both, so the
 * dropped entries are the same ones; a CUDA op that ignored or misplaced the mask would differ
 * from the CPU's by the dropped terms and the 1/keep scaling, well above the fp32 tolerance. */
static void attention_case(pair *P, const char *op, int B, int T, int D, int H, const sv_drop *drop) {
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D;
    float *qkv = hrand(nq, 1.0f), *go = hrand(no, 1.0f);
    outv out = out_new(no), dq = out_new(nq);
    char p_fwd[NOTE] = "", p_bwd[NOTE] = "";
    BOTH(P, op, c, {
        void *dqkv = cbuf(c, qkv, nq), *o = dalloc(c, no * 4), *g = cbuf(c, go, no), *gq = dalloc(c, nq * 4);
        void *saved = dalloc(c, sv_be_attention_saved_bytes(c->be, B, T, D, H));
        void *scratch = dalloc(c, sv_be_attention_scratch_bytes(c->be, B, T, D, H));
        OP(c, sv_be_attention_fwd_drop(c->be, o, saved, scratch, dqkv, B, T, D, H, drop));
        take_path(c, p_fwd, SV_BE_PATH_ATTN_FWD);
        get_c(c, &out, o);
        OP(c, sv_be_attention_bwd_drop(c->be, gq, scratch, g, dqkv, o, saved, B, T, D, H, drop));
        take_path(c, p_bwd, SV_BE_PATH_ATTN_BWD);
        get_c(c, &dq, gq);
    });
    CMP_ATTN(P, op, "out", out, P->tol, p_fwd);
    CMP_ATTN(P, op, "d_qkv", dq, P->tol, p_bwd);
    out_free(&out), out_free(&dq);
    free(qkv), free(go);
}

static void test_attention(pair *P, int B, int T, int D, int H) {
    char op[48];
    snprintf(op, sizeof op, "attention B%d T%d D%d H%d", B, T, D, H);
    attention_case(P, op, B, T, D, H, NULL);
}

static void test_attention_drop(pair *P, int B, int T, int D, int H, float keep) {
    char op[64];
    snprintf(op, sizeof op, "attn-drop %.2f B%d T%d D%d H%d", (double)keep, B, T, D, H);
    const sv_drop d = {.key = 0x5eed0a77e17ull, .sample0 = 1234, .keep = keep};
    attention_case(P, op, B, T, D, H, &d);
}

/* GELU forward/backward and the residual add evaluate core/elementwise.h on both backends, each
 * operation rounded on its own (docs/gpu.md "Numerics"): exact. */
static void test_pointwise(pair *P) {
    const size_t n = 4099;
    float *x = hrand(n, 4.0f), *y = hrand(n, 1.0f);
    outv gf = out_new(n), gb = out_new(n), ra = out_new(n);
    BOTH(P, "pointwise", c, {
        void *dx = cbuf(c, x, n), *dy = cbuf(c, y, n), *o = dalloc(c, n * 4);
        OP(c, sv_be_gelu_fwd(c->be, o, dx, n));
        get_c(c, &gf, o);
        OP(c, sv_be_gelu_bwd(c->be, dy, dy, dx, n)); /* aliasing d_x == d_out is allowed */
        get_c(c, &gb, dy);
        OP(c, sv_be_residual_add(c->be, dx, dx, o, n));
        get_c(c, &ra, dx);
    });
    CMP(P, "gelu_fwd", "out", gf, 0.0);
    CMP(P, "gelu_bwd", "d_x", gb, 0.0);
    CMP(P, "residual_add", "out", ra, 0.0);
    out_free(&gf), out_free(&gb), out_free(&ra);
    free(x), free(y);
}

static void test_xent(pair *P, int B, int K) {
    size_t n = (size_t)B * K;
    float *z = hrand(n, 5.0f), *soft = hrand(n, 1.0f);
    for (int b = 0; b < B; b++) { /* soft targets: a distribution per row */
        float s = 0;
        for (int k = 0; k < K; k++) s += (soft[(size_t)b * K + k] = fabsf(soft[(size_t)b * K + k]));
        for (int k = 0; k < K; k++) soft[(size_t)b * K + k] /= s;
    }
    int32_t *lab = malloc(B * sizeof(int32_t));
    CHECK(lab);
    for (int b = 0; b < B; b++) lab[b] = (b * 7 + 3) % K;
    outv l1 = out_new(B), d1 = out_new(n), l2 = out_new(B), d2 = out_new(n), l3 = out_new(B);
    BOTH(P, "softmax_xent", c, {
        void *dz = cbuf(c, z, n), *g = dalloc(c, n * 4);
        int32_t *dl = dalloc(c, B * 4);
        OP(c, sv_be_upload(c->be, dl, lab, B * 4));
        float *loss = dalloc(c, B * 4), *ds = fbuf(c, soft, n);
        OP(c, sv_be_softmax_xent(c->be, loss, g, dz, dl, NULL, B, K, 0.1f, 1.0f / B));
        get_f(c, &l1, loss), get_c(c, &d1, g);
        OP(c, sv_be_softmax_xent(c->be, loss, g, dz, NULL, ds, B, K, 0.0f, 0.5f));
        get_f(c, &l2, loss), get_c(c, &d2, g);
        OP(c, sv_be_softmax_xent(c->be, loss, NULL, dz, dl, NULL, B, K, 0.0f, 1.0f));
        get_f(c, &l3, loss);
    });
    CMP(P, "softmax_xent labels", "loss", l1, P->tol);
    CMP(P, "softmax_xent labels", "d_logits", d1, P->tol);
    CMP(P, "softmax_xent soft", "loss", l2, P->tol);
    CMP(P, "softmax_xent soft", "d_logits", d2, P->tol);
    CMP(P, "softmax_xent eval", "loss", l3, P->tol);
    out_free(&l1), out_free(&d1), out_free(&l2), out_free(&d2), out_free(&l3);
    free(z), free(soft), free(lab);
}

static void test_embed(pair *P, int B, int C, int img, int p, int D) {
    int G = img / p, T = 1 + G * G;
    size_t ni = (size_t)B * C * img * img, np = (size_t)B * G * G * C * p * p;
    size_t nx = (size_t)B * T * D, npo = (size_t)B * (T - 1) * D;
    float *im = hrand(ni, 1.0f), *po = hrand(npo, 1.0f), *cls = hrand(D, 0.1f), *pos = hrand((size_t)T * D, 0.1f);
    float *gx = hrand(nx, 1.0f), *gcls0 = hrand(D, 0.1f), *gpos0 = hrand((size_t)T * D, 0.1f),
          *gsel = hrand((size_t)B * D, 1.0f);
    outv pat = out_new(np), x = out_new(nx), dpo = out_new(npo), dcls = out_new(D), dpos = out_new((size_t)T * D),
         sel = out_new((size_t)B * D), dxs = out_new(nx);
    BOTH(P, "embed", c, {
        float *dim = fbuf(c, im, ni);
        void *dp = dalloc(c, np * 4);
        OP(c, sv_be_im2col(c->be, dp, dim, B, C, img, img, p));
        get_c(c, &pat, dp);
        void *dpo_in = cbuf(c, po, npo), *dcl = cbuf(c, cls, D), *dps = cbuf(c, pos, (size_t)T * D),
             *dx = dalloc(c, nx * 4);
        OP(c, sv_be_embed_fwd(c->be, dx, dpo_in, dcl, NULL, 0, dps, 0, B, T, D));
        get_c(c, &x, dx);
        void *g = cbuf(c, gx, nx), *gp = dalloc(c, npo * 4);
        float *gc = fbuf(c, gcls0, D), *gps = fbuf(c, gpos0, (size_t)T * D);
        OP(c, sv_be_embed_bwd(c->be, gp, gc, NULL, 0, gps, 0, g, B, T, D));
        get_c(c, &dpo, gp), get_f(c, &dcls, gc), get_f(c, &dpos, gps);
        void *s = dalloc(c, (size_t)B * D * 4);
        OP(c, sv_be_cls_select(c->be, s, dx, B, T, D));
        get_c(c, &sel, s);
        void *gs = cbuf(c, gsel, (size_t)B * D);
        OP(c, sv_be_cls_select_bwd(c->be, g, gs, B, T, D));
        get_c(c, &dxs, g);
    });
    CMP(P, "im2col", "patches", pat, 0.0);
    CMP(P, "embed_fwd", "x", x, P->tol);
    CMP(P, "embed_bwd", "d_patch_out", dpo, 0.0);
    CMP(P, "embed_bwd", "d_cls(+=)", dcls, P->tol);
    CMP(P, "embed_bwd", "d_pos(+=)", dpos, P->tol);
    CMP(P, "cls_select", "out", sel, 0.0);
    CMP(P, "cls_select_bwd", "dx(+=)", dxs, P->tol);
    out_free(&pat), out_free(&x), out_free(&dpo), out_free(&dcls), out_free(&dpos), out_free(&sel), out_free(&dxs);
    free(im), free(po), free(cls), free(pos), free(gx), free(gcls0), free(gpos0), free(gsel);
}

/* Token assembly with R register tokens after the class token (timm reg_tokens); nec: pos_embed
 * for the patch tokens only (timm no_embed_class). */
static void test_embed_reg(pair *P, int B, int T, int D, int R, int nec) {
    const int pre = 1 + R;
    size_t nx = (size_t)B * T * D, npo = (size_t)B * (T - pre) * D, nr = (size_t)R * D;
    size_t npos = (size_t)(nec ? T - pre : T) * D;
    float *po = hrand(npo, 1.0f), *cls = hrand(D, 0.1f), *reg = hrand(nr, 0.1f), *pos = hrand(npos, 0.1f);
    float *gx = hrand(nx, 1.0f), *gcls0 = hrand(D, 0.1f), *greg0 = hrand(nr, 0.1f), *gpos0 = hrand(npos, 0.1f);
    outv x = out_new(nx), dpo = out_new(npo), dcls = out_new(D), dreg = out_new(nr), dpos = out_new(npos);
    BOTH(P, nec ? "embed (registers, no_embed_class)" : "embed (registers)", c, {
        void *dpo_in = cbuf(c, po, npo), *dcl = cbuf(c, cls, D), *drg = cbuf(c, reg, nr), *dps = cbuf(c, pos, npos);
        void *dx = dalloc(c, nx * 4);
        OP(c, sv_be_embed_fwd(c->be, dx, dpo_in, dcl, drg, R, dps, nec, B, T, D));
        get_c(c, &x, dx);
        void *g = cbuf(c, gx, nx), *gp = dalloc(c, npo * 4);
        float *gc = fbuf(c, gcls0, D), *gr = fbuf(c, greg0, nr), *gps = fbuf(c, gpos0, npos);
        OP(c, sv_be_embed_bwd(c->be, gp, gc, gr, R, gps, nec, g, B, T, D));
        get_c(c, &dpo, gp), get_f(c, &dcls, gc), get_f(c, &dreg, gr), get_f(c, &dpos, gps);
    });
    CMP(P, "embed_fwd (registers)", "x", x, P->tol);
    CMP(P, "embed_bwd (registers)", "d_patch_out", dpo, 0.0);
    CMP(P, "embed_bwd (registers)", "d_cls(+=)", dcls, P->tol);
    CMP(P, "embed_bwd (registers)", "d_reg(+=)", dreg, P->tol);
    CMP(P, "embed_bwd (registers)", "d_pos(+=)", dpos, P->tol);
    out_free(&x), out_free(&dpo), out_free(&dcls), out_free(&dreg), out_free(&dpos);
    free(po), free(cls), free(reg), free(pos), free(gx), free(gcls0), free(greg0), free(gpos0);
}

/* The training-recipe ops: dropout / drop-path masks (the same hash on both: exact), LayerScale,
 * average pooling, sigmoid BCE, and the token assembly without a class token. */
static void test_recipe(pair *P, int B, int T, int D, int K) {
    size_t nx = (size_t)B * T * D, nb = (size_t)B * D, nk = (size_t)B * K;
    float *x = hrand(nx, 1.0f), *g = hrand(D, 0.5f), *gy = hrand(nx, 1.0f), *gp = hrand(nb, 1.0f);
    float *z = hrand(nk, 3.0f), *pos = hrand(nx / B, 0.1f), *gpos0 = hrand(nx / B, 0.1f);
    int32_t *lab = malloc((size_t)B * sizeof *lab);
    CHECK(lab);
    for (int b = 0; b < B; b++) lab[b] = (b * 7) % K;
    sv_drop path = {.key = 0xabc, .sample0 = 1000, .keep = 0.6f}, elem = {.key = 0xdef, .sample0 = 77, .keep = 0.8f};
    outv dp = out_new(nx), de = out_new(nx), sc = out_new(nx), sdx = out_new(nx), sdg = out_new(D), mean = out_new(nb),
         mdx = out_new(nx), bl = out_new(B), bd = out_new(nk), ex = out_new(nx), edpo = out_new(nx),
         edpos = out_new(nx / B);
    BOTH(P, "recipe", c, {
        void *a = cbuf(c, x, nx), *e = cbuf(c, x, nx);
        OP(c, sv_be_drop(c->be, a, &path, B, (size_t)T * D, (size_t)T * D));
        OP(c, sv_be_drop(c->be, e, &elem, B, (size_t)T * D, 1));
        get_c(c, &dp, a), get_c(c, &de, e);
        void *xs = cbuf(c, x, nx), *gg = cbuf(c, g, D), *o = dalloc(c, nx * 4), *dy = cbuf(c, gy, nx);
        float *dgam = fbuf(c, g, D);
        OP(c, sv_be_scale_cols(c->be, o, xs, gg, B * T, D));
        OP(c, sv_be_scale_cols_bwd(c->be, dy, dgam, dy, xs, gg, B * T, D));
        get_c(c, &sc, o), get_c(c, &sdx, dy), get_f(c, &sdg, dgam);
        void *m = dalloc(c, nb * 4), *gpd = cbuf(c, gp, nb), *dxm = cbuf(c, gy, nx);
        OP(c, sv_be_token_mean(c->be, m, xs, B, T, D, 1));
        OP(c, sv_be_token_mean_bwd(c->be, dxm, gpd, B, T, D, 1));
        get_c(c, &mean, m), get_c(c, &mdx, dxm);
        void *zl = cbuf(c, z, nk), *dz = dalloc(c, nk * 4);
        float *loss = dalloc(c, (size_t)B * 4);
        int32_t *dl = dalloc(c, (size_t)B * 4);
        OP(c, sv_be_upload(c->be, dl, lab, (size_t)B * 4));
        OP(c, sv_be_sigmoid_bce(c->be, loss, dz, zl, dl, NULL, B, K, 0.1f, 0.0f, 0, 0.5f));
        get_f(c, &bl, loss), get_c(c, &bd, dz);
        void *po = cbuf(c, x, nx), *ps = cbuf(c, pos, nx / B), *xo = dalloc(c, nx * 4), *gpo = dalloc(c, nx * 4);
        float *gpos = fbuf(c, gpos0, nx / B);
        OP(c, sv_be_embed_fwd(c->be, xo, po, NULL, NULL, 0, ps, 0, B, T, D));
        OP(c, sv_be_embed_bwd(c->be, gpo, NULL, NULL, 0, gpos, 0, xo, B, T, D));
        get_c(c, &ex, xo), get_c(c, &edpo, gpo), get_f(c, &edpos, gpos);
    });
    CMP(P, "drop (per sample)", "x", dp, 0.0);
    CMP(P, "drop (per element)", "x", de, 0.0);
    CMP(P, "scale_cols", "out", sc, 0.0);
    CMP(P, "scale_cols_bwd", "d_x", sdx, 0.0);
    CMP(P, "scale_cols_bwd", "d_gamma(+=)", sdg, P->tol);
    CMP(P, "token_mean", "out", mean, P->tol);
    CMP(P, "token_mean_bwd", "dx(+=)", mdx, P->tol);
    CMP(P, "sigmoid_bce", "loss", bl, P->tol);
    CMP(P, "sigmoid_bce", "d_logits", bd, P->tol);
    CMP(P, "embed_fwd (no cls)", "x", ex, P->tol);
    CMP(P, "embed_bwd (no cls)", "d_patch_out", edpo, 0.0);
    CMP(P, "embed_bwd (no cls)", "d_pos(+=)", edpos, P->tol);
    out_free(&dp), out_free(&de), out_free(&sc), out_free(&sdx), out_free(&sdg), out_free(&mean), out_free(&mdx);
    out_free(&bl), out_free(&bd), out_free(&ex), out_free(&edpo), out_free(&edpos);
    free(x), free(g), free(gy), free(gp), free(z), free(pos), free(gpos0), free(lab);
}

/* AdamW: the same formula (core/elementwise.h) in fp32 on both, every operation rounded on its
 * own (docs/gpu.md "Numerics"): exact. */
static void test_adamw(pair *P) {
    const size_t n = 5003;
    float *p0 = hrand(n, 1.0f), *g = hrand(n, 0.1f), *m0 = hrand(n, 0.01f), *v0 = hrand(n, 0.001f);
    for (size_t i = 0; i < n; i++) v0[i] = fabsf(v0[i]);
    sv_adamw_hparams h = {.lr = 1e-3f,
                          .beta1 = 0.9f,
                          .beta2 = 0.999f,
                          .eps = 1e-8f,
                          .weight_decay = 0.05f,
                          .bc1 = 1.0f - 0.9f * 0.9f * 0.9f,
                          .bc2 = 1.0f - 0.999f * 0.999f * 0.999f,
                          .grad_scale = 0.5f};
    outv p = out_new(n), m = out_new(n), v = out_new(n);
    BOTH(P, "adamw", c, {
        float *dp = fbuf(c, p0, n), *dg = fbuf(c, g, n), *dm = fbuf(c, m0, n), *dv = fbuf(c, v0, n);
        OP(c, sv_be_adamw(c->be, dp, dg, dm, dv, n, &h, 0.05f));
        get_f(c, &p, dp), get_f(c, &m, dm), get_f(c, &v, dv);
    });
    CMP(P, "adamw", "p", p, 0.0);
    CMP(P, "adamw", "m", m, 0.0);
    CMP(P, "adamw", "v", v, 0.0);
    out_free(&p), out_free(&m), out_free(&v);
    free(p0), free(g), free(m0), free(v0);
}

/* Weight EMA (fsdp/ema.h): both lerp forms (w < 0.5 and w >= 0.5, w = 1 copies), every
 * operation rounded on its own on both backends (core/elementwise.h sv_ema_elem): bitwise. */
static void test_ema(pair *P) {
    const size_t n = 5003;
    float *e0 = hrand(n, 1.0f), *x = hrand(n, 1.0f);
    const float ws[3] = {(float)(1.0 - 0.9998), 0.75f, 1.0f};
    const char *names[3] = {"w=2e-4", "w=0.75", "w=1"};
    for (int k = 0; k < 3; k++) {
        outv e = out_new(n);
        BOTH(P, "ema", c, {
            float *de = fbuf(c, e0, n), *dx = fbuf(c, x, n);
            OP(c, sv_be_ema(c->be, de, dx, n, ws[k]));
            get_f(c, &e, de);
        });
        CMP(P, "ema", names[k], e, 0.0);
        out_free(&e);
    }
    free(e0), free(x);
}

/* SGD (Nesterov), Lion, LAMB's two passes: sv_be_optim_elem on both backends, exact as AdamW. */
static void test_optim_elem(pair *P) {
    const size_t n = 5003;
    float *p0 = hrand(n, 1.0f), *g0 = hrand(n, 0.1f), *m0 = hrand(n, 0.01f), *v0 = hrand(n, 0.001f);
    for (size_t i = 0; i < n; i++) v0[i] = fabsf(v0[i]);
    sv_optim_hparams h = {.lr = 1e-3f,
                          .beta1 = 0.9f,
                          .beta2 = 0.99f,
                          .eps = 1e-6f,
                          .bc1 = 1.0f - 0.9f * 0.9f,
                          .bc2_sqrt = sqrtf(1.0f - 0.99f * 0.99f),
                          .grad_scale = 0.5f,
                          .momentum = 0.9f,
                          .nesterov = 1,
                          .trust = 0.7f};
    static const char *const names[] = {"sgd", "lion", "lamb_update+apply"};
    for (int k = 0; k < 3; k++) {
        outv p = out_new(n), m = out_new(n), v = out_new(n), g = out_new(n);
        BOTH(P, names[k], c, {
            float *dp = fbuf(c, p0, n), *dg = fbuf(c, g0, n), *dm = fbuf(c, m0, n), *dv = fbuf(c, v0, n);
            if (k < 2) {
                OP(c,
                   sv_be_optim_elem(c->be, k == 0 ? SV_OPTIM_OP_SGD : SV_OPTIM_OP_LION, dp, dg, dm, dv, n, &h, 0.05f));
            } else {
                OP(c, sv_be_optim_elem(c->be, SV_OPTIM_OP_LAMB_UPDATE, dp, dg, dm, dv, n, &h, 0.05f));
                OP(c, sv_be_optim_elem(c->be, SV_OPTIM_OP_LAMB_APPLY, dp, dg, dm, dv, n, &h, 0.05f));
            }
            get_f(c, &p, dp), get_f(c, &m, dm), get_f(c, &v, dv), get_f(c, &g, dg);
        });
        CMP(P, names[k], "p", p, 0.0);
        CMP(P, names[k], "m", m, 0.0);
        CMP(P, names[k], "v", v, 0.0);
        CMP(P, names[k], "g", g, 0.0);
        out_free(&p), out_free(&m), out_free(&v), out_free(&g);
    }
    free(p0), free(g0), free(m0), free(v0);
}

/* Create the variant's two backends; a failure is recorded and the variant skipped (0). */
static int make_pair(pair *P, const char *variant, sv_dtype dt, int attn_fallback) {
    memset(P, 0, sizeof *P);
    sv_backend_config gcfg = {
        .device = SV_DEVICE_CUDA, .compute_dtype = dt, .device_index = 0, .attn_fallback = attn_fallback};
    sv_backend_config ccfg = {.device = SV_DEVICE_CPU, .compute_dtype = dt, .threads = 2, .cpu = {.f32_storage = 1}};
    sv_backend *g = NULL, *cpu = NULL;
    sv_status st = sv_backend_create(&gcfg, &g);
    if (st != SV_OK) {
        record_error("backend", variant, "sv_backend_create(cuda)", "cuda", st, sv_err_msg());
        sv_err_clear();
        return 0;
    }
    st = sv_backend_create(&ccfg, &cpu);
    if (st != SV_OK) {
        record_error("backend", variant, "sv_backend_create(cpu)", "cpu", st, sv_err_msg());
        sv_err_clear();
        sv_backend_destroy(g);
        return 0;
    }
    for (int r = 0; r < RUNS; r++) P->c[r].be = r == RUN_CPU ? cpu : g, P->c[r].idx = r;
    P->variant = variant;
    P->tol = dt == SV_BF16 ? 3e-2 : 1e-3;
    return 1;
}

static void run_variant(sv_dtype dt, int attn_fallback, int attention_only) {
    pair P;
    char variant[32];
    snprintf(variant, sizeof variant, "%s%s", sv_dtype_name(dt), attn_fallback ? "/attn-fallback" : "");
    if (!make_pair(&P, variant, dt, attn_fallback)) return;
    printf("== %s on %s vs %s\n", variant, sv_be_device_name(P.c[RUN_CUDA].be), sv_be_device_name(P.c[RUN_CPU].be));
    if (!attention_only) {
        test_vector_ops(&P);
        test_linear(&P, 130, 384, 128, 1, 0);
        test_linear(&P, 130, 512, 128, 1, 1);
        test_linear(&P, 64, 10, 96, 1, 0);     /* classifier head: odd N (ld 20 bytes in bf16) */
        test_linear(&P, 65, 96, 48, 0, 0);     /* no bias, odd M */
        test_linear(&P, 4160, 2176, 64, 1, 1); /* bf16: the fp32 result in two staged row chunks */
        test_linear_epilogue(&P, 64, 1000, 1); /* bias + GELU epilogue, bit for bit */
        test_linear_epilogue(&P, 64, 1000, 0); /* bias epilogue, bit for bit */
        test_layernorm(&P, 130, 192);
        test_pointwise(&P);
        test_xent(&P, 16, 37);
        test_embed(&P, 2, 3, 16, 4, 64);
        test_embed_reg(&P, 2, 1 + 4 + 16, 64, 4, 0);
        test_embed_reg(&P, 2, 1 + 4 + 16, 64, 4, 1);
        test_recipe(&P, 3, 50, 96, 37);
        test_adamw(&P);
        test_ema(&P);
        test_optim_elem(&P);
    }
    test_attention(&P, 2, 65, 128, 4);            /* dh 32 */
    test_attention(&P, 2, 197, 192, 3);           /* ViT-Ti/16 at 224: dh 64 */
    test_attention(&P, 3, 50, 128, 2);            /* dh 64, T = 50 */
    test_attention_drop(&P, 2, 50, 192, 3, 0.9f); /* DeiT-Ti/ViT-Ti width at T = 50, dh 64 */
    test_attention_drop(&P, 3, 131, 60, 5, 0.6f); /* odd: T > 128 threads, dh 12, heavy dropout */
    sv_backend_destroy(P.c[RUN_CUDA].be);
    sv_backend_destroy(P.c[RUN_CPU].be);
}

int main(int argc, char **argv) {
    if (!sv_backend_available(SV_DEVICE_CUDA)) SKIP("no usable CUDA device (or no CUDA backend in this build)");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            if (opsrep_open(argv[++i]) != 0) {
                perror(argv[i]);
                return 1;
            }
        } else {
            fprintf(stderr, "usage: %s [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    run_variant(SV_F32, 0, 0);
    run_variant(SV_BF16, 0, 0);
    run_variant(SV_BF16, 1, 1);
    int failures = opsrep_failures();
    printf("%d of %d checks failed\n", failures, opsrep_checks());
    opsrep_close();
    return failures ? 1 : 0;
}
