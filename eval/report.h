/* shardvit eval: one self-contained HTML report of a run directory (no scripts, no network:
 * inline CSS and SVG only, so it opens anywhere and can be mailed or archived as one file).
 *
 * Reads from RUN_DIR whatever is there:
 *   metrics.jsonl   training curves: loss, eval top-1/top-5 and eval loss (and the weight EMA's,
 *                   train --model-ema: curves beside the raw ones and a table of every evaluation), lr, grad norm,
 *                   throughput (img/s, TFLOP/s, MFU), memory, data-wait fraction
 *   eval.json       summary (top-1, top-5, loss, samples) and per-class accuracy bars
 *   confusion.csv   confusion matrix heat map (row-normalised colour, counts in tooltips)
 *   trace.json      (train --trace) per-rank time per category (compute / comm / data / optim)
 *                   and an SVG timeline of the first optimizer steps, one lane group per rank
 *   config.toml     the resolved configuration (collapsed)
 * and shows three provenance sections (app/provenance.h): the run's (metrics.jsonl header
 * record), the evaluation's (eval.json "provenance") and the report writer's own.
 * metrics.jsonl is required; everything else is optional and its section is left out.
 * eval.json and confusion.csv must be as eval writes them (value ranges, counts that agree
 * with each other and with the recorded totals; docs/evaluation.md "shardvit report"): anything
 * else is an SV_ERR_FORMAT error naming the file, the field or line, and the value.
 *
 * Every chart series is one SVG <path class="series" data-series="NAME" data-points="N">, so
 * tests (and scripts) can find what was drawn. */
#ifndef SV_EVAL_REPORT_H
#define SV_EVAL_REPORT_H

#include "core/status.h"

/* Write the report for run_dir to out_path through a fresh temporary renamed into place. out_path
 * is checked first (docs/checkpoints.md "Outputs"; SV_ERR_INVALID naming it): an existing entry
 * must be a regular file that is an earlier report (it starts as a report does), never a
 * directory, FIFO, device or symbolic link; not inside the run's checkpoint root or any checkpoint
 * step directory; not one of the report's inputs (metrics.jsonl, eval.json, confusion.csv,
 * config.toml, classes.txt, trace.json, trace_path). trace_path: a trace JSON to use, or NULL
 * for RUN_DIR/trace.json when present. generator_json: the provenance object (JSON text) of the
 * process writing the report, or NULL. */
sv_status sv_report_write(const char *run_dir, const char *trace_path, const char *out_path,
                          const char *generator_json);

#endif
