/* The bf16 GEMM engines (model/backend/cpu/gemm_engine.h: amx-bf16 on AMX tiles, avx512-bf16 on
 * VDPBF16PS), each in turn, for the three layouts the linear layers use, against a double-precision reference computed from the bf16-rounded inputs:
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
 * OpenBLAS sgemm path within bf16 tolerance. An engine this CPU lacks is skipped with a line
 * naming the missing feature; exits 77 when none runs here. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/elementwise.h"
#include "core/rng.h"
#include "model/backend/cpu/cpu_backend.h"
#include "model/backend/cpu/gemm_bf16.h"
#include "model/backend/cpu/gemm_engine.h"

enum { NT, NN, TN };
static const char *k_names[] = {"nt", "nn", "tn"};

static const sv_gemm_engine *E; /* the engine under test */

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
    if (L == NT)
        *rows = M, *cols = N, *red = K;
    else if (L == NN)
        *rows = M, *cols = K, *red = N;
    else
        *rows = N, *cols = K, *red = M;
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

/* Operand views for the two-step API (as cpu_linear.c builds them). */
static void views(int L, const float *A, const float *B, int N, int K, sv_gemm_mat *a, sv_gemm_mat *b) {
    if (L == NT)
        *a = sv_gemm_f32(A, (size_t)K, 1), *b = sv_gemm_f32(B, (size_t)K, 1);
    else if (L == NN)
        *a = sv_gemm_f32(A, (size_t)N, 1), *b = sv_gemm_f32(B, (size_t)K, 0);
    else
        *a = sv_gemm_f32(A, (size_t)N, 0), *b = sv_gemm_f32(B, (size_t)K, 0);
}

/* One-shot C = A B (nt, nn) or C += A^T B (tn) on the calling thread. */
static void call(int L, float *C, const float *A, const float *B, int M, int N, int K, void *pack, void *scratch) {
    int rows, cols, red;
    sv_gemm_mat a, b;
    dims(L, M, N, K, &rows, &cols, &red);
    views(L, A, B, N, K, &a, &b);
    sv_gemm_engine_gemm(E, C, (size_t)cols, a, rows, b, cols, red, L == TN, pack, scratch);
}
static void gemm_nt(float *C, const float *A, const float *B, int M, int N, int K, void *pack, void *scratch) {
    call(NT, C, A, B, M, N, K, pack, scratch);
}
static void gemm_tn(float *C, const float *A, const float *B, int M, int N, int K, void *pack, void *scratch) {
    call(TN, C, A, B, M, N, K, pack, scratch);
}

static double g_worst; /* largest error / bound seen */

/* C (rows x cols) = / += A (packed B) in uneven row slices, each slice its own run call, as
 * worker threads make them. */
static void run_slices(float *C, sv_gemm_mat A, int rows, int cols, int red, int accumulate, const void *pack,
                       void *scratch) {
    const int cuts[] = {0, 1, 5, 37, 200, 1031, rows};
    for (int s = 0; s + 1 < (int)(sizeof cuts / sizeof cuts[0]); s++) {
        int r0 = cuts[s] < rows ? cuts[s] : rows, r1 = cuts[s + 1] < rows ? cuts[s + 1] : rows;
        if (r1 <= r0) continue;
        sv_gemm_mat as = sv_gemm_mat_off(A, A.red_contig ? (size_t)r0 * A.ld : (size_t)r0);
        E->run(C + (size_t)r0 * cols, (size_t)cols, as, r1 - r0, pack, cols, red, accumulate, scratch);
    }
}

static void check_case(int L, int M, int N, int K, int raw, uint64_t seed) {
    int rows, cols, red;
    dims(L, M, N, K, &rows, &cols, &red);
    size_t na = L == NT ? (size_t)M * K : (size_t)M * N,
           nb = L == NT ? (size_t)N * K
        : L == NN       ? (size_t)N * K
                        : (size_t)M * K;
    float *A = randm(na, seed, 1.0, raw), *B = randm(nb, seed + 1, 0.05, raw);
    float *C0 = randm((size_t)rows * cols, seed + 2, 0.5, 0);
    float *C = xalloc((size_t)rows * cols * sizeof(float) + 4), *C2 = xalloc((size_t)rows * cols * sizeof(float) + 4);
    size_t pbytes = E->pack_bytes(cols, red);
    void *pack = xalloc(pbytes), *scratch = xalloc(E->scratch_bytes);
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
                fprintf(stderr, "%s M=%d N=%d K=%d: C[%d][%d] = %.9g, reference %.9g (bound %.3g)\n", k_names[L], M, N,
                        K, i, j, C[(size_t)i * cols + j], s, bound);
                exit(1);
            }
            if (mag > 0 && err / bound > g_worst) g_worst = err / bound;
        }
    }

    /* Bitwise identity: rows in uneven slices (each slice its own call, as worker threads
     * do), the packed operand built from column ranges by separate calls. */
    sv_gemm_mat a, b;
    views(L, A, B, N, K, &a, &b);
    memset(pack, 0xA5, pbytes);
    for (int j0 = 0; j0 < cols; j0 += 2 * E->nr) {
        int j1 = j0 + 2 * E->nr < cols ? j0 + 2 * E->nr : cols;
        E->pack(pack, b, cols, red, j0, j1);
    }
    memcpy(C2, C0, (size_t)rows * cols * sizeof(float));
    run_slices(C2, a, rows, cols, red, L == TN, pack, scratch);
    CHECK(memcmp(C, C2, (size_t)rows * cols * sizeof(float)) == 0);

    /* bf16 storage (sv_gemm_h16 views, as the CPU backend's bf16 storage passes them): the same
     * bits as packing the fp32 operands, which rounds them to these bf16 values */
    uint16_t *Ah = xalloc(na * 2 + 2), *Bh = xalloc(nb * 2 + 2);
    for (size_t i = 0; i < na; i++) Ah[i] = sv_f32_to_bf16(A[i]);
    for (size_t i = 0; i < nb; i++) Bh[i] = sv_f32_to_bf16(B[i]);
    sv_gemm_mat ah = sv_gemm_h16(Ah, a.ld, a.red_contig), bh = sv_gemm_h16(Bh, b.ld, b.red_contig);
    memset(pack, 0x5A, pbytes);
    memcpy(C2, C0, (size_t)rows * cols * sizeof(float));
    if (L != TN) C2[(size_t)rows * cols - 1] = NAN;
    sv_gemm_engine_gemm(E, C2, (size_t)cols, ah, rows, bh, cols, red, L == TN, pack, scratch);
    CHECK(memcmp(C, C2, (size_t)rows * cols * sizeof(float)) == 0);
    /* ... and in row slices, as worker threads call it (an engine that reads bf16 rows in place
     * must find each slice's rows where the view puts them) */
    memcpy(C2, C0, (size_t)rows * cols * sizeof(float));
    run_slices(C2, ah, rows, cols, red, L == TN, pack, scratch);
    CHECK(memcmp(C, C2, (size_t)rows * cols * sizeof(float)) == 0);
    free(Ah), free(Bh);

    free(A), free(B), free(C0), free(C), free(C2), free(pack), free(scratch);
}

/* tn accumulates: two calls over the halves of the reduction (even split point) add up to
 * one call over the whole reduction, bit for bit; and accumulate on zeros equals beta 0. */
static void check_accumulate(void) {
    int M = 130, N = 70, K = 45;
    float *A = randm((size_t)M * N, 71, 1.0, 0), *B = randm((size_t)M * K, 72, 1.0, 0);
    float *C1 = xalloc((size_t)N * K * 4), *C2 = xalloc((size_t)N * K * 4), *C3 = xalloc((size_t)N * K * 4);
    void *pack = xalloc(E->pack_bytes(K, M)), *scratch = xalloc(E->scratch_bytes);
    memset(C1, 0, (size_t)N * K * 4);
    memset(C2, 0, (size_t)N * K * 4);
    gemm_tn(C1, A, B, M, N, K, pack, scratch);
    gemm_tn(C2, A, B, 64, N, K, pack, scratch);
    gemm_tn(C2, A + (size_t)64 * N, B + (size_t)64 * K, M - 64, N, K, pack, scratch);
    CHECK(memcmp(C1, C2, (size_t)N * K * 4) == 0);
    /* beta 0 (via the two-step API) on the same operands matches accumulating onto zeros */
    sv_gemm_mat a = sv_gemm_f32(A, (size_t)N, 0), b = sv_gemm_f32(B, (size_t)K, 0);
    E->pack(pack, b, K, M, 0, K);
    for (size_t i = 0; i < (size_t)N * K; i++) C3[i] = 1e30f;
    E->run(C3, (size_t)K, a, N, pack, K, M, 0, scratch);
    CHECK(memcmp(C1, C3, (size_t)N * K * 4) == 0);
    /* an empty reduction leaves tn's C alone and zeroes nt's */
    memcpy(C3, C1, (size_t)N * K * 4);
    gemm_tn(C3, A, B, 0, N, K, pack, scratch);
    CHECK(memcmp(C1, C3, (size_t)N * K * 4) == 0);
    gemm_nt(C3, A, B, N, K, 0, pack, scratch);
    for (size_t i = 0; i < (size_t)N * K; i++) CHECK(C3[i] == 0.0f);
    free(A), free(B), free(C1), free(C2), free(C3), free(pack), free(scratch);
}

/* A reduction in two calls, the second accumulating, equals one call bit for bit, at a size
 * where amx-bf16 carries C in its packed buffer (C over 1 MiB, both parts longer than 256): the
 * accumulating call must start the buffer from C. Split at a whole number of red_block. */
static void check_accumulate_long(void) {
    const int M = 1100, N = 333, K = 600, K1 = 320;
    float *A = randm((size_t)M * K, 81, 1.0, 0), *B = randm((size_t)N * K, 82, 0.05, 0);
    float *C1 = xalloc((size_t)M * N * 4), *C2 = xalloc((size_t)M * N * 4);
    void *pack = xalloc(E->pack_bytes(N, K)), *scratch = xalloc(E->scratch_bytes);
    E->pack(pack, sv_gemm_f32(B, (size_t)K, 1), N, K, 0, N);
    E->run(C1, (size_t)N, sv_gemm_f32(A, (size_t)K, 1), M, pack, N, K, 0, scratch);
    E->pack(pack, sv_gemm_f32(B, (size_t)K, 1), N, K1, 0, N);
    E->run(C2, (size_t)N, sv_gemm_f32(A, (size_t)K, 1), M, pack, N, K1, 0, scratch);
    E->pack(pack, sv_gemm_f32(B + K1, (size_t)K, 1), N, K - K1, 0, N);
    E->run(C2, (size_t)N, sv_gemm_f32(A + K1, (size_t)K, 1), M, pack, N, K - K1, 1, scratch);
    CHECK(memcmp(C1, C2, (size_t)M * N * 4) == 0);
    free(A), free(B), free(C1), free(C2), free(pack), free(scratch);
}

/* avx512-bf16 splits the reduction into blocks of 256 pairs, or 128 (sv_gemm_bf16_set_kcp):
 * both blockings give the same bits, in the three layouts, at reductions of one, two and several
 * blocks with odd tails, output row counts past one A block of either blocking with every
 * partial row group of 1-7 rows, and output column counts of whole and partial panels. */
static void check_blockings(void) {
    static const int shapes[][4] = {{NT, 300, 70, 1024}, {NN, 150, 96, 600}, {TN, 517, 40, 33}, {NT, 9, 33, 257},
                                    {NT, 71, 64, 40},    {NN, 67, 40, 300},  {TN, 69, 33, 515}, {NT, 66, 96, 17},
                                    {NN, 5, 64, 9},      {TN, 7, 100, 50}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int L = shapes[s][0], M = shapes[s][1], N = shapes[s][2], K = shapes[s][3];
        int rows, cols, red;
        dims(L, M, N, K, &rows, &cols, &red);
        size_t na = L == NT ? (size_t)M * K : (size_t)M * N, nb = L == TN ? (size_t)M * K : (size_t)N * K;
        float *A = randm(na, 91 + s, 1.0, 0), *B = randm(nb, 191 + s, 0.05, 0);
        float *C1 = randm((size_t)rows * cols, 291 + s, 0.5, 0), *C2 = xalloc((size_t)rows * cols * 4);
        memcpy(C2, C1, (size_t)rows * cols * 4);
        void *pack = xalloc(E->pack_bytes(cols, red)), *scratch = xalloc(E->scratch_bytes);
        sv_gemm_bf16_set_kcp(128);
        call(L, C1, A, B, M, N, K, pack, scratch);
        sv_gemm_bf16_set_kcp(256);
        call(L, C2, A, B, M, N, K, pack, scratch);
        sv_gemm_bf16_set_kcp(0);
        CHECK(memcmp(C1, C2, (size_t)rows * cols * 4) == 0);
        free(A), free(B), free(C1), free(C2), free(pack), free(scratch);
    }
}

/* Denormals are flushed: a denormal input counts as zero, and a result below FLT_MIN is zero
 * (VDPBF16PS ignores MXCSR). Normal inputs whose product is below FLT_MIN contribute zero. */
static void check_denormals(void) {
    enum { M = 3, N = 2, K = 4 };
    float A[M * K], B[N * K], C[M * N];
    void *pack = xalloc(E->pack_bytes(N, K)), *scratch = xalloc(E->scratch_bytes);
    for (int i = 0; i < M * K; i++) A[i] = 0.0f;
    for (int i = 0; i < N * K; i++) B[i] = 1.0f;
    A[1] = 0x1p-130f; /* row 0: a denormal input times 1: 0, not 2^-130 */
    A[K] = 0x1p-70f;  /* row 1: 2^-70 * 2^-60 = 2^-130, below FLT_MIN: 0 */
    B[0] = 0x1p-60f, B[K] = 0x1p-60f;
    A[2 * K + 2] = 3.0f; /* row 2: normal values are unaffected */
    A[2 * K + 3] = 0x1p-130f;
    gemm_nt(C, A, B, M, N, K, pack, scratch);
    printf("denormals: C = [%g %g; %g %g; %g %g]\n", C[0], C[1], C[2], C[3], C[4], C[5]);
    CHECK(C[0] == 0.0f && C[1] == 0.0f);
    CHECK(C[2] == 0.0f && C[3] == 0.0f);
    CHECK(C[4] == 3.0f && C[5] == 3.0f);
    free(pack), free(scratch);
}

/* Linear fwd (bias + GELU) + bwd through the backend in bf16 mode. mode 0: the engine on 1
 * thread, 1: on 2 threads, 2: OpenBLAS sgemm (engine switched off) on 2 threads, 3: the engine
 * on 2 threads with the epilogues as separate passes (cpu.unfused_epi), where the
 * engine would otherwise run them on its finished rows (run_ep). */
enum { LIN_OUT, LIN_PRE, LIN_DIN, LIN_DW, LIN_DB, LIN_N };
static void run_linear(int mode, int M, int N, int K, float *res[LIN_N]) {
    sv_backend_config cfg = {.device = SV_DEVICE_CPU,
                             .compute_dtype = SV_BF16,
                             .threads = mode == 0 ? 1 : 2,
                             .cpu = {.gemm = E->name, .unfused_epi = mode == 3, .f32_storage = 1}};
    sv_backend *be;
    CHECK_OK(sv_backend_create(&cfg, &be));
    CHECK(sv_cpu(be)->no_fused_epi == (mode == 3));
    CHECK(sv_cpu(be)->gemm == E); /* forced, and available here (checked in main) */
    char want[64];
    snprintf(want, sizeof want, "gemm %s", E->name);
    CHECK(strstr(sv_be_device_name(be), want) != NULL);
    if (mode == 2) sv_cpu(be)->gemm = NULL;
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

/* rms of (a - b) relative to the rms of b over n values. */
static double rms_rel(const float *a, const float *b, size_t n) {
    double d2 = 0, v2 = 0;
    for (size_t i = 0; i < n; i++) {
        d2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        v2 += (double)b[i] * b[i];
    }
    return sqrt(d2 / (v2 > 0 ? v2 : 1));
}

static void check_backend(int M, int N, int K) {
    static const char *names[LIN_N] = {"out", "pre_gelu", "d_in", "dW", "db"};
    size_t n[LIN_N] = {(size_t)M * N, (size_t)M * N, (size_t)M * K, (size_t)N * K, (size_t)N};
    float *r[4][LIN_N];
    for (int mode = 0; mode < 4; mode++) run_linear(mode, M, N, K, r[mode]);
    for (int j = 0; j < LIN_N; j++) {
        CHECK(memcmp(r[0][j], r[1][j], n[j] * 4) == 0);
        CHECK(memcmp(r[0][j], r[3][j], n[j] * 4) == 0); /* fused epilogue: the same bits */
        /* vs sgemm: rms of the difference relative to the rms of the values; bf16 outputs
         * differ by at most one bf16 rounding (2^-8 relative), f32 gradients far less */
        double rel = rms_rel(r[0][j], r[2][j], n[j]);
        printf("backend %s M=%d N=%d K=%d %s: engine vs sgemm rms rel diff %.2e\n", E->name, M, N, K, names[j], rel);
        CHECK(rel <= (j == LIN_DW || j == LIN_DB ? 3e-4 : 4e-3));
    }
    for (int mode = 0; mode < 4; mode++)
        for (int j = 0; j < LIN_N; j++) free(r[mode][j]);
}

/* ---- attention through the backend (cpu_attention.c in bf16 mode) ----
 * qkv (B,T,3D) and d_out (B,T,D) are bf16 values, as in bf16 mode. Reference: the exact
 * attention in double on those inputs (double softmax, no intermediate rounding). Each element
 * of out and d_qkv is checked against a first-order bound of the bf16-mode error, computed in
 * double alongside the reference, with u = 2^-8 (bf16 unit roundoff) and g(n) = n * 2^-24:
 *   - a GEMM over a reduction of n products sum_r x_r y_r whose operand x is rounded to bf16
 *     when packed (P, dS; exact for q, k, v, dO) and carries an error e_r before that:
 *     sum_r (u |x_r| + e_r) |y_r| + g(n + 2) sum_r |x_r y_r|;
 *   - P: its error is measured (the saved fp32 P against the double softmax, itself checked);
 *   - dP: g(dh + 2) sum |dO v|; rowsum(dP * P) and dS = P (dP - rowsum) propagate them;
 *   - every output (out, dq, dk, dv) rounded to bf16 once: + u |ref|;
 * and the sum is taken times 1.25 (second-order terms). The worst error/bound ratio is printed.
 * Also: 1 and 2 worker threads give the same bits, and the sgemm path
 * (cpu.attn_sgemm) agrees within bf16 tolerance. */
enum { AT_OUT, AT_P, AT_DQKV, AT_N };

static void run_attention(int threads, int bf16_attn, int B, int T, int D, int H, const float *qkv_h,
                          const float *dout_h, float *res[AT_N]) {
    sv_backend_config cfg = {.device = SV_DEVICE_CPU,
                             .compute_dtype = SV_BF16,
                             .threads = threads,
                             .cpu = {.gemm = E->name, .attn_sgemm = !bf16_attn, .f32_storage = 1}};
    sv_backend *be;
    CHECK_OK(sv_backend_create(&cfg, &be));
    CHECK(sv_cpu(be)->gemm == E);
    CHECK(sv_cpu(be)->attn_gemm == bf16_attn);
    char want[64];
    snprintf(want, sizeof want, "attn %s", bf16_attn ? E->name : "openblas");
    CHECK(strstr(sv_be_device_name(be), want) != NULL);
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D, np = (size_t)B * H * T * T;
    size_t n[AT_N] = {no, np, nq};
    float *qkv, *d_out, *buf[AT_N];
    void *scratch;
    CHECK(sv_be_attention_saved_bytes(be, B, T, D, H) >= np * 4);
    CHECK_OK(sv_be_alloc(be, nq * 4, (void **)&qkv));
    CHECK_OK(sv_be_alloc(be, no * 4, (void **)&d_out));
    CHECK_OK(sv_be_alloc(be, sv_be_attention_scratch_bytes(be, B, T, D, H), &scratch));
    for (int j = 0; j < AT_N; j++) {
        CHECK_OK(sv_be_alloc(be, n[j] * 4, (void **)&buf[j]));
        for (size_t i = 0; i < n[j]; i++) buf[j][i] = NAN; /* every output must be written */
    }
    memcpy(qkv, qkv_h, nq * 4);
    memcpy(d_out, dout_h, no * 4);
    CHECK_OK(sv_be_attention_fwd(be, buf[AT_OUT], buf[AT_P], scratch, qkv, B, T, D, H));
    CHECK_OK(sv_be_attention_bwd(be, buf[AT_DQKV], scratch, d_out, qkv, buf[AT_OUT], buf[AT_P], B, T, D, H));
    for (int j = 0; j < AT_N; j++) {
        res[j] = malloc(n[j] * 4);
        CHECK(res[j] != NULL);
        memcpy(res[j], buf[j], n[j] * 4);
        sv_be_free(be, buf[j]);
    }
    sv_be_free(be, qkv), sv_be_free(be, d_out), sv_be_free(be, scratch);
    sv_backend_destroy(be);
}

static double g_att_worst;

/* |got - ref| <= bound, and got is bf16-representable. */
static void att_expect(const char *what, int B, int T, int D, int H, size_t idx, float got, double ref, double bound) {
    double err = fabs((double)got - ref);
    if (!(err <= bound) || sv_round_bf16(got) != got) {
        fprintf(stderr, "attention B=%d T=%d D=%d H=%d %s[%zu] = %.9g, reference %.9g (bound %.3g)\n", B, T, D, H, what,
                idx, (double)got, ref, bound);
        exit(1);
    }
    if (bound > 0 && err / bound > g_att_worst) g_att_worst = err / bound;
}

/* Checks one (batch, head) pair of the bf16 GEMM results against the bounded reference. */
static void att_ref_pair(int B, int T, int D, int H, int b, int h, const float *qkv, const float *dout,
                         float *res[AT_N]) {
    const int dh = D / H, ld = 3 * D;
    const double u = 0x1p-8, e = 0x1p-24, scale = 1.0 / sqrt((double)dh), slack = 1.25;
    const float *q = qkv + (size_t)b * T * ld + (size_t)h * dh, *k = q + D, *v = q + 2 * D;
    const float *dO = dout + (size_t)b * T * D + (size_t)h * dh;
    const float *Pg = res[AT_P] + ((size_t)b * H + h) * T * T;
    const float *og = res[AT_OUT] + (size_t)b * T * D + (size_t)h * dh;
    const float *dqg = res[AT_DQKV] + (size_t)b * T * ld + (size_t)h * dh, *dkg = dqg + D, *dvg = dqg + 2 * D;
    size_t tt = (size_t)T * T;
    double *P = malloc(tt * 8), *eP = malloc(tt * 8), *dS = malloc(tt * 8), *edS = malloc(tt * 8);
    CHECK(P && eP && dS && edS);
    /* P in double; the saved fp32 P must be close to it */
    for (int i = 0; i < T; i++) {
        double mx = -INFINITY, z = 0;
        for (int j = 0; j < T; j++) {
            double s = 0;
            for (int x = 0; x < dh; x++) s += (double)q[(size_t)i * ld + x] * k[(size_t)j * ld + x];
            P[(size_t)i * T + j] = s * scale;
            if (s * scale > mx) mx = s * scale;
        }
        for (int j = 0; j < T; j++) z += P[(size_t)i * T + j] = exp(P[(size_t)i * T + j] - mx);
        for (int j = 0; j < T; j++) {
            size_t ij = (size_t)i * T + j;
            P[ij] /= z;
            eP[ij] = fabs((double)Pg[ij] - P[ij]);
            if (!(eP[ij] <= 2e-5 * (P[ij] + 1.0 / T))) {
                fprintf(stderr, "attention T=%d D=%d H=%d: P[%d][%d] = %.9g, reference %.9g\n", T, D, H, i, j,
                        (double)Pg[ij], P[ij]);
                exit(1);
            }
        }
    }
    /* out = P v, P rounded when packed */
    for (int i = 0; i < T; i++)
        for (int x = 0; x < dh; x++) {
            double s = 0, bnd = 0, mag = 0;
            for (int j = 0; j < T; j++) {
                size_t ij = (size_t)i * T + j;
                double vv = v[(size_t)j * ld + x];
                s += P[ij] * vv;
                bnd += (u * (P[ij] + eP[ij]) + eP[ij]) * fabs(vv);
                mag += P[ij] * fabs(vv);
            }
            bnd = slack * (bnd + e * (T + 2) * mag + u * fabs(s));
            att_expect("out", B, T, D, H, (size_t)i * D + x, og[(size_t)i * D + x], s, bnd);
        }
    /* dP (fp32 GEMM of bf16 values), rowsum(dP * P), dS = P (dP - rowsum) with error bounds */
    for (int i = 0; i < T; i++) {
        double dot = 0, edot = 0, dmag = 0;
        for (int j = 0; j < T; j++) {
            size_t ij = (size_t)i * T + j;
            double dp = 0, pm = 0;
            for (int x = 0; x < dh; x++) {
                double pr = (double)dO[(size_t)i * D + x] * v[(size_t)j * ld + x];
                dp += pr;
                pm += fabs(pr);
            }
            dS[ij] = dp;
            edS[ij] = e * (dh + 2) * pm; /* error of dP for now */
            dot += dp * P[ij];
            edot += edS[ij] * P[ij] + fabs(dp) * eP[ij];
            dmag += fabs(dp) * P[ij];
        }
        edot += e * (T + 2) * dmag;
        for (int j = 0; j < T; j++) {
            size_t ij = (size_t)i * T + j;
            double diff = dS[ij] - dot;
            double err = eP[ij] * fabs(diff) + P[ij] * (edS[ij] + edot) + 2 * e * P[ij] * fabs(diff);
            dS[ij] = P[ij] * diff;
            edS[ij] = err + u * (fabs(dS[ij]) + err); /* + the rounding when packed */
        }
    }
    /* dv = P^T dO, dq = scale dS k, dk = scale dS^T q */
    for (int j = 0; j < T; j++)
        for (int x = 0; x < dh; x++) {
            double sv = 0, bv = 0, mv = 0, sq = 0, bq = 0, mq = 0, sk = 0, bk = 0, mk = 0;
            for (int i = 0; i < T; i++) {
                size_t ij = (size_t)i * T + j, ji = (size_t)j * T + i;
                double o = dO[(size_t)i * D + x], kk = k[(size_t)i * ld + x], qq = q[(size_t)i * ld + x];
                sv += P[ij] * o, bv += (u * (P[ij] + eP[ij]) + eP[ij]) * fabs(o), mv += P[ij] * fabs(o);
                sq += dS[ji] * kk, bq += edS[ji] * fabs(kk), mq += fabs(dS[ji] * kk);
                sk += dS[ij] * qq, bk += edS[ij] * fabs(qq), mk += fabs(dS[ij] * qq);
            }
            size_t at = (size_t)j * ld + x;
            sq *= scale, sk *= scale;
            bv = slack * (bv + e * (T + 2) * mv + u * fabs(sv));
            bq = slack * (scale * (bq + e * (T + 3) * mq) + u * fabs(sq));
            bk = slack * (scale * (bk + e * (T + 3) * mk) + u * fabs(sk));
            att_expect("dv", B, T, D, H, at, dvg[at], sv, bv);
            att_expect("dq", B, T, D, H, at, dqg[at], sq, bq);
            att_expect("dk", B, T, D, H, at, dkg[at], sk, bk);
        }
    free(P), free(eP), free(dS), free(edS);
}

static void check_attention(int B, int T, int D, int H, uint64_t seed) {
    size_t nq = (size_t)B * T * 3 * D, no = (size_t)B * T * D, np = (size_t)B * H * T * T;
    size_t n[AT_N] = {no, np, nq};
    static const char *names[AT_N] = {"out", "P", "d_qkv"};
    float *qkv = randm(nq, seed, 1.0, 0), *dout = randm(no, seed + 1, 1.0, 0);
    float *r[3][AT_N];
    run_attention(1, 1, B, T, D, H, qkv, dout, r[0]);
    run_attention(2, 1, B, T, D, H, qkv, dout, r[1]);
    run_attention(2, 0, B, T, D, H, qkv, dout, r[2]);
    g_att_worst = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) att_ref_pair(B, T, D, H, b, h, qkv, dout, r[0]);
    printf("attention %s B=%d T=%d D=%d H=%d: worst error %.3f of the bound", E->name, B, T, D, H, g_att_worst);
    for (int j = 0; j < AT_N; j++) {
        CHECK(memcmp(r[0][j], r[1][j], n[j] * 4) == 0);
        double rel = rms_rel(r[0][j], r[2][j], n[j]);
        printf(", %s vs sgemm rms rel %.1e", names[j], rel);
        /* P: fp32 sums in a different order; out, d_qkv: P/dS rounded to bf16 + bf16 outputs */
        CHECK(rel <= (j == AT_P ? 1e-5 : 8e-3));
    }
    printf("\n");
    for (int m = 0; m < 3; m++)
        for (int j = 0; j < AT_N; j++) free(r[m][j]);
    free(qkv), free(dout);
}

static void check_engine(void) {
    /* odd and edge sizes: (M, N, K) of the linear layer */
    static const int small[][3] = {{1, 1, 1},      {7, 7, 7},       {31, 33, 65}, {33, 31, 7},  {65, 191, 33},
                                   {191, 65, 192}, {1, 577, 31},    {577, 1, 2},  {8, 32, 256}, {9, 33, 257},
                                   {129, 95, 513}, {200, 192, 577}, {16, 48, 3},  {257, 64, 1}};
    /* real shapes: vit-28 (M = 3200 rows per rank), vit-ti16 / s16 (M = 16*197) */
    static const int real[][3] = {
        {3200, 576, 192},
        {3200, 768, 192},
        {3200, 192, 768},
        {3152, 1152, 384},
        {3152, 384, 1536},
        /* amx-bf16's blocked path (nt and nn: C over 1 MiB, reduction over 256): partial panels
         * and strips, packed A (K = 600) and A read in place (K = 1024, last row block 16 rows) */
        {1100, 333, 600},
        {1040, 300, 1024}};
    uint64_t seed = 10;
    for (int L = 0; L < 3; L++) {
        for (size_t s = 0; s < sizeof small / sizeof small[0]; s++, seed += 3)
            check_case(L, small[s][0], small[s][1], small[s][2], 0, seed);
        for (size_t s = 0; s < sizeof real / sizeof real[0]; s++, seed += 3)
            check_case(L, real[s][0], real[s][1], real[s][2], 0, seed);
        /* inputs that are not bf16-representable are rounded to nearest even when packed */
        check_case(L, 45, 70, 99, 1, seed += 3);
        printf("%s %s: ok (worst error %.3f of the bound)\n", E->name, k_names[L], g_worst);
        g_worst = 0;
    }
    check_accumulate();
    check_accumulate_long();
    check_denormals();
    check_backend(1000, 96, 200);  /* rows split across 2 workers */
    check_backend(5000, 64, 840);  /* dW: packed `in` exceeds the pack buffer, reduction in chunks */
    check_backend(40, 2080, 2050); /* forward and d_in: packed W exceeds the pack buffer */
    /* attention: vit-28 (dh 64 and 32), vit-ti16 (T 197); odd dh and T (padding, masks), T past
     * one A block of rows (64) and past one reduction block of 256 pairs (T = 577: 289 pairs) */
    static const int att[][4] = {{4, 50, 192, 3}, {4, 50, 128, 4}, {2, 197, 192, 3}, {3, 7, 15, 3},  {1, 1, 8, 2},
                                 {2, 33, 40, 5},  {1, 130, 48, 3}, {1, 257, 32, 2},  {1, 577, 32, 2}};
    for (size_t s = 0; s < sizeof att / sizeof att[0]; s++, seed += 2)
        check_attention(att[s][0], att[s][1], att[s][2], att[s][3], seed);
}

int main(void) {
    static const sv_gemm_engine *const engines[] = {&sv_gemm_engine_amx_bf16, &sv_gemm_engine_avx512_bf16};
    int ran = 0;
    for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
        E = engines[e];
        char why[160] = "";
        if (E == &sv_gemm_engine_amx_bf16 ? !sv_gemm_amx_permission(why, sizeof why) : !E->available()) {
            printf("SKIP engine %s: %s\n", E->name, why[0] ? why : "this CPU lacks AVX-512 BF16 (avx512_bf16)");
            continue;
        }
        check_engine();
        if (E == &sv_gemm_engine_avx512_bf16) check_blockings();
        printf("engine %s: ok\n", E->name);
        ran++;
    }
    if (!ran) SKIP("no bf16 GEMM engine runs on this CPU (needs AVX-512 BF16 or AMX-BF16)");
    printf("ok\n");
    return 0;
}
