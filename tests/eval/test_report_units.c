/* Units behind the HTML report and the eval metrics:
 * - axis ticks as people write them (eval/report_svg.h): 1/2/5 x 10^k steps, "1k" "1.5k" "2M",
 *   "0.5", "5e-4" only below a 1e-3 step, "3e21" from 10^21 on, "12%", "1.5 MiB"; never "1e+03"
 *   or a trailing zero, at every magnitude up to 10^300;
 * - values of cards and tables whole or in e-notation ("1e+300", "1e+309%", "1e+300 B"), never
 *   longer than a short field;
 * - labels cut to their box with an ellipsis, never splitting a UTF-8 character;
 * - one argmax with one tie rule (eval/metrics.h: the lowest index wins, as torch.argmax) used
 *   by top-1, top-5, per-class accuracy and the confusion matrix, on logits rounded to bf16 so
 *   that ties really occur. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/elementwise.h"
#include "core/rng.h"
#include "eval/metrics.h"
#include "eval/report_svg.h"

static void check_nice(double v, double step, const char *want) {
    char got[64];
    sv_rp_fmt_nice(v, step, got, sizeof got);
    if (strcmp(got, want)) {
        fprintf(stderr, "sv_rp_fmt_nice(%.17g, step %.17g) = \"%s\", want \"%s\"\n", v, step, got, want);
        exit(1);
    }
}

/* A label as the report's grammar allows: [-]digits[.digits without trailing 0][k|M|G|T|P|E] or
 * [-]d[.digits]e[-]N, then the axis suffix. */
static int well_formed(const char *s, const char *suffix) {
    size_t n = strlen(s), ns = strlen(suffix);
    if (n <= ns || strcmp(s + n - ns, suffix)) return 0;
    char t[64];
    snprintf(t, sizeof t, "%.*s", (int)(n - ns), s);
    if (strstr(t, "e+")) return 0;
    const char *p = t + (t[0] == '-');
    const char *big_e = strchr(p, 'E');
    if (big_e && big_e[1]) return 0;                  /* E only as the SI suffix */
    if (p[0] == '0' && p[1] && p[1] != '.') return 0; /* leading zero */
    const char *dot = strchr(p, '.'), *e = strchr(p, 'e');
    size_t end = strlen(p);
    if (e)
        end = (size_t)(e - p);
    else if (end && strchr("kMGTPE", p[end - 1]))
        end--;
    if (dot && (size_t)(dot - p) < end && p[end - 1] == '0') return 0; /* trailing zero */
    if (e) {                                                           /* e-N or eN, unpadded */
        const char *x = e + 1 + (e[1] == '-');
        if (x[0] < '1' || x[0] > '9' || strspn(x, "0123456789") != strlen(x)) return 0;
    }
    return 1;
}

static void test_fmt_nice(void) {
    check_nice(0, 500, "0");
    check_nice(500, 500, "500");
    check_nice(1000, 500, "1k");
    check_nice(1500, 500, "1.5k");
    check_nice(2000, 1000, "2k");
    check_nice(10000, 2000, "10k");
    check_nice(1200, 200, "1.2k");
    check_nice(-1000, 500, "-1k");
    check_nice(2e6, 5e5, "2M");
    check_nice(2.5e6, 5e5, "2.5M");
    check_nice(3e9, 1e9, "3G");
    check_nice(1050, 50, "1050"); /* a fine step keeps the digits */
    check_nice(0.5, 0.5, "0.5");
    check_nice(1, 0.5, "1");
    check_nice(3 * 0.1, 0.1, "0.3"); /* 0.30000000000000004 */
    check_nice(2.28, 0.02, "2.28");
    check_nice(2.3, 0.02, "2.3");
    check_nice(0.002, 0.001, "0.002");
    check_nice(0.015, 0.005, "0.015");
    check_nice(5e-4, 5e-4, "5e-4");
    check_nice(1e-3, 5e-4, "1e-3");
    check_nice(1.5e-3, 5e-4, "1.5e-3");
    check_nice(3 * 1e-5, 1e-5, "3e-5");
    check_nice(9.9999999999e-4, 1e-4, "1e-3"); /* rounds up to the next power of ten */
    check_nice(5 * 2e-4, 2e-4, "1e-3");
    check_nice(-2e-4, 1e-4, "-2e-4");
    check_nice(5e18, 1e18, "5E");
    check_nice(9.99e20, 1e18, "999E");
    check_nice(1e21, 5e20, "1e21"); /* beyond 999E: scientific, exponent unpadded, no "+" */
    check_nice(1.5e21, 5e20, "1.5e21");
    check_nice(-2e299, 5e298, "-2e299");
    check_nice(1.5e300, 5e299, "1.5e300");
}

static void check_num(double v, int decimals, double big, int pct, const char *want) {
    char got[SV_RP_NUM_CAP];
    sv_rp_fmt_num(v, decimals, big, pct, got, sizeof got);
    if (strcmp(got, want)) {
        fprintf(stderr, "sv_rp_fmt_num(%.17g, %d, %g, %d) = \"%s\", want \"%s\"\n", v, decimals, big, pct, got, want);
        exit(1);
    }
}

static void check_bytes(double v, const char *want) {
    char got[SV_RP_NUM_CAP];
    sv_rp_fmt_bytes(v, got, sizeof got);
    if (strcmp(got, want)) {
        fprintf(stderr, "sv_rp_fmt_bytes(%.17g) = \"%s\", want \"%s\"\n", v, got, want);
        exit(1);
    }
}

static void test_fmt_values(void) {
    check_num(2.5, 4, SV_RP_VALUE_MAX, 0, "2.5000");
    check_num(0, 4, SV_RP_VALUE_MAX, 0, "0.0000");
    check_num(1e-4, 4, SV_RP_VALUE_MAX, 0, "0.0001");
    check_num(3e-7, 4, SV_RP_VALUE_MAX, 0, "3e-07");
    check_num(999999.5, 1, SV_RP_VALUE_MAX, 0, "999999.5");
    check_num(1234567, 1, SV_RP_VALUE_MAX, 0, "1.235e+06");
    check_num(-1e300, 4, SV_RP_VALUE_MAX, 0, "-1e+300");
    check_num(0.25, 2, SV_RP_VALUE_MAX, 1, "25.00%");
    check_num(1e307, 2, SV_RP_VALUE_MAX, 1, "1e+309%"); /* 100 x 1e307 overflows a double */
    check_num(-1.79e308, 2, SV_RP_VALUE_MAX, 1, "-1.79e+310%");
    check_num(1e-9, 2, SV_RP_VALUE_MAX, 1, "1e-07%");
    check_num(123456789012345, 0, SV_RP_WHOLE_MAX, 0, "123456789012345");
    check_num(1e20, 0, SV_RP_WHOLE_MAX, 0, "1e+20");
    check_num(INFINITY, 2, SV_RP_VALUE_MAX, 1, "inf%");
    check_num(NAN, 4, SV_RP_VALUE_MAX, 0, "NaN");
    /* every finite double, at every setting: a short field */
    for (int e = -320; e <= 308; e++)
        for (int pct = 0; pct < 2; pct++) {
            char t[SV_RP_NUM_CAP];
            double v = -9.87654321 * pow(10, e);
            sv_rp_fmt_num(v, 4, SV_RP_WHOLE_MAX, pct, t, sizeof t);
            CHECK(strlen(t) <= 24);
            sv_rp_fmt_bytes(v, t, sizeof t);
            CHECK(strlen(t) <= 24);
        }
    check_bytes(1000, "1000 B");
    check_bytes(1536, "1.5 KiB");
    check_bytes(3 * pow(1024, 4), "3.0 TiB");
    check_bytes(3 * pow(1024, 5), "3.0 PiB");
    check_bytes(5e18, "4.3 EiB");
    check_bytes(1023 * pow(1024, 6), "1023.0 EiB");
    check_bytes(1024 * pow(1024, 6), "1.181e+21 B"); /* beyond EiB: e-notation bytes */
    check_bytes(1e300, "1e+300 B");
    check_bytes(-1e300, "-1e+300 B");
}

static void axis_labels(const sv_rp_axis *a, char out[][48], int cap) {
    CHECK(a->n <= cap);
    for (int i = 0; i < a->n; i++) sv_rp_axis_label(a, sv_rp_axis_tick(a, i), out[i], 48);
}

static void check_axis(double lo, double hi, int target, sv_rp_fmt f, int cover, int integer, const char *want) {
    sv_rp_axis a;
    sv_rp_axis_make(&a, lo, hi, target, f, cover, integer);
    char l[64][48], got[1024] = "";
    axis_labels(&a, l, 64);
    for (int i = 0; i < a.n; i++) {
        strcat(got, i ? " " : "");
        strcat(got, l[i]);
    }
    if (strcmp(got, want)) {
        fprintf(stderr, "axis [%g, %g] fmt %d: \"%s\", want \"%s\"\n", lo, hi, (int)f, got, want);
        exit(1);
    }
}

static void test_axes(void) {
    CHECK(sv_rp_nice_step(10, 5) == 2 && sv_rp_nice_step(7, 6) == 2 && sv_rp_nice_step(0.9, 4) == 0.5);
    CHECK_CLOSE(sv_rp_nice_step(3e-4, 4), 1e-4, 1e-18);
    check_axis(0, 10000, 6, SV_RP_PLAIN, 0, 1, "0 2k 4k 6k 8k 10k");
    check_axis(1, 5, 6, SV_RP_PLAIN, 0, 1, "1 2 3 4 5");
    check_axis(1, 3, 6, SV_RP_PLAIN, 0, 1, "1 2 3"); /* steps: never a fractional step */
    check_axis(100, 2400, 6, SV_RP_PLAIN, 0, 1, "500 1k 1.5k 2k");
    check_axis(430, 1610, 4, SV_RP_PLAIN, 1, 0, "0 500 1k 1.5k 2k");
    check_axis(430, 1610, 6, SV_RP_PLAIN, 1, 0, "400 600 800 1k 1.2k 1.4k 1.6k 1.8k");
    check_axis(2.281, 2.359, 4, SV_RP_PLAIN, 1, 0, "2.28 2.3 2.32 2.34 2.36");
    check_axis(1e-4, 4.9e-4, 4, SV_RP_PLAIN, 1, 0, "1e-4 2e-4 3e-4 4e-4 5e-4");
    check_axis(0.12, 0.91, 4, SV_RP_PERCENT, 1, 0, "0% 20% 40% 60% 80% 100%");
    check_axis(0.0004, 0.0005, 4, SV_RP_PERCENT, 1, 0, "0.04% 0.045% 0.05%");
    check_axis(6.1 * 1048576, 7.9 * 1048576, 4, SV_RP_BYTES, 1, 0, "6 MiB 6.5 MiB 7 MiB 7.5 MiB 8 MiB");
    check_axis(0, 3.2e9, 4, SV_RP_BYTES, 1, 0, "0 GiB 1 GiB 2 GiB 3 GiB");
    check_axis(3, 3, 4, SV_RP_PLAIN, 1, 0, "2.6 2.8 3 3.2 3.4"); /* one value: room around it */
    /* a sweep over magnitudes and ranges: every label well formed, steps 1/2/5 x 10^k */
    static const int mags[] = {-7, -6, -5, -4, -3, -2, -1, 0,  1,  2,  3,  4,  5,
                               6,  7,  8,  9,  15, 18, 19, 20, 21, 22, 40, 299};
    for (size_t mi = 0; mi < sizeof mags / sizeof mags[0]; mi++)
        for (double span = 1; span < 10; span += 0.37)
            for (int cover = 0; cover < 2; cover++)
                for (int f = 0; f < 3; f++) {
                    double hi = span * pow(10, mags[mi]), lo = (f == SV_RP_BYTES ? 0.3 : -0.4) * hi;
                    sv_rp_axis a;
                    sv_rp_axis_make(&a, lo, hi, 5, (sv_rp_fmt)f, cover, 0);
                    CHECK(a.n >= 2 && a.n <= 12);
                    double m = a.step / a.unit, mant = m / pow(10, floor(log10(m) + 1e-9));
                    CHECK(fabs(mant - 1) < 1e-9 || fabs(mant - 2) < 1e-9 || fabs(mant - 5) < 1e-9);
                    char l[16][48];
                    axis_labels(&a, l, 16);
                    for (int i = 0; i < a.n; i++) {
                        if (!well_formed(l[i], a.suffix)) {
                            fprintf(stderr, "axis [%g, %g] fmt %d: label \"%s\" not well formed\n", lo, hi, f, l[i]);
                            exit(1);
                        }
                        for (int j = 0; j < i; j++) CHECK(strcmp(l[i], l[j])); /* distinct ticks, distinct labels */
                    }
                }
}

static void test_fit(void) {
    char buf[64];
    const double fs = 10, cw = SV_RP_EM_PER_CHAR * fs; /* 6 px per character */
    CHECK(!strcmp(sv_rp_fit("compute", fs, 7 * cw, buf, sizeof buf), "compute"));
    CHECK(!strcmp(sv_rp_fit("reduce_scatter buf 0", fs, 60, buf, sizeof buf), "reduce_sc\xe2\x80\xa6"));
    CHECK(sv_rp_text_width(buf, fs) <= 60);
    CHECK(!strcmp(sv_rp_fit("AG12", fs, 2 * cw, buf, sizeof buf), "A\xe2\x80\xa6"));
    CHECK(!strcmp(sv_rp_fit("AG12", fs, 1.9 * cw, buf, sizeof buf), ""));
    CHECK(!strcmp(sv_rp_fit("AG12", fs, -3, buf, sizeof buf), ""));
    /* UTF-8: counted and cut by code point */
    CHECK(!strcmp(sv_rp_fit("\xc3\x84\xc3\x96\xc3\x9c\xc3\xa4\xc3\xb6", fs, 4 * cw, buf, sizeof buf),
                  "\xc3\x84\xc3\x96\xc3\x9c\xe2\x80\xa6"));
    CHECK_CLOSE(sv_rp_text_width("\xc3\x84\xc3\x96\xe2\x80\xa6", fs), 3 * cw, 1e-12);
}

/* torch.argmax on a NaN-free row: the first maximal value. */
static int ref_argmax(const float *x, int K) {
    int b = 0;
    for (int k = 1; k < K; k++)
        if (x[k] > x[b]) b = k;
    return b;
}

static void test_argmax_bf16_ties(void) {
    /* distinct fp32 logits that bf16 rounds to the same value (8 significant bits: 1.0 and
     * 1.001 are both 1.0) */
    float x[5] = {0.5f, 1.001f, 1.0f, 1.003f, 0.999f};
    for (int k = 0; k < 5; k++) x[k] = sv_round_bf16(x[k]);
    CHECK(x[1] == x[2] && x[2] == x[3] && x[3] == x[4] && x[0] < x[1]);
    CHECK(sv_metrics_argmax(x, 5) == 1);
    CHECK(sv_metrics_rank(x, 5, 1) == 0 && sv_metrics_rank(x, 5, 2) == 1 && sv_metrics_rank(x, 5, 4) == 3);
    CHECK(sv_metrics_rank(x, 5, 0) == 4);
    const float z[3] = {-0.0f, 0.0f, -1.0f}; /* -0 == +0: a tie */
    CHECK(sv_metrics_argmax(z, 3) == 0 && sv_metrics_rank(z, 3, 1) == 1);
    const float nan_row[3] = {NAN, NAN, NAN}, some_nan[4] = {NAN, -INFINITY, NAN, -5};
    CHECK(sv_metrics_argmax(nan_row, 3) == 0 && sv_metrics_rank(nan_row, 3, 2) == 2);
    CHECK(sv_metrics_argmax(some_nan, 4) == 3 && sv_metrics_rank(some_nan, 4, 1) == 1);
    CHECK(sv_metrics_rank(some_nan, 4, 0) == 2 && sv_metrics_rank(some_nan, 4, 2) == 3);

    /* A batch whose labels sit on tied classes: label 2 ties with class 1 (lower index wins), so
     * it is wrong for top-1, per class and in the confusion matrix alike. */
    enum { K = 8, B = 4 };
    float lg[B][K];
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) lg[b][k] = sv_round_bf16(k < 6 ? 2.0f + 0.001f * (float)k : 0.25f);
    const int32_t y[B] = {0, 2, 5, 6}; /* ranks 0, 2, 5 (not top-5), 6 */
    sv_metrics m;
    CHECK_OK(sv_metrics_init(&m, K));
    CHECK_OK(sv_metrics_add_batch(&m, &lg[0][0], y, NULL, B));
    CHECK(sv_metrics_top1_correct(&m) == 1 && sv_metrics_top5_correct(&m) == 2);
    CHECK(sv_metrics_class_correct(&m)[0] == 1 && sv_metrics_class_correct(&m)[2] == 0);
    for (int b = 0; b < B; b++) CHECK(sv_metrics_confusion(&m)[(size_t)y[b] * K + 0] == 1);
    sv_metrics_free(&m);

    /* Random bf16-rounded logits with many ties (few distinct values): argmax == torch's rule;
     * top-1 == sum of per-class correct == confusion diagonal; top-5 == rank < 5. */
    enum { K2 = 12, B2 = 4000 };
    static float L[B2][K2];
    static int32_t Y[B2];
    int64_t want_top5 = 0, ties = 0;
    for (int b = 0; b < B2; b++) {
        for (int k = 0; k < K2; k++) {
            double u = sv_rand_unit(91, (uint64_t)(b * K2 + k));
            L[b][k] = sv_round_bf16((float)(4.0 + floor(u * 6) * 0.02)); /* bf16 at 4: steps of 1/32 */
        }
        Y[b] = (int32_t)(sv_rand_u64(92, (uint64_t)b) % K2);
        int p = sv_metrics_argmax(L[b], K2), r = sv_metrics_rank(L[b], K2, Y[b]);
        CHECK(p == ref_argmax(L[b], K2));
        int greater = 0, equal_lower = 0;
        for (int k = 0; k < K2; k++) {
            greater += L[b][k] > L[b][Y[b]];
            equal_lower += k < Y[b] && L[b][k] == L[b][Y[b]];
        }
        CHECK(r == greater + equal_lower);
        CHECK((r == 0) == (p == Y[b]));
        want_top5 += r < 5;
        ties += equal_lower > 0;
    }
    CHECK(ties > B2 / 2); /* the data really is full of ties */
    CHECK_OK(sv_metrics_init(&m, K2));
    CHECK_OK(sv_metrics_add_batch(&m, &L[0][0], Y, NULL, B2));
    int64_t diag = 0, per_class = 0;
    for (int k = 0; k < K2; k++) {
        diag += sv_metrics_confusion(&m)[(size_t)k * K2 + k];
        per_class += sv_metrics_class_correct(&m)[k];
        CHECK(sv_metrics_class_correct(&m)[k] == sv_metrics_confusion(&m)[(size_t)k * K2 + k]);
    }
    CHECK(sv_metrics_top1_correct(&m) == diag && per_class == diag);
    CHECK(sv_metrics_top5_correct(&m) == want_top5);
    sv_metrics_free(&m);
}

int main(void) {
    test_fmt_nice();
    test_fmt_values();
    test_axes();
    test_fit();
    test_argmax_bf16_ties();
    printf("test_report_units: ok\n");
    return 0;
}
