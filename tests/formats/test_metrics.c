/* eval/metrics: hand-built logits with exact expected top-1/top-5, per-class counts and
 * confusion matrix under the one tie rule (the lowest index wins, as torch.argmax), loss,
 * validity mask, label errors, merging split accumulators, NaN handling, and the eval.json /
 * confusion CSV files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "eval/metrics.h"
#include "fmt_util.h"

#define K 6
/* sample: logits, label. Expected outcomes are worked out by hand next to each row. */
static const float logits[7][K] = {
    {1, 2, 3, 4, 5, 6}, /* label 5: rank 0 -> top1, top5; pred 5 */
    {1, 2, 3, 4, 5, 6}, /* label 0: rank 5 -> neither; pred 5 */
    {1, 2, 3, 4, 5, 6}, /* label 1: rank 4 -> top5 only; pred 5 */
    {3, 3, 1, 0, 0, 0}, /* label 1: ties class 0, which has the lower index -> rank 1: top5 only; pred 0 */
    {0, 0, 0, 0, 0, 0}, /* label 4: all equal -> rank 4: top5 only; pred 0 */
    {9, 9, 9, 9, 1, 1}, /* label 5: 4 greater + class 4 ties at a lower index -> rank 5: neither; pred 0 */
    {7, 7, 7, 7, 7, 7}, /* label 99 but masked out: ignored */
};
static const int32_t labels[7] = {5, 0, 1, 1, 4, 5, 99};
static const uint8_t valid[7] = {1, 1, 1, 1, 1, 1, 0};

static double ce(const float *x, int y) { /* independent double-precision reference */
    double s = 0;
    for (int k = 0; k < K; k++) s += exp((double)x[k]);
    return log(s) - x[y];
}

static void check_expected(const sv_metrics *m) {
    CHECK(sv_metrics_samples(m) == 6);
    CHECK(sv_metrics_top1_correct(m) == 1);
    CHECK(sv_metrics_top5_correct(m) == 4);
    CHECK_CLOSE(sv_metrics_top1(m), 1.0 / 6.0, 1e-15);
    CHECK_CLOSE(sv_metrics_top5(m), 4.0 / 6.0, 1e-15);
    const int64_t want_correct[K] = {0, 0, 0, 0, 0, 1}, want_total[K] = {1, 2, 0, 0, 1, 2};
    for (int k = 0; k < K; k++) {
        CHECK(sv_metrics_class_correct(m)[k] == want_correct[k]);
        CHECK(sv_metrics_class_total(m)[k] == want_total[k]);
    }
    int64_t want_conf[K][K] = {{0}};
    want_conf[5][5] = 1; /* s0 */
    want_conf[0][5] = 1; /* s1 */
    want_conf[1][5] = 1; /* s2 */
    want_conf[1][0] = 1; /* s3 */
    want_conf[4][0] = 1; /* s4 */
    want_conf[5][0] = 1; /* s5 */
    CHECK(!memcmp(sv_metrics_confusion(m), want_conf, sizeof want_conf));
    double loss = 0;
    for (int b = 0; b < 6; b++) loss += ce(logits[b], labels[b]);
    CHECK_CLOSE(m->f64[0], loss, 1e-12);
    CHECK_CLOSE(sv_metrics_mean_loss(m), loss / 6, 1e-12);
}

static void test_counts(void) {
    sv_metrics m;
    CHECK_OK(sv_metrics_init(&m, K));
    CHECK(m.i64_len == 4 + 2 * K + K * K && sv_metrics_i64_len(K) == m.i64_len);
    CHECK(isnan(sv_metrics_top1(&m)) && isnan(sv_metrics_mean_loss(&m)));
    CHECK_OK(sv_metrics_add_batch(&m, &logits[0][0], labels, valid, 7));
    check_expected(&m);
    /* a bad label in a valid sample rejects the whole batch */
    int32_t bad[2] = {1, 6};
    CHECK_FAILS(sv_metrics_add_batch(&m, &logits[0][0], bad, NULL, 2), SV_ERR_INVALID, "sample 1", "label 6", "[0, 6)");
    bad[1] = -1;
    CHECK_FAILS(sv_metrics_add_batch(&m, &logits[0][0], bad, NULL, 2), SV_ERR_INVALID, "label -1");
    check_expected(&m);

    /* two "ranks" each seeing part of the data (the rest masked), merged == one pass */
    sv_metrics a, b;
    CHECK_OK(sv_metrics_init(&a, K));
    CHECK_OK(sv_metrics_init(&b, K));
    const uint8_t va[7] = {1, 0, 1, 0, 1, 0, 0}, vb[7] = {0, 1, 0, 1, 0, 1, 0};
    CHECK_OK(sv_metrics_add_batch(&a, &logits[0][0], labels, va, 7));
    CHECK_OK(sv_metrics_add_batch(&b, &logits[0][0], labels, vb, 4));
    CHECK_OK(sv_metrics_add_batch(&b, &logits[4][0], labels + 4, vb + 4, 3));
    CHECK(sv_metrics_samples(&a) == 3 && sv_metrics_samples(&b) == 3);
    CHECK_OK(sv_metrics_merge(&a, &b));
    check_expected(&a);
    CHECK(!memcmp(a.i64, m.i64, m.i64_len * sizeof *m.i64));
    sv_metrics c;
    CHECK_OK(sv_metrics_init(&c, K + 1));
    CHECK_FAILS(sv_metrics_merge(&a, &c), SV_ERR_INVALID, "6-class", "7-class");
    sv_metrics_reset(&a);
    CHECK(sv_metrics_samples(&a) == 0 && a.f64[0] == 0);
    sv_metrics_free(&a);
    sv_metrics_free(&b);
    sv_metrics_free(&c);
    sv_metrics_free(&m);
    CHECK_FAILS(sv_metrics_init(&m, 0), SV_ERR_INVALID, "num_classes 0");
}

static void test_nan_and_small_k(void) {
    sv_metrics m;
    CHECK_OK(sv_metrics_init(&m, 3));
    const float x[3][3] = {{0, 0, NAN}, {NAN, 1, 0}, {NAN, NAN, NAN}};
    const int32_t y[3] = {2, 2, 1};
    CHECK_OK(sv_metrics_add_batch(&m, &x[0][0], y, NULL, 3));
    /* NaN ranks below every number (and ties with NaN): row 0's true class is last (rank 2),
     * row 1's second, row 2 (all NaN) predicts class 0; K < 5: every sample is top-5 */
    CHECK(sv_metrics_top1_correct(&m) == 0);
    CHECK(sv_metrics_top5_correct(&m) == 3);
    const int64_t *cf = sv_metrics_confusion(&m);
    CHECK(cf[2 * 3 + 0] == 1); /* row 0: NaN ignored, classes 0 and 1 tie -> 0 */
    CHECK(cf[2 * 3 + 1] == 1); /* row 1: argmax over {1, 0} -> class 1 */
    CHECK(cf[1 * 3 + 0] == 1); /* all NaN -> class 0 */
    CHECK(isnan(m.f64[0]));
    CHECK(sv_metrics_nonfinite(&m) == 3); /* every row has a NaN: no result is reported (evaluate.c) */
    /* an infinite logit counts too; a finite row does not */
    const float z[2][3] = {{INFINITY, 0, 1}, {1, 2, 3}};
    CHECK_OK(sv_metrics_add_batch(&m, &z[0][0], y, NULL, 2));
    CHECK(sv_metrics_nonfinite(&m) == 4 && sv_metrics_samples(&m) == 5);
    sv_metrics_free(&m);
}

/* The confusion matrix is kept up to SV_METRICS_CONFUSION_MAX classes; above it the state is
 * 4 + 2K counters (not K*K: 3.6 GiB per rank at 21,843 classes) and the CSV is refused. */
static void test_confusion_cap(void) {
    const int big = SV_METRICS_CONFUSION_MAX + 1;
    CHECK(sv_metrics_i64_len(SV_METRICS_CONFUSION_MAX) ==
          4 + 2 * (size_t)SV_METRICS_CONFUSION_MAX + (size_t)SV_METRICS_CONFUSION_MAX * SV_METRICS_CONFUSION_MAX);
    CHECK(sv_metrics_i64_len(big) == 4 + 2 * (size_t)big);
    CHECK(sv_metrics_i64_len(21843) == 4 + 2 * (size_t)21843);
    sv_metrics m;
    CHECK_OK(sv_metrics_init(&m, big));
    CHECK(!sv_metrics_has_confusion(&m) && sv_metrics_confusion(&m) == NULL);
    float *x = calloc((size_t)2 * big, sizeof *x);
    CHECK(x != NULL);
    x[7] = 1;             /* row 0 predicts class 7 */
    x[big + big - 1] = 1; /* row 1 predicts the last class */
    const int32_t y[2] = {7, 3};
    CHECK_OK(sv_metrics_add_batch(&m, x, y, NULL, 2));
    CHECK(sv_metrics_top1_correct(&m) == 1 && sv_metrics_class_correct(&m)[7] == 1);
    CHECK(sv_metrics_class_total(&m)[3] == 1 && sv_metrics_nonfinite(&m) == 0);
    char dir[256], p[512];
    fmt_tmpdir(dir, sizeof dir, "metrics_cap");
    snprintf(p, sizeof p, "%s/confusion.csv", dir);
    CHECK_FAILS(sv_metrics_write_confusion_csv(&m, p, NULL), SV_ERR_INVALID, "no confusion matrix", "1025 classes");
    fmt_rmdir(dir);
    free(x);
    sv_metrics_free(&m);
}

static void test_files(void) {
    char dir[256], p[512];
    fmt_tmpdir(dir, sizeof dir, "metrics");
    sv_metrics m;
    CHECK_OK(sv_metrics_init(&m, 3));
    const float x[4][3] = {{2, 1, 0}, {0, 2, 1}, {0, 3, 1}, {5, 0, 0}};
    const int32_t y[4] = {0, 1, 0, 1};
    CHECK_OK(sv_metrics_add_batch(&m, &x[0][0], y, NULL, 4));
    const char *names[3] = {"T-shirt/top", "a,b \"c\"", "bag"};
    snprintf(p, sizeof p, "%s/eval.json", dir);
    CHECK_OK(sv_metrics_write_json(&m, p, names));
    char *text;
    size_t len;
    CHECK_OK(sv_fileio_read_small(p, 1 << 20, &text, &len));
    sv_json_doc d;
    CHECK_OK(sv_json_parse(&d, text, len, p, NULL));
    double top1, top5, loss;
    int64_t n;
    CHECK_OK(sv_json_get_f64(&d.root, "top1", &top1));
    CHECK_OK(sv_json_get_f64(&d.root, "top5", &top5));
    CHECK_OK(sv_json_get_f64(&d.root, "loss", &loss));
    CHECK_OK(sv_json_get_i64(&d.root, "num_samples", &n));
    CHECK(top1 == 0.5 && top5 == 1.0 && n == 4);
    double want_loss = 0;
    for (int b = 0; b < 4; b++) {
        double s = 0;
        for (int k = 0; k < 3; k++) s += exp((double)x[b][k]);
        want_loss += log(s) - x[b][y[b]];
    }
    CHECK(loss == sv_metrics_mean_loss(&m)); /* written round-trippably */
    CHECK_CLOSE(loss, want_loss / 4, 1e-12);
    const sv_json *pc;
    CHECK_OK(sv_json_get(&d.root, "per_class", SV_JSON_ARRAY, &pc));
    CHECK(sv_json_count(pc) == 3);
    const char *cls;
    int64_t idx, corr, tot;
    double acc;
    CHECK_OK(sv_json_get_str(sv_json_index(pc, 1), "class", &cls, NULL));
    CHECK_OK(sv_json_get_i64(sv_json_index(pc, 1), "index", &idx));
    CHECK_OK(sv_json_get_i64(sv_json_index(pc, 1), "correct", &corr));
    CHECK_OK(sv_json_get_i64(sv_json_index(pc, 1), "total", &tot));
    CHECK_OK(sv_json_get_f64(sv_json_index(pc, 1), "accuracy", &acc));
    CHECK(!strcmp(cls, names[1]) && idx == 1 && corr == 1 && tot == 2 && acc == 0.5);
    /* class 2 has no samples: accuracy null */
    CHECK(sv_json_member_get(sv_json_index(pc, 2), "accuracy")->type == SV_JSON_NULL);
    sv_json_doc_free(&d);
    free(text);

    snprintf(p, sizeof p, "%s/confusion.csv", dir);
    CHECK_OK(sv_metrics_write_confusion_csv(&m, p, names));
    CHECK_OK(sv_fileio_read_small(p, 1 << 20, &text, &len));
    /* rows: true 0 -> preds {0, 1}; true 1 -> preds {1, 0}; true 2 -> none */
    const char *want = "true\\predicted,T-shirt/top,\"a,b \"\"c\"\"\",bag\n"
                       "T-shirt/top,1,1,0\n"
                       "\"a,b \"\"c\"\"\",1,1,0\n"
                       "bag,0,0,0\n";
    CHECK(!strcmp(text, want));
    free(text);
    /* default names are the indices */
    CHECK_OK(sv_metrics_write_confusion_csv(&m, p, NULL));
    CHECK_OK(sv_fileio_read_small(p, 1 << 20, &text, &len));
    CHECK(!strncmp(text, "true\\predicted,0,1,2\n0,1,1,0\n", 29));
    free(text);
    sv_metrics_free(&m);
    fmt_rmdir(dir);
}

int main(void) {
    test_counts();
    test_nan_and_small_k();
    test_confusion_cap();
    test_files();
    printf("test_metrics: ok\n");
    return 0;
}
