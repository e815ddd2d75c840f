/* FSDP optimizer step (global norm, skip on non-finite, clipping, sharded AdamW) and
 * full-parameter gathering for export/inspection. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fsdp/fsdp.h"
#include "fsdp/optim.h"

sv_status sv_fsdp_each_piece(sv_fsdp *f, sv_fsdp_piece_fn fn, void *ctx) {
    for (int u = 0; u < f->L.n_units; u++) {
        const sv_unit *un = &f->L.units[u];
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &f->L.entries[un->first_entry + k];
            sv_shard_piece p = sv_layout_piece(un, e, f->shard_rank);
            if (p.count) SV_TRY(fn(ctx, f, u, e, p));
        }
    }
    return SV_OK;
}

typedef struct adamw_ctx {
    const sv_optim_config *oc;
    sv_adamw_hparams h;
} adamw_ctx;

static sv_status adamw_piece(void *vctx, sv_fsdp *f, int u, const sv_flat_entry *e, sv_shard_piece p) {
    const adamw_ctx *c = vctx;
    sv_unit_state *s = &f->us[u];
    float wd = f->L.params[e->param].no_decay ? 0.0f : c->oc->weight_decay;
    size_t o = p.shard_offset;
    sv_adamw_hparams hp = c->h;
    hp.lr = sv_optim_piece_lr(c->oc, e->param);
    return sv_be_adamw(f->be, s->master + o, s->grad + o, s->m + o, s->v + o, p.count, &hp, wd);
}

/* ---- the step's readback ------------------------------------------------------------------ */

sv_status sv_fsdp_readback_reserve(sv_fsdp *f, sv_fsdp_readback *rb, size_t bytes) {
    if (rb->cap >= bytes) return SV_OK;
    sv_fsdp_readback_release(f, rb);
    SV_TRY(sv_be_alloc(f->be, bytes, &rb->dev));
    if (!(rb->host = malloc(bytes))) return SV_FAIL(SV_ERR_OOM, "fsdp readback of %zu bytes", bytes);
    rb->cap = bytes;
    return SV_OK;
}

void sv_fsdp_readback_release(sv_fsdp *f, sv_fsdp_readback *rb) {
    if (rb->dev) sv_be_free(f->be, rb->dev);
    free(rb->host);
    *rb = (sv_fsdp_readback){0};
}

/* Layout of f->rb: the caller's floats (padded to 8 bytes), then shard_size x n_units doubles. */
static size_t floats_bytes(size_t n) { return (n * 4 + 7) & ~(size_t)7; }
static size_t rb_bytes(const sv_fsdp *f, size_t n_floats) {
    return floats_bytes(n_floats) + (size_t)f->shard_size * (size_t)f->L.n_units * sizeof(double);
}

sv_status sv_fsdp_step_floats(sv_fsdp *f, size_t n, float **dev) {
    SV_TRY(sv_fsdp_readback_reserve(f, &f->rb, rb_bytes(f, n)));
    f->step_floats = n;
    *dev = f->rb.dev;
    return SV_OK;
}

const float *sv_fsdp_step_floats_host(const sv_fsdp *f) { return f->rb.host; }

/* Deterministic global norm: this rank's per-unit sums of squares, then every rank's, summed
 * in unit order per rank and the ranks' partials in rank order (the same on all ranks,
 * independent of the reduction algorithm). Replicas hold identical shards, so only the shard
 * group sums. The sums stay on the device until the step's one download (with the caller's
 * floats), after the all-gather and the fences. */
static sv_status global_grad_norm(sv_fsdp *f, double *norm) {
    size_t U = (size_t)f->L.n_units;
    SV_TRY(sv_fsdp_readback_reserve(f, &f->rb, rb_bytes(f, f->step_floats)));
    size_t off = floats_bytes(f->step_floats);
    double *all = (double *)((char *)f->rb.dev + off), *mine = all + (size_t)f->shard_rank * U;
    for (size_t u = 0; u < U; u++) SV_TRY(sv_be_sumsq_f32_dev(f->be, f->us[u].grad, f->L.units[u].shard, mine + u));
    sv_comm_req req;
    SV_TRY(sv_comm_all_gather(f->shard, all, mine, U, SV_COMM_F64, &req)); /* in place */
    SV_TRY(sv_comm_wait(f->shard, &req));
    SV_TRY(sv_fsdp_fence(f));
    SV_TRY(sv_be_download(f->be, f->rb.host, f->rb.dev, rb_bytes(f, f->step_floats))); /* the host sync */
    const double *h = (const double *)((const char *)f->rb.host + off);
    double total = 0.0;
    for (int r = 0; r < f->shard_size; r++) {
        double partial = 0.0;
        for (size_t u = 0; u < U; u++) partial += h[(size_t)r * U + u];
        total += partial;
    }
    *norm = sqrt(total);
    return SV_OK;
}

sv_status sv_fsdp_optimizer_step(sv_fsdp *f, const sv_optim_config *oc, double *grad_norm, int *skipped) {
    double t0 = f->trace ? sv_trace_now(f->trace) : 0.0;
    double norm;
    SV_TRY(global_grad_norm(f, &norm));
    *grad_norm = norm;
    long step = f->step++;
    if (!isfinite(norm)) {
        *skipped = 1;
        f->ctr.skipped_steps++;
        SV_WARN("step %ld: non-finite gradient norm; step skipped, parameters and optimizer state unchanged "
                "(%llu skipped so far)",
                step + 1, (unsigned long long)f->ctr.skipped_steps); /* numbered from 1, as every log line */
        return SV_OK;
    }
    *skipped = 0;
    float clip = 1.0f;
    if (oc->max_grad_norm > 0 && norm > oc->max_grad_norm) clip = (float)(oc->max_grad_norm / (norm + 1e-6));
    long t = step + 1 - (long)f->ctr.skipped_steps; /* AdamW's step count: applied updates */
    if (oc->kind != SV_OPT_ADAMW) {
        SV_TRY(sv_fsdp_optim_rule_step(f, oc, clip, t));
        goto done;
    }
    adamw_ctx ac = {.oc = oc,
                    .h = {
                        .lr = oc->lr,
                        .beta1 = oc->beta1,
                        .beta2 = oc->beta2,
                        .eps = oc->eps,
                        .weight_decay = oc->weight_decay,
                        .bc1 = (float)(1.0 - pow(oc->beta1, (double)t)),
                        .bc2 = (float)(1.0 - pow(oc->beta2, (double)t)),
                        .grad_scale = clip,
                    }};
    SV_TRY(sv_fsdp_each_piece(f, adamw_piece, &ac));
done:
    if (f->trace) {
        SV_TRY(sv_be_sync(f->be));
        sv_trace_add(f->trace, "optimizer", "optim", SV_TRACE_OPTIM, -1, t0, sv_trace_now(f->trace));
    }
    return SV_OK;
}

sv_status sv_fsdp_gather_full_params(sv_fsdp *f, float *dst) {
    size_t max_padded = sv_layout_max_padded(&f->L), max_shard = sv_layout_max_shard(&f->L);
    float *full = malloc(max_padded * 4), *shard = malloc(max_shard * 4);
    if (!full || !shard) {
        free(full);
        free(shard);
        return SV_FAIL(SV_ERR_OOM, "gather staging of %zu floats", max_padded);
    }
    sv_status st = SV_OK;
    size_t off = 0;
    for (int u = 0; u < f->L.n_units && st == SV_OK; u++) {
        const sv_unit *un = &f->L.units[u];
        sv_comm_req req;
        if ((st = sv_be_download(f->be, shard, f->us[u].master, un->shard * 4)) != SV_OK) break;
        if ((st = sv_comm_all_gather(f->shard, full, shard, un->shard, SV_COMM_F32, &req)) != SV_OK) break;
        if ((st = sv_comm_wait(f->shard, &req)) != SV_OK) break;
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &f->L.entries[un->first_entry + k];
            memcpy(dst + off, full + e->offset, e->numel * 4);
            off += e->numel;
        }
    }
    free(full);
    free(shard);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
