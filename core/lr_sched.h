/* Learning-rate schedules evaluated per optimizer step (docs/training.md "Learning-rate
 * schedule"), with the formulas of timm's scheduler classes (timm.scheduler CosineLRScheduler,
 * StepLRScheduler, MultiStepLRScheduler, PolyLRScheduler; "constant" is timm's StepLRScheduler
 * that never decays) stepped per update (timm --sched-on-updates, t_in_epochs=False) or per epoch.
 *
 * Two warmup forms:
 *   SV_WARMUP_STEPS (shardvit's --warmup N): step k < N gets warmup_lr + (lr - warmup_lr)(k+1)/N,
 *     reaching lr at the last warmup step, and the decay phase starts after it (as timm's
 *     warmup_prefix): its time is k - N over a length of total - cooldown - N.
 *   SV_WARMUP_TIMM (--warmup-epochs): timm's ramp warmup_lr + k (lr - warmup_lr)/N for k < N; the
 *     decay time is k (k - N with warmup_prefix) over t_initial.
 * With no warmup both are timm's schedule exactly.
 *
 * Per-epoch stepping (on_epochs, timm's default without --sched-on-updates, t_in_epochs=True):
 * the LR of step k is timm's _get_lr(t) at the epoch t = k / spe (integer division: constant
 * inside an epoch, as timm's step(epoch) at each epoch end), with warmup, t_initial,
 * decay_steps, milestones and cooldown counted in epochs; always the SV_WARMUP_TIMM form.
 * Pure functions, no state. */
#ifndef SV_CORE_LR_SCHED_H
#define SV_CORE_LR_SCHED_H

#include <stdint.h>

#include "core/status.h"

typedef enum sv_sched_kind {
    SV_SCHED_COSINE = 0,
    SV_SCHED_STEP,
    SV_SCHED_MULTISTEP,
    SV_SCHED_POLY,
    SV_SCHED_CONSTANT
} sv_sched_kind;
typedef enum sv_warmup_form { SV_WARMUP_STEPS = 0, SV_WARMUP_TIMM } sv_warmup_form;

#define SV_SCHED_MAX_MILESTONES 32

typedef struct sv_lr_sched {
    sv_sched_kind kind;
    sv_warmup_form form;
    double lr, min_lr, warmup_lr;
    int64_t warmup;     /* warmup steps */
    int warmup_prefix;  /* SV_WARMUP_TIMM: the decay starts after the warmup (timm warmup_prefix) */
    int64_t t_initial;  /* cosine, poly: decay length in steps (> 0) */
    double decay_steps; /* step: decay interval in steps (timm decay_t) */
    int n_milestones;   /* multistep: milestones in steps, ascending */
    int64_t milestones[SV_SCHED_MAX_MILESTONES];
    double decay_rate; /* step, multistep */
    double power;      /* poly */
    int64_t cooldown;  /* steps at lr's end value after t_initial (recorded; timm cooldown_epochs) */
    int on_epochs;     /* 1: stepped per epoch; the counts above are epochs (see the top) */
    int64_t spe;       /* on_epochs: optimizer steps per epoch (> 0) */
} sv_lr_sched;

/* "cosine" | "step" | "multistep" | "poly" | "constant". */
const char *sv_sched_name(sv_sched_kind k);
sv_status sv_sched_parse(const char *s, sv_sched_kind *out);

/* The learning rate of 0-based optimizer step `step`. */
double sv_lr_sched_at(const sv_lr_sched *s, int64_t step);

#endif
