/* What a training run reports as it goes, on rank 0: TensorBoard scalars (DIR/events.out.
 * tfevents.*, next to metrics.jsonl, same values), evaluation results (log line, metrics.jsonl
 * line with eval_top1/eval_top5/eval_loss, TensorBoard), and on a terminal one updating
 * progress line (step, epoch, loss, img/s, ETA) instead of a log line per logged step.
 *
 * TensorBoard tags: train/loss train/lr train/grad_norm train/skipped_steps perf/img_per_s
 * perf/tflops perf/mfu (only when the device peak is known) perf/mem_bytes perf/data_wait_frac
 * eval/top1 eval/top5 eval/loss. A TensorBoard write failure is logged once and the run goes on
 * without it (metrics.jsonl stays the record). */
#ifndef SV_APP_TRAIN_LOG_H
#define SV_APP_TRAIN_LOG_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "eval/evaluate.h"
#include "eval/tensorboard.h"

typedef struct sv_train_log {
    int rank;
    FILE *metrics;   /* borrowed; NULL on ranks > 0 or without --out */
    sv_tb_writer tb;
    int tb_open;
    int tty;         /* rank 0 and stderr is a terminal */
    int line_open;   /* a progress line is on screen without its newline */
    double t_start, last_draw, paused_s;
} sv_train_log;

/* out: run directory (NULL: no TensorBoard file). */
void sv_train_log_open(sv_train_log *lg, int rank, const char *out, FILE *metrics);
/* Scalars of one logged step; mfu NaN when unknown. */
void sv_train_log_scalars(sv_train_log *lg, long step, double loss, double lr, double grad_norm, double img_per_s,
                          double tflops, double mfu, double mem_bytes, double data_wait_frac, double skipped);
/* Redraw the progress line (at most 10 times a second; always for the last step). No-op off a TTY. */
void sv_train_log_progress(sv_train_log *lg, long step, long total, uint64_t steps_per_epoch, double loss,
                           int global_batch);
/* Run one evaluation pass (collective: every rank calls) and report it as of `step`. */
sv_status sv_train_log_eval(sv_train_log *lg, sv_evaluator *ev, long step, const char *data_name);
/* Finish the progress line and close the event file. */
void sv_train_log_close(sv_train_log *lg);

#endif
