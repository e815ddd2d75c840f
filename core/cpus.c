#include "core/cpus.h"

#include <sched.h>
#include <unistd.h>

static int g_share, g_node; /* 0: none recorded */

int sv_cpus_usable(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void sv_cpus_set_node(int node_cpus, int rank_share) {
    g_node = node_cpus > 0 ? node_cpus : 0;
    g_share = rank_share > 0 ? rank_share : 0;
}

int sv_cpus_node(void) { return g_node > 0 ? g_node : sv_cpus_usable(); }

int sv_cpus_rank_share(int local_size) {
    if (g_share > 0) return g_share;
    int n = sv_cpus_usable() / (local_size > 0 ? local_size : 1);
    return n > 0 ? n : 1;
}
