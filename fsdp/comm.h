/* shardvit comm: nonblocking collectives behind one interface (docs/comm.md).
 *
 * Implementations, chosen at run time from what CMake linked:
 *   comm_mpi.c   MPI (MPICH) on host memory, for the CPU backend. Large reductions are chunked
 *                (<= SV_COMM_CHUNK_BYTES per MPI call: MPICH stalls on tens-of-MB reductions).
 *   comm_local.c world of one process without MPI (SHARDVIT_MPI=OFF builds, unit tests).
 *   cuda/comm_nccl.c NCCL on device memory, ordered against the backend's compute stream.
 *
 * Contract:
 * - Every rank of a communicator issues the identical sequence of collectives (same kinds,
 *   counts, dtypes, order). Each issue returns a request; sv_comm_wait completes it. Requests
 *   come from a fixed pool of SV_COMM_MAX_INFLIGHT slots (no allocation per collective);
 *   issuing with a full pool is a programmer error.
 * - Buffers must stay valid and untouched until the wait returns.
 * - What "the wait returned" guarantees depends on where the collective runs:
 *   MPI, local, and NCCL collectives with a host buffer (or a barrier): the host has seen it
 *   finish; the buffers are final for the host.
 *   NCCL on device buffers: the wait does not block the host. It makes the backend's compute
 *   stream wait for the collective, so every op enqueued on that stream afterwards (including
 *   sv_be_download) sees the result and may reuse the buffers; nothing else may (no host
 *   access to those buffers except through the compute stream). The host learns of the
 *   completion later: sv_comm_progress, sv_comm_fence, or an issue that finds the pool full.
 *   If the host had already seen the collective complete, the wait orders nothing.
 * - sv_comm_progress only queries (it never waits and never orders streams).
 * - sv_comm_fence makes the host wait, under the timeout, for every collective whose wait was
 *   device-side. Call it before a host synchronisation on the compute stream (a download), so a
 *   hung peer becomes SV_ERR_TIMEOUT instead of a host blocked forever inside the device
 *   runtime (fsdp/fsdp_optim.c does so once per optimizer step).
 * - `count` is in elements of `dtype`, per rank: all_gather sends `count` and receives
 *   size*count (rank r's contribution at offset r*count); reduce_scatter sends size*count and
 *   receives the reduced block r (`count` elements); all_reduce is in place.
 * - bf16 reductions (SV_COMM_BF16: uint16 storage) sum in fp32 and round the result to bf16.
 * - A wait or fence that exceeds the communicator's timeout (seconds; 0 = wait forever) fails
 *   with SV_ERR_TIMEOUT after logging the ring log of recent collectives (issue/complete times,
 *   sizes, which are still pending) so a hang is diagnosable; app/ then aborts all ranks. The
 *   timeout counts from the start of that host wait; for a fence it therefore also covers the
 *   device work queued ahead of the collectives (up to one step's compute on a GPU).
 * - A failed collective returns SV_ERR_COMM with the library's message. */
#ifndef SV_FSDP_COMM_H
#define SV_FSDP_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define SV_COMM_MAX_INFLIGHT 16
#define SV_COMM_CHUNK_BYTES (16u << 20)
#define SV_COMM_RING_LOG 64

typedef enum sv_comm_dtype {
    SV_COMM_F32 = 0,
    SV_COMM_BF16 = 1, /* uint16 storage */
    SV_COMM_F64 = 2,
    SV_COMM_I64 = 3,
    SV_COMM_U8 = 4,
} sv_comm_dtype;
size_t sv_comm_dtype_size(sv_comm_dtype d);

typedef enum sv_comm_op { SV_COMM_SUM = 0, SV_COMM_MAX = 1, SV_COMM_MIN = 2 } sv_comm_op;

typedef enum sv_comm_kind { SV_COMM_KIND_MPI = 0, SV_COMM_KIND_LOCAL = 1, SV_COMM_KIND_NCCL = 2 } sv_comm_kind;

typedef struct sv_comm sv_comm; /* opaque */

/* A request handle: a slot in the communicator's pool plus a sequence number (so waiting on a
 * stale handle is detected). `slot < 0` means "already complete" (e.g. a world-1 no-op). */
typedef struct sv_comm_req {
    int slot;
    uint64_t seq;
} sv_comm_req;

/* Per-communicator counters (collective counts per step are asserted in tests). */
typedef struct sv_comm_stats {
    uint64_t all_gathers, reduce_scatters, all_reduces, broadcasts, barriers;
    uint64_t bytes_sent; /* payload bytes this rank contributed */
    double wait_seconds; /* time spent blocked inside sv_comm_wait and sv_comm_fence */
} sv_comm_stats;

/* MPI world communicator. MPI must already be initialised by app/ (MPI_Init_thread with
 * MPI_THREAD_FUNNELED or better); the comm does not own MPI's lifetime.
 * `backend_stream`: the compute stream for NCCL (NULL otherwise). */
typedef struct sv_comm_config {
    sv_comm_kind kind;
    double timeout_s;     /* 0 = no timeout */
    void *backend_stream; /* NCCL only: cudaStream_t of the compute backend */
    int device_index;     /* NCCL only */
    /* MPI only: bytes per MPI call of a chunked collective; 0 = SV_COMM_CHUNK_BYTES, else clamped
     * to [64, SV_COMM_CHUNK_BYTES] (app/ sets it from SHARDVIT_COMM_CHUNK_BYTES, which tests and
     * benchmarks use to exercise the chunked paths). Every rank must give the same value;
     * creating the communicator checks that. Split communicators inherit it. */
    size_t chunk_bytes;
} sv_comm_config;

sv_status sv_comm_create_world(const sv_comm_config *cfg, sv_comm **out);
/* Split into sub-communicators (MPI_Comm_split semantics; collective over `parent`). Ranks with
 * the same color form one group, ordered by key. Used for hybrid_shard. */
sv_status sv_comm_split(sv_comm *parent, int color, int key, sv_comm **out);
void sv_comm_destroy(sv_comm *c);

int sv_comm_rank(const sv_comm *c);
int sv_comm_size(const sv_comm *c);
const char *sv_comm_name(const sv_comm *c); /* "mpi", "local", "nccl" */
/* The NCCL library this process loaded (ncclGetVersion: major*10000 + minor*100 + patch for NCCL
 * >= 2.9), or 0 when the build has no NCCL transport. */
int sv_comm_nccl_version(void);

sv_status sv_comm_all_gather(sv_comm *c, void *recv, const void *send, size_t count, sv_comm_dtype dt,
                             sv_comm_req *req);
sv_status sv_comm_reduce_scatter(sv_comm *c, void *recv, const void *send, size_t count, sv_comm_dtype dt,
                                 sv_comm_op op, sv_comm_req *req);
sv_status sv_comm_all_reduce(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, sv_comm_op op, sv_comm_req *req);
sv_status sv_comm_broadcast(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, int root, sv_comm_req *req);
sv_status sv_comm_barrier(sv_comm *c, sv_comm_req *req);
sv_status sv_comm_wait(sv_comm *c, sv_comm_req *req);

/* Drive in-flight collectives without blocking (MPI makes progress on nonblocking collectives
 * only inside MPI calls): tests every pending request once and issues queued chunks. The FSDP
 * engine calls it between layer ops so a prefetched all-gather or a reduce-scatter advances
 * while compute runs. A request completed here is retired by its sv_comm_wait as usual (which
 * then orders nothing on the device). Tests also the collectives whose wait was device-side
 * and releases their slots when done. A query only: it never blocks the host or a stream. */
sv_status sv_comm_progress(sv_comm *c);

/* Host wait, under the communicator's timeout, until every collective whose sv_comm_wait was
 * device-side (NCCL on device buffers) has completed; a no-op on transports whose waits are
 * host waits (MPI, local) and when there are none. Timeout or failure: as sv_comm_wait (the
 * ring log is dumped, the communicator is broken). sv_comm_destroy fences a healthy
 * communicator itself. */
sv_status sv_comm_fence(sv_comm *c);
/* As sv_comm_fence, for the collectives with sequence number <= seq only (those issued up to
 * the moment sv_comm_issued returned seq): what device work enqueued by then can wait on. */
sv_status sv_comm_fence_to(sv_comm *c, uint64_t seq);
/* Sequence number of the latest collective issued on c (0: none yet). */
uint64_t sv_comm_issued(const sv_comm *c);

/* When (CLOCK_MONOTONIC seconds, as sv_now_s) the request retired by the latest sv_comm_wait
 * actually completed: earlier than the wait when sv_comm_progress saw it finish. Traces use it
 * to show a collective's real span rather than issue-to-wait. After a device-side wait the host
 * does not know yet; it is then the time of the wait. */
double sv_comm_last_complete_time(const sv_comm *c);

/* Blocking conveniences: issue + wait. */
sv_status sv_comm_all_reduce_sync(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, sv_comm_op op);
sv_status sv_comm_broadcast_sync(sv_comm *c, void *buf, size_t count, sv_comm_dtype dt, int root);
sv_status sv_comm_barrier_sync(sv_comm *c);

void sv_comm_get_stats(const sv_comm *c, sv_comm_stats *out);
void sv_comm_reset_stats(sv_comm *c);
/* Write the ring log (most recent SV_COMM_RING_LOG collectives) through the error log. */
void sv_comm_dump_log(const sv_comm *c, const char *reason);

#endif
