/* Trace section of the HTML report: per-rank time per category, how much of the collectives'
 * time in flight was hidden behind compute, and a timeline of the first optimizer steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "eval/report_svg.h"

#define MAX_RANKS 1024
#define TIMELINE_STEPS 3
#define MAX_RECTS 20000

enum { C_COMPUTE, C_COMM, C_DATA, C_OPTIM, C_OTHER, C_N };
static const char *const k_cat[C_N] = {"compute", "comm", "data", "optim", "other"};
static const char *const k_cat_col[C_N] = {"#2563eb", "#f97316", "#94a3b8", "#16a34a", "#a855f7"};

typedef struct ev {
    int rank, cat, unit;
    const char *name;
    double ts, dur;
} ev;

static int cat_of(const char *c) {
    for (int i = 0; i < C_OTHER; i++)
        if (!strcmp(c, k_cat[i])) return i;
    return C_OTHER;
}

static const char *name_col(const char *name, int cat) {
    if (!strcmp(name, "backward")) return "#4338ca";
    if (!strcmp(name, "embed") || !strcmp(name, "head") || !strcmp(name, "embed_bwd")) return "#0891b2";
    if (!strcmp(name, "reduce_scatter")) return "#dc2626";
    if (!strcmp(name, "all_reduce")) return "#db2777";
    return k_cat_col[cat];
}

static int by_rank_ts(const void *p, const void *q) {
    const ev *a = p, *b = q;
    if (a->rank != b->rank) return a->rank - b->rank;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Sum over comm events of their overlap with the compute intervals, which run one at a time on
 * the compute lane (so sorted by start they are sorted by end too: binary search the first). */
static double hidden_comm(const ev *e, size_t n, int rank) {
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) nc += e[i].rank == rank && e[i].cat == C_COMPUTE;
    const ev **c = malloc((nc ? nc : 1) * sizeof *c);
    if (!c) return 0;
    nc = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].rank == rank && e[i].cat == C_COMPUTE) c[nc++] = &e[i];
    double hidden = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].rank != rank || e[i].cat != C_COMM) continue;
        double a = e[i].ts, z = e[i].ts + e[i].dur;
        size_t lo = 0, hi = nc;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (c[mid]->ts + c[mid]->dur <= a) lo = mid + 1;
            else hi = mid;
        }
        for (size_t j = lo; j < nc && c[j]->ts < z; j++) {
            double l = fmax(a, c[j]->ts), h = fmin(z, c[j]->ts + c[j]->dur);
            if (h > l) hidden += h - l;
        }
    }
    free(c);
    return hidden;
}

static void table(sv_rp_buf *b, const ev *e, size_t n, int world) {
    double tot[MAX_RANKS][C_N];
    memset(tot, 0, sizeof(double) * C_N * (size_t)world);
    for (size_t i = 0; i < n; i++) tot[e[i].rank][e[i].cat] += e[i].dur;
    sv_rp_printf(b, "<div class=\"panel\"><h3>Time per category and rank</h3><table><tr><th>rank</th>");
    for (int c = 0; c < C_N; c++) sv_rp_printf(b, "<th>%s (ms)</th>", k_cat[c]);
    sv_rp_printf(b, "<th>comm hidden behind compute</th><th>share of busy time</th></tr>\n");
    for (int r = 0; r < world; r++) {
        sv_rp_printf(b, "<tr><td>rank %d</td>", r);
        double busy = 0;
        for (int c = 0; c < C_N; c++) {
            sv_rp_printf(b, "<td>%.1f</td>", tot[r][c] / 1e3);
            if (c != C_COMM) busy += tot[r][c];
        }
        double hid = hidden_comm(e, n, r), comm = tot[r][C_COMM];
        sv_rp_printf(b, "<td>%s%.0f%%</td><td>", comm > 0 ? "" : "n/a ", comm > 0 ? 100 * hid / comm : 0.0);
        /* stacked bar: compute / exposed comm / data / optim / other */
        double exposed = comm - hid, sum = busy + exposed;
        double parts[C_N] = {tot[r][C_COMPUTE], exposed, tot[r][C_DATA], tot[r][C_OPTIM], tot[r][C_OTHER]};
        sv_rp_printf(b, "<svg width=\"220\" height=\"14\">");
        double x = 0;
        for (int c = 0; c < C_N && sum > 0; c++) {
            double w = 220 * parts[c] / sum;
            if (w <= 0) continue;
            sv_rp_printf(b, "<rect x=\"%.1f\" y=\"1\" width=\"%.1f\" height=\"12\" fill=\"%s\"><title>%s%s: %.1f ms"
                            "</title></rect>", x, w, k_cat_col[c], c == C_COMM ? "exposed " : "", k_cat[c],
                         parts[c] / 1e3);
            x += w;
        }
        sv_rp_printf(b, "</svg></td></tr>\n");
    }
    sv_rp_printf(b, "</table><p class=\"muted\">Collectives are timed from issue to completion on their own "
                    "lane; the part that overlaps compute on the same rank is hidden by prefetching. The bar "
                    "shows compute, exposed (not hidden) communication, data wait, optimizer and other time."
                    "</p></div>\n");
}

static void timeline(sv_rp_buf *b, const ev *e, size_t n, int world) {
    /* window: from the first event to the end of rank 0's TIMELINE_STEPS-th optimizer step */
    double t0 = INFINITY, t1 = -INFINITY, tend = -INFINITY;
    int steps = 0;
    for (size_t i = 0; i < n; i++) {
        t0 = fmin(t0, e[i].ts);
        tend = fmax(tend, e[i].ts + e[i].dur);
        if (e[i].rank == 0 && e[i].cat == C_OPTIM && steps < TIMELINE_STEPS) {
            steps++;
            t1 = e[i].ts + e[i].dur;
        }
    }
    if (steps < TIMELINE_STEPS) t1 = tend;
    if (!(t1 > t0)) return;
    const int lanes = 4, lh = 13, gap = 10, lw = 110, W = 1120;
    int H = 24 + world * (lanes * lh + gap) + 30;
    double pw = W - lw - 20;
    sv_rp_printf(b, "<div class=\"panel\"><h3>Timeline of the first %d optimizer steps (%.1f ms)</h3>\n",
                 steps ? steps : TIMELINE_STEPS, (t1 - t0) / 1e3);
    for (int c = 0; c < C_N; c++)
        sv_rp_printf(b, "<span style=\"display:inline-block;margin-right:14px;font-size:12px\"><span style=\""
                        "display:inline-block;width:10px;height:10px;background:%s;margin-right:5px\"></span>%s"
                        "</span>", k_cat_col[c], k_cat[c]);
    sv_rp_printf(b, "<span style=\"font-size:12px\" class=\"muted\">(backward indigo, reduce-scatter red; hover a "
                    "block for its name, unit and duration)</span>\n");
    sv_rp_printf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", W, H, W, H);
    static const char *lane_name[4] = {"compute", "comm", "data", "optim"};
    for (int r = 0; r < world; r++) {
        int y = 16 + r * (lanes * lh + gap);
        sv_rp_printf(b, "<text x=\"4\" y=\"%d\" font-size=\"12\" font-weight=\"600\">rank %d</text>\n", y + 11, r);
        for (int l = 0; l < lanes; l++)
            sv_rp_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#667085\" text-anchor=\"end\">%s</text>"
                            "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>\n",
                         lw - 4, y + l * lh + 10, lane_name[l], lw, y + l * lh, pw, lh - 1,
                         l % 2 ? "#f8fafc" : "#f1f5f9");
    }
    size_t drawn = 0;
    for (size_t i = 0; i < n && drawn < MAX_RECTS; i++) {
        if (e[i].ts >= t1 || e[i].ts + e[i].dur <= t0) continue;
        int lane = e[i].cat == C_COMPUTE ? 0 : e[i].cat == C_COMM ? 1 : e[i].cat == C_DATA ? 2 : 3;
        double a = fmax(e[i].ts, t0), z = fmin(e[i].ts + e[i].dur, t1);
        double x = lw + (a - t0) / (t1 - t0) * pw, w = fmax(0.5, (z - a) / (t1 - t0) * pw);
        int y = 16 + e[i].rank * (lanes * lh + gap) + lane * lh;
        sv_rp_printf(b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x, y + 1, w,
                     lh - 3, name_col(e[i].name, e[i].cat));
        sv_rp_esc(b, e[i].name);
        if (e[i].unit >= 0) sv_rp_printf(b, " unit %d", e[i].unit);
        sv_rp_printf(b, ": %.3f ms</title></rect>\n", e[i].dur / 1e3);
        drawn++;
    }
    int ya = H - 22;
    double span = (t1 - t0) / 1e3;
    for (int k = 0; k <= 5; k++)
        sv_rp_printf(b, "<text x=\"%.0f\" y=\"%d\" font-size=\"10\" fill=\"#667085\" text-anchor=\"middle\">"
                        "%.1f ms</text>", lw + pw * k / 5, ya + 14, span * k / 5);
    sv_rp_printf(b, "</svg></div>\n");
}

sv_status sv_rp_trace_section(sv_rp_buf *b, const char *path) {
    char *text = NULL;
    size_t len = 0;
    SV_TRY(sv_fileio_read_small(path, (size_t)1 << 30, &text, &len));
    sv_json_doc doc;
    sv_json_limits lim = {.max_bytes = (size_t)1 << 30, .max_depth = 0};
    sv_status st = sv_json_parse(&doc, text, len, path, &lim);
    free(text);
    SV_TRY(st);
    const sv_json *arr = doc.root.type == SV_JSON_ARRAY ? &doc.root : sv_json_member_get(&doc.root, "traceEvents");
    size_t cap = sv_json_count(arr), n = 0;
    ev *e = malloc((cap ? cap : 1) * sizeof *e);
    if (!e) {
        sv_json_doc_free(&doc);
        return SV_FAIL(SV_ERR_OOM, "trace events of %s", path);
    }
    int world = 0;
    for (size_t i = 0; i < cap; i++) {
        const sv_json *x = sv_json_index(arr, i);
        const char *ph = NULL, *name = NULL, *cat = "other";
        if (sv_json_opt_str(x, "ph", "", &ph) != SV_OK || strcmp(ph, "X")) continue;
        double pid, ts, dur;
        int64_t unit = -1;
        if (sv_json_opt_str(x, "name", "?", &name) != SV_OK || sv_json_opt_str(x, "cat", "other", &cat) != SV_OK ||
            sv_json_opt_f64(x, "pid", 0, &pid) != SV_OK || sv_json_opt_f64(x, "ts", 0, &ts) != SV_OK ||
            sv_json_opt_f64(x, "dur", 0, &dur) != SV_OK)
            continue;
        const sv_json *args = sv_json_member_get(x, "args");
        if (args && sv_json_opt_i64(args, "unit", -1, &unit) != SV_OK) unit = -1;
        if (pid < 0 || pid >= MAX_RANKS) continue;
        e[n++] = (ev){(int)pid, cat_of(cat), (int)unit, name, ts, dur};
        if ((int)pid + 1 > world) world = (int)pid + 1;
    }
    sv_err_clear();
    qsort(e, n, sizeof *e, by_rank_ts);
    sv_rp_printf(b, "<h2>Compute and communication per rank</h2>\n");
    if (!n) sv_rp_printf(b, "<p class=\"muted\">The trace %s holds no events.</p>\n", path);
    else {
        table(b, e, n, world);
        timeline(b, e, n, world);
    }
    free(e);
    sv_json_doc_free(&doc);
    return SV_OK;
}
