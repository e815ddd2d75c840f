#include "core/trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"

void sv_trace_init_sums(sv_trace *t, int rank) {
    memset(t, 0, sizeof *t);
    t->t0 = sv_now_s();
    t->rank = rank;
    t->sums_only = 1;
}

sv_status sv_trace_init(sv_trace *t, size_t capacity, int rank) {
    memset(t, 0, sizeof *t);
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
    t->sums_only = 0;
}

double sv_trace_now(const sv_trace *t) { return (sv_now_s() - t->t0) * 1e6; }

void sv_trace_add(sv_trace *t, const char *name, const char *cat, int tid, int arg, double begin_us, double end_us) {
    if (!sv_trace_on(t)) return;
    SV_ASSERT(tid >= 0 && tid < SV_TRACE_TRACKS);
    double dur = end_us > begin_us ? end_us - begin_us : 0.0;
    t->lane_us[tid] += dur; /* kept or dropped below: the sums stay exact */
    if (t->sums_only) return;
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
    e->dur_us = dur;
}

double sv_trace_comm_lane_s(const sv_trace *t) {
    double us = t->lane_us[SV_TRACE_ALL_GATHER] + t->lane_us[SV_TRACE_ALL_REDUCE];
    for (int b = 0; b < 3; b++) us += t->lane_us[SV_TRACE_REDUCE_SCATTER + b];
    return us * 1e-6;
}

/* Track names and display order (top to bottom): compute, then the collectives, then the rest. */
static const char *const k_track_name[SV_TRACE_TRACKS] = {
    [SV_TRACE_COMPUTE] = "compute",
    [SV_TRACE_ALL_GATHER] = "all_gather",
    [SV_TRACE_DATA] = "data",
    [SV_TRACE_OPTIM] = "optim",
    [SV_TRACE_REDUCE_SCATTER + 0] = "reduce_scatter buf 0",
    [SV_TRACE_REDUCE_SCATTER + 1] = "reduce_scatter buf 1",
    [SV_TRACE_REDUCE_SCATTER + 2] = "reduce_scatter root",
    [SV_TRACE_ALL_REDUCE] = "all_reduce",
};
static const int k_track_order[SV_TRACE_TRACKS] = {
    [SV_TRACE_COMPUTE] = 0,
    [SV_TRACE_ALL_GATHER] = 1,
    [SV_TRACE_REDUCE_SCATTER + 0] = 2,
    [SV_TRACE_REDUCE_SCATTER + 1] = 3,
    [SV_TRACE_REDUCE_SCATTER + 2] = 4,
    [SV_TRACE_ALL_REDUCE] = 5,
    [SV_TRACE_DATA] = 6,
    [SV_TRACE_OPTIM] = 7,
};

/* fclose with the error of any earlier write (ENOSPC, EIO, EFBIG) reported, not lost. */
static sv_status close_checked(FILE *f, const char *what, const char *path) {
    int bad = ferror(f) != 0, err = bad ? errno : 0;
    if (fclose(f) != 0 && !bad) bad = 1, err = errno;
    return bad ? SV_FAIL(SV_ERR_IO, "cannot write %s %s: %s", what, path, strerror(err ? err : EIO)) : SV_OK;
}

/* How every part starts (sv_trace_write_part; sv_trace_is_part recognises it). */
static const char k_part_head[] = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";

int sv_trace_is_part(const char *path, const void *unused) {
    (void)unused;
    return sv_fileio_starts_with(path, k_part_head, sizeof k_part_head - 1);
}

void sv_trace_part_done(const char *path) { sv_fileio_tmp_untrack(path); }

void sv_trace_part_path(char *buf, size_t cap, const char *path, int rank) {
    snprintf(buf, cap, "%s.rank%d", path, rank);
}

sv_status sv_trace_write_part(const sv_trace *t, const char *path) {
    FILE *f;
    if (sv_trace_is_part(path, NULL)) unlink(path); /* an earlier run's, killed before its merge */
    sv_fileio_tmp_track(path);                      /* before the create: a signal as it returns finds it tracked */
    sv_status cs = sv_fileio_fopen_write(path, SV_FILEIO_NEW, &f); /* a part is always a new file */
    if (cs != SV_OK) {
        sv_fileio_tmp_untrack(path);
        return cs;
    }
    fprintf(f, "%s%d,\"args\":{\"name\":\"rank %d\"}}", k_part_head, t->rank, t->rank);
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", t->rank,
            t->rank);
    /* name only the tracks that hold events (an empty named track would show as a blank row) */
    unsigned used = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].tid >= 0 && t->ev[i].tid < SV_TRACE_TRACKS) used |= 1u << t->ev[i].tid;
    for (int k = 0; k < SV_TRACE_TRACKS; k++) {
        if (!(used & (1u << k))) continue;
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                t->rank, k, k_track_name[k]);
        fprintf(f,
                ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
                "\"args\":{\"sort_index\":%d}}",
                t->rank, k, k_track_order[k]);
    }
    for (size_t i = 0; i < t->n; i++) {
        const sv_trace_event *e = &t->ev[i];
        /* begin and end rounded to 0.1 us each, the duration their difference: events that touch
         * (back-to-back ops, exact in simulated timelines) still touch, never overlap */
        double b = round(e->ts_us * 10.0) / 10.0, z = round((e->ts_us + e->dur_us) * 10.0) / 10.0;
        fprintf(f, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.1f,\"dur\":%.1f",
                e->name, e->cat, t->rank, e->tid, b, z - b);
        if (e->arg >= 0) fprintf(f, ",\"args\":{\"unit\":%d}", e->arg);
        fputc('}', f);
    }
    sv_status st = close_checked(f, "trace part", path);
    if (st != SV_OK) unlink(path); /* created above as a new file: a cut part would block the next run */
    return st;
}

/* How every merged trace starts (sv_trace_merge; sv_trace_is_merged recognises it). */
static const char k_merged_head[] = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";

int sv_trace_is_merged(const char *path, const void *unused) {
    (void)unused;
    return sv_fileio_starts_with(path, k_merged_head, sizeof k_merged_head - 1);
}

sv_status sv_trace_merge(const char *path, int world) {
    static const char k_tail[] = "\n]}\n";
    char buf[65536], part[4096];
    sv_fileio_out out;
    SV_TRY(sv_fileio_out_open_tmp(&out, path));
    sv_status st = sv_fileio_out_write(&out, k_merged_head, sizeof k_merged_head - 1);
    for (int r = 0; r < world; r++) {
        sv_trace_part_path(part, sizeof part, path, r);
        struct stat sb;
        if (st != SV_OK) { /* the merge has failed: the remaining parts of this run go, uncopied */
            if (lstat(part, &sb) == 0 && S_ISREG(sb.st_mode)) remove(part);
            continue;
        }
        int fd;
        uint64_t size;
        /* the guarded open: a FIFO or device planted under the part's name is refused, never read */
        sv_status os = sv_fileio_open_read(part, &fd, &size);
        if (os != SV_OK) { /* named in the error and left as it is (not a file this run wrote) */
            st = os;
            continue;
        }
        if (r) st = sv_fileio_out_write(&out, ",\n", 2);
        for (uint64_t off = 0; st == SV_OK && off < size; off += sizeof buf) {
            size_t n = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf;
            st = sv_fileio_pread_exact(fd, buf, n, off, part);
            if (st == SV_OK) st = sv_fileio_out_write(&out, buf, n);
        }
        close(fd);
        remove(part); /* copied, or of no use once the merge failed: a part left would refuse the next --trace */
    }
    if (st == SV_OK) st = sv_fileio_out_write(&out, k_tail, sizeof k_tail - 1);
    if (st == SV_OK) return sv_fileio_out_commit(&out, path); /* removes the temporary on failure */
    sv_fileio_out_abort(&out);
    sv_err_frame(__FILE__, __LINE__);
    return st;
}
