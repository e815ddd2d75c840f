/* Chrome/Perfetto trace events ("X" complete events), per rank (docs/fsdp.md "Trace tracks").
 *
 * Tracks: pid = rank, tid = one of SV_TRACE_* below. Complete events on one (pid, tid) must
 * nest or be disjoint (the trace format's rule; Perfetto drops or mis-draws the others), so
 * every kind of work that can be in flight at the same time as another gets its own track:
 * compute, the parameter all-gathers (one in flight at a time: the schedule waits for unit u's
 * gather before it issues u+1's), one reduce-scatter track per gradient buffer (the two block
 * buffers alternate, so a unit's reduce-scatter can still be in flight when the next one is
 * issued; the root has its own buffer), the cross-group all-reduce, data wait and the
 * optimizer. Only the tracks that hold events are written, each named by a thread_name and
 * ordered by a thread_sort_index metadata event (docs/fsdp.md, "Trace tracks").
 *
 * A tracer holds a fixed-capacity event array allocated once at start-up; recording never
 * allocates (events beyond capacity are counted as dropped). Every event recorded, kept or
 * dropped, also adds its duration to its track's `lane_us` sum, so the time per track stays exact
 * however many events the array could keep (what `bench` splits a step's time with); a tracer
 * made by sv_trace_init_sums keeps only those sums. Names must be string literals or otherwise
 * outlive the tracer. Time is sv_now_s() (core/clock.h, CLOCK_MONOTONIC base) in microseconds
 * since tracer start. A disabled tracer (capacity 0, not sums-only) makes every call a cheap
 * no-op. */
#ifndef SV_CORE_TRACE_H
#define SV_CORE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/clock.h" /* sv_now_s */
#include "core/status.h"

/* Track ids (written as the tid). data and optim keep their historical ids 2 and 3. */
enum {
    SV_TRACE_COMPUTE = 0,
    SV_TRACE_ALL_GATHER = 1,
    SV_TRACE_DATA = 2,
    SV_TRACE_OPTIM = 3,
    SV_TRACE_REDUCE_SCATTER = 4, /* + gradient buffer 0, 1 (block units), 2 (root unit) */
    SV_TRACE_ALL_REDUCE = 7,
    SV_TRACE_TRACKS = 8
};

typedef struct sv_trace_event {
    const char *name;
    const char *cat; /* "compute", "comm", "data", "optim" */
    int tid;         /* track: SV_TRACE_* */
    int arg;         /* unit index or -1 */
    double ts_us, dur_us;
} sv_trace_event;

typedef struct sv_trace {
    sv_trace_event *ev;
    size_t cap, n, dropped;
    double t0;
    /* per track: the summed durations (us) of every event recorded, those dropped included */
    double lane_us[SV_TRACE_TRACKS];
    int rank;
    int sums_only; /* sv_trace_init_sums: no event array, only lane_us */
} sv_trace;

sv_status sv_trace_init(sv_trace *t, size_t capacity, int rank);
/* A tracer that stores no events and keeps only the per-track sums (lane_us): on, never drops. */
void sv_trace_init_sums(sv_trace *t, int rank);
void sv_trace_free(sv_trace *t);
static inline int sv_trace_on(const sv_trace *t) { return t && (t->cap > 0 || t->sums_only); }
/* The summed durations in seconds of the tracks that carry collectives (category "comm"): the
 * all-gathers, the reduce-scatters of every gradient buffer and the cross-group all-reduce. */
double sv_trace_comm_lane_s(const sv_trace *t);
/* Microseconds since tracer start (for begin timestamps). */
double sv_trace_now(const sv_trace *t);
void sv_trace_add(sv_trace *t, const char *name, const char *cat, int tid, int arg, double begin_us, double end_us);
/* The path of rank's part of the trace `path`: "<path>.rank<rank>" into buf (cap bytes). */
void sv_trace_part_path(char *buf, size_t cap, const char *path, int rank);
/* Write this rank's events as a JSON array body fragment (no brackets) to `path`, a new file (a
 * part an earlier run left, sv_trace_is_part, is replaced; anything else there is an error). The
 * part is tracked like a temporary (sv_fileio_tmp_track) until sv_trace_part_done, so a command
 * with the clean-up handler (bench) removes it on a signal; sv_trace_merge removes the parts it
 * merged. */
sv_status sv_trace_write_part(const sv_trace *t, const char *path);
/* The part of this process is merged (or the run failed): no longer removed on a signal. */
void sv_trace_part_done(const char *path);
/* Is path a part left by an earlier run (a regular file that starts as sv_trace_write_part writes
 * one: a run killed between writing its parts and merging them)? The shape of ckpt/ckpt_out.h's
 * recognisers (ctx unused). */
int sv_trace_is_part(const char *path, const void *unused);
/* Merge the parts "<path>.rank<r>" of ranks 0..world-1 (sv_trace_write_part, in rank order)
 * into one Chrome/Perfetto trace JSON at `path`. The trace is written to a fresh
 * "<path>.tmp-XXXXXXXX" (sv_fileio_out_open_tmp), synced and renamed over `path`
 * (sv_fileio_out_commit): an earlier trace at `path` stays whole until the new one is complete,
 * whatever stops the merge (a full file system, a crash), and a failed merge removes its
 * temporary. Every part that is a regular file is removed, copied or (once the merge has
 * failed) not; a part that cannot be opened (missing, a FIFO, a directory) is an error naming the
 * first such part, and is left as it is. Called by rank 0 after all ranks wrote their parts. */
sv_status sv_trace_merge(const char *path, int world);
/* Is path an earlier merged trace: a regular file (a symbolic link is not followed, a FIFO never
 * blocks) that starts as sv_trace_merge writes one? For replacing an earlier --trace file and
 * nothing else (the ctx argument is unused: the shape of ckpt/ckpt_out.h's recognisers). */
int sv_trace_is_merged(const char *path, const void *unused);

#endif
