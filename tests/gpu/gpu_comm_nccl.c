/* NCCL transport on real GPUs: the shared comm body (tests/comm/comm_body.h: every collective
 * kind on device memory against values computed on the host, bf16 sums, host buffers, requests
 * in flight out of order, a dependent chain longer than the request pool, a split, and the
 * stream ordering contract), over NCCL with the CUDA backend, whose compute stream the comm
 * orders against. With two or more ranks also the timing of device-side waits
 * (check_device_side_waits).
 *
 * Needs one GPU per rank (NCCL refuses two ranks on one device): exits 77 when there is no
 * usable CUDA device or a node has more ranks than GPUs. Any other failure to create the CUDA
 * backend (one rank, one GPU, and the device cannot be used) is an error: exit 1 with the
 * backend's message. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "comm/comm_body.h"
#include "fsdp/comm.h"
#include "model/backend/backend.h"
#include "model/backend/gpu_info.h"

/* The CUDA devices this process sees (sv_gpu_info_query: present for devices 0 .. count-1). */
static int gpu_count(void) {
    int n = 0;
    for (sv_gpu_info gi; n < 1024; n++) {
        sv_gpu_info_query(n, &gi);
        if (!gi.present) break;
    }
    return n;
}

/* Two or more ranks: rank 1 issues an all-reduce `late` seconds after rank 0, so rank 0's stays
 * pending that long. On rank 0: sv_comm_progress only queries (compute enqueued after 100
 * progress calls completes while the collective is pending), sv_comm_wait does not block the
 * host, and the host waits in sv_comm_fence until rank 1 has issued. Then the result is
 * checked. */
static void check_device_side_waits(sv_comm *c, sv_backend *be, int rank, int world) {
    if (world < 2) {
        if (rank == 0) printf("gpu_comm_nccl: device-side wait timing needs 2 ranks (2 GPUs): not checked\n");
        return;
    }
    const double late = 1.0;
    const size_t n = 4096;
    float *x, *y, *h = malloc(n * sizeof(float));
    CHECK(h != NULL);
    CHECK_OK(sv_be_alloc(be, n * 4, (void **)&x));
    CHECK_OK(sv_be_alloc(be, n * 4, (void **)&y));
    for (size_t i = 0; i < n; i++) h[i] = 1.0f;
    CHECK_OK(sv_be_upload(be, x, h, n * 4));
    CHECK_OK(sv_be_upload(be, y, h, n * 4));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    while (rank == 1 && MPI_Wtime() - t0 < late) usleep(1000);
    sv_comm_req q;
    CHECK_OK(sv_comm_all_reduce(c, x, n, SV_COMM_F32, SV_COMM_SUM, &q));
    if (rank == 0) {
        for (int i = 0; i < 100; i++) CHECK_OK(sv_comm_progress(c));
        CHECK_OK(sv_be_add_f32(be, y, y, n));
        CHECK_OK(sv_be_sync(be));
        CHECK(MPI_Wtime() - t0 < 0.5 * late); /* progress did not order compute after it */
        CHECK_OK(sv_comm_wait(c, &q));
        CHECK(MPI_Wtime() - t0 < 0.5 * late); /* the wait did not block the host */
        CHECK_OK(sv_comm_fence(c));
        CHECK(MPI_Wtime() - t0 >= 0.5 * late); /* the fence did */
    } else {
        CHECK_OK(sv_comm_wait(c, &q));
        CHECK_OK(sv_comm_fence(c));
    }
    CHECK_OK(sv_be_download(be, h, x, n * 4));
    for (size_t i = 0; i < n; i++) CHECK(h[i] == (float)world);
    CHECK_OK(sv_be_download(be, h, y, n * 4));
    for (size_t i = 0; i < n; i++) CHECK(h[i] == 2.0f);
    sv_be_free(be, x);
    sv_be_free(be, y);
    free(h);
}

int main(int argc, char **argv) {
    int provided, rank, world;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm node;
    int local, local_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    /* Every rank decides the same way (same node view), so all skip or none does. */
    int usable = sv_backend_available(SV_DEVICE_CUDA);
    int all_usable = 0;
    MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_usable) {
        MPI_Finalize();
        SKIP("no usable CUDA device");
    }
    sv_backend_config bc = {.device = SV_DEVICE_CUDA, .compute_dtype = SV_BF16, .device_index = local};
    sv_backend *be = NULL;
    sv_status st = sv_backend_create(&bc, &be);
    int ok = st == SV_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        /* Skipped only where a node has more ranks than GPUs; anything else is the backend's
         * failure on a rank that has its own GPU. */
        char why[512];
        snprintf(why, sizeof why, "%s", ok ? "" : sv_err_msg());
        int gpus = gpu_count();
        int crowded = local_size > gpus, any_crowded = 0;
        MPI_Allreduce(&crowded, &any_crowded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (ok) sv_backend_destroy(be);
        MPI_Finalize();
        if (any_crowded) {
            if (!ok) fprintf(stderr, "rank %d: %s\n", rank, why);
            SKIP("not every rank has its own GPU (%d ranks, %d GPUs on this node)", local_size, gpus);
        }
        if (ok)
            fprintf(stderr, "gpu_comm_nccl: rank %d: another rank could not create its CUDA backend\n", rank);
        else
            fprintf(stderr, "gpu_comm_nccl: error: rank %d (device %d, %d GPU(s) on this node): the CUDA backend: %s\n",
                    rank, local, gpus, why);
        return 1;
    }
    sv_comm_config cc = {
        .kind = SV_COMM_KIND_NCCL, .timeout_s = 60, .backend_stream = sv_be_native_stream(be), .device_index = local};
    sv_comm *c;
    CHECK_OK(sv_comm_create_world(&cc, &c));
    CHECK(sv_comm_rank(c) == rank && sv_comm_size(c) == world);
    CHECK(!strcmp(sv_comm_name(c), "nccl"));
    uint64_t issued = comm_body_run(c, be);
    check_device_side_waits(c, be, rank, world);
    sv_comm_destroy(c);
    sv_backend_destroy(be);
    if (rank == 0) printf("gpu_comm_nccl: %d ranks, %llu collectives ok\n", world, (unsigned long long)issued);
    MPI_Finalize();
    return 0;
}
