/* The earliest repeated key in an array (core/repeat.h). */
#include "core/repeat.h"

#include <stdlib.h>

typedef struct key_order {
    int (*key_cmp)(const void *a, const void *b);
} key_order;

/* By key, equal keys by place: the pointers all point into one array, so their order is the
 * order of the places. */
static int by_key_then_place(const void *a, const void *b, void *order) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int c = ((const key_order *)order)->key_cmp(x, y);
    return c ? c : (x > y) - (x < y);
}

int sv_first_repeat(const void *items, size_t n, size_t size, int (*key_cmp)(const void *a, const void *b),
                    size_t *first, size_t *again) {
    *first = *again = 0;
    if (n < 2) return 0;
    const char **by = malloc(n * sizeof *by);
    if (!by) return -1;
    for (size_t i = 0; i < n; i++) by[i] = (const char *)items + i * size;
    key_order o = {key_cmp};
    qsort_r(by, n, sizeof *by, by_key_then_place, &o);
    int found = 0;
    for (size_t i = 1, run = 0; i < n; i++) {
        if (key_cmp(by[run], by[i])) { /* another key: its run starts here */
            run = i;
            continue;
        }
        if (i != run + 1) continue; /* a later repeat of the run's key */
        size_t at = (size_t)(by[i] - (const char *)items) / size;
        if (!found || at < *again) found = 1, *first = (size_t)(by[run] - (const char *)items) / size, *again = at;
    }
    free(by);
    return found;
}
