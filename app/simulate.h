/* The step-time simulator behind `shardvit plan --simulate` / `--suggest-wrap` / `--sweep`
 * (docs/simulate.md).
 *
 * It is not a second description of the FSDP schedule: it runs the engine's own training step
 * (app/train_step.c -> fsdp/fsdp.c -> model/vit.c) for one rank of the simulated world, on a
 * virtual clock (core/clock.h), with a backend that charges each op's time instead of computing
 * (model/backend/sim/sim_backend.h) and communicators that give each collective an alpha-beta
 * completion time (fsdp/comm_sim.h). So the unit order, prefetch, reduce-scatter per unit,
 * strategies and hybrid groups, accumulation, recompute and the optimizer are exactly the
 * engine's, the collective counts are the engine's own counters, the memory is the trainer's
 * arena (equal to `plan`), and the timeline is written by the engine's tracer in the training
 * trace format.
 *
 * Compute time per op: `device` "cpu" times every distinct op shape once on this machine's real
 * CPU backend (with the threads a rank of that world would get); "h200" / "h100" use an analytic
 * roofline (sim_backend.h) with the presets listed in docs/simulate.md. Network: presets or
 * explicit "ALPHA_US,GBPS" pairs for the intra-node and inter-node links. */
#ifndef SV_APP_SIMULATE_H
#define SV_APP_SIMULATE_H

#include <stdio.h>

#include "app/run.h"
#include "core/json.h"
#include "fsdp/comm_sim.h"

typedef struct sv_sim_opts {
    sv_run_opts run;         /* model, batch, accum, strategy, shard group, wrap, dtypes, recompute */
    int world;               /* ranks */
    int nodes;               /* 0 = the device's default (cpu: 1; GPUs: 8 per node) */
    const char *device;      /* cpu | h200 | h100 */
    const char *net;         /* preset (docs/simulate.md), NULL = the device's default */
    const char *intra;       /* "ALPHA_US,GBPS": overrides the preset's intra-node link */
    const char *inter;       /* "ALPHA_US,GBPS": overrides the preset's inter-node link */
    const char *net_from;    /* a `bench --comm` JSON: fit the intra-node link to it */
    const char *inter_from;  /* a `bench --comm` JSON with one rank per node: fit the inter-node link */
    double inter_cpu_ns;     /* > 0: the inter-node link's transport CPU cost, ns per byte sent or received */
    const char *inter_burst; /* "BYTES,PEAK_GBPS": a token bucket in front of the inter-node link */
    int steps;               /* simulated steps after one warm-up step (>= 1) */
    const char *trace;       /* write the simulated timeline here (NULL: none) */
    double cores;            /* cpu: cores of the simulated node (0 = this machine's) */
    double sched_quantum_ms; /* cpu, oversubscribed: the scheduler's quantum (0 = measure it: app/sched_quantum.h) */
} sv_sim_opts;

typedef struct sv_sim_result {
    double step_s, img_s;
    double compute_s, comm_exposed_s, optim_s, other_s; /* per step, as `bench` splits a step */
    double comm_busy_s;                                 /* issue -> complete of every collective */
    double transport_cpu_s; /* per step: compute time lost to the transport's CPU cost (in compute_s) */
    double mfu;             /* model FLOPs / (step time x peak), -1 unknown */
    double peak_flops;      /* per rank */
    sv_run_mem mem;
    sv_comm_stats world, shard, repl; /* collectives of one step per communicator */
    int world_size, shard_size, repl_size, nodes, ranks_per_node, units, micro_batch;
    double slowdown; /* cpu: oversubscription factor applied (1 = none) */
    int threads;     /* cpu: threads per rank */
    int shapes;      /* distinct op shapes timed or modelled */
    double calibrate_s;
    sv_sim_net net;
    char device_name[128];
} sv_sim_result;

/* Simulate `steps` steps (after one warm-up step); the result is per step (their mean). */
sv_status sv_simulate(const sv_sim_opts *o, sv_sim_result *res);

/* Resolve the network of a simulation (presets + overrides; nodes / ranks per node). */
sv_status sv_sim_resolve_net(const sv_sim_opts *o, sv_sim_net *net, int *nodes);

/* Fit a link (latency per ring step, bandwidth, reduction factor) to a `shardvit bench --comm`
 * JSON (least squares of time = c0 + c1 x bytes over the rows of 64 KiB and more; the reduction
 * factor from the reduce_scatter rows, 1 without them). A result measured over MPI makes the link
 * shared (its nonblocking collectives progress side by side, comm_sim.h). For the inter-node link the result
 * must have been measured with one rank per node (its per-rank bandwidth is then the node's). */
sv_status sv_sim_fit_bench_comm(const char *path, sv_sim_link *link);

/* Human-readable report and one JSON object. */
void sv_sim_print(FILE *f, const sv_sim_opts *o, const sv_sim_result *r);
/* `prov` (nullable): the provenance of the command (app/provenance.h), written as "provenance"
 * with `flags` (nullable) as its config. */
struct sv_provenance;
void sv_sim_json(sv_json_writer *w, const sv_sim_opts *o, const sv_sim_result *r, const struct sv_provenance *prov,
                 const sv_flag *flags);

/* 1 when name is a simulated GPU preset (h200, h100; not cpu), else 0. */
int sv_sim_device_known(const char *name);

/* Names of the presets, for --help and errors. */
extern const char *const sv_sim_device_names;
extern const char *const sv_sim_net_names;

#endif
