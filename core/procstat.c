#include "core/procstat.h"

#include <stdio.h> /* first: defines __GLIBC__ where it applies */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

double sv_proc_cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
        1e-6 * ru.ru_stime.tv_usec;
}

double sv_proc_max_rss_bytes(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0; /* Linux reports KiB */
}

int sv_proc_rss_peak_reset(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    if (fclose(f) != 0) ok = 0;
    return ok;
}

double sv_proc_rss_peak_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            char *end;
            double v = strtod(line + 6, &end);
            if (end != line + 6 && v >= 0) kib = v;
            break;
        }
    fclose(f);
    return kib < 0 ? -1 : kib * 1024.0;
}
