/* shardvit core: the JSON text writer half of core/json.h (the parser is in json.c). */
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grow a byte buffer to hold at least `need` bytes (doubling); 0 on overflow or OOM. */
static int wgrow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 4;
    while (nc < need) {
        if (nc > (size_t)-1 / 2) return 0;
        nc *= 2;
    }
    char *nb = realloc(*buf, nc);
    if (!nb) return 0;
    *buf = nb;
    *cap = nc;
    return 1;
}

void sv_json_writer_init(sv_json_writer *w, int indent) {
    memset(w, 0, sizeof *w);
    w->indent = indent > 0 ? indent : 0;
}

void sv_json_writer_free(sv_json_writer *w) {
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

static void wfail(sv_json_writer *w, sv_status code, const char *msg) {
    if (w->err) return;
    w->err = code;
    snprintf(w->errmsg, sizeof w->errmsg, "%s", msg);
}

static void wput(sv_json_writer *w, const char *s, size_t n) {
    if (w->err) return;
    if (!wgrow(&w->buf, &w->cap, w->len + n + 1)) {
        wfail(w, SV_ERR_OOM, "out of memory");
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void wnewline(sv_json_writer *w) {
    if (!w->indent) return;
    wput(w, "\n", 1);
    for (int k = 0; k < w->depth * w->indent; k++) wput(w, " ", 1);
}

/* Separator and checks before any value (or key, when `is_key`). */
static void wpre(sv_json_writer *w, int is_key) {
    if (w->err) return;
    if (w->depth == 0) {
        if (is_key)
            wfail(w, SV_ERR_INVALID, "key written outside an object");
        else if (w->done)
            wfail(w, SV_ERR_INVALID, "second top-level value written");
        return;
    }
    int in_obj = w->is_obj[w->depth - 1];
    if (!is_key && in_obj && !w->expect_value) {
        wfail(w, SV_ERR_INVALID, "value written in an object without a key");
        return;
    }
    if (is_key && (!in_obj || w->expect_value)) {
        wfail(w, SV_ERR_INVALID, in_obj ? "two keys in a row" : "key written inside an array");
        return;
    }
    if (w->expect_value) { /* after "key": */
        w->expect_value = 0;
        return;
    }
    if (w->has_items[w->depth - 1]) wput(w, ",", 1);
    w->has_items[w->depth - 1] = 1;
    wnewline(w);
}

static void wpost(sv_json_writer *w) {
    if (w->depth == 0) w->done = 1;
}

static void wopen(sv_json_writer *w, int is_obj) {
    wpre(w, 0);
    if (w->err) return;
    if (w->depth >= SV_JSON_WRITER_MAX_DEPTH) {
        wfail(w, SV_ERR_INVALID, "nesting too deep");
        return;
    }
    wput(w, is_obj ? "{" : "[", 1);
    w->is_obj[w->depth] = (uint8_t)is_obj;
    w->has_items[w->depth] = 0;
    w->depth++;
}

static void wclose(sv_json_writer *w, int is_obj) {
    if (w->err) return;
    if (w->depth == 0 || w->is_obj[w->depth - 1] != is_obj || w->expect_value) {
        wfail(w, SV_ERR_INVALID, is_obj ? "unbalanced object end" : "unbalanced array end");
        return;
    }
    int had = w->has_items[w->depth - 1];
    w->depth--;
    if (had) wnewline(w);
    wput(w, is_obj ? "}" : "]", 1);
    wpost(w);
}

void sv_json_obj_begin(sv_json_writer *w) { wopen(w, 1); }
void sv_json_obj_end(sv_json_writer *w) { wclose(w, 1); }
void sv_json_arr_begin(sv_json_writer *w) { wopen(w, 0); }
void sv_json_arr_end(sv_json_writer *w) { wclose(w, 0); }

static void wescaped(sv_json_writer *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    wput(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[7];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20 || c == 0x7f) {
            memcpy(ubuf, "\\u00", 4);
            ubuf[4] = hex[c >> 4];
            ubuf[5] = hex[c & 15];
            ubuf[6] = 0;
            esc = ubuf;
        } else if (c >= 0x80) { /* valid UTF-8 as it is; a byte that is not: the text \xHH (JSON is Unicode) */
            size_t seq = sv_json_utf8_seq((const unsigned char *)s + i, n - i);
            if (seq) {
                i += seq - 1;
                continue;
            }
            memcpy(ubuf, "\\\\x", 3);
            ubuf[3] = "0123456789ABCDEF"[c >> 4];
            ubuf[4] = "0123456789ABCDEF"[c & 15];
            ubuf[5] = 0;
            esc = ubuf;
        }
        if (!esc) continue;
        wput(w, s + run, i - run);
        wput(w, esc, strlen(esc));
        run = i + 1;
    }
    wput(w, s + run, n - run);
    wput(w, "\"", 1);
}

void sv_json_key(sv_json_writer *w, const char *key) {
    wpre(w, 1);
    if (w->err) return;
    wescaped(w, key, strlen(key));
    wput(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
    w->expect_value = 1;
}

void sv_json_strn(sv_json_writer *w, const char *s, size_t n) {
    wpre(w, 0);
    wescaped(w, s, n);
    wpost(w);
}

void sv_json_str(sv_json_writer *w, const char *s) { sv_json_strn(w, s, strlen(s)); }

/* A value given as its text (a number literal, a literal, or caller-checked JSON). */
static void wtext(sv_json_writer *w, const char *s, size_t n) {
    wpre(w, 0);
    wput(w, s, n);
    wpost(w);
}

void sv_json_i64(sv_json_writer *w, int64_t v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    wtext(w, b, (size_t)n);
}

void sv_json_u64(sv_json_writer *w, uint64_t v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    wtext(w, b, (size_t)n);
}

/* Starting at 15 digits loses nothing: when p < 15 digits read back as v, %.15g writes those p
 * digits (a decimal of at most 15 digits survives the round trip through its nearest double). */
int sv_f64_shortest(char *o, size_t cap, double v) {
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(o, cap, "%.*g", prec, v);
        if (strtod(o, NULL) == v) break;
    }
    return n;
}

void sv_json_f64(sv_json_writer *w, double v) {
    if (!isfinite(v)) {
        sv_json_null(w);
        return;
    }
    char b[40];
    wtext(w, b, (size_t)sv_f64_shortest(b, sizeof b, v));
}

/* A finite double as printf's %.*g (fixed = 0) or %.*f (fixed = 1) writes it; else null. The
 * output of both is a JSON number for finite values (digits, '.', 'e', sign only). */
static void wf64_printf(sv_json_writer *w, double v, int prec, int fixed) {
    if (!isfinite(v)) {
        sv_json_null(w);
        return;
    }
    if (prec < 0) prec = 0;
    if (prec > 40) prec = 40;
    char b[400]; /* %.40f of DBL_MAX: 309 integer digits + '.' + 40 */
    int n = fixed ? snprintf(b, sizeof b, "%.*f", prec, v) : snprintf(b, sizeof b, "%.*g", prec, v);
    wtext(w, b, (size_t)n);
}

void sv_json_f64_sig(sv_json_writer *w, double v, int digits) { wf64_printf(w, v, digits, 0); }
void sv_json_f64_fixed(sv_json_writer *w, double v, int decimals) { wf64_printf(w, v, decimals, 1); }

void sv_json_raw(sv_json_writer *w, const char *json) { wtext(w, json, strlen(json)); }

void sv_json_bool(sv_json_writer *w, int v) { wtext(w, v ? "true" : "false", v ? 4 : 5); }

void sv_json_null(sv_json_writer *w) { wtext(w, "null", 4); }

void sv_json_value(sv_json_writer *w, const sv_json *v) {
    switch (v->type) {
    case SV_JSON_NULL: sv_json_null(w); break;
    case SV_JSON_BOOL: sv_json_bool(w, v->u.boolean); break;
    case SV_JSON_NUMBER:
        if (v->u.num.is_int)
            sv_json_i64(w, v->u.num.i);
        else
            sv_json_f64(w, v->u.num.d);
        break;
    case SV_JSON_STRING: sv_json_strn(w, v->u.str.s, v->u.str.len); break;
    case SV_JSON_ARRAY:
        sv_json_arr_begin(w);
        for (size_t i = 0; i < v->u.arr.n && !w->err; i++) sv_json_value(w, &v->u.arr.items[i]);
        sv_json_arr_end(w);
        break;
    case SV_JSON_OBJECT:
        sv_json_obj_begin(w);
        for (size_t i = 0; i < v->u.obj.n && !w->err; i++) {
            const sv_json_member *m = &v->u.obj.members[i];
            wpre(w, 1);
            if (w->err) break;
            wescaped(w, m->key, m->key_len);
            wput(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
            w->expect_value = 1;
            sv_json_value(w, &m->value);
        }
        sv_json_obj_end(w);
        break;
    }
}

sv_status sv_json_writer_finish(sv_json_writer *w, const char **text, size_t *len) {
    if (w->err) return SV_FAIL(w->err, "JSON writer: %s", w->errmsg);
    if (!w->done || w->depth)
        return SV_FAIL(SV_ERR_INVALID, "JSON writer: incomplete document (%d open containers)", w->depth);
    *text = w->buf;
    if (len) *len = w->len;
    return SV_OK;
}
