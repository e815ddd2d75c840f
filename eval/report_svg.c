/* SVG pieces of the HTML report: text buffer, series, line charts, class bars, heat map. */
#include "eval/report_svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int sv_rp_exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

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

/* ---- nice numbers ----------------------------------------------------------------------- */

double sv_rp_nice_step(double range, int n) {
    if (!(range > 0) || !isfinite(range)) return 1;
    double raw = range / (n > 0 ? n : 1), mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10) * mag;
}

/* Decimals a step of 1/2/5 x 10^k needs: 0.5 -> 1, 0.05 -> 2, 20 -> 0. */
static int decimals_for(double step) {
    if (!(step > 0) || !isfinite(step)) return 0;
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 12 ? 12 : d;
}

static void strip_zeros(char *t) {
    char *dot = strchr(t, '.');
    if (!dot) return;
    char *e = t + strlen(t);
    while (e > dot + 1 && e[-1] == '0') *--e = 0;
    if (e == dot + 1) *dot = 0;
}

void sv_rp_fmt_num(double v, int decimals, double big, int pct, char *buf, size_t cap) {
    const char *sfx = pct ? "%" : "";
    if (!isfinite(v)) {
        snprintf(buf, cap, "%s%s", isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf", sfx);
        return;
    }
    double s = pct ? 100 * v : v; /* may overflow: then e-notation, from v */
    if (s == 0 || (fabs(s) >= 1e-4 && fabs(s) < big)) {
        snprintf(buf, cap, "%.*f%s", decimals, s, sfx);
        return;
    }
    char m[32];
    snprintf(m, sizeof m, "%.3e", v); /* v's 4-digit mantissa and exponent */
    char *e = strchr(m, 'e');
    int x = atoi(e + 1) + (pct ? 2 : 0);
    *e = 0;
    strip_zeros(m);
    snprintf(buf, cap, "%se%c%02d%s", m, x < 0 ? '-' : '+', abs(x), sfx);
}

void sv_rp_fmt_bytes(double v, char *buf, size_t cap) {
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double a = v;
    int i = 0;
    while (fabs(a) >= 1024 && i < 6) a /= 1024, i++;
    if (!isfinite(a) || fabs(a) >= 1024) { /* 1024 EiB and more: bytes in e-notation */
        char t[24];                        /* "-1.234e+308" */
        sv_rp_fmt_num(v, 0, 0, 0, t, sizeof t);
        snprintf(buf, cap, "%s B", t);
        return;
    }
    snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", a, u[i]);
}

void sv_rp_fmt_nice(double v, double step, char *buf, size_t cap) {
    char t[64];
    if (!isfinite(v)) {
        snprintf(buf, cap, "%s", isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
        return;
    }
    if (!(step > 0) || !isfinite(step)) step = fabs(v) > 0 ? pow(10, floor(log10(fabs(v))) - 2) : 1;
    if (fabs(v) < step * 1e-6) {
        snprintf(buf, cap, "0");
        return;
    }
    int huge = fabs(v) >= 1e21 * (1 - 1e-12);      /* beyond the SI suffixes' 999E */
    if (fabs(v) >= 1000 && step >= 100 && !huge) { /* SI: 1.5k, 20k, 2M */
        static const char sfx[] = "kMGTPE";
        int p = 1;
        while (p < 6 && fabs(v) >= pow(10, 3.0 * (p + 1)) * (1 - 1e-12)) p++;
        double sc = pow(10, 3.0 * p);
        snprintf(t, sizeof t, "%.*f", decimals_for(step / sc), v / sc);
        strip_zeros(t);
        snprintf(buf, cap, "%s%c", t, sfx[p - 1]);
        return;
    }
    if (step < 1e-3 || huge) { /* scientific, unpadded: 5e-4, 1.2e-3, 3e21 */
        int e = (int)floor(log10(fabs(v))), ds = (int)floor(log10(step) + 1e-9);
        int d = e - ds < 0 ? 0 : e - ds > 12 ? 12 : e - ds;
        snprintf(t, sizeof t, "%.*f", d, v / pow(10, e));
        if (fabs(atof(t)) >= 10) { /* 9.96 rounded up to 10.0: one more power of ten */
            e++;
            d = d > 0 ? d - 1 : 0;
            snprintf(t, sizeof t, "%.*f", d, v / pow(10, e));
        }
        strip_zeros(t);
        snprintf(buf, cap, "%se%d", t, e);
        return;
    }
    snprintf(t, sizeof t, "%.*f", decimals_for(step), v);
    strip_zeros(t);
    snprintf(buf, cap, "%s", t);
}

void sv_rp_axis_make(sv_rp_axis *a, double vmin, double vmax, int target, sv_rp_fmt fmt, int cover, int integer) {
    a->unit = 1;
    a->suffix = "";
    if (fmt == SV_RP_PERCENT) a->unit = 0.01, a->suffix = "%";
    if (fmt == SV_RP_BYTES) {
        static const char *const u[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"};
        double mx = fmax(fabs(vmin), fabs(vmax));
        int p = 0;
        while (mx >= 1024 && p < 6) mx /= 1024, p++;
        a->unit = pow(1024, p);
        a->suffix = u[p];
    }
    double lo = vmin / a->unit, hi = vmax / a->unit;
    if (!(hi > lo)) { /* one value: give it room */
        double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
        if (integer && d < 1) d = 1;
        lo -= d, hi += d;
    }
    double st = sv_rp_nice_step(hi - lo, target);
    if (integer && st < 1) st = 1;
    double k0 = cover ? floor(lo / st + 1e-9) : ceil(lo / st - 1e-9);
    double k1 = cover ? ceil(hi / st - 1e-9) : floor(hi / st + 1e-9);
    a->first = k0 * st * a->unit;
    a->step = st * a->unit;
    a->n = (int)(k1 - k0) + 1;
    if (a->n < 1) a->n = 1;
}

void sv_rp_axis_label(const sv_rp_axis *a, double v, char *buf, size_t cap) {
    char t[48];
    sv_rp_fmt_nice(v / a->unit, a->step / a->unit, t, sizeof t);
    snprintf(buf, cap, "%s%s", t, a->suffix);
}

/* A value in a tooltip (not an axis label): enough digits to read it. */
static void fmt_value(double v, sv_rp_fmt f, char *buf, size_t cap) {
    if (f == SV_RP_PERCENT)
        sv_rp_fmt_num(v, 2, SV_RP_VALUE_MAX, 1, buf, cap);
    else if (f == SV_RP_BYTES)
        sv_rp_fmt_bytes(v, buf, cap);
    else
        snprintf(buf, cap, "%.4g", v);
}

/* ---- text that fits ---------------------------------------------------------------------- */

static size_t utf8_chars(const char *s) {
    size_t n = 0;
    for (; s && *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

double sv_rp_text_width(const char *s, double font_px) { return (double)utf8_chars(s) * SV_RP_EM_PER_CHAR * font_px; }

const char *sv_rp_fit(const char *s, double font_px, double max_w, char *buf, size_t cap) {
    static const char ell[] = "\xe2\x80\xa6"; /* U+2026 */
    buf[0] = 0;
    if (!s) return buf;
    double cw = SV_RP_EM_PER_CHAR * font_px, f = cw > 0 && max_w > 0 ? floor(max_w / cw + 1e-9) : 0;
    size_t n = utf8_chars(s), fit = f < 1e6 ? (size_t)f : (size_t)1e6;
    if (n <= fit && strlen(s) < cap) {
        memcpy(buf, s, strlen(s) + 1);
        return buf;
    }
    if (fit < 2) return buf; /* not one character and the ellipsis */
    size_t keep = fit - 1, b = 0, chars = 0;
    while (s[b] && b + 4 + sizeof ell < cap) { /* copy `keep` whole code points */
        if (((unsigned char)s[b] & 0xC0) != 0x80 && chars++ == keep) break;
        b++;
    }
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--; /* never split a code point */
    memcpy(buf, s, b);
    memcpy(buf + b, ell, sizeof ell);
    return buf;
}

enum { CW = 580, CH = 240, MT = 12, MB = 34, TICK_FONT = 11 };

/* How the ticks of one axis look: the label's class ("tick-x" / "tick-y"), the line's colour and
 * the label's text-anchor. */
typedef struct tick_style {
    const char *cls, *stroke, *anchor;
} tick_style;
static const tick_style k_tick_y = {"tick-y", "#e5e7eb", "end"}, k_tick_x = {"tick-x", "#9ca3af", "middle"};

/* One axis tick: its line from (x1, y1) to (x2, y2) and its label `t` at (tx, ty), coordinates
 * with one decimal. */
static void tick(sv_rp_buf *b, const tick_style *st, double x1, double y1, double x2, double y2, double tx, double ty,
                 const char *t) {
    sv_rp_printf(b,
                 "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
                 "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" fill=\"#667085\" "
                 "text-anchor=\"%s\">%s</text>\n",
                 x1, x2, y1, y2, st->stroke, st->cls, tx, ty, TICK_FONT, st->anchor, t);
}

/* A point the chart draws: step and value finite and within +-SV_RP_MAX_ABS, so that spans
 * between points (x1 - x0, hi - lo) stay finite. */
static int drawable(double x, double y) { return fabs(x) <= SV_RP_MAX_ABS && fabs(y) <= SV_RP_MAX_ABS; }

void sv_rp_chart(sv_rp_buf *b, const char *title, const char *const *labels, const sv_rp_series *const *s, int ns,
                 sv_rp_fmt fmt) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    size_t total = 0, huge = 0;
    for (int i = 0; i < ns; i++)
        for (size_t k = 0; k < s[i]->n; k++) {
            if (!drawable(s[i]->x[k], s[i]->y[k])) {
                huge += isfinite(s[i]->x[k]) && isfinite(s[i]->y[k]);
                continue;
            }
            total++;
            x0 = fmin(x0, s[i]->x[k]), x1 = fmax(x1, s[i]->x[k]);
            y0 = fmin(y0, s[i]->y[k]), y1 = fmax(y1, s[i]->y[k]);
        }
    sv_rp_printf(b, "<div class=\"panel\"><h3>");
    sv_rp_esc(b, title);
    sv_rp_printf(b, "</h3>");
    if (huge) /* never left out silently */
        sv_rp_printf(b, "<p class=\"muted\">%zu point%s with a step or value beyond &plusmn;%g not drawn</p>", huge,
                     huge == 1 ? "" : "s", SV_RP_MAX_ABS);
    if (!total) {
        sv_rp_printf(b, "<p class=\"muted\">%s</p></div>\n", huge ? "nothing to draw" : "not logged in this run");
        return;
    }
    for (int i = 0; i < ns; i++)
        if (s[i]->n) {
            sv_rp_printf(b,
                         "<span style=\"display:inline-block;margin-right:14px;font-size:12px\">"
                         "<span style=\"display:inline-block;width:12px;height:3px;vertical-align:middle;"
                         "background:%s;margin-right:5px\"></span>",
                         k_palette[i % 6]);
            sv_rp_esc(b, labels[i]);
            sv_rp_printf(b, "</span>");
        }
    if (x1 == x0) x0 -= 1, x1 += 1;
    sv_rp_axis ya, xa;
    sv_rp_axis_make(&ya, y0, y1, 4, fmt, 1, 0);
    sv_rp_axis_make(&xa, x0, x1, 6, SV_RP_PLAIN, 0, 1); /* x: optimizer steps */
    double lo = ya.first, hi = sv_rp_axis_last(&ya);
    if (!(hi > lo)) hi = lo + 1;
    /* margins from the widest labels, so no label leaves the viewBox */
    char t[48];
    double wy = 0, wx_first = 0, wx_last = 0;
    for (int i = 0; i < ya.n; i++) {
        sv_rp_axis_label(&ya, sv_rp_axis_tick(&ya, i), t, sizeof t);
        wy = fmax(wy, sv_rp_text_width(t, TICK_FONT));
    }
    sv_rp_axis_label(&xa, xa.first, t, sizeof t);
    wx_first = sv_rp_text_width(t, TICK_FONT);
    sv_rp_axis_label(&xa, sv_rp_axis_last(&xa), t, sizeof t);
    wx_last = sv_rp_text_width(t, TICK_FONT);
    const double ML = ceil(fmax(40, fmax(wy + 10, wx_first / 2 + 2))), MR = ceil(fmax(16, wx_last / 2 + 3));
    const double pw = CW - ML - MR, ph = CH - MT - MB;
#define PX(x) (ML + ((x)-x0) / (x1 - x0) * pw)
#define PY(y) (MT + (hi - (y)) / (hi - lo) * ph)
    sv_rp_printf(b,
                 "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                 "role=\"img\">\n",
                 CW, CH, CW, CH);
    for (int i = 0; i < ya.n; i++) { /* grid line across the plot, label left of it */
        double y = sv_rp_axis_tick(&ya, i);
        sv_rp_axis_label(&ya, y, t, sizeof t);
        tick(b, &k_tick_y, ML, PY(y), CW - MR, PY(y), ML - 6, PY(y) + 4, t);
    }
    for (int i = 0; i < xa.n; i++) { /* mark below the x axis, label under it */
        double x = sv_rp_axis_tick(&xa, i);
        sv_rp_axis_label(&xa, x, t, sizeof t);
        tick(b, &k_tick_x, PX(x), CH - MB, PX(x), CH - MB + 4, PX(x), CH - MB + 17, t);
    }
    sv_rp_printf(b,
                 "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%d\" y2=\"%d\" stroke=\"#9ca3af\"/>"
                 "<text x=\"%.0f\" y=\"%d\" font-size=\"%d\" fill=\"#667085\" text-anchor=\"middle\">step</text>\n",
                 ML, CW - MR, CH - MB, CH - MB, ML + pw / 2, CH - 3, TICK_FONT);
    for (int i = 0; i < ns; i++) {
        size_t n = 0;
        for (size_t k = 0; k < s[i]->n; k++) n += drawable(s[i]->x[k], s[i]->y[k]);
        if (!n) continue;
        const char *col = k_palette[i % 6];
        sv_rp_printf(b, "<path class=\"series\" data-series=\"");
        sv_rp_esc(b, labels[i]);
        sv_rp_printf(b,
                     "\" data-points=\"%zu\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
                     "stroke-linejoin=\"round\" d=\"",
                     n, col);
        int first = 1;
        for (size_t k = 0; k < s[i]->n; k++) {
            if (!drawable(s[i]->x[k], s[i]->y[k])) continue;
            sv_rp_printf(b, "%s%.1f,%.1f", first ? "M" : " L", PX(s[i]->x[k]), PY(s[i]->y[k]));
            first = 0;
        }
        sv_rp_printf(b, "\"/>\n");
        if (n <= 40) /* sparse series (evaluations): mark the points */
            for (size_t k = 0; k < s[i]->n; k++) {
                if (!drawable(s[i]->x[k], s[i]->y[k])) continue;
                char st[SV_RP_NUM_CAP];
                fmt_value(s[i]->y[k], fmt, t, sizeof t);
                sv_rp_fmt_num(s[i]->x[k], 0, SV_RP_WHOLE_MAX, 0, st, sizeof st);
                sv_rp_printf(b,
                             "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>step %s: %s</title>"
                             "</circle>\n",
                             PX(s[i]->x[k]), PY(s[i]->y[k]), col, st, t);
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
    const int row = 20, lw = 170, bw = 330, fs = 12;
    /* the right-hand "83.3% · 5/6" labels decide the width */
    char t[96], nm[256];
    double wr = 0;
    for (int i = 0; i < shown; i++) {
        int k = order[i].k;
        snprintf(t, sizeof t, "%.1f%% \xc2\xb7 %lld/%lld", 100 * (isfinite(acc[k]) ? acc[k] : 0), correct[k], total[k]);
        wr = fmax(wr, sv_rp_text_width(t, fs));
    }
    int W = lw + bw + 8 + (int)ceil(wr) + 4, H = shown * row + 8;
    sv_rp_printf(b, "<div class=\"panel\"><h3>Per-class accuracy%s</h3>\n",
                 many ? " (the 40 weakest classes; all are in eval.json)" : "");
    sv_rp_printf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", W, H, W, H);
    for (int i = 0; i < shown; i++) {
        int k = order[i].k;
        double a = isfinite(acc[k]) ? acc[k] : 0;
        int y = 4 + i * row;
        /* red (weak) to green (strong) */
        int r = (int)(220 - 180 * a), g = (int)(60 + 120 * a);
        sv_rp_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\" fill=\"#1d2430\">", lw - 8,
                     y + 13, fs);
        sv_rp_esc(b, sv_rp_fit(names[k], fs, lw - 12, nm, sizeof nm)); /* full name in the bar's tooltip */
        sv_rp_printf(b,
                     "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eef2f7\" rx=\"3\"/>"
                     "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"rgb(%d,%d,90)\" rx=\"3\"><title>",
                     lw, y + 2, bw, row - 6, lw, y + 2, bw * a, row - 6, r, g);
        sv_rp_esc(b, names[k]);
        snprintf(t, sizeof t, "%.1f%% \xc2\xb7 %lld/%lld", 100 * a, correct[k], total[k]);
        sv_rp_printf(b,
                     ": %lld / %lld</title></rect><text x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#475467\">%s"
                     "</text>\n",
                     correct[k], total[k], lw + bw + 8, y + 13, fs, t);
    }
    sv_rp_printf(b, "</svg></div>\n");
    free(order);
}

void sv_rp_heatmap(sv_rp_buf *b, char *const *names, const long long *conf, int K) {
    sv_rp_printf(b,
                 "<div class=\"panel\"><h3>Confusion matrix (rows: true class, columns: predicted; colour: "
                 "share of the row)</h3>\n");
    if (K > 100) {
        sv_rp_printf(b, "<p class=\"muted\">%d classes: too many to draw; see confusion.csv.</p></div>\n", K);
        return;
    }
    int cell = 560 / K;
    if (cell > 34) cell = 34;
    if (cell < 5) cell = 5;
    /* Column labels are rotated 50 degrees up-right from their anchor: a label of width L reaches
     * L sin50 + 0.8 em cos50 above it and L cos50 + 0.25 em sin50 to its right. */
    const int fs = 11, colmax = 110;
    const double c50 = 0.6427876097, s50 = 0.7660444431;
    char nm[256];
    int labels = cell >= 11, lw = labels ? 150 : 10, top = 10;
    double lmax = 0;
    for (int r = 0; labels && r < K; r++)
        lmax = fmax(lmax, sv_rp_text_width(sv_rp_fit(names[r], fs, colmax, nm, sizeof nm), fs));
    if (labels) top = 6 + (int)ceil(lmax * s50 + 0.8 * fs * c50) + 2;
    int W = lw + K * cell + 10, H = top + K * cell + 10;
    if (labels) {
        int right = lw + (K - 1) * cell + cell / 2 + 3 + (int)ceil(lmax * c50 + 0.25 * fs * s50) + 2;
        if (right > W) W = right;
    }
    sv_rp_printf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", W, H, W, H);
    for (int r = 0; r < K; r++) {
        long long rowsum = 0;
        for (int c = 0; c < K; c++) rowsum += conf[(size_t)r * K + c];
        if (labels) {
            sv_rp_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\">", lw - 6,
                         top + r * cell + cell / 2 + 4, fs);
            sv_rp_esc(b, sv_rp_fit(names[r], fs, lw - 10, nm, sizeof nm));
            sv_rp_printf(b, "</text><text transform=\"translate(%d,%d) rotate(-50)\" font-size=\"%d\">",
                         lw + r * cell + cell / 2 + 3, top - 6, fs);
            sv_rp_esc(b, sv_rp_fit(names[r], fs, colmax, nm, sizeof nm));
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
            char cnt[24];
            snprintf(cnt, sizeof cnt, "%lld", v);
            if (v && cell >= 16 && sv_rp_text_width(cnt, 10) <= cell - 4) /* else the tooltip has it */
                sv_rp_printf(b,
                             "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" fill=\"%s\">%s"
                             "</text>",
                             lw + c * cell + cell / 2, top + r * cell + cell / 2 + 4, t > 0.6 ? "#fff" : "#1d2430",
                             cnt);
        }
        sv_rp_printf(b, "\n");
    }
    sv_rp_printf(b, "</svg></div>\n");
}
