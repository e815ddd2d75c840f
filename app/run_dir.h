/* The run directory of `shardvit train --out DIR` (docs/checkpoints.md "Run directory").
 *
 * A run directory holds what one training run writes (config.toml, metrics.jsonl, classes.txt,
 * TensorBoard events, checkpoints/, eval outputs) and a marker, DIR/.shardvit-run, that is also
 * its lock: the training that holds an exclusive flock(2) on it owns the directory, and the file
 * names that process (pid, host, start time). The kernel drops the lock when the process ends,
 * however it ends, so a crash never leaves a stale lock behind.
 *
 * Accepted as --out: a path that does not exist yet (created), an empty directory, or a run
 * directory (the marker, or - written before the marker existed - both config.toml and
 * metrics.jsonl beginning with shardvit's header record). Refused: "/", anything inside the system
 * trees (/bin /boot /dev /etc /lib* /proc /sbin /sys /usr), a non-directory, a non-empty
 * directory that is not a run directory (training would overwrite files it did not create), and,
 * unless the run resumes (--resume), a run directory that holds an earlier run's results
 * (checkpoints, or a non-empty metrics.jsonl): a new run would replace them. */
#ifndef SV_APP_RUN_DIR_H
#define SV_APP_RUN_DIR_H

#include "core/status.h"

#define SV_RUN_DIR_MARKER ".shardvit-run"

typedef struct sv_run_lock {
    int fd; /* -1: none held */
} sv_run_lock;

/* Check that `dir` may be used as a run directory (rules above). SV_ERR_INVALID names the reason;
 * `flag` ("--out", "--ckpt-dir") is used in the message; resuming: the run continues an earlier
 * one (--resume), so earlier results are expected. Read-only. */
sv_status sv_run_dir_check(const char *dir, const char *flag, int resuming);
/* Create `dir` (mkdir -p) if needed and take its lock: SV_ERR_INVALID naming the process that
 * holds it. The lock lasts until sv_run_dir_unlock or the end of the process. */
sv_status sv_run_dir_lock(const char *dir, sv_run_lock *lk);
void sv_run_dir_unlock(sv_run_lock *lk);

#endif
