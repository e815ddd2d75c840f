/* Weight EMA on the sharded masters (fsdp/ema.h). */
#include "fsdp/ema.h"

#include <math.h>

#include "core/trace.h"

double sv_ema_decay(const sv_ema_opts *o, int64_t n) {
    int64_t s = n - 1; /* ModelEmaV3: step = max(0, step - update_after_step - 1) */
    if (s <= 0) return 0.0;
    if (!o->warmup) return o->decay;
    double d = 1.0 - pow(1.0 + (double)s / SV_EMA_WARMUP_GAMMA, -SV_EMA_WARMUP_POWER);
    if (d > o->decay) d = o->decay;
    return d < 0.0 ? 0.0 : d;
}

sv_status sv_ema_update(sv_fsdp *f, const sv_ema_opts *o, int skipped) {
    if (!f->cfg.ema || skipped) return SV_OK;
    double t0 = f->trace ? sv_trace_now(f->trace) : 0.0;
    float w = (float)(1.0 - sv_ema_decay(o, (int64_t)f->step - (int64_t)f->ctr.skipped_steps));
    for (int u = 0; u < f->L.n_units; u++)
        SV_TRY(sv_be_ema(f->be, f->us[u].ema, f->us[u].master, f->L.units[u].shard, w));
    if (f->trace) {
        SV_TRY(sv_be_sync(f->be));
        sv_trace_add(f->trace, "ema", "optim", SV_TRACE_OPTIM, -1, t0, sv_trace_now(f->trace));
    }
    return SV_OK;
}

sv_status sv_ema_reset(sv_fsdp *f) {
    for (int u = 0; u < f->L.n_units && f->cfg.ema; u++)
        SV_TRY(sv_be_copy(f->be, f->us[u].ema, f->us[u].master, f->L.units[u].shard * sizeof(float)));
    return SV_OK;
}

void sv_ema_swap(sv_fsdp *f) {
    for (int u = 0; u < f->L.n_units && f->cfg.ema; u++) {
        float *m = f->us[u].master;
        f->us[u].master = f->us[u].ema;
        f->us[u].ema = m;
    }
}
