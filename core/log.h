/* shardvit core: logging.
 *
 * Lines go to stderr as "[shardvit r<rank>] LEVEL message". By default only rank 0 prints
 * info lines; warnings and errors print on every rank, except the warnings every rank raises
 * alike (SV_WARN_ALIKE), which rank 0 prints for all. The configuration is process-wide and
 * set once at start-up by app/ (sv_log_setup) before any thread starts; it is read-only after. */
#ifndef SV_CORE_LOG_H
#define SV_CORE_LOG_H

#include <stddef.h>

typedef enum { SV_LOG_DEBUG = 0, SV_LOG_INFO = 1, SV_LOG_WARN = 2, SV_LOG_ERROR = 3 } sv_log_level;

/* rank: this process's rank (0 when single-process); all_ranks_info: print info on every rank. */
void sv_log_setup(int rank, sv_log_level min_level, int all_ranks_info);
int sv_log_rank(void);
void sv_log(sv_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* sv_log on rank 0 only (unless all_ranks_info): for messages every rank produces alike. */
void sv_log_alike(sv_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Text that came from a file (tensor names in a safetensors header, class and label names,
 * strings in index.json / config.json) made safe for one message line on a terminal: C0
 * control characters, DEL, C1 controls (U+0080..U+009F), line/paragraph separators and
 * bidirectional-override code points become escapes (\n \r \t \xNN \u{NNNN}), every byte
 * that is not part of valid UTF-8 becomes \xNN, and a backslash becomes \\; other UTF-8 is kept
 * as it is (non-ASCII class names stay readable). Writes at most cap bytes (NUL-terminated) to
 * buf and returns buf; output that does not fit ends in "...". A NULL s gives "(null)".
 * Use it for every file-provided name printed in a log line or an error message. */
#define SV_ESC_CAP 256
const char *sv_log_esc(const char *s, char *buf, size_t cap);
/* Replace, in place, every ASCII control character (bytes 0x00-0x1F and 0x7F) of s by '?', so a
 * message that quotes user input (a flag, a config key) cannot drive the terminal: the last step
 * before the command-line layer prints an error line. Returns s. */
char *sv_log_term_safe(char *s);

#define SV_DEBUG(...) sv_log(SV_LOG_DEBUG, __VA_ARGS__)
#define SV_INFO(...) sv_log(SV_LOG_INFO, __VA_ARGS__)
#define SV_WARN(...) sv_log(SV_LOG_WARN, __VA_ARGS__)
/* A warning every rank raises alike (the same input read by each, e.g. a data set's scan):
 * printed once, by rank 0 (every rank with all_ranks_info). */
#define SV_WARN_ALIKE(...) sv_log_alike(SV_LOG_WARN, __VA_ARGS__)
#define SV_ERROR(...) sv_log(SV_LOG_ERROR, __VA_ARGS__)

#endif
