/* Every backward op of the CPU backend against central finite differences of its forward op
 * (fp32 mode). The scalar loss is a random projection of the forward output, L = sum r_i y_i,
 * accumulated in double; the analytic backward gets d_out = r. Accumulating outputs (dW, db,
 * LN dw/db and d_x, embed d_cls/d_pos, cls dx) start from random values, so "+=" is tested. */
#include "ops_util.h"

typedef struct fd_case {
    ops_ctx *c;
    void (*fwd)(struct fd_case *);
    const float *out; /* device output the loss projects */
    const double *r;  /* projection (nout) */
    size_t nout;
    /* op operands, used by the forward closures */
    float *a, *b2, *b3, *o, *o2, *o3, *scratch;
    int M, N, K, B, T, D, H, gelu;
    int32_t *labels;
    float *soft;
    float smoothing, gs;
} fd_case;

static double loss_of(fd_case *f) {
    f->fwd(f);
    float *y = dl(f->c, f->out, f->nout);
    double s = 0;
    for (size_t i = 0; i < f->nout; i++) s += f->r[i] * (double)y[i];
    free(y);
    return s;
}

/* Compare analytic (n values, host) with central differences at `samples` coordinates of the
 * device buffer `param` (every coordinate when n <= samples). */
static void fd_check(fd_case *f, const char *what, float *param, size_t n, const float *analytic, double h,
                     int samples) {
    double rms = 0;
    for (size_t i = 0; i < n; i++) rms += (double)analytic[i] * analytic[i];
    rms = sqrt(rms / (double)n);
    size_t count = n <= (size_t)samples ? n : (size_t)samples;
    for (size_t s = 0; s < count; s++) {
        size_t j = n <= (size_t)samples ? s : (size_t)(sv_rand_u64(4242, s) % n);
        float x0;
        CHECK_OK(sv_be_download(f->c->be, &x0, param + j, 4));
        float xp = x0 + (float)h, xm = x0 - (float)h;
        CHECK_OK(sv_be_upload(f->c->be, param + j, &xp, 4));
        double lp = loss_of(f);
        CHECK_OK(sv_be_upload(f->c->be, param + j, &xm, 4));
        double lm = loss_of(f);
        CHECK_OK(sv_be_upload(f->c->be, param + j, &x0, 4));
        double fd = (lp - lm) / ((double)xp - (double)xm);
        double err = fabs(fd - (double)analytic[j]);
        double tol = 1e-2 * (fabs(fd) + rms) + 5e-4;
        if (!(err <= tol)) {
            fprintf(stderr, "%s: d/dx[%zu] analytic %.7g vs finite difference %.7g (tol %.3g)\n", what, j,
                    (double)analytic[j], fd, tol);
            exit(1);
        }
    }
}

/* host copy of (device value - initial value) */
static float *delta(ops_ctx *c, const float *dev, const double *init, size_t n) {
    float *g = dl(c, dev, n);
    for (size_t i = 0; i < n; i++) g[i] = (float)((double)g[i] - (init ? init[i] : 0.0));
    return g;
}

/* ---- linear ---- */
static void linear_fwd(fd_case *f) {
    CHECK_OK(sv_be_linear_fwd(f->c->be, f->o, f->gelu ? f->o2 : NULL, f->a, f->b2, f->b3, f->M, f->N, f->K));
}
static void grad_linear(ops_ctx *c, int M, int N, int K, int gelu) {
    fd_case f = {.c = c, .fwd = linear_fwd, .M = M, .N = N, .K = K, .gelu = gelu};
    size_t no = (size_t)M * N, nw = (size_t)N * K, ni = (size_t)M * K;
    double *r = dalloc(no), *w0 = dalloc(nw), *b0 = dalloc(N);
    f.a = dev_rand_c(c, ni, 11, 1.0, NULL);
    f.b2 = dev_rand_c(c, nw, 12, 0.5, NULL);
    f.b3 = dev_rand_c(c, N, 13, 0.5, NULL);
    f.o = dev_alloc(c, no * 4), f.o2 = dev_alloc(c, no * 4);
    float *d_out = dev_rand_c(c, no, 14, 1.0, r);
    f.r = r, f.out = f.o, f.nout = no;
    float *d_in = dev_alloc(c, ni * 4), *dW = dev_rand(c, nw, 15, 1, 0, w0), *db = dev_rand(c, N, 16, 1, 0, b0);
    linear_fwd(&f);
    CHECK_OK(sv_be_linear_bwd(c->be, d_in, dW, db, d_out, f.a, f.b2, gelu ? f.o2 : NULL, M, N, K));
    float *g_in = dl(c, d_in, ni), *g_w = delta(c, dW, w0, nw), *g_b = delta(c, db, b0, N);
    fd_check(&f, gelu ? "linear+gelu d_in" : "linear d_in", f.a, ni, g_in, 1e-2, 40);
    fd_check(&f, gelu ? "linear+gelu dW" : "linear dW", f.b2, nw, g_w, 1e-2, 40);
    fd_check(&f, gelu ? "linear+gelu db" : "linear db", f.b3, N, g_b, 1e-2, 40);
    free(g_in), free(g_w), free(g_b), free(r), free(w0), free(b0);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.b2), sv_be_free(c->be, f.b3);
    sv_be_free(c->be, f.o), sv_be_free(c->be, f.o2), sv_be_free(c->be, d_out);
    sv_be_free(c->be, d_in), sv_be_free(c->be, dW), sv_be_free(c->be, db);
}

/* ---- layernorm ---- */
static void ln_fwd(fd_case *f) {
    CHECK_OK(sv_be_layernorm_fwd(f->c->be, f->o, f->o2, f->o3, f->a, f->b2, f->b3, f->M, f->N));
}
static void grad_layernorm(ops_ctx *c, int M, int C) {
    fd_case f = {.c = c, .fwd = ln_fwd, .M = M, .N = C};
    size_t n = (size_t)M * C;
    double *r = dalloc(n), *x0 = dalloc(n), *w0 = dalloc(C), *b0 = dalloc(C);
    f.a = dev_rand_c(c, n, 21, 1.5, NULL);
    f.b2 = dev_rand_c(c, C, 22, 1.0, NULL);
    f.b3 = dev_rand_c(c, C, 23, 1.0, NULL);
    f.o = dev_alloc(c, n * 4), f.o2 = dev_alloc(c, M * 4), f.o3 = dev_alloc(c, M * 4);
    float *d_out = dev_rand_c(c, n, 24, 1.0, r);
    f.r = r, f.out = f.o, f.nout = n;
    float *dx = dev_rand(c, n, 25, 1, 0, x0), *dw = dev_rand(c, C, 26, 1, 0, w0), *db = dev_rand(c, C, 27, 1, 0, b0);
    ln_fwd(&f);
    CHECK_OK(sv_be_layernorm_bwd(c->be, dx, dw, db, d_out, f.a, f.b2, f.o2, f.o3, M, C));
    float *g_x = delta(c, dx, x0, n), *g_w = delta(c, dw, w0, C), *g_b = delta(c, db, b0, C);
    fd_check(&f, "layernorm d_x", f.a, n, g_x, 1e-2, 60);
    fd_check(&f, "layernorm dw", f.b2, C, g_w, 1e-2, 40);
    fd_check(&f, "layernorm db", f.b3, C, g_b, 1e-2, 40);
    free(g_x), free(g_w), free(g_b), free(r), free(x0), free(w0), free(b0);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.b2), sv_be_free(c->be, f.b3);
    sv_be_free(c->be, f.o), sv_be_free(c->be, f.o2), sv_be_free(c->be, f.o3);
    sv_be_free(c->be, d_out), sv_be_free(c->be, dx), sv_be_free(c->be, dw), sv_be_free(c->be, db);
}

/* ---- attention ---- */
static void attn_fwd(fd_case *f) {
    CHECK_OK(sv_be_attention_fwd(f->c->be, f->o, f->o2, f->scratch, f->a, f->B, f->T, f->D, f->H));
}
static void grad_attention(ops_ctx *c, int B, int T, int D, int H) {
    fd_case f = {.c = c, .fwd = attn_fwd, .B = B, .T = T, .D = D, .H = H};
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D;
    double *r = dalloc(no);
    f.a = dev_rand_c(c, nq, 31, 1.0, NULL);
    f.o = dev_alloc(c, no * 4);
    f.o2 = dev_alloc(c, sv_be_attention_saved_bytes(c->be, B, T, D, H));
    f.scratch = dev_alloc(c, sv_be_attention_scratch_bytes(c->be, B, T, D, H));
    float *d_out = dev_rand_c(c, no, 32, 1.0, r);
    f.r = r, f.out = f.o, f.nout = no;
    float *dqkv = dev_fill(c, nq, 1e30f); /* overwritten, so garbage must vanish */
    attn_fwd(&f);
    CHECK_OK(sv_be_attention_bwd(c->be, dqkv, f.scratch, d_out, f.a, f.o, f.o2, B, T, D, H));
    float *g = dl(c, dqkv, nq);
    fd_check(&f, "attention d_qkv", f.a, nq, g, 1e-2, 90);
    free(g), free(r);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.o), sv_be_free(c->be, f.o2);
    sv_be_free(c->be, f.scratch), sv_be_free(c->be, d_out), sv_be_free(c->be, dqkv);
}

/* ---- softmax cross-entropy: L = sum_b losses[b] * grad_scale ---- */
static void xent_fwd(fd_case *f) {
    CHECK_OK(sv_be_softmax_xent(f->c->be, f->o, NULL, f->a, f->soft ? NULL : f->labels, f->soft, f->B, f->K,
                                f->smoothing, f->gs));
}
static void grad_xent(ops_ctx *c, int B, int K, float smoothing, int soft) {
    fd_case f = {.c = c, .fwd = xent_fwd, .B = B, .K = K, .smoothing = smoothing, .gs = 0.37f};
    size_t n = (size_t)B * K;
    double *r = dalloc(B);
    for (int b = 0; b < B; b++) r[b] = f.gs;
    f.a = dev_rand_c(c, n, 41, 2.0, NULL);
    int32_t *hl = malloc((size_t)B * 4);
    for (int b = 0; b < B; b++) hl[b] = (int32_t)(sv_rand_u64(42, b) % (uint64_t)K);
    f.labels = dev_alloc(c, (size_t)B * 4);
    CHECK_OK(sv_be_upload(c->be, f.labels, hl, (size_t)B * 4));
    if (soft) { /* random distributions per row */
        double *hs = dalloc(n);
        for (int b = 0; b < B; b++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += hs[(size_t)b * K + k] = sv_rand_unit(43, (uint64_t)b * K + k);
            for (int k = 0; k < K; k++) hs[(size_t)b * K + k] /= s;
        }
        f.soft = dev_alloc(c, n * 4);
        dev_set(c, f.soft, hs, n);
        free(hs);
    }
    f.o = dev_alloc(c, (size_t)B * 4);
    f.r = r, f.out = f.o, f.nout = B;
    float *d = dev_alloc(c, n * 4);
    CHECK_OK(sv_be_softmax_xent(c->be, f.o, d, f.a, soft ? NULL : f.labels, f.soft, B, K, smoothing, f.gs));
    float *g = dl(c, d, n);
    fd_check(&f, soft ? "xent soft d_logits" : "xent d_logits", f.a, n, g, 1e-2, 60);
    free(g), free(r), free(hl);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.labels), sv_be_free(c->be, f.soft);
    sv_be_free(c->be, f.o), sv_be_free(c->be, d);
}

/* ---- embed ---- */
static void embed_fwd(fd_case *f) {
    CHECK_OK(sv_be_embed_fwd(f->c->be, f->o, f->a, f->b2, NULL, 0, f->b3, 0, f->B, f->T, f->D));
}
static void grad_embed(ops_ctx *c, int B, int T, int D) {
    fd_case f = {.c = c, .fwd = embed_fwd, .B = B, .T = T, .D = D};
    size_t nx = (size_t)B * T * D, np = (size_t)B * (T - 1) * D, npos = (size_t)T * D;
    double *r = dalloc(nx), *c0 = dalloc(D), *p0 = dalloc(npos);
    f.a = dev_rand_c(c, np, 51, 1, NULL);
    f.b2 = dev_rand_c(c, D, 52, 1, NULL);
    f.b3 = dev_rand_c(c, npos, 53, 1, NULL);
    f.o = dev_alloc(c, nx * 4);
    float *dxo = dev_rand_c(c, nx, 54, 1.0, r);
    f.r = r, f.out = f.o, f.nout = nx;
    float *dpo = dev_fill(c, np, 1e30f), *dcls = dev_rand(c, D, 55, 1, 0, c0), *dpos = dev_rand(c, npos, 56, 1, 0, p0);
    CHECK_OK(sv_be_embed_bwd(c->be, dpo, dcls, NULL, 0, dpos, 0, dxo, B, T, D));
    float *g_p = dl(c, dpo, np), *g_c = delta(c, dcls, c0, D), *g_pos = delta(c, dpos, p0, npos);
    fd_check(&f, "embed d_patch_out", f.a, np, g_p, 1e-2, 40);
    fd_check(&f, "embed d_cls", f.b2, D, g_c, 1e-2, 40);
    fd_check(&f, "embed d_pos", f.b3, npos, g_pos, 1e-2, 40);
    free(g_p), free(g_c), free(g_pos), free(r), free(c0), free(p0);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.b2), sv_be_free(c->be, f.b3);
    sv_be_free(c->be, f.o), sv_be_free(c->be, dxo), sv_be_free(c->be, dpo);
    sv_be_free(c->be, dcls), sv_be_free(c->be, dpos);
}

/* ---- cls_select ---- */
static void cls_fwd(fd_case *f) { CHECK_OK(sv_be_cls_select(f->c->be, f->o, f->a, f->B, f->T, f->D)); }
static void grad_cls(ops_ctx *c, int B, int T, int D) {
    fd_case f = {.c = c, .fwd = cls_fwd, .B = B, .T = T, .D = D};
    size_t nx = (size_t)B * T * D, no = (size_t)B * D;
    double *r = dalloc(no), *x0 = dalloc(nx);
    f.a = dev_rand_c(c, nx, 61, 1, NULL);
    f.o = dev_alloc(c, no * 4);
    float *d_out = dev_rand_c(c, no, 62, 1, r);
    f.r = r, f.out = f.o, f.nout = no;
    float *dx = dev_rand_c(c, nx, 63, 1, x0);
    CHECK_OK(sv_be_cls_select_bwd(c->be, dx, d_out, B, T, D));
    float *g = delta(c, dx, x0, nx);
    fd_check(&f, "cls_select dx", f.a, nx, g, 1e-2, 60);
    free(g), free(r), free(x0);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.o), sv_be_free(c->be, d_out), sv_be_free(c->be, dx);
}

/* ---- gelu ---- */
static void gelu_fwd(fd_case *f) { CHECK_OK(sv_be_gelu_fwd(f->c->be, f->o, f->a, (size_t)f->M)); }
static void grad_gelu(ops_ctx *c, int n) {
    fd_case f = {.c = c, .fwd = gelu_fwd, .M = n};
    double *r = dalloc(n);
    f.a = dev_rand_c(c, n, 71, 2, NULL);
    f.o = dev_alloc(c, (size_t)n * 4);
    float *d_out = dev_rand_c(c, n, 72, 1, r), *dx = dev_alloc(c, (size_t)n * 4);
    f.r = r, f.out = f.o, f.nout = n;
    CHECK_OK(sv_be_gelu_bwd(c->be, dx, d_out, f.a, n));
    float *g = dl(c, dx, n);
    fd_check(&f, "gelu dx", f.a, n, g, 1e-2, 60);
    free(g), free(r);
    sv_be_free(c->be, f.a), sv_be_free(c->be, f.o), sv_be_free(c->be, d_out), sv_be_free(c->be, dx);
}

int main(void) {
    ops_ctx c;
    ops_ctx_init(&c, SV_F32, 1);
    grad_linear(&c, 9, 7, 5, 0);
    grad_linear(&c, 1, 6, 11, 1);
    grad_linear(&c, 17, 13, 10, 1);
    grad_layernorm(&c, 7, 37);
    grad_layernorm(&c, 1, 5);
    grad_attention(&c, 2, 17, 12, 2);
    grad_attention(&c, 1, 50, 16, 4);
    grad_xent(&c, 4, 10, 0.0f, 0);
    grad_xent(&c, 3, 13, 0.1f, 0);
    grad_xent(&c, 3, 7, 0.0f, 1);
    grad_embed(&c, 2, 5, 6);
    grad_cls(&c, 3, 4, 5);
    grad_gelu(&c, 64);
    ops_ctx_free(&c);
    printf("ops grad: every backward matches central finite differences\n");
    return 0;
}
