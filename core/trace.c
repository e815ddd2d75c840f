#include "core/trace.h"

#include <stdio.h>
#include <stdlib.h>

sv_status sv_trace_init(sv_trace *t, size_t capacity, int rank) {
    t->ev = NULL;
    t->cap = 0;
    t->n = t->dropped = 0;
    t->t0 = sv_now_s();
    t->rank = rank;
    if (!capacity) return SV_OK;
    t->ev = calloc(capacity, sizeof *t->ev);
    if (!t->ev) return SV_FAIL(SV_ERR_OOM, "trace buffer of %zu events", capacity);
    t->cap = capacity;
    return SV_OK;
}

void sv_trace_free(sv_trace *t) {
    free(t->ev);
    t->ev = NULL;
    t->cap = 0;
}

double sv_trace_now(const sv_trace *t) { return (sv_now_s() - t->t0) * 1e6; }

void sv_trace_add(sv_trace *t, const char *name, const char *cat, int tid, int arg, double begin_us,
                  double end_us) {
    if (!sv_trace_on(t)) return;
    if (t->n == t->cap) {
        t->dropped++;
        return;
    }
    sv_trace_event *e = &t->ev[t->n++];
    e->name = name;
    e->cat = cat;
    e->tid = tid;
    e->arg = arg;
    e->ts_us = begin_us;
    e->dur_us = end_us > begin_us ? end_us - begin_us : 0.0;
}

sv_status sv_trace_write_part(const sv_trace *t, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return SV_FAIL(SV_ERR_IO, "cannot write trace part %s", path);
    static const char *lanes[] = {"compute", "comm", "data", "optim"};
    for (int lane = 0; lane < 4; lane++)
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}},\n",
                t->rank, lane, lanes[lane]);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}}", t->rank,
            t->rank);
    for (size_t i = 0; i < t->n; i++) {
        const sv_trace_event *e = &t->ev[i];
        fprintf(f, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.1f,\"dur\":%.1f",
                e->name, e->cat, t->rank, e->tid, e->ts_us, e->dur_us);
        if (e->arg >= 0) fprintf(f, ",\"args\":{\"unit\":%d}", e->arg);
        fputc('}', f);
    }
    if (fclose(f) != 0) return SV_FAIL(SV_ERR_IO, "cannot write trace part %s", path);
    return SV_OK;
}

sv_status sv_trace_merge(const char *path, int world) {
    FILE *out = fopen(path, "w");
    if (!out) return SV_FAIL(SV_ERR_IO, "cannot write trace %s", path);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", out);
    char part[4096];
    char buf[65536];
    for (int r = 0; r < world; r++) {
        snprintf(part, sizeof part, "%s.rank%d", path, r);
        FILE *in = fopen(part, "r");
        if (!in) {
            fclose(out);
            return SV_FAIL(SV_ERR_IO, "trace part %s missing", part);
        }
        if (r) fputs(",\n", out);
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
        fclose(in);
        remove(part);
    }
    fputs("\n]}\n", out);
    if (fclose(out) != 0) return SV_FAIL(SV_ERR_IO, "cannot write trace %s", path);
    return SV_OK;
}
