/* FSDP engine: state, the per-unit gather/compute/free/reduce schedule. The optimizer step and
 * full-parameter gathering live in fsdp_optim.c. */
#include "fsdp/fsdp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define ALIGN 256

const char *sv_strategy_name(sv_strategy s) {
    switch (s) {
    case SV_FULL_SHARD: return "full_shard";
    case SV_SHARD_GRAD_OP: return "shard_grad_op";
    case SV_NO_SHARD: return "no_shard";
    case SV_HYBRID_SHARD: return "hybrid_shard";
    }
    return "?";
}

sv_status sv_strategy_parse(const char *s, sv_strategy *out) {
    for (int i = 0; i <= SV_HYBRID_SHARD; i++)
        if (strcmp(s, sv_strategy_name((sv_strategy)i)) == 0) {
            *out = (sv_strategy)i;
            return SV_OK;
        }
    return SV_FAIL(SV_ERR_INVALID, "--strategy '%s' (choose full_shard|shard_grad_op|no_shard|hybrid_shard)", s);
}

sv_status sv_fsdp_shard_size(sv_strategy s, int shard_group, int world, int *shard_size) {
    int G = world;
    if (s == SV_NO_SHARD) G = 1;
    if (s == SV_HYBRID_SHARD) {
        if (shard_group < 1 || world % shard_group)
            return SV_FAIL(SV_ERR_INVALID, "--shard-group %d must divide the world size %d", shard_group, world);
        G = shard_group;
    }
    *shard_size = G;
    return SV_OK;
}

sv_status sv_fsdp_make_comms(sv_comm *world, sv_strategy s, int shard_group, sv_comm **shard, sv_comm **repl) {
    int rank = sv_comm_rank(world), G = 1;
    SV_TRY(sv_fsdp_shard_size(s, shard_group, sv_comm_size(world), &G));
    /* shard groups: consecutive ranks (one node when ranks are packed per node) */
    SV_TRY(sv_comm_split(world, rank / G, rank % G, shard));
    SV_TRY(sv_comm_split(world, rank % G, rank / G, repl));
    return SV_OK;
}

sv_status sv_fsdp_setup_sizes(sv_fsdp *f, const sv_fsdp_config *cfg, sv_backend *be, int shard_rank,
                              int shard_size, int repl_size, const sv_vit_config *vcfg) {
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    f->be = be;
    f->shard_rank = shard_rank;
    f->shard_size = shard_size;
    f->repl_size = repl_size;
    f->world_size = shard_size * repl_size;
    f->inject_nan_step = -1;
    SV_TRY(sv_layout_build(&f->L, vcfg, cfg->head_zero_init, f->shard_size, cfg->wrap_bytes));
    for (int i = 0; i < 3; i++) f->gslot[i].unit = -1;
    for (int i = 0; i < 2; i++) f->pslot[i].unit = -1;
    f->root_slot.unit = -1;
    return SV_OK;
}

sv_status sv_fsdp_setup(sv_fsdp *f, const sv_fsdp_config *cfg, sv_backend *be, sv_comm *world, sv_comm *shard,
                        sv_comm *repl, const sv_vit_config *vcfg) {
    if (sv_comm_size(shard) * sv_comm_size(repl) != sv_comm_size(world))
        return SV_FAIL(SV_ERR_INVALID, "communicator sizes %d x %d do not cover world %d", sv_comm_size(shard),
                       sv_comm_size(repl), sv_comm_size(world));
    SV_TRY(sv_fsdp_setup_sizes(f, cfg, be, sv_comm_rank(shard), sv_comm_size(shard), sv_comm_size(repl), vcfg));
    f->world = world;
    f->shard = shard;
    f->repl = repl;
    f->rank = sv_comm_rank(world);
    return SV_OK;
}

static int keep_all_gathered(const sv_fsdp *f) { return f->cfg.strategy == SV_SHARD_GRAD_OP; }

/* Carve `bytes` and charge them to a memory category. */
static sv_status carve_to(sv_arena *a, size_t *category, size_t bytes, void **out) {
    size_t before = a->used;
    SV_TRY(sv_arena_alloc(a, bytes, ALIGN, out));
    *category += a->used - before;
    return SV_OK;
}

sv_status sv_fsdp_carve(sv_fsdp *f, sv_arena *dev, sv_arena *host) {
    size_t e = sv_be_compute_elem_size(f->be);
    size_t max_shard = 0, max_padded = f->L.max_padded;
    sv_fsdp_mem *mm = &f->mem;
    memset(mm, 0, sizeof *mm);
    if (f->L.units[0].padded > max_padded) max_padded = f->L.units[0].padded;
    for (int u = 0; u < f->L.n_units; u++) {
        sv_unit_state *s = &f->us[u];
        size_t sh = f->L.units[u].shard;
        if (sh > max_shard) max_shard = sh;
        SV_TRY(carve_to(dev, &mm->params, sh * 4, (void **)&s->master));
        SV_TRY(carve_to(dev, &mm->optimizer, sh * 4, (void **)&s->m));
        SV_TRY(carve_to(dev, &mm->optimizer, sh * 4, (void **)&s->v));
        SV_TRY(carve_to(dev, &mm->grads, sh * 4, (void **)&s->grad));
        if (u == 0 || keep_all_gathered(f))
            SV_TRY(carve_to(dev, &mm->gathered, f->L.units[u].padded * e, &s->gathered));
        if (f->cfg.accum_mode == SV_ACCUM_LOCAL)
            SV_TRY(carve_to(dev, &mm->grad_buffers, f->L.units[u].padded * 4, (void **)&s->local_grad));
    }
    for (int i = 0; i < 2; i++) {
        sv_param_slot *p = &f->pslot[i];
        if (!keep_all_gathered(f)) SV_TRY(carve_to(dev, &mm->gathered, f->L.max_padded * e, &p->buf));
        SV_TRY(carve_to(dev, &mm->gathered, max_shard * e, &p->send));
    }
    for (int i = 0; i < 3; i++) {
        sv_grad_slot *g = &f->gslot[i];
        if (f->cfg.accum_mode == SV_ACCUM_SHARD)
            SV_TRY(carve_to(dev, &mm->grad_buffers, max_padded * 4, (void **)&g->own));
        if (f->cfg.reduce_dtype == SV_BF16) {
            SV_TRY(carve_to(dev, &mm->grad_buffers, max_padded * 2, (void **)&g->send16));
            SV_TRY(carve_to(dev, &mm->grad_buffers, max_shard * 2, (void **)&g->recv16));
        }
        SV_TRY(carve_to(dev, &mm->grad_buffers, max_shard * 4, (void **)&g->recv));
    }
    SV_TRY(carve_to(dev, &mm->gathered, f->L.units[0].shard * e, &f->root_slot.send));
    (void)host;
    return SV_OK;
}

/* Between layer ops: advance prefetched all-gathers and in-flight reductions. */
static sv_status fsdp_progress(void *ctx) {
    sv_fsdp *f = ctx;
    if (f->shard && f->shard_size > 1) SV_TRY(sv_comm_progress(f->shard));
    if (f->repl && f->repl_size > 1) SV_TRY(sv_comm_progress(f->repl));
    return SV_OK;
}

void sv_fsdp_attach(sv_fsdp *f, sv_vit *model, sv_trace *trace) {
    f->model = model;
    model->progress = fsdp_progress;
    model->progress_ctx = f;
    f->trace = trace;
    free(f->host_losses);
    f->host_losses = calloc((size_t)model->B, sizeof(float));
}

void sv_fsdp_free(sv_fsdp *f) {
    sv_layout_free(&f->L);
    free(f->host_losses);
    f->host_losses = NULL;
}

size_t sv_fsdp_persistent_bytes(const sv_fsdp *f) {
    size_t n = 0;
    for (int u = 0; u < f->L.n_units; u++) n += f->L.units[u].shard;
    return 16 * n;
}

sv_status sv_fsdp_init_params(sv_fsdp *f) {
    size_t max_shard = 0;
    for (int u = 0; u < f->L.n_units; u++)
        if (f->L.units[u].shard > max_shard) max_shard = f->L.units[u].shard;
    float *host = calloc(max_shard, sizeof(float));
    if (!host) return SV_FAIL(SV_ERR_OOM, "init staging of %zu floats", max_shard);
    sv_status st = SV_OK;
    for (int u = 0; u < f->L.n_units && st == SV_OK; u++) {
        const sv_unit *un = &f->L.units[u];
        memset(host, 0, un->shard * sizeof(float));
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &f->L.entries[un->first_entry + k];
            sv_shard_piece p = sv_layout_piece(un, e, f->shard_rank);
            if (p.count)
                sv_vit_param_init(f->cfg.seed, &f->L.params[e->param], host + p.shard_offset, p.tensor_begin, p.count);
        }
        sv_unit_state *s = &f->us[u];
        if ((st = sv_be_upload(f->be, s->master, host, un->shard * 4)) != SV_OK) break;
        if ((st = sv_be_zero(f->be, s->m, un->shard * 4)) != SV_OK) break;
        if ((st = sv_be_zero(f->be, s->v, un->shard * 4)) != SV_OK) break;
        if ((st = sv_be_zero(f->be, s->grad, un->shard * 4)) != SV_OK) break;
        if (s->local_grad && (st = sv_be_zero(f->be, s->local_grad, un->padded * 4)) != SV_OK) break;
    }
    free(host);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_fsdp_zero_grad(sv_fsdp *f) {
    for (int u = 0; u < f->L.n_units; u++) SV_TRY(sv_be_zero(f->be, f->us[u].grad, f->L.units[u].shard * 4));
    return SV_OK;
}

/* ---- parameter gathering ---------------------------------------------------------------- */

static sv_comm_dtype param_comm_dtype(const sv_fsdp *f) {
    return sv_be_compute_elem_size(f->be) == 2 ? SV_COMM_BF16 : SV_COMM_F32;
}

/* Start gathering unit u into `dst` using `send` as the staging of the local shard. */
static sv_status gather_issue(sv_fsdp *f, int u, void *dst, void *send, sv_comm_req *req) {
    const sv_unit *un = &f->L.units[u];
    if (f->shard_size == 1) { /* nothing to gather: the shard is the whole unit */
        SV_TRY(sv_be_f32_to_compute(f->be, dst, f->us[u].master, un->shard));
        req->slot = -1;
        return SV_OK;
    }
    SV_TRY(sv_be_f32_to_compute(f->be, send, f->us[u].master, un->shard));
    SV_TRY(sv_comm_all_gather(f->shard, dst, send, un->shard, param_comm_dtype(f), req));
    return SV_OK;
}

/* Trace time (us) at which the collective just waited on really completed. */
static double comm_done_us(const sv_fsdp *f, const sv_comm *c) {
    return (sv_comm_last_complete_time(c) - f->trace->t0) * 1e6;
}

static sv_status gather_wait(sv_fsdp *f, sv_comm_req *req, int u, double t_issue) {
    if (req->slot < 0) return SV_OK;
    SV_TRY(sv_comm_wait(f->shard, req));
    req->slot = -1;
    if (f->trace)
        sv_trace_add(f->trace, "all_gather", "comm", SV_TRACE_ALL_GATHER, u, t_issue, comm_done_us(f, f->shard));
    return SV_OK;
}

static double tnow(const sv_fsdp *f) { return f->trace ? sv_trace_now(f->trace) : 0.0; }

/* Make sure block unit u's gathered params are being fetched; returns the slot (or NULL when
 * the unit has persistent storage). */
static sv_status prefetch_unit(sv_fsdp *f, int u) {
    if (u < 1 || u >= f->L.n_units) return SV_OK;
    if (keep_all_gathered(f)) return SV_OK; /* handled by acquire */
    for (int i = 0; i < 2; i++)
        if (f->pslot[i].unit == u) return SV_OK;
    sv_param_slot *s = f->pslot[0].unit < 0 ? &f->pslot[0] : f->pslot[1].unit < 0 ? &f->pslot[1] : NULL;
    SV_ASSERT(s != NULL); /* schedule never needs more than current + prefetched */
    s->unit = u;
    s->pending = 1;
    s->t_issue = tnow(f);
    SV_TRY(gather_issue(f, u, s->buf, s->send, &s->req));
    f->ctr.live_gathered++;
    if (f->ctr.live_gathered > f->ctr.max_live_gathered) f->ctr.max_live_gathered = f->ctr.live_gathered;
    return SV_OK;
}

/* Return unit u's gathered parameters, waiting for its all-gather. `fresh`: for shard_grad_op
 * the forward gathers (fresh = 1) and the backward reuses what the forward gathered. */
static sv_status acquire_unit(sv_fsdp *f, int u, int fresh, void **params) {
    if (keep_all_gathered(f)) {
        sv_unit_state *s = &f->us[u];
        if (fresh) {
            sv_comm_req req;
            double t = tnow(f);
            SV_TRY(gather_issue(f, u, s->gathered, f->pslot[0].send, &req));
            SV_TRY(gather_wait(f, &req, u, t));
        }
        *params = s->gathered;
        return SV_OK;
    }
    SV_TRY(prefetch_unit(f, u));
    for (int i = 0; i < 2; i++) {
        sv_param_slot *s = &f->pslot[i];
        if (s->unit != u) continue;
        if (s->pending) {
            SV_TRY(gather_wait(f, &s->req, u, s->t_issue));
            s->pending = 0;
        }
        *params = s->buf;
        return SV_OK;
    }
    SV_ASSERT(0);
    return SV_ERR_INVALID;
}

/* Free unit u's gathered parameters (full_shard: after each use). */
static void release_unit(sv_fsdp *f, int u) {
    if (keep_all_gathered(f)) return;
    for (int i = 0; i < 2; i++)
        if (f->pslot[i].unit == u) {
            SV_ASSERT(!f->pslot[i].pending);
            f->pslot[i].unit = -1;
            f->ctr.live_gathered--;
        }
}

static sv_status acquire_root(sv_fsdp *f) {
    double t = tnow(f);
    SV_TRY(gather_issue(f, 0, f->us[0].gathered, f->root_slot.send, &f->root_slot.req));
    SV_TRY(gather_wait(f, &f->root_slot.req, 0, t));
    return SV_OK;
}

/* ---- views ------------------------------------------------------------------------------- */

static void root_views(const sv_fsdp *f, const void *base, float *gbase, sv_root_params *rp, sv_root_grads *rg) {
    size_t e = sv_be_compute_elem_size(f->be);
    const sv_unit *un = &f->L.units[0];
    for (int k = 0; k < un->n_entries; k++) {
        const sv_flat_entry *en = &f->L.entries[un->first_entry + k];
        int slot = f->L.params[en->param].slot;
        if (rp) rp->t[slot] = (const char *)base + en->offset * e;
        if (rg) rg->t[slot] = gbase ? gbase + en->offset : NULL;
    }
}

static void block_views(const sv_fsdp *f, int u, int l, const void *base, float *gbase, sv_block_params *bp,
                        sv_block_grads *bg) {
    size_t e = sv_be_compute_elem_size(f->be);
    const sv_unit *un = &f->L.units[u];
    for (int k = 0; k < un->n_entries; k++) {
        const sv_flat_entry *en = &f->L.entries[un->first_entry + k];
        const sv_param_info *p = &f->L.params[en->param];
        if (p->group != l) continue;
        if (bp) bp->t[p->slot] = (const char *)base + en->offset * e;
        if (bg) bg->t[p->slot] = gbase ? gbase + en->offset : NULL;
    }
}

/* ---- gradient reduction ------------------------------------------------------------------ */

/* Complete slot g's reduction: wait, convert, all-reduce across replicas, add into the shard. */
static sv_status grad_finish(sv_fsdp *f, sv_grad_slot *g) {
    if (g->unit < 0) return SV_OK;
    int u = g->unit;
    size_t sh = f->L.units[u].shard;
    if (g->pending) {
        SV_TRY(sv_comm_wait(f->shard, &g->req));
        if (f->trace) /* one track per gradient buffer: two reductions can be in flight at once */
            sv_trace_add(f->trace, "reduce_scatter", "comm", SV_TRACE_REDUCE_SCATTER + (int)(g - f->gslot), u,
                         g->t_issue, comm_done_us(f, f->shard));
        g->pending = 0;
    }
    if (f->cfg.reduce_dtype == SV_BF16) SV_TRY(sv_be_bf16_to_f32(f->be, g->recv, g->recv16, sh));
    if (f->repl_size > 1) {
        double t = tnow(f);
        SV_TRY(sv_comm_all_reduce_sync(f->repl, g->recv, sh, SV_COMM_F32, SV_COMM_SUM));
        if (f->trace) sv_trace_add(f->trace, "all_reduce", "comm", SV_TRACE_ALL_REDUCE, u, t, sv_trace_now(f->trace));
    }
    SV_TRY(sv_be_add_f32(f->be, f->us[u].grad, g->recv, sh));
    if (g->buf == f->us[u].local_grad) SV_TRY(sv_be_zero(f->be, g->buf, f->L.units[u].padded * 4));
    g->unit = -1;
    return SV_OK;
}

/* A gradient buffer for unit u's backward in this micro-step. */
static sv_status grad_acquire(sv_fsdp *f, int u, int last_micro, sv_grad_slot **out, float **gbuf) {
    if (f->cfg.accum_mode == SV_ACCUM_LOCAL) {
        *gbuf = f->us[u].local_grad;
        *out = NULL;
        if (!last_micro) return SV_OK;
    }
    sv_grad_slot *g = &f->gslot[2];
    if (u != 0) {
        g = &f->gslot[f->next_gslot];
        f->next_gslot ^= 1;
    }
    SV_TRY(grad_finish(f, g));
    g->unit = u;
    if (f->cfg.accum_mode == SV_ACCUM_LOCAL) {
        g->buf = f->us[u].local_grad;
    } else {
        g->buf = g->own;
        SV_TRY(sv_be_zero(f->be, g->buf, f->L.units[u].padded * 4));
    }
    *gbuf = g->buf;
    *out = g;
    return SV_OK;
}

/* Issue the reduction of slot g (after unit g->unit's backward wrote g->buf). */
static sv_status grad_issue(sv_fsdp *f, sv_grad_slot *g) {
    int u = g->unit;
    const sv_unit *un = &f->L.units[u];
    if (f->inject_nan_step == f->step && f->rank == f->inject_nan_rank && u == f->L.n_units - 1) {
        float nanv = NAN;
        SV_TRY(sv_be_upload(f->be, g->buf, &nanv, sizeof nanv));
    }
    g->t_issue = tnow(f);
    if (f->shard_size == 1) { /* no sharding: the reduced block is the whole unit */
        if (f->cfg.reduce_dtype == SV_BF16) {
            SV_TRY(sv_be_f32_to_bf16(f->be, g->recv16, g->buf, un->shard));
        } else {
            SV_TRY(sv_be_copy(f->be, g->recv, g->buf, un->shard * 4));
        }
        g->pending = 0;
        return SV_OK;
    }
    if (f->cfg.reduce_dtype == SV_BF16) {
        SV_TRY(sv_be_f32_to_bf16(f->be, g->send16, g->buf, un->padded));
        SV_TRY(sv_comm_reduce_scatter(f->shard, g->recv16, g->send16, un->shard, SV_COMM_BF16, SV_COMM_SUM, &g->req));
    } else {
        SV_TRY(sv_comm_reduce_scatter(f->shard, g->recv, g->buf, un->shard, SV_COMM_F32, SV_COMM_SUM, &g->req));
    }
    g->pending = 1;
    return SV_OK;
}

/* ---- the micro-step ---------------------------------------------------------------------- */

static sv_status forward_blocks(sv_fsdp *f) {
    int U = f->L.n_units;
    SV_TRY(prefetch_unit(f, 1));
    for (int u = 1; u < U; u++) {
        void *params;
        SV_TRY(acquire_unit(f, u, 1, &params));
        SV_TRY(prefetch_unit(f, u + 1)); /* forward prefetch: issued before u computes */
        double t = tnow(f);
        for (int l = f->L.units[u].first_block; l <= f->L.units[u].last_block; l++) {
            sv_block_params bp;
            block_views(f, u, l, params, NULL, &bp, NULL);
            SV_TRY(sv_vit_block_fwd(f->model, l, &bp));
        }
        if (f->trace) {
            SV_TRY(sv_be_sync(f->be));
            sv_trace_add(f->trace, "forward", "compute", SV_TRACE_COMPUTE, u, t, sv_trace_now(f->trace));
        }
        release_unit(f, u);
    }
    return SV_OK;
}

sv_status sv_fsdp_forward(sv_fsdp *f, const float *images) {
    SV_TRY(acquire_root(f));
    sv_root_params rp;
    root_views(f, f->us[0].gathered, NULL, &rp, NULL);
    SV_TRY(sv_vit_embed_fwd(f->model, &rp, images));
    SV_TRY(forward_blocks(f));
    SV_TRY(sv_vit_head_fwd(f->model, &rp, NULL, NULL, 0.0f, 0.0f));
    return SV_OK;
}

sv_status sv_fsdp_forward_backward(sv_fsdp *f, const float *images, const int32_t *labels, const float *soft,
                                   float smoothing, float grad_scale, int micro, int n_micro, double *loss_sum) {
    int U = f->L.n_units, last = micro == n_micro - 1;
    sv_vit *m = f->model;
    SV_TRY(acquire_root(f));
    sv_root_params rp;
    root_views(f, f->us[0].gathered, NULL, &rp, NULL);
    double t = tnow(f);
    SV_TRY(sv_vit_embed_fwd(m, &rp, images));
    if (f->trace) sv_trace_add(f->trace, "embed", "compute", SV_TRACE_COMPUTE, 0, t, sv_trace_now(f->trace));
    SV_TRY(forward_blocks(f));
    t = tnow(f);
    SV_TRY(sv_vit_head_fwd(m, &rp, labels, soft, smoothing, grad_scale));
    SV_TRY(sv_be_download(f->be, f->host_losses, m->losses, (size_t)m->B * 4));
    double s = 0;
    for (int i = 0; i < m->B; i++) s += f->host_losses[i];
    *loss_sum = s;

    /* backward: root gradients live in their own buffer until the embedding backward */
    sv_grad_slot *root_g;
    float *root_gbuf;
    SV_TRY(grad_acquire(f, 0, last, &root_g, &root_gbuf));
    sv_root_grads rg;
    root_views(f, f->us[0].gathered, root_gbuf, NULL, &rg);
    SV_TRY(sv_vit_head_bwd(m, &rp, &rg));
    if (f->trace) sv_trace_add(f->trace, "head", "compute", SV_TRACE_COMPUTE, 0, t, sv_trace_now(f->trace));

    SV_TRY(prefetch_unit(f, U - 1));
    for (int u = U - 1; u >= 1; u--) {
        void *params;
        SV_TRY(acquire_unit(f, u, 0, &params));
        SV_TRY(prefetch_unit(f, u - 1)); /* BACKWARD_PRE: fetch u-1 before computing u */
        sv_grad_slot *g;
        float *gbuf;
        SV_TRY(grad_acquire(f, u, last, &g, &gbuf));
        t = tnow(f);
        for (int l = f->L.units[u].last_block; l >= f->L.units[u].first_block; l--) {
            sv_block_params bp;
            sv_block_grads bg;
            block_views(f, u, l, params, gbuf, &bp, &bg);
            SV_TRY(sv_vit_block_bwd(m, l, &bp, &bg));
        }
        if (f->trace) {
            SV_TRY(sv_be_sync(f->be));
            sv_trace_add(f->trace, "backward", "compute", SV_TRACE_COMPUTE, u, t, sv_trace_now(f->trace));
        }
        if (g) SV_TRY(grad_issue(f, g)); /* reduce-scatter as soon as the unit's backward ends */
        release_unit(f, u);
    }
    t = tnow(f);
    SV_TRY(sv_vit_embed_bwd(m, &rp, &rg));
    if (f->trace) sv_trace_add(f->trace, "embed_bwd", "compute", SV_TRACE_COMPUTE, 0, t, sv_trace_now(f->trace));
    if (root_g) SV_TRY(grad_issue(f, root_g));
    for (int i = 0; i < 3; i++) SV_TRY(grad_finish(f, &f->gslot[i]));
    return SV_OK;
}
