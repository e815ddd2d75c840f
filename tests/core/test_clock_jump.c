/* core/clock.c compiled with SV_CLOCK_TEST_HOOKS, reading a TSC this test can move: after the
 * TSC jumps forward (as across an s2idle suspend) or backward (a reset), sv_now_s() must be
 * back on CLOCK_MONOTONIC within a few milliseconds, measure durations correctly again, and
 * never step backwards. Skips (77) where the process clock does not run on the TSC. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "check.h"
#include "core/clock.h"

static int64_t g_offset; /* ticks added to the real TSC */
uint64_t sv_clock_test_tsc(void) { return (uint64_t)((int64_t)__rdtsc() + g_offset); }

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double g_last;

/* Distance of sv_now_s() outside a clock_gettime bracket, worst over `seconds` of reads. */
static double worst_outside(double seconds) {
    double worst = 0, t_end = mono() + seconds;
    while (mono() < t_end) {
        double a = mono(), v = sv_now_s(), b = mono();
        CHECK(v >= g_last);
        g_last = v;
        double off = v < a ? a - v : v > b ? v - b : 0;
        if (off > worst) worst = off;
    }
    return worst;
}

static void check_sleep(void) {
    struct timespec d = {0, 10 * 1000 * 1000};
    double m0 = mono(), s0 = sv_now_s();
    nanosleep(&d, NULL);
    double s1 = sv_now_s(), m1 = mono();
    CHECK_CLOSE(s1 - s0, m1 - m0, 20e-6);
}

int main(void) {
    if (!sv_clock_uses_tsc()) SKIP("the process clock is clock_gettime here (not a TSC clocksource)");
    double t0 = mono();
    uint64_t k0 = __rdtsc();
    double w = worst_outside(0.02); /* calibrates (first 1 ms) and runs */
    double ticks_per_s = (double)(__rdtsc() - k0) / (mono() - t0);
    printf("before: worst %.3f us outside the bracket (%.2f GHz TSC)\n", w * 1e6, ticks_per_s / 1e9);
    CHECK(w < 1e-6);
    const double jumps[] = {+2.0, -3.0, +0.05}; /* seconds of TSC */
    for (int j = 0; j < 3; j++) {
        g_offset += (int64_t)(jumps[j] * ticks_per_s);
        (void)worst_outside(0.005); /* the jump is noticed at the next re-anchor */
        double after = worst_outside(0.02);
        printf("TSC jump %+.2f s: afterwards worst %.3f us outside the bracket\n", jumps[j], after * 1e6);
        CHECK(after < 1e-6);
        check_sleep();
    }
    printf("test_clock_jump: OK\n");
    return 0;
}
