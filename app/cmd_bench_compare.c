/* shardvit bench-compare A.json B.json: the ratio B / A of two `shardvit bench` results (train,
 * --op or --comm JSON), refusing results that do not measure the same thing (docs/performance.md
 * "Comparing results").
 *
 * Same thing: the same mode, and for train results the same model (name, shape, architecture
 * options, parameter count and FLOPs per image), global batch and precision (param_dtype); for
 * --op results the same op, model shape (parameter count and classes included), micro-batch and
 * precision, and each compared variant the same work (flops or bytes); --comm results are matched
 * row by row on (collective, size). A mismatch is an error naming the field and both values
 * (exit 1); a field that only results of a later shardvit record is checked where both carry it
 * (a note names a result that lacks it). Differences in provenance that do not change what is
 * measured (commit, dirty tree, CPU, libraries, world size, threads) are listed as notes, since
 * they are usually what a comparison is about; so are MFUs against different peaks (their ratio
 * is then not shown).
 *
 * Every string of a result file that is printed (in a line, a note or an error) goes through
 * sv_log_esc, so a result file cannot drive the terminal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/flags.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"

typedef struct result {
    const char *path;
    sv_json_doc doc;
    const sv_json *root, *prov;
} result;

static sv_status load(result *r, const char *path) {
    char *text = NULL;
    size_t len = 0;
    r->path = path;
    SV_TRY(sv_fileio_read_small(path, (size_t)64 << 20, &text, &len));
    sv_status st = sv_json_parse(&r->doc, text, len, path, NULL);
    free(text);
    SV_TRY(st);
    r->root = &r->doc.root;
    if (r->root->type != SV_JSON_OBJECT)
        return SV_FAIL(SV_ERR_FORMAT, "%s: not a shardvit bench result (expected one JSON object)", path);
    const sv_json *mode = sv_json_member_get(r->root, "mode");
    if (!mode || mode->type != SV_JSON_STRING)
        return SV_FAIL(SV_ERR_FORMAT, "%s: not a shardvit bench result (no \"mode\")", path);
    r->prov = sv_json_member_get(r->root, "provenance");
    return SV_OK;
}

/* A scalar as text for messages (strings bare but escaped: sv_log_esc; numbers %.6g). */
static void scalar_text(const sv_json *v, char *buf, size_t cap) {
    if (!v)
        snprintf(buf, cap, "(absent)");
    else if (v->type == SV_JSON_STRING)
        sv_log_esc(v->u.str.s, buf, cap);
    else if (v->type == SV_JSON_NUMBER)
        snprintf(buf, cap, "%.6g", v->u.num.d);
    else if (v->type == SV_JSON_BOOL)
        snprintf(buf, cap, "%s", v->u.boolean ? "true" : "false");
    else if (v->type == SV_JSON_NULL)
        snprintf(buf, cap, "null");
    else
        snprintf(buf, cap, "(%s)", sv_json_type_name(v->type));
}

static int same_value(const sv_json *a, const sv_json *b) {
    if (!a || !b) return !a && !b;
    if (a->type != b->type) return 0;
    switch (a->type) {
    case SV_JSON_NULL: return 1;
    case SV_JSON_BOOL: return a->u.boolean == b->u.boolean;
    case SV_JSON_NUMBER: return a->u.num.d == b->u.num.d;
    case SV_JSON_STRING: return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    default: break;
    }
    if (sv_json_count(a) != sv_json_count(b)) return 0;
    for (size_t i = 0; i < sv_json_count(a); i++) {
        if (a->type == SV_JSON_ARRAY && !same_value(sv_json_index(a, i), sv_json_index(b, i))) return 0;
        if (a->type == SV_JSON_OBJECT) {
            const sv_json_member *m = &a->u.obj.members[i];
            if (!same_value(&m->value, sv_json_member_get(b, m->key))) return 0;
        }
    }
    return 1;
}

/* The fields that define what is measured must agree. */
static sv_status require_same(const result *a, const result *b, const sv_json *oa, const sv_json *ob,
                              const char *const *keys, const char *what) {
    for (size_t i = 0; keys[i]; i++) {
        const sv_json *va = sv_json_member_get(oa, keys[i]), *vb = sv_json_member_get(ob, keys[i]);
        if (!same_value(va, vb)) {
            char ta[128], tb[128];
            scalar_text(va, ta, sizeof ta);
            scalar_text(vb, tb, sizeof tb);
            return SV_FAIL(SV_ERR_INVALID, "refusing to compare: %s%s differs (%s: %s, %s: %s)", what, keys[i], a->path,
                           ta, b->path, tb);
        }
    }
    return SV_OK;
}

/* Identity fields bench records since a later version: results from before lack them. Absent on
 * both sides is no difference; absent on one side is said (a note, print = 1) and not checked;
 * present on both, they must agree as require_same's fields. */
static sv_status require_same_recorded(const result *a, const result *b, const sv_json *oa, const sv_json *ob,
                                       const char *const *keys, const char *what, int print) {
    for (size_t i = 0; keys[i]; i++) {
        const sv_json *va = sv_json_member_get(oa, keys[i]), *vb = sv_json_member_get(ob, keys[i]);
        if (!va && !vb) continue;
        if (!va || !vb) {
            if (print) {
                char p[SV_ESC_CAP];
                printf("note: %s%s is not recorded in %s (a result from an earlier shardvit): not checked\n", what,
                       keys[i], sv_log_esc(!va ? a->path : b->path, p, sizeof p));
            }
            continue;
        }
        const char *const one[] = {keys[i], NULL};
        SV_TRY(require_same(a, b, oa, ob, one, what));
    }
    return SV_OK;
}

/* A string member escaped for a terminal line (sv_log_esc) in buf, or "?" when absent or not a
 * string. */
static const char *str_of(const sv_json *obj, const char *key, char *buf, size_t cap) {
    const sv_json *v = sv_json_member_get(obj, key);
    return v && v->type == SV_JSON_STRING ? sv_log_esc(v->u.str.s, buf, cap) : "?";
}

/* A measured figure bench writes: whether a result must carry it (else it may be absent or null,
 * as in results from before it existed or where bench had nothing to measure), whether 0 is a
 * value bench writes (a figure it could not measure on that machine), and the sane range. */
typedef struct metric {
    const char *key;
    int required, zero_ok;
    double lo, hi;
} metric;

/* Train results: rates and times are positive, memory and CPU figures may be 0 (unmeasured). */
static const metric k_train[] = {{"img_per_s", 1, 0, 1e-6, 1e9},       {"step_time_s", 1, 0, 1e-9, 1e7},
                                 {"step_time_min_s", 1, 0, 1e-9, 1e7}, {"img_per_cpu_s", 1, 1, 1e-6, 1e9},
                                 {"tflops", 1, 1, 1e-12, 1e6},         {"mfu", 0, 1, 1e-12, 1e3},
                                 {"mfu_gemm", 0, 1, 1e-12, 1e3},       {"peak_mem_bytes", 1, 1, 1, 1e16},
                                 {"max_rss_bytes", 1, 1, 1, 1e16},     {NULL, 0, 0, 0, 0}};
static const metric k_op[] = {{"rate_best", 1, 0, 1e-9, 1e9}, {"best_s", 1, 0, 1e-12, 1e7}, {NULL, 0, 0, 0, 0}};
static const metric k_comm[] = {{"busbw_gbps", 1, 1, 1e-9, 1e9}, {NULL, 0, 0, 0, 0}};

/* The figure m of obj (at `where`, e.g. "results[2]."), checked: a finite number in m's range;
 * *out NULL when an optional figure is absent or null. Errors name the file and the field. */
static sv_status get_metric(const result *r, const sv_json *obj, const char *where, const metric *m,
                            const sv_json **out) {
    const sv_json *v = sv_json_member_get(obj, m->key);
    *out = NULL;
    if (!v || v->type == SV_JSON_NULL) {
        if (!m->required) return SV_OK;
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s is %s (a bench result always has it)", r->path, where, m->key,
                       v ? "null" : "missing");
    }
    if (v->type != SV_JSON_NUMBER)
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s must be a number, not %s", r->path, where, m->key,
                       sv_json_type_name(v->type));
    double d = v->u.num.d;
    if (!isfinite(d) || !((m->zero_ok && d == 0) || (d >= m->lo && d <= m->hi)))
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s %.6g is not a measurement (expected %s[%g, %g])", r->path, where,
                       m->key, d, m->zero_ok ? "0 or " : "", m->lo, m->hi);
    *out = v;
    return SV_OK;
}

/* Check every figure of the table in both results before anything is printed. */
static sv_status check_metrics(const result *a, const result *b, const sv_json *oa, const sv_json *ob,
                               const char *where, const metric *ms) {
    const sv_json *v;
    for (const metric *m = ms; m->key; m++) {
        SV_TRY(get_metric(a, oa, where, m, &v));
        SV_TRY(get_metric(b, ob, where, m, &v));
    }
    return SV_OK;
}

/* B / A with a bounded number of characters: checked figures keep it finite, but a ratio of two
 * extreme ones would print hundreds of digits with %f. */
static void ratio_line_as(const char *name, const sv_json *va, const sv_json *vb, int ratio) {
    char ta[32] = "n/a", tb[32] = "n/a", q[32] = "n/a";
    int na = va && va->type == SV_JSON_NUMBER, nb = vb && vb->type == SV_JSON_NUMBER;
    if (na) snprintf(ta, sizeof ta, "%.6g", va->u.num.d);
    if (nb) snprintf(tb, sizeof tb, "%.6g", vb->u.num.d);
    if (ratio && na && nb && va->u.num.d != 0) {
        double r = vb->u.num.d / va->u.num.d;
        snprintf(q, sizeof q, r == 0 || (fabs(r) >= 1e-4 && fabs(r) < 1e6) ? "%.4f" : "%.4e", r);
    }
    printf("  %-28s %14s %14s   B/A %s\n", name, ta, tb, q);
}
static void ratio_line(const char *name, const sv_json *va, const sv_json *vb) { ratio_line_as(name, va, vb, 1); }
/* Both figures, no ratio (figures not comparable, e.g. MFU against different peaks). */
static void ratio_line_na(const char *name, const sv_json *va, const sv_json *vb) { ratio_line_as(name, va, vb, 0); }

/* Provenance fields whose difference is reported (not refused). */
static void provenance_notes(const result *a, const result *b) {
    static const char *const keys[] = {
        "commit",           "dirty", "version", "host",      "world_size", "ranks_per_node",
        "threads_per_rank", "cpu",   "gpu",     "libraries", "build",      NULL};
    if (!a->prov || !b->prov) {
        char p[SV_ESC_CAP];
        printf("note: %s carries no provenance\n", sv_log_esc(!a->prov ? a->path : b->path, p, sizeof p));
        return;
    }
    for (size_t i = 0; keys[i]; i++) {
        const sv_json *va = sv_json_member_get(a->prov, keys[i]), *vb = sv_json_member_get(b->prov, keys[i]);
        if (same_value(va, vb)) continue;
        if (va && vb && va->type != SV_JSON_OBJECT && vb->type != SV_JSON_OBJECT) {
            char ta[128], tb[128];
            scalar_text(va, ta, sizeof ta);
            scalar_text(vb, tb, sizeof tb);
            printf("note: provenance %s differs: A %s, B %s\n", keys[i], ta, tb);
        } else {
            printf("note: provenance %s differs\n", keys[i]);
        }
    }
}

/* The "results" array of an --op or --comm result. */
static sv_status get_rows(const result *r, const sv_json **out) {
    *out = sv_json_member_get(r->root, "results");
    if (!*out) return SV_FAIL(SV_ERR_FORMAT, "%s: results is missing (a bench result always has it)", r->path);
    if ((*out)->type != SV_JSON_ARRAY)
        return SV_FAIL(SV_ERR_FORMAT, "%s: results must be an array, not %s", r->path, sv_json_type_name((*out)->type));
    return SV_OK;
}

/* A row of "results": an object with the string member that names it. */
static sv_status check_row(const result *r, const sv_json *row, const char *where, const char *name) {
    if (!row || row->type != SV_JSON_OBJECT)
        return SV_FAIL(SV_ERR_FORMAT, "%s: %.*s must be an object", r->path, (int)strlen(where) - 1, where);
    const sv_json *v = sv_json_member_get(row, name);
    if (!v) return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s is missing (a bench result always has it)", r->path, where, name);
    if (v->type != SV_JSON_STRING)
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s must be a string, not %s", r->path, where, name,
                       sv_json_type_name(v->type));
    return SV_OK;
}

/* The first row of `rows` whose variant equals v, or NULL (rows checked by check_row). */
static const sv_json *op_row(const sv_json *rows, const sv_json *v) {
    for (size_t i = 0; i < sv_json_count(rows); i++) {
        const sv_json *row = sv_json_index(rows, i);
        if (row && row->type == SV_JSON_OBJECT && same_value(sv_json_member_get(row, "variant"), v)) return row;
    }
    return NULL;
}

static sv_status compare(const result *a, const result *b) {
    const char *ma = sv_json_member_get(a->root, "mode")->u.str.s, *mb = sv_json_member_get(b->root, "mode")->u.str.s;
    char e1[SV_ESC_CAP], e2[SV_ESC_CAP];
    if (strcmp(ma, mb))
        return SV_FAIL(SV_ERR_INVALID, "refusing to compare: mode differs (%s: %s, %s: %s)", a->path,
                       sv_log_esc(ma, e1, sizeof e1), b->path, sv_log_esc(mb, e2, sizeof e2));
    if (!strcmp(ma, "train")) {
        static const char *const id[] = {"model", "img",        "patch", "dim",         "depth",
                                         "heads", "batch_size", "accum", "param_dtype", NULL};
        static const char *const id_new[] = {"mlp_ratio",      "num_classes", "in_chans",
                                             "reg_tokens",     "class_token", "global_pool",
                                             "no_embed_class", "layer_scale", NULL};
        static const char *const size[] = {"params", "flops_per_image", NULL}; /* any other model difference */
        SV_TRY(require_same(a, b, a->root, b->root, id, ""));
        SV_TRY(require_same_recorded(a, b, a->root, b->root, id_new, "", 0));
        SV_TRY(require_same(a, b, a->root, b->root, size, ""));
        SV_TRY(check_metrics(a, b, a->root, b->root, "", k_train));
        require_same_recorded(a, b, a->root, b->root, id_new, "", 1);
        provenance_notes(a, b);
        /* MFU is achieved / peak: a ratio of MFUs against different peaks is not the speed-up */
        static const char *const peak_id[] = {"peak_kind", "peak_flops", "hw_peak_engine", NULL};
        int same_peak = 1;
        for (size_t i = 0; peak_id[i]; i++)
            same_peak &= same_value(sv_json_member_get(a->root, peak_id[i]), sv_json_member_get(b->root, peak_id[i]));
        if (!same_peak) {
            char pa[3][64], pb[3][64];
            for (int i = 0; i < 3; i++) {
                scalar_text(sv_json_member_get(a->root, peak_id[i]), pa[i], sizeof pa[i]);
                scalar_text(sv_json_member_get(b->root, peak_id[i]), pb[i], sizeof pb[i]);
            }
            printf("note: the results' MFU is against different peaks (A: %s peak %s FLOP/s, engine %s; B: %s peak %s "
                   "FLOP/s, engine %s): mfu ratio not shown\n",
                   pa[0], pa[1], pa[2], pb[0], pb[1], pb[2]);
        }
        /* max_rss_bytes of the measured run alone, or the process's peak (calibration and all): only
         * results of one scope compare (a result without max_rss_scope predates it: the process) */
        const sv_json *sa = sv_json_member_get(a->root, "max_rss_scope"),
                      *sb = sv_json_member_get(b->root, "max_rss_scope");
        const int same_rss = same_value(sa, sb);
        if (!same_rss) {
            char ta[64], tb[64];
            scalar_text(sa, ta, sizeof ta);
            scalar_text(sb, tb, sizeof tb);
            printf("note: the results' max_rss_bytes cover different spans (A: %s, B: %s; a result without "
                   "max_rss_scope measured the whole process): max_rss_bytes ratio not shown\n",
                   sa ? ta : "process", sb ? tb : "process");
        }
        char batch[64];
        scalar_text(sv_json_member_get(a->root, "batch_size"), batch, sizeof batch);
        printf("train %s, batch %s, %s:%*s%14s %14s\n", str_of(a->root, "model", e1, sizeof e1), batch,
               str_of(a->root, "param_dtype", e2, sizeof e2), 4, "", "A", "B");
        for (const metric *m = k_train; m->key; m++) {
            const sv_json *va = sv_json_member_get(a->root, m->key), *vb = sv_json_member_get(b->root, m->key);
            if ((!same_peak && !strcmp(m->key, "mfu")) || (!same_rss && !strcmp(m->key, "max_rss_bytes")))
                ratio_line_na(m->key, va, vb);
            else
                ratio_line(m->key, va, vb);
        }
        return SV_OK;
    }
    if (!strcmp(ma, "op")) {
        static const char *const id[] = {"op",     "model",       "tokens",      "dim", "heads",
                                         "hidden", "micro_batch", "param_dtype", NULL};
        static const char *const id_new[] = {"num_classes", "params", NULL}; /* what sizes adamw, gelu, softmax_xent */
        SV_TRY(require_same(a, b, a->root, b->root, id, ""));
        SV_TRY(require_same_recorded(a, b, a->root, b->root, id_new, "", 0));
        const sv_json *ra, *rb;
        SV_TRY(get_rows(a, &ra));
        SV_TRY(get_rows(b, &rb));
        /* rows are matched by variant, whatever their order; a variant on one side only is named */
        size_t na = sv_json_count(ra), nb = sv_json_count(rb), common = 0;
        for (int side = 0; side < 2; side++) {
            const result *r = side ? b : a;
            const sv_json *rows = side ? rb : ra;
            for (size_t i = 0; i < sv_json_count(rows); i++) {
                char where[48];
                snprintf(where, sizeof where, "results[%zu].", i);
                SV_TRY(check_row(r, sv_json_index(rows, i), where, "variant"));
                const sv_json *v = sv_json_member_get(sv_json_index(rows, i), "variant");
                if (op_row(rows, v) != sv_json_index(rows, i))
                    return SV_FAIL(SV_ERR_FORMAT, "%s: %svariant %s repeats an earlier row's", r->path, where,
                                   sv_log_esc(v->u.str.s, e1, sizeof e1));
            }
        }
        for (size_t i = 0; i < na; i++) {
            const sv_json *x = sv_json_index(ra, i), *y = op_row(rb, sv_json_member_get(x, "variant"));
            if (!y) continue;
            char where[48];
            snprintf(where, sizeof where, "results[%zu].", i);
            SV_TRY(check_metrics(a, b, x, y, where, k_op));
            /* the work a row measured (from the op's sizes): results of every version record it */
            static const char *const work[] = {"flops", "bytes", NULL};
            char vwhere[SV_ESC_CAP + 16];
            snprintf(vwhere, sizeof vwhere,
                     "variant %s: ", sv_log_esc(sv_json_member_get(x, "variant")->u.str.s, e1, sizeof e1));
            SV_TRY(require_same(a, b, x, y, work, vwhere));
            common++;
        }
        if (!common)
            return SV_FAIL(SV_ERR_INVALID, "refusing to compare: no variant in common (%s: %zu rows, %s: %zu rows)",
                           a->path, na, b->path, nb);
        require_same_recorded(a, b, a->root, b->root, id_new, "", 1);
        provenance_notes(a, b);
        for (int side = 0; side < 2; side++) {
            const sv_json *rows = side ? rb : ra, *other = side ? ra : rb;
            for (size_t i = 0; i < sv_json_count(rows); i++) {
                const sv_json *v = sv_json_member_get(sv_json_index(rows, i), "variant");
                if (!op_row(other, v))
                    printf("note: variant %s is only in %s (not compared)\n", sv_log_esc(v->u.str.s, e1, sizeof e1),
                           sv_log_esc(side ? b->path : a->path, e2, sizeof e2));
            }
        }
        printf("op %s:                          %14s %14s\n", str_of(a->root, "op", e1, sizeof e1), "A", "B");
        for (size_t i = 0; i < na; i++) {
            const sv_json *x = sv_json_index(ra, i), *vx = sv_json_member_get(x, "variant"), *y = op_row(rb, vx);
            if (!y) continue;
            char name[SV_ESC_CAP + 16];
            sv_log_esc(vx->u.str.s, e1, sizeof e1);
            snprintf(name, sizeof name, "%s rate_best", e1);
            ratio_line(name, sv_json_member_get(x, "rate_best"), sv_json_member_get(y, "rate_best"));
            snprintf(name, sizeof name, "%s best_s", e1);
            ratio_line(name, sv_json_member_get(x, "best_s"), sv_json_member_get(y, "best_s"));
        }
        return SV_OK;
    }
    if (!strcmp(ma, "comm")) {
        static const char *const id[] = {"group", "group_size", NULL};
        SV_TRY(require_same(a, b, a->root, b->root, id, ""));
        const sv_json *ra, *rb;
        SV_TRY(get_rows(a, &ra));
        SV_TRY(get_rows(b, &rb));
        for (int side = 0; side < 2; side++) {
            const result *r = side ? b : a;
            const sv_json *rows = side ? rb : ra, *v;
            for (size_t i = 0; i < sv_json_count(rows); i++) {
                char where[48];
                snprintf(where, sizeof where, "results[%zu].", i);
                SV_TRY(check_row(r, sv_json_index(rows, i), where, "op"));
                static const metric size = {"size_bytes", 1, 0, 1, 1e15};
                const sv_json *row = sv_json_index(rows, i), *op = sv_json_member_get(row, "op");
                const sv_json *sz;
                SV_TRY(get_metric(r, row, where, &size, &sz));
                SV_TRY(get_metric(r, row, where, &k_comm[0], &v));
                /* one row per (collective, size), as bench writes them: a repeated one would be
                 * paired with each matching row of the other file, crosswise */
                for (size_t j = 0; j < i; j++) {
                    const sv_json *earlier = sv_json_index(rows, j);
                    if (same_value(sv_json_member_get(earlier, "op"), op) &&
                        same_value(sv_json_member_get(earlier, "size_bytes"), sz))
                        return SV_FAIL(SV_ERR_FORMAT,
                                       "%s: %sop %s with size_bytes %.0f repeats results[%zu]'s (one row per "
                                       "collective and size)",
                                       r->path, where, sv_log_esc(op->u.str.s, e1, sizeof e1), sz->u.num.d, j);
                }
            }
        }
        provenance_notes(a, b);
        printf("comm busbw (GB/s):              %14s %14s\n", "A", "B");
        int matched = 0;
        for (size_t i = 0; i < sv_json_count(ra); i++) {
            const sv_json *x = sv_json_index(ra, i);
            for (size_t j = 0; j < sv_json_count(rb); j++) {
                const sv_json *y = sv_json_index(rb, j);
                if (!same_value(sv_json_member_get(x, "op"), sv_json_member_get(y, "op")) ||
                    !same_value(sv_json_member_get(x, "size_bytes"), sv_json_member_get(y, "size_bytes")))
                    continue;
                const sv_json *op = sv_json_member_get(x, "op"), *sz = sv_json_member_get(x, "size_bytes");
                char name[SV_ESC_CAP + 32];
                snprintf(name, sizeof name, "%s %.0f B",
                         op && op->type == SV_JSON_STRING ? sv_log_esc(op->u.str.s, e1, sizeof e1) : "?",
                         sz && sz->type == SV_JSON_NUMBER ? sz->u.num.d : 0.0);
                ratio_line(name, sv_json_member_get(x, "busbw_gbps"), sv_json_member_get(y, "busbw_gbps"));
                matched++;
            }
        }
        if (!matched) return SV_FAIL(SV_ERR_INVALID, "refusing to compare: no (collective, size) row in common");
        return SV_OK;
    }
    return SV_FAIL(SV_ERR_INVALID, "%s: unknown bench mode '%s'", a->path, sv_log_esc(ma, e1, sizeof e1));
}

int sv_cmd_bench_compare(int argc, char **argv, const sv_proc *proc) {
    (void)proc;
    sv_flag flags[] = {SV_FLAG_END};
    sv_cmd_spec spec = {"bench-compare", "shardvit bench-compare A.json B.json",
                        "Print B / A for the figures of two `shardvit bench` results (train, --op or --comm JSON). "
                        "Refuses (exit 1) results that measure different things: another mode, model (name, "
                        "shape, architecture options, parameter count or FLOPs per image), batch size, "
                        "accumulation or precision (param_dtype); --op: another op, model size, micro-batch or "
                        "work per variant; --comm: another group. Provenance differences (commit, dirty tree, CPU, "
                        "libraries, world size, threads) are printed as notes, and so are MFUs against different "
                        "peaks (mfu ratio n/a).",
                        2};
    char *pos[2];
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, NULL, 2, "expects two result files: A.json B.json");
    if (rc >= 0) return rc;
    result a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    sv_status st = load(&a, pos[0]);
    if (st == SV_OK) st = load(&b, pos[1]);
    if (st == SV_OK) st = compare(&a, &b);
    sv_json_doc_free(&a.doc);
    sv_json_doc_free(&b.doc);
    if (st != SV_OK) return sv_app_fail("bench-compare", st);
    return 0;
}
