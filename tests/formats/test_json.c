/* core/json: parse/write round trips, exact numbers, escapes and unicode, every rejection
 * with its message, path-naming getters, writer misuse, and a mutation robustness loop. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "fmt_util.h"

static void parse_ok(sv_json_doc *d, const char *text) {
    CHECK_OK(sv_json_parse(d, text, strlen(text), "t.json", NULL));
}

#define REJECT(text, ...) \
    do { \
        sv_json_doc d_; \
        CHECK_FAILS(sv_json_parse(&d_, (text), strlen(text), "bad.json", NULL), SV_ERR_FORMAT, "bad.json", \
                    "JSON error at byte", __VA_ARGS__); \
        CHECK(d_.root.type == SV_JSON_NULL); \
        sv_json_doc_free(&d_); \
    } while (0)

/* Structural equality of two nodes (numbers by bits/exact int, strings by bytes). */
static int same(const sv_json *a, const sv_json *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case SV_JSON_NULL: return 1;
    case SV_JSON_BOOL: return a->u.boolean == b->u.boolean;
    case SV_JSON_NUMBER:
        if (a->u.num.is_int != b->u.num.is_int) return 0;
        if (a->u.num.is_int) return a->u.num.i == b->u.num.i;
        return memcmp(&a->u.num.d, &b->u.num.d, 8) == 0;
    case SV_JSON_STRING: return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case SV_JSON_ARRAY:
        if (a->u.arr.n != b->u.arr.n) return 0;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!same(&a->u.arr.items[i], &b->u.arr.items[i])) return 0;
        return 1;
    case SV_JSON_OBJECT:
        if (a->u.obj.n != b->u.obj.n) return 0;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const sv_json_member *x = &a->u.obj.members[i], *y = &b->u.obj.members[i];
            if (x->key_len != y->key_len || memcmp(x->key, y->key, x->key_len)) return 0;
            if (!same(&x->value, &y->value)) return 0;
        }
        return 1;
    }
    return 0;
}

static void roundtrip(const sv_json_doc *d, int indent) {
    sv_json_writer w;
    sv_json_writer_init(&w, indent);
    sv_json_value(&w, &d->root);
    const char *text;
    size_t len;
    CHECK_OK(sv_json_writer_finish(&w, &text, &len));
    sv_json_doc d2;
    CHECK_OK(sv_json_parse(&d2, text, len, "rt.json", NULL));
    CHECK(same(&d->root, &d2.root));
    sv_json_doc_free(&d2);
    sv_json_writer_free(&w);
}

static void test_values(void) {
    sv_json_doc d;
    const char *text = " {\"s\": \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0001\\u00e9\\u20ac\\ud83d\\ude00\xc3\xa9\","
                       "  \"nul\": \"x\\u0000y\", \"max\": 9223372036854775807, \"min\": -9223372036854775808,"
                       "  \"over\": 9223372036854775808, \"p53\": 9007199254740993, \"f\": 1.5, \"e\": 1.5e3,"
                       "  \"neg0\": -0, \"tiny\": 5e-324, \"arr\": [true, false, null, [], {}],"
                       "  \"z\": 0, \"order\": {\"b\": 1, \"a\": 2, \"c\": 3}} \n";
    parse_ok(&d, text);
    const char *s;
    size_t n;
    CHECK_OK(sv_json_get_str(&d.root, "s", &s, &n));
    const char want[] = "a\"b\\c/d\b\f\n\r\t\x01\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9";
    CHECK(n == sizeof want - 1 && !memcmp(s, want, n));
    CHECK_OK(sv_json_get_str(&d.root, "nul", &s, &n));
    CHECK(n == 3 && s[0] == 'x' && s[1] == 0 && s[2] == 'y');
    int64_t i;
    CHECK_OK(sv_json_get_i64(&d.root, "max", &i));
    CHECK(i == INT64_MAX);
    CHECK_OK(sv_json_get_i64(&d.root, "min", &i));
    CHECK(i == INT64_MIN);
    CHECK_OK(sv_json_get_i64(&d.root, "p53", &i));
    CHECK(i == 9007199254740993LL); /* not representable as a double: exactness matters */
    const sv_json *over = sv_json_member_get(&d.root, "over");
    CHECK(over->type == SV_JSON_NUMBER && !over->u.num.is_int && over->u.num.d == 9223372036854775808.0);
    CHECK_FAILS(sv_json_get_i64(&d.root, "over", &i), SV_ERR_FORMAT, "t.json", "over", "expected integer",
                "non-integral number");
    /* literal_int: written as an integer; 32.0 and 3.2e1 are integral values but not such literals */
    {
        static const struct {
            const char *text;
            int is_int, literal_int;
        } lit[] = {{"32", 1, 1},
                   {"-7", 1, 1},
                   {"32.0", 1, 0},
                   {"3.2e1", 1, 0},
                   {"1E2", 1, 0},
                   {"4.5", 0, 0},
                   {"9223372036854775808", 0, 0}};
        for (size_t k = 0; k < sizeof lit / sizeof lit[0]; k++) {
            sv_json_doc ld;
            CHECK_OK(sv_json_parse(&ld, lit[k].text, strlen(lit[k].text), "lit.json", NULL));
            CHECK(ld.root.type == SV_JSON_NUMBER && ld.root.u.num.is_int == lit[k].is_int &&
                  ld.root.u.num.literal_int == lit[k].literal_int);
            sv_json_doc_free(&ld);
        }
    }
    double f;
    CHECK_OK(sv_json_get_f64(&d.root, "f", &f));
    CHECK(f == 1.5);
    CHECK_FAILS(sv_json_get_i64(&d.root, "f", &i), SV_ERR_FORMAT, "f: expected integer");
    CHECK_OK(sv_json_get_i64(&d.root, "e", &i));
    CHECK(i == 1500);
    CHECK_OK(sv_json_get_f64(&d.root, "neg0", &f));
    CHECK(f == 0 && signbit(f));
    CHECK_OK(sv_json_get_f64(&d.root, "tiny", &f));
    CHECK(f == 5e-324);
    const sv_json *arr;
    CHECK_OK(sv_json_get(&d.root, "arr", SV_JSON_ARRAY, &arr));
    CHECK(sv_json_count(arr) == 5);
    CHECK(sv_json_index(arr, 0)->type == SV_JSON_BOOL && sv_json_index(arr, 0)->u.boolean == 1);
    CHECK(sv_json_index(arr, 2)->type == SV_JSON_NULL);
    CHECK(sv_json_index(arr, 5) == NULL);
    const sv_json *ord = sv_json_member_get(&d.root, "order");
    CHECK(!strcmp(ord->u.obj.members[0].key, "b") && !strcmp(ord->u.obj.members[1].key, "a") &&
          !strcmp(ord->u.obj.members[2].key, "c"));
    /* optional getters */
    CHECK_OK(sv_json_opt_i64(&d.root, "absent", 42, &i));
    CHECK(i == 42);
    CHECK_OK(sv_json_opt_i64(&d.root, "z", 42, &i));
    CHECK(i == 0);
    CHECK_FAILS(sv_json_opt_str(&d.root, "z", "d", &s), SV_ERR_FORMAT, "z: expected string, found number");
    roundtrip(&d, 0);
    roundtrip(&d, 2);
    sv_json_doc_free(&d);
    sv_json_doc_free(&d); /* idempotent */
}

static void test_doubles(void) {
    const double vals[] = {0.1,           1.0 / 3.0, 1e-300, 5e-324, DBL_MAX,       -DBL_MIN,
                           123456789.125, -0.0,      2.5e-8, 1e21,   6.02214076e23, 0.30000000000000004};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        sv_json_writer w;
        sv_json_writer_init(&w, 0);
        sv_json_arr_begin(&w);
        sv_json_f64(&w, vals[k]);
        sv_json_arr_end(&w);
        const char *text;
        CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
        sv_json_doc d;
        parse_ok(&d, text);
        double back = sv_json_index(&d.root, 0)->u.num.d;
        CHECK(memcmp(&back, &vals[k], 8) == 0);
        sv_json_doc_free(&d);
        sv_json_writer_free(&w);
    }
    /* shortest form that round-trips, not always 17 digits */
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    sv_json_arr_begin(&w);
    sv_json_f64(&w, 0.1);
    sv_json_f64(&w, NAN);
    sv_json_f64(&w, INFINITY);
    sv_json_i64(&w, INT64_MIN);
    sv_json_u64(&w, UINT64_MAX);
    sv_json_arr_end(&w);
    const char *text;
    CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
    CHECK(!strcmp(text, "[0.1,null,null,-9223372036854775808,18446744073709551615]"));
    sv_json_writer_free(&w);

    /* fixed printf forms: exactly what %.*g / %.*f print, null when not finite; raw text as is */
    sv_json_writer_init(&w, 0);
    sv_json_arr_begin(&w);
    sv_json_f64_sig(&w, 1.0 / 3.0, 9);
    sv_json_f64_sig(&w, 2.5e-8, 6);
    sv_json_f64_sig(&w, -0.0, 9);
    sv_json_f64_fixed(&w, 0.12345, 4);
    sv_json_f64_fixed(&w, 1700000000.1234, 3);
    sv_json_f64_sig(&w, NAN, 9);
    sv_json_f64_fixed(&w, -INFINITY, 3);
    sv_json_f64_fixed(&w, -DBL_MAX, 99); /* clamped to 40 decimals, fits the buffer */
    sv_json_raw(&w, "{\"a\":[1,2]}");
    sv_json_arr_end(&w);
    CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
    char want[512];
    snprintf(want, sizeof want, "[0.333333333,2.5e-08,-0,0.1235,1700000000.123,null,null,%.40f,{\"a\":[1,2]}]",
             -DBL_MAX);
    CHECK(!strcmp(text, want));
    sv_json_doc d;
    parse_ok(&d, text);
    CHECK(sv_json_count(&d.root) == 9);
    sv_json_doc_free(&d);
    sv_json_writer_free(&w);
}

static void test_rejects(void) {
    REJECT("[1,2] x", "trailing characters", "at byte 6");
    REJECT("{} {}", "trailing characters");
    REJECT("\"\\q\"", "invalid escape");
    REJECT("\"\\u12\"", "invalid \\u escape");
    REJECT("\"\\ud800\"", "lone high surrogate");
    REJECT("\"\\ud800\\u0041\"", "lone high surrogate");
    REJECT("\"\\udc00\"", "lone low surrogate");
    REJECT("01", "leading zeros");
    REJECT("-012", "leading zeros");
    REJECT("NaN", "NaN and Infinity are not valid JSON");
    REJECT("[Infinity]", "NaN and Infinity are not valid JSON");
    REJECT("-Infinity", "invalid number");
    REJECT("1.", "digit expected after '.'");
    REJECT("1e", "digit expected in exponent");
    REJECT(".5", "value expected");
    REJECT("+1", "value expected");
    REJECT("1e400", "out of range");
    REJECT("[1,]", "value expected");
    REJECT("{\"a\":1,}", "expected string key");
    REJECT("{\"a\" 1}", "expected ':'");
    REJECT("[1 2]", "expected ',' or ']'");
    REJECT("{'a':1}", "expected string key");
    REJECT("{\"a\":1,\"a\":2}", "duplicate key \"a\"");
    /* the error points at the second occurrence, and names the object's start */
    REJECT("{\"a\":1,\"b\":2,\"a\":3}", "at byte 13: duplicate key \"a\" in the object at byte 0");
    REJECT("[1,{\"x\":{},\"x\":[]}]", "at byte 11: duplicate key \"x\" in the object at byte 3");
    REJECT("\"abc", "unterminated string");
    REJECT("\"a\nb\"", "unescaped control character 0x0a");
    REJECT("\"\xff\"", "invalid UTF-8");
    REJECT("\"\xc0\xaf\"", "invalid UTF-8");         /* overlong '/' */
    REJECT("\"\xed\xa0\x80\"", "invalid UTF-8");     /* encoded surrogate */
    REJECT("\"\xf4\x90\x80\x80\"", "invalid UTF-8"); /* > U+10FFFF */
    REJECT("", "unexpected end of input");
    REJECT("   ", "unexpected end of input");
    REJECT("tru", "invalid literal");
    REJECT("nulll", "trailing characters");
    REJECT("// c\n1", "value expected");
    /* duplicates in a big object go through the sorting path */
    char big[4096];
    size_t n = 0;
    n += (size_t)snprintf(big + n, sizeof big - n, "{");
    for (int k = 0; k < 100; k++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%d\":%d", k ? "," : "", k % 99, k);
    snprintf(big + n, sizeof big - n, "}");
    {
        size_t last = 0; /* the second "k0": the sorted path reports the later occurrence too */
        for (const char *q = big; (q = strstr(q, "\"k0\"")) != NULL; q++) last = (size_t)(q - big);
        char want[96];
        snprintf(want, sizeof want, "at byte %zu: duplicate key \"k0\" in the object at byte 0", last);
        REJECT(big, want);
    }
    /* nesting: 128 levels parse, 129 do not */
    char deep[600];
    for (int lv = 128; lv <= 129; lv++) {
        memset(deep, '[', (size_t)lv);
        memset(deep + lv, ']', (size_t)lv);
        deep[2 * lv] = 0;
        sv_json_doc d;
        if (lv == 128) {
            parse_ok(&d, deep);
            roundtrip(&d, 0);
            sv_json_doc_free(&d);
        } else {
            REJECT(deep, "nesting deeper than 128 levels");
        }
    }
    /* explicit limits */
    sv_json_limits lim = {.max_bytes = 4, .max_depth = 2};
    sv_json_doc d;
    CHECK_FAILS(sv_json_parse(&d, "[1,2,3]", 7, "lim.json", &lim), SV_ERR_FORMAT, "exceeds the limit");
    CHECK_FAILS(sv_json_parse(&d, "[[[]]]", 6, "lim.json", &(sv_json_limits){0, 2}), SV_ERR_FORMAT,
                "nesting deeper than 2");
    /* no NUL terminator needed: only `len` bytes are read */
    char nonul[3] = {'[', ']', 'x'};
    CHECK_OK(sv_json_parse(&d, nonul, 2, "n.json", NULL));
    sv_json_doc_free(&d);
}

static void test_paths(void) {
    sv_json_doc d;
    parse_ok(&d, "{\"units\": [{\"name\": \"a\", \"shape\": \"x\"}, {\"name\": 3}], \"v\": [[1, [true]]]}");
    const sv_json *units, *shape;
    CHECK_OK(sv_json_get(&d.root, "units", SV_JSON_ARRAY, &units));
    const sv_json *u0 = sv_json_index(units, 0), *u1 = sv_json_index(units, 1);
    CHECK_FAILS(sv_json_get(u0, "shape", SV_JSON_ARRAY, &shape), SV_ERR_FORMAT,
                "t.json: ", "units[0].shape: expected array, found string");
    CHECK_FAILS(sv_json_get_i64(u0, "numel", &(int64_t){0}), SV_ERR_FORMAT, "units[0].numel: missing");
    const char *s;
    CHECK_FAILS(sv_json_get_str(u1, "name", &s, NULL), SV_ERR_FORMAT, "units[1].name: expected string, found number");
    CHECK_FAILS(sv_json_get_i64(&d.root, "nope", &(int64_t){0}), SV_ERR_FORMAT, "t.json: nope: missing");
    const sv_json *inner = sv_json_index(sv_json_index(sv_json_index(sv_json_member_get(&d.root, "v"), 0), 1), 0);
    char path[128];
    sv_json_path(inner, path, sizeof path);
    CHECK(!strcmp(path, "v[0][1][0]"));
    sv_json_path(&d.root, path, sizeof path);
    CHECK(!strcmp(path, "(root)"));
    CHECK_FAILS(sv_json_get(units, "x", SV_JSON_NULL, &shape), SV_ERR_FORMAT, "units: expected object, found array");
    sv_json_doc_free(&d);
}

static void test_writer(void) {
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "k\"\\\n\x01\x7f");
    sv_json_strn(&w, "a\0b\t\xc3\xa9", 6);
    sv_json_key(&w, "list");
    sv_json_arr_begin(&w);
    sv_json_bool(&w, 1);
    sv_json_null(&w);
    sv_json_arr_end(&w);
    sv_json_obj_end(&w);
    const char *text;
    CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
    CHECK(!strcmp(text, "{\"k\\\"\\\\\\n\\u0001\\u007f\":\"a\\u0000b\\t\xc3\xa9\",\"list\":[true,null]}"));
    sv_json_writer_free(&w);

    /* bytes that are not UTF-8 (a file name in another encoding) are written as the text \xHH:
     * the output stays valid JSON, which the parser reads back; valid sequences pass as they are */
    sv_json_writer_init(&w, 0);
    sv_json_str(&w, "bad\xff.jpg \xc3\xa9 \xe2\x82 \xf0\x9f\x98\x80 \xc0\xaf");
    CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
    CHECK(!strcmp(text, "\"bad\\\\xFF.jpg \xc3\xa9 \\\\xE2\\\\x82 \xf0\x9f\x98\x80 \\\\xC0\\\\xAF\""));
    sv_json_doc back;
    CHECK_OK(sv_json_parse(&back, text, strlen(text), "written", NULL));
    CHECK(back.root.type == SV_JSON_STRING &&
          !strcmp(back.root.u.str.s, "bad\\xFF.jpg \xc3\xa9 \\xE2\\x82 \xf0\x9f\x98\x80 \\xC0\\xAF"));
    sv_json_doc_free(&back);
    sv_json_writer_free(&w);

    /* pretty output parses back to the same thing */
    sv_json_writer_init(&w, 2);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "a");
    sv_json_arr_begin(&w);
    sv_json_arr_end(&w);
    sv_json_key(&w, "b");
    sv_json_i64(&w, 1);
    sv_json_obj_end(&w);
    CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
    CHECK(!strcmp(text, "{\n  \"a\": [],\n  \"b\": 1\n}"));
    sv_json_writer_free(&w);

    /* misuse is reported, not silently written */
    sv_json_writer_init(&w, 0);
    sv_json_obj_begin(&w);
    sv_json_i64(&w, 1);
    CHECK_FAILS(sv_json_writer_finish(&w, &text, NULL), SV_ERR_INVALID, "without a key");
    sv_json_writer_free(&w);
    sv_json_writer_init(&w, 0);
    sv_json_arr_begin(&w);
    CHECK_FAILS(sv_json_writer_finish(&w, &text, NULL), SV_ERR_INVALID, "incomplete");
    sv_json_arr_end(&w);
    sv_json_arr_end(&w);
    CHECK_FAILS(sv_json_writer_finish(&w, &text, NULL), SV_ERR_INVALID, "unbalanced");
    sv_json_writer_free(&w);
    sv_json_writer_init(&w, 0);
    sv_json_i64(&w, 1);
    sv_json_i64(&w, 2);
    CHECK_FAILS(sv_json_writer_finish(&w, &text, NULL), SV_ERR_INVALID, "second top-level");
    sv_json_writer_free(&w);
}

/* Any byte string must be safe: mutate valid documents (flip, insert, delete, truncate) and
 * parse random bytes. Run under ASan/UBSan this is a small fuzz pass. */
static void test_mutations(void) {
    const char *seeds[] = {
        "{\"a\":[1,2.5e-3,-0,\"\\ud83d\\ude00\"],\"b\":{\"c\":null,\"d\":true}}",
        "[\"\\u00e9\\n\",{\"x\":[[[]]]},9223372036854775807,1e308]",
        "{\"t\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}",
    };
    uint64_t rs = 12345;
    char buf[256];
    size_t parsed_ok = 0;
    for (int it = 0; it < 30000; it++) {
        const char *seed = seeds[it % 3];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        int edits = 1 + (int)(fmt_rand(&rs) % 4);
        for (int e = 0; e < edits; e++) {
            uint64_t r = fmt_rand(&rs);
            size_t pos = n ? (size_t)(r % n) : 0;
            switch ((r >> 32) % 4) {
            case 0:
                if (n) buf[pos] = (char)(r >> 40);
                break;
            case 1:
                if (n < sizeof buf - 1) {
                    memmove(buf + pos + 1, buf + pos, n - pos);
                    buf[pos] = "[]{}\",:\\u0e-"[(r >> 48) % 13];
                    n++;
                }
                break;
            case 2:
                if (n) {
                    memmove(buf + pos, buf + pos + 1, n - pos - 1);
                    n--;
                }
                break;
            case 3: n = pos; break;
            }
        }
        sv_json_doc d;
        if (sv_json_parse(&d, buf, n, "fuzz", NULL) == SV_OK) {
            parsed_ok++;
            roundtrip(&d, it & 1);
        } else {
            CHECK(strstr(sv_err_msg(), "JSON error at byte"));
        }
        sv_json_doc_free(&d);
    }
    for (int it = 0; it < 5000; it++) {
        size_t n = (size_t)(fmt_rand(&rs) % sizeof buf);
        for (size_t k = 0; k < n; k++) buf[k] = (char)fmt_rand(&rs);
        sv_json_doc d;
        (void)sv_json_parse(&d, buf, n, "fuzz", NULL);
        sv_json_doc_free(&d);
    }
    CHECK(parsed_ok > 100); /* some mutations stay valid and round-trip */
}

/* sv_json_file_has_members: a JSON object file holding every key (of the given types, if any);
 * anything else is no match and leaves no error state */
static void test_file_members(void) {
    char dir[256], p[512];
    fmt_tmpdir(dir, sizeof dir, "jsonfile");
    static const char *const keys[] = {"top1", "num_samples"};
    snprintf(p, sizeof p, "%s/eval.json", dir);
    static const char full[] = "{\"top1\": 0.9, \"num_samples\": 10, \"x\": [1]}";
    CHECK_OK(sv_fileio_write_atomic(p, full, strlen(full)));
    CHECK(sv_json_file_has_members(p, 1 << 20, keys, NULL, 2));
    CHECK(sv_json_file_has_members(p, 1 << 20, keys, NULL, 0));
    CHECK(!sv_json_file_has_members(p, 8, keys, NULL, 2)); /* over the size limit */
    static const sv_json_type num2[] = {SV_JSON_NUMBER, SV_JSON_NUMBER}, str2[] = {SV_JSON_NUMBER, SV_JSON_STRING};
    CHECK(sv_json_file_has_members(p, 1 << 20, keys, num2, 2));
    CHECK(!sv_json_file_has_members(p, 1 << 20, keys, str2, 2)); /* num_samples is not a string */
    static const char one[] = "{\"top1\": 0.9}";
    CHECK_OK(sv_fileio_write_atomic(p, one, strlen(one)));
    CHECK(sv_json_file_has_members(p, 1 << 20, keys, NULL, 1));
    CHECK(!sv_json_file_has_members(p, 1 << 20, keys, NULL, 2));
    static const char arr[] = "[\"top1\", \"num_samples\"]";
    CHECK_OK(sv_fileio_write_atomic(p, arr, strlen(arr)));
    CHECK(!sv_json_file_has_members(p, 1 << 20, keys, NULL, 0)); /* not an object */
    static const char bad[] = "{\"top1\": 0.9, \"num_samples\": }";
    CHECK_OK(sv_fileio_write_atomic(p, bad, strlen(bad)));
    CHECK(!sv_json_file_has_members(p, 1 << 20, keys, NULL, 1)); /* not JSON */
    CHECK(!sv_json_file_has_members(dir, 1 << 20, keys, NULL, 0));
    CHECK(unlink(p) == 0);
    CHECK(!sv_json_file_has_members(p, 1 << 20, keys, NULL, 0)); /* missing */
    CHECK(!*sv_err_msg());
    fmt_rmdir(dir);
}

int main(void) {
    test_file_members();
    test_values();
    test_doubles();
    test_rejects();
    test_paths();
    test_writer();
    test_mutations();
    printf("test_json: ok\n");
    return 0;
}
