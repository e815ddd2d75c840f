/* core/fileio: atomic replace (incl. a simulated full disk leaving the old file intact),
 * truncation errors naming file and range, mkdir -p, rm -r that never follows symlinks,
 * size-limited reads, error messages naming path and errno text, a FIFO or device refused by the
 * read path (and by the trace merge, which reads through it) without blocking (alarm guard: a
 * regression fails instead of hanging); the checked arithmetic of core/checked.h; lexical path
 * joins (sv_fileio_lexical_append) and the real path of a partly missing path. Real files in
 * a temp dir; outputs opened for writing never through a link, FIFO or device. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/fileio.h"
#include "core/trace.h"
#include "fmt_util.h"

static int exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void expect_content(const char *path, const char *want) {
    char *buf;
    size_t len;
    CHECK_OK(sv_fileio_read_small(path, 1 << 20, &buf, &len));
    CHECK(len == strlen(want) && !memcmp(buf, want, len) && buf[len] == 0);
    free(buf);
}

/* sv_fileio_dir_lock: one holder at a time (flock is per open file description, so a second
 * lock in this process is another holder), the file gone after the unlock, a missing directory
 * no lock, a waiter whose file the holder removed takes the file now at the name. TMPDIR points
 * into `dir`. */
static void test_dir_lock(const char *dir) {
    alarm(20); /* a lock that is never let go fails the test instead of hanging it */
    char sub[512], lock[PATH_MAX], lock2[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/out", dir);
    CHECK(mkdir(sub, 0755) == 0);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    CHECK(setenv("TMPDIR", dir, 1) == 0);
    int fd = sv_fileio_dir_lock(sub, "test", 0, lock);
    CHECK(fd >= 0 && !strncmp(lock, dir, strlen(dir)) && strstr(lock, "/shardvit-test-") != NULL);
    struct stat st;
    CHECK(stat(lock, &st) == 0 && S_ISREG(st.st_mode));
    CHECK(sv_fileio_dir_lock(sub, "test", 0, lock2) == SV_FILEIO_LOCK_BUSY && !strcmp(lock, lock2));
    int other = sv_fileio_dir_lock(sub, "other", 0, lock2); /* another tag: another lock */
    CHECK(other >= 0);
    sv_fileio_dir_unlock(other, lock2);
    sv_fileio_dir_unlock(fd, lock);
    CHECK(lstat(lock, &st) != 0 && errno == ENOENT);
    /* a waiter whose file is removed (by the holder, as it lets go) takes the file now at the
     * name, not the removed one: a child waits while this process holds the lock */
    fd = sv_fileio_dir_lock(sub, "test", 0, lock);
    CHECK(fd >= 0);
    int up[2], down[2];
    CHECK(pipe(up) == 0 && pipe(down) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char l2[PATH_MAX], ok = '0', x;
        close(fd); /* the parent's lock: flock belongs to the open file, which fork shares */
        int c = sv_fileio_dir_lock(sub, "test", 1, l2);
        struct stat a, b;
        if (c >= 0 && fstat(c, &a) == 0 && stat(l2, &b) == 0 && a.st_ino == b.st_ino) ok = '1';
        if (write(up[1], &ok, 1) != 1 || read(down[0], &x, 1) != 1) _exit(2);
        _exit(0);
    }
    usleep(200 * 1000); /* the child is waiting on the file now */
    struct stat before;
    CHECK(stat(lock, &before) == 0);
    sv_fileio_dir_unlock(fd, lock);
    char got = 0;
    CHECK(read(up[0], &got, 1) == 1 && got == '1'); /* it holds the file at the name */
    struct stat now;
    CHECK(stat(lock, &now) == 0);
    CHECK(sv_fileio_dir_lock(sub, "test", 0, lock2) == SV_FILEIO_LOCK_BUSY);
    CHECK(write(down[1], "x", 1) == 1);
    int wst;
    CHECK(waitpid(child, &wst, 0) == child && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
    CHECK(unlink(lock) == 0); /* the child ended without its unlock */
    /* again after the unlock (a new file), and waiting when nobody holds it */
    fd = sv_fileio_dir_lock(sub, "test", 1, lock);
    CHECK(fd >= 0 && sv_fileio_dir_lock(sub, "test", 0, lock2) == SV_FILEIO_LOCK_BUSY);
    sv_fileio_dir_unlock(fd, lock);
    CHECK(rmdir(sub) == 0);
    CHECK(sv_fileio_dir_lock(sub, "test", 1, lock) == -1); /* no such directory: no lock */
    if (saved) {
        CHECK(setenv("TMPDIR", saved, 1) == 0);
        free(saved);
    } else {
        CHECK(unsetenv("TMPDIR") == 0);
    }
}

/* sv_fileio_is_tmp_name recognises exactly the names of sv_fileio_tmp_dir; sv_fileio_tmp_dir_rebase
 * keeps the suffix, refuses an existing target and leaves `from` in place then. */
static void test_tmp_names(const char *dir) {
    CHECK(sv_fileio_is_tmp_name(".prep.tmp-0a1b2c3d", ".prep"));
    CHECK(!sv_fileio_is_tmp_name(".prep.tmp-0A1B2C3D", ".prep"));  /* %08x: lowercase */
    CHECK(!sv_fileio_is_tmp_name(".prep.tmp-0a1b2c3", ".prep"));   /* 7 digits */
    CHECK(!sv_fileio_is_tmp_name(".prep.tmp-0a1b2c3d0", ".prep")); /* 9 */
    CHECK(!sv_fileio_is_tmp_name(".prep.tmp-my-backup", ".prep"));
    CHECK(!sv_fileio_is_tmp_name(".prep.new.tmp-0a1b2c3d", ".prep")); /* another base */
    CHECK(sv_fileio_is_tmp_name(".prep.new.tmp-0a1b2c3d", ".prep.new"));
    char base[512], from[600], to[600], taken[600];
    snprintf(base, sizeof base, "%s/first", dir);
    CHECK_OK(sv_fileio_tmp_dir(base, from, sizeof from));
    CHECK(sv_fileio_is_tmp_name(strrchr(from, '/') + 1, "first"));
    snprintf(base, sizeof base, "%s/second", dir);
    CHECK_OK(sv_fileio_tmp_dir_rebase(from, base, to, sizeof to));
    struct stat st;
    CHECK(lstat(from, &st) != 0 && lstat(to, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(sv_fileio_is_tmp_name(strrchr(to, '/') + 1, "second") &&
          !strcmp(strrchr(to, '.'), strrchr(from, '.'))); /* the same ".tmp-XXXXXXXX" */
    /* onto an existing name: refused, the directory stays where it was */
    snprintf(base, sizeof base, "%s/third", dir);
    snprintf(taken, sizeof taken, "%s%s", base, strrchr(to, '.'));
    CHECK(mkdir(taken, 0755) == 0);
    CHECK(sv_fileio_tmp_dir_rebase(to, base, from, sizeof from) != SV_OK);
    CHECK(lstat(to, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(rmdir(taken) == 0 && rmdir(to) == 0);
    CHECK(sv_fileio_tmp_dir_rebase("plain-name", base, to, sizeof to) == SV_ERR_INVALID);
}

int main(void) {
    char dir[256], p[512], q[512];
    fmt_tmpdir(dir, sizeof dir, "fileio");
    test_dir_lock(dir);
    test_tmp_names(dir);

    /* a FIFO (no writer) and a character device are refused at once, naming the path */
    alarm(20);
    snprintf(p, sizeof p, "%s/fifo.json", dir);
    CHECK(mkfifo(p, 0600) == 0);
    char *fbuf;
    size_t flen;
    CHECK_FAILS(sv_fileio_read_small(p, 1 << 20, &fbuf, &flen), SV_ERR_INVALID, "not a regular file", "fifo.json");
    int ffd;
    CHECK_FAILS(sv_fileio_open_read(p, &ffd, NULL), SV_ERR_INVALID, "not a regular file", "fifo.json");
    CHECK(unlink(p) == 0);
    CHECK_FAILS(sv_fileio_read_small("/dev/zero", 1 << 20, &fbuf, &flen), SV_ERR_INVALID, "not a regular file",
                "/dev/zero");
    /* the trace merge reads its per-rank parts through the same guarded open: a FIFO planted
     * as part 1 is refused (it used to block in fopen), a regular part is merged */
    char tp[600];
    snprintf(q, sizeof q, "%s/trace.json", dir);
    snprintf(tp, sizeof tp, "%s.rank0", q);
    FILE *part = fopen(tp, "w");
    CHECK(part && fputs("{\"ph\":\"M\"}", part) >= 0 && fclose(part) == 0);
    snprintf(tp, sizeof tp, "%s.rank1", q);
    CHECK(mkfifo(tp, 0600) == 0);
    CHECK_FAILS(sv_trace_merge(q, 2), SV_ERR_INVALID, "not a regular file", "trace.json.rank1");
    CHECK(unlink(tp) == 0);
    snprintf(tp, sizeof tp, "%s.rank0", q);
    part = fopen(tp, "w");
    CHECK(part && fputs("{\"ph\":\"M\"}", part) >= 0 && fclose(part) == 0);
    CHECK_OK(sv_trace_merge(q, 1));
    expect_content(q, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"ph\":\"M\"}\n]}\n");
    CHECK(unlink(q) == 0 && !exists(tp));
    alarm(0);

    /* checked arithmetic (core/checked.h): exact results, and every wrap modulo 2^64 caught */
    uint64_t r;
    CHECK(sv_mul_u64(1ull << 32, (1ull << 32) - 1, &r) && r == (1ull << 32) * ((1ull << 32) - 1));
    CHECK(!sv_mul_u64(1ull << 32, 1ull << 32, &r));
    CHECK(!sv_mul_u64(UINT64_MAX, 2, &r));
    CHECK(sv_add_u64(UINT64_MAX - 1, 1, &r) && r == UINT64_MAX);
    CHECK(!sv_add_u64(UINT64_MAX, 1, &r));
    CHECK(sv_mul3_u64(4096, 4096, 3, &r) && r == 4096ull * 4096 * 3);
    CHECK(!sv_mul3_u64(1ull << 40, 1ull << 20, 1ull << 4, &r));
    const int64_t wraps_to_36[] = {2522, 1994, 25873, 141775993}; /* product = 2^64 + 36 */
    CHECK(!sv_shape_numel(wraps_to_36, 4, &r));
    const int64_t wraps_to_0[] = {1ll << 33, 1ll << 31};
    CHECK(!sv_shape_numel(wraps_to_0, 2, &r));
    const int64_t neg[] = {4, -1};
    CHECK(!sv_shape_numel(neg, 2, &r));
    const int64_t zero[] = {1ll << 40, 0, 1ll << 40}; /* an exact 0, not an overflow */
    CHECK(sv_shape_numel(zero, 3, &r) && r == 0);
    const int64_t vit[] = {1, 197, 768};
    CHECK(sv_shape_numel(vit, 3, &r) && r == 197 * 768);
    CHECK(sv_shape_numel(vit, 0, &r) && r == 1);
    /* exact integer square roots, where a float sqrt would round: (2^32 - 1)^2 is a square,
     * one more or less is not, and all three are the same double, so a float sqrt cannot tell
     * them apart; 2^53 + 1 is not a square either */
    CHECK(sv_exact_sqrt_u64(196, &r) && r == 14);
    CHECK(!sv_exact_sqrt_u64(197, &r) && r == 14);
    CHECK(sv_exact_sqrt_u64(0, &r) && r == 0);
    CHECK(sv_exact_sqrt_u64(1, &r) && r == 1);
    CHECK(sv_exact_sqrt_u64(0xFFFFFFFE00000001ull, &r) && r == UINT32_MAX);
    CHECK(!sv_exact_sqrt_u64(0xFFFFFFFE00000002ull, &r) && r == UINT32_MAX);
    CHECK(!sv_exact_sqrt_u64(0xFFFFFFFE00000000ull, &r) && r == UINT32_MAX - 1);
    CHECK(!sv_exact_sqrt_u64(UINT64_MAX, &r) && r == UINT32_MAX);
    CHECK(!sv_exact_sqrt_u64((1ull << 53) + 1, &r));
    CHECK(sv_exact_sqrt_u64(1ull << 52, &r) && r == 1ull << 26);

    /* atomic write: create, replace, no temporary left behind */
    snprintf(p, sizeof p, "%s/latest", dir);
    CHECK_OK(sv_fileio_write_atomic(p, "step_00000100\n", 14));
    expect_content(p, "step_00000100\n");
    CHECK_OK(sv_fileio_write_atomic(p, "step_00000200\n", 14));
    expect_content(p, "step_00000200\n");
    CHECK(count_entries(dir) == 1);

    /* a link planted at the temporary name an atomic write once used ("<path>.tmp.<pid>") is
     * neither followed nor replaced: temporaries are fresh O_EXCL names */
    char victim[600], planted[600];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    CHECK_OK(sv_fileio_write_atomic(victim, "keep", 4));
    snprintf(planted, sizeof planted, "%s.tmp.%ld", p, (long)getpid());
    CHECK(symlink(victim, planted) == 0);
    CHECK_OK(sv_fileio_write_atomic(p, "step_00000200\n", 14));
    expect_content(victim, "keep");
    expect_content(p, "step_00000200\n");
    CHECK(unlink(planted) == 0 && unlink(victim) == 0);
    CHECK(count_entries(dir) == 1);

    /* simulated ENOSPC: the replace fails, the old content survives, the temp file is gone */
    sv_fileio_inject_write_fault(5);
    CHECK_FAILS(sv_fileio_write_atomic(p, "step_00000300\n", 14), SV_ERR_IO, "No space left on device",
                SV_FILEIO_FAULT_ENV, "latest.tmp-");
    expect_content(p, "step_00000200\n");
    CHECK(count_entries(dir) == 1);
    /* the budget is per file and counts bytes: exactly 5 bytes land in a streamed file */
    sv_fileio_out f;
    snprintf(q, sizeof q, "%s/partial.bin", dir);
    CHECK_OK(sv_fileio_out_open(&f, q, 0));
    CHECK_OK(sv_fileio_out_write(&f, "abc", 3));
    CHECK_FAILS(sv_fileio_out_write(&f, "defg", 4), SV_ERR_IO, "No space left on device", "partial.bin");
    CHECK_OK(sv_fileio_out_close(&f));
    expect_content(q, "abcde");
    sv_fileio_inject_write_fault(-1);
    CHECK_FAILS(sv_fileio_out_open(&f, q, 1), SV_ERR_IO, "partial.bin", "File exists");
    CHECK_OK(sv_fileio_out_open(&f, q, 0));
    CHECK_OK(sv_fileio_out_write(&f, "0123456789", 10));
    CHECK_OK(sv_fileio_out_sync(&f));
    CHECK_OK(sv_fileio_out_close(&f));
    CHECK(f.written == 10);

    /* pread_exact: a short file is a truncation error naming the file and the range */
    int fd;
    uint64_t size;
    CHECK_OK(sv_fileio_open_read(q, &fd, &size));
    CHECK(size == 10);
    char rb[32];
    CHECK_OK(sv_fileio_pread_exact(fd, rb, 4, 6, q));
    CHECK(!memcmp(rb, "6789", 4));
    CHECK_FAILS(sv_fileio_pread_exact(fd, rb, 15, 5, q), SV_ERR_CORRUPT, "partial.bin", "truncated", "[5, 20)",
                "ends at 10");
    close(fd);
    CHECK_FAILS(sv_fileio_write_all(fd, "x", 1, "closed.bin"), SV_ERR_IO, "closed.bin", "Bad file descriptor");
    snprintf(q, sizeof q, "%s/missing.bin", dir);
    CHECK_FAILS(sv_fileio_open_read(q, &fd, NULL), SV_ERR_NOT_FOUND, "missing.bin", "No such file or directory");

    /* read_small: size limit */
    CHECK_FAILS(sv_fileio_read_small(p, 4, &(char *){NULL}, NULL), SV_ERR_INVALID, "latest", "14 bytes",
                "limit of 4 bytes");

    alarm(20); /* the FIFO cases below fail instead of hanging if an open blocks */
    /* starts_with: a regular file's first bytes; never a link, FIFO (no blocking), directory or
     * device; a shorter file or a missing path is no match */
    snprintf(q, sizeof q, "%s/head.txt", dir);
    CHECK_OK(sv_fileio_write_atomic(q, "{\"record\":\"header\",1}", 21));
    CHECK(sv_fileio_starts_with(q, "{\"record\":\"header\"", 18));
    CHECK(sv_fileio_starts_with(q, "{\"record\":\"header\",1}", 21));
    CHECK(sv_fileio_starts_with(q, "", 0));
    CHECK(!sv_fileio_starts_with(q, "{\"record\":\"header\",1}\n", 22)); /* longer than the file */
    CHECK(!sv_fileio_starts_with(q, "{\"record\":\"heade?\"", 18));
    char big[600];
    memset(big, 'a', sizeof big);
    snprintf(p, sizeof p, "%s/big.txt", dir);
    CHECK_OK(sv_fileio_write_atomic(p, big, sizeof big));
    CHECK(sv_fileio_starts_with(p, big, sizeof big)); /* more than one read */
    big[sizeof big - 1] = 'b';
    CHECK(!sv_fileio_starts_with(p, big, sizeof big));
    CHECK(unlink(p) == 0);
    snprintf(p, sizeof p, "%s/head.link", dir);
    CHECK(symlink(q, p) == 0);
    CHECK(!sv_fileio_starts_with(p, "{", 1));
    CHECK(unlink(p) == 0);
    snprintf(p, sizeof p, "%s/head.fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    CHECK(!sv_fileio_starts_with(p, "", 0));
    CHECK(unlink(p) == 0);
    CHECK(!sv_fileio_starts_with(dir, "", 0));
    CHECK(!sv_fileio_starts_with("/dev/zero", "", 0));
    CHECK(!sv_fileio_starts_with(p, "", 0)); /* gone */

    /* fopen_write: a regular file is truncated (or appended to, readable from the start); a
     * symbolic link, a FIFO (with or without a reader: never blocks) and a device are refused
     * naming the path, and nothing is written through them */
    snprintf(q, sizeof q, "%s/out.txt", dir);
    CHECK_OK(sv_fileio_write_atomic(q, "old content", 11));
    FILE *wf;
    CHECK_OK(sv_fileio_fopen_write(q, SV_FILEIO_TRUNC, &wf));
    CHECK(fputs("new", wf) >= 0 && fclose(wf) == 0);
    expect_content(q, "new");
    CHECK_OK(sv_fileio_fopen_write(q, SV_FILEIO_APPEND, &wf));
    char rd[8] = {0};
    CHECK(fread(rd, 1, 3, wf) == 3 && !strcmp(rd, "new"));
    CHECK(fputs("+more", wf) >= 0 && fclose(wf) == 0);
    expect_content(q, "new+more");
    CHECK_FAILS(sv_fileio_fopen_write(q, SV_FILEIO_NEW, &wf), SV_ERR_INVALID, "out.txt", "already exists");
    expect_content(q, "new+more");
    snprintf(p, sizeof p, "%s/out.new", dir);
    CHECK_OK(sv_fileio_fopen_write(p, SV_FILEIO_NEW, &wf));
    CHECK(fputs("x", wf) >= 0 && fclose(wf) == 0);
    expect_content(p, "x");
    CHECK(unlink(p) == 0);
    snprintf(p, sizeof p, "%s/out.link", dir);
    CHECK(symlink(q, p) == 0);
    CHECK_FAILS(sv_fileio_fopen_write(p, SV_FILEIO_TRUNC, &wf), SV_ERR_INVALID, "out.link", "symbolic link");
    CHECK_FAILS(sv_fileio_fopen_write(p, SV_FILEIO_APPEND, &wf), SV_ERR_INVALID, "out.link", "symbolic link");
    CHECK(wf == NULL);
    expect_content(q, "new+more");
    CHECK(unlink(p) == 0);
    snprintf(p, sizeof p, "%s/out.fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    CHECK_FAILS(sv_fileio_fopen_write(p, SV_FILEIO_TRUNC, &wf), SV_ERR_INVALID, "out.fifo", "FIFO");
    int reader = open(p, O_RDONLY | O_NONBLOCK);
    CHECK(reader >= 0);
    CHECK_FAILS(sv_fileio_fopen_write(p, SV_FILEIO_TRUNC, &wf), SV_ERR_INVALID, "out.fifo", "not a regular file");
    char none[4];
    CHECK(read(reader, none, sizeof none) == 0); /* nothing was written into it */
    close(reader);
    CHECK(unlink(p) == 0);
    CHECK_FAILS(sv_fileio_fopen_write("/dev/null", SV_FILEIO_TRUNC, &wf), SV_ERR_INVALID, "/dev/null",
                "not a regular file");
    snprintf(p, sizeof p, "%s/no/such/dir/out.txt", dir);
    CHECK_FAILS(sv_fileio_fopen_write(p, SV_FILEIO_TRUNC, &wf), SV_ERR_IO, "out.txt", "No such file or directory");
    alarm(0);

    /* rename: no_replace refuses an entry that exists (both kept), plain rename replaces */
    char sub[512], t1[600], t2[600], in[640];
    snprintf(sub, sizeof sub, "%s/ren", dir);
    CHECK_OK(sv_fileio_mkdirs(sub, 0755));
    snprintf(t1, sizeof t1, "%s/new.tmp", sub);
    snprintf(t2, sizeof t2, "%s/out.bin", sub);
    CHECK_OK(sv_fileio_write_atomic(t1, "new", 3));
    CHECK_OK(sv_fileio_write_atomic(t2, "old", 3));
    CHECK_FAILS(sv_fileio_rename(t1, t2, 1), SV_ERR_IO, "out.bin", "File exists");
    expect_content(t1, "new");
    expect_content(t2, "old");
    CHECK_OK(sv_fileio_rename(t1, t2, 0));
    expect_content(t2, "new");
    CHECK(!exists(t1));
    CHECK_OK(sv_fileio_write_atomic(t1, "newer", 5));
    CHECK(unlink(t2) == 0);
    CHECK_OK(sv_fileio_rename(t1, t2, 1)); /* nothing there: no_replace renames */
    expect_content(t2, "newer");
    /* out_commit: a rename that fails (a non-empty directory holds the name) removes the
     * temporary and leaves the directory as it was */
    snprintf(t1, sizeof t1, "%s/blocked", sub);
    CHECK_OK(sv_fileio_mkdirs(t1, 0755));
    snprintf(in, sizeof in, "%s/inside", t1);
    CHECK_OK(sv_fileio_write_atomic(in, "x", 1));
    CHECK(count_entries(sub) == 2);
    CHECK_OK(sv_fileio_out_open_tmp(&f, t1));
    CHECK_OK(sv_fileio_out_write(&f, "abc", 3));
    CHECK(count_entries(sub) == 3);
    CHECK_FAILS(sv_fileio_out_commit(&f, t1), SV_ERR_IO, "rename", "blocked");
    CHECK(count_entries(sub) == 2 && count_entries(t1) == 1);
    expect_content(in, "x");
    CHECK_OK(sv_fileio_out_open_tmp(&f, t2)); /* and one that succeeds replaces the file */
    CHECK_OK(sv_fileio_out_write(&f, "committed", 9));
    CHECK_OK(sv_fileio_out_commit(&f, t2));
    expect_content(t2, "committed");
    CHECK(count_entries(sub) == 2 && f.fd == -1);

    /* absolute paths are joined lexically, never resolved */
    char cwd[PATH_MAX], abs_p[PATH_MAX], want[PATH_MAX + 32];
    CHECK(getcwd(cwd, sizeof cwd));
    CHECK_OK(sv_fileio_absolute("run/../x", abs_p));
    snprintf(want, sizeof want, "%s/run/../x", cwd);
    CHECK(!strcmp(abs_p, want));
    CHECK_OK(sv_fileio_absolute("/a/./b", abs_p));
    CHECK(!strcmp(abs_p, "/a/./b"));
    CHECK_FAILS(sv_fileio_absolute("", abs_p), SV_ERR_INVALID, "empty");

    /* components appended lexically: empty and "." dropped, ".." removes one (never above "/"; a
     * relative start with none left is refused) or is refused outright; a result that does not
     * fit is refused */
    char lx[PATH_MAX];
    static const struct {
        const char *base, *rel, *want;
    } lex[] = {{"", "./a//b/", "a/b"}, {"/", "a", "/a"},         {"/x", "a/./b", "/x/a/b"},
               {"/x", "/a/", "/x/a"},  {"/x/y", "../a", "/x/a"}, {"/x", "../../..", "/"},
               {"a/b", "..", "a"},     {"a", "../c", "c"},       {"", "", ""},
               {"/x", ".//.", "/x"}};
    for (size_t i = 0; i < sizeof lex / sizeof lex[0]; i++) {
        snprintf(lx, sizeof lx, "%s", lex[i].base);
        CHECK_OK(sv_fileio_lexical_append(lx, sizeof lx, lex[i].rel, SV_FILEIO_DOTDOT_POP));
        if (strcmp(lx, lex[i].want)) {
            fprintf(stderr, "lexical_append(\"%s\", \"%s\") = \"%s\", want \"%s\"\n", lex[i].base, lex[i].rel, lx,
                    lex[i].want);
            return 1;
        }
    }
    lx[0] = 0;
    CHECK_OK(sv_fileio_lexical_append(lx, sizeof lx, "./run/./x/", SV_FILEIO_DOTDOT_REFUSE));
    CHECK(!strcmp(lx, "run/x"));
    CHECK_FAILS(sv_fileio_lexical_append(lx, sizeof lx, "a/../b", SV_FILEIO_DOTDOT_REFUSE), SV_ERR_INVALID, "a/../b",
                "\"..\"");
    snprintf(lx, sizeof lx, "a");
    CHECK_FAILS(sv_fileio_lexical_append(lx, sizeof lx, "../..", SV_FILEIO_DOTDOT_POP), SV_ERR_INVALID, "../..",
                "climbs above");
    char small[8] = "/ab";
    CHECK_OK(sv_fileio_lexical_append(small, sizeof small, "cde", SV_FILEIO_DOTDOT_POP)); /* "/ab/cde": 7 bytes */
    CHECK(!strcmp(small, "/ab/cde"));
    snprintf(small, sizeof small, "/ab");
    CHECK_FAILS(sv_fileio_lexical_append(small, sizeof small, "cdef", SV_FILEIO_DOTDOT_POP), SV_ERR_INVALID, "cdef",
                "too long");
    /* the real path of a path below a missing directory: the existing prefix resolved, the
     * rest applied lexically */
    char rp[PATH_MAX], rdir[PATH_MAX];
    CHECK(realpath(dir, rdir));
    snprintf(q, sizeof q, "%s/missing/./x//../y/", dir);
    CHECK_OK(sv_fileio_real_path(q, rp));
    snprintf(want, sizeof want, "%s/missing/y", rdir);
    CHECK(!strcmp(rp, want));

    CHECK(!strcmp(sv_fileio_mode_kind(S_IFIFO), "a FIFO") && !strcmp(sv_fileio_mode_kind(S_IFDIR), "a directory") &&
          !strcmp(sv_fileio_mode_kind(S_IFLNK), "a symbolic link") &&
          !strcmp(sv_fileio_mode_kind(S_IFCHR), "a device node") &&
          !strcmp(sv_fileio_mode_kind(S_IFREG), "a regular file"));

    /* mkdir -p */
    snprintf(q, sizeof q, "%s/ckpt/step_00000100.tmp/sub", dir);
    CHECK_OK(sv_fileio_mkdirs(q, 0755));
    CHECK_OK(sv_fileio_mkdirs(q, 0755)); /* existing is fine */
    CHECK_OK(sv_fileio_fsync_dir(q));
    snprintf(q, sizeof q, "%s/latest/x", dir);
    CHECK_FAILS(sv_fileio_mkdirs(q, 0755), SV_ERR_IO, "latest");

    /* rm -r: nested content goes, a symlink inside is removed without touching its target */
    char outside[512], target_file[600];
    snprintf(outside, sizeof outside, "%s/keep", dir);
    CHECK_OK(sv_fileio_mkdirs(outside, 0755));
    snprintf(target_file, sizeof target_file, "%s/precious", outside);
    CHECK_OK(sv_fileio_write_atomic(target_file, "x", 1));
    snprintf(q, sizeof q, "%s/ckpt/step_00000100.tmp/sub/shard.bin", dir);
    CHECK_OK(sv_fileio_write_atomic(q, "data", 4));
    snprintf(q, sizeof q, "%s/ckpt/step_00000100.tmp/link_to_keep", dir);
    CHECK(symlink(outside, q) == 0);
    snprintf(q, sizeof q, "%s/ckpt/toplink", dir);
    CHECK(symlink(outside, q) == 0);
    CHECK_FAILS(sv_fileio_remove_tree(q), SV_ERR_INVALID, "toplink", "symbolic link");
    CHECK(exists(target_file));
    snprintf(q, sizeof q, "%s/ckpt", dir);
    CHECK_OK(sv_fileio_remove_tree(q));
    CHECK(!exists(q));
    CHECK(exists(target_file));
    CHECK_FAILS(sv_fileio_remove_tree(q), SV_ERR_NOT_FOUND, "ckpt");

    /* sv_fileio_remove_tmp_on_signals: a temporary directory that stays open while 40 files are
     * made and renamed into place (more than the handler's slots) is still removed on SIGTERM */
    {
        char stage[700];
        snprintf(q, sizeof q, "%s/sig", dir);
        CHECK_OK(sv_fileio_mkdirs(q, 0755));
        snprintf(p, sizeof p, "%s/sig/stage", dir);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            sv_fileio_remove_tmp_on_signals();
            if (sv_fileio_tmp_dir(p, stage, sizeof stage) != SV_OK) _exit(3);
            for (int k = 0; k < 40; k++) {
                char f[800], tmp[900];
                snprintf(f, sizeof f, "%s/f%02d", q, k);
                if (sv_fileio_tmp_file(f, tmp, sizeof tmp, NULL) != SV_OK || sv_fileio_rename(tmp, f, 1) != SV_OK)
                    _exit(4);
            }
            char inside[800];
            snprintf(inside, sizeof inside, "%s/part", stage);
            if (sv_fileio_write_atomic(inside, "x", 1) != SV_OK) _exit(5);
            raise(SIGTERM);
            _exit(6);
        }
        int ws = 0;
        CHECK(waitpid(pid, &ws, 0) == pid);
        CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM);
        DIR *dd = opendir(q);
        CHECK(dd != NULL);
        int files = 0, stages = 0;
        for (struct dirent *e; (e = readdir(dd));) {
            files += e->d_name[0] == 'f';
            stages += !strncmp(e->d_name, "stage", 5);
        }
        closedir(dd);
        CHECK(files == 40);
        CHECK(stages == 0); /* the staging directory went, with what was in it */
    }

    fmt_rmdir(dir);
    CHECK(!exists(dir));
    printf("test_fileio: ok\n");
    return 0;
}
