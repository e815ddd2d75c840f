/* The world-of-one comm (no MPI): collectives complete at issue with the right data, are
 * counted in stats and logged; plus create-time dispatch and argument errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm_expect.h"
#include "fsdp/comm.h"
#include "fsdp/comm_impl.h" /* sv_comm_launched_size */

int main(void) {
    sv_comm_config cfg = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = 1.0};
    sv_comm *c = NULL;
    CHECK_OK(sv_comm_create_world(&cfg, &c));
    CHECK(sv_comm_rank(c) == 0 && sv_comm_size(c) == 1);
    CHECK(strcmp(sv_comm_name(c), "local") == 0);

    for (int d = 0; d < 5; d++) {
        sv_comm_dtype dt = kAllDtypes[d];
        size_t es = sv_comm_dtype_size(dt), n = 1001;
        char *a = xmalloc(n * es), *b = xmalloc(n * es), *want = xmalloc(n * es);
        for (size_t i = 0; i < n; i++) gen_elem(dt, 0, i, want + i * es);
        memcpy(a, want, n * es);
        memset(b, 0, n * es);
        sv_comm_req q;
        CHECK_OK(sv_comm_all_gather(c, b, a, n, dt, &q));
        CHECK(q.slot < 0); /* already complete */
        CHECK_OK(sv_comm_wait(c, &q));
        CHECK(same_elems("local all_gather", dt, b, want, n));
        CHECK_OK(sv_comm_all_gather(c, b, b, n, dt, &q)); /* in place */
        CHECK(same_elems("local all_gather in place", dt, b, want, n));
        memset(b, 0, n * es);
        CHECK_OK(sv_comm_reduce_scatter(c, b, a, n, dt, SV_COMM_SUM, &q));
        CHECK(same_elems("local reduce_scatter", dt, b, want, n));
        CHECK_OK(sv_comm_all_reduce_sync(c, a, n, dt, SV_COMM_MAX));
        CHECK(same_elems("local all_reduce", dt, a, want, n));
        CHECK_OK(sv_comm_broadcast_sync(c, a, n, dt, 0));
        CHECK(same_elems("local broadcast", dt, a, want, n));
        free(a), free(b), free(want);
    }
    float x = 1.0f;
    CHECK(sv_comm_broadcast_sync(c, &x, 1, SV_COMM_F32, 1) == SV_ERR_INVALID);
    CHECK(strstr(sv_err_msg(), "root 1") != NULL);
    CHECK(sv_comm_all_reduce_sync(c, &x, 1, (sv_comm_dtype)42, SV_COMM_SUM) == SV_ERR_INVALID);
    CHECK(sv_comm_all_reduce_sync(c, &x, 1, SV_COMM_F32, (sv_comm_op)9) == SV_ERR_INVALID);
    float ov[4];
    sv_comm_req q;
    CHECK(sv_comm_reduce_scatter(c, ov + 1, ov, 2, SV_COMM_F32, SV_COMM_SUM, &q) == SV_ERR_INVALID);

    /* stats count world-of-one collectives exactly like real ones */
    sv_comm_reset_stats(c);
    for (int k = 0; k < 4; k++) {
        CHECK_OK(sv_comm_all_gather(c, ov, ov + 2, 2, SV_COMM_F32, &q));
        CHECK_OK(sv_comm_wait(c, &q));
    }
    CHECK_OK(sv_comm_reduce_scatter(c, ov, ov + 2, 2, SV_COMM_F32, SV_COMM_SUM, &q));
    CHECK_OK(sv_comm_all_reduce_sync(c, ov, 3, SV_COMM_F32, SV_COMM_SUM));
    CHECK_OK(sv_comm_broadcast_sync(c, ov, 1, SV_COMM_F32, 0));
    CHECK_OK(sv_comm_barrier_sync(c));
    sv_comm_stats s;
    sv_comm_get_stats(c, &s);
    CHECK(s.all_gathers == 4 && s.reduce_scatters == 1 && s.all_reduces == 1);
    CHECK(s.broadcasts == 1 && s.barriers == 1);
    CHECK(s.bytes_sent == 4 * 8 + 8 + 12 + 4);
    sv_comm_dump_log(c, "comm_local_test: ring log sample (not an error)");

    sv_comm *sub = NULL;
    sv_comm *neg_sub = NULL;
    CHECK(sv_comm_split(c, -1, 0, &neg_sub) == SV_ERR_INVALID && neg_sub == NULL);
    CHECK_OK(sv_comm_split(c, 3, 0, &sub));
    CHECK(sv_comm_size(sub) == 1 && sv_comm_rank(sub) == 0);
    sv_comm_destroy(sub);
    sv_comm_destroy(c);

    /* dispatch and create-time errors */
    sv_comm_config bad = {.kind = (sv_comm_kind)7};
    CHECK(sv_comm_create_world(&bad, &c) == SV_ERR_INVALID && c == NULL);
    sv_comm_config neg = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = -1};
    CHECK(sv_comm_create_world(&neg, &c) == SV_ERR_INVALID);
    sv_comm_config nccl = {.kind = SV_COMM_KIND_NCCL};
    sv_status st = sv_comm_create_world(&nccl, &c);
    if (st == SV_OK)
        sv_comm_destroy(c);
    else
        CHECK(strlen(sv_err_msg()) > 0);
#ifdef SV_TEST_NO_NCCL
    CHECK(st == SV_ERR_UNSUPPORTED && strstr(sv_err_msg(), "NCCL") != NULL);
#endif
    sv_comm_config mpi = {.kind = SV_COMM_KIND_MPI};
    st = sv_comm_create_world(&mpi, &c);
#ifdef SV_TEST_HAVE_MPI
    /* MPI is never initialised in this process: a clear error, not a crash */
    CHECK(st == SV_ERR_INVALID && strstr(sv_err_msg(), "MPI") != NULL);
#else
    /* no-MPI build: falls back to the local world of one */
    CHECK(st == SV_OK && strcmp(sv_comm_name(c), "local") == 0);
    sv_comm_destroy(c);
#endif
    /* the launcher's rank count (sv_comm_launched_size): PMI's or Open MPI's count where set, else
     * an srun step's task count; a batch script's own SLURM_NTASKS is not a launch */
    const char *var = NULL;
    unsetenv("PMI_SIZE");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("SLURM_STEP_NUM_TASKS");
    setenv("SLURM_NTASKS", "4", 1);
    CHECK(sv_comm_launched_size(&var) == 1 && var == NULL);
    setenv("SLURM_STEP_NUM_TASKS", "2", 1); /* srun --mpi=none */
    CHECK(sv_comm_launched_size(&var) == 2 && strcmp(var, "SLURM_STEP_NUM_TASKS") == 0);
    setenv("PMI_SIZE", "1", 1); /* mpiexec -n 1 inside a step of 2 tasks: the PMI count wins */
    CHECK(sv_comm_launched_size(&var) == 1 && strcmp(var, "PMI_SIZE") == 0);
    setenv("PMI_SIZE", "3", 1);
    CHECK(sv_comm_launched_size(&var) == 3);
    setenv("PMI_SIZE", "junk", 1);
    CHECK(sv_comm_launched_size(&var) == 1);
    unsetenv("PMI_SIZE");
#ifndef SV_TEST_HAVE_MPI
    /* no-MPI build launched as one of 2 srun tasks: refused, naming the variable */
    st = sv_comm_create_world(&mpi, &c);
    CHECK(st == SV_ERR_UNSUPPORTED && strstr(sv_err_msg(), "SLURM_STEP_NUM_TASKS=2") != NULL);
#endif
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("SLURM_NTASKS");
    printf("comm_local_test OK\n");
    return 0;
}
