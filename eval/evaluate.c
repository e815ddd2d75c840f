#include "eval/evaluate.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "core/trace.h"
#include "ckpt/ckpt_meta.h"
#include "ckpt/ckpt_out.h"
#include "fsdp/agree.h"

size_t sv_eval_metrics_bytes(int num_classes) { return (sv_metrics_i64_len(num_classes) + SV_METRICS_F64_LEN) * 8; }

sv_status sv_eval_init(sv_evaluator *e, sv_fsdp *f, const sv_dataset *ds, const sv_eval_opts *o,
                       const sv_eval_bufs *bufs) {
    memset(e, 0, sizeof *e);
    e->f = f;
    e->ds = ds;
    const sv_vit_config *c = &f->model->cfg;
    int B = f->model->B, K = c->num_classes;
    if (sv_dataset_num_classes(ds) > K)
        return SV_FAIL(SV_ERR_INVALID, "evaluation data has %d classes but the model has --num-classes %d",
                       sv_dataset_num_classes(ds), K);
    sv_loader_opts lo =
        sv_loader_opts_for(ds, SV_TRANSFORM_EVAL, B, f->rank, f->world_size, o->seed, c->img, c->in_chans);
    if (o->norm >= 0) lo.norm = (sv_norm_preset)o->norm;
    if (o->crop_pct > 0) lo.crop_pct = o->crop_pct;
    lo.mean = o->mean;
    lo.std = o->std;
    lo.interp = o->interp;
    lo.threads = o->workers;
    lo.no_substitute = 1; /* evaluation never counts another sample in place of an unreadable one */
    e->skip_unreadable = o->skip_unreadable != 0;
    if (o->xform) e->xform = *o->xform;
    sv_status st = sv_metrics_init(&e->m, K);
    if (st == SV_OK) st = sv_loader_create(&lo, &e->ld);
    e->d_images = bufs->images;
    if (sv_be_compute_elem_size(f->be) != 4) e->d_logits32 = bufs->logits32;
    e->d_i64 = bufs->metrics;
    if (st == SV_OK) e->d_f64 = (double *)(e->d_i64 + e->m.i64_len);
    if (st == SV_OK && !(e->h_logits = malloc((size_t)B * K * 4)))
        st = SV_FAIL(SV_ERR_OOM, "eval logits (%d x %d)", B, K);
    if (st != SV_OK) {
        sv_err_frame(__FILE__, __LINE__);
        sv_eval_free(e);
    }
    return st;
}

static sv_status merge(sv_evaluator *e) {
    sv_backend *be = e->f->be;
    sv_comm *c = e->f->world;
    sv_metrics *m = &e->m;
    SV_TRY(sv_be_upload(be, e->d_i64, m->i64, m->i64_len * 8));
    SV_TRY(sv_be_upload(be, e->d_f64, m->f64, SV_METRICS_F64_LEN * 8));
    SV_TRY(sv_comm_all_reduce_sync(c, e->d_i64, m->i64_len, SV_COMM_I64, SV_COMM_SUM));
    SV_TRY(sv_comm_all_reduce_sync(c, e->d_f64, SV_METRICS_F64_LEN, SV_COMM_F64, SV_COMM_SUM));
    SV_TRY(sv_be_download(be, m->i64, e->d_i64, m->i64_len * 8));
    SV_TRY(sv_be_download(be, m->f64, e->d_f64, SV_METRICS_F64_LEN * 8));
    return sv_be_sync(be);
}

/* v[0..n) reduced over f->world (SV_COMM_SUM or SV_COMM_MIN), staged through the metrics
 * buffer (n <= its i64_len, which is >= 6): no allocation, so no rank can fail alone here. */
static sv_status reduce_i64(sv_evaluator *e, int64_t *v, size_t n, sv_comm_op op) {
    sv_backend *be = e->f->be;
    SV_TRY(sv_be_upload(be, e->d_i64, v, n * 8));
    SV_TRY(sv_comm_all_reduce_sync(e->f->world, e->d_i64, n, SV_COMM_I64, op));
    SV_TRY(sv_be_download(be, v, e->d_i64, n * 8));
    return sv_be_sync(be);
}

/* The unreadable samples every rank found, agreed: e->skipped_idx = the first
 * SV_EVAL_SKIPPED_SHOWN dataset indices over all ranks, one MIN all-reduce each (a rank's own
 * first ones, local_idx, ascending: its samples come in dataset order, so the global first ones
 * are among them). Collective; only called when some rank found one. */
static sv_status agree_unreadable(sv_evaluator *e, const int64_t *local_idx, int n_local) {
    int taken = 0; /* local_idx[0..taken) are already in e->skipped_idx */
    e->n_skipped_idx = 0;
    while (e->n_skipped_idx < SV_EVAL_SKIPPED_SHOWN) {
        int64_t v = taken < n_local ? local_idx[taken] : INT64_MAX;
        SV_TRY(reduce_i64(e, &v, 1, SV_COMM_MIN));
        if (v == INT64_MAX) break; /* the same on every rank */
        e->skipped_idx[e->n_skipped_idx++] = v;
        if (taken < n_local && local_idx[taken] == v) taken++; /* each index lives on one rank */
    }
    return SV_OK;
}

/* "NAME, NAME, ..." of e->skipped_idx into buf (escaped, at most about cap bytes). */
static void unreadable_names(const sv_evaluator *e, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < e->n_skipped_idx; i++) {
        char name[1024], esc[SV_ESC_CAP];
        sv_dataset_sample_name(e->ds, (size_t)e->skipped_idx[i], name, sizeof name);
        sv_log_esc(name, esc, sizeof esc);
        size_t need = strlen(esc) + (i ? 2 : 0);
        if (used + need + 6 >= cap) {
            snprintf(buf + used, cap - used, "%s...", i ? ", " : "");
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", esc);
    }
    if (e->skipped > e->n_skipped_idx) snprintf(buf + used, cap - used, ", ...");
}

sv_status sv_eval_run(sv_evaluator *e) {
    double t0 = sv_now_s();
    sv_fsdp *f = e->f;
    const sv_vit_config *c = &f->model->cfg;
    int B = f->model->B, K = c->num_classes;
    size_t img_bytes = (size_t)B * c->in_chans * c->img * c->img * 4;
    sv_metrics_reset(&e->m);
    e->skipped = 0;
    e->n_skipped_idx = 0;
    e->unreadable_failed = 0;
    if (e->passes > 0) SV_TRY(sv_loader_seek(e->ld, 0, 0)); /* an eval pass starts at position 0 */
    /* Every rank runs all `steps` forward passes (each all-gathers the units), whatever its data
     * does: a data error here is kept (lst) and the rank goes on with zero images, so the others
     * are never left waiting; the ranks agree on it after the pass. */
    uint64_t steps = sv_loader_steps_per_epoch(e->ld);
    sv_status lst = SV_OK;
    char lmsg[1024] = "";
    long long bad = 0; /* unreadable samples of this rank */
    int n_idx = 0;
    int64_t idx[SV_EVAL_SKIPPED_SHOWN];
    for (uint64_t step = 0; step < steps; step++) {
        const sv_batch *b = NULL;
        if (lst == SV_OK) {
            lst = sv_loader_next(e->ld, &b);
            if (lst == SV_OK && !b)
                lst = SV_FAIL(SV_ERR_INVALID, "eval: the loader ended after %llu of %llu batches",
                              (unsigned long long)step, (unsigned long long)steps);
            if (lst != SV_OK) {
                snprintf(lmsg, sizeof lmsg, "%s", sv_err_msg());
                SV_TRY(sv_be_zero(f->be, e->d_images, img_bytes));
            }
        }
        if (lst == SV_OK) {
            bad += b->n_unreadable;
            for (int j = 0; j < b->n && b->n_unreadable; j++)
                if (!b->valid[j] && b->sample_index[j] >= 0 && n_idx < SV_EVAL_SKIPPED_SHOWN)
                    idx[n_idx++] = b->sample_index[j];
            SV_TRY(sv_be_upload(f->be, e->d_images, b->images, img_bytes));
        }
        SV_TRY(sv_fsdp_forward(f, e->d_images));
        if (lst != SV_OK) continue;
        if (e->d_logits32) {
            SV_TRY(sv_be_compute_to_f32(f->be, e->d_logits32, f->model->logits, (size_t)B * K));
            SV_TRY(sv_be_download(f->be, e->h_logits, e->d_logits32, (size_t)B * K * 4));
        } else {
            SV_TRY(sv_be_download(f->be, e->h_logits, f->model->logits, (size_t)B * K * 4));
        }
        SV_TRY(sv_be_sync(f->be));
        /* unreadable samples are holes (valid 0): not counted, under no label */
        lst = sv_metrics_add_batch(&e->m, e->h_logits, b->labels, b->valid, B);
        if (lst != SV_OK) snprintf(lmsg, sizeof lmsg, "%s", sv_err_msg());
    }
    e->passes++; /* the loader has moved: the next pass seeks back to 0 */
    /* (ranks with a data error, unreadable samples) summed over the ranks, staged through the
     * metrics buffer: no allocation when all is well */
    int64_t v[2] = {lst != SV_OK, bad};
    SV_TRY(reduce_i64(e, v, 2, SV_COMM_SUM));
    if (v[0] > 0) { /* every rank returns the lowest failing rank's error */
        if (lst != SV_OK) lst = SV_FAIL(lst, "%s", lmsg);
        sv_status ast = sv_fsdp_agree(f, lst);
        if (ast == SV_OK)
            ast = SV_FAIL(SV_ERR_COMM, "eval: %lld ranks reported a data error, none agreed", (long long)v[0]);
        sv_err_frame(__FILE__, __LINE__);
        return ast;
    }
    if (v[1] > 0) {
        SV_TRY(agree_unreadable(e, idx, n_idx));
        e->skipped = (long long)v[1];
        char names[640];
        unreadable_names(e, names, sizeof names);
        if (!e->skip_unreadable) {
            e->unreadable_failed = 1;
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%lld unreadable image%s in the evaluation data (evaluation substitutes no other sample "
                           "and leaves none out silently): %s",
                           e->skipped, e->skipped == 1 ? "" : "s", names);
        }
        if (f->rank == 0) /* the same on every rank */
            SV_WARN("eval: left out %lld unreadable image%s (recorded as \"skipped\" in eval.json): %s", e->skipped,
                    e->skipped == 1 ? "" : "s", names);
    }
    /* entries the data set's scan left out (sv_dataset_opts.leave_out_unusable) are skipped too */
    e->skipped += (long long)sv_dataset_left_out(e->ds);
    SV_TRY(merge(e));
    e->seconds = sv_now_s() - t0;
    if (sv_metrics_samples(&e->m) == 0) /* merged: the same on every rank */
        return SV_FAIL(SV_ERR_INVALID,
                       "eval: no sample evaluated (%lld of the data's %zu images unreadable and left out): an "
                       "evaluation of zero samples has no top-1, top-5 or loss, so no result is reported",
                       e->skipped, sv_dataset_len(e->ds) + sv_dataset_left_out(e->ds));
    if (sv_metrics_nonfinite(&e->m) > 0) /* merged: the same on every rank */
        return SV_FAIL(SV_ERR_NONFINITE,
                       "eval: the model gave non-finite logits (NaN or Inf) for %lld of %lld samples: the weights (or "
                       "the input) produce them, so no top-1, top-5 or loss is reported",
                       (long long)sv_metrics_nonfinite(&e->m), (long long)sv_metrics_samples(&e->m));
    return SV_OK;
}

const char *sv_eval_class_name(const sv_evaluator *e, int k, char *buf, size_t cap) {
    if (k < sv_dataset_num_classes(e->ds)) return sv_dataset_class_name(e->ds, k);
    snprintf(buf, cap, "%d", k);
    return buf;
}

/* Is the existing regular file at path an earlier evaluation's output: eval.json a JSON object
 * with "top1" and "num_samples", confusion.csv starting with its header cell? */
static int earlier_output(const char *path, int json) {
    static const char *const keys[] = {"top1", "num_samples"};
    static const char head[] = "true\\predicted,";
    return json ? sv_json_file_has_members(path, (size_t)64 << 20, keys, NULL, 2)
                : sv_fileio_starts_with(path, head, sizeof head - 1);
}

/* The outputs an evaluation writes into its directory, and DIR/NAME of output i (an error when
 * DIR is too long). */
static const char *const k_outputs[] = {"eval.json", "confusion.csv"};
static sv_status output_path(const char *dir, int i, char *p, size_t cap) {
    if ((size_t)snprintf(p, cap, "%s/%s", dir, k_outputs[i]) >= cap)
        return SV_FAIL(SV_ERR_INVALID, "--out too long: %.200s", dir);
    return SV_OK;
}

sv_status sv_eval_check_outputs(const char *dir, const char *ckpt_dir, int writer) {
    char p[4096];
    if (writer) SV_TRY(sv_ckpt_out_check_writable(dir, "eval --out")); /* only the writing rank's view counts */
    for (int i = 0; i < 2; i++) { /* a file is inside the checkpoint exactly when DIR is */
        SV_TRY(output_path(dir, i, p, sizeof p));
        SV_TRY(sv_ckpt_out_check(p, ckpt_dir, 0, "eval output"));
        /* an existing file of that name is replaced only when an evaluation wrote it */
        if (access(p, F_OK) == 0 && !earlier_output(p, i == 0))
            return SV_FAIL(SV_ERR_INVALID,
                           "eval output %s exists and is not an earlier evaluation's %s: refusing to replace it; "
                           "remove it or choose another --out",
                           p, k_outputs[i]);
    }
    return SV_OK;
}

sv_status sv_eval_remove_earlier_outputs(sv_fsdp *f, sv_status st, const char *dir) {
    /* agreed first: a rank that failed its own checks (node-local data, a model it could not
     * read) stops every rank before anything is removed */
    SV_TRY(sv_fsdp_agree(f, st));
    for (int i = 0; i < 2 && st == SV_OK && f->rank == 0; i++) {
        char p[4096];
        struct stat sb;
        st = output_path(dir, i, p, sizeof p);
        if (st != SV_OK || lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode) || !earlier_output(p, i == 0))
            continue; /* none, or not an evaluation's: left as it is */
        if (unlink(p) != 0 && errno != ENOENT)
            st = SV_FAIL(SV_ERR_IO, "remove the earlier evaluation's %s: %s", p, strerror(errno));
        else
            SV_INFO("removed the earlier evaluation's %s (this evaluation writes its own when it completes)", p);
    }
    return sv_fsdp_agree(f, st);
}

sv_status sv_eval_check_class_names(const sv_dataset *ds, char *const *labels, int n_labels, const char *src) {
    if (!labels || n_labels <= 0 || sv_dataset_kind_of(ds) == SV_DATASET_SYNTHETIC) return SV_OK;
    int n = sv_dataset_num_classes(ds);
    if (n > n_labels) {
        char a[SV_ESC_CAP];
        return SV_FAIL(SV_ERR_INVALID,
                       "the data has %d classes but the model's class names (from %s) are %d: class %d of the data "
                       "(\"%s\") is no class the model knows",
                       n, src, n_labels, n_labels, sv_log_esc(sv_dataset_class_name(ds, n_labels), a, sizeof a));
    }
    for (int k = 0; k < n; k++) {
        const char *d = sv_dataset_class_name(ds, k);
        if (!strcmp(d, labels[k])) continue;
        char a[SV_ESC_CAP], b[SV_ESC_CAP];
        return SV_FAIL(SV_ERR_INVALID,
                       "class %d of the data is \"%s\" but the model's class %d is \"%s\" (label names "
                       "from %s): the data set's labels do not mean the model's classes",
                       k, sv_log_esc(d, a, sizeof a), k, sv_log_esc(labels[k], b, sizeof b), src);
    }
    return SV_OK;
}

/* eval.json's "eval_transform": what the pass computed with (docs/evaluation.md). */
static void write_xform(sv_json_writer *w, const void *ctx) {
    const sv_evaluator *e = ctx;
    /* unreadable images left out (skip_unreadable; always 0 otherwise, the pass fails instead) */
    sv_json_key(w, "skipped"), sv_json_i64(w, e->skipped);
    sv_json_key(w, "skipped_files");
    sv_json_arr_begin(w);
    /* the scan's left-out entries first, then the unreadable samples: SV_EVAL_SKIPPED_SHOWN in all */
    size_t n_left = sv_dataset_left_out(e->ds), shown = 0;
    for (size_t i = 0; i < n_left && shown < SV_EVAL_SKIPPED_SHOWN; i++, shown++)
        sv_json_str(w, sv_dataset_left_out_name(e->ds, i));
    for (int i = 0; i < e->n_skipped_idx && shown < SV_EVAL_SKIPPED_SHOWN; i++, shown++) {
        char name[1024];
        sv_dataset_sample_name(e->ds, (size_t)e->skipped_idx[i], name, sizeof name);
        sv_json_str(w, name);
    }
    sv_json_arr_end(w);
    if (e->has_ema) {
        sv_json_key(w, "ema");
        sv_json_obj_begin(w);
        sv_json_key(w, "top1"), sv_json_f64(w, e->ema_top1);
        sv_json_key(w, "top5"), sv_json_f64(w, e->ema_top5);
        sv_json_key(w, "loss"), sv_json_f64(w, e->ema_loss);
        sv_json_key(w, "samples"), sv_json_i64(w, e->ema_samples);
        sv_json_obj_end(w);
    }
    sv_json_doc prov;
    if (e->provenance_json &&
        sv_json_parse(&prov, e->provenance_json, strlen(e->provenance_json), "provenance", NULL) == SV_OK) {
        sv_json_key(w, "provenance");
        sv_json_value(w, &prov.root);
        sv_json_doc_free(&prov);
    }
    if (!e->xform.present) return;
    sv_ckpt_meta m = {.xform = e->xform};
    sv_ckpt_meta_write(w, &m);
}

sv_status sv_eval_write_outputs(const sv_evaluator *e, const char *dir, const char *const *names) {
    int K = e->m.num_classes;
    SV_TRY(sv_eval_check_outputs(dir, NULL, 1));
    SV_TRY(sv_fileio_mkdirs(dir, 0755));
    const char **own = NULL;
    char *num = NULL;
    if (!names) {
        own = malloc((size_t)K * sizeof *own);
        num = malloc((size_t)K * 16);
        if (!own || !num) {
            free(own);
            free(num);
            return SV_FAIL(SV_ERR_OOM, "class names for %d classes", K);
        }
        for (int k = 0; k < K; k++) own[k] = sv_eval_class_name(e, k, num + (size_t)k * 16, 16);
        names = own;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/eval.json", dir);
    sigset_t held; /* the two files as one step for a signal: never an eval.json without its confusion.csv */
    sv_fileio_commit_begin(&held);
    sv_status st = sv_metrics_write_json_ex(&e->m, p, names, write_xform, e);
    if (st == SV_OK && sv_metrics_has_confusion(&e->m)) {
        snprintf(p, sizeof p, "%s/confusion.csv", dir);
        st = sv_metrics_write_confusion_csv(&e->m, p, names);
    } else if (st == SV_OK) {
        SV_INFO("eval: no confusion.csv: %d classes (a confusion matrix is kept for at most %d)", K,
                SV_METRICS_CONFUSION_MAX);
    }
    sv_fileio_commit_end(&held);
    free(own);
    free(num);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

void sv_eval_free(sv_evaluator *e) {
    if (e->ld) sv_loader_destroy(e->ld);
    free(e->h_logits);
    if (e->m.i64) sv_metrics_free(&e->m);
    memset(e, 0, sizeof *e);
}
