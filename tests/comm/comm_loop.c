/* Helper program for kill_rank.sh: a loop of collectives on an MPI sv_comm with a timeout.
 * Usage: comm_loop PIDDIR TIMEOUT_S. Each rank writes PIDDIR/rank<r>.pid; rank 0 creates
 * PIDDIR/running once collectives flow. On any comm failure the rank prints the error (which
 * names the collective) and aborts the job with MPI_Abort, as app/ does. Gives up (exit 0)
 * after 60 s so it can never run forever; the script treats that as a failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "fsdp/comm.h"

static void die(int rank, sv_status st) {
    fprintf(stderr, "comm_loop rank %d: %s: %s\n", rank, sv_status_str(st), sv_err_msg());
    fflush(stderr);
    /* MPI_Abort kills hydra's proxy at once; give it a moment to forward our stderr first */
    usleep(300 * 1000);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char **argv) {
    int provided = 0, wr = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    sv_log_setup(wr, SV_LOG_INFO, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: comm_loop PIDDIR TIMEOUT_S\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.pid", argv[1], wr);
    FILE *f = fopen(path, "w");
    if (!f) MPI_Abort(MPI_COMM_WORLD, 2);
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);

    sv_comm_config cfg = {.kind = SV_COMM_KIND_MPI, .timeout_s = atof(argv[2])};
    sv_comm *c = NULL;
    sv_status st = sv_comm_create_world(&cfg, &c);
    if (st) die(wr, st);
    static float buf[4096], ag[4096 * 8], mine[1024];
    time_t start = time(NULL);
    for (long it = 0; time(NULL) - start < 60; it++) {
        sv_comm_req q;
        if ((st = sv_comm_all_reduce(c, buf, 4096, SV_COMM_F32, SV_COMM_SUM, &q)) || (st = sv_comm_wait(c, &q)))
            die(wr, st);
        if ((st = sv_comm_all_gather(c, ag, mine, 1024, SV_COMM_F32, &q)) || (st = sv_comm_wait(c, &q))) die(wr, st);
        if (it == 50 && wr == 0) {
            snprintf(path, sizeof path, "%s/running", argv[1]);
            FILE *r = fopen(path, "w");
            if (r) fclose(r);
        }
    }
    sv_comm_destroy(c);
    MPI_Finalize();
    return 0;
}
