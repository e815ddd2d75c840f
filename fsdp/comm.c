/* Transport-independent half of sv_comm: dispatch, argument checks, request pool, ring log,
 * stats, and the wait loop with timeout. See comm_impl.h for the split of responsibilities. */
#include "fsdp/comm_impl.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

const char *sv_comm_dtype_name(sv_comm_dtype d) {
    switch (d) {
    case SV_COMM_F32: return "f32";
    case SV_COMM_BF16: return "bf16";
    case SV_COMM_F64: return "f64";
    case SV_COMM_I64: return "i64";
    case SV_COMM_U8: return "u8";
    }
    return "?";
}

const char *sv_comm_op_name(sv_comm_op op) {
    switch (op) {
    case SV_COMM_SUM: return "sum";
    case SV_COMM_MAX: return "max";
    case SV_COMM_MIN: return "min";
    }
    return "?";
}

const char *sv_comm_coll_name(sv_comm_coll k) {
    switch (k) {
    case SV_COLL_ALL_GATHER: return "all_gather";
    case SV_COLL_REDUCE_SCATTER: return "reduce_scatter";
    case SV_COLL_ALL_REDUCE: return "all_reduce";
    case SV_COLL_BROADCAST: return "broadcast";
    case SV_COLL_BARRIER: return "barrier";
    }
    return "?";
}

int sv_comm_launched_size(const char **var) {
    static const char *const vars[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        *var = vars[i];
        long n = strtol(v, NULL, 10);
        return n > 1 && n < (1L << 30) ? (int)n : 1;
    }
    *var = NULL;
    return 1;
}

size_t sv_comm_chunk_bytes(const sv_comm_config *cfg) {
    size_t v = cfg->chunk_bytes;
    if (v == 0 || v > SV_COMM_CHUNK_BYTES) return SV_COMM_CHUNK_BYTES;
    return v < 64 ? 64 : v;
}

/* ---- lifetime ------------------------------------------------------------------------------ */

sv_status sv_comm_create_world(const sv_comm_config *cfg, sv_comm **out) {
    SV_ASSERT(cfg && out);
    *out = NULL;
    if (cfg->timeout_s < 0)
        return SV_FAIL(SV_ERR_INVALID, "comm timeout %g s is negative (0 = wait forever)", cfg->timeout_s);
    switch (cfg->kind) {
    case SV_COMM_KIND_MPI: SV_TRY(sv_comm_mpi_create(cfg, out)); return SV_OK;
    case SV_COMM_KIND_LOCAL: SV_TRY(sv_comm_local_create(cfg, out)); return SV_OK;
    case SV_COMM_KIND_NCCL: SV_TRY(sv_comm_nccl_create(cfg, out)); return SV_OK;
    }
    return SV_FAIL(SV_ERR_INVALID, "unknown comm kind %d (expected mpi=0, local=1, nccl=2)", (int)cfg->kind);
}

static sv_status check_usable(const sv_comm *c, const char *what) {
    if (c->broken)
        return SV_FAIL(SV_ERR_COMM,
                       "%s on comm '%s' refused: the communicator is unusable after an earlier "
                       "timeout or error (see the ring log dumped then)",
                       what, c->label);
    return SV_OK;
}

static sv_status drain_issue(sv_comm *c);

sv_status sv_comm_split(sv_comm *parent, int color, int key, sv_comm **out) {
    SV_ASSERT(parent && out);
    *out = NULL;
    if (color < 0) return SV_FAIL(SV_ERR_INVALID, "comm split color %d is negative", color);
    SV_TRY(check_usable(parent, "split"));
    SV_TRY(drain_issue(parent));
    SV_TRY(parent->ops->split(parent, color, key, out));
    return SV_OK;
}

void sv_comm_destroy(sv_comm *c) {
    if (!c) return;
    int busy = __builtin_popcount(c->busy);
    if (busy && !c->broken) {
        /* Waiting here could hang on a dead peer; abandoning is what an aborting run wants. */
        SV_WARN("comm '%s' destroyed with %d collective(s) still in flight; abandoning them", c->label, busy);
        c->broken = 1;
    }
    /* Collectives already waited on the device: let them finish (under the timeout) so the
     * transport is torn down quiescent; a failure breaks the communicator (then aborted). */
    if (c->ordered && !c->broken && sv_comm_fence(c) != SV_OK)
        SV_WARN("comm '%s': device-side collectives did not finish before destroy: %s", c->label, sv_err_msg());
    c->ops->destroy(c);
}

int sv_comm_rank(const sv_comm *c) { return c->rank; }
int sv_comm_size(const sv_comm *c) { return c->size; }
const char *sv_comm_name(const sv_comm *c) { return c->ops->name; }

/* ---- ring log ------------------------------------------------------------------------------ */

static sv_comm_ring_entry *ring_of_slot(sv_comm *c, const sv_comm_slot *s) {
    sv_comm_ring_entry *e = &c->ring[s->ring_pos];
    return e->seq == s->seq ? e : NULL; /* NULL once overwritten by newer collectives */
}

static void format_world_ranks(const sv_comm *c, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < c->size && len + 16 < n; i++) {
        int r = c->world_ranks ? c->world_ranks[i] : i;
        len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? "," : "", r);
    }
    if (len + 16 >= n) snprintf(buf + len, n - len, ",...");
}

void sv_comm_dump_log(const sv_comm *c, const char *reason) {
    uint64_t n = c->ring_next < SV_COMM_RING_LOG ? c->ring_next : SV_COMM_RING_LOG;
    SV_ERROR("comm '%s' (%s, rank %d of %d) ring log: %s; last %llu collective(s), oldest first, "
             "times in s since the communicator was created:",
             c->label, c->ops->name, c->rank, c->size, reason ? reason : "(no reason given)", (unsigned long long)n);
    for (uint64_t i = c->ring_next - n; i < c->ring_next; i++) {
        const sv_comm_ring_entry *e = &c->ring[i % SV_COMM_RING_LOG];
        char extra[32] = "";
        if (e->kind == SV_COLL_REDUCE_SCATTER || e->kind == SV_COLL_ALL_REDUCE)
            snprintf(extra, sizeof extra, " %s", sv_comm_op_name(e->op));
        else if (e->kind == SV_COLL_BROADCAST)
            snprintf(extra, sizeof extra, " root %d", e->root);
        size_t bytes = e->count * sv_comm_dtype_size(e->dt);
        if (e->t_complete >= 0)
            SV_ERROR("  seq %llu %s count %zu %s (%zu B)%s issued %.6f completed %.6f (%.3f ms)%s%s",
                     (unsigned long long)e->seq, sv_comm_coll_name(e->kind), e->count, sv_comm_dtype_name(e->dt), bytes,
                     extra, e->t_issue, e->t_complete, 1e3 * (e->t_complete - e->t_issue), e->status ? " FAILED: " : "",
                     e->status ? sv_status_str(e->status) : "");
        else
            SV_ERROR("  seq %llu %s count %zu %s (%zu B)%s issued %.6f PENDING%s%s", (unsigned long long)e->seq,
                     sv_comm_coll_name(e->kind), e->count, sv_comm_dtype_name(e->dt), bytes, extra, e->t_issue,
                     e->status ? " FAILED: " : "", e->status ? sv_status_str(e->status) : "");
    }
}

/* ---- polling -------------------------------------------------------------------------------- */

/* Polling: MPI moves data only inside its progress calls (MPI_Test*), so any sleep between
 * polls throttles a large transfer (measured 3-4x slower at 32 MB with 20 us naps). poll_slot
 * spins for SV_COMM_SPIN_SECONDS (small collectives finish within microseconds; the clock is
 * read once per 64 polls), then yields on every poll so oversubscribed ranks still let their
 * peers run. A wait thus keeps one core busy, as MPI_Wait does; what bounds a wait on a dead
 * or absent peer is the timeout, not the polling. */
#define SV_COMM_SPIN_SECONDS 50e-6
/* The timeout counts the time the process ran: of a gap between two clock reads of a wait loop
 * (normally microseconds apart, a scheduler quantum at most) only this much counts, so a job
 * whose ranks were all stopped together (SIGSTOP / SIGTSTP and SIGCONT, a suspended Slurm job,
 * a paused container) goes on after it is continued instead of declaring the collective hung. */
#define SV_COMM_STALL_GAP_SECONDS 1.0

static void describe(const sv_comm *c, const sv_comm_slot *s, char *buf, size_t n) {
    size_t es = sv_comm_dtype_size(s->dt);
    size_t bytes = s->count * es;
    if (s->kind == SV_COLL_REDUCE_SCATTER) bytes *= (size_t)c->size;
    char extra[32] = "";
    if (s->kind == SV_COLL_REDUCE_SCATTER || s->kind == SV_COLL_ALL_REDUCE)
        snprintf(extra, sizeof extra, ", %s", sv_comm_op_name(s->op));
    else if (s->kind == SV_COLL_BROADCAST)
        snprintf(extra, sizeof extra, ", root %d", s->root);
    snprintf(buf, n, "%s seq %llu (count %zu x %s, %zu bytes from this rank%s)", sv_comm_coll_name(s->kind),
             (unsigned long long)s->seq, s->count, sv_comm_dtype_name(s->dt),
             s->kind == SV_COLL_BARRIER ? (size_t)0 : bytes, extra);
}

static void release_slot(sv_comm *c, const sv_comm_slot *s) {
    uint32_t bit = 1u << (unsigned)(s - c->slots);
    c->busy &= ~bit;
    c->ordered &= ~bit;
}

static void finish_slot_at(sv_comm *c, sv_comm_slot *s, sv_status st, double now) {
    sv_comm_ring_entry *e = ring_of_slot(c, s);
    if (e) {
        e->t_complete = now - c->t0;
        e->status = st;
    }
    release_slot(c, s);
}

static void finish_slot(sv_comm *c, sv_comm_slot *s, sv_status st) { finish_slot_at(c, s, st, sv_now_s()); }

/* Slot s failed with `st` (SV_ERR_TIMEOUT, or a library error whose message is current): break
 * the communicator, dump the ring log and return the failure with a message naming the
 * collective. */
static sv_status fail_slot(sv_comm *c, sv_comm_slot *s, sv_status st) {
    int device_side = (int)((c->ordered >> (unsigned)(s - c->slots)) & 1u);
    char what[192], ranks[160];
    describe(c, s, what, sizeof what);
    format_world_ranks(c, ranks, sizeof ranks);
    char msg[704];
    if (st == SV_ERR_TIMEOUT)
        snprintf(msg, sizeof msg,
                 "%s on comm '%s' (%s, %d ranks: world ranks %s; this is rank %d) did not "
                 "complete within %.3g s%s: some rank has not issued it (skipped or reordered "
                 "collective) or has died; %s cannot tell which peer is missing",
                 what, c->label, c->ops->name, c->size, ranks, c->rank, c->cfg.timeout_s,
                 device_side ? " (waited on the device stream; checked by the host fence)" : "", c->ops->name);
    else
        snprintf(msg, sizeof msg, "%s on comm '%s' (%s, %d ranks: world ranks %s) failed: %s", what, c->label,
                 c->ops->name, c->size, ranks, sv_err_msg());
    sv_comm_ring_entry *e = ring_of_slot(c, s);
    if (e) e->status = st;
    c->broken = 1;
    sv_comm_dump_log(c, msg);
    return SV_FAIL(st, "%s", msg);
}

/* Poll slot `idx` until it completes (until_issued = 0) or until all its library calls are
 * issued (until_issued = 1). Timeout and library errors break the communicator. Also the host
 * wait for a device-side (ordered) slot: sv_comm_fence, a full pool. */
static sv_status poll_slot(sv_comm *c, int idx, int until_issued) {
    sv_comm_slot *s = &c->slots[idx];
    if (s->completed) { /* already finished during sv_comm_progress */
        if (!until_issued) {
            sv_comm_ring_entry *e = ring_of_slot(c, s);
            c->last_complete = e ? c->t0 + e->t_complete : sv_now_s();
            s->completed = 0;
            release_slot(c, s);
        }
        return SV_OK;
    }
    double start = sv_now_s(), now = start, prev = start, counted = 0;
    unsigned spins = 0;
    sv_status st = SV_OK;
    int done = 0;
    if (!until_issued && c->ops->wait_hint) c->ops->wait_hint(c, idx);
    for (;;) {
        st = c->ops->test(c, idx, &done);
        if (st != SV_OK) break;
        if (done) {
            now = sv_now_s();
            if (!((c->ordered >> idx) & 1u)) c->last_complete = now; /* a wait, not a fence */
            finish_slot_at(c, s, SV_OK, now);
            break;
        }
        if (until_issued && !(c->ops->issue_pending && c->ops->issue_pending(c, idx))) break;
        if (++spins % 64) continue; /* pure spin: no clock reads on the fast path */
        now = sv_now_s();
        double gap = now - prev;
        prev = now;
        if (gap > SV_COMM_STALL_GAP_SECONDS && c->cfg.timeout_s > 0)
            SV_WARN("comm '%s': this process did not run for %.1f s while waiting (stopped and continued?); "
                    "%.0f s of it not counted toward the %g s timeout",
                    c->label, gap, gap - SV_COMM_STALL_GAP_SECONDS, c->cfg.timeout_s);
        counted += gap < SV_COMM_STALL_GAP_SECONDS ? gap : SV_COMM_STALL_GAP_SECONDS;
        if (c->cfg.timeout_s > 0 && counted > c->cfg.timeout_s) {
            st = SV_ERR_TIMEOUT;
            break;
        }
        if (now - start > SV_COMM_SPIN_SECONDS) sched_yield();
    }
    if (st != SV_OK || !done) now = sv_now_s();
    c->stats.wait_seconds += now - start;
    return st == SV_OK ? SV_OK : fail_slot(c, s, st);
}

/* The device-side slot with the oldest collective (lowest seq); c->ordered must be nonzero. */
static int oldest_ordered(const sv_comm *c) {
    int best = -1;
    for (uint32_t m = c->ordered; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        if (best < 0 || c->slots[i].seq < c->slots[best].seq) best = i;
    }
    return best;
}

/* Test every device-side slot once and release those done (a query: never waits). */
static sv_status reap_ordered(sv_comm *c) {
    for (uint32_t m = c->ordered; m; m &= m - 1) {
        int i = __builtin_ctz(m), done = 0;
        sv_status st = c->ops->test(c, i, &done);
        if (st != SV_OK) return fail_slot(c, &c->slots[i], st);
        if (done) finish_slot(c, &c->slots[i], SV_OK);
    }
    return SV_OK;
}

/* sv_comm_wait on a transport with `order`: one query; if the collective is already complete,
 * retire it (no stream ordering needed), else let the transport order the compute stream after
 * it and keep the slot as `ordered`. *retired = 0: the host has to wait (poll_slot). */
static sv_status wait_device_side(sv_comm *c, int idx, int *retired) {
    sv_comm_slot *s = &c->slots[idx];
    int done = 0, ordered = 0;
    *retired = 0;
    if (s->completed) return SV_OK; /* poll_slot retires it without polling */
    sv_status st = c->ops->test(c, idx, &done);
    if (st == SV_OK && !done) st = c->ops->order(c, idx, &ordered);
    if (st != SV_OK) return fail_slot(c, s, st);
    double now = sv_now_s();
    if (done) {
        finish_slot_at(c, s, SV_OK, now);
    } else if (ordered) {
        c->busy &= ~(1u << (unsigned)idx);
        c->ordered |= 1u << (unsigned)idx;
    } else {
        return SV_OK;
    }
    c->last_complete = now;
    *retired = 1;
    return SV_OK;
}

static sv_status drain_issue(sv_comm *c) {
    if (!c->ops->issue_pending) return SV_OK;
    for (uint32_t m = c->busy; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        if (c->ops->issue_pending(c, i)) SV_TRY(poll_slot(c, i, 1));
    }
    return SV_OK;
}

/* ---- issue ---------------------------------------------------------------------------------- */

static int overlaps(const void *a, size_t na, const void *b, size_t nb) {
    const char *pa = a, *pb = b;
    return na && nb && pa < pb + nb && pb < pa + na;
}

static sv_status check_dtype(const sv_comm *c, const char *what, sv_comm_dtype dt) {
    if (sv_comm_dtype_size(dt) == 0)
        return SV_FAIL(SV_ERR_INVALID, "%s on comm '%s': unknown dtype %d", what, c->label, (int)dt);
    return SV_OK;
}

static sv_status check_op(const sv_comm *c, const char *what, sv_comm_op op) {
    if (op != SV_COMM_SUM && op != SV_COMM_MAX && op != SV_COMM_MIN)
        return SV_FAIL(SV_ERR_INVALID, "%s on comm '%s': unknown reduction op %d", what, c->label, (int)op);
    return SV_OK;
}

static sv_status check_count(const sv_comm *c, const char *what, size_t count, sv_comm_dtype dt, size_t mult) {
    size_t es = sv_comm_dtype_size(dt);
    if (count > SIZE_MAX / es / mult)
        return SV_FAIL(SV_ERR_INVALID, "%s on comm '%s': count %zu x %zu ranks overflows", what, c->label, count, mult);
    return SV_OK;
}

#define SLOT_MASK ((uint32_t)((1ull << SV_COMM_MAX_INFLIGHT) - 1))

/* When every free slot is held by a device-side collective, release the finished ones; if none
 * has finished, the host waits (under the timeout) for the oldest. This bounds how far the host
 * runs ahead of the device: at most SV_COMM_MAX_INFLIGHT collectives. */
static sv_status free_ordered_slot(sv_comm *c) {
    if (!c->ordered || (~(c->busy | c->ordered) & SLOT_MASK)) return SV_OK;
    SV_TRY(reap_ordered(c));
    if (~(c->busy | c->ordered) & SLOT_MASK) return SV_OK;
    return poll_slot(c, oldest_ordered(c), 0);
}

static sv_status issue(sv_comm *c, sv_comm_coll kind, void *recv, const void *send, size_t count, sv_comm_dtype dt,
                       sv_comm_op op, int root, sv_comm_req *req) {
    SV_TRY(drain_issue(c));
    SV_TRY(free_ordered_slot(c));
    uint32_t free_slots = ~(c->busy | c->ordered) & SLOT_MASK;
    int idx = free_slots ? __builtin_ctz(free_slots) : -1;
    if (idx < 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s on comm '%s': %d collectives already in flight "
                       "(SV_COMM_MAX_INFLIGHT); wait on some before issuing more",
                       sv_comm_coll_name(kind), c->label, SV_COMM_MAX_INFLIGHT);
    sv_comm_slot *s = &c->slots[idx];
    double now = sv_now_s();
    c->busy |= 1u << idx;
    *s = (sv_comm_slot){.seq = c->next_seq++,
                        .kind = kind,
                        .recv = recv,
                        .send = send,
                        .count = count,
                        .dt = dt,
                        .op = op,
                        .root = root,
                        .t_issue = now};
    s->ring_pos = (int)(c->ring_next % SV_COMM_RING_LOG);
    c->ring[s->ring_pos] = (sv_comm_ring_entry){.seq = s->seq,
                                                .kind = kind,
                                                .count = count,
                                                .dt = dt,
                                                .op = op,
                                                .root = root,
                                                .t_issue = now - c->t0,
                                                .t_complete = -1.0};
    c->ring_next++;

    size_t bytes = count * sv_comm_dtype_size(dt);
    switch (kind) {
    case SV_COLL_ALL_GATHER: c->stats.all_gathers++; break;
    case SV_COLL_REDUCE_SCATTER:
        c->stats.reduce_scatters++;
        bytes *= (size_t)c->size;
        break;
    case SV_COLL_ALL_REDUCE: c->stats.all_reduces++; break;
    case SV_COLL_BROADCAST:
        c->stats.broadcasts++;
        if (c->rank != root) bytes = 0;
        break;
    case SV_COLL_BARRIER:
        c->stats.barriers++;
        bytes = 0;
        break;
    }
    c->stats.bytes_sent += bytes;

    int done = 0;
    sv_status st = c->ops->issue(c, idx, &done);
    if (st != SV_OK) {
        char what[192];
        describe(c, s, what, sizeof what);
        char msg[512];
        snprintf(msg, sizeof msg, "issuing %s on comm '%s' failed: %s", what, c->label, sv_err_msg());
        finish_slot(c, s, st);
        c->broken = 1; /* peers may have issued it: the sequence can no longer match */
        sv_comm_dump_log(c, msg);
        return SV_FAIL(st, "%s", msg);
    }
    if (done) {
        finish_slot(c, s, SV_OK);
        *req = (sv_comm_req){.slot = -1, .seq = s->seq};
    } else {
        *req = (sv_comm_req){.slot = idx, .seq = s->seq};
    }
    return SV_OK;
}

sv_status sv_comm_all_gather(sv_comm *c, void *recv, const void *send, size_t count, sv_comm_dtype dt,
                             sv_comm_req *req) {
    SV_ASSERT(c && req);
    const char *w = "all_gather";
    SV_TRY(check_usable(c, w));
    SV_TRY(check_dtype(c, w, dt));
    SV_TRY(check_count(c, w, count, dt, (size_t)c->size));
    size_t es = sv_comm_dtype_size(dt);
    if (count && (!recv || !send))
        return SV_FAIL(SV_ERR_INVALID, "all_gather on comm '%s': NULL buffer with count %zu", c->label, count);
    /* In place means: send is this rank's own block of recv. */
    const char *own = (const char *)recv + (size_t)c->rank * count * es;
    if (send != (const void *)own && overlaps(recv, count * es * (size_t)c->size, send, count * es))
        return SV_FAIL(SV_ERR_INVALID,
                       "all_gather on comm '%s': send overlaps recv but is not this rank's "
                       "block (rank %d at element offset %zu)",
                       c->label, c->rank, (size_t)c->rank * count);
    SV_TRY(issue(c, SV_COLL_ALL_GATHER, recv, send, count, dt, SV_COMM_SUM, 0, req));
    return SV_OK;
}

sv_status sv_comm_reduce_scatter(sv_comm *c, void *recv, const void *send, size_t count, sv_comm_dtype dt,
                                 sv_comm_op op, sv_comm_req *req) {
    SV_ASSERT(c && req);
    const char *w = "reduce_scatter";
    SV_TRY(check_usable(c, w));
    SV_TRY(check_dtype(c, w, dt));
    SV_TRY(check_op(c, w, op));
    SV_TRY(check_count(c, w, count, dt, (size_t)c->size));
    size_t es = sv_comm_dtype_size(dt);
    if (count && (!recv || !send))
        return SV_FAIL(SV_ERR_INVALID, "reduce_scatter on comm '%s': NULL buffer with count %zu", c->label, count);
    if (overlaps(recv, count * es, send, count * es * (size_t)c->size))
        return SV_FAIL(SV_ERR_INVALID, "reduce_scatter on comm '%s': recv overlaps send (not supported in place)",
                       c->label);
    SV_TRY(issue(c, SV_COLL_REDUCE_SCATTER, recv, send, count, dt, op, 0, req));
    return SV_OK;
}

sv_status sv_comm_all_reduce(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, sv_comm_op op, sv_comm_req *req) {
    SV_ASSERT(c && req);
    const char *w = "all_reduce";
    SV_TRY(check_usable(c, w));
    SV_TRY(check_dtype(c, w, dt));
    SV_TRY(check_op(c, w, op));
    SV_TRY(check_count(c, w, count, dt, 1));
    if (count && !buf)
        return SV_FAIL(SV_ERR_INVALID, "all_reduce on comm '%s': NULL buffer with count %zu", c->label, count);
    SV_TRY(issue(c, SV_COLL_ALL_REDUCE, buf, NULL, count, dt, op, 0, req));
    return SV_OK;
}

sv_status sv_comm_broadcast(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, int root, sv_comm_req *req) {
    SV_ASSERT(c && req);
    const char *w = "broadcast";
    SV_TRY(check_usable(c, w));
    SV_TRY(check_dtype(c, w, dt));
    SV_TRY(check_count(c, w, count, dt, 1));
    if (root < 0 || root >= c->size)
        return SV_FAIL(SV_ERR_INVALID, "broadcast on comm '%s': root %d not in [0, %d)", c->label, root, c->size);
    if (count && !buf)
        return SV_FAIL(SV_ERR_INVALID, "broadcast on comm '%s': NULL buffer with count %zu", c->label, count);
    SV_TRY(issue(c, SV_COLL_BROADCAST, buf, NULL, count, dt, SV_COMM_SUM, root, req));
    return SV_OK;
}

sv_status sv_comm_barrier(sv_comm *c, sv_comm_req *req) {
    SV_ASSERT(c && req);
    SV_TRY(check_usable(c, "barrier"));
    SV_TRY(issue(c, SV_COLL_BARRIER, NULL, NULL, 0, SV_COMM_U8, SV_COMM_SUM, 0, req));
    return SV_OK;
}

sv_status sv_comm_wait(sv_comm *c, sv_comm_req *req) {
    SV_ASSERT(c && req);
    if (req->slot < 0) return SV_OK;
    if (req->slot >= SV_COMM_MAX_INFLIGHT || !sv_comm_slot_busy(c, req->slot) || c->slots[req->slot].seq != req->seq)
        return SV_FAIL(SV_ERR_INVALID,
                       "wait on comm '%s': stale request handle (slot %d, seq %llu): it was "
                       "already completed through another copy of the handle, or belongs to "
                       "another communicator",
                       c->label, req->slot, (unsigned long long)req->seq);
    SV_TRY(check_usable(c, "wait"));
    int retired = 0;
    if (c->ops->order) SV_TRY(wait_device_side(c, req->slot, &retired));
    if (!retired) SV_TRY(poll_slot(c, req->slot, 0));
    req->slot = -1;
    return SV_OK;
}

sv_status sv_comm_fence_to(sv_comm *c, uint64_t seq) {
    SV_ASSERT(c);
    if (!c->ordered) return SV_OK;
    SV_TRY(check_usable(c, "fence"));
    while (c->ordered) {
        int i = oldest_ordered(c);
        if (c->slots[i].seq > seq) break;
        SV_TRY(poll_slot(c, i, 0));
    }
    return SV_OK;
}

sv_status sv_comm_fence(sv_comm *c) { return sv_comm_fence_to(c, UINT64_MAX); }

uint64_t sv_comm_issued(const sv_comm *c) { return c->next_seq - 1; }

/* ---- blocking conveniences and stats -------------------------------------------------------- */

sv_status sv_comm_all_reduce_sync(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, sv_comm_op op) {
    sv_comm_req r;
    SV_TRY(sv_comm_all_reduce(c, buf, count, dt, op, &r));
    SV_TRY(sv_comm_wait(c, &r));
    return SV_OK;
}

sv_status sv_comm_broadcast_sync(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, int root) {
    sv_comm_req r;
    SV_TRY(sv_comm_broadcast(c, buf, count, dt, root, &r));
    SV_TRY(sv_comm_wait(c, &r));
    return SV_OK;
}

sv_status sv_comm_barrier_sync(sv_comm *c) {
    sv_comm_req r;
    SV_TRY(sv_comm_barrier(c, &r));
    SV_TRY(sv_comm_wait(c, &r));
    return SV_OK;
}

sv_status sv_comm_progress(sv_comm *c) {
    if (c->broken) return SV_OK; /* the next wait reports the failure */
    for (uint32_t m = c->busy; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        sv_comm_slot *s = &c->slots[i];
        if (s->completed) continue;
        int done = 0;
        SV_TRY(c->ops->test(c, i, &done));
        if (done) {
            sv_comm_ring_entry *e = ring_of_slot(c, s);
            if (e) {
                e->t_complete = sv_now_s() - c->t0;
                e->status = SV_OK;
            }
            s->completed = 1;
        }
    }
    return reap_ordered(c);
}

double sv_comm_last_complete_time(const sv_comm *c) { return c->last_complete; }

void sv_comm_get_stats(const sv_comm *c, sv_comm_stats *out) { *out = c->stats; }
void sv_comm_reset_stats(sv_comm *c) { memset(&c->stats, 0, sizeof c->stats); }
