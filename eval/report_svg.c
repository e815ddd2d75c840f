/* SVG pieces of the HTML report: text buffer, series, line charts, class bars, heat map. */
#include "eval/report_svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const k_palette[] = {"#2563eb", "#f97316", "#16a34a", "#9333ea", "#dc2626", "#0891b2"};

void sv_rp_printf(sv_rp_buf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (need < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->n + (size_t)need < b->cap) {
            b->n += (size_t)need;
            return;
        }
        size_t cap = b->cap ? b->cap : 65536;
        while (cap <= b->n + (size_t)need) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

void sv_rp_esc(sv_rp_buf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': sv_rp_printf(b, "&amp;"); break;
        case '<': sv_rp_printf(b, "&lt;"); break;
        case '>': sv_rp_printf(b, "&gt;"); break;
        case '"': sv_rp_printf(b, "&quot;"); break;
        case '\'': sv_rp_printf(b, "&#39;"); break;
        default: sv_rp_printf(b, "%c", *s);
        }
    }
}

int sv_rp_exists(const char *path) { return access(path, R_OK) == 0; }

sv_status sv_rp_series_add(sv_rp_series *s, double x, double y) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, cap * sizeof *nx);
        if (!nx) return SV_FAIL(SV_ERR_OOM, "report series %s", s->name);
        s->x = nx;
        double *ny = realloc(s->y, cap * sizeof *ny);
        if (!ny) return SV_FAIL(SV_ERR_OOM, "report series %s", s->name);
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return SV_OK;
}

void sv_rp_series_free(sv_rp_series *s) {
    free(s->x);
    free(s->y);
    s->x = s->y = NULL;
    s->n = s->cap = 0;
}

void sv_rp_fmt_bytes(double v, char *buf, size_t cap) {
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (fabs(v) >= 1024 && i < 4) v /= 1024, i++;
    snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void fmt_tick(double v, double step, sv_rp_fmt f, char *buf, size_t cap) {
    if (f == SV_RP_PERCENT) snprintf(buf, cap, step < 0.01 ? "%.1f%%" : "%.0f%%", 100 * v);
    else if (f == SV_RP_BYTES) sv_rp_fmt_bytes(v, buf, cap);
    else if (fabs(v) >= 1e6) snprintf(buf, cap, "%.3gM", v / 1e6);
    else if (fabs(v) >= 1e4) snprintf(buf, cap, "%.3gk", v / 1e3);
    else if (fabs(v) < 1e-12) snprintf(buf, cap, "0");
    else snprintf(buf, cap, "%.3g", v);
}

static double nice_step(double range, int n) {
    double raw = range / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

enum { CW = 580, CH = 240, ML = 64, MR = 16, MT = 12, MB = 34 };

void sv_rp_chart(sv_rp_buf *b, const char *title, const char *const *labels, const sv_rp_series *const *s, int ns,
                 sv_rp_fmt fmt) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    size_t total = 0;
    for (int i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i]->n; k++) {
            if (!isfinite(s[i]->y[k]) || !isfinite(s[i]->x[k])) continue;
            total++;
            x0 = fmin(x0, s[i]->x[k]), x1 = fmax(x1, s[i]->x[k]);
            y0 = fmin(y0, s[i]->y[k]), y1 = fmax(y1, s[i]->y[k]);
        }
    sv_rp_printf(b, "<div class=\"panel\"><h3>");
    sv_rp_esc(b, title);
    sv_rp_printf(b, "</h3>");
    if (!total) {
        sv_rp_printf(b, "<p class=\"muted\">not logged in this run</p></div>\n");
        return;
    }
    for (int i = 0; i < ns; i++)
        if (s[i]->n) {
            sv_rp_printf(b, "<span style=\"display:inline-block;margin-right:14px;font-size:12px\">"
                            "<span style=\"display:inline-block;width:12px;height:3px;vertical-align:middle;"
                            "background:%s;margin-right:5px\"></span>", k_palette[i % 6]);
            sv_rp_esc(b, labels[i]);
            sv_rp_printf(b, "</span>");
        }
    if (x1 == x0) x0 -= 1, x1 += 1;
    if (y1 == y0) {
        double d = fabs(y0) > 0 ? fabs(y0) * 0.1 : 1;
        y0 -= d, y1 += d;
    }
    double ys = nice_step(y1 - y0, 4), xs = nice_step(x1 - x0, 6);
    double lo = floor(y0 / ys) * ys, hi = ceil(y1 / ys) * ys;
    if (fmt == SV_RP_PERCENT && lo < 0 && y0 >= 0) lo = 0;
    const double pw = CW - ML - MR, ph = CH - MT - MB;
#define PX(x) (ML + ((x) - x0) / (x1 - x0) * pw)
#define PY(y) (MT + (hi - (y)) / (hi - lo) * ph)
    sv_rp_printf(b, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                    "role=\"img\">\n", CW, CH, CW, CH);
    char t[48];
    for (double y = lo; y <= hi + ys * 1e-9; y += ys) {
        fmt_tick(y, ys, fmt, t, sizeof t);
        sv_rp_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>"
                        "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#667085\" text-anchor=\"end\">%s</text>\n",
                     ML, CW - MR, PY(y), PY(y), ML - 6, PY(y) + 4, t);
    }
    for (double x = ceil(x0 / xs) * xs; x <= x1 + xs * 1e-9; x += xs) {
        fmt_tick(x, xs, SV_RP_PLAIN, t, sizeof t);
        sv_rp_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#9ca3af\"/>"
                        "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#667085\" text-anchor=\"middle\">%s</text>\n",
                     PX(x), PX(x), CH - MB, CH - MB + 4, PX(x), CH - MB + 17, t);
    }
    sv_rp_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#9ca3af\"/>"
                    "<text x=\"%.0f\" y=\"%d\" font-size=\"11\" fill=\"#667085\" text-anchor=\"middle\">step</text>\n",
                 ML, CW - MR, CH - MB, CH - MB, ML + pw / 2, CH - 3);
    for (int i = 0; i < ns; i++) {
        size_t n = 0;
        for (size_t k = 0; k < s[i]->n; k++) n += isfinite(s[i]->y[k]) && isfinite(s[i]->x[k]);
        if (!n) continue;
        const char *col = k_palette[i % 6];
        sv_rp_printf(b, "<path class=\"series\" data-series=\"");
        sv_rp_esc(b, labels[i]);
        sv_rp_printf(b, "\" data-points=\"%zu\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
                        "stroke-linejoin=\"round\" d=\"", n, col);
        int first = 1;
        for (size_t k = 0; k < s[i]->n; k++) {
            if (!isfinite(s[i]->y[k]) || !isfinite(s[i]->x[k])) continue;
            sv_rp_printf(b, "%s%.1f,%.1f", first ? "M" : " L", PX(s[i]->x[k]), PY(s[i]->y[k]));
            first = 0;
        }
        sv_rp_printf(b, "\"/>\n");
        if (n <= 40) /* sparse series (evaluations): mark the points */
            for (size_t k = 0; k < s[i]->n; k++) {
                if (!isfinite(s[i]->y[k]) || !isfinite(s[i]->x[k])) continue;
                fmt_tick(s[i]->y[k], fmt == SV_RP_PERCENT ? 0.001 : 1, fmt, t, sizeof t);
                sv_rp_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>step %.0f: %s</title>"
                                "</circle>\n", PX(s[i]->x[k]), PY(s[i]->y[k]), col, s[i]->x[k], t);
            }
    }
#undef PX
#undef PY
    sv_rp_printf(b, "</svg></div>\n");
}

typedef struct idx_acc {
    double a;
    int k;
} idx_acc;
static int by_acc(const void *p, const void *q) {
    const idx_acc *x = p, *y = q;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    return x->k - y->k;
}

void sv_rp_class_bars(sv_rp_buf *b, char *const *names, const double *acc, const long long *correct,
                      const long long *total, int K) {
    idx_acc *order = malloc((size_t)(K > 0 ? K : 1) * sizeof *order);
    if (!order) {
        b->oom = 1;
        return;
    }
    int n = 0;
    for (int k = 0; k < K; k++)
        if (total[k] > 0) order[n++] = (idx_acc){acc[k], k};
    int many = n > 40;
    if (many) qsort(order, (size_t)n, sizeof *order, by_acc);
    int shown = many ? 40 : n;
    const int row = 20, lw = 170, bw = 330;
    sv_rp_printf(b, "<div class=\"panel\"><h3>Per-class accuracy%s</h3>\n",
                 many ? " (the 40 weakest classes; all are in eval.json)" : "");
    sv_rp_printf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                 lw + bw + 120, shown * row + 8, lw + bw + 120, shown * row + 8);
    for (int i = 0; i < shown; i++) {
        int k = order[i].k;
        double a = isfinite(acc[k]) ? acc[k] : 0;
        int y = 4 + i * row;
        /* red (weak) to green (strong) */
        int r = (int)(220 - 180 * a), g = (int)(60 + 120 * a);
        sv_rp_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\" fill=\"#1d2430\">", lw - 8,
                     y + 13);
        sv_rp_esc(b, names[k]);
        sv_rp_printf(b, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eef2f7\" rx=\"3\"/>"
                        "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"rgb(%d,%d,90)\" rx=\"3\">"
                        "<title>%lld / %lld</title></rect><text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#475467\">"
                        "%.1f%% &#183; %lld/%lld</text>\n",
                     lw, y + 2, bw, row - 6, lw, y + 2, bw * a, row - 6, r, g, correct[k], total[k], lw + bw + 8,
                     y + 13, 100 * a, correct[k], total[k]);
    }
    sv_rp_printf(b, "</svg></div>\n");
    free(order);
}

void sv_rp_heatmap(sv_rp_buf *b, char *const *names, const long long *conf, int K) {
    sv_rp_printf(b, "<div class=\"panel\"><h3>Confusion matrix (rows: true class, columns: predicted; colour: "
                    "share of the row)</h3>\n");
    if (K > 100) {
        sv_rp_printf(b, "<p class=\"muted\">%d classes: too many to draw; see confusion.csv.</p></div>\n", K);
        return;
    }
    int cell = 560 / K;
    if (cell > 34) cell = 34;
    if (cell < 5) cell = 5;
    int labels = cell >= 11, lw = labels ? 150 : 10, top = labels ? 70 : 10;
    int W = lw + K * cell + 10, H = top + K * cell + 10;
    sv_rp_printf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                 W, H, W, H);
    for (int r = 0; r < K; r++) {
        long long rowsum = 0;
        for (int c = 0; c < K; c++) rowsum += conf[(size_t)r * K + c];
        if (labels) {
            sv_rp_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">", lw - 6,
                         top + r * cell + cell / 2 + 4);
            sv_rp_esc(b, names[r]);
            sv_rp_printf(b, "</text><text transform=\"translate(%d,%d) rotate(-50)\" font-size=\"11\">",
                         lw + r * cell + cell / 2 + 3, top - 6);
            sv_rp_esc(b, names[r]);
            sv_rp_printf(b, "</text>\n");
        }
        for (int c = 0; c < K; c++) {
            long long v = conf[(size_t)r * K + c];
            double f = rowsum ? (double)v / (double)rowsum : 0;
            double t = sqrt(f); /* make small confusions visible */
            int R = (int)(247 - t * (247 - 8)), G = (int)(251 - t * (251 - 48)), B = (int)(255 - t * (255 - 107));
            sv_rp_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\"%s><title>",
                         lw + c * cell, top + r * cell, cell, cell, R, G, B,
                         r == c ? " stroke=\"#16a34a\" stroke-width=\"1\"" : "");
            sv_rp_esc(b, names[r]);
            sv_rp_printf(b, " predicted as ");
            sv_rp_esc(b, names[c]);
            sv_rp_printf(b, ": %lld (%.1f%%)</title></rect>", v, 100 * f);
            if (cell >= 26 && v)
                sv_rp_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" fill=\"%s\">%lld"
                                "</text>", lw + c * cell + cell / 2, top + r * cell + cell / 2 + 4,
                             t > 0.6 ? "#fff" : "#1d2430", v);
        }
        sv_rp_printf(b, "\n");
    }
    sv_rp_printf(b, "</svg></div>\n");
}
