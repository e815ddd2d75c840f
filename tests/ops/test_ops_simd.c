/* The libm-free GELU/exp of core/elementwise.h against double-precision references, and the
 * CPU backend's per-ISA kernel tables (generic / AVX2 / AVX-512) against each other: the
 * variants must give identical bits, since the dispatch picks one per machine and runs must
 * not depend on which. The GELU kernels (the AVX-512 table's are hand-written intrinsics) are
 * compared bit for bit with the scalar formulas on every bf16 bit pattern and 2^22 fp32
 * patterns spread over all exponents; `test_ops_simd --exhaustive` does all 2^32 fp32 inputs
 * on the table this CPU dispatches to (about 10 minutes). The table of gelu' of every bf16 value
 * (gelu_grad16.h) holds sv_gelu_grad's bits, and both forms of the AVX-512 gelu_bwd16 (gelu'
 * gathered from it or computed) give the scalar bits on all 65536 patterns, whichever form this
 * CPU uses. Also checks that the GEMM split across
 * workers gives the same bits as one threaded-BLAS call and as one thread. */
#include "model/backend/cpu/cpu_backend.h"
#include "model/backend/cpu/gelu_grad16.h"
#include "ops_util.h"

static double gelu_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double gelu_grad_ref(double x) {
    return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846);
}

static void check_formulas(void) {
    double worst = 0, worst_g = 0, worst_e = 0, worst_vs_erff = 0;
    for (double xd = -30.0; xd <= 30.0; xd += 3.7e-4) {
        float x = (float)xd;
        double xx = x, ref = gelu_ref(xx), gref = gelu_grad_ref(xx);
        double f = sv_gelu(x), g = sv_gelu_grad(x);
        if (fabs(ref) > 1e-30)
            worst = fmax(worst, fabs(f - ref) / fabs(ref));
        else
            CHECK(fabs(f) <= 1e-30);
        /* gelu' crosses zero near x = -0.75: measure against the size of its two terms */
        double scale = 0.5 * erfc(-xx / sqrt(2.0)) + fabs(xx) * exp(-0.5 * xx * xx) / sqrt(2.0 * 3.14159265358979);
        if (scale > 1e-30) worst_g = fmax(worst_g, fabs(g - gref) / scale);
        if (xx > -87.0 && xx < 88.0) worst_e = fmax(worst_e, fabs(sv_exp_fast(x) - exp(xx)) / exp(xx));
        /* libm's erff form is accurate where 1 + erf does not cancel */
        if (xx > -3.0 && fabs(ref) > 1e-30)
            worst_vs_erff = fmax(worst_vs_erff, fabs(f - (double)sv_gelu_erff(x)) / fabs(ref));
    }
    printf("gelu rel err %.3g, gelu' err %.3g, exp rel err %.3g, |fast - erff form| %.3g (x > -3)\n", worst, worst_g,
           worst_e, worst_vs_erff);
    CHECK(worst <= 1e-6);
    CHECK(worst_g <= 1e-6);
    CHECK(worst_e <= 3e-7);
    CHECK(worst_vs_erff <= 2e-5); /* erff's own cancellation near x = -3 dominates this */
    /* special values behave as the erff form does */
    CHECK(isnan(sv_gelu(NAN)) && isnan(sv_gelu_grad(NAN)));
    CHECK(sv_gelu(INFINITY) == INFINITY);
    CHECK(isnan(sv_exp_fast(NAN)) && sv_exp_fast(100.0f) == INFINITY && sv_exp_fast(-200.0f) == 0.0f);
    CHECK(sv_gelu(0.0f) == 0.0f && signbit(sv_gelu(-0.0f)));
    CHECK(sv_gelu(-40.0f) == 0.0f && sv_gelu(40.0f) == 40.0f);
    CHECK(sv_gelu_grad(40.0f) == 1.0f && sv_gelu_grad(-40.0f) == 0.0f);
    CHECK(sv_exp_fast(-100.0f) == 0.0f && sv_exp_fast(0.0f) == 1.0f);
}

static int same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The same bits, or both NaN: an operation on two NaNs returns one of them, and which one
 * depends on the operand order the compiler chose (cpu_kernels.h) */
static int same_or_nans(float got, float want) { return same_bits(&got, &want, 1) || (isnan(got) && isnan(want)); }

/* Input pattern i of the GELU bit check: i < 2^16: the bf16 pattern i; then 2^22 fp32 patterns,
 * one per 1024 consecutive codes with hashed low bits (every exponent, sign and special value). */
#define GELU_BITS_N ((1u << 16) + (1u << 22))
static uint32_t gelu_pattern(uint32_t i) {
    if (i < (1u << 16)) return i << 16;
    uint32_t j = i - (1u << 16);
    return (j << 10) | (uint32_t)(sv_mix64(j) & 1023u);
}

/* One chunk of the GELU bit check: bias_gelu (no bias and with bias), gelu and gelu_bwd of table
 * k in both store modes, and epi_narrow (with and without bias and pre-activations) and
 * gelu_bwd16 (with and without x16 and db) against the bf16 of the same values, against kstore of sv_gelu / sv_gelu_grad (`ref`: scratch, 3n floats).
 * Returns the lanes that differ. */
static size_t gelu_bits_chunk(const sv_cpu_kernels *k, const float *x, const float *d, const float *bias, size_t n,
                              float *o, float *pre, float *ref) {
    float *g_x = ref, *g_z = ref + n, *g_d = ref + 2 * n;
    for (size_t e = 0; e < n; e++) {
        g_x[e] = sv_gelu(x[e]);
        g_z[e] = sv_gelu(x[e] + bias[e]);
        g_d[e] = d[e] * sv_gelu_grad(x[e]);
    }
    size_t bad = 0;
    for (int bf = 0; bf < 2; bf++) {
#define KST(v) (bf ? sv_round_bf16(v) : (v))
#define DIFF(got, want) \
    do { \
        float want_ = KST(want); \
        bad += !same_bits(&(got), &want_, 1); \
    } while (0)
        memcpy(o, x, n * 4);
        k->bias_gelu(bf, o, pre, NULL, n);
        for (size_t e = 0; e < n; e++) {
            DIFF(o[e], g_x[e]);
            DIFF(pre[e], x[e]);
        }
        memcpy(o, x, n * 4);
        k->bias_gelu(bf, o, pre, bias, n);
        for (size_t e = 0; e < n; e++) {
            DIFF(o[e], g_z[e]);
            DIFF(pre[e], x[e] + bias[e]);
        }
        k->gelu(bf, o, x, n);
        for (size_t e = 0; e < n; e++) DIFF(o[e], g_x[e]);
        if (bf) { /* epi_narrow: bias_gelu / bias_store without rounding, then narrow */
            static uint16_t o16[8192], p16[8192];
            CHECK(n <= 8192);
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *b = with_bias ? bias : NULL;
                k->epi_narrow(o16, p16, x, b, n);
                for (size_t e = 0; e < n; e++) {
                    float z = with_bias ? x[e] + bias[e] : x[e];
                    bad += o16[e] != sv_f32_to_bf16(with_bias ? g_z[e] : g_x[e]);
                    bad += p16[e] != sv_f32_to_bf16(z);
                }
                k->epi_narrow(o16, NULL, x, b, n);
                for (size_t e = 0; e < n; e++) bad += o16[e] != sv_f32_to_bf16(with_bias ? x[e] + bias[e] : x[e]);
            }
        }
        memcpy(o, d, n * 4);
        k->gelu_bwd(bf, o, o, x, n); /* in place, as linear_bwd calls it */
        for (size_t e = 0; e < n; e++) DIFF(o[e], g_d[e]);
        if (bf) { /* gelu_bwd16: widen, gelu_bwd with bf = 1, narrow, db += (add_store, bf = 0) */
            static uint16_t d16[8192], x16[8192], in16[8192];
            static float db[8192], db0[8192];
            static const uint32_t special[] = {0x7fc00123u, 0xffa00001u, 0x7f800000u, 0xff800000u, 0x80000000u};
            for (size_t e = 0; e < n; e++) {
                in16[e] = sv_f32_to_bf16(d[e]);
                x16[e] = sv_f32_to_bf16(x[e]);
                db0[e] = bias[e] * 3.0f; /* any fp32 running sum */
                /* NaN (two payloads), Inf and -0 in d_out and in the sums too, some lanes with two NaNs */
                if (e % 13 == 5) in16[e] = (uint16_t)(special[e % 5] >> 16);
                if (e % 17 == 3) db0[e] = bits_f32(special[(e / 17) % 5]);
            }
            for (int with_x = 0; with_x < 2; with_x++)
                for (int with_db = 0; with_db < 2; with_db++) {
                    memcpy(d16, in16, n * 2);
                    memcpy(db, db0, n * 4);
                    k->gelu_bwd16(d16, with_x ? x16 : NULL, with_db ? db : NULL, n);
                    for (size_t e = 0; e < n; e++) {
                        float r = sv_bf16_to_f32(in16[e]);
                        if (with_x) r = sv_round_bf16(r * sv_gelu_grad(sv_bf16_to_f32(x16[e])));
                        bad += !same_or_nans(sv_bf16_to_f32(d16[e]), r);
                        bad += d16[e] != sv_f32_to_bf16(r) && !isnan(r); /* a bf16 result: its bits */
                        bad += !same_or_nans(db[e], with_db ? db0[e] + r : db0[e]);
                    }
                }
        }
#undef DIFF
#undef KST
    }
    return bad;
}

/* Every table (or, exhaustive, the dispatched one on all 2^32 inputs): the GELU kernels give
 * exactly the scalar formulas' bits. Chunk lengths vary so every tail length is exercised;
 * d_out is 1 in every third lane (the derivative itself) and random otherwise. */
static void check_gelu_bits(int exhaustive) {
    const char *isas[] = {"generic", "avx2", "avx512"};
    enum { CH = 4096 + 127 };
    float *x = malloc(CH * 4), *d = malloc(CH * 4), *bias = malloc(CH * 4), *o = malloc(CH * 4);
    float *pre = malloc(CH * 4), *ref = malloc(3 * CH * 4);
    CHECK(x && d && bias && o && pre && ref);
    for (int t = exhaustive ? 2 : 0; t < 3; t++) {
        const sv_cpu_kernels *k = exhaustive ? sv_cpu_kernels_pick("auto") : sv_cpu_kernels_pick(isas[t]);
        if (!k) continue;
        uint64_t total = exhaustive ? (1ull << 32) : GELU_BITS_N, done = 0;
        size_t bad = 0, step = 0;
        while (done < total) {
            size_t n = CH - (step++ % 128); /* 4096 .. 4223: every tail length mod 128 */
            if (n > total - done) n = (size_t)(total - done);
            for (size_t e = 0; e < n; e++) {
                uint64_t i = done + e;
                x[e] = bits_f32(exhaustive ? (uint32_t)i : gelu_pattern((uint32_t)i));
                d[e] = i % 3 == 0 ? 1.0f : (float)(2.0 * sv_rand_normal(31, i));
                bias[e] = (float)(0.5 * sv_rand_normal(32, i));
            }
            bad += gelu_bits_chunk(k, x, d, bias, n, o, pre, ref);
            done += n;
        }
        printf("gelu kernels %s: %llu inputs x 2 store modes, bitwise as the scalar formulas: %s\n", k->isa,
               (unsigned long long)total, bad ? "NO" : "yes");
        CHECK(bad == 0);
    }
    free(x), free(d), free(bias), free(o), free(pre), free(ref);
}

/* The table of gelu' of every bf16 value (gelu_grad16.h) holds sv_gelu_grad's bits for all 65536
 * patterns, and each table's gelu_bwd16, in both of its forms (gelu' gathered from the table or
 * computed: sv_cpu_gelu_bwd16_force; the dispatch picks one per CPU), gives the scalar
 * composition's bits for x16 = every pattern, signalling NaNs included (the GELU bit check feeds
 * x16 through sv_f32_to_bf16, which quiets them): d_out = 1 (gelu' itself) and random d_out with
 * the db sums, in one call and a 5-lane tail. */
static void check_gelu_grad16(void) {
    const float *t = sv_cpu_gelu_grad16();
    size_t bad = 0;
    for (uint32_t h = 0; h < (1u << 16); h++) {
        float want = sv_gelu_grad(sv_bf16_to_f32((uint16_t)h));
        bad += !same_bits(&t[h], &want, 1);
    }
    printf("gelu' table: 65536 bf16 values, bitwise sv_gelu_grad: %s\n", bad ? "NO" : "yes");
    CHECK(bad == 0);
    const char *isas[] = {"generic", "avx2", "avx512"};
    enum { N = 1 << 16, TAIL = 5 };
    uint16_t *x16 = malloc(N * 2), *d16 = malloc(N * 2), *in16 = malloc(N * 2);
    float *db = malloc(N * 4), *db0 = malloc(N * 4);
    CHECK(x16 && d16 && in16 && db && db0);
    for (int i = 0; i < 3; i++) {
        const sv_cpu_kernels *k = sv_cpu_kernels_pick(isas[i]);
        if (!k) continue;
        const int forms = strcmp(k->isa, "avx512") ? 1 : 2; /* the C loops compute gelu' */
        for (int gather = 0; gather < forms; gather++)
            for (int pass = 0; pass < 2; pass++) {
                sv_cpu_gelu_bwd16_force(gather);
                for (uint32_t h = 0; h < N; h++) {
                    x16[h] = (uint16_t)h;
                    in16[h] = pass ? sv_f32_to_bf16((float)(2.0 * sv_rand_normal(33, h))) : 0x3f80; /* 1.0 */
                    db0[h] = (float)sv_rand_normal(34, h);
                }
                memcpy(d16, in16, N * 2);
                memcpy(db, db0, N * 4);
                k->gelu_bwd16(d16, x16, pass ? db : NULL, N - TAIL);
                k->gelu_bwd16(d16 + N - TAIL, x16 + N - TAIL, pass ? db + N - TAIL : NULL, TAIL);
                bad = 0;
                for (uint32_t h = 0; h < N; h++) {
                    float r = sv_round_bf16(sv_bf16_to_f32(in16[h]) * sv_gelu_grad(sv_bf16_to_f32((uint16_t)h)));
                    bad += !same_or_nans(sv_bf16_to_f32(d16[h]), r);
                    bad += !same_or_nans(db[h], pass ? db0[h] + r : db0[h]);
                }
                printf("gelu_bwd16 %s (gelu' %s), d_out %s: all 65536 bf16 x: %s\n", k->isa,
                       gather ? "gathered" : "computed", pass ? "random, db" : "1", bad ? "NO" : "yes");
                CHECK(bad == 0);
            }
    }
    sv_cpu_gelu_bwd16_force(-1);
    printf("gelu_bwd16 on this CPU: gelu' %s\n", sv_cpu_gelu_bwd16_gather() ? "gathered" : "computed");
    free(x16), free(d16), free(in16), free(db), free(db0);
}

/* The attention's softmax rows (T = 197, 50 and 26 as in vit-ti16 / vit-28 / the main job's
 * 25-token model, 16, 5, 64, 65 and 4000 (either side of the short-row limit, tails of every
 * kind), 1 row or 7 (groups of four or two, then the rows left)) at the scales 1/sqrt(dh) it uses: the table `k` gives the bits of the generic table
 * `base`, and each gives the bits of scaling the row in place first and taking the softmax at
 * scale 1 (the fused scale changes no bit). Rows hold logit-sized values and a -inf (a
 * masked-out score: exp gives 0); the backward on the result. */
static void check_softmax_scaled(const sv_cpu_kernels *base, const sv_cpu_kernels *k) {
    const int Ts[] = {197, 50, 26, 16, 5, 64, 65, 4000};
    const float scales[] = {0.125f, 0.17677669f, 0.25f, 1.0f};
    for (int ti = 0; ti < 8; ti++)
        for (int si = 0; si < 4; si++) {
            const int T = Ts[ti], rows = T > 1000 ? 1 : 7; /* short rows: groups of 4 or 2, then the rest */
            const size_t n = (size_t)rows * T;
            const float sc = scales[si];
            float *s[3], *d[3];
            for (int v = 0; v < 3; v++) {
                s[v] = malloc(n * 4), d[v] = malloc(n * 4);
                for (size_t e = 0; e < n; e++) {
                    s[v][e] = (float)(6.0 * sv_rand_normal(31 + ti, e));
                    d[v][e] = (float)sv_rand_normal(41 + ti, e);
                }
                s[v][T / 3] = -INFINITY;
            }
            base->softmax_rows(s[0], rows, T, sc);
            k->softmax_rows(s[1], rows, T, sc);
            for (size_t e = 0; e < n; e++) s[2][e] *= sc;
            k->softmax_rows(s[2], rows, T, 1.0f);
            CHECK(same_bits(s[0], s[1], n) && same_bits(s[1], s[2], n));
            CHECK(s[1][T / 3] == 0.0f);
            double sum = 0;
            for (int e = 0; e < T; e++) sum += s[1][e];
            CHECK(fabs(sum - 1.0) < 1e-5);
            base->softmax_bwd_rows(d[0], s[0], rows, T);
            k->softmax_bwd_rows(d[1], s[1], rows, T);
            CHECK(same_bits(d[0], d[1], n));
            for (int v = 0; v < 3; v++) free(s[v]), free(d[v]);
        }
}

static void check_kernels(void) {
    const char *isas[] = {"generic", "avx2", "avx512"};
    const sv_cpu_kernels *base = sv_cpu_kernels_pick("generic");
    CHECK(base && !strcmp(base->isa, "generic"));
    CHECK(sv_cpu_kernels_pick("auto") != NULL);
    CHECK(sv_cpu_kernels_pick("nosuch") == NULL);
    const size_t n = 4099; /* not a multiple of any vector width: exercises the tails */
    float *x = malloc(n * 4), *b = malloc(n * 4), *o[2], *p[2], *d[2], *S[2];
    float *pm[2], *mm[2], *vm[2];
    for (int k = 0; k < 2; k++) {
        o[k] = malloc(n * 4), p[k] = malloc(n * 4), d[k] = malloc(n * 4), S[k] = malloc(n * 4);
        pm[k] = malloc(n * 4), mm[k] = malloc(n * 4), vm[k] = malloc(n * 4);
    }
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)(4.0 * sv_rand_normal(11, i));
        b[i] = (float)(0.1 * sv_rand_normal(12, i));
    }
    x[0] = NAN, x[1] = INFINITY, x[2] = -0.0f, x[3] = 1e-30f, x[4] = -12.0f;
    sv_adamw_hparams h = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.05f, 0.19f, 0.002f, 0.7f};
    int tested = 0;
    for (int bf = 0; bf < 2; bf++) {
        for (int i = 0; i < 3; i++) {
            const sv_cpu_kernels *k = sv_cpu_kernels_pick(isas[i]);
            if (!k) {
                printf("kernels %s: not supported by this CPU, skipped\n", isas[i]);
                continue;
            }
            const sv_cpu_kernels *ks[2] = {base, k};
            float dP[2][99];
            for (int j = 0; j < 2; j++) {
                memcpy(o[j], x, n * 4);
                ks[j]->bias_gelu(bf, o[j], p[j], b, n);
                for (size_t e = 0; e < n; e++) d[j][e] = b[e];
                ks[j]->gelu_bwd(bf, d[j], d[j], x, n);
                for (size_t e = 0; e < n; e++) S[j][e] = x[e + 5 < n ? e + 5 : 5];
                ks[j]->softmax_rows(S[j], 1, 4000, 1.0f);
                ks[j]->softmax_rows(S[j] + 4000, 3, 33, 1.0f); /* short rows: lane tails */
                for (size_t e = 0; e < 99; e++) dP[j][e] = x[e + 5] * 0.5f;
                ks[j]->softmax_bwd_rows(dP[j], S[j] + 4000, 3, 33);
                for (size_t e = 0; e < n; e++) {
                    pm[j][e] = b[e];
                    mm[j][e] = 0.01f * x[(e + 7) % n];
                    vm[j][e] = 1e-4f * fabsf(x[(e + 9) % n]);
                }
                ks[j]->adamw(pm[j] + 5, x + 5, mm[j] + 5, vm[j] + 5, n - 5, &h, 0.05f);
            }
            CHECK(same_bits(o[0], o[1], n) && same_bits(p[0], p[1], n));
            CHECK(same_bits(d[0], d[1], n));
            CHECK(same_bits(S[0], S[1], 4000 + 99));
            CHECK(same_bits(dP[0], dP[1], 99));
            check_softmax_scaled(base, k);
            CHECK(same_bits(pm[0], pm[1], n) && same_bits(mm[0], mm[1], n) && same_bits(vm[0], vm[1], n));
            /* the other optimizer rules (SGD with Nesterov momentum, Lion, LAMB's two passes) and the
             * sum of squares of the gradient clipping and LAMB's norms */
            {
                const sv_optim_hparams oh = {.lr = 1e-3f,
                                             .beta1 = 0.9f,
                                             .beta2 = 0.999f,
                                             .eps = 1e-6f,
                                             .bc1 = 0.1f,
                                             .bc2_sqrt = 0.0447f,
                                             .grad_scale = 0.7f,
                                             .momentum = 0.9f,
                                             .nesterov = 1,
                                             .trust = 1.3f};
                for (int op = SV_OPTIM_OP_SGD; op <= SV_OPTIM_OP_LAMB_APPLY; op++) {
                    float *q[2][4];
                    for (int j = 0; j < 2; j++) {
                        for (int a = 0; a < 4; a++) q[j][a] = malloc(n * 4);
                        for (size_t e = 0; e < n; e++) {
                            q[j][0][e] = b[e];
                            q[j][1][e] = x[5 + e % (n - 5)]; /* finite gradients */
                            q[j][2][e] = 0.01f * x[5 + (e + 7) % (n - 5)];
                            q[j][3][e] = 1e-4f * fabsf(x[5 + (e + 9) % (n - 5)]);
                        }
                        ks[j]->optim_elem(op, q[j][0] + 1, q[j][1] + 1, q[j][2] + 1, q[j][3] + 1, n - 1, &oh, 0.05f);
                    }
                    for (int a = 0; a < 4; a++) CHECK(same_bits(q[0][a], q[1][a], n));
                    for (int j = 0; j < 2; j++)
                        for (int a = 0; a < 4; a++) free(q[j][a]);
                }
                for (size_t len = 1; len < 40; len += 7) {
                    const double s0 = base->sumsq_block(x + 5, n - 5 - len), s1 = k->sumsq_block(x + 5, n - 5 - len);
                    CHECK(memcmp(&s0, &s1, sizeof s0) == 0);
                }
            }
            /* bias/residual stores and rounding (x has NaN, Inf, -0, a denormal-range value) */
            {
                float *bs[2], *as[2], *rs[2];
                for (int j = 0; j < 2; j++) {
                    bs[j] = malloc(n * 4), as[j] = malloc(n * 4), rs[j] = malloc(n * 4);
                    memcpy(bs[j], x, n * 4);
                    ks[j]->bias_store(bf, bs[j], b, n);
                    ks[j]->add_store(bf, as[j], x, b, n);
                    memcpy(rs[j], x, n * 4);
                    ks[j]->round_bf16(rs[j], n);
                }
                CHECK(same_bits(bs[0], bs[1], n) && same_bits(as[0], as[1], n) && same_bits(rs[0], rs[1], n));
                for (size_t e = 0; e < n; e++) {
                    float sum = x[e] + b[e], want = bf ? sv_round_bf16(sum) : sum;
                    CHECK(same_bits(&bs[1][e], &want, 1) && same_bits(&as[1][e], &want, 1));
                    float r = sv_round_bf16(x[e]);
                    CHECK(same_bits(&rs[1][e], &r, 1));
                }
                memcpy(bs[1], x, n * 4);
                ks[1]->bias_store(bf, bs[1], NULL, n); /* no bias: rounding only (or nothing) */
                for (size_t e = 0; e < n; e++) {
                    float want = bf ? sv_round_bf16(x[e]) : x[e];
                    CHECK(same_bits(&bs[1][e], &want, 1));
                }
                for (int j = 0; j < 2; j++) free(bs[j]), free(as[j]), free(rs[j]);
                /* add16: widen, add_store with bf = 1, narrow; in place on either input too */
                if (bf) {
                    uint16_t *a16 = malloc(n * 2), *b16 = malloc(n * 2), *s16 = malloc(n * 2);
                    for (size_t e = 0; e < n; e++) {
                        a16[e] = sv_f32_to_bf16(x[e]), b16[e] = sv_f32_to_bf16(b[e] * 7.0f);
                        if (e % 11 == 4) a16[e] = (uint16_t)(0x7fc1u + e % 3); /* NaN payloads, in the tails too */
                        if (e % 7 == 2) b16[e] = e % 2 ? 0xff80u : (uint16_t)(0xffc4u + e % 5); /* -Inf, NaNs */
                    }
                    for (int alias = 0; alias < 3; alias++) {
                        uint16_t *out = alias == 1 ? a16 : alias == 2 ? b16 : s16;
                        uint16_t *a_in = malloc(n * 2), *b_in = malloc(n * 2);
                        memcpy(a_in, a16, n * 2), memcpy(b_in, b16, n * 2);
                        k->add16(out, a16, b16, n);
                        for (size_t e = 0; e < n; e++) {
                            const float want = sv_bf16_to_f32(a_in[e]) + sv_bf16_to_f32(b_in[e]);
                            CHECK(isnan(want) ? isnan(sv_bf16_to_f32(out[e])) : out[e] == sv_f32_to_bf16(want));
                            /* one NaN operand: its payload, quieted */
                            if (isnan(sv_bf16_to_f32(a_in[e])) != isnan(sv_bf16_to_f32(b_in[e])))
                                CHECK(out[e] == sv_f32_to_bf16(want));
                        }
                        memcpy(a16, a_in, n * 2), memcpy(b16, b_in, n * 2);
                        free(a_in), free(b_in);
                    }
                    free(a16), free(b16), free(s16);
                }
            }
            /* LayerNorm rows: 20 rows of 203 (tails at every width), of the models' widths 192, 160
             * and 128 (no tail) and of 7 (a tail alone); x from the finite part */
            for (int ci = 0; ci < 5; ci++) {
                enum { R = 20, CMAX = 203 };
                const int C = (const int[]){203, 192, 160, 128, 7}[ci];
                float ln_o[2][R * CMAX], ln_mu[2][R], ln_rs[2][R], ln_dx[2][R * CMAX], ln_dw[2][CMAX], ln_db[2][CMAX];
                const float *lx = x + 5, *lw = b + 1000, *lb = b + 2000, *ldy = x + 30;
                for (int j = 0; j < 2; j++) {
                    ks[j]->layernorm_fwd_rows(bf, ln_o[j], ln_mu[j], ln_rs[j], lx, lw, lb, R, C);
                    for (int e = 0; e < R * C; e++) ln_dx[j][e] = 0.5f * b[e];
                    for (int e = 0; e < C; e++) ln_dw[j][e] = ln_db[j][e] = 0.25f;
                    ks[j]->layernorm_bwd_rows(bf, ln_dx[j], ldy, lx, lw, ln_mu[j], ln_rs[j], R, C);
                    ks[j]->layernorm_bwd_params(ln_dw[j], ln_db[j], ldy, lx, ln_mu[j], ln_rs[j], R, C, 0, C);
                }
                CHECK(same_bits(ln_o[0], ln_o[1], R * C) && same_bits(ln_mu[0], ln_mu[1], R) &&
                      same_bits(ln_rs[0], ln_rs[1], R));
                CHECK(same_bits(ln_dx[0], ln_dx[1], R * C));
                CHECK(same_bits(ln_dw[0], ln_dw[1], C) && same_bits(ln_db[0], ln_db[1], C));
                /* and the saved row means are the rows' means */
                for (int r = 0; r < R; r++) {
                    double mu = 0;
                    for (int e = 0; e < C; e++) mu += lx[r * C + e];
                    CHECK_CLOSE(ln_mu[1][r], mu / C, 1e-5 * (1 + fabs(mu / C)));
                }
            }
            /* and the kernels compute what the formulas say */
            for (size_t e = 5; e < n; e++) {
                float z = x[e] + b[e];
                CHECK(o[1][e] == (bf ? sv_round_bf16(sv_gelu(z)) : sv_gelu(z)));
                CHECK(d[1][e] == (bf ? sv_round_bf16(b[e] * sv_gelu_grad(x[e])) : b[e] * sv_gelu_grad(x[e])));
            }
            double s = 0;
            for (size_t e = 0; e < 4000; e++) s += S[1][e];
            CHECK_CLOSE(s, 1.0, 1e-4);
            tested++;
        }
    }
    printf("kernel tables compared bitwise: %d\n", tested);
    CHECK(tested >= 2);
    free(x), free(b);
    for (int k = 0; k < 2; k++) free(o[k]), free(p[k]), free(d[k]), free(S[k]), free(pm[k]), free(mm[k]), free(vm[k]);
}

/* linear fwd/bwd with bias+GELU: 2 workers splitting the GEMM, 1 thread, and threaded BLAS
 * (gemm_split = 0) give identical bits. */
static void check_gemm_split(void) {
    const int M = 300, N = 96, K = 200;
    float *res[3][4];
    for (int mode = 0; mode < 3; mode++) {
        ops_ctx c;
        ops_ctx_init(&c, SV_F32, mode == 0 ? 1 : 2);
        if (mode == 2) sv_cpu(c.be)->gemm_split = 0;
        float *in = dev_alloc(&c, (size_t)M * K * 4), *W = dev_alloc(&c, (size_t)N * K * 4);
        float *bias = dev_alloc(&c, (size_t)N * 4), *out = dev_alloc(&c, (size_t)M * N * 4);
        float *pre = dev_alloc(&c, (size_t)M * N * 4), *d_out = dev_alloc(&c, (size_t)M * N * 4);
        float *d_in = dev_alloc(&c, (size_t)M * K * 4), *dW = dev_alloc(&c, (size_t)N * K * 4);
        float *db = dev_alloc(&c, (size_t)N * 4);
        for (size_t i = 0; i < (size_t)M * K; i++) in[i] = (float)sv_rand_normal(21, i);
        for (size_t i = 0; i < (size_t)N * K; i++) W[i] = (float)(0.05 * sv_rand_normal(22, i)), dW[i] = 0;
        for (int i = 0; i < N; i++) bias[i] = (float)(0.1 * sv_rand_normal(23, (uint64_t)i)), db[i] = 0;
        for (size_t i = 0; i < (size_t)M * N; i++) d_out[i] = (float)sv_rand_normal(24, i);
        CHECK_OK(sv_be_linear_fwd(c.be, out, pre, in, W, bias, M, N, K));
        CHECK_OK(sv_be_linear_bwd(c.be, d_in, dW, db, d_out, in, W, pre, M, N, K));
        float *srcs[4] = {out, d_in, dW, db};
        size_t ns[4] = {(size_t)M * N, (size_t)M * K, (size_t)N * K, (size_t)N};
        for (int j = 0; j < 4; j++) {
            res[mode][j] = malloc(ns[j] * 4);
            memcpy(res[mode][j], srcs[j], ns[j] * 4);
            if (mode > 0) CHECK(same_bits(res[0][j], res[mode][j], ns[j]));
        }
        float *all[] = {in, W, bias, out, pre, d_out, d_in, dW, db};
        for (int j = 0; j < 9; j++) sv_be_free(c.be, all[j]);
        ops_ctx_free(&c);
    }
    for (int mode = 0; mode < 3; mode++)
        for (int j = 0; j < 4; j++) free(res[mode][j]);
    printf("linear fwd/bwd: 1 thread == 2 workers (split GEMM) == threaded BLAS, bitwise\n");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--exhaustive")) {
        check_gelu_bits(1);
        printf("PASS\n");
        return 0;
    }
    check_formulas();
    check_kernels();
    check_gelu_bits(0);
    check_gelu_grad16();
    check_gemm_split();
    printf("PASS\n");
    return 0;
}
