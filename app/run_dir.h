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
 * (checkpoints, or a non-empty metrics.jsonl): a new run would replace them. A run directory and
 * a checkpoint root are never one directory, resuming or not: refused are an --out that holds
 * `latest` or step_* entries (a checkpoint root) and a --ckpt-dir that holds a run's results
 * (config.toml, metrics.jsonl, classes.txt, eval.json, confusion.csv, TensorBoard events, a
 * checkpoints/ holding checkpoints): export and eval of that directory would take one run's
 * model for the other's. */
#ifndef SV_APP_RUN_DIR_H
#define SV_APP_RUN_DIR_H

#include <limits.h>

#include "core/fileio.h"
#include "core/status.h"

#define SV_RUN_DIR_MARKER ".shardvit-run"

typedef struct sv_run_lock {
    int fd;                   /* -1: none held */
    int made_marker;          /* the lock created the marker file (it was not there) */
    char old[320];            /* an existing marker's text before the lock wrote its own (restored */
    int old_len;              /* by a failed run's unlock: a refused start changes nothing), -1 none */
    char marker[PATH_MAX];    /* its path */
    sv_fileio_made_dirs made; /* the directories the lock created (dir and missing parents) */
} sv_run_lock;
#define SV_RUN_LOCK_NONE \
    { .fd = -1 }

/* Check that `dir` may be used as a run directory (rules above). SV_ERR_INVALID names the reason;
 * `flag` ("--out", "--ckpt-dir") is used in the message; resuming: the run continues an earlier
 * one (--resume), so earlier results are expected. Read-only. */
sv_status sv_run_dir_check(const char *dir, const char *flag, int resuming);
/* Create `dir` (mkdir -p) if needed and take its lock: SV_ERR_INVALID naming the process that
 * holds it. The lock lasts until sv_run_dir_unlock or the end of the process. */
sv_status sv_run_dir_lock(const char *dir, sv_run_lock *lk);
/* Release the lock. failed: the run failed or was refused; then a directory that holds nothing but
 * the marker this lock created goes again, with the marker and the parents the lock created (a
 * refused start leaves no directory behind); anything else in it (a run's records, checkpoints,
 * another file) keeps it as it is. */
void sv_run_dir_unlock(sv_run_lock *lk, int failed);

/* A lock marker's text made fit for a message, in place: cut at its first newline, control
 * characters replaced by '?' (a marker file may hold anything). */
void sv_run_dir_printable(char *text);

/* The checkpoint root of a training: ckpt_dir (--ckpt-dir) when given, else OUT/checkpoints
 * written into buf (cap bytes), else NULL (neither flag: no checkpoints). The one place that
 * spells the default. SV_ERR_INVALID naming --out when OUT/checkpoints does not fit buf. */
sv_status sv_run_dir_ckpt_root(const char *ckpt_dir, const char *out, char *buf, size_t cap, const char **root);

/* Does the checkpoint root `root` hold anything of a run (`latest`, step_* directories)? 0 when
 * it does not exist or cannot be read. */
int sv_run_dir_has_checkpoints(const char *root);

/* What an existing run directory holds of the runs that wrote it (for --resume's checks). */
typedef struct sv_run_dir_records {
    long last_step;          /* the highest "step" of a metrics.jsonl step or eval record; -1: none */
    int eval;                /* DIR/eval.json exists (a final evaluation's result) */
    int checkpoints;         /* DIR/checkpoints holds checkpoints (sv_run_dir_has_checkpoints) */
    int config;              /* DIR/config.toml exists */
    char ckpt_dir[PATH_MAX]; /* the --ckpt-dir config.toml records ("" when none is recorded) */
} sv_run_dir_records;
/* Read them (nothing is written; a missing file counts as absent): metrics.jsonl is scanned for
 * lines that begin with {"step":N (sv_train_log's records), config.toml's "ckpt-dir" key read
 * with core/kv.h. Errors: SV_ERR_IO when metrics.jsonl cannot be read, config.toml's reader's
 * (SV_ERR_FORMAT for a malformed file). */
sv_status sv_run_dir_records_read(const char *dir, sv_run_dir_records *rec);
/* The checkpoint root of the run that recorded `rec` in `dir`: its recorded --ckpt-dir, else
 * DIR/checkpoints (root: PATH_MAX bytes). SV_ERR_INVALID when the path does not fit. */
sv_status sv_run_dir_records_root(const char *dir, const sv_run_dir_records *rec, char *root);

#endif
