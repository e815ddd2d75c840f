/* A small tar writer for the data tests (test_data_tar.c, test_data_sources.c): ustar headers
 * (POSIX or GNU magic, a prefix, a link target), regular members (long names through a pax
 * path= record), pax extended headers and the end-of-archive blocks, written to real files.
 * Include after check.h. */
#ifndef SV_TESTS_DATA_TAR_WRITE_H
#define SV_TESTS_DATA_TAR_WRITE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline void put_file(const char *p, const void *d, size_t n) {
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(d, 1, n, f) == n);
    fclose(f);
}

/* A member header. magic: "ustar\0" "00" (POSIX) or "ustar  \0" (GNU); prefix: the 155 bytes at
 * 345 (POSIX: a path prefix; GNU incremental: atime and ctime); link: the link target. */
typedef struct {
    const char *magic, *prefix, *link;
} hdr_opts;

static inline void hdr_x(FILE *f, const char *name, size_t size, char type, const hdr_opts *o) {
    uint8_t h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size % 0100000000000ull); /* 11 octal digits */
    h[156] = (uint8_t)type;
    if (o && o->link) snprintf((char *)h + 157, 100, "%s", o->link);
    if (o && o->magic) {
        memcpy(h + 257, o->magic, 8);
    } else { /* magic "ustar\0", version "00" */
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
    }
    if (o && o->prefix) snprintf((char *)h + 345, 155, "%s", o->prefix);
    memset(h + 148, ' ', 8);
    unsigned s = 0;
    for (int i = 0; i < 512; i++) s += h[i];
    snprintf((char *)h + 148, 8, "%06o", s);
    CHECK(fwrite(h, 1, 512, f) == 512);
}
static inline void pad(FILE *f, size_t n) {
    static const uint8_t z[512];
    CHECK(fwrite(z, 1, (512 - n % 512) % 512, f) == (512 - n % 512) % 512);
}
static inline void pax(FILE *f, const char *kv);
/* one regular member; a name of 100 bytes or more goes into a pax path= record before it */
static inline void member_x(FILE *f, const char *name, const void *d, size_t n, const hdr_opts *o) {
    if (strlen(name) >= 100) {
        char kv[4200];
        snprintf(kv, sizeof kv, "path=%s", name);
        pax(f, kv);
        hdr_x(f, "truncated-name-placeholder", n, '0', o);
    } else
        hdr_x(f, name, n, '0', o);
    CHECK(fwrite(d, 1, n, f) == n);
    pad(f, n);
}
static inline void member(FILE *f, const char *name, const void *d, size_t n) { member_x(f, name, d, n, NULL); }
static inline void text(FILE *f, const char *name, const char *t) { member(f, name, t, strlen(t)); }
/* a pax extended header ('x') holding one record "key=value" */
static inline void pax(FILE *f, const char *kv) {
    char rec[4400];
    size_t body = strlen(kv) + 2, len = body + 1;
    while ((size_t)snprintf(NULL, 0, "%zu", len) + body != len) len++;
    int rl = snprintf(rec, sizeof rec, "%zu %s\n", len, kv);
    CHECK((size_t)rl == len);
    hdr_x(f, "PaxHeader", len, 'x', NULL);
    CHECK(fwrite(rec, 1, len, f) == len);
    pad(f, len);
}
static inline void finish(FILE *f) {
    static const uint8_t z[1024];
    CHECK(fwrite(z, 1, 1024, f) == 1024);
    CHECK(fclose(f) == 0);
}
#endif
