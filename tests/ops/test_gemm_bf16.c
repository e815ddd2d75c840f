/* The AVX-512 BF16 GEMM (model/backend/cpu/gemm_bf16.h) for the three layouts the linear
 * layers use, against a double-precision reference computed from the bf16-rounded inputs:
 *   nt: C = A B^T, nn: C = A B, tn: C += A^T B.
 * Tolerance: every product of two bf16 values is exact in fp32, so the only error is the fp32
 * accumulation; for a reduction of length R in any order it is bounded by
 * R * 2^-24 * (|C0| + sum |a_k b_k|) (the classic gamma_R bound, first order), which is what
 * each element is checked against (with C0 = the initial value for tn, else 0).
 * Also: bitwise identical results when the rows are computed in slices (as the backend's
 * worker threads do), when the packed operand is packed in column ranges by several callers,
 * odd reduction lengths (zero padding), non-representable inputs (rounded to nearest even),
 * and flushing of denormal inputs and results. Through the CPU backend in bf16 mode: linear
 * fwd (bias + GELU) / bwd give the same bits on 1 and 2 worker threads, also when the packed
 * operand exceeds the pack buffer and is processed in reduction chunks, and agree with the
 * OpenBLAS sgemm path within bf16 tolerance. Exits 77 on a CPU without AVX-512 BF16. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/elementwise.h"
#include "core/rng.h"
#include "model/backend/cpu/cpu_backend.h"
#include "model/backend/cpu/gemm_bf16.h"

enum { NT, NN, TN };
static const char *k_names[] = {"nt", "nn", "tn"};

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    CHECK(p != NULL);
    return p;
}

/* n values from N(0, scale^2), rounded to bf16 unless raw. */
static float *randm(size_t n, uint64_t key, double scale, int raw) {
    float *p = xalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float v = (float)(scale * sv_rand_normal(key, i));
        p[i] = raw ? v : sv_round_bf16(v);
    }
    return p;
}

/* Shapes of C, A, B and the reduction for layout L with linear-layer sizes (M, N, K). */
static void dims(int L, int M, int N, int K, int *rows, int *cols, int *red) {
    if (L == NT) *rows = M, *cols = N, *red = K;
    else if (L == NN) *rows = M, *cols = K, *red = N;
    else *rows = N, *cols = K, *red = M;
}

/* Element (i, r) of A and (r, j) of B for layout L. */
static float a_at(int L, const float *A, int M, int N, int K, int i, int r) {
    (void)M;
    if (L == NT) return A[(size_t)i * K + r];
    if (L == NN) return A[(size_t)i * N + r];
    return A[(size_t)r * N + i];
}
static float b_at(int L, const float *B, int M, int N, int K, int r, int j) {
    (void)M, (void)N;
    if (L == NT) return B[(size_t)j * K + r];
    return B[(size_t)r * K + j]; /* nn: B (N,K) row r; tn: B (M,K) row r */
}

static void call(int L, float *C, const float *A, const float *B, int M, int N, int K, void *pack, void *scratch) {
    if (L == NT) sv_gemm_bf16_nt(C, A, B, M, N, K, pack, scratch);
    else if (L == NN) sv_gemm_bf16_nn(C, A, B, M, N, K, pack, scratch);
    else sv_gemm_bf16_tn(C, A, B, M, N, K, pack, scratch);
}

/* Operand views for the two-step API (as cpu_linear.c builds them). */
static void views(int L, const float *A, const float *B, int N, int K, sv_gemm_bf16_mat *a, sv_gemm_bf16_mat *b) {
    if (L == NT) *a = (sv_gemm_bf16_mat){A, (size_t)K, 1}, *b = (sv_gemm_bf16_mat){B, (size_t)K, 1};
    else if (L == NN) *a = (sv_gemm_bf16_mat){A, (size_t)N, 1}, *b = (sv_gemm_bf16_mat){B, (size_t)K, 0};
    else *a = (sv_gemm_bf16_mat){A, (size_t)N, 0}, *b = (sv_gemm_bf16_mat){B, (size_t)K, 0};
}

static double g_worst; /* largest error / bound seen */

static void check_case(int L, int M, int N, int K, int raw, uint64_t seed) {
    int rows, cols, red;
    dims(L, M, N, K, &rows, &cols, &red);
    size_t na = L == NT ? (size_t)M * K : (size_t)M * N, nb = L == NT ? (size_t)N * K : L == NN ? (size_t)N * K : (size_t)M * K;
    float *A = randm(na, seed, 1.0, raw), *B = randm(nb, seed + 1, 0.05, raw);
    float *C0 = randm((size_t)rows * cols, seed + 2, 0.5, 0);
    float *C = xalloc((size_t)rows * cols * sizeof(float) + 4), *C2 = xalloc((size_t)rows * cols * sizeof(float) + 4);
    size_t pbytes = sv_gemm_bf16_pack_bytes(cols, red);
    void *pack = xalloc(pbytes), *scratch = xalloc(sv_gemm_bf16_scratch_bytes());
    memcpy(C, C0, (size_t)rows * cols * sizeof(float));
    if (L != TN) C[(size_t)rows * cols - 1] = NAN; /* beta 0 must overwrite, not read */
    call(L, C, A, B, M, N, K, pack, scratch);

    /* reference on every row for small cases, on a stride of rows for the big ones */
    int step = (double)rows * cols * red > 5e7 ? 61 : 1;
    for (int i = 0; i < rows; i += step) {
        for (int j = 0; j < cols; j++) {
            double c0 = L == TN ? C0[(size_t)i * cols + j] : 0.0, s = c0, mag = fabs(c0);
            for (int r = 0; r < red; r++) {
                double p = (double)sv_round_bf16(a_at(L, A, M, N, K, i, r)) * sv_round_bf16(b_at(L, B, M, N, K, r, j));
                s += p;
                mag += fabs(p);
            }
            double bound = (double)(red + 1) * 0x1p-24 * mag + 1e-37;
            double err = fabs((double)C[(size_t)i * cols + j] - s);
            if (!(err <= bound)) {
                fprintf(stderr, "%s M=%d N=%d K=%d: C[%d][%d] = %.9g, reference %.9g (bound %.3g)\n", k_names[L], M,
                        N, K, i, j, C[(size_t)i * cols + j], s, bound);
                exit(1);
            }
            if (mag > 0 && err / bound > g_worst) g_worst = err / bound;
        }
    }

    /* Bitwise identity: rows in uneven slices (each slice its own call, as worker threads
     * do), the packed operand built from column ranges by separate calls. */
    sv_gemm_bf16_mat a, b;
    views(L, A, B, N, K, &a, &b);
    memset(pack, 0xA5, pbytes);
    for (int j0 = 0; j0 < cols; j0 += 2 * SV_GEMM_BF16_NR) {
        int j1 = j0 + 2 * SV_GEMM_BF16_NR < cols ? j0 + 2 * SV_GEMM_BF16_NR : cols;
        sv_gemm_bf16_pack(pack, b, cols, red, j0, j1);
    }
    memcpy(C2, C0, (size_t)rows * cols * sizeof(float));
    int cuts[] = {0, 1, 5, 37, 200, 1031, rows};
    for (int s = 0; s + 1 < (int)(sizeof cuts / sizeof cuts[0]); s++) {
        int r0 = cuts[s] < rows ? cuts[s] : rows, r1 = cuts[s + 1] < rows ? cuts[s + 1] : rows;
        if (r1 <= r0) continue;
        sv_gemm_bf16_mat as = a;
        as.p += a.red_contig ? (size_t)r0 * a.ld : (size_t)r0;
        sv_gemm_bf16_run(C2 + (size_t)r0 * cols, (size_t)cols, as, r1 - r0, pack, cols, red, L == TN, scratch);
    }
    CHECK(memcmp(C, C2, (size_t)rows * cols * sizeof(float)) == 0);

    free(A), free(B), free(C0), free(C), free(C2), free(pack), free(scratch);
}

/* tn accumulates: two calls over the halves of the reduction (even split point) add up to
 * one call over the whole reduction, bit for bit; and accumulate on zeros equals beta 0. */
static void check_accumulate(void) {
    int M = 130, N = 70, K = 45;
    float *A = randm((size_t)M * N, 71, 1.0, 0), *B = randm((size_t)M * K, 72, 1.0, 0);
    float *C1 = xalloc((size_t)N * K * 4), *C2 = xalloc((size_t)N * K * 4), *C3 = xalloc((size_t)N * K * 4);
    void *pack = xalloc(sv_gemm_bf16_pack_bytes(K, M)), *scratch = xalloc(sv_gemm_bf16_scratch_bytes());
    memset(C1, 0, (size_t)N * K * 4);
    memset(C2, 0, (size_t)N * K * 4);
    sv_gemm_bf16_tn(C1, A, B, M, N, K, pack, scratch);
    sv_gemm_bf16_tn(C2, A, B, 64, N, K, pack, scratch);
    sv_gemm_bf16_tn(C2, A + (size_t)64 * N, B + (size_t)64 * K, M - 64, N, K, pack, scratch);
    CHECK(memcmp(C1, C2, (size_t)N * K * 4) == 0);
    /* beta 0 (via the two-step API) on the same operands matches accumulating onto zeros */
    sv_gemm_bf16_mat a = {A, (size_t)N, 0}, b = {B, (size_t)K, 0};
    sv_gemm_bf16_pack(pack, b, K, M, 0, K);
    for (size_t i = 0; i < (size_t)N * K; i++) C3[i] = 1e30f;
    sv_gemm_bf16_run(C3, (size_t)K, a, N, pack, K, M, 0, scratch);
    CHECK(memcmp(C1, C3, (size_t)N * K * 4) == 0);
    /* an empty reduction leaves tn's C alone and zeroes nt's */
    memcpy(C3, C1, (size_t)N * K * 4);
    sv_gemm_bf16_tn(C3, A, B, 0, N, K, pack, scratch);
    CHECK(memcmp(C1, C3, (size_t)N * K * 4) == 0);
    sv_gemm_bf16_nt(C3, A, B, N, K, 0, pack, scratch);
    for (size_t i = 0; i < (size_t)N * K; i++) CHECK(C3[i] == 0.0f);
    free(A), free(B), free(C1), free(C2), free(C3), free(pack), free(scratch);
}

/* Denormals are flushed: a denormal input counts as zero, and a result below FLT_MIN is zero
 * (VDPBF16PS ignores MXCSR). Normal inputs whose product is below FLT_MIN contribute zero. */
static void check_denormals(void) {
    enum { M = 3, N = 2, K = 4 };
    float A[M * K], B[N * K], C[M * N];
    void *pack = xalloc(sv_gemm_bf16_pack_bytes(N, K)), *scratch = xalloc(sv_gemm_bf16_scratch_bytes());
    for (int i = 0; i < M * K; i++) A[i] = 0.0f;
    for (int i = 0; i < N * K; i++) B[i] = 1.0f;
    A[1] = 0x1p-130f;           /* row 0: a denormal input times 1: 0, not 2^-130 */
    A[K] = 0x1p-70f;            /* row 1: 2^-70 * 2^-60 = 2^-130, below FLT_MIN: 0 */
    B[0] = 0x1p-60f, B[K] = 0x1p-60f;
    A[2 * K + 2] = 3.0f;        /* row 2: normal values are unaffected */
    A[2 * K + 3] = 0x1p-130f;
    sv_gemm_bf16_nt(C, A, B, M, N, K, pack, scratch);
    printf("denormals: C = [%g %g; %g %g; %g %g]\n", C[0], C[1], C[2], C[3], C[4], C[5]);
    CHECK(C[0] == 0.0f && C[1] == 0.0f);
    CHECK(C[2] == 0.0f && C[3] == 0.0f);
    CHECK(C[4] == 3.0f && C[5] == 3.0f);
    free(pack), free(scratch);
}

/* Linear fwd (bias + GELU) + bwd through the backend in bf16 mode. mode 0: bf16 GEMM on 1
 * thread, 1: on 2 threads, 2: OpenBLAS sgemm (bf16 GEMM switched off) on 2 threads. */
enum { LIN_OUT, LIN_PRE, LIN_DIN, LIN_DW, LIN_DB, LIN_N };
static void run_linear(int mode, int M, int N, int K, float *res[LIN_N]) {
    sv_backend_config cfg = {.device = SV_DEVICE_CPU, .compute_dtype = SV_BF16, .threads = mode == 0 ? 1 : 2};
    sv_backend *be;
    CHECK_OK(sv_backend_create(&cfg, &be));
    CHECK(sv_cpu(be)->bf16_gemm == 1); /* available here (checked in main) and not disabled */
    CHECK(strstr(sv_be_device_name(be), "gemm avx512-bf16") != NULL);
    if (mode == 2) sv_cpu(be)->bf16_gemm = 0;
    size_t n[LIN_N] = {(size_t)M * N, (size_t)M * N, (size_t)M * K, (size_t)N * K, (size_t)N};
    float *in, *W, *bias, *d_out, *buf[LIN_N];
    CHECK_OK(sv_be_alloc(be, (size_t)M * K * 4, (void **)&in));
    CHECK_OK(sv_be_alloc(be, (size_t)N * K * 4, (void **)&W));
    CHECK_OK(sv_be_alloc(be, (size_t)N * 4, (void **)&bias));
    CHECK_OK(sv_be_alloc(be, (size_t)M * N * 4, (void **)&d_out));
    for (int j = 0; j < LIN_N; j++) CHECK_OK(sv_be_alloc(be, n[j] * 4, (void **)&buf[j]));
    for (size_t i = 0; i < (size_t)M * K; i++) in[i] = sv_round_bf16((float)sv_rand_normal(31, i));
    for (size_t i = 0; i < (size_t)N * K; i++) W[i] = sv_round_bf16((float)(0.05 * sv_rand_normal(32, i)));
    for (int i = 0; i < N; i++) bias[i] = sv_round_bf16((float)(0.1 * sv_rand_normal(33, (uint64_t)i)));
    for (size_t i = 0; i < (size_t)M * N; i++) d_out[i] = sv_round_bf16((float)sv_rand_normal(34, i));
    memset(buf[LIN_DW], 0, n[LIN_DW] * 4);
    memset(buf[LIN_DB], 0, n[LIN_DB] * 4);
    CHECK_OK(sv_be_linear_fwd(be, buf[LIN_OUT], buf[LIN_PRE], in, W, bias, M, N, K));
    CHECK_OK(sv_be_linear_bwd(be, buf[LIN_DIN], buf[LIN_DW], buf[LIN_DB], d_out, in, W, buf[LIN_PRE], M, N, K));
    for (int j = 0; j < LIN_N; j++) {
        res[j] = malloc(n[j] * 4);
        CHECK(res[j] != NULL);
        memcpy(res[j], buf[j], n[j] * 4);
        sv_be_free(be, buf[j]);
    }
    sv_be_free(be, in), sv_be_free(be, W), sv_be_free(be, bias), sv_be_free(be, d_out);
    sv_backend_destroy(be);
}

static void check_backend(int M, int N, int K) {
    static const char *names[LIN_N] = {"out", "pre_gelu", "d_in", "dW", "db"};
    size_t n[LIN_N] = {(size_t)M * N, (size_t)M * N, (size_t)M * K, (size_t)N * K, (size_t)N};
    float *r[3][LIN_N];
    for (int mode = 0; mode < 3; mode++) run_linear(mode, M, N, K, r[mode]);
    for (int j = 0; j < LIN_N; j++) {
        CHECK(memcmp(r[0][j], r[1][j], n[j] * 4) == 0);
        /* vs sgemm: rms of the difference relative to the rms of the values; bf16 outputs
         * differ by at most one bf16 rounding (2^-8 relative), f32 gradients far less */
        double d2 = 0, v2 = 0;
        for (size_t i = 0; i < n[j]; i++) {
            double a = r[0][j][i], b = r[2][j][i];
            d2 += (a - b) * (a - b);
            v2 += b * b;
        }
        double rel = sqrt(d2 / (v2 > 0 ? v2 : 1));
        printf("backend M=%d N=%d K=%d %s: bf16 GEMM vs sgemm rms rel diff %.2e\n", M, N, K, names[j], rel);
        CHECK(rel <= (j == LIN_DW || j == LIN_DB ? 3e-4 : 4e-3));
    }
    for (int mode = 0; mode < 3; mode++)
        for (int j = 0; j < LIN_N; j++) free(r[mode][j]);
}

int main(void) {
    if (!sv_gemm_bf16_available()) SKIP("this CPU lacks AVX-512 BF16 (avx512_bf16); the bf16 GEMM is not used here");
    /* odd and edge sizes: (M, N, K) of the linear layer */
    static const int small[][3] = {{1, 1, 1},     {7, 7, 7},     {31, 33, 65},  {33, 31, 7},   {65, 191, 33},
                                   {191, 65, 192}, {1, 577, 31},  {577, 1, 2},   {8, 32, 256},  {9, 33, 257},
                                   {129, 95, 513}, {200, 192, 577}, {16, 48, 3}, {257, 64, 1}};
    /* real shapes: vit-28 (M = 3200 rows per rank), vit-ti16 / s16 (M = 16*197) */
    static const int real[][3] = {{3200, 576, 192}, {3200, 768, 192}, {3200, 192, 768}, {3152, 1152, 384},
                                  {3152, 384, 1536}};
    uint64_t seed = 10;
    for (int L = 0; L < 3; L++) {
        for (size_t s = 0; s < sizeof small / sizeof small[0]; s++, seed += 3)
            check_case(L, small[s][0], small[s][1], small[s][2], 0, seed);
        for (size_t s = 0; s < sizeof real / sizeof real[0]; s++, seed += 3)
            check_case(L, real[s][0], real[s][1], real[s][2], 0, seed);
        /* inputs that are not bf16-representable are rounded to nearest even when packed */
        check_case(L, 45, 70, 99, 1, seed += 3);
        printf("%s: ok (worst error %.3f of the bound)\n", k_names[L], g_worst);
        g_worst = 0;
    }
    check_accumulate();
    check_denormals();
    check_backend(1000, 96, 200);  /* rows split across 2 workers */
    check_backend(5000, 64, 840);  /* dW: packed `in` exceeds the pack buffer, reduction in chunks */
    check_backend(40, 2080, 2050); /* forward and d_in: packed W exceeds the pack buffer */
    printf("ok\n");
    return 0;
}
