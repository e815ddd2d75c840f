/* Every backend op on the CUDA backend against the CPU backend, on random inputs, through the
 * public backend API only. Both backends get bit-identical inputs (the CPU backend rounds to
 * bf16 exactly as the GPU stores it); the relative error max|cuda - cpu| / max|cpu| of every
 * output is printed per op and checked against a tolerance for the compute dtype (fp32: 1e-3,
 * bf16: 3e-2, i.e. a few bf16 ulps after different summation orders). Casts and simple vector
 * ops must agree exactly.
 *
 * Runs for compute dtypes fp32 and bf16, and for attention with cuDNN (where cuDNN accepts the
 * shape) and with the fallback kernel, at T = 65, 197 and 50; attention-probability dropout
 * (sv_be_attention_fwd_drop / _bwd_drop, always the fallback kernels on CUDA) at the model shape
 * B2 T50 D192 H3 and an odd one (T 131 > the kernels' 128 threads, head dim 12).
 * A failing op call is recorded as a failed check (with its message) where the op group allows
 * it, and the JSON is closed even when a CHECK stops the run (then with "aborted": true).
 * Usage: gpu_ops_vs_cpu [--json FILE]. Exit 77 when no CUDA device is usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/backend/backend.h"

/* ---- a tiny per-test allocation list per backend ---- */
typedef struct ctx {
    sv_backend *be;
    void *ptrs[64];
    int n;
} ctx;

static void *dalloc(ctx *c, size_t bytes) {
    void *p;
    CHECK_OK(sv_be_alloc(c->be, bytes ? bytes : 4, &p));
    CHECK(c->n < 64);
    c->ptrs[c->n++] = p;
    return p;
}
static void release(ctx *c) {
    CHECK_OK(sv_be_sync(c->be));
    while (c->n) sv_be_free(c->be, c->ptrs[--c->n]);
}
static float *fbuf(ctx *c, const float *h, size_t n) {
    float *d = dalloc(c, n * 4);
    CHECK_OK(sv_be_upload(c->be, d, h, n * 4));
    return d;
}
static void *cbuf(ctx *c, const float *h, size_t n) {
    float *tmp = fbuf(c, h, n);
    void *d = dalloc(c, n * sv_be_compute_elem_size(c->be));
    CHECK_OK(sv_be_f32_to_compute(c->be, d, tmp, n));
    return d;
}
static void get_f(ctx *c, float *h, const float *d, size_t n) { CHECK_OK(sv_be_download(c->be, h, d, n * 4)); }
static void get_c(ctx *c, float *h, const void *d, size_t n) {
    float *tmp = dalloc(c, n * 4);
    CHECK_OK(sv_be_compute_to_f32(c->be, tmp, d, n));
    get_f(c, h, tmp, n);
}

/* ---- random data ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}
static float *hrand(size_t n, float scale) {
    float *h = malloc(n * sizeof(float));
    CHECK(h);
    for (size_t i = 0; i < n; i++) h[i] = urand() * scale;
    return h;
}
static float *hzero(size_t n) {
    float *h = calloc(n ? n : 1, sizeof(float));
    CHECK(h);
    return h;
}

/* ---- comparison and report ---- */
static int failures = 0, checks = 0, finished = 0;
static FILE *json = NULL;

static void report(const char *op, const char *variant, const char *what, const float *gpu, const float *cpu, size_t n,
                   double tol) {
    double maxd = 0, maxr = 0;
    int nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(gpu[i]) != !isfinite(cpu[i])) nonfinite++;
        double d = fabs((double)gpu[i] - cpu[i]);
        if (d > maxd) maxd = d;
        if (fabs(cpu[i]) > maxr) maxr = fabs(cpu[i]);
    }
    double rel = maxd / (maxr > 1e-30 ? maxr : 1e-30);
    int ok = !nonfinite && rel <= tol;
    checks++;
    failures += !ok;
    printf("%-22s %-18s %-10s rel_err %.3e  tol %.1e  %s\n", op, variant, what, rel, tol, ok ? "ok" : "FAIL");
    if (json)
        fprintf(json, "%s{\"op\":\"%s\",\"variant\":\"%s\",\"output\":\"%s\",\"rel_err\":%.6e,\"tol\":%.1e,\"ok\":%s}",
                checks > 1 ? ",\n" : "", op, variant, what, rel, tol, ok ? "true" : "false");
}

/* A JSON string of s (quotes, backslashes and control characters escaped). */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* Record an op call's status: SV_OK -> 1; otherwise a failed check naming the call and its
 * error message (printed and in the JSON) -> 0, and the caller skips what depended on it. */
static int op_ok(const char *op, const char *variant, const char *call, const char *backend, sv_status st) {
    if (st == SV_OK) return 1;
    char what[32];
    snprintf(what, sizeof what, "%s on %s", call, backend);
    checks++;
    failures++;
    printf("%-22s %-18s %-10s %s: %s  FAIL\n", op, variant, what, sv_status_str(st), sv_err_msg());
    if (json) {
        fprintf(json, "%s{\"op\":", checks > 1 ? ",\n" : "");
        json_str(json, op);
        fprintf(json, ",\"variant\":");
        json_str(json, variant);
        fprintf(json, ",\"output\":");
        json_str(json, what);
        fprintf(json, ",\"error\":");
        json_str(json, sv_err_msg());
        fprintf(json, ",\"ok\":false}");
    }
    sv_err_clear();
    return 0;
}

/* Close the JSON: from main after the last check, or at exit when a CHECK stopped the run. */
static void json_close(void) {
    if (!json) return;
    /* an aborted run counts the stopping CHECK as one more failure */
    fprintf(json, "\n],\"checks\":%d,\"failures\":%d%s}\n", checks, failures + !finished,
            finished ? "" : ",\"aborted\":true");
    fclose(json);
    json = NULL;
}

/* Run `body` on both backends: it must fill `out[b]` (host arrays) from ctx `c`. */
typedef struct pair {
    ctx c[2]; /* 0 = cuda, 1 = cpu */
    const char *variant;
    double tol;
} pair;

#define BOTH(P, c, ...) \
    for (int b_ = 0; b_ < 2; b_++) { \
        ctx *c = &(P)->c[b_]; \
        __VA_ARGS__; \
        release(c); \
    }
#define OUT(name, n) float *name[2] = {hzero(n), hzero(n)}
#define CMP(P, op, what, name, n, tol) report(op, (P)->variant, what, name[0], name[1], n, tol)
#define FREE2(name) (free(name[0]), free(name[1]))

/* ---- op groups ---- */
static void test_vector_ops(pair *P) {
    const size_t n = 10007;
    float *x = hrand(n, 3.0f), *y = hrand(n, 1.0f);
    OUT(rt, n);
    OUT(bfr, n);
    OUT(add, n);
    OUT(up, n);
    double ss[2];
    uint16_t *bits[2] = {malloc(n * 2), malloc(n * 2)};
    BOTH(P, c, {
        void *cb = cbuf(c, x, n);
        get_c(c, rt[b_], cb, n);
        float *dx = fbuf(c, x, n), *dy = fbuf(c, y, n);
        uint16_t *db = dalloc(c, n * 2);
        CHECK_OK(sv_be_f32_to_bf16(c->be, db, dx, n));
        CHECK_OK(sv_be_download(c->be, bits[b_], db, n * 2));
        float *back = dalloc(c, n * 4);
        CHECK_OK(sv_be_bf16_to_f32(c->be, back, db, n));
        get_f(c, bfr[b_], back, n);
        CHECK_OK(sv_be_add_f32(c->be, dy, back, n));
        get_f(c, add[b_], dy, n);
        CHECK_OK(sv_be_sumsq_f32(c->be, back, n, &ss[b_]));
        /* async upload from pinned memory, ordered before a later op; fence, then reuse host */
        float *pin = NULL;
        CHECK_OK(sv_be_host_alloc(c->be, n * 4, (void **)&pin));
        memcpy(pin, y, n * 4);
        float *dz = dalloc(c, n * 4);
        CHECK_OK(sv_be_upload_async(c->be, dz, pin, n * 4));
        CHECK_OK(sv_be_add_f32(c->be, dz, dz, n)); /* dz = 2 dz */
        CHECK_OK(sv_be_upload_fence(c->be));
        memset(pin, 0, n * 4);
        get_f(c, up[b_], dz, n);
        sv_be_host_free(c->be, pin);
    });
    for (size_t i = 0; i < n; i++) up[1][i] = 2.0f * y[i]; /* exact expectation, not just CPU == CUDA */
    CMP(P, "f32<->compute", "roundtrip", rt, n, 0.0);
    CMP(P, "f32_to_bf16/back", "values", bfr, n, 0.0);
    checks++;
    int same = memcmp(bits[0], bits[1], n * 2) == 0;
    failures += !same;
    printf("%-22s %-18s %-10s %s\n", "f32_to_bf16", P->variant, "bits", same ? "identical ok" : "DIFFER FAIL");
    CMP(P, "add_f32", "values", add, n, 0.0);
    CMP(P, "upload_async", "values", up, n, 0.0);
    float s0 = (float)ss[0], s1 = (float)ss[1];
    report("sumsq_f32", P->variant, "sum", &s0, &s1, 1, 1e-6);
    FREE2(rt), FREE2(bfr), FREE2(add), FREE2(up), FREE2(bits);
    free(x), free(y);
}

static void test_linear(pair *P, int M, int N, int K, int with_bias, int with_gelu) {
    char op[40];
    snprintf(op, sizeof op, "linear %dx%dx%d%s%s", M, N, K, with_bias ? "+b" : "", with_gelu ? "+gelu" : "");
    float *in = hrand((size_t)M * K, 1.0f), *W = hrand((size_t)N * K, 0.1f), *bias = hrand(N, 0.5f);
    float *gout = hrand((size_t)M * N, 1.0f), *dW0 = hrand((size_t)N * K, 0.1f), *db0 = hrand(N, 0.1f);
    size_t mn = (size_t)M * N, mk = (size_t)M * K, nk = (size_t)N * K;
    OUT(out, mn);
    OUT(pre, mn);
    OUT(din, mk);
    OUT(dW, nk);
    OUT(db, N);
    BOTH(P, c, {
        void *d_in = cbuf(c, in, mk), *d_W = cbuf(c, W, nk), *d_b = with_bias ? cbuf(c, bias, N) : NULL;
        void *d_pre = with_gelu ? cbuf(c, gout, mn) : NULL; /* overwritten by the forward */
        void *o = dalloc(c, mn * 4);
        CHECK_OK(sv_be_linear_fwd(c->be, o, d_pre, d_in, d_W, d_b, M, N, K));
        get_c(c, out[b_], o, mn);
        if (d_pre) get_c(c, pre[b_], d_pre, mn);
        void *g = cbuf(c, gout, mn), *gi = dalloc(c, mk * 4);
        float *gW = fbuf(c, dW0, nk), *gb = fbuf(c, db0, N);
        CHECK_OK(sv_be_linear_bwd(c->be, gi, gW, with_bias ? gb : NULL, g, d_in, d_W, d_pre, M, N, K));
        get_c(c, din[b_], gi, mk);
        get_f(c, dW[b_], gW, nk);
        get_f(c, db[b_], gb, N);
    });
    CMP(P, op, "out", out, mn, P->tol);
    if (with_gelu) CMP(P, op, "pre_gelu", pre, mn, P->tol);
    CMP(P, op, "d_in", din, mk, P->tol);
    CMP(P, op, "dW(+=)", dW, nk, P->tol);
    if (with_bias) CMP(P, op, "db(+=)", db, N, P->tol);
    FREE2(out), FREE2(pre), FREE2(din), FREE2(dW), FREE2(db);
    free(in), free(W), free(bias), free(gout), free(dW0), free(db0);
}

static void test_layernorm(pair *P, int M, int C) {
    size_t n = (size_t)M * C;
    float *x = hrand(n, 2.0f), *w = hrand(C, 1.0f), *bb = hrand(C, 0.5f), *go = hrand(n, 1.0f);
    float *dx0 = hrand(n, 0.5f), *dw0 = hrand(C, 0.1f), *db0 = hrand(C, 0.1f);
    for (size_t i = 0; i < n; i++) x[i] += 0.5f; /* nonzero mean */
    OUT(out, n);
    OUT(mean, M);
    OUT(rstd, M);
    OUT(dx, n);
    OUT(dw, C);
    OUT(db, C);
    BOTH(P, c, {
        void *dxin = cbuf(c, x, n), *dwt = cbuf(c, w, C), *dbs = cbuf(c, bb, C), *o = dalloc(c, n * 4);
        float *mu = dalloc(c, M * 4), *rs = dalloc(c, M * 4);
        CHECK_OK(sv_be_layernorm_fwd(c->be, o, mu, rs, dxin, dwt, dbs, M, C));
        get_c(c, out[b_], o, n), get_f(c, mean[b_], mu, M), get_f(c, rstd[b_], rs, M);
        void *g = cbuf(c, go, n), *gx = cbuf(c, dx0, n);
        float *gw = fbuf(c, dw0, C), *gb = fbuf(c, db0, C);
        CHECK_OK(sv_be_layernorm_bwd(c->be, gx, gw, gb, g, dxin, dwt, mu, rs, M, C));
        get_c(c, dx[b_], gx, n), get_f(c, dw[b_], gw, C), get_f(c, db[b_], gb, C);
    });
    const char *op = "layernorm";
    CMP(P, op, "out", out, n, P->tol);
    CMP(P, op, "mean", mean, M, P->tol);
    CMP(P, op, "rstd", rstd, M, P->tol);
    CMP(P, op, "d_x(+=)", dx, n, P->tol);
    CMP(P, op, "dw(+=)", dw, C, P->tol);
    CMP(P, op, "db(+=)", db, C, P->tol);
    FREE2(out), FREE2(mean), FREE2(rstd), FREE2(dx), FREE2(dw), FREE2(db);
    free(x), free(w), free(bb), free(go), free(dx0), free(dw0), free(db0);
}

static void test_attention(pair *P, int B, int T, int D, int H) {
    char op[48];
    snprintf(op, sizeof op, "attention B%d T%d D%d H%d", B, T, D, H);
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D;
    float *qkv = hrand(nq, 1.0f), *go = hrand(no, 1.0f);
    OUT(out, no);
    OUT(dq, nq);
    BOTH(P, c, {
        void *dqkv = cbuf(c, qkv, nq), *o = dalloc(c, no * 4), *g = cbuf(c, go, no), *gq = dalloc(c, nq * 4);
        void *saved = dalloc(c, sv_be_attention_saved_bytes(c->be, B, T, D, H));
        void *scratch = dalloc(c, sv_be_attention_scratch_bytes(c->be, B, T, D, H));
        CHECK_OK(sv_be_attention_fwd(c->be, o, saved, scratch, dqkv, B, T, D, H));
        get_c(c, out[b_], o, no);
        CHECK_OK(sv_be_attention_bwd(c->be, gq, scratch, g, dqkv, o, saved, B, T, D, H));
        get_c(c, dq[b_], gq, nq);
    });
    CMP(P, op, "out", out, no, P->tol);
    CMP(P, op, "d_qkv", dq, nq, P->tol);
    FREE2(out), FREE2(dq);
    free(qkv), free(go);
}

/* Attention with attention-probability dropout: forward and backward with the same mask on
 * both backends (CUDA: the fallback kernels whatever the variant; CPU: sv_cpu_attention with
 * the mask), compared as test_attention. The mask comes from sv_drop_mult on both, so the
 * dropped entries are the same ones; a CUDA op that ignored or misplaced the mask would differ
 * from the CPU's by the dropped terms and the 1/keep scaling, well above the fp32 tolerance. */
static void test_attention_drop(pair *P, int B, int T, int D, int H, float keep) {
    char op[64];
    snprintf(op, sizeof op, "attn-drop %.2f B%d T%d D%d H%d", (double)keep, B, T, D, H);
    const sv_drop d = {.key = 0x5eed0a77e17ull, .sample0 = 1234, .keep = keep};
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D;
    float *qkv = hrand(nq, 1.0f), *go = hrand(no, 1.0f);
    OUT(out, no);
    OUT(dq, nq);
    int ok_fwd = 1, ok_bwd = 1;
    BOTH(P, c, {
        const char *who = b_ ? "cpu" : "cuda";
        void *dqkv = cbuf(c, qkv, nq), *o = dalloc(c, no * 4), *g = cbuf(c, go, no), *gq = dalloc(c, nq * 4);
        void *saved = dalloc(c, sv_be_attention_saved_bytes(c->be, B, T, D, H));
        void *scratch = dalloc(c, sv_be_attention_scratch_bytes(c->be, B, T, D, H));
        if (op_ok(op, P->variant, "fwd", who,
                  sv_be_attention_fwd_drop(c->be, o, saved, scratch, dqkv, B, T, D, H, &d))) {
            get_c(c, out[b_], o, no);
            if (op_ok(op, P->variant, "bwd", who,
                      sv_be_attention_bwd_drop(c->be, gq, scratch, g, dqkv, o, saved, B, T, D, H, &d)))
                get_c(c, dq[b_], gq, nq);
            else
                ok_bwd = 0;
        } else {
            ok_fwd = ok_bwd = 0;
        }
    });
    if (ok_fwd) CMP(P, op, "out", out, no, P->tol);
    if (ok_bwd) CMP(P, op, "d_qkv", dq, nq, P->tol);
    FREE2(out), FREE2(dq);
    free(qkv), free(go);
}

static void test_pointwise(pair *P) {
    const size_t n = 4099;
    float *x = hrand(n, 4.0f), *y = hrand(n, 1.0f);
    OUT(gf, n);
    OUT(gb, n);
    OUT(ra, n);
    BOTH(P, c, {
        void *dx = cbuf(c, x, n), *dy = cbuf(c, y, n), *o = dalloc(c, n * 4);
        CHECK_OK(sv_be_gelu_fwd(c->be, o, dx, n));
        get_c(c, gf[b_], o, n);
        CHECK_OK(sv_be_gelu_bwd(c->be, dy, dy, dx, n)); /* aliasing d_x == d_out is allowed */
        get_c(c, gb[b_], dy, n);
        CHECK_OK(sv_be_residual_add(c->be, dx, dx, o, n));
        get_c(c, ra[b_], dx, n);
    });
    CMP(P, "gelu_fwd", "out", gf, n, P->tol);
    CMP(P, "gelu_bwd", "d_x", gb, n, P->tol);
    CMP(P, "residual_add", "out", ra, n, P->tol);
    FREE2(gf), FREE2(gb), FREE2(ra);
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
    for (int b = 0; b < B; b++) lab[b] = (b * 7 + 3) % K;
    OUT(l1, B);
    OUT(d1, n);
    OUT(l2, B);
    OUT(d2, n);
    OUT(l3, B);
    BOTH(P, c, {
        void *dz = cbuf(c, z, n), *g = dalloc(c, n * 4);
        int32_t *dl = dalloc(c, B * 4);
        CHECK_OK(sv_be_upload(c->be, dl, lab, B * 4));
        float *loss = dalloc(c, B * 4), *ds = fbuf(c, soft, n);
        CHECK_OK(sv_be_softmax_xent(c->be, loss, g, dz, dl, NULL, B, K, 0.1f, 1.0f / B));
        get_f(c, l1[b_], loss, B), get_c(c, d1[b_], g, n);
        CHECK_OK(sv_be_softmax_xent(c->be, loss, g, dz, NULL, ds, B, K, 0.0f, 0.5f));
        get_f(c, l2[b_], loss, B), get_c(c, d2[b_], g, n);
        CHECK_OK(sv_be_softmax_xent(c->be, loss, NULL, dz, dl, NULL, B, K, 0.0f, 1.0f));
        get_f(c, l3[b_], loss, B);
    });
    CMP(P, "softmax_xent labels", "loss", l1, B, P->tol);
    CMP(P, "softmax_xent labels", "d_logits", d1, n, P->tol);
    CMP(P, "softmax_xent soft", "loss", l2, B, P->tol);
    CMP(P, "softmax_xent soft", "d_logits", d2, n, P->tol);
    CMP(P, "softmax_xent eval", "loss", l3, B, P->tol);
    FREE2(l1), FREE2(d1), FREE2(l2), FREE2(d2), FREE2(l3);
    free(z), free(soft), free(lab);
}

static void test_embed(pair *P, int B, int C, int img, int p, int D) {
    int G = img / p, T = 1 + G * G;
    size_t ni = (size_t)B * C * img * img, np = (size_t)B * G * G * C * p * p;
    size_t nx = (size_t)B * T * D, npo = (size_t)B * (T - 1) * D;
    float *im = hrand(ni, 1.0f), *po = hrand(npo, 1.0f), *cls = hrand(D, 0.1f), *pos = hrand((size_t)T * D, 0.1f);
    float *gx = hrand(nx, 1.0f), *gcls0 = hrand(D, 0.1f), *gpos0 = hrand((size_t)T * D, 0.1f),
          *gsel = hrand((size_t)B * D, 1.0f);
    OUT(pat, np);
    OUT(x, nx);
    OUT(dpo, npo);
    OUT(dcls, D);
    OUT(dpos, (size_t)T * D);
    OUT(sel, (size_t)B * D);
    OUT(dxs, nx);
    BOTH(P, c, {
        float *dim = fbuf(c, im, ni);
        void *dp = dalloc(c, np * 4);
        CHECK_OK(sv_be_im2col(c->be, dp, dim, B, C, img, img, p));
        get_c(c, pat[b_], dp, np);
        void *dpo_in = cbuf(c, po, npo), *dcl = cbuf(c, cls, D), *dps = cbuf(c, pos, (size_t)T * D),
             *dx = dalloc(c, nx * 4);
        CHECK_OK(sv_be_embed_fwd(c->be, dx, dpo_in, dcl, dps, B, T, D));
        get_c(c, x[b_], dx, nx);
        void *g = cbuf(c, gx, nx), *gp = dalloc(c, npo * 4);
        float *gc = fbuf(c, gcls0, D), *gps = fbuf(c, gpos0, (size_t)T * D);
        CHECK_OK(sv_be_embed_bwd(c->be, gp, gc, gps, g, B, T, D));
        get_c(c, dpo[b_], gp, npo), get_f(c, dcls[b_], gc, D), get_f(c, dpos[b_], gps, (size_t)T * D);
        void *s = dalloc(c, (size_t)B * D * 4);
        CHECK_OK(sv_be_cls_select(c->be, s, dx, B, T, D));
        get_c(c, sel[b_], s, (size_t)B * D);
        void *gs = cbuf(c, gsel, (size_t)B * D);
        CHECK_OK(sv_be_cls_select_bwd(c->be, g, gs, B, T, D));
        get_c(c, dxs[b_], g, nx);
    });
    CMP(P, "im2col", "patches", pat, np, 0.0);
    CMP(P, "embed_fwd", "x", x, nx, P->tol);
    CMP(P, "embed_bwd", "d_patch_out", dpo, npo, 0.0);
    CMP(P, "embed_bwd", "d_cls(+=)", dcls, D, P->tol);
    CMP(P, "embed_bwd", "d_pos(+=)", dpos, (size_t)T * D, P->tol);
    CMP(P, "cls_select", "out", sel, (size_t)B * D, 0.0);
    CMP(P, "cls_select_bwd", "dx(+=)", dxs, nx, P->tol);
    FREE2(pat), FREE2(x), FREE2(dpo), FREE2(dcls), FREE2(dpos), FREE2(sel), FREE2(dxs);
    free(im), free(po), free(cls), free(pos), free(gx), free(gcls0), free(gpos0), free(gsel);
}

/* The training-recipe ops: dropout / drop-path masks (the same hash on both: exact), LayerScale,
 * average pooling, sigmoid BCE, and the token assembly without a class token. */
static void test_recipe(pair *P, int B, int T, int D, int K) {
    size_t nx = (size_t)B * T * D, nb = (size_t)B * D, nk = (size_t)B * K;
    float *x = hrand(nx, 1.0f), *g = hrand(D, 0.5f), *gy = hrand(nx, 1.0f), *gp = hrand(nb, 1.0f);
    float *z = hrand(nk, 3.0f), *pos = hrand(nx / B, 0.1f), *gpos0 = hrand(nx / B, 0.1f);
    int32_t *lab = malloc((size_t)B * sizeof *lab);
    for (int b = 0; b < B; b++) lab[b] = (b * 7) % K;
    sv_drop path = {.key = 0xabc, .sample0 = 1000, .keep = 0.6f}, elem = {.key = 0xdef, .sample0 = 77, .keep = 0.8f};
    OUT(dp, nx);
    OUT(de, nx);
    OUT(sc, nx);
    OUT(sdx, nx);
    OUT(sdg, D);
    OUT(mean, nb);
    OUT(mdx, nx);
    OUT(bl, B);
    OUT(bd, nk);
    OUT(ex, nx);
    OUT(edpo, nx);
    OUT(edpos, nx / B);
    BOTH(P, c, {
        void *a = cbuf(c, x, nx), *e = cbuf(c, x, nx);
        CHECK_OK(sv_be_drop(c->be, a, &path, B, (size_t)T * D, (size_t)T * D));
        CHECK_OK(sv_be_drop(c->be, e, &elem, B, (size_t)T * D, 1));
        get_c(c, dp[b_], a, nx), get_c(c, de[b_], e, nx);
        void *xs = cbuf(c, x, nx), *gg = cbuf(c, g, D), *o = dalloc(c, nx * 4), *dy = cbuf(c, gy, nx);
        float *dgam = fbuf(c, g, D);
        CHECK_OK(sv_be_scale_cols(c->be, o, xs, gg, B * T, D));
        CHECK_OK(sv_be_scale_cols_bwd(c->be, dy, dgam, dy, xs, gg, B * T, D));
        get_c(c, sc[b_], o, nx), get_c(c, sdx[b_], dy, nx), get_f(c, sdg[b_], dgam, D);
        void *m = dalloc(c, nb * 4), *gpd = cbuf(c, gp, nb), *dxm = cbuf(c, gy, nx);
        CHECK_OK(sv_be_token_mean(c->be, m, xs, B, T, D, 1));
        CHECK_OK(sv_be_token_mean_bwd(c->be, dxm, gpd, B, T, D, 1));
        get_c(c, mean[b_], m, nb), get_c(c, mdx[b_], dxm, nx);
        void *zl = cbuf(c, z, nk), *dz = dalloc(c, nk * 4);
        float *loss = dalloc(c, (size_t)B * 4);
        int32_t *dl = dalloc(c, (size_t)B * 4);
        CHECK_OK(sv_be_upload(c->be, dl, lab, (size_t)B * 4));
        CHECK_OK(sv_be_sigmoid_bce(c->be, loss, dz, zl, dl, NULL, B, K, 0.1f, 0.0f, 0, 0.5f));
        get_f(c, bl[b_], loss, B), get_c(c, bd[b_], dz, nk);
        void *po = cbuf(c, x, nx), *ps = cbuf(c, pos, nx / B), *xo = dalloc(c, nx * 4), *gpo = dalloc(c, nx * 4);
        float *gpos = fbuf(c, gpos0, nx / B);
        CHECK_OK(sv_be_embed_fwd(c->be, xo, po, NULL, ps, B, T, D));
        CHECK_OK(sv_be_embed_bwd(c->be, gpo, NULL, gpos, xo, B, T, D));
        get_c(c, ex[b_], xo, nx), get_c(c, edpo[b_], gpo, nx), get_f(c, edpos[b_], gpos, nx / B);
    });
    CMP(P, "drop (per sample)", "x", dp, nx, 0.0);
    CMP(P, "drop (per element)", "x", de, nx, 0.0);
    CMP(P, "scale_cols", "out", sc, nx, 0.0);
    CMP(P, "scale_cols_bwd", "d_x", sdx, nx, 0.0);
    CMP(P, "scale_cols_bwd", "d_gamma(+=)", sdg, D, P->tol);
    CMP(P, "token_mean", "out", mean, nb, P->tol);
    CMP(P, "token_mean_bwd", "dx(+=)", mdx, nx, P->tol);
    CMP(P, "sigmoid_bce", "loss", bl, B, P->tol);
    CMP(P, "sigmoid_bce", "d_logits", bd, nk, P->tol);
    CMP(P, "embed_fwd (no cls)", "x", ex, nx, P->tol);
    CMP(P, "embed_bwd (no cls)", "d_patch_out", edpo, nx, 0.0);
    CMP(P, "embed_bwd (no cls)", "d_pos(+=)", edpos, nx / B, P->tol);
    FREE2(dp), FREE2(de), FREE2(sc), FREE2(sdx), FREE2(sdg), FREE2(mean), FREE2(mdx), FREE2(bl), FREE2(bd);
    FREE2(ex), FREE2(edpo), FREE2(edpos);
    free(x), free(g), free(gy), free(gp), free(z), free(pos), free(gpos0), free(lab);
}

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
    OUT(p, n);
    OUT(m, n);
    OUT(v, n);
    BOTH(P, c, {
        float *dp = fbuf(c, p0, n), *dg = fbuf(c, g, n), *dm = fbuf(c, m0, n), *dv = fbuf(c, v0, n);
        CHECK_OK(sv_be_adamw(c->be, dp, dg, dm, dv, n, &h, 0.05f));
        get_f(c, p[b_], dp, n), get_f(c, m[b_], dm, n), get_f(c, v[b_], dv, n);
    });
    /* Same formula (core/elementwise.h) in fp32 on both: only FMA contraction may differ. */
    CMP(P, "adamw", "p", p, n, 1e-6);
    CMP(P, "adamw", "m", m, n, 1e-6);
    CMP(P, "adamw", "v", v, n, 1e-6);
    FREE2(p), FREE2(m), FREE2(v);
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
        OUT(e, n);
        BOTH(P, c, {
            float *de = fbuf(c, e0, n), *dx = fbuf(c, x, n);
            CHECK_OK(sv_be_ema(c->be, de, dx, n, ws[k]));
            get_f(c, e[b_], de, n);
        });
        CMP(P, "ema", names[k], e, n, 0.0);
        FREE2(e);
    }
    free(e0), free(x);
}

/* SGD (Nesterov), Lion, LAMB's two passes: sv_be_optim_elem on both backends. */
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
        OUT(p, n);
        OUT(m, n);
        OUT(v, n);
        OUT(g, n);
        BOTH(P, c, {
            float *dp = fbuf(c, p0, n), *dg = fbuf(c, g0, n), *dm = fbuf(c, m0, n), *dv = fbuf(c, v0, n);
            if (k < 2) {
                CHECK_OK(
                    sv_be_optim_elem(c->be, k == 0 ? SV_OPTIM_OP_SGD : SV_OPTIM_OP_LION, dp, dg, dm, dv, n, &h, 0.05f));
            } else {
                CHECK_OK(sv_be_optim_elem(c->be, SV_OPTIM_OP_LAMB_UPDATE, dp, dg, dm, dv, n, &h, 0.05f));
                CHECK_OK(sv_be_optim_elem(c->be, SV_OPTIM_OP_LAMB_APPLY, dp, dg, dm, dv, n, &h, 0.05f));
            }
            get_f(c, p[b_], dp, n), get_f(c, m[b_], dm, n), get_f(c, v[b_], dv, n), get_f(c, g[b_], dg, n);
        });
        CMP(P, names[k], "p", p, n, 1e-6);
        CMP(P, names[k], "m", m, n, 1e-6);
        CMP(P, names[k], "v", v, n, 1e-6);
        CMP(P, names[k], "g", g, n, 1e-6);
        FREE2(p), FREE2(m), FREE2(v), FREE2(g);
    }
    free(p0), free(g0), free(m0), free(v0);
}

static void run_variant(sv_dtype dt, int attn_fallback, int attention_only) {
    pair P;
    memset(&P, 0, sizeof P);
    sv_backend_config gcfg = {
        .device = SV_DEVICE_CUDA, .compute_dtype = dt, .device_index = 0, .attn_fallback = attn_fallback};
    sv_backend_config ccfg = {.device = SV_DEVICE_CPU, .compute_dtype = dt, .threads = 2, .cpu = {.f32_storage = 1}};
    CHECK_OK(sv_backend_create(&gcfg, &P.c[0].be));
    CHECK_OK(sv_backend_create(&ccfg, &P.c[1].be));
    char variant[32];
    snprintf(variant, sizeof variant, "%s%s", sv_dtype_name(dt), attn_fallback ? "/attn-fallback" : "");
    P.variant = variant;
    P.tol = dt == SV_BF16 ? 3e-2 : 1e-3;
    printf("== %s on %s vs %s\n", variant, sv_be_device_name(P.c[0].be), sv_be_device_name(P.c[1].be));
    if (!attention_only) {
        test_vector_ops(&P);
        test_linear(&P, 130, 384, 128, 1, 0);
        test_linear(&P, 130, 512, 128, 1, 1);
        test_linear(&P, 64, 10, 96, 1, 0); /* classifier head: odd N */
        test_linear(&P, 65, 96, 48, 0, 0); /* no bias, odd M */
        test_layernorm(&P, 130, 192);
        test_pointwise(&P);
        test_xent(&P, 16, 37);
        test_embed(&P, 2, 3, 16, 4, 64);
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
    sv_backend_destroy(P.c[0].be);
    sv_backend_destroy(P.c[1].be);
}

int main(int argc, char **argv) {
    if (!sv_backend_available(SV_DEVICE_CUDA)) SKIP("no usable CUDA device (or no CUDA backend in this build)");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json = fopen(argv[++i], "w");
            CHECK(json);
            fprintf(json, "{\"results\":[\n");
            atexit(json_close);
        }
    }
    run_variant(SV_F32, 0, 0);
    run_variant(SV_BF16, 0, 0);
    run_variant(SV_BF16, 1, 1);
    printf("%d of %d checks failed\n", failures, checks);
    finished = 1;
    json_close();
    return failures ? 1 : 0;
}
