/* CPU backend: the training-recipe ops against their definitions.
 *
 * - sv_be_drop, per sample (stochastic depth, timm drop_path) and per element (dropout): the
 *   dropped fraction matches the rate within 4 standard deviations, kept values are scaled by
 *   exactly 1/keep, a per-sample mask keeps or drops a whole row, the mask of a sample does not
 *   depend on how the batch is split (two halves with shifted sample0 = one call: the world-size
 *   independence of the masks), on the thread count, or on the step key only where it should
 *   (another key draws another mask); keep = 1 is the identity.
 * - LayerScale (scale_cols / scale_cols_bwd), average pooling (token_mean / _bwd) and the sigmoid
 *   binary cross-entropy against double-precision formulas, in fp32 and bf16 compute; the BCE
 *   gradient also against a finite difference of its own loss.
 * - attention-probability dropout (sv_be_attention_fwd_drop / _bwd_drop): out = (P * M) v and
 *   the exact backward against double formulas on the same mask M (sv_drop_mult of (key,
 *   sample, (h T + i) T + j)), fp32 and bf16, 1 and 2 threads; the saved P is the plain softmax;
 *   the dropped fraction matches the rate; a batch split in two calls with shifted sample0 gives
 *   the same bits (world-size independence); keep = 1 and drop = NULL are the plain op bitwise. */
#include "ops_util.h"

static void test_drop_statistics(void) {
    for (int t = 1; t <= 2; t++) {
        ops_ctx c;
        ops_ctx_init(&c, SV_F32, t);
        const int B = 6000;
        const size_t n = 20;
        const float rate = 0.3f, keep = 1.0f - rate;
        double *h = malloc((size_t)B * n * sizeof *h);
        float *x = dev_rand_c(&c, (size_t)B * n, 11, 1.0, h);
        sv_drop d = {.key = 0x1234, .sample0 = 5000, .keep = keep};
        CHECK_OK(sv_be_drop(c.be, x, &d, B, n, n)); /* one draw per sample */
        float *r = dl(&c, x, (size_t)B * n);
        int dropped = 0;
        for (int b = 0; b < B; b++) {
            int z = r[(size_t)b * n] == 0.0f && h[(size_t)b * n] != 0.0;
            dropped += z;
            for (size_t i = 0; i < n; i++) {
                float want = z ? 0.0f : (float)h[(size_t)b * n + i] * (1.0f / keep);
                CHECK(r[(size_t)b * n + i] == want); /* whole row kept (scaled by 1/keep) or dropped */
            }
        }
        double sd = sqrt((double)B * rate * keep), dev = fabs(dropped - (double)B * rate);
        printf("drop path (threads %d): %d of %d samples dropped at rate %.2f (expected %.0f +- %.0f)\n", t, dropped, B,
               rate, B * rate, sd);
        CHECK(dev < 4 * sd);
        /* the same samples split in two calls (ranks / micro-batches): the same masks */
        float *y = dev_rand_c(&c, (size_t)B * n, 11, 1.0, NULL);
        sv_drop d2 = d;
        CHECK_OK(sv_be_drop(c.be, y, &d2, B / 2, n, n));
        d2.sample0 += (uint64_t)(B / 2);
        CHECK_OK(sv_be_drop(c.be, y + (size_t)(B / 2) * n, &d2, B - B / 2, n, n));
        float *ry = dl(&c, y, (size_t)B * n);
        CHECK(memcmp(r, ry, (size_t)B * n * sizeof(float)) == 0);
        free(ry);
        /* another key (another step, block or site): another mask */
        float *z = dev_rand_c(&c, (size_t)B * n, 11, 1.0, NULL);
        sv_drop d3 = d;
        d3.key ^= 1;
        CHECK_OK(sv_be_drop(c.be, z, &d3, B, n, n));
        float *rz = dl(&c, z, (size_t)B * n);
        int differ = 0;
        for (int b = 0; b < B; b++) differ += (rz[(size_t)b * n] == 0.0f) != (r[(size_t)b * n] == 0.0f);
        CHECK(differ > B / 5);
        free(rz);
        /* per element */
        float *e = dev_rand_c(&c, (size_t)B * n, 12, 1.0, h);
        CHECK_OK(sv_be_drop(c.be, e, &d, B, n, 1));
        float *re = dl(&c, e, (size_t)B * n);
        size_t zeros = 0, N = (size_t)B * n;
        for (size_t i = 0; i < N; i++) {
            if (re[i] == 0.0f && h[i] != 0.0)
                zeros++;
            else
                CHECK(re[i] == (float)h[i] * (1.0f / keep));
        }
        double sde = sqrt((double)N * rate * keep);
        printf("dropout (threads %d): %zu of %zu elements dropped (expected %.0f +- %.0f)\n", t, zeros, N, N * rate,
               sde);
        CHECK(fabs((double)zeros - N * rate) < 4 * sde);
        /* keep 1: identity (no call reaches the backend) */
        float *id = dev_rand_c(&c, N, 13, 1.0, h);
        sv_drop one = {.key = 1, .sample0 = 0, .keep = 1.0f};
        CHECK_OK(sv_be_drop(c.be, id, &one, B, n, 1));
        float *rid = dl(&c, id, N);
        for (size_t i = 0; i < N; i++) CHECK(rid[i] == (float)h[i]);
        sv_drop bad = {.key = 1, .keep = 0.0f};
        CHECK(sv_be_drop(c.be, id, &bad, B, n, 1) == SV_ERR_INVALID);
        free(rid), free(re), free(r), free(h);
        sv_be_free(c.be, x), sv_be_free(c.be, y), sv_be_free(c.be, z), sv_be_free(c.be, e), sv_be_free(c.be, id);
        ops_ctx_free(&c);
    }
}

static float rnd(int bf, double v) { return bf ? sv_round_bf16((float)v) : (float)v; }

static void test_layer_scale_and_pool(sv_dtype dt) {
    ops_ctx c;
    ops_ctx_init(&c, dt, 2);
    const int bf = c.bf16, B = 3, T = 5, D = 7, M = B * T;
    double *hx = malloc((size_t)M * D * sizeof *hx), *hg = malloc((size_t)D * sizeof *hg);
    double *hd = malloc((size_t)M * D * sizeof *hd);
    float *x = dev_rand_c(&c, (size_t)M * D, 21, 1.0, hx), *g = dev_rand_c(&c, D, 22, 0.5, hg);
    float *dout = dev_rand_c(&c, (size_t)M * D, 23, 1.0, hd);
    float *out = dev_alloc(&c, (size_t)M * D * 4), *dg = dev_fill(&c, D, 0.25f);
    CHECK_OK(sv_be_scale_cols(c.be, out, x, g, M, D));
    float *r = dl(&c, out, (size_t)M * D);
    for (int m = 0; m < M; m++)
        for (int d = 0; d < D; d++) CHECK(r[m * D + d] == rnd(bf, (float)hx[m * D + d] * (float)hg[d]));
    free(r);
    CHECK_OK(sv_be_scale_cols_bwd(c.be, dout, dg, dout, x, g, M, D)); /* d_x aliases d_out */
    float *rdx = dl(&c, dout, (size_t)M * D), *rdg = dl(&c, dg, D);
    for (int d = 0; d < D; d++) {
        double s = 0.25;
        for (int m = 0; m < M; m++) s += hd[m * D + d] * hx[m * D + d];
        CHECK(fabs(rdg[d] - s) <= 1e-5 * (1 + fabs(s)));
    }
    for (int m = 0; m < M; m++)
        for (int d = 0; d < D; d++) CHECK(rdx[m * D + d] == rnd(bf, (float)hd[m * D + d] * (float)hg[d]));
    free(rdx), free(rdg);
    /* average over the patch tokens (first = 1: class token excluded) */
    for (int first = 0; first <= 1; first++) {
        float *pool = dev_alloc(&c, (size_t)B * D * 4);
        CHECK_OK(sv_be_token_mean(c.be, pool, x, B, T, D, first));
        float *rp = dl(&c, pool, (size_t)B * D);
        for (int b = 0; b < B; b++)
            for (int d = 0; d < D; d++) {
                double s = 0;
                for (int t = first; t < T; t++) s += hx[(b * T + t) * D + d];
                double want = s / (T - first);
                CHECK(fabs(rp[b * D + d] - want) <= (bf ? 8e-3 : 1e-6) * (1 + fabs(want)));
            }
        double *hp = malloc((size_t)B * D * sizeof *hp), *hb = malloc((size_t)M * D * sizeof *hb);
        float *dp = dev_rand_c(&c, (size_t)B * D, 24, 1.0, hp), *dx = dev_rand_c(&c, (size_t)M * D, 25, 1.0, hb);
        CHECK_OK(sv_be_token_mean_bwd(c.be, dx, dp, B, T, D, first));
        float *rb = dl(&c, dx, (size_t)M * D);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int d = 0; d < D; d++) {
                    size_t i = (size_t)(b * T + t) * D + d;
                    double want = hb[i] + (t >= first ? hp[b * D + d] / (T - first) : 0.0);
                    CHECK(fabs(rb[i] - want) <= (bf ? 8e-3 : 1e-6) * (1 + fabs(want)));
                }
        free(rp), free(hp), free(hb), free(rb);
        sv_be_free(c.be, pool), sv_be_free(c.be, dp), sv_be_free(c.be, dx);
    }
    CHECK(sv_be_token_mean(c.be, out, x, B, T, D, T) == SV_ERR_INVALID); /* nothing to average */
    printf("layer scale + average pooling (%s): match the formulas\n", bf ? "bf16" : "fp32");
    free(hx), free(hg), free(hd);
    sv_be_free(c.be, x), sv_be_free(c.be, g), sv_be_free(c.be, dout), sv_be_free(c.be, out), sv_be_free(c.be, dg);
    ops_ctx_free(&c);
}

static double bce_ref(double z, double t) { return fmax(z, 0) - z * t + log1p(exp(-fabs(z))); }

static void test_bce(void) {
    ops_ctx c;
    ops_ctx_init(&c, SV_F32, 1);
    const int B = 4, K = 6;
    double *hz = malloc((size_t)B * K * sizeof *hz);
    float *z = dev_rand_c(&c, (size_t)B * K, 31, 3.0, hz);
    int32_t lab[4] = {0, 5, 2, 2};
    int32_t *dlab = dev_alloc(&c, sizeof lab);
    CHECK_OK(sv_be_upload(c.be, dlab, lab, sizeof lab));
    float *loss = dev_alloc(&c, B * 4), *dz = dev_alloc(&c, (size_t)B * K * 4);
    const float sm = 0.1f, gs = 0.5f;
    for (int mode = 0; mode < 3; mode++) { /* mean over classes, sum over classes, thresholded targets */
        int sum = mode == 1;
        float thresh = mode == 2 ? 0.2f : -1.0f; /* < 0: targets as they are */
        CHECK_OK(sv_be_sigmoid_bce(c.be, loss, dz, z, dlab, NULL, B, K, sm, thresh, sum, gs));
        float *rl = dl(&c, loss, B), *rg = dl(&c, dz, (size_t)B * K);
        for (int b = 0; b < B; b++) {
            double l = 0;
            for (int k = 0; k < K; k++) {
                /* timm BinaryCrossEntropy: off = smoothing / K, on = 1 - smoothing + off */
                double t = (k == lab[b] ? 1.0 - sm : 0.0) + sm / K;
                if (thresh >= 0) t = t > thresh ? 1.0 : 0.0;
                double zk = hz[b * K + k], norm = sum ? 1.0 : 1.0 / K;
                l += bce_ref(zk, t) * norm;
                double want = (1.0 / (1.0 + exp(-zk)) - t) * norm * gs;
                CHECK(fabs(rg[b * K + k] - want) <= 1e-6);
                /* the gradient is the derivative of the loss (central difference, scaled) */
                double h = 1e-3, fd = (bce_ref(zk + h, t) - bce_ref(zk - h, t)) / (2 * h) * norm * gs;
                CHECK(fabs(rg[b * K + k] - fd) <= 1e-5);
            }
            CHECK(fabs(rl[b] - l) <= 1e-5 * (1 + l));
        }
        free(rl), free(rg);
    }
    /* soft targets (mixup): used as given */
    double *ht = malloc((size_t)B * K * sizeof *ht);
    float *soft = dev_rand(&c, (size_t)B * K, 32, 0.3, 0, ht);
    CHECK_OK(sv_be_sigmoid_bce(c.be, loss, dz, z, NULL, soft, B, K, 0, -1, 0, 1.0f));
    float *rl = dl(&c, loss, B);
    for (int b = 0; b < B; b++) {
        double l = 0;
        for (int k = 0; k < K; k++) l += bce_ref(hz[b * K + k], ht[b * K + k]) / K;
        CHECK(fabs(rl[b] - l) <= 1e-5 * (1 + l));
    }
    free(rl);
    /* threshold 0: every positive target becomes 1, the rest 0 (timm's target.gt(0), DeiT III) */
    CHECK_OK(sv_be_sigmoid_bce(c.be, loss, dz, z, NULL, soft, B, K, 0, 0, 0, 1.0f));
    rl = dl(&c, loss, B);
    int pos = 0;
    for (int b = 0; b < B; b++) {
        double l = 0;
        for (int k = 0; k < K; k++) {
            pos += ht[b * K + k] > 0;
            l += bce_ref(hz[b * K + k], ht[b * K + k] > 0 ? 1.0 : 0.0) / K;
        }
        CHECK(fabs(rl[b] - l) <= 1e-5 * (1 + l));
    }
    CHECK(pos > 0 && pos < B * K); /* the case tells the two apart */
    CHECK(sv_be_sigmoid_bce(c.be, loss, dz, z, dlab, soft, B, K, 0, 0, 0, 1.0f) == SV_ERR_INVALID);
    lab[1] = K;
    CHECK_OK(sv_be_upload(c.be, dlab, lab, sizeof lab));
    CHECK(sv_be_sigmoid_bce(c.be, loss, dz, z, dlab, NULL, B, K, 0, 0, 0, 1.0f) == SV_ERR_INVALID);
    printf("sigmoid BCE: mean / sum / thresholded / soft targets match the formula and its derivative\n");
    free(rl), free(ht), free(hz);
    sv_be_free(c.be, z), sv_be_free(c.be, dlab), sv_be_free(c.be, loss), sv_be_free(c.be, dz), sv_be_free(c.be, soft);
    ops_ctx_free(&c);
}

/* attn_sgemm: the attention GEMMs on sgemm (else the backend's GEMM engine, when it has one). */
static void test_attn_drop(sv_dtype dt, int threads, int attn_sgemm) {
    ops_ctx c = {.bf16 = dt == SV_BF16, .threads = threads};
    sv_backend_config cfg = {.device = SV_DEVICE_CPU,
                             .compute_dtype = dt,
                             .threads = threads,
                             .cpu = {.attn_sgemm = attn_sgemm, .f32_storage = 1}};
    CHECK_OK(sv_backend_create(&cfg, &c.be));
    const int B = 3, T = 9, D = 12, H = 3;
    const size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D, np = (size_t)B * H * T * T;
    const sv_drop d = {.key = 0xa77d, .sample0 = 40, .keep = 0.6f};
    double *hq = dalloc(nq), *hdo = dalloc(no), *rp = dalloc(np), *M = dalloc(np), *ro = dalloc(no), *rdq = dalloc(nq);
    float *qkv = dev_rand_c(&c, nq, 701, 1.0, hq), *d_out = dev_rand_c(&c, no, 702, 1.0, hdo);
    size_t sb = sv_be_attention_saved_bytes(c.be, B, T, D, H), xb = sv_be_attention_scratch_bytes(c.be, B, T, D, H);
    float *out = dev_alloc(&c, no * 4), *saved = dev_alloc(&c, sb), *scratch = dev_alloc(&c, xb);
    float *dqkv = dev_alloc(&c, nq * 4), *out0 = dev_alloc(&c, no * 4), *saved0 = dev_alloc(&c, sb);
    ref_attention(ro, rp, hq, B, T, D, H);
    int dropped = 0;
    for (int b = 0; b < B; b++)
        for (size_t u = 0; u < (size_t)H * T * T; u++) {
            M[(size_t)b * H * T * T + u] = sv_drop_mult(d.key, d.sample0 + (uint64_t)b, u, d.keep);
            dropped += M[(size_t)b * H * T * T + u] == 0;
        }
    double sd = sqrt((double)np * 0.4 * 0.6);
    CHECK(fabs(dropped - 0.4 * (double)np) < 4 * sd && dropped > 0);
    for (int b = 0; b < B; b++) /* reference out = (P * M) v */
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++)
                for (int e = 0; e < D / H; e++) {
                    double o = 0;
                    for (int j = 0; j < T; j++) {
                        size_t pi = (((size_t)b * H + h) * T + i) * T + j;
                        o += rp[pi] * M[pi] * hq[((size_t)b * T + j) * 3 * D + 2 * D + (size_t)h * (D / H) + e];
                    }
                    ro[((size_t)b * T + i) * D + (size_t)h * (D / H) + e] = o;
                }
    CHECK_OK(sv_be_attention_fwd_drop(c.be, out, saved, scratch, qkv, B, T, D, H, &d));
    float *go = dl(&c, out, no), *gp = dl(&c, saved, np);
    check_vec("attn-drop out", go, ro, no, tol_of(&c) * 2, c.bf16);
    check_vec("attn-drop saved P (the plain softmax)", gp, rp, np, 2e-5, 0);
    CHECK_OK(sv_be_attention_bwd_drop(c.be, dqkv, scratch, d_out, qkv, out, saved, B, T, D, H, &d));
    ref_attention_bwd(rdq, hq, rp, M, hdo, B, T, D, H);
    float *gq = dl(&c, dqkv, nq);
    check_vec("attn-drop d_qkv", gq, rdq, nq, tol_of(&c) * 4, c.bf16);
    /* the batch in two calls (rows 0 and 1..2, sample0 shifted): the same bits */
    const size_t q1 = (size_t)T * 3 * D, o1 = (size_t)T * D;
    const sv_drop d1 = {.key = d.key, .sample0 = d.sample0 + 1, .keep = d.keep};
    float *dq2 = dev_alloc(&c, nq * 4);
    CHECK_OK(sv_be_attention_fwd_drop(c.be, out0, saved0, scratch, qkv, 1, T, D, H, &d));
    CHECK_OK(sv_be_attention_fwd_drop(c.be, out0 + o1, saved0, scratch, qkv + q1, 2, T, D, H, &d1));
    float *g2 = dl(&c, out0, no);
    CHECK(!memcmp(g2, go, no * 4));
    free(g2);
    CHECK_OK(sv_be_attention_fwd_drop(c.be, out0, saved0, scratch, qkv, 1, T, D, H, &d));
    CHECK_OK(sv_be_attention_bwd_drop(c.be, dq2, scratch, d_out, qkv, out0, saved0, 1, T, D, H, &d));
    CHECK_OK(sv_be_attention_fwd_drop(c.be, out0 + o1, saved0, scratch, qkv + q1, 2, T, D, H, &d1));
    CHECK_OK(
        sv_be_attention_bwd_drop(c.be, dq2 + q1, scratch, d_out + o1, qkv + q1, out0 + o1, saved0, 2, T, D, H, &d1));
    float *g3 = dl(&c, dq2, nq);
    CHECK(!memcmp(g3, gq, nq * 4));
    free(g3);
    /* keep = 1 and NULL: the plain op, bitwise */
    const sv_drop one = {.key = d.key, .sample0 = d.sample0, .keep = 1.0f};
    CHECK_OK(sv_be_attention_fwd(c.be, out0, saved0, scratch, qkv, B, T, D, H));
    float *plain = dl(&c, out0, no);
    CHECK_OK(sv_be_attention_fwd_drop(c.be, out, saved, scratch, qkv, B, T, D, H, &one));
    float *g4 = dl(&c, out, no);
    CHECK(!memcmp(g4, plain, no * 4));
    free(g4);
    CHECK(memcmp(go, plain, no * 4) != 0);
    const sv_drop bad = {.key = 1, .sample0 = 0, .keep = 0.0f};
    CHECK(sv_be_attention_fwd_drop(c.be, out, saved, scratch, qkv, B, T, D, H, &bad) == SV_ERR_INVALID);
    sv_err_clear();
    printf(
        "attention dropout (%s, threads %d, %s GEMMs): out and d_qkv match the double formulas on the mask, %d of %zu "
        "probabilities dropped at rate 0.4, split batch bitwise, keep 1 = plain op\n",
        c.bf16 ? "bf16" : "fp32", threads, attn_sgemm ? "sgemm" : "engine", dropped, np);
    free(hq), free(hdo), free(rp), free(M), free(ro), free(rdq);
    free(go), free(gp), free(gq), free(plain);
    float *dev[] = {qkv, d_out, out, saved, scratch, dqkv, out0, saved0, dq2};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) sv_be_free(c.be, dev[i]);
    ops_ctx_free(&c);
}

int main(void) {
    test_drop_statistics();
    for (int sg = 0; sg < 2; sg++) {
        test_attn_drop(SV_F32, 1, sg);
        test_attn_drop(SV_F32, 2, sg);
        test_attn_drop(SV_BF16, 2, sg);
    }
    test_layer_scale_and_pool(SV_F32);
    test_layer_scale_and_pool(SV_BF16);
    test_bce();
    printf("test_ops_recipe: OK\n");
    return 0;
}
