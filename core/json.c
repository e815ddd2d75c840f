#include "core/json.h"

#include "core/fileio.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_DEFAULT_MAX_BYTES ((size_t)256 << 20)
#define JSON_DEFAULT_MAX_DEPTH 128

/* ======================================================================================== */
/* parser                                                                                    */
/* ======================================================================================== */

typedef struct parser {
    const unsigned char *p;
    size_t len, pos;
    int depth, max_depth;
    const char *source;
} parser;

static sv_status perr(const parser *ps, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static sv_status perr(const parser *ps, size_t off, const char *fmt, ...) {
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return SV_FAIL(SV_ERR_FORMAT, "%s: JSON error at byte %zu: %s", ps->source, off, reason);
}

static sv_status poom(const parser *ps) {
    return SV_FAIL(SV_ERR_OOM, "%s: out of memory while parsing JSON", ps->source);
}

/* Describe the byte at `off` for messages ("'x'", "byte 0x0a", "end of input"). */
static const char *describe(const parser *ps, size_t off, char *buf, size_t cap) {
    if (off >= ps->len) return "end of input";
    unsigned c = ps->p[off];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, cap, "'%c'", (char)c);
    else
        snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static void skip_ws(parser *ps) {
    while (ps->pos < ps->len) {
        unsigned char c = ps->p[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        ps->pos++;
    }
}

static void node_free(sv_json *v) {
    switch (v->type) {
    case SV_JSON_STRING: free(v->u.str.s); break;
    case SV_JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++) node_free(&v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case SV_JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            free(v->u.obj.members[i].key);
            node_free(&v->u.obj.members[i].value);
        }
        free(v->u.obj.members);
        break;
    default: break;
    }
    memset(v, 0, sizeof *v);
}

/* Children are stored by value in their parent's array, which only reaches its final address
 * once the container is complete: point grandchildren at their (now final) parents then. */
static void fix_children(sv_json *v) {
    if (v->type == SV_JSON_ARRAY)
        for (size_t i = 0; i < v->u.arr.n; i++) v->u.arr.items[i].parent = v;
    else if (v->type == SV_JSON_OBJECT)
        for (size_t i = 0; i < v->u.obj.n; i++) v->u.obj.members[i].value.parent = v;
}

static int grow(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 4;
    while (nc < need) {
        if (nc > ((size_t)-1 / 2) / elem) return 0;
        nc *= 2;
    }
    void *np = realloc(*ptr, nc * elem);
    if (!np) return 0;
    *ptr = np;
    *cap = nc;
    return 1;
}

size_t sv_json_utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0; /* no overlongs */
        if (c == 0xed) hi = 0x9f; /* no UTF-16 surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f; /* <= U+10FFFF */
    } else
        return 0;
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xbf) return 0;
    return len;
}

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int hex4(const unsigned char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = s[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return 0;
    }
    *out = v;
    return 1;
}

/* At an opening quote. Decoded text is never longer than the raw text (each escape shrinks,
 * raw UTF-8 is copied), so one allocation of the raw length suffices. */
static sv_status parse_string(parser *ps, char **out, size_t *out_len) {
    size_t start = ps->pos + 1, end = start;
    while (end < ps->len && ps->p[end] != '"') end += (ps->p[end] == '\\') ? 2 : 1;
    if (end >= ps->len) return perr(ps, ps->pos, "unterminated string");
    char *o = malloc(end - start + 1);
    if (!o) return poom(ps);
    size_t n = 0, i = start;
    char what[32];
    while (i < end) {
        unsigned c = ps->p[i];
        if (c < 0x20) {
            free(o);
            return perr(ps, i, "unescaped control character 0x%02x in string", c);
        }
        if (c != '\\') {
            size_t k = sv_json_utf8_seq(ps->p + i, end - i);
            if (!k) {
                free(o);
                return perr(ps, i, "invalid UTF-8 byte 0x%02x in string", c);
            }
            memcpy(o + n, ps->p + i, k);
            n += k;
            i += k;
            continue;
        }
        unsigned e = ps->p[i + 1]; /* i + 1 < end by construction of `end` */
        switch (e) {
        case '"':
            o[n++] = '"';
            i += 2;
            continue;
        case '\\':
            o[n++] = '\\';
            i += 2;
            continue;
        case '/':
            o[n++] = '/';
            i += 2;
            continue;
        case 'b':
            o[n++] = '\b';
            i += 2;
            continue;
        case 'f':
            o[n++] = '\f';
            i += 2;
            continue;
        case 'n':
            o[n++] = '\n';
            i += 2;
            continue;
        case 'r':
            o[n++] = '\r';
            i += 2;
            continue;
        case 't':
            o[n++] = '\t';
            i += 2;
            continue;
        case 'u': break;
        default: free(o); return perr(ps, i, "invalid escape '\\%s' in string", describe(ps, i + 1, what, sizeof what));
        }
        uint32_t cp;
        if (i + 6 > end || !hex4(ps->p + i + 2, &cp)) {
            free(o);
            return perr(ps, i, "invalid \\u escape (need 4 hex digits)");
        }
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            free(o);
            return perr(ps, i, "lone low surrogate \\u%04X in string", (unsigned)cp);
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t lo;
            if (i + 12 > end || ps->p[i + 6] != '\\' || ps->p[i + 7] != 'u' || !hex4(ps->p + i + 8, &lo) ||
                lo < 0xdc00 || lo > 0xdfff) {
                free(o);
                return perr(ps, i, "lone high surrogate \\u%04X in string (no low surrogate)", (unsigned)cp);
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i += 12;
        } else {
            i += 6;
        }
        n += put_utf8(o + n, cp);
    }
    o[n] = 0;
    ps->pos = end + 1;
    *out = o;
    *out_len = n;
    return SV_OK;
}

static int is_digit(unsigned c) { return c >= '0' && c <= '9'; }

static sv_status parse_number(parser *ps, sv_json *out) {
    size_t s = ps->pos, i = s;
    int neg = 0, integral = 1;
    if (i < ps->len && ps->p[i] == '-') {
        neg = 1;
        i++;
    }
    if (i >= ps->len || !is_digit(ps->p[i])) return perr(ps, s, "invalid number (digit expected)");
    if (ps->p[i] == '0' && i + 1 < ps->len && is_digit(ps->p[i + 1]))
        return perr(ps, i, "invalid number: leading zeros are not allowed");
    while (i < ps->len && is_digit(ps->p[i])) i++;
    if (i < ps->len && ps->p[i] == '.') {
        integral = 0;
        i++;
        if (i >= ps->len || !is_digit(ps->p[i])) return perr(ps, i, "invalid number: digit expected after '.'");
        while (i < ps->len && is_digit(ps->p[i])) i++;
    }
    if (i < ps->len && (ps->p[i] == 'e' || ps->p[i] == 'E')) {
        integral = 0;
        i++;
        if (i < ps->len && (ps->p[i] == '+' || ps->p[i] == '-')) i++;
        if (i >= ps->len || !is_digit(ps->p[i])) return perr(ps, i, "invalid number: digit expected in exponent");
        while (i < ps->len && is_digit(ps->p[i])) i++;
    }
    size_t n = i - s;
    char small[64], *tok = small;
    if (n >= sizeof small) {
        tok = malloc(n + 1);
        if (!tok) return poom(ps);
    }
    memcpy(tok, ps->p + s, n);
    tok[n] = 0;
    double d = strtod(tok, NULL);
    if (tok != small) free(tok);
    if (!isfinite(d)) return perr(ps, s, "number out of range (does not fit a double)");
    out->type = SV_JSON_NUMBER;
    out->u.num.d = d;
    out->u.num.is_int = 0;
    out->u.num.literal_int = 0;
    out->u.num.i = 0;
    if (integral) {
        /* Exact int64 from the digits: doubles lose precision beyond 2^53. */
        uint64_t mag = 0, lim = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
        int fits = 1;
        for (size_t k = s + (size_t)neg; k < i; k++) {
            unsigned dg = ps->p[k] - '0';
            if (mag > (lim - dg) / 10) {
                fits = 0;
                break;
            }
            mag = mag * 10 + dg;
        }
        if (fits) {
            out->u.num.is_int = out->u.num.literal_int = 1;
            out->u.num.i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        }
    } else if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
        out->u.num.is_int = 1;
        out->u.num.i = (int64_t)d;
    }
    ps->pos = i;
    return SV_OK;
}

static sv_status parse_value(parser *ps, sv_json *out);

static int key_cmp(const void *a, const void *b) {
    const sv_json_member *x = *(const sv_json_member *const *)a;
    const sv_json_member *y = *(const sv_json_member *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* Reject duplicate keys: O(n^2) for small objects, sort for big ones (untrusted input could
 * otherwise make this quadratic). */
static sv_status check_duplicates(parser *ps, sv_json *obj, size_t obj_off) {
    size_t n = obj->u.obj.n;
    sv_json_member *m = obj->u.obj.members;
    const sv_json_member *dup = NULL;
    if (n <= 16) {
        for (size_t a = 0; a < n && !dup; a++)
            for (size_t b = a + 1; b < n; b++)
                if (m[a].key_len == m[b].key_len && !memcmp(m[a].key, m[b].key, m[a].key_len)) {
                    dup = &m[b];
                    break;
                }
    } else {
        const sv_json_member **idx = malloc(n * sizeof *idx);
        if (!idx) return poom(ps);
        for (size_t a = 0; a < n; a++) idx[a] = &m[a];
        qsort(idx, n, sizeof *idx, key_cmp);
        for (size_t a = 1; a < n && !dup; a++) /* the later of the two (qsort is not stable) */
            if (!key_cmp(&idx[a - 1], &idx[a])) dup = idx[a]->key_off > idx[a - 1]->key_off ? idx[a] : idx[a - 1];
        free(idx);
    }
    if (dup) return perr(ps, dup->key_off, "duplicate key \"%.200s\" in the object at byte %zu", dup->key, obj_off);
    return SV_OK;
}

static sv_status parse_array(parser *ps, sv_json *out) {
    size_t cap = 0;
    out->type = SV_JSON_ARRAY;
    out->u.arr.items = NULL;
    out->u.arr.n = 0;
    ps->pos++; /* '[' */
    skip_ws(ps);
    if (ps->pos < ps->len && ps->p[ps->pos] == ']') {
        ps->pos++;
        return SV_OK;
    }
    for (;;) {
        if (!grow((void **)&out->u.arr.items, &cap, out->u.arr.n + 1, sizeof(sv_json))) return poom(ps);
        sv_json *item = &out->u.arr.items[out->u.arr.n];
        memset(item, 0, sizeof *item);
        out->u.arr.n++; /* counted now so a partly parsed item is freed on error */
        SV_TRY(parse_value(ps, item));
        skip_ws(ps);
        char what[32];
        if (ps->pos < ps->len && ps->p[ps->pos] == ',') {
            ps->pos++;
            continue;
        }
        if (ps->pos < ps->len && ps->p[ps->pos] == ']') {
            ps->pos++;
            break;
        }
        return perr(ps, ps->pos, "expected ',' or ']' in array, found %s", describe(ps, ps->pos, what, sizeof what));
    }
    for (size_t k = 0; k < out->u.arr.n; k++) fix_children(&out->u.arr.items[k]);
    return SV_OK;
}

static sv_status parse_object(parser *ps, sv_json *out) {
    size_t cap = 0, obj_off = ps->pos;
    char what[32];
    out->type = SV_JSON_OBJECT;
    out->u.obj.members = NULL;
    out->u.obj.n = 0;
    ps->pos++; /* '{' */
    skip_ws(ps);
    if (ps->pos < ps->len && ps->p[ps->pos] == '}') {
        ps->pos++;
        return SV_OK;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->pos >= ps->len || ps->p[ps->pos] != '"')
            return perr(ps, ps->pos, "expected string key in object, found %s",
                        describe(ps, ps->pos, what, sizeof what));
        if (!grow((void **)&out->u.obj.members, &cap, out->u.obj.n + 1, sizeof(sv_json_member))) return poom(ps);
        sv_json_member *m = &out->u.obj.members[out->u.obj.n];
        memset(m, 0, sizeof *m);
        m->key_off = ps->pos;
        SV_TRY(parse_string(ps, &m->key, &m->key_len));
        out->u.obj.n++; /* counted now so the key is freed on a later error */
        skip_ws(ps);
        if (ps->pos >= ps->len || ps->p[ps->pos] != ':')
            return perr(ps, ps->pos, "expected ':' after object key, found %s",
                        describe(ps, ps->pos, what, sizeof what));
        ps->pos++;
        SV_TRY(parse_value(ps, &m->value));
        skip_ws(ps);
        if (ps->pos < ps->len && ps->p[ps->pos] == ',') {
            ps->pos++;
            continue;
        }
        if (ps->pos < ps->len && ps->p[ps->pos] == '}') {
            ps->pos++;
            break;
        }
        return perr(ps, ps->pos, "expected ',' or '}' in object, found %s", describe(ps, ps->pos, what, sizeof what));
    }
    SV_TRY(check_duplicates(ps, out, obj_off));
    for (size_t k = 0; k < out->u.obj.n; k++) fix_children(&out->u.obj.members[k].value);
    return SV_OK;
}

static int match_lit(parser *ps, const char *lit) {
    size_t n = strlen(lit);
    if (ps->len - ps->pos < n || memcmp(ps->p + ps->pos, lit, n)) return 0;
    ps->pos += n;
    return 1;
}

static sv_status parse_value(parser *ps, sv_json *out) {
    char what[32];
    skip_ws(ps);
    if (ps->pos >= ps->len) return perr(ps, ps->pos, "unexpected end of input (value expected)");
    unsigned c = ps->p[ps->pos];
    switch (c) {
    case '{':
    case '[': {
        if (++ps->depth > ps->max_depth) return perr(ps, ps->pos, "nesting deeper than %d levels", ps->max_depth);
        sv_status s = c == '{' ? parse_object(ps, out) : parse_array(ps, out);
        ps->depth--;
        return s;
    }
    case '"':
        out->type = SV_JSON_STRING;
        out->u.str.s = NULL;
        return parse_string(ps, &out->u.str.s, &out->u.str.len);
    case 't':
    case 'f':
    case 'n':
        if (match_lit(ps, "true")) {
            out->type = SV_JSON_BOOL;
            out->u.boolean = 1;
            return SV_OK;
        }
        if (match_lit(ps, "false")) {
            out->type = SV_JSON_BOOL;
            out->u.boolean = 0;
            return SV_OK;
        }
        if (match_lit(ps, "null")) {
            out->type = SV_JSON_NULL;
            return SV_OK;
        }
        return perr(ps, ps->pos, "invalid literal (expected true, false or null)");
    case 'N':
    case 'I':
        return perr(ps, ps->pos, "unexpected %s: NaN and Infinity are not valid JSON",
                    describe(ps, ps->pos, what, sizeof what));
    default:
        if (c == '-' || is_digit(c)) return parse_number(ps, out);
        return perr(ps, ps->pos, "unexpected %s (value expected)", describe(ps, ps->pos, what, sizeof what));
    }
}

sv_status sv_json_parse(sv_json_doc *doc, const char *text, size_t len, const char *source,
                        const sv_json_limits *limits) {
    memset(&doc->root, 0, sizeof doc->root);
    snprintf(doc->source, sizeof doc->source, "%s", source ? source : "JSON");
    parser ps = {
        .p = (const unsigned char *)text,
        .len = len,
        .max_depth = limits && limits->max_depth > 0 ? limits->max_depth : JSON_DEFAULT_MAX_DEPTH,
        .source = doc->source,
    };
    size_t max_bytes = limits && limits->max_bytes ? limits->max_bytes : JSON_DEFAULT_MAX_BYTES;
    if (len > max_bytes)
        return perr(&ps, max_bytes, "input of %zu bytes exceeds the limit of %zu bytes", len, max_bytes);
    if (!text && len) return perr(&ps, 0, "no input buffer");
    sv_status s = parse_value(&ps, &doc->root);
    if (s == SV_OK) {
        skip_ws(&ps);
        if (ps.pos < ps.len) {
            char what[32];
            s = perr(&ps, ps.pos, "trailing characters after the JSON value (%s)",
                     describe(&ps, ps.pos, what, sizeof what));
        }
    }
    if (s != SV_OK) {
        node_free(&doc->root);
        return s;
    }
    doc->root.parent = NULL;
    fix_children(&doc->root);
    return SV_OK;
}

void sv_json_doc_free(sv_json_doc *doc) {
    if (doc) node_free(&doc->root);
}

/* ======================================================================================== */
/* lookup                                                                                    */
/* ======================================================================================== */

const char *sv_json_type_name(sv_json_type t) {
    switch (t) {
    case SV_JSON_NULL: return "null";
    case SV_JSON_BOOL: return "boolean";
    case SV_JSON_NUMBER: return "number";
    case SV_JSON_STRING: return "string";
    case SV_JSON_ARRAY: return "array";
    case SV_JSON_OBJECT: return "object";
    }
    return "?";
}

const sv_json *sv_json_at_path(const sv_json *v, const char *path) {
    char part[64];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        snprintf(part, sizeof part, "%.*s", (int)n, path);
        v = sv_json_member_get(v, part);
        path += n + (path[n] == '.');
    }
    return v;
}

const sv_json *sv_json_member_get(const sv_json *obj, const char *key) {
    if (!obj || obj->type != SV_JSON_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const sv_json_member *m = &obj->u.obj.members[i];
        if (m->key_len == kl && !memcmp(m->key, key, kl)) return &m->value;
    }
    return NULL;
}

const sv_json *sv_json_index(const sv_json *arr, size_t i) {
    if (!arr || arr->type != SV_JSON_ARRAY || i >= arr->u.arr.n) return NULL;
    return &arr->u.arr.items[i];
}

size_t sv_json_count(const sv_json *v) {
    if (!v) return 0;
    if (v->type == SV_JSON_ARRAY) return v->u.arr.n;
    if (v->type == SV_JSON_OBJECT) return v->u.obj.n;
    return 0;
}

static const char *doc_source(const sv_json *v) {
    while (v->parent) v = v->parent;
    const sv_json_doc *d = (const sv_json_doc *)((const char *)v - offsetof(sv_json_doc, root));
    return d->source;
}

void sv_json_path(const sv_json *v, char *buf, size_t cap) {
    if (!cap) return;
    buf[0] = 0;
    const sv_json *chain[JSON_DEFAULT_MAX_DEPTH * 2 + 2];
    size_t n = 0;
    for (const sv_json *x = v; x->parent && n < sizeof chain / sizeof chain[0]; x = x->parent) chain[n++] = x;
    if (n == 0) {
        snprintf(buf, cap, "(root)");
        return;
    }
    size_t len = 0;
    for (size_t k = n; k-- > 0 && len + 1 < cap;) {
        const sv_json *x = chain[k], *p = x->parent;
        if (p->type == SV_JSON_ARRAY) {
            snprintf(buf + len, cap - len, "[%zu]", (size_t)(x - p->u.arr.items));
        } else {
            const sv_json_member *m = (const sv_json_member *)((const char *)x - offsetof(sv_json_member, value));
            snprintf(buf + len, cap - len, "%s%.100s", len ? "." : "", m->key);
        }
        len += strlen(buf + len);
    }
}

static sv_status type_error(const sv_json *v, const char *expected) {
    char path[512];
    sv_json_path(v, path, sizeof path);
    const char *found = sv_json_type_name(v->type);
    if (v->type == SV_JSON_NUMBER && !v->u.num.is_int) found = "non-integral number";
    return SV_FAIL(SV_ERR_FORMAT, "%s: %s: expected %s, found %s", doc_source(v), path, expected, found);
}

sv_status sv_json_expect(const sv_json *v, sv_json_type t) {
    if (v->type != t) return type_error(v, sv_json_type_name(t));
    return SV_OK;
}

sv_status sv_json_as_i64(const sv_json *v, int64_t *out) {
    if (v->type != SV_JSON_NUMBER || !v->u.num.is_int) return type_error(v, "integer");
    *out = v->u.num.i;
    return SV_OK;
}

sv_status sv_json_as_f64(const sv_json *v, double *out) {
    if (v->type != SV_JSON_NUMBER) return type_error(v, "number");
    *out = v->u.num.d;
    return SV_OK;
}

sv_status sv_json_as_bool(const sv_json *v, int *out) {
    if (v->type != SV_JSON_BOOL) return type_error(v, "boolean");
    *out = v->u.boolean;
    return SV_OK;
}

sv_status sv_json_as_str(const sv_json *v, const char **out, size_t *len_out) {
    if (v->type != SV_JSON_STRING) return type_error(v, "string");
    *out = v->u.str.s;
    if (len_out) *len_out = v->u.str.len;
    return SV_OK;
}

static sv_status member_or_missing(const sv_json *obj, const char *key, const sv_json **out) {
    SV_TRY(sv_json_expect(obj, SV_JSON_OBJECT));
    *out = sv_json_member_get(obj, key);
    if (!*out) {
        char path[512];
        sv_json_path(obj, path, sizeof path);
        if (!obj->parent) path[0] = 0;
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s%s: missing", doc_source(obj), path, path[0] ? "." : "", key);
    }
    return SV_OK;
}

sv_status sv_json_get(const sv_json *obj, const char *key, sv_json_type t, const sv_json **out) {
    SV_TRY(member_or_missing(obj, key, out));
    return sv_json_expect(*out, t);
}

/* Required member of a given C type: missing => error naming the path. */
#define JSON_GETTER(name, ctype, as_call) \
    sv_status name(const sv_json *obj, const char *key, ctype *out) { \
        const sv_json *v; \
        SV_TRY(member_or_missing(obj, key, &v)); \
        return as_call; \
    }
JSON_GETTER(sv_json_get_i64, int64_t, sv_json_as_i64(v, out))
JSON_GETTER(sv_json_get_f64, double, sv_json_as_f64(v, out))
JSON_GETTER(sv_json_get_bool, int, sv_json_as_bool(v, out))

sv_status sv_json_get_str(const sv_json *obj, const char *key, const char **out, size_t *len_out) {
    const sv_json *v;
    SV_TRY(member_or_missing(obj, key, &v));
    return sv_json_as_str(v, out, len_out);
}

/* Present and non-null member, or NULL. */
static sv_status opt_member(const sv_json *obj, const char *key, const sv_json **out) {
    SV_TRY(sv_json_expect(obj, SV_JSON_OBJECT));
    *out = sv_json_member_get(obj, key);
    if (*out && (*out)->type == SV_JSON_NULL) *out = NULL;
    return SV_OK;
}

/* Optional member: absent or null => the default. */
#define JSON_OPT_GETTER(name, ctype, as_call) \
    sv_status name(const sv_json *obj, const char *key, ctype dflt, ctype *out) { \
        const sv_json *v; \
        SV_TRY(opt_member(obj, key, &v)); \
        if (!v) { \
            *out = dflt; \
            return SV_OK; \
        } \
        return as_call; \
    }
JSON_OPT_GETTER(sv_json_opt_i64, int64_t, sv_json_as_i64(v, out))
JSON_OPT_GETTER(sv_json_opt_f64, double, sv_json_as_f64(v, out))
JSON_OPT_GETTER(sv_json_opt_bool, int, sv_json_as_bool(v, out))
JSON_OPT_GETTER(sv_json_opt_str, const char *, sv_json_as_str(v, out, NULL))

int sv_json_file_has_members(const char *path, size_t max_bytes, const char *const *keys, const sv_json_type *types,
                             size_t n) {
    char *text;
    size_t len;
    if (sv_fileio_read_small(path, max_bytes, &text, &len) != SV_OK) {
        sv_err_clear();
        return 0;
    }
    sv_json_doc doc;
    int ok = sv_json_parse(&doc, text, len, path, NULL) == SV_OK && doc.root.type == SV_JSON_OBJECT;
    for (size_t i = 0; ok && i < n; i++) {
        const sv_json *m = sv_json_member_get(&doc.root, keys[i]);
        ok = m && (!types || m->type == types[i]);
    }
    sv_json_doc_free(&doc);
    free(text);
    sv_err_clear();
    return ok;
}
