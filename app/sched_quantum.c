/* The scheduler's time-sharing quantum, measured (sched_quantum.h). */
#include "app/sched_quantum.h"

#include <time.h>

#include "core/stats.h"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

typedef struct spin_arg {
    atomic_int stop;
    atomic_int started;
} spin_arg;

static void *spin(void *p) {
    spin_arg *a = p;
    atomic_store(&a->started, 1);
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) x++;
    return NULL;
}

/* the real clock (sv_now_s may be the simulator's virtual one) */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double sv_sched_quantum_s(double seconds) {
    enum { MAX_GAPS = 512 };
    int cpu = sched_getcpu();
    if (cpu < 0 || seconds <= 0) return 0;
    cpu_set_t saved, one;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0) return 0;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 0;
    spin_arg a;
    atomic_init(&a.stop, 0);
    atomic_init(&a.started, 0);
    pthread_attr_t attr;
    pthread_t th;
    int ok = pthread_attr_init(&attr) == 0;
    ok = ok && pthread_attr_setaffinity_np(&attr, sizeof one, &one) == 0;
    ok = ok && pthread_create(&th, &attr, spin, &a) == 0;
    pthread_attr_destroy(&attr);
    double q = 0;
    if (ok) {
        double gaps[MAX_GAPS];
        int n = 0;
        const double t_end = now_s() + seconds, t_start_by = now_s() + 1.0;
        while (!atomic_load(&a.started) && now_s() < t_start_by) sched_yield();
        while (n < MAX_GAPS && now_s() < t_end) {
            double t0 = now_s();
            sched_yield();
            double g = now_s() - t0;
            if (g > 50e-6) gaps[n++] = g;
        }
        atomic_store(&a.stop, 1);
        pthread_join(th, NULL);
        q = sv_median_inplace(gaps, (size_t)n);
    }
    sched_setaffinity(0, sizeof saved, &saved);
    return q;
}

#else

double sv_sched_quantum_s(double seconds) {
    (void)seconds;
    return 0;
}

#endif
