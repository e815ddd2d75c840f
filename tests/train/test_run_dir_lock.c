/* app/run_dir.c's lock (docs/checkpoints.md "Run directory"): one run at a time holds a run
 * directory, also across a refused start that removes the marker it made (sv_run_dir_unlock with
 * failed = 1). flock is wrapped (-Wl,--wrap=flock) so that run A's refused release happens at the
 * worst moment for run B: after B opened the marker, before B's flock. B must then lock the marker
 * file that is at the path afterwards (the one run C sees), never the removed one: B and C may not
 * both hold the directory. Also: a refused start removes only a marker and directories it made,
 * and only while nothing else is in them; a directory holding anything else is kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/run_dir.h"
#include "check.h"

int __real_flock(int fd, int op);
static sv_run_lock A = SV_RUN_LOCK_NONE;
static int release_a_before_next_flock;

int __wrap_flock(int fd, int op) {
    if (release_a_before_next_flock) {
        release_a_before_next_flock = 0;
        sv_run_dir_unlock(&A, 1); /* refused: removes the marker it made, while B has it open */
    }
    return __real_flock(fd, op);
}

static int exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

/* The first bytes of a small file, NUL-terminated (a static buffer). */
static const char *read_text(const char *path) {
    static char buf[400];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

int main(void) {
    char tmpl[] = "/tmp/sv_run_lock_XXXXXX";
    char *root = mkdtemp(tmpl);
    CHECK(root);
    char dir[512], marker[600], other[600];
    snprintf(dir, sizeof dir, "%s/made/run", root);
    snprintf(marker, sizeof marker, "%s/%s", dir, SV_RUN_DIR_MARKER);

    /* 1. the race: A holds the lock it made; B opens the marker; A is refused and removes it */
    static sv_run_lock B = SV_RUN_LOCK_NONE, C = SV_RUN_LOCK_NONE;
    CHECK_OK(sv_run_dir_lock(dir, &A));
    release_a_before_next_flock = 1;
    CHECK_OK(sv_run_dir_lock(dir, &B));
    CHECK(!release_a_before_next_flock); /* the release happened inside B's locking */
    CHECK(exists(marker));               /* B holds the marker at the path (made again) */
    sv_status sc = sv_run_dir_lock(dir, &C);
    fprintf(stderr, "C while B holds the directory: %s\n", sc == SV_OK ? "LOCKED" : sv_err_msg());
    CHECK(sc != SV_OK && strstr(sv_err_msg(), "in use by another training"));
    sv_err_clear();
    sv_run_dir_unlock(&B, 0); /* a run that went through keeps its directory */
    CHECK(exists(marker));

    /* 2. a refused start in a directory it made: marker and made directories go, up to the root */
    char fresh[512], fresh_marker[600];
    snprintf(fresh, sizeof fresh, "%s/new/a/b", root);
    snprintf(fresh_marker, sizeof fresh_marker, "%s/%s", fresh, SV_RUN_DIR_MARKER);
    static sv_run_lock D = SV_RUN_LOCK_NONE;
    CHECK_OK(sv_run_dir_lock(fresh, &D));
    CHECK(exists(fresh_marker));
    sv_run_dir_unlock(&D, 1);
    snprintf(other, sizeof other, "%s/new", root);
    CHECK(!exists(other));

    /* 3. ... but not when something else is in it (a run's records, a user's file) */
    CHECK_OK(sv_run_dir_lock(fresh, &D));
    snprintf(other, sizeof other, "%s/metrics.jsonl", fresh);
    FILE *f = fopen(other, "w");
    CHECK(f && fclose(f) == 0);
    sv_run_dir_unlock(&D, 1);
    CHECK(exists(fresh_marker) && exists(other));

    /* 4. a refused start in an existing directory with a marker it did not make: nothing removed,
     * and the marker's text is the earlier run's again, byte for byte (a refused start changes
     * nothing); a run that went through leaves its own text */
    static const char earlier[] = "pid 1 on elsewhere since 2026-01-01T00:00:00Z\n";
    f = fopen(marker, "w");
    CHECK(f && fputs(earlier, f) >= 0 && fclose(f) == 0);
    static sv_run_lock E = SV_RUN_LOCK_NONE;
    CHECK_OK(sv_run_dir_lock(dir, &E));
    CHECK(strcmp(read_text(marker), earlier) != 0); /* the lock's own text while it holds it */
    sv_run_dir_unlock(&E, 1);
    CHECK(exists(marker) && !strcmp(read_text(marker), earlier));
    CHECK_OK(sv_run_dir_lock(dir, &E));
    sv_run_dir_unlock(&E, 0);
    CHECK(strncmp(read_text(marker), "pid ", 4) == 0 && strcmp(read_text(marker), earlier) != 0);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    printf("test_run_dir_lock: ok\n");
    return 0;
}
