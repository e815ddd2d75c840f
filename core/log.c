#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

/* Written once by sv_log_setup before threads start; read-only afterwards. */
static struct {
    int rank;
    sv_log_level min_level;
    int all_ranks_info;
} g_log = {0, SV_LOG_INFO, 0};

void sv_log_setup(int rank, sv_log_level min_level, int all_ranks_info) {
    g_log.rank = rank;
    g_log.min_level = min_level;
    g_log.all_ranks_info = all_ranks_info;
}

int sv_log_rank(void) { return g_log.rank; }

void sv_log(sv_log_level lvl, const char *fmt, ...) {
    if (lvl < g_log.min_level) return;
    if (lvl <= SV_LOG_INFO && g_log.rank != 0 && !g_log.all_ranks_info) return;
    static const char *names[] = {"debug", "info", "WARN", "ERROR"};
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* one fprintf per line so lines from ranks/threads do not interleave mid-line */
    fprintf(stderr, "[shardvit r%d] %s %s\n", g_log.rank, names[lvl], buf);
}
