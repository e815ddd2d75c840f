/* train --model-ema: flags, raw + EMA evaluation, --save-ema-params (app/train_ema.h). */
#include "app/train_ema.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/fileio.h"

int sv_train_ema_check(const sv_train_ema_flags *e) {
    if (e->on) return 0;
    const char *need = e->warmup           ? "--model-ema-warmup"
        : e->save_path                     ? "--save-ema-params"
        : e->decay != SV_EMA_DEFAULT_DECAY ? "--model-ema-decay"
                                           : NULL;
    if (!need) return 0;
    return sv_cmd_usage_error("train", "%s needs --model-ema", need);
}

sv_status sv_train_ema_eval(sv_train_log *lg, sv_evaluator *ev, sv_fsdp *f, long step, const char *data_name) {
    double ema_s = 0;
    if (f->cfg.ema) {
        sv_ema_swap(f); /* the EMA weights are the masters for this pass */
        sv_status st = sv_train_log_eval_as(lg, ev, step, data_name, 1);
        sv_ema_swap(f);
        SV_TRY(st);
        ev->has_ema = 1;
        ev->ema_top1 = sv_metrics_top1(&ev->m);
        ev->ema_top5 = sv_metrics_top5(&ev->m);
        ev->ema_loss = sv_metrics_mean_loss(&ev->m);
        ev->ema_samples = (long long)sv_metrics_samples(&ev->m);
        ema_s = ev->seconds;
    }
    SV_TRY(sv_train_log_eval(lg, ev, step, data_name));
    ev->seconds += ema_s; /* both passes: the trainer keeps them out of its throughput */
    return SV_OK;
}

sv_status sv_train_ema_save_params(sv_run *r, const char *path) {
    size_t n = sv_vit_param_count(&r->vcfg);
    float *all = malloc(n * 4);
    if (!all) return SV_FAIL(SV_ERR_OOM, "EMA parameter dump");
    sv_ema_swap(&r->fsdp);
    sv_status st = sv_fsdp_gather_full_params(&r->fsdp, all);
    sv_ema_swap(&r->fsdp);
    if (st == SV_OK && r->rank == 0) st = sv_fileio_write_atomic(path, all, n * 4);
    free(all);
    return st;
}
