/* Per-step learning-rate schedules (core/lr_sched.h). The expressions follow timm's _get_lr
 * operation for operation, so the values agree to the last bits or nearly. */
#include <math.h>
#include <string.h>

#include "core/lr_sched.h"

static const char *const sched_names[] = {"cosine", "step", "multistep", "poly", "constant"};

const char *sv_sched_name(sv_sched_kind k) {
    return (unsigned)k < sizeof sched_names / sizeof sched_names[0] ? sched_names[k] : "?";
}

sv_status sv_sched_parse(const char *s, sv_sched_kind *out) {
    for (int k = 0; k < (int)(sizeof sched_names / sizeof sched_names[0]); k++)
        if (s && !strcmp(s, sched_names[k])) {
            *out = (sv_sched_kind)k;
            return SV_OK;
        }
    return SV_FAIL(SV_ERR_INVALID, "--sched: invalid value '%s' (expected cosine, step, multistep, poly or constant)",
                   s ? s : "");
}

/* The decay phase at time t >= 0 (cycle_limit 1, cycle_mul 1, k_decay 1, no noise). */
static double decayed(const sv_lr_sched *s, int64_t t) {
    switch (s->kind) {
    case SV_SCHED_COSINE:
    case SV_SCHED_POLY: {
        if (t >= s->t_initial) return s->min_lr; /* past the one cycle */
        double tc = (double)t, ti = (double)s->t_initial;
        if (s->kind == SV_SCHED_COSINE) return s->min_lr + 0.5 * (s->lr - s->min_lr) * (1.0 + cos(M_PI * tc / ti));
        return s->min_lr + (s->lr - s->min_lr) * pow(1.0 - tc / ti, s->power);
    }
    case SV_SCHED_STEP: return s->lr * pow(s->decay_rate, floor((double)t / s->decay_steps));
    case SV_SCHED_MULTISTEP: {
        int n = 0; /* bisect_right(milestones, t + 1): timm's milestone m applies from t = m - 1 */
        while (n < s->n_milestones && s->milestones[n] <= t + 1) n++;
        return s->lr * pow(s->decay_rate, (double)n);
    }
    default: return s->lr;
    }
}

double sv_lr_sched_at(const sv_lr_sched *s, int64_t step) {
    if (s->on_epochs) step /= s->spe > 0 ? s->spe : 1; /* timm's step(epoch): the schedule's time is the epoch */
    if (s->form == SV_WARMUP_STEPS) {
        if (step < s->warmup) return s->warmup_lr + (s->lr - s->warmup_lr) * (double)(step + 1) / (double)s->warmup;
        if (s->kind == SV_SCHED_COSINE) { /* the original expression, kept bit for bit */
            double span = (double)s->t_initial;
            double p = span > 0 ? (double)(step - s->warmup) / span : 1.0;
            if (p > 1) p = 1;
            return s->min_lr + 0.5 * (s->lr - s->min_lr) * (1.0 + cos(M_PI * p));
        }
        return decayed(s, step - s->warmup);
    }
    if (step < s->warmup) return s->warmup_lr + (double)step * ((s->lr - s->warmup_lr) / (double)s->warmup);
    return decayed(s, s->warmup_prefix ? step - s->warmup : step);
}
