/* The shared comm test body (comm_body.h). Every value a rank checks is computed on the host from
 * the (rank, index) formula of the inputs, never taken from another rank. */
#include "comm/comm_body.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct body {
    sv_comm *c;
    sv_backend *be;
    int rank, world;
    sv_comm_stats want; /* what the body issued on c (counted by the issue helpers below) */
    float *stage;       /* device staging for fill() */
    size_t stage_cap;
} body;

/* ---- buffers -------------------------------------------------------------------------------- */

static void *dev_alloc(body *b, size_t bytes) {
    void *p;
    CHECK_OK(sv_be_alloc(b->be, bytes, &p));
    return p;
}
static float *dev_f32(body *b, size_t n) { return dev_alloc(b, n * sizeof(float)); }
static void down(body *b, float *h, const float *d, size_t n) { CHECK_OK(sv_be_download(b->be, h, d, n * 4)); }

/* d[0..n) = v, written on the compute stream (a device-to-device copy from a staged buffer,
 * enqueued without a host sync, so a collective issued next must order itself after it). */
static void fill(body *b, float *d, size_t n, float v) {
    if (b->stage_cap < n) {
        sv_be_free(b->be, b->stage);
        b->stage = dev_f32(b, n);
        b->stage_cap = n;
    }
    float *h = malloc(n * sizeof(float));
    CHECK(h != NULL);
    for (size_t i = 0; i < n; i++) h[i] = v;
    CHECK_OK(sv_be_upload(b->be, b->stage, h, n * 4));
    free(h);
    CHECK_OK(sv_be_copy(b->be, d, b->stage, n * 4));
}

/* All n elements of the device buffer d equal v. */
static void expect_all(body *b, const float *d, size_t n, float v, const char *what) {
    float *h = malloc(n * sizeof(float));
    CHECK(h != NULL);
    down(b, h, d, n);
    for (size_t i = 0; i < n; i++)
        if (h[i] != v) {
            fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", b->rank, what, i, h[i], v);
            CHECK(h[i] == v);
        }
    free(h);
}

/* ---- issue helpers: each counts what it issues, as comm.h defines the stats ---------------- */

static void ag(body *b, void *recv, const void *send, size_t n, sv_comm_dtype dt, sv_comm_req *q) {
    CHECK_OK(sv_comm_all_gather(b->c, recv, send, n, dt, q));
    b->want.all_gathers++;
    b->want.bytes_sent += n * sv_comm_dtype_size(dt);
}
static void rs(body *b, void *recv, const void *send, size_t n, sv_comm_dtype dt, sv_comm_op op, sv_comm_req *q) {
    CHECK_OK(sv_comm_reduce_scatter(b->c, recv, send, n, dt, op, q));
    b->want.reduce_scatters++;
    b->want.bytes_sent += (uint64_t)b->world * n * sv_comm_dtype_size(dt);
}
static void ar(body *b, void *buf, size_t n, sv_comm_dtype dt, sv_comm_op op, sv_comm_req *q) {
    CHECK_OK(sv_comm_all_reduce(b->c, buf, n, dt, op, q));
    b->want.all_reduces++;
    b->want.bytes_sent += n * sv_comm_dtype_size(dt);
}
static void bc(body *b, void *buf, size_t n, sv_comm_dtype dt, int root, sv_comm_req *q) {
    CHECK_OK(sv_comm_broadcast(b->c, buf, n, dt, root, q));
    b->want.broadcasts++;
    if (b->rank == root) b->want.bytes_sent += n * sv_comm_dtype_size(dt);
}
static void barrier(body *b) {
    CHECK_OK(sv_comm_barrier_sync(b->c));
    b->want.barriers++;
}
static void wait_req(body *b, sv_comm_req *q) { CHECK_OK(sv_comm_wait(b->c, q)); }

/* ---- the checks ----------------------------------------------------------------------------- */

enum { N = 1000 };

/* all_gather, normal and in place. The send buffer is filled on the compute stream right before
 * the issue, with no host sync in between: the collective must wait for it. Compute enqueued
 * after the wait (x2) must see the result. */
static void check_all_gather(body *b) {
    size_t n = N, w = (size_t)b->world;
    float *send = dev_f32(b, n), *recv = dev_f32(b, n * w);
    float *h = malloc(n * w * sizeof(float));
    CHECK(h != NULL);
    sv_comm_req q;
    fill(b, send, n, 100.0f * b->rank + 1.0f);
    ag(b, recv, send, n, SV_COMM_F32, &q);
    wait_req(b, &q);
    CHECK_OK(sv_be_add_f32(b->be, recv, recv, n * w));
    down(b, h, recv, n * w);
    for (size_t r = 0; r < w; r++)
        for (size_t i = 0; i < n; i++) CHECK(h[r * n + i] == 2.0f * (100.0f * (float)r + 1.0f));
    fill(b, recv + (size_t)b->rank * n, n, 7.0f + b->rank); /* in place: send is our own block */
    ag(b, recv, recv + (size_t)b->rank * n, n, SV_COMM_F32, &q);
    wait_req(b, &q);
    down(b, h, recv, n * w);
    for (size_t r = 0; r < w; r++)
        for (size_t i = 0; i < n; i++) CHECK(h[r * n + i] == 7.0f + (float)r);
    free(h);
    sv_be_free(b->be, send);
    sv_be_free(b->be, recv);
}

/* reduce_scatter (sum): rank r contributes (r + 1) * (j % 97) at global index j. */
static void check_reduce_scatter(body *b) {
    size_t n = N, w = (size_t)b->world;
    float *send = dev_f32(b, n * w), *recv = dev_f32(b, n);
    float *h = malloc(n * w * sizeof(float));
    CHECK(h != NULL);
    for (size_t j = 0; j < n * w; j++) h[j] = (float)(b->rank + 1) * (float)(j % 97);
    CHECK_OK(sv_be_upload(b->be, send, h, n * w * 4));
    sv_comm_req q;
    rs(b, recv, send, n, SV_COMM_F32, SV_COMM_SUM, &q);
    wait_req(b, &q);
    down(b, h, recv, n);
    float tri = (float)(b->world * (b->world + 1) / 2);
    for (size_t i = 0; i < n; i++) CHECK(h[i] == tri * (float)(((size_t)b->rank * n + i) % 97));
    free(h);
    sv_be_free(b->be, send);
    sv_be_free(b->be, recv);
}

/* all_reduce max and min, f32 and a bf16 sum (ones -> world, exact for world <= 256), broadcast
 * from the last rank, a barrier. */
static void check_reduce_kinds(body *b) {
    size_t n = N;
    float *x = dev_f32(b, n);
    uint16_t *x16 = dev_alloc(b, n * 2);
    sv_comm_req q;
    fill(b, x, n, (float)b->rank);
    ar(b, x, n, SV_COMM_F32, SV_COMM_MAX, &q);
    wait_req(b, &q);
    expect_all(b, x, n, (float)(b->world - 1), "all_reduce max");
    fill(b, x, n, 10.0f + (float)b->rank);
    ar(b, x, n, SV_COMM_F32, SV_COMM_MIN, &q);
    wait_req(b, &q);
    expect_all(b, x, n, 10.0f, "all_reduce min");
    fill(b, x, n, 1.0f);
    CHECK_OK(sv_be_f32_to_bf16(b->be, x16, x, n));
    ar(b, x16, n, SV_COMM_BF16, SV_COMM_SUM, &q);
    wait_req(b, &q);
    CHECK_OK(sv_be_bf16_to_f32(b->be, x, x16, n));
    expect_all(b, x, n, (float)b->world, "bf16 all_reduce sum");
    fill(b, x, n, b->rank == b->world - 1 ? 42.0f : -1.0f);
    bc(b, x, n, SV_COMM_F32, b->world - 1, &q);
    wait_req(b, &q);
    expect_all(b, x, n, 42.0f, "broadcast");
    barrier(b);
    sv_be_free(b->be, x);
    sv_be_free(b->be, x16);
}

/* Host (pageable) buffers, as the trainer's loss all-reduce, LAMB's norm partials and the
 * full-parameter gathers use them: final for the host when the wait returns. */
static void check_host_buffers(body *b) {
    double hsum = 1.5 + b->rank, mine = 10.0 * b->rank;
    double *parts = malloc((size_t)b->world * sizeof(double));
    CHECK(parts != NULL);
    sv_comm_req q;
    ar(b, &hsum, 1, SV_COMM_F64, SV_COMM_SUM, &q);
    wait_req(b, &q);
    CHECK(hsum == 1.5 * b->world + b->world * (b->world - 1) / 2.0);
    ag(b, parts, &mine, 1, SV_COMM_F64, &q);
    wait_req(b, &q);
    for (int r = 0; r < b->world; r++) CHECK(parts[r] == 10.0 * r);
    free(parts);
}

/* K requests in flight, waited in reverse order, sv_comm_progress between (as the FSDP engine
 * calls it after every op); compute on an unrelated buffer is enqueued meanwhile. */
static void check_out_of_order(body *b) {
    enum { K = 5 };
    float *x[K], *other = dev_f32(b, N);
    sv_comm_req q[K];
    fill(b, other, N, 3.0f);
    for (int k = 0; k < K; k++) {
        x[k] = dev_f32(b, N);
        fill(b, x[k], N, (float)(b->rank + k));
        ar(b, x[k], N, SV_COMM_F32, SV_COMM_SUM, &q[k]);
        CHECK_OK(sv_comm_progress(b->c));
        CHECK_OK(sv_be_add_f32(b->be, other, other, N)); /* 3 * 2^(k+1) */
        CHECK_OK(sv_comm_progress(b->c));
    }
    for (int k = K - 1; k >= 0; k--) wait_req(b, &q[k]);
    for (int k = 0; k < K; k++) {
        expect_all(b, x[k], N, (float)(b->world * (b->world - 1) / 2 + b->world * k), "in-flight all_reduce");
        sv_be_free(b->be, x[k]);
    }
    expect_all(b, other, N, 3.0f * (float)(1 << K), "compute beside collectives");
    sv_be_free(b->be, other);
}

/* A chain of 3 x SV_COMM_MAX_INFLIGHT dependent steps (x += 1 on the compute stream, then an
 * all-reduce max) with no host synchronisation until the end: each collective must see the add
 * before it and each add the collective before it, and the request pool must recycle the slots
 * of collectives waited on the device. Starting from x = rank, step k leaves world - 1 + k. */
static void check_chain(body *b) {
    const int steps = 3 * SV_COMM_MAX_INFLIGHT;
    float *x = dev_f32(b, N), *one = dev_f32(b, N);
    fill(b, x, N, (float)b->rank);
    fill(b, one, N, 1.0f);
    for (int k = 1; k <= steps; k++) {
        sv_comm_req q;
        CHECK_OK(sv_be_add_f32(b->be, x, one, N));
        ar(b, x, N, SV_COMM_F32, SV_COMM_MAX, &q);
        wait_req(b, &q);
        CHECK_OK(sv_comm_progress(b->c));
    }
    CHECK_OK(sv_comm_fence(b->c));
    expect_all(b, x, N, (float)(b->world - 1 + steps), "chain of all_reduce max");
    sv_be_free(b->be, x);
    sv_be_free(b->be, one);
}

/* Split by parity: a sum of ones over the sub-communicator is its size. */
static void check_split(body *b) {
    sv_comm *sub;
    CHECK_OK(sv_comm_split(b->c, b->rank % 2, b->rank, &sub));
    int expect = b->world / 2 + (b->rank % 2 == 0 ? b->world % 2 : 0);
    CHECK(sv_comm_size(sub) == expect && sv_comm_rank(sub) == b->rank / 2);
    float *x = dev_f32(b, N);
    fill(b, x, N, 1.0f);
    CHECK_OK(sv_comm_all_reduce_sync(sub, x, N, SV_COMM_F32, SV_COMM_SUM));
    expect_all(b, x, N, (float)expect, "split all_reduce");
    sv_comm_stats s;
    sv_comm_get_stats(sub, &s);
    CHECK(s.all_reduces == 1 && s.all_gathers == 0 && s.barriers == 0);
    sv_comm_destroy(sub);
    sv_be_free(b->be, x);
}

uint64_t comm_body_run(sv_comm *c, sv_backend *be) {
    body b = {.c = c, .be = be, .rank = sv_comm_rank(c), .world = sv_comm_size(c)};
    CHECK(b.world >= 1 && b.rank >= 0 && b.rank < b.world);
    sv_comm_stats before, after;
    sv_comm_get_stats(c, &before);
    check_all_gather(&b);
    check_reduce_scatter(&b);
    check_reduce_kinds(&b);
    check_host_buffers(&b);
    check_out_of_order(&b);
    check_chain(&b);
    check_split(&b);
    CHECK_OK(sv_comm_fence(c));
    sv_comm_get_stats(c, &after);
    CHECK(after.all_gathers - before.all_gathers == b.want.all_gathers);
    CHECK(after.reduce_scatters - before.reduce_scatters == b.want.reduce_scatters);
    CHECK(after.all_reduces - before.all_reduces == b.want.all_reduces);
    CHECK(after.broadcasts - before.broadcasts == b.want.broadcasts);
    CHECK(after.barriers - before.barriers == b.want.barriers);
    CHECK(after.bytes_sent - before.bytes_sent == b.want.bytes_sent);
    CHECK(after.wait_seconds >= before.wait_seconds);
    sv_be_free(be, b.stage);
    return b.want.all_gathers + b.want.reduce_scatters + b.want.all_reduces + b.want.broadcasts + b.want.barriers;
}
