/* Per-core ISA peak of the GEMM engines' instructions (isa_peak.h).
 *
 * Each loop keeps its accumulators in registers and issues nothing but the measured instruction
 * (plus one counter decrement and branch per round), with enough independent accumulators to
 * cover the latency at full throughput: FMA latency 4 cycles x 2 ports = 8 in flight (16 zmm /
 * 12 ymm accumulators here); VDPBF16PS latency 5-6 cycles at up to 2 per cycle (16); TDPBF16PS
 * throughput one per 16 cycles at ~50 cycles latency, so 4 tile accumulators (tmm0-3) fed by two
 * A tiles (tmm4-5) and two B tiles (tmm6-7), the register-blocking a GEMM kernel uses.
 * Accumulators start at different values (so no two chains can be merged by the compiler) and
 * the operands are chosen so that no value overflows or becomes denormal: the fp32 chains
 * converge to a fixed point (a = a * 0.999999 + 0.001), the bf16 chains add tiny exact products.
 *
 * Each function carries its own target attribute, so this file compiles with plain -O3 and the
 * binary runs on any x86-64: a loop runs only after the CPU (and, for AMX, the kernel) said yes.
 *
 * Timing: blocks of ~0.5 ms (the iteration count is calibrated first), a warm-up of ~10% of the
 * time (frequency license and AMX power-up transitions), then blocks until the time is spent; the
 * result is the best block. Blocks shorter than a scheduler time slice make the figure robust on
 * a shared machine: a block that was not preempted gives the core's rate, and one that was only
 * lowers its own figure (with 5-ms blocks and 4 runnable threads per core, no block was clean). */
#include "model/backend/cpu/isa_peak.h"
#include "model/backend/cpu/amx_tiles.h"
#include "model/backend/cpu/gemm_engine.h" /* sv_gemm_amx_permission: CPUID, XCR0 and the kernel */

#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>

static volatile float g_sink; /* keeps every loop's result alive */

/* ---- VFMADD231PS zmm: 16 accumulators x 32 FLOP per round ---- */
enum { ACC512 = 16, ACC256 = 12, ACCBF = 16, ACCAMX = 4 };

#define REP16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* The body of the zmm loops: 16 fp32 accumulators a0..a15 (start values 1 + 0.01 i), `rounds`
 * rounds of STEP(i) on each (STEP: a macro updating a##i with the one measured instruction),
 * then their sum into g_sink. Expects `rounds` in scope. */
#define ZMM_DECL(i) __m512 a##i = _mm512_set1_ps(1.0f + 0.01f * (i));
#define ZMM_SUM(i) s = _mm512_add_ps(s, a##i);
#define ZMM16_CHAINS(STEP) \
    REP16(ZMM_DECL) \
    for (long r = 0; r < rounds; r++) { \
        REP16(STEP) \
    } \
    __m512 s = _mm512_setzero_ps(); \
    REP16(ZMM_SUM) \
    g_sink = _mm512_reduce_add_ps(s);

__attribute__((target("avx512f"))) static void loop_avx512_f32(long rounds) {
    __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-3f);
    __asm__("" : "+v"(x), "+v"(y)); /* opaque to the optimiser */
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, x, y);
    ZMM16_CHAINS(STEP)
#undef STEP
}

/* ---- VFMADD231PS ymm: 12 accumulators x 16 FLOP (16 ymm registers: 12 + 2 operands) ---- */
__attribute__((target("avx2,fma"))) static void loop_avx2_f32(long rounds) {
    __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-3f);
    __asm__("" : "+x"(x), "+x"(y));
#define DECL(i) __m256 a##i = _mm256_set1_ps(1.0f + 0.01f * (i));
    REP12(DECL)
#undef DECL
    for (long r = 0; r < rounds; r++) {
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, x, y);
        REP12(STEP)
#undef STEP
    }
    __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, a##i);
    REP12(SUM)
#undef SUM
    float t[8];
    _mm256_storeu_ps(t, s);
    g_sink = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

/* ---- VDPBF16PS zmm: 16 accumulators x 64 FLOP (16 lanes x 2 bf16 products x 2) ---- */
__attribute__((target("avx512f,avx512bf16"))) static void loop_avx512_bf16(long rounds) {
    /* operands 2^-10 (exact in bf16): every instruction adds 2^-19 per lane, never overflows */
    __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0x1p-10f), _mm512_set1_ps(0x1p-10f));
    __m512bh y = x;
    __asm__("" : "+v"(x), "+v"(y));
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
    ZMM16_CHAINS(STEP)
#undef STEP
}

/* ---- TDPBF16PS: 4 tile accumulators x 16384 FLOP (16 x 16 outputs x 32 products x 2) ---- */
__attribute__((target("amx-tile,amx-bf16"))) static void loop_amx_bf16(long rounds) {
    static _Alignas(64) uint16_t ab[4][16 * 32]; /* A0, A1, B0, B1: 16 rows x 64 bytes */
    static _Alignas(64) float c[16 * 16];
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 16 * 32; i++) ab[t][i] = 0x3A80; /* bf16 2^-10 */
    _Alignas(64) sv_amx_tilecfg cfg;
    sv_amx_tilecfg_16x64(&cfg);
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ab[0], 64);
    _tile_loadd(5, ab[1], 64);
    _tile_loadd(6, ab[2], 64);
    _tile_loadd(7, ab[3], 64);
    for (long r = 0; r < rounds; r++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    float s = c[0];
    _tile_stored(1, c, 64);
    s += c[0];
    _tile_stored(2, c, 64);
    s += c[0];
    _tile_stored(3, c, 64);
    s += c[0];
    _tile_release();
    g_sink = s;
}

typedef void (*loop_fn)(long rounds);

/* Best FLOP/s of fn over ~seconds (see the file comment). */
static double measure(loop_fn fn, double flop_per_round, double seconds) {
    if (!(seconds > 0.005)) seconds = 0.005; /* also catches NaN */
    if (seconds > 60) seconds = 60;
    const double block = 5e-4; /* well under a scheduler time slice (~3 ms) */
    double t_end = now_s() + seconds;
    /* calibrate the rounds per block (this doubles as the start of the warm-up) */
    long rounds = 16;
    for (;;) {
        double t0 = now_s();
        fn(rounds);
        double dt = now_s() - t0;
        if (dt >= block / 4 || rounds > (1L << 40)) {
            if (dt > 0) {
                double scaled = (double)rounds * block / dt;
                rounds = scaled < 1 ? 1 : scaled > 1e12 ? (long)1e12 : (long)scaled;
            }
            break;
        }
        rounds *= 2;
    }
    double warm_end = now_s() + 0.1 * seconds;
    while (now_s() < warm_end) fn(rounds);
    double best = 0;
    int blocks = 0;
    while (blocks < 3 || now_s() < t_end) {
        double t0 = now_s();
        fn(rounds);
        double dt = now_s() - t0;
        blocks++;
        if (dt > 0 && flop_per_round * (double)rounds / dt > best) best = flop_per_round * (double)rounds / dt;
    }
    return best;
}

static int has_avx512f(void) { return __builtin_cpu_supports("avx512f"); }
static int has_avx2_fma(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

double sv_cpu_isa_peak_flops(const char *engine, double seconds) {
    __builtin_cpu_init();
    if (!engine || !strcmp(engine, "openblas") || !strcmp(engine, "openblas-threaded")) { /* the widest fp32 FMA */
        if (has_avx512f())
            engine = "avx512-f32";
        else if (has_avx2_fma())
            engine = "avx2-f32";
        else
            return 0;
    }
    if (!strcmp(engine, "avx512-f32")) return has_avx512f() ? measure(loop_avx512_f32, ACC512 * 32.0, seconds) : 0;
    if (!strcmp(engine, "avx2-f32")) return has_avx2_fma() ? measure(loop_avx2_f32, ACC256 * 16.0, seconds) : 0;
    if (!strcmp(engine, "avx512-bf16"))
        return has_avx512f() && __builtin_cpu_supports("avx512bf16") ? measure(loop_avx512_bf16, ACCBF * 64.0, seconds)
                                                                     : 0;
    if (!strcmp(engine, "amx-bf16")) {
        if (!sv_gemm_amx_permission(NULL, 0)) return 0;
        return measure(loop_amx_bf16, ACCAMX * 16384.0, seconds);
    }
    return 0;
}

#else /* not x86-64 GCC: none of these instructions */

double sv_cpu_isa_peak_flops(const char *engine, double seconds) {
    (void)engine, (void)seconds;
    (void)now_s;
    return 0;
}

#endif

int sv_cpu_gemm_engine_of_device(const char *device_name, char *out, size_t n) {
    if (out && n) out[0] = '\0';
    if (!device_name) return 0;
    const char *open = strrchr(device_name, '[');
    if (!open) return 0;
    const char *close = strchr(open, ']');
    const char *end = close ? close : open + strlen(open);
    for (const char *p = open + 1; p < end;) {
        while (p < end && (*p == ' ' || *p == ',')) p++;
        const char *item = p;
        while (p < end && *p != ',') p++;
        if ((size_t)(p - item) > 5 && !strncmp(item, "gemm ", 5)) {
            const char *name = item + 5;
            while (name < p && *name == ' ') name++;
            const char *ne = name;
            while (ne < p && *ne != ' ') ne++;
            if (ne == name) continue;
            if (out && n) {
                size_t len = (size_t)(ne - name);
                if (len > n - 1) len = n - 1;
                memcpy(out, name, len);
                out[len] = '\0';
            }
            return 1;
        }
    }
    return 0;
}
