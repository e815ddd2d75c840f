/* For comm implementers only (comm_mpi.c, comm_local.c, cuda/comm_nccl.c): the vtable behind
 * sv_comm and the shared machinery in comm.c. FSDP code includes comm.h, never this file.
 *
 * Division of labour
 * - comm.c owns everything that is the same for every transport: argument checks, the request
 *   pool (SV_COMM_MAX_INFLIGHT slots with sequence numbers, stale-handle detection), the ring
 *   log, stats, the wait loop (poll + backoff + timeout), timeout messages and log dumps, the
 *   "broken" state after a timeout or error, the ordering rule below, and the bookkeeping of
 *   device-side waits (`order`, the `ordered` mask, sv_comm_fence).
 * - An implementation only starts and polls collectives described by a slot.
 *
 * Implementations: comm_mpi.c, comm_local.c, cuda/comm_nccl.c, and comm_sim.c (virtual time: the
 * step-time simulator of `shardvit plan --simulate`, docs/simulate.md).
 *
 * Object layout: an implementation allocates a struct whose FIRST member is `sv_comm` (the
 * base), fills it with sv_comm_base_init(), and casts sv_comm* back to its own type inside its
 * ops. Per-request transport state (MPI_Request arrays, CUDA events) lives in the
 * implementation's struct indexed by slot number [0, SV_COMM_MAX_INFLIGHT) and is set up once at
 * create: nothing is allocated per collective.
 *
 * Ordering rule (why `issue_pending` exists): MPI and NCCL both require every rank to issue
 * collectives on a communicator in the same order. A transport that splits one collective into
 * several library calls and issues them progressively (comm_mpi.c keeps a window of chunks in
 * flight) must never interleave those calls with a later collective, because when the
 * remaining chunks get issued depends on timing and differs between ranks. So comm.c, before it
 * issues a new collective (or splits), polls every slot whose `issue_pending` is true until all
 * its calls are issued. Thus all library calls of collective n precede those of n+1 on every
 * rank. Transports that issue everything at once leave `issue_pending` NULL.
 *
 * Thread model: a communicator is used by one thread at a time (the training thread). */
#ifndef SV_FSDP_COMM_IMPL_H
#define SV_FSDP_COMM_IMPL_H

#include "core/clock.h" /* sv_now_s: every timestamp below */
#include "fsdp/comm.h"

typedef enum sv_comm_coll {
    SV_COLL_ALL_GATHER = 0,
    SV_COLL_REDUCE_SCATTER = 1,
    SV_COLL_ALL_REDUCE = 2,
    SV_COLL_BROADCAST = 3,
    SV_COLL_BARRIER = 4,
} sv_comm_coll;

/* "all_gather", "reduce_scatter", "all_reduce", "broadcast", "barrier". */
const char *sv_comm_coll_name(sv_comm_coll k);
const char *sv_comm_dtype_name(sv_comm_dtype d); /* "f32", "bf16", ... */
const char *sv_comm_op_name(sv_comm_op op);      /* "sum", "max", "min" */

/* One in-flight collective. Written by comm.c before ops->issue; read-only for the
 * implementation. Buffer/count semantics are those of comm.h (count per rank). */
typedef struct sv_comm_slot {
    int completed; /* finished during sv_comm_progress; retired by the wait */
    uint64_t seq;  /* 1, 2, 3, ... per communicator; equals the request handle's seq */
    sv_comm_coll kind;
    void *recv;       /* all_gather, reduce_scatter: output; all_reduce, broadcast: the buffer */
    const void *send; /* all_gather, reduce_scatter: input; NULL otherwise */
    size_t count;
    sv_comm_dtype dt;
    sv_comm_op op; /* reductions only */
    int root;      /* broadcast only */
    int ring_pos;  /* index of this collective's ring-log entry */
    double t_issue;
} sv_comm_slot;

/* Ring-log entry (one per issued collective, the last SV_COMM_RING_LOG kept). */
typedef struct sv_comm_ring_entry {
    uint64_t seq; /* 0 = unused */
    sv_comm_coll kind;
    size_t count;
    sv_comm_dtype dt;
    sv_comm_op op;
    int root;
    double t_issue;    /* seconds since the communicator was created */
    double t_complete; /* < 0 while pending */
    sv_status status;  /* SV_OK, or why it failed */
} sv_comm_ring_entry;

typedef struct sv_comm_ops {
    const char *name; /* "mpi", "local", "nccl" */
    /* Release transport resources and free the object (the base included). Called with no
     * request in flight, or with `broken` set (then pending library requests are abandoned:
     * the process is expected to abort). */
    void (*destroy)(sv_comm *c);
    /* Sub-communicator, MPI_Comm_split semantics; comm.c has already drained issue_pending
     * slots. `color` >= 0. */
    sv_status (*split)(sv_comm *parent, int color, int key, sv_comm **out);
    /* Start the collective in c->slots[slot]. Set *done = 1 if it completed synchronously
     * (the request handle then says "already complete" and the slot is released at once). */
    sv_status (*issue)(sv_comm *c, int slot, int *done);
    /* Non-blocking progress: test (and, for chunked transports, issue further calls); set
     * *done = 1 when every call of the collective completed and the buffers are final. A
     * library error returns SV_ERR_COMM with the library's message. */
    sv_status (*test)(sv_comm *c, int slot, int *done);
    /* Optional (NULL = never): nonzero while the slot still has library calls not yet issued. */
    int (*issue_pending)(const sv_comm *c, int slot);
    /* Optional (NULL = nothing): called once when sv_comm_wait starts waiting for a slot that
     * has not completed. A transport on a virtual clock (comm_sim.c: the step-time simulator)
     * advances the clock to the collective's completion here, so the following `test` says
     * done and the wait lasts exactly the simulated exposed time. Real transports leave it NULL. */
    void (*wait_hint)(sv_comm *c, int slot);
    /* Optional (NULL = the host always waits): device-side completion. Called by sv_comm_wait for
     * a slot that `test` has just reported not done. Set *ordered = 1 after making every op the
     * compute stream runs from now on wait for the collective (cuda/comm_nccl.c:
     * cudaStreamWaitEvent); sv_comm_wait then returns at once and comm.c keeps the slot in
     * `ordered` until a later `test` (sv_comm_progress, sv_comm_fence, a full pool) reports it
     * done. Set *ordered = 0 when the host itself must see the collective finish (host buffers,
     * barriers): comm.c then polls `test` as usual. `test` must never order streams; it only
     * queries. */
    sv_status (*order)(sv_comm *c, int slot, int *ordered);
} sv_comm_ops;

/* Base of every communicator (first member of the implementation's struct). */
struct sv_comm {
    const sv_comm_ops *ops;
    sv_comm_config cfg;
    int rank, size;
    char label[48]; /* "world", "split(color=1)": names the communicator in messages */
    /* Ranks of this communicator in the world communicator (ascending comm rank), so timeout
     * messages can name peers the way the launcher does; NULL when unknown. Owned by the
     * implementation (freed in its destroy). */
    const int *world_ranks;
    int broken;           /* set after a timeout/error: every later call fails with SV_ERR_COMM */
    double t0;            /* creation time (sv_now_s) */
    double last_complete; /* completion time (sv_now_s) of the request retired last */
    uint64_t next_seq;
    uint64_t ring_next; /* total collectives ever logged; entry = ring[ring_next % N] */
    uint32_t busy;      /* bit i set while slots[i] holds an unretired collective */
    /* bit i set while slots[i] holds a collective retired by sv_comm_wait through ops->order
     * (device-side) whose completion the host has not seen yet; the slot is not reused until a
     * `test` says done. Always 0 for transports without `order`. */
    uint32_t ordered;
    sv_comm_slot slots[SV_COMM_MAX_INFLIGHT];
    sv_comm_ring_entry ring[SV_COMM_RING_LOG];
    sv_comm_stats stats;
};

_Static_assert(SV_COMM_MAX_INFLIGHT <= 32, "sv_comm.busy is a 32-bit slot mask");
static inline int sv_comm_slot_busy(const sv_comm *c, int i) { return (int)((c->busy >> i) & 1u); }

/* Fill the base: ops, cfg, rank, size, label; everything else zero. */
void sv_comm_base_init(sv_comm *c, const sv_comm_ops *ops, const sv_comm_config *cfg, int rank, int size,
                       const char *label);
/* Implementation constructors (dispatch targets of sv_comm_create_world).
 * sv_comm_mpi_create: comm_mpi.c in SHARDVIT_MPI=ON builds, comm_mpi_absent.c otherwise.
 * sv_comm_local_create: comm_local.c (always).
 * sv_comm_nccl_create: cuda/comm_nccl.c in CUDA builds, comm_nccl_absent.c (returns
 *   SV_ERR_UNSUPPORTED) otherwise. It should bootstrap by MPI_Bcast of the ncclUniqueId over
 *   MPI_COMM_WORLD, issue on its own comm stream ordered against cfg->backend_stream with
 *   events, implement `test` with cudaEventQuery (a query only), `order` with a stream wait,
 *   and leave `issue_pending` NULL. */
sv_status sv_comm_mpi_create(const sv_comm_config *cfg, sv_comm **out);
sv_status sv_comm_local_create(const sv_comm_config *cfg, sv_comm **out);
sv_status sv_comm_nccl_create(const sv_comm_config *cfg, sv_comm **out);

/* How many ranks the process's launcher started, as its environment says (1: none, or one);
 * *var names the variable it read. The launcher's PMI (`PMI_SIZE`: MPICH's hydra, srun
 * --mpi=pmi2) or Open MPI's count (`OMPI_COMM_WORLD_SIZE`) where set; else Slurm's task count of
 * the srun step (`SLURM_STEP_NUM_TASKS`: srun sets it, a batch script's own shell has none), the
 * case of `srun --mpi=none`, whose tasks get no PMI. A world of 1 where this says more is N
 * copies each training alone: both MPI transports refuse it. */
int sv_comm_launched_size(const char **var);

/* Chunk size in bytes that a chunking transport uses: cfg->chunk_bytes clamped to
 * [64, SV_COMM_CHUNK_BYTES], SV_COMM_CHUNK_BYTES when 0. Every rank must use the same value;
 * comm_mpi.c verifies that at create. */
size_t sv_comm_chunk_bytes(const sv_comm_config *cfg);

#endif
