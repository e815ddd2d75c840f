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
 *
 * Cycles and k-decay (cosine and poly; timm's cycle_mul, cycle_decay, cycle_limit, k_decay): the
 * decay time t (after a prefixed warmup) falls in cycle i of length t_initial x cycle_mul^i, whose
 * peak is lr x cycle_decay^i, and the curve runs on t_curr^k / t_i^k; from cycle cycle_limit on
 * the LR is min_lr. With the defaults (one cycle, k 1) these are the plain formulas above.
 *
 * Noise (every kind; timm's Scheduler._add_noise): at a time t > 0 inside the noise range
 * (noise_range fractions x t_initial, t the raw step or epoch, before any warmup shift) the LR v
 * becomes v + v n, n drawn by PyTorch's CPU generator seeded with noise_seed + t
 * (core/torch_rng.h): normal, n = randn x noise_std redrawn until |n| < noise_pct, or uniform,
 * n = 2 (rand - 0.5) noise_pct. t = 0 is never noised: timm's first LR is its scheduler's
 * constructor value.
 *
 * Pure functions of the step, no state: a resumed run gets the same LRs. */
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
typedef enum sv_noise_kind { SV_NOISE_OFF = 0, SV_NOISE_FROM, SV_NOISE_RANGE } sv_noise_kind;
typedef enum sv_noise_type { SV_NOISE_NORMAL = 0, SV_NOISE_UNIFORM } sv_noise_type;

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
    /* cosine, poly (see the top); cycle_mul, k_decay and cycle_limit 0 read as 1, so a zeroed
     * struct has one cycle and k 1 (cycle_decay is used as it is: 0 is timm's legal value) */
    double cycle_mul, cycle_decay, k_decay;
    int cycle_limit;
    sv_noise_kind noise;   /* SV_NOISE_FROM: t >= noise_range[0] x t_initial; SV_NOISE_RANGE: [lo, hi) */
    double noise_range[2]; /* fractions of t_initial (timm's --lr-noise) */
    double noise_pct, noise_std;
    sv_noise_type noise_type;
    uint64_t noise_seed; /* timm's noise_seed: train.py's --seed */
} sv_lr_sched;

/* "cosine" | "step" | "multistep" | "poly" | "constant". */
const char *sv_sched_name(sv_sched_kind k);
sv_status sv_sched_parse(const char *s, sv_sched_kind *out);

/* The learning rate of 0-based optimizer step `step`. */
double sv_lr_sched_at(const sv_lr_sched *s, int64_t step);

/* Cosine and poly with more than one cycle, a cycle_mul other than 1 or a k_decay other than 1. */
int sv_lr_sched_cycled(const sv_lr_sched *s);
/* timm's get_cycle_length() without the warmup: the decay time of cycle_limit cycles, t_initial x
 * cycle_limit, or floor(t_initial (cycle_mul^limit - 1) / (cycle_mul - 1)) as timm writes it;
 * -1 when that is 2^62 or more (cycle_mul^limit overflows long before any run is that long). */
int64_t sv_lr_sched_cycle_length(const sv_lr_sched *s);
/* timm's cycle index for cycle_mul != 1 needs 1 - t (1 - cycle_mul) / t_initial > 0: with
 * cycle_mul < 1 the cycles shrink towards a finite length, past which timm's formula fails.
 * 1 when the decay time t has it (always for cycle_mul >= 1). */
int sv_lr_sched_time_ok(const sv_lr_sched *s, int64_t t);
/* The noise factor n of time t (the step, or the epoch when on_epochs), 0 outside the range. */
double sv_lr_sched_noise(const sv_lr_sched *s, int64_t t);

#endif
