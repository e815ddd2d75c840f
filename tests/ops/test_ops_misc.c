/* CPU backend: memory ops, bf16 conversion edge cases, f32 vector ops, deterministic sum of
 * squares (1 vs 2 threads bitwise), AdamW against PyTorch's formula, and bitwise equality of
 * the reducing ops between 1 and 2 threads. */
#include "ops_util.h"

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t u_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_info_and_memory(void) {
    ops_ctx c;
    ops_ctx_init(&c, SV_BF16, 2);
    CHECK(strcmp(sv_be_name(c.be), "cpu") == 0);
    CHECK(strstr(sv_be_device_name(c.be), "(2 threads)") != NULL);
    CHECK(sv_be_peak_flops(c.be) == 0.0);
    CHECK(sv_be_native_stream(c.be) == NULL);
    CHECK(sv_be_compute_dtype(c.be) == SV_BF16);
    CHECK(sv_be_compute_elem_size(c.be) == 4);
    void *h = NULL;
    CHECK_OK(sv_be_host_alloc(c.be, 1000, &h));
    CHECK(((uintptr_t)h & 255) == 0);
    unsigned char *a = dev_alloc(&c, 1000), *b = dev_alloc(&c, 1000);
    for (int i = 0; i < 1000; i++) ((unsigned char *)h)[i] = (unsigned char)(i * 7);
    CHECK_OK(sv_be_upload(c.be, a, h, 1000));
    CHECK_OK(sv_be_copy(c.be, b, a, 1000));
    CHECK_OK(sv_be_zero(c.be, a, 500));
    unsigned char back[1000];
    CHECK_OK(sv_be_download(c.be, back, b, 1000));
    CHECK(memcmp(back, h, 1000) == 0);
    CHECK_OK(sv_be_download(c.be, back, a, 1000));
    for (int i = 0; i < 1000; i++) CHECK(back[i] == (i < 500 ? 0 : (unsigned char)(i * 7)));
    /* async upload: ordered before later ops; after the fence the host buffer may change */
    CHECK_OK(sv_be_upload_async(c.be, a, h, 1000));
    CHECK_OK(sv_be_copy(c.be, b, a, 1000));
    CHECK_OK(sv_be_upload_fence(c.be));
    memset(h, 0, 1000);
    CHECK_OK(sv_be_download(c.be, back, b, 1000));
    for (int i = 0; i < 1000; i++) CHECK(back[i] == (unsigned char)(i * 7));
    CHECK_OK(sv_be_sync(c.be));
    sv_be_host_free(c.be, h);
    sv_be_free(c.be, a), sv_be_free(c.be, b);
    ops_ctx_free(&c);

    sv_backend *be = NULL;
    sv_backend_config bad = {.device = SV_DEVICE_CPU, .threads = -1};
    CHECK(sv_backend_create(&bad, &be) == SV_ERR_INVALID && be == NULL);
    CHECK(strstr(sv_err_msg(), "threads") != NULL);
    /* bad CPU settings: named by their environment override, also by the size query */
    sv_be_sizes sz;
    sv_backend_config bg = {.device = SV_DEVICE_CPU, .cpu = {.gemm = "nope"}};
    CHECK(sv_backend_create(&bg, &be) == SV_ERR_UNSUPPORTED && be == NULL);
    CHECK(strstr(sv_err_msg(), "GEMM engine 'nope' (--cpu-gemm / SHARDVIT_CPU_GEMM): unknown GEMM engine 'nope'") !=
          NULL);
    CHECK(sv_be_sizes_query(&bg, 1, 2, 4, 2, &sz) == SV_ERR_UNSUPPORTED);
    sv_backend_config bs = {.device = SV_DEVICE_CPU, .cpu = {.f32_storage = 2}};
    CHECK(sv_backend_create(&bs, &be) == SV_ERR_INVALID && be == NULL);
    CHECK(strstr(sv_err_msg(), "SHARDVIT_CPU_BF16_STORAGE must be 0 or 1") != NULL);
    sv_backend_config bi = {.device = SV_DEVICE_CPU, .cpu = {.isa = "mmx"}};
    CHECK(sv_backend_create(&bi, &be) == SV_ERR_UNSUPPORTED && be == NULL);
    CHECK(strstr(sv_err_msg(), "SHARDVIT_CPU_ISA=mmx is not available") != NULL);
}

/* Sizes from the configuration alone equal what an instance of it reports, and the instance
 * hands back the configuration it was made from (what the arena carving sizes by). */
static void test_sizes(void) {
    static const sv_cpu_config variants[] = {
        {0}, {.gemm = "openblas"}, {.gemm = "blas"}, {.attn_sgemm = 1}, {.op_threads = 3}, {.f32_storage = 1}};
    for (int dt = 0; dt < 2; dt++)
        for (int t = 1; t <= 2; t++)
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                sv_backend_config cfg = {
                    .device = SV_DEVICE_CPU, .compute_dtype = dt ? SV_BF16 : SV_F32, .threads = t, .cpu = variants[v]};
                sv_be_sizes sz;
                CHECK_OK(sv_be_sizes_query(&cfg, 3, 50, 192, 3, &sz));
                /* bf16 storage (2 bytes) only in bf16 mode with every GEMM on a bf16 engine and
                 * fp32 storage not asked for; it says so in the device name */
                const sv_cpu_config *cv = &variants[v];
                int may16 = dt && !cv->gemm && !cv->attn_sgemm && cv->f32_storage != 1;
                CHECK(sz.compute_elem == 4 || (may16 && sz.compute_elem == 2));
                CHECK(sz.attention_saved == (size_t)3 * 3 * 50 * 50 * 4);
                sv_backend *be;
                CHECK_OK(sv_backend_create(&cfg, &be));
                CHECK(sv_be_compute_elem_size(be) == sz.compute_elem);
                CHECK((strstr(sv_be_device_name(be), "bf16 storage") != NULL) == (sz.compute_elem == 2));
                if (may16 && strstr(sv_be_device_name(be), "bf16"))
                    CHECK(sz.compute_elem == 2); /* a bf16 engine runs every GEMM: bf16 storage */
                CHECK(sv_be_attention_saved_bytes(be, 3, 50, 192, 3) == sz.attention_saved);
                CHECK(sv_be_attention_scratch_bytes(be, 3, 50, 192, 3) == sz.attention_scratch);
                sv_be_sizes again;
                CHECK_OK(sv_be_sizes_query(sv_be_config(be), 3, 50, 192, 3, &again));
                CHECK(again.compute_elem == sz.compute_elem && again.attention_saved == sz.attention_saved &&
                      again.attention_scratch == sz.attention_scratch);
                /* the sgemm path needs one (T,T) tile per worker, an engine also its packing area */
                int workers = variants[v].op_threads > t ? variants[v].op_threads : t;
                CHECK(sz.attention_scratch >= (size_t)workers * 50 * 50 * 4);
                sv_backend_destroy(be);
            }
}

/* Round-to-nearest-even edge cases: value bits in, bf16 bits out. */
static void test_bf16(void) {
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3F800000u, 0x3F80},                        /* 1.0 exact */
        {0x3F808000u, 0x3F80},                        /* tie, lower is even: stays */
        {0x3F818000u, 0x3F82},                        /* tie, lower is odd: rounds up to even */
        {0x3F808001u, 0x3F81},                        /* just above the tie */
        {0x3F807FFFu, 0x3F80},                        /* just below the tie */
        {0xBF818000u, 0xBF82},                        /* negative tie */
        {0x7F800000u, 0x7F80},                        /* +inf */
        {0xFF800000u, 0xFF80},                        /* -inf */
        {0x7F7F0000u, 0x7F7F},                        /* largest finite bf16 */
        {0x7F7FFFFFu, 0x7F80},                        /* FLT_MAX rounds to +inf */
        {0x7F7F8000u, 0x7F80},                        /* tie above bf16 max: to even = inf */
        {0x7F7F7FFFu, 0x7F7F},                        /* just below: stays finite */
        {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, /* signed zeros */
        {0x00010000u, 0x0001},                        /* subnormal */
        {0x00008000u, 0x0000},                        /* tie at the smallest subnormal: to even (zero) */
        {0x00018000u, 0x0002},
    };
    size_t n = sizeof cases / sizeof cases[0];
    ops_ctx c;
    ops_ctx_init(&c, SV_F32, 1);
    float *src = dev_alloc(&c, (n + 2) * 4), *back = dev_alloc(&c, (n + 2) * 4);
    uint16_t *bf = dev_alloc(&c, (n + 2) * 2);
    float hin[32];
    for (size_t i = 0; i < n; i++) hin[i] = f_of(cases[i].in);
    hin[n] = f_of(0x7FC00000u);     /* quiet NaN */
    hin[n + 1] = f_of(0xFF800001u); /* signalling NaN, negative */
    CHECK_OK(sv_be_upload(c.be, src, hin, (n + 2) * 4));
    CHECK_OK(sv_be_f32_to_bf16(c.be, bf, src, n + 2));
    uint16_t hb[32];
    CHECK_OK(sv_be_download(c.be, hb, bf, (n + 2) * 2));
    for (size_t i = 0; i < n; i++) {
        if (hb[i] != cases[i].out) {
            fprintf(stderr, "bf16(0x%08x) = 0x%04x, want 0x%04x\n", cases[i].in, hb[i], cases[i].out);
            exit(1);
        }
    }
    CHECK_OK(sv_be_bf16_to_f32(c.be, back, bf, n + 2));
    float hback[32];
    CHECK_OK(sv_be_download(c.be, hback, back, (n + 2) * 4));
    for (size_t i = 0; i < n; i++) CHECK(u_of(hback[i]) == (uint32_t)cases[i].out << 16);
    CHECK(isnan(hback[n]) && isnan(hback[n + 1])); /* NaN never becomes Inf */
    CHECK((hb[n + 1] & 0x8000) != 0);              /* and keeps its sign */
    /* the per-element rounding the ops use agrees with the conversion */
    for (size_t i = 0; i < n; i++) CHECK(u_of(sv_round_bf16(hin[i])) == (uint32_t)cases[i].out << 16);
    CHECK(isnan(sv_round_bf16(hin[n])) && isnan(sv_round_bf16(hin[n + 1])));
    sv_be_free(c.be, src), sv_be_free(c.be, back), sv_be_free(c.be, bf);
    ops_ctx_free(&c);
}

static void test_vector_ops(ops_ctx *c, size_t n) {
    double *hx = dalloc(n), *hy = dalloc(n), *r = dalloc(n);
    float *x = dev_rand(c, n, 81, 1, 0, hx), *y = dev_rand(c, n, 82, 1, 0, hy);
    CHECK_OK(sv_be_add_f32(c->be, y, x, n));
    for (size_t i = 0; i < n; i++) r[i] = (float)hy[i] + (float)hx[i];
    float *g = dl(c, y, n);
    check_vec("add_f32", g, r, n, 0, 0); /* f32 ops never round to bf16 */
    free(g), free(hx), free(hy), free(r);
    sv_be_free(c->be, x), sv_be_free(c->be, y);
}

static void test_sumsq(void) {
    ops_ctx c1, c2;
    ops_ctx_init(&c1, SV_F32, 1);
    ops_ctx_init(&c2, SV_F32, 2);
    const size_t sizes[] = {1, 7, 4096, 4097, 262144 * 3 + 12345, 2000003};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        double *h = dalloc(n);
        float *p = dev_rand(&c1, n, 91 + si, 3.0, 0, h);
        double s1, s2, ref = 0;
        for (size_t i = 0; i < n; i++) ref += h[i] * h[i];
        CHECK_OK(sv_be_sumsq_f32(c1.be, p, n, &s1));
        CHECK_OK(sv_be_sumsq_f32(c2.be, p, n, &s2));
        CHECK(memcmp(&s1, &s2, sizeof s1) == 0); /* bitwise, whatever the thread count */
        CHECK_CLOSE(s1, ref, 1e-12 * ref);
        free(h);
        sv_be_free(c1.be, p);
    }
    double z = -1;
    CHECK_OK(sv_be_sumsq_f32(c1.be, NULL, 0, &z));
    CHECK(z == 0.0);
    ops_ctx_free(&c1);
    ops_ctx_free(&c2);
}

/* torch.optim.AdamW step in double: decay, moments, bias-corrected update. */
static void test_adamw(void) {
    ops_ctx c;
    ops_ctx_init(&c, SV_BF16, 1); /* the optimizer is f32 whatever the compute dtype */
    size_t n = 1003;
    double *p = dalloc(n), *m = dalloc(n), *v = dalloc(n), *g = dalloc(n);
    float *dp = dev_rand(&c, n, 101, 1, 0, p), *dm = dev_fill(&c, n, 0), *dv = dev_fill(&c, n, 0);
    float *dg = dev_alloc(&c, n * 4);
    /* hyperparameters as the float values the op receives (1 - (float)0.999 differs from
     * 0.001 by 1.3e-5 relative; that is the API's precision, not the op's) */
    const double lr = (float)1e-3, b1 = (float)0.9, b2 = (float)0.999, eps = (float)1e-8, wd = (float)0.05,
                 gscale = 0.5;
    for (int t = 1; t <= 6; t++) {
        for (size_t i = 0; i < n; i++) g[i] = (float)(0.1 * sv_rand_normal(200 + t, i));
        dev_set(&c, dg, g, n);
        sv_adamw_hparams h = {.lr = (float)lr,
                              .beta1 = (float)b1,
                              .beta2 = (float)b2,
                              .eps = (float)eps,
                              .weight_decay = (float)wd,
                              .bc1 = (float)(1 - pow(b1, t)),
                              .bc2 = (float)(1 - pow(b2, t)),
                              .grad_scale = (float)gscale};
        CHECK_OK(sv_be_adamw(c.be, dp, dg, dm, dv, n, &h, (float)wd));
        for (size_t i = 0; i < n; i++) {
            double gi = g[i] * gscale;
            p[i] *= 1 - lr * wd;
            m[i] = b1 * m[i] + (1 - b1) * gi;
            v[i] = b2 * v[i] + (1 - b2) * gi * gi;
            double denom = sqrt(v[i]) / sqrt(1 - pow(b2, t)) + eps;
            p[i] -= lr / (1 - pow(b1, t)) * m[i] / denom;
        }
    }
    float *gp = dl(&c, dp, n), *gm = dl(&c, dm, n), *gv = dl(&c, dv, n);
    for (size_t i = 0; i < n; i++) {
        CHECK_CLOSE(gp[i], p[i], 1e-6 * fabs(p[i]) + 1e-8);
        CHECK_CLOSE(gm[i], m[i], 1e-5 * fabs(m[i]) + 1e-8); /* m cancels: absolute part */
        CHECK_CLOSE(gv[i], v[i], 1e-5 * fabs(v[i]) + 1e-14);
    }
    free(gp), free(gm), free(gv), free(p), free(m), free(v), free(g);
    sv_be_free(c.be, dp), sv_be_free(c.be, dm), sv_be_free(c.be, dv), sv_be_free(c.be, dg);
    ops_ctx_free(&c);
}

/* Reducing ops give the same bits with 1 and 2 threads. */
static void test_thread_determinism(void) {
    ops_ctx c[2];
    ops_ctx_init(&c[0], SV_BF16, 1);
    ops_ctx_init(&c[1], SV_BF16, 2);
    const int M = 2 * 197, C = 200, N = 136, B = 4, T = 65, D = 48, H = 3;
    float *res[2][8];
    for (int k = 0; k < 2; k++) {
        ops_ctx *x = &c[k];
        float *in = dev_rand_c(x, (size_t)M * C, 1, 1, NULL), *w = dev_rand_c(x, C, 2, 1, NULL);
        float *b = dev_rand_c(x, C, 3, 1, NULL), *out = dev_alloc(x, (size_t)M * C * 4);
        float *mean = dev_alloc(x, M * 4), *rstd = dev_alloc(x, M * 4);
        float *dy = dev_rand_c(x, (size_t)M * C, 4, 1, NULL), *dx = dev_fill(x, (size_t)M * C, 0);
        float *dw = dev_fill(x, C, 0), *db = dev_fill(x, C, 0);
        CHECK_OK(sv_be_layernorm_fwd(x->be, out, mean, rstd, in, w, b, M, C));
        CHECK_OK(sv_be_layernorm_bwd(x->be, dx, dw, db, dy, in, w, mean, rstd, M, C));
        float *W = dev_rand_c(x, (size_t)N * C, 5, 0.1, NULL), *lb = dev_rand_c(x, N, 6, 1, NULL);
        float *lo = dev_alloc(x, (size_t)M * N * 4), *pre = dev_alloc(x, (size_t)M * N * 4);
        float *ldW = dev_fill(x, (size_t)N * C, 0), *ldb = dev_fill(x, N, 0);
        CHECK_OK(sv_be_linear_fwd(x->be, lo, pre, out, W, lb, M, N, C));
        CHECK_OK(sv_be_linear_bwd(x->be, NULL, ldW, ldb, lo, out, W, pre, M, N, C));
        float *qkv = dev_rand_c(x, (size_t)B * T * 3 * D, 7, 1, NULL);
        float *ao = dev_alloc(x, (size_t)B * T * D * 4);
        float *sv = dev_alloc(x, sv_be_attention_saved_bytes(x->be, B, T, D, H));
        float *sc = dev_alloc(x, sv_be_attention_scratch_bytes(x->be, B, T, D, H));
        float *dq = dev_alloc(x, (size_t)B * T * 3 * D * 4);
        CHECK_OK(sv_be_attention_fwd(x->be, ao, sv, sc, qkv, B, T, D, H));
        CHECK_OK(sv_be_attention_bwd(x->be, dq, sc, ao, qkv, ao, sv, B, T, D, H));
        float *dpo = dev_alloc(x, (size_t)B * (T - 1) * D * 4), *dcls = dev_fill(x, D, 0);
        float *dpos = dev_fill(x, (size_t)T * D, 0);
        CHECK_OK(sv_be_embed_bwd(x->be, dpo, dcls, NULL, 0, dpos, 0, ao, B, T, D));
        res[k][0] = dl(x, dx, (size_t)M * C);
        res[k][1] = dl(x, dw, C);
        res[k][2] = dl(x, db, C);
        res[k][3] = dl(x, ldb, N);
        res[k][4] = dl(x, ao, (size_t)B * T * D);
        res[k][5] = dl(x, dq, (size_t)B * T * 3 * D);
        res[k][6] = dl(x, dpos, (size_t)T * D);
        res[k][7] = dl(x, dcls, D);
        void *bufs[] = {in, w,   b,   out, mean, rstd, dy, dx, dw, db,  W,    lb,
                        lo, pre, ldW, ldb, qkv,  ao,   sv, sc, dq, dpo, dcls, dpos};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) sv_be_free(x->be, bufs[i]);
    }
    const size_t lens[8] = {(size_t)M * C, C, C, N, (size_t)B * T * D, (size_t)B * T * 3 * D, (size_t)T * D, D};
    const char *names[8] = {"layernorm d_x", "layernorm dw",    "layernorm db", "linear db",
                            "attention out", "attention d_qkv", "embed d_pos",  "embed d_cls"};
    for (int i = 0; i < 8; i++) {
        if (memcmp(res[0][i], res[1][i], lens[i] * 4) != 0) {
            fprintf(stderr, "%s differs between 1 and 2 threads\n", names[i]);
            exit(1);
        }
        free(res[0][i]), free(res[1][i]);
    }
    ops_ctx_free(&c[0]);
    ops_ctx_free(&c[1]);
}

int main(void) {
    test_info_and_memory();
    test_sizes();
    test_bf16();
    for (int t = 1; t <= 2; t++) {
        ops_ctx c;
        ops_ctx_init(&c, SV_BF16, t);
        test_vector_ops(&c, 5);
        test_vector_ops(&c, 100003);
        ops_ctx_free(&c);
    }
    test_sumsq();
    test_adamw();
    test_thread_determinism();
    printf("ops misc: memory, bf16, vector ops, sumsq, adamw, thread determinism ok\n");
    return 0;
}
