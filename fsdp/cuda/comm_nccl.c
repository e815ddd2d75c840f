/* NCCL transport for sv_comm (GPU runs): collectives on device memory, on a dedicated comm
 * stream ordered against the compute backend's stream with events.
 *
 * Ordering (per request slot, two events created once at start-up):
 *   issue: record `ready` on the compute stream (cfg->backend_stream), make the comm stream
 *          wait on it, enqueue the NCCL call on the comm stream, record `done` there. So the
 *          collective sees everything compute enqueued before the issue, and compute enqueued
 *          after the issue runs concurrently with it (this is what makes prefetch overlap).
 *   test:  on the first test of a slot, make the compute stream wait on `done`, so compute
 *          enqueued after the wait sees the result; then poll `done` with cudaEventQuery.
 *          While it is pending, ncclCommGetAsyncError is polled so an asynchronous NCCL error
 *          becomes SV_ERR_COMM at once; comm.c enforces the timeout. A broken communicator
 *          (timeout or error) is torn down with ncclCommAbort, which also frees ranks stuck in
 *          NCCL kernels; a healthy one with ncclCommDestroy.
 * Every NCCL call is issued at once (no chunking), so issue_pending stays NULL.
 *
 * Host buffers (the trainer's loss sum, the optimizer's per-rank norm partials, full-parameter
 * gathers for export) are staged through a per-slot device buffer: copied in on the comm stream
 * before the NCCL call and back out after it, before `done` is recorded. The staging buffer
 * grows on first use of a larger size only, so a training step allocates nothing after its
 * first iteration. Copies from/to pageable memory make the issue block like a synchronous
 * call; those collectives are tiny and waited on at once anyway.
 *
 * bf16 reductions use ncclBfloat16: NCCL adds in fp32 per step but stores bf16 between ring
 * steps, so a world of W ranks rounds up to W-1 times (comm_mpi.c rounds once). Barrier is a
 * one-element all-reduce on a device scratch word. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/log.h"
#include "fsdp/comm_impl.h"
#include "fsdp/cuda/nccl_boot.h"

typedef struct sv_comm_nccl {
    sv_comm base;
    ncclComm_t nccl;
    int device;
    cudaStream_t compute; /* borrowed from the backend */
    cudaStream_t stream;  /* owned comm stream */
    cudaEvent_t ready[SV_COMM_MAX_INFLIGHT], done[SV_COMM_MAX_INFLIGHT];
    int ordered[SV_COMM_MAX_INFLIGHT]; /* compute already waits on done[slot] */
    float *barrier_word;               /* device scratch for barriers */
    void *stage[SV_COMM_MAX_INFLIGHT]; /* device staging for host buffers, per slot */
    size_t stage_cap[SV_COMM_MAX_INFLIGHT];
    int *world_ranks; /* owned; NULL for split communicators */
} sv_comm_nccl;

#define NCCL_OF(c) ((sv_comm_nccl *)(c))

static sv_status nccl_fail(ncclResult_t r, ncclComm_t comm, const char *call) {
    const char *last = comm ? ncclGetLastError(comm) : ncclGetLastError(NULL);
    return SV_FAIL(SV_ERR_COMM, "NCCL error in %s: %s%s%s", call, ncclGetErrorString(r), last && last[0] ? ": " : "",
                   last ? last : "");
}
#define NCCL_TRY(comm, call) \
    do { \
        ncclResult_t r_ = (call); \
        if (r_ != ncclSuccess) return nccl_fail(r_, (comm), #call); \
    } while (0)
#define CUDA_TRY(call) \
    do { \
        cudaError_t e_ = (call); \
        if (e_ != cudaSuccess) return SV_FAIL(SV_ERR_COMM, "CUDA error in %s: %s", #call, cudaGetErrorString(e_)); \
    } while (0)

static sv_status map_dtype(sv_comm_dtype d, ncclDataType_t *out) {
    switch (d) {
    case SV_COMM_F32: *out = ncclFloat32; return SV_OK;
    case SV_COMM_BF16: *out = ncclBfloat16; return SV_OK;
    case SV_COMM_F64: *out = ncclFloat64; return SV_OK;
    case SV_COMM_I64: *out = ncclInt64; return SV_OK;
    case SV_COMM_U8: *out = ncclUint8; return SV_OK;
    }
    return SV_FAIL(SV_ERR_INVALID, "NCCL comm: unknown dtype %d", (int)d);
}
static sv_status map_op(sv_comm_op op, ncclRedOp_t *out) {
    switch (op) {
    case SV_COMM_SUM: *out = ncclSum; return SV_OK;
    case SV_COMM_MAX: *out = ncclMax; return SV_OK;
    case SV_COMM_MIN: *out = ncclMin; return SV_OK;
    }
    return SV_FAIL(SV_ERR_INVALID, "NCCL comm: unknown reduction op %d", (int)op);
}

static void nccl_destroy(sv_comm *c) {
    sv_comm_nccl *n = NCCL_OF(c);
    if (n->nccl) {
        if (c->broken) {
            ncclCommAbort(n->nccl); /* do not wait for peers that may never arrive */
        } else {
            if (n->stream) cudaStreamSynchronize(n->stream);
            ncclCommDestroy(n->nccl);
        }
    }
    for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++) {
        if (n->ready[i]) cudaEventDestroy(n->ready[i]);
        if (n->done[i]) cudaEventDestroy(n->done[i]);
    }
    if (n->barrier_word) cudaFree(n->barrier_word);
    for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++)
        if (n->stage[i]) cudaFree(n->stage[i]);
    if (n->stream) cudaStreamDestroy(n->stream);
    free(n->world_ranks);
    free(n);
}

/* 1 when p is host memory (pageable or pinned) that NCCL cannot use directly. */
static int is_host_ptr(const void *p) {
    if (!p) return 0;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* older runtimes report unregistered host memory as an error */
        return 1;
    }
    return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeUnregistered;
}

static sv_status stage_reserve(sv_comm_nccl *n, int idx, size_t bytes) {
    if (n->stage_cap[idx] >= bytes) return SV_OK;
    if (n->stage[idx]) CUDA_TRY(cudaFree(n->stage[idx]));
    n->stage[idx] = NULL;
    n->stage_cap[idx] = 0;
    CUDA_TRY(cudaMalloc(&n->stage[idx], bytes));
    n->stage_cap[idx] = bytes;
    return SV_OK;
}

static sv_status nccl_issue(sv_comm *c, int idx, int *done) {
    sv_comm_nccl *n = NCCL_OF(c);
    const sv_comm_slot *s = &c->slots[idx];
    *done = 0;
    ncclDataType_t dt = ncclFloat32;
    ncclRedOp_t op = ncclSum;
    if (s->kind != SV_COLL_BARRIER) SV_TRY(map_dtype(s->dt, &dt));
    if (s->kind == SV_COLL_REDUCE_SCATTER || s->kind == SV_COLL_ALL_REDUCE) SV_TRY(map_op(s->op, &op));
    CUDA_TRY(cudaSetDevice(n->device));
    CUDA_TRY(cudaEventRecord(n->ready[idx], n->compute));
    CUDA_TRY(cudaStreamWaitEvent(n->stream, n->ready[idx], 0));

    /* Byte sizes of this rank's send and receive buffers (count is per rank). */
    size_t es = sv_comm_dtype_size(s->dt), per = s->count * es, all = per * (size_t)c->size;
    size_t send_b = 0, recv_b = 0;
    const void *send = s->send;
    void *recv = s->recv;
    switch (s->kind) {
    case SV_COLL_ALL_GATHER: send_b = per, recv_b = all; break;
    case SV_COLL_REDUCE_SCATTER: send_b = all, recv_b = per; break;
    case SV_COLL_ALL_REDUCE:
    case SV_COLL_BROADCAST: recv_b = per; break;
    case SV_COLL_BARRIER: break;
    }
    int host_send = send_b && is_host_ptr(s->send), host_recv = recv_b && is_host_ptr(s->recv);
    if (host_send || host_recv) {
        SV_TRY(stage_reserve(n, idx, send_b + recv_b));
        char *dsend = n->stage[idx], *drecv = dsend + send_b;
        if (send_b) {
            if (host_send)
                CUDA_TRY(cudaMemcpyAsync(dsend, s->send, send_b, cudaMemcpyHostToDevice, n->stream));
            else
                CUDA_TRY(cudaMemcpyAsync(dsend, s->send, send_b, cudaMemcpyDeviceToDevice, n->stream));
            send = dsend;
        }
        if (recv_b && (s->kind == SV_COLL_ALL_REDUCE || s->kind == SV_COLL_BROADCAST))
            CUDA_TRY(cudaMemcpyAsync(drecv, s->recv, recv_b,
                                     host_recv ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, n->stream));
        if (recv_b) recv = drecv;
    }
    switch (s->kind) {
    case SV_COLL_ALL_GATHER: NCCL_TRY(n->nccl, ncclAllGather(send, recv, s->count, dt, n->nccl, n->stream)); break;
    case SV_COLL_REDUCE_SCATTER:
        NCCL_TRY(n->nccl, ncclReduceScatter(send, recv, s->count, dt, op, n->nccl, n->stream));
        break;
    case SV_COLL_ALL_REDUCE: NCCL_TRY(n->nccl, ncclAllReduce(recv, recv, s->count, dt, op, n->nccl, n->stream)); break;
    case SV_COLL_BROADCAST:
        NCCL_TRY(n->nccl, ncclBroadcast(recv, recv, s->count, dt, s->root, n->nccl, n->stream));
        break;
    case SV_COLL_BARRIER:
        NCCL_TRY(n->nccl, ncclAllReduce(n->barrier_word, n->barrier_word, 1, ncclFloat32, ncclSum, n->nccl, n->stream));
        break;
    }
    if (recv != s->recv)
        CUDA_TRY(cudaMemcpyAsync(s->recv, recv, recv_b, host_recv ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice,
                                 n->stream));
    CUDA_TRY(cudaEventRecord(n->done[idx], n->stream));
    n->ordered[idx] = 0;
    return SV_OK;
}

static sv_status nccl_test(sv_comm *c, int idx, int *done) {
    sv_comm_nccl *n = NCCL_OF(c);
    *done = 0;
    if (!n->ordered[idx]) {
        CUDA_TRY(cudaStreamWaitEvent(n->compute, n->done[idx], 0));
        n->ordered[idx] = 1;
    }
    cudaError_t e = cudaEventQuery(n->done[idx]);
    if (e == cudaSuccess) {
        *done = 1;
        return SV_OK;
    }
    if (e != cudaErrorNotReady)
        return SV_FAIL(SV_ERR_COMM, "CUDA error while waiting for a NCCL collective: %s", cudaGetErrorString(e));
    ncclResult_t async = ncclSuccess;
    NCCL_TRY(n->nccl, ncclCommGetAsyncError(n->nccl, &async));
    if (async != ncclSuccess && async != ncclInProgress)
        return nccl_fail(async, n->nccl, "NCCL asynchronous error (ncclCommGetAsyncError)");
    return SV_OK;
}

static sv_status nccl_split(sv_comm *parent, int color, int key, sv_comm **out);

static const sv_comm_ops nccl_ops = {
    .name = "nccl",
    .destroy = nccl_destroy,
    .split = nccl_split,
    .issue = nccl_issue,
    .test = nccl_test,
    .issue_pending = NULL,
};

/* Everything but the NCCL communicator itself. */
static sv_status alloc_common(const sv_comm_config *cfg, int device, sv_comm_nccl **out) {
    *out = NULL;
    if (!cfg->backend_stream)
        return SV_FAIL(SV_ERR_INVALID,
                       "NCCL comm needs the compute stream (sv_comm_config.backend_stream "
                       "= sv_be_native_stream of the CUDA backend)");
    sv_comm_nccl *n = calloc(1, sizeof *n);
    if (!n) return SV_FAIL(SV_ERR_OOM, "NCCL comm: out of host memory");
    n->device = device;
    n->compute = (cudaStream_t)cfg->backend_stream;
    *out = n;
    CUDA_TRY(cudaSetDevice(device));
    CUDA_TRY(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++) {
        CUDA_TRY(cudaEventCreateWithFlags(&n->ready[i], cudaEventDisableTiming));
        CUDA_TRY(cudaEventCreateWithFlags(&n->done[i], cudaEventDisableTiming));
    }
    CUDA_TRY(cudaMalloc((void **)&n->barrier_word, sizeof(float)));
    CUDA_TRY(cudaMemset(n->barrier_word, 0, sizeof(float)));
    return SV_OK;
}

sv_status sv_comm_nccl_create(const sv_comm_config *cfg, sv_comm **out) {
    *out = NULL;
    sv_nccl_boot_info info;
    SV_TRY(sv_nccl_boot_info_get(&info));
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0)
        return SV_FAIL(SV_ERR_UNSUPPORTED, "NCCL comm: no CUDA device on this node (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "device count 0");
    /* device_index >= 0 names the GPU; < 0 picks local rank modulo the node's GPU count. */
    int device = cfg->device_index >= 0 ? cfg->device_index : info.local_rank % ndev;
    if (device >= ndev)
        return SV_FAIL(SV_ERR_INVALID, "NCCL comm: device index %d out of range (%d GPUs on this node)", device, ndev);
    if (info.local_size > ndev)
        SV_WARN("NCCL comm: %d ranks share a node with %d GPUs; ranks will share devices", info.local_size, ndev);
    ncclUniqueId id;
    SV_TRY(sv_nccl_boot_share_id(&info, &id));

    sv_comm_nccl *n;
    sv_status st = alloc_common(cfg, device, &n);
    if (st == SV_OK) {
        ncclResult_t r = ncclCommInitRank(&n->nccl, info.size, id, info.rank);
        if (r != ncclSuccess) {
            n->nccl = NULL;
            st = nccl_fail(r, NULL, "ncclCommInitRank");
        }
    }
    if (st == SV_OK && !(n->world_ranks = malloc((size_t)info.size * sizeof(int))))
        st = SV_FAIL(SV_ERR_OOM, "NCCL comm: out of host memory");
    if (st != SV_OK) {
        if (n) nccl_destroy(&n->base);
        sv_err_frame(__FILE__, __LINE__);
        return st;
    }
    for (int i = 0; i < info.size; i++) n->world_ranks[i] = i;
    sv_comm_base_init(&n->base, &nccl_ops, cfg, info.rank, info.size, "world");
    n->base.world_ranks = n->world_ranks;
    SV_INFO("NCCL comm: %d ranks, rank %d on GPU %d (local rank %d of %d), NCCL %d.%d.%d", info.size, info.rank, device,
            info.local_rank, info.local_size, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
    *out = &n->base;
    return SV_OK;
}

static sv_status nccl_split(sv_comm *parent, int color, int key, sv_comm **out) {
    sv_comm_nccl *p = NCCL_OF(parent);
    *out = NULL;
    sv_comm_nccl *n;
    sv_status st = alloc_common(&parent->cfg, p->device, &n);
    if (st == SV_OK) {
        /* Collective over the parent; the child shares the parent's resources where NCCL can. */
        ncclResult_t r = ncclCommSplit(p->nccl, color, key, &n->nccl, NULL);
        if (r != ncclSuccess) {
            n->nccl = NULL;
            st = nccl_fail(r, p->nccl, "ncclCommSplit");
        } else if (!n->nccl) {
            st = SV_FAIL(SV_ERR_COMM, "ncclCommSplit gave no communicator for color %d", color);
        }
    }
    int rank = 0, size = 0;
    if (st == SV_OK) {
        ncclResult_t r = ncclCommUserRank(n->nccl, &rank);
        if (r == ncclSuccess) r = ncclCommCount(n->nccl, &size);
        if (r != ncclSuccess) st = nccl_fail(r, n->nccl, "ncclCommUserRank/ncclCommCount");
    }
    if (st != SV_OK) {
        if (n) nccl_destroy(&n->base);
        sv_err_frame(__FILE__, __LINE__);
        return st;
    }
    char label[48];
    snprintf(label, sizeof label, "%.20s/split(color=%d)", parent->label, color);
    sv_comm_base_init(&n->base, &nccl_ops, &parent->cfg, rank, size, label);
    n->base.world_ranks = NULL; /* unknown without another exchange; messages then omit them */
    *out = &n->base;
    return SV_OK;
}

int sv_comm_nccl_version(void) {
    int v = 0;
    return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}
