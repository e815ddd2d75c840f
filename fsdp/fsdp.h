/* FSDP engine: sharded state, the gather/compute/free/reduce-scatter schedule, sharded AdamW
 * (docs/fsdp.md). The model is driven unit by unit through model/vit.h; fsdp/ knows nothing of
 * layer math.
 *
 * Communicators: `world` (all ranks), `shard` (the ranks that shard a unit between them) and
 * `repl` (ranks holding the same shard in different groups):
 *   full_shard / shard_grad_op: shard = world, repl = 1 rank
 *   no_shard:                   shard = 1 rank, repl = world (gradients all-reduced, DDP)
 *   hybrid_shard (group G):     shard = G consecutive ranks, repl = world / G
 *
 * Per-rank persistent state per unit: fp32 master, AdamW m and v, and fp32 gradient shards
 * (16 B per parameter / shard size). Transient: gathered compute-dtype parameters for the root
 * unit (held for the whole micro-step, like PyTorch FSDP's root) plus at most two block units
 * (current + prefetched; shard_grad_op keeps every unit gathered from forward to backward);
 * two full-size fp32 gradient buffers so one unit's reduce-scatter overlaps the next unit's
 * backward, plus the root unit's gradient buffer (held from the head to the embedding backward).
 *
 * Mixed precision: gathered parameters and activations use the backend's compute dtype
 * (--param-dtype); gradients are produced in fp32 and reduced in `reduce_dtype` (bf16: cast
 * before the reduce-scatter, summed in fp32 and rounded, cast back); masters and optimizer fp32.
 * The compute copy of a shard is cast from the master right before each all-gather, so it is
 * always current after an optimizer step. */
#ifndef SV_FSDP_FSDP_H
#define SV_FSDP_FSDP_H

#include "core/arena.h"
#include "core/trace.h"
#include "fsdp/comm.h"
#include "fsdp/layout.h"
#include "model/vit.h"

typedef enum sv_strategy { SV_FULL_SHARD = 0, SV_SHARD_GRAD_OP, SV_NO_SHARD, SV_HYBRID_SHARD } sv_strategy;
typedef enum sv_accum_mode { SV_ACCUM_SHARD = 0, SV_ACCUM_LOCAL = 1 } sv_accum_mode;

const char *sv_strategy_name(sv_strategy s);
sv_status sv_strategy_parse(const char *s, sv_strategy *out);

typedef struct sv_fsdp_config {
    sv_strategy strategy;
    int shard_group;       /* hybrid_shard group size G (divides world) */
    sv_dtype reduce_dtype; /* SV_F32 or SV_BF16 */
    sv_accum_mode accum_mode;
    size_t wrap_bytes; /* 0: one unit per block; else auto-wrap budget */
    int head_zero_init;
    uint64_t seed;
    int ema; /* 1: carve an fp32 weight-EMA shard per unit (--model-ema, fsdp/ema.h) */
} sv_fsdp_config;

/* Where a unit stands in its FSDP lifecycle. Every unit, the root included, is one small state
 * machine with FSDP2's transition names (fsdp.c; picture in docs/fsdp.md):
 *
 *   SHARDED --unshard--> UNSHARDING --wait_unshard--> UNSHARDED --reshard--> SHARDED
 *                                                         |
 *                                       post_backward (reshard + reduce_issue)
 *                                                         v
 *                                                     REDUCING --reduce_wait--> SHARDED
 *
 * SHARDED: only the fp32 shards exist. UNSHARDING: the all-gather is in flight into a buffer of
 * the gathered pool. UNSHARDED: the full compute-dtype parameters are usable. REDUCING: the
 * parameters are freed and the unit's gradient is being reduce-scattered (and all-reduced across
 * replicas) into its shard. Between micro-steps every unit is SHARDED. */
typedef enum sv_unit_phase {
    SV_UNIT_SHARDED = 0,
    SV_UNIT_UNSHARDING,
    SV_UNIT_UNSHARDED,
    SV_UNIT_REDUCING
} sv_unit_phase;

const char *sv_unit_phase_name(sv_unit_phase p);

typedef struct sv_unit_state {
    float *master, *m, *v, *grad; /* (shard) f32 each */
    float *local_grad;            /* accum local: (padded) f32 unsharded accumulator */
    float *ema;                   /* cfg.ema: (shard) f32 weight EMA of master (fsdp/ema.h); else NULL */
    sv_unit_phase state;
    void *params; /* UNSHARDING/UNSHARDED: gathered compute-dtype parameters (a pool buffer) */
    void *send;   /* UNSHARDING: compute-dtype staging of the local shard (a pool buffer) */
    sv_comm_req gather_req;
    double t_gather; /* trace time the all-gather was issued */
    int grad_slot;   /* index into sv_fsdp.gslot while the backward writes it and REDUCING; -1 none */
} sv_unit_state;

/* A pool of same-purpose buffers carved once; a buffer is held by one unit at a time. */
typedef struct sv_pool_buf {
    void *ptr;
    size_t bytes; /* capacity */
    int unit;     /* holder, -1 free */
} sv_pool_buf;

typedef struct sv_buf_pool {
    sv_pool_buf b[SV_MAX_UNITS];
    int n;
} sv_buf_pool;

/* A gradient reduction slot. */
typedef struct sv_grad_slot {
    float *own;       /* (max padded) f32 owned buffer (shard accumulation mode) */
    float *buf;       /* buffer being reduced (own, or a unit's local_grad) */
    uint16_t *send16; /* (max padded) bf16 staging for reduce_dtype bf16 */
    uint16_t *recv16; /* (max shard) */
    float *recv;      /* (max shard) f32 reduced block */
    int unit;         /* -1 idle, else the unit whose gradient it holds */
    int pending;      /* reduce-scatter issued, not yet waited */
    sv_comm_req req;
    double t_issue;
} sv_grad_slot;

struct sv_fsdp;
/* Called on each unit's full (unsharded) fp32 gradient right before its reduction is issued,
 * where DDP's and FSDP's communication hooks sit. grad: `n` floats (device). */
typedef sv_status (*sv_fsdp_grad_hook)(void *ctx, struct sv_fsdp *f, int unit, float *grad, size_t n);

typedef struct sv_fsdp_counters {
    int live_gathered;     /* block units UNSHARDING or UNSHARDED (root excluded) */
    int max_live_gathered; /* high-water mark since reset */
    uint64_t skipped_steps;
} sv_fsdp_counters;

/* Per-rank bytes by category, recorded by sv_fsdp_carve (the planner and the start-up log). */
typedef struct sv_fsdp_mem {
    size_t params;       /* fp32 master shards */
    size_t grads;        /* fp32 gradient shards */
    size_t optimizer;    /* AdamW m and v shards */
    size_t gathered;     /* compute-dtype gathered parameters (root + two slots, or every unit
                            for shard_grad_op) and all-gather send staging */
    size_t grad_buffers; /* transient full-size fp32 gradient buffers, bf16 staging, receive
                            blocks, and the unsharded accumulators of --accum-mode local */
    size_t ema;          /* fp32 weight-EMA shards (cfg.ema; carved last) */
} sv_fsdp_mem;

/* A small device block and its host copy for what the host reads once per optimizer step
 * (fsdp_optim.c): allocated through the backend on first use, outside the arena (a few KiB). */
typedef struct sv_fsdp_readback {
    void *dev;  /* device block (sv_be_alloc) */
    void *host; /* host copy (malloc) */
    size_t cap; /* bytes of each */
} sv_fsdp_readback;

typedef struct sv_fsdp {
    sv_fsdp_config cfg;
    sv_backend *be;
    size_t compute_elem;           /* bytes per gathered-parameter element (sv_be_sizes.compute_elem) */
    sv_comm *world, *shard, *repl; /* not owned */
    int rank, world_size, shard_rank, shard_size, repl_size;
    sv_layout L;
    sv_unit_state us[SV_MAX_UNITS];
    /* 1: a block unit's parameters are freed after its forward and gathered again for its
     * backward (full_shard, hybrid_shard, no_shard: there the "gather" is the cast of the whole
     * shard); 0: kept from forward to backward (shard_grad_op). The root is never resharded
     * after forward (as FSDP2's root): the head and its backward follow the blocks directly. */
    int reshard_after_forward;
    sv_buf_pool gathered;  /* full compute-dtype units: root + two block buffers (current and
                              prefetched), or one per unit when !reshard_after_forward */
    sv_buf_pool staging;   /* compute-dtype local shards sent into all-gathers */
    sv_grad_slot gslot[3]; /* [0],[1]: block units alternate; [2]: the root unit */
    int next_gslot;
    sv_vit *model;
    sv_trace *trace;
    sv_fsdp_counters ctr;
    sv_fsdp_mem mem;
    sv_fsdp_grad_hook grad_hook; /* optional (NULL) */
    void *grad_hook_ctx;
    long step; /* optimizer steps taken (incl. skipped) */
    /* The optimizer step's one host synchronisation: [step_floats caller floats, padded to 8
     * bytes | shard_size x n_units gradient sums of squares (double)], downloaded at once. */
    sv_fsdp_readback rb;
    size_t step_floats;
    sv_fsdp_readback rb_lamb; /* LAMB's per-piece sums of squares (2 doubles per piece) */
} sv_fsdp;

/* Build the layout (no allocation of device memory yet). world/shard/repl communicators must
 * match the strategy (see sv_fsdp_make_comms). */
sv_status sv_fsdp_setup(sv_fsdp *f, const sv_fsdp_config *cfg, sv_backend *be, sv_comm *world, sv_comm *shard,
                        sv_comm *repl, const sv_vit_config *vcfg);
/* The communicator- and backend-free part of sv_fsdp_setup (the planner uses it directly):
 * layout and sizes for rank `shard_rank` of a shard group of `shard_size`, `repl_size` groups,
 * the compute element size from sv_be_sizes_query of `bc`. f->be stays NULL (count only). */
sv_status sv_fsdp_setup_sizes(sv_fsdp *f, const sv_fsdp_config *cfg, const sv_backend_config *bc, int shard_rank,
                              int shard_size, int repl_size, const sv_vit_config *vcfg);
/* Shard group size for a strategy at a world size (validates hybrid's group). */
sv_status sv_fsdp_shard_size(sv_strategy s, int shard_group, int world, int *shard_size);
/* Create shard/repl communicators for the strategy from `world` (caller destroys them). */
sv_status sv_fsdp_make_comms(sv_comm *world, sv_strategy s, int shard_group, sv_comm **shard, sv_comm **repl);
/* The group membership rule sv_fsdp_make_comms splits by (MPI_Comm_split color and key), for a
 * shard group size G: shard groups (repl = 0) are G consecutive ranks, replica groups (repl = 1)
 * the ranks r with equal r % G. Pure: the step-time simulator forms its groups with it too. */
void sv_fsdp_group_color(int rank, int G, int repl, int *color, int *key);
/* Carve every FSDP buffer from the device arena (dry run when the arena has no base). */
sv_status sv_fsdp_carve(sv_fsdp *f, sv_arena *dev, sv_arena *host);
/* Initialise master shards from the deterministic init (every world size gives the same model);
 * zero optimizer state. */
sv_status sv_fsdp_init_params(sv_fsdp *f);
void sv_fsdp_attach(sv_fsdp *f, sv_vit *model, sv_trace *trace);
void sv_fsdp_free(sv_fsdp *f);

/* Zero the gradient shards (start of an optimizer step). */
sv_status sv_fsdp_zero_grad(sv_fsdp *f);
/* One micro-step: forward, loss, backward, gradient reduction into the shards.
 * images (B,C,H,W) f32 device, labels (B) int32 device or soft (B,K) f32 device.
 * micro: index of this micro-step in [0, n_micro). The per-sample losses are left in
 * f->model->losses (device). */
sv_status sv_fsdp_forward_backward(sv_fsdp *f, const float *images, const int32_t *labels, const float *soft,
                                   float smoothing, float grad_scale, int micro, int n_micro);
/* Forward only (evaluation): logits left in f->model->logits. Ends with sv_fsdp_fence, so the
 * caller's download of the logits cannot block on a hung peer. */
sv_status sv_fsdp_forward(sv_fsdp *f, const float *images);
/* Host wait, under the comm timeout, for every collective of the shard and replica
 * communicators that was waited on the device (sv_comm_fence; a no-op on MPI). Due before any
 * host synchronisation on the compute stream that follows such waits. */
sv_status sv_fsdp_fence(sv_fsdp *f);
/* The collectives issued so far on the shard and replica communicators (sv_comm_issued), and
 * the fence for those only: what device work enqueued up to the mark can wait on. */
typedef struct sv_fsdp_mark {
    uint64_t shard, repl;
} sv_fsdp_mark;
sv_fsdp_mark sv_fsdp_comm_mark(const sv_fsdp *f);
sv_status sv_fsdp_fence_to(sv_fsdp *f, sv_fsdp_mark m);

/* The update rule (fsdp/optim.h: names, SGD / Lion / LAMB on the shards). */
typedef enum sv_opt_kind { SV_OPT_ADAMW = 0, SV_OPT_LAMB, SV_OPT_SGD, SV_OPT_LION } sv_opt_kind;

typedef struct sv_optim_config {
    float lr, beta1, beta2, eps, weight_decay, max_grad_norm; /* max_grad_norm <= 0: no clipping */
    sv_opt_kind kind;                                         /* default (0): AdamW */
    float momentum;                                           /* SGD */
    int nesterov;                                             /* SGD */
    const float *lr_scale; /* [L.n_params] per-tensor LR multiplier (layer decay); NULL: 1 */
} sv_optim_config;

/* Global gradient norm (deterministic), non-finite check (skip: state untouched), clipping,
 * the update rule on the shards. *grad_norm: the pre-clip norm; *skipped: 1 when skipped.
 * Host synchronisation: exactly one (two with LAMB), where the host reads the gradient norm:
 * the per-unit sums of squares stay on the device, are all-gathered there, the shard and replica
 * communicators are fenced (sv_comm_fence: a hung peer is a timeout, not a hang), then one
 * download brings the partials and the sv_fsdp_step_floats region to the host. */
sv_status sv_fsdp_optimizer_step(sv_fsdp *f, const sv_optim_config *oc, double *grad_norm, int *skipped);

/* Device room for `n` floats that every following sv_fsdp_optimizer_step downloads together
 * with its gradient-norm partials, in its one host synchronisation (the trainer writes each
 * micro-step's per-sample losses there). *dev stays valid until the next call; afterwards
 * sv_fsdp_step_floats_host is the host copy of the last optimizer step's download. */
sv_status sv_fsdp_step_floats(sv_fsdp *f, size_t n, float **dev);
const float *sv_fsdp_step_floats_host(const sv_fsdp *f);

/* Grow rb to `bytes` (device and host; contents are lost when it grows), or free it. Internal
 * to fsdp/ (fsdp_optim.c, optim.c). */
sv_status sv_fsdp_readback_reserve(sv_fsdp *f, sv_fsdp_readback *rb, size_t bytes);
void sv_fsdp_readback_release(sv_fsdp *f, sv_fsdp_readback *rb);

/* Bytes of persistent per-rank state (master + m + v + grad shards) by formula. */
size_t sv_fsdp_persistent_bytes(const sv_fsdp *f);

/* Copy the full fp32 value of every parameter to host (collective over shard comm: all ranks
 * must call). dst: [sv_vit_param_count] floats in canonical order, concatenated. */
sv_status sv_fsdp_gather_full_params(sv_fsdp *f, float *dst);

#endif
