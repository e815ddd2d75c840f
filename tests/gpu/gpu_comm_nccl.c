/* NCCL transport on real GPUs: every collective kind on device memory against values computed
 * on the host, bf16 sums, split sub-communicators, and the stream ordering contract (a
 * collective sees compute enqueued before its issue without any host synchronisation; compute
 * enqueued after its wait sees the result). Buffers are written and read through the CUDA
 * backend, whose compute stream the comm orders against.
 *
 * Needs one GPU per rank (NCCL refuses two ranks on one device): exits 77 when there is no
 * usable CUDA device or fewer GPUs than ranks on this node. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fsdp/comm.h"
#include "model/backend/backend.h"

static sv_backend *be;

static float *dev_f32(size_t n) {
    void *p;
    CHECK_OK(sv_be_alloc(be, n * 4, &p));
    return p;
}
static void down(float *h, const float *d, size_t n) { CHECK_OK(sv_be_download(be, h, d, n * 4)); }
static void up(float *d, const float *h, size_t n) { CHECK_OK(sv_be_upload(be, d, h, n * 4)); }
/* d[0..n) = v, written on the compute stream (a device-to-device copy from a staged buffer,
 * enqueued without a host sync, so a collective issued next must order itself after it). */
static void fill(float *d, size_t n, float v) {
    static float *stage;
    static size_t cap;
    if (cap < n) {
        if (stage) sv_be_free(be, stage);
        stage = dev_f32(n);
        cap = n;
    }
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = v;
    up(stage, h, n);
    free(h);
    CHECK_OK(sv_be_copy(be, d, stage, n * 4));
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
    sv_status st = sv_backend_create(&bc, &be);
    int ok = st == SV_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) { /* e.g. fewer GPUs than ranks on this node */
        fprintf(stderr, "rank %d: %s\n", rank, ok ? "a peer has no device" : sv_err_msg());
        MPI_Finalize();
        SKIP("not every rank has its own GPU (%d ranks on this node)", local_size);
    }
    sv_comm_config cc = {
        .kind = SV_COMM_KIND_NCCL, .timeout_s = 60, .backend_stream = sv_be_native_stream(be), .device_index = local};
    sv_comm *c;
    CHECK_OK(sv_comm_create_world(&cc, &c));
    CHECK(sv_comm_rank(c) == rank && sv_comm_size(c) == world);
    CHECK(!strcmp(sv_comm_name(c), "nccl"));
    const size_t n = 1000;
    sv_comm_req req;
    float *h = malloc(n * world * sizeof(float)), *hr = malloc(n * world * sizeof(float));

    /* all_gather; the send buffer is filled on the compute stream right before the issue, with
     * no host sync in between: the comm stream must wait for it. */
    float *send = dev_f32(n), *recv = dev_f32(n * world);
    fill(send, n, 100.0f * rank + 1.0f);
    CHECK_OK(sv_comm_all_gather(c, recv, send, n, SV_COMM_F32, &req));
    CHECK_OK(sv_comm_wait(c, &req));
    CHECK_OK(sv_be_add_f32(be, recv, recv, n * world)); /* compute after wait sees the result (x2) */
    down(hr, recv, n * world);
    for (int q = 0; q < world; q++)
        for (size_t i = 0; i < n; i++) CHECK(hr[q * n + i] == 2.0f * (100.0f * q + 1.0f));

    /* reduce_scatter (sum): rank r contributes (r+1) * j at global index j. */
    float *rs_send = dev_f32(n * world), *rs_recv = dev_f32(n);
    for (size_t j = 0; j < n * world; j++) h[j] = (float)(rank + 1) * (float)(j % 97);
    up(rs_send, h, n * world);
    CHECK_OK(sv_comm_reduce_scatter(c, rs_recv, rs_send, n, SV_COMM_F32, SV_COMM_SUM, &req));
    CHECK_OK(sv_comm_wait(c, &req));
    down(hr, rs_recv, n);
    float tri = (float)world * (world + 1) / 2.0f;
    for (size_t i = 0; i < n; i++) CHECK(hr[i] == tri * (float)((rank * n + i) % 97));

    /* all_reduce max and min */
    fill(send, n, (float)rank);
    CHECK_OK(sv_comm_all_reduce(c, send, n, SV_COMM_F32, SV_COMM_MAX, &req));
    CHECK_OK(sv_comm_wait(c, &req));
    down(hr, send, n);
    for (size_t i = 0; i < n; i++) CHECK(hr[i] == (float)(world - 1));

    /* bf16 sum: ones -> world (exact in bf16 for world <= 256) */
    float *ones = dev_f32(n);
    uint16_t *bf;
    CHECK_OK(sv_be_alloc(be, n * 2, (void **)&bf));
    fill(ones, n, 1.0f);
    CHECK_OK(sv_be_f32_to_bf16(be, bf, ones, n));
    CHECK_OK(sv_comm_all_reduce(c, bf, n, SV_COMM_BF16, SV_COMM_SUM, &req));
    CHECK_OK(sv_comm_wait(c, &req));
    CHECK_OK(sv_be_bf16_to_f32(be, ones, bf, n));
    down(hr, ones, n);
    for (size_t i = 0; i < n; i++) CHECK(hr[i] == (float)world);

    /* broadcast from the last rank */
    fill(send, n, rank == world - 1 ? 42.0f : -1.0f);
    CHECK_OK(sv_comm_broadcast(c, send, n, SV_COMM_F32, world - 1, &req));
    CHECK_OK(sv_comm_wait(c, &req));
    down(hr, send, n);
    for (size_t i = 0; i < n; i++) CHECK(hr[i] == 42.0f);

    CHECK_OK(sv_comm_barrier_sync(c));

    /* host (pageable) buffers are staged through device memory: the trainer's loss all-reduce,
     * the optimizer's norm partials all-gather and full-parameter gathers use them */
    double hsum = 1.5 + rank, hparts[64];
    CHECK_OK(sv_comm_all_reduce_sync(c, &hsum, 1, SV_COMM_F64, SV_COMM_SUM));
    CHECK(hsum == 1.5 * world + world * (world - 1) / 2.0);
    double mine = 10.0 * rank;
    CHECK(world <= 64);
    CHECK_OK(sv_comm_all_gather(c, hparts, &mine, 1, SV_COMM_F64, &req));
    CHECK_OK(sv_comm_wait(c, &req));
    for (int q = 0; q < world; q++) CHECK(hparts[q] == 10.0 * q);

    /* split by parity: a sum of ones is the group size */
    sv_comm *sub;
    CHECK_OK(sv_comm_split(c, rank % 2, rank, &sub));
    int expect = world / 2 + (rank % 2 == 0 ? world % 2 : 0);
    CHECK(sv_comm_size(sub) == expect && sv_comm_rank(sub) == rank / 2);
    fill(send, n, 1.0f);
    CHECK_OK(sv_comm_all_reduce_sync(sub, send, n, SV_COMM_F32, SV_COMM_SUM));
    down(hr, send, n);
    for (size_t i = 0; i < n; i++) CHECK(hr[i] == (float)expect);

    sv_comm_stats s;
    sv_comm_get_stats(c, &s);
    CHECK(s.all_gathers == 1 && s.reduce_scatters == 1 && s.all_reduces == 2 && s.broadcasts == 1);
    sv_comm_destroy(sub);
    sv_comm_destroy(c);
    sv_be_free(be, send), sv_be_free(be, recv), sv_be_free(be, rs_send), sv_be_free(be, rs_recv);
    sv_be_free(be, ones), sv_be_free(be, bf);
    sv_backend_destroy(be);
    free(h), free(hr);
    if (rank == 0) printf("gpu_comm_nccl: %d ranks ok\n", world);
    MPI_Finalize();
    return 0;
}
