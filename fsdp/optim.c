/* SGD, Lion and LAMB on the shards; layer-wise LR decay (fsdp/optim.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/optim.h"

static const char *const opt_names[] = {"adamw", "lamb", "sgd", "lion"};

const char *sv_opt_name(sv_opt_kind k) {
    return (unsigned)k < sizeof opt_names / sizeof opt_names[0] ? opt_names[k] : "?";
}

sv_status sv_opt_parse(const char *s, sv_opt_kind *out) {
    for (int k = 0; k < (int)(sizeof opt_names / sizeof opt_names[0]); k++)
        if (s && !strcmp(s, opt_names[k])) {
            *out = (sv_opt_kind)k;
            return SV_OK;
        }
    return SV_FAIL(SV_ERR_INVALID, "--opt: invalid value '%s' (expected adamw, lamb, sgd or lion)", s ? s : "");
}

int sv_layer_decay_layer(const sv_param_info *p, int depth) {
    if (p->group >= 0) return p->group + 1;
    if (!strncmp(p->name, "patch_embed.", 12) || !strcmp(p->name, "cls_token") || !strcmp(p->name, "reg_token") ||
        !strcmp(p->name, "pos_embed"))
        return 0;                                    /* timm's ViT group_matcher: stem */
    if (!strncmp(p->name, "norm.", 5)) return depth; /* timm's ViT group_matcher: MATCH_PREV_GROUP */
    return depth + 1;
}

void sv_layer_decay_scales(const sv_layout *L, double decay, float *out) {
    for (int k = 0; k < L->n_params; k++)
        out[k] = (float)pow(decay, (double)(L->cfg.depth + 1 - sv_layer_decay_layer(&L->params[k], L->cfg.depth)));
}

/* One pass of rule `op` over every piece of this rank's shards; LAMB_APPLY takes each tensor's
 * trust ratio from trust[param]. */
typedef struct rule_ctx {
    const sv_optim_config *oc;
    int op;
    const sv_optim_hparams *h0;
    const float *trust;
} rule_ctx;

static sv_status rule_piece(void *vctx, sv_fsdp *f, int u, const sv_flat_entry *e, sv_shard_piece p) {
    const rule_ctx *c = vctx;
    sv_unit_state *s = &f->us[u];
    float wd = f->L.params[e->param].no_decay ? 0.0f : c->oc->weight_decay;
    sv_optim_hparams h = *c->h0;
    h.lr = sv_optim_piece_lr(c->oc, e->param);
    if (c->trust) h.trust = c->trust[e->param];
    size_t o = p.shard_offset;
    return sv_be_optim_elem(f->be, c->op, s->master + o, s->grad + o, s->m + o, s->v + o, p.count, &h, wd);
}

static sv_status each_piece(sv_fsdp *f, const sv_optim_config *oc, int op, const sv_optim_hparams *h0,
                            const float *trust) {
    rule_ctx c = {oc, op, h0, trust};
    return sv_fsdp_each_piece(f, rule_piece, &c);
}

/* Sums of squares of piece i's weights and update into dev[2i], dev[2i + 1] (device, no host
 * sync); param[i] records the piece's tensor. */
typedef struct norm_ctx {
    double *dev;
    int *param;
    int n;
} norm_ctx;

static sv_status norm_piece(void *vctx, sv_fsdp *f, int u, const sv_flat_entry *e, sv_shard_piece p) {
    norm_ctx *c = vctx;
    SV_TRY(sv_be_sumsq_f32_dev(f->be, f->us[u].master + p.shard_offset, p.count, c->dev + 2 * c->n));
    SV_TRY(sv_be_sumsq_f32_dev(f->be, f->us[u].grad + p.shard_offset, p.count, c->dev + 2 * c->n + 1));
    c->param[c->n++] = e->param;
    return SV_OK;
}

/* Per-tensor partial sums of squares of the weights loc[2k] and of the update loc[2k + 1]: the
 * pieces' sums computed on the device, downloaded at once (LAMB's one extra host sync), added
 * per tensor in piece order. A rank holds at most one piece per tensor (n_params pieces). */
static sv_status lamb_local_norms(sv_fsdp *f, double *loc) {
    size_t n = (size_t)f->L.n_params;
    norm_ctx c = {.param = malloc(n * sizeof(int))};
    sv_status st = c.param ? sv_fsdp_readback_reserve(f, &f->rb_lamb, 2 * n * sizeof(double))
                           : SV_FAIL(SV_ERR_OOM, "LAMB piece table of %zu tensors", n);
    c.dev = f->rb_lamb.dev;
    if (st == SV_OK) st = sv_fsdp_each_piece(f, norm_piece, &c);
    if (st == SV_OK) st = sv_be_download(f->be, f->rb_lamb.host, c.dev, 2 * (size_t)c.n * sizeof(double));
    const double *h = f->rb_lamb.host;
    for (int i = 0; i < c.n && st == SV_OK; i++) {
        loc[2 * c.param[i]] += h[2 * i];
        loc[2 * c.param[i] + 1] += h[2 * i + 1];
    }
    free(c.param);
    return st;
}

/* LAMB's trust ratio of every tensor from the per-tensor squared norms of the weights and of the
 * update (the update already sits in the gradient shard). timm.optim.Lamb: ||w|| / ||u||, 1 when
 * either norm is 0; tensors without weight decay are not adapted (ratio 1). */
static sv_status lamb_trust(sv_fsdp *f, const sv_optim_config *oc, float *trust) {
    int n = f->L.n_params;
    double *loc = calloc((size_t)2 * n, sizeof *loc);
    double *all = malloc((size_t)2 * n * (size_t)f->shard_size * sizeof *all);
    sv_status st = loc && all ? SV_OK : SV_FAIL(SV_ERR_OOM, "LAMB norm partials of %d tensors", n);
    if (st == SV_OK) st = lamb_local_norms(f, loc);
    sv_comm_req req;
    if (st == SV_OK) st = sv_comm_all_gather(f->shard, all, loc, (size_t)2 * n, SV_COMM_F64, &req);
    if (st == SV_OK) st = sv_comm_wait(f->shard, &req);
    for (int k = 0; k < n && st == SV_OK; k++) {
        double w2 = 0.0, u2 = 0.0;
        for (int r = 0; r < f->shard_size; r++) {
            w2 += all[(size_t)r * 2 * n + 2 * k];
            u2 += all[(size_t)r * 2 * n + 2 * k + 1];
        }
        float wn = (float)sqrt(w2), gn = (float)sqrt(u2);
        int adapt = oc->weight_decay != 0.0f && !f->L.params[k].no_decay;
        trust[k] = adapt && wn > 0.0f && gn > 0.0f ? wn / gn : 1.0f;
    }
    free(loc);
    free(all);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_fsdp_optim_rule_step(sv_fsdp *f, const sv_optim_config *oc, float clip, long t) {
    sv_optim_hparams h = {.lr = oc->lr,
                          .beta1 = oc->beta1,
                          .beta2 = oc->beta2,
                          .eps = oc->eps,
                          .bc1 = (float)(1.0 - pow(oc->beta1, (double)t)),
                          .bc2_sqrt = (float)sqrt(1.0 - pow(oc->beta2, (double)t)),
                          .grad_scale = clip,
                          .momentum = oc->momentum,
                          .nesterov = oc->nesterov,
                          .trust = 1.0f};
    switch (oc->kind) {
    case SV_OPT_SGD: return each_piece(f, oc, SV_OPTIM_OP_SGD, &h, NULL);
    case SV_OPT_LION: return each_piece(f, oc, SV_OPTIM_OP_LION, &h, NULL);
    case SV_OPT_LAMB: break;
    default: return SV_FAIL(SV_ERR_INVALID, "optimizer kind %d", (int)oc->kind);
    }
    SV_TRY(each_piece(f, oc, SV_OPTIM_OP_LAMB_UPDATE, &h, NULL));
    float *trust = malloc((size_t)f->L.n_params * sizeof *trust);
    if (!trust) return SV_FAIL(SV_ERR_OOM, "LAMB trust ratios");
    sv_status st = lamb_trust(f, oc, trust);
    if (st == SV_OK) st = each_piece(f, oc, SV_OPTIM_OP_LAMB_APPLY, &h, trust);
    free(trust);
    return st;
}
