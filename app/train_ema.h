/* shardvit train --model-ema: the training loop's side of the weight EMA (fsdp/ema.h holds the
 * arithmetic). Flags, the evaluation of raw and EMA weights, --save-ema-params. */
#ifndef SV_APP_TRAIN_EMA_H
#define SV_APP_TRAIN_EMA_H

#include "app/run.h"
#include "app/train_log.h"
#include "fsdp/ema.h"

typedef struct sv_train_ema_flags {
    int on;                /* --model-ema */
    double decay;          /* --model-ema-decay (default SV_EMA_DEFAULT_DECAY) */
    int warmup;            /* --model-ema-warmup */
    const char *save_path; /* --save-ema-params */
} sv_train_ema_flags;

/* Combinations: --model-ema-decay (set to anything but the default), --model-ema-warmup and
 * --save-ema-params need --model-ema. Returns 0, or 2 after one line on stderr naming the flag. */
int sv_train_ema_check(const sv_train_ema_flags *e);

/* Evaluate the current weights and report them as of `step` (sv_train_log_eval); with the EMA
 * (f->cfg.ema) the EMA weights are evaluated first (reported as "eval (weight EMA)", keys
 * eval_ema_*) and their top-1/top-5/loss kept in ev (has_ema: eval.json's "ema" member), so ev->m
 * ends holding the raw weights' metrics; ev->seconds is then the time of both passes. Collective. */
sv_status sv_train_ema_eval(sv_train_log *lg, sv_evaluator *ev, sv_fsdp *f, long step, const char *data_name);

/* --save-ema-params: the full fp32 EMA of every parameter in canonical order (the format of
 * --save-params), written by rank 0. Collective. */
sv_status sv_train_ema_save_params(sv_run *r, const char *path);

#endif
