/* "key = value" lines (core/kv.h). */
#include "core/kv.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

static char *skip_blanks(char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    return p;
}

/* Only blanks and a comment after a quoted value. */
static int rest_ok(char *p) {
    p = skip_blanks(p);
    return !*p || *p == '#';
}

static int hex_val(char c) {
    return c >= '0' && c <= '9' ? c - '0'
        : c >= 'a' && c <= 'f'  ? c - 'a' + 10
        : c >= 'A' && c <= 'F'  ? c - 'A' + 10
                                : -1;
}

/* Code point cp as UTF-8 at d; returns the bytes written. */
static size_t put_utf8(char *d, uint32_t cp) {
    if (cp < 0x80) return d[0] = (char)cp, 1;
    if (cp < 0x800) return d[0] = (char)(0xC0 | cp >> 6), d[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return d[0] = (char)(0xE0 | cp >> 12), d[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
               d[2] = (char)(0x80 | (cp & 0x3F)), 3;
    d[0] = (char)(0xF0 | cp >> 18), d[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3F)), d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A basic string starting after its opening quote at p, decoded in place. Returns a pointer just
 * after the closing quote, or NULL with *err. The decoded value ends at the returned - 1 (set to
 * NUL); decoding never grows the text (every escape is at least as long as what it stands for). */
static char *basic_string(char *p, const char **err) {
    char *d = p;
    for (;;) {
        char c = *p++;
        if (!c) return *err = "the quoted value has no closing quote", NULL;
        if (c == '"') {
            *d = 0;
            return p;
        }
        if (c != '\\') {
            *d++ = c;
            continue;
        }
        char e = *p++;
        switch (e) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case 'n': *d++ = '\n'; break;
        case 'r': *d++ = '\r'; break;
        case 't': *d++ = '\t'; break;
        case 'b': *d++ = '\b'; break;
        case 'f': *d++ = '\f'; break;
        case 'u':
        case 'U': {
            int n = e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int i = 0; i < n; i++) {
                int h = hex_val(p[i]);
                if (h < 0) return *err = "a \\u escape needs 4 hex digits (\\U: 8)", NULL;
                cp = cp << 4 | (uint32_t)h;
            }
            if (!cp || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
                return *err = "a \\u escape names NUL, a surrogate or a value above U+10FFFF", NULL;
            p += n;
            d += put_utf8(d, cp);
            break;
        }
        default: return *err = "unknown escape in a quoted value (a backslash is written \\\\)", NULL;
        }
    }
}

int sv_kv_parse_line(char *s, char **key, char **value, const char **err) {
    s = skip_blanks(s);
    if (!*s || *s == '#') return 0;
    if (*s == '[') return *err = "table headers ('[...]') are not supported: write every key at the top level", -1;
    char *eq = strchr(s, '='), *hash = strchr(s, '#');
    if (!eq || (hash && hash < eq)) return *err = "expected 'key = value'", -1;
    char *ke = eq;
    while (ke > s && isspace((unsigned char)ke[-1])) ke--;
    if (ke == s) return *err = "expected 'key = value' (the key is empty)", -1;
    *ke = 0;
    char *v = skip_blanks(eq + 1);
    if (*v == '"') {
        char *after = basic_string(v + 1, err);
        if (!after) return -1;
        if (!rest_ok(after)) return *err = "only a comment may follow the closing quote", -1;
        v++;
    } else if (*v == '\'') {
        char *close = strchr(v + 1, '\'');
        if (!close) return *err = "the quoted value has no closing quote", -1;
        if (!rest_ok(close + 1)) return *err = "only a comment may follow the closing quote", -1;
        *close = 0;
        v++;
    } else {
        if ((hash = strchr(v, '#'))) *hash = 0;
        size_t n = strlen(v);
        while (n && isspace((unsigned char)v[n - 1])) v[--n] = 0;
    }
    *key = s;
    *value = v;
    return 1;
}

void sv_kv_write_str(FILE *out, const char *key, const char *value) {
    fprintf(out, "%s = \"", key);
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20 || *p == 0x7F)
                fprintf(out, "\\u%04X", *p);
            else
                fputc(*p, out);
        }
    }
    fputs("\"\n", out);
}

/* Keys compare with '_' and '-' as one character (`batch_size` is `batch-size`, as --config reads
 * its keys: app/flags.c). */
static int key_eq(const char *a, const char *b) {
    for (;; a++, b++) {
        char x = *a == '_' ? '-' : *a, y = *b == '_' ? '-' : *b;
        if (x != y) return 0;
        if (!x) return 1;
    }
}

sv_status sv_kv_file_get(const char *path, const char *key, char *out, size_t cap, int *found) {
    *found = 0;
    char *text;
    size_t len;
    SV_TRY(sv_fileio_read_small(path, (size_t)1 << 20, &text, &len));
    sv_status st = SV_OK;
    int lineno = 0, found_at = 0;
    char *first = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? text + 3 : text; /* a UTF-8 BOM */
    for (char *line = first, *next; line < text + len && st == SV_OK; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (nl) *nl = 0;
        ++lineno;
        char *k, *v;
        const char *err = NULL;
        int r = sv_kv_parse_line(line, &k, &v, &err);
        if (r < 0) {
            st = SV_FAIL(SV_ERR_FORMAT, "%s:%d: %s", path, lineno, err);
        } else if (r > 0 && key_eq(k, key)) {
            if (found_at)
                st = SV_FAIL(SV_ERR_FORMAT, "%s:%d: key '%s' repeats the one on line %d (a key may be given once)",
                             path, lineno, key, found_at);
            else if (strlen(v) >= cap)
                st = SV_FAIL(SV_ERR_INVALID, "%s:%d: the value of %s is longer than %zu bytes", path, lineno, key,
                             cap - 1);
            else
                memcpy(out, v, strlen(v) + 1), *found = 1, found_at = lineno;
        }
    }
    free(text);
    return st;
}
