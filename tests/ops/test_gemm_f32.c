/* The fp32 GEMM engines (model/backend/cpu/gemm_f32.h: avx512-f32, avx2-f32), each in turn, on
 * the operand layouts of the linear layers (C = A B with A (rows, red), B (red, cols) as strided
 * views, see gemm_engine.h):
 *   nt  out(M,N)   = in(M,K) W(N,K)^T       A red-contiguous,  B red-contiguous
 *   nn  d_in(M,K)  = d_out(M,N) W(N,K)      A red-contiguous,  B red-strided
 *   tn  dW(N,K)   += d_out(M,N)^T in(M,K)   A red-strided,     B red-strided
 * (and the fourth combination, A red-strided with B red-contiguous), at odd sizes and at ViT
 * shapes, with padded leading dimensions.
 *
 * Each element is checked two ways:
 *  - against a double-precision reference within R * 2^-24 * (|C0| + sum_k |a_k b_k|) * 1.01.
 *    With FMA every product enters its addition exactly, so the engine computes the recursive
 *    sum of C0 and R products with R roundings of relative size <= u = 2^-24; its error is at
 *    most gamma_R = R u / (1 - R u) times the sum of magnitudes. For R <= 2^16 (all cases here)
 *    1 / (1 - R u) < 1.004, and the double reference is off by at most R 2^-53 of the same sum,
 *    so 1.01 covers both; a wrong product or a lost term is far outside.
 *  - bitwise against the contract itself: c = fmaf(a_k, b_k, c) for k = 0, 1, ... starting
 *    from C0 (accumulate) or +0.
 * Full row groups of A are read in place by the AVX-512 engine and packed otherwise; both
 * paths meet the same checks. Also: bitwise identity when rows are computed in slices (separate run calls, as worker
 * threads do) and when B is packed in column ranges by several pack calls; reduction chunks
 * (a multiple of red_block, then accumulate) equal one call bitwise; r == 0 zeroes C or leaves it
 * (accumulate); m == 0 / n == 0 touch nothing; C outside the m x n region (ldc > n, rows around
 * it), the pack buffer past pack_bytes and the scratch past scratch_bytes are untouched; A and B
 * end at a guard page, so a read past an operand faults. An engine this CPU lacks is reported
 * with a SKIP line naming the missing feature; exit 77 only when neither runs here. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "core/rng.h"
#include "model/backend/cpu/gemm_f32.h"

static const sv_gemm_engine *E; /* the engine under test */

#define SENT 0x7FC0DEADu /* a NaN pattern that the engines never produce */

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    CHECK(p != NULL);
    return p;
}

/* n floats ending exactly at a PROT_NONE page (an operand overread faults). */
typedef struct {
    void *base;
    size_t len;
    float *p;
} guarded;
static guarded galloc(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float), len = (bytes + pg - 1) / pg * pg + pg;
    guarded g;
    g.base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(g.base != MAP_FAILED);
    CHECK(mprotect((char *)g.base + len - pg, pg, PROT_NONE) == 0);
    g.len = len;
    g.p = (float *)((char *)g.base + len - pg - bytes);
    return g;
}
static void gfree(guarded g) { munmap(g.base, g.len); }

typedef struct {
    int rows, cols, red;
    int a_contig, b_contig;
    int pad_a, pad_b, pad_c; /* leading dimension = minimum + pad */
    int accumulate;
} gcase;

static double g_worst; /* largest error / bound seen */
static long g_cases;

static const char *lay(const gcase *t) {
    return t->a_contig ? (t->b_contig ? "nt" : "nn") : (t->b_contig ? "tc" : "tn");
}

/* One engine call: pack all columns, then rows [0, rows) in one run. */
static void gemm(float *C, size_t ldc, sv_gemm_mat A, int m, sv_gemm_mat B, int n, int r, int acc, void *pack,
                 void *scratch) {
    E->pack(pack, B, n, r, 0, n);
    E->run(C, ldc, A, m, pack, n, r, acc, scratch);
}

static void check_case(const gcase *t, uint64_t seed) {
    const int rows = t->rows, cols = t->cols, red = t->red;
    const size_t lda = (size_t)(t->a_contig ? red : rows) + t->pad_a,
                 ldb = (size_t)(t->b_contig ? red : cols) + t->pad_b;
    const size_t ldc = (size_t)cols + t->pad_c;
    const size_t na = t->a_contig ? (size_t)rows * lda : (size_t)red * lda;
    const size_t nb = t->b_contig ? (size_t)cols * ldb : (size_t)red * ldb;
    guarded ga = galloc(na), gb = galloc(nb);
    float *A = ga.p, *B = gb.p;
    for (size_t i = 0; i < na; i++) A[i] = (float)sv_rand_normal(seed, i);
    for (size_t i = 0; i < nb; i++) B[i] = (float)(0.1 * sv_rand_normal(seed + 1, i));
    const sv_gemm_mat a = sv_gemm_f32(A, lda, t->a_contig), b = sv_gemm_f32(B, ldb, t->b_contig);
#define AT(i, k) (t->a_contig ? A[(size_t)(i)*lda + (k)] : A[(size_t)(k)*lda + (i)])
#define BT(j, k) (t->b_contig ? B[(size_t)(j)*ldb + (k)] : B[(size_t)(k)*ldb + (j)])

    /* C with two guard rows above and below, and ldc - cols guard columns */
    const size_t guard = 2 * ldc, nc = guard + (size_t)rows * ldc + guard;
    float *Cb = xalloc(nc * 4), *C2b = xalloc(nc * 4), *C0 = xalloc((size_t)rows * cols * 4 + 4);
    float *C = Cb + guard, *C2 = C2b + guard;
    for (size_t i = 0; i < nc; i++) Cb[i] = from_bits(SENT);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            C0[(size_t)i * cols + j] = (float)(0.5 * sv_rand_normal(seed + 2, (size_t)i * cols + j));
            /* without accumulate C must be overwritten, never read: NaN would leak */
            C[(size_t)i * ldc + j] = t->accumulate ? C0[(size_t)i * cols + j] : NAN;
        }
    memcpy(C2b, Cb, nc * 4);

    const size_t pbytes = E->pack_bytes(cols, red);
    unsigned char *pack = xalloc(pbytes + 64), *scratch = xalloc(E->scratch_bytes + 64);
    memset(pack, 0xA5, pbytes + 64);
    memset(scratch, 0x5A, E->scratch_bytes + 64);
    gemm(C, ldc, a, rows, b, cols, red, t->accumulate, pack, scratch);
    for (int q = 0; q < 64; q++) CHECK(pack[pbytes + q] == 0xA5 && scratch[E->scratch_bytes + q] == 0x5A);

    /* every element against the double reference and against the fmaf chain of the contract */
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            float c0 = t->accumulate ? C0[(size_t)i * cols + j] : 0.0f, cf = c0;
            double s = c0, mag = fabs(c0);
            for (int k = 0; k < red; k++) {
                float x = AT(i, k), y = BT(j, k);
                double p = (double)x * y;
                s += p;
                mag += fabs(p);
                cf = fmaf(x, y, cf);
            }
            double bound = 1.01 * red * 0x1p-24 * mag;
            float got = C[(size_t)i * ldc + j];
            double err = fabs((double)got - s);
            if (!(err <= bound) || bits(got) != bits(cf)) {
                fprintf(stderr,
                        "%s %s rows=%d cols=%d red=%d acc=%d: C[%d][%d] = %.9g (0x%08x), fmaf chain %.9g (0x%08x), "
                        "double %.9g (bound %.3g)\n",
                        E->name, lay(t), rows, cols, red, t->accumulate, i, j, got, bits(got), cf, bits(cf), s, bound);
                exit(1);
            }
            if (bound > 0 && err / bound > g_worst) g_worst = err / bound;
        }
    }
    /* nothing outside the m x n region */
    for (size_t i = 0; i < nc; i++) {
        long rel = (long)i - (long)guard;
        int inside = rel >= 0 && rel < (long)rows * (long)ldc && (size_t)rel % ldc < (size_t)cols;
        if (!inside && bits(Cb[i]) != SENT) {
            fprintf(stderr, "%s %s rows=%d cols=%d red=%d: wrote outside C at offset %ld\n", E->name, lay(t), rows,
                    cols, red, rel);
            exit(1);
        }
    }

    /* bitwise: B packed in column ranges (uneven multiples of nr, in reverse order), rows in
     * uneven slices, each slice its own run call */
    unsigned char *pack2 = xalloc(pbytes + 64);
    memset(pack2, 0x3C, pbytes + 64);
    int nr = E->nr, bounds[] = {0, nr, 3 * nr, 4 * nr, 7 * nr, 1 << 30};
    for (int s = 4; s >= 0; s--) {
        int j0 = bounds[s], j1 = bounds[s + 1] < cols ? bounds[s + 1] : cols;
        if (j0 < cols) E->pack(pack2, b, cols, red, j0, j1);
    }
    CHECK(memcmp(pack, pack2, pbytes) == 0);
    int cuts[] = {0, 1, 5, 18, 151, 400, 1 << 30};
    for (int s = 0; s + 1 < (int)(sizeof cuts / sizeof cuts[0]); s++) {
        int r0 = cuts[s] < rows ? cuts[s] : rows, r1 = cuts[s + 1] < rows ? cuts[s + 1] : rows;
        if (r1 <= r0) continue;
        sv_gemm_mat as = a;
        as.p += a.red_contig ? (size_t)r0 * a.ld : (size_t)r0;
        E->run(C2 + (size_t)r0 * ldc, ldc, as, r1 - r0, pack2, cols, red, t->accumulate, scratch);
    }
    CHECK(memcmp(Cb, C2b, nc * 4) == 0);

    /* bitwise: the reduction in chunks (each a multiple of red_block but the last), each packed
     * on its own, later chunks accumulating */
    const int rb = E->red_block;
    int chunk = red / 3 / rb * rb;
    if (chunk < rb) chunk = rb;
    memcpy(C2b, Cb, nc * 4);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) C2[(size_t)i * ldc + j] = t->accumulate ? C0[(size_t)i * cols + j] : NAN;
    for (int r0 = 0; r0 < red; r0 += chunk) {
        int rl = red - r0 < chunk ? red - r0 : chunk;
        sv_gemm_mat ac = a, bc = b;
        ac.p += a.red_contig ? (size_t)r0 : (size_t)r0 * a.ld;
        bc.p += b.red_contig ? (size_t)r0 : (size_t)r0 * b.ld;
        CHECK(E->pack_bytes(cols, rl) <= pbytes);
        gemm(C2, ldc, ac, rows, bc, cols, rl, t->accumulate || r0 > 0, pack2, scratch);
    }
    CHECK(memcmp(Cb, C2b, nc * 4) == 0);

    free(Cb), free(C2b), free(C0), free(pack), free(pack2), free(scratch);
    gfree(ga), gfree(gb);
    g_cases++;
#undef AT
#undef BT
}

/* The four operand layouts (nt, nn, tn, and A strided with B contiguous), with and without
 * padded leading dimensions; accumulate as the linear layers use it (tn) plus the others. */
static void check_all_layouts(int rows, int cols, int red, uint64_t seed) {
    for (int l = 0; l < 4; l++) {
        gcase t = {rows, cols, red, l < 2, l == 0 || l == 3, 0, 0, 0, l == 2};
        check_case(&t, seed + 10 * l);
        t.pad_a = 3, t.pad_b = 5, t.pad_c = 7, t.accumulate = !t.accumulate;
        check_case(&t, seed + 10 * l + 5);
    }
}

/* r == 0 zeroes C (or leaves it with accumulate); m == 0 or n == 0 touch nothing. */
static void check_empty(void) {
    enum { R = 9, N = 37, LD = 40 };
    float C[(R + 2) * LD], ref[(R + 2) * LD], A[4] = {1, 2, 3, 4}, B[4] = {1, 2, 3, 4};
    void *pack = xalloc(E->pack_bytes(N, 1) + 64), *scratch = xalloc(E->scratch_bytes);
    for (int i = 0; i < (R + 2) * LD; i++) C[i] = ref[i] = (float)i;
    sv_gemm_mat a = sv_gemm_f32(A, 1, 1), b = sv_gemm_f32(B, 1, 1);
    CHECK(E->pack_bytes(N, 0) == 0 && E->pack_bytes(0, 5) == 0);
    E->pack(pack, b, N, 0, 0, N);
    E->run(C + LD, LD, a, R, pack, N, 0, 1, scratch); /* accumulate: unchanged */
    CHECK(memcmp(C, ref, sizeof C) == 0);
    E->run(C + LD, LD, a, R, pack, N, 0, 0, scratch); /* zeroed, exactly the R x N region */
    for (int i = 0; i < (R + 2) * LD; i++) {
        int row = i / LD - 1, col = i % LD;
        CHECK(C[i] == (row >= 0 && row < R && col < N ? 0.0f : ref[i]));
    }
    memcpy(C, ref, sizeof C);
    E->run(C + LD, LD, a, 0, pack, N, 1, 0, scratch);
    E->run(C + LD, LD, a, R, pack, 0, 1, 0, scratch);
    CHECK(memcmp(C, ref, sizeof C) == 0);
    free(pack), free(scratch);
}

static void check_engine(void) {
    g_worst = 0, g_cases = 0;
    check_empty();
    /* odd sizes in each role (tiles, masked columns, row groups, reduction blocks) */
    const int odd[] = {1, 7, 31, 33, 65, 191, 192, 257, 577};
    for (int s = 0; s < (int)(sizeof odd / sizeof odd[0]); s++) {
        int v = odd[s];
        check_all_layouts(v, 33, 65, 100 + s);
        check_all_layouts(31, v, 7, 200 + s);
        check_all_layouts(13, 17, v, 300 + s);
    }
    check_all_layouts(257, 191, 577, 400);
    check_all_layouts(577, 65, 300, 410);
    /* rows of a reduction-contiguous A 4 KiB apart (packed, not read in place) and 4 KiB + 12 B
     * apart (the padded variant: read in place) */
    check_all_layouts(37, 40, 1024, 420);
    /* ViT shapes: rows 2*197 and 3*50, 10 classes, patch of 48 pixels, D = 192, 3D, 4D; one
     * attention head at T = 197 and 50 (QK^T: N = T, K = 64; PV: N = 64, K = T) */
    const int vit[][3] = {{394, 10, 192},  {150, 192, 48}, {394, 576, 192}, {150, 768, 192}, {150, 192, 768},
                          {394, 192, 192}, {197, 197, 64}, {197, 64, 197},  {50, 50, 64},    {50, 64, 50}};
    for (int s = 0; s < (int)(sizeof vit / sizeof vit[0]); s++) {
        int M = vit[s][0], N = vit[s][1], K = vit[s][2];
        gcase fwd = {M, N, K, 1, 1, 0, 0, 0, 0}, din = {M, K, N, 1, 0, 0, 0, 0, 0}, dw = {N, K, M, 0, 0, 0, 0, 0, 1};
        check_case(&fwd, 500 + 3 * s);
        check_case(&din, 501 + 3 * s);
        check_case(&dw, 502 + 3 * s);
    }
    printf("%s: %ld cases OK (nr %d, red_block %d, scratch %zu bytes), worst error / bound %.3f\n", E->name, g_cases,
           E->nr, E->red_block, E->scratch_bytes, g_worst);
}

int main(void) {
    const sv_gemm_engine *engines[] = {&sv_gemm_engine_avx512_f32, &sv_gemm_engine_avx2_f32};
    const char *needs[] = {"AVX-512F/BW/DQ/VL + FMA", "AVX2 + FMA"};
    int ran = 0;
    for (int e = 0; e < 2; e++) {
        E = engines[e];
        if (!E->available()) {
            fprintf(stderr, "*** SKIP: engine %s NOT TESTED: this CPU lacks %s ***\n", E->name, needs[e]);
            continue;
        }
        check_engine();
        ran++;
    }
    if (!ran) SKIP("no fp32 GEMM engine runs on this CPU");
    return 0;
}
