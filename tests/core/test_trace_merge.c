/* The --trace merge of train, bench and plan (core/trace.c sv_trace_merge): parts give the
 * expected bytes (the merged head, the parts joined by ",\n", the tail; parts larger than the copy
 * buffer included); the parts are removed, no temporary is left, and an earlier trace at the path
 * is replaced by a new file (renamed over it), which sv_trace_is_merged recognises. A merge that
 * stops part-way (a missing part; a full disk, by the write-fault injection of core/fileio.h)
 * leaves the earlier trace byte for byte and no temporary (a merge that truncated the earlier
 * trace first left a damaged file). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Parts of `world` ranks for the trace at path: part r is `sizes[r]` bytes of event-like text.
 * Returns the merged trace they make (*n bytes; the caller frees it). */
static char *write_parts(const char *path, int world, const size_t *sizes, size_t *n) {
    static const char head[] = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", tail[] = "\n]}\n";
    size_t cap = sizeof head + sizeof tail + 2 * (size_t)world;
    for (int r = 0; r < world; r++) cap += sizes[r];
    char *want = malloc(cap), part[600];
    CHECK(want);
    memcpy(want, head, sizeof head - 1);
    *n = sizeof head - 1;
    for (int r = 0; r < world; r++) {
        char *t = want + *n + (r ? 2 : 0);
        if (r) memcpy(want + *n, ",\n", 2);
        for (size_t i = 0; i < sizes[r]; i++) t[i] = (char)('a' + (i * 7 + (size_t)r * 3) % 26);
        if (sizes[r]) t[0] = '{', t[sizes[r] - 1] = '}';
        snprintf(part, sizeof part, "%s.rank%d", path, r);
        put(part, t, sizes[r]);
        *n += sizes[r] + (r ? 2 : 0);
    }
    memcpy(want + *n, tail, sizeof tail - 1);
    *n += sizeof tail - 1;
    return want;
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
    char out[512];
    snprintf(out, sizeof out, "%s/trace.json", g_dir);
    /* the expected bytes (70000 bytes: more than one copy buffer) */
    static const size_t sizes[][3] = {{40, 0, 0}, {1, 70000, 3}, {65536, 65537, 131072}};
    static const int worlds[] = {1, 3, 3};
    size_t wn;
    for (int c = 0; c < 3; c++) {
        char *want = write_parts(out, worlds[c], sizes[c], &wn);
        CHECK_OK(sv_trace_merge(out, worlds[c]));
        size_t n2;
        char *b = get(out, &n2);
        printf("world %d: %zu bytes, %s\n", worlds[c], n2,
               wn == n2 && !memcmp(want, b, wn) ? "as expected" : "DIFFERENT");
        CHECK(wn == n2 && !memcmp(want, b, wn));
        free(want);
        free(b);
        CHECK(sv_trace_is_merged(out, NULL));
        only("trace.json", NULL);
    }
    /* an earlier trace is replaced by a new file */
    struct stat s0, s1;
    CHECK(stat(out, &s0) == 0);
    free(write_parts(out, 2, sizes[1], &wn));
    CHECK_OK(sv_trace_merge(out, 2));
    CHECK(stat(out, &s1) == 0 && s1.st_ino != s0.st_ino);
    only("trace.json", NULL);

    size_t en;
    char *earlier = get(out, &en);
    /* a missing part: an error naming it; the earlier trace whole, no temporary; the parts before
     * and after it are removed (a part left would refuse the next --trace) */
    free(write_parts(out, 3, sizes[1], &wn));
    char part[600];
    snprintf(part, sizeof part, "%s.rank1", out);
    CHECK(unlink(part) == 0);
    sv_status st = sv_trace_merge(out, 3);
    printf("missing part: %s\n", sv_err_msg());
    CHECK(st == SV_ERR_NOT_FOUND && strstr(sv_err_msg(), part));
    size_t n;
    char *now = get(out, &n);
    CHECK(n == en && !memcmp(now, earlier, en));
    free(now);
    only("trace.json", NULL);
    /* a FIFO in place of part 1 (not a file of this run): named, left as it is, the others go */
    free(write_parts(out, 3, sizes[0], &wn));
    snprintf(part, sizeof part, "%s.rank1", out);
    CHECK(unlink(part) == 0 && mkfifo(part, 0600) == 0);
    st = sv_trace_merge(out, 3);
    printf("FIFO part: %s\n", sv_err_msg());
    CHECK(st == SV_ERR_INVALID && strstr(sv_err_msg(), part));
    now = get(out, &n);
    CHECK(n == en && !memcmp(now, earlier, en));
    free(now);
    CHECK(exists(part) && unlink(part) == 0);
    only("trace.json", NULL);
    /* the disk full after 50000 bytes of the merged trace (core/fileio.h's write-fault injection):
     * an error, the earlier trace whole, no temporary, and no part left to refuse the next run */
    free(write_parts(out, 3, sizes[2], &wn));
    sv_fileio_inject_write_fault(50000);
    st = sv_trace_merge(out, 3);
    sv_fileio_inject_write_fault(-1);
    printf("disk full: %s\n", sv_err_msg());
    CHECK(st != SV_OK && strstr(sv_err_msg(), "No space left on device"));
    now = get(out, &n);
    CHECK(n == en && !memcmp(now, earlier, en));
    free(now);
    only("trace.json", NULL);
    free(earlier);
    CHECK(unlink(out) == 0 && rmdir(g_dir) == 0);
    printf("trace merge: all passed\n");
    return 0;
}
