#include "app/train_step.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <time.h>

sv_train_hooks sv_train_hooks_off(void) {
    return (sv_train_hooks){.poison_step = -1, .signal_step = -1, .debug_nan_step = -1, .signal_sig = SIGTERM};
}

/* --debug-nan-step/--debug-nan-rank, installed as the FSDP grad hook: at optimizer step
 * `step`, rank `rank` poisons the first element of the last unit's full gradient right before
 * its reduction, so the reduced shard (and, across replica groups, every copy of it) holds a
 * NaN, the global norm is NaN on every rank and the step is skipped everywhere. */
static sv_status debug_nan_hook(void *ctx, sv_fsdp *f, int unit, float *grad, size_t n) {
    const sv_train_hooks *h = ctx;
    (void)n;
    if (f->step != h->debug_nan_step || f->rank != h->debug_nan_rank || unit != f->L.n_units - 1) return SV_OK;
    float nanv = NAN;
    SV_TRY(sv_fsdp_fence(f)); /* the upload synchronises the compute stream */
    return sv_be_upload(f->be, grad, &nanv, sizeof nanv);
}

void sv_train_hooks_install(sv_run *r, const sv_train_hooks *h) {
    if (h->debug_nan_step < 0) return;
    r->fsdp.grad_hook = debug_nan_hook;
    r->fsdp.grad_hook_ctx = (void *)h; /* read only (debug_nan_hook) */
}

void sv_train_hooks_remove(sv_run *r) {
    if (r->fsdp.grad_hook != debug_nan_hook) return;
    r->fsdp.grad_hook = NULL;
    r->fsdp.grad_hook_ctx = NULL;
}

static void *host_alloc(void *ctx, size_t bytes) {
    void *p = NULL;
    return sv_be_host_alloc((sv_backend *)ctx, bytes, &p) == SV_OK ? p : NULL;
}
static void host_free(void *ctx, void *p) { sv_be_host_free((sv_backend *)ctx, p); }

void sv_loader_opts_host_alloc(sv_loader_opts *lo, sv_backend *be) {
    lo->alloc = host_alloc;
    lo->free = host_free;
    lo->alloc_ctx = be;
}

/* The poison and signal hooks of the batch of micro-step `micro`. */
static void feed_hooks(const sv_loader_feed *f, int micro, const sv_batch *b) {
    const sv_train_hooks *h = f->hooks;
    if (!h) return;
    if (f->step == h->poison_step && f->r->rank == h->poison_rank) b->images[0] = NAN;
    if (f->step == h->signal_step && f->r->rank == h->signal_rank && micro == 0) {
        raise(h->signal_sig);
        /* the stall: nanosleep to an absolute deadline, resumed after each signal handler */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double s = h->signal_stall_s > 0 ? h->signal_stall_s : 0;
        until.tv_sec += (time_t)s;
        until.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        while (s > 0 && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
        }
    }
}

sv_status sv_loader_feed_next(void *ctx, int micro, sv_micro_batch *mb) {
    sv_loader_feed *f = ctx;
    const sv_vit_config *c = &f->r->vcfg;
    const sv_run_batch *d = &f->r->batch;
    size_t B = (size_t)f->r->micro_batch, K = (size_t)c->num_classes;
    const sv_batch *b;
    /* the previous batch's host buffers go back to the loader: its uploads must have read them */
    SV_TRY(sv_be_upload_fence(f->r->be));
    SV_TRY(sv_loader_next(f->ld, &b));
    f->next_epoch = b->next_epoch;
    f->next_cursor = b->next_cursor;
    feed_hooks(f, micro, b);
    SV_TRY(sv_be_upload_async(f->r->be, d->images, b->images, B * c->in_chans * c->img * c->img * 4));
    SV_TRY(sv_be_upload_async(f->r->be, d->labels, b->labels, B * 4));
    if (b->soft_targets) SV_TRY(sv_be_upload_async(f->r->be, d->soft, b->soft_targets, B * K * 4));
    mb->images = d->images;
    mb->labels = d->labels;
    mb->soft = b->soft_targets ? d->soft : NULL;
    mb->epoch = b->epoch;
    mb->sample0 = b->cursor + (uint64_t)f->r->rank * B; /* global epoch position of row 0 */
    return SV_OK;
}

/* Sum of this rank's per-sample losses of a step: `accum` micro-steps of B losses each (host),
 * each micro-step summed in sample order, the micro-step sums in micro-step order. */
static double step_loss_sum(const float *losses, int accum, int B) {
    double total = 0;
    for (int micro = 0; micro < accum; micro++) {
        double s = 0;
        for (int i = 0; i < B; i++) s += losses[(size_t)micro * (size_t)B + (size_t)i];
        total += s;
    }
    return total;
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
    /* Each micro-step's per-sample losses go to their slot of a device buffer (a device copy:
     * no host sync); the optimizer step downloads them with the gradient norm, in its one host
     * synchronisation. */
    const int B = r->fsdp.model->B;
    float *losses;
    SV_TRY(sv_fsdp_step_floats(&r->fsdp, (size_t)accum * (size_t)B, &losses));
    sv_fsdp_mark before_prev_next = sv_fsdp_comm_mark(&r->fsdp);
    for (int micro = 0; micro < accum; micro++) {
        /* `next` may wait for the device work enqueued before the previous `next` (see
         * sv_micro_batch_fn): fence the collectives that work can wait on, so that a hung peer
         * is a comm timeout there rather than a host blocked in the device runtime. No extra
         * wait: only collectives of micro-steps <= micro - 2, which that wait covers anyway. */
        SV_TRY(sv_fsdp_fence_to(&r->fsdp, before_prev_next));
        before_prev_next = sv_fsdp_comm_mark(&r->fsdp);
        sv_micro_batch mb = {0};
        double tw = sv_now_s(), tw_us = tr ? sv_trace_now(tr) : 0;
        SV_TRY(next(ctx, micro, &mb));
        res->data_wait_s += sv_now_s() - tw;
        if (tr) sv_trace_add(tr, "data_wait", "data", SV_TRACE_DATA, -1, tw_us, sv_trace_now(tr));
        res->epoch = mb.epoch;
        sv_vit_set_batch(r->fsdp.model, 1, mb.epoch, mb.sample0);
        SV_TRY(sv_fsdp_forward_backward(&r->fsdp, mb.images, mb.soft ? NULL : mb.labels, mb.soft, smoothing,
                                        1.0f / (float)batch_size, micro, accum));
        SV_TRY(sv_be_copy(r->be, losses + (size_t)micro * (size_t)B, r->fsdp.model->losses, (size_t)B * 4));
    }
    sv_vit_set_batch(r->fsdp.model, 0, 0, 0); /* evaluation between steps runs without drops */
    double t0 = sv_now_s(), w0 = sv_run_comm_wait_s(r);
    SV_TRY(sv_fsdp_optimizer_step(&r->fsdp, oc, &res->grad_norm, &res->skipped));
    if (tr) SV_TRY(sv_be_sync(r->be)); /* attribute queued device work to the optimizer */
    res->optim_s = sv_now_s() - t0;
    res->optim_wait_s = sv_run_comm_wait_s(r) - w0;
    res->loss_sum = step_loss_sum(sv_fsdp_step_floats_host(&r->fsdp), accum, B);
    /* host buffer: NCCL stages it and does not wait for the optimizer's queued kernels */
    SV_TRY(sv_comm_all_reduce_sync(r->world_comm, &res->loss_sum, 1, SV_COMM_F64, SV_COMM_SUM));
    return SV_OK;
}
