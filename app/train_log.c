#include "app/train_log.h"

#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/trace.h"

void sv_train_log_open(sv_train_log *lg, int rank, const char *out, FILE *metrics) {
    memset(lg, 0, sizeof *lg);
    lg->rank = rank;
    lg->metrics = metrics;
    lg->tty = rank == 0 && isatty(STDERR_FILENO);
    lg->t_start = sv_now_s();
    if (rank == 0 && out) {
        if (sv_tb_open(&lg->tb, out, 0) == SV_OK) lg->tb_open = 1;
        else SV_WARN("TensorBoard event file not written: %s", sv_err_msg());
    }
}

static void scalar(sv_train_log *lg, const char *tag, long step, double v) {
    if (!lg->tb_open || !isfinite(v)) return;
    if (sv_tb_scalar(&lg->tb, tag, step, (float)v, 0) != SV_OK) {
        SV_WARN("TensorBoard: %s; no further events are written", sv_err_msg());
        sv_tb_close(&lg->tb);
        lg->tb_open = 0;
    }
}

void sv_train_log_scalars(sv_train_log *lg, long step, double loss, double lr, double grad_norm, double img_per_s,
                          double tflops, double mfu, double mem_bytes, double data_wait_frac, double skipped) {
    scalar(lg, "train/loss", step, loss);
    scalar(lg, "train/lr", step, lr);
    scalar(lg, "train/grad_norm", step, grad_norm);
    scalar(lg, "train/skipped_steps", step, skipped);
    scalar(lg, "perf/img_per_s", step, img_per_s);
    scalar(lg, "perf/tflops", step, tflops);
    scalar(lg, "perf/mfu", step, mfu);
    scalar(lg, "perf/mem_bytes", step, mem_bytes);
    scalar(lg, "perf/data_wait_frac", step, data_wait_frac);
}

static void fmt_duration(double s, char *buf, size_t cap) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, cap, "%lds", t);
}

void sv_train_log_progress(sv_train_log *lg, long step, long total, uint64_t spe, double loss, int batch) {
    if (!lg->tty) return;
    double now = sv_now_s();
    long done = step + 1;
    if (now - lg->last_draw < 0.1 && done < total) return;
    lg->last_draw = now;
    double el = now - lg->t_start - lg->paused_s;
    double ips = el > 0 ? (double)done * batch / el : 0, eta = el / (double)done * (double)(total - done);
    char eta_s[32], el_s[32];
    fmt_duration(eta, eta_s, sizeof eta_s);
    fmt_duration(el, el_s, sizeof el_s);
    fprintf(stderr, "\r\033[Kstep %ld/%ld (%.0f%%) | epoch %.2f | loss %.4f | %.1f img/s | %s, ETA %s", done, total,
            100.0 * (double)done / (double)total, (double)done / (double)(spe ? spe : 1), loss, ips, el_s, eta_s);
    lg->line_open = done < total;
    if (!lg->line_open) fputc('\n', stderr);
    fflush(stderr);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

sv_status sv_train_log_eval(sv_train_log *lg, sv_evaluator *ev, long step, const char *data_name) {
    if (lg->line_open) { /* log lines start on a clean line; the progress line is redrawn later */
        fputs("\r\033[K", stderr);
        lg->line_open = 0;
    }
    SV_TRY(sv_eval_run(ev));
    lg->paused_s += ev->seconds;
    const sv_metrics *m = &ev->m;
    double t1 = sv_metrics_top1(m), t5 = sv_metrics_top5(m), loss = sv_metrics_mean_loss(m);
    SV_INFO("eval at step %ld: top1 %.4f top5 %.4f loss %.4f on %lld samples of %s (%.1f s)", step, t1, t5, loss,
            (long long)sv_metrics_samples(m), data_name, ev->seconds);
    if (lg->metrics) {
        fprintf(lg->metrics, "{\"step\":%ld,\"eval_top1\":", step);
        json_num(lg->metrics, t1);
        fputs(",\"eval_top5\":", lg->metrics);
        json_num(lg->metrics, t5);
        fputs(",\"eval_loss\":", lg->metrics);
        json_num(lg->metrics, loss);
        fprintf(lg->metrics, ",\"eval_samples\":%lld}\n", (long long)sv_metrics_samples(m));
        fflush(lg->metrics);
    }
    scalar(lg, "eval/top1", step, t1);
    scalar(lg, "eval/top5", step, t5);
    scalar(lg, "eval/loss", step, loss);
    return SV_OK;
}

void sv_train_log_close(sv_train_log *lg) {
    if (lg->line_open) fputc('\n', stderr);
    lg->line_open = 0;
    if (lg->tb_open) {
        if (sv_tb_close(&lg->tb) != SV_OK) SV_WARN("TensorBoard: %s", sv_err_msg());
        lg->tb_open = 0;
    }
}
