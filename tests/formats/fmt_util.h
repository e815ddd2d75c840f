/* Helpers shared by the tests in tests/formats: scratch directories and message checks. */
#ifndef SV_TESTS_FORMATS_FMT_UTIL_H
#define SV_TESTS_FORMATS_FMT_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/fileio.h"

/* A fresh directory under $TMPDIR (or /tmp); removed by fmt_rmdir. */
static inline void fmt_tmpdir(char *buf, size_t cap, const char *tag) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, cap, "%s/sv_%s_XXXXXX", base && *base ? base : "/tmp", tag);
    CHECK(mkdtemp(buf) != NULL);
}

static inline void fmt_rmdir(const char *dir) { CHECK_OK(sv_fileio_remove_tree(dir)); }

/* Assert that `expr` fails with status `code` and that the message contains every one of the
 * given substrings (NULL-terminated list). */
#define CHECK_FAILS(expr, code, ...) \
    do { \
        sv_err_clear(); \
        sv_status cf_s_ = (expr); \
        const char *cf_want_[] = {__VA_ARGS__, NULL}; \
        if (cf_s_ != (code)) { \
            fprintf(stderr, "CHECK_FAILS: %s returned %s (wanted %s): %s (%s:%d)\n", #expr, sv_status_str(cf_s_), \
                    sv_status_str(code), sv_err_msg(), __FILE__, __LINE__); \
            exit(1); \
        } \
        for (int cf_i_ = 0; cf_want_[cf_i_]; cf_i_++) \
            if (!strstr(sv_err_msg(), cf_want_[cf_i_])) { \
                fprintf(stderr, "CHECK_FAILS: message \"%s\" lacks \"%s\" (%s:%d)\n", sv_err_msg(), cf_want_[cf_i_], \
                        __FILE__, __LINE__); \
                exit(1); \
            } \
    } while (0)

/* Tiny deterministic generator for tests (splitmix64). */
static inline uint64_t fmt_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
