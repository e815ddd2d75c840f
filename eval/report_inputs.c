/* The report's eval.json / confusion.csv readers and their checks, the evaluation's preprocessing
 * and the run's checkpoint root (eval/report_inputs.h). */
#include "eval/report_inputs.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/kv.h"
#include "core/log.h"
#include "eval/report_svg.h"

void sv_rp_eval_data_free(sv_rp_eval_data *e) {
    for (int k = 0; k < e->K && e->names; k++) free(e->names[k]);
    free(e->names);
    free(e->acc);
    free(e->correct);
    free(e->total);
    free(e->conf);
    free(e->prov);
    for (int i = 0; i < e->n_skipped_files; i++) free(e->skipped_files[i]);
    free(e->skipped_files);
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

/* eval/report_inputs.h; a relative `ckpt-dir` is taken from where the run was started: train_cwd_of. */
sv_status sv_rp_ckpt_root(const char *run_dir, char *root, size_t cap) {
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
static void load_xform(const char *run_dir, const sv_json *eval_root, sv_rp_eval_data *e) {
    if (describe_xform(sv_json_member_get(eval_root, "eval_transform"), e->xform, sizeof e->xform)) {
        snprintf(e->xform_src, sizeof e->xform_src, "recorded in eval.json");
        return;
    }
    char root[SV_CKPT_PATH_MAX], step[SV_CKPT_PATH_MAX], p[SV_CKPT_PATH_MAX + 32];
    size_t len;
    int found = 0;
    if (sv_rp_ckpt_root(run_dir, root, sizeof root) != SV_OK ||
        sv_ckpt_latest(root, step, sizeof step, &found) != SV_OK || !found) {
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
static sv_status read_ema(const char *file, const sv_json *ema, sv_rp_eval_data *e) {
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

/* eval.json's members into e (names, per-class counts, summary), checked as sv_rp_load_eval says
 * (eval/report_inputs.h). */
static sv_status read_eval_json(const char *file, const sv_json *r, sv_rp_eval_data *e) {
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
    /* images the evaluation left out (eval --skip-unreadable): optional, older files lack them */
    long long sk;
    SV_TRY(get_count(file, r, "skipped", 0, &sk));
    e->skipped = sk > 0 ? sk : 0;
    const sv_json *sf = sv_json_member_get(r, "skipped_files");
    if (sf) {
        if (sf->type != SV_JSON_ARRAY || sf->u.arr.n > 4096)
            return bad_field(file, r, "skipped_files", sf, "an array of at most 4096 file names");
        if (sf->u.arr.n && !(e->skipped_files = calloc(sf->u.arr.n, sizeof *e->skipped_files)))
            return SV_FAIL(SV_ERR_OOM, "%s: skipped_files", file);
        for (size_t i = 0; i < sf->u.arr.n; i++) {
            const sv_json *v = &sf->u.arr.items[i];
            if (v->type != SV_JSON_STRING) return bad_field(file, r, "skipped_files", sf, "an array of strings");
            if (!(e->skipped_files[i] = strdup(v->u.str.s))) return SV_FAIL(SV_ERR_OOM, "%s: skipped_files", file);
            e->n_skipped_files = (int)i + 1;
        }
    }
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

sv_status sv_rp_load_eval(const char *path, const char *run_dir, sv_rp_eval_data *e) {
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

sv_status sv_rp_load_confusion(const char *path, sv_rp_eval_data *e) {
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
