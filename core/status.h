/* shardvit core: status codes, error messages, TRY/ASSERT macros.
 *
 * Contract: every fallible function returns sv_status. On failure the callee records a
 * human-readable message with SV_FAIL (thread-local buffer, so worker threads do not race);
 * callers propagate with SV_TRY, which appends "file:line" to a short backtrace. Only app/
 * prints the message and exits. SV_ASSERT is always on and is for programmer errors only. */
#ifndef SV_CORE_STATUS_H
#define SV_CORE_STATUS_H

#include <stddef.h>

typedef enum sv_status {
    SV_OK = 0,
    SV_ERR_INVALID = 1,     /* bad argument / configuration value */
    SV_ERR_IO = 2,          /* open/read/write/fsync/rename failed */
    SV_ERR_FORMAT = 3,      /* malformed input file (JSON, tar, safetensors, JPEG, ...) */
    SV_ERR_CORRUPT = 4,     /* checksum mismatch, truncated data */
    SV_ERR_OOM = 5,         /* allocation or arena budget exceeded */
    SV_ERR_COMM = 6,        /* collective failed */
    SV_ERR_TIMEOUT = 7,     /* collective or wait exceeded its timeout */
    SV_ERR_BACKEND = 8,     /* compute library error (cuBLAS, cuDNN, CUDA, BLAS) */
    SV_ERR_UNSUPPORTED = 9, /* feature not available in this build / on this device */
    SV_ERR_NOT_FOUND = 10,  /* file, tensor, class, checkpoint not found */
    SV_ERR_NONFINITE = 11,  /* NaN/Inf where a finite value is required */
} sv_status;

/* Short stable name, e.g. "io error". */
const char *sv_status_str(sv_status s);

/* Record an error message (printf-style) for the calling thread and return `code`.
 * Use through SV_FAIL so the location is recorded. */
sv_status sv_fail_at(sv_status code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Append a propagation frame ("at file:line") to the calling thread's error trace. */
void sv_err_frame(const char *file, int line);

/* Bytes of the calling thread's error message buffer, its NUL included: a longer message is cut. */
#define SV_ERR_MSG_CAP 1024

/* The calling thread's last error message (never NULL; "" if none; < SV_ERR_MSG_CAP bytes). */
const char *sv_err_msg(void);
/* The propagation trace "a.c:10 <- b.c:20" (never NULL). A frame recorded several times in a row
 * (one call site on every level of a recursion) appears once with its count, "b.c:20 (x34)"; a
 * trace that outgrows its buffer ends in " <- ...". */
const char *sv_err_trace(void);
/* Put "prefix: " before the calling thread's error message unless the message already names
 * prefix (readers attach the file they were reading in one place; the trace is kept). */
void sv_err_prefix(const char *prefix);
/* Forget the current error (e.g. after a skipped corrupt image was counted). */
void sv_err_clear(void);

#define SV_FAIL(code, ...) sv_fail_at((code), __FILE__, __LINE__, __VA_ARGS__)

#define SV_TRY(expr) \
    do { \
        sv_status sv_try_s_ = (expr); \
        if (sv_try_s_ != SV_OK) { \
            sv_err_frame(__FILE__, __LINE__); \
            return sv_try_s_; \
        } \
    } while (0)

/* Like SV_TRY but jumps to a cleanup label, storing the status in `var`. */
#define SV_TRY_GOTO(var, expr, label) \
    do { \
        (var) = (expr); \
        if ((var) != SV_OK) { \
            sv_err_frame(__FILE__, __LINE__); \
            goto label; \
        } \
    } while (0)

void sv_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#define SV_ASSERT(cond) ((cond) ? (void)0 : sv_assert_fail(#cond, __FILE__, __LINE__))

#endif
