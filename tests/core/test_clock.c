/* core/clock.h: sv_now_s() stays on the CLOCK_MONOTONIC time base (bracketed by clock_gettime
 * reads to within a few microseconds), never decreases within a thread, measures sleeps to
 * within 20 us, and does so in several threads at once. Run twice by ctest: as the machine
 * decides (TSC where the kernel's clocksource is the TSC) and with sv_clock_use_mono called
 * first (argument expect-mono; what SHARDVIT_CLOCK=mono does in shardvit), which must select
 * clock_gettime. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/clock.h"

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Tolerance of the bracket check: the TSC estimate may stray from CLOCK_MONOTONIC by the anchor
 * skew (tens of ns), the rate error over one 1 ms anchor, and NTP slewing of CLOCK_MONOTONIC
 * (<= 500 ppm x 1 ms): well under 1 us here. A wrong rate or anchor is microseconds to seconds off. */
#define BRACKET_TOL 1e-6

static void *exercise(void *arg) {
    double *worst = arg;
    double last = sv_now_s(), t_end = mono() + 0.25;
    long reads = 0;
    while (mono() < t_end) {
        for (int i = 0; i < 1000; i++, reads++) { /* non-decreasing, read after read */
            double v = sv_now_s();
            CHECK(v >= last);
            last = v;
        }
        double a = mono(), v = sv_now_s(), b = mono();
        double off = v < a ? a - v : v > b ? v - b : 0;
        if (off > *worst) *worst = off;
        CHECK(v >= last);
        last = v;
    }
    CHECK(reads > 10000);
    for (int k = 0; k < 3; k++) { /* sleeps measured by both clocks agree */
        struct timespec d = {0, 30 * 1000 * 1000};
        /* each sv_now_s read bracketed by clock_gettime reads: the sleep as CLOCK_MONOTONIC saw it
         * lies between the inner (m1a - m0b) and the outer (m1b - m0a) interval, whatever a
         * preemption between two reads added (a loaded machine, a sanitizer build) */
        double m0a = mono(), s0 = sv_now_s(), m0b = mono();
        nanosleep(&d, NULL);
        double m1a = mono(), s1 = sv_now_s(), m1b = mono();
        CHECK(s1 - s0 > 0.029);
        CHECK(s1 - s0 >= (m1a - m0b) - 20e-6);
        CHECK(s1 - s0 <= (m1b - m0a) + 20e-6);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int expect_mono = argc > 1 && !strcmp(argv[1], "expect-mono");
    if (expect_mono) sv_clock_use_mono();
    int tsc = sv_clock_uses_tsc();
    printf("clock: %s\n", tsc ? "TSC mapped onto CLOCK_MONOTONIC" : "clock_gettime");
    if (expect_mono) CHECK(!tsc);
#if defined(__x86_64__)
    /* where the kernel itself runs on the TSC, so must this clock (unless told otherwise) */
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char src[32] = "";
    if (f) {
        if (!fgets(src, sizeof src, f)) src[0] = 0;
        fclose(f);
    }
    if (!expect_mono && !strcmp(src, "tsc\n")) CHECK(tsc);
#endif
    double worst[3] = {0, 0, 0};
    exercise(&worst[0]);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, exercise, &worst[i + 1]) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], NULL) == 0);
    for (int i = 0; i < 3; i++) {
        printf("thread %d: worst distance outside the clock_gettime bracket %.3f us\n", i, worst[i] * 1e6);
        CHECK(worst[i] <= BRACKET_TOL);
    }
    printf("test_clock: OK\n");
    return 0;
}
