/* shardvit train: the optimizer and LR-schedule flags of the timm recipe layer (docs/training.md
 * "Optimisation", "Learning-rate schedule"): their table entries, validation, the per-tensor
 * layer-decay multipliers and the schedule in optimizer steps. */
#ifndef SV_APP_TRAIN_OPTIM_H
#define SV_APP_TRAIN_OPTIM_H

#include "app/flags.h"
#include "ckpt/ckpt_optim.h"
#include "core/lr_sched.h"

typedef struct sv_train_optim_flags {
    const char *opt, *sched, *milestones;
    double momentum, layer_decay;
    int nesterov;
    double warmup_epochs, warmup_lr, cooldown_epochs, decay_epochs, decay_rate, poly_power;
    int warmup_prefix;
    int sched_on_updates; /* 1: the LR is set per optimizer step [default]; 0: per epoch (timm's default) */
    double cycle_mul, cycle_decay, k_decay; /* timm --lr-cycle-mul, --lr-cycle-decay, --lr-k-decay */
    int cycle_limit;                        /* timm --lr-cycle-limit */
    const char *noise, *noise_type;         /* timm --lr-noise (comma list of 1 or 2), the scheduler's noise_type */
    double noise_pct, noise_std;            /* timm --lr-noise-pct, --lr-noise-std */
    int warmup_set; /* --warmup given with another value than SV_TRAIN_DEFAULT_WARMUP (set by sv_train_optim_check) */
} sv_train_optim_flags;

/* Defaults that tell a flag given from one left alone (timm's values; --warmup is train's). */
#define SV_TRAIN_DEFAULT_WARMUP 10
#define SV_TRAIN_DEFAULT_MILESTONES "90,180,270"
#define SV_TRAIN_DEFAULT_DECAY_EPOCHS 90
#define SV_TRAIN_DEFAULT_DECAY_RATE 0.1
#define SV_TRAIN_DEFAULT_BETA1 0.9
#define SV_TRAIN_DEFAULT_BETA2 0.999
#define SV_TRAIN_DEFAULT_EPS 1e-8
#define SV_TRAIN_DEFAULT_MIN_LR 1e-5

#define SV_TRAIN_OPTIM_FLAGS_DEFAULT \
    { \
        .opt = "adamw", .sched = "cosine", .milestones = SV_TRAIN_DEFAULT_MILESTONES, .momentum = 0.9, \
        .decay_epochs = SV_TRAIN_DEFAULT_DECAY_EPOCHS, .decay_rate = SV_TRAIN_DEFAULT_DECAY_RATE, \
        .sched_on_updates = 1, .cycle_mul = 1, .cycle_decay = 0.5, .k_decay = 1, .cycle_limit = 1, \
        .noise_type = "normal", .noise_pct = 0.67, .noise_std = 1 \
    }

/* clang-format off */
#define SV_TRAIN_OPTIM_FLAGS(o) \
    {"opt", SV_FLAG_STR, &(o).opt, 0, 0, "optimizer: adamw | lamb | sgd | lion (timm --opt; sgd = torch SGD, see --nesterov)", 0}, \
    {"momentum", SV_FLAG_DOUBLE, &(o).momentum, 0, 0.999999, "SGD momentum (timm --momentum)", 0}, \
    {"nesterov", SV_FLAG_BOOL, &(o).nesterov, 0, 1, "SGD: Nesterov momentum (timm --opt sgd / nesterov; plain = timm momentum)", 0}, \
    {"layer-decay", SV_FLAG_DOUBLE, &(o).layer_decay, 0, 1, "layer-wise LR decay: lr x F^(depth+1-layer) (0 = off; timm --layer-decay)", 0}, \
    {"sched", SV_FLAG_STR, &(o).sched, 0, 0, "LR schedule: cosine | step | multistep | poly | constant (see --sched-on-updates)", 0}, \
    {"sched-on-updates", SV_FLAG_INT, &(o).sched_on_updates, 0, 1, "1: set the LR every optimizer step; 0: once per epoch, timm's default (timm --sched-on-updates = 1)", 0}, \
    {"warmup-epochs", SV_FLAG_DOUBLE, &(o).warmup_epochs, 0, 1e6, "timm-form linear warmup over this many epochs (instead of --warmup steps)", 0}, \
    {"warmup-lr", SV_FLAG_DOUBLE, &(o).warmup_lr, 0, 10, "learning rate the warmup starts from", 0}, \
    {"warmup-prefix", SV_FLAG_BOOL, &(o).warmup_prefix, 0, 1, "with --warmup-epochs: the decay starts after the warmup, which adds to the epochs", 0}, \
    {"cooldown-epochs", SV_FLAG_DOUBLE, &(o).cooldown_epochs, 0, 1e6, "epochs at the final LR after the schedule (added to --epochs)", 0}, \
    {"decay-epochs", SV_FLAG_DOUBLE, &(o).decay_epochs, 1e-9, 1e9, "step schedule: decay interval in epochs", 0}, \
    {"decay-milestones", SV_FLAG_STR, &(o).milestones, 0, 0, "multistep schedule: comma list of epochs to decay at", 0}, \
    {"decay-rate", SV_FLAG_DOUBLE, &(o).decay_rate, 0, 1e6, "step / multistep: LR factor per decay (poly: the power unless --poly-power)", 0}, \
    {"poly-power", SV_FLAG_DOUBLE, &(o).poly_power, 0, 1e6, "poly schedule power (0: --decay-rate, as timm)", 0}, \
    {"lr-cycle-limit", SV_FLAG_INT, &(o).cycle_limit, 1, 1e6, "cosine / poly: number of cycles; > 1 restarts the schedule and lengthens the run (timm --lr-cycle-limit)", 0}, \
    {"lr-cycle-mul", SV_FLAG_DOUBLE, &(o).cycle_mul, 0, 1e3, "cosine / poly with --lr-cycle-limit > 1: each cycle this many times longer than the last (timm --lr-cycle-mul)", 0}, \
    {"lr-cycle-decay", SV_FLAG_DOUBLE, &(o).cycle_decay, 0, 1e3, "cosine / poly with --lr-cycle-limit > 1: peak LR factor per cycle (timm --lr-cycle-decay)", 0}, \
    {"lr-k-decay", SV_FLAG_DOUBLE, &(o).k_decay, 0, 1e3, "cosine / poly: k-decay, the curve runs on t^k / T^k (1 = off; timm --lr-k-decay)", 0}, \
    {"lr-noise", SV_FLAG_STR, &(o).noise, 0, 0, "LR noise from A, or over [A, B), as fractions of the decay length: A or A,B (timm --lr-noise A [B])", 0}, \
    {"lr-noise-pct", SV_FLAG_DOUBLE, &(o).noise_pct, 0, 1, "with --lr-noise: limit of the relative noise, |n| < this (timm --lr-noise-pct)", 0}, \
    {"lr-noise-std", SV_FLAG_DOUBLE, &(o).noise_std, 0, 100, "with --lr-noise: standard deviation of the normal noise (timm --lr-noise-std)", 0}, \
    {"lr-noise-type", SV_FLAG_STR, &(o).noise_type, 0, 0, "with --lr-noise: normal | uniform (timm's scheduler noise_type; train.py uses normal)", 0}
/* clang-format on */

/* Right after parsing: checks values and combinations (message names the flag) and fills the
 * update rule's own defaults where the flag was not given (Lion beta2 0.99, LAMB eps 1e-6, as
 * timm's optimizer classes). *warmup is --warmup, set to 0 when --warmup-epochs or
 * --sched-on-updates 0 is used (per-epoch stepping has timm's epoch warmup only; an explicit
 * --warmup N > 0 with it is an error, as are --steps and non-integer epoch counts, which timm's
 * epoch schedule does not have). The cycle and k-decay flags apply to cosine and poly only, the
 * noise parameters need --lr-noise, and --lr-cycle-limit > 1 sets the run's length (no --steps).
 * A flag the schedule does not use is refused when it differs from its default: --decay-epochs
 * (step only), --decay-milestones (multistep only), --decay-rate (step, multistep, and poly without
 * --poly-power, as its power). cosine and poly decay from lr (--lr) to min_lr (--min-lr):
 * min_lr > lr is refused (the "decay" would climb); --min-lr other than its default with another
 * schedule is refused, and so are --beta1 / --beta2 with --opt sgd and --eps with sgd or lion
 * (values other than the defaults, given on the command line or in a config). Sets
 * of->warmup_set. */
sv_status sv_train_optim_check(sv_train_optim_flags *of, const sv_flag *flags, int *warmup, long long steps, double lr,
                               double min_lr, double beta1, double *beta2, double *eps);

/* The schedule for `spe` steps per epoch, and the run's length *total in steps: --steps when
 * >= 0, else (epochs [+ warmup epochs with --warmup-prefix] + cooldown epochs) x spe, where with
 * --lr-cycle-limit > 1 the cycles' length (timm's get_cycle_length) replaces the epochs.
 * No decay left after the warmup and cooldown is refused for poly, and for cosine when the warmup
 * was set (--warmup-epochs, or of->warmup_set); with the default --warmup a run of that many steps
 * or fewer (a smoke test) is all warmup, as timm's cosine with warmup_t >= t_initial. The decay
 * length t_initial is never negative (0: no decay; recorded in checkpoints).
 * lr/min_lr/warmup are --lr, --min-lr, --warmup. With --sched-on-updates 1 its counts are steps
 * (epoch flags x spe, rounded); with 0 they are epochs and the schedule is stepped per epoch
 * (core/lr_sched.h on_epochs). seed: --seed, timm's noise_seed. */
sv_status sv_train_sched_build(const sv_train_optim_flags *of, double lr, double min_lr, int warmup, long long steps,
                               int epochs, uint64_t spe, uint64_t seed, long *total, sv_lr_sched *out);

/* The record of the update rule for the checkpoint index. */
sv_ckpt_optim sv_train_optim_record(const sv_train_optim_flags *of, double beta1, double beta2, double eps,
                                    double weight_decay);

#endif
