/* Checkpointing inside `shardvit train` (periodic/final save, resume, --init-from); the offline
 * subcommands reshard/export/import are in cmd_ckpt.c too. */
#ifndef SV_APP_CMD_CKPT_H
#define SV_APP_CMD_CKPT_H

#include "app/run.h"
#include "data/loader.h"
#include "ckpt/checkpoint.h"

typedef struct sv_train_ckpt {
    const char *dir;       /* checkpoint root (--ckpt-dir, default OUT/checkpoints); NULL: none */
    const char *resume;    /* NULL, "auto", or a run dir / checkpoint root / step dir */
    const char *init_from; /* safetensors file or NULL */
    int every, keep;       /* --ckpt-every (0: only at the end), --keep (0: all) */
    double every_minutes;  /* --ckpt-every-minutes (0: off): save when this long has passed since
                              the last save (or the start) on any rank */
    double last_save_s;    /* sv_now_s() of the last save or of the start */
    int async;             /* --async-ckpt: shards written by a background thread */
    sv_ckpt_async *aw;     /* its writer state (NULL until the first asynchronous save) */
    double blocked_s;      /* seconds training was blocked by saves, in total */
    /* Filled by the trainer before training: seed, total_steps, lr, min_lr, warmup,
     * global_batch; kept current during training: epoch/cursor of the next batch. */
    sv_ckpt_train_state state;
    sv_ckpt_meta meta;    /* eval transform + label names recorded in every checkpoint (labels
                              borrowed; the trainer frees the pointer array) */
    long long last_saved; /* step of the newest checkpoint of this run on disk, -1 none */
    int hold;             /* set by the trainer while steps are being skipped for non-finite gradients:
                             with --keep N > 0, periodic saves wait (their weights are unchanged, and
                             --keep would rotate older checkpoints away for them); a preemption or
                             final save still happens but removes nothing (--keep applies at the
                             next save after) */
    int held;             /* a periodic save was held: the first applied step after the hold saves */
    char dir_buf[SV_CKPT_PATH_MAX];
} sv_train_ckpt;

/* Resolve the checkpoint root from --ckpt-dir/--out (out may be NULL). --ckpt-every, --keep,
 * --async-ckpt and --resume auto without a directory are usage errors (SV_ERR_INVALID naming the
 * flag). Creates nothing: also called right after parsing, to refuse those flags before set-up. */
sv_status sv_train_ckpt_setup(sv_train_ckpt *c, const char *ckpt_dir, const char *out);

/* The recipe values index.json does not record (--mixup, --smoothing, --drop-path), compared on
 * resume with the config.toml of the run that saved the checkpoint. */
typedef struct sv_train_recipe {
    double mixup, smoothing, drop_path;
} sv_train_recipe;

/* What rank 0 finds out about --resume at start-up (sv_train_ckpt_precheck). */
typedef struct sv_train_resume {
    int found;                       /* a checkpoint will be resumed: */
    char step_dir[SV_CKPT_PATH_MAX]; /*   its step directory */
    sv_ckpt_index idx;               /*   its index.json (state: step, ...; meta: label names) */
} sv_train_resume;

/* Rank 0, once the output paths have passed their checks and before the run directories are
 * created, locked or written (sv_train_outputs_check, then this, then sv_train_resume_model_fits,
 * then sv_train_outputs_lock; not collective: the caller agrees on the result; a directory that
 * does not exist yet holds nothing). Resolves --resume (auto: `latest` of the
 * checkpoint root, ckpt_dir or OUT/checkpoints; when the root has no `latest` but step
 * directories, the newest of them whose index.json loads and whose shard files are all there at
 * their recorded sizes, with a warning: a save killed between its rename and its `latest`; none
 * such: refused) and reads the checkpoint's index.json into rs:
 * the step every rank then resumes (sv_train_ckpt_begin). Refused (SV_ERR_INVALID, "nothing was changed"):
 *   - auto without a checkpoint (a fresh start) when --out already holds a run's records
 *     (metrics.jsonl step records, eval.json) or its config.toml records another --ckpt-dir
 *     (named): the fresh start would cut that run's metrics.jsonl back and replace its results;
 *   - a checkpoint outside this run's checkpoint root when that root holds checkpoints (this
 *     run's saves and --keep would replace and delete them), or when --out holds another run's
 *     results (step records, eval.json, checkpoints) and the checkpoint is not in that run's root
 *     (its config.toml's --ckpt-dir, else OUT/checkpoints).
 * Warns when --mixup, --smoothing or --drop-path differ from the values in the config.toml of the
 * run that saved the checkpoint (OUT's, or RUN's for RUN/checkpoints; nothing compared when no
 * config.toml records that root). The label names and the step are checked against the data and
 * the run's length by the caller once those are known. Free rs with sv_train_resume_free. */
sv_status sv_train_ckpt_precheck(const char *resume, const char *ckpt_dir, const char *out, const sv_train_recipe *now,
                                 sv_train_resume *rs);
/* Rank 0, right after sv_train_ckpt_precheck and before the run directories are created, locked
 * or written (not collective: the caller agrees on the result): the checkpoint rs (found; nothing
 * to check otherwise) must hold this run's model, layout L (sv_ckpt_check_compatible on its
 * index.json: the timm options, every tensor's name and shape, the recorded model field by field,
 * heads among them; SV_ERR_FORMAT naming the difference), and have been trained with this run's
 * update rule `opt` (sv_ckpt_optim_check_kind: SV_ERR_INVALID naming both --opt values). The
 * loading makes the same checks again (sv_train_ckpt_begin); found here, a refusal leaves the run
 * directory as it was (config.toml, the lock marker, the logs), or creates none. */
sv_status sv_train_resume_model_fits(const sv_train_resume *rs, const sv_layout *L, const sv_ckpt_optim *opt);
/* Rank 0, right after sv_train_outputs_lock: with --resume auto, the checkpoint rs found before
 * the lock must still be the root's `latest` (a run that held the directory until the lock may
 * have saved a newer one in between: resuming the older one would repeat its steps). Otherwise
 * SV_ERR_INVALID asking to run the command again. Nothing to check without auto. */
sv_status sv_train_ckpt_still_latest(const char *resume, const char *ckpt_dir, const char *out,
                                     const sv_train_resume *rs);
/* Rank 0, once the training data is open: rs (found) must hold data's class names (label names
 * of its index.json, index by index), the data set it was trained on (its recorded sample count
 * and sv_dataset_fingerprint; data_changed_ok: --resume-data-changed, a warning instead) and a
 * step not past the run's `total` steps; otherwise SV_ERR_INVALID naming the difference. A
 * checkpoint that records no data set is resumed with a line saying the data cannot be checked. */
sv_status sv_train_resume_fits(const sv_train_resume *rs, const sv_dataset *ds, const char *data, long total,
                               int data_changed_ok);
void sv_train_resume_free(sv_train_resume *rs);
/* Before the first step (collective): --init-from, then --resume (restores parameters,
 * optimizer state, step counters and the loader position). *start_step: first step to run.
 * --init-from warns (rank 0) when its config.json records another num_heads than the run's model.
 * On resume, changes are warned about: the LR schedule, the seed, the global batch size (the data
 * position is in samples, so the data continues exactly; the steps per epoch change) and the
 * weight-EMA decay; a checkpoint past the run's total steps is refused; a data position past the
 * end of the data set (another one, --resume-data-changed) continues at the next epoch's start. Failures are agreed
 * (sv_run_agree / sv_run_agreed). */
/* The checkpoint resumed is the one rank 0 found at start-up (rs: sv_train_ckpt_precheck's result on
 * rank 0, ignored elsewhere), sent to every rank: no rank reads `latest` on its own (a run still
 * saving may move it between two ranks' reads, and ranks resuming different steps would run
 * mismatched collectives). */
sv_status sv_train_ckpt_begin(sv_run *r, sv_train_ckpt *c, const sv_train_resume *rs, sv_loader *ld, long *start_step);
/* After `done` optimizer steps (collective; one small all-reduce so that every rank decides the
 * same): save when --ckpt-every divides `done`, when --ckpt-every-minutes have passed on any
 * rank, or when a preemption signal (app/preempt.h) reached any rank; in that last case *stop is
 * set to the signal and the caller ends training. `before_save` (may be NULL) runs on every rank
 * just before a save (flushing logs). Without a checkpoint directory a signal still stops the run
 * (*stop set) but nothing is saved. */
sv_status sv_train_ckpt_after_step(sv_run *r, sv_train_ckpt *c, long done, int *stop, sv_status (*before_save)(void *),
                                   void *ctx);
/* After training (collective): finish a save in flight, then save unless step `done` is already
 * on disk. Also on the way out of a failed run (every rank calls it or none): see _free. */
sv_status sv_train_ckpt_end(sv_run *r, sv_train_ckpt *c, long done);
/* Release the writer (joins a thread still running; nothing published). */
void sv_train_ckpt_free(sv_train_ckpt *c);

#endif
