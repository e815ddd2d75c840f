/* NCCL transport for sv_comm (GPU runs): collectives on device memory, on a dedicated comm
 * stream ordered against the compute backend's stream with events.
 *
 * Ordering (per request slot, two events created once at start-up):
 *   issue: record `ready` on the compute stream (cfg->backend_stream), make the comm stream
 *          wait on it, enqueue the NCCL call on the comm stream, record `done` there. So the
 *          collective sees everything compute enqueued before the issue, and compute enqueued
 *          after the issue runs concurrently with it (this is what makes prefetch overlap).
 *          A collective on host buffers only reads and writes host memory: it does not wait
 *          for compute (no `ready`), so e.g. the trainer's loss all-reduce never waits for the
 *          optimizer kernels queued before it.
 *   test:  a query only: cudaEventQuery on `done`, and while it is pending
 *          ncclCommGetAsyncError, so an asynchronous NCCL error becomes SV_ERR_COMM at once.
 *          It never orders streams: sv_comm_progress calls it after every layer op, and the
 *          compute of unit u must not wait for the prefetch of unit u+1.
 *   order: sv_comm_wait on a collective not yet seen complete: the compute stream waits on
 *          `done` (cudaStreamWaitEvent) and the host returns at once; compute enqueued after the
 *          wait sees the result. Collectives with a host buffer, and barriers, must complete on
 *          the host: order declines them and comm.c polls `test` under the timeout.
 *   comm.c keeps device-waited slots until a `test` reports them done; the host checks them
 *   under the timeout in sv_comm_fence (the FSDP optimizer step fences before its one host
 *   synchronisation) and when the request pool is full. A broken communicator (timeout or
 *   error) is torn down with ncclCommAbort, which also frees ranks stuck in NCCL kernels; a
 *   healthy one with ncclCommDestroy.
 * Every NCCL call is issued at once (no chunking), so issue_pending stays NULL.
 *
 * Host buffers (the trainer's loss sum, LAMB's per-tensor norm partials, full-parameter gathers
 * for export) are staged per slot through pinned host memory and a device buffer: at issue the
 * input is copied (host memcpy) into the pinned stage and from there to the device stage on the
 * comm stream, the NCCL call runs on the device stage, the output goes back to the pinned stage
 * on the comm stream, and the `test` that sees `done` copies it into the caller's buffer. So no
 * CUDA call blocks on pageable memory, and a hung peer surfaces as SV_ERR_TIMEOUT of the wait.
 * Both stages grow on first use of a larger size only, so a training step allocates nothing
 * after its first iteration.
 *
 * bf16 reductions use ncclBfloat16: NCCL adds in fp32 per step but stores bf16 between ring
 * steps, so a world of W ranks rounds up to W-1 times (comm_mpi.c rounds once). Barrier is a
 * one-element all-reduce on a device scratch word. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/gpus.h"
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
    float *barrier_word; /* device scratch for barriers */
    /* Staging of host buffers, per slot: device and pinned host blocks of the same capacity,
     * laid out as [send bytes | recv bytes]. */
    void *stage[SV_COMM_MAX_INFLIGHT], *hstage[SV_COMM_MAX_INFLIGHT];
    size_t stage_cap[SV_COMM_MAX_INFLIGHT];
    int host_wait[SV_COMM_MAX_INFLIGHT];    /* the host must see it finish: host buffer or barrier */
    size_t out_bytes[SV_COMM_MAX_INFLIGHT]; /* > 0: copy this many bytes from hstage + out_off */
    size_t out_off[SV_COMM_MAX_INFLIGHT];   /* to the slot's host recv once `done` is seen */
    int *world_ranks;                       /* owned; NULL for split communicators */
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
        if (e_ != cudaSuccess) { \
            cudaGetLastError(); /* cleared: the backend's next kernel launch must not report it */ \
            return SV_FAIL(SV_ERR_COMM, "CUDA error in %s: %s", #call, cudaGetErrorString(e_)); \
        } \
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
        if (n->stage[i]) cudaFree(n->stage[i]);
        if (n->hstage[i]) cudaFreeHost(n->hstage[i]);
    }
    if (n->barrier_word) cudaFree(n->barrier_word);
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

/* Grow slot idx's device and pinned stages to `bytes` (only ever grows; the slot is idle). */
static sv_status stage_reserve(sv_comm_nccl *n, int idx, size_t bytes) {
    if (n->stage_cap[idx] >= bytes) return SV_OK;
    if (n->stage[idx]) CUDA_TRY(cudaFree(n->stage[idx]));
    if (n->hstage[idx]) CUDA_TRY(cudaFreeHost(n->hstage[idx]));
    n->stage[idx] = n->hstage[idx] = NULL;
    n->stage_cap[idx] = 0;
    CUDA_TRY(cudaMalloc(&n->stage[idx], bytes));
    CUDA_TRY(cudaMallocHost(&n->hstage[idx], bytes));
    n->stage_cap[idx] = bytes;
    return SV_OK;
}

/* Byte sizes of this rank's send and receive buffers of slot s (count is per rank). */
static void buffer_bytes(const sv_comm *c, const sv_comm_slot *s, size_t *send_b, size_t *recv_b) {
    size_t per = s->count * sv_comm_dtype_size(s->dt), all = per * (size_t)c->size;
    *send_b = *recv_b = 0;
    switch (s->kind) {
    case SV_COLL_ALL_GATHER: *send_b = per, *recv_b = all; break;
    case SV_COLL_REDUCE_SCATTER: *send_b = all, *recv_b = per; break;
    case SV_COLL_ALL_REDUCE:
    case SV_COLL_BROADCAST: *recv_b = per; break;
    case SV_COLL_BARRIER: break;
    }
}

/* Host buffers of slot idx into its stages: host input is copied into the pinned stage here and
 * to the device stage on the comm stream; *send / *recv then point into the device stage. The
 * host output is copied back by nccl_test (out_bytes / out_off). */
static sv_status stage_in(sv_comm_nccl *n, int idx, size_t send_b, size_t recv_b, int host_send, int host_recv,
                          const void **send, void **recv) {
    const sv_comm_slot *s = &n->base.slots[idx];
    SV_TRY(stage_reserve(n, idx, send_b + recv_b));
    char *d = n->stage[idx], *h = n->hstage[idx];
    if (host_send) {
        memcpy(h, s->send, send_b);
        CUDA_TRY(cudaMemcpyAsync(d, h, send_b, cudaMemcpyHostToDevice, n->stream));
        *send = d;
    }
    if (host_recv) {
        if (s->kind == SV_COLL_ALL_REDUCE || s->kind == SV_COLL_BROADCAST) { /* in place: also the input */
            memcpy(h + send_b, s->recv, recv_b);
            CUDA_TRY(cudaMemcpyAsync(d + send_b, h + send_b, recv_b, cudaMemcpyHostToDevice, n->stream));
        }
        *recv = d + send_b;
        n->out_off[idx] = send_b;
    }
    return SV_OK;
}

/* The NCCL call of slot s on the comm stream, on the (possibly staged) buffers. */
static sv_status nccl_call(sv_comm_nccl *n, const sv_comm_slot *s, const void *send, void *recv) {
    ncclDataType_t dt = ncclFloat32;
    ncclRedOp_t op = ncclSum;
    if (s->kind != SV_COLL_BARRIER) SV_TRY(map_dtype(s->dt, &dt));
    if (s->kind == SV_COLL_REDUCE_SCATTER || s->kind == SV_COLL_ALL_REDUCE) SV_TRY(map_op(s->op, &op));
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
    return SV_OK;
}

static sv_status nccl_issue(sv_comm *c, int idx, int *done) {
    sv_comm_nccl *n = NCCL_OF(c);
    const sv_comm_slot *s = &c->slots[idx];
    *done = 0;
    CUDA_TRY(cudaSetDevice(n->device));
    size_t send_b, recv_b;
    buffer_bytes(c, s, &send_b, &recv_b);
    int host_send = send_b && is_host_ptr(s->send), host_recv = recv_b && is_host_ptr(s->recv);
    int dev_send = send_b && !host_send, dev_recv = recv_b && !host_recv;
    /* Device buffers (and barriers) follow the compute enqueued before the issue. */
    if (dev_send || dev_recv || s->kind == SV_COLL_BARRIER) {
        CUDA_TRY(cudaEventRecord(n->ready[idx], n->compute));
        CUDA_TRY(cudaStreamWaitEvent(n->stream, n->ready[idx], 0));
    }
    n->host_wait[idx] = host_send || host_recv || s->kind == SV_COLL_BARRIER;
    n->out_bytes[idx] = 0;
    const void *send = s->send;
    void *recv = s->recv;
    if (host_send || host_recv) SV_TRY(stage_in(n, idx, send_b, recv_b, host_send, host_recv, &send, &recv));
    SV_TRY(nccl_call(n, s, send, recv));
    if (host_recv) {
        CUDA_TRY(
            cudaMemcpyAsync((char *)n->hstage[idx] + n->out_off[idx], recv, recv_b, cudaMemcpyDeviceToHost, n->stream));
        n->out_bytes[idx] = recv_b;
    }
    CUDA_TRY(cudaEventRecord(n->done[idx], n->stream));
    return SV_OK;
}

/* A query: never waits and never orders streams (sv_comm_progress calls it after every op). */
static sv_status nccl_test(sv_comm *c, int idx, int *done) {
    sv_comm_nccl *n = NCCL_OF(c);
    *done = 0;
    cudaError_t e = cudaEventQuery(n->done[idx]);
    if (e == cudaSuccess) {
        if (n->out_bytes[idx]) { /* staged host output: now final in the pinned stage */
            memcpy(c->slots[idx].recv, (const char *)n->hstage[idx] + n->out_off[idx], n->out_bytes[idx]);
            n->out_bytes[idx] = 0;
        }
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

/* sv_comm_wait's device-side completion: the compute stream waits on `done`, the host does not.
 * Declined for collectives the host must see finish (host buffers, barriers). */
static sv_status nccl_order(sv_comm *c, int idx, int *ordered) {
    sv_comm_nccl *n = NCCL_OF(c);
    *ordered = 0;
    if (n->host_wait[idx]) return SV_OK;
    CUDA_TRY(cudaStreamWaitEvent(n->compute, n->done[idx], 0));
    *ordered = 1;
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
    .order = nccl_order,
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
    /* on the comm stream (non-blocking: the legacy default stream's cudaMemset does not order
     * against it), finished before the communicator is used */
    CUDA_TRY(cudaMemsetAsync(n->barrier_word, 0, sizeof(float), n->stream));
    CUDA_TRY(cudaStreamSynchronize(n->stream));
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
    /* device_index >= 0: the rank's index among the node's ranks (the backend's rule); < 0: the
     * node-local rank MPI reports */
    const int local = cfg->device_index >= 0 ? cfg->device_index : info.local_rank;
    const int device = sv_gpu_for_local_rank(local, ndev);
    if (device < 0)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "NCCL comm: no CUDA device for local rank %d: this process sees %d devices (start at most %d "
                       "ranks per node, or bind one GPU to each rank)",
                       local, ndev,
                       ndev); /* one rank's failure: exit 1 aborts the others (not stuck in the id broadcast) */
    /* two ranks of a node on one GPU (each sees one device, but the same one): refused by every
     * rank of the node alike, before NCCL's own duplicate-GPU error */
    struct cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess)
        return SV_FAIL(SV_ERR_BACKEND, "NCCL comm: cudaGetDeviceProperties: %s", cudaGetErrorString(e));
    unsigned char(*uuids)[16] = malloc((size_t)info.local_size * 16);
    if (!uuids) return SV_FAIL(SV_ERR_OOM, "NCCL comm: out of host memory");
    sv_status bst = sv_nccl_boot_node_uuids(&info, (const unsigned char *)prop.uuid.bytes, uuids);
    int sa = 0, sb = 0,
        shared = bst == SV_OK && sv_gpu_shared((const unsigned char(*)[16])uuids, info.local_size, &sa, &sb);
    free(uuids);
    if (bst != SV_OK) return bst;
    if (shared)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "NCCL comm: local ranks %d and %d of this node would share one GPU (%s): start at most one rank "
                       "per GPU, or bind one GPU to each rank",
                       sa, sb, prop.name);
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
