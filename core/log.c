#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Written once by sv_log_setup before threads start; read-only afterwards. */
static struct {
    int rank;
    sv_log_level min_level;
    int all_ranks_info;
} g_log = {0, SV_LOG_INFO, 0};

void sv_log_setup(int rank, sv_log_level min_level, int all_ranks_info) {
    g_log.rank = rank;
    g_log.min_level = min_level;
    g_log.all_ranks_info = all_ranks_info;
}

int sv_log_rank(void) { return g_log.rank; }

static void log_line(sv_log_level lvl, const char *fmt, va_list ap) {
    static const char *names[] = {"debug", "info", "WARN", "ERROR"};
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    /* one fprintf per line so lines from ranks/threads do not interleave mid-line */
    fprintf(stderr, "[shardvit r%d] %s %s\n", g_log.rank, names[lvl], buf);
}

void sv_log(sv_log_level lvl, const char *fmt, ...) {
    if (lvl < g_log.min_level) return;
    if (lvl <= SV_LOG_INFO && g_log.rank != 0 && !g_log.all_ranks_info) return;
    va_list ap;
    va_start(ap, fmt);
    log_line(lvl, fmt, ap);
    va_end(ap);
}

void sv_log_alike(sv_log_level lvl, const char *fmt, ...) {
    if (lvl < g_log.min_level || (g_log.rank != 0 && !g_log.all_ranks_info)) return;
    va_list ap;
    va_start(ap, fmt);
    log_line(lvl, fmt, ap);
    va_end(ap);
}

/* One UTF-8 sequence at p: its length (1..4) and code point, or 0 when the bytes are not valid
 * UTF-8 (overlong forms, surrogates, > U+10FFFF, a cut sequence; the NUL terminator stops a cut
 * sequence because it is not a continuation byte). */
static size_t utf8_seq(const unsigned char *p, unsigned long *cp) {
    static const unsigned long min[5] = {0, 0, 0x80, 0x800, 0x10000};
    unsigned c = p[0];
    size_t n;
    unsigned long v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0)
        n = 2, v = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        n = 3, v = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        n = 4, v = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

/* Code points a terminal acts on or that reorder / break the line. */
static int unsafe_cp(unsigned long c) {
    return c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0) || c == 0x061C || c == 0x200E || c == 0x200F ||
        c == 0x2028 || c == 0x2029 || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

char *sv_log_term_safe(char *s) {
    for (char *c = s; c && *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7F) *c = '?';
    return s;
}

const char *sv_log_esc(const char *s, char *buf, size_t cap) {
    if (!buf || cap == 0) return "";
    if (!s) s = "(null)";
    if (cap < 8) { /* too small for any escape plus "...": keep only safe ASCII */
        size_t o = 0;
        for (; *s && o + 1 < cap; s++)
            if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7F && *s != '\\') buf[o++] = *s;
        buf[o] = 0;
        return buf;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, safe = 0; /* safe: the last piece boundary that leaves room for "..." + NUL */
    while (*p) {
        char piece[16];
        size_t len;
        unsigned long cp;
        size_t n = utf8_seq(p, &cp);
        if (n == 0) {
            len = (size_t)snprintf(piece, sizeof piece, "\\x%02X", *p);
            n = 1;
        } else if (cp == '\\') {
            len = (size_t)snprintf(piece, sizeof piece, "\\\\");
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            len = (size_t)snprintf(piece, sizeof piece, "\\%c", cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't');
        } else if (unsafe_cp(cp)) {
            len = cp < 0x80 ? (size_t)snprintf(piece, sizeof piece, "\\x%02lX", cp)
                            : (size_t)snprintf(piece, sizeof piece, "\\u{%04lX}", cp);
        } else {
            memcpy(piece, p, n);
            len = n;
        }
        if (o + len > cap - 1) { /* does not fit: cut at the last boundary with room for "..." */
            memcpy(buf + safe, "...", 4);
            return buf;
        }
        memcpy(buf + o, piece, len);
        o += len;
        p += n;
        if (o <= cap - 4) safe = o;
    }
    buf[o] = 0;
    return buf;
}
