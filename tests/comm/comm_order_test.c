/* comm.c's device-side waits (comm_impl.h `order`, the `ordered` slots, sv_comm_fence), checked
 * on the CPU with a stand-in transport whose collectives "run on a device": each completes
 * `g_delay` seconds after its issue (never when g_delay < 0), `test` only queries the clock, and
 * `order` accepts every collective but barriers, as cuda/comm_nccl.c does for device buffers.
 *
 * Checked: a wait on a pending collective returns without the host waiting and retires the
 * handle (a copy of it is stale); a collective already seen complete (by the wait's own query
 * or by sv_comm_progress) is not ordered; barriers are host waits; progress releases finished
 * device-waited slots; the fence waits for them (and its time counts as wait time); a full pool
 * waits for the oldest; a hung collective times out in the fence and in a full pool, with a
 * message naming it, and breaks the communicator; destroy fences a healthy communicator and
 * abandons a broken one; a transport error found by progress breaks it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fsdp/comm_impl.h"

typedef struct fake {
    sv_comm base;
    double finish_at[SV_COMM_MAX_INFLIGHT]; /* < 0: never */
    int orders;                             /* collectives `order` accepted */
    int fail_test;                          /* 1: `test` reports a transport error */
} fake;

static double g_delay;
static long g_destroy_ordered = -1; /* the `ordered` mask destroy found */

static fake *F(sv_comm *c) { return (fake *)c; }

static sv_status f_issue(sv_comm *c, int idx, int *done) {
    F(c)->finish_at[idx] = g_delay < 0 ? -1.0 : sv_now_s() + g_delay;
    *done = 0;
    return SV_OK;
}
static sv_status f_test(sv_comm *c, int idx, int *done) {
    if (F(c)->fail_test) return SV_FAIL(SV_ERR_COMM, "device error (injected)");
    double t = F(c)->finish_at[idx];
    *done = t >= 0 && sv_now_s() >= t;
    return SV_OK;
}
static sv_status f_order(sv_comm *c, int idx, int *ordered) {
    *ordered = c->slots[idx].kind != SV_COLL_BARRIER;
    F(c)->orders += *ordered;
    return SV_OK;
}
static void f_destroy(sv_comm *c) {
    g_destroy_ordered = (long)c->ordered;
    free(c);
}
static sv_status f_split(sv_comm *parent, int color, int key, sv_comm **out) {
    (void)parent, (void)color, (void)key, (void)out;
    return SV_FAIL(SV_ERR_UNSUPPORTED, "fake transport: no split");
}
static const sv_comm_ops fake_ops = {
    .name = "fake", .destroy = f_destroy, .split = f_split, .issue = f_issue, .test = f_test, .order = f_order};

static sv_comm *make(double timeout_s, double delay) {
    fake *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    sv_comm_config cfg = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = timeout_s};
    sv_comm_base_init(&f->base, &fake_ops, &cfg, 0, 1, "fake");
    g_delay = delay;
    return &f->base;
}

static float g_buf[4];
static void issue_ar(sv_comm *c, sv_comm_req *q) {
    CHECK_OK(sv_comm_all_reduce(c, g_buf, 4, SV_COMM_F32, SV_COMM_SUM, q));
}
static double wait_s(const sv_comm *c) {
    sv_comm_stats s;
    sv_comm_get_stats(c, &s);
    return s.wait_seconds;
}

static void test_device_wait(void) {
    sv_comm *c = make(10, 0.3);
    sv_comm_req q, copy;
    double t0 = sv_now_s();
    issue_ar(c, &q);
    copy = q;
    CHECK_OK(sv_comm_wait(c, &q));
    CHECK(sv_now_s() - t0 < 0.15); /* no host wait */
    CHECK(q.slot == -1 && F(c)->orders == 1 && c->ordered != 0 && c->busy == 0);
    CHECK(sv_comm_wait(c, &copy) == SV_ERR_INVALID); /* retired: a copy of the handle is stale */
    CHECK_OK(sv_comm_progress(c));
    CHECK(c->ordered != 0); /* still running */
    CHECK(wait_s(c) < 0.1);
    CHECK_OK(sv_comm_fence(c));
    CHECK(sv_now_s() - t0 >= 0.29 && c->ordered == 0);
    CHECK(wait_s(c) >= 0.15);   /* the fence is wait time */
    CHECK_OK(sv_comm_fence(c)); /* nothing left: returns at once */
    sv_comm_destroy(c);
    CHECK(g_destroy_ordered == 0);
}

/* sv_comm_fence_to waits for the collectives issued up to a mark (sv_comm_issued) only. */
static void test_fence_to_mark(void) {
    sv_comm *c = make(10, 0.2);
    sv_comm_req q;
    CHECK(sv_comm_issued(c) == 0);
    issue_ar(c, &q);
    CHECK_OK(sv_comm_wait(c, &q));
    uint64_t mark = sv_comm_issued(c);
    CHECK(mark == 1);
    g_delay = -1; /* the next one does not finish by itself */
    issue_ar(c, &q);
    CHECK_OK(sv_comm_wait(c, &q));
    CHECK(sv_comm_issued(c) == 2 && __builtin_popcount(c->ordered) == 2);
    double t0 = sv_now_s();
    CHECK_OK(sv_comm_fence_to(c, mark));
    CHECK(sv_now_s() - t0 >= 0.15 && __builtin_popcount(c->ordered) == 1); /* seq 2 still pending */
    int i = __builtin_ctz(c->ordered);
    CHECK(c->slots[i].seq == 2);
    F(c)->finish_at[i] = sv_now_s(); /* let it finish */
    CHECK_OK(sv_comm_fence(c));
    CHECK(c->ordered == 0);
    sv_comm_destroy(c);
}

static void test_seen_complete(void) {
    sv_comm *c = make(10, 0.0); /* done by the wait's own query */
    sv_comm_req q;
    issue_ar(c, &q);
    CHECK_OK(sv_comm_wait(c, &q));
    CHECK(F(c)->orders == 0 && c->ordered == 0);
    g_delay = 0.1; /* seen done by progress first */
    issue_ar(c, &q);
    usleep(150000);
    CHECK_OK(sv_comm_progress(c));
    CHECK_OK(sv_comm_wait(c, &q));
    CHECK(F(c)->orders == 0 && c->ordered == 0 && c->busy == 0);
    issue_ar(c, &q); /* waited on the device, then released by progress alone */
    CHECK_OK(sv_comm_wait(c, &q));
    CHECK(F(c)->orders == 1 && c->ordered != 0);
    usleep(150000);
    CHECK_OK(sv_comm_progress(c));
    CHECK(c->ordered == 0);
    sv_comm_destroy(c);
}

static void test_barrier_is_host_wait(void) {
    sv_comm *c = make(10, 0.2);
    double t0 = sv_now_s();
    CHECK_OK(sv_comm_barrier_sync(c));
    CHECK(sv_now_s() - t0 >= 0.19 && F(c)->orders == 0 && c->ordered == 0);
    sv_comm_destroy(c);
}

/* 3 x the pool of collectives, each waited on the device at once: the 17th issue must wait for
 * the 1st to finish (0.05 s after it was issued), the 33rd for the 17th, so >= 0.1 s in all. */
static void test_full_pool(void) {
    sv_comm *c = make(10, 0.05);
    double t0 = sv_now_s();
    for (int k = 0; k < 3 * SV_COMM_MAX_INFLIGHT; k++) {
        sv_comm_req q;
        issue_ar(c, &q);
        CHECK_OK(sv_comm_wait(c, &q));
        CHECK(__builtin_popcount(c->ordered | c->busy) <= SV_COMM_MAX_INFLIGHT);
    }
    CHECK(sv_now_s() - t0 >= 0.095);
    CHECK(wait_s(c) > 0.05);
    sv_comm_stats s;
    sv_comm_get_stats(c, &s);
    CHECK(s.all_reduces == 3 * SV_COMM_MAX_INFLIGHT);
    CHECK_OK(sv_comm_fence(c));
    sv_comm_destroy(c);
}

/* A collective that never completes: the wait still returns (device-side), the fence times out
 * naming it, the communicator refuses work afterwards, destroy abandons it without waiting. */
static void test_fence_timeout_then_refuse(void) {
    sv_comm *c = make(0.3, -1);
    sv_comm_req q;
    issue_ar(c, &q);
    CHECK_OK(sv_comm_wait(c, &q));
    double t0 = sv_now_s();
    CHECK(sv_comm_fence(c) == SV_ERR_TIMEOUT);
    double dt = sv_now_s() - t0;
    CHECK(dt >= 0.3 && dt < 3.0);
    const char *m = sv_err_msg();
    CHECK(strstr(m, "all_reduce seq 1") && strstr(m, "did not complete within 0.3 s"));
    CHECK(strstr(m, "checked by the host fence"));
    CHECK(sv_comm_all_reduce(c, g_buf, 4, SV_COMM_F32, SV_COMM_SUM, &q) == SV_ERR_COMM);
    CHECK(sv_comm_fence(c) == SV_ERR_COMM);
    t0 = sv_now_s();
    sv_comm_destroy(c);
    CHECK(sv_now_s() - t0 < 0.1 && g_destroy_ordered != 0); /* abandoned, not waited for */
}

static void test_pool_timeout(void) {
    sv_comm *c = make(0.3, -1);
    sv_comm_req q;
    for (int k = 0; k < SV_COMM_MAX_INFLIGHT; k++) {
        issue_ar(c, &q);
        CHECK_OK(sv_comm_wait(c, &q));
    }
    double t0 = sv_now_s();
    CHECK(sv_comm_all_reduce(c, g_buf, 4, SV_COMM_F32, SV_COMM_SUM, &q) == SV_ERR_TIMEOUT);
    CHECK(sv_now_s() - t0 >= 0.3 && strstr(sv_err_msg(), "all_reduce seq 1 "));
    sv_comm_destroy(c);
}

static void test_destroy_fences(void) {
    sv_comm *c = make(10, 0.2);
    sv_comm_req q;
    issue_ar(c, &q);
    CHECK_OK(sv_comm_wait(c, &q));
    double t0 = sv_now_s();
    sv_comm_destroy(c);
    CHECK(sv_now_s() - t0 >= 0.15 && g_destroy_ordered == 0);
}

static void test_progress_error(void) {
    sv_comm *c = make(10, -1);
    sv_comm_req q;
    issue_ar(c, &q);
    CHECK_OK(sv_comm_wait(c, &q));
    F(c)->fail_test = 1;
    CHECK(sv_comm_progress(c) == SV_ERR_COMM);
    CHECK(strstr(sv_err_msg(), "all_reduce seq 1") && strstr(sv_err_msg(), "device error (injected)"));
    CHECK(sv_comm_fence(c) == SV_ERR_COMM); /* broken */
    sv_comm_destroy(c);
}

int main(void) {
    test_device_wait();
    test_fence_to_mark();
    test_seen_complete();
    test_barrier_is_host_wait();
    test_full_pool();
    test_fence_timeout_then_refuse();
    test_pool_timeout();
    test_destroy_fences();
    test_progress_error();
    printf("comm_order_test: device-side waits, fence, pool, timeouts ok\n");
    return 0;
}
