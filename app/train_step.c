#include "app/train_step.h"

#include <math.h>
#include <stdlib.h>

/* --debug-nan-step/--debug-nan-rank, installed as the FSDP grad hook: at optimizer step
 * `step`, rank `rank` poisons the first element of the last unit's full gradient right before
 * its reduction, so the reduced shard (and, across replica groups, every copy of it) holds a
 * NaN, the global norm is NaN on every rank and the step is skipped everywhere. */
typedef struct debug_nan {
    long step;
    int rank;
} debug_nan;
static debug_nan g_debug_nan = {-1, 0}; /* one run per process */

static sv_status debug_nan_hook(void *ctx, sv_fsdp *f, int unit, float *grad, size_t n) {
    const debug_nan *d = ctx;
    (void)n;
    if (f->step != d->step || f->rank != d->rank || unit != f->L.n_units - 1) return SV_OK;
    float nanv = NAN;
    return sv_be_upload(f->be, grad, &nanv, sizeof nanv);
}

void sv_train_debug_nan(sv_run *r, long step, int rank) {
    if (step < 0) return;
    g_debug_nan = (debug_nan){step, rank};
    r->fsdp.grad_hook = debug_nan_hook;
    r->fsdp.grad_hook_ctx = &g_debug_nan;
}

/* Sum of this rank's per-sample losses of the micro-step just run (host staging `host`). */
static sv_status micro_loss_sum(sv_run *r, float *host, double *sum) {
    const sv_vit *m = r->fsdp.model;
    SV_TRY(sv_be_download(r->be, host, m->losses, (size_t)m->B * 4));
    double s = 0;
    for (int i = 0; i < m->B; i++) s += host[i];
    *sum = s;
    return SV_OK;
}

double sv_run_comm_wait_s(const sv_run *r) {
    const sv_comm *cs[3] = {r->world_comm, r->shard_comm, r->repl_comm};
    double s = 0;
    for (int i = 0; i < 3; i++) {
        if (!cs[i]) continue;
        sv_comm_stats st;
        sv_comm_get_stats(cs[i], &st);
        s += st.wait_seconds;
    }
    return s;
}

sv_status sv_train_step(sv_run *r, const sv_optim_config *oc, float smoothing, int accum, int batch_size,
                        sv_micro_batch_fn next, void *ctx, sv_step_result *res) {
    sv_trace *tr = r->fsdp.trace;
    res->loss_sum = 0;
    res->data_wait_s = 0;
    res->epoch = 0;
    SV_TRY(sv_fsdp_zero_grad(&r->fsdp));
    /* the host staging of the losses: allocated on the first step, kept in r (freed by teardown) */
    if (!r->host_losses && !(r->host_losses = malloc((size_t)r->fsdp.model->B * sizeof(float))))
        return SV_FAIL(SV_ERR_OOM, "loss staging of %d floats", r->fsdp.model->B);
    for (int micro = 0; micro < accum; micro++) {
        sv_micro_batch mb = {0};
        double tw = sv_now_s(), tw_us = tr ? sv_trace_now(tr) : 0;
        SV_TRY(next(ctx, micro, &mb));
        res->data_wait_s += sv_now_s() - tw;
        if (tr) sv_trace_add(tr, "data_wait", "data", SV_TRACE_DATA, -1, tw_us, sv_trace_now(tr));
        res->epoch = mb.epoch;
        sv_vit_set_batch(r->fsdp.model, 1, mb.epoch, mb.sample0);
        double ls;
        SV_TRY(sv_fsdp_forward_backward(&r->fsdp, mb.images, mb.soft ? NULL : mb.labels, mb.soft, smoothing,
                                        1.0f / (float)batch_size, micro, accum));
        SV_TRY(micro_loss_sum(r, r->host_losses, &ls));
        res->loss_sum += ls;
    }
    sv_vit_set_batch(r->fsdp.model, 0, 0, 0); /* evaluation between steps runs without drops */
    double t0 = sv_now_s(), w0 = sv_run_comm_wait_s(r);
    SV_TRY(sv_fsdp_optimizer_step(&r->fsdp, oc, &res->grad_norm, &res->skipped));
    if (tr) SV_TRY(sv_be_sync(r->be)); /* attribute queued device work to the optimizer */
    res->optim_s = sv_now_s() - t0;
    res->optim_wait_s = sv_run_comm_wait_s(r) - w0;
    SV_TRY(sv_comm_all_reduce_sync(r->world_comm, &res->loss_sum, 1, SV_COMM_F64, SV_COMM_SUM));
    return SV_OK;
}
