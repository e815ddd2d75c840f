/* Hang diagnosis (run with 3 ranks): rank 1 deliberately skips an all_reduce. Ranks 0 and 2
 * must get SV_ERR_TIMEOUT from sv_comm_wait within the 2 s timeout (+ slack), with a message
 * naming the collective, its sequence number and the communicator's ranks; the ring log is
 * dumped to stderr; the communicator then refuses further work. Afterwards rank 1 issues the
 * skipped collective late so the MPI requests abandoned by the others complete and all ranks
 * finalize normally (no MPI_Abort needed, mpiexec exits 0 on success). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/log.h"
#include "fsdp/comm.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int provided = 0, wr = 0, wn = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    sv_log_setup(wr, SV_LOG_INFO, 0);
    if (wn < 2) SKIP("comm_timeout_test needs at least 2 ranks");

    const double timeout = 2.0;
    sv_comm_config cfg = {.kind = SV_COMM_KIND_MPI, .timeout_s = timeout};
    sv_comm *c = NULL;
    CHECK_OK(sv_comm_create_world(&cfg, &c));
    CHECK_OK(sv_comm_barrier_sync(c)); /* seq 1: everyone is here */

    float x[10] = {0};
    int ok = 1;
    if (wr != 1) {
        sv_comm_req q;
        double t0 = now();
        CHECK_OK(sv_comm_all_reduce(c, x, 10, SV_COMM_F32, SV_COMM_SUM, &q)); /* seq 2 */
        sv_status st = sv_comm_wait(c, &q);
        double el = now() - t0;
        const char *msg = sv_err_msg();
        fprintf(stderr, "rank %d: wait returned '%s' after %.2f s: %s\n", wr, sv_status_str(st), el, msg);
        CHECK(st == SV_ERR_TIMEOUT);
        CHECK(el >= timeout && el < timeout + 5.0);
        CHECK(strstr(msg, "all_reduce seq 2") != NULL);
        CHECK(strstr(msg, "count 10 x f32") != NULL);
        CHECK(strstr(msg, "did not complete within 2 s") != NULL);
        char ranks[64];
        snprintf(ranks, sizeof ranks, "%d ranks: world ranks 0,1", wn);
        CHECK(strstr(msg, ranks) != NULL);
        /* broken from now on: no silent mismatch of later collectives */
        CHECK(sv_comm_barrier(c, &q) == SV_ERR_COMM);
        CHECK(strstr(sv_err_msg(), "unusable") != NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 1 waits here until the others have timed out */
    if (wr == 1) {
        /* the late arrival: completes the requests the others abandoned */
        CHECK_OK(sv_comm_all_reduce_sync(c, x, 10, SV_COMM_F32, SV_COMM_SUM));
    }
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    sv_comm_destroy(c);
    MPI_Finalize();
    if (wr == 0 && all_ok) printf("comm_timeout_test OK\n");
    return all_ok ? 0 : 1;
}
