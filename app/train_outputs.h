/* shardvit train: the run's output paths (docs/checkpoints.md "Run directory" and "Outputs").
 *
 * What train writes: the run directory (--out: config.toml, metrics.jsonl, classes.txt, eval.json,
 * confusion.csv, TensorBoard events) and the checkpoint root (--ckpt-dir), each checked against
 * the run-directory rules and locked (app/run_dir.h); and the files written at the end
 * (--save-params, --save-ema-params, --dump-logits, --trace and its per-rank parts), each checked
 * against the output rules (ckpt/ckpt_out.h) before the first step, their directories included
 * (they create none), so that a bad path is refused at start-up rather than after the training. An existing file at one of those paths is replaced
 * only when it is an earlier output of that kind:
 *   --save-params, --save-ema-params  a regular file (a symbolic link is not followed) of exactly
 *                                     4 bytes per parameter of the model being trained: the dump
 *                                     is raw fp32 with no header, so its size is all there is to
 *                                     recognise it by;
 *   --dump-logits                     a regular file in safetensors format holding exactly the
 *                                     tensors sv_train_outputs_dump_logits writes;
 *   --trace                           an earlier merged trace (core/trace.h sv_trace_is_merged);
 *                                     its parts PATH.rank<r> must not exist at all.
 * Anything else (a user's file, a model's weights, a FIFO, a device, a directory) is refused and
 * left as it was. */
#ifndef SV_APP_TRAIN_OUTPUTS_H
#define SV_APP_TRAIN_OUTPUTS_H

#include <stddef.h>

#include "app/flags.h"
#include "app/run.h"
#include "app/run_dir.h"
#include "core/status.h"
#include "data/loader.h"

/* The output paths of one training run (NULL: that output is not written). */
typedef struct sv_train_outputs {
    const char *out;             /* --out: the run directory */
    const char *ckpt_dir;        /* --ckpt-dir: the checkpoint root */
    const char *data, *val_data; /* --data, --val-data (nullable): the trees --out / --ckpt-dir stay out of */
    int resuming;                /* --resume given: earlier results in those directories are expected */
    const char *save_params;     /* --save-params */
    const char *save_ema_params; /* --save-ema-params */
    const char *dump_logits;     /* --dump-logits */
    const char *trace;           /* --trace */
    int world;                   /* ranks of the run: the --trace parts PATH.rank0 .. PATH.rank<world-1> */
    size_t params;               /* the model's parameter count (the size of a parameter dump) */
} sv_train_outputs;

/* --out / --ckpt-dir: *path, when relative, becomes the working directory joined with it (in buf,
 * PATH_MAX bytes; no link is resolved), so that config.toml records an absolute path (`report`
 * finds the checkpoints from any working directory, `--config RUN/config.toml --resume auto`
 * continues the run in place from anywhere). NULL, empty and absolute paths are left as they are.
 * Checks and creates nothing; not collective. Returns -1 to go on, else the usage-error exit code
 * (2) after one line on stderr naming `flag`. */
int sv_train_outputs_absolute(const char *flag, const char **path, char *buf);

/* Rank 0 only, before training (not collective: the caller agrees on the result over the ranks,
 * fsdp/agree.h). Every check, in this order, creating nothing: neither --out nor --ckpt-dir lies
 * in (or is) the ImageFolder tree of --data or --val-data (real paths: the scan would take the run
 * directory for a class); --ckpt-dir is not --out itself (a checkpoint root is not a run
 * directory: a run keeps its checkpoints in OUT/checkpoints) and --out does not lie inside
 * --ckpt-dir; neither lies in a checkpoint step directory or below a checkpoint root
 * (sv_ckpt_out_check_run_dir); --out and then --ckpt-dir pass the run-directory rules
 * (sv_run_dir_check, resuming as o->resuming); the directories of --save-params,
 * --save-ema-params, --dump-logits and --trace exist or are --out / --ckpt-dir, about to be
 * created (sv_ckpt_out_check_parent: they are written at the end and create no directory);
 * --save-params, --dump-logits, --save-ema-params and --trace may be written (an existing file
 * only when it is an earlier output of that kind, above) and no --trace part exists;
 * OUT/config.toml, metrics.jsonl, classes.txt, eval.json and confusion.csv are regular files or
 * absent. Reads only. Stops at the first failure, with that check's error: SV_ERR_INVALID naming
 * the flag or path, SV_ERR_IO when a path cannot be examined. */
sv_status sv_train_outputs_check(const sv_train_outputs *o);
/* Rank 0, once sv_train_outputs_check and the other start-up checks that need no open data (a
 * --resume's, app/cmd_ckpt.h) have passed: --out and --ckpt-dir are created when missing and
 * locked (sv_run_dir_lock into locks[0] and locks[1], which writes the lock marker; the caller
 * unlocks them after the run, also after an error), so a start refused by a check creates
 * nothing. Writes nothing else (config.toml: sv_train_outputs_write_config, once every start-up
 * check has passed). Without --ckpt-dir the default checkpoint root OUT/checkpoints is locked into
 * locks[1] the same way. Removes nothing. Errors: SV_ERR_INVALID for a lock held by another process,
 * SV_ERR_IO when a directory cannot be created; a directory created or locked before a failing
 * lock stays (the caller releases the locks). */
sv_status sv_train_outputs_lock(const sv_train_outputs *o, sv_run_lock locks[2]);
/* Collective, after rank 0's sv_train_outputs_lock and its agreement: every rank reads the
 * checkpoint root's lock file (--ckpt-dir's, else OUT/checkpoints') and compares it with rank 0's
 * (its pid, host and time): a root that is not one directory for all ranks (node-local storage on
 * another node) is refused on every rank now (SV_ERR_INVALID naming the path), not at the first
 * save after the training. No-op at world 1 or without a checkpoint root. */
sv_status sv_train_outputs_shared(sv_run *r, const sv_train_outputs *o);
/* Rank 0: write OUT/config.toml (out NULL: nothing) with the resolved flags (sv_flags_dump),
 * truncated in place with links not followed (sv_fileio_fopen_write; the path was checked by
 * sv_train_outputs_check). Called once the run's start-up checks have passed, so that a refused
 * run (a refused --resume among them) leaves the config.toml of the run it refused to touch as it
 * was. SV_ERR_IO when it cannot be written. */
sv_status sv_train_outputs_write_config(const char *out, const sv_flag *flags);

/* --dump-logits (collective: every rank forwards): forward the first evaluation-transform batch
 * of the loader described by `train_lo` (training data, identity order; mixup and cutmix off;
 * its crop_pct and interp are the run's evaluation transform's: the caller sets them) and
 * have rank 0 write PATH as safetensors with "images" (B, C, H, W) F32, "labels" (B) I32 and
 * "logits" (B, K) F32 of its micro-batch (B the micro-batch, K the classes), through a fresh
 * temporary renamed over PATH, and log one line. The path was checked by
 * sv_train_outputs_check. Errors: SV_ERR_INVALID when the data yields no batch, SV_ERR_OOM, or
 * the loader's, transfer's, forward's or writer's error (rank 0 writes only after its own
 * forward succeeded; the statuses are not agreed here). */
sv_status sv_train_outputs_dump_logits(sv_run *r, const sv_loader_opts *train_lo, const char *path);

#endif
