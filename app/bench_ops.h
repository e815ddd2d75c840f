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
 * traffic (memory-bound ops). Runs on the calling process only. */
sv_status sv_bench_op(const char *op, const sv_vit_config *c, int micro_batch, int threads, const char *dtype,
                      const char *device, int iters, int warmup, sv_json_writer *w);

/* All-gather and reduce-scatter (f32) over all ranks through fsdp/comm.h for full-buffer sizes
 * min..max (x4 steps). algbw = size / time, busbw = algbw * (n-1)/n (nccl-tests), time = the
 * slowest rank's mean. Collective: every rank calls; only rank 0's writer is meant for output. */
sv_status sv_bench_comm(const sv_run_opts *ro, const sv_proc *p, int threads, const char *min_s, const char *max_s,
                        sv_json_writer *w);

#endif
