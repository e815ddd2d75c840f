/* The --trace merge of train, bench and plan (app/trace_merge.c) against the merge it replaced
 * (core/trace.c sv_trace_merge): the same parts give the same bytes (parts larger than the copy
 * buffer included); the parts are removed, no temporary is left, and an earlier trace at the path
 * is replaced by a new file (renamed over it), which sv_trace_is_merged recognises. A merge that
 * stops part-way (a missing part; a full disk, by the write-fault injection of core/fileio.h)
 * leaves the earlier trace byte for byte and no temporary (the merge it replaced truncated the
 * earlier trace first, so such a stop left a damaged file). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/trace_merge.h"
#include "check.h"
#include "core/fileio.h"
#include "core/trace.h"

static char g_dir[] = "/tmp/sv_trace_merge_XXXXXX";

static void put(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(text, 1, n, f) == n && fclose(f) == 0);
}

static char *get(const char *path, size_t *n) {
    char *text;
    CHECK_OK(sv_fileio_read_small(path, (size_t)1 << 24, &text, n));
    return text;
}

static int exists(const char *p) {
    struct stat sb;
    return lstat(p, &sb) == 0;
}

/* Parts of `world` ranks for the trace at path: part r is `sizes[r]` bytes of event-like text. */
static void write_parts(const char *path, int world, const size_t *sizes) {
    char part[600];
    for (int r = 0; r < world; r++) {
        char *t = malloc(sizes[r] + 1);
        CHECK(t);
        for (size_t i = 0; i < sizes[r]; i++) t[i] = (char)('a' + (i * 7 + (size_t)r * 3) % 26);
        if (sizes[r]) t[0] = '{', t[sizes[r] - 1] = '}';
        snprintf(part, sizeof part, "%s.rank%d", path, r);
        put(part, t, sizes[r]);
        free(t);
    }
}

/* Nothing in the directory but the names given (no part, no temporary). */
static void only(const char *a, const char *b) {
    DIR *d = opendir(g_dir);
    CHECK(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if ((a && !strcmp(e->d_name, a)) || (b && !strcmp(e->d_name, b))) continue;
        fprintf(stderr, "left in %s: %s\n", g_dir, e->d_name);
        CHECK(0);
    }
    closedir(d);
}

int main(void) {
    CHECK(mkdtemp(g_dir));
    char ref[512], out[512];
    snprintf(ref, sizeof ref, "%s/ref.json", g_dir);
    snprintf(out, sizeof out, "%s/trace.json", g_dir);
    /* the same parts through both merges: byte-identical (70000 bytes: more than one copy buffer) */
    static const size_t sizes[][3] = {{40, 0, 0}, {1, 70000, 3}, {65536, 65537, 131072}};
    static const int worlds[] = {1, 3, 3};
    for (int c = 0; c < 3; c++) {
        write_parts(ref, worlds[c], sizes[c]);
        CHECK_OK(sv_trace_merge(ref, worlds[c]));
        write_parts(out, worlds[c], sizes[c]);
        CHECK_OK(sv_app_trace_merge(out, worlds[c]));
        size_t n1, n2;
        char *a = get(ref, &n1), *b = get(out, &n2);
        printf("world %d: %zu bytes, %s\n", worlds[c], n2, n1 == n2 && !memcmp(a, b, n1) ? "identical" : "DIFFERENT");
        CHECK(n1 == n2 && !memcmp(a, b, n1));
        free(a);
        free(b);
        CHECK(sv_trace_is_merged(out, NULL));
        only("ref.json", "trace.json");
    }
    /* an earlier trace is replaced by a new file */
    struct stat s0, s1;
    CHECK(stat(out, &s0) == 0);
    write_parts(out, 2, sizes[1]);
    CHECK_OK(sv_app_trace_merge(out, 2));
    CHECK(stat(out, &s1) == 0 && s1.st_ino != s0.st_ino);
    only("ref.json", "trace.json");

    size_t en;
    char *earlier = get(out, &en);
    /* a missing part: an error naming it; the earlier trace whole, no temporary; the part read
     * before it is removed, the one after it stays (it was never looked at) */
    write_parts(out, 3, sizes[1]);
    char part[600];
    snprintf(part, sizeof part, "%s.rank1", out);
    CHECK(unlink(part) == 0);
    sv_status st = sv_app_trace_merge(out, 3);
    printf("missing part: %s\n", sv_err_msg());
    CHECK(st == SV_ERR_NOT_FOUND && strstr(sv_err_msg(), part));
    size_t n;
    char *now = get(out, &n);
    CHECK(n == en && !memcmp(now, earlier, en));
    free(now);
    snprintf(part, sizeof part, "%s.rank2", out);
    CHECK(exists(part) && unlink(part) == 0);
    only("ref.json", "trace.json");
    /* the disk full after 50000 bytes of the merged trace (core/fileio.h's write-fault injection):
     * an error, the earlier trace whole, no temporary, and no part left to refuse the next run */
    write_parts(out, 3, sizes[2]);
    sv_fileio_inject_write_fault(50000);
    st = sv_app_trace_merge(out, 3);
    sv_fileio_inject_write_fault(-1);
    printf("disk full: %s\n", sv_err_msg());
    CHECK(st != SV_OK && strstr(sv_err_msg(), "No space left on device"));
    now = get(out, &n);
    CHECK(n == en && !memcmp(now, earlier, en));
    free(now);
    only("ref.json", "trace.json");
    free(earlier);
    CHECK(unlink(out) == 0 && unlink(ref) == 0 && rmdir(g_dir) == 0);
    printf("trace merge: all passed\n");
    return 0;
}
