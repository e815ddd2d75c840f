/* Per-step learning-rate schedules (core/lr_sched.h). The expressions follow timm's _get_lr
 * operation for operation, so the values agree to the last bits or nearly. */
#include <math.h>
#include <string.h>

#include "core/lr_sched.h"
#include "core/torch_rng.h"

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

static double cyc_mul(const sv_lr_sched *s) { return s->cycle_mul > 0 ? s->cycle_mul : 1.0; }
static double cyc_k(const sv_lr_sched *s) { return s->k_decay > 0 ? s->k_decay : 1.0; }
static int cyc_limit(const sv_lr_sched *s) { return s->cycle_limit > 0 ? s->cycle_limit : 1; }

int sv_lr_sched_cycled(const sv_lr_sched *s) {
    return (s->kind == SV_SCHED_COSINE || s->kind == SV_SCHED_POLY) &&
        (cyc_limit(s) > 1 || cyc_mul(s) != 1.0 || cyc_k(s) != 1.0);
}

int64_t sv_lr_sched_cycle_length(const sv_lr_sched *s) {
    int cycles = cyc_limit(s);
    double m = cyc_mul(s);
    double len = m == 1.0 ? (double)s->t_initial * cycles
                          : floor(-(double)s->t_initial * (pow(m, (double)cycles) - 1.0) / (1.0 - m));
    if (!(len >= 0 && len < 0x1p62)) return -1; /* not finite, or no int64 holds it */
    return m == 1.0 ? s->t_initial * cycles : (int64_t)len;
}

int sv_lr_sched_time_ok(const sv_lr_sched *s, int64_t t) {
    double m = cyc_mul(s);
    return m >= 1.0 || s->t_initial <= 0 || 1.0 - (double)t / (double)s->t_initial * (1.0 - m) > 0;
}

/* timm's CosineLRScheduler / PolyLRScheduler._get_lr at decay time t >= 0, operation for
 * operation (Python's math.log(x, base) is log(x) / log(base), ** is pow). */
static double cycled(const sv_lr_sched *s, int64_t t) {
    double m = cyc_mul(s), k = cyc_k(s), ti = (double)s->t_initial, t_i, t_curr, i;
    if (m != 1.0) {
        i = floor(log(1.0 - (double)t / ti * (1.0 - m)) / log(m));
        double p = pow(m, i);
        t_i = p * ti;
        t_curr = (double)t - (1.0 - p) / (1.0 - m) * ti;
    } else {
        int64_t c = t / s->t_initial;
        i = (double)c;
        t_i = ti;
        t_curr = (double)(t - s->t_initial * c);
    }
    if (!(i < (double)cyc_limit(s))) return s->min_lr;
    double lr_max = s->lr * pow(s->cycle_decay, i);
    if (s->kind == SV_SCHED_COSINE)
        return s->min_lr + 0.5 * (lr_max - s->min_lr) * (1.0 + cos(M_PI * pow(t_curr, k) / pow(t_i, k)));
    return s->min_lr + (lr_max - s->min_lr) * pow(1.0 - pow(t_curr, k) / pow(t_i, k), s->power);
}

/* The decay phase at time t >= 0 (cycle_limit 1, cycle_mul 1, k_decay 1: the plain formulas). */
static double decayed(const sv_lr_sched *s, int64_t t) {
    if (sv_lr_sched_cycled(s)) return cycled(s, t);
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

double sv_lr_sched_noise(const sv_lr_sched *s, int64_t t) {
    if (s->noise == SV_NOISE_OFF || t <= 0) return 0.0;
    double ti = (double)s->t_initial, tt = (double)t;
    if (tt < s->noise_range[0] * ti) return 0.0;
    if (s->noise == SV_NOISE_RANGE && !(tt < s->noise_range[1] * ti)) return 0.0;
    sv_torch_gen g;
    sv_torch_gen_seed(&g, s->noise_seed + (uint64_t)t);
    if (s->noise_type == SV_NOISE_UNIFORM) return 2.0 * (sv_torch_rand1(&g) - 0.5) * s->noise_pct;
    for (;;) { /* timm redraws until the noise is inside the limit */
        double n = sv_torch_randn1(&g) * s->noise_std;
        if (fabs(n) < s->noise_pct) return n;
    }
}

static double base_lr(const sv_lr_sched *s, int64_t step) {
    if (s->form == SV_WARMUP_STEPS) {
        if (step < s->warmup) return s->warmup_lr + (s->lr - s->warmup_lr) * (double)(step + 1) / (double)s->warmup;
        if (s->kind == SV_SCHED_COSINE && !sv_lr_sched_cycled(s)) { /* the original expression, kept bit for bit */
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

double sv_lr_sched_at(const sv_lr_sched *s, int64_t step) {
    if (s->on_epochs) step /= s->spe > 0 ? s->spe : 1; /* timm's step(epoch): the schedule's time is the epoch */
    double v = base_lr(s, step);
    if (s->noise == SV_NOISE_OFF) return v;
    double n = sv_lr_sched_noise(s, step);
    return n != 0.0 ? v + v * n : v;
}
