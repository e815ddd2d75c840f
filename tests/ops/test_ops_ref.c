/* Every CPU backend op against a naive double-precision reference on random inputs, in fp32
 * mode (tight tolerance) and bf16 mode (outputs bf16-representable, bf16 tolerance).
 * argv[1]: thread count of the backend (default 1). */
#include "ops_util.h"

static uint64_t g_key = 1000;
static uint64_t key(void) { return g_key++; }

static void test_linear(ops_ctx *c, int M, int N, int K, int gelu, int with_bias) {
    size_t nin = (size_t)M * K, nw = (size_t)N * K, no = (size_t)M * N;
    double *hin = dalloc(nin), *hw = dalloc(nw), *hb = dalloc(N), *ro = dalloc(no), *rp = dalloc(no);
    float *in = dev_rand_c(c, nin, key(), 1.0, hin);
    float *W = dev_rand_c(c, nw, key(), 1.0 / sqrt(K), hw);
    float *b = dev_rand_c(c, N, key(), 0.5, hb);
    float *out = dev_alloc(c, no * 4), *pre = dev_alloc(c, no * 4);
    CHECK_OK(sv_be_linear_fwd(c->be, out, gelu ? pre : NULL, in, W, with_bias ? b : NULL, M, N, K));
    ref_linear(ro, gelu ? rp : NULL, hin, hw, with_bias ? hb : NULL, M, N, K);
    float *go = dl(c, out, no);
    check_vec("linear_fwd out", go, ro, no, tol_of(c), c->bf16);
    if (gelu) {
        float *gp = dl(c, pre, no);
        check_vec("linear_fwd pre_gelu", gp, rp, no, tol_of(c), c->bf16);
        free(gp);
    }

    /* backward vs the analytic double formula, on the pre-activation the op stored */
    double *hdo = dalloc(no), *rdi = dalloc(nin), *rdw = dalloc(nw), *rdb = dalloc(N);
    double *hdw0 = dalloc(nw), *hdb0 = dalloc(N);
    float *d_out = dev_rand_c(c, no, key(), 1.0, hdo);
    float *dW = dev_rand(c, nw, key(), 1.0, 0, hdw0);
    float *db = dev_rand(c, N, key(), 1.0, 0, hdb0);
    float *d_in = dev_alloc(c, nin * 4);
    float *gp = dl(c, pre, no);
    double *g = dalloc(no);
    for (size_t i = 0; i < no; i++) {
        g[i] = gelu ? hdo[i] * ref_gelu_grad(gp[i]) : hdo[i];
        if (c->bf16) g[i] = sv_round_bf16((float)g[i]); /* d_out is a bf16 buffer */
    }
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += g[(size_t)m * N + n] * hw[(size_t)n * K + k];
            rdi[(size_t)m * K + k] = s;
        }
    for (int n = 0; n < N; n++) {
        double sb = 0;
        for (int m = 0; m < M; m++) sb += g[(size_t)m * N + n];
        rdb[n] = sb; /* compared against db - db0 below */
        for (int k = 0; k < K; k++) {
            double s = 0;
            for (int m = 0; m < M; m++) s += g[(size_t)m * N + n] * hin[(size_t)m * K + k];
            rdw[(size_t)n * K + k] = s;
        }
    }
    CHECK_OK(sv_be_linear_bwd(c->be, d_in, dW, with_bias ? db : NULL, d_out, in, W, gelu ? pre : NULL, M, N, K));
    float *gdi = dl(c, d_in, nin), *gdw = dl(c, dW, nw), *gdb = dl(c, db, N);
    check_vec("linear_bwd d_in", gdi, rdi, nin, c->bf16 ? 3e-2 : 2e-5, c->bf16);
    /* accumulated f32 grads: never rounded; the tolerance covers bf16-rounded d_out only */
    float *dwd = malloc(nw * 4), *dbd = malloc((size_t)N * 4);
    for (size_t i = 0; i < nw; i++) dwd[i] = gdw[i] - (float)hdw0[i];
    for (int i = 0; i < N; i++) dbd[i] = gdb[i] - (float)hdb0[i];
    check_vec("linear_bwd dW", dwd, rdw, nw, c->bf16 ? 3e-2 : 5e-5, 0);
    if (with_bias)
        check_vec("linear_bwd db", dbd, rdb, N, c->bf16 ? 3e-2 : 5e-5, 0);
    else
        for (int i = 0; i < N; i++) CHECK(gdb[i] == (float)hdb0[i]);
    /* d_out was overwritten with d_out * gelu'(pre) */
    if (gelu) {
        float *gd = dl(c, d_out, no);
        check_vec("linear_bwd d_out*gelu'", gd, g, no, c->bf16 ? 1.6e-2 : 1e-5, c->bf16);
        free(gd);
    }
    free(dwd), free(dbd), free(gdi), free(gdw), free(gdb), free(gp), free(g), free(go);
    free(hin), free(hw), free(hb), free(ro), free(rp), free(hdo), free(rdi), free(rdw), free(rdb);
    free(hdw0), free(hdb0);
    sv_be_free(c->be, in), sv_be_free(c->be, W), sv_be_free(c->be, b), sv_be_free(c->be, out);
    sv_be_free(c->be, pre), sv_be_free(c->be, d_out), sv_be_free(c->be, dW);
    sv_be_free(c->be, db), sv_be_free(c->be, d_in);
}

static void test_layernorm(ops_ctx *c, int M, int C) {
    size_t n = (size_t)M * C;
    double *hx = dalloc(n), *hw = dalloc(C), *hb = dalloc(C), *ro = dalloc(n), *rm = dalloc(M), *rr = dalloc(M);
    float *x = dev_rand_c(c, n, key(), 2.0, hx);
    float *w = dev_rand_c(c, C, key(), 1.0, hw), *b = dev_rand_c(c, C, key(), 1.0, hb);
    float *out = dev_alloc(c, n * 4), *mean = dev_alloc(c, M * 4), *rstd = dev_alloc(c, M * 4);
    CHECK_OK(sv_be_layernorm_fwd(c->be, out, mean, rstd, x, w, b, M, C));
    ref_layernorm(ro, rm, rr, hx, hw, hb, M, C);
    float *go = dl(c, out, n), *gm = dl(c, mean, M), *gr = dl(c, rstd, M);
    check_vec("layernorm out", go, ro, n, c->bf16 ? 1.6e-2 : 2e-5, c->bf16);
    check_vec("layernorm mean", gm, rm, M, 2e-5, 0);
    check_vec("layernorm rstd", gr, rr, M, 2e-5, 0);

    /* backward (accumulating into d_x, dw, db) vs the double formula */
    double *hdy = dalloc(n), *hdx0 = dalloc(n), *rdx = dalloc(n), *rdw = dalloc(C), *rdb = dalloc(C);
    float *dy = dev_rand_c(c, n, key(), 1.0, hdy), *dx = dev_rand_c(c, n, key(), 1.0, hdx0);
    float *dw = dev_fill(c, C, 0.0f), *db = dev_fill(c, C, 0.0f);
    CHECK_OK(sv_be_layernorm_bwd(c->be, dx, dw, db, dy, x, w, mean, rstd, M, C));
    for (int m = 0; m < M; m++) {
        double mg = 0, mgx = 0;
        for (int i = 0; i < C; i++) {
            size_t j = (size_t)m * C + i;
            double xh = (hx[j] - rm[m]) * rr[m], g = hdy[j] * hw[i];
            mg += g, mgx += g * xh;
            rdw[i] += hdy[j] * xh, rdb[i] += hdy[j];
        }
        mg /= C, mgx /= C;
        for (int i = 0; i < C; i++) {
            size_t j = (size_t)m * C + i;
            double xh = (hx[j] - rm[m]) * rr[m];
            rdx[j] = hdx0[j] + rr[m] * (hdy[j] * hw[i] - mg - xh * mgx);
        }
    }
    float *gdx = dl(c, dx, n), *gdw = dl(c, dw, C), *gdb = dl(c, db, C);
    check_vec("layernorm d_x", gdx, rdx, n, c->bf16 ? 1.6e-2 : 5e-5, c->bf16);
    check_vec("layernorm dw", gdw, rdw, C, 5e-5, 0);
    check_vec("layernorm db", gdb, rdb, C, 5e-5, 0);
    free(hdy), free(hdx0), free(rdx), free(rdw), free(rdb), free(gdx), free(gdw), free(gdb);
    sv_be_free(c->be, dy), sv_be_free(c->be, dx), sv_be_free(c->be, dw), sv_be_free(c->be, db);
    free(go), free(gm), free(gr), free(hx), free(hw), free(hb), free(ro), free(rm), free(rr);
    sv_be_free(c->be, x), sv_be_free(c->be, w), sv_be_free(c->be, b), sv_be_free(c->be, out);
    sv_be_free(c->be, mean), sv_be_free(c->be, rstd);
}

static void test_attention(ops_ctx *c, int B, int T, int D, int H) {
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D, np = (size_t)B * H * T * T;
    double *hq = dalloc(nq), *ro = dalloc(no), *rp = dalloc(np);
    float *qkv = dev_rand_c(c, nq, key(), 1.0, hq);
    float *out = dev_alloc(c, no * 4);
    size_t sb = sv_be_attention_saved_bytes(c->be, B, T, D, H);
    size_t xb = sv_be_attention_scratch_bytes(c->be, B, T, D, H);
    CHECK(sb >= np * 4);
    float *saved = dev_alloc(c, sb), *scratch = dev_alloc(c, xb);
    CHECK_OK(sv_be_attention_fwd(c->be, out, saved, scratch, qkv, B, T, D, H));
    ref_attention(ro, rp, hq, B, T, D, H);
    float *go = dl(c, out, no);
    check_vec("attention out", go, ro, no, tol_of(c) * 2, c->bf16);
    /* the saved probabilities are fp32 and rows sum to one */
    float *gp = dl(c, saved, np);
    check_vec("attention P", gp, rp, np, 2e-5, 0);

    /* backward vs the double formula on the reference probabilities */
    double *hdo = dalloc(no), *rdq = dalloc(nq);
    float *d_out = dev_rand_c(c, no, key(), 1.0, hdo), *dqkv = dev_alloc(c, nq * 4);
    CHECK_OK(sv_be_attention_bwd(c->be, dqkv, scratch, d_out, qkv, out, saved, B, T, D, H));
    ref_attention_bwd(rdq, hq, rp, NULL, hdo, B, T, D, H);
    float *gdq = dl(c, dqkv, nq);
    check_vec("attention d_qkv", gdq, rdq, nq, c->bf16 ? 3e-2 : 5e-5, c->bf16);
    free(gdq), free(hdo), free(rdq);
    sv_be_free(c->be, d_out), sv_be_free(c->be, dqkv);
    free(go), free(gp), free(hq), free(ro), free(rp);
    sv_be_free(c->be, qkv), sv_be_free(c->be, out), sv_be_free(c->be, saved);
    sv_be_free(c->be, scratch);
}

static void test_xent(ops_ctx *c, int B, int K, float smoothing, int soft) {
    size_t n = (size_t)B * K;
    double *hz = dalloc(n), *hs = dalloc(n), *rl = dalloc(B), *rd = dalloc(n);
    float *z = dev_rand_c(c, n, key(), 3.0, hz);
    int32_t *lab = dev_alloc(c, (size_t)B * 4), *hl = malloc((size_t)B * 4);
    for (int b = 0; b < B; b++) hl[b] = (int32_t)(sv_rand_u64(77, b) % (uint64_t)K);
    CHECK_OK(sv_be_upload(c->be, lab, hl, (size_t)B * 4));
    float *st = NULL;
    if (soft) { /* mixup-like: two smoothed labels blended */
        for (int b = 0; b < B; b++)
            for (int k = 0; k < K; k++) {
                int l2 = (hl[b] + 1) % K;
                hs[(size_t)b * K + k] = 0.7 * ((k == hl[b]) * (1 - smoothing) + smoothing / K) +
                    0.3 * ((k == l2) * (1 - smoothing) + smoothing / K);
            }
        st = dev_alloc(c, n * 4);
        dev_set(c, st, hs, n);
        for (size_t i = 0; i < n; i++) hs[i] = (float)hs[i];
    }
    float *loss = dev_alloc(c, (size_t)B * 4), *d = dev_alloc(c, n * 4);
    float gs = 1.0f / B;
    CHECK_OK(sv_be_softmax_xent(c->be, loss, d, z, soft ? NULL : lab, st, B, K, smoothing, gs));
    ref_xent(rl, rd, hz, hl, soft ? hs : NULL, B, K, smoothing, gs);
    float *gl = dl(c, loss, B), *gd = dl(c, d, n);
    check_vec("xent loss", gl, rl, B, 1e-5, 0);
    check_vec("xent d_logits", gd, rd, n, tol_of(c) * 2, c->bf16);
    /* loss only (evaluation) */
    CHECK_OK(sv_be_softmax_xent(c->be, loss, NULL, z, soft ? NULL : lab, st, B, K, smoothing, gs));
    free(gl);
    gl = dl(c, loss, B);
    check_vec("xent loss (no grad)", gl, rl, B, 1e-5, 0);
    /* a label outside [0, K) is an error naming it */
    if (!soft) {
        hl[0] = K;
        CHECK_OK(sv_be_upload(c->be, lab, hl, 4));
        CHECK(sv_be_softmax_xent(c->be, loss, d, z, lab, NULL, B, K, smoothing, gs) == SV_ERR_INVALID);
    }
    free(gl), free(gd), free(hz), free(hs), free(rl), free(rd), free(hl);
    sv_be_free(c->be, z), sv_be_free(c->be, lab), sv_be_free(c->be, st);
    sv_be_free(c->be, loss), sv_be_free(c->be, d);
}

static void test_im2col(ops_ctx *c, int B, int C, int Hh, int Ww, int p) {
    size_t ni = (size_t)B * C * Hh * Ww;
    int P = (Hh / p) * (Ww / p);
    size_t cols = (size_t)C * p * p, no = (size_t)B * P * cols;
    double *hi = dalloc(ni), *ro = dalloc(no);
    float *img = dev_rand(c, ni, key(), 1.0, 0, hi); /* f32 input, not pre-rounded */
    float *out = dev_alloc(c, no * 4);
    CHECK_OK(sv_be_im2col(c->be, out, img, B, C, Hh, Ww, p));
    for (int b = 0; b < B; b++)
        for (int py = 0; py < Hh / p; py++)
            for (int px = 0; px < Ww / p; px++)
                for (int ch = 0; ch < C; ch++)
                    for (int ky = 0; ky < p; ky++)
                        for (int kx = 0; kx < p; kx++) {
                            size_t row = (size_t)b * P + (size_t)py * (Ww / p) + px;
                            size_t col = ((size_t)ch * p + ky) * p + kx;
                            ro[row * cols + col] = hi[(((size_t)b * C + ch) * Hh + py * p + ky) * Ww + px * p + kx];
                        }
    float *go = dl(c, out, no);
    check_vec("im2col", go, ro, no, c->bf16 ? 4e-3 : 0, c->bf16);
    free(go), free(hi), free(ro);
    sv_be_free(c->be, img), sv_be_free(c->be, out);
}

static void test_embed_cls(ops_ctx *c, int B, int T, int D) {
    size_t nx = (size_t)B * T * D, np = (size_t)B * (T - 1) * D;
    double *hp = dalloc(np), *hc = dalloc(D), *hpos = dalloc((size_t)T * D), *rx = dalloc(nx);
    float *po = dev_rand_c(c, np, key(), 1.0, hp), *cls = dev_rand_c(c, D, key(), 1.0, hc);
    float *pos = dev_rand_c(c, (size_t)T * D, key(), 1.0, hpos);
    float *x = dev_alloc(c, nx * 4);
    CHECK_OK(sv_be_embed_fwd(c->be, x, po, cls, NULL, 0, pos, 0, B, T, D));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++)
                rx[((size_t)b * T + t) * D + d] =
                    (t == 0 ? hc[d] : hp[((size_t)b * (T - 1) + t - 1) * D + d]) + hpos[(size_t)t * D + d];
    float *gx = dl(c, x, nx);
    check_vec("embed_fwd", gx, rx, nx, c->bf16 ? 4e-3 : 1e-7, c->bf16);

    double *hsel = dalloc((size_t)B * D);
    float *sel = dev_alloc(c, (size_t)B * D * 4);
    CHECK_OK(sv_be_cls_select(c->be, sel, x, B, T, D));
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) hsel[(size_t)b * D + d] = gx[(size_t)b * T * D + d];
    float *gs = dl(c, sel, (size_t)B * D);
    check_vec("cls_select", gs, hsel, (size_t)B * D, 0, c->bf16);

    /* embed_bwd: d_patch_out overwritten, d_cls/d_pos accumulate; cls_select_bwd accumulates */
    double *hdx = dalloc(nx), *rdp = dalloc(np), *rdc = dalloc(D), *rdpos = dalloc((size_t)T * D);
    double *hsd = dalloc((size_t)B * D);
    float *ddx = dev_rand_c(c, nx, key(), 1.0, hdx), *dpo = dev_fill(c, np, 7.0f);
    float *dcls = dev_fill(c, D, 1.0f), *dpos = dev_fill(c, (size_t)T * D, 2.0f);
    CHECK_OK(sv_be_embed_bwd(c->be, dpo, dcls, NULL, 0, dpos, 0, ddx, B, T, D));
    for (int d = 0; d < D; d++) rdc[d] = 1.0;
    for (size_t i = 0; i < (size_t)T * D; i++) rdpos[i] = 2.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++) {
                double g = hdx[((size_t)b * T + t) * D + d];
                rdpos[(size_t)t * D + d] += g;
                if (t == 0)
                    rdc[d] += g;
                else
                    rdp[((size_t)b * (T - 1) + t - 1) * D + d] = g;
            }
    float *g1 = dl(c, dpo, np), *g2 = dl(c, dcls, D), *g3 = dl(c, dpos, (size_t)T * D);
    check_vec("embed_bwd d_patch_out", g1, rdp, np, 0, c->bf16);
    check_vec("embed_bwd d_cls", g2, rdc, D, 1e-6, 0);
    check_vec("embed_bwd d_pos", g3, rdpos, (size_t)T * D, 1e-6, 0);
    float *dsel = dev_rand_c(c, (size_t)B * D, key(), 1.0, hsd);
    CHECK_OK(sv_be_cls_select_bwd(c->be, ddx, dsel, B, T, D));
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) hdx[(size_t)b * T * D + d] += hsd[(size_t)b * D + d];
    float *g4 = dl(c, ddx, nx);
    check_vec("cls_select_bwd", g4, hdx, nx, c->bf16 ? 4e-3 : 1e-7, c->bf16);
    free(g1), free(g2), free(g3), free(g4), free(hdx), free(rdp), free(rdc), free(rdpos), free(hsd);
    sv_be_free(c->be, ddx), sv_be_free(c->be, dpo), sv_be_free(c->be, dcls);
    sv_be_free(c->be, dpos), sv_be_free(c->be, dsel);
    free(gx), free(gs), free(hp), free(hc), free(hpos), free(rx), free(hsel);
    sv_be_free(c->be, po), sv_be_free(c->be, cls), sv_be_free(c->be, pos), sv_be_free(c->be, x);
    sv_be_free(c->be, sel);
}

/* Register tokens (timm reg_tokens): with_cls ? [cls, reg 0..R-1, patches] : [reg, patches], pos
 * added to every token, or with nec (timm no_embed_class) to the patch tokens only (pos then has
 * T - P rows); embed_bwd writes the patch rows and accumulates d_cls, d_reg and d_pos. */
static void test_embed_reg(ops_ctx *c, int B, int T, int D, int with_cls, int R, int nec) {
    const int c1 = with_cls ? 1 : 0, P = c1 + R, pp = nec ? P : 0; /* pp: tokens before pos row 0 */
    size_t nx = (size_t)B * T * D, np = (size_t)B * (T - P) * D, nr = (size_t)R * D;
    size_t npos = (size_t)(T - pp) * D;
    double *hp = dalloc(np), *hc = dalloc(D), *hr = dalloc(nr), *hpos = dalloc(npos), *rx = dalloc(nx);
    float *po = dev_rand_c(c, np, key(), 1.0, hp), *cls = dev_rand_c(c, D, key(), 1.0, hc);
    float *reg = dev_rand_c(c, nr, key(), 1.0, hr), *pos = dev_rand_c(c, npos, key(), 1.0, hpos);
    float *x = dev_alloc(c, nx * 4);
    CHECK_OK(sv_be_embed_fwd(c->be, x, po, with_cls ? cls : NULL, R ? reg : NULL, R, pos, nec, B, T, D));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++)
                rx[((size_t)b * T + t) * D + d] = (t < c1      ? hc[d]
                                                       : t < P ? hr[(size_t)(t - c1) * D + d]
                                                               : hp[((size_t)b * (T - P) + t - P) * D + d]) +
                    (t < pp ? 0.0 : hpos[(size_t)(t - pp) * D + d]);
    float *gx = dl(c, x, nx);
    check_vec("embed_fwd (registers)", gx, rx, nx, c->bf16 ? 4e-3 : 1e-7, c->bf16);

    double *hdx = dalloc(nx), *rdp = dalloc(np), *rdc = dalloc(D), *rdr = dalloc(nr), *rdpos = dalloc(npos);
    float *ddx = dev_rand_c(c, nx, key(), 1.0, hdx), *dpo = dev_fill(c, np, 7.0f);
    float *dcls = dev_fill(c, D, 1.0f), *dreg = dev_fill(c, nr, 3.0f), *dpos = dev_fill(c, npos, 2.0f);
    CHECK_OK(sv_be_embed_bwd(c->be, dpo, with_cls ? dcls : NULL, R ? dreg : NULL, R, dpos, nec, ddx, B, T, D));
    for (int d = 0; d < D; d++) rdc[d] = 1.0;
    for (size_t i = 0; i < nr; i++) rdr[i] = 3.0;
    for (size_t i = 0; i < npos; i++) rdpos[i] = 2.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++) {
                double g = hdx[((size_t)b * T + t) * D + d];
                if (t >= pp) rdpos[(size_t)(t - pp) * D + d] += g;
                if (t < c1)
                    rdc[d] += g;
                else if (t < P)
                    rdr[(size_t)(t - c1) * D + d] += g;
                else
                    rdp[((size_t)b * (T - P) + t - P) * D + d] = g;
            }
    float *g1 = dl(c, dpo, np), *g2 = dl(c, dcls, D), *g3 = dl(c, dreg, nr), *g4 = dl(c, dpos, npos);
    check_vec("embed_bwd d_patch_out (registers)", g1, rdp, np, 0, c->bf16);
    check_vec("embed_bwd d_cls (registers)", g2, rdc, D, 1e-6, 0);
    check_vec("embed_bwd d_reg", g3, rdr, nr, 1e-6, 0);
    check_vec("embed_bwd d_pos (registers)", g4, rdpos, npos, 1e-6, 0);
    free(g1), free(g2), free(g3), free(g4), free(gx);
    free(hp), free(hc), free(hr), free(hpos), free(rx), free(hdx), free(rdp), free(rdc), free(rdr), free(rdpos);
    float *all[] = {po, cls, reg, pos, x, ddx, dpo, dcls, dreg, dpos};
    for (int i = 0; i < 10; i++) sv_be_free(c->be, all[i]);
}

static void test_elementwise(ops_ctx *c, size_t n) {
    double *ha = dalloc(n), *hb = dalloc(n), *r = dalloc(n);
    float *a = dev_rand_c(c, n, key(), 2.0, ha), *b = dev_rand_c(c, n, key(), 1.0, hb);
    float *o = dev_alloc(c, n * 4);
    CHECK_OK(sv_be_gelu_fwd(c->be, o, a, n));
    for (size_t i = 0; i < n; i++) r[i] = ref_gelu(ha[i]);
    float *g = dl(c, o, n);
    check_vec("gelu_fwd", g, r, n, tol_of(c), c->bf16);
    free(g);
    CHECK_OK(sv_be_gelu_bwd(c->be, o, b, a, n));
    for (size_t i = 0; i < n; i++) r[i] = hb[i] * ref_gelu_grad(ha[i]);
    g = dl(c, o, n);
    check_vec("gelu_bwd", g, r, n, tol_of(c), c->bf16);
    free(g);
    /* aliasing d_x == d_out */
    CHECK_OK(sv_be_gelu_bwd(c->be, b, b, a, n));
    g = dl(c, b, n);
    check_vec("gelu_bwd in place", g, r, n, tol_of(c), c->bf16);
    free(g);
    dev_set(c, b, hb, n);
    CHECK_OK(sv_be_residual_add(c->be, o, a, b, n));
    for (size_t i = 0; i < n; i++) r[i] = ha[i] + hb[i];
    g = dl(c, o, n);
    check_vec("residual_add", g, r, n, c->bf16 ? 4e-3 : 1e-7, c->bf16);
    free(g);
    CHECK_OK(sv_be_residual_add(c->be, a, a, b, n)); /* out aliases a */
    g = dl(c, a, n);
    check_vec("residual_add in place", g, r, n, c->bf16 ? 4e-3 : 1e-7, c->bf16);
    free(g);
    /* f32 -> compute rounds only in bf16 mode; compute -> f32 is exact */
    float *f = dev_rand(c, n, key(), 1.0, 0, ha);
    CHECK_OK(sv_be_f32_to_compute(c->be, o, f, n));
    g = dl(c, o, n);
    for (size_t i = 0; i < n; i++) CHECK(g[i] == (c->bf16 ? sv_round_bf16((float)ha[i]) : (float)ha[i]));
    CHECK_OK(sv_be_compute_to_f32(c->be, f, o, n));
    float *g2 = dl(c, f, n);
    CHECK(memcmp(g, g2, n * 4) == 0);
    free(g), free(g2), free(ha), free(hb), free(r);
    sv_be_free(c->be, a), sv_be_free(c->be, b), sv_be_free(c->be, o), sv_be_free(c->be, f);
}

static void run_all(sv_dtype dt, int threads) {
    ops_ctx c;
    ops_ctx_init(&c, dt, threads);
    /* linear: odd sizes, M = 1 edge, ViT-like fc shapes with 197 tokens */
    test_linear(&c, 1, 7, 5, 0, 1);
    test_linear(&c, 1, 33, 19, 1, 1);
    test_linear(&c, 37, 29, 23, 0, 0);
    test_linear(&c, 2 * 197, 96, 48, 1, 1);
    test_linear(&c, 300, 72, 40, 0, 1);
    test_layernorm(&c, 1, 5);
    test_layernorm(&c, 2 * 197, 120);
    test_layernorm(&c, 65, 37);
    test_attention(&c, 2, 197, 48, 3);
    test_attention(&c, 3, 50, 24, 2);
    test_attention(&c, 1, 17, 20, 4);
    test_attention(&c, 2, 65, 12, 1);
    test_attention(&c, 1, 1, 8, 2);
    test_xent(&c, 8, 10, 0.0f, 0);
    test_xent(&c, 5, 37, 0.1f, 0);
    test_xent(&c, 1, 1000, 0.1f, 0);
    test_xent(&c, 6, 11, 0.1f, 1);
    test_im2col(&c, 2, 3, 28, 28, 4);
    test_im2col(&c, 1, 1, 12, 8, 4);
    test_im2col(&c, 2, 3, 32, 32, 16);
    test_embed_cls(&c, 2, 197, 40);
    test_embed_cls(&c, 3, 17, 33);
    test_embed_reg(&c, 2, 1 + 4 + 49, 24, 1, 4, 0);
    test_embed_reg(&c, 3, 2 + 16, 33, 0, 2, 0);
    test_embed_reg(&c, 2, 1 + 4 + 49, 24, 1, 4, 1); /* no_embed_class */
    test_embed_reg(&c, 3, 2 + 16, 33, 0, 2, 1);
    test_embed_reg(&c, 2, 1 + 25, 16, 1, 0, 1); /* a class token alone, without a position */
    test_elementwise(&c, 1);
    test_elementwise(&c, 1001);
    test_elementwise(&c, 70001);
    ops_ctx_free(&c);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    run_all(SV_F32, threads);
    run_all(SV_BF16, threads);
    printf("ops ref: all ops match the double reference (threads=%d)\n", threads);
    return 0;
}
