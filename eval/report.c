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
#include "core/kv.h"
#include "core/log.h"
#include "core/json.h"
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
    S_N
};
static const char *const k_keys[S_N] = {
    "loss",           "eval_loss",     "eval_top1",     "eval_top5",     "lr",
    "grad_norm",      "img_per_s",     "tflops",        "mfu",           "mem_bytes",
    "data_wait_frac", "skipped_steps", "eval_ema_top1", "eval_ema_top5", "eval_ema_loss"};

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

/* ---- eval.json + confusion.csv ---------------------------------------------------------- */

typedef struct eval_data {
    int have;
    double top1, top5, loss;
    long long samples;
    int have_ema; /* eval.json "ema": the weight EMA's metrics on the same data */
    double ema_top1, ema_top5, ema_loss;
    long long ema_samples;
    int K;
    char **names; /* [K] */
    double *acc;  /* [K], NaN for classes without samples */
    long long *correct, *total;
    long long *conf; /* [K*K] or NULL */
    char xform[512]; /* the evaluation preprocessing, as a sentence ("" = not recorded) */
    char *prov;      /* eval.json's "provenance" as JSON text, or NULL */
    char xform_src[SV_CKPT_PATH_MAX + 256];
} eval_data;

static void eval_data_free(eval_data *e) {
    for (int k = 0; k < e->K && e->names; k++) free(e->names[k]);
    free(e->names);
    free(e->acc);
    free(e->correct);
    free(e->total);
    free(e->conf);
    free(e->prov);
}

/* A recorded eval transform ({"img","channels","crop_pct","crop_mode","interpolation","mean",
 * "std"}, as index.json's eval_transform, ckpt/ckpt_meta.h) as one sentence; 0 if malformed. */
static int describe_xform(const sv_json *x, char *out, size_t cap) {
    double img, crop;
    const char *interp = NULL, *mode = NULL;
    if (!x || x->type != SV_JSON_OBJECT || sv_json_get_f64(x, "img", &img) != SV_OK ||
        sv_json_get_f64(x, "crop_pct", &crop) != SV_OK || !sv_ckpt_crop_pct_ok(crop) || !(img >= 1 && img < 1e6) ||
        sv_json_opt_str(x, "interpolation", "bilinear", &interp) != SV_OK ||
        sv_json_opt_str(x, "crop_mode", "center", &mode) != SV_OK) {
        sv_err_clear();
        return 0;
    }
    char ms[2][160];
    static const char *const keys[2] = {"mean", "std"};
    for (int k = 0; k < 2; k++) {
        const sv_json *a = sv_json_member_get(x, keys[k]);
        size_t n = sv_json_count(a), used = 0;
        ms[k][0] = 0;
        for (size_t i = 0; i < n && i < 4; i++) {
            double v;
            const sv_json *it = sv_json_index(a, i);
            if (!it || sv_json_as_f64(it, &v) != SV_OK) {
                sv_err_clear();
                return 0;
            }
            used += (size_t)snprintf(ms[k] + used, sizeof ms[k] - used, "%s%g", i ? ", " : "", v);
            if (used >= sizeof ms[k]) return 0;
        }
        if (!n) snprintf(ms[k], sizeof ms[k], "?");
    }
    /* the same arithmetic as data/transform.c sv_eval_box: shorter side -> floor(img / crop_pct) */
    long resize = (long)floor(img / crop + 1e-9);
    snprintf(out, cap,
             "resize the shorter side to %ld px (floor(%g / crop_pct %g), %s), %s crop %g \xc3\x97 %g, "
             "normalise (x / 255 \xe2\x88\x92 mean) / std with mean %s, std %s",
             resize, img, crop, interp, mode, img, img, ms[0], ms[1]);
    return 1;
}

/* The working directory a run was started from, for a config.toml written before train recorded
 * --out and --ckpt-dir as absolute paths: run_dir's real path less its recorded relative `out`
 * (compared component by component after dropping "." and empty ones: sv_fileio_lexical_append).
 * 0 when that cannot be told (an absolute or missing `out`, one with "..", or a run directory
 * that has been moved). */
static int train_cwd_of(const char *config, const char *run_dir, char *cwd) {
    char out[PATH_MAX], real[PATH_MAX], clean[PATH_MAX] = "";
    int found = 0;
    if (sv_kv_file_get(config, "out", out, sizeof out, &found) != SV_OK || !found || out[0] == '/' ||
        sv_fileio_real_path(run_dir, real) != SV_OK ||
        sv_fileio_lexical_append(clean, sizeof clean, out, SV_FILEIO_DOTDOT_REFUSE) != SV_OK)
        return 0;
    size_t lr = strlen(real), lc = strlen(clean);
    if (!lc || lc >= lr || strcmp(real + lr - lc, clean) || real[lr - lc - 1] != '/') return 0;
    snprintf(cwd, PATH_MAX, "%.*s", lr - lc - 1 ? (int)(lr - lc - 1) : 1, real);
    return 1;
}

/* The run's checkpoint root: run_dir's config.toml `ckpt-dir` when it names one (a relative one,
 * from a run recorded before paths were made absolute, taken from where that run was started:
 * train_cwd_of), else RUN_DIR/checkpoints. */
static sv_status ckpt_root_of(const char *run_dir, char *root, size_t cap) {
    char p[SV_CKPT_PATH_MAX + 32], cwd[PATH_MAX], rel[PATH_MAX];
    int found = 0;
    snprintf(p, sizeof p, "%s/config.toml", run_dir);
    /* a config.toml that cannot be read (a repeated key, a malformed line) is an error: guessing
     * RUN_DIR/checkpoints would leave the real checkpoint root unprotected */
    if (sv_rp_exists(p)) SV_TRY(sv_kv_file_get(p, "ckpt-dir", root, cap, &found));
    if (!found)
        snprintf(root, cap, "%s/checkpoints", run_dir);
    else if (root[0] != '/' && strlen(root) < sizeof rel && train_cwd_of(p, run_dir, cwd)) {
        snprintf(rel, sizeof rel, "%s", root);
        if ((size_t)snprintf(root, cap, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel) >= cap)
            snprintf(root, cap, "%s", rel); /* too long: as recorded */
    }
    sv_err_clear();
    return SV_OK;
}

/* The transform the evaluation used: eval.json's own "eval_transform" when it records one, else
 * what the run's latest checkpoint recorded (training evaluates with exactly that transform).
 * run_dir's config.toml names a --ckpt-dir elsewhere. Nothing found leaves e->xform empty. */
static void load_xform(const char *run_dir, const sv_json *eval_root, eval_data *e) {
    if (describe_xform(sv_json_member_get(eval_root, "eval_transform"), e->xform, sizeof e->xform)) {
        snprintf(e->xform_src, sizeof e->xform_src, "recorded in eval.json");
        return;
    }
    char root[SV_CKPT_PATH_MAX], step[SV_CKPT_PATH_MAX], p[SV_CKPT_PATH_MAX + 32];
    size_t len;
    int found = 0;
    if (ckpt_root_of(run_dir, root, sizeof root) != SV_OK || sv_ckpt_latest(root, step, sizeof step, &found) != SV_OK ||
        !found) {
        sv_err_clear();
        return;
    }
    snprintf(p, sizeof p, "%s/index.json", step);
    char *text = NULL;
    sv_json_doc doc;
    if (sv_fileio_read_small(p, (size_t)64 << 20, &text, &len) != SV_OK ||
        sv_json_parse(&doc, text, len, p, NULL) != SV_OK) {
        free(text);
        sv_err_clear();
        return;
    }
    free(text);
    if (describe_xform(sv_json_member_get(&doc.root, "eval_transform"), e->xform, sizeof e->xform))
        snprintf(e->xform_src, sizeof e->xform_src,
                 "the model's recorded eval transform, %s (training evaluates with it; eval.json itself does not "
                 "record one, so an evaluation run with overriding flags would not show here)",
                 p);
    sv_json_doc_free(&doc);
}

/* eval.json and confusion.csv are read as eval writes them (eval/metrics.h, eval/evaluate.c);
 * anything else is an SV_ERR_FORMAT error naming the file, the field or line, and the value, as a
 * report drawn from a damaged or mismatched file would be a silent wrong answer. eval.json: top1
 * and top5 numbers in [0, 1] (null only for zero samples), loss a number >= 0 or null, every
 * count a non-negative integer, each fraction equal to its counts, one per_class entry per class
 * (num_classes of them) whose totals add up to num_samples and whose correct counts add up to
 * top1_correct; "ema" likewise. confusion.csv: eval's header cell, one column and one row per
 * class of eval.json, every cell a non-negative integer, every row adding up to its class's
 * total. */

/* v as JSON text for a message (cut to about 80 bytes, then escaped for one line). */
static const char *json_text(const sv_json *v, char *buf, size_t cap) {
    sv_json_writer w;
    const char *t = NULL;
    char raw[84];
    sv_json_writer_init(&w, 0);
    sv_json_value(&w, v);
    if (sv_json_writer_finish(&w, &t, NULL) != SV_OK) t = "?";
    if (snprintf(raw, sizeof raw, "%s", t) >= (int)sizeof raw) memcpy(raw + sizeof raw - 4, "...", 4);
    sv_json_writer_free(&w);
    return sv_log_esc(raw, buf, cap);
}

/* The field `key` of obj in file (v: its value, NULL when missing) is not what eval writes. */
static sv_status bad_field(const char *file, const sv_json *obj, const char *key, const sv_json *v,
                           const char *expected) {
    char path[512], val[SV_ESC_CAP];
    path[0] = 0;
    if (obj->parent) sv_json_path(obj, path, sizeof path);
    size_t n = strlen(path);
    snprintf(path + n, sizeof path - n, "%s%s", n ? "." : "", key);
    return SV_FAIL(SV_ERR_FORMAT, "%s: %s is %s: expected %s (as eval writes it)", file, path,
                   v ? json_text(v, val, sizeof val) : "missing", expected);
}

/* Member key of obj: a number in [lo, hi] (hi = INFINITY: no upper bound), or null (NaN in
 * *out). Missing is an error. */
static sv_status get_num(const char *file, const sv_json *obj, const char *key, double lo, double hi, double *out) {
    const sv_json *v = sv_json_member_get(obj, key);
    if (v && v->type == SV_JSON_NULL) {
        *out = NAN;
        return SV_OK;
    }
    if (!v || v->type != SV_JSON_NUMBER || !(v->u.num.d >= lo && v->u.num.d <= hi))
        return bad_field(file, obj, key, v, isinf(hi) ? "a number >= 0 or null" : "a number in [0, 1] or null");
    *out = v->u.num.d;
    return SV_OK;
}

/* Member key of obj: a non-negative integer into *out; when it is missing and !required, *out = -1. */
static sv_status get_count(const char *file, const sv_json *obj, const char *key, int required, long long *out) {
    const sv_json *v = sv_json_member_get(obj, key);
    *out = -1;
    if (!v && !required) return SV_OK;
    if (!v || v->type != SV_JSON_NUMBER || !v->u.num.is_int || v->u.num.i < 0)
        return bad_field(file, obj, key, v, "a non-negative integer");
    *out = (long long)v->u.num.i;
    return SV_OK;
}

/* The fraction f recorded as key of obj must be a / b, as eval computes it: null when b is 0, a
 * number otherwise (equal to a / b when a >= 0, i.e. recorded). */
static sv_status check_frac(const char *file, const sv_json *obj, const char *key, double f, long long a,
                            const char *a_name, long long b, const char *b_name) {
    if (b == 0 ? isnan(f) : !isnan(f) && (a < 0 || fabs(f - (double)a / (double)b) <= 1e-9)) return SV_OK;
    char what[160];
    if (b == 0)
        snprintf(what, sizeof what, "null, as %s is 0", b_name);
    else if (a < 0)
        snprintf(what, sizeof what, "a number in [0, 1], as %s is %lld", b_name, b);
    else
        snprintf(what, sizeof what, "%s / %s = %lld / %lld = %.17g", a_name, b_name, a, b, (double)a / (double)b);
    return bad_field(file, obj, key, sv_json_member_get(obj, key), what);
}

/* count a of obj must not exceed b (both recorded; < 0: not recorded). */
static sv_status check_le(const char *file, const sv_json *obj, const char *a_key, long long a, const char *b_name,
                          long long b) {
    if (a < 0 || b < 0 || a <= b) return SV_OK;
    char what[128];
    snprintf(what, sizeof what, "at most %s (%lld)", b_name, b);
    return bad_field(file, obj, a_key, sv_json_member_get(obj, a_key), what);
}

/* eval.json's "ema" (train --model-ema): top1, top5, loss and samples as eval writes them. */
static sv_status read_ema(const char *file, const sv_json *ema, eval_data *e) {
    long long samples;
    SV_TRY(get_num(file, ema, "top1", 0, 1, &e->ema_top1));
    SV_TRY(get_num(file, ema, "top5", 0, 1, &e->ema_top5));
    SV_TRY(get_num(file, ema, "loss", 0, INFINITY, &e->ema_loss));
    SV_TRY(get_count(file, ema, "samples", 1, &samples));
    SV_TRY(check_frac(file, ema, "top1", e->ema_top1, -1, NULL, samples, "samples"));
    SV_TRY(check_frac(file, ema, "top5", e->ema_top5, -1, NULL, samples, "samples"));
    e->ema_samples = samples;
    e->have_ema = 1;
    return SV_OK;
}

/* eval.json's members into e (names, per-class counts, summary), checked as above. */
static sv_status read_eval_json(const char *file, const sv_json *r, eval_data *e) {
    if (r->type != SV_JSON_OBJECT)
        return SV_FAIL(SV_ERR_FORMAT, "%s: expected a JSON object (as eval writes it)", file);
    long long n, c1, c5, nk;
    SV_TRY(get_count(file, r, "num_samples", 1, &n));
    SV_TRY(get_count(file, r, "top1_correct", 0, &c1));
    SV_TRY(get_count(file, r, "top5_correct", 0, &c5));
    SV_TRY(get_count(file, r, "num_classes", 0, &nk));
    SV_TRY(get_num(file, r, "top1", 0, 1, &e->top1));
    SV_TRY(get_num(file, r, "top5", 0, 1, &e->top5));
    SV_TRY(get_num(file, r, "loss", 0, INFINITY, &e->loss));
    SV_TRY(check_le(file, r, "top1_correct", c1, "top5_correct", c5));
    SV_TRY(check_le(file, r, "top1_correct", c1, "num_samples", n));
    SV_TRY(check_le(file, r, "top5_correct", c5, "num_samples", n));
    SV_TRY(check_frac(file, r, "top1", e->top1, c1, "top1_correct", n, "num_samples"));
    SV_TRY(check_frac(file, r, "top5", e->top5, c5, "top5_correct", n, "num_samples"));
    e->samples = n;
    const sv_json *ema = sv_json_member_get(r, "ema");
    if (ema && ema->type != SV_JSON_NULL) {
        if (ema->type != SV_JSON_OBJECT) return bad_field(file, r, "ema", ema, "an object");
        SV_TRY(read_ema(file, ema, e));
    }
    const sv_json *pc = sv_json_member_get(r, "per_class");
    if (!pc || pc->type != SV_JSON_ARRAY || pc->u.arr.n == 0)
        return bad_field(file, r, "per_class", pc, "an array of one entry per class");
    if (pc->u.arr.n > (1 << 20)) return bad_field(file, r, "per_class", pc, "at most 1048576 classes");
    int K = (int)pc->u.arr.n;
    if (nk >= 0 && nk != K) {
        char what[96];
        snprintf(what, sizeof what, "%d, the number of per_class entries", K);
        return bad_field(file, r, "num_classes", sv_json_member_get(r, "num_classes"), what);
    }
    e->names = calloc((size_t)K, sizeof *e->names);
    e->acc = calloc((size_t)K, sizeof *e->acc);
    e->correct = calloc((size_t)K, sizeof *e->correct);
    e->total = calloc((size_t)K, sizeof *e->total);
    if (!e->names || !e->acc || !e->correct || !e->total) return SV_FAIL(SV_ERR_OOM, "report: %d classes", K);
    e->K = K;
    long long sum_total = 0, sum_correct = 0;
    for (int k = 0; k < K; k++) {
        const sv_json *c = sv_json_index(pc, (size_t)k);
        char key[48];
        snprintf(key, sizeof key, "per_class[%d]", k);
        if (c->type != SV_JSON_OBJECT) return bad_field(file, r, key, c, "an object per class");
        const sv_json *nv = sv_json_member_get(c, "class");
        if (!nv || nv->type != SV_JSON_STRING) return bad_field(file, c, "class", nv, "a string (the class name)");
        if (!(e->names[k] = strdup(nv->u.str.s))) return SV_FAIL(SV_ERR_OOM, "report: class names");
        long long index;
        SV_TRY(get_count(file, c, "index", 0, &index));
        if (index >= 0 && index != k) {
            snprintf(key, sizeof key, "%d, its position", k);
            return bad_field(file, c, "index", sv_json_member_get(c, "index"), key);
        }
        SV_TRY(get_count(file, c, "correct", 1, &e->correct[k]));
        SV_TRY(get_count(file, c, "total", 1, &e->total[k]));
        SV_TRY(get_num(file, c, "accuracy", 0, 1, &e->acc[k]));
        SV_TRY(check_le(file, c, "correct", e->correct[k], "total", e->total[k]));
        SV_TRY(check_frac(file, c, "accuracy", e->acc[k], e->correct[k], "correct", e->total[k], "total"));
        /* saturating sums (a correct count is at most its total): no overflow */
        sum_total = e->total[k] > LLONG_MAX - sum_total ? LLONG_MAX : sum_total + e->total[k];
        sum_correct = e->correct[k] > LLONG_MAX - sum_correct ? LLONG_MAX : sum_correct + e->correct[k];
    }
    if (sum_total != n || (c1 >= 0 && sum_correct != c1))
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: the per_class %s add up to %lld but %s = %lld: the per-class counts and the summary "
                       "disagree",
                       file, sum_total != n ? "totals" : "correct counts", sum_total != n ? sum_total : sum_correct,
                       sum_total != n ? "num_samples" : "top1_correct", sum_total != n ? n : c1);
    return SV_OK;
}

static sv_status load_eval(const char *path, const char *run_dir, eval_data *e) {
    char *text = NULL;
    size_t len = 0;
    SV_TRY(sv_fileio_read_small(path, (size_t)1 << 28, &text, &len));
    sv_json_doc doc;
    sv_status st = sv_json_parse(&doc, text, len, path, NULL);
    free(text);
    SV_TRY(st);
    st = read_eval_json(path, &doc.root, e);
    if (st == SV_OK) load_xform(run_dir, &doc.root, e);
    const sv_json *pv = sv_json_member_get(&doc.root, "provenance");
    if (st == SV_OK && pv && pv->type == SV_JSON_OBJECT) {
        sv_json_writer w;
        const char *t;
        sv_json_writer_init(&w, 0);
        sv_json_value(&w, pv);
        if (sv_json_writer_finish(&w, &t, NULL) == SV_OK && !(e->prov = strdup(t)))
            st = SV_FAIL(SV_ERR_OOM, "report: eval.json provenance");
        sv_json_writer_free(&w);
    }
    sv_json_doc_free(&doc);
    e->have = st == SV_OK;
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

/* One CSV field starting at *p (RFC 4180 quoting); advances past the separator. */
static void csv_field(const char **p, char *out, size_t cap, int *end_of_line) {
    const char *s = *p;
    size_t n = 0;
    if (*s == '"') {
        s++;
        while (*s && !(*s == '"' && s[1] != '"')) {
            if (*s == '"') s++;
            if (n + 1 < cap) out[n++] = *s;
            s++;
        }
        if (*s == '"') s++;
    } else {
        while (*s && *s != ',' && *s != '\n' && *s != '\r') {
            if (n + 1 < cap) out[n++] = *s;
            s++;
        }
    }
    out[n] = 0;
    if (*s == '\r') s++;
    *end_of_line = *s != ',';
    if (*s) s++;
    *p = s;
}

/* A confusion.csv count as eval writes it: decimal digits only (at most 18, so no overflow). */
static int parse_count(const char *s, long long *out) {
    size_t n = strlen(s);
    if (n == 0 || n > 18 || strspn(s, "0123456789") != n) return 0;
    *out = strtoll(s, NULL, 10);
    return 1;
}

/* The line of text on which byte at starts (1-based). */
static long line_of(const char *text, const char *at) {
    long line = 1;
    for (const char *s = text; s < at; s++) line += *s == '\n';
    return line;
}

static sv_status load_confusion(const char *path, eval_data *e) {
    char *text = NULL;
    size_t len = 0;
    SV_TRY(sv_fileio_read_small(path, (size_t)1 << 30, &text, &len));
    int K = e->K;
    e->conf = calloc((size_t)K * K + 1, sizeof *e->conf);
    if (!e->conf) {
        free(text);
        return SV_FAIL(SV_ERR_OOM, "report: confusion matrix of %d classes", K);
    }
    const char *p = text, *at = text;
    char field[512], v1[SV_ESC_CAP], v2[SV_ESC_CAP];
    int eol = 0, fields = 1;
    sv_status st = SV_OK;
    csv_field(&p, field, sizeof field, &eol);
    if (strcmp(field, "true\\predicted"))
        st = SV_FAIL(SV_ERR_FORMAT,
                     "%s line 1: the first field is \"%s\": expected \"true\\predicted\" (as eval "
                     "writes it)",
                     path, sv_log_esc(field, v1, sizeof v1));
    while (st == SV_OK && !eol) csv_field(&p, field, sizeof field, &eol), fields++;
    if (st == SV_OK && fields != K + 1)
        st = SV_FAIL(SV_ERR_FORMAT,
                     "%s line 1: %d class columns, but eval.json has %d classes: the files are from different "
                     "evaluations",
                     path, fields - 1, K);
    for (int r = 0; r < K && st == SV_OK; r++) {
        at = p;
        if (!*p) {
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s: %d rows of counts, but eval.json has %d classes: the files are from different "
                         "evaluations",
                         path, r, K);
            break;
        }
        csv_field(&p, field, sizeof field, &eol); /* row name */
        long long sum = 0, total = e->total[r];
        int c = 0;
        for (; !eol && st == SV_OK; c++) {
            const char *cell = p;
            long long v = 0;
            csv_field(&p, field, sizeof field, &eol);
            if (c >= K)
                st = SV_FAIL(SV_ERR_FORMAT, "%s line %ld: more than eval.json's %d counts in the row of class \"%s\"",
                             path, line_of(text, at), K, sv_log_esc(e->names[r], v1, sizeof v1));
            else if (!parse_count(field, &v))
                st = SV_FAIL(SV_ERR_FORMAT,
                             "%s line %ld, field %d (true class \"%s\"): \"%s\" is not a count: expected a "
                             "non-negative integer (as eval writes it)",
                             path, line_of(text, cell), c + 2, sv_log_esc(e->names[r], v1, sizeof v1),
                             sv_log_esc(field, v2, sizeof v2));
            else if (v > total - sum)
                st = SV_FAIL(SV_ERR_FORMAT,
                             "%s line %ld: the counts of true class \"%s\" add up to more than its total in "
                             "eval.json (%lld): the files are from different evaluations",
                             path, line_of(text, at), sv_log_esc(e->names[r], v1, sizeof v1), total);
            else {
                e->conf[(size_t)r * K + c] = v;
                sum += v;
            }
        }
        if (st == SV_OK && c != K)
            st = SV_FAIL(SV_ERR_FORMAT, "%s line %ld: %d counts in the row of class \"%s\", expected %d", path,
                         line_of(text, at), c, sv_log_esc(e->names[r], v1, sizeof v1), K);
        if (st == SV_OK && sum != total)
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s line %ld: the counts of true class \"%s\" add up to %lld, but its total in eval.json is "
                         "%lld: the files are from different evaluations",
                         path, line_of(text, at), sv_log_esc(e->names[r], v1, sizeof v1), sum, total);
    }
    while (st == SV_OK && (*p == '\n' || *p == '\r')) p++; /* blank lines at the end */
    if (st == SV_OK && *p)
        st = SV_FAIL(SV_ERR_FORMAT,
                     "%s line %ld: more rows than eval.json's %d classes: the files are from different evaluations",
                     path, line_of(text, p), K);
    free(text);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
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
static double median_of(const sv_rp_series *s) {
    if (!s->n) return NAN;
    double *t = malloc(s->n * sizeof *t);
    if (!t) return NAN;
    memcpy(t, s->y, s->n * sizeof *t);
    for (size_t i = 1; i < s->n; i++) /* insertion sort: a few thousand points at most */
        for (size_t j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    double m = t[s->n / 2];
    free(t);
    return m;
}

static void summary_cards(sv_rp_buf *b, const metrics_data *md, const eval_data *ev) {
    char v[64];
    sv_rp_printf(b, "<section class=\"cards\">\n");
    const sv_rp_series *S = md->s;
    if (S[S_LOSS].n) {
        snprintf(v, sizeof v, "%.0f", S[S_LOSS].x[S[S_LOSS].n - 1]);
        card(b, "steps", v);
        snprintf(v, sizeof v, "%.4f", last_of(&S[S_LOSS]));
        card(b, "final train loss", v);
    }
    double t1 = ev->have ? ev->top1 : last_of(&S[S_TOP1]), t5 = ev->have ? ev->top5 : last_of(&S[S_TOP5]);
    if (!isnan(t1)) {
        snprintf(v, sizeof v, "%.2f%%", 100 * t1);
        card(b, "eval top-1", v);
    }
    if (!isnan(t5)) {
        snprintf(v, sizeof v, "%.2f%%", 100 * t5);
        card(b, "eval top-5", v);
    }
    double e1 = ev->have && ev->have_ema ? ev->ema_top1 : last_of(&S[S_EMA_TOP1]);
    if (!isnan(e1)) {
        snprintf(v, sizeof v, "%.2f%%", 100 * e1);
        card(b, "EMA top-1", v);
    }
    if (S[S_IPS].n) {
        snprintf(v, sizeof v, "%.1f", median_of(&S[S_IPS]));
        card(b, "images / s (median)", v);
    }
    if (S[S_MFU].n) {
        snprintf(v, sizeof v, "%.1f%%", 100 * median_of(&S[S_MFU]));
        card(b, "MFU (median)", v);
    }
    if (S[S_MEM].n) {
        sv_rp_fmt_bytes(max_of(&S[S_MEM]), v, sizeof v);
        card(b, "arena memory / rank", v);
    }
    if (S[S_SKIP].n) {
        snprintf(v, sizeof v, "%.0f", last_of(&S[S_SKIP]));
        card(b, "skipped steps", v);
    }
    sv_rp_printf(b, "</section>\n");
}

static void curves(sv_rp_buf *b, const metrics_data *md) {
    const sv_rp_series *S = md->s;
    sv_rp_printf(b, "<h2>Training curves</h2>\n<div class=\"grid\">\n");
    int ema = S[S_EMA_TOP1].n || S[S_EMA_TOP5].n || S[S_EMA_LOSS].n;
    const sv_rp_series *loss[3] = {&S[S_LOSS], &S[S_EVAL_LOSS], &S[S_EMA_LOSS]};
    sv_rp_chart(b, "Loss", (const char *[]){"train loss", "eval loss", "EMA eval loss"}, loss, ema ? 3 : 2,
                SV_RP_PLAIN);
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

/* The value of series s at step x, NaN when it has none there. */
static double at_step(const sv_rp_series *s, double x) {
    for (size_t i = 0; i < s->n; i++)
        if (s->x[i] == x) return s->y[i];
    return NAN;
}

static void cell(sv_rp_buf *b, double v, const char *fmt, double scale) {
    if (isnan(v))
        sv_rp_printf(b, "<td class=\"muted\">&ndash;</td>");
    else {
        char t[64];
        snprintf(t, sizeof t, fmt, scale * v);
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
    for (size_t i = 0; i < steps->n; i++) {
        double x = steps->x[i];
        sv_rp_printf(b, "<tr data-step=\"%.0f\"><td>%.0f</td>", x, x);
        cell(b, at_step(&S[S_TOP1], x), "%.2f%%", 100);
        if (ema) cell(b, at_step(&S[S_EMA_TOP1], x), "%.2f%%", 100);
        cell(b, at_step(&S[S_TOP5], x), "%.2f%%", 100);
        if (ema) cell(b, at_step(&S[S_EMA_TOP5], x), "%.2f%%", 100);
        cell(b, at_step(&S[S_EVAL_LOSS], x), "%.4f", 1);
        if (ema) cell(b, at_step(&S[S_EMA_LOSS], x), "%.4f", 1);
        sv_rp_printf(b, "</tr>\n");
    }
    sv_rp_printf(b, "</table></div>\n");
}

static void eval_section(sv_rp_buf *b, const eval_data *e) {
    if (e->have_ema)
        sv_rp_printf(b,
                     "<h2>Evaluation</h2>\n<div class=\"panel\"><table><tr><th>metric</th><th>weights</th>"
                     "<th>weight EMA</th></tr><tr><td>top-1</td><td>%.2f%%</td><td>%.2f%%</td></tr>"
                     "<tr><td>top-5</td><td>%.2f%%</td><td>%.2f%%</td></tr><tr><td>loss</td><td>%.4f</td>"
                     "<td>%.4f</td></tr><tr><td>samples</td><td>%lld</td><td>%lld</td></tr></table></div>\n",
                     100 * e->top1, 100 * e->ema_top1, 100 * e->top5, 100 * e->ema_top5, e->loss, e->ema_loss,
                     e->samples, e->ema_samples);
    else
        sv_rp_printf(b,
                     "<h2>Evaluation</h2>\n<div class=\"panel\"><table><tr><th>metric</th><th>value</th></tr>"
                     "<tr><td>top-1</td><td>%.2f%%</td></tr><tr><td>top-5</td><td>%.2f%%</td></tr>"
                     "<tr><td>loss</td><td>%.4f</td></tr><tr><td>samples</td><td>%lld</td></tr></table></div>\n",
                     100 * e->top1, 100 * e->top5, e->loss, e->samples);
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
    SV_TRY(ckpt_root_of(run_dir, root, sizeof root));
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
    return sv_ckpt_out_check_earlier(out, what, earlier_report, NULL, "shardvit report");
}

sv_status sv_report_write(const char *run_dir, const char *trace_path, const char *out_path,
                          const char *generator_json) {
    SV_TRY(check_out(run_dir, trace_path, out_path));
    char p[4096];
    metrics_data md;
    memset(&md, 0, sizeof md);
    eval_data ev;
    memset(&ev, 0, sizeof ev);
    sv_rp_buf b = {0};
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    sv_status st = load_metrics(p, &md);
    if (st == SV_OK) {
        snprintf(p, sizeof p, "%s/eval.json", run_dir);
        if (sv_rp_exists(p)) st = load_eval(p, run_dir, &ev);
        snprintf(p, sizeof p, "%s/confusion.csv", run_dir);
        if (st == SV_OK && ev.have && ev.K > 0 && sv_rp_exists(p)) st = load_confusion(p, &ev);
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
        if (sv_rp_exists(p) && sv_fileio_read_small(p, 1 << 20, &cfg, &len) == SV_OK) {
            sv_rp_printf(&b, "<details><summary>Resolved configuration (config.toml)</summary><pre>");
            sv_rp_esc(&b, cfg);
            sv_rp_printf(&b, "</pre></details>\n");
        }
        free(cfg);
        sv_rp_printf(&b, "</main></body></html>\n");
        if (b.oom) st = SV_FAIL(SV_ERR_OOM, "report: out of memory building %s", out_path);
    }
    if (st == SV_OK) st = sv_fileio_write_atomic(out_path, b.p, b.n); /* fresh temporary, rename */
    free(b.p);
    for (int k = 0; k < S_N; k++) sv_rp_series_free(&md.s[k]);
    free(md.header);
    eval_data_free(&ev);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}
