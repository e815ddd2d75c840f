/* World-of-one transport: no MPI, no peers. Every collective completes synchronously inside
 * its issue call (all_gather and reduce_scatter copy send to recv, since with one rank the
 * gathered array and the reduced block are the send buffer itself; all_reduce, broadcast and
 * barrier touch nothing). The request handle comes back "already complete" (slot -1), yet the
 * collective still passes through comm.c, so stats and the ring log count it exactly as on a
 * real world: per-step collective-count assertions hold at world size 1 too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm_impl.h"

static sv_status local_issue(sv_comm *c, int idx, int *done) {
    const sv_comm_slot *s = &c->slots[idx];
    size_t bytes = s->count * sv_comm_dtype_size(s->dt);
    if ((s->kind == SV_COLL_ALL_GATHER || s->kind == SV_COLL_REDUCE_SCATTER) && bytes && s->recv != s->send)
        memmove(s->recv, s->send, bytes); /* memmove: all_gather may be in place */
    *done = 1;
    return SV_OK;
}

static sv_status local_test(sv_comm *c, int idx, int *done) {
    (void)c;
    (void)idx;
    *done = 1; /* unreachable in practice: every issue completes synchronously */
    return SV_OK;
}

static void local_destroy(sv_comm *c) { free(c); }

static sv_status local_split(sv_comm *parent, int color, int key, sv_comm **out);

static const sv_comm_ops local_ops = {
    .name = "local",
    .destroy = local_destroy,
    .split = local_split,
    .issue = local_issue,
    .test = local_test,
    .issue_pending = NULL,
};

static sv_status make(const sv_comm_config *cfg, const char *label, sv_comm **out) {
    sv_comm *c = calloc(1, sizeof *c);
    if (!c) return SV_FAIL(SV_ERR_OOM, "local comm: out of memory");
    sv_comm_base_init(c, &local_ops, cfg, 0, 1, label);
    *out = c;
    return SV_OK;
}

sv_status sv_comm_local_create(const sv_comm_config *cfg, sv_comm **out) {
    SV_TRY(make(cfg, "world", out));
    return SV_OK;
}

static sv_status local_split(sv_comm *parent, int color, int key, sv_comm **out) {
    (void)key;
    char label[48];
    snprintf(label, sizeof label, "%.20s/split(color=%d)", parent->label, color);
    SV_TRY(make(&parent->cfg, label, out));
    return SV_OK;
}
