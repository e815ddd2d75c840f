/* shardvit eval: classification metrics accumulated over batches and ranks.
 *
 * Rules (documented in docs/formats.md and tested exactly):
 *  - one order of the classes per sample, used for everything: a larger logit ranks first, and
 *    equal logits rank by index, the lowest first (torch.argmax's rule: "the first maximal
 *    value"). NaN ranks below every number (-inf included) and NaNs tie with each other, so a
 *    NaN never wins unless the whole row is NaN (then class 0 does). sv_metrics_rank gives a
 *    class's position in that order, sv_metrics_argmax the class at position 0.
 *  - prediction (confusion matrix column): sv_metrics_argmax.
 *  - top-k: correct when the true class's rank is below k. Top-1 correct is therefore exactly
 *    "prediction == label": the top-1 count, the per-class correct counts and the confusion
 *    diagonal agree, including on exact ties (frequent with bf16 logits: 8 mantissa bits).
 *  - loss: cross-entropy -log softmax(logits)[label], computed in double, summed; a sample with
 *    a non-finite loss makes the sum non-finite (and eval.json then shows null).
 * Samples whose validity mask entry is 0 (padding of the last distributed batch) are ignored.
 *
 *  - non-finite: a sample with any NaN or Inf logit is counted (i64[3]); the orders above still
 *    place it, but its prediction means nothing: sv_eval_run reports no result when the count
 *    is not 0 (the weights or the input produce non-finite values).
 * State is two plain arrays so ranks can combine with one all-reduce each (sum as I64 and F64):
 *   i64[0] samples, i64[1] top-1 correct, i64[2] top-5 correct, i64[3] non-finite samples,
 *   i64[4 .. 4+K) per-class correct (top-1), i64[4+K .. 4+2K) per-class total,
 *   i64[4+2K .. 4+2K+K*K) confusion, row = true class, column = predicted class, only when
 *   K <= SV_METRICS_CONFUSION_MAX (K*K counters: 8 MiB at 1024 classes, 3.6 GiB per rank at
 *   ImageNet-21k's 21,843, staged through the run's arena for the all-reduce);
 *   f64[0] summed loss.
 * sv_metrics_init allocates (not a hot path); sv_metrics_add_batch never allocates. */
#ifndef SV_EVAL_METRICS_H
#define SV_EVAL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/json.h"
#include "core/status.h"

#define SV_METRICS_TOPK 5
#define SV_METRICS_CONFUSION_MAX 1024 /* classes up to which the confusion matrix is kept */
#define SV_METRICS_F64_LEN 1

typedef struct sv_metrics {
    int num_classes;
    size_t i64_len; /* 4 + 2K (+ K*K with a confusion matrix) */
    int64_t *i64;   /* owned, layout above */
    double f64[SV_METRICS_F64_LEN];
} sv_metrics;

/* The predicted class of logits x (K): the first class in the order above (the largest logit,
 * the lowest index among equal ones, NaN last). K >= 1. */
int sv_metrics_argmax(const float *x, int K);
/* Class y's position in that order: the number of classes with a larger logit, plus those with
 * an equal logit (or both NaN) at a lower index. 0 <=> y is the argmax; correct in top-k <=> < k. */
int sv_metrics_rank(const float *x, int K, int y);

size_t sv_metrics_i64_len(int num_classes);
/* num_classes in [1, 1<<20]; zeroed. */
sv_status sv_metrics_init(sv_metrics *m, int num_classes);
void sv_metrics_free(sv_metrics *m);
void sv_metrics_reset(sv_metrics *m);

/* logits (B, K) row-major fp32 host; labels (B); valid (B) or NULL for all valid.
 * A valid sample with a label outside [0, K) => SV_ERR_INVALID naming the sample and label
 * (nothing of that batch is added). */
sv_status sv_metrics_add_batch(sv_metrics *m, const float *logits, const int32_t *labels, const uint8_t *valid,
                               int batch);

/* dst += src (same num_classes). */
sv_status sv_metrics_merge(sv_metrics *dst, const sv_metrics *src);

/* Accessors (pointers into i64). */
static inline int64_t sv_metrics_samples(const sv_metrics *m) { return m->i64[0]; }
static inline int64_t sv_metrics_top1_correct(const sv_metrics *m) { return m->i64[1]; }
static inline int64_t sv_metrics_top5_correct(const sv_metrics *m) { return m->i64[2]; }
static inline int64_t sv_metrics_nonfinite(const sv_metrics *m) { return m->i64[3]; }
static inline int64_t *sv_metrics_class_correct(const sv_metrics *m) { return m->i64 + 4; }
static inline int64_t *sv_metrics_class_total(const sv_metrics *m) { return m->i64 + 4 + m->num_classes; }
static inline int sv_metrics_has_confusion(const sv_metrics *m) { return m->num_classes <= SV_METRICS_CONFUSION_MAX; }
/* (K, K): [true * K + predicted]; NULL without a confusion matrix (K > SV_METRICS_CONFUSION_MAX) */
static inline int64_t *sv_metrics_confusion(const sv_metrics *m) {
    return sv_metrics_has_confusion(m) ? m->i64 + 4 + 2 * (size_t)m->num_classes : NULL;
}

/* Fractions in [0, 1] and mean loss; NaN when no samples. */
double sv_metrics_top1(const sv_metrics *m);
double sv_metrics_top5(const sv_metrics *m);
double sv_metrics_mean_loss(const sv_metrics *m);

/* Write eval.json atomically:
 *   {"top1":f,"top5":f,"loss":f,"num_samples":n,"top1_correct":n,"top5_correct":n,
 *    "num_classes":K,"per_class":[{"class":name,"index":k,"accuracy":f|null,"correct":n,
 *    "total":n},...]}
 * class_names: K strings, or NULL to use "0", "1", ... . Fractions of empty sets are null. */
sv_status sv_metrics_write_json(const sv_metrics *m, const char *path, const char *const *class_names);
/* The same with more members after "per_class": extra(w, ctx) writes them (key + value each;
 * evaluate.c adds the evaluation's "eval_transform"). */
sv_status sv_metrics_write_json_ex(const sv_metrics *m, const char *path, const char *const *class_names,
                                   void (*extra)(sv_json_writer *w, const void *ctx), const void *ctx);

/* Write the confusion matrix as CSV atomically: header "true\predicted,<name0>,...", then one
 * row per true class "<name>,<count>,...". Names are quoted (RFC 4180) when they contain a
 * comma, quote, CR or LF. SV_ERR_INVALID without a confusion matrix (sv_metrics_has_confusion). */
sv_status sv_metrics_write_confusion_csv(const sv_metrics *m, const char *path, const char *const *class_names);

#endif
