#include "app/bench_sweep.h"

#include <string.h>

#include "app/csv_field.h"
#include "core/fileio.h"
#include "core/json.h"

static const char *const k_keys[SV_SWEEP_KEYS][2] = {
    {"models", "model"}, {"batch", "batch-size"}, {"param-dtype", "precision"}, {"strategy", "strategy"}};

sv_status sv_sweep_parse(sv_sweep *sw, const char *const *items, int n_items) {
    memset(sw, 0, sizeof *sw);
    size_t used = 0;
    for (int i = 0; i < n_items; i++) {
        const char *it = items[i], *eq = strchr(it, '=');
        int key = -1;
        for (int k = 0; eq && k < SV_SWEEP_KEYS; k++)
            for (int a = 0; a < 2; a++)
                if (strlen(k_keys[k][a]) == (size_t)(eq - it) && !strncmp(it, k_keys[k][a], (size_t)(eq - it))) key = k;
        if (key < 0)
            return SV_FAIL(SV_ERR_INVALID,
                           "--sweep: '%s' is not KEY=V1,V2,... with KEY models | batch | param-dtype | strategy", it);
        if (sw->n[key]) return SV_FAIL(SV_ERR_INVALID, "--sweep: key %s given twice", k_keys[key][0]);
        for (const char *v = eq + 1;;) {
            size_t len = strcspn(v, ",");
            if (len == 0) return SV_FAIL(SV_ERR_INVALID, "--sweep: '%s' has an empty value", it);
            if (sw->n[key] == SV_SWEEP_MAX_VALUES || used + len + 1 > sizeof sw->buf)
                return SV_FAIL(SV_ERR_INVALID, "--sweep: '%s' lists too many values", it);
            memcpy(sw->buf + used, v, len);
            sw->buf[used + len] = 0;
            sw->v[key][sw->n[key]++] = sw->buf + used;
            used += len + 1;
            if (!v[len]) break;
            v += len + 1;
        }
    }
    if (sv_sweep_count(sw) < 1) return SV_FAIL(SV_ERR_INVALID, "--sweep: nothing to sweep (give KEY=V1,V2,...)");
    return SV_OK;
}

int sv_sweep_count(const sv_sweep *sw) {
    int n = 1, any = 0;
    for (int k = 0; k < SV_SWEEP_KEYS; k++)
        if (sw->n[k]) n *= sw->n[k], any = 1;
    return any ? n : 0;
}

void sv_sweep_config(const sv_sweep *sw, int i, const char *out[SV_SWEEP_KEYS]) {
    for (int k = SV_SWEEP_KEYS - 1; k >= 0; k--) { /* the last key varies fastest */
        out[k] = NULL;
        if (!sw->n[k]) continue;
        out[k] = sw->v[k][i % sw->n[k]];
        i /= sw->n[k];
    }
}

/* ---- rows ---- */
typedef enum { F_NUM, F_STR, F_MS, F_MILLIONS, F_GMACS } fmt;
typedef struct column {
    const char *name; /* CSV header */
    const char *path; /* key in the result, "provenance.x" / "provenance.cpu.model" for nested */
    fmt f;
} column;

/* timm benchmark.py's train columns first (same names, same units: samples/s, ms, millions of
 * parameters, GMACs of one forward pass per sample), then shardvit's own. */
static const column k_cols[] = {
    {"model", "model", F_STR},
    {"train_samples_per_sec", "img_per_s", F_NUM},
    {"train_step_time", "step_time_s", F_MS},
    {"train_batch_size", "batch_size", F_NUM},
    {"train_img_size", "img", F_NUM},
    {"param_count", "params", F_MILLIONS},
    {"infer_gmacs", "flops_per_image", F_GMACS},
    {"param_dtype", "param_dtype", F_STR},
    {"strategy", "strategy", F_STR},
    {"accum", "accum", F_NUM},
    {"world", "world", F_NUM},
    {"threads_per_rank", "threads_per_rank", F_NUM},
    {"device", "device", F_STR},
    {"step_time_min_ms", "step_time_min_s", F_MS},
    {"img_per_cpu_s", "img_per_cpu_s", F_NUM},
    {"tflops", "tflops", F_NUM},
    {"mfu", "mfu", F_NUM},
    {"peak_kind", "peak_kind", F_STR},
    {"peak_mem_bytes", "peak_mem_bytes", F_NUM},
    {"max_rss_bytes", "max_rss_bytes", F_NUM},
    {"version", "provenance.version", F_STR},
    {"commit", "provenance.commit", F_STR},
    {"dirty", "provenance.dirty", F_STR},
    {"host", "provenance.host", F_STR},
    {"cpu_model", "provenance.cpu.model", F_STR},
    {"start_utc", "provenance.start_utc", F_STR},
};

/* The CSV header line, line break included (every --sweep-csv file starts with it). */
static const char *csv_header(void) {
    static char line[2048];
    if (!line[0]) {
        size_t n = 0;
        for (size_t c = 0; c < sizeof k_cols / sizeof k_cols[0]; c++)
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%s", c ? "," : "", k_cols[c].name);
        snprintf(line + n, sizeof line - n, "\n");
    }
    return line;
}

int sv_sweep_csv_is_earlier(const char *path, const void *unused) {
    (void)unused;
    const char *h = csv_header();
    return sv_fileio_starts_with(path, h, strlen(h));
}

sv_status sv_sweep_write_row(const char *result_json, FILE *csv, FILE *jsonl, int header) {
    if (jsonl) fprintf(jsonl, "%s\n", result_json);
    if (csv) {
        sv_json_doc doc;
        SV_TRY(sv_json_parse(&doc, result_json, strlen(result_json), "bench result", NULL));
        size_t nc = sizeof k_cols / sizeof k_cols[0];
        if (header) fputs(csv_header(), csv);
        for (size_t c = 0; c < nc; c++) {
            const sv_json *v = sv_json_at_path(&doc.root, k_cols[c].path);
            char b[64] = "";
            if (c) fputc(',', csv);
            if (v && v->type == SV_JSON_STRING) {
                sv_csv_field(csv, v->u.str.s);
                continue;
            }
            if (v && v->type == SV_JSON_BOOL) snprintf(b, sizeof b, "%s", v->u.boolean ? "true" : "false");
            if (v && v->type == SV_JSON_NUMBER) {
                double x = v->u.num.d;
                switch (k_cols[c].f) {
                case F_MS: snprintf(b, sizeof b, "%.6g", 1e3 * x); break;
                case F_MILLIONS: snprintf(b, sizeof b, "%.6g", x / 1e6); break;
                case F_GMACS: snprintf(b, sizeof b, "%.6g", x / 3.0 / 2.0 / 1e9); break;
                default: snprintf(b, sizeof b, "%.9g", x); break;
                }
            }
            fputs(b, csv);
        }
        fputc('\n', csv);
        sv_json_doc_free(&doc);
    }
    if ((csv && ferror(csv)) || (jsonl && ferror(jsonl)))
        return SV_FAIL(SV_ERR_IO, "--sweep: cannot write a result row");
    return SV_OK;
}
