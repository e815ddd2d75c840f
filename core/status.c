#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-thread error state: like errno, the one deliberate piece of thread-local state. */
static _Thread_local char tl_msg[SV_ERR_MSG_CAP];
static _Thread_local char tl_trace[512];
/* The trace's last frame: where its text starts in tl_trace and how many times in a row it was
 * recorded (a recursive reader's error passes one call site once per level), and whether a frame
 * was dropped for want of room (nothing more is recorded after that). */
static _Thread_local size_t tl_last_at;
static _Thread_local unsigned tl_last_times;
static _Thread_local int tl_full;

const char *sv_status_str(sv_status s) {
    switch (s) {
    case SV_OK: return "ok";
    case SV_ERR_INVALID: return "invalid argument";
    case SV_ERR_IO: return "io error";
    case SV_ERR_FORMAT: return "format error";
    case SV_ERR_CORRUPT: return "corrupt data";
    case SV_ERR_OOM: return "out of memory";
    case SV_ERR_COMM: return "communication error";
    case SV_ERR_TIMEOUT: return "timeout";
    case SV_ERR_BACKEND: return "backend error";
    case SV_ERR_UNSUPPORTED: return "unsupported";
    case SV_ERR_NOT_FOUND: return "not found";
    case SV_ERR_NONFINITE: return "non-finite value";
    }
    return "unknown error";
}

sv_status sv_fail_at(sv_status code, const char *file, int line, const char *fmt, ...) {
    /* Formatted into a local buffer first: callers may pass sv_err_msg() (the previous message)
     * as an argument, which vsnprintf must not read while it overwrites it. */
    char buf[sizeof tl_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(tl_msg, buf, sizeof buf);
    const char *base = strrchr(file, '/');
    snprintf(tl_trace, sizeof tl_trace, "%s:%d", base ? base + 1 : file, line);
    tl_last_at = 0, tl_last_times = 1, tl_full = 0;
    return code;
}

void sv_err_frame(const char *file, int line) {
    if (tl_full) return;
    const char *base = strrchr(file, '/');
    char frame[64];
    int fl = snprintf(frame, sizeof frame, "%s:%d", base ? base + 1 : file, line);
    if (fl < 0 || (size_t)fl >= sizeof frame) fl = (int)sizeof frame - 1;
    const char *last = tl_trace + tl_last_at;
    if (tl_last_times && !strncmp(last, frame, (size_t)fl) && (last[fl] == 0 || last[fl] == ' ')) {
        /* the same call site again: counted, "json.c:377 (x34)", not repeated */
        tl_last_times++;
        snprintf(tl_trace + tl_last_at + fl, sizeof tl_trace - tl_last_at - fl, " (x%u)", tl_last_times);
        return;
    }
    size_t len = strlen(tl_trace);
    /* room for the frame, its largest repeat count " (x4294967295)" and then the end mark */
    if (len + 4 + (size_t)fl + 14 + 8 > sizeof tl_trace) {
        memcpy(tl_trace + len, " <- ...", 8); /* fits: every earlier frame left room for it */
        tl_full = 1;
        return;
    }
    snprintf(tl_trace + len, sizeof tl_trace - len, " <- %s", frame);
    tl_last_at = len + 4, tl_last_times = 1;
}

const char *sv_err_msg(void) { return tl_msg; }
const char *sv_err_trace(void) { return tl_trace; }

void sv_err_prefix(const char *prefix) {
    if (!prefix || !*prefix || strstr(tl_msg, prefix)) return;
    size_t pl = strlen(prefix), ml = strlen(tl_msg);
    if (pl + 2 >= sizeof tl_msg) return;
    if (pl + 2 + ml >= sizeof tl_msg) ml = sizeof tl_msg - pl - 3;
    memmove(tl_msg + pl + 2, tl_msg, ml);
    memcpy(tl_msg, prefix, pl);
    tl_msg[pl] = ':', tl_msg[pl + 1] = ' ', tl_msg[pl + 2 + ml] = 0;
}

void sv_err_clear(void) {
    tl_msg[0] = 0;
    tl_trace[0] = 0;
    tl_last_at = 0, tl_last_times = 0, tl_full = 0;
}

void sv_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "shardvit: internal assertion failed: %s (%s:%d)\n", expr, file, line);
    fflush(stderr);
    abort();
}
