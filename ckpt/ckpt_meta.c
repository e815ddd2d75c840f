/* Eval transform and label names of a checkpoint: copy, check, JSON (ckpt/ckpt_meta.h). */
#include "ckpt/ckpt_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/log.h"

void sv_ckpt_xform_default(sv_ckpt_xform *x, int img, int channels) {
    static const double im[3] = {0.485, 0.456, 0.406}, is[3] = {0.229, 0.224, 0.225};
    memset(x, 0, sizeof *x);
    x->img = img;
    x->channels = channels;
    x->crop_pct = SV_CKPT_DEFAULT_CROP_PCT;
    snprintf(x->interp, sizeof x->interp, "bilinear");
    for (int c = 0; c < 3; c++) {
        x->mean[c] = channels == 1 ? 0.5 : im[c];
        x->std[c] = channels == 1 ? 0.5 : is[c];
    }
}

sv_status sv_ckpt_xform_check(const sv_ckpt_xform *x, const char *what) {
    if (x->img < 1 || x->img > 1000000 || x->channels < 1 || x->channels > 3)
        return SV_FAIL(SV_ERR_FORMAT, "%s: input size (%d, %d, %d) out of range", what, x->channels, x->img, x->img);
    if (!sv_ckpt_crop_pct_ok(x->crop_pct))
        return SV_FAIL(SV_ERR_FORMAT, "%s: crop_pct %g not in [%g, %g]", what, x->crop_pct, SV_CKPT_CROP_PCT_MIN,
                       SV_CKPT_CROP_PCT_MAX);
    if (strcmp(x->interp, "bilinear") && strcmp(x->interp, "bicubic")) {
        char e[64];
        return SV_FAIL(SV_ERR_FORMAT, "%s: interpolation \"%s\" is not bilinear or bicubic", what,
                       sv_log_esc(x->interp, e, sizeof e));
    }
    for (int c = 0; c < x->channels; c++)
        if (!(x->std[c] > 0 && x->std[c] < 1e6) || !(x->mean[c] > -1e6 && x->mean[c] < 1e6))
            return SV_FAIL(SV_ERR_FORMAT, "%s: mean %g / std %g of channel %d out of range", what, x->mean[c],
                           x->std[c], c);
    return SV_OK;
}

static sv_status labels_dup(const char *const *src, const size_t *lens, int n, char ***out) {
    size_t bytes = (size_t)n * sizeof(char *);
    for (int i = 0; i < n; i++) bytes += lens[i] + 1;
    char **arr = malloc(bytes ? bytes : 1);
    if (!arr) return SV_FAIL(SV_ERR_OOM, "%d label names", n);
    char *p = (char *)(arr + n);
    for (int i = 0; i < n; i++) {
        memcpy(p, src[i], lens[i]);
        p[lens[i]] = 0;
        arr[i] = p;
        p += lens[i] + 1;
    }
    *out = arr;
    return SV_OK;
}

sv_status sv_ckpt_meta_copy(sv_ckpt_meta *dst, const sv_ckpt_meta *src) {
    memset(dst, 0, sizeof *dst);
    if (!src) return SV_OK;
    dst->xform = src->xform;
    if (!src->labels || src->n_labels <= 0) return SV_OK;
    size_t *lens = malloc((size_t)src->n_labels * sizeof *lens);
    if (!lens) return SV_FAIL(SV_ERR_OOM, "label names");
    for (int i = 0; i < src->n_labels; i++) lens[i] = strlen(src->labels[i]);
    sv_status st = labels_dup((const char *const *)src->labels, lens, src->n_labels, &dst->labels);
    free(lens);
    if (st == SV_OK) dst->n_labels = src->n_labels;
    return st;
}

void sv_ckpt_meta_write(sv_json_writer *w, const sv_ckpt_meta *m) {
    const sv_ckpt_xform *x = &m->xform;
    if (x->present) {
        sv_json_key(w, "eval_transform");
        sv_json_obj_begin(w);
        sv_json_key(w, "img"), sv_json_i64(w, x->img);
        sv_json_key(w, "channels"), sv_json_i64(w, x->channels);
        sv_json_key(w, "crop_pct"), sv_json_f64(w, x->crop_pct);
        sv_json_key(w, "crop_mode"), sv_json_str(w, "center");
        sv_json_key(w, "interpolation"), sv_json_str(w, x->interp);
        sv_json_key(w, "mean");
        sv_json_arr_begin(w);
        for (int c = 0; c < x->channels; c++) sv_json_f64(w, x->mean[c]);
        sv_json_arr_end(w);
        sv_json_key(w, "std");
        sv_json_arr_begin(w);
        for (int c = 0; c < x->channels; c++) sv_json_f64(w, x->std[c]);
        sv_json_arr_end(w);
        sv_json_obj_end(w);
    }
    if (m->labels) {
        sv_json_key(w, "label_names");
        sv_json_arr_begin(w);
        for (int i = 0; i < m->n_labels; i++) sv_json_str(w, m->labels[i]);
        sv_json_arr_end(w);
    }
}

static sv_status bad(const char *src, const sv_json *at, const char *what) {
    char p[128];
    sv_json_path(at, p, sizeof p);
    return SV_FAIL(SV_ERR_FORMAT, "%s: %s: %s", src, p, what);
}

/* Member `key` of object o: an array of n numbers (one per channel) into out[n]; allow_one: a
 * single value stands for every channel. Wrong length or type: SV_ERR_FORMAT naming src and the
 * path. */
static sv_status channel_vec(const sv_json *o, const char *key, int n, int allow_one, double *out, const char *src) {
    const sv_json *a;
    SV_TRY(sv_json_get(o, key, SV_JSON_ARRAY, &a));
    size_t k = sv_json_count(a);
    if (k != (size_t)n && !(allow_one && k == 1))
        return bad(src, a, allow_one ? "needs one value, or one per channel" : "needs one value per channel");
    for (int c = 0; c < n; c++) SV_TRY(sv_json_as_f64(sv_json_index(a, k == 1 ? 0 : (size_t)c), &out[c]));
    return SV_OK;
}

sv_status sv_ckpt_xform_norm_parse(const sv_json *o, sv_ckpt_xform *x, int allow_one, int keep_absent, const char *src,
                                   const char *where) {
    if (!keep_absent || sv_json_member_get(o, "mean"))
        SV_TRY(channel_vec(o, "mean", x->channels, allow_one, x->mean, src));
    if (!keep_absent || sv_json_member_get(o, "std"))
        SV_TRY(channel_vec(o, "std", x->channels, allow_one, x->std, src));
    char what[256];
    snprintf(what, sizeof what, "%.200s: %s", src, where);
    SV_TRY(sv_ckpt_xform_check(x, what));
    x->present = 1;
    return SV_OK;
}

sv_status sv_ckpt_labels_parse(const sv_json *arr, char ***out, int *n, const char *src) {
    *out = NULL;
    *n = 0;
    SV_TRY(sv_json_expect(arr, SV_JSON_ARRAY));
    size_t cnt = sv_json_count(arr);
    if (cnt == 0) return SV_OK;
    if (cnt > 10000000) return bad(src, arr, "too many label names");
    const char **s = malloc(cnt * sizeof *s);
    size_t *lens = malloc(cnt * sizeof *lens);
    sv_status st = s && lens ? SV_OK : SV_FAIL(SV_ERR_OOM, "label names");
    for (size_t i = 0; i < cnt && st == SV_OK; i++) {
        const sv_json *e = sv_json_index(arr, i);
        st = sv_json_as_str(e, &s[i], &lens[i]);
        if (st == SV_OK && (lens[i] == 0 || strlen(s[i]) != lens[i] || strchr(s[i], '\n')))
            st = bad(src, e, "a label name must be non-empty, one line, without NUL");
    }
    if (st == SV_OK) st = labels_dup(s, lens, (int)cnt, out);
    if (st == SV_OK) *n = (int)cnt;
    free(s);
    free(lens);
    return st;
}

sv_status sv_ckpt_meta_parse(const sv_json *root, sv_ckpt_meta *m, const char *src) {
    memset(m, 0, sizeof *m);
    const sv_json *x = sv_json_member_get(root, "eval_transform"), *l = sv_json_member_get(root, "label_names");
    if (x) {
        sv_ckpt_xform *t = &m->xform;
        int64_t img, ch;
        const char *interp;
        size_t ilen;
        SV_TRY(sv_json_expect(x, SV_JSON_OBJECT));
        SV_TRY(sv_json_get_i64(x, "img", &img));
        SV_TRY(sv_json_get_i64(x, "channels", &ch));
        if (img < 1 || img > 1000000 || ch < 1 || ch > 3) return bad(src, x, "img/channels out of range");
        t->img = (int)img, t->channels = (int)ch;
        SV_TRY(sv_json_get_f64(x, "crop_pct", &t->crop_pct));
        SV_TRY(sv_json_get_str(x, "interpolation", &interp, &ilen));
        if (ilen >= sizeof t->interp) return bad(src, x, "interpolation is not bilinear or bicubic");
        snprintf(t->interp, sizeof t->interp, "%s", interp);
        SV_TRY(sv_ckpt_xform_norm_parse(x, t, 0, 0, src, "eval_transform"));
    }
    if (l) SV_TRY(sv_ckpt_labels_parse(l, &m->labels, &m->n_labels, src));
    return SV_OK;
}

/* "--NAME A,B,C" of the first `count` values at o + n; the new length */
static size_t flag_list(char *o, size_t n, size_t cap, const char *name, const double *v, int count) {
    n += (size_t)snprintf(o + n, cap - n, "%s--%s ", n ? " " : "", name);
    for (int k = 0; k < count && n + 32 < cap; k++) {
        if (k) o[n++] = ',';
        n += (size_t)sv_f64_shortest(o + n, cap - n, v[k]);
    }
    return n;
}

/* "--mean A,B,C --std D,E,F" of x's channels */
static void norm_flags(char *o, size_t cap, const sv_ckpt_xform *x) {
    flag_list(o, flag_list(o, 0, cap, "mean", x->mean, x->channels), cap, "std", x->std, x->channels);
}

sv_status sv_ckpt_xform_same_norm(const sv_ckpt_xform *was, const sv_ckpt_xform *now, const char *where) {
    if (!was->present || !now->present || was->channels != now->channels) return SV_OK;
    int same = 1;
    for (int k = 0; k < was->channels; k++) same &= was->mean[k] == now->mean[k] && was->std[k] == now->std[k];
    if (same) return SV_OK;
    char a[240], b[240];
    norm_flags(a, sizeof a, was);
    norm_flags(b, sizeof b, now);
    return SV_FAIL(SV_ERR_INVALID,
                   "resume: %s records the training normalisation %s, this run resolved %s (from its --mean / --std "
                   "or the --init-from config.json): pass %s to continue the run as it was trained",
                   where, a, b, a);
}
