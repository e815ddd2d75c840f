/* Optimizer and LR-schedule records of index.json (ckpt/ckpt_optim.h). */
#include <string.h>

#include "ckpt/ckpt_optim.h"
#include "core/log.h"
#include "fsdp/optim.h"

const char *sv_ckpt_sched_kind(const sv_lr_sched *s) {
    return s->kind == SV_SCHED_COSINE && s->form == SV_WARMUP_STEPS ? "warmup_cosine" : sv_sched_name(s->kind);
}

void sv_ckpt_sched_write(sv_json_writer *w, const sv_lr_sched *s) {
    sv_json_key(w, "warmup_form"), sv_json_str(w, s->form == SV_WARMUP_TIMM ? "timm" : "steps");
    sv_json_key(w, "warmup_lr"), sv_json_f64(w, s->warmup_lr);
    sv_json_key(w, "warmup_prefix"), sv_json_bool(w, s->warmup_prefix);
    sv_json_key(w, "t_initial"), sv_json_i64(w, s->t_initial);
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
    SV_TRY(sv_json_opt_f64(lr, "warmup_lr", 0.0, &s->warmup_lr));
    SV_TRY(sv_json_opt_bool(lr, "warmup_prefix", 0, &s->warmup_prefix));
    SV_TRY(sv_json_opt_i64(lr, "t_initial", 0, &s->t_initial));
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

sv_status sv_ckpt_optim_check_resume(const sv_ckpt_optim *c, const sv_ckpt_optim *n) {
    if (c->kind != n->kind)
        return SV_FAIL(SV_ERR_INVALID,
                       "resume: the checkpoint was trained with --opt %s but this run asks for --opt %s; its optimizer "
                       "state (m, v) belongs to %s: resume with --opt %s, or start afresh from its weights (shardvit "
                       "export, then --init-from)",
                       sv_opt_name(c->kind), sv_opt_name(n->kind), sv_opt_name(c->kind), sv_opt_name(c->kind));
    if (c->beta1 != n->beta1 || c->beta2 != n->beta2 || c->eps != n->eps || c->weight_decay != n->weight_decay ||
        c->momentum != n->momentum || c->nesterov != n->nesterov || c->layer_decay != n->layer_decay)
        SV_WARN("resume: %s hyper-parameters changed (checkpoint: betas %g,%g eps %g wd %g momentum %g nesterov %d "
                "layer-decay %g; now %g,%g %g %g %g %d %g); continuing with the new ones",
                sv_opt_name(n->kind), c->beta1, c->beta2, c->eps, c->weight_decay, c->momentum, c->nesterov,
                c->layer_decay, n->beta1, n->beta2, n->eps, n->weight_decay, n->momentum, n->nesterov, n->layer_decay);
    return SV_OK;
}
