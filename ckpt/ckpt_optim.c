/* Optimizer and LR-schedule records of index.json (ckpt/ckpt_optim.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckpt/ckpt_optim.h"
#include "core/log.h"
#include "fsdp/optim.h"

const char *sv_ckpt_sched_kind(const sv_lr_sched *s) {
    return s->kind == SV_SCHED_COSINE && s->form == SV_WARMUP_STEPS ? "warmup_cosine" : sv_sched_name(s->kind);
}

void sv_ckpt_sched_write(sv_json_writer *w, const sv_lr_sched *s) {
    sv_json_key(w, "warmup_form"), sv_json_str(w, s->form == SV_WARMUP_TIMM ? "timm" : "steps");
    if (s->warmup >= 0) sv_json_key(w, "warmup_t"), sv_json_i64(w, s->warmup);
    sv_json_key(w, "warmup_lr"), sv_json_f64(w, s->warmup_lr);
    sv_json_key(w, "warmup_prefix"), sv_json_bool(w, s->warmup_prefix);
    if (s->t_initial >= 0) sv_json_key(w, "t_initial"), sv_json_i64(w, s->t_initial);
    sv_json_key(w, "cooldown"), sv_json_i64(w, s->cooldown);
    sv_json_key(w, "decay_steps"), sv_json_f64(w, s->decay_steps);
    sv_json_key(w, "decay_milestones");
    sv_json_arr_begin(w);
    for (int i = 0; i < s->n_milestones; i++) sv_json_i64(w, s->milestones[i]);
    sv_json_arr_end(w);
    sv_json_key(w, "decay_rate"), sv_json_f64(w, s->decay_rate);
    sv_json_key(w, "power"), sv_json_f64(w, s->power);
    if (s->on_epochs) { /* --sched-on-updates 0 only, so per-update indexes keep their bytes */
        sv_json_key(w, "sched_on_updates"), sv_json_bool(w, 0);
        sv_json_key(w, "steps_per_epoch"), sv_json_i64(w, s->spe);
    }
    /* cycles, k-decay and noise: only when on, for the same reason */
    if (s->cycle_limit > 1) {
        sv_json_key(w, "cycle_limit"), sv_json_i64(w, s->cycle_limit);
        sv_json_key(w, "cycle_mul"), sv_json_f64(w, s->cycle_mul);
        sv_json_key(w, "cycle_decay"), sv_json_f64(w, s->cycle_decay);
    }
    if (s->k_decay > 0 && s->k_decay != 1) sv_json_key(w, "k_decay"), sv_json_f64(w, s->k_decay);
    if (s->noise != SV_NOISE_OFF) {
        sv_json_key(w, "noise_range");
        sv_json_arr_begin(w);
        for (int i = 0; i < (s->noise == SV_NOISE_RANGE ? 2 : 1); i++) sv_json_f64(w, s->noise_range[i]);
        sv_json_arr_end(w);
        sv_json_key(w, "noise_pct"), sv_json_f64(w, s->noise_pct);
        sv_json_key(w, "noise_std"), sv_json_f64(w, s->noise_std);
        sv_json_key(w, "noise_type"), sv_json_str(w, s->noise_type == SV_NOISE_UNIFORM ? "uniform" : "normal");
        sv_json_key(w, "noise_seed"), sv_json_u64(w, s->noise_seed);
    }
}

int sv_ckpt_sched_cycles_noise_differ(const sv_lr_sched *a, const sv_lr_sched *b) {
    int la = a->cycle_limit > 1 ? a->cycle_limit : 1, lb = b->cycle_limit > 1 ? b->cycle_limit : 1;
    double ka = a->k_decay > 0 ? a->k_decay : 1, kb = b->k_decay > 0 ? b->k_decay : 1;
    if (la != lb || ka != kb) return 1;
    if (la > 1 && (a->cycle_mul != b->cycle_mul || a->cycle_decay != b->cycle_decay)) return 1;
    if (a->noise != b->noise) return 1;
    if (a->noise == SV_NOISE_OFF) return 0;
    return a->noise_range[0] != b->noise_range[0] ||
        (a->noise == SV_NOISE_RANGE && a->noise_range[1] != b->noise_range[1]) || a->noise_pct != b->noise_pct ||
        a->noise_std != b->noise_std || a->noise_type != b->noise_type || a->noise_seed != b->noise_seed;
}

/* one "name A -> B" piece of sv_ckpt_sched_changes */
static void change(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void change(char *buf, size_t cap, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 3 >= cap) return;
    if (len) strcpy(buf + len, "; "), len += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

void sv_ckpt_sched_changes(const sv_lr_sched *ck, const sv_lr_sched *now, int with_t_initial, char *buf, size_t cap) {
    if (!cap) return;
    buf[0] = '\0';
    const char *unit = now->on_epochs ? "epochs" : "steps";
    if (ck->form != now->form)
        change(buf, cap, "warmup form %s -> %s", ck->form == SV_WARMUP_TIMM ? "--warmup-epochs" : "--warmup",
               now->form == SV_WARMUP_TIMM ? "--warmup-epochs" : "--warmup");
    /* the --warmup steps are the record's "warmup", compared with the run's steps and LRs */
    if (now->form == SV_WARMUP_TIMM && ck->form == SV_WARMUP_TIMM && ck->warmup >= 0 && ck->warmup != now->warmup)
        change(buf, cap, "warmup %lld -> %lld %s", (long long)ck->warmup, (long long)now->warmup, unit);
    if (ck->warmup_lr != now->warmup_lr) change(buf, cap, "warmup-lr %g -> %g", ck->warmup_lr, now->warmup_lr);
    if (now->form == SV_WARMUP_TIMM && ck->warmup_prefix != now->warmup_prefix)
        change(buf, cap, "warmup-prefix %d -> %d", ck->warmup_prefix, now->warmup_prefix);
    if (ck->on_epochs && now->on_epochs && ck->spe != now->spe)
        change(buf, cap, "steps per epoch %lld -> %lld", (long long)ck->spe, (long long)now->spe);
    const sv_sched_kind k = now->kind;
    if (with_t_initial && (k == SV_SCHED_COSINE || k == SV_SCHED_POLY) && ck->t_initial >= 0 &&
        ck->t_initial != now->t_initial)
        change(buf, cap, "decay length %lld -> %lld %s", (long long)ck->t_initial, (long long)now->t_initial, unit);
    if (k == SV_SCHED_POLY && ck->power != now->power) change(buf, cap, "power %g -> %g", ck->power, now->power);
    if (k == SV_SCHED_STEP && ck->decay_steps != now->decay_steps)
        change(buf, cap, "decay interval %g -> %g %s", ck->decay_steps, now->decay_steps, unit);
    if (k == SV_SCHED_MULTISTEP) {
        int same = ck->n_milestones == now->n_milestones;
        for (int i = 0; same && i < now->n_milestones; i++) same = ck->milestones[i] == now->milestones[i];
        if (!same) change(buf, cap, "decay milestones");
    }
    if ((k == SV_SCHED_STEP || k == SV_SCHED_MULTISTEP) && ck->decay_rate != now->decay_rate)
        change(buf, cap, "decay-rate %g -> %g", ck->decay_rate, now->decay_rate);
}

void sv_ckpt_optim_write(sv_json_writer *w, const sv_ckpt_optim *o) {
    sv_json_key(w, "optimizer");
    sv_json_obj_begin(w);
    sv_json_key(w, "kind"), sv_json_str(w, sv_opt_name(o->kind));
    sv_json_key(w, "beta1"), sv_json_f64(w, o->beta1);
    sv_json_key(w, "beta2"), sv_json_f64(w, o->beta2);
    sv_json_key(w, "eps"), sv_json_f64(w, o->eps);
    sv_json_key(w, "weight_decay"), sv_json_f64(w, o->weight_decay);
    sv_json_key(w, "momentum"), sv_json_f64(w, o->momentum);
    sv_json_key(w, "nesterov"), sv_json_bool(w, o->nesterov);
    sv_json_key(w, "layer_decay"), sv_json_f64(w, o->layer_decay);
    sv_json_obj_end(w);
}

sv_status sv_ckpt_sched_parse(const sv_json *lr, sv_lr_sched *s) {
    const char *kind, *form;
    int64_t v;
    SV_TRY(sv_json_opt_str(lr, "kind", "warmup_cosine", &kind));
    if (!strcmp(kind, "warmup_cosine"))
        s->kind = SV_SCHED_COSINE;
    else if (sv_sched_parse(kind, &s->kind) != SV_OK)
        return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.kind '%s' unknown", kind);
    SV_TRY(sv_json_opt_str(lr, "warmup_form", "steps", &form));
    s->form = !strcmp(form, "timm") ? SV_WARMUP_TIMM : SV_WARMUP_STEPS;
    if (sv_json_member_get(lr, "warmup_t"))
        SV_TRY(sv_json_opt_i64(lr, "warmup_t", 0, &s->warmup));
    else if (s->form == SV_WARMUP_STEPS)
        SV_TRY(sv_json_opt_i64(lr, "warmup", 0, &s->warmup));
    else
        s->warmup = -1; /* not recorded */
    if (s->warmup < -1) return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.warmup_t %lld is negative", (long long)s->warmup);
    SV_TRY(sv_json_opt_f64(lr, "warmup_lr", 0.0, &s->warmup_lr));
    SV_TRY(sv_json_opt_bool(lr, "warmup_prefix", 0, &s->warmup_prefix));
    /* -1: not recorded (an index written before the member), never compared */
    SV_TRY(sv_json_opt_i64(lr, "t_initial", -1, &s->t_initial));
    SV_TRY(sv_json_opt_i64(lr, "cooldown", 0, &s->cooldown));
    SV_TRY(sv_json_opt_f64(lr, "decay_steps", 0.0, &s->decay_steps));
    SV_TRY(sv_json_opt_f64(lr, "decay_rate", 0.1, &s->decay_rate));
    SV_TRY(sv_json_opt_f64(lr, "power", 0.0, &s->power));
    int on_updates;
    SV_TRY(sv_json_opt_bool(lr, "sched_on_updates", 1, &on_updates));
    s->on_epochs = !on_updates;
    SV_TRY(sv_json_opt_i64(lr, "steps_per_epoch", 0, &s->spe));
    if (s->on_epochs && s->spe <= 0)
        return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.steps_per_epoch must be > 0 with sched_on_updates false");
    int64_t limit;
    SV_TRY(sv_json_opt_i64(lr, "cycle_limit", 1, &limit));
    if (limit < 1 || limit > 1000000)
        return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.cycle_limit %lld is not in [1, 1000000]", (long long)limit);
    s->cycle_limit = (int)limit;
    SV_TRY(sv_json_opt_f64(lr, "cycle_mul", 1.0, &s->cycle_mul));
    SV_TRY(sv_json_opt_f64(lr, "cycle_decay", 0.5, &s->cycle_decay));
    SV_TRY(sv_json_opt_f64(lr, "k_decay", 1.0, &s->k_decay));
    const sv_json *nr = sv_json_member_get(lr, "noise_range");
    s->noise = SV_NOISE_OFF;
    if (nr) {
        SV_TRY(sv_json_expect(nr, SV_JSON_ARRAY));
        size_t n = sv_json_count(nr);
        if (n < 1 || n > 2) return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.noise_range: %zu numbers, expected 1 or 2", n);
        for (size_t i = 0; i < n; i++) SV_TRY(sv_json_as_f64(sv_json_index(nr, i), &s->noise_range[i]));
        s->noise = n == 2 ? SV_NOISE_RANGE : SV_NOISE_FROM;
        const char *nt;
        int64_t seed;
        SV_TRY(sv_json_opt_f64(lr, "noise_pct", 0.67, &s->noise_pct));
        SV_TRY(sv_json_opt_f64(lr, "noise_std", 1.0, &s->noise_std));
        SV_TRY(sv_json_opt_str(lr, "noise_type", "normal", &nt));
        if (strcmp(nt, "normal") && strcmp(nt, "uniform"))
            return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.noise_type '%s' unknown", nt);
        s->noise_type = !strcmp(nt, "uniform") ? SV_NOISE_UNIFORM : SV_NOISE_NORMAL;
        SV_TRY(sv_json_opt_i64(lr, "noise_seed", 0, &seed));
        s->noise_seed = (uint64_t)seed;
    }
    const sv_json *ms = sv_json_member_get(lr, "decay_milestones");
    s->n_milestones = 0;
    if (ms) {
        SV_TRY(sv_json_expect(ms, SV_JSON_ARRAY));
        if (sv_json_count(ms) > SV_SCHED_MAX_MILESTONES)
            return SV_FAIL(SV_ERR_FORMAT, "lr_schedule.decay_milestones: more than %d", SV_SCHED_MAX_MILESTONES);
        for (size_t i = 0; i < sv_json_count(ms); i++) {
            SV_TRY(sv_json_as_i64(sv_json_index(ms, i), &v));
            s->milestones[s->n_milestones++] = v;
        }
    }
    return SV_OK;
}

sv_status sv_ckpt_optim_parse(const sv_json *root, sv_ckpt_optim *o) {
    *o = (sv_ckpt_optim){.kind = SV_OPT_ADAMW, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.05};
    const sv_json *oj = sv_json_member_get(root, "optimizer");
    if (!oj) return SV_OK;
    const char *kind;
    SV_TRY(sv_json_expect(oj, SV_JSON_OBJECT));
    SV_TRY(sv_json_get_str(oj, "kind", &kind, NULL));
    if (sv_opt_parse(kind, &o->kind) != SV_OK) return SV_FAIL(SV_ERR_FORMAT, "optimizer.kind '%s' unknown", kind);
    SV_TRY(sv_json_opt_f64(oj, "beta1", o->beta1, &o->beta1));
    SV_TRY(sv_json_opt_f64(oj, "beta2", o->beta2, &o->beta2));
    SV_TRY(sv_json_opt_f64(oj, "eps", o->eps, &o->eps));
    SV_TRY(sv_json_opt_f64(oj, "weight_decay", o->weight_decay, &o->weight_decay));
    SV_TRY(sv_json_opt_f64(oj, "momentum", 0.0, &o->momentum));
    SV_TRY(sv_json_opt_bool(oj, "nesterov", 0, &o->nesterov));
    SV_TRY(sv_json_opt_f64(oj, "layer_decay", 0.0, &o->layer_decay));
    return SV_OK;
}

sv_status sv_ckpt_optim_check_kind(const sv_ckpt_optim *c, const sv_ckpt_optim *n) {
    if (c->kind != n->kind)
        return SV_FAIL(SV_ERR_INVALID,
                       "resume: the checkpoint was trained with --opt %s but this run asks for --opt %s; its optimizer "
                       "state (m, v) belongs to %s: resume with --opt %s, or start afresh from its weights (shardvit "
                       "export, then --init-from)",
                       sv_opt_name(c->kind), sv_opt_name(n->kind), sv_opt_name(c->kind), sv_opt_name(c->kind));
    return SV_OK;
}

sv_status sv_ckpt_optim_check_resume(const sv_ckpt_optim *c, const sv_ckpt_optim *n) {
    SV_TRY(sv_ckpt_optim_check_kind(c, n));
    if (c->beta1 != n->beta1 || c->beta2 != n->beta2 || c->eps != n->eps || c->weight_decay != n->weight_decay ||
        c->momentum != n->momentum || c->nesterov != n->nesterov || c->layer_decay != n->layer_decay)
        SV_WARN("resume: %s hyper-parameters changed (checkpoint: betas %g,%g eps %g wd %g momentum %g nesterov %d "
                "layer-decay %g; now %g,%g %g %g %g %d %g); continuing with the new ones",
                sv_opt_name(n->kind), c->beta1, c->beta2, c->eps, c->weight_decay, c->momentum, c->nesterov,
                c->layer_decay, n->beta1, n->beta2, n->eps, n->weight_decay, n->momentum, n->nesterov, n->layer_decay);
    return SV_OK;
}
