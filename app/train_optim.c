/* Optimizer and LR-schedule flags of shardvit train (app/train_optim.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/train_optim.h"
#include "fsdp/optim.h"

/* "90,180,270" -> ascending epochs. */
static sv_status parse_milestones(const char *s, double *out, int *n) {
    *n = 0;
    const char *p = s ? s : "";
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v > 0) || !isfinite(v) || (*end && *end != ','))
            return SV_FAIL(SV_ERR_INVALID, "--decay-milestones: '%s' is not a comma list of positive epochs", s);
        if (*n == SV_SCHED_MAX_MILESTONES)
            return SV_FAIL(SV_ERR_INVALID, "--decay-milestones: more than %d milestones", SV_SCHED_MAX_MILESTONES);
        if (*n && v <= out[*n - 1]) return SV_FAIL(SV_ERR_INVALID, "--decay-milestones: '%s' must be ascending", s);
        out[(*n)++] = v;
        p = *end ? end + 1 : end;
        if (*end && !*p) return SV_FAIL(SV_ERR_INVALID, "--decay-milestones: '%s' ends with a comma", s);
    }
    if (!*n) return SV_FAIL(SV_ERR_INVALID, "--decay-milestones: empty list");
    return SV_OK;
}

/* --lr-noise "A" or "A,B": fractions of the decay length (timm --lr-noise A [B]), A >= 0, A < B.
 * *n: the count (1 or 2). */
static sv_status parse_noise(const char *s, double out[2], int *n) {
    *n = 0;
    const char *p = s ? s : "";
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !isfinite(v) || v < 0 || (*end && *end != ','))
            return SV_FAIL(SV_ERR_INVALID,
                           "--lr-noise: '%s' is not A or A,B (fractions of the decay length where the noise starts "
                           "and stops, >= 0)",
                           s);
        if (*n == 2) return SV_FAIL(SV_ERR_INVALID, "--lr-noise: '%s' has more than two numbers (start[,stop])", s);
        out[(*n)++] = v;
        p = *end ? end + 1 : end;
        if (*end && !*p) return SV_FAIL(SV_ERR_INVALID, "--lr-noise: '%s' ends with a comma", s);
    }
    if (!*n) return SV_FAIL(SV_ERR_INVALID, "--lr-noise: empty");
    if (*n == 2 && !(out[0] < out[1]))
        return SV_FAIL(SV_ERR_INVALID, "--lr-noise: '%s': the start must come before the stop (no step is noised)", s);
    return SV_OK;
}

static sv_status parse_noise_type(const char *s, sv_noise_type *t) {
    if (s && !strcmp(s, "normal"))
        *t = SV_NOISE_NORMAL;
    else if (s && !strcmp(s, "uniform"))
        *t = SV_NOISE_UNIFORM;
    else
        return SV_FAIL(SV_ERR_INVALID, "--lr-noise-type: invalid value '%s' (expected normal or uniform)", s ? s : "");
    return SV_OK;
}

/* The cycle, k-decay and noise flags (timm's cosine / poly cycles, Scheduler noise). */
static sv_status check_cycles_noise(const sv_train_optim_flags *of, long long steps, sv_sched_kind sk) {
    int cyc = sk == SV_SCHED_COSINE || sk == SV_SCHED_POLY;
    if (!cyc && (of->cycle_limit != 1 || of->cycle_mul != 1 || of->cycle_decay != 0.5))
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-cycle-limit / --lr-cycle-mul / --lr-cycle-decay apply to --sched cosine and poly only "
                       "(timm's cycle schedulers; this run has --sched %s)",
                       of->sched);
    if (!cyc && of->k_decay != 1)
        return SV_FAIL(SV_ERR_INVALID, "--lr-k-decay applies to --sched cosine and poly only (this run has --sched %s)",
                       of->sched);
    if (!(of->k_decay > 0)) return SV_FAIL(SV_ERR_INVALID, "--lr-k-decay must be > 0 (1 = off)");
    if (!(of->cycle_mul > 0)) return SV_FAIL(SV_ERR_INVALID, "--lr-cycle-mul must be > 0");
    if (of->cycle_limit == 1 && (of->cycle_mul != 1 || of->cycle_decay != 0.5))
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-cycle-mul and --lr-cycle-decay shape the cycles after the first: they need "
                       "--lr-cycle-limit > 1");
    if (of->cycle_limit > 1 && steps >= 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-cycle-limit %d sets the run's length (the cycles of --epochs, as timm); --steps %lld "
                       "would cut it: drop --steps",
                       of->cycle_limit, steps);
    sv_noise_type nt = SV_NOISE_NORMAL;
    SV_TRY(parse_noise_type(of->noise_type, &nt));
    if (!of->noise) {
        if (of->noise_pct != 0.67 || of->noise_std != 1 || nt != SV_NOISE_NORMAL)
            return SV_FAIL(SV_ERR_INVALID, "--lr-noise-pct / --lr-noise-std / --lr-noise-type need --lr-noise");
        return SV_OK;
    }
    double r[2];
    int n;
    SV_TRY(parse_noise(of->noise, r, &n));
    if (!(of->noise_pct > 0))
        return SV_FAIL(SV_ERR_INVALID, "--lr-noise-pct must be > 0 (the noise is redrawn until |n| < it)");
    if (nt == SV_NOISE_NORMAL && of->noise_std > 100 * of->noise_pct)
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-noise-std %g is over 100 x --lr-noise-pct %g: the normal noise is redrawn until it falls "
                       "inside the limit, which would take hundreds of draws or more",
                       of->noise_std, of->noise_pct);
    return SV_OK;
}

/* --sched-on-updates 0: timm's per-epoch schedule counts whole epochs (its flags are integers). */
static sv_status check_on_epochs(const sv_train_optim_flags *of, const sv_flag *flags, int warmup, long long steps,
                                 sv_sched_kind sk) {
    if (sv_flag_seen(flags, "warmup") && warmup > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--sched-on-updates 0: --warmup %d counts steps; give the warmup in "
                       "--warmup-epochs (timm's per-epoch warmup)",
                       warmup);
    const struct {
        const char *name;
        double v;
    } whole[] = {{"--warmup-epochs", of->warmup_epochs}, {"--cooldown-epochs", of->cooldown_epochs}};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        if (whole[i].v != floor(whole[i].v))
            return SV_FAIL(SV_ERR_INVALID, "--sched-on-updates 0: %s %g is not a whole number of epochs", whole[i].name,
                           whole[i].v);
    double ms[SV_SCHED_MAX_MILESTONES];
    int n = 0;
    if (sk == SV_SCHED_MULTISTEP) SV_TRY(parse_milestones(of->milestones, ms, &n));
    for (int i = 0; i < n; i++)
        if (ms[i] != floor(ms[i]))
            return SV_FAIL(SV_ERR_INVALID, "--sched-on-updates 0: --decay-milestones '%s' has %g, not a whole epoch",
                           of->milestones, ms[i]);
    if (steps >= 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--sched-on-updates 0 steps the LR per epoch of --epochs; --steps %lld counts "
                       "optimizer steps (drop it, or use --sched-on-updates 1)",
                       steps);
    return SV_OK;
}

/* The decay flags apply to the schedules that use them; given with another (a value other than
 * the default) they would be ignored. */
static sv_status check_decay_flags(const sv_train_optim_flags *of, sv_sched_kind sk) {
    if (sk != SV_SCHED_STEP && of->decay_epochs != SV_TRAIN_DEFAULT_DECAY_EPOCHS)
        return SV_FAIL(SV_ERR_INVALID, "--decay-epochs applies to --sched step only (this run has --sched %s)",
                       of->sched);
    if (sk != SV_SCHED_MULTISTEP && (!of->milestones || strcmp(of->milestones, SV_TRAIN_DEFAULT_MILESTONES)))
        return SV_FAIL(SV_ERR_INVALID, "--decay-milestones applies to --sched multistep only (this run has --sched %s)",
                       of->sched);
    int rate = sk == SV_SCHED_STEP || sk == SV_SCHED_MULTISTEP || (sk == SV_SCHED_POLY && of->poly_power == 0);
    if (!rate && of->decay_rate != SV_TRAIN_DEFAULT_DECAY_RATE)
        return SV_FAIL(SV_ERR_INVALID,
                       "--decay-rate applies to --sched step and multistep, and to poly without --poly-power (its "
                       "power; this run has --sched %s%s)",
                       of->sched, sk == SV_SCHED_POLY ? " with --poly-power" : "");
    return SV_OK;
}

sv_status sv_train_optim_check(sv_train_optim_flags *of, const sv_flag *flags, int *warmup, long long steps, double lr,
                               double min_lr, double beta1, double *beta2, double *eps) {
    sv_opt_kind k;
    sv_sched_kind sk;
    SV_TRY(sv_opt_parse(of->opt, &k));
    SV_TRY(sv_sched_parse(of->sched, &sk));
    SV_TRY(check_decay_flags(of, sk));
    if ((sk == SV_SCHED_COSINE || sk == SV_SCHED_POLY) && min_lr > lr)
        return SV_FAIL(SV_ERR_INVALID,
                       "--min-lr %g is above --lr %g: --sched %s decays the LR from --lr to --min-lr, so it would "
                       "climb instead; give --min-lr <= --lr",
                       min_lr, lr, of->sched);
    of->warmup_set = sv_flag_seen(flags, "warmup") && *warmup != SV_TRAIN_DEFAULT_WARMUP;
    if (k != SV_OPT_SGD && (sv_flag_seen(flags, "nesterov") && of->nesterov))
        return SV_FAIL(SV_ERR_INVALID, "--nesterov applies to --opt sgd only (this run has --opt %s)", of->opt);
    if (k != SV_OPT_SGD && sv_flag_seen(flags, "momentum") && of->momentum != 0.9)
        return SV_FAIL(SV_ERR_INVALID, "--momentum applies to --opt sgd only (this run has --opt %s)", of->opt);
    if (of->nesterov && of->momentum == 0)
        return SV_FAIL(SV_ERR_INVALID, "--nesterov needs --momentum > 0 (torch SGD's rule)");
    /* the mirror rules: a value other than the default (a run's own config.toml lists the
     * defaults) for a setting this optimizer or schedule has none of would be ignored */
    if (k == SV_OPT_SGD &&
        ((sv_flag_seen(flags, "beta1") && beta1 != SV_TRAIN_DEFAULT_BETA1) ||
         (sv_flag_seen(flags, "beta2") && *beta2 != SV_TRAIN_DEFAULT_BETA2)))
        return SV_FAIL(SV_ERR_INVALID,
                       "--beta1 / --beta2 apply to --opt adamw, lamb and lion (this run has --opt sgd)");
    if ((k == SV_OPT_SGD || k == SV_OPT_LION) && sv_flag_seen(flags, "eps") && *eps != SV_TRAIN_DEFAULT_EPS)
        return SV_FAIL(SV_ERR_INVALID, "--eps applies to --opt adamw and lamb (this run has --opt %s)", of->opt);
    if (sk != SV_SCHED_COSINE && sk != SV_SCHED_POLY && sv_flag_seen(flags, "min-lr") &&
        min_lr != SV_TRAIN_DEFAULT_MIN_LR)
        return SV_FAIL(SV_ERR_INVALID,
                       "--min-lr applies to --sched cosine and poly, which decay to it (this run has --sched %s: "
                       "timm's step and multistep schedules have no floor either)",
                       of->sched);
    /* --warmup-epochs given is timm's form, 0 included (timm: no warmup), never the default
     * --warmup of 10 steps; a --warmup given beside a --warmup-epochs of 0 (a run's own
     * config.toml lists both) keeps the steps form it records */
    const int timm_warmup =
        of->warmup_epochs > 0 || (sv_flag_seen(flags, "warmup-epochs") && !sv_flag_seen(flags, "warmup"));
    if (timm_warmup && sv_flag_seen(flags, "warmup") && *warmup > 0)
        return SV_FAIL(SV_ERR_INVALID, "give --warmup (steps) or --warmup-epochs, not both");
    if (of->warmup_prefix && !timm_warmup)
        return SV_FAIL(SV_ERR_INVALID,
                       "--warmup-prefix needs --warmup-epochs (--warmup steps always precede the decay)");
    double ms[SV_SCHED_MAX_MILESTONES];
    int n;
    if (sk == SV_SCHED_MULTISTEP) SV_TRY(parse_milestones(of->milestones, ms, &n));
    if (sk == SV_SCHED_POLY && of->poly_power == 0 && of->decay_rate == 0)
        return SV_FAIL(SV_ERR_INVALID, "--sched poly: the power (--poly-power, else --decay-rate) must be > 0");
    if (!of->sched_on_updates) SV_TRY(check_on_epochs(of, flags, *warmup, steps, sk));
    SV_TRY(check_cycles_noise(of, steps, sk));
    if (timm_warmup || !of->sched_on_updates) *warmup = 0;
    if (k == SV_OPT_LION && !sv_flag_seen(flags, "beta2")) *beta2 = 0.99;
    if (k == SV_OPT_LAMB && !sv_flag_seen(flags, "eps")) *eps = 1e-6;
    return SV_OK;
}

static int64_t epochs_to_steps(double e, uint64_t spe) { return (int64_t)llround(e * (double)spe); }

/* The cycle, k-decay and noise parameters (checked by sv_train_optim_check). */
static sv_status set_cycles_noise(const sv_train_optim_flags *of, uint64_t seed, sv_lr_sched *s) {
    s->cycle_mul = of->cycle_mul;
    s->cycle_decay = of->cycle_decay;
    s->cycle_limit = of->cycle_limit;
    s->k_decay = of->k_decay;
    if (!of->noise) return SV_OK;
    int n;
    SV_TRY(parse_noise(of->noise, s->noise_range, &n));
    SV_TRY(parse_noise_type(of->noise_type, &s->noise_type));
    s->noise = n == 2 ? SV_NOISE_RANGE : SV_NOISE_FROM;
    s->noise_pct = of->noise_pct;
    s->noise_std = of->noise_std;
    s->noise_seed = seed;
    return SV_OK;
}

/* After the run's length is known: the cycles need a decay length, timm's cycle index must be
 * defined over the whole run (--lr-cycle-mul < 1), and the noise must start inside the run. The
 * last time of the run is last_t (a step, or an epoch with --sched-on-updates 0). */
static sv_status check_built(const sv_train_optim_flags *of, const sv_lr_sched *s, int64_t last_t) {
    const char *unit = s->on_epochs ? "epoch" : "step";
    if (sv_lr_sched_cycled(s) && s->t_initial <= 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--sched %s with cycles or k-decay: no %ss left to decay over after the warmup of %lld "
                       "(--warmup, 10 steps unless given, or --warmup-epochs) and the cooldown of %lld "
                       "(--cooldown-epochs): shorten them or train longer",
                       of->sched, unit, (long long)s->warmup, (long long)s->cooldown);
    int64_t decay_t = last_t - (s->warmup_prefix ? s->warmup : 0);
    if (sv_lr_sched_cycled(s) && decay_t >= 0 && !sv_lr_sched_time_ok(s, decay_t))
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-cycle-mul %g < 1: the cycles shrink towards %g %ss of decay and timm's cycle formula is "
                       "undefined from there, but this run decays for %lld (fewer --lr-cycle-limit or "
                       "--cooldown-epochs)",
                       of->cycle_mul, (double)s->t_initial / (1.0 - of->cycle_mul), unit, (long long)decay_t + 1);
    if (s->noise != SV_NOISE_OFF && s->t_initial <= 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-noise %s: the noise range is a fraction of the decay length, and this run has no %ss "
                       "left to decay over after its warmup and cooldown",
                       of->noise, unit);
    if (s->noise == SV_NOISE_OFF) return SV_OK;
    /* the noised times: t >= 1 (time 0 never is), t >= A x T, t < B x T for a range, t <= last_t */
    double lo = s->noise_range[0] * (double)s->t_initial, hi = s->noise_range[1] * (double)s->t_initial;
    double first = lo > 1 ? ceil(lo) : 1;
    if (first > (double)last_t)
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-noise %s: the noise starts at %s %g (x %lld, the decay length), after the run's last "
                       "%s %lld",
                       of->noise, unit, lo, (long long)s->t_initial, unit, (long long)last_t);
    if (s->noise == SV_NOISE_RANGE && !(first < hi))
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-noise %s: the noise range [%g, %g) %ss (x %lld, the decay length) holds no %s that is "
                       "noised (%s 0 never is, as in timm): no noise would be added; widen the range",
                       of->noise, lo, hi, unit, (long long)s->t_initial, unit, unit);
    return SV_OK;
}

/* The run's length in schedule units (steps, or epochs with --sched-on-updates 0) when
 * --lr-cycle-limit > 1: timm's get_cycle_length() + the cooldown + a prefixed warmup. per_unit:
 * optimizer steps per unit. Refused when the cycles make it longer than SV_SCHED_MAX_STEPS steps
 * (--lr-cycle-mul^limit grows past any run long before it overflows). */
#define SV_SCHED_MAX_STEPS ((int64_t)1 << 40)
static sv_status cycled_run_length(const sv_train_optim_flags *of, const sv_lr_sched *s, int64_t per_unit,
                                   int64_t *units) {
    int64_t len = sv_lr_sched_cycle_length(s), extra = s->cooldown + (s->warmup_prefix ? s->warmup : 0);
    if (len < 0 || len > SV_SCHED_MAX_STEPS / per_unit - extra)
        return SV_FAIL(SV_ERR_INVALID,
                       "--lr-cycle-limit %d with --lr-cycle-mul %g: %d cycles of %lld %ss growing by %g make a "
                       "schedule of more than 2^40 steps; use fewer cycles or a smaller multiplier",
                       of->cycle_limit, of->cycle_mul, of->cycle_limit, (long long)s->t_initial,
                       s->on_epochs ? "epoch" : "step", of->cycle_mul);
    *units = len + extra;
    return SV_OK;
}

/* --sched-on-updates 0: timm's create_scheduler_v2(step_on_epochs=True), every count in epochs
 * (whole numbers, sv_train_optim_check); *total = the epochs it returns x spe. */
static sv_status sched_build_epochs(const sv_train_optim_flags *of, double lr, double min_lr, int epochs, uint64_t spe,
                                    uint64_t seed, long *total, sv_lr_sched *s) {
    s->on_epochs = 1;
    s->spe = (int64_t)spe;
    s->lr = lr;
    s->min_lr = min_lr;
    s->warmup_lr = of->warmup_lr;
    s->form = SV_WARMUP_TIMM;
    s->warmup = (int64_t)of->warmup_epochs;
    s->warmup_prefix = of->warmup_prefix;
    s->cooldown = (int64_t)of->cooldown_epochs;
    s->decay_steps = of->decay_epochs;
    s->decay_rate = of->decay_rate;
    s->power = of->poly_power > 0 ? of->poly_power : of->decay_rate;
    double ms[SV_SCHED_MAX_MILESTONES];
    if (s->kind == SV_SCHED_MULTISTEP) {
        SV_TRY(parse_milestones(of->milestones, ms, &s->n_milestones));
        for (int i = 0; i < s->n_milestones; i++) s->milestones[i] = (int64_t)ms[i];
    }
    s->t_initial = epochs > 0 ? epochs : 1;
    SV_TRY(set_cycles_noise(of, seed, s));
    /* timm's create_scheduler_v2: cosine / poly run their cycles (get_cycle_length) + cooldown */
    int64_t run_epochs = s->t_initial + s->cooldown + (s->warmup_prefix ? s->warmup : 0);
    if (s->cycle_limit > 1) SV_TRY(cycled_run_length(of, s, s->spe, &run_epochs));
    *total = (long)(run_epochs * s->spe);
    return check_built(of, s, run_epochs - 1);
}

/* --warmup steps (and the cooldown) take the whole run: nothing is left to decay over. */
static sv_status no_decay_left(const sv_train_optim_flags *of, const sv_lr_sched *s, long total) {
    return SV_FAIL(SV_ERR_INVALID,
                   "--sched %s: no steps left to decay over after --warmup %lld and --cooldown-epochs (%ld steps in "
                   "all): the run would end inside its warmup; give a --warmup shorter than the run",
                   of->sched, (long long)s->warmup, total);
}

sv_status sv_train_sched_build(const sv_train_optim_flags *of, double lr, double min_lr, int warmup, long long steps,
                               int epochs, uint64_t spe, uint64_t seed, long *total, sv_lr_sched *s) {
    memset(s, 0, sizeof *s);
    SV_TRY(sv_sched_parse(of->sched, &s->kind));
    if (!of->sched_on_updates) return sched_build_epochs(of, lr, min_lr, epochs, spe, seed, total, s);
    s->lr = lr;
    s->min_lr = min_lr;
    s->warmup_lr = of->warmup_lr;
    s->form = of->warmup_epochs > 0 ? SV_WARMUP_TIMM : SV_WARMUP_STEPS;
    s->warmup = s->form == SV_WARMUP_TIMM ? epochs_to_steps(of->warmup_epochs, spe) : warmup;
    s->warmup_prefix = s->form == SV_WARMUP_TIMM ? of->warmup_prefix : 1;
    s->cooldown = epochs_to_steps(of->cooldown_epochs, spe);
    s->decay_steps = of->decay_epochs * (double)spe;
    s->decay_rate = of->decay_rate;
    s->power = of->poly_power > 0 ? of->poly_power : of->decay_rate;
    double ms[SV_SCHED_MAX_MILESTONES];
    if (s->kind == SV_SCHED_MULTISTEP) {
        SV_TRY(parse_milestones(of->milestones, ms, &s->n_milestones));
        for (int i = 0; i < s->n_milestones; i++) s->milestones[i] = epochs_to_steps(ms[i], spe);
    }
    int64_t extra = s->cooldown + (s->form == SV_WARMUP_TIMM && s->warmup_prefix ? s->warmup : 0);
    if (steps >= 0)
        *total = (long)steps;
    else
        *total = (long)(spe * (uint64_t)(epochs > 0 ? epochs : 1)) + (long)extra;
    /* the decay length: what remains after the cooldown and a prefixed warmup */
    s->t_initial = (int64_t)*total - s->cooldown - (s->warmup_prefix ? s->warmup : 0);
    SV_TRY(set_cycles_noise(of, seed, s));
    if (s->cycle_limit > 1 && s->t_initial > 0) { /* no --steps: the cycles of timm's get_cycle_length */
        int64_t steps_run = 0;
        SV_TRY(cycled_run_length(of, s, 1, &steps_run));
        *total = (long)steps_run;
    }
    if (s->form == SV_WARMUP_TIMM && (s->kind == SV_SCHED_COSINE || s->kind == SV_SCHED_POLY) && s->t_initial <= 0 &&
        *total > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--sched %s: no steps left to decay over (%ld steps, %lld warmup, %lld cooldown)", of->sched,
                       *total, (long long)s->warmup, (long long)s->cooldown);
    if (s->form == SV_WARMUP_STEPS && s->t_initial <= 0 && *total > 0 && s->kind == SV_SCHED_POLY)
        return no_decay_left(of, s, *total);
    if (*total > 0) SV_TRY(check_built(of, s, (int64_t)*total - 1)); /* cycles and noise: their own messages */
    if (s->form == SV_WARMUP_STEPS && s->t_initial <= 0 && *total > 0 && s->kind == SV_SCHED_COSINE && of->warmup_set)
        return no_decay_left(of, s, *total);
    /* the default --warmup over a shorter run (cosine, step, ...): all warmup, no decay (timm's
     * cosine with warmup_t >= t_initial); the decay length is 0, not negative */
    if (s->t_initial < 0) s->t_initial = 0;
    return SV_OK;
}

sv_ckpt_optim sv_train_optim_record(const sv_train_optim_flags *of, double beta1, double beta2, double eps,
                                    double weight_decay) {
    sv_ckpt_optim r = {
        .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay, .layer_decay = of->layer_decay};
    if (sv_opt_parse(of->opt, &r.kind) != SV_OK) r.kind = SV_OPT_ADAMW; /* checked before */
    if (r.kind == SV_OPT_SGD) r.momentum = of->momentum, r.nesterov = of->nesterov;
    return r;
}
