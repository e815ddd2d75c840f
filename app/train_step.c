#include "app/train_step.h"

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
    for (int micro = 0; micro < accum; micro++) {
        sv_micro_batch mb = {0};
        double tw = sv_now_s(), tw_us = tr ? sv_trace_now(tr) : 0;
        SV_TRY(next(ctx, micro, &mb));
        res->data_wait_s += sv_now_s() - tw;
        if (tr) sv_trace_add(tr, "data_wait", "data", 2, -1, tw_us, sv_trace_now(tr));
        res->epoch = mb.epoch;
        double ls;
        SV_TRY(sv_fsdp_forward_backward(&r->fsdp, mb.images, mb.soft ? NULL : mb.labels, mb.soft, smoothing,
                                        1.0f / (float)batch_size, micro, accum, &ls));
        res->loss_sum += ls;
    }
    double t0 = sv_now_s(), w0 = sv_run_comm_wait_s(r);
    SV_TRY(sv_fsdp_optimizer_step(&r->fsdp, oc, &res->grad_norm, &res->skipped));
    if (tr) SV_TRY(sv_be_sync(r->be)); /* attribute queued device work to the optimizer */
    res->optim_s = sv_now_s() - t0;
    res->optim_wait_s = sv_run_comm_wait_s(r) - w0;
    SV_TRY(sv_comm_all_reduce_sync(r->world_comm, &res->loss_sum, 1, SV_COMM_F64, SV_COMM_SUM));
    return SV_OK;
}
