/* Per-core ISA peak (model/backend/cpu/isa_peak.h) and the engine-name parse of CPU device names.
 *
 * Functional checks only, none that a loaded machine could fail: every engine this CPU has gives
 * a positive, finite figure of the right order of magnitude for the clock (between a quarter of
 * a pessimistic and twice an optimistic instructions-per-cycle x FLOP-per-instruction x GHz,
 * GHz from /proc/cpuinfo "cpu MHz" and, where present, cpufreq's maximum), AMX beats VDPBF16PS
 * (their ratio is ~30x on the hardware, so load cannot invert it); engines the CPU lacks return 0
 * (one SKIP line each); unknown names return 0. The figures are printed for the log. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "model/backend/cpu/isa_peak.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

int sv_gemm_amx_permission(char *why, size_t n); /* gemm_amx.c */

static double ghz_nominal = 0, ghz_max = 0;

static void read_clock(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        double mhz;
        if (!strncmp(line, "cpu MHz", 7) && sscanf(strchr(line, ':') ? strchr(line, ':') + 1 : "", "%lf", &mhz) == 1) {
            ghz_nominal = mhz / 1000;
            break;
        }
    }
    if (f) fclose(f);
    ghz_max = ghz_nominal;
    f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
    double khz;
    if (f && fscanf(f, "%lf", &khz) == 1 && khz / 1e6 > ghz_max) ghz_max = khz / 1e6;
    if (f) fclose(f);
    /* a current (not nominal) clock can read low on an idle core with frequency scaling */
    if (ghz_nominal > 0 && ghz_max < 4.0) ghz_max = 4.0;
}

/* What this test believes the CPU has, checked independently of the library. */
static int cpu_has(const char *engine) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!strcmp(engine, "avx512-f32")) return __builtin_cpu_supports("avx512f");
    if (!strcmp(engine, "avx2-f32")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(engine, "avx512-bf16"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    if (!strcmp(engine, "amx-bf16")) {
        unsigned a, b, c, d;
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 22) & 1) || !((d >> 24) & 1)) return 0;
        char why[160];
        if (!sv_gemm_amx_permission(why, sizeof why)) {
            fprintf(stderr, "note: amx-bf16: %s\n", why);
            return 0;
        }
        return 1;
    }
#else
    (void)engine;
#endif
    return 0;
}

typedef struct eng {
    const char *name;
    double flop_per_instr, ipc_lo, ipc_hi; /* instructions per cycle: pessimistic / optimistic */
} eng;

static const eng k_engines[] = {
    {"avx512-f32", 32, 1, 2},                /* Zen 4: 1 zmm FMA/cycle (2 x 256), Intel server: 2 */
    {"avx2-f32", 16, 1, 2},                  /* 2 FMA ports */
    {"avx512-bf16", 64, 0.5, 2},             /* Sapphire Rapids: half the FMA rate */
    {"amx-bf16", 16384, 1.0 / 16, 1.0 / 16}, /* one TDPBF16PS per 16 cycles */
};

static double check_engine(const eng *e) {
    int has = cpu_has(e->name);
    double p = sv_cpu_isa_peak_flops(e->name, 0.1);
    double lo = ghz_nominal > 0 ? 0.25 * e->flop_per_instr * e->ipc_lo * ghz_nominal * 1e9 : 0;
    double hi = ghz_nominal > 0 ? 2.0 * e->flop_per_instr * e->ipc_hi * ghz_max * 1e9 : INFINITY;
    for (int retry = 0; has && p < lo && retry < 3; retry++) { /* a very loaded machine: measure longer */
        fprintf(stderr, "note: %s: %.1f GFLOP/s is below %.1f, measuring again for 0.5 s\n", e->name, p / 1e9,
                lo / 1e9);
        double q = sv_cpu_isa_peak_flops(e->name, 0.5);
        if (q > p) p = q;
    }
    if (!has) {
        fprintf(stderr, "SKIP: %s: not available here (CPU, OS or kernel permission); peak returned %g (must be 0)\n",
                e->name, p);
        CHECK(p == 0);
        return 0;
    }
    fprintf(stderr, "%-12s %9.1f GFLOP/s per core (plausible: %.1f .. %.1f at %.2f GHz nominal)\n", e->name, p / 1e9,
            lo / 1e9, hi / 1e9, ghz_nominal);
    CHECK(isfinite(p) && p > 0);
    CHECK(p >= lo && p <= hi);
    return p;
}

static void check_parse(void) {
    char out[32];
    CHECK(sv_cpu_gemm_engine_of_device("Intel Xeon (1 thread) [avx512, gemm amx-bf16, attn bf16]", out, sizeof out));
    CHECK(!strcmp(out, "amx-bf16"));
    CHECK(sv_cpu_gemm_engine_of_device("AMD EPYC 9R14 (2 threads) [avx512, gemm openblas]", out, sizeof out));
    CHECK(!strcmp(out, "openblas"));
    CHECK(sv_cpu_gemm_engine_of_device("X (1 thread) [avx512, gemm avx512-bf16]", out, sizeof out));
    CHECK(!strcmp(out, "avx512-bf16"));
    CHECK(sv_cpu_gemm_engine_of_device("X [gemm avx2-f32]", out, sizeof out) && !strcmp(out, "avx2-f32"));
    /* only the last bracket counts: a model string with brackets of its own */
    CHECK(sv_cpu_gemm_engine_of_device("CPU [gemm fake] rev 2 (1 thread) [avx2, gemm avx512-f32]", out, sizeof out));
    CHECK(!strcmp(out, "avx512-f32"));
    /* no gemm item (fp32 mode used to name none): 0 and "" */
    strcpy(out, "junk");
    CHECK(!sv_cpu_gemm_engine_of_device("Intel Xeon (1 thread) [avx512]", out, sizeof out) && out[0] == '\0');
    CHECK(!sv_cpu_gemm_engine_of_device("Intel Xeon (1 thread) [avx512, attn bf16]", out, sizeof out));
    CHECK(!sv_cpu_gemm_engine_of_device("no bracket, gemm amx-bf16", out, sizeof out) && out[0] == '\0');
    CHECK(!sv_cpu_gemm_engine_of_device("X [avx512, gemm ]", out, sizeof out) && out[0] == '\0');
    CHECK(!sv_cpu_gemm_engine_of_device("X [avx512, gemmx amx-bf16]", out, sizeof out));
    CHECK(!sv_cpu_gemm_engine_of_device(NULL, out, sizeof out) && out[0] == '\0');
    CHECK(!sv_cpu_gemm_engine_of_device("", out, sizeof out));
    /* truncation, and a NULL output */
    char tiny[4];
    CHECK(sv_cpu_gemm_engine_of_device("X [gemm amx-bf16]", tiny, sizeof tiny) && !strcmp(tiny, "amx"));
    CHECK(sv_cpu_gemm_engine_of_device("X [gemm amx-bf16]", NULL, 0));
    /* an unterminated bracket is read to the end of the string */
    CHECK(sv_cpu_gemm_engine_of_device("X [avx512, gemm avx2-f32", out, sizeof out) && !strcmp(out, "avx2-f32"));
}

int main(void) {
    check_parse();
    read_clock();
    if (ghz_nominal <= 0) fprintf(stderr, "note: no \"cpu MHz\" in /proc/cpuinfo: checking positivity only\n");
    double peak[4];
    for (int i = 0; i < 4; i++) peak[i] = check_engine(&k_engines[i]);
    if (peak[3] > 0 && peak[2] > 0) CHECK(peak[3] > peak[2]); /* AMX > VDPBF16PS */
    if (peak[3] > 0 && peak[0] > 0) CHECK(peak[3] > peak[0]);
    /* "openblas" and NULL: the widest fp32 FMA, so positive exactly when one of them exists */
    double ob = sv_cpu_isa_peak_flops("openblas", 0.05), nul = sv_cpu_isa_peak_flops(NULL, 0.05);
    fprintf(stderr, "openblas     %9.1f GFLOP/s per core (widest fp32 FMA)\n", ob / 1e9);
    if (peak[0] > 0 || peak[1] > 0) {
        CHECK(isfinite(ob) && ob > 0 && isfinite(nul) && nul > 0);
    } else {
        fprintf(stderr, "SKIP: openblas: no fp32 FMA on this CPU; peak must be 0\n");
        CHECK(ob == 0 && nul == 0);
    }
    /* unknown names, and spellings that are not the engine names */
    const char *bad[] = {"", "nosuch", "AMX-BF16", "avx512", "amx", "avx512-f32 ", "fp32"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(sv_cpu_isa_peak_flops(bad[i], 0.01) == 0);
    /* degenerate durations still measure (a few milliseconds at least) */
    if (peak[0] > 0) CHECK(sv_cpu_isa_peak_flops("avx512-f32", 0) > 0 && sv_cpu_isa_peak_flops("avx512-f32", -1) > 0);
    printf("test_isa_peak: ok\n");
    return 0;
}
