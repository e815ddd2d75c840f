#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REMOVE_MAX_DEPTH 64

/* The path cut to its last 400 bytes when longer ("...tail"), so the reason (strerror) always fits
 * the message. */
static sv_status io_fail(const char *what, const char *path, int err) {
    size_t n = strlen(path);
    return SV_FAIL(SV_ERR_IO, "%s %s%s: %s", what, n > 400 ? "..." : "", n > 400 ? path + n - 400 : path,
                   strerror(err));
}

sv_status sv_fileio_write_all(int fd, const void *buf, size_t n, const char *path) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return io_fail("write to", path, errno);
        }
        if (w == 0) return io_fail("write to", path, EIO);
        p += w;
        n -= (size_t)w;
    }
    return SV_OK;
}

sv_status sv_fileio_pread_exact(int fd, void *buf, size_t n, uint64_t off, const char *path) {
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, p + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return SV_FAIL(SV_ERR_IO, "read %s bytes [%llu, %llu): %s", path, (unsigned long long)off,
                           (unsigned long long)(off + n), strerror(errno));
        }
        if (r == 0)
            return SV_FAIL(SV_ERR_CORRUPT, "%s is truncated: needed bytes [%llu, %llu) but the file ends at %llu", path,
                           (unsigned long long)off, (unsigned long long)(off + n), (unsigned long long)(off + got));
        got += (size_t)r;
    }
    return SV_OK;
}

sv_status sv_fileio_fsync(int fd, const char *path) {
    while (fsync(fd) != 0) {
        if (errno == EINTR) continue;
        return io_fail("fsync", path, errno);
    }
    return SV_OK;
}

sv_status sv_fileio_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return io_fail("open directory", dir, errno);
    sv_status s = sv_fileio_fsync(fd, dir);
    close(fd);
    return s;
}

sv_status sv_fileio_fsync_parent(const char *path) {
    char dir[PATH_MAX];
    SV_TRY(sv_fileio_parent(path, dir));
    return sv_fileio_fsync_dir(dir);
}

sv_status sv_fileio_open_read(const char *path, int *fd_out, uint64_t *size_out) {
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the
     * descriptor goes back to blocking once fstat has shown a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return SV_FAIL(SV_ERR_NOT_FOUND, "open %s: %s", path, strerror(errno));
        return io_fail("open", path, errno);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return io_fail("stat", path, e);
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return SV_FAIL(SV_ERR_INVALID, "%s is a directory, expected a file", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return SV_FAIL(SV_ERR_INVALID, "%s is not a regular file (a FIFO, socket or device), expected a file", path);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return io_fail("fcntl", path, e);
    }
    *fd_out = fd;
    if (size_out) *size_out = (uint64_t)st.st_size;
    return SV_OK;
}

/* ---- output files ---------------------------------------------------------------------- */

static long long g_fail_after = -1; /* sv_fileio_inject_write_fault */

void sv_fileio_inject_write_fault(long long after_bytes) { g_fail_after = after_bytes < 0 ? -1 : after_bytes; }

static long long g_stall_after = -1; /* sv_fileio_inject_write_stall */

void sv_fileio_inject_write_stall(long long after_bytes) { g_stall_after = after_bytes < 0 ? -1 : after_bytes; }

sv_status sv_fileio_out_open(sv_fileio_out *f, const char *path, int exclusive) {
    f->fd = -1;
    f->written = 0;
    f->fail_after = g_fail_after;
    if (strlen(path) >= sizeof f->path)
        return SV_FAIL(SV_ERR_INVALID, "path too long (%zu bytes): %.200s...", strlen(path), path);
    snprintf(f->path, sizeof f->path, "%s", path);
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
    int fd = open(path, flags, 0644);
    if (fd < 0) return io_fail("create", path, errno);
    f->fd = fd;
    return SV_OK;
}

sv_status sv_fileio_out_write(sv_fileio_out *f, const void *buf, size_t n) {
    if (f->fd < 0) return SV_FAIL(SV_ERR_INVALID, "write to %s: file is not open", f->path);
    if (f->fail_after >= 0 && f->written + n > (uint64_t)f->fail_after) {
        /* Simulated full disk: accept what fits, then fail as write(2) would. */
        size_t fits = (size_t)((uint64_t)f->fail_after - f->written);
        if (fits) {
            SV_TRY(sv_fileio_write_all(f->fd, buf, fits, f->path));
            f->written += fits;
        }
        return SV_FAIL(SV_ERR_IO, "write to %s: %s (injected by %s after %lld bytes)", f->path, strerror(ENOSPC),
                       SV_FILEIO_FAULT_ENV, (long long)f->fail_after);
    }
    if (g_stall_after >= 0 && f->written + n > (uint64_t)g_stall_after) {
        /* Simulated slow device for signal tests: write what fits, then wait to be signalled. */
        if ((uint64_t)g_stall_after > f->written)
            SV_TRY(sv_fileio_write_all(f->fd, buf, (size_t)((uint64_t)g_stall_after - f->written), f->path));
        for (;;) pause();
    }
    SV_TRY(sv_fileio_write_all(f->fd, buf, n, f->path));
    f->written += n;
    return SV_OK;
}

sv_status sv_fileio_out_sync(sv_fileio_out *f) {
    if (f->fd < 0) return SV_FAIL(SV_ERR_INVALID, "fsync %s: file is not open", f->path);
    return sv_fileio_fsync(f->fd, f->path);
}

sv_status sv_fileio_out_close(sv_fileio_out *f) {
    if (f->fd < 0) return SV_OK;
    int rc = close(f->fd);
    f->fd = -1;
    /* Linux releases the fd even when close fails, so no retry on EINTR. */
    if (rc != 0 && errno != EINTR) return io_fail("close", f->path, errno);
    return SV_OK;
}

void sv_fileio_out_abort(sv_fileio_out *f) {
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
        unlink(f->path);
    }
}

/* ---- temporaries removed on a signal --------------------------------------------------- */

/* The temporaries this process created and has not renamed yet (sv_fileio_tmp_file /
 * sv_fileio_tmp_dir register them, sv_fileio_rename / sv_fileio_out_commit forget them), and the
 * directories sv_fileio_mkdirs_made created and not yet kept or removed. A slot is filled with
 * used = 0 and published by used = 1, so the handler never reads a half-written path; an entry
 * left after its file was removed by its owner is harmless (the handler's unlink finds nothing:
 * the names are random per call). A new entry takes a free slot; only with more live entries
 * than slots is a live one reused. */
enum { TMP_SLOTS = 32, TMP_DIR_DEPTH = 8 };
enum { TMP_FILE, TMP_DIR, TMP_MADE };      /* kind: a temporary file or directory, a directory made */
static volatile sig_atomic_t g_committing; /* sv_fileio_commit_begin .. _end on some thread */
/* the signals whose handler removes the temporaries, and that a commit group holds off */
static const int k_clean_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
static struct {
    volatile sig_atomic_t used;
    int dir;      /* TMP_FILE, TMP_DIR or TMP_MADE */
    unsigned seq; /* registration order: made directories are removed the last made first */
    char path[4096];
} g_tmp[TMP_SLOTS];
static unsigned g_tmp_next;

static void tmp_register(const char *tmp, int dir) {
    size_t L = strlen(tmp);
    if (L >= sizeof g_tmp[0].path) return;
    /* a free slot if there is one (a long-lived temporary directory keeps its slot however many
     * files come and go meanwhile), else the next in turn */
    unsigned seq = g_tmp_next++, i = seq % TMP_SLOTS;
    for (unsigned k = 0; k < TMP_SLOTS; k++)
        if (!g_tmp[(i + k) % TMP_SLOTS].used) {
            i = (i + k) % TMP_SLOTS;
            break;
        }
    g_tmp[i].used = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(g_tmp[i].path, tmp, L + 1);
    g_tmp[i].dir = dir;
    g_tmp[i].seq = seq;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    g_tmp[i].used = 1;
}

static void tmp_forget(const char *tmp) {
    for (unsigned i = 0; i < TMP_SLOTS; i++)
        if (g_tmp[i].used && !strcmp(g_tmp[i].path, tmp)) g_tmp[i].used = 0;
}

/* Remove everything below the open directory fd, then close it: async-signal-safe (getdents64,
 * openat, unlinkat, close; no allocation), at most TMP_DIR_DEPTH levels (a staging directory
 * holds a step directory of files). */
static void tmp_empty_dir(int fd, int depth) {
    static char buf[TMP_DIR_DEPTH][4096] __attribute__((aligned(8)));
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf[depth], sizeof buf[depth]);
        if (n <= 0) break;
        int removed = 0;
        for (long off = 0; off < n;) {
            const char *rec = buf[depth] + off;
            unsigned short reclen;
            memcpy(&reclen, rec + 16, sizeof reclen);
            const char *name = rec + 19;
            unsigned char type = (unsigned char)rec[18];
            off += reclen;
            if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
            if (type == DT_DIR && depth + 1 < TMP_DIR_DEPTH) {
                int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) tmp_empty_dir(sub, depth + 1);
                removed += unlinkat(fd, name, AT_REMOVEDIR) == 0;
            } else
                removed += unlinkat(fd, name, 0) == 0;
        }
        if (removed) lseek(fd, 0, SEEK_SET); /* entries moved: read the directory again */
    }
    close(fd);
}

static void tmp_on_signal(int sig) {
    int saved = errno;
    /* a group of renames under way on another thread (that thread holds these signals off):
     * let it finish, so that an output is never left half old, half new */
    for (int waited = 0; g_committing && waited < 60000; waited++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    for (unsigned i = 0; i < TMP_SLOTS; i++) {
        if (!g_tmp[i].used || g_tmp[i].dir == TMP_MADE) continue;
        if (g_tmp[i].dir == TMP_DIR) {
            int fd = open(g_tmp[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) tmp_empty_dir(fd, 0);
            rmdir(g_tmp[i].path);
        } else
            unlink(g_tmp[i].path);
    }
    /* then the directories made for an output, the last made first (a made path may reach an
     * earlier one through ".."), each only while empty: never anything this process did not make */
    for (unsigned below = UINT_MAX;;) {
        int last = -1;
        for (unsigned i = 0; i < TMP_SLOTS; i++)
            if (g_tmp[i].used && g_tmp[i].dir == TMP_MADE && g_tmp[i].seq < below &&
                (last < 0 || g_tmp[i].seq > g_tmp[last].seq))
                last = (int)i;
        if (last < 0) break;
        below = g_tmp[last].seq;
        rmdir(g_tmp[last].path);
    }
    errno = saved;
    signal(sig, SIG_DFL); /* then die of the signal, as without the handler */
    raise(sig);
}

void sv_fileio_remove_tmp_on_signals(void) {
    for (size_t i = 0; i < sizeof k_clean_sigs / sizeof *k_clean_sigs; i++) {
        struct sigaction old;
        if (sigaction(k_clean_sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue; /* nohup stays */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = tmp_on_signal;
        sigfillset(&sa.sa_mask);
        sigaction(k_clean_sigs[i], &sa, NULL);
    }
}

void sv_fileio_tmp_track(const char *path) { tmp_register(path, TMP_FILE); }
void sv_fileio_tmp_untrack(const char *path) { tmp_forget(path); }

int sv_fileio_dir_lock(const char *dir, const char *tag, int wait, char *lock) {
    struct stat sb;
    if (stat(dir, &sb) != 0) return -1;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/') tmp = "/tmp";
    if ((size_t)snprintf(lock, PATH_MAX, "%s/shardvit-%s-%llx-%llx.lock", tmp, tag, (unsigned long long)sb.st_dev,
                         (unsigned long long)sb.st_ino) >= PATH_MAX)
        return -1;
    for (;;) {
        /* read-only (flock needs no write access): another user's lock file serves as well */
        int fd = open(lock, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC); /* fs.protected_regular */
        if (fd < 0) return -1;
        int rc;
        while ((rc = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
        }
        if (rc != 0) {
            const int busy = errno == EWOULDBLOCK;
            close(fd);
            return busy ? SV_FILEIO_LOCK_BUSY : -1;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && lstat(lock, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino) {
            tmp_register(lock, TMP_FILE);
            return fd;
        }
        close(fd); /* the holder before us removed it: lock the file now at that name */
    }
}

void sv_fileio_dir_unlock(int fd, const char *lock) {
    if (fd < 0) return;
    tmp_forget(lock);   /* first: a signal after the unlink must not remove a newer holder's file */
    (void)unlink(lock); /* another user's file in a sticky directory stays */
    close(fd);
}

void sv_fileio_commit_begin(sigset_t *saved) {
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < sizeof k_clean_sigs / sizeof *k_clean_sigs; i++) sigaddset(&s, k_clean_sigs[i]);
    pthread_sigmask(SIG_BLOCK, &s, saved);
    g_committing = 1;
}

void sv_fileio_commit_end(const sigset_t *saved) {
    g_committing = 0;
    pthread_sigmask(SIG_SETMASK, saved, NULL); /* a signal held off is handled here */
}

/* ---- whole files ----------------------------------------------------------------------- */

/* A name "<path>.tmp-XXXXXXXX" that differs per process, call and attempt. */
static sv_status tmp_name(const char *path, unsigned attempt, char *tmp, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
        (uint64_t)attempt * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
    if ((size_t)snprintf(tmp, cap, "%s.tmp-%08x", path, (unsigned)(x & 0xFFFFFFFFu)) >= cap)
        return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", path);
    return SV_OK;
}

/* A temporary is registered before it is created: a signal handled as the create returns (where
 * a pending one is delivered) finds it registered. A name already taken is skipped unregistered,
 * so the handler never removes a file of someone else's (the names are random per process, call
 * and attempt: one appearing between the check and the create is not a practical case). */
static int tmp_name_taken(const char *tmp) {
    struct stat sb;
    return lstat(tmp, &sb) == 0;
}

sv_status sv_fileio_tmp_file(const char *path, char *tmp, size_t cap, int *fd_out) {
    for (unsigned a = 0; a < 100; a++) {
        SV_TRY(tmp_name(path, a, tmp, cap));
        if (tmp_name_taken(tmp)) continue;
        tmp_register(tmp, TMP_FILE);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (fd_out)
                *fd_out = fd;
            else
                close(fd);
            return SV_OK;
        }
        int e = errno;
        tmp_forget(tmp);
        if (e != EEXIST) return SV_FAIL(SV_ERR_IO, "create %s: %s", tmp, strerror(e));
    }
    return SV_FAIL(SV_ERR_IO, "create a temporary file beside %s: every name tried exists", path);
}

sv_status sv_fileio_tmp_dir(const char *path, char *tmp, size_t cap) {
    for (unsigned a = 0; a < 100; a++) {
        SV_TRY(tmp_name(path, a, tmp, cap));
        if (tmp_name_taken(tmp)) continue;
        tmp_register(tmp, TMP_DIR);
        if (mkdir(tmp, 0755) == 0) return SV_OK;
        int e = errno;
        tmp_forget(tmp);
        if (e != EEXIST) return SV_FAIL(SV_ERR_IO, "mkdir %s: %s", tmp, strerror(e));
    }
    return SV_FAIL(SV_ERR_IO, "create a temporary directory beside %s: every name tried exists", path);
}

int sv_fileio_is_tmp_name(const char *name, const char *base) {
    const size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || strncmp(name + n, ".tmp-", 5) != 0 || strlen(name + n + 5) != 8) return 0;
    for (const char *c = name + n + 5; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))) return 0; /* tmp_name's %08x */
    return 1;
}

sv_status sv_fileio_tmp_dir_rebase(const char *from, const char *base, char *to, size_t cap) {
    const char *suffix = strrchr(from, '.'); /* ".tmp-XXXXXXXX" of tmp_name */
    if (!suffix || strncmp(suffix, ".tmp-", 5) != 0)
        return SV_FAIL(SV_ERR_INVALID, "%.200s is not a temporary's name", from);
    if ((size_t)snprintf(to, cap, "%s%s", base, suffix) >= cap)
        return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", base);
    tmp_register(to, TMP_DIR);                    /* first: a signal in between finds one of the two names */
    sv_status st = sv_fileio_rename(from, to, 1); /* forgets `from` once renamed */
    struct stat sb;
    if (st != SV_OK && lstat(from, &sb) != 0 && lstat(to, &sb) == 0) { /* renamed; its fsync failed */
        sv_err_clear();                                                /* a temporary needs no durability */
        return SV_OK;
    }
    if (st != SV_OK) tmp_forget(to);
    return st;
}

sv_status sv_fileio_out_open_tmp(sv_fileio_out *f, const char *path) {
    f->fd = -1;
    f->written = 0;
    f->fail_after = g_fail_after;
    if (strlen(path) + 16 >= sizeof f->path)
        return SV_FAIL(SV_ERR_INVALID, "path too long (%zu bytes): %.200s...", strlen(path), path);
    return sv_fileio_tmp_file(path, f->path, sizeof f->path, &f->fd);
}

sv_status sv_fileio_rename(const char *tmp, const char *path, int no_replace) {
    if (no_replace) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
            int e = errno;
            if (e != EINVAL && e != ENOSYS) return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", tmp, path, strerror(e));
            struct stat sb; /* the file system cannot refuse by itself */
            if (lstat(path, &sb) == 0) return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", tmp, path, strerror(EEXIST));
            if (rename(tmp, path) != 0) return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", tmp, path, strerror(errno));
        }
    } else if (rename(tmp, path) != 0) {
        return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", tmp, path, strerror(errno));
    }
    tmp_forget(tmp);
    return sv_fileio_fsync_parent(path);
}

sv_status sv_fileio_out_commit(sv_fileio_out *f, const char *path) {
    sv_status s = sv_fileio_out_sync(f);
    if (s != SV_OK) {
        sv_fileio_out_abort(f);
        sv_err_frame(__FILE__, __LINE__);
        return s;
    }
    s = sv_fileio_out_close(f);
    if (s == SV_OK && rename(f->path, path) != 0)
        s = SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", f->path, path, strerror(errno));
    tmp_forget(f->path);
    if (s != SV_OK) {
        unlink(f->path);
        sv_err_frame(__FILE__, __LINE__);
        return s;
    }
    SV_TRY(sv_fileio_fsync_parent(path));
    return SV_OK;
}

sv_status sv_fileio_write_atomic(const char *path, const void *buf, size_t n) {
    sv_fileio_out f;
    SV_TRY(sv_fileio_out_open_tmp(&f, path));
    sv_status s = sv_fileio_out_write(&f, buf, n);
    if (s != SV_OK) {
        sv_fileio_out_abort(&f);
        sv_err_frame(__FILE__, __LINE__);
        return s;
    }
    SV_TRY(sv_fileio_out_commit(&f, path));
    return SV_OK;
}

/* mkdir -p; made (nullable) records each directory created and registers it for a signal. */
static sv_status mkdirs(const char *path, mode_t mode, sv_fileio_made_dirs *made) {
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (made) made->n = 0, made->path[0] = 0;
    if (n == 0) return SV_FAIL(SV_ERR_INVALID, "mkdir: empty path");
    if (n >= sizeof buf) return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s...", path);
    memcpy(buf, path, n + 1);
    if (made) memcpy(made->path, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char save = buf[i];
        buf[i] = 0;
        /* registered before the mkdir when it is missing (as the temporaries are): a signal as the
         * mkdir returns finds it; the handler removes a made directory only while it is empty */
        int pre = made && tmp_name_taken(buf) == 0;
        if (pre) tmp_register(buf, TMP_MADE);
        if (mkdir(buf, mode) == 0) {
            if (made) {
                made->len[made->n++] = (unsigned short)i;
                if (!pre) tmp_register(buf, TMP_MADE);
            }
        } else {
            int e = errno;
            if (pre) tmp_forget(buf);
            struct stat st;
            sv_status s = SV_OK;
            if (e != EEXIST)
                s = io_fail("mkdir", buf, e);
            else if (stat(buf, &st) != 0)
                s = io_fail("stat", buf, errno);
            else if (!S_ISDIR(st.st_mode))
                s = SV_FAIL(SV_ERR_IO, "mkdir %s: exists and is not a directory", buf);
            if (s != SV_OK) {
                if (made) sv_fileio_made_dirs_remove(made); /* what this call made, nothing else */
                return s;
            }
        }
        buf[i] = save;
    }
    return SV_OK;
}

sv_status sv_fileio_mkdirs(const char *path, mode_t mode) { return mkdirs(path, mode, NULL); }

sv_status sv_fileio_mkdirs_made(const char *path, mode_t mode, sv_fileio_made_dirs *made) {
    return mkdirs(path, mode, made);
}

/* Directory i of made (a prefix of made->path) into p (PATH_MAX bytes). */
static void made_dir(const sv_fileio_made_dirs *made, int i, char *p) {
    memcpy(p, made->path, made->len[i]);
    p[made->len[i]] = 0;
}

void sv_fileio_made_dirs_remove(sv_fileio_made_dirs *made) {
    char p[PATH_MAX];
    for (int i = made->n - 1; i >= 0; i--) { /* the last made first: it may reach another via ".." */
        made_dir(made, i, p);
        rmdir(p); /* only while empty: a directory someone else filled meanwhile stays */
        tmp_forget(p);
    }
    made->n = 0;
}

void sv_fileio_made_dirs_keep(sv_fileio_made_dirs *made) {
    char p[PATH_MAX];
    for (int i = 0; i < made->n; i++) {
        made_dir(made, i, p);
        tmp_forget(p);
    }
    made->n = 0;
}

/* Remove the contents of the directory open at `dfd` (which this function closes). */
static sv_status remove_contents(int dfd, const char *path, int depth) {
    if (depth > REMOVE_MAX_DEPTH) {
        close(dfd);
        return SV_FAIL(SV_ERR_INVALID, "remove %s: deeper than %d levels", path, REMOVE_MAX_DEPTH);
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return io_fail("read directory", path, e);
    }
    sv_status s = SV_OK;
    struct dirent *de;
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (!de) {
            if (errno) s = io_fail("read directory", path, errno);
            break;
        }
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
        char child[PATH_MAX];
        int cn = snprintf(child, sizeof child, "%s/%s", path, name);
        if (cn < 0 || (size_t)cn >= sizeof child) {
            s = SV_FAIL(SV_ERR_INVALID, "remove %s: path too long below it", path);
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            s = io_fail("stat", child, errno);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int cfd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0) {
                s = io_fail("open directory", child, errno);
                break;
            }
            s = remove_contents(cfd, child, depth + 1);
            if (s != SV_OK) break;
            if (unlinkat(dirfd(d), name, AT_REMOVEDIR) != 0) {
                s = io_fail("remove directory", child, errno);
                break;
            }
        } else if (unlinkat(dirfd(d), name, 0) != 0) {
            s = io_fail("remove", child, errno);
            break;
        }
    }
    closedir(d);
    return s;
}

sv_status sv_fileio_remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return SV_FAIL(SV_ERR_NOT_FOUND, "remove %s: %s", path, strerror(errno));
        return io_fail("stat", path, errno);
    }
    if (S_ISLNK(st.st_mode))
        return SV_FAIL(SV_ERR_INVALID, "remove %s: refusing to remove through a symbolic link", path);
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0) return io_fail("remove", path, errno);
        return SV_OK;
    }
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return io_fail("open directory", path, errno);
    SV_TRY(remove_contents(dfd, path, 0));
    if (rmdir(path) != 0) return io_fail("remove directory", path, errno);
    return SV_OK;
}

const char *sv_fileio_mode_kind(mode_t m) {
    return S_ISREG(m)              ? "a regular file"
        : S_ISDIR(m)               ? "a directory"
        : S_ISLNK(m)               ? "a symbolic link"
        : S_ISFIFO(m)              ? "a FIFO"
        : S_ISSOCK(m)              ? "a socket"
        : S_ISCHR(m) || S_ISBLK(m) ? "a device node"
                                   : "not a regular file";
}

/* What lstat says `path` is, for an error message. */
static const char *kind_of(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0 ? sv_fileio_mode_kind(sb.st_mode) : "not a regular file";
}

sv_status sv_fileio_fopen_write(const char *path, int mode, FILE **out) {
    *out = NULL;
    const int append = mode == SV_FILEIO_APPEND;
    const int flags = O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
        (append ? O_RDWR | O_APPEND : O_WRONLY | (mode == SV_FILEIO_NEW ? O_EXCL : O_TRUNC));
    int fd = open(path, flags, 0666);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST) return SV_FAIL(SV_ERR_INVALID, "%s already exists: refusing to replace it", path);
        const char *kind = kind_of(path);
        /* ELOOP: the path is a link (O_NOFOLLOW); ENXIO: a FIFO without a reader, or a socket */
        if ((e == ELOOP || e == ENXIO) && strcmp(kind, "a regular file"))
            return SV_FAIL(SV_ERR_INVALID, "%s is %s: refusing to write to it (%s)", path, kind, strerror(e));
        return io_fail("cannot write", path, e);
    }
    struct stat st;
    int fl;
    if (fstat(fd, &st) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return io_fail("cannot write", path, e);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return SV_FAIL(SV_ERR_INVALID, "%s is not a regular file (%s): refusing to write to it", path, kind_of(path));
    }
    FILE *f = fdopen(fd, append ? "a+" : "w");
    if (!f) {
        int e = errno;
        close(fd);
        return io_fail("cannot write", path, e);
    }
    *out = f;
    return SV_OK;
}

sv_status sv_fileio_read_small(const char *path, size_t max_bytes, char **out, size_t *len) {
    int fd = -1;
    uint64_t size = 0;
    SV_TRY(sv_fileio_open_read(path, &fd, &size));
    if (size > max_bytes) {
        close(fd);
        return SV_FAIL(SV_ERR_INVALID, "%s is %llu bytes, more than the limit of %zu bytes", path,
                       (unsigned long long)size, max_bytes);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        close(fd);
        return SV_FAIL(SV_ERR_OOM, "reading %s: cannot allocate %llu bytes", path, (unsigned long long)size);
    }
    sv_status s = sv_fileio_pread_exact(fd, buf, (size_t)size, 0, path);
    close(fd);
    if (s != SV_OK) {
        free(buf);
        sv_err_frame(__FILE__, __LINE__);
        return s;
    }
    buf[size] = 0;
    *out = buf;
    if (len) *len = (size_t)size;
    return SV_OK;
}

int sv_fileio_starts_with(const char *path, const void *prefix, size_t n) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat sb;
    int same = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size >= n;
    for (size_t off = 0; same && off < n;) {
        char buf[256];
        size_t want = n - off < sizeof buf ? n - off : sizeof buf;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        same = r > 0 && !memcmp(buf, (const char *)prefix + off, (size_t)r);
        off += r > 0 ? (size_t)r : 0;
    }
    close(fd);
    return same;
}
