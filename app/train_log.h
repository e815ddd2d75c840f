/* What a training run reports as it goes, on rank 0: TensorBoard scalars (DIR/events.out.
 * tfevents.*, next to metrics.jsonl, same values), evaluation results (log line, metrics.jsonl
 * line with eval_top1/eval_top5/eval_loss, TensorBoard), and on a terminal one updating
 * progress line (step, epoch, loss, img/s, ETA) instead of a log line per logged step.
 *
 * TensorBoard tags: train/loss train/loss_avg train/lr train/grad_norm train/skipped_steps perf/img_per_s
 * perf/tflops perf/mfu (only when the device peak is known) perf/mem_bytes perf/data_wait_frac
 * eval/top1 eval/top5 eval/loss. A TensorBoard write failure is logged once and the run goes on
 * without it (metrics.jsonl stays the record); a metrics.jsonl write failure (ENOSPC, EIO, EFBIG)
 * is an error naming the file and errno.
 *
 * Records: the first line of a metrics.jsonl is a header record {"record":"header", "format":1,
 * "provenance":{...}, ...} (sv_train_log_header; app/provenance.h) without a "step" key, so readers
 * that take the lines with a "step" see only steps and evaluations, and the resume cut-back keeps
 * it. Every step and evaluation record ends with "time": wall-clock seconds since the epoch (UTC,
 * millisecond resolution) when it was written, for time-to-accuracy.
 *
 * Resume: sv_train_log_resume(step) cuts metrics.jsonl back to the records of steps <= step (the
 * run that the checkpoint outlived may have logged further) and writes a TensorBoard restart
 * marker at step + 1, which makes TensorBoard hide that run's later events: after any number of
 * resumes every step appears once, and so does an evaluation at the resume step itself (the
 * final evaluation of a run stopped after its last step: eval_logged_step). */
#ifndef SV_APP_TRAIN_LOG_H
#define SV_APP_TRAIN_LOG_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "eval/evaluate.h"
#include "formats/tensorboard.h"

typedef struct sv_train_log {
    int rank;
    FILE *metrics; /* OUT/metrics.jsonl on rank 0 with --out, else NULL */
    char metrics_path[4096];
    sv_tb_writer tb;
    int tb_open;
    int tty;       /* rank 0 and stderr is a terminal */
    int line_open; /* a progress line is on screen without its newline */
    double t_start, last_draw, paused_s;
    long start_step; /* the first step this process trains (after a resume: the checkpoint's) */
    /* the resume step when the kept metrics.jsonl ends with its evaluation records (a run stopped
     * after its last step's periodic evaluation), else -1: evaluating that step again (for the
     * final outputs) records nothing a second time */
    long eval_logged_step;
} sv_train_log;

/* One logged training step (a metrics.jsonl line; non-finite loss/grad_norm/mfu are null). */
typedef struct sv_train_log_step {
    long step;
    unsigned long long epoch, skipped_steps;
    double loss;         /* this step's loss (global: summed over the ranks / global batch) */
    double loss_avg;     /* mean of the finite step losses since the previous logged step, this one
                            included (timm's running average is over the epoch; this is over the log
                            window); NaN when none was finite (every step of the window skipped) */
    long loss_avg_steps; /* how many losses loss_avg averages (log_every, fewer at the start, after
                            a resume and at the end, and without a skipped step's non-finite loss) */
    double lr, grad_norm, img_per_s, tflops, mfu, data_wait_frac;
    size_t mem_bytes;
} sv_train_log_step;

/* out: run directory (NULL: nothing is written). Rank 0 opens OUT/metrics.jsonl (appending when
 * `append`, i.e. the run may resume) and a new TensorBoard event file. */
sv_status sv_train_log_open(sv_train_log *lg, int rank, const char *out, int append);
/* The peak MFU is stated against (the header's "mfu_peak"). kind NULL: unknown, written as null;
 * "device": the backend's own peak, {"kind":"device","flops":F}; "isa": the CPU ISA peak
 * measured at start-up (app/cpu_peak.h), {"kind":"isa","engine":E,"per_core_flops":P,
 * "cores_used":C,"flops":F,"calib_seconds":S}. Numbers are written with 6 significant digits. */
typedef struct sv_train_log_peak {
    const char *kind, *engine;
    double per_core_flops, cores_used, flops, calib_seconds;
} sv_train_log_peak;

/* Rank 0 with --out: when metrics.jsonl is empty (a fresh run, or a resumed one whose log was
 * lost), write the header record: {"record":"header","format":1,"provenance":PROV[,"mfu_peak":PEAK]}
 * where PROV is a JSON object text and PEAK (nullable: no key) is as sv_train_log_peak says. A
 * non-empty log keeps its header. Records are written with core/json.h's writer; step and
 * evaluation records start with "step" and print their numbers in fixed printf forms (loss, lr,
 * grad_norm, mfu and the eval values as %.9g, img_per_s and tflops %.6g, data_wait_frac %.4f,
 * time %.3f). */
sv_status sv_train_log_header(sv_train_log *lg, const char *prov_json, const sv_train_log_peak *peak);
/* After a resume at `step` (rank 0; others no-op): see the header comment. */
sv_status sv_train_log_resume(sv_train_log *lg, long step);
/* metrics.jsonl line + TensorBoard scalars of one logged step. */
sv_status sv_train_log_record(sv_train_log *lg, const sv_train_log_step *s);
/* Redraw the progress line (at most 10 times a second; always for the last step). No-op off a TTY. */
/* The training proper begins now, at step start_step (0-based; a resume's first step): the
 * progress line's rate and ETA count from here, not from the set-up (calibration, checkpoint
 * load) or the steps of the run before a resume. */
void sv_train_log_start(sv_train_log *lg, long start_step);
void sv_train_log_progress(sv_train_log *lg, long step, long total, uint64_t steps_per_epoch, double loss,
                           int global_batch);
/* Run one evaluation pass (collective: every rank calls) and report it as of `step`. */
sv_status sv_train_log_eval(sv_train_log *lg, sv_evaluator *ev, long step, const char *data_name);
/* The same; ema = 1 reports a pass over the weight EMA (--model-ema): "eval (weight EMA) at step"
 * line, metrics.jsonl keys eval_ema_top1/eval_ema_top5/eval_ema_loss/eval_ema_samples,
 * TensorBoard eval_ema/top1 ... (the caller swaps the EMA in, fsdp/ema.h). */
sv_status sv_train_log_eval_as(sv_train_log *lg, sv_evaluator *ev, long step, const char *data_name, int ema);
/* Push metrics.jsonl and the event file to disk (before a checkpoint is published). */
sv_status sv_train_log_sync(sv_train_log *lg);
/* Finish the progress line, close metrics.jsonl (its close error is returned) and the event file. */
sv_status sv_train_log_close(sv_train_log *lg);

#endif
