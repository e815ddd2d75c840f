#include "app/flags.h"
#include "core/log.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/kv.h"

static sv_flag *find(sv_flag *flags, const char *name, size_t len) {
    for (sv_flag *f = flags; f->name; f++)
        if (strlen(f->name) == len && strncmp(f->name, name, len) == 0) return f;
    return NULL;
}

int sv_flag_seen(const sv_flag *flags, const char *name) {
    for (const sv_flag *f = flags; f->name; f++)
        if (strcmp(f->name, name) == 0) return f->seen;
    return 0;
}

static const char *g_config_path; /* the --config file of the last sv_flags_parse */

const char *sv_flags_config_path(void) { return g_config_path; }

static void range_text(const sv_flag *f, char *buf, size_t cap) {
    switch (f->type) {
    case SV_FLAG_INT:
    case SV_FLAG_I64: snprintf(buf, cap, "an integer in [%.0f, %.0f]", f->min, f->max); break;
    case SV_FLAG_DOUBLE: snprintf(buf, cap, "a number in [%g, %g]", f->min, f->max); break;
    case SV_FLAG_BOOL: snprintf(buf, cap, "true or false"); break;
    case SV_FLAG_STR: snprintf(buf, cap, "a string"); break;
    }
}

/* Store `val` (NUL-terminated, stable storage) into flag f. */
static int set_value(const char *cmd, sv_flag *f, const char *val, int source) {
    char range[96];
    range_text(f, range, sizeof range);
    char *end = NULL;
    errno = 0;
    switch (f->type) {
    case SV_FLAG_INT:
    case SV_FLAG_I64: {
        long long v = strtoll(val, &end, 10);
        if (errno || end == val || *end || (double)v < f->min || (double)v > f->max) goto bad;
        if (f->type == SV_FLAG_INT)
            *(int *)f->ptr = (int)v;
        else
            *(long long *)f->ptr = v;
        break;
    }
    case SV_FLAG_DOUBLE: {
        double v = strtod(val, &end);
        if (errno || end == val || *end || !isfinite(v) || v < f->min || v > f->max) goto bad;
        *(double *)f->ptr = v;
        break;
    }
    case SV_FLAG_STR:
        if (!*val) goto bad;
        *(const char **)f->ptr = val;
        break;
    case SV_FLAG_BOOL:
        if (!strcmp(val, "true") || !strcmp(val, "1") || !strcmp(val, "yes"))
            *(int *)f->ptr = 1;
        else if (!strcmp(val, "false") || !strcmp(val, "0") || !strcmp(val, "no"))
            *(int *)f->ptr = 0;
        else
            goto bad;
        break;
    }
    f->seen = source;
    return 0;
bad:
    return sv_cmd_usage_error(cmd, "--%s: invalid value '%s' (expected %s)", f->name, val, range);
}

#define CONFIG_MAX_BYTES ((size_t)1 << 20)

/* One line of a config file (NUL-terminated, modified in place), in the "key = value" subset of
 * core/kv.h (the one config.toml is written in, so a run's config.toml reads back as written). */
static int config_line(const char *cmd, sv_flag *flags, int *line_of, const char *path, int lineno, char *s) {
    char *k, *v;
    const char *err = NULL;
    int r = sv_kv_parse_line(s, &k, &v, &err);
    if (r < 0) return sv_cmd_usage_error(cmd, "--config %s:%d: %s", path, lineno, err);
    if (!r) return 0; /* blank line or comment */
    char *ke = k + strlen(k);
    for (char *p = k; p < ke; p++)
        if (*p == '_') *p = '-';
    sv_flag *f = find(flags, k, (size_t)(ke - k));
    if (!f) return sv_cmd_usage_error(cmd, "--config %s:%d: unknown key '%.*s'", path, lineno, (int)(ke - k), k);
    /* TOML forbids a key twice; `batch_size` and `batch-size` are one key here */
    if (line_of[f - flags])
        return sv_cmd_usage_error(cmd, "--config %s:%d: key '%s' repeats the one on line %d (a key may be given once)",
                                  path, lineno, f->name, line_of[f - flags]);
    line_of[f - flags] = lineno;
    char *copy = strdup(v); /* lives for the process: flags point into it */
    if (!copy || set_value(cmd, f, copy, SV_FLAG_FROM_CONFIG)) return 2;
    return 0;
}

/* Config file: key = value lines. Values are copied into one buffer that lives for the process
 * (flags keep pointers to them). The file is read through the guarded reader of core/fileio: a
 * FIFO, device or directory is refused without blocking, and so is a file over 1 MiB. */
static int read_config(const char *cmd, sv_flag *flags, const char *path) {
    char *text;
    size_t len;
    if (sv_fileio_read_small(path, CONFIG_MAX_BYTES, &text, &len) != SV_OK)
        return sv_cmd_usage_error(cmd, "--config: %s", sv_err_msg());
    size_t nflags = 0;
    while (flags[nflags].name) nflags++;
    int *line_of = calloc(nflags + 1, sizeof *line_of); /* the line that set each flag, 0: none */
    if (!line_of) {
        free(text);
        return sv_cmd_usage_error(cmd, "--config %s: out of memory", path);
    }
    int lineno = 0, rc = 0;
    /* a UTF-8 byte order mark (Windows editors write one) is no part of the first key */
    char *first = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? text + 3 : text;
    for (char *line = first, *next; line < text + len && !rc; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (nl) *nl = 0;
        ++lineno;
        if (memchr(line, 0, (size_t)(next - line) - (nl != NULL)))
            rc = sv_cmd_usage_error(cmd, "--config %s:%d: a NUL byte in the line (a binary file?)", path, lineno);
        else
            rc = config_line(cmd, flags, line_of, path, lineno, line);
    }
    free(line_of);
    free(text);
    return rc;
}

int sv_flags_parse(const sv_cmd_spec *spec, sv_flag *flags, int argc, char **argv, char **pos, int *npos) {
    *npos = 0;
    g_config_path = NULL;
    /* --help anywhere wins; --config is applied before the other flags */
    /* a bare "--" ends the flags: every argument after it is positional (a file named "--x.jpg") */
    int end = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            end = i;
            break;
        }
    for (int i = 1; i < end; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            sv_flags_help(spec, flags, stdout);
            return 1;
        }
    }
    for (int i = 1; i < end; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--config=", 9) || !strcmp(a, "--config")) {
            const char *path = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[i + 1] : NULL);
            if (!path) return sv_cmd_usage_error(spec->name, "--config: missing file name");
            if (read_config(spec->name, flags, path)) return 2;
            g_config_path = path;
        }
    }
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (i == end) continue; /* the "--" itself */
        if (i > end || strncmp(a, "--", 2) != 0) {
            if (*npos >= spec->max_positional) {
                if (spec->max_positional > 1) /* a list that is too long, not a stray word */
                    return sv_cmd_usage_error(spec->name, "too many arguments: at most %d ('%s' is one more)",
                                              spec->max_positional, a);
                return sv_cmd_usage_error(spec->name, "unexpected argument '%s' (see shardvit %s --help)", a,
                                          spec->name);
            }
            pos[(*npos)++] = a;
            continue;
        }
        char *name = a + 2;
        char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 6 && !strncmp(name, "config", 6)) {
            if (!eq) i++;
            continue;
        }
        sv_flag *f = find(flags, name, len);
        if (!f)
            return sv_cmd_usage_error(spec->name, "unknown flag --%.*s (see shardvit %s --help)", (int)len, name,
                                      spec->name);
        const char *val;
        if (eq)
            val = eq + 1;
        else if (f->type == SV_FLAG_BOOL)
            val = "true";
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            char range[96];
            range_text(f, range, sizeof range);
            return sv_cmd_usage_error(spec->name, "--%s: missing value (expected %s)", f->name, range);
        }
        if (set_value(spec->name, f, val, SV_FLAG_FROM_ARGV)) return 2;
    }
    return 0;
}

void sv_flags_help(const sv_cmd_spec *spec, const sv_flag *flags, FILE *out) {
    fprintf(out, "usage: %s\n\n%s\n\nflags:\n", spec->usage, spec->summary);
    for (const sv_flag *f = flags; f->name; f++) {
        char def[64] = "";
        switch (f->type) {
        case SV_FLAG_INT: snprintf(def, sizeof def, "%d", *(int *)f->ptr); break;
        case SV_FLAG_I64: snprintf(def, sizeof def, "%lld", *(long long *)f->ptr); break;
        case SV_FLAG_DOUBLE: snprintf(def, sizeof def, "%g", *(double *)f->ptr); break;
        case SV_FLAG_STR: snprintf(def, sizeof def, "%s", *(const char **)f->ptr ? *(const char **)f->ptr : ""); break;
        case SV_FLAG_BOOL: snprintf(def, sizeof def, "%s", *(int *)f->ptr ? "true" : "false"); break;
        }
        fprintf(out, "  --%-18s %s%s%s%s\n", f->name, f->help, def[0] ? " [" : "", def, def[0] ? "]" : "");
    }
    fprintf(out, "  --%-18s %s\n", "config FILE", "read flags from a key = value file first");
}

void sv_flags_dump(const sv_flag *flags, FILE *out) {
    for (const sv_flag *f = flags; f->name; f++) {
        switch (f->type) {
        case SV_FLAG_INT: fprintf(out, "%s = %d\n", f->name, *(int *)f->ptr); break;
        case SV_FLAG_I64: fprintf(out, "%s = %lld\n", f->name, *(long long *)f->ptr); break;
        case SV_FLAG_DOUBLE: fprintf(out, "%s = %.17g\n", f->name, *(double *)f->ptr); break;
        case SV_FLAG_STR:
            if (*(const char **)f->ptr) sv_kv_write_str(out, f->name, *(const char **)f->ptr);
            break;
        case SV_FLAG_BOOL: fprintf(out, "%s = %s\n", f->name, *(int *)f->ptr ? "true" : "false"); break;
        }
    }
}

void sv_flags_dump_json(const sv_flag *flags, sv_json_writer *w) {
    sv_json_obj_begin(w);
    for (const sv_flag *f = flags; f->name; f++) {
        sv_json_key(w, f->name);
        switch (f->type) {
        case SV_FLAG_INT: sv_json_i64(w, *(int *)f->ptr); break;
        case SV_FLAG_I64: sv_json_i64(w, *(long long *)f->ptr); break;
        case SV_FLAG_DOUBLE: sv_json_f64(w, *(double *)f->ptr); break;
        case SV_FLAG_STR:
            if (*(const char **)f->ptr)
                sv_json_str(w, *(const char **)f->ptr);
            else
                sv_json_null(w);
            break;
        case SV_FLAG_BOOL: sv_json_bool(w, *(int *)f->ptr); break;
        }
    }
    sv_json_obj_end(w);
}

long long sv_parse_bytes(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0)) return -1;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'K': mul = 1024.0; break;
    case 'M': mul = 1024.0 * 1024; break;
    case 'G': mul = 1024.0 * 1024 * 1024; break;
    case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
    default: return -1;
    }
    if (*end) {
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'B' || *end == 'b') end++;
        if (*end) return -1;
    }
    double bytes = v * mul;
    if (!(bytes < 9.2e18)) return -1; /* beyond long long: reject rather than convert (UB) */
    return (long long)bytes;
}

int sv_cmd_parse(const sv_cmd_spec *spec, sv_flag *flags, int argc, char **argv, char **pos, int *npos, int npos_want,
                 const char *wrong_count) {
    int n = 0;
    int rc = sv_flags_parse(spec, flags, argc, argv, pos, &n);
    if (npos) *npos = n;
    if (rc) return rc == 1 ? 0 : 2;
    if (npos_want >= 0 && n != npos_want) return sv_cmd_usage_error(spec->name, "%s", wrong_count);
    return -1;
}

int sv_cmd_usage_error(const char *cmd, const char *fmt, ...) {
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    fprintf(stderr, "shardvit %s: %s\n", cmd, msg ? sv_log_term_safe(msg) : fmt);
    free(msg);
    return 2;
}
