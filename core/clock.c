#include "core/clock.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define SV_HAVE_TSC 1
#ifdef SV_CLOCK_TEST_HOOKS /* tests/core compiles this file with a TSC it can make jump */
extern uint64_t sv_clock_test_tsc(void);
#define SV_RDTSC() sv_clock_test_tsc()
#else
#define SV_RDTSC() __rdtsc()
#endif
#else
#define SV_HAVE_TSC 0
#endif

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#if SV_HAVE_TSC
#define SV_CLOCK_ANCHOR_S 1e-3  /* re-anchor on CLOCK_MONOTONIC after this long */
#define SV_CLOCK_RESYNC_S 20e-6 /* a re-anchor this far (+1% of the anchor's age) off restarts calibration */

/* 1 = TSC, 0 = clock_gettime; decided once per process (racing first calls agree) unless
 * sv_clock_use_mono decided first. */
static int decide_tsc(void) {
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return 0;
    char buf[32] = "";
    int ok = fgets(buf, sizeof buf, f) && !strncmp(buf, "tsc", 3) && (buf[3] == '\n' || buf[3] == 0);
    fclose(f);
    return ok;
}

static int g_mode = -1; /* -1 undecided, 0 mono, 1 tsc */

static int mode(void) {
    int m = __atomic_load_n(&g_mode, __ATOMIC_RELAXED);
    if (m < 0) {
        m = decide_tsc();
        __atomic_store_n(&g_mode, m, __ATOMIC_RELAXED);
    }
    return m;
}

typedef struct {
    double mono_first, mono_a, spt, last;
    uint64_t tsc_first, tsc_a, max_age; /* max_age: anchor lifetime in ticks (0 = uncalibrated) */
} tsc_clock;

static _Thread_local tsc_clock T;

/* One (CLOCK_MONOTONIC, TSC) pair: the clock read bracketed by two TSC reads, retried while
 * the bracket is wide (an interrupt or preemption in between), the tightest one kept. A pair's
 * skew is at most half its bracket: ~40 ticks (~15 ns) on an undisturbed read. */
static double read_pair(uint64_t *tsc) {
    double best_m = 0;
    uint64_t best_k = 0, best_w = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t k1 = SV_RDTSC();
        double m = mono_now();
        uint64_t k2 = SV_RDTSC();
        if (k2 - k1 < best_w) {
            best_w = k2 - k1;
            best_m = m;
            best_k = k1 + (k2 - k1) / 2;
        }
        if (best_w < 400) break;
    }
    *tsc = best_k;
    return best_m;
}

static double tsc_now(void) {
    uint64_t k = SV_RDTSC();
    double v;
    if (T.max_age && k - T.tsc_a < T.max_age) {
        v = T.mono_a + (double)(k - T.tsc_a) * T.spt;
    } else {
        double m = read_pair(&k);
        if (T.max_age) { /* calibrated: does the TSC still track CLOCK_MONOTONIC? */
            double pred = T.mono_a + (double)(k - T.tsc_a) * T.spt, age = m - T.mono_a;
            if (k < T.tsc_a || fabs(pred - m) > SV_CLOCK_RESYNC_S + 0.01 * age)
                T.tsc_first = 0; /* TSC jump (suspend, reset) or rate drift: calibrate again */
        }
        if (!T.tsc_first || k < T.tsc_first) {
            T.mono_first = m;
            T.tsc_first = k;
            T.max_age = 0;
        } else if (m - T.mono_first >= SV_CLOCK_ANCHOR_S && k > T.tsc_first) {
            T.spt = (m - T.mono_first) / (double)(k - T.tsc_first);
            T.max_age = (uint64_t)(SV_CLOCK_ANCHOR_S / T.spt);
        }
        T.mono_a = m;
        T.tsc_a = k;
        v = m;
    }
    if (v < T.last) return T.last; /* a re-anchor may land a few ns behind the estimate */
    T.last = v;
    return v;
}
#endif

static const double *g_virtual; /* sv_clock_set_virtual */

void sv_clock_set_virtual(const double *now_s) { g_virtual = now_s; }

double sv_now_real_s(void) {
#if SV_HAVE_TSC
    if (mode()) return tsc_now();
#endif
    return mono_now();
}

double sv_now_s(void) {
    if (g_virtual) return *g_virtual;
#if SV_HAVE_TSC
    if (mode()) return tsc_now();
#endif
    return mono_now();
}

void sv_clock_use_mono(void) {
#if SV_HAVE_TSC
    __atomic_store_n(&g_mode, 0, __ATOMIC_RELAXED);
#endif
}

int sv_clock_uses_tsc(void) {
#if SV_HAVE_TSC
    return mode();
#else
    return 0;
#endif
}
