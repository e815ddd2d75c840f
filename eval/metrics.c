#include "eval/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"

#define MAX_CLASSES (1 << 20)

/* Does class a (logit va) come before class b (logit vb) in the order of eval/metrics.h? */
static int ranks_before(float va, int a, float vb, int b) {
    int na = isnan(va), nb = isnan(vb);
    if (na != nb) return nb;             /* a number before a NaN */
    if (!na && va != vb) return va > vb; /* larger first */
    return a < b;                        /* equal (or both NaN): lowest index first */
}

int sv_metrics_argmax(const float *x, int K) {
    int best = 0;
    for (int k = 1; k < K; k++)
        if (ranks_before(x[k], k, x[best], best)) best = k;
    return best;
}

int sv_metrics_rank(const float *x, int K, int y) {
    int r = 0;
    for (int k = 0; k < K; k++) r += k != y && ranks_before(x[k], k, x[y], y);
    return r;
}

size_t sv_metrics_i64_len(int k) {
    return 4 + 2 * (size_t)k + (k <= SV_METRICS_CONFUSION_MAX ? (size_t)k * (size_t)k : 0);
}

sv_status sv_metrics_init(sv_metrics *m, int num_classes) {
    memset(m, 0, sizeof *m);
    if (num_classes < 1 || num_classes > MAX_CLASSES)
        return SV_FAIL(SV_ERR_INVALID, "metrics: num_classes %d outside [1, %d]", num_classes, MAX_CLASSES);
    m->num_classes = num_classes;
    m->i64_len = sv_metrics_i64_len(num_classes);
    m->i64 = calloc(m->i64_len, sizeof *m->i64);
    if (!m->i64)
        return SV_FAIL(SV_ERR_OOM, "metrics: cannot allocate %zu counters for %d classes", m->i64_len, num_classes);
    return SV_OK;
}

void sv_metrics_free(sv_metrics *m) {
    free(m->i64);
    memset(m, 0, sizeof *m);
}

void sv_metrics_reset(sv_metrics *m) {
    memset(m->i64, 0, m->i64_len * sizeof *m->i64);
    memset(m->f64, 0, sizeof m->f64);
}

sv_status sv_metrics_add_batch(sv_metrics *m, const float *logits, const int32_t *labels, const uint8_t *valid,
                               int batch) {
    const int K = m->num_classes;
    for (int b = 0; b < batch; b++)
        if ((!valid || valid[b]) && (labels[b] < 0 || labels[b] >= K))
            return SV_FAIL(SV_ERR_INVALID,
                           "metrics: sample %d of the batch has label %d, outside "
                           "[0, %d)",
                           b, (int)labels[b], K);
    int64_t *cc = sv_metrics_class_correct(m), *ct = sv_metrics_class_total(m);
    int64_t *conf = sv_metrics_confusion(m);
    for (int b = 0; b < batch; b++) {
        if (valid && !valid[b]) continue;
        const float *x = logits + (size_t)b * K;
        const int y = labels[b];
        const float xy = x[y];
        const int pred = sv_metrics_argmax(x, K), rank = sv_metrics_rank(x, K, y);
        float mx = -INFINITY;
        int finite = 1;
        for (int k = 0; k < K; k++) {
            if (x[k] > mx) mx = x[k];
            finite &= isfinite(x[k]) != 0;
        }
        m->i64[0]++;
        m->i64[3] += !finite;
        if (pred == y) { /* the same rule as rank == 0: top-1 == per-class == confusion diagonal */
            m->i64[1]++;
            cc[y]++;
        }
        if (rank < SV_METRICS_TOPK) m->i64[2]++;
        ct[y]++;
        if (conf) conf[(size_t)y * K + pred]++;
        /* log-sum-exp shifted by the max; all-(-inf) or NaN logits give a non-finite loss */
        double se = 0;
        for (int k = 0; k < K; k++) se += exp((double)x[k] - (double)mx);
        m->f64[0] += (double)mx + log(se) - (double)xy;
    }
    return SV_OK;
}

sv_status sv_metrics_merge(sv_metrics *dst, const sv_metrics *src) {
    if (dst->num_classes != src->num_classes)
        return SV_FAIL(SV_ERR_INVALID, "metrics: cannot merge %d-class and %d-class accumulators", dst->num_classes,
                       src->num_classes);
    for (size_t i = 0; i < dst->i64_len; i++) dst->i64[i] += src->i64[i];
    for (int i = 0; i < SV_METRICS_F64_LEN; i++) dst->f64[i] += src->f64[i];
    return SV_OK;
}

static double frac(int64_t a, int64_t b) { return b ? (double)a / (double)b : NAN; }

double sv_metrics_top1(const sv_metrics *m) { return frac(m->i64[1], m->i64[0]); }
double sv_metrics_top5(const sv_metrics *m) { return frac(m->i64[2], m->i64[0]); }
double sv_metrics_mean_loss(const sv_metrics *m) { return m->i64[0] ? m->f64[0] / (double)m->i64[0] : NAN; }

static const char *class_name(const char *const *names, int k, char *buf, size_t cap) {
    if (names && names[k]) return names[k];
    snprintf(buf, cap, "%d", k);
    return buf;
}

sv_status sv_metrics_write_json(const sv_metrics *m, const char *path, const char *const *class_names) {
    return sv_metrics_write_json_ex(m, path, class_names, NULL, NULL);
}

sv_status sv_metrics_write_json_ex(const sv_metrics *m, const char *path, const char *const *class_names,
                                   void (*extra)(sv_json_writer *w, const void *ctx), const void *ctx) {
    sv_json_writer w;
    sv_json_writer_init(&w, 2);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "top1");
    sv_json_f64(&w, sv_metrics_top1(m));
    sv_json_key(&w, "top5");
    sv_json_f64(&w, sv_metrics_top5(m));
    sv_json_key(&w, "loss");
    sv_json_f64(&w, sv_metrics_mean_loss(m));
    sv_json_key(&w, "num_samples");
    sv_json_i64(&w, m->i64[0]);
    sv_json_key(&w, "top1_correct");
    sv_json_i64(&w, m->i64[1]);
    sv_json_key(&w, "top5_correct");
    sv_json_i64(&w, m->i64[2]);
    sv_json_key(&w, "num_classes");
    sv_json_i64(&w, m->num_classes);
    sv_json_key(&w, "per_class");
    sv_json_arr_begin(&w);
    const int64_t *cc = sv_metrics_class_correct(m), *ct = sv_metrics_class_total(m);
    for (int k = 0; k < m->num_classes; k++) {
        char buf[16];
        sv_json_obj_begin(&w);
        sv_json_key(&w, "class");
        sv_json_str(&w, class_name(class_names, k, buf, sizeof buf));
        sv_json_key(&w, "index");
        sv_json_i64(&w, k);
        sv_json_key(&w, "accuracy");
        sv_json_f64(&w, frac(cc[k], ct[k]));
        sv_json_key(&w, "correct");
        sv_json_i64(&w, cc[k]);
        sv_json_key(&w, "total");
        sv_json_i64(&w, ct[k]);
        sv_json_obj_end(&w);
    }
    sv_json_arr_end(&w);
    if (extra) extra(&w, ctx);
    sv_json_obj_end(&w);
    const char *text;
    size_t len;
    sv_status s = sv_json_writer_finish(&w, &text, &len);
    if (s == SV_OK) {
        /* end with a newline: friendlier for cat/diff */
        char *t2 = malloc(len + 1);
        if (!t2)
            s = SV_FAIL(SV_ERR_OOM, "%s: out of memory", path);
        else {
            memcpy(t2, text, len);
            t2[len] = '\n';
            s = sv_fileio_write_atomic(path, t2, len + 1);
            free(t2);
        }
    }
    sv_json_writer_free(&w);
    if (s != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return s;
}

/* Growable text buffer for the CSV. */
typedef struct tbuf {
    char *p;
    size_t len, cap;
    int oom;
} tbuf;

static void tput(tbuf *t, const char *s, size_t n) {
    if (t->oom) return;
    if (t->len + n + 1 > t->cap) {
        size_t nc = t->cap ? t->cap : 4096;
        while (nc < t->len + n + 1) nc *= 2;
        char *np = realloc(t->p, nc);
        if (!np) {
            t->oom = 1;
            return;
        }
        t->p = np;
        t->cap = nc;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
}

static void csv_field(tbuf *t, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        tput(t, s, strlen(s));
        return;
    }
    tput(t, "\"", 1);
    for (const char *c = s; *c; c++) {
        if (*c == '"')
            tput(t, "\"\"", 2);
        else
            tput(t, c, 1);
    }
    tput(t, "\"", 1);
}

sv_status sv_metrics_write_confusion_csv(const sv_metrics *m, const char *path, const char *const *class_names) {
    const int K = m->num_classes;
    const int64_t *conf = sv_metrics_confusion(m);
    if (!conf)
        return SV_FAIL(SV_ERR_INVALID, "%s: no confusion matrix is kept for %d classes (at most %d)", path, K,
                       SV_METRICS_CONFUSION_MAX);
    tbuf t = {0};
    char buf[32];
    tput(&t, "true\\predicted", 14);
    for (int k = 0; k < K; k++) {
        tput(&t, ",", 1);
        csv_field(&t, class_name(class_names, k, buf, sizeof buf));
    }
    tput(&t, "\n", 1);
    for (int i = 0; i < K; i++) {
        csv_field(&t, class_name(class_names, i, buf, sizeof buf));
        for (int j = 0; j < K; j++) {
            int n = snprintf(buf, sizeof buf, ",%lld", (long long)conf[(size_t)i * K + j]);
            tput(&t, buf, (size_t)n);
        }
        tput(&t, "\n", 1);
    }
    sv_status s = t.oom ? SV_FAIL(SV_ERR_OOM, "%s: out of memory building the CSV", path)
                        : sv_fileio_write_atomic(path, t.p, t.len);
    free(t.p);
    if (s != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return s;
}
