/* CPU backend, bf16 compute: bf16 storage of the compute buffers (cfg.cpu.f32_storage = -1,
 * 2 bytes per element) gives exactly the bits of fp32 storage (f32_storage = 1, 4 bytes holding
 * bf16 values), op by op (cpu_backend.h "Storage").
 *
 * Every op of backend.h runs on two backends on the best bf16 GEMM engine, 1 and 2 threads, at
 * ViT-like shapes (M = 2*197 and 3*50 rows, D = 192, H = 3, C = 10 and 1000 classes, K = 48) and
 * a few wide ones (rows longer than one SV_CPU_CHUNK stack chunk): both get the same
 * bf16-representable inputs (fp32 values on one, their bf16 halves on the other), accumulated
 * outputs start from the same non-zero contents, and then every compute output must satisfy
 * narrow(fp32-storage output) == bf16-storage output, bit for bit, and every f32 output must be
 * identical (memcmp). The fp32-storage outputs must also be bf16 values (the contract both share).
 * An act16 LayerNorm row longer than SV_CPU_ROW_MAX is refused with SV_ERR_UNSUPPORTED.
 *
 * The bf16-storage buffers carry a guard of 2n bytes after their 2n bytes, which must stay
 * untouched.
 *
 * Usage: test_ops_storage [CASE...]: only the cases named (a trailing '*' matches a prefix:
 * 'layernorm*'); no argument runs them all. Skips (77)
 * when this CPU has no bf16 GEMM engine (no bf16 storage possible). Each failing case prints its
 * name and the first differing element; the exit status is 1 when any case failed. */
#include "ops_util.h"

/* The two backends under test: f = fp32 storage, h = bf16 storage. */
static struct {
    sv_backend *f, *h;
    int threads;
} P;
static const char *g_case; /* the case running, for failure messages */
static int g_case_failed;

static void fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "FAIL %s (threads %d): ", g_case, P.threads);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    g_case_failed = 1;
}

/* A compute buffer on both backends (f: n floats, h: n bf16) and an f32 buffer on both. */
typedef struct cb {
    float *f;
    uint16_t *h;
    size_t n;
} cb;
typedef struct fb {
    float *f, *h;
    size_t n;
} fb;

static void *be_alloc(sv_backend *be, size_t bytes) {
    void *p = NULL;
    CHECK_OK(sv_be_alloc(be, bytes ? bytes : 4, &p));
    return p;
}

/* The bf16-storage side is allocated at 4 bytes per element: its upper half is a guard (GUARD
 * halves) that no op may write, so an op still treating the buffer as fp32, or writing past its
 * end, fails its case instead of corrupting the heap. */
#define GUARD 0x7fa5u /* a NaN pattern no op produces */

/* Compute buffer holding the bf16 values v (n). */
static cb cb_from(const float *v, size_t n) {
    cb b = {be_alloc(P.f, n * 4), be_alloc(P.h, n * 4), n};
    uint16_t *h = malloc((n ? n : 1) * 4);
    CHECK(h);
    for (size_t i = 0; i < n; i++) {
        CHECK(sv_round_bf16(v[i]) == v[i] || v[i] != v[i]);
        h[i] = sv_f32_to_bf16(v[i]);
        h[n + i] = GUARD;
    }
    CHECK_OK(sv_be_upload(P.f, b.f, v, n * 4));
    CHECK_OK(sv_be_upload(P.h, b.h, h, n * 4));
    free(h);
    return b;
}
static float *rand_vals(size_t n, uint64_t key, double scale, int round) {
    float *v = malloc((n ? n : 1) * sizeof(float));
    CHECK(v);
    for (size_t i = 0; i < n; i++) {
        v[i] = (float)(scale * sv_rand_normal(key, i));
        if (round) v[i] = sv_round_bf16(v[i]);
    }
    return v;
}
/* Compute buffer of N(0, scale^2) values rounded to bf16. */
static cb cb_rand(size_t n, uint64_t key, double scale) {
    float *v = rand_vals(n, key, scale, 1);
    cb b = cb_from(v, n);
    free(v);
    return b;
}
/* f32 buffer holding v (n) on both. */
static fb fb_from(const float *v, size_t n) {
    fb b = {be_alloc(P.f, n * 4), be_alloc(P.h, n * 4), n};
    CHECK_OK(sv_be_upload(P.f, b.f, v, n * 4));
    CHECK_OK(sv_be_upload(P.h, b.h, v, n * 4));
    return b;
}
/* f32 buffer of N(0, scale^2) values (not rounded). */
static fb fb_rand(size_t n, uint64_t key, double scale) {
    float *v = rand_vals(n, key, scale, 0);
    fb b = fb_from(v, n);
    free(v);
    return b;
}
static void cb_free(cb b) {
    sv_be_free(P.f, b.f);
    sv_be_free(P.h, b.h);
}
static void fb_free(fb b) {
    sv_be_free(P.f, b.f);
    sv_be_free(P.h, b.h);
}

/* narrow(f) == h bitwise, and f holds bf16 values; reports the first difference. */
static void cb_same(const char *what, cb b) {
    float *f = malloc((b.n ? b.n : 1) * 4);
    uint16_t *h = malloc((b.n ? b.n : 1) * 4);
    CHECK(f && h);
    CHECK_OK(sv_be_download(P.f, f, b.f, b.n * 4));
    CHECK_OK(sv_be_download(P.h, h, b.h, b.n * 4));
    for (size_t i = b.n; i < 2 * b.n; i++)
        if (h[i] != GUARD) {
            char at[160];
            snprintf(at, sizeof at, "%s: bf16 storage wrote past its %zu elements (at half %zu)", what, b.n, i);
            fail("%s%s", at, "");
            break;
        }
    for (size_t i = 0; i < b.n; i++) {
        uint32_t fu;
        memcpy(&fu, &f[i], 4);
        if (sv_f32_to_bf16(f[i]) != h[i] || (fu & 0xffffu) != 0) {
            char at[160], vals[160];
            snprintf(at, sizeof at, "%s element %zu of %zu", what, i, b.n);
            snprintf(vals, sizeof vals, "fp32 storage %.9g (0x%08x), bf16 storage %.9g (0x%04x)", (double)f[i],
                     (unsigned)fu, (double)sv_bf16_to_f32(h[i]), (unsigned)h[i]);
            fail("%s: %s", at, vals);
            break;
        }
    }
    free(f);
    free(h);
}
/* f32 outputs identical (memcmp); reports the first difference. */
static void fb_same(const char *what, fb b) {
    float *f = malloc((b.n ? b.n : 1) * 4), *h = malloc((b.n ? b.n : 1) * 4);
    CHECK(f && h);
    CHECK_OK(sv_be_download(P.f, f, b.f, b.n * 4));
    CHECK_OK(sv_be_download(P.h, h, b.h, b.n * 4));
    for (size_t i = 0; i < b.n; i++)
        if (memcmp(&f[i], &h[i], 4)) {
            char at[160], vals[160];
            snprintf(at, sizeof at, "%s (f32) element %zu of %zu", what, i, b.n);
            snprintf(vals, sizeof vals, "fp32 storage %.9g, bf16 storage %.9g", (double)f[i], (double)h[i]);
            fail("%s: %s", at, vals);
            break;
        }
    free(f);
    free(h);
}

/* Run CALL on both backends: inside it `be` is the backend, C(b) the compute pointer of cb b,
 * F(b) the pointer of fb b. A failed op fails the case. */
#define C(b) (S ? (void *)(b).h : (void *)(b).f)
#define F(b) (S ? (b).h : (b).f)
#define BOTH(CALL) \
    do { \
        for (int S = 0; S < 2; S++) { \
            sv_backend *be = S ? P.h : P.f; \
            sv_status st_ = (CALL); \
            if (st_ != SV_OK) fail("%s storage: %s", S ? "bf16" : "fp32", sv_err_msg()); \
        } \
    } while (0)

/* ---- casts and f32 vector ops ---- */

static void case_casts(void) {
    const size_t n = 100003;
    float *v = rand_vals(n, 1, 3.0, 0); /* not bf16 values: f32_to_compute rounds */
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 3.4e38f, 1.00390625f, 1.01171875f};
    memcpy(v, special, sizeof special);
    fb src = fb_from(v, n);
    cb dst = cb_rand(n, 2, 1.0);
    BOTH(sv_be_f32_to_compute(be, C(dst), F(src), n));
    cb_same("f32_to_compute", dst);
    fb back = fb_rand(n, 3, 1.0);
    BOTH(sv_be_compute_to_f32(be, F(back), C(dst), n));
    fb_same("compute_to_f32", back);
    /* the raw bf16 casts and the f32 vector ops do not depend on the storage: the same bits */
    cb raw = cb_rand(n, 4, 1.0);
    BOTH(sv_be_f32_to_bf16(be, S ? raw.h : (uint16_t *)raw.f, F(src), n));
    fb w = fb_rand(n, 5, 1.0);
    BOTH(sv_be_bf16_to_f32(be, F(w), S ? raw.h : (uint16_t *)raw.f, n));
    fb_same("bf16_to_f32", w);
    BOTH(sv_be_add_f32(be, F(w), F(back), n));
    fb_same("add_f32", w);
    double sq[2];
    for (int S = 0; S < 2; S++) CHECK_OK(sv_be_sumsq_f32(S ? P.h : P.f, F(w), n, &sq[S]));
    if (memcmp(&sq[0], &sq[1], sizeof sq[0])) fail("%s%s", "sumsq_f32 differs", "");
    free(v);
    cb_free(dst);
    cb_free(raw);
    fb_free(src);
    fb_free(back);
    fb_free(w);
}

static void case_optim(void) {
    const size_t n = 70001;
    fb p = fb_rand(n, 10, 1.0), g = fb_rand(n, 11, 0.1), m = fb_rand(n, 12, 0.1), v = fb_rand(n, 13, 0.0);
    sv_adamw_hparams ah = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .bc1 = 0.1f, .bc2 = 0.001f, .grad_scale = 0.5f};
    BOTH(sv_be_adamw(be, F(p), F(g), F(m), F(v), n, &ah, 0.05f));
    sv_optim_hparams oh = {.lr = 1e-2f,
                           .beta1 = 0.9f,
                           .beta2 = 0.99f,
                           .eps = 1e-6f,
                           .bc1 = 0.1f,
                           .bc2_sqrt = 0.1f,
                           .grad_scale = 1.0f,
                           .momentum = 0.9f,
                           .nesterov = 1,
                           .trust = 0.7f};
    for (int op = SV_OPTIM_OP_SGD; op <= SV_OPTIM_OP_LAMB_APPLY; op++)
        BOTH(sv_be_optim_elem(be, op, F(p), F(g), F(m), F(v), n, &oh, 0.01f));
    BOTH(sv_be_ema(be, F(m), F(p), n, 0.01f));
    fb_same("optimizer p", p);
    fb_same("optimizer g", g);
    fb_same("optimizer m", m);
    fb_same("optimizer v", v);
    fb_free(p);
    fb_free(g);
    fb_free(m);
    fb_free(v);
}

/* ---- linear ---- */

typedef struct lshape {
    int M, N, K;
} lshape;
static const lshape LIN[] = {{394, 576, 192}, {150, 10, 192}, {394, 192, 48}, {150, 768, 192}};
#define NLIN (sizeof LIN / sizeof LIN[0])

static void linear_fwd_case(int bias, int gelu) {
    for (size_t s = 0; s < NLIN; s++) {
        const int M = LIN[s].M, N = LIN[s].N, K = LIN[s].K;
        cb in = cb_rand((size_t)M * K, 20, 1.0), W = cb_rand((size_t)N * K, 21, 0.1), b = cb_rand((size_t)N, 22, 0.5);
        cb out = cb_rand((size_t)M * N, 23, 1.0), pre = cb_rand((size_t)M * N, 24, 1.0);
        BOTH(sv_be_linear_fwd(be, C(out), gelu ? C(pre) : NULL, C(in), C(W), bias ? C(b) : NULL, M, N, K));
        cb_same("out", out);
        if (gelu) cb_same("pre_gelu", pre);
        cb_free(in);
        cb_free(W);
        cb_free(b);
        cb_free(out);
        cb_free(pre);
    }
}
static void case_linear_fwd(void) { linear_fwd_case(0, 0); }
static void case_linear_fwd_bias(void) { linear_fwd_case(1, 0); }
static void case_linear_fwd_gelu(void) { linear_fwd_case(0, 1); }
static void case_linear_fwd_bias_gelu(void) { linear_fwd_case(1, 1); }

static void linear_bwd_case(int gelu, int with_db, int with_din) {
    for (size_t s = 0; s < NLIN; s++) {
        const int M = LIN[s].M, N = LIN[s].N, K = LIN[s].K;
        cb in = cb_rand((size_t)M * K, 30, 1.0), W = cb_rand((size_t)N * K, 31, 0.1);
        cb d_out = cb_rand((size_t)M * N, 32, 0.1), pre = cb_rand((size_t)M * N, 33, 1.0);
        cb d_in = cb_rand((size_t)M * K, 34, 1.0);
        fb dW = fb_rand((size_t)N * K, 35, 0.01), db = fb_rand((size_t)N, 36, 0.01); /* accumulated into */
        BOTH(sv_be_linear_bwd(be, with_din ? C(d_in) : NULL, F(dW), with_db ? F(db) : NULL, C(d_out), C(in), C(W),
                              gelu ? C(pre) : NULL, M, N, K));
        if (with_din) cb_same("d_in", d_in);
        cb_same("d_out (after the GELU backward in place)", d_out);
        fb_same("dW", dW);
        fb_same("db", db);
        cb_free(in);
        cb_free(W);
        cb_free(d_out);
        cb_free(pre);
        cb_free(d_in);
        fb_free(dW);
        fb_free(db);
    }
}
static void case_linear_bwd(void) { linear_bwd_case(0, 1, 1); }
static void case_linear_bwd_nobias(void) { linear_bwd_case(0, 0, 1); }
static void case_linear_bwd_gelu(void) { linear_bwd_case(1, 1, 1); }
static void case_linear_bwd_gelu_nodin(void) { linear_bwd_case(1, 1, 0); }
static void case_linear_bwd_gelu_nobias(void) { linear_bwd_case(1, 0, 1); }

/* ---- attention ---- */

typedef struct ashape {
    int B, T, D, H;
} ashape;
static const ashape ATT[] = {{2, 197, 192, 3}, {3, 50, 192, 3}};

/* saved/scratch of both backends: saved is f32 (compared), scratch per backend's own size. */
static void attn_bufs(const ashape *a, fb *saved, void **scratch) {
    size_t sf = sv_be_attention_saved_bytes(P.f, a->B, a->T, a->D, a->H);
    size_t sh = sv_be_attention_saved_bytes(P.h, a->B, a->T, a->D, a->H);
    if (sf != sh) fail("%s%s", "attention_saved_bytes differ between the storages", "");
    float *z = calloc(sf / 4 + 1, 4);
    CHECK(z);
    *saved = fb_from(z, sf / 4);
    free(z);
    scratch[0] = be_alloc(P.f, sv_be_attention_scratch_bytes(P.f, a->B, a->T, a->D, a->H));
    scratch[1] = be_alloc(P.h, sv_be_attention_scratch_bytes(P.h, a->B, a->T, a->D, a->H));
}

static void attention_case(int drop, int bwd) {
    for (size_t s = 0; s < sizeof ATT / sizeof ATT[0]; s++) {
        const ashape *a = &ATT[s];
        const size_t nq = (size_t)a->B * a->T * 3 * a->D, no = (size_t)a->B * a->T * a->D;
        const sv_drop d = {.key = 0xabcdef, .sample0 = 7, .keep = 0.8f};
        const sv_drop *dp = drop ? &d : NULL;
        cb qkv = cb_rand(nq, 40, 1.0), out = cb_rand(no, 41, 1.0);
        fb saved;
        void *scratch[2];
        attn_bufs(a, &saved, scratch);
        if (!bwd) {
            BOTH(sv_be_attention_fwd_drop(be, C(out), F(saved), scratch[S], C(qkv), a->B, a->T, a->D, a->H, dp));
            cb_same("out", out);
            fb_same("saved", saved);
        } else {
            /* the backward's inputs from the fp32-storage forward, given to both (so this case checks
             * the backward alone) */
            CHECK_OK(sv_be_attention_fwd_drop(P.f, out.f, saved.f, scratch[0], qkv.f, a->B, a->T, a->D, a->H, dp));
            float *o = malloc(no * 4), *sv = malloc(saved.n * 4 + 4);
            CHECK(o && sv);
            CHECK_OK(sv_be_download(P.f, o, out.f, no * 4));
            CHECK_OK(sv_be_download(P.f, sv, saved.f, saved.n * 4));
            cb out2 = cb_from(o, no);
            fb saved2 = fb_from(sv, saved.n);
            cb d_out = cb_rand(no, 42, 0.1), d_qkv = cb_rand(nq, 43, 1.0);
            BOTH(sv_be_attention_bwd_drop(be, C(d_qkv), scratch[S], C(d_out), C(qkv), C(out2), F(saved2), a->B, a->T,
                                          a->D, a->H, dp));
            cb_same("d_qkv", d_qkv);
            free(o);
            free(sv);
            cb_free(out2);
            fb_free(saved2);
            cb_free(d_out);
            cb_free(d_qkv);
        }
        sv_be_free(P.f, scratch[0]);
        sv_be_free(P.h, scratch[1]);
        fb_free(saved);
        cb_free(qkv);
        cb_free(out);
    }
}
static void case_attention_fwd(void) { attention_case(0, 0); }
static void case_attention_fwd_drop(void) { attention_case(1, 0); }
static void case_attention_bwd(void) { attention_case(0, 1); }
static void case_attention_bwd_drop(void) { attention_case(1, 1); }

/* ---- element-wise ---- */

/* sizes: ViT-like activations, one shorter than a chunk, an odd one across chunk boundaries */
static const size_t NEL[] = {394 * 768, 1000, 150 * 192 + 4099};
#define NNEL (sizeof NEL / sizeof NEL[0])

static void case_gelu_fwd(void) {
    for (size_t s = 0; s < NNEL; s++) {
        cb x = cb_rand(NEL[s], 50, 2.0), out = cb_rand(NEL[s], 51, 1.0);
        BOTH(sv_be_gelu_fwd(be, C(out), C(x), NEL[s]));
        cb_same("out", out);
        cb_free(x);
        cb_free(out);
    }
}
static void case_gelu_bwd(void) {
    for (size_t s = 0; s < NNEL; s++) {
        cb x = cb_rand(NEL[s], 52, 2.0), dy = cb_rand(NEL[s], 53, 0.1), dx = cb_rand(NEL[s], 54, 1.0);
        BOTH(sv_be_gelu_bwd(be, C(dx), C(dy), C(x), NEL[s]));
        cb_same("d_x", dx);
        BOTH(sv_be_gelu_bwd(be, C(dy), C(dy), C(x), NEL[s])); /* in place */
        cb_same("d_x in place", dy);
        cb_free(x);
        cb_free(dy);
        cb_free(dx);
    }
}
static void case_residual_add(void) {
    for (size_t s = 0; s < NNEL; s++) {
        cb a = cb_rand(NEL[s], 55, 1.0), b = cb_rand(NEL[s], 56, 1.0), out = cb_rand(NEL[s], 57, 1.0);
        BOTH(sv_be_residual_add(be, C(out), C(a), C(b), NEL[s]));
        cb_same("out", out);
        BOTH(sv_be_residual_add(be, C(a), C(a), C(b), NEL[s])); /* out = a */
        cb_same("out aliasing a", a);
        cb_free(a);
        cb_free(b);
        cb_free(out);
    }
}

/* ---- row-wise: LayerNorm, losses ---- */

typedef struct rshape {
    int M, C;
} rshape;
static const rshape LN[] = {{394, 192}, {150, 192}, {7, 2500}, {5, 4099}};
#define NLN (sizeof LN / sizeof LN[0])

static void case_layernorm_fwd(void) {
    for (size_t s = 0; s < NLN; s++) {
        const int M = LN[s].M, Cc = LN[s].C;
        cb x = cb_rand((size_t)M * Cc, 60, 2.0), w = cb_rand((size_t)Cc, 61, 1.0), b = cb_rand((size_t)Cc, 62, 0.5);
        cb out = cb_rand((size_t)M * Cc, 63, 1.0);
        fb mean = fb_rand((size_t)M, 64, 1.0), rstd = fb_rand((size_t)M, 65, 1.0);
        BOTH(sv_be_layernorm_fwd(be, C(out), F(mean), F(rstd), C(x), C(w), C(b), M, Cc));
        cb_same("out", out);
        fb_same("mean", mean);
        fb_same("rstd", rstd);
        cb_free(x);
        cb_free(w);
        cb_free(b);
        cb_free(out);
        fb_free(mean);
        fb_free(rstd);
    }
}
static void case_layernorm_bwd(void) {
    for (size_t s = 0; s < NLN; s++) {
        const int M = LN[s].M, Cc = LN[s].C;
        cb x = cb_rand((size_t)M * Cc, 70, 2.0), w = cb_rand((size_t)Cc, 71, 1.0), b = cb_rand((size_t)Cc, 72, 0.5);
        cb out = cb_rand((size_t)M * Cc, 73, 1.0), dy = cb_rand((size_t)M * Cc, 74, 0.1);
        cb dx = cb_rand((size_t)M * Cc, 75, 0.1); /* accumulated into */
        fb mean = fb_rand((size_t)M, 76, 1.0), rstd = fb_rand((size_t)M, 77, 1.0);
        fb dw = fb_rand((size_t)Cc, 78, 0.1), db = fb_rand((size_t)Cc, 79, 0.1);
        BOTH(sv_be_layernorm_fwd(be, C(out), F(mean), F(rstd), C(x), C(w), C(b), M, Cc));
        fb_same("mean (forward)", mean);
        BOTH(sv_be_layernorm_bwd(be, C(dx), F(dw), F(db), C(dy), C(x), C(w), F(mean), F(rstd), M, Cc));
        cb_same("d_x", dx);
        fb_same("dw", dw);
        fb_same("db", db);
        cb_free(x);
        cb_free(w);
        cb_free(b);
        cb_free(out);
        cb_free(dy);
        cb_free(dx);
        fb_free(mean);
        fb_free(rstd);
        fb_free(dw);
        fb_free(db);
    }
}
/* A row longer than SV_CPU_ROW_MAX (16384): fp32 storage runs it, bf16 storage refuses it. */
static void case_layernorm_row_limit(void) {
    const int M = 2, Cc = 16385;
    cb x = cb_rand((size_t)M * Cc, 80, 1.0), w = cb_rand((size_t)Cc, 81, 1.0), out = cb_rand((size_t)M * Cc, 82, 1.0);
    fb mean = fb_rand((size_t)M, 83, 1.0), rstd = fb_rand((size_t)M, 84, 1.0);
    for (int S = 0; S < 2; S++) {
        sv_status st = sv_be_layernorm_fwd(S ? P.h : P.f, C(out), F(mean), F(rstd), C(x), C(w), C(w), M, Cc);
        if (S == 0 && st != SV_OK) fail("fp32 storage refused: %s%s", sv_err_msg(), "");
        if (S == 1 &&
            (st != SV_ERR_UNSUPPORTED || !strstr(sv_err_msg(), "layernorm_fwd") || !strstr(sv_err_msg(), "16384")))
            fail("bf16 storage: want SV_ERR_UNSUPPORTED naming layernorm_fwd and 16384, got %s: %s", sv_status_str(st),
                 sv_err_msg());
        if (S == 0) continue;
        st = sv_be_layernorm_bwd(P.h, out.h, NULL, NULL, x.h, x.h, w.h, mean.h, rstd.h, M, Cc); /* refused first */
        if (st != SV_ERR_UNSUPPORTED || !strstr(sv_err_msg(), "layernorm_bwd"))
            fail("bf16 storage backward: want SV_ERR_UNSUPPORTED naming layernorm_bwd, got %s: %s", sv_status_str(st),
                 sv_err_msg());
    }
    cb_free(x);
    cb_free(w);
    cb_free(out);
    fb_free(mean);
    fb_free(rstd);
}

/* losses: (B, K) with K across chunks and beyond SV_CPU_ROW_MAX (ImageNet-21k) */
static const rshape LOSS[] = {{128, 10}, {150, 1000}, {3, 21843}};
#define NLOSS (sizeof LOSS / sizeof LOSS[0])

static fb labels_of(int B, int K) {
    int32_t *l = malloc((size_t)B * 4);
    CHECK(l);
    for (int b = 0; b < B; b++) l[b] = (int32_t)((b * 7919u + 13u) % (unsigned)K);
    fb r = fb_from((const float *)l, (size_t)B);
    free(l);
    return r;
}
static fb soft_of(int B, int K) {
    float *t = rand_vals((size_t)B * K, 90, 1.0, 0);
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += (t[(size_t)b * K + k] = fabsf(t[(size_t)b * K + k]));
        for (int k = 0; k < K; k++) t[(size_t)b * K + k] = (float)(t[(size_t)b * K + k] / s);
    }
    fb r = fb_from(t, (size_t)B * K);
    free(t);
    return r;
}

static void case_softmax_xent(void) {
    for (size_t s = 0; s < NLOSS; s++) {
        const int B = LOSS[s].M, K = LOSS[s].C;
        cb z = cb_rand((size_t)B * K, 91, 3.0), dz = cb_rand((size_t)B * K, 92, 1.0);
        fb lab = labels_of(B, K), soft = soft_of(B, K), loss = fb_rand((size_t)B, 93, 1.0);
        for (int v = 0; v < 3; v++) { /* labels + smoothing, soft targets, loss only */
            BOTH(sv_be_softmax_xent(be, F(loss), v == 2 ? NULL : C(dz), C(z), v == 1 ? NULL : (int32_t *)F(lab),
                                    v == 1 ? F(soft) : NULL, B, K, v == 1 ? 0.0f : 0.1f, 1.0f / 384));
            fb_same("losses", loss);
            cb_same("d_logits", dz);
        }
        cb_free(z);
        cb_free(dz);
        fb_free(lab);
        fb_free(soft);
        fb_free(loss);
    }
}
static void case_sigmoid_bce(void) {
    for (size_t s = 0; s < NLOSS; s++) {
        const int B = LOSS[s].M, K = LOSS[s].C;
        cb z = cb_rand((size_t)B * K, 94, 3.0), dz = cb_rand((size_t)B * K, 95, 1.0);
        fb lab = labels_of(B, K), soft = soft_of(B, K), loss = fb_rand((size_t)B, 96, 1.0);
        for (int v = 0; v < 4; v++) { /* labels, soft + threshold, labels summed over classes, loss only */
            BOTH(sv_be_sigmoid_bce(be, F(loss), v == 3 ? NULL : C(dz), C(z), v == 1 ? NULL : (int32_t *)F(lab),
                                   v == 1 ? F(soft) : NULL, B, K, 0.1f, v == 1 ? 1e-4f : 0.0f, v == 2, 0.5f));
            fb_same("losses", loss);
            cb_same("d_logits", dz);
        }
        cb_free(z);
        cb_free(dz);
        fb_free(lab);
        fb_free(soft);
        fb_free(loss);
    }
}

/* ---- patch embedding, tokens ---- */

static void case_im2col(void) {
    const int shapes[][4] = {{2, 3, 224, 16}, {3, 3, 32, 4}, {1, 3, 96, 48}}; /* B, C, H = W, p */
    for (int s = 0; s < 3; s++) {
        const int B = shapes[s][0], Cc = shapes[s][1], H = shapes[s][2], p = shapes[s][3];
        const size_t n = (size_t)B * (H / p) * (H / p) * Cc * p * p;
        fb img = fb_rand((size_t)B * Cc * H * H, 100, 1.0); /* f32 pixels, not bf16 values */
        cb out = cb_rand(n, 101, 1.0);
        BOTH(sv_be_im2col(be, C(out), F(img), B, Cc, H, H, p));
        cb_same("patches", out);
        fb_free(img);
        cb_free(out);
    }
}

typedef struct tshape {
    int B, T, D;
} tshape;
static const tshape TOK[] = {{2, 197, 192}, {3, 50, 192}, {2, 5, 2500}};
#define NTOK (sizeof TOK / sizeof TOK[0])

static void case_embed(void) {
    for (size_t s = 0; s < NTOK; s++)
        for (int with_cls = 0; with_cls < 2; with_cls++) {
            const int B = TOK[s].B, T = TOK[s].T, D = TOK[s].D, Tp = with_cls ? T - 1 : T;
            cb po = cb_rand((size_t)B * Tp * D, 110, 1.0), cls = cb_rand((size_t)D, 111, 1.0);
            cb pos = cb_rand((size_t)T * D, 112, 0.1), x = cb_rand((size_t)B * T * D, 113, 1.0);
            BOTH(sv_be_embed_fwd(be, C(x), C(po), with_cls ? C(cls) : NULL, NULL, 0, C(pos), 0, B, T, D));
            cb_same(with_cls ? "x (cls)" : "x (no cls)", x);
            fb d_cls = fb_rand((size_t)D, 114, 0.1), d_pos = fb_rand((size_t)T * D, 115, 0.1);
            BOTH(sv_be_embed_bwd(be, C(po), with_cls ? F(d_cls) : NULL, NULL, 0, F(d_pos), 0, C(x), B, T, D));
            cb_same("d_patch_out", po);
            fb_same("d_cls", d_cls);
            fb_same("d_pos", d_pos);
            cb_free(po);
            cb_free(cls);
            cb_free(pos);
            cb_free(x);
            fb_free(d_cls);
            fb_free(d_pos);
        }
}

static void case_cls_select(void) {
    for (size_t s = 0; s < NTOK; s++) {
        const int B = TOK[s].B, T = TOK[s].T, D = TOK[s].D;
        cb x = cb_rand((size_t)B * T * D, 120, 1.0), out = cb_rand((size_t)B * D, 121, 1.0);
        BOTH(sv_be_cls_select(be, C(out), C(x), B, T, D));
        cb_same("out", out);
        cb dx = cb_rand((size_t)B * T * D, 122, 0.1); /* accumulated into */
        BOTH(sv_be_cls_select_bwd(be, C(dx), C(out), B, T, D));
        cb_same("dx", dx);
        cb_free(x);
        cb_free(out);
        cb_free(dx);
    }
}

static void case_token_mean(void) {
    for (size_t s = 0; s < NTOK; s++)
        for (int first = 0; first < 2; first++) {
            const int B = TOK[s].B, T = TOK[s].T, D = TOK[s].D;
            cb x = cb_rand((size_t)B * T * D, 130, 1.0), out = cb_rand((size_t)B * D, 131, 1.0);
            BOTH(sv_be_token_mean(be, C(out), C(x), B, T, D, first));
            cb_same("out", out);
            BOTH(sv_be_token_mean_bwd(be, C(x), C(out), B, T, D, first)); /* accumulates into x */
            cb_same("dx", x);
            cb_free(x);
            cb_free(out);
        }
}

/* ---- training-recipe ops ---- */

static void case_drop(void) {
    for (size_t s = 0; s < NTOK; s++) {
        const int B = TOK[s].B;
        const size_t n = (size_t)TOK[s].T * TOK[s].D;
        const sv_drop d = {.key = 0x5eed, .sample0 = 11, .keep = 0.7f};
        for (int per_elem = 0; per_elem < 2; per_elem++) {
            cb x = cb_rand((size_t)B * n, 140 + per_elem, 1.0);
            BOTH(sv_be_drop(be, C(x), &d, B, n, per_elem ? 1 : n));
            cb_same(per_elem ? "x (dropout)" : "x (drop path)", x);
            cb_free(x);
        }
    }
}

static void case_scale_cols(void) {
    for (size_t s = 0; s < NTOK; s++) {
        const int M = TOK[s].B * TOK[s].T, D = TOK[s].D;
        cb x = cb_rand((size_t)M * D, 150, 1.0), g = cb_rand((size_t)D, 151, 0.1), out = cb_rand((size_t)M * D, 152, 1);
        BOTH(sv_be_scale_cols(be, C(out), C(x), C(g), M, D));
        cb_same("out", out);
        BOTH(sv_be_scale_cols(be, C(out), C(out), C(g), M, D)); /* in place */
        cb_same("out in place", out);
        cb dy = cb_rand((size_t)M * D, 153, 0.1), dx = cb_rand((size_t)M * D, 154, 1.0);
        fb dg = fb_rand((size_t)D, 155, 0.1); /* accumulated into */
        BOTH(sv_be_scale_cols_bwd(be, C(dx), F(dg), C(dy), C(x), C(g), M, D));
        cb_same("d_x", dx);
        fb_same("d_gamma", dg);
        BOTH(sv_be_scale_cols_bwd(be, C(dy), F(dg), C(dy), C(x), C(g), M, D)); /* d_x = d_out */
        cb_same("d_x in place", dy);
        fb_same("d_gamma (second)", dg);
        cb_free(x);
        cb_free(g);
        cb_free(out);
        cb_free(dy);
        cb_free(dx);
        fb_free(dg);
    }
}

static const struct {
    const char *name;
    void (*fn)(void);
} CASES[] = {
    {"casts", case_casts},
    {"optim", case_optim},
    {"linear_fwd", case_linear_fwd},
    {"linear_fwd_bias", case_linear_fwd_bias},
    {"linear_fwd_gelu", case_linear_fwd_gelu},
    {"linear_fwd_bias_gelu", case_linear_fwd_bias_gelu},
    {"linear_bwd", case_linear_bwd},
    {"linear_bwd_gelu_nobias", case_linear_bwd_gelu_nobias},
    {"linear_bwd_nobias", case_linear_bwd_nobias},
    {"linear_bwd_gelu", case_linear_bwd_gelu},
    {"linear_bwd_gelu_nodin", case_linear_bwd_gelu_nodin},
    {"attention_fwd", case_attention_fwd},
    {"attention_fwd_drop", case_attention_fwd_drop},
    {"attention_bwd", case_attention_bwd},
    {"attention_bwd_drop", case_attention_bwd_drop},
    {"gelu_fwd", case_gelu_fwd},
    {"gelu_bwd", case_gelu_bwd},
    {"residual_add", case_residual_add},
    {"layernorm_fwd", case_layernorm_fwd},
    {"layernorm_bwd", case_layernorm_bwd},
    {"layernorm_row_limit", case_layernorm_row_limit},
    {"softmax_xent", case_softmax_xent},
    {"sigmoid_bce", case_sigmoid_bce},
    {"im2col", case_im2col},
    {"embed", case_embed},
    {"cls_select", case_cls_select},
    {"token_mean", case_token_mean},
    {"drop", case_drop},
    {"scale_cols", case_scale_cols},
};

static sv_backend *make(int threads, int f32_storage) {
    sv_backend_config cfg = {
        .device = SV_DEVICE_CPU, .compute_dtype = SV_BF16, .threads = threads, .cpu.f32_storage = f32_storage};
    sv_backend *be = NULL;
    CHECK_OK(sv_backend_create(&cfg, &be));
    return be;
}

/* 1 when case `name` is selected by the arguments (none: every case). */
static int selected(const char *name, int argc, char **argv) {
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if (!strcmp(argv[i], name) || (n && argv[i][n - 1] == '*' && !strncmp(argv[i], name, n - 1))) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    sv_backend *probe = make(1, -1);
    if (sv_be_compute_elem_size(probe) != 2) {
        sv_backend_destroy(probe);
        SKIP("no bf16 GEMM engine on this CPU: bf16 storage is not possible here");
    }
    sv_backend_destroy(probe);
    int ran = 0, failed = 0;
    for (int threads = 1; threads <= 2; threads++) {
        P.f = make(threads, 1);
        P.h = make(threads, -1);
        P.threads = threads;
        CHECK(sv_be_compute_elem_size(P.f) == 4 && sv_be_compute_elem_size(P.h) == 2);
        for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
            if (!selected(CASES[i].name, argc, argv)) continue;
            g_case = CASES[i].name;
            g_case_failed = 0;
            CASES[i].fn();
            ran++;
            failed += g_case_failed;
            printf("%-24s threads %d: %s\n", g_case, threads, g_case_failed ? "FAIL" : "same bits");
        }
        sv_backend_destroy(P.f);
        sv_backend_destroy(P.h);
    }
    CHECK(ran > 0); /* a filter that matches nothing is an error, not a pass */
    printf("ops storage: %d case runs, %d failed\n", ran, failed);
    return failed ? 1 : 0;
}
