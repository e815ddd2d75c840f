/* The HTML report's evaluation inputs (eval/report.h): RUN_DIR/eval.json and RUN_DIR/confusion.csv
 * read and checked as eval writes them (eval/metrics.h, eval/evaluate.c), the preprocessing the
 * evaluation used, and the run's checkpoint root. Internal to eval/report*.c; metrics.jsonl,
 * whose series are the charts' data, is read by report.c itself.
 *
 * Anything in eval.json or confusion.csv other than what eval writes is an SV_ERR_FORMAT error
 * naming the file, the field or line, and the value, as a report drawn from a damaged or
 * mismatched file would be a silent wrong answer. */
#ifndef SV_EVAL_REPORT_INPUTS_H
#define SV_EVAL_REPORT_INPUTS_H

#include <stddef.h>

#include "ckpt/checkpoint.h"
#include "core/status.h"

/* One evaluation as the report shows it. Zero it before sv_rp_load_eval; every pointer is owned
 * by the struct and released by sv_rp_eval_data_free. */
typedef struct sv_rp_eval_data {
    /* eval.json was read and passed every check */
    int have;
    /* the summary: top1, top5 in [0, 1], loss >= 0 (NaN where recorded as null), num_samples */
    double top1, top5, loss;
    long long samples;
    /* eval.json "ema": the weight EMA's metrics on the same data (have_ema: recorded) */
    int have_ema;
    double ema_top1, ema_top5, ema_loss;
    long long ema_samples;
    /* classes: the number of per_class entries (1 .. 1048576 once have is set) */
    int K;
    char **names;               /* [K] class names (per_class[k].class) */
    double *acc;                /* [K], NaN for classes without samples */
    long long *correct, *total; /* [K] per-class counts, correct[k] <= total[k] */
    /* [K*K] row-major, [true * K + predicted], from confusion.csv; NULL when not loaded */
    long long *conf;
    /* the evaluation preprocessing as a sentence ("" = not recorded), and where it came from */
    char xform[512];
    char xform_src[SV_CKPT_PATH_MAX + 256];
    char *prov; /* eval.json's "provenance" as JSON text, or NULL */
    /* eval.json "skipped" (images left out by eval --skip-unreadable; 0 when not recorded) and
     * the "skipped_files" it names (at most what eval lists) */
    long long skipped;
    char **skipped_files;
    int n_skipped_files;
} sv_rp_eval_data;

/* Release what e owns (also after a failed or partial load, and on a zeroed e). */
void sv_rp_eval_data_free(sv_rp_eval_data *e);

/* Read eval.json at path into a zeroed e. Checked: a JSON object; top1 and top5 numbers in [0, 1]
 * (null only for zero samples), loss a number >= 0 or null; every count a non-negative integer
 * (num_samples, and per class correct and total, required; top1_correct, top5_correct,
 * num_classes and the per-class index optional); top1_correct <= top5_correct <= num_samples;
 * each fraction equal to its counts (top1, top5, per-class accuracy); one per_class entry (an
 * object with a string "class") per class, num_classes of them when recorded, each index equal
 * to its position, whose totals add up to num_samples and whose correct counts add up to
 * top1_correct; "ema", when present and not null, an object whose top1, top5, loss and samples
 * are checked likewise; "skipped" (optional) a non-negative integer and "skipped_files"
 * (optional) an array of at most 4096 strings. Then e->xform is the preprocessing: eval.json's own "eval_transform"
 * when it records one, else the one the run's latest checkpoint recorded (under
 * sv_rp_ckpt_root; training evaluates with exactly that transform), else "" (never an error);
 * e->prov is eval.json's "provenance" object as JSON text. Sets e->have on success. After an
 * error e may hold partial arrays: sv_rp_eval_data_free releases them. */
sv_status sv_rp_load_eval(const char *path, const char *run_dir, sv_rp_eval_data *e);

/* Read confusion.csv at path into e->conf (allocated here) for an e loaded by sv_rp_load_eval
 * with e->have and e->K > 0. Checked: eval's header cell ("true\predicted"), one column and one
 * row per class of eval.json, every cell a non-negative integer (at most 18 digits), every row
 * adding up to its class's total in eval.json, nothing but blank lines after the last row. */
sv_status sv_rp_load_confusion(const char *path, sv_rp_eval_data *e);

/* The run's checkpoint root into root (cap bytes): run_dir's config.toml `ckpt-dir` when it names
 * one (a relative one, from a run recorded before paths were made absolute, taken from where that
 * run was started when that can be told from its recorded `out`), else RUN_DIR/checkpoints. A
 * config.toml that cannot be read (a repeated key, a malformed line) is an error. */
sv_status sv_rp_ckpt_root(const char *run_dir, char *root, size_t cap);

#endif
