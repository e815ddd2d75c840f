/* Benchmark of the GEMM engines (model/backend/cpu/gemm_engine.h: avx512-f32, avx2-f32, and the
 * bf16 engines amx-bf16, avx512-bf16) against OpenBLAS sgemm, single thread, packing included.
 * Never run as a test.
 * Usage: gemm_f32_bench [REPS] [SHAPE-FILTER | LAYOUT:M,N,K]
 *   Environment: GEMM_BENCH_ENGINES=name,name,... (default: all four engines);
 *   GEMM_BENCH_RUN_ONLY=1 times the engine's `run` alone (B packed once before the timing);
 *   GEMM_BENCH_NO_BLAS=1 skips OpenBLAS (for profiling an engine);
 *   GEMM_BENCH_BF16=1 hands the bf16 engines bf16 operands (sv_gemm_h16 views of the same values
 *   rounded to bf16), as the CPU backend's bf16 storage does, instead of fp32 arrays to round.
 *   REPS: timed repetitions per case, the best is reported (default 7); the filter keeps the
 *   cases whose label contains the string (e.g. "1024", "fwd", "M=6400"); LAYOUT:M,N,K (LAYOUT
 *   fwd, din or dW) runs that one case instead. An unknown engine or layout name, or a malformed
 *   REPS or LAYOUT:M,N,K, is refused (exit 2). An engine this CPU lacks is skipped with a line
 *   naming the missing feature; without OpenBLAS (GEMM_BENCH_NO_BLAS=1) its columns read n/a.
 * Cases: 1024^3 C = A B^T, and the linear layers of ViT shapes, in the three layouts:
 *   fwd  out(M,N) = in(M,K) W(N,K)^T      (both reduction-contiguous)
 *   din  d_in(M,K) = d_out(M,N) W(N,K)    (B = W reduction-strided)
 *   dW   dW(N,K) += d_out(M,N)^T in(M,K)  (both reduction-strided, reduction M)
 * GFLOP/s = 2 * rows * cols * red / best time; %pk = the best engine's share of its own
 * instruction's in-register peak (isa_peak.h). The bf16 engines round their operands to bf16,
 * so their rows measure the bf16 mode's GEMMs. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "model/backend/cpu/gemm_engine.h"
#include "model/backend/cpu/gemm_f32.h"
#include "model/backend/cpu/isa_peak.h"

#define NENG 4

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *randm(size_t n, uint64_t key) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) exit(1);
    for (size_t i = 0; i < n; i++) p[i] = (float)(0.1 * sv_rand_normal(key, i));
    return p;
}

enum { FWD, DIN, DW };
static const char *k_lay[] = {"fwd", "din", "dW"};

typedef struct {
    int L, M, N, K;
} shape;

/* Best time of reps calls of engine e (e == NULL: OpenBLAS) on one case. */
static int g_run_only;

/* GEMM_BENCH_BF16: bf16 copies of in, W, dout, used by the bf16 engines. */
static const float *g_f[3];
static uint16_t *g_h[3];
static const sv_gemm_engine *g_e;

static sv_gemm_mat mat(const float *p, size_t ld, int red_contig) {
    for (int i = 0; i < 3; i++)
        if (g_h[i] && g_e && g_e->bf16 && p == g_f[i]) return sv_gemm_h16(g_h[i], ld, red_contig);
    return sv_gemm_f32(p, ld, red_contig);
}

static uint16_t *to_bf16(const float *f, size_t n) {
    uint16_t *h = aligned_alloc(64, (n * 2 + 63) / 64 * 64);
    if (!h) exit(1);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], 4);
        h[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); /* round to nearest even */
    }
    return h;
}

static double time_case(const sv_gemm_engine *e, const shape *s, const float *in, const float *W, const float *dout,
                        float *C, void *pack, void *scratch, int reps) {
    const int M = s->M, N = s->N, K = s->K;
    double best = 1e30;
    g_e = e;
    if (e && g_run_only) {
        if (s->L == FWD)
            e->pack(pack, mat(W, (size_t)K, 1), N, K, 0, N);
        else if (s->L == DIN)
            e->pack(pack, mat(W, (size_t)K, 0), K, N, 0, K);
        else
            e->pack(pack, mat(in, (size_t)K, 0), K, M, 0, K);
    }
    for (int it = 0; it < reps + 1; it++) { /* the first call warms caches and pages */
        double t0 = now();
        if (e && g_run_only) {
            if (s->L == FWD)
                e->run(C, (size_t)N, mat(in, (size_t)K, 1), M, pack, N, K, 0, scratch);
            else if (s->L == DIN)
                e->run(C, (size_t)K, mat(dout, (size_t)N, 1), M, pack, K, N, 0, scratch);
            else
                e->run(C, (size_t)K, mat(dout, (size_t)N, 0), N, pack, K, M, 1, scratch);
        } else if (e) {
            if (s->L == FWD)
                sv_gemm_engine_gemm(e, C, (size_t)N, mat(in, (size_t)K, 1), M, mat(W, (size_t)K, 1), N, K, 0, pack,
                                    scratch);
            else if (s->L == DIN)
                sv_gemm_engine_gemm(e, C, (size_t)K, mat(dout, (size_t)N, 1), M, mat(W, (size_t)K, 0), K, N, 0, pack,
                                    scratch);
            else
                sv_gemm_engine_gemm(e, C, (size_t)K, mat(dout, (size_t)N, 0), N, mat(in, (size_t)K, 0), K, M, 1, pack,
                                    scratch);
        } else {
            if (s->L == FWD)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.f, in, K, W, K, 0.f, C, N);
            else if (s->L == DIN)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.f, dout, N, W, K, 0.f, C, K);
            else
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.f, dout, N, in, K, 1.f, C, K);
        }
        double t = now() - t0;
        if (it > 0 && t < best) best = t;
    }
    return best;
}

static const char k_usage[] =
    "usage: gemm_f32_bench [REPS] [SHAPE-FILTER | LAYOUT:M,N,K]   (LAYOUT fwd, din or dW)\n"
    "  env GEMM_BENCH_ENGINES=name,... (amx-bf16, avx512-bf16, avx512-f32, avx2-f32; default all),\n"
    "  GEMM_BENCH_RUN_ONLY=1, GEMM_BENCH_NO_BLAS=1, GEMM_BENCH_BF16=1\n";

/* Why engine e does not run here: the CPU features it needs that this CPU lacks (the same checks
 * as the engines' available()), or AMX's own reason. */
static void missing_feature(const sv_gemm_engine *e, char *why, size_t n) {
    snprintf(why, n, "not available on this CPU");
#if defined(__x86_64__) && defined(__GNUC__)
    if (e == &sv_gemm_engine_amx_bf16) {
        sv_gemm_amx_permission(why, n);
        return;
    }
    __builtin_cpu_init();
    const struct {
        const char *name;
        int have;
    } f[] = {{"avx512f", __builtin_cpu_supports("avx512f")},
             {"avx512bw", __builtin_cpu_supports("avx512bw")},
             {"avx512dq", __builtin_cpu_supports("avx512dq")},
             {"avx512vl", __builtin_cpu_supports("avx512vl")},
             {"avx512bf16", __builtin_cpu_supports("avx512bf16")},
             {"avx2", __builtin_cpu_supports("avx2")},
             {"fma", __builtin_cpu_supports("fma")}};
    const char *need = e == &sv_gemm_engine_avx512_f32 ? "avx512f avx512bw avx512dq avx512vl fma"
        : e == &sv_gemm_engine_avx2_f32                ? "avx2 fma"
        : e == &sv_gemm_engine_avx512_bf16             ? "avx512f avx512bw avx512vl avx512bf16"
                                                       : "";
    char list[128] = "";
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const char *p = strstr(need, f[i].name);
        size_t l = strlen(f[i].name);
        if (f[i].have || !p || (p[l] && p[l] != ' ')) continue;
        size_t u = strlen(list);
        snprintf(list + u, sizeof list - u, "%s%s", u ? ", " : "", f[i].name);
    }
    if (list[0]) snprintf(why, n, "this CPU lacks %s", list);
#else
    (void)e;
    snprintf(why, n, "not built for this architecture (x86-64 only)");
#endif
}

static int parse_pos_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1 || v > 1000000000) return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(k_usage, stdout);
        return 0;
    }
    if (argc > 3) {
        fprintf(stderr, "gemm_f32_bench: too many arguments\n%s", k_usage);
        return 2;
    }
    int reps = 7;
    if (argc > 1 && !parse_pos_int(argv[1], &reps)) {
        fprintf(stderr, "gemm_f32_bench: REPS must be a positive integer (got '%s')\n%s", argv[1], k_usage);
        return 2;
    }
    const char *filter = argc > 2 ? argv[2] : NULL;
    openblas_set_num_threads(1);

    shape cases[64];
    int nc = 0;
    if (filter && strchr(filter, ':')) { /* LAYOUT:M,N,K (no case label has a colon) */
        const char *colon = strchr(filter, ':');
        size_t ll = (size_t)(colon - filter);
        int L = -1;
        for (int i = 0; i < 3; i++)
            if (strlen(k_lay[i]) == ll && !strncmp(filter, k_lay[i], ll)) L = i;
        if (L < 0) {
            fprintf(stderr, "gemm_f32_bench: unknown layout '%.*s' in '%s' (fwd, din or dW)\n", (int)ll, filter,
                    filter);
            return 2;
        }
        int cm, cn, ck, used = 0;
        if (sscanf(colon + 1, "%d,%d,%d%n", &cm, &cn, &ck, &used) != 3 || colon[1 + used] || cm < 1 || cn < 1 ||
            ck < 1) {
            fprintf(stderr, "gemm_f32_bench: '%s' is not LAYOUT:M,N,K with positive M, N, K\n", filter);
            return 2;
        }
        cases[nc++] = (shape){L, cm, cn, ck};
        filter = NULL;
    } else {
        cases[nc++] = (shape){FWD, 1024, 1024, 1024};
        cases[nc++] = (shape){DIN, 1024, 1024, 1024};
        cases[nc++] = (shape){DW, 1024, 1024, 1024};
        const int Ms[] = {6400, 6304};                                        /* B*50 (B=128), B*197 (B=32) */
        const int NK[][2] = {{576, 192}, {192, 192}, {768, 192}, {192, 768}}; /* qkv, proj, fc1, fc2 */
        for (int mi = 0; mi < 2; mi++)
            for (int j = 0; j < 4; j++)
                for (int L = 0; L < 3; L++) cases[nc++] = (shape){L, Ms[mi], NK[j][0], NK[j][1]};
    }

    const sv_gemm_engine *all[NENG] = {&sv_gemm_engine_avx512_f32, &sv_gemm_engine_avx2_f32, &sv_gemm_engine_amx_bf16,
                                       &sv_gemm_engine_avx512_bf16};
    const sv_gemm_engine *eng[NENG];
    int ne = 0, wanted[NENG] = {0};
    const char *want = getenv("GEMM_BENCH_ENGINES");
    g_run_only = getenv("GEMM_BENCH_RUN_ONLY") && atoi(getenv("GEMM_BENCH_RUN_ONLY"));
    const int no_blas = getenv("GEMM_BENCH_NO_BLAS") && atoi(getenv("GEMM_BENCH_NO_BLAS"));
    if (want && *want) { /* every name must be an engine of gemm_engine.h that this bench times */
        for (const char *p = want; *p;) {
            size_t l = strcspn(p, ",");
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), p);
            const sv_gemm_engine *e = sv_gemm_engine_by_name(name);
            int k = -1;
            for (int i = 0; e && i < NENG; i++)
                if (all[i] == e) k = i;
            if (k < 0 || l >= sizeof name) {
                fprintf(stderr,
                        "gemm_f32_bench: unknown engine '%.*s' in GEMM_BENCH_ENGINES (engines: %s, %s, %s, %s)\n",
                        (int)l, p, all[0]->name, all[1]->name, all[2]->name, all[3]->name);
                return 2;
            }
            wanted[k] = 1;
            p += l + (p[l] == ',');
        }
    } else
        for (int i = 0; i < NENG; i++) wanted[i] = 1;
    for (int i = 0; i < NENG; i++) {
        if (!wanted[i]) continue;
        if (!all[i]->available()) { /* skipped, with the reason (docs/backend_cpu.md) */
            char why[160];
            missing_feature(all[i], why, sizeof why);
            printf("%s: skipped, %s\n", all[i]->name, why);
            continue;
        }
        eng[ne++] = all[i];
    }
    if (!ne && no_blas) {
        fprintf(stderr, "gemm_f32_bench: nothing to time (no engine runs here and GEMM_BENCH_NO_BLAS=1)\n");
        return 2;
    }
    double pk[NENG];
    for (int i = 0; i < ne; i++) pk[i] = sv_cpu_isa_peak_flops(eng[i]->name, 0.3);

    size_t maxa = 0, maxp = 0, maxs = 0;
    for (int c = 0; c < nc; c++) {
        size_t mn = (size_t)cases[c].M * cases[c].N, mk = (size_t)cases[c].M * cases[c].K,
               nk = (size_t)cases[c].N * cases[c].K;
        size_t a = mn > mk ? mn : mk;
        if (nk > a) a = nk;
        if (a > maxa) maxa = a;
        for (int i = 0; i < ne; i++) {
            size_t p = eng[i]->pack_bytes(cases[c].N, cases[c].K);
            size_t q = eng[i]->pack_bytes(cases[c].K, cases[c].N), u = eng[i]->pack_bytes(cases[c].K, cases[c].M);
            if (q > p) p = q;
            if (u > p) p = u;
            if (p > maxp) maxp = p;
        }
    }
    for (int i = 0; i < ne; i++)
        if (eng[i]->scratch_bytes > maxs) maxs = eng[i]->scratch_bytes;
    float *in = randm(maxa, 1), *W = randm(maxa, 2), *dout = randm(maxa, 3), *C = randm(maxa, 4);
    if (getenv("GEMM_BENCH_BF16") && atoi(getenv("GEMM_BENCH_BF16"))) {
        g_f[0] = in, g_f[1] = W, g_f[2] = dout;
        for (int i = 0; i < 3; i++) g_h[i] = to_bf16(g_f[i], maxa);
    }
    void *pack = aligned_alloc(64, (maxp + 63) / 64 * 64), *scratch = aligned_alloc(64, (maxs + 63) / 64 * 64);
    if (!pack || !scratch) return 1;
    memset(pack, 0, maxp);

    printf("single thread, best of %d, GFLOP/s (%s)", reps,
           g_run_only ? "engine run only, B packed before" : "packing included");
    if (ne) printf("; in-register peaks, GFLOP/s:");
    for (int i = 0; i < ne; i++) printf(" %s %.1f", eng[i]->name, pk[i] * 1e-9);
    if (g_h[0]) printf("\nbf16 engines read bf16 operands (GEMM_BENCH_BF16=1)");
    printf("\n%-28s", "case");
    for (int i = 0; i < ne; i++) printf(" %11s %5s", eng[i]->name, "%pk");
    printf(" %11s %8s\n", "openblas", "best/blas");
    for (int c = 0; c < nc; c++) {
        const shape *s = &cases[c];
        char label[64];
        snprintf(label, sizeof label, "%s M=%d N=%d K=%d", k_lay[s->L], s->M, s->N, s->K);
        if (filter && !strstr(label, filter)) continue;
        double flop = 2.0 * s->M * s->N * s->K, best = 0;
        printf("%-28s", label);
        for (int i = 0; i < ne; i++) {
            double g = flop / time_case(eng[i], s, in, W, dout, C, pack, scratch, reps) * 1e-9;
            if (g > best && !eng[i]->bf16) best = g; /* best/blas: fp32 engines only (same precision) */
            printf(" %11.1f %5.1f", g, pk[i] > 0 ? 100.0 * g * 1e9 / pk[i] : 0.0);
        }
        if (no_blas) {
            printf(" %11s %8s\n", "n/a", "n/a");
        } else {
            double gb = flop / time_case(NULL, s, in, W, dout, C, pack, scratch, reps) * 1e-9;
            if (best > 0)
                printf(" %11.1f %8.2f\n", gb, best / gb);
            else /* no fp32 engine timed: nothing of the same precision to compare */
                printf(" %11.1f %8s\n", gb, "n/a");
        }
        fflush(stdout);
    }
    for (int i = 0; i < 3; i++) free(g_h[i]);
    free(in), free(W), free(dout), free(C), free(pack), free(scratch);
    return 0;
}
