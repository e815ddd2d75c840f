/* Chrome/Perfetto trace events ("X" complete events), per rank (DESIGN §5 Trace).
 *
 * A tracer holds a fixed-capacity event array allocated once at start-up; recording never
 * allocates (events beyond capacity are counted as dropped). Names must be string literals or
 * otherwise outlive the tracer. Time is sv_now_s() (core/clock.h, CLOCK_MONOTONIC base) in microseconds since tracer start.
 * A disabled tracer (capacity 0) makes every call a cheap no-op. */
#ifndef SV_CORE_TRACE_H
#define SV_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/clock.h" /* sv_now_s */
#include "core/status.h"

typedef struct sv_trace_event {
    const char *name;
    const char *cat; /* "compute", "comm", "data", "optim" */
    int tid;         /* lane: 0 compute, 1 comm, 2 data */
    int arg;         /* unit index or -1 */
    double ts_us, dur_us;
} sv_trace_event;

typedef struct sv_trace {
    sv_trace_event *ev;
    size_t cap, n, dropped;
    double t0;
    int rank;
} sv_trace;

sv_status sv_trace_init(sv_trace *t, size_t capacity, int rank);
void sv_trace_free(sv_trace *t);
static inline int sv_trace_on(const sv_trace *t) { return t && t->cap > 0; }
/* Microseconds since tracer start (for begin timestamps). */
double sv_trace_now(const sv_trace *t);
void sv_trace_add(sv_trace *t, const char *name, const char *cat, int tid, int arg, double begin_us,
                  double end_us);
/* Write this rank's events as a JSON array body fragment (no brackets) to `path`. */
sv_status sv_trace_write_part(const sv_trace *t, const char *path);
/* Merge part files of ranks 0..world-1 ("<path>.rank<r>") into one trace JSON at `path`,
 * deleting the parts. Called by rank 0 after all ranks wrote their parts. */
sv_status sv_trace_merge(const char *path, int world);

#endif
