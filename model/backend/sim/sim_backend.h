/* The virtual-time backend: the compute half of the step-time simulator (`shardvit plan
 * --simulate`, docs/simulate.md). It implements every op of the backend interface by charging
 * the op's time to a virtual clock instead of computing, so the model and FSDP code run
 * unchanged on it (together with fsdp/comm_sim.h) and their own schedule yields the simulated
 * timeline.
 *
 * An op's time comes from one of two models:
 * - calibrated (`real` set: a real backend of this machine, e.g. the CPU backend with the
 *   threads a rank of the simulated run would have): during a warm-up step
 *   (sv_sim_backend_set_warmup) every op runs for real on the real backend; afterwards the
 *   first three occurrences of each shape (op + every size argument + which optional buffers
 *   are present) run for real where they fall in the step, so buffers, caches and the ops
 *   before them are those of a real step, each timed once (sv_now_real_s) and charged its own
 *   time, and the median of the three is charged for every later occurrence, which does not
 *   run. The buffers must then be real memory: sv_sim alloc maps readable, writable, lazily
 *   committed pages (MAP_NORESERVE). Values are whatever the zero-filled buffers give (finite:
 *   zeros through every op); they are never looked at.
 * - analytic (`dev` set): roofline time = launch + max(FLOPs / (peak x gemm_eff),
 *   bytes / (memory bandwidth x mem_eff)); attention counts FlashAttention's FLOPs (forward
 *   4 B T^2 D, backward 2.5 x that) and no T^2 memory traffic. Buffers are address space only
 *   (PROT_NONE): nothing may touch them, which also proves that the engine never reads device
 *   memory on the host.
 * Either way the charged time is multiplied by `slowdown` (ranks oversubscribing the cores), and
 * `op_seconds`, when set, turns it into the op's wall time (the transport's CPU cost).
 *
 * Sizes (compute_elem, attention buffers) are those of a real backend of cfg.device, so the
 * carved arena equals the planner's. Host-visible results: sumsq writes 0 in the analytic model
 * (the real value of the zero buffers when calibrated); download fills the host buffer with
 * zeros. */
#ifndef SV_MODEL_BACKEND_SIM_H
#define SV_MODEL_BACKEND_SIM_H

#include "model/backend/backend.h"

/* Analytic device model. */
typedef struct sv_sim_device {
    const char *name;  /* e.g. "h200" */
    double peak_flops; /* dense FLOP/s in the compute dtype (also the MFU denominator) */
    double mem_Bps;    /* device memory bandwidth */
    double gemm_eff;   /* fraction of peak_flops GEMM-like ops reach */
    double mem_eff;    /* fraction of mem_Bps memory-bound ops reach */
    double launch_s;   /* fixed cost per op */
    double h2d_Bps;    /* host <-> device copies (upload / download) */
} sv_sim_device;

typedef struct sv_sim_backend_config {
    sv_backend_config bc;     /* device kind and compute dtype the run would use (sizes) */
    const sv_sim_device *dev; /* analytic model, or NULL when `real` is set */
    sv_backend *real;         /* calibrated model: ops timed on this backend (not owned) */
    double *now;              /* the virtual clock (seconds) */
    double slowdown;          /* >= 1 */
    /* optional: the wall seconds of an op of t seconds (after the slowdown) starting now, e.g. t
     * plus the transport CPU time the collectives in flight take from it meanwhile
     * (sv_sim_fabric_op_seconds); NULL = t */
    double (*op_seconds)(void *ctx, double t);
    void *op_ctx;
} sv_sim_backend_config;

sv_status sv_sim_backend_create(const sv_sim_backend_config *cfg, sv_backend **out);

typedef struct sv_sim_backend_stats {
    double compute_s;   /* virtual seconds charged */
    double gemm_flops;  /* FLOPs of linear and attention ops charged */
    int shapes;         /* distinct (op, shape) entries */
    double calibrate_s; /* real seconds spent timing ops */
} sv_sim_backend_stats;
void sv_sim_backend_get_stats(const sv_backend *be, sv_sim_backend_stats *out);
/* Calibrated: 1 = every op runs for real and nothing is recorded (the warm-up step). */
void sv_sim_backend_set_warmup(sv_backend *be, int on);

/* 1 when p lies in memory of this backend that nothing may touch (the analytic model's
 * address-space-only buffers). `be` is an sv_backend* of this kind (void* for callbacks). */
int sv_sim_backend_untouchable(void *be, const void *p);

#endif
