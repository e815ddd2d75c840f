/* shardvit eval: the evaluation loop — forward-only passes of the FSDP model over a data set,
 * every sample seen exactly once across ranks, metrics merged over ranks.
 *
 * Each rank reads its slice of every global batch through a loader in SV_TRANSFORM_EVAL mode
 * (identity order, resize + center crop, the last batch padded with valid = 0), runs
 * sv_fsdp_forward (which all-gathers units, so every rank must take part in every pass: the
 * loader gives all ranks the same number of batches), copies the logits to the host and adds
 * them to an sv_metrics (eval/metrics.h). After the pass the metric arrays are summed over the
 * world communicator (one I64 and one F64 all-reduce, staged through backend memory so NCCL
 * works too), so every rank ends up with the same merged metrics. Top-1/top-5 counts are exact
 * integers, hence identical at any world size for identical logits; the loss sum differs only
 * by the order of the floating-point additions.
 *
 * Unreadable images (docs/evaluation.md "Unreadable images"): evaluation never substitutes another
 * sample for an unreadable file (the loader runs with no_substitute; substituting would count
 * the substitute under its own label and change the per-class totals). The pass still runs to
 * its end on every rank (so no rank is left waiting in a collective), then the ranks agree on the
 * number of unreadable samples and their first few dataset indices. By default the pass then
 * fails on EVERY rank with the same SV_ERR_CORRUPT message naming the files (e->unreadable_failed
 * = 1); with opts.skip_unreadable the readable samples are the result (num_samples, top-1 and
 * per-class totals over them only) and e->skipped / e->skipped_idx record what was left out
 * (eval.json "skipped", "skipped_files"); when that leaves no sample at all the pass fails
 * (SV_ERR_INVALID on every rank: zero samples have no accuracy to report). A loader failure on one rank (e.g. out of memory) is
 * likewise agreed over the ranks after the pass (sv_fsdp_agree) instead of leaving the others
 * in the next forward pass.
 *
 * An sv_evaluator owns a loader (worker threads), device buffers for one micro-batch and the
 * metrics; create it once and run it as often as needed (periodic evaluation in training):
 * sv_eval_run never allocates (except on the failure / unreadable-image path below). */
#ifndef SV_EVAL_EVALUATE_H
#define SV_EVAL_EVALUATE_H

#include "data/dataset.h"
#include "data/loader.h"
#include "eval/metrics.h"
#include "ckpt/checkpoint.h"
#include "fsdp/fsdp.h"

typedef struct sv_eval_opts {
    int workers; /* loader threads per rank (0 = cores) */
    double
        crop_pct; /* resize shorter side to img / crop_pct before the center crop (0 = 0.875; double, as data/loader.h) */
    int norm;     /* sv_norm_preset, or -1: HALF for 1 channel, IMAGENET for 3 (as train does) */
    const float *mean, *std;    /* in_chans values overriding norm (both or neither), or NULL */
    int interp;                 /* resampling: 0 = SV_INTERP_BILINEAR, 1 = SV_INTERP_BICUBIC */
    uint64_t seed;              /* loader seed (eval order does not depend on it) */
    const sv_ckpt_xform *xform; /* the transform the fields above describe, recorded in eval.json
                                   as "eval_transform" (index.json's schema); NULL: not recorded */
    int skip_unreadable;        /* 0: unreadable images fail the pass (every rank, naming them);
                                   1: leave them out, counted in e->skipped and eval.json */
} sv_eval_opts;

#define SV_EVAL_OPTS_DEFAULT \
    { \
        .workers = 0, .crop_pct = 0.0, .norm = -1, .mean = NULL, .std = NULL, .interp = 0, .seed = 0, \
        .skip_unreadable = 0 \
    }

/* Unreadable files named in the error message and eval.json "skipped_files" (the first ones in
 * dataset order). */
#define SV_EVAL_SKIPPED_SHOWN 8

typedef struct sv_evaluator {
    sv_fsdp *f;           /* borrowed: set up, carved, model attached */
    const sv_dataset *ds; /* borrowed: outlives the evaluator */
    sv_loader *ld;
    int passes;          /* sv_eval_run calls that walked the loader (failed ones too) */
    float *d_images;     /* (B, C, img, img) f32, backend memory (borrowed: sv_eval_bufs) */
    float *d_logits32;   /* (B, K) f32, backend memory; only for a bf16 compute dtype (borrowed) */
    float *h_logits;     /* (B, K) f32 host */
    int64_t *d_i64;      /* (metrics.i64_len) backend memory: all-reduce staging (borrowed) */
    double *d_f64;       /* (SV_METRICS_F64_LEN) backend memory, right after d_i64 (borrowed) */
    sv_metrics m;        /* merged results of the last pass (identical on every rank) */
    double seconds;      /* wall time of the last pass */
    sv_ckpt_xform xform; /* copy of opts->xform (present = 0: none) */
    /* has_ema: eval.json also gets "ema": {"top1", "top5", "loss", "samples"} (train --model-ema:
       the same data evaluated with the weight EMA; set by the caller) */
    int has_ema;
    double ema_top1, ema_top5, ema_loss;
    long long ema_samples;
    /* nullable: a JSON object text that eval.json carries as "provenance" (app/provenance.h; set
       by the caller, owned by it) */
    const char *provenance_json;
    /* Unreadable images of the last pass, agreed over the ranks (identical on every rank):
       skipped = how many were left out (only with skip_unreadable; the pass fails otherwise),
       skipped_idx[0..n_skipped_idx) = the first of them in dataset order. unreadable_failed = 1
       when the last sv_eval_run failed because of unreadable images. */
    int skip_unreadable;
    long long skipped;
    int n_skipped_idx;
    int64_t skipped_idx[SV_EVAL_SKIPPED_SHOWN];
    int unreadable_failed;
} sv_evaluator;

/* The device buffers an evaluator works in, lent by the caller for as long as the evaluator
 * lives and used only inside sv_eval_run (so a trainer can lend the buffers of its training
 * micro-batch between steps; app/run.h carves them with the arena, so the memory plan counts
 * them): images (B, C, img, img) f32; logits32 (B, K) f32 (read only when the compute dtype is
 * stored in 2 bytes); metrics sv_eval_metrics_bytes(K) bytes, 8-byte aligned. B = the model's
 * micro-batch, K = its classes. */
typedef struct sv_eval_bufs {
    float *images, *logits32;
    void *metrics;
} sv_eval_bufs;
size_t sv_eval_metrics_bytes(int num_classes);

/* Create the loader for f's micro-batch (f->model->B) and model shape, in the lent buffers.
 * The data set's labels must be < the model's num_classes (else SV_ERR_INVALID naming both). */
sv_status sv_eval_init(sv_evaluator *e, sv_fsdp *f, const sv_dataset *ds, const sv_eval_opts *o,
                       const sv_eval_bufs *bufs);

/* One full pass over the data set on every rank of f->world (collective), then merge. Results
 * in e->m. Resets the metrics first. Unreadable images: an SV_ERR_CORRUPT naming them on every
 * rank, or (skip_unreadable) left out and recorded in e->skipped (see above). A data error on
 * one rank is returned on every rank. A pass that evaluated no sample is an error. */
sv_status sv_eval_run(sv_evaluator *e);

/* Class name k for outputs: the data set's names for its classes, "k" for head classes the data
 * set does not have. buf receives the text when it has to be made up. */
const char *sv_eval_class_name(const sv_evaluator *e, int k, char *buf, size_t cap);

/* Write DIR/eval.json and DIR/confusion.csv (mkdir -p DIR; confusion.csv only with a confusion
 * matrix: at most SV_METRICS_CONFUSION_MAX classes). Call on one rank only.
 * names: num_classes strings or NULL for the data set's names (sv_eval_class_name).
 * Checks the outputs first (sv_eval_check_outputs with no checkpoint). */
sv_status sv_eval_write_outputs(const sv_evaluator *e, const char *dir, const char *const *names);

/* Could sv_eval_write_outputs write into DIR without destroying anything it did not create?
 * DIR/eval.json and DIR/confusion.csv must be regular files where they exist (never a
 * directory, FIFO, device or symbolic link) and an earlier evaluation's outputs (eval.json a JSON
 * object with "top1" and "num_samples", confusion.csv starting with its header cell
 * "true\predicted,"), and DIR must not be inside the checkpoint step
 * directory `ckpt_dir` being evaluated (nullable). ckpt/ckpt_out.h has the rules. `writer`: the
 * rank that will write (only its view of DIR counts): DIR, or where it would be made, must also be
 * writable for it (sv_ckpt_out_check_writable). Call it before the evaluation so a bad --out
 * fails in seconds, not after the pass. */
sv_status sv_eval_check_outputs(const char *dir, const char *ckpt_dir, int writer);

/* Remove DIR/eval.json and DIR/confusion.csv where they are an earlier evaluation's outputs
 * (regular files recognised as sv_eval_check_outputs recognises them; a file an evaluation did
 * not write is never removed), with an info line naming each. For a command that writes its
 * results to DIR: call it once every argument and input check has passed, just before the
 * evaluation starts, so that an evaluation that then fails (or is stopped) leaves no earlier
 * result in DIR that would read as its own (a later `shardvit report` of DIR would take it for
 * one); the new files are written at the end (sv_eval_write_outputs). Collective over f's world:
 * every rank passes its own status so far (st), and the ranks agree on it first, so a check that
 * failed on one rank only (node-local storage) removes nothing; then rank 0 removes, and every
 * rank returns the agreed outcome. */
sv_status sv_eval_remove_earlier_outputs(sv_fsdp *f, sv_status st, const char *dir);

/* The model's recorded label names (index.json / config.json: labels[0..n_labels), src names
 * where they came from) against the data set's class names: label k of the data set must mean
 * class k of the model. The first differing class is an SV_ERR_INVALID naming its index and
 * both names (escaped); a data set with more classes than names is an SV_ERR_INVALID naming the
 * first class without one (its label would be scored against an output the model has no name
 * for). Nothing to compare (no labels, or a synthetic data set, which has no names): SV_OK. */
sv_status sv_eval_check_class_names(const sv_dataset *ds, char *const *labels, int n_labels, const char *src);

void sv_eval_free(sv_evaluator *e);

#endif
