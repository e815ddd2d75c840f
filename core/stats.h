/* Small order statistics on measured samples. */
#ifndef SV_CORE_STATS_H
#define SV_CORE_STATS_H

#include <stddef.h>
#include <stdlib.h>

static inline int sv_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0 .. n) (the upper one of the middle two when n is even; 0 when n is 0).
 * Sorts v in place. */
static inline double sv_median_inplace(double *v, size_t n) {
    if (!n) return 0;
    qsort(v, n, sizeof v[0], sv_cmp_double);
    return v[n / 2];
}

#endif
