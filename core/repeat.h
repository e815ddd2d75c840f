/* The earliest repeated key in an array: the one scan behind "no two class names alike"
 * (data/dataset.c) and "no two tar shards the same file" (data/tar.c). */
#ifndef SV_CORE_REPEAT_H
#define SV_CORE_REPEAT_H

#include <stddef.h>

/* items: n elements of `size` (> 0) bytes each; their place is their index. key_cmp compares the keys
 * of two elements (as qsort's comparison: < 0, 0, > 0; 0 = the same key).
 *
 * Finds the earliest repeat: the lowest place *again whose key some lower place already holds,
 * with *first the lowest place of that key (so *first < *again). How: the places are sorted by
 * key, equal keys by place, so each key's places form one run in ascending order; the second
 * place of a run is that key's first repeat, and *again is the lowest of those.
 *
 * Returns 1 when some key repeats, 0 when all differ (also for n < 2; *first = *again = 0 then),
 * -1 when the n pointers of sort scratch could not be allocated (nothing is recorded: the caller
 * names what it was checking). Leaves items as they are. */
int sv_first_repeat(const void *items, size_t n, size_t size, int (*key_cmp)(const void *a, const void *b),
                    size_t *first, size_t *again);

#endif
