/* `shardvit bench --op` and `--comm`: single backend ops at model shapes, and collective
 * bandwidth the nccl-tests way. Both write one JSON object into a caller-initialised writer. */
#ifndef SV_APP_BENCH_OPS_H
#define SV_APP_BENCH_OPS_H

#include "app/commands.h"
#include "app/run.h"
#include "core/json.h"

/* Time one backend op forward and backward at the shapes of model `c` with `micro_batch`
 * samples: matmul (fc1: M = B*T, N = hidden, K = dim; plain and with bias+GELU epilogue),
 * attention (B, T, dim, heads), layernorm (B*T, dim), gelu (B*T*hidden), softmax_xent
 * (B, classes), adamw (all parameters). `warmup` untimed then `iters` timed calls; reports
 * the best and mean seconds per call and GFLOP/s (GEMM-like ops) or GB/s of compulsory
 * traffic (memory-bound ops). The result's "params" is the model's parameter count for every
 * op (bench-compare matches shapes on it); gelu also records its length as "elements". Runs on
 * the calling process only. */
sv_status sv_bench_op(const char *op, const sv_vit_config *c, int micro_batch, int threads, const char *dtype,
                      const char *device, const char *cpu_gemm, int iters, int warmup, sv_json_writer *w);

/* Collective bandwidth the nccl-tests way (f32 through fsdp/comm.h) for buffer sizes min..max
 * (x4 steps): all_gather and reduce_scatter (size = n x count per rank), all_reduce and broadcast
 * (root 0; size = the buffer). algbw = size / time, busbw = algbw x sv_bench_busbw_factor, time =
 * the slowest rank's mean. `group` (--comm-group): "world" or NULL (all ranks), "intra[:G]" /
 * "G" (groups of G consecutive ranks; G = ranks per node when omitted) or "inter[:G]" (the ranks
 * at the same position of every such group): the shard and replica groups hybrid_shard forms
 * (sv_fsdp_make_comms); all groups run at once and the slowest rank's time is reported.
 * Collective: every rank calls; only rank 0's writer is meant for output. */
sv_status sv_bench_comm(const sv_run_opts *ro, const sv_proc *p, int threads, const char *min_s, const char *max_s,
                        const char *group, sv_json_writer *w);
/* nccl-tests' bus-bandwidth factor of a collective over n ranks: all_gather, reduce_scatter
 * (n-1)/n; all_reduce 2(n-1)/n; broadcast 1; 0 for every collective when n < 2 (a one-rank group
 * has no bus traffic, so its busbw is 0). */
double sv_bench_busbw_factor(const char *collective, int n);

#endif
