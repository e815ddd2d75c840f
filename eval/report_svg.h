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
int sv_rp_exists(const char *path);

typedef struct sv_rp_series {
    const char *name;
    double *x, *y;
    size_t n, cap;
} sv_rp_series;
sv_status sv_rp_series_add(sv_rp_series *s, double x, double y);
void sv_rp_series_free(sv_rp_series *s);

typedef enum { SV_RP_PLAIN = 0, SV_RP_PERCENT, SV_RP_BYTES } sv_rp_fmt;
void sv_rp_fmt_bytes(double v, char *buf, size_t cap);

/* A line chart panel: one <path class="series" data-series="<label>" data-points="<n>"> per
 * non-empty series (points with non-finite y are left out). Nothing is drawn (a short note
 * instead) when all series are empty. */
void sv_rp_chart(sv_rp_buf *b, const char *title, const char *const *labels, const sv_rp_series *const *s,
                 int ns, sv_rp_fmt fmt);
/* Per-class accuracy as horizontal bars (sorted worst first when there are many classes). */
void sv_rp_class_bars(sv_rp_buf *b, char *const *names, const double *acc, const long long *correct,
                      const long long *total, int K);
/* Confusion matrix heat map: colour = row-normalised fraction, counts in <title> tooltips. */
void sv_rp_heatmap(sv_rp_buf *b, char *const *names, const long long *conf, int K);
/* Per-rank time per category and a timeline of the first optimizer steps from a Chrome trace
 * JSON written by train --trace. */
sv_status sv_rp_trace_section(sv_rp_buf *b, const char *trace_path);

#endif
