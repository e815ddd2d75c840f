/* ops.json writer of tests/gpu/gpu_ops_vs_cpu: see ops_report.h. The closing part is written by
 * write_tail, which the signal handler also calls, so it uses only async-signal-safe calls
 * (lseek, write, ftruncate, strlen) and formats its numbers itself. */
#include "ops_report.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t rep_fd = -1;
static volatile sig_atomic_t rep_checks = 0, rep_failures = 0;
static off_t rep_body_end = 0; /* file offset where the closing part starts */
static int rep_items = 0;      /* results written to the file */
static const int rep_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGALRM};
#define REP_NSIG ((int)(sizeof rep_signals / sizeof rep_signals[0]))

/* write() all of s (async-signal-safe). */
static int put(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Decimal digits of v >= 0 into buf (async-signal-safe); returns buf. */
static const char *dec(char *buf, size_t cap, long v) {
    char *p = buf + cap - 1;
    *p = 0;
    if (v < 0) v = 0;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && p > buf);
    return p;
}

/* The closing part at rep_body_end; the file ends right after it. reason == NULL: finished. */
static void write_tail(int fd, const char *reason) {
    char nb[2][24];
    long failures = (long)rep_failures + (reason ? 1 : 0); /* an abort counts as one more failure */
    const char *parts[] = {"\n],\"checks\":",
                           dec(nb[0], sizeof nb[0], (long)rep_checks),
                           ",\"failures\":",
                           dec(nb[1], sizeof nb[1], failures),
                           reason ? ",\"aborted\":true,\"abort_reason\":\"" : ",\"aborted\":false",
                           reason ? reason : "",
                           reason ? "\"}\n" : "}\n"};
    if (lseek(fd, rep_body_end, SEEK_SET) < 0) return;
    off_t end = rep_body_end;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t n = strlen(parts[i]);
        if (put(fd, parts[i], n) != 0) return;
        end += (off_t)n;
    }
    if (ftruncate(fd, end) != 0) return;
}

static const char *signal_reason(int sig) {
    switch (sig) {
    case SIGTERM: return "signal SIGTERM";
    case SIGINT: return "signal SIGINT";
    case SIGHUP: return "signal SIGHUP";
    default: return "signal SIGALRM";
    }
}

static void on_signal(int sig) {
    int fd = rep_fd;
    if (fd >= 0) {
        rep_fd = -1;
        write_tail(fd, signal_reason(sig));
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns: the default action (termination) */
}

static void on_exit_early(void) {
    int fd = rep_fd;
    if (fd < 0) return;
    rep_fd = -1;
    write_tail(fd, "exited before the end (a CHECK failed)");
    close(fd);
}

/* Block (how = SIG_BLOCK) or unblock the handled signals around a file update. */
static void mask_signals(int how) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < REP_NSIG; i++) sigaddset(&set, rep_signals[i]);
    sigprocmask(how, &set, NULL);
}

int opsrep_open(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    static const char head[] = "{\"results\":[\n";
    if (put(fd, head, sizeof head - 1) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    rep_body_end = (off_t)(sizeof head - 1);
    rep_items = 0;
    rep_checks = 0, rep_failures = 0;
    write_tail(fd, "the run did not finish");
    rep_fd = fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < REP_NSIG; i++) sigaddset(&sa.sa_mask, rep_signals[i]);
    for (int i = 0; i < REP_NSIG; i++) sigaction(rep_signals[i], &sa, NULL);
    static int registered = 0;
    if (!registered) atexit(on_exit_early);
    registered = 1;
    return 0;
}

void opsrep_result(const char *object, int ok) {
    mask_signals(SIG_BLOCK);
    rep_checks = rep_checks + 1;
    if (!ok) rep_failures = rep_failures + 1;
    int fd = rep_fd;
    if (fd >= 0 && lseek(fd, rep_body_end, SEEK_SET) >= 0) {
        const char *sep = rep_items ? ",\n" : "";
        size_t ns = strlen(sep), no = strlen(object);
        if (put(fd, sep, ns) == 0 && put(fd, object, no) == 0) {
            rep_body_end += (off_t)(ns + no);
            rep_items++;
        }
        write_tail(fd, "the run did not finish");
    }
    mask_signals(SIG_UNBLOCK);
}

void opsrep_close(void) {
    mask_signals(SIG_BLOCK);
    int fd = rep_fd;
    if (fd >= 0) {
        rep_fd = -1;
        write_tail(fd, NULL);
        close(fd);
    }
    mask_signals(SIG_UNBLOCK);
}

int opsrep_checks(void) { return (int)rep_checks; }
int opsrep_failures(void) { return (int)rep_failures; }
