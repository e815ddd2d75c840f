/* The shared comm body (comm_body.h) on the CPU backend: over MPI with real ranks when built with
 * SV_TEST_BODY_MPI (ctest runs it with 1 and 2 ranks), else over the local world of one. The
 * NCCL run of the same body is tests/gpu/gpu_comm_nccl.c. */
#include <stdio.h>
#include <string.h>

#ifdef SV_TEST_BODY_MPI
#include <mpi.h>
#endif

#include "check.h"
#include "comm/comm_body.h"

int main(int argc, char **argv) {
#ifdef SV_TEST_BODY_MPI
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    sv_comm_config cc = {.kind = SV_COMM_KIND_MPI, .timeout_s = 60};
    const char *want = "mpi";
#else
    (void)argc, (void)argv;
    sv_comm_config cc = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = 60};
    const char *want = "local";
#endif
    sv_backend_config bcfg = {.device = SV_DEVICE_CPU, .compute_dtype = SV_F32, .threads = 1};
    sv_backend *be;
    CHECK_OK(sv_backend_create(&bcfg, &be));
    sv_comm *c;
    CHECK_OK(sv_comm_create_world(&cc, &c));
    CHECK(!strcmp(sv_comm_name(c), want));
    int rank = sv_comm_rank(c), world = sv_comm_size(c);
    uint64_t n = comm_body_run(c, be);
    sv_comm_destroy(c);
    sv_backend_destroy(be);
    if (rank == 0) printf("comm_body over %s: %d rank(s), %llu collectives ok\n", want, world, (unsigned long long)n);
#ifdef SV_TEST_BODY_MPI
    MPI_Finalize();
#endif
    return 0;
}
