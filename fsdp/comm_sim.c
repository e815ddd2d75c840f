/* The virtual-time communicator (comm_sim.h). */
#include "fsdp/comm_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm_impl.h"

static double log2_ceil(int n) {
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

void sv_sim_coll_parts(const sv_sim_net *net, const sv_sim_group *g, int kind, size_t bytes, double *latency_s,
                       double *transfer_s, double *net_bytes, int *rounds) {
    *latency_s = *transfer_s = *net_bytes = 0;
    if (rounds) *rounds = 0;
    int n = g->size;
    if (n <= 1) return;
    const sv_sim_link *l = &net->intra;
    double a = l->alpha_s, bw = l->bw_Bps, rf = l->reduce_factor;
    if (g->nodes > 1) {
        int rpn = net->ranks_per_node > 0 ? net->ranks_per_node : 1;
        double share = net->inter.bw_Bps * (double)g->ranks_per_node / rpn;
        l = &net->inter;
        a = l->alpha_s;
        if (g->ranks_per_node <= 1 || share < bw) bw = share, rf = net->inter.reduce_factor;
    }
    if ((kind == SV_COLL_REDUCE_SCATTER || kind == SV_COLL_ALL_REDUCE) && rf > 0) bw *= rf;
    if (l->small_bytes > 0 && (double)bytes <= l->small_bytes) a = l->small_alpha_s; /* eager */
    double S = (double)bytes, f = (double)(n - 1) / n, xfer, dir;                    /* dir: bytes each way */
    int steps; /* sequential message rounds: each costs one alpha */
    switch (kind) {
    case SV_COLL_ALL_GATHER:
    case SV_COLL_REDUCE_SCATTER: steps = n - 1, xfer = S * f / bw, dir = S * f; break;
    case SV_COLL_ALL_REDUCE: {
        double ring = 2.0 * (n - 1) * a + 2.0 * S * f / bw, tree = 2.0 * log2_ceil(n) * a + 2.0 * S / bw;
        if (ring < tree)
            steps = 2 * (n - 1), xfer = 2.0 * S * f / bw, dir = 2.0 * S * f;
        else
            steps = 2 * (int)log2_ceil(n), xfer = 2.0 * S / bw, dir = 2.0 * S;
        break;
    }
    case SV_COLL_BROADCAST: steps = n - 1, xfer = S / bw, dir = S; break;
    default: steps = 2 * (int)log2_ceil(n), xfer = 0, dir = 0; break; /* barrier */
    }
    if (rounds) *rounds = steps;
    *latency_s = net->base_s + steps * a;
    *transfer_s = xfer;
    /* sent + received; spanning nodes, only the hops across a node boundary use the network */
    *net_bytes = 2.0 * dir * (g->nodes > 1 ? (double)g->nodes / n : 1.0);
}

double sv_sim_coll_seconds(const sv_sim_net *net, const sv_sim_group *g, int kind, size_t bytes) {
    double lat, xfer, nb;
    sv_sim_coll_parts(net, g, kind, bytes, &lat, &xfer, &nb, NULL);
    return g->size <= 1 ? 0.0 : lat + xfer;
}

static size_t full_bytes(const sv_comm *c, const sv_comm_slot *s) {
    size_t b = s->count * sv_comm_dtype_size(s->dt);
    if (s->kind == SV_COLL_ALL_GATHER || s->kind == SV_COLL_REDUCE_SCATTER) b *= (size_t)c->size;
    if (s->kind == SV_COLL_BARRIER) b = 0;
    return b;
}

/* ---- the fabric: transfers in flight on self-progressing links ------------------------------ */

#define SIM_MAX_COMMS 8

/* One collective in flight on a self-progressing link. */
typedef struct sim_job {
    int busy;       /* issued and not yet reported done */
    uint64_t seq;   /* its communicator's sequence number (serial links: issue order) */
    double ready;   /* it enters the link (issue + sched_lag_s) */
    double work;    /* seconds of transfer at the link's full rate still to move */
    double tail;    /* after the transfer: its latency terms (fair-share links) */
    double cpu;     /* transport CPU seconds per second of transfer at the full rate */
    double done_at; /* completion, once work is 0 */
} sim_job;

struct sv_sim_fabric {
    sv_sim_net net;
    double *now;
    int threads;
    double t;     /* the jobs' state is that of this time (<= *now between calls) */
    double cpu_s; /* transport CPU time charged to compute (per thread) */
    int has_cpu;  /* some link has a CPU cost */
    long ops;     /* compute ops run so far (sv_sim_fabric_op_seconds calls) */
    /* token buckets per link (0 intra, 1 inter; mult 0 = none): tokens and burst in seconds of
     * transfer at the link's rate, mult = peak / rate */
    double tokens[2], burst_s[2], mult[2];
    int n_comms;
    int used[SIM_MAX_COMMS];
    int link[SIM_MAX_COMMS]; /* 0 intra, 1 inter */
    sim_job job[SIM_MAX_COMMS][SV_COMM_MAX_INFLIGHT];
};

static const sv_sim_link *link_of(const sv_sim_fabric *f, int l) { return l ? &f->net.inter : &f->net.intra; }

/* The rate (fraction of its link's full rate) at which every job moves at time f->t; 0 for
 * those not in flight. */
static void job_rates(const sv_sim_fabric *f, double rate[SIM_MAX_COMMS][SV_COMM_MAX_INFLIGHT]) {
    int k_link[2] = {0, 0};
    for (int c = 0; c < f->n_comms; c++) {
        int head = -1; /* serial links: the oldest job of the communicator in flight */
        for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++) {
            const sim_job *j = &f->job[c][i];
            rate[c][i] = 0;
            if (!f->used[c] || !j->busy || j->work <= 0 || j->ready > f->t) continue;
            if (link_of(f, f->link[c])->shared) {
                rate[c][i] = 1; /* divided by the link's count below */
                k_link[f->link[c]]++;
            } else if (head < 0 || j->seq < f->job[c][head].seq) {
                head = i;
            }
        }
        if (head >= 0) rate[c][head] = 1;
    }
    for (int c = 0; c < f->n_comms; c++)
        for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++)
            if (rate[c][i] > 0 && link_of(f, f->link[c])->shared) rate[c][i] = 1.0 / k_link[f->link[c]];
}

/* Advance the jobs from f->t: up to time `until`, or until job `stop` has moved its last byte,
 * or (op != NULL) until *op seconds of compute have run on the rank's threads besides the
 * transport's CPU time (the transport first: its kernel work preempts the computing threads).
 * A link with a token bucket moves peak / bw times faster while it has tokens; they drain by
 * what it moves beyond its rate and refill at the rate (in seconds of transfer at the rate). */
static void advance(sv_sim_fabric *f, double until, const sim_job *stop, double *op) {
    double rate[SIM_MAX_COMMS][SV_COMM_MAX_INFLIGHT];
    for (;;) {
        if (stop && stop->work <= 0) return;
        if (op && *op <= 0) return;
        if (!stop && !op && f->t >= until) return;
        job_rates(f, rate);
        double next = INFINITY, dt = until - f->t, busy_cpu = 0, load[2] = {0, 0}, m[2];
        for (int c = 0; c < f->n_comms; c++)
            for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++) {
                const sim_job *j = &f->job[c][i];
                if (!f->used[c] || !j->busy || j->work <= 0) continue;
                if (j->ready > f->t && j->ready < next) next = j->ready;
                load[f->link[c]] += rate[c][i];
            }
        int drains = -1; /* the link whose tokens run out at the end of this step */
        for (int l = 0; l < 2; l++) {
            m[l] = f->tokens[l] > 0 && f->mult[l] > 1 ? f->mult[l] : 1;
            if (m[l] > 1 && m[l] * load[l] > 1 && f->tokens[l] / (m[l] * load[l] - 1) < dt)
                dt = f->tokens[l] / (m[l] * load[l] - 1), drains = l;
        }
        for (int c = 0; c < f->n_comms; c++)
            for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++) {
                const sim_job *j = &f->job[c][i];
                rate[c][i] *= m[f->link[c]];
                if (rate[c][i] <= 0) continue;
                if (j->work / rate[c][i] < dt) dt = j->work / rate[c][i], drains = -1;
                busy_cpu += rate[c][i] * j->cpu;
            }
        if (next - f->t < dt) dt = next - f->t, drains = -1;
        double speed = 1.0 - busy_cpu / f->threads; /* of the op, beside the transport */
        if (speed < 0) speed = 0;
        if (op && speed > 0 && *op / speed < dt) dt = *op / speed, drains = -1;
        if (!(dt < INFINITY)) return; /* nothing moves and nothing arrives: the stop job cannot be here */
        /* the time the step ends at, exactly (an arrival or `until` reached by rounding could
         * leave f->t a hair short of it and the loop stepping by nothing) */
        double t1 = dt == next - f->t ? next : dt == until - f->t ? until : f->t + dt;
        for (int c = 0; c < f->n_comms; c++)
            for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++) {
                sim_job *j = &f->job[c][i];
                if (rate[c][i] <= 0) continue;
                if (j->work / rate[c][i] <= dt) {
                    j->work = 0;
                    j->done_at = f->t + dt + j->tail;
                } else {
                    j->work -= rate[c][i] * dt;
                }
            }
        for (int l = 0; l < 2; l++) {
            double tk = f->tokens[l] + (1 - m[l] * load[l]) * dt;
            f->tokens[l] = l == drains || tk < 0 ? 0 : tk > f->burst_s[l] ? f->burst_s[l] : tk;
        }
        if (op) {
            if (speed > 0 && *op / speed <= dt)
                *op = 0;
            else
                *op -= speed * dt;
            f->cpu_s += (busy_cpu / f->threads < 1 ? busy_cpu / f->threads : 1) * dt;
        }
        f->t = t1;
    }
}

sv_status sv_sim_fabric_create(const sv_sim_net *net, double *now, int threads, sv_sim_fabric **out) {
    *out = NULL;
    if (!(net->intra.bw_Bps > 0) || !(net->inter.bw_Bps > 0) || net->intra.alpha_s < 0 || net->inter.alpha_s < 0 ||
        net->base_s < 0 || net->intra.progress_s < 0 || net->inter.progress_s < 0 || net->sched_lag_s < 0 ||
        net->sched_round_s < 0 || net->intra.cpu_s_per_byte < 0 || net->inter.cpu_s_per_byte < 0 ||
        net->intra.burst_bytes < 0 || net->inter.burst_bytes < 0 || net->intra.peak_Bps < 0 || net->inter.peak_Bps < 0)
        return SV_FAIL(SV_ERR_INVALID, "simulated network: bandwidths must be > 0, latencies and costs >= 0");
    if (!now || threads < 1) return SV_FAIL(SV_ERR_INVALID, "simulated fabric: a clock and >= 1 thread needed");
    sv_sim_fabric *f = calloc(1, sizeof *f);
    if (!f) return SV_FAIL(SV_ERR_OOM, "simulated fabric");
    f->net = *net;
    f->now = now;
    f->threads = threads;
    f->t = *now;
    f->has_cpu = net->intra.cpu_s_per_byte > 0 || net->inter.cpu_s_per_byte > 0;
    for (int l = 0; l < 2; l++) { /* token buckets start full (the link has idled) */
        const sv_sim_link *k = link_of(f, l);
        if (k->burst_bytes > 0 && k->peak_Bps > k->bw_Bps) {
            f->mult[l] = k->peak_Bps / k->bw_Bps;
            f->tokens[l] = f->burst_s[l] = k->burst_bytes / k->bw_Bps;
        }
    }
    *out = f;
    return SV_OK;
}

void sv_sim_fabric_destroy(sv_sim_fabric *f) { free(f); }

double sv_sim_fabric_cpu_seconds(const sv_sim_fabric *f) { return f->cpu_s; }

double sv_sim_fabric_op_seconds(sv_sim_fabric *f, double t) {
    f->ops++;
    if (!f->has_cpu || !(t > 0)) return t;
    advance(f, *f->now, NULL, NULL); /* moved while the rank waited: free */
    double op = t;
    advance(f, INFINITY, NULL, &op);
    return f->t - *f->now;
}

/* ---- the communicator ----------------------------------------------------------------------- */

typedef struct sim_comm {
    sv_comm base;
    sv_sim_fabric *fab;
    sv_sim_group g;
    int id;            /* its index in the fabric */
    double progress_s; /* of the link the group uses (comm_sim.h) */
    double *now;
    double left[SV_COMM_MAX_INFLIGHT];     /* progress-driven: transfer seconds still to move */
    double ready_at[SV_COMM_MAX_INFLIGHT]; /* progress-driven: every rank has arrived (sched_lag_s) */
    /* Oversubscribed (sched_round_s): the earliest completion of a collective the rank computed
     * through (issue + rounds x sched_round_s), and the fabric's op count at its issue. */
    double floor_at[SV_COMM_MAX_INFLIGHT];
    long ops_at[SV_COMM_MAX_INFLIGHT];
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

static sim_job *job_of(sim_comm *m, int idx) { return &m->fab->job[m->id][idx]; }

static sv_status sim_issue(sv_comm *c, int idx, int *done) {
    sim_comm *m = (sim_comm *)c;
    const sv_comm_slot *s = &c->slots[idx];
    fill_all_gather(m, s);
    const sv_sim_net *net = &m->fab->net;
    double lat, xfer, nb;
    int rounds;
    sv_sim_coll_parts(net, &m->g, (int)s->kind, full_bytes(c, s), &lat, &xfer, &nb, &rounds);
    *done = lat + xfer <= 0;
    if (*done) return SV_OK;
    double ready = *m->now + net->sched_lag_s;
    m->floor_at[idx] = *m->now + rounds * net->sched_round_s;
    m->ops_at[idx] = m->fab->ops;
    if (m->progress_s > 0) {
        m->left[idx] = lat + xfer;
        m->ready_at[idx] = ready;
        return SV_OK;
    }
    const sv_sim_link *l = link_of(m->fab, m->fab->link[m->id]);
    advance(m->fab, *m->now, NULL, NULL);
    sim_job *j = job_of(m, idx);
    *j = (sim_job){
        .busy = 1, .seq = s->seq, .ready = ready, .work = l->shared ? xfer : lat + xfer, .tail = l->shared ? lat : 0};
    j->cpu = j->work > 0 ? l->cpu_s_per_byte * nb / j->work : 0;
    if (j->work <= 0) j->done_at = ready + j->tail;
    return SV_OK;
}

/* The time before which collective idx cannot complete: its round floor if the rank has run an
 * op since its issue (it progressed while the ranks computed, drifting apart on time-shared
 * cores), else 0 (issued and waited for at once: a synchronisation the ranks meet together). */
static double floor_of(const sim_comm *m, int idx) { return m->fab->ops > m->ops_at[idx] ? m->floor_at[idx] : 0; }

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
        sim_job *j = job_of(m, idx);
        advance(m->fab, *m->now, NULL, NULL);
        *done = j->work <= 0 && *m->now >= j->done_at && *m->now >= floor_of(m, idx);
        if (*done) j->busy = 0;
        return SV_OK;
    }
    if (m->left[idx] > 0 && *m->now >= m->ready_at[idx] && head_slot(c, m) == idx) { /* one poll: the rank copies */
        double d = m->left[idx] < m->progress_s ? m->left[idx] : m->progress_s;
        m->left[idx] -= d;
        *m->now += d;
    }
    *done = m->left[idx] <= 0 && *m->now >= floor_of(m, idx);
    return SV_OK;
}

static void sim_wait_hint(sv_comm *c, int idx) {
    sim_comm *m = (sim_comm *)c;
    if (m->progress_s <= 0) {
        sim_job *j = job_of(m, idx);
        advance(m->fab, *m->now, NULL, NULL);
        advance(m->fab, INFINITY, j, NULL); /* blocked: nothing new is issued meanwhile */
        if (*m->now < j->done_at) *m->now = j->done_at;
        if (*m->now < floor_of(m, idx)) *m->now = floor_of(m, idx);
        return;
    }
    /* blocked in the wait: everything issued before it, then it, move at full speed */
    for (int h; m->left[idx] > 0 && (h = head_slot(c, m)) >= 0;) {
        if (*m->now < m->ready_at[h]) *m->now = m->ready_at[h];
        *m->now += m->left[h];
        m->left[h] = 0;
    }
    if (*m->now < floor_of(m, idx)) *m->now = floor_of(m, idx);
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

static void sim_destroy(sv_comm *c) {
    sim_comm *m = (sim_comm *)c;
    m->fab->used[m->id] = 0;
    free(c);
}

static const sv_comm_ops sim_ops = {
    .name = "sim",
    .destroy = sim_destroy,
    .split = sim_split,
    .issue = sim_issue,
    .test = sim_test,
    .wait_hint = sim_wait_hint,
};

sv_status sv_comm_sim_create(const sv_comm_config *cfg, sv_sim_fabric *fab, const sv_sim_group *g, const char *label,
                             sv_comm **out) {
    *out = NULL;
    if (g->size < 1 || g->rank < 0 || g->rank >= g->size || g->nodes < 1 || g->ranks_per_node < 1)
        return SV_FAIL(SV_ERR_INVALID, "simulated group %s: size %d rank %d nodes %d ranks/node %d", label, g->size,
                       g->rank, g->nodes, g->ranks_per_node);
    int id = 0;
    while (id < fab->n_comms && fab->used[id]) id++;
    if (id == SIM_MAX_COMMS)
        return SV_FAIL(SV_ERR_INVALID, "simulated fabric: at most %d communicators", SIM_MAX_COMMS);
    sim_comm *m = calloc(1, sizeof *m);
    if (!m) return SV_FAIL(SV_ERR_OOM, "simulated comm");
    sv_comm_base_init(&m->base, &sim_ops, cfg, g->rank, g->size, label);
    m->fab = fab;
    m->g = *g;
    m->id = id;
    if (id == fab->n_comms) fab->n_comms++;
    fab->used[id] = 1;
    fab->link[id] = g->nodes > 1;
    memset(fab->job[id], 0, sizeof fab->job[id]);
    m->progress_s = link_of(fab, fab->link[id])->progress_s;
    m->now = fab->now;
    *out = &m->base;
    return SV_OK;
}
