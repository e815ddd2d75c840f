/* Master shards from a source of tensor values (fsdp/load.h). */
#include "fsdp/load.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"

static float *kind_dst(sv_unit_state *s, int kind) {
    return kind == SV_FSDP_MASTER ? s->master : kind == SV_FSDP_M ? s->m : kind == SV_FSDP_V ? s->v : s->ema;
}

/* Stage unit u's shard of `kind` (zeros, or the current master with SV_FSDP_LOAD_KEEP), let the
 * source fill its pieces, upload. */
static sv_status load_kind(sv_fsdp *f, sv_fsdp_source_fn src, void *ctx, unsigned flags, int u, int kind, float *host) {
    const sv_unit *un = &f->L.units[u];
    sv_unit_state *s = &f->us[u];
    size_t bytes = un->shard * sizeof(float);
    float *dst = kind_dst(s, kind);
    if (kind == SV_FSDP_MASTER && (flags & SV_FSDP_LOAD_KEEP))
        SV_TRY(sv_be_download(f->be, host, dst, bytes));
    else
        memset(host, 0, bytes); /* padding stays zero */
    for (int k = 0; k < un->n_entries; k++) {
        int t = un->first_entry + k;
        sv_shard_piece p = sv_layout_piece(un, &f->L.entries[t], f->shard_rank);
        if (p.count) SV_TRY(src(ctx, u, kind, t, p.tensor_begin, p.shard_offset, p.count, host + p.shard_offset));
    }
    return sv_be_upload(f->be, dst, host, bytes);
}

sv_status sv_fsdp_load_masters(sv_fsdp *f, sv_fsdp_source_fn src, void *ctx, unsigned flags) {
    size_t max_shard = sv_layout_max_shard(&f->L);
    float *host = calloc(max_shard ? max_shard : 1, sizeof(float));
    if (!host) return SV_FAIL(SV_ERR_OOM, "shard staging of %zu floats", max_shard);
    int kinds = flags & SV_FSDP_LOAD_OPTIM ? SV_FSDP_KINDS : 1;
    sv_status st = SV_OK;
    for (int u = 0; u < f->L.n_units && st == SV_OK; u++) {
        const sv_unit *un = &f->L.units[u];
        sv_unit_state *s = &f->us[u];
        size_t bytes = un->shard * sizeof(float);
        for (int kind = 0; kind < kinds && st == SV_OK; kind++) st = load_kind(f, src, ctx, flags, u, kind, host);
        if (st == SV_OK && s->ema)
            st = flags & SV_FSDP_LOAD_EMA ? load_kind(f, src, ctx, flags, u, SV_FSDP_EMA, host)
                                          : sv_be_copy(f->be, s->ema, s->master, bytes);
        for (int kind = kinds; kind < SV_FSDP_KINDS && st == SV_OK; kind++)
            st = sv_be_zero(f->be, kind_dst(s, kind), bytes);
        if (st == SV_OK) st = sv_be_zero(f->be, s->grad, bytes);
        if (st == SV_OK && s->local_grad) st = sv_be_zero(f->be, s->local_grad, un->padded * sizeof(float));
    }
    free(host);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
