/* FSDP engine: state, the per-unit gather/compute/free/reduce schedule. The optimizer step and
 * full-parameter gathering live in fsdp_optim.c.
 *
 * Every unit (the root included) is a state machine, sv_unit_phase in fsdp.h, moved only by the
 * transitions of the "unit state machine" section below, named as PyTorch FSDP2's
 * FSDPParamGroup names them (unshard, wait_for_unshard, reshard, post_backward). The schedule
 * (sv_fsdp_forward_backward) is a sequence of those transitions around the model's compute. */
#include "fsdp/fsdp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fsdp/load.h"

#define ALIGN 256

/* SV_FSDP_CHECK: each transition first checks that the unit is in a state it may start from and
 * otherwise fails with SV_FAIL naming the unit, its state and the transition. A few integer
 * compares per unit per micro-step, so it is on unless built with -DSV_FSDP_CHECK=0 (Debug,
 * Release and therefore the tests all run with it). */
#ifndef SV_FSDP_CHECK
#define SV_FSDP_CHECK 1
#endif
#if SV_FSDP_CHECK
#define EXPECT_STATE(f, u, transition, cond) \
    do { \
        if (!(cond)) \
            return SV_FAIL(SV_ERR_INVALID, "fsdp: %s of unit %d from state %s", (transition), (u), \
                           sv_unit_phase_name((f)->us[(u)].state)); \
    } while (0)
/* A gathered state (UNSHARDING, UNSHARDED) holds a buffer of the gathered pool. */
#define EXPECT_HOLDS(f, u, transition) \
    do { \
        if (!(f)->us[(u)].params) \
            return SV_FAIL(SV_ERR_INVALID, "fsdp: %s of unit %d: state %s without gathered parameters", (transition), \
                           (u), sv_unit_phase_name((f)->us[(u)].state)); \
    } while (0)
#else
#define EXPECT_STATE(f, u, transition, cond) ((void)0)
#define EXPECT_HOLDS(f, u, transition) ((void)0)
#endif

const char *sv_unit_phase_name(sv_unit_phase p) {
    switch (p) {
    case SV_UNIT_SHARDED: return "SHARDED";
    case SV_UNIT_UNSHARDING: return "UNSHARDING";
    case SV_UNIT_UNSHARDED: return "UNSHARDED";
    case SV_UNIT_REDUCING: return "REDUCING";
    }
    return "?";
}

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
    int rank = sv_comm_rank(world), G = 1, color, key;
    SV_TRY(sv_fsdp_shard_size(s, shard_group, sv_comm_size(world), &G));
    sv_fsdp_group_color(rank, G, 0, &color, &key);
    SV_TRY(sv_comm_split(world, color, key, shard));
    sv_fsdp_group_color(rank, G, 1, &color, &key);
    SV_TRY(sv_comm_split(world, color, key, repl));
    return SV_OK;
}

void sv_fsdp_group_color(int rank, int G, int repl, int *color, int *key) {
    /* shard groups: consecutive ranks (one node when ranks are packed per node); replica
     * groups: the ranks holding the same shard, one per shard group */
    *color = repl ? rank % G : rank / G;
    *key = repl ? rank / G : rank % G;
}

sv_status sv_fsdp_setup_sizes(sv_fsdp *f, const sv_fsdp_config *cfg, const sv_backend_config *bc, int shard_rank,
                              int shard_size, int repl_size, const sv_vit_config *vcfg) {
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    sv_be_sizes sz;
    SV_TRY(sv_be_sizes_query(bc, 0, 0, 0, 0, &sz));
    f->compute_elem = sz.compute_elem;
    f->shard_rank = shard_rank;
    f->shard_size = shard_size;
    f->repl_size = repl_size;
    f->world_size = shard_size * repl_size;
    f->reshard_after_forward = cfg->strategy != SV_SHARD_GRAD_OP;
    SV_TRY(sv_layout_build(&f->L, vcfg, cfg->head_zero_init, f->shard_size, cfg->wrap_bytes));
    for (int i = 0; i < 3; i++) f->gslot[i].unit = -1;
    for (int u = 0; u < SV_MAX_UNITS; u++) { /* memset: every unit SV_UNIT_SHARDED */
        f->us[u].grad_slot = -1;
        f->us[u].gather_req.slot = -1;
    }
    return SV_OK;
}

sv_status sv_fsdp_setup(sv_fsdp *f, const sv_fsdp_config *cfg, sv_backend *be, sv_comm *world, sv_comm *shard,
                        sv_comm *repl, const sv_vit_config *vcfg) {
    if (sv_comm_size(shard) * sv_comm_size(repl) != sv_comm_size(world))
        return SV_FAIL(SV_ERR_INVALID, "communicator sizes %d x %d do not cover world %d", sv_comm_size(shard),
                       sv_comm_size(repl), sv_comm_size(world));
    SV_TRY(sv_fsdp_setup_sizes(f, cfg, sv_be_config(be), sv_comm_rank(shard), sv_comm_size(shard), sv_comm_size(repl),
                               vcfg));
    f->be = be;
    f->world = world;
    f->shard = shard;
    f->repl = repl;
    f->rank = sv_comm_rank(world);
    return SV_OK;
}

/* Carve `bytes` and charge them to a memory category. */
static sv_status carve_to(sv_arena *a, size_t *category, size_t bytes, void **out) {
    size_t before = a->used;
    SV_TRY(sv_arena_alloc(a, bytes, ALIGN, out));
    *category += a->used - before;
    return SV_OK;
}

/* Carve one more buffer of `bytes` into pool p. */
static sv_status carve_pool_buf(sv_arena *a, size_t *category, size_t bytes, sv_buf_pool *p) {
    if (p->n >= SV_MAX_UNITS) return SV_FAIL(SV_ERR_INVALID, "fsdp: more than %d pool buffers", SV_MAX_UNITS);
    sv_pool_buf *b = &p->b[p->n++];
    b->bytes = bytes;
    b->unit = -1;
    return carve_to(a, category, bytes, &b->ptr);
}

/* The carving order (and so every byte count and address) is the one the planner reports. */
sv_status sv_fsdp_carve(sv_fsdp *f, sv_arena *dev, sv_arena *host) {
    size_t e = f->compute_elem;
    size_t max_shard = sv_layout_max_shard(&f->L), max_padded = sv_layout_max_padded(&f->L);
    sv_fsdp_mem *mm = &f->mem;
    memset(mm, 0, sizeof *mm);
    f->gathered.n = f->staging.n = 0;
    for (int u = 0; u < f->L.n_units; u++) {
        sv_unit_state *s = &f->us[u];
        size_t sh = f->L.units[u].shard;
        SV_TRY(carve_to(dev, &mm->params, sh * 4, (void **)&s->master));
        SV_TRY(carve_to(dev, &mm->optimizer, sh * 4, (void **)&s->m));
        SV_TRY(carve_to(dev, &mm->optimizer, sh * 4, (void **)&s->v));
        SV_TRY(carve_to(dev, &mm->grads, sh * 4, (void **)&s->grad));
        /* gathered pool: the root's buffer, and every unit's when kept from forward to backward */
        if (u == 0 || !f->reshard_after_forward)
            SV_TRY(carve_pool_buf(dev, &mm->gathered, f->L.units[u].padded * e, &f->gathered));
        if (f->cfg.accum_mode == SV_ACCUM_LOCAL)
            SV_TRY(carve_to(dev, &mm->grad_buffers, f->L.units[u].padded * 4, (void **)&s->local_grad));
    }
    for (int i = 0; i < 2 && f->reshard_after_forward; i++) /* current + prefetched block unit */
        SV_TRY(carve_pool_buf(dev, &mm->gathered, f->L.max_padded * e, &f->gathered));
    /* One staging buffer: all-gathers are issued one at a time (unit u's is waited for, and its
     * staging released, before u+1's is issued; the root's before the first block's). */
    SV_TRY(carve_pool_buf(dev, &mm->gathered, max_shard * e, &f->staging));
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
    for (int u = 0; u < f->L.n_units; u++) /* --model-ema (fsdp/ema.h): after everything else */
        f->us[u].ema = NULL;
    for (int u = 0; u < f->L.n_units && f->cfg.ema; u++)
        SV_TRY(carve_to(dev, &mm->ema, f->L.units[u].shard * 4, (void **)&f->us[u].ema));
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
}

void sv_fsdp_free(sv_fsdp *f) {
    sv_fsdp_readback_release(f, &f->rb);
    sv_fsdp_readback_release(f, &f->rb_lamb);
    sv_layout_free(&f->L);
}

sv_fsdp_mark sv_fsdp_comm_mark(const sv_fsdp *f) {
    return (sv_fsdp_mark){f->shard ? sv_comm_issued(f->shard) : 0, f->repl ? sv_comm_issued(f->repl) : 0};
}

sv_status sv_fsdp_fence_to(sv_fsdp *f, sv_fsdp_mark m) {
    if (f->shard) SV_TRY(sv_comm_fence_to(f->shard, m.shard));
    if (f->repl) SV_TRY(sv_comm_fence_to(f->repl, m.repl));
    return SV_OK;
}

sv_status sv_fsdp_fence(sv_fsdp *f) { return sv_fsdp_fence_to(f, (sv_fsdp_mark){UINT64_MAX, UINT64_MAX}); }

/* --trace: wait for the compute enqueued so far, to time a unit. The fence first (for the
 * collectives issued up to `m`, which that compute can wait on), so a hung peer is a timeout. */
static sv_status trace_sync(sv_fsdp *f, sv_fsdp_mark m) {
    SV_TRY(sv_fsdp_fence_to(f, m));
    return sv_be_sync(f->be);
}

size_t sv_fsdp_persistent_bytes(const sv_fsdp *f) {
    size_t n = 0;
    for (int u = 0; u < f->L.n_units; u++) n += f->L.units[u].shard;
    return 16 * n;
}

/* The deterministic init (model/params.c) as a source for the master-shard loader. */
static sv_status init_piece(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                            uint64_t count, float *dst) {
    const sv_fsdp *f = ctx;
    (void)u, (void)kind, (void)shard_offset;
    sv_vit_param_init(f->cfg.seed, &f->L.params[f->L.entries[t].param], dst, tensor_begin, count);
    return SV_OK;
}

sv_status sv_fsdp_init_params(sv_fsdp *f) { return sv_fsdp_load_masters(f, init_piece, f, 0); }

sv_status sv_fsdp_zero_grad(sv_fsdp *f) {
    for (int u = 0; u < f->L.n_units; u++) SV_TRY(sv_be_zero(f->be, f->us[u].grad, f->L.units[u].shard * 4));
    return SV_OK;
}

/* ---- buffer pools ------------------------------------------------------------------------ */

/* The first free buffer of pool p with room for `bytes`, now held by unit u. The schedule
 * never holds more than the pool was carved for (root + current + prefetched, or one per unit
 * when kept from forward to backward; one staging buffer at a time). */
static sv_status pool_acquire(sv_buf_pool *p, const char *what, int u, size_t bytes, void **out) {
    for (int i = 0; i < p->n; i++) {
        sv_pool_buf *b = &p->b[i];
        if (b->unit < 0 && b->bytes >= bytes) {
            b->unit = u;
            *out = b->ptr;
            return SV_OK;
        }
    }
    return SV_FAIL(SV_ERR_INVALID, "fsdp: no free %s buffer of %zu bytes for unit %d", what, bytes, u);
}

/* Give back the buffer unit u holds in pool p (a unit holds at most one per pool). */
static void pool_release(sv_buf_pool *p, int u) {
    for (int i = 0; i < p->n; i++)
        if (p->b[i].unit == u) {
            p->b[i].unit = -1;
            return;
        }
    SV_ASSERT(0);
}

/* ---- helpers ----------------------------------------------------------------------------- */

static sv_comm_dtype param_comm_dtype(const sv_fsdp *f) { return f->compute_elem == 2 ? SV_COMM_BF16 : SV_COMM_F32; }

/* Trace time (us) at which the collective just waited on really completed. */
static double comm_done_us(const sv_fsdp *f, const sv_comm *c) {
    return (sv_comm_last_complete_time(c) - f->trace->t0) * 1e6;
}

static double tnow(const sv_fsdp *f) { return f->trace ? sv_trace_now(f->trace) : 0.0; }

/* ---- the unit state machine -------------------------------------------------------------- */
/* Textbook FSDP (docs/fsdp.md): "all-gather unit u -> compute -> free; backward: all-gather again,
 * compute grads, reduce-scatter into the owner's shard, free". Each step is one transition:
 *
 *   unshard        SHARDED    -> UNSHARDING   issue the all-gather (prefetch = issue it early)
 *   wait_unshard   UNSHARDING -> UNSHARDED    wait for it; the parameters are usable
 *   reshard        UNSHARDED  -> SHARDED      free the gathered parameters
 *   post_backward  UNSHARDED  -> REDUCING     free them and reduce_issue the gradient
 *                                (-> SHARDED when the gradient accumulates unsharded for now)
 *   reduce_wait    REDUCING   -> SHARDED      wait, all-reduce across replicas, add to the shard
 */

/* unshard (FSDP2 FSDPParamGroup.unshard, async): start gathering unit u. Takes a buffer from
 * the gathered pool, casts the fp32 master shard to the compute dtype into a staging buffer and
 * issues the all-gather; with a shard group of one the cast into the buffer is the whole
 * "gather". A unit already UNSHARDING or UNSHARDED (prefetched, or kept from the forward by
 * reshard_after_forward = 0) is left as it is, as in FSDP2. */
static sv_status unshard(sv_fsdp *f, int u) {
    if (u >= f->L.n_units) return SV_OK;
    sv_unit_state *s = &f->us[u];
    if (s->state == SV_UNIT_UNSHARDING || s->state == SV_UNIT_UNSHARDED) return SV_OK;
    EXPECT_STATE(f, u, "unshard", s->state == SV_UNIT_SHARDED);
    const sv_unit *un = &f->L.units[u];
    size_t e = f->compute_elem;
    SV_TRY(pool_acquire(&f->gathered, "gathered", u, un->padded * e, &s->params));
    if (u != 0 && ++f->ctr.live_gathered > f->ctr.max_live_gathered) f->ctr.max_live_gathered = f->ctr.live_gathered;
    s->t_gather = tnow(f);
    if (f->shard_size == 1) { /* nothing to gather: the shard is the whole unit */
        SV_TRY(sv_be_f32_to_compute(f->be, s->params, s->master, un->shard));
        s->gather_req.slot = -1;
    } else {
        SV_TRY(pool_acquire(&f->staging, "all-gather staging", u, un->shard * e, &s->send));
        SV_TRY(sv_be_f32_to_compute(f->be, s->send, s->master, un->shard));
        SV_TRY(sv_comm_all_gather(f->shard, s->params, s->send, un->shard, param_comm_dtype(f), &s->gather_req));
    }
    s->state = SV_UNIT_UNSHARDING;
    return SV_OK;
}

/* wait_unshard (FSDP2 wait_for_unshard): unit u's all-gather has landed; its staging buffer
 * goes back to the pool and *params points at the full parameters. UNSHARDING -> UNSHARDED;
 * nothing to do when already UNSHARDED. */
static sv_status wait_unshard(sv_fsdp *f, int u, void **params) {
    sv_unit_state *s = &f->us[u];
    EXPECT_STATE(f, u, "wait_unshard", s->state == SV_UNIT_UNSHARDING || s->state == SV_UNIT_UNSHARDED);
    EXPECT_HOLDS(f, u, "wait_unshard");
    if (s->state == SV_UNIT_UNSHARDING) {
        if (s->gather_req.slot >= 0) {
            SV_TRY(sv_comm_wait(f->shard, &s->gather_req));
            s->gather_req.slot = -1;
            if (f->trace)
                sv_trace_add(f->trace, "all_gather", "comm", SV_TRACE_ALL_GATHER, u, s->t_gather,
                             comm_done_us(f, f->shard));
        }
        if (s->send) {
            pool_release(&f->staging, u);
            s->send = NULL;
        }
        s->state = SV_UNIT_UNSHARDED;
    }
    *params = s->params;
    return SV_OK;
}

/* reshard (FSDP2 reshard): free unit u's gathered parameters; the buffer goes back to the pool.
 * The textbook's "free" after a unit computes. UNSHARDED -> SHARDED. */
static sv_status reshard(sv_fsdp *f, int u) {
    sv_unit_state *s = &f->us[u];
    EXPECT_STATE(f, u, "reshard", s->state == SV_UNIT_UNSHARDED);
    EXPECT_HOLDS(f, u, "reshard");
    pool_release(&f->gathered, u);
    s->params = NULL;
    if (u != 0) f->ctr.live_gathered--;
    s->state = SV_UNIT_SHARDED;
    return SV_OK;
}

/* The buffer unit u's backward writes its fp32 gradient into (FSDP2: the unsharded parameters'
 * .grad): with --accum-mode local the unit's own accumulator, reduced on the last micro-step
 * only; otherwise a zeroed gradient slot. Block units alternate between slots 0 and 1 so one
 * reduction overlaps the next unit's backward; the root has slot 2. A slot still holding an
 * earlier unit's reduction is reduce_wait-ed first. */
static sv_status reduce_wait(sv_fsdp *f, int u);
static sv_status grad_acquire(sv_fsdp *f, int u, int last_micro, float **gbuf) {
    sv_unit_state *s = &f->us[u];
    EXPECT_STATE(f, u, "grad_acquire", s->state == SV_UNIT_UNSHARDED && s->grad_slot < 0);
    if (f->cfg.accum_mode == SV_ACCUM_LOCAL) {
        *gbuf = s->local_grad;
        if (!last_micro) return SV_OK;
    }
    int i = 2;
    if (u != 0) {
        i = f->next_gslot;
        f->next_gslot ^= 1;
    }
    sv_grad_slot *g = &f->gslot[i];
    if (g->unit >= 0) SV_TRY(reduce_wait(f, g->unit));
    g->unit = u;
    s->grad_slot = i;
    if (f->cfg.accum_mode == SV_ACCUM_LOCAL) {
        g->buf = s->local_grad;
    } else {
        g->buf = g->own;
        SV_TRY(sv_be_zero(f->be, g->buf, f->L.units[u].padded * 4));
    }
    *gbuf = g->buf;
    return SV_OK;
}

/* reduce_issue: start the reduction of unit u's gradient (the reduce-scatter of FSDP2's
 * post_backward): the optional grad hook, the bf16 cast for --reduce-dtype bf16, then the
 * reduce-scatter, whose result is this rank's block of the summed gradient. */
static sv_status reduce_issue(sv_fsdp *f, int u) {
    sv_grad_slot *g = &f->gslot[f->us[u].grad_slot];
    const sv_unit *un = &f->L.units[u];
    if (f->grad_hook) SV_TRY(f->grad_hook(f->grad_hook_ctx, f, u, g->buf, un->padded));
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

/* post_backward (FSDP2 post_backward): unit u's backward has written its gradient. Free the
 * parameters (reshard) and reduce_issue the gradient: UNSHARDED -> REDUCING. When it stays in
 * the unit's unsharded accumulator until a later micro-step (--accum-mode local), nothing is
 * reduced: UNSHARDED -> SHARDED. */
static sv_status post_backward(sv_fsdp *f, int u) {
    sv_unit_state *s = &f->us[u];
    EXPECT_STATE(f, u, "post_backward", s->state == SV_UNIT_UNSHARDED);
    SV_TRY(reshard(f, u));
    if (s->grad_slot < 0) return SV_OK;
    SV_TRY(reduce_issue(f, u));
    s->state = SV_UNIT_REDUCING;
    return SV_OK;
}

/* reduce_wait: unit u's reduction has landed. Wait for the reduce-scatter, convert from bf16,
 * all-reduce across replica groups (hybrid_shard, no_shard), add into the fp32 gradient shard;
 * the gradient slot is free again. REDUCING -> SHARDED. Done lazily: when the slot is needed by
 * a later unit, or at the end of the micro-step. */
static sv_status reduce_wait(sv_fsdp *f, int u) {
    sv_unit_state *s = &f->us[u];
    EXPECT_STATE(f, u, "reduce_wait", s->state == SV_UNIT_REDUCING && s->grad_slot >= 0);
    sv_grad_slot *g = &f->gslot[s->grad_slot];
    size_t sh = f->L.units[u].shard;
    if (g->pending) {
        SV_TRY(sv_comm_wait(f->shard, &g->req));
        if (f->trace) /* one track per gradient buffer: two reductions can be in flight at once */
            sv_trace_add(f->trace, "reduce_scatter", "comm", SV_TRACE_REDUCE_SCATTER + s->grad_slot, u, g->t_issue,
                         comm_done_us(f, f->shard));
        g->pending = 0;
    }
    if (f->cfg.reduce_dtype == SV_BF16) SV_TRY(sv_be_bf16_to_f32(f->be, g->recv, g->recv16, sh));
    if (f->repl_size > 1) {
        double t = tnow(f);
        SV_TRY(sv_comm_all_reduce_sync(f->repl, g->recv, sh, SV_COMM_F32, SV_COMM_SUM));
        if (f->trace) sv_trace_add(f->trace, "all_reduce", "comm", SV_TRACE_ALL_REDUCE, u, t, sv_trace_now(f->trace));
    }
    SV_TRY(sv_be_add_f32(f->be, s->grad, g->recv, sh));
    if (g->buf == s->local_grad) SV_TRY(sv_be_zero(f->be, g->buf, f->L.units[u].padded * 4));
    g->unit = -1;
    s->grad_slot = -1;
    s->state = SV_UNIT_SHARDED;
    return SV_OK;
}

/* Wait for every reduction still in flight (slot order: the same on every rank). */
static sv_status reduce_wait_all(sv_fsdp *f) {
    for (int i = 0; i < 3; i++)
        if (f->gslot[i].unit >= 0) SV_TRY(reduce_wait(f, f->gslot[i].unit));
    return SV_OK;
}

/* ---- views ------------------------------------------------------------------------------- */

static void root_views(const sv_fsdp *f, const void *base, float *gbase, sv_root_params *rp, sv_root_grads *rg) {
    size_t e = f->compute_elem;
    const sv_unit *un = &f->L.units[0];
    if (rp) memset(rp, 0, sizeof *rp); /* absent slots (no class token) stay NULL */
    if (rg) memset(rg, 0, sizeof *rg);
    for (int k = 0; k < un->n_entries; k++) {
        const sv_flat_entry *en = &f->L.entries[un->first_entry + k];
        int slot = f->L.params[en->param].slot;
        if (rp) rp->t[slot] = (const char *)base + en->offset * e;
        if (rg) rg->t[slot] = gbase ? gbase + en->offset : NULL;
    }
}

static void block_views(const sv_fsdp *f, int u, int l, const void *base, float *gbase, sv_block_params *bp,
                        sv_block_grads *bg) {
    size_t e = f->compute_elem;
    const sv_unit *un = &f->L.units[u];
    if (bp) memset(bp, 0, sizeof *bp); /* absent slots (no LayerScale) stay NULL */
    if (bg) memset(bg, 0, sizeof *bg);
    for (int k = 0; k < un->n_entries; k++) {
        const sv_flat_entry *en = &f->L.entries[un->first_entry + k];
        const sv_param_info *p = &f->L.params[en->param];
        if (p->group != l) continue;
        if (bp) bp->t[p->slot] = (const char *)base + en->offset * e;
        if (bg) bg->t[p->slot] = gbase ? gbase + en->offset : NULL;
    }
}

/* ---- the micro-step ---------------------------------------------------------------------- */

/* The root: gathered first, kept UNSHARDED for the whole micro-step (embed, head, their backward). */
static sv_status unshard_root(sv_fsdp *f, void **params) {
    SV_TRY(unshard(f, 0));
    return wait_unshard(f, 0, params);
}

static sv_status forward_blocks(sv_fsdp *f) {
    int U = f->L.n_units;
    SV_TRY(unshard(f, 1));
    for (int u = 1; u < U; u++) {
        void *params;
        SV_TRY(wait_unshard(f, u, &params)); /* issued by the previous iteration (prefetch) */
        sv_fsdp_mark before_prefetch = sv_fsdp_comm_mark(f);
        SV_TRY(unshard(f, u + 1)); /* forward prefetch: issued before u computes */
        double t = tnow(f);
        for (int l = f->L.units[u].first_block; l <= f->L.units[u].last_block; l++) {
            sv_block_params bp;
            block_views(f, u, l, params, NULL, &bp, NULL);
            SV_TRY(sv_vit_block_fwd(f->model, l, &bp));
        }
        if (f->trace) {
            SV_TRY(trace_sync(f, before_prefetch));
            sv_trace_add(f->trace, "forward", "compute", SV_TRACE_COMPUTE, u, t, sv_trace_now(f->trace));
        }
        if (f->reshard_after_forward) SV_TRY(reshard(f, u));
    }
    return SV_OK;
}

sv_status sv_fsdp_forward(sv_fsdp *f, const float *images) {
    void *root;
    SV_TRY(unshard_root(f, &root));
    sv_root_params rp;
    root_views(f, root, NULL, &rp, NULL);
    SV_TRY(sv_vit_embed_fwd(f->model, &rp, images));
    SV_TRY(forward_blocks(f));
    SV_TRY(sv_vit_head_fwd(f->model, &rp, NULL, NULL, 0.0f, 0.0f));
    /* no backward follows: reshard the root and whatever reshard_after_forward = 0 kept */
    for (int u = 0; u < f->L.n_units; u++)
        if (f->us[u].state == SV_UNIT_UNSHARDED) SV_TRY(reshard(f, u));
    /* the caller downloads the logits next: a hung peer must be a timeout, not a stuck download */
    return sv_fsdp_fence(f);
}

sv_status sv_fsdp_forward_backward(sv_fsdp *f, const float *images, const int32_t *labels, const float *soft,
                                   float smoothing, float grad_scale, int micro, int n_micro) {
    int U = f->L.n_units, last = micro == n_micro - 1;
    sv_vit *m = f->model;
    void *root;
    SV_TRY(unshard_root(f, &root));
    sv_root_params rp;
    root_views(f, root, NULL, &rp, NULL);
    double t = tnow(f);
    SV_TRY(sv_vit_embed_fwd(m, &rp, images));
    if (f->trace) sv_trace_add(f->trace, "embed", "compute", SV_TRACE_COMPUTE, 0, t, sv_trace_now(f->trace));
    SV_TRY(forward_blocks(f));
    t = tnow(f);
    SV_TRY(sv_vit_head_fwd(m, &rp, labels, soft, smoothing, grad_scale));

    /* backward: root gradients live in their own buffer until the embedding backward */
    float *root_gbuf;
    SV_TRY(grad_acquire(f, 0, last, &root_gbuf));
    sv_root_grads rg;
    root_views(f, root, root_gbuf, NULL, &rg);
    SV_TRY(sv_vit_head_bwd(m, &rp, &rg));
    if (f->trace) sv_trace_add(f->trace, "head", "compute", SV_TRACE_COMPUTE, 0, t, sv_trace_now(f->trace));

    SV_TRY(unshard(f, U - 1)); /* again after full_shard's reshard; kept by shard_grad_op */
    for (int u = U - 1; u >= 1; u--) {
        void *params;
        SV_TRY(wait_unshard(f, u, &params));
        sv_fsdp_mark before_prefetch = sv_fsdp_comm_mark(f);
        if (u > 1) SV_TRY(unshard(f, u - 1)); /* BACKWARD_PRE: fetch u-1 before computing u */
        float *gbuf;
        SV_TRY(grad_acquire(f, u, last, &gbuf));
        if (f->repl) before_prefetch.repl = sv_comm_issued(f->repl); /* u's compute follows its all-reduces */
        t = tnow(f);
        for (int l = f->L.units[u].last_block; l >= f->L.units[u].first_block; l--) {
            sv_block_params bp;
            sv_block_grads bg;
            block_views(f, u, l, params, gbuf, &bp, &bg);
            SV_TRY(sv_vit_block_bwd(m, l, &bp, &bg));
        }
        if (f->trace) {
            SV_TRY(trace_sync(f, before_prefetch));
            sv_trace_add(f->trace, "backward", "compute", SV_TRACE_COMPUTE, u, t, sv_trace_now(f->trace));
        }
        SV_TRY(post_backward(f, u)); /* reduce-scatter as soon as the unit's backward ends */
    }
    t = tnow(f);
    SV_TRY(sv_vit_embed_bwd(m, &rp, &rg));
    if (f->trace) sv_trace_add(f->trace, "embed_bwd", "compute", SV_TRACE_COMPUTE, 0, t, sv_trace_now(f->trace));
    SV_TRY(post_backward(f, 0));
    return reduce_wait_all(f);
}
