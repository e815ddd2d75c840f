/* The flags of `shardvit train` (docs/training.md; `shardvit train --help`): the options
 * struct, its defaults and the flag table bound to it, and every check that needs no run set up
 * (strings, combinations, paths made absolute, the checkpoint flags' directory). */
#ifndef SV_APP_TRAIN_FLAGS_H
#define SV_APP_TRAIN_FLAGS_H

#include <limits.h>

#include "app/aug_flags.h"
#include "app/commands.h"
#include "app/flags.h"
#include "app/run.h"
#include "app/train_ema.h"
#include "app/train_optim.h"
#include "app/xform.h"

/* Entries of the flag table, SV_FLAG_END included (a compile-time check in train_flags.c). */
#define SV_TRAIN_FLAGS_MAX 224

typedef struct sv_train_opts {
    sv_run_opts run;
    const char *data, *val_data, *out;
    long long steps;
    int epochs;
    double lr, min_lr, weight_decay, beta1, beta2, eps, clip, smoothing;
    int warmup, log_every, workers, synth_samples, max_skipped, max_skip_run;
    double mixup, cutmix;
    int randaug_n;
    double randaug_m;
    double crop_scale_min, hflip; /* RandomResizedCrop area lower bound, flip probability */
    sv_xform_flags xf;            /* --crop-pct (evaluation), --interp (crops and evaluation), --mean, --std */
    sv_aug_flags aug;             /* augmentation recipe flags (app/aug_flags.h) */
    const char *save_params;
    long long debug_nan_step;
    int debug_nan_rank;
    const char *ckpt_dir, *resume, *init_from; /* app/cmd_ckpt.h */
    int resume_data_changed;                   /* --resume-data-changed */
    const char *dump_logits;                   /* --dump-logits (app/train_outputs.h) */
    int ckpt_every, keep;
    double ckpt_minutes;                          /* --ckpt-every-minutes */
    int async_ckpt;                               /* --async-ckpt */
    const char *preempt_signal;                   /* --preempt-signal */
    int eval_every;                               /* evaluate --val-data every N steps (0: at the end only) */
    double drop_path, drop, proj_drop, attn_drop; /* --drop-path --drop --proj-drop --attn-drop (sv_vit_drops) */
    int drop_path_uniform;                        /* --drop-path-uniform */
    int bce, bce_sum;                             /* --bce-loss --bce-sum */
    double bce_thresh;                            /* --bce-target-thresh (-1 = off) */
    sv_train_ema_flags ema;                       /* --model-ema ... (app/train_ema.h) */
    sv_train_optim_flags of;                      /* --opt, --sched and their parameters (app/train_optim.h) */
    double mfu_calib_s;                           /* --mfu-calib-seconds (app/cpu_peak.h) */
    const sv_flag *flags;                         /* the resolved flag table (provenance "config"): table */
    sv_flag table[SV_TRAIN_FLAGS_MAX];            /* bound to the fields above: *o must not move */
    char abs_paths[9][PATH_MAX]; /* the absolute forms the path fields point to (relative paths as given) */
} sv_train_opts;

/* Parse and check argv (argv[0] = "train") into *o, which must stay where it is (the table and
 * the path fields point into it). Returns -1 to go on, else the exit code (0 after --help, 2 on
 * a usage error, its message printed). proc: the rank and world size (--debug-nan-rank). */
int sv_train_flags_parse(sv_train_opts *o, int argc, char **argv, const sv_proc *proc);

#endif
