/* The optimizer and LR-schedule records of a checkpoint's index.json (docs/checkpoints.md):
 *
 *   "lr_schedule": {..., "warmup_form": "steps"|"timm", "warmup_t" (the schedule's warmup length
 *                   in its time unit: steps, epochs with --sched-on-updates 0; indexes before it
 *                   recorded only the --warmup steps), "warmup_lr", "warmup_prefix",
 *                   "t_initial", "cooldown", "decay_steps", "decay_milestones": [...],
 *                   "decay_rate", "power", and with --sched-on-updates 0 only
 *                   "sched_on_updates": false, "steps_per_epoch", with --lr-cycle-limit > 1
 *                   "cycle_limit", "cycle_mul", "cycle_decay", with --lr-k-decay "k_decay", with
 *                   --lr-noise "noise_range": [start] or [start, stop], "noise_pct",
 *                   "noise_std", "noise_type", "noise_seed"}   (beside the original kind/total_steps/lr/min_lr/warmup;
 *                   "kind" is "warmup_cosine" for the --warmup-steps cosine, else the --sched name)
 *   "optimizer":   {"kind": "adamw"|"lamb"|"sgd"|"lion", "beta1", "beta2", "eps",
 *                   "weight_decay", "momentum", "nesterov", "layer_decay"}
 *
 * Both are optional on read: an index without them was written by AdamW with the warmup-steps
 * cosine, which is what the defaults below describe. */
#ifndef SV_CKPT_CKPT_OPTIM_H
#define SV_CKPT_CKPT_OPTIM_H

#include "core/json.h"
#include "core/lr_sched.h"
#include "fsdp/fsdp.h"

typedef struct sv_ckpt_optim {
    sv_opt_kind kind;
    double beta1, beta2, eps, weight_decay, momentum, layer_decay; /* layer_decay 0: off */
    int nesterov;
} sv_ckpt_optim;

/* The "kind" string of the lr_schedule object. */
const char *sv_ckpt_sched_kind(const sv_lr_sched *s);
/* Extra members of the open lr_schedule object / the "optimizer" member of the open root. */
void sv_ckpt_sched_write(sv_json_writer *w, const sv_lr_sched *s);
void sv_ckpt_optim_write(sv_json_writer *w, const sv_ckpt_optim *o);
/* 1 when the two schedules differ in their cycles, k-decay or noise (the resume warning). */
int sv_ckpt_sched_cycles_noise_differ(const sv_lr_sched *a, const sv_lr_sched *b);
/* The resume warning for the rest of a schedule of one kind and stepping (those have their own):
 * the members of the checkpoint's schedule `ck` that the run's `now` changes and that its kind
 * uses (the warmup form, the --warmup-epochs length (--warmup steps are compared with the run's
 * steps and LRs), the start LR and prefix; t_initial of cosine / poly when
 * with_t_initial, poly's power, step's interval, multistep's milestones, the decay rate, the steps
 * per epoch), as "name A -> B" pieces joined by "; " into buf (cap bytes; "" when none). A
 * warmup length the checkpoint does not record (ck->warmup < 0, an older index) is not compared. */
void sv_ckpt_sched_changes(const sv_lr_sched *ck, const sv_lr_sched *now, int with_t_initial, char *buf, size_t cap);
/* Read them back (missing: defaults; a missing warmup_t is the "warmup" member for the steps form
 * and -1, unknown, for the timm form; a missing t_initial is -1, unknown, and not written back);
 * lr_schedule is the parsed lr_schedule object. */
sv_status sv_ckpt_sched_parse(const sv_json *lr_schedule, sv_lr_sched *s);
sv_status sv_ckpt_optim_parse(const sv_json *root, sv_ckpt_optim *o);

/* Resume check: a checkpoint written by another update rule is refused (its m / v mean something
 * else); other hyper-parameter changes are logged. `now` is this run's configuration.
 * sv_ckpt_optim_check_kind: the refusal alone (SV_ERR_INVALID naming both --opt values), nothing
 * logged; train's start-up check of a --resume makes it before the run directory is written. */
sv_status sv_ckpt_optim_check_resume(const sv_ckpt_optim *ckpt, const sv_ckpt_optim *now);
sv_status sv_ckpt_optim_check_kind(const sv_ckpt_optim *ckpt, const sv_ckpt_optim *now);

#endif
