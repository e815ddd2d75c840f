/* A communicator on a virtual clock: the network half of the step-time simulator
 * (`shardvit plan --simulate`, docs/simulate.md). It moves no data. Each collective gets a
 * completion time from an alpha-beta model of the link its group crosses, and comm.c's wait
 * (through the transport's wait_hint) advances the clock to it, so the engine's own schedule,
 * run on this communicator and the virtual-time backend (model/backend/sim/sim_backend.h),
 * produces a simulated timeline, exposed-communication time and collective counts.
 *
 * Model (nccl-tests' definitions: busbw = algbw x factor):
 *   all_gather / reduce_scatter (ring): t = base + (n-1) a + S (n-1)/n / bw
 *   all_reduce: the faster of ring  base + 2(n-1) a + 2 S (n-1)/n / bw
 *                           and tree base + 2 ceil(log2 n) a + 2 S / bw
 *   broadcast (pipelined ring):       t = base + (n-1) a + S / bw
 *   barrier:                          t = base + 2 ceil(log2 n) a
 * S = bytes of the full buffer (all_gather's output, reduce_scatter's input, the all_reduce /
 * broadcast buffer); n = group size. A group inside one node uses the intra-node link (a, bw =
 * per-rank bus bandwidth). A group that spans nodes is bounded by the nodes' network: its ring
 * crosses every node boundary, so bw = min(intra bw, node NIC bandwidth x g / ranks_per_node),
 * where g = the group's ranks per node (the groups of one kind communicate at the same time and
 * share the node's NICs: full_shard over all ranks gets all of them, a hybrid_shard replica
 * group with one rank per node gets one node's share), and a = the inter-node latency.
 * How collectives in flight share a link (sv_sim_fabric, below). With progress_s > 0 the
 * collectives of one communicator move in issue order, the head of the queue only in progress
 * polls and waits (see sv_sim_link.progress_s). On a self-progressing link (progress_s = 0) a
 * collective is a transfer of `work` seconds (its bandwidth term; the whole time, latency
 * included, on a serial link) followed by its latency terms, and the link serves the transfers
 * in flight either
 *   - serially (shared = 0): one communicator's collectives one at a time in issue order, as
 *     NCCL's stream runs them; different communicators do not contend (true when they use
 *     different links, as hybrid_shard's intra-node shard groups and inter-node replica groups
 *     do), or
 *   - by fair share (shared = 1): the k transfers in flight on the link, whatever their
 *     communicator, each move at 1/k of its rate (processor sharing), as MPI's nonblocking
 *     collectives over TCP do: each is a set of messages in the kernel's socket buffers at
 *     once. The ring collectives load every direction of a rank's full-duplex link equally
 *     (each rank sends as much as it receives), so one shared server per link stands for both
 *     directions.
 * Token bucket (burst_bytes > 0, peak_Bps > bw_Bps): the link moves peak / bw times faster
 * while its bucket holds tokens; tokens are seconds of transfer at the rate, the bucket holds
 * burst_bytes / bw of them, drains by what the link moves beyond its rate and refills at the
 * rate while it moves less (idle, between collectives); it starts full.
 * Transport CPU cost (cpu_s_per_byte > 0): a transfer costs the rank that CPU time per byte it
 * sends or receives over the link (the kernel's TCP/IP stack and socket copies run on the rank's
 * cores); while an op computes, the transfers then moving take that time from it: an op of t
 * seconds lasts until t seconds of its threads' time are left over after the transport's share
 * (sv_sim_fabric_op_seconds). Time spent blocked in a wait costs nothing (the rank only spins).
 *
 * The simulated process is one rank standing for all of them: ranks run the same schedule on
 * the same shapes (SPMD), so every rank issues a collective at the same simulated time and it
 * completes at the model's time. Stragglers and jitter are not modelled. */
#ifndef SV_FSDP_COMM_SIM_H
#define SV_FSDP_COMM_SIM_H

#include "fsdp/comm.h"

typedef struct sv_sim_link {
    double alpha_s; /* latency per ring step (one hop) */
    /* Small messages (MPI's eager protocol: the data leaves with the first packet, no
     * rendezvous handshake): a collective of at most small_bytes (its full buffer, S) pays
     * small_alpha_s per step instead of alpha_s. 0 = one regime (alpha_s for every size). */
    double small_alpha_s, small_bytes;
    double bw_Bps; /* intra: per-rank bus bandwidth; inter: one node's network bandwidth */
    /* reductions (reduce_scatter, all_reduce) over this link run at bw x reduce_factor: 1 (or
     * 0: unset) where the adds are free (NCCL), < 1 on CPU transports, where the rank's core
     * adds (MPICH over shared memory reduce_scatters at a fraction of its all_gather bandwidth) */
    double reduce_factor;
    /* 0: collectives over this link progress by themselves (NCCL on its own stream, GPUs' copy
     * engines, the kernel's TCP sockets draining their buffers): a collective completes at its
     * start + the model's time. > 0: a CPU transport where a nonblocking collective moves only
     * while its rank is inside an MPI call and the rank's own core does the copying (MPI over
     * shared memory): each progress poll the engine makes between layer ops (sv_comm_progress)
     * moves up to `progress_s` seconds of the collective's transfer and takes that long, and a
     * wait moves the rest at full speed. A communicator whose group spans nodes uses the
     * inter-node link's value, else the intra-node one's. */
    double progress_s;
    /* self-progressing links: 1 = the collectives in flight share the bandwidth (fair share,
     * MPI's nonblocking collectives over TCP); 0 = one communicator's run one at a time in issue
     * order (NCCL's stream). See the model above. */
    int shared;
    /* CPU seconds a rank spends per byte it sends or receives over this link (the kernel's
     * TCP/IP stack and the socket copies run on its cores), taken from its compute while its
     * transfers move (see above); 0 = free (NCCL, RDMA, copy engines). */
    double cpu_s_per_byte;
    /* a token bucket in front of a self-progressing link (a rate limiter: tc's tbf, a cloud
     * instance's bandwidth allowance): after the link idles, up to burst_bytes each way leave at
     * peak_Bps; the bucket refills at bw_Bps. 0 = none (a plain link of rate bw_Bps) */
    double burst_bytes, peak_Bps;
} sv_sim_link;

typedef struct sv_sim_net {
    sv_sim_link intra, inter;
    double base_s;      /* fixed cost of every collective (launch, protocol set-up) */
    int ranks_per_node; /* >= 1 */
    /* Oversubscribed CPU nodes (more ranks x threads than cores, time-shared by the kernel): a
     * collective cannot start before every rank of its group has arrived, and the last one may
     * be waiting for a core while the others spin in their waits. Each collective starts this
     * much after its issue (the simulator sets (ranks x threads / cores - 1) x the scheduler's
     * time slice; 0 otherwise). */
    double sched_lag_s;
    /* Oversubscribed, the other half: a collective that progresses while the ranks compute (the
     * rank runs an op between its issue and its completion) moves one round of its algorithm
     * (sv_sim_coll_parts' rounds: a ring step) each time the partner rank gets a core back, so
     * it completes no earlier than issue + rounds x this: the scheduler's time-sharing quantum
     * (app/sched_quantum.h; 0 = no floor). One issued and waited for at once is a
     * synchronisation the ranks meet together: sched_lag_s only. */
    double sched_round_s;
} sv_sim_net;

/* Shape of one communicator's group in the simulated world. */
typedef struct sv_sim_group {
    int size;           /* ranks in the group */
    int rank;           /* this rank's index in it */
    int nodes;          /* distinct nodes its ranks sit on */
    int ranks_per_node; /* the group's ranks on one node (size / nodes) */
} sv_sim_group;

/* Seconds one collective takes on `net` for group `g` (the model above). `bytes`: S. */
double sv_sim_coll_seconds(const sv_sim_net *net, const sv_sim_group *g, int kind, size_t bytes);
/* The same split into its latency terms (base + the alpha terms) and its bandwidth term, and the
 * bytes one rank sends plus receives for it over the link the group uses (a group spanning nodes:
 * its share of the ring hops that cross a node boundary, nodes / n of them). rounds (nullable):
 * the sequential message rounds of the algorithm, one per alpha term (ring all_gather,
 * reduce_scatter, broadcast: n - 1; all_reduce: 2 (n - 1) ring or 2 ceil(log2 n) tree, whichever
 * the model picked; barrier 2 ceil(log2 n); 0 for a group of one). */
void sv_sim_coll_parts(const sv_sim_net *net, const sv_sim_group *g, int kind, size_t bytes, double *latency_s,
                       double *transfer_s, double *net_bytes, int *rounds);

/* The links of a simulated world and the collectives in flight on them: every simulated
 * communicator of one run belongs to one fabric, which decides when each of its collectives
 * completes (the sharing rules above) and how much transport CPU time the ranks' compute loses.
 * `now` is the simulator's virtual clock (the value sv_clock_set_virtual points at); `threads`
 * the compute threads of a rank (the transport's CPU time spreads over them). Destroy the
 * communicators before their fabric. */
typedef struct sv_sim_fabric sv_sim_fabric;
sv_status sv_sim_fabric_create(const sv_sim_net *net, double *now, int threads, sv_sim_fabric **out);
void sv_sim_fabric_destroy(sv_sim_fabric *f);
/* Wall seconds of an op of `t` seconds of compute starting at *now: t plus the transport CPU
 * time of the bytes the transfers in flight move meanwhile, divided over the rank's threads
 * (exactly t when no link has a CPU cost). Does not advance the clock. */
double sv_sim_fabric_op_seconds(sv_sim_fabric *f, double t);
/* Transport CPU seconds charged to compute so far (per thread: the time ops were lengthened). */
double sv_sim_fabric_cpu_seconds(const sv_sim_fabric *f);

/* Create a communicator for group `g` in fabric `fab`. `label` names it in messages and
 * statistics ("world", "shard", "repl"). split is not supported: the simulator builds its
 * groups itself (app/simulate.c, from the rule sv_fsdp_make_comms uses). */
sv_status sv_comm_sim_create(const sv_comm_config *cfg, sv_sim_fabric *fab, const sv_sim_group *g, const char *label,
                             sv_comm **out);

/* Data: the simulated ranks are identical, so an all_gather's result is this rank's block in
 * every position; the communicator writes that into the receive buffer when it may touch it
 * (host buffers such as the gradient-norm partials, which the engine reads). `untouchable`
 * (may be NULL) tells which buffers it must not touch (the analytic backend's address-space-only
 * memory: sv_sim_backend_untouchable). Reductions leave their buffers as they are. */
void sv_comm_sim_set_untouchable(sv_comm *c, int (*untouchable)(void *ctx, const void *p), void *ctx);

#endif
