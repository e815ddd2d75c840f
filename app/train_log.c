#include "app/train_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/provenance.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "core/trace.h"

sv_status sv_train_log_open(sv_train_log *lg, int rank, const char *out, int append) {
    memset(lg, 0, sizeof *lg);
    lg->rank = rank;
    lg->eval_logged_step = -1;
    lg->tty = rank == 0 && isatty(STDERR_FILENO);
    lg->t_start = sv_now_s();
    if (rank != 0 || !out) return SV_OK;
    if ((size_t)snprintf(lg->metrics_path, sizeof lg->metrics_path, "%s/metrics.jsonl", out) >= sizeof lg->metrics_path)
        return SV_FAIL(SV_ERR_INVALID, "--out too long: %.200s", out);
    /* append: "a+", as sv_train_log_resume reads it */
    SV_TRY(sv_fileio_fopen_write(lg->metrics_path, append ? SV_FILEIO_APPEND : SV_FILEIO_TRUNC, &lg->metrics));
    if (sv_tb_open(&lg->tb, out, 0) == SV_OK)
        lg->tb_open = 1;
    else
        SV_WARN("TensorBoard event file not written: %s", sv_err_msg());
    return SV_OK;
}

/* Every metrics.jsonl record goes through here: a failed write is an error, not a short file. */
static sv_status metrics_flush(sv_train_log *lg) {
    if (fflush(lg->metrics) != 0 || ferror(lg->metrics)) {
        int err = errno;
        clearerr(lg->metrics);
        return SV_FAIL(SV_ERR_IO, "cannot write %s: %s", lg->metrics_path, strerror(err ? err : EIO));
    }
    return SV_OK;
}

/* The writer's one record as a metrics.jsonl line, flushed (metrics_flush); frees the writer. */
static sv_status metrics_put(sv_train_log *lg, sv_json_writer *w) {
    const char *text;
    size_t n;
    sv_status st = sv_json_writer_finish(w, &text, &n);
    if (st == SV_OK) {
        fwrite(text, 1, n, lg->metrics);
        fputc('\n', lg->metrics);
        st = metrics_flush(lg);
    }
    sv_json_writer_free(w);
    return st;
}

/* The "mfu_peak" value of the header (see sv_train_log_peak). */
static void peak_json(sv_json_writer *w, const sv_train_log_peak *p) {
    if (!p->kind) {
        sv_json_null(w);
        return;
    }
    sv_json_obj_begin(w);
    sv_json_key(w, "kind");
    sv_json_str(w, p->kind);
    if (!strcmp(p->kind, "isa")) {
        sv_json_key(w, "engine");
        sv_json_str(w, p->engine ? p->engine : "");
        sv_json_key(w, "per_core_flops");
        sv_json_f64_sig(w, p->per_core_flops, 6);
        sv_json_key(w, "cores_used");
        sv_json_f64_sig(w, p->cores_used, 6);
    }
    sv_json_key(w, "flops");
    sv_json_f64_sig(w, p->flops, 6);
    if (!strcmp(p->kind, "isa")) {
        sv_json_key(w, "calib_seconds");
        sv_json_f64_sig(w, p->calib_seconds, 6);
    }
    sv_json_obj_end(w);
}

sv_status sv_train_log_header(sv_train_log *lg, const char *prov_json, const sv_train_log_peak *peak) {
    if (!lg->metrics) return SV_OK;
    SV_TRY(metrics_flush(lg));
    struct stat sb;
    if (fstat(fileno(lg->metrics), &sb) != 0) return SV_FAIL(SV_ERR_IO, "%s: %s", lg->metrics_path, strerror(errno));
    if (sb.st_size > 0) return SV_OK;
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "record");
    sv_json_str(&w, "header");
    sv_json_key(&w, "format");
    sv_json_i64(&w, 1);
    sv_json_key(&w, "provenance");
    sv_json_raw(&w, prov_json);
    if (peak) {
        sv_json_key(&w, "mfu_peak");
        peak_json(&w, peak);
    }
    sv_json_obj_end(&w);
    return metrics_put(lg, &w);
}

/* Step of a metrics.jsonl line ({"step":N,...}), or -1; *end: the offset just past N. */
static long line_step(const char *line, size_t n, size_t *end) {
    static const char key[] = "{\"step\":";
    size_t k = sizeof key - 1;
    if (n <= k || memcmp(line, key, k)) return -1;
    long v = 0;
    size_t i = k;
    for (; i < n && line[i] >= '0' && line[i] <= '9' && v < 1000000000000L; i++) v = v * 10 + (line[i] - '0');
    *end = i;
    return i > k ? v : -1;
}

sv_status sv_train_log_resume(sv_train_log *lg, long step) {
    if (!lg->metrics) return SV_OK;
    SV_TRY(metrics_flush(lg));
    /* Keep the complete lines before the first record of a later step (lines are in step order;
     * an unterminated last line is a write the previous run did not finish). */
    int fd = fileno(lg->metrics);
    off_t keep = 0, pos = 0;
    char buf[65536], line[64];
    size_t line_len = 0;
    int done = 0;
    while (!done) {
        ssize_t n = pread(fd, buf, sizeof buf, pos);
        if (n < 0) return SV_FAIL(SV_ERR_IO, "cannot read %s: %s", lg->metrics_path, strerror(errno));
        if (n == 0) break;
        for (ssize_t i = 0; i < n && !done; i++) {
            if (line_len < sizeof line) line[line_len] = buf[i];
            line_len++;
            if (buf[i] != '\n') continue;
            const size_t ln = line_len < sizeof line ? line_len : sizeof line;
            size_t at = 0; /* past the step number: an evaluation record goes on with ,"eval */
            const long s = line_step(line, ln, &at);
            if (s > step)
                done = 1;
            else
                keep = pos + i + 1;
            if (s == step && !done && ln - at >= 6 && !memcmp(line + at, ",\"eval", 6)) lg->eval_logged_step = step;
            line_len = 0;
        }
        pos += n;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) return SV_FAIL(SV_ERR_IO, "%s: %s", lg->metrics_path, strerror(errno));
    if (keep < sb.st_size) {
        if (ftruncate(fd, keep) != 0)
            return SV_FAIL(SV_ERR_IO, "cannot truncate %s: %s", lg->metrics_path, strerror(errno));
        SV_INFO("resume: %s cut back to step %ld (%lld bytes of records the interrupted run logged after its "
                "checkpoint dropped)",
                lg->metrics_path, step, (long long)(sb.st_size - keep));
    }
    if (lg->tb_open && sv_tb_restart(&lg->tb, step + 1, 0) != SV_OK) {
        SV_WARN("TensorBoard: %s; no further events are written", sv_err_msg());
        sv_tb_close(&lg->tb);
        lg->tb_open = 0;
    }
    return SV_OK;
}

static void scalar(sv_train_log *lg, const char *tag, long step, double v) {
    if (!lg->tb_open || !isfinite(v)) return;
    if (sv_tb_scalar(&lg->tb, tag, step, (float)v, 0) != SV_OK) {
        SV_WARN("TensorBoard: %s; no further events are written", sv_err_msg());
        sv_tb_close(&lg->tb);
        lg->tb_open = 0;
    }
}

/* Start a step or evaluation record: {"step":N (the first key: sv_train_log_resume reads it). */
static void record_begin(sv_json_writer *w, long step) {
    sv_json_writer_init(w, 0);
    sv_json_obj_begin(w);
    sv_json_key(w, "step");
    sv_json_i64(w, step);
}

/* End a record with "time": wall-clock seconds (millisecond resolution), and write it. */
static sv_status record_end(sv_train_log *lg, sv_json_writer *w) {
    sv_json_key(w, "time");
    sv_json_f64_fixed(w, sv_wall_time(), 3);
    sv_json_obj_end(w);
    return metrics_put(lg, w);
}

/* "key": v with 9 significant digits (null when not finite). */
static void num9(sv_json_writer *w, const char *key, double v) {
    sv_json_key(w, key);
    sv_json_f64_sig(w, v, 9);
}

sv_status sv_train_log_record(sv_train_log *lg, const sv_train_log_step *s) {
    scalar(lg, "train/loss", s->step, s->loss);
    scalar(lg, "train/loss_avg", s->step, s->loss_avg);
    scalar(lg, "train/lr", s->step, s->lr);
    scalar(lg, "train/grad_norm", s->step, s->grad_norm);
    scalar(lg, "train/skipped_steps", s->step, (double)s->skipped_steps);
    scalar(lg, "perf/img_per_s", s->step, s->img_per_s);
    scalar(lg, "perf/tflops", s->step, s->tflops);
    scalar(lg, "perf/mfu", s->step, s->mfu);
    scalar(lg, "perf/mem_bytes", s->step, (double)s->mem_bytes);
    scalar(lg, "perf/data_wait_frac", s->step, s->data_wait_frac);
    if (!lg->metrics) return SV_OK;
    /* a skipped step has a NaN/Inf loss and norm: JSON has no NaN, so they are null */
    sv_json_writer w;
    record_begin(&w, s->step);
    sv_json_key(&w, "epoch");
    sv_json_u64(&w, s->epoch);
    num9(&w, "loss", s->loss);
    num9(&w, "loss_avg", s->loss_avg);
    sv_json_key(&w, "loss_avg_steps");
    sv_json_u64(&w, (uint64_t)s->loss_avg_steps);
    num9(&w, "lr", s->lr);
    num9(&w, "grad_norm", s->grad_norm);
    sv_json_key(&w, "img_per_s");
    sv_json_f64_sig(&w, s->img_per_s, 6);
    sv_json_key(&w, "tflops");
    sv_json_f64_sig(&w, s->tflops, 6);
    num9(&w, "mfu", s->mfu);
    sv_json_key(&w, "mem_bytes");
    sv_json_u64(&w, s->mem_bytes);
    sv_json_key(&w, "data_wait_frac");
    sv_json_f64_fixed(&w, s->data_wait_frac, 4);
    sv_json_key(&w, "skipped_steps");
    sv_json_u64(&w, s->skipped_steps);
    return record_end(lg, &w);
}

static void fmt_duration(double s, char *buf, size_t cap) {
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, cap, "%lds", t);
}

void sv_train_log_start(sv_train_log *lg, long start_step) {
    lg->t_start = sv_now_s();
    lg->paused_s = 0;
    lg->start_step = start_step;
}

void sv_train_log_progress(sv_train_log *lg, long step, long total, uint64_t spe, double loss, int batch) {
    if (!lg->tty) return;
    double now = sv_now_s();
    long done = step + 1, here = done - lg->start_step; /* steps this process trained */
    if (now - lg->last_draw < 0.1 && done < total) return;
    lg->last_draw = now;
    double el = now - lg->t_start - lg->paused_s;
    double ips = el > 0 && here > 0 ? (double)here * batch / el : 0,
           eta = here > 0 ? el / (double)here * (double)(total - done) : 0;
    char eta_s[32], el_s[32];
    fmt_duration(eta, eta_s, sizeof eta_s);
    fmt_duration(el, el_s, sizeof el_s);
    fprintf(stderr, "\r\033[Kstep %ld/%ld (%.0f%%) | epoch %.2f | loss %.4f | %.1f img/s | %s, ETA %s", done, total,
            100.0 * (double)done / (double)total, (double)done / (double)(spe ? spe : 1), loss, ips, el_s, eta_s);
    lg->line_open = done < total;
    if (!lg->line_open) fputc('\n', stderr);
    fflush(stderr);
}

sv_status sv_train_log_eval(sv_train_log *lg, sv_evaluator *ev, long step, const char *data_name) {
    return sv_train_log_eval_as(lg, ev, step, data_name, 0);
}

sv_status sv_train_log_eval_as(sv_train_log *lg, sv_evaluator *ev, long step, const char *data_name, int ema) {
    if (lg->line_open) { /* log lines start on a clean line; the progress line is redrawn later */
        fputs("\r\033[K", stderr);
        lg->line_open = 0;
    }
    SV_TRY(sv_eval_run(ev));
    lg->paused_s += ev->seconds;
    const sv_metrics *m = &ev->m;
    double t1 = sv_metrics_top1(m), t5 = sv_metrics_top5(m), loss = sv_metrics_mean_loss(m);
    const char *k = ema ? "eval_ema" : "eval";       /* metrics.jsonl keys and TensorBoard tags */
    const int logged = step == lg->eval_logged_step; /* the interrupted run recorded this evaluation */
    SV_INFO("%s at step %ld: top1 %.4f top5 %.4f loss %.4f on %lld samples of %s (%.1f s)%s",
            ema ? "eval (weight EMA)" : "eval", step, t1, t5, loss, (long long)sv_metrics_samples(m), data_name,
            ev->seconds, logged ? "; recorded before the resume, not again" : "");
    if (logged) return SV_OK;
    char tag[32];
    if (lg->metrics) {
        sv_json_writer w;
        record_begin(&w, step);
        snprintf(tag, sizeof tag, "%s_top1", k);
        num9(&w, tag, t1);
        snprintf(tag, sizeof tag, "%s_top5", k);
        num9(&w, tag, t5);
        snprintf(tag, sizeof tag, "%s_loss", k);
        num9(&w, tag, loss);
        snprintf(tag, sizeof tag, "%s_samples", k);
        sv_json_key(&w, tag);
        sv_json_i64(&w, sv_metrics_samples(m));
        SV_TRY(record_end(lg, &w));
    }
    snprintf(tag, sizeof tag, "%s/top1", k);
    scalar(lg, tag, step, t1);
    snprintf(tag, sizeof tag, "%s/top5", k);
    scalar(lg, tag, step, t5);
    snprintf(tag, sizeof tag, "%s/loss", k);
    scalar(lg, tag, step, loss);
    return SV_OK;
}

sv_status sv_train_log_sync(sv_train_log *lg) {
    if (lg->metrics) {
        SV_TRY(metrics_flush(lg));
        if (fsync(fileno(lg->metrics)) != 0 && errno != EINVAL)
            return SV_FAIL(SV_ERR_IO, "fsync %s: %s", lg->metrics_path, strerror(errno));
    }
    if (lg->tb_open && sv_tb_sync(&lg->tb) != SV_OK) SV_WARN("TensorBoard: %s", sv_err_msg());
    return SV_OK;
}

sv_status sv_train_log_close(sv_train_log *lg) {
    sv_status st = SV_OK;
    if (lg->line_open) fputc('\n', stderr);
    lg->line_open = 0;
    if (lg->tb_open) {
        if (sv_tb_close(&lg->tb) != SV_OK) SV_WARN("TensorBoard: %s", sv_err_msg());
        lg->tb_open = 0;
    }
    if (lg->metrics) {
        st = metrics_flush(lg);
        if (fclose(lg->metrics) != 0 && st == SV_OK)
            st = SV_FAIL(SV_ERR_IO, "cannot write %s: %s", lg->metrics_path, strerror(errno));
        lg->metrics = NULL;
    }
    return st;
}
