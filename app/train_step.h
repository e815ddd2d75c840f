/* One FSDP training step (zero grads, forward/backward per micro-step, optimizer, global loss),
 * shared by `shardvit train` and `shardvit bench` so both time the very same sequence.
 *
 * Host synchronisation: one per step (two with LAMB), inside sv_fsdp_optimizer_step: the
 * per-sample losses of every micro-step are copied on the device into the FSDP step-floats
 * region and downloaded with the gradient-norm partials; nothing in the micro-steps waits for
 * the device. */
#ifndef SV_APP_TRAIN_STEP_H
#define SV_APP_TRAIN_STEP_H

#include <stdint.h>

#include "app/run.h"
#include "data/loader.h"

/* Device pointers of one micro-batch (micro_batch samples on this rank). Exactly one of
 * labels (B) int32 / soft (B,K) f32 is non-NULL. images (B,C,img,img) f32. */
typedef struct sv_micro_batch {
    const float *images;
    const int32_t *labels;
    const float *soft;
    uint64_t epoch;
    uint64_t sample0; /* global epoch position of row 0 (dropout / stochastic-depth masks) */
} sv_micro_batch;

/* Fills *out for micro-step `micro` of the current step (loads, uploads). The pointers must
 * stay valid until the next call. It may wait on the host for the device work enqueued before
 * its previous call (the trainer's feed fences its asynchronous uploads, which run after that
 * work), not for later work. */
typedef sv_status (*sv_micro_batch_fn)(void *ctx, int micro, sv_micro_batch *out);

typedef struct sv_step_result {
    double loss_sum;     /* sum of per-sample losses over the global batch (all ranks) */
    double grad_norm;    /* pre-clip global gradient norm */
    int skipped;         /* 1: non-finite gradients, step skipped */
    uint64_t epoch;      /* epoch of the last micro-batch */
    double data_wait_s;  /* seconds this rank spent inside `next` */
    double optim_s;      /* seconds in sv_fsdp_optimizer_step (device-synchronised when tracing; on a GPU
                          * it holds the step's one host sync, so it includes draining the queued
                          * forward/backward) ... */
    double optim_wait_s; /* ... of which blocked in sv_comm_wait / sv_comm_fence (the grad-norm
                          * all-gather; on NCCL the fence of the step's collectives) */
} sv_step_result;

/* Seconds this rank has spent blocked in sv_comm_wait on the run's world, shard and replica
 * communicators (sv_comm_stats.wait_seconds, summed): the communication compute waited for. */
double sv_run_comm_wait_s(const sv_run *r);

/* One optimizer step over `accum` micro-steps of r->micro_batch samples each; batch_size is
 * the global batch (gradients are scaled by 1/batch_size). The time spent in `next` is
 * recorded as "data_wait" (lane 2) when r->fsdp.trace is on. Collective over all ranks. */
sv_status sv_train_step(sv_run *r, const sv_optim_config *oc, float smoothing, int accum, int batch_size,
                        sv_micro_batch_fn next, void *ctx, sv_step_result *res);

/* The test hooks of a training run, in one struct (docs/reliability.md); a step < 0 is off:
 *   poison_step, poison_rank    (SHARDVIT_TEST_POISON_BATCH) NaN into the first pixel of that
 *                               rank's batch at 0-based step poison_step (sv_loader_feed);
 *   signal_step, signal_rank,   (SHARDVIT_TEST_SIGNAL_AT) raise signal_sig in that rank while it
 *   signal_sig, signal_stall_s  loads step signal_step's first batch (sv_loader_feed), then stay
 *                               in that step signal_stall_s seconds more (signals do not cut the
 *                               wait short), so that a test can send a second signal mid-step;
 *   debug_nan_step,             (--debug-nan-step/--debug-nan-rank) at optimizer step
 *   debug_nan_rank              debug_nan_step that rank poisons one element of the last unit's
 *                               gradient before its reduction, through the FSDP grad hook, so
 *                               the step is skipped on every rank (sv_train_hooks_install). */
typedef struct sv_train_hooks {
    long poison_step, signal_step, debug_nan_step;
    int poison_rank, signal_rank, signal_sig, debug_nan_rank;
    double signal_stall_s;
} sv_train_hooks;

/* Every hook off. */
sv_train_hooks sv_train_hooks_off(void);

/* Install h's gradient hook (debug_nan_*) on r's FSDP state; nothing when it is off. h is
 * borrowed: it must outlive the training steps (sv_train_hooks_remove before it goes). */
void sv_train_hooks_install(sv_run *r, const sv_train_hooks *h);
void sv_train_hooks_remove(sv_run *r);

/* Loader batch memory from the backend's host allocator (pinned on CUDA, so the uploads of
 * sv_loader_feed run at full bandwidth): sets lo->alloc, lo->free and lo->alloc_ctx. */
void sv_loader_opts_host_alloc(sv_loader_opts *lo, sv_backend *be);

/* The micro-batch source of a step that reads a loader (train, bench --data): the next loader
 * batch, uploaded asynchronously into the run's micro-batch buffers (r->batch). Before taking
 * a batch it waits for the previous batch's uploads to have read their host buffers (which the
 * loader then reuses). mb->soft is set when the loader makes soft targets (mixup / cutmix),
 * mb->sample0 is the global epoch position of the rank's first row. */
typedef struct sv_loader_feed {
    sv_run *r;
    sv_loader *ld;
    const sv_train_hooks *hooks;      /* the poison / signal hooks (nullable: none) */
    long step;                        /* the step being fed (0-based; for the hooks) */
    uint64_t next_epoch, next_cursor; /* out: loader resume point after the last batch (checkpoints) */
} sv_loader_feed;

/* sv_micro_batch_fn over a sv_loader_feed (ctx). */
sv_status sv_loader_feed_next(void *ctx, int micro, sv_micro_batch *mb);

#endif
