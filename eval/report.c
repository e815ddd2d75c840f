/* HTML run report: parse the run directory's files, then emit one page of inline CSS + SVG. */
#include "eval/report.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt_out.h"
#include "core/fileio.h"
#include "core/json.h"
#include "eval/report_inputs.h"
#include "eval/report_svg.h"
#include "ckpt/checkpoint.h"

/* ---- metrics.jsonl ------------------------------------------------------------------------ */

/* S_EMA_*: the weight-EMA evaluation records of train --model-ema (docs/training.md "Weight EMA"). */
enum {
    S_LOSS,
    S_EVAL_LOSS,
    S_TOP1,
    S_TOP5,
    S_LR,
    S_GNORM,
    S_IPS,
    S_TFLOPS,
    S_MFU,
    S_MEM,
    S_WAIT,
    S_SKIP,
    S_EMA_TOP1,
    S_EMA_TOP5,
    S_EMA_LOSS,
    S_LOSS_AVG,
    S_N
};
static const char *const k_keys[S_N] = {
    "loss",           "eval_loss",     "eval_top1",     "eval_top5",     "lr",
    "grad_norm",      "img_per_s",     "tflops",        "mfu",           "mem_bytes",
    "data_wait_frac", "skipped_steps", "eval_ema_top1", "eval_ema_top5", "eval_ema_loss",
    "loss_avg"};

typedef struct metrics_data {
    sv_rp_series s[S_N];
    long lines, bad_lines;
    char *header; /* the header record's line (app/train_log.h), if any */
} metrics_data;

static sv_status load_metrics(const char *path, metrics_data *md) {
    char *text = NULL;
    size_t len = 0;
    SV_TRY(sv_fileio_read_small(path, (size_t)1 << 30, &text, &len));
    for (int k = 0; k < S_N; k++) md->s[k].name = k_keys[k];
    sv_status st = SV_OK;
    for (char *line = text; line < text + len && st == SV_OK;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        if (n > 0) {
            sv_json_doc doc;
            md->lines++;
            if (sv_json_parse(&doc, line, n, path, NULL) != SV_OK)
                md->bad_lines++; /* e.g. a line cut by a crash */
            else {
                const sv_json *step = sv_json_member_get(&doc.root, "step");
                const sv_json *rec = sv_json_member_get(&doc.root, "record");
                if (!step && !md->header && rec && rec->type == SV_JSON_STRING && !strcmp(rec->u.str.s, "header") &&
                    !(md->header = strndup(line, n)))
                    st = SV_FAIL(SV_ERR_OOM, "report: metrics.jsonl header");
                for (int k = 0; k < S_N && step && step->type == SV_JSON_NUMBER && st == SV_OK; k++) {
                    const sv_json *v = sv_json_member_get(&doc.root, k_keys[k]);
                    if (v && v->type == SV_JSON_NUMBER) st = sv_rp_series_add(&md->s[k], step->u.num.d, v->u.num.d);
                }
            }
            sv_json_doc_free(&doc);
        }
        line += n + 1;
    }
    free(text);
    return st;
}

/* ---- page ------------------------------------------------------------------------------- */

static const char *k_css =
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;background:#f4f6fa;"
    "color:#1d2430}header{background:linear-gradient(120deg,#1e3a8a,#3b82f6);color:#fff;padding:28px 40px}"
    "header h1{margin:0;font-size:24px;font-weight:650}header p{margin:6px 0 0;opacity:.85}"
    "main{max-width:1240px;margin:0 auto;padding:24px 32px 60px}h2{font-size:18px;margin:34px 0 12px}"
    ".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:12px}"
    ".card{background:#fff;border-radius:10px;padding:14px 16px;box-shadow:0 1px 3px rgba(0,0,0,.08)}"
    ".card .v{font-size:22px;font-weight:650}.card .l{color:#667085;font-size:12px;text-transform:uppercase;"
    "letter-spacing:.04em}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:16px}"
    ".panel{background:#fff;border-radius:10px;padding:12px 14px;box-shadow:0 1px 3px rgba(0,0,0,.08);"
    "overflow-x:auto}.panel h3{margin:2px 0 6px;font-size:14px}svg text{font-family:inherit}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:4px 10px;border-bottom:1px solid #e5e7eb;"
    "text-align:right}th:first-child,td:first-child{text-align:left}pre{background:#0f172a;color:#e2e8f0;"
    "padding:14px;border-radius:8px;overflow:auto;font-size:12px}.muted{color:#667085}"
    "details summary{cursor:pointer;font-weight:600;margin:24px 0 8px}";

static void card(sv_rp_buf *b, const char *label, const char *value) {
    sv_rp_printf(b, "<div class=\"card\"><div class=\"l\">");
    sv_rp_esc(b, label);
    sv_rp_printf(b, "</div><div class=\"v\">");
    sv_rp_esc(b, value);
    sv_rp_printf(b, "</div></div>\n");
}

static double last_of(const sv_rp_series *s) { return s->n ? s->y[s->n - 1] : NAN; }
static double max_of(const sv_rp_series *s) {
    double m = NAN;
    for (size_t i = 0; i < s->n; i++)
        if (isnan(m) || s->y[i] > m) m = s->y[i];
    return m;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median_of(const sv_rp_series *s) {
    if (!s->n) return NAN;
    double *t = malloc(s->n * sizeof *t);
    if (!t) return NAN;
    memcpy(t, s->y, s->n * sizeof *t);
    qsort(t, s->n, sizeof *t, cmp_double); /* n log n: a long run logs hundreds of thousands of steps */
    double m = s->n % 2 ? t[s->n / 2] : (t[s->n / 2 - 1] + t[s->n / 2]) / 2;
    free(t);
    return m;
}

/* A summary card of the number v (sv_rp_fmt_num). */
static void num_card(sv_rp_buf *b, const char *label, double v, int decimals, double big, int pct) {
    char t[SV_RP_NUM_CAP];
    sv_rp_fmt_num(v, decimals, big, pct, t, sizeof t);
    card(b, label, t);
}

static void summary_cards(sv_rp_buf *b, const metrics_data *md, const sv_rp_eval_data *ev) {
    sv_rp_printf(b, "<section class=\"cards\">\n");
    const sv_rp_series *S = md->s;
    if (S[S_LOSS].n) {
        num_card(b, "steps", S[S_LOSS].x[S[S_LOSS].n - 1], 0, SV_RP_WHOLE_MAX, 0);
        num_card(b, "final train loss", last_of(&S[S_LOSS]), 4, SV_RP_VALUE_MAX, 0);
    }
    double t1 = ev->have ? ev->top1 : last_of(&S[S_TOP1]), t5 = ev->have ? ev->top5 : last_of(&S[S_TOP5]);
    if (!isnan(t1)) num_card(b, "eval top-1", t1, 2, SV_RP_VALUE_MAX, 1);
    if (!isnan(t5)) num_card(b, "eval top-5", t5, 2, SV_RP_VALUE_MAX, 1);
    double e1 = ev->have && ev->have_ema ? ev->ema_top1 : last_of(&S[S_EMA_TOP1]);
    if (!isnan(e1)) num_card(b, "EMA top-1", e1, 2, SV_RP_VALUE_MAX, 1);
    if (S[S_IPS].n) num_card(b, "images / s (median)", median_of(&S[S_IPS]), 1, SV_RP_VALUE_MAX, 0);
    if (S[S_MFU].n) num_card(b, "MFU (median)", median_of(&S[S_MFU]), 1, SV_RP_VALUE_MAX, 1);
    if (S[S_MEM].n) {
        char v[SV_RP_NUM_CAP];
        sv_rp_fmt_bytes(max_of(&S[S_MEM]), v, sizeof v);
        card(b, "arena memory / rank", v);
    }
    if (S[S_SKIP].n) num_card(b, "skipped steps", last_of(&S[S_SKIP]), 0, SV_RP_WHOLE_MAX, 0);
    sv_rp_printf(b, "</section>\n");
}

static void curves(sv_rp_buf *b, const metrics_data *md) {
    const sv_rp_series *S = md->s;
    sv_rp_printf(b, "<h2>Training curves</h2>\n<div class=\"grid\">\n");
    int ema = S[S_EMA_TOP1].n || S[S_EMA_TOP5].n || S[S_EMA_LOSS].n;
    /* train loss: each logged step's own; its log-window mean (loss_avg) where the run logged it */
    const sv_rp_series *loss[4];
    const char *loss_names[4];
    int nl = 0;
    loss[nl] = &S[S_LOSS], loss_names[nl++] = "train loss";
    if (S[S_LOSS_AVG].n) loss[nl] = &S[S_LOSS_AVG], loss_names[nl++] = "train loss, window mean";
    loss[nl] = &S[S_EVAL_LOSS], loss_names[nl++] = "eval loss";
    if (ema) loss[nl] = &S[S_EMA_LOSS], loss_names[nl++] = "EMA eval loss";
    sv_rp_chart(b, "Loss", loss_names, loss, nl, SV_RP_PLAIN);
    if (S[S_TOP1].n || S[S_TOP5].n || ema) {
        const sv_rp_series *acc[4] = {&S[S_TOP1], &S[S_TOP5], &S[S_EMA_TOP1], &S[S_EMA_TOP5]};
        sv_rp_chart(b, ema ? "Eval accuracy (raw and weight-EMA)" : "Eval accuracy",
                    (const char *[]){"top-1", "top-5", "EMA top-1", "EMA top-5"}, acc, ema ? 4 : 2, SV_RP_PERCENT);
    }
    const sv_rp_series *lr[1] = {&S[S_LR]};
    sv_rp_chart(b, "Learning rate", (const char *[]){"lr"}, lr, 1, SV_RP_PLAIN);
    const sv_rp_series *gn[1] = {&S[S_GNORM]};
    sv_rp_chart(b, "Gradient norm (before clipping)", (const char *[]){"grad norm"}, gn, 1, SV_RP_PLAIN);
    const sv_rp_series *ips[1] = {&S[S_IPS]};
    sv_rp_chart(b, "Throughput (images / s)", (const char *[]){"img/s"}, ips, 1, SV_RP_PLAIN);
    if (S[S_MFU].n) {
        const sv_rp_series *mfu[1] = {&S[S_MFU]};
        sv_rp_chart(b, "Model FLOPs utilisation", (const char *[]){"MFU"}, mfu, 1, SV_RP_PERCENT);
    } else if (S[S_TFLOPS].n) {
        const sv_rp_series *tf[1] = {&S[S_TFLOPS]};
        sv_rp_chart(b, "Achieved TFLOP/s", (const char *[]){"TFLOP/s"}, tf, 1, SV_RP_PLAIN);
    }
    const sv_rp_series *mem[1] = {&S[S_MEM]};
    sv_rp_chart(b, "Device arena in use per rank", (const char *[]){"memory"}, mem, 1, SV_RP_BYTES);
    const sv_rp_series *wait[1] = {&S[S_WAIT]};
    sv_rp_chart(b, "Time waiting for data", (const char *[]){"data wait"}, wait, 1, SV_RP_PERCENT);
    sv_rp_printf(b, "</div>\n");
}

/* A series' points ordered by step (ties in logged order), for at_step's binary search. */
typedef struct step_pt {
    double x, y;
    size_t i;
} step_pt;
typedef struct step_index {
    step_pt *p;
    size_t n;
} step_index;

static int by_step(const void *a, const void *b) {
    const step_pt *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : (p->i > q->i) - (p->i < q->i);
}

/* idx: s's points sorted by step; returns 0 when out of memory. */
static int step_index_make(const sv_rp_series *s, step_index *idx) {
    idx->n = 0;
    if (!s->n) return (idx->p = NULL), 1;
    if (!(idx->p = malloc(s->n * sizeof *idx->p))) return 0;
    for (size_t i = 0; i < s->n; i++)
        if (!isnan(s->x[i])) idx->p[idx->n++] = (step_pt){s->x[i], s->y[i], i};
    qsort(idx->p, idx->n, sizeof *idx->p, by_step);
    return 1;
}

/* The value of the series indexed by idx at step x (its first logged one), NaN when it has none there. */
static double at_step(const step_index *idx, double x) {
    size_t lo = 0, hi = idx->n;
    while (lo < hi) { /* first point with step >= x */
        size_t mid = lo + (hi - lo) / 2;
        if (idx->p[mid].x < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < idx->n && idx->p[lo].x == x ? idx->p[lo].y : NAN;
}

/* A table cell of the number v (sv_rp_fmt_num, measured values), a dash when there is none. */
static void cell(sv_rp_buf *b, double v, int decimals, int pct) {
    if (isnan(v))
        sv_rp_printf(b, "<td class=\"muted\">&ndash;</td>");
    else {
        char t[SV_RP_NUM_CAP];
        sv_rp_fmt_num(v, decimals, SV_RP_VALUE_MAX, pct, t, sizeof t);
        sv_rp_printf(b, "<td>%s</td>", t);
    }
}

/* Every evaluation of the run (metrics.jsonl eval records) as a table; with --model-ema the
 * EMA's top-1 / top-5 / loss at the same step beside the raw weights'. Steps are those of either. */
static void eval_table(sv_rp_buf *b, const metrics_data *md) {
    const sv_rp_series *S = md->s;
    int ema = S[S_EMA_TOP1].n > 0;
    const sv_rp_series *steps = S[S_TOP1].n ? &S[S_TOP1] : &S[S_EMA_TOP1];
    if (!steps->n) return;
    sv_rp_printf(b,
                 "<h2>Evaluations during training</h2>\n<div class=\"panel\"><table class=\"evals\"><tr>"
                 "<th>step</th><th>top-1</th>%s<th>top-5</th>%s<th>loss</th>%s</tr>\n",
                 ema ? "<th>EMA top-1</th>" : "", ema ? "<th>EMA top-5</th>" : "", ema ? "<th>EMA loss</th>" : "");
    static const int cols[6] = {S_TOP1, S_EMA_TOP1, S_TOP5, S_EMA_TOP5, S_EVAL_LOSS, S_EMA_LOSS};
    step_index idx[6] = {{0}};
    int ok = 1;
    for (int c = 0; c < 6; c++) ok &= step_index_make(&S[cols[c]], &idx[c]);
    for (size_t i = 0; ok && i < steps->n; i++) {
        double x = steps->x[i];
        char st[SV_RP_NUM_CAP];
        sv_rp_fmt_num(x, 0, SV_RP_WHOLE_MAX, 0, st, sizeof st);
        sv_rp_printf(b, "<tr data-step=\"%.0f\"><td>%s</td>", x, st);
        cell(b, at_step(&idx[0], x), 2, 1);
        if (ema) cell(b, at_step(&idx[1], x), 2, 1);
        cell(b, at_step(&idx[2], x), 2, 1);
        if (ema) cell(b, at_step(&idx[3], x), 2, 1);
        cell(b, at_step(&idx[4], x), 4, 0);
        if (ema) cell(b, at_step(&idx[5], x), 4, 0);
        sv_rp_printf(b, "</tr>\n");
    }
    if (!ok) b->oom = 1;
    for (int c = 0; c < 6; c++) free(idx[c].p);
    sv_rp_printf(b, "</table></div>\n");
}

/* v as sv_rp_fmt_num writes it, or "n/a" when it is not a number (eval.json records null for a
 * fraction of no samples). */
static const char *num_or_na(char *buf, size_t cap, int decimals, int pct, double v) {
    if (isnan(v)) return "n/a";
    sv_rp_fmt_num(v, decimals, SV_RP_VALUE_MAX, pct, buf, cap);
    return buf;
}

static void eval_section(sv_rp_buf *b, const sv_rp_eval_data *e) {
    char t1[SV_RP_NUM_CAP], t5[SV_RP_NUM_CAP], l[SV_RP_NUM_CAP], et1[SV_RP_NUM_CAP], et5[SV_RP_NUM_CAP],
        el[SV_RP_NUM_CAP];
    const char *s_t1 = num_or_na(t1, sizeof t1, 2, 1, e->top1), *s_t5 = num_or_na(t5, sizeof t5, 2, 1, e->top5),
               *s_l = num_or_na(l, sizeof l, 4, 0, e->loss);
    if (e->have_ema)
        sv_rp_printf(b,
                     "<h2>Evaluation</h2>\n<div class=\"panel\"><table><tr><th>metric</th><th>weights</th>"
                     "<th>weight EMA</th></tr><tr><td>top-1</td><td>%s</td><td>%s</td></tr>"
                     "<tr><td>top-5</td><td>%s</td><td>%s</td></tr><tr><td>loss</td><td>%s</td>"
                     "<td>%s</td></tr><tr><td>samples</td><td>%lld</td><td>%lld</td></tr></table></div>\n",
                     s_t1, num_or_na(et1, sizeof et1, 2, 1, e->ema_top1), s_t5,
                     num_or_na(et5, sizeof et5, 2, 1, e->ema_top5), s_l, num_or_na(el, sizeof el, 4, 0, e->ema_loss),
                     e->samples, e->ema_samples);
    else
        sv_rp_printf(b,
                     "<h2>Evaluation</h2>\n<div class=\"panel\"><table><tr><th>metric</th><th>value</th></tr>"
                     "<tr><td>top-1</td><td>%s</td></tr><tr><td>top-5</td><td>%s</td></tr>"
                     "<tr><td>loss</td><td>%s</td></tr><tr><td>samples</td><td>%lld</td></tr></table></div>\n",
                     s_t1, s_t5, s_l, e->samples);
    if (e->skipped > 0 || e->n_skipped_files > 0) { /* never left out silently (eval --skip-unreadable) */
        sv_rp_printf(b,
                     "<p class=\"xform\"><b>Left out:</b> %lld unreadable image%s not counted (eval "
                     "--skip-unreadable)",
                     e->skipped, e->skipped == 1 ? "" : "s");
        for (int i = 0; i < e->n_skipped_files; i++) {
            sv_rp_printf(b, i ? ", " : ": ");
            sv_rp_esc(b, e->skipped_files[i]);
        }
        if (e->n_skipped_files < e->skipped) sv_rp_printf(b, ", ...");
        sv_rp_printf(b, "</p>\n");
    }
    sv_rp_printf(b, "<p class=\"xform\"><b>Preprocessing:</b> ");
    if (e->xform[0]) {
        sv_rp_esc(b, e->xform);
        sv_rp_printf(b, " <span class=\"muted\">(");
        sv_rp_esc(b, e->xform_src);
        sv_rp_printf(b, ")</span></p>\n");
    } else {
        sv_rp_printf(b,
                     "<span class=\"muted\">not recorded (eval.json holds no eval_transform and the run "
                     "directory has no checkpoint recording one)</span></p>\n");
    }
    if (e->conf) { /* one argmax rule (eval/metrics.h): per-class correct == confusion diagonal */
        int bad = 0;
        for (int k = 0; k < e->K; k++) bad += e->correct[k] != e->conf[(size_t)k * e->K + k];
        if (bad)
            sv_rp_printf(b,
                         "<p class=\"muted\">%d classes' correct counts in eval.json differ from the "
                         "confusion.csv diagonal (files from different evaluations, or from a shardvit "
                         "that counted logit ties for the true class).</p>\n",
                         bad);
    }
    sv_rp_class_bars(b, e->names, e->acc, e->correct, e->total, e->K);
    if (e->conf) sv_rp_heatmap(b, e->names, e->conf, e->K);
}

/* One provenance section per JSON text that parses as an object (the header record's
 * "provenance" member for the run). */
static void provenance_one(sv_rp_buf *b, const char *id, const char *title, const char *text, int member) {
    sv_json_doc doc;
    if (!text || sv_json_parse(&doc, text, strlen(text), id, NULL) != SV_OK) return;
    const sv_json *v = member ? sv_json_member_get(&doc.root, "provenance") : &doc.root;
    if (v && v->type == SV_JSON_OBJECT) sv_rp_provenance(b, id, title, v);
    sv_json_doc_free(&doc);
}

static void provenance_sections(sv_rp_buf *b, const char *header, const char *eval_prov, const char *generator) {
    provenance_one(b, "provenance-run", "Provenance: training run (metrics.jsonl header)", header, 1);
    provenance_one(b, "provenance-eval", "Provenance: evaluation (eval.json)", eval_prov, 0);
    provenance_one(b, "provenance-report", "Provenance: this report (shardvit report)", generator, 0);
}

/* The report's first bytes. An existing --out that starts with them is an earlier report: the
 * only existing file (outside the run's inputs and checkpoints) a report replaces. */
static const char k_head[] = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                             "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                             "<title>shardvit report: ";

/* sv_ckpt_out_earlier_fn: path is an earlier report (starts with k_head; never follows a link
 * nor blocks on a FIFO: sv_fileio_starts_with). */
static int earlier_report(const char *path, const void *ctx) {
    (void)ctx;
    return sv_fileio_starts_with(path, k_head, sizeof k_head - 1);
}

/* out_path's rules (docs/checkpoints.md "Outputs"), checked before anything is read: not inside
 * the run's checkpoint root and not one of the report's inputs (checked first, so that the error
 * says which), then the shared rule of ckpt/ckpt_out.h (sv_ckpt_out_check_earlier: only a
 * regular file is replaced, never a path in a checkpoint step directory nor a root's `latest`,
 * and an existing file only when it is an earlier report). */
static sv_status check_out(const char *run_dir, const char *trace_path, const char *out) {
    static const char *const what = "report output";
    char o[PATH_MAX], r[PATH_MAX], p[SV_CKPT_PATH_MAX + 32], root[SV_CKPT_PATH_MAX];
    SV_TRY(sv_fileio_real_path(out, o));
    SV_TRY(sv_rp_ckpt_root(run_dir, root, sizeof root));
    SV_TRY(sv_fileio_real_path(root, r));
    if (sv_fileio_path_inside(o, r))
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is inside the run's checkpoint directory %s (resolved: %s): choose a path "
                       "outside it",
                       what, out, root, o);
    static const char *const inputs[] = {"metrics.jsonl", "eval.json",   "confusion.csv",
                                         "config.toml",   "classes.txt", "trace.json"};
    for (size_t i = 0; i <= sizeof inputs / sizeof inputs[0]; i++) {
        const char *in = p;
        if (i < sizeof inputs / sizeof inputs[0])
            snprintf(p, sizeof p, "%s/%s", run_dir, inputs[i]);
        else if (!(in = trace_path))
            break;
        SV_TRY(sv_fileio_real_path(in, r));
        if (!strcmp(o, r))
            return SV_FAIL(SV_ERR_INVALID,
                           "%s %s is the report's input %s: refusing to replace it (default output: "
                           "RUN_DIR/report.html)",
                           what, out, in);
    }
    SV_TRY(sv_ckpt_out_check_parent(out, what));
    return sv_ckpt_out_check_earlier(out, what, earlier_report, NULL, "shardvit report");
}

sv_status sv_report_write(const char *run_dir, const char *trace_path, const char *out_path,
                          const char *generator_json) {
    SV_TRY(check_out(run_dir, trace_path, out_path));
    char p[4096];
    metrics_data md;
    memset(&md, 0, sizeof md);
    sv_rp_eval_data ev;
    memset(&ev, 0, sizeof ev);
    sv_rp_buf b = {0};
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    sv_status st = load_metrics(p, &md);
    if (st == SV_OK) {
        snprintf(p, sizeof p, "%s/eval.json", run_dir);
        if (sv_rp_exists(p)) st = sv_rp_load_eval(p, run_dir, &ev);
        snprintf(p, sizeof p, "%s/confusion.csv", run_dir);
        if (st == SV_OK && ev.have && ev.K > 0 && sv_rp_exists(p)) st = sv_rp_load_confusion(p, &ev);
    }
    if (st == SV_OK) {
        time_t now = time(NULL);
        char when[64];
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
        sv_rp_printf(&b, "%s", k_head);
        sv_rp_esc(&b, run_dir);
        sv_rp_printf(&b, "</title><style>%s</style></head><body>\n<header><h1>shardvit run report</h1><p>", k_css);
        sv_rp_esc(&b, run_dir);
        sv_rp_printf(&b, " &middot; %ld log lines &middot; generated %s</p></header>\n<main>\n", md.lines, when);
        if (md.bad_lines)
            sv_rp_printf(&b, "<p class=\"muted\">%ld unreadable lines of metrics.jsonl were skipped.</p>\n",
                         md.bad_lines);
        summary_cards(&b, &md, &ev);
        curves(&b, &md);
        eval_table(&b, &md);
        if (ev.have) eval_section(&b, &ev);
        const char *tp = trace_path;
        char tbuf[4096];
        if (!tp) {
            snprintf(tbuf, sizeof tbuf, "%s/trace.json", run_dir);
            if (sv_rp_exists(tbuf)) tp = tbuf;
        }
        if (tp) st = sv_rp_trace_section(&b, tp);
    }
    if (st == SV_OK) {
        provenance_sections(&b, md.header, ev.prov, generator_json);
        snprintf(p, sizeof p, "%s/config.toml", run_dir);
        char *cfg = NULL;
        size_t len;
        if (sv_rp_exists(p)) st = sv_fileio_read_small(p, 1 << 20, &cfg, &len); /* unreadable: an error */
        if (cfg) {
            sv_rp_printf(&b, "<details><summary>Resolved configuration (config.toml)</summary><pre>");
            sv_rp_esc(&b, cfg);
            sv_rp_printf(&b, "</pre></details>\n");
        }
        free(cfg);
        sv_rp_printf(&b, "</main></body></html>\n");
        if (st == SV_OK && b.oom) st = SV_FAIL(SV_ERR_OOM, "report: out of memory building %s", out_path);
    }
    if (st == SV_OK) st = sv_fileio_write_atomic(out_path, b.p, b.n); /* fresh temporary, rename */
    free(b.p);
    for (int k = 0; k < S_N; k++) sv_rp_series_free(&md.s[k]);
    free(md.header);
    sv_rp_eval_data_free(&ev);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
