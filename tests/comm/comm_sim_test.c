/* The simulated communicators' link model (fsdp/comm_sim.h), on a virtual clock this test moves
 * itself (as the virtual-time backend does for every op). Two ranks on two nodes, so every
 * collective crosses the inter-node link: a reduce_scatter of 2 MB (1 MB per rank) moves 1 MB
 * each way, 1 ms at 1 GB/s, plus 10 us of latency.
 *
 * Checked: the latency terms take the link's small-message latency up to its size (eager
 * protocol) and its own above; a shared (fair-share) link serves two collectives in flight at half the rate each,
 * whatever their communicator, also when the second arrives while the first is half done; a
 * serial link runs one communicator's collectives one after the other and different
 * communicators' side by side; the split of a collective into latency and transfer adds up to its
 * time; a transport CPU cost lengthens an op that overlaps a transfer by exactly the CPU time of
 * the bytes moved meanwhile (divided over the rank's threads), and nothing while the rank waits;
 * without a cost an op takes its own time; a token bucket in front of the link (tc's tbf with a
 * peak rate) sends min(peak t, burst + rate t) bytes by time t after idling, refills at the rate
 * while the link idles (its latency terms included) and is never fuller than its burst.
 * Oversubscribed ranks (sched_round_s): a collective the rank computed through (an op ran
 * between its issue and its wait) completes no earlier than issue + rounds x sched_round_s
 * (rounds: 1 for 2 ranks, 3 for a 4-rank ring), on a self-progressing link and on a
 * progress-driven one; one issued and waited for at once, and any collective with
 * sched_round_s = 0, completes as before; a rank that computes past the floor sees it done. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/clock.h"
#include "fsdp/comm_sim.h"

#define N_PER_RANK 250000 /* floats: 1 MB per rank */
#define XFER 1e-3         /* seconds: 1 MB at 1 GB/s */
#define LAT 10e-6
#define EPS 1e-12

static double g_now;
static float g_send[2 * N_PER_RANK], g_recv[N_PER_RANK];
static const sv_sim_group k_g = {.size = 2, .rank = 0, .nodes = 2, .ranks_per_node = 1};

static sv_sim_net net(int shared, double cpu_ns) {
    sv_sim_net n = {0};
    n.intra = (sv_sim_link){.alpha_s = 1e-6, .bw_Bps = 10e9, .reduce_factor = 1};
    n.inter = (sv_sim_link){
        .alpha_s = LAT, .bw_Bps = 1e9, .reduce_factor = 1, .shared = shared, .cpu_s_per_byte = cpu_ns * 1e-9};
    n.ranks_per_node = 1;
    return n;
}

static sv_sim_fabric *fabric(int shared, double cpu_ns, int threads) {
    sv_sim_net n = net(shared, cpu_ns);
    sv_sim_fabric *f;
    g_now = 0;
    CHECK_OK(sv_sim_fabric_create(&n, &g_now, threads, &f));
    return f;
}

static sv_comm *comm(sv_sim_fabric *f, const char *label) {
    sv_comm_config cfg = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = 0};
    sv_comm *c;
    CHECK_OK(sv_comm_sim_create(&cfg, f, &k_g, label, &c));
    return c;
}

static void rs(sv_comm *c, sv_comm_req *q) {
    CHECK_OK(sv_comm_reduce_scatter(c, g_recv, g_send, N_PER_RANK, SV_COMM_F32, SV_COMM_SUM, q));
}

/* wait for q and return the virtual time it completed at */
static double wait_at(sv_comm *c, sv_comm_req *q) {
    CHECK_OK(sv_comm_wait(c, q));
    return g_now;
}

static void test_parts(void) {
    sv_sim_net n = net(1, 0);
    double lat, xfer, bytes;
    sv_sim_coll_parts(&n, &k_g, 1 /* reduce_scatter */, sizeof g_send, &lat, &xfer, &bytes, NULL);
    CHECK_CLOSE(lat, LAT, EPS);
    CHECK_CLOSE(xfer, XFER, EPS);
    CHECK_CLOSE(bytes, 2e6, 1e-6); /* 1 MB sent + 1 MB received */
    CHECK_CLOSE(lat + xfer, sv_sim_coll_seconds(&n, &k_g, 1, sizeof g_send), EPS);
    /* a small-message latency applies up to its size, the link's own above it */
    n.inter.small_alpha_s = 2e-6, n.inter.small_bytes = 4096;
    sv_sim_coll_parts(&n, &k_g, 1, 4096, &lat, &xfer, &bytes, NULL);
    CHECK_CLOSE(lat, 2e-6, EPS);
    sv_sim_coll_parts(&n, &k_g, 1, 4097, &lat, &xfer, &bytes, NULL);
    CHECK_CLOSE(lat, LAT, EPS);
    sv_sim_coll_parts(&n, &k_g, 1, sizeof g_send, &lat, &xfer, &bytes, NULL);
    printf("ok parts: latency %.0f us + transfer %.3f ms, %.0f bytes through the rank's link\n", lat * 1e6, xfer * 1e3,
           bytes);
}

static void test_fair_share(void) {
    sv_sim_fabric *f = fabric(1, 0, 1);
    sv_comm *a = comm(f, "a"), *b = comm(f, "b");
    sv_comm_req q1, q2;
    /* alone: transfer + latency */
    rs(a, &q1);
    CHECK_CLOSE(wait_at(a, &q1), XFER + LAT, EPS);
    /* two at once, one per communicator: each at half the rate */
    double t0 = g_now;
    rs(a, &q1);
    rs(b, &q2);
    CHECK_CLOSE(wait_at(a, &q1) - t0, 2 * XFER + LAT, EPS);
    CHECK_CLOSE(wait_at(b, &q2) - t0, 2 * XFER + LAT, EPS);
    /* two on one communicator, the second issued when the first is half done: the first has
     * 0.5 ms left at half the rate (done at 1.5 ms), the second has moved 0.5 ms of its own by
     * then and moves the other 0.5 ms alone (done at 2 ms) */
    t0 = g_now;
    rs(a, &q1);
    g_now += XFER / 2;
    rs(a, &q2);
    CHECK_CLOSE(wait_at(a, &q1) - t0, 1.5 * XFER + LAT, EPS);
    CHECK_CLOSE(wait_at(a, &q2) - t0, 2 * XFER + LAT, EPS);
    sv_comm_destroy(a);
    sv_comm_destroy(b);
    sv_sim_fabric_destroy(f);
    printf("ok fair share: 1 transfer %.3f ms, 2 at once %.3f ms each\n", (XFER + LAT) * 1e3, (2 * XFER + LAT) * 1e3);
}

static void test_serial(void) {
    sv_sim_fabric *f = fabric(0, 0, 1);
    sv_comm *a = comm(f, "a"), *b = comm(f, "b");
    sv_comm_req q1, q2, q3;
    rs(a, &q1);
    rs(a, &q2); /* queued behind q1, latency included */
    rs(b, &q3); /* another communicator: no contention */
    CHECK_CLOSE(wait_at(a, &q1), XFER + LAT, EPS);
    CHECK_CLOSE(wait_at(a, &q2), 2 * (XFER + LAT), EPS);
    CHECK_CLOSE(wait_at(b, &q3), 2 * (XFER + LAT), EPS); /* done at XFER + LAT, waited later */
    rs(b, &q3);
    CHECK_CLOSE(wait_at(b, &q3), 3 * (XFER + LAT), EPS);
    sv_comm_destroy(a);
    sv_comm_destroy(b);
    sv_sim_fabric_destroy(f);
    printf("ok serial: one communicator's collectives one after another\n");
}

static void test_cpu_cost(void) {
    /* 0.25 ns per byte: the 2 MB the rank moves cost 0.5 ms of CPU, taken over the 1 ms transfer */
    const double cpu = 2e6 * 0.25e-9;
    for (int threads = 1; threads <= 2; threads++) {
        sv_sim_fabric *f = fabric(1, 0.25, threads);
        sv_comm *a = comm(f, "a");
        sv_comm_req q;
        /* an op that outlasts the transfer: lengthened by the whole CPU time / threads */
        rs(a, &q);
        double w = sv_sim_fabric_op_seconds(f, 3e-3);
        CHECK_CLOSE(w, 3e-3 + cpu / threads, EPS);
        g_now += w;
        CHECK_CLOSE(wait_at(a, &q), w, EPS); /* already done: the transfer itself is not slowed */
        CHECK_CLOSE(sv_sim_fabric_cpu_seconds(f), cpu / threads, EPS);
        /* an op inside the transfer runs at 1 - (0.5 / threads) of its speed */
        double t0 = g_now;
        rs(a, &q);
        w = sv_sim_fabric_op_seconds(f, 0.2e-3);
        CHECK_CLOSE(w, 0.2e-3 / (1 - 0.5 / threads), EPS);
        g_now += w;
        CHECK_CLOSE(wait_at(a, &q) - t0, XFER + LAT, EPS);
        /* after a wait, with nothing in flight: the op's own time */
        CHECK_CLOSE(sv_sim_fabric_op_seconds(f, 1e-3), 1e-3, 0);
        sv_comm_destroy(a);
        sv_sim_fabric_destroy(f);
    }
    /* moved while the rank waits: free */
    sv_sim_fabric *f = fabric(1, 0.25, 1);
    sv_comm *a = comm(f, "a");
    sv_comm_req q;
    rs(a, &q);
    wait_at(a, &q);
    CHECK_CLOSE(sv_sim_fabric_op_seconds(f, 1e-3), 1e-3, 0);
    CHECK(sv_sim_fabric_cpu_seconds(f) == 0);
    sv_comm_destroy(a);
    sv_sim_fabric_destroy(f);
    /* no cost: ops keep their time even with a transfer in flight */
    f = fabric(1, 0, 1);
    a = comm(f, "a");
    rs(a, &q);
    CHECK(sv_sim_fabric_op_seconds(f, 0.3e-3) == 0.3e-3);
    wait_at(a, &q);
    sv_comm_destroy(a);
    sv_sim_fabric_destroy(f);
    printf("ok transport CPU cost: an op overlapping the transfer is %.3f ms longer (1 thread), %.3f ms (2)\n",
           cpu * 1e3, cpu / 2 * 1e3);
}

/* 1 MB each way through a bucket of `burst` bytes at `peak_gbps`, the link's rate 1 GB/s */
static sv_sim_fabric *bucket_fabric(double burst, double peak_gbps) {
    sv_sim_net n = net(1, 0);
    n.inter.burst_bytes = burst;
    n.inter.peak_Bps = peak_gbps * 1e9;
    sv_sim_fabric *f;
    g_now = 0;
    CHECK_OK(sv_sim_fabric_create(&n, &g_now, 1, &f));
    return f;
}

static void test_token_bucket(void) {
    /* bucket 0.5 MB, peak 4 GB/s: tokens last until 4 t = 0.5 MB + 1 GB/s t, t = 1/6 ms, 2/3 MB
     * sent; the last 1/3 MB at the rate: 1/3 ms; the transfer takes 0.5 ms */
    sv_sim_fabric *f = bucket_fabric(0.5e6, 4);
    sv_comm *a = comm(f, "a");
    sv_comm_req q;
    rs(a, &q);
    CHECK_CLOSE(wait_at(a, &q), 0.5e-3 + LAT, EPS);
    /* the bucket refilled during the latency (10 us) and now for 240 us more: 0.25 MB. Tokens
     * last 1/12 ms (1/3 MB sent), the other 2/3 MB at the rate */
    g_now += 0.24e-3;
    double t0 = g_now;
    rs(a, &q);
    CHECK_CLOSE(wait_at(a, &q) - t0, 0.25e-3 / 3 + 2.0e-3 / 3 + LAT, EPS);
    /* idle far longer than the bucket needs: full again, not fuller (0.5 ms again) */
    g_now += 1.0;
    t0 = g_now;
    rs(a, &q);
    CHECK_CLOSE(wait_at(a, &q) - t0, 0.5e-3 + LAT, EPS);
    /* two collectives in flight share the peak as they share the rate: 2 MB at once through a
     * full bucket: 4 t = 0.5 MB + t, t = 1/6 ms (2/3 MB), 4/3 MB left at the rate; both end together */
    g_now += 1.0;
    sv_comm *b = comm(f, "b");
    sv_comm_req q2;
    t0 = g_now;
    rs(a, &q);
    rs(b, &q2);
    CHECK_CLOSE(wait_at(a, &q) - t0, 1e-3 / 6 + 4e-3 / 3 + LAT, EPS);
    CHECK_CLOSE(wait_at(b, &q2) - t0, 1e-3 / 6 + 4e-3 / 3 + LAT, EPS);
    sv_comm_destroy(b);
    sv_comm_destroy(a);
    sv_sim_fabric_destroy(f);
    /* a bucket larger than the transfer: all of it at the peak */
    f = bucket_fabric(2e6, 4);
    a = comm(f, "a");
    rs(a, &q);
    CHECK_CLOSE(wait_at(a, &q), XFER / 4 + LAT, EPS);
    sv_comm_destroy(a);
    sv_sim_fabric_destroy(f);
    /* a peak not above the rate is no bucket */
    f = bucket_fabric(2e6, 1);
    a = comm(f, "a");
    rs(a, &q);
    CHECK_CLOSE(wait_at(a, &q), XFER + LAT, EPS);
    sv_comm_destroy(a);
    sv_sim_fabric_destroy(f);
    printf("ok token bucket: 1 MB through a full 0.5 MB bucket at 4x the rate in %.3f ms (%.3f ms without)\n", 0.5,
           XFER * 1e3);
}

/* A collective on comm c issued at the current time, an op of `op_s` seconds run (the virtual
 * clock moved past it as the backend would), then waited for: the time it completed after its
 * issue. op_s < 0: no op (issued and waited for at once). */
static double after_op(sv_sim_fabric *f, sv_comm *c, int count, double op_s) {
    sv_comm_req q;
    const double t0 = g_now;
    CHECK_OK(sv_comm_reduce_scatter(c, g_recv, g_send, (size_t)count, SV_COMM_F32, SV_COMM_SUM, &q));
    if (op_s >= 0) g_now += sv_sim_fabric_op_seconds(f, op_s);
    return wait_at(c, &q) - t0;
}

static void test_sched_round(void) {
    const double Q = 5e-3; /* the quantum: longer than the 1.01 ms collective */
    for (int mode = 0; mode < 2; mode++) {
        /* mode 0: the self-progressing inter-node link (two nodes); mode 1: a progress-driven
         * intra-node link (polls move the data), one node */
        for (int q = 0; q < 2; q++) {
            sv_sim_net n = net(1, 0);
            n.sched_round_s = q ? Q : 0;
            n.intra.progress_s = 1e-4;
            n.intra.bw_Bps = 1e9, n.intra.alpha_s = LAT; /* the same 1.01 ms as the inter link */
            sv_sim_fabric *f;
            g_now = 0;
            CHECK_OK(sv_sim_fabric_create(&n, &g_now, 1, &f));
            const sv_sim_group g2 = {.size = 2, .rank = 0, .nodes = mode ? 1 : 2, .ranks_per_node = mode ? 2 : 1};
            const sv_sim_group g4m = {.size = 4, .rank = 0, .nodes = mode ? 1 : 4, .ranks_per_node = mode ? 4 : 1};
            sv_comm_config cfg = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = 0};
            sv_comm *a, *b;
            CHECK_OK(sv_comm_sim_create(&cfg, f, &g2, "a", &a));
            CHECK_OK(sv_comm_sim_create(&cfg, f, &g4m, "b", &b));
            /* without the floor: the link moves the data during the op (mode 0), or the wait
             * does after it (mode 1: nothing polls during the op) */
#define EXPECT(op, plain, rounds) (fmax(mode ? (op) + (plain) : fmax((op), (plain)), q ? (rounds)*Q : 0))
            const double plain = XFER + LAT, plain4 = 1.5 * XFER + 3 * LAT; /* 2 ranks; 4 ranks: 3 ring steps */
            /* issued and waited for at once: no floor */
            CHECK_CLOSE(after_op(f, a, N_PER_RANK, -1), plain, 1e-9);
            CHECK_CLOSE(after_op(f, b, N_PER_RANK / 2, -1), plain4, 1e-9);
            /* computed through for 0.1 ms: done at the floor (1 round; 3 for 4 ranks) */
            CHECK_CLOSE(after_op(f, a, N_PER_RANK, 0.1e-3), EXPECT(0.1e-3, plain, 1), 1e-9);
            CHECK_CLOSE(after_op(f, b, N_PER_RANK / 2, 0.1e-3), EXPECT(0.1e-3, plain4, 3), 1e-9);
            /* computed through for 7 ms: past the 1-round floor */
            CHECK_CLOSE(after_op(f, a, N_PER_RANK, 7e-3), EXPECT(7e-3, plain, 1), 1e-9);
            if (q) CHECK(EXPECT(0.1e-3, plain, 1) == Q && EXPECT(0.1e-3, plain4, 3) == 3 * Q); /* the floor binds */
#undef EXPECT
            sv_comm_destroy(a);
            sv_comm_destroy(b);
            sv_sim_fabric_destroy(f);
        }
    }
    printf("ok oversubscribed rounds: a collective computed through ends >= issue + rounds x %.0f ms (1 round for 2 "
           "ranks, 3 for 4); one waited for at once, or with no quantum, as before\n",
           Q * 1e3);
}

int main(void) {
    sv_clock_set_virtual(&g_now);
    test_parts();
    test_fair_share();
    test_serial();
    test_cpu_cost();
    test_token_bucket();
    test_sched_round();
    sv_clock_set_virtual(NULL);
    printf("comm_sim: all passed\n");
    return 0;
}
