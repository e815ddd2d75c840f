/* Trace section of the HTML report: per-rank time per category, how much of the collectives'
 * time in flight was hidden behind compute, and a timeline of the first optimizer steps.
 *
 * The timeline draws one lane per trace track (pid = rank, tid; named by the trace's
 * thread_name metadata and ordered by thread_sort_index, core/trace.h), so collectives that are
 * in flight together sit on their own lanes exactly as Perfetto shows them. Within a track,
 * blocks that would still overlap on screen (an older trace with every collective on one
 * track, or sub-pixel blocks) are packed into extra sub-lanes, so no two blocks of a lane ever
 * overlap. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "eval/report_svg.h"

#define MAX_RANKS 1024
#define MAX_TRACKS 4096
#define MAX_SUBLANES 16
#define TIMELINE_STEPS 3
#define MAX_RECTS 20000

enum { C_COMPUTE, C_COMM, C_DATA, C_OPTIM, C_OTHER, C_N };
static const char *const k_cat[C_N] = {"compute", "comm", "data", "optim", "other"};
static const char *const k_cat_col[C_N] = {"#2563eb", "#f97316", "#94a3b8", "#16a34a", "#a855f7"};

typedef struct ev {
    int rank, cat, unit, tid, track, sub; /* sub: sub-lane in the timeline, -1 when not drawn */
    const char *name;
    double ts, dur;
    double px, pw; /* drawn extent in the timeline */
} ev;

/* One (rank, tid) track: its name and order from the metadata, and its sub-lanes. */
typedef struct track {
    int rank, tid, sort, has_sort, used, sub, y;
    const char *name;
} track;

typedef struct tracks {
    track t[MAX_TRACKS];
    int n;
} tracks;

static int track_find(tracks *T, int rank, int tid, int add) {
    for (int i = 0; i < T->n; i++)
        if (T->t[i].rank == rank && T->t[i].tid == tid) return i;
    if (!add || T->n == MAX_TRACKS) return -1;
    T->t[T->n] = (track){.rank = rank, .tid = tid};
    return T->n++;
}

static int cat_of(const char *c) {
    for (int i = 0; i < C_OTHER; i++)
        if (!strcmp(c, k_cat[i])) return i;
    return C_OTHER;
}

/* -1, 0 or 1 as a < b, a == b, a > b (a difference of two ints may overflow). */
static int cmp_int(int a, int b) { return (a > b) - (a < b); }

static int by_rank_ts(const void *p, const void *q) {
    const ev *a = p, *b = q;
    if (a->rank != b->rank) return cmp_int(a->rank, b->rank);
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* ---- time per category: unions of intervals ------------------------------------------------ */

typedef struct ivl {
    double a, z;
} ivl;

static int by_start(const void *p, const void *q) {
    const ivl *a = p, *b = q;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* The union of rank r's events of category cat as sorted disjoint intervals (*out malloc'd). */
static size_t union_of(const ev *e, size_t n, int rank, int cat, ivl **out) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) m += e[i].rank == rank && e[i].cat == cat;
    ivl *v = malloc((m ? m : 1) * sizeof *v);
    *out = v;
    if (!v) return 0;
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].rank == rank && e[i].cat == cat) v[m++] = (ivl){e[i].ts, e[i].ts + e[i].dur};
    qsort(v, m, sizeof *v, by_start);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        if (k && v[i].a <= v[k - 1].z)
            v[k - 1].z = fmax(v[k - 1].z, v[i].z);
        else
            v[k++] = v[i];
    }
    return k;
}

static double measure(const ivl *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i].z - v[i].a;
    return s;
}

/* Length of the intersection of two sorted disjoint interval lists. */
static double intersect(const ivl *a, size_t na, const ivl *b, size_t nb) {
    double s = 0;
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        double l = fmax(a[i].a, b[j].a), h = fmin(a[i].z, b[j].z);
        if (h > l) s += h - l;
        if (a[i].z < b[j].z)
            i++;
        else
            j++;
    }
    return s;
}

/* A duration in microseconds as milliseconds with `decimals` (sv_rp_fmt_num) in buf (SV_RP_NUM_CAP). */
static const char *ms(double us, int decimals, char *buf) {
    sv_rp_fmt_num(us / 1e3, decimals, SV_RP_WHOLE_MAX, 0, buf, SV_RP_NUM_CAP);
    return buf;
}

static void table(sv_rp_buf *b, const ev *e, size_t n, int world) {
    char t[SV_RP_NUM_CAP];
    double tot[MAX_RANKS][C_N];
    memset(tot, 0, sizeof(double) * C_N * (size_t)world);
    for (size_t i = 0; i < n; i++) tot[e[i].rank][e[i].cat] += e[i].dur;
    sv_rp_printf(b, "<div class=\"panel\"><h3>Time per category and rank</h3><table><tr><th>rank</th>");
    for (int c = 0; c < C_N; c++) sv_rp_printf(b, "<th>%s%s (ms)</th>", k_cat[c], c == C_COMM ? " in flight" : "");
    sv_rp_printf(b, "<th>comm hidden behind compute</th><th>share of busy time</th></tr>\n");
    for (int r = 0; r < world; r++) {
        /* collectives overlap each other (prefetch + reduce-scatters): count wall time with at
         * least one in flight, and the part of it during which compute ran */
        ivl *cu = NULL, *mu = NULL;
        size_t ncu = union_of(e, n, r, C_COMPUTE, &cu), nmu = union_of(e, n, r, C_COMM, &mu);
        if (!cu || !mu) b->oom = 1;
        double comm = measure(mu, nmu), hid = intersect(mu, nmu, cu, ncu);
        free(cu);
        free(mu);
        tot[r][C_COMM] = comm;
        sv_rp_printf(b, "<tr><td>rank %d</td>", r);
        double busy = 0;
        for (int c = 0; c < C_N; c++) {
            sv_rp_printf(b, "<td>%s</td>", ms(tot[r][c], 1, t));
            if (c != C_COMM) busy += tot[r][c];
        }
        sv_rp_printf(b, "<td>%s%.0f%%</td><td>", comm > 0 ? "" : "n/a ", comm > 0 ? 100 * hid / comm : 0.0);
        /* stacked bar: compute / exposed comm / data / optim / other */
        double exposed = comm - hid, sum = busy + exposed;
        double parts[C_N] = {tot[r][C_COMPUTE], exposed, tot[r][C_DATA], tot[r][C_OPTIM], tot[r][C_OTHER]};
        sv_rp_printf(b, "<svg width=\"220\" height=\"14\" viewBox=\"0 0 220 14\">");
        double x = 0;
        for (int c = 0; c < C_N && sum > 0; c++) {
            double w = 220 * parts[c] / sum;
            if (w <= 0) continue;
            sv_rp_printf(b,
                         "<rect x=\"%.1f\" y=\"1\" width=\"%.1f\" height=\"12\" fill=\"%s\"><title>%s%s: %s ms"
                         "</title></rect>",
                         x, w, k_cat_col[c], c == C_COMM ? "exposed " : "", k_cat[c], ms(parts[c], 1, t));
            x += w;
        }
        sv_rp_printf(b, "</svg></td></tr>\n");
    }
    sv_rp_printf(b,
                 "</table><p class=\"muted\">Collectives are timed from issue to completion, each on its own "
                 "track. \"comm in flight\" is the time at least one collective was in flight (several "
                 "overlap: a prefetched all-gather and the reduce-scatters of the two gradient buffers); "
                 "the part of it during which the rank computed is hidden by prefetching. The bar shows "
                 "compute, exposed (not hidden) communication, data wait, optimizer and other time.</p></div>\n");
}

/* ---- timeline ------------------------------------------------------------------------------ */

/* Label colour for a block of fill "#rrggbb": dark on light fills, white on dark ones. */
static const char *ink_on(const char *fill) {
    unsigned v = (unsigned)strtoul(fill + 1, NULL, 16);
    double lum = 0.299 * (v >> 16 & 255) + 0.587 * (v >> 8 & 255) + 0.114 * (v & 255);
    return lum > 150 ? "#1d2430" : "#fff";
}

static const char *name_col(const char *name, int cat) {
    if (!strcmp(name, "backward")) return "#4338ca";
    if (!strcmp(name, "embed") || !strcmp(name, "head") || !strcmp(name, "embed_bwd")) return "#0891b2";
    if (!strcmp(name, "reduce_scatter")) return "#dc2626";
    if (!strcmp(name, "all_reduce")) return "#db2777";
    return k_cat_col[cat];
}

/* The label drawn inside a block: short, as the legend explains ("F3" forward of unit 3). */
static void block_label(const ev *e, char *buf, size_t cap) {
    static const char *const map[][2] = {{"forward", "F"},         {"backward", "B"},     {"all_gather", "AG"},
                                         {"reduce_scatter", "RS"}, {"all_reduce", "AR"},  {"embed_bwd", "embed bwd"},
                                         {"data_wait", "data"},    {"optimizer", "optim"}};
    const char *s = e->name;
    int per_unit = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(e->name, map[i][0])) s = map[i][1], per_unit = i < 5;
    if (per_unit && e->unit >= 0)
        snprintf(buf, cap, "%s%d", s, e->unit);
    else
        snprintf(buf, cap, "%s", s);
}

static int by_track_order(const void *p, const void *q) {
    const track *a = *(const track *const *)p, *b = *(const track *const *)q;
    if (a->rank != b->rank) return cmp_int(a->rank, b->rank);
    int sa = a->has_sort ? a->sort : a->tid, sb = b->has_sort ? b->sort : b->tid;
    if (sa != sb) return cmp_int(sa, sb);
    return cmp_int(a->tid, b->tid);
}

enum { LANE_H = 14, RANK_H = 17, RANK_GAP = 6, LW = 150, TL_W = 1160, TL_MR = 34, TOP = 4, AXIS_H = 30 };

static void timeline(sv_rp_buf *b, ev *e, size_t n, int world, tracks *T) {
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
    const double pw = TL_W - LW - TL_MR;
    /* pass 1: pack each track's visible blocks into sub-lanes: a block goes to the first sub-lane
     * whose last block ended (in time) before it starts; events of a track come in start order
     * (sorted by rank, then start). Edges are rounded as printed (%.2f), so time-disjoint blocks
     * are disjoint on screen too; a block widened to the 0.5 px minimum is cut back where the
     * next block of its sub-lane starts. */
    double(*end_t)[MAX_SUBLANES] = calloc((size_t)(T->n ? T->n : 1), sizeof *end_t);
    ev *(*last)[MAX_SUBLANES] = calloc((size_t)(T->n ? T->n : 1), sizeof *last);
    const track **order = malloc((size_t)(T->n ? T->n : 1) * sizeof *order);
    if (!end_t || !last || !order) {
        free(end_t);
        free(last);
        free(order);
        b->oom = 1;
        return;
    }
    size_t undrawn = 0;
    for (size_t i = 0; i < n; i++) {
        ev *x = &e[i];
        x->sub = -1;
        if (x->track < 0 || x->ts >= t1 || x->ts + x->dur <= t0) continue;
        double a = fmax(x->ts, t0), z = fmin(x->ts + x->dur, t1);
        double xs = round((LW + (a - t0) / (t1 - t0) * pw) * 100) / 100;
        double xe = round((LW + (z - t0) / (t1 - t0) * pw) * 100) / 100;
        track *tr = &T->t[x->track];
        int s = 0;
        while (s < tr->sub && end_t[x->track][s] > a) s++;
        if (s == MAX_SUBLANES) {
            undrawn++;
            continue;
        }
        if (s == tr->sub) tr->sub++;
        ev *prev = last[x->track][s];
        if (prev && prev->px + prev->pw > xs) prev->pw = fmax(0, xs - prev->px);
        end_t[x->track][s] = z;
        last[x->track][s] = x;
        x->sub = s;
        x->px = xs, x->pw = fmax(0.5, xe - xs);
        tr->used = 1;
    }
    free(end_t);
    free(last);
    int no = 0;
    for (int i = 0; i < T->n; i++)
        if (T->t[i].used) order[no++] = &T->t[i];
    qsort(order, (size_t)no, sizeof *order, by_track_order);
    int y = TOP;
    int rank_y[MAX_RANKS];
    for (int r = 0; r < world; r++) rank_y[r] = -1;
    for (int i = 0; i < no; i++) {
        track *tr = (track *)order[i];
        if (rank_y[tr->rank] < 0) {
            if (i) y += RANK_GAP;
            rank_y[tr->rank] = y;
            y += RANK_H;
        }
        tr->y = y;
        y += tr->sub * LANE_H;
    }
    int H = y + AXIS_H;
    char num[SV_RP_NUM_CAP];
    sv_rp_printf(b, "<div class=\"panel\"><h3>Timeline of the first %d optimizer steps (%s ms)</h3>\n",
                 steps ? steps : TIMELINE_STEPS, ms(t1 - t0, 1, num));
    for (int c = 0; c < C_N; c++)
        sv_rp_printf(b,
                     "<span style=\"display:inline-block;margin-right:14px;font-size:12px\"><span style=\""
                     "display:inline-block;width:10px;height:10px;background:%s;margin-right:5px\"></span>%s"
                     "</span>",
                     k_cat_col[c], k_cat[c]);
    sv_rp_printf(b,
                 "<span style=\"font-size:12px\" class=\"muted\">(one lane per trace track, as Perfetto shows "
                 "them; F/B forward/backward, AG all-gather, RS reduce-scatter (red), AR all-reduce, each "
                 "with its unit; hover a block for its name, unit and duration)</span>\n");
    sv_rp_printf(b, "<svg class=\"timeline\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", TL_W, H, TL_W, H);
    char t[96];
    for (int r = 0; r < world; r++)
        if (rank_y[r] >= 0)
            sv_rp_printf(b, "<text x=\"4\" y=\"%d\" font-size=\"12\" font-weight=\"600\">rank %d</text>\n",
                         rank_y[r] + 13, r);
    for (int i = 0; i < no; i++) {
        const track *tr = order[i];
        char fallback[32];
        snprintf(fallback, sizeof fallback, "tid %d", tr->tid);
        sv_rp_printf(b,
                     "<text class=\"lane\" x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#667085\" "
                     "text-anchor=\"end\">",
                     LW - 4, tr->y + 10);
        sv_rp_esc(b, sv_rp_fit(tr->name ? tr->name : fallback, 10, LW - 8, t, sizeof t));
        sv_rp_printf(b, "</text>\n");
        for (int s = 0; s < tr->sub; s++)
            sv_rp_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>\n", LW,
                         tr->y + s * LANE_H, pw, LANE_H - 1, (i + s) % 2 ? "#f8fafc" : "#f1f5f9");
    }
    size_t drawn = 0;
    for (size_t i = 0; i < n && drawn < MAX_RECTS; i++) {
        const ev *x = &e[i];
        if (x->sub < 0) continue;
        const track *tr = &T->t[x->track];
        double px = x->px, w = x->pw;
        int ly = tr->y + x->sub * LANE_H;
        const char *fill = name_col(x->name, x->cat);
        sv_rp_printf(b, "<rect class=\"blk\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", px,
                     ly + 1, w, LANE_H - 3, fill);
        sv_rp_esc(b, x->name);
        if (x->unit >= 0) sv_rp_printf(b, " unit %d", x->unit);
        sv_rp_printf(b, ": %s ms</title></rect>\n", ms(x->dur, 3, num));
        char lbl[48];
        block_label(x, lbl, sizeof lbl);
        sv_rp_fit(lbl, 9, w - 3, t, sizeof t); /* inside the block, or not at all */
        if (t[0]) {
            sv_rp_printf(b, "<text class=\"blk\" x=\"%.2f\" y=\"%d\" font-size=\"9\" fill=\"%s\">", px + 1.5, ly + 9,
                         ink_on(fill));
            sv_rp_esc(b, t);
            sv_rp_printf(b, "</text>\n");
        }
        drawn++;
    }
    /* time axis: nice ticks in ms (s for long windows), labels centred on their tick */
    double span = (t1 - t0) / 1e3, scale = 1;
    const char *unit = " ms";
    if (span >= 5000) scale = 1e3, unit = " s";
    sv_rp_axis ax;
    sv_rp_axis_make(&ax, 0, span / scale, 6, SV_RP_PLAIN, 0, 0);
    int ya = H - AXIS_H + 4;
    sv_rp_printf(b, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%d\" y2=\"%d\" stroke=\"#9ca3af\"/>\n", LW, LW + pw, ya, ya);
    for (int k = 0; k < ax.n; k++) {
        double v = sv_rp_axis_tick(&ax, k), px = LW + v * scale / span * pw;
        sv_rp_axis_label(&ax, v, num, sizeof num);
        snprintf(t, sizeof t, "%s%s", num, strcmp(num, "0") ? unit : "");
        sv_rp_printf(b,
                     "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#9ca3af\"/>"
                     "<text class=\"tick-x\" x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#667085\" "
                     "text-anchor=\"middle\">%s</text>\n",
                     px, px, ya, ya + 4, px, ya + 16, t);
    }
    sv_rp_printf(b, "</svg>");
    if (undrawn || drawn == MAX_RECTS)
        sv_rp_printf(b,
                     "<p class=\"muted\">Some blocks are not drawn (more than %d overlap on one track, or more "
                     "than %d blocks).</p>",
                     MAX_SUBLANES, MAX_RECTS);
    sv_rp_printf(b, "</div>\n");
    free(order);
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
    tracks *T = calloc(1, sizeof *T);
    if (!e || !T) {
        free(e);
        free(T);
        sv_json_doc_free(&doc);
        return SV_FAIL(SV_ERR_OOM, "trace events of %s", path);
    }
    int world = 0;
    size_t bad = 0; /* complete events with a time not drawn */
    for (size_t i = 0; i < cap; i++) {
        const sv_json *x = sv_json_index(arr, i);
        const char *ph = NULL, *name = NULL, *cat = "other";
        if (sv_json_opt_str(x, "ph", "", &ph) != SV_OK) continue;
        double pid, tid, ts, dur;
        if (sv_json_opt_f64(x, "pid", 0, &pid) != SV_OK || sv_json_opt_f64(x, "tid", 0, &tid) != SV_OK ||
            !(pid >= 0 && pid < MAX_RANKS) || !(fabs(tid) < 1e9))
            continue;
        const sv_json *args = sv_json_member_get(x, "args");
        if (!strcmp(ph, "M")) { /* track names and order */
            const char *mname = NULL, *tname = NULL;
            double sort;
            if (sv_json_opt_str(x, "name", "", &mname) != SV_OK || !sv_json_member_get(x, "tid")) continue;
            int k = -1;
            if (!strcmp(mname, "thread_name") && sv_json_opt_str(args, "name", "", &tname) == SV_OK &&
                (k = track_find(T, (int)pid, (int)tid, 1)) >= 0)
                T->t[k].name = tname;
            if (!strcmp(mname, "thread_sort_index") && sv_json_opt_f64(args, "sort_index", 0, &sort) == SV_OK &&
                fabs(sort) < 1e9 && (k = track_find(T, (int)pid, (int)tid, 1)) >= 0)
                T->t[k].sort = (int)sort, T->t[k].has_sort = 1;
            continue;
        }
        if (strcmp(ph, "X")) continue;
        int64_t unit = -1;
        if (sv_json_opt_str(x, "name", "?", &name) != SV_OK || sv_json_opt_str(x, "cat", "other", &cat) != SV_OK ||
            sv_json_opt_f64(x, "ts", 0, &ts) != SV_OK || sv_json_opt_f64(x, "dur", 0, &dur) != SV_OK)
            continue;
        if (args && (sv_json_opt_i64(args, "unit", -1, &unit) != SV_OK || unit < 0 || unit > INT_MAX)) unit = -1;
        /* times the sums, unions and pixel arithmetic below keep finite (as a curve's points,
         * SV_RP_MAX_ABS): anything else is left out and counted in the note */
        if (!(ts >= 0 && ts <= SV_RP_MAX_ABS && dur >= 0 && dur <= SV_RP_MAX_ABS)) {
            bad++;
            continue;
        }
        int k = track_find(T, (int)pid, (int)tid, 1);
        e[n++] = (ev){(int)pid, cat_of(cat), (int)unit, (int)tid, k, -1, name, ts, dur, 0, 0};
        if ((int)pid + 1 > world) world = (int)pid + 1;
    }
    sv_err_clear();
    qsort(e, n, sizeof *e, by_rank_ts);
    sv_rp_printf(b, "<h2>Compute and communication per rank</h2>\n");
    if (bad) /* never left out silently */
        sv_rp_printf(b,
                     "<p class=\"muted\">%zu trace event%s with a negative, non-finite or out-of-range time "
                     "(ts or dur not in [0, %g]) left out</p>\n",
                     bad, bad == 1 ? "" : "s", SV_RP_MAX_ABS);
    if (!n) {
        sv_rp_printf(b, "<p class=\"muted\">The trace ");
        sv_rp_esc(b, path);
        sv_rp_printf(b, " holds no events.</p>\n");
    } else {
        table(b, e, n, world);
        timeline(b, e, n, world, T);
    }
    free(e);
    free(T);
    sv_json_doc_free(&doc);
    return SV_OK;
}
