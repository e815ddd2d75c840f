/* Shared helpers for the fuzz targets (libFuzzer entry points, also replayed by replay_main.c).
 *
 * Parsers that take a path are fed through a file in a per-process scratch directory (under
 * $TMPDIR or /tmp, removed at exit). Library chatter (usage errors printed by the flag parser,
 * log lines) goes to stdio's stdout/stderr streams; fuzz_quiet() points those streams at
 * /dev/null while file descriptors 1 and 2 stay open, so sanitizer and libFuzzer reports still
 * reach the terminal. */
#ifndef SV_TESTS_FUZZ_UTIL_H
#define SV_TESTS_FUZZ_UTIL_H

#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_quiet(void) {
    static int done;
    if (done) return;
    done = 1;
    FILE *null_out = fopen("/dev/null", "w");
    if (null_out) {
        stdout = null_out;
        stderr = null_out;
    }
}

static inline int fuzz_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(p);
    return 0;
}

static char fuzz_dir_path[512];

static inline void fuzz_dir_cleanup(void) {
    if (fuzz_dir_path[0]) nftw(fuzz_dir_path, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's scratch directory (created on first use). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_path[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/svfuzz.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_dir_path)) abort();
        atexit(fuzz_dir_cleanup);
    }
    return fuzz_dir_path;
}

/* Path of `name` inside the scratch directory (static buffer per call site is not needed:
 * the caller passes its own). */
static inline void fuzz_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", fuzz_dir(), name); }

/* Replace file `path` with exactly `n` bytes. */
static inline void fuzz_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    if (fclose(f) != 0) abort();
}

/* Remove everything below `path` (the directory itself included). */
static inline void fuzz_rm_tree(const char *path) { nftw(path, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Little reader over the fuzz input for targets that split it into parts. */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in;

static inline uint8_t fuzz_u8(fuzz_in *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static inline uint16_t fuzz_u16(fuzz_in *in) {
    uint16_t lo = fuzz_u8(in);
    return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

/* Take up to `want` bytes. */
static inline const uint8_t *fuzz_take(fuzz_in *in, size_t want, size_t *got) {
    *got = want < in->n ? want : in->n;
    const uint8_t *p = in->p;
    in->p += *got;
    in->n -= *got;
    return p;
}

#endif
