#include "core/cpus.h"

#include <sched.h>
#include <unistd.h>

static int g_share; /* 0: none recorded */

int sv_cpus_usable(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void sv_cpus_set_rank_share(int n) { g_share = n > 0 ? n : 0; }

int sv_cpus_rank_share(int local_size) {
    if (g_share > 0) return g_share;
    int n = sv_cpus_usable() / (local_size > 0 ? local_size : 1);
    return n > 0 ? n : 1;
}
