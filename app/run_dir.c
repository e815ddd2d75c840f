/* Run directory rules and lock (run_dir.h). */
#include "app/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "core/fileio.h"
#include "core/kv.h"
#include "core/log.h"

static const char *const k_system[] = {"/bin",   "/boot",   "/dev",  "/etc",  "/lib", "/lib32",
                                       "/lib64", "/libx32", "/proc", "/sbin", "/sys", "/usr"};

/* DIR/NAME with a check on the length; NULL when it does not fit. */
static const char *in_dir(char *p, size_t cap, const char *dir, const char *name) {
    return (size_t)snprintf(p, cap, "%s/%s", dir, name) < cap ? p : NULL;
}

/* A metrics.jsonl that shardvit wrote starts with its header record. */
static int metrics_is_ours(const char *dir) {
    static const char k_head[] = "{\"record\":\"header\"";
    char p[PATH_MAX];
    return in_dir(p, sizeof p, dir, "metrics.jsonl") && sv_fileio_starts_with(p, k_head, sizeof k_head - 1);
}

/* A non-empty regular file DIR/NAME (a link is not followed). */
static int nonempty_file(const char *dir, const char *name) {
    char p[PATH_MAX];
    struct stat sb;
    return in_dir(p, sizeof p, dir, name) && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

/* A checkpoint writer's entry of dir d: a step directory (step_<digits>) or a save's temporary
 * one (step_<...>.tmp), as a directory; other step_* names (a user's step_times.txt) are not. */
static int is_step_dir(DIR *d, const char *n) {
    struct stat sb;
    if (sv_ckpt_step_of_name(n) < 0 && !sv_ckpt_is_tmp_name(n)) return 0;
    return fstatat(dirfd(d), n, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);
}

/* Is NAME in DIR something train writes into a run directory (--out) and never into a checkpoint
 * root: config.toml, metrics.jsonl, classes.txt, eval.json, confusion.csv, a TensorBoard event
 * file, or a checkpoints/ that holds checkpoints? */
static int is_result(const char *dir, const char *name) {
    static const char *const files[] = {"config.toml", "metrics.jsonl", "classes.txt", "eval.json", "confusion.csv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(name, files[i])) return 1;
    if (!strncmp(name, "events.out.tfevents.", 20)) return 1;
    char p[PATH_MAX];
    return !strcmp(name, "checkpoints") && in_dir(p, sizeof p, dir, name) && sv_run_dir_has_checkpoints(p);
}

int sv_run_dir_has_checkpoints(const char *ck) {
    DIR *d = opendir(ck);
    if (!d) return 0;
    struct dirent *e;
    int any = 0;
    while (!any && (e = readdir(d))) any = !strcmp(e->d_name, "latest") || !strncmp(e->d_name, "step_", 5);
    closedir(d);
    return any;
}

sv_status sv_run_dir_check(const char *dir, const char *flag, int resuming) {
    if (!dir || !*dir) return SV_FAIL(SV_ERR_INVALID, "%s: empty path", flag);
    char abs[PATH_MAX];
    SV_TRY(sv_fileio_real_path(dir, abs));
    if (!strcmp(abs, "/"))
        return SV_FAIL(SV_ERR_INVALID, "%s %s is the root directory: refusing to write there", flag, dir);
    for (size_t i = 0; i < sizeof k_system / sizeof k_system[0]; i++)
        if (sv_fileio_path_inside(abs, k_system[i]))
            return SV_FAIL(SV_ERR_INVALID, "%s %s is inside the system directory %s (%s): refusing to write there",
                           flag, dir, k_system[i], abs);
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (errno == ENOENT) return SV_OK; /* created by sv_run_dir_lock */
        return SV_FAIL(SV_ERR_IO, "%s %s: %s", flag, dir, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode)) return SV_FAIL(SV_ERR_INVALID, "%s %s exists and is not a directory", flag, dir);
    DIR *d = opendir(dir);
    if (!d) return SV_FAIL(SV_ERR_IO, "%s %s: %s", flag, dir, strerror(errno));
    int entries = 0, marker = 0, config = 0, metrics = 0, ckpt = 0;
    const char *other = NULL;
    char other_buf[64] = "", ckpt_buf[64] = "", result_buf[64] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
        entries++;
        if (!result_buf[0] && is_result(dir, n)) sv_log_esc(n, result_buf, sizeof result_buf);
        if (!strcmp(n, SV_RUN_DIR_MARKER))
            marker = 1;
        else if (!strcmp(n, "config.toml"))
            config = 1;
        else if (!strcmp(n, "metrics.jsonl"))
            metrics = 1;
        else if (!strcmp(n, "latest") || is_step_dir(d, n)) {
            if (!ckpt) sv_log_esc(n, ckpt_buf, sizeof ckpt_buf);
            ckpt = 1;
        } else if (!other) {
            sv_log_esc(n, other_buf, sizeof other_buf);
            other = other_buf;
        }
    }
    closedir(d);
    if (!entries) return SV_OK;
    const int ckpt_dir = !strcmp(flag, "--ckpt-dir");
    /* a run directory: the marker, or (written before the marker existed) config.toml and a
     * metrics.jsonl that begins with shardvit's header record; for --ckpt-dir also a checkpoint
     * root of an earlier run */
    const int run = marker || (config && metrics && metrics_is_ours(dir)) || (ckpt_dir && ckpt && !other);
    if (!run) {
        const char *what = other ? other : config ? "config.toml" : metrics ? "metrics.jsonl" : "latest";
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is a non-empty directory that is not a shardvit run directory (no %s; it holds e.g. "
                       "'%s'): training would overwrite files it did not create; choose a new or empty directory",
                       flag, dir, SV_RUN_DIR_MARKER, what);
    }
    /* a run directory and a checkpoint root are never one directory: the checkpoints of one run
     * beside the results of another would be taken for that run's (export, eval and predict of
     * the directory, report), and each run's retention and resume would act on the other's */
    if (!ckpt_dir && ckpt)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s holds checkpoints ('%s'): it is a checkpoint root (some run's --ckpt-dir), not a run "
                       "directory; a run directory keeps its checkpoints in OUT/checkpoints, and this run's "
                       "results there would be taken for that run's: choose a new directory (nothing was changed)",
                       flag, dir, ckpt_buf);
    if (ckpt_dir && result_buf[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s holds a run's results ('%s'): it is a run directory (some run's --out), not a "
                       "checkpoint root; checkpoints saved there would be taken for that run's by export, eval and "
                       "predict of the directory: give a checkpoint root of its own (nothing was changed)",
                       flag, dir, result_buf);
    if (resuming) return SV_OK;
    /* an earlier run's results: a new run would replace its checkpoints and metrics */
    char ck[PATH_MAX];
    if ((size_t)snprintf(ck, sizeof ck, ckpt_dir ? "%s" : "%s/checkpoints", dir) >= sizeof ck)
        return SV_FAIL(SV_ERR_INVALID, "%s: path too long: %.200s", flag, dir);
    const char *earlier = sv_run_dir_has_checkpoints(ck)   ? "checkpoints"
        : !ckpt_dir && nonempty_file(dir, "metrics.jsonl") ? "metrics.jsonl"
                                                           : NULL;
    if (earlier)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s holds an earlier run (%s): a new run would replace it; continue it with --resume auto, "
                       "or choose a new directory (nothing was changed)",
                       flag, dir, earlier);
    return SV_OK;
}

/* The highest step of DIR/metrics.jsonl's step and evaluation records into *last (-1: none; no
 * file: -1). Records begin with {"step":N (app/train_log.h); a line is judged by its first 64
 * bytes. */
static sv_status metrics_last_step(const char *dir, long *last) {
    *last = -1;
    char p[PATH_MAX];
    if (!in_dir(p, sizeof p, dir, "metrics.jsonl")) return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", dir);
    struct stat sb;
    if (lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) return SV_OK; /* absent (a FIFO etc. is refused elsewhere) */
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return SV_FAIL(SV_ERR_IO, "cannot read %s: %s", p, strerror(errno));
    static const char key[] = "{\"step\":";
    char buf[65536], line[64];
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line) line[len] = buf[i];
                len++;
                continue;
            }
            size_t k = sizeof key - 1, m = len < sizeof line ? len : sizeof line;
            if (m > k && !memcmp(line, key, k)) {
                long v = 0;
                size_t j = k;
                for (; j < m && line[j] >= '0' && line[j] <= '9' && v < 1000000000000L; j++)
                    v = v * 10 + (line[j] - '0');
                if (j > k && v > *last) *last = v;
            }
            len = 0;
        }
    int err = errno;
    close(fd);
    if (n < 0) return SV_FAIL(SV_ERR_IO, "cannot read %s: %s", p, strerror(err));
    return SV_OK;
}

sv_status sv_run_dir_records_read(const char *dir, sv_run_dir_records *rec) {
    memset(rec, 0, sizeof *rec);
    SV_TRY(metrics_last_step(dir, &rec->last_step));
    char p[PATH_MAX];
    struct stat sb;
    rec->eval = in_dir(p, sizeof p, dir, "eval.json") && lstat(p, &sb) == 0;
    rec->checkpoints = in_dir(p, sizeof p, dir, "checkpoints") && sv_run_dir_has_checkpoints(p);
    if (!in_dir(p, sizeof p, dir, "config.toml") || lstat(p, &sb) != 0) return SV_OK;
    rec->config = 1;
    if (!S_ISREG(sb.st_mode)) return SV_OK; /* refused by the output checks */
    int found = 0;
    SV_TRY(sv_kv_file_get(p, "ckpt-dir", rec->ckpt_dir, sizeof rec->ckpt_dir, &found));
    if (!found) rec->ckpt_dir[0] = 0;
    return SV_OK;
}

sv_status sv_run_dir_records_root(const char *dir, const sv_run_dir_records *rec, char *root) {
    if (rec->ckpt_dir[0]) {
        if ((size_t)snprintf(root, PATH_MAX, "%s", rec->ckpt_dir) >= PATH_MAX)
            return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", rec->ckpt_dir);
        return SV_OK;
    }
    if (!in_dir(root, PATH_MAX, dir, "checkpoints")) return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", dir);
    return SV_OK;
}

/* The lock's own files (the marker it created, the directories it made) removed: a failed
 * lock, or a refused start that wrote nothing else (sv_run_dir_unlock). */
static void lock_undo(sv_run_lock *lk) {
    if (lk->made_marker) unlink(lk->marker);
    lk->made_marker = 0;
    sv_fileio_made_dirs_remove(&lk->made); /* each only while empty */
}

sv_status sv_run_dir_lock(const char *dir, sv_run_lock *lk) {
    lk->fd = -1;
    lk->made_marker = 0;
    if ((size_t)snprintf(lk->marker, sizeof lk->marker, "%s/%s", dir, SV_RUN_DIR_MARKER) >= sizeof lk->marker)
        return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", dir);
    SV_TRY(sv_fileio_mkdirs_made(dir, 0755, &lk->made));
    const char *path = lk->marker;
    int fd = -1, flocked = -1, err = 0;
    /* A refused run removes the marker it made while it still holds the lock (sv_run_dir_unlock):
     * a lock taken on a marker that is no longer the file at `path` locks nothing another run sees,
     * so the lock counts only when `path` still names the locked file; otherwise open again. */
    for (int tries = 0; tries < 100; tries++) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        lk->made_marker = fd >= 0;
        if (fd < 0 && errno == EEXIST) fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) { /* the marker, or the directory, removed meanwhile: make it again */
            sv_status ms = lk->made.n ? sv_fileio_mkdirs(dir, 0755) : sv_fileio_mkdirs_made(dir, 0755, &lk->made);
            if (ms != SV_OK) {
                lock_undo(lk);
                return ms;
            }
            continue;
        }
        if (fd < 0) {
            sv_status st = SV_FAIL(SV_ERR_IO, "cannot open the run lock %s: %s", path, strerror(errno));
            lock_undo(lk);
            return st;
        }
        struct stat sb, now;
        if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            close(fd);
            lock_undo(lk);
            return SV_FAIL(SV_ERR_INVALID, "the run lock %s is not a regular file", path);
        }
        flocked = flock(fd, LOCK_EX | LOCK_NB);
        err = errno;
        if (flocked != 0) break;
        if (lstat(path, &now) == 0 && now.st_dev == sb.st_dev && now.st_ino == sb.st_ino) break;
        close(fd); /* locked a marker that was removed meanwhile: try the one there now */
        fd = -1;
        flocked = -1;
        err = ESTALE;
    }
    if (fd < 0) {
        lock_undo(lk);
        return SV_FAIL(SV_ERR_IO, "cannot lock %s: its marker file kept being replaced", path);
    }
    if (flocked != 0) {
        char who[256] = "";
        ssize_t n = pread(fd, who, sizeof who - 1, 0);
        close(fd);
        sv_fileio_made_dirs_keep(&lk->made); /* another run holds it: nothing of this one to undo */
        if (err != EWOULDBLOCK) return SV_FAIL(SV_ERR_IO, "cannot lock %s: %s", path, strerror(err));
        who[n > 0 ? n : 0] = 0;
        sv_run_dir_printable(who);
        return SV_FAIL(SV_ERR_INVALID, "run directory %s is in use by another training (%s; lock %s)", dir,
                       who[0] ? who : "process unknown", path);
    }
    lk->old_len = -1;
    if (!lk->made_marker) { /* kept to be put back if this run is refused (sv_run_dir_unlock) */
        ssize_t n = pread(fd, lk->old, sizeof lk->old, 0);
        struct stat cur;
        if (n >= 0 && fstat(fd, &cur) == 0 && cur.st_size == n) lk->old_len = (int)n; /* whole: restorable */
    }
    char host[128] = "?", stamp[64] = "?", text[320];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int len = snprintf(text, sizeof text, "pid %ld on %s since %s\n", (long)getpid(), host, stamp);
    /* flushed: ranks on other nodes read it (sv_train_outputs_shared), and an NFS client keeps a
     * small write in its cache until close or fsync while the truncation reaches the server */
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len ||
        (fsync(fd) != 0 && errno != EINVAL && errno != ENOSYS)) {
        int err = errno;
        close(fd);
        lock_undo(lk);
        return SV_FAIL(SV_ERR_IO, "cannot write the run lock %s: %s", path, strerror(err));
    }
    lk->fd = fd;
    return SV_OK;
}

void sv_run_dir_printable(char *text) {
    text[strcspn(text, "\n")] = 0;
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f) *c = '?';
}

sv_status sv_run_dir_ckpt_root(const char *ckpt_dir, const char *out, char *buf, size_t cap, const char **root) {
    *root = ckpt_dir;
    if (ckpt_dir || !out) return SV_OK;
    if ((size_t)snprintf(buf, cap, "%s/checkpoints", out) >= cap)
        return SV_FAIL(SV_ERR_INVALID, "--out too long: %.200s", out);
    *root = buf;
    return SV_OK;
}

/* Does the directory of the marker hold nothing but the marker? */
static int only_marker(const char *marker) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", marker);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    DIR *d = opendir(slash ? dir : ".");
    if (!d) return 0;
    int other = 0;
    for (struct dirent *e; !other && (e = readdir(d));)
        other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, SV_RUN_DIR_MARKER);
    closedir(d);
    return !other;
}

void sv_run_dir_unlock(sv_run_lock *lk, int failed) {
    if (lk->fd < 0) return;
    if (failed && lk->made_marker && only_marker(lk->marker)) lock_undo(lk); /* before the lock goes */
    if (failed && !lk->made_marker && lk->old_len >= 0) { /* the earlier run's text back, as it was */
        if (ftruncate(lk->fd, 0) != 0 || pwrite(lk->fd, lk->old, (size_t)lk->old_len, 0) != lk->old_len ||
            fsync(lk->fd) != 0)
            SV_WARN("could not restore the run lock %s: %s", lk->marker, strerror(errno));
    }
    close(lk->fd);
    lk->fd = -1;
    sv_fileio_made_dirs_keep(&lk->made);
}
