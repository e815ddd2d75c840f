/* Building blocks of the HTML report (eval/report.h): a growable text buffer with HTML
 * escaping, data series, and the SVG pieces (line charts, bars, heat map, trace timeline).
 * Internal to eval/report*.c. Out-of-memory is sticky in sv_rp_buf.oom. */
#ifndef SV_EVAL_REPORT_SVG_H
#define SV_EVAL_REPORT_SVG_H

#include <stddef.h>

#include "core/status.h"

typedef struct sv_rp_buf {
    char *p;
    size_t n, cap;
    int oom;
} sv_rp_buf;

void sv_rp_printf(sv_rp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s with & < > " ' escaped. */
void sv_rp_esc(sv_rp_buf *b, const char *s);
/* 1 when an entry exists at path (lstat): a file that exists but cannot be read is then read, and
 * its error reported, instead of being passed over as absent. */
int sv_rp_exists(const char *path);

/* A provenance section (app/provenance.h's object, parsed): a table of the facts that decide
 * whether two results are comparable (version, commit, dirty, build, libraries, CPU, GPU, world,
 * threads, start) and the whole object, pretty-printed, in a collapsed <details>. `id` is the
 * section's element id ("provenance-run", ...). report_prov.c. */
struct sv_json;
void sv_rp_provenance(sv_rp_buf *b, const char *id, const char *title, const struct sv_json *prov);

typedef struct sv_rp_series {
    const char *name;
    double *x, *y;
    size_t n, cap;
} sv_rp_series;
sv_status sv_rp_series_add(sv_rp_series *s, double x, double y);
void sv_rp_series_free(sv_rp_series *s);

typedef enum { SV_RP_PLAIN = 0, SV_RP_PERCENT, SV_RP_BYTES } sv_rp_fmt;

/* ---- values: cards, tables, tooltips ----------------------------------------------------------
 * Every number the report prints from its input files is written whole or in e-notation, never
 * cut to a buffer (a loss of 1e300 is "1e+300", not the first 63 of its 301 digits).
 * sv_rp_fmt_num: "%.*f" with `decimals` when v is 0 or 1e-4 <= |v| < big, else 4 significant
 * digits in e-notation as %.4g writes them ("1.5e+300", "5e-05"); "NaN", "inf", "-inf" when not
 * finite. pct: v is a fraction shown as percent (100 v and "%"; in e-notation the exponent is
 * v's plus 2, so a fraction near the largest double still shows as the number it is). At most
 * SV_RP_NUM_CAP bytes with the NUL for the bigs below. */
#define SV_RP_VALUE_MAX 1e6  /* measured values (loss, img/s, accuracy): 1234567 -> 1.235e+06 */
#define SV_RP_WHOLE_MAX 1e15 /* counts and durations (steps, ms): whole up to 15 digits */
#define SV_RP_NUM_CAP 48
void sv_rp_fmt_num(double v, int decimals, double big, int pct, char *buf, size_t cap);
/* Bytes in B, KiB, ... EiB ("%.0f B", else one decimal: "1.5 MiB"); from 1024 EiB on, in
 * e-notation bytes ("1e+300 B"). cap >= SV_RP_NUM_CAP. */
void sv_rp_fmt_bytes(double v, char *buf, size_t cap);

/* ---- axes: nice numbers ---------------------------------------------------------------------
 * Tick steps are 1, 2 or 5 x 10^k in the axis unit (percentage points for fractions shown as
 * percent; B/KiB/MiB/GiB/TiB/PiB/EiB for bytes, picked from the largest value), ticks are
 * integer multiples of the step, and labels are written as people write them: "0", "0.5",
 * "750", "1.5k", "20k", "2M", "5e-4", "1.2e-3", "12%", "1.5 MiB". SI suffixes k/M/G/T/P/E for
 * 1000 <= |v| < 1e21 when the step is >= 100; scientific notation when the step is below 1e-3
 * or |v| >= 1e21 ("3e21", "1.5e300": mantissa digits as the step needs, exponent unpadded);
 * never a trailing zero or "e+". */
double sv_rp_nice_step(double range, int target_intervals); /* 1/2/5 x 10^k >= range/target */
/* v on an axis whose step is `step` (same unit), by the rules above, without a unit suffix. */
void sv_rp_fmt_nice(double v, double step, char *buf, size_t cap);

typedef struct sv_rp_axis {
    double first, step; /* ticks: first + i * step, i in [0, n) */
    int n;
    double unit;        /* one label unit in data units: 1, 0.01 (percent), 1024^p (bytes) */
    const char *suffix; /* "", "%", " B", " KiB", ... */
} sv_rp_axis;
/* Ticks for data in [vmin, vmax] with about `target` intervals. cover = 1: the ticks enclose
 * the data (first <= vmin, last >= vmax; a y axis is drawn from first to last tick); cover = 0:
 * only ticks inside [vmin, vmax] (an x axis). integer = 1: the step is at least 1 (counts such
 * as steps). A degenerate range gets one unit of room. */
void sv_rp_axis_make(sv_rp_axis *a, double vmin, double vmax, int target, sv_rp_fmt fmt, int cover, int integer);
static inline double sv_rp_axis_tick(const sv_rp_axis *a, int i) { return a->first + i * a->step; }
static inline double sv_rp_axis_last(const sv_rp_axis *a) { return sv_rp_axis_tick(a, a->n - 1); }
/* The label of tick value v (data units) with the axis suffix. */
void sv_rp_axis_label(const sv_rp_axis *a, double v, char *buf, size_t cap);

/* ---- text that fits ----------------------------------------------------------------------
 * SVG text is never measured by the browser here, so the report budgets SV_RP_EM_PER_CHAR em
 * per character (UTF-8 code point), a little above a sans-serif font's average width, and lays
 * out every label so that its estimated box stays inside its box and the viewBox
 * (tests/eval/report_check.py checks with the same estimate). Vertically a line takes 0.8 em
 * above the baseline and 0.25 em below. */
#define SV_RP_EM_PER_CHAR 0.6
double sv_rp_text_width(const char *s, double font_px);
/* s cut to fit max_w px at font_px, ending in an ellipsis when cut; "" when not even one
 * character and the ellipsis fit. Returns buf (cap >= 8). */
const char *sv_rp_fit(const char *s, double font_px, double max_w, char *buf, size_t cap);

/* A line chart panel: one <path class="series" data-series="<label>" data-points="<n>"> per
 * non-empty series (points with a non-finite step or value are left out, and so are points with
 * one beyond +-SV_RP_MAX_ABS, with a note saying how many). Nothing is drawn (a short note
 * instead) when all series are empty. */
#define SV_RP_MAX_ABS 1e300
void sv_rp_chart(sv_rp_buf *b, const char *title, const char *const *labels, const sv_rp_series *const *s, int ns,
                 sv_rp_fmt fmt);
/* Per-class accuracy as horizontal bars (sorted worst first when there are many classes). */
void sv_rp_class_bars(sv_rp_buf *b, char *const *names, const double *acc, const long long *correct,
                      const long long *total, int K);
/* Confusion matrix heat map: colour = row-normalised fraction, counts in <title> tooltips. */
void sv_rp_heatmap(sv_rp_buf *b, char *const *names, const long long *conf, int K);
/* Per-rank time per category and a timeline of the first optimizer steps from a Chrome trace
 * JSON written by train --trace. */
sv_status sv_rp_trace_section(sv_rp_buf *b, const char *trace_path);

#endif
