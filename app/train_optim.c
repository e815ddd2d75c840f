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

sv_status sv_train_optim_check(const sv_train_optim_flags *of, const sv_flag *flags, int *warmup, long long steps,
                               double *beta2, double *eps) {
    sv_opt_kind k;
    sv_sched_kind sk;
    SV_TRY(sv_opt_parse(of->opt, &k));
    SV_TRY(sv_sched_parse(of->sched, &sk));
    if (k != SV_OPT_SGD && (sv_flag_seen(flags, "nesterov") && of->nesterov))
        return SV_FAIL(SV_ERR_INVALID, "--nesterov applies to --opt sgd only (this run has --opt %s)", of->opt);
    if (k != SV_OPT_SGD && sv_flag_seen(flags, "momentum") && of->momentum != 0.9)
        return SV_FAIL(SV_ERR_INVALID, "--momentum applies to --opt sgd only (this run has --opt %s)", of->opt);
    if (of->nesterov && of->momentum == 0)
        return SV_FAIL(SV_ERR_INVALID, "--nesterov needs --momentum > 0 (torch SGD's rule)");
    if (of->warmup_epochs > 0 && sv_flag_seen(flags, "warmup") && *warmup > 0)
        return SV_FAIL(SV_ERR_INVALID, "give --warmup (steps) or --warmup-epochs, not both");
    if (of->warmup_prefix && !(of->warmup_epochs > 0))
        return SV_FAIL(SV_ERR_INVALID,
                       "--warmup-prefix needs --warmup-epochs (--warmup steps always precede the decay)");
    double ms[SV_SCHED_MAX_MILESTONES];
    int n;
    if (sk == SV_SCHED_MULTISTEP) SV_TRY(parse_milestones(of->milestones, ms, &n));
    if (sk == SV_SCHED_POLY && of->poly_power == 0 && of->decay_rate == 0)
        return SV_FAIL(SV_ERR_INVALID, "--sched poly: the power (--poly-power, else --decay-rate) must be > 0");
    if (!of->sched_on_updates) SV_TRY(check_on_epochs(of, flags, *warmup, steps, sk));
    if (of->warmup_epochs > 0 || !of->sched_on_updates) *warmup = 0;
    if (k == SV_OPT_LION && !sv_flag_seen(flags, "beta2")) *beta2 = 0.99;
    if (k == SV_OPT_LAMB && !sv_flag_seen(flags, "eps")) *eps = 1e-6;
    return SV_OK;
}

static int64_t epochs_to_steps(double e, uint64_t spe) { return (int64_t)llround(e * (double)spe); }

/* --sched-on-updates 0: timm's create_scheduler_v2(step_on_epochs=True), every count in epochs
 * (whole numbers, sv_train_optim_check); *total = the epochs it returns x spe. */
static sv_status sched_build_epochs(const sv_train_optim_flags *of, double lr, double min_lr, int epochs, uint64_t spe,
                                    long *total, sv_lr_sched *s) {
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
    int64_t run_epochs = s->t_initial + s->cooldown + (s->warmup_prefix ? s->warmup : 0);
    *total = (long)(run_epochs * s->spe);
    return SV_OK;
}

sv_status sv_train_sched_build(const sv_train_optim_flags *of, double lr, double min_lr, int warmup, long long steps,
                               int epochs, uint64_t spe, long *total, sv_lr_sched *s) {
    memset(s, 0, sizeof *s);
    SV_TRY(sv_sched_parse(of->sched, &s->kind));
    if (!of->sched_on_updates) return sched_build_epochs(of, lr, min_lr, epochs, spe, total, s);
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
    if (s->form == SV_WARMUP_TIMM && (s->kind == SV_SCHED_COSINE || s->kind == SV_SCHED_POLY) && s->t_initial <= 0 &&
        *total > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--sched %s: no steps left to decay over (%ld steps, %lld warmup, %lld cooldown)", of->sched,
                       *total, (long long)s->warmup, (long long)s->cooldown);
    if (s->form == SV_WARMUP_STEPS && s->kind != SV_SCHED_COSINE && s->t_initial <= 0 && s->kind == SV_SCHED_POLY &&
        *total > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--sched poly: no steps left to decay over after --warmup and --cooldown-epochs");
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
