/* sv_comm over MPI with real ranks (run under mpiexec -n 2, 3, 4): every collective for every
 * dtype and op, odd counts, counts above one chunk (the default 16 MB chunk and a 4 KB chunk
 * that forces many pieces and the in-flight window), in-place all_gather, several requests in
 * flight completed out of order, a full request pool, stale handles, split communicators and
 * stats. Each rank checks its output against a locally computed expectation. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm_expect.h"
#include "core/log.h"
#include "fsdp/comm.h"

static void check_all_gather(sv_comm *c, sv_comm_dtype dt, size_t count, int in_place) {
    int p = sv_comm_size(c), me = sv_comm_rank(c);
    size_t es = sv_comm_dtype_size(dt), guard = 64;
    char *recv = xmalloc(count * es * (size_t)p + guard);
    char *want = xmalloc(count * es * (size_t)p + 1);
    char *send = in_place ? recv + (size_t)me * count * es : xmalloc(count * es + 1);
    memset(recv, 0xAB, count * es * (size_t)p + guard);
    for (size_t i = 0; i < count; i++) gen_elem(dt, me, i, send + i * es);
    for (int r = 0; r < p; r++)
        for (size_t i = 0; i < count; i++) gen_elem(dt, r, i, want + ((size_t)r * count + i) * es);
    sv_comm_req q;
    CHECK_OK(sv_comm_all_gather(c, recv, send, count, dt, &q));
    CHECK_OK(sv_comm_wait(c, &q));
    char what[96];
    snprintf(what, sizeof what, "all_gather dtype %d count %zu%s", (int)dt, count, in_place ? " in place" : "");
    CHECK(same_elems(what, dt, recv, want, count * (size_t)p));
    for (size_t i = 0; i < guard; i++) CHECK((unsigned char)recv[count * es * (size_t)p + i] == 0xAB);
    if (!in_place) free(send);
    free(recv);
    free(want);
}

static void check_reduce_scatter(sv_comm *c, sv_comm_dtype dt, sv_comm_op op, size_t count) {
    int p = sv_comm_size(c), me = sv_comm_rank(c);
    size_t es = sv_comm_dtype_size(dt), guard = 64;
    char *send = xmalloc(count * es * (size_t)p);
    char *recv = xmalloc(count * es + guard);
    char *want = xmalloc(count * es + 1);
    for (size_t i = 0; i < count * (size_t)p; i++) gen_elem(dt, me, i, send + i * es);
    memset(recv, 0xAB, count * es + guard);
    for (size_t i = 0; i < count; i++) expect_reduced(dt, op, p, (size_t)me * count + i, want + i * es);
    sv_comm_req q;
    CHECK_OK(sv_comm_reduce_scatter(c, recv, send, count, dt, op, &q));
    CHECK_OK(sv_comm_wait(c, &q));
    char what[96];
    snprintf(what, sizeof what, "reduce_scatter dtype %d op %d count %zu", (int)dt, (int)op, count);
    CHECK(same_elems(what, dt, recv, want, count));
    for (size_t i = 0; i < guard; i++) CHECK((unsigned char)recv[count * es + i] == 0xAB);
    free(send);
    free(recv);
    free(want);
}

static void check_all_reduce(sv_comm *c, sv_comm_dtype dt, sv_comm_op op, size_t count) {
    int p = sv_comm_size(c), me = sv_comm_rank(c);
    size_t es = sv_comm_dtype_size(dt);
    char *buf = xmalloc(count * es);
    char *want = xmalloc(count * es);
    for (size_t i = 0; i < count; i++) {
        gen_elem(dt, me, i, buf + i * es);
        expect_reduced(dt, op, p, i, want + i * es);
    }
    sv_comm_req q;
    CHECK_OK(sv_comm_all_reduce(c, buf, count, dt, op, &q));
    CHECK_OK(sv_comm_wait(c, &q));
    char what[96];
    snprintf(what, sizeof what, "all_reduce dtype %d op %d count %zu", (int)dt, (int)op, count);
    CHECK(same_elems(what, dt, buf, want, count));
    free(buf);
    free(want);
}

static void check_broadcast(sv_comm *c, sv_comm_dtype dt, size_t count, int root) {
    int me = sv_comm_rank(c);
    size_t es = sv_comm_dtype_size(dt);
    char *buf = xmalloc(count * es);
    char *want = xmalloc(count * es);
    for (size_t i = 0; i < count; i++) gen_elem(dt, root, i, want + i * es);
    if (me == root)
        memcpy(buf, want, count * es);
    else
        memset(buf, 0xCD, count * es);
    CHECK_OK(sv_comm_broadcast_sync(c, buf, count, dt, root));
    char what[96];
    snprintf(what, sizeof what, "broadcast dtype %d root %d count %zu", (int)dt, root, count);
    CHECK(same_elems(what, dt, buf, want, count));
    free(buf);
    free(want);
}

/* Every dtype x op x count through every collective kind. */
static void matrix(sv_comm *c, const size_t *counts, int ncounts) {
    for (int d = 0; d < 5; d++)
        for (int n = 0; n < ncounts; n++) {
            sv_comm_dtype dt = kAllDtypes[d];
            check_all_gather(c, dt, counts[n], 0);
            check_all_gather(c, dt, counts[n], 1);
            for (int o = 0; o < 3; o++) {
                check_reduce_scatter(c, dt, kAllOps[o], counts[n]);
                check_all_reduce(c, dt, kAllOps[o], counts[n]);
            }
            check_broadcast(c, dt, counts[n], (int)(counts[n] % (size_t)sv_comm_size(c)));
        }
}

/* bf16 sums really add in fp32 and round once per combine (not integer adds of the bits). */
static void check_bf16_rounding(sv_comm *c) {
    int p = sv_comm_size(c);
    uint16_t x[3] = {sv_f32_to_bf16(1.0f), sv_f32_to_bf16(-2.5f), sv_f32_to_bf16(0.0078125f)};
    CHECK_OK(sv_comm_all_reduce_sync(c, x, 3, SV_COMM_BF16, SV_COMM_SUM));
    CHECK(sv_bf16_to_f32(x[0]) == (float)p);
    CHECK(sv_bf16_to_f32(x[1]) == -2.5f * (float)p);
    CHECK(sv_bf16_to_f32(x[2]) == 0.0078125f * (float)p);
    /* 256 + 1 + 1 ...: every partial sum 257, 258 rounds to the even neighbour in bf16. */
    uint16_t y = sv_f32_to_bf16(sv_comm_rank(c) == 0 ? 256.0f : 1.0f);
    CHECK_OK(sv_comm_all_reduce_sync(c, &y, 1, SV_COMM_BF16, SV_COMM_SUM));
    float got = sv_bf16_to_f32(y), exact = 256.0f + (float)(p - 1);
    CHECK(got >= 256.0f && got <= exact + 2.0f && got == sv_round_bf16(got));
}

/* Five collectives in flight at once, waited in a different order than issued. */
static void check_out_of_order(sv_comm *c) {
    int p = sv_comm_size(c), me = sv_comm_rank(c);
    size_t n = 3001;
    float *ag_send = xmalloc(n * 4), *ag_recv = xmalloc(n * 4 * (size_t)p);
    double *rs_send = xmalloc(n * 8 * (size_t)p), *rs_recv = xmalloc(n * 8);
    int64_t *ar = xmalloc(n * 8);
    uint8_t *bc = xmalloc(n);
    for (size_t i = 0; i < n; i++) gen_elem(SV_COMM_F32, me, i, &ag_send[i]);
    for (size_t i = 0; i < n * (size_t)p; i++) gen_elem(SV_COMM_F64, me, i, &rs_send[i]);
    for (size_t i = 0; i < n; i++) gen_elem(SV_COMM_I64, me, i, &ar[i]);
    for (size_t i = 0; i < n; i++) bc[i] = me == p - 1 ? (uint8_t)(i * 3) : 0;
    sv_comm_req q[5];
    CHECK_OK(sv_comm_all_gather(c, ag_recv, ag_send, n, SV_COMM_F32, &q[0]));
    CHECK_OK(sv_comm_reduce_scatter(c, rs_recv, rs_send, n, SV_COMM_F64, SV_COMM_SUM, &q[1]));
    CHECK_OK(sv_comm_all_reduce(c, ar, n, SV_COMM_I64, SV_COMM_MAX, &q[2]));
    CHECK_OK(sv_comm_broadcast(c, bc, n, SV_COMM_U8, p - 1, &q[3]));
    CHECK_OK(sv_comm_barrier(c, &q[4]));
    int order[5] = {4, 2, 0, 3, 1};
    for (int k = 0; k < 5; k++) CHECK_OK(sv_comm_wait(c, &q[order[k]]));
    for (int r = 0; r < p; r++)
        for (size_t i = 0; i < n; i++) {
            float w;
            gen_elem(SV_COMM_F32, r, i, &w);
            CHECK(ag_recv[(size_t)r * n + i] == w);
        }
    for (size_t i = 0; i < n; i++) {
        double w;
        int64_t wi;
        expect_reduced(SV_COMM_F64, SV_COMM_SUM, p, (size_t)me * n + i, &w);
        expect_reduced(SV_COMM_I64, SV_COMM_MAX, p, i, &wi);
        CHECK(rs_recv[i] == w);
        CHECK(ar[i] == wi);
        CHECK(bc[i] == (uint8_t)(i * 3));
    }
    free(ag_send), free(ag_recv), free(rs_send), free(rs_recv), free(ar), free(bc);
}

/* A full pool refuses the next issue; handles are single-use and checked. */
static void check_pool_and_handles(sv_comm *c) {
    int p = sv_comm_size(c);
    float v[SV_COMM_MAX_INFLIGHT];
    sv_comm_req q[SV_COMM_MAX_INFLIGHT], extra;
    for (int k = 0; k < SV_COMM_MAX_INFLIGHT; k++) {
        v[k] = (float)k;
        CHECK_OK(sv_comm_all_reduce(c, &v[k], 1, SV_COMM_F32, SV_COMM_SUM, &q[k]));
    }
    float x = 1.0f;
    CHECK(sv_comm_all_reduce(c, &x, 1, SV_COMM_F32, SV_COMM_SUM, &extra) == SV_ERR_INVALID);
    CHECK(strstr(sv_err_msg(), "in flight") != NULL);
    for (int k = SV_COMM_MAX_INFLIGHT - 1; k >= 0; k--) CHECK_OK(sv_comm_wait(c, &q[k]));
    for (int k = 0; k < SV_COMM_MAX_INFLIGHT; k++) CHECK(v[k] == (float)(k * p));

    sv_comm_req a, copy;
    CHECK_OK(sv_comm_barrier(c, &a));
    copy = a;
    CHECK_OK(sv_comm_wait(c, &a));
    CHECK(a.slot < 0);
    CHECK_OK(sv_comm_wait(c, &a)); /* waiting twice on the same handle is fine */
    if (copy.slot >= 0) {
        CHECK(sv_comm_wait(c, &copy) == SV_ERR_INVALID); /* the copy is stale */
        CHECK(strstr(sv_err_msg(), "stale") != NULL);
        /* slot reused by a newer collective: the sequence number still tells them apart */
        sv_comm_req b;
        CHECK_OK(sv_comm_barrier(c, &b));
        if (b.slot == copy.slot) CHECK(sv_comm_wait(c, &copy) == SV_ERR_INVALID);
        CHECK_OK(sv_comm_wait(c, &b));
    }
}

/* Split by parity of the world rank; collectives on the sub-communicator and the parent
 * interleave. */
static void check_split(sv_comm *world) {
    int p = sv_comm_size(world), me = sv_comm_rank(world);
    sv_comm *sub = NULL;
    CHECK_OK(sv_comm_split(world, me % 2, me, &sub));
    int expect_size = (p + (me % 2 == 0 ? 1 : 0)) / 2;
    CHECK(sv_comm_size(sub) == expect_size);
    CHECK(sv_comm_rank(sub) == me / 2);
    CHECK(strcmp(sv_comm_name(sub), "mpi") == 0);
    int64_t ranks[8] = {0};
    int64_t mine = me;
    double wsum = me, ssum = me;
    sv_comm_req q[3];
    CHECK_OK(sv_comm_all_gather(sub, ranks, &mine, 1, SV_COMM_I64, &q[0]));
    CHECK_OK(sv_comm_all_reduce(world, &wsum, 1, SV_COMM_F64, SV_COMM_SUM, &q[1]));
    CHECK_OK(sv_comm_all_reduce(sub, &ssum, 1, SV_COMM_F64, SV_COMM_SUM, &q[2]));
    CHECK_OK(sv_comm_wait(sub, &q[2]));
    CHECK_OK(sv_comm_wait(world, &q[1]));
    CHECK_OK(sv_comm_wait(sub, &q[0]));
    double want = 0;
    for (int k = 0; k < expect_size; k++) {
        CHECK(ranks[k] == 2 * k + me % 2);
        want += (double)(2 * k + me % 2);
    }
    CHECK(ssum == want);
    CHECK(wsum == (double)p * (p - 1) / 2);
    check_reduce_scatter(sub, SV_COMM_BF16, SV_COMM_SUM, 777);
    /* the same handle is not valid on another communicator */
    sv_comm_req h;
    CHECK_OK(sv_comm_barrier(world, &h));
    sv_comm_req wrong = h;
    if (wrong.slot >= 0) CHECK(sv_comm_wait(sub, &wrong) == SV_ERR_INVALID); /* sub is idle */
    CHECK_OK(sv_comm_wait(world, &h));
    sv_comm_destroy(sub);
}

static void check_stats(sv_comm *c) {
    int p = sv_comm_size(c), me = sv_comm_rank(c);
    sv_comm_reset_stats(c);
    sv_comm_stats s;
    sv_comm_get_stats(c, &s);
    CHECK(s.all_gathers == 0 && s.reduce_scatters == 0 && s.all_reduces == 0 && s.bytes_sent == 0);
    float buf[64 * 8] = {0}, out[64] = {0};
    sv_comm_req q;
    for (int k = 0; k < 3; k++) {
        CHECK_OK(sv_comm_all_gather(c, buf, out, 10, SV_COMM_F32, &q));
        CHECK_OK(sv_comm_wait(c, &q));
    }
    for (int k = 0; k < 2; k++) {
        CHECK_OK(sv_comm_reduce_scatter(c, out, buf, 5, SV_COMM_F32, SV_COMM_SUM, &q));
        CHECK_OK(sv_comm_wait(c, &q));
    }
    CHECK_OK(sv_comm_all_reduce_sync(c, buf, 7, SV_COMM_F32, SV_COMM_SUM));
    CHECK_OK(sv_comm_broadcast_sync(c, buf, 9, SV_COMM_BF16, 0));
    CHECK_OK(sv_comm_barrier_sync(c));
    CHECK_OK(sv_comm_barrier_sync(c));
    sv_comm_get_stats(c, &s);
    CHECK(s.all_gathers == 3);
    CHECK(s.reduce_scatters == 2);
    CHECK(s.all_reduces == 1);
    CHECK(s.broadcasts == 1);
    CHECK(s.barriers == 2);
    uint64_t want = 3 * 10 * 4 + 2 * 5 * 4 * (uint64_t)p + 7 * 4 + (me == 0 ? 9 * 2 : 0);
    CHECK(s.bytes_sent == want);
    CHECK(s.wait_seconds >= 0.0);
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int wr = 0, wn = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    sv_log_setup(wr, SV_LOG_INFO, 0);

    sv_comm_config cfg = {.kind = SV_COMM_KIND_MPI, .timeout_s = 120.0};
    sv_comm *c = NULL;
    CHECK_OK(sv_comm_create_world(&cfg, &c));
    CHECK(sv_comm_rank(c) == wr && sv_comm_size(c) == wn);
    CHECK(strcmp(sv_comm_name(c), "mpi") == 0);

    /* user traffic on MPI_COMM_WORLD in the middle of ours does not interfere (own dup) */
    sv_comm_req pend;
    double v = 1.0;
    CHECK_OK(sv_comm_all_reduce(c, &v, 1, SV_COMM_F64, SV_COMM_SUM, &pend));
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_OK(sv_comm_wait(c, &pend));
    CHECK(total == wn && v == (double)wn);

    static const size_t small[] = {0, 1, 7, 1001, 65537};
    matrix(c, small, 5);
    check_bf16_rounding(c);
    check_out_of_order(c);
    check_pool_and_handles(c);
    check_split(c);
    check_stats(c);

    /* Above one default chunk (16 MB), sizes not multiples of it: 2+ pieces per collective,
     * and the multi-segment reduce_scatter path (count > chunk elements). */
    check_all_reduce(c, SV_COMM_F32, SV_COMM_SUM, 5000003);
    check_all_reduce(c, SV_COMM_BF16, SV_COMM_MAX, 9000001);
    check_all_gather(c, SV_COMM_F32, 4194304 / (size_t)wn + 12345, 0);
    check_reduce_scatter(c, SV_COMM_F32, SV_COMM_SUM, 4194304 / (size_t)wn + 12345);
    check_reduce_scatter(c, SV_COMM_F32, SV_COMM_SUM, 5000003);
    check_broadcast(c, SV_COMM_F64, 2500001, wn - 1);

    /* A 4 KB chunk: hundreds of pieces, more than the in-flight window, last pieces short. */
    sv_comm_config small_cfg = cfg;
    small_cfg.chunk_bytes = 4096;
    sv_comm *small_chunks = NULL;
    CHECK_OK(sv_comm_create_world(&small_cfg, &small_chunks));
    static const size_t mid[] = {1, 333, 1025, 20011};
    matrix(small_chunks, mid, 4);
    check_out_of_order(small_chunks);
    check_split(small_chunks);
    sv_comm_destroy(small_chunks);

    sv_comm_destroy(c);
    MPI_Barrier(MPI_COMM_WORLD);
    if (wr == 0) printf("comm_mpi_test: %d ranks OK\n", wn);
    MPI_Finalize();
    return 0;
}
