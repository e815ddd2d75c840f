/* The --trace file of train, bench and plan: the per-rank parts merged into one Chrome/Perfetto
 * trace, staged in a fresh temporary beside it and renamed into place (docs/fsdp.md "Trace
 * tracks" for the content). */
#ifndef SV_APP_TRACE_MERGE_H
#define SV_APP_TRACE_MERGE_H

#include "core/status.h"

/* Merge the parts "<path>.rank<r>" of ranks 0..world-1 (written by sv_trace_write_part, in that
 * order) into one trace at `path`, byte for byte what core/trace.c's sv_trace_merge writes, so
 * sv_trace_is_merged recognises it. The trace is written to a fresh "<path>.tmp-XXXXXXXX"
 * (sv_fileio_out_open_tmp), synced and renamed over `path` (sv_fileio_out_commit): an earlier
 * trace at `path` stays whole until the new one is complete, whatever stops the merge (a full
 * file system, a crash), and a failed merge removes its temporary. Each part is removed once it
 * has been copied (after a failed write, without copying); a part that cannot be opened
 * (missing, a FIFO, a directory) is an error naming it, and it and the later parts stay. Called
 * by rank 0 after all ranks wrote their parts. */
sv_status sv_app_trace_merge(const char *path, int world);

#endif
