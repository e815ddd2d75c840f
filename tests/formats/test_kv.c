/* core/kv: "key = value" lines. Every byte string written by sv_kv_write_str reads back
 * unchanged (quotes, '#', backslashes, line breaks, control characters, UTF-8; random strings
 * too); comments after values, literal and bare values, TOML escapes; each malformed line is
 * refused with its message; sv_kv_file_get on a real file ('_' and '-' in keys as one). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/kv.h"
#include "fmt_util.h"

/* Write key = value with sv_kv_write_str and parse it back. */
static void round_trip(const char *value) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    CHECK(m);
    sv_kv_write_str(m, "out", value);
    CHECK(fclose(m) == 0);
    CHECK(len > 0 && buf[len - 1] == '\n');
    buf[len - 1] = 0;
    CHECK(!strchr(buf, '\n')); /* one line, whatever the value holds */
    char *k, *v;
    const char *err = NULL;
    CHECK(sv_kv_parse_line(buf, &k, &v, &err) == 1);
    CHECK(!strcmp(k, "out"));
    if (strcmp(v, value)) {
        fprintf(stderr, "round trip changed the value: wrote [%s], read [%s]\n", value, v);
        exit(1);
    }
    free(buf);
}

/* Parse a literal line; expect key/value or an error containing want_err. */
static void parse(const char *line, const char *want_key, const char *want_value, const char *want_err) {
    char *s = strdup(line), *k = NULL, *v = NULL;
    const char *err = NULL;
    int r = sv_kv_parse_line(s, &k, &v, &err);
    if (want_err) {
        if (r != -1 || !err || !strstr(err, want_err)) {
            fprintf(stderr, "line [%s]: expected an error with '%s', got %d (%s)\n", line, want_err, r,
                    err ? err : "no error");
            exit(1);
        }
    } else if (!want_key) {
        CHECK(r == 0);
    } else if (r != 1 || strcmp(k, want_key) || strcmp(v, want_value)) {
        fprintf(stderr, "line [%s]: expected [%s] = [%s], got %d [%s] = [%s] (%s)\n", line, want_key, want_value, r,
                k ? k : "", v ? v : "", err ? err : "");
        exit(1);
    }
    free(s);
}

int main(void) {
    /* values config.toml must read back */
    static const char *const values[] = {"",
                                         "vit-28",
                                         "/data/run#1",
                                         "a\"b",
                                         "x\" # y",
                                         "/tmp/c\"w#d/ck3",
                                         "back\\slash\\n",
                                         "line\nbreak\r\ttab",
                                         "\x01\x1b[31mred\x7f",
                                         "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                         "'single'",
                                         "  padded  "};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) round_trip(values[i]);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int t = 0; t < 2000; t++) { /* random byte strings (no NUL) */
        char s[40];
        int n = (int)(t % 39);
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[i] = (char)(1 + x % 255);
        }
        s[n] = 0;
        round_trip(s);
    }

    /* blank and comment lines; bare, quoted and literal values; comments after them */
    parse("", NULL, NULL, NULL);
    parse("   # a comment with = and \"quotes\"", NULL, NULL, NULL);
    parse("depth = 1", "depth", "1", NULL);
    parse("  lr=0.1   # peak", "lr", "0.1", NULL);
    parse("model = \"vit-s16\" # or \"vit-b16\"", "model", "vit-s16", NULL);
    parse("data = '/d' # 'old'", "data", "/d", NULL);
    parse("data = 'C:\\raw\\path'", "data", "C:\\raw\\path", NULL);
    parse("key=\"v\"#c", "key", "v", NULL);
    parse("key = \"\"", "key", "", NULL);
    parse("key = a\"b\"", "key", "a\"b\"", NULL);
    parse("key = \"\\u00e9\\U0001F600\\t\"", "key", "\xc3\xa9\xf0\x9f\x98\x80\t", NULL);
    parse("key = \"v\"\r", "key", "v", NULL); /* CRLF line endings */
    parse("key = v\r", "key", "v", NULL);
    /* malformed lines */
    parse("[train]", NULL, NULL, "table headers");
    parse("no equals sign", NULL, NULL, "expected 'key = value'");
    parse("# = 1", NULL, NULL, NULL); /* a comment */
    parse("a # = 1", NULL, NULL, "expected 'key = value'");
    parse(" = 1", NULL, NULL, "the key is empty");
    parse("key = \"open", NULL, NULL, "no closing quote");
    parse("key = 'open", NULL, NULL, "no closing quote");
    parse("key = \"a\" junk", NULL, NULL, "only a comment may follow");
    parse("key = \"a\" \"b\"", NULL, NULL, "only a comment may follow");
    parse("key = \"bad \\q escape\"", NULL, NULL, "unknown escape");
    parse("key = \"\\u12\"", NULL, NULL, "4 hex digits");
    parse("key = \"\\uD800\"", NULL, NULL, "surrogate");
    parse("key = \"\\u0000\"", NULL, NULL, "NUL");
    parse("key = \"\\U00110000\"", NULL, NULL, "above U+10FFFF");

    /* a file: values read back, a missing key is not found, a key given twice (TOML forbids it)
     * is an error naming both lines, a bad line names the line */
    char dir[256], p[512], out[64];
    fmt_tmpdir(dir, sizeof dir, "kv");
    snprintf(p, sizeof p, "%s/config.toml", dir);
    FILE *f = fopen(p, "w");
    CHECK(f);
    fputs("# run\nmodel = \"vit-28\"\n", f);
    sv_kv_write_str(f, "ckpt-dir", "/runs/a#\"b\n");
    CHECK(fclose(f) == 0);
    int found = 0;
    CHECK_OK(sv_kv_file_get(p, "ckpt-dir", out, sizeof out, &found));
    CHECK(found && !strcmp(out, "/runs/a#\"b\n"));
    CHECK_OK(sv_kv_file_get(p, "model", out, sizeof out, &found));
    CHECK(found && !strcmp(out, "vit-28"));
    CHECK_OK(sv_kv_file_get(p, "steps", out, sizeof out, &found));
    CHECK(!found);
    CHECK_FAILS(sv_kv_file_get(p, "model", out, 4, &found), SV_ERR_INVALID, "config.toml:2", "longer than 3 bytes");
    f = fopen(p, "a");
    CHECK(f);
    sv_kv_write_str(f, "model", "vit-32");
    CHECK(fclose(f) == 0);
    CHECK_FAILS(sv_kv_file_get(p, "model", out, sizeof out, &found), SV_ERR_FORMAT, "config.toml:4",
                "key 'model' repeats the one on line 2");
    CHECK_OK(sv_kv_file_get(p, "ckpt-dir", out, sizeof out, &found));
    CHECK(found);
    f = fopen(p, "a");
    CHECK(f && fputs("steps = \"12\n", f) >= 0 && fclose(f) == 0);
    CHECK_FAILS(sv_kv_file_get(p, "ckpt-dir", out, sizeof out, &found), SV_ERR_FORMAT, "config.toml:5",
                "no closing quote");
    /* '_' and '-' in keys are one character, as --config reads them: an edited config.toml with
     * ckpt_dir is read by every reader (the resume guard and report missed it), and both
     * spellings in one file are the key given twice */
    snprintf(p, sizeof p, "%s/edited.toml", dir);
    f = fopen(p, "w");
    CHECK(f && fputs("ckpt_dir = \"/ck\"\nbatch-size = 8\n", f) >= 0 && fclose(f) == 0);
    CHECK_OK(sv_kv_file_get(p, "ckpt-dir", out, sizeof out, &found));
    CHECK(found && !strcmp(out, "/ck"));
    CHECK_OK(sv_kv_file_get(p, "batch_size", out, sizeof out, &found));
    CHECK(found && !strcmp(out, "8"));
    CHECK_OK(sv_kv_file_get(p, "ckpt-di", out, sizeof out, &found));
    CHECK(!found);
    f = fopen(p, "a");
    CHECK(f && fputs("ckpt-dir = \"/other\"\n", f) >= 0 && fclose(f) == 0);
    CHECK_FAILS(sv_kv_file_get(p, "ckpt-dir", out, sizeof out, &found), SV_ERR_FORMAT, "edited.toml:3",
                "repeats the one on line 1");
    fmt_rmdir(dir);
    printf("test_kv: ok\n");
    return 0;
}
