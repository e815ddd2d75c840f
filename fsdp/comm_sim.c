/* The virtual-time communicator (comm_sim.h). */
#include "fsdp/comm_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm_impl.h"

typedef struct sim_comm {
    sv_comm base;
    sv_sim_net net;
    sv_sim_group g;
    double progress_s; /* of the link the group uses (comm_sim.h) */
    double *now;
    double free_at;                        /* asynchronous: when the previous collective ends */
    double done_at[SV_COMM_MAX_INFLIGHT];  /* asynchronous: per slot */
    double left[SV_COMM_MAX_INFLIGHT];     /* progress-driven: transfer seconds still to move */
    double ready_at[SV_COMM_MAX_INFLIGHT]; /* progress-driven: every rank has arrived (sched_lag_s) */
    int (*untouchable)(void *ctx, const void *p);
    void *untouchable_ctx;
} sim_comm;

void sv_comm_sim_set_untouchable(sv_comm *c, int (*untouchable)(void *ctx, const void *p), void *ctx) {
    sim_comm *m = (sim_comm *)c;
    m->untouchable = untouchable;
    m->untouchable_ctx = ctx;
}

/* identical ranks: every block of an all_gather is this rank's */
static void fill_all_gather(sim_comm *m, const sv_comm_slot *s) {
    if (s->kind != SV_COLL_ALL_GATHER || !s->count) return;
    if (m->untouchable && (m->untouchable(m->untouchable_ctx, s->recv) || m->untouchable(m->untouchable_ctx, s->send)))
        return;
    size_t b = s->count * sv_comm_dtype_size(s->dt);
    for (int r = 0; r < m->base.size; r++) {
        char *dst = (char *)s->recv + (size_t)r * b;
        if (dst != (const char *)s->send) memmove(dst, s->send, b);
    }
}

static double log2_ceil(int n) {
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

double sv_sim_coll_seconds(const sv_sim_net *net, const sv_sim_group *g, int kind, size_t bytes) {
    int n = g->size;
    if (n <= 1) return 0.0;
    double a = net->intra.alpha_s, bw = net->intra.bw_Bps, rf = net->intra.reduce_factor;
    if (g->nodes > 1) {
        int rpn = net->ranks_per_node > 0 ? net->ranks_per_node : 1;
        double share = net->inter.bw_Bps * (double)g->ranks_per_node / rpn;
        a = net->inter.alpha_s;
        if (g->ranks_per_node <= 1 || share < bw) bw = share, rf = net->inter.reduce_factor;
    }
    if ((kind == SV_COLL_REDUCE_SCATTER || kind == SV_COLL_ALL_REDUCE) && rf > 0) bw *= rf;
    double S = (double)bytes, f = (double)(n - 1) / n, t;
    switch (kind) {
    case SV_COLL_ALL_GATHER:
    case SV_COLL_REDUCE_SCATTER: t = (n - 1) * a + S * f / bw; break;
    case SV_COLL_ALL_REDUCE: {
        double ring = 2.0 * (n - 1) * a + 2.0 * S * f / bw, tree = 2.0 * log2_ceil(n) * a + 2.0 * S / bw;
        t = ring < tree ? ring : tree;
        break;
    }
    case SV_COLL_BROADCAST: t = (n - 1) * a + S / bw; break;
    default: t = 2.0 * log2_ceil(n) * a; break; /* barrier */
    }
    return net->base_s + t;
}

static size_t full_bytes(const sv_comm *c, const sv_comm_slot *s) {
    size_t b = s->count * sv_comm_dtype_size(s->dt);
    if (s->kind == SV_COLL_ALL_GATHER || s->kind == SV_COLL_REDUCE_SCATTER) b *= (size_t)c->size;
    if (s->kind == SV_COLL_BARRIER) b = 0;
    return b;
}

static sv_status sim_issue(sv_comm *c, int idx, int *done) {
    sim_comm *m = (sim_comm *)c;
    const sv_comm_slot *s = &c->slots[idx];
    fill_all_gather(m, s);
    double t = sv_sim_coll_seconds(&m->net, &m->g, (int)s->kind, full_bytes(c, s));
    *done = t <= 0;
    if (*done) return SV_OK;
    double ready = *m->now + m->net.sched_lag_s;
    if (m->progress_s > 0) {
        m->left[idx] = t;
        m->ready_at[idx] = ready;
        return SV_OK;
    }
    double start = ready > m->free_at ? ready : m->free_at;
    m->done_at[idx] = m->free_at = start + t;
    return SV_OK;
}

/* Progress-driven: the oldest unfinished collective of the comm (they move in issue order). */
static int head_slot(const sv_comm *c, const sim_comm *m) {
    int h = -1;
    for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++)
        if (sv_comm_slot_busy(c, i) && !c->slots[i].completed && m->left[i] > 0 &&
            (h < 0 || c->slots[i].seq < c->slots[h].seq))
            h = i;
    return h;
}

static sv_status sim_test(sv_comm *c, int idx, int *done) {
    sim_comm *m = (sim_comm *)c;
    if (m->progress_s <= 0) {
        *done = *m->now >= m->done_at[idx];
        return SV_OK;
    }
    if (m->left[idx] > 0 && *m->now >= m->ready_at[idx] && head_slot(c, m) == idx) { /* one poll: the rank copies */
        double d = m->left[idx] < m->progress_s ? m->left[idx] : m->progress_s;
        m->left[idx] -= d;
        *m->now += d;
    }
    *done = m->left[idx] <= 0;
    return SV_OK;
}

static void sim_wait_hint(sv_comm *c, int idx) {
    sim_comm *m = (sim_comm *)c;
    if (m->progress_s <= 0) {
        if (*m->now < m->done_at[idx]) *m->now = m->done_at[idx];
        return;
    }
    /* blocked in the wait: everything issued before it, then it, move at full speed */
    for (int h; m->left[idx] > 0 && (h = head_slot(c, m)) >= 0;) {
        if (*m->now < m->ready_at[h]) *m->now = m->ready_at[h];
        *m->now += m->left[h];
        m->left[h] = 0;
    }
}

static sv_status sim_split(sv_comm *parent, int color, int key, sv_comm **out) {
    (void)color;
    (void)key;
    *out = NULL;
    return SV_FAIL(SV_ERR_UNSUPPORTED,
                   "comm '%s': the simulated communicator cannot split (the simulator builds its "
                   "groups itself)",
                   parent->label);
}

static void sim_destroy(sv_comm *c) { free(c); }

static const sv_comm_ops sim_ops = {
    .name = "sim",
    .destroy = sim_destroy,
    .split = sim_split,
    .issue = sim_issue,
    .test = sim_test,
    .wait_hint = sim_wait_hint,
};

sv_status sv_comm_sim_create(const sv_comm_config *cfg, const sv_sim_net *net, const sv_sim_group *g, double *now,
                             const char *label, sv_comm **out) {
    *out = NULL;
    if (g->size < 1 || g->rank < 0 || g->rank >= g->size || g->nodes < 1 || g->ranks_per_node < 1)
        return SV_FAIL(SV_ERR_INVALID, "simulated group %s: size %d rank %d nodes %d ranks/node %d", label, g->size,
                       g->rank, g->nodes, g->ranks_per_node);
    if (!(net->intra.bw_Bps > 0) || !(net->inter.bw_Bps > 0) || net->intra.alpha_s < 0 || net->inter.alpha_s < 0 ||
        net->base_s < 0 || net->intra.progress_s < 0 || net->inter.progress_s < 0 || net->sched_lag_s < 0)
        return SV_FAIL(SV_ERR_INVALID, "simulated network: bandwidths must be > 0 and latencies >= 0");
    sim_comm *m = calloc(1, sizeof *m);
    if (!m) return SV_FAIL(SV_ERR_OOM, "simulated comm");
    sv_comm_base_init(&m->base, &sim_ops, cfg, g->rank, g->size, label);
    m->net = *net;
    m->g = *g;
    m->progress_s = g->nodes > 1 ? net->inter.progress_s : net->intra.progress_s;
    m->now = now;
    *out = &m->base;
    return SV_OK;
}
