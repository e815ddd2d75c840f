/* Output rules shared by export, reshard, eval, report, bench and plan outputs (ckpt/ckpt_out.h). */
#include "ckpt/ckpt_out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"

/* Does real path o lie inside a checkpoint root that holds step directory `step` (real path c)?
 * The candidates are its parent as given and its real parent (they differ when step is a symbolic
 * link), each counted when it is a checkpoint root as train makes one: it has a `latest` entry.
 * A directory that merely holds step directories (reshard's output beside other files, a step
 * directory copied or linked into a working directory) is not protected as a root. The root's
 * real path goes to root. */
static int inside_root(const char *o, const char *step, const char *c, char root[PATH_MAX]) {
    char p[PATH_MAX], l[PATH_MAX + 8];
    struct stat sb;
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s", k ? c : step);
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') p[--n] = 0;
        char *s = strrchr(p, '/');
        if (!s)
            snprintf(p, sizeof p, ".");
        else
            s[s == p ? 1 : 0] = 0; /* "/x" -> "/" */
        if (sv_fileio_real_path(p, root) != SV_OK) {
            sv_err_clear();
            continue;
        }
        if (!sv_fileio_path_inside(o, root)) continue;
        if ((size_t)snprintf(l, sizeof l, "%s/latest", root) < sizeof l && lstat(l, &sb) == 0) return 1;
    }
    return 0;
}

sv_status sv_ckpt_out_check(const char *path, const char *protect, int must_not_exist, const char *what) {
    if (!path || !*path) return SV_FAIL(SV_ERR_INVALID, "%s: empty path", what);
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (must_not_exist)
            return SV_FAIL(SV_ERR_INVALID,
                           "%s %s already exists (it is never overwritten: remove it or choose "
                           "another path)",
                           what, path);
        if (!S_ISREG(sb.st_mode))
            return SV_FAIL(SV_ERR_INVALID, "%s %s is %s: refusing to replace it (only a regular file is replaced)",
                           what, path, sv_fileio_mode_kind(sb.st_mode));
    } else if (errno != ENOENT) {
        return SV_FAIL(SV_ERR_IO, "%s %s: %s", what, path, strerror(errno));
    }
    if (!protect) return SV_OK;
    char c[PATH_MAX], o[PATH_MAX];
    SV_TRY(sv_fileio_real_path(protect, c));
    SV_TRY(sv_fileio_real_path(path, o));
    if (sv_fileio_path_inside(o, c))
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is inside the checkpoint %s that this command reads (resolved: %s): "
                       "choose a path outside it",
                       what, path, protect, o);
    const char *base = strrchr(o, '/');
    size_t root_len = (size_t)(strrchr(c, '/') - c); /* c is absolute: it has a '/' */
    if (base && !strcmp(base + 1, "latest") && (size_t)(base - o) == root_len && !strncmp(o, c, root_len))
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is the `latest` file of the checkpoint root this command reads: choose "
                       "another path",
                       what, path);
    char r[PATH_MAX];
    if (inside_root(o, protect, c, r))
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is inside the checkpoint root %s that this command reads (resolved: %s): "
                       "choose a path outside it",
                       what, path, r, o);
    return SV_OK;
}

/* A checkpoint step directory: index.json and at least one shard file "shard_NNNNN-of-NNNNN.bin"
 * (ckpt_index.c names them) in it. */
static int is_step_dir(const char *dir) {
    char p[PATH_MAX];
    struct stat sb;
    if ((size_t)snprintf(p, sizeof p, "%s/index.json", dir) >= sizeof p || lstat(p, &sb) != 0) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        found = n > 10 && !strncmp(e->d_name, "shard_", 6) && strstr(e->d_name, "-of-") &&
            !strcmp(e->d_name + n - 4, ".bin");
    }
    closedir(d);
    return found;
}

/* A checkpoint root: a subdirectory step_* of dir is a step directory. */
static int is_ckpt_root(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    char p[PATH_MAX];
    for (struct dirent *e; !found && (e = readdir(d));)
        found = !strncmp(e->d_name, "step_", 5) && (size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p &&
            is_step_dir(p);
    closedir(d);
    return found;
}

static void put(char *dir, size_t cap, const char *s) {
    if (dir && cap) snprintf(dir, cap, "%s", s);
}

int sv_ckpt_out_in_step_dir(const char *path, char *dir, size_t cap) {
    char o[PATH_MAX];
    if (!path || !*path || sv_fileio_real_path(path, o) != SV_OK) {
        sv_err_clear();
        return 0;
    }
    char *base = strrchr(o, '/');
    if (base && !strcmp(base + 1, "latest")) { /* the root's `latest` (o is absolute) */
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%.*s", base == o ? 1 : (int)(base - o), o);
        if (is_ckpt_root(parent)) {
            put(dir, cap, parent);
            return 2;
        }
    }
    for (;;) { /* o itself, then every parent up to "/" */
        if (is_step_dir(o)) {
            put(dir, cap, o);
            return 1;
        }
        char *s = strrchr(o, '/');
        if (!s || (s == o && o[1] == 0)) return 0;
        if (s == o)
            o[1] = 0;
        else
            *s = 0;
    }
}

sv_status sv_ckpt_out_check_free(const char *path, const char *what) {
    SV_TRY(sv_ckpt_out_check(path, NULL, 0, what));
    char d[PATH_MAX];
    int in = sv_ckpt_out_in_step_dir(path, d, sizeof d);
    if (in == 1)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is inside the checkpoint step directory %s: refusing to write into a "
                       "checkpoint; choose a path outside it",
                       what, path, d);
    if (in == 2)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is the `latest` file of the checkpoint root %s: refusing to replace it; "
                       "choose another path",
                       what, path, d);
    return SV_OK;
}

sv_status sv_ckpt_out_check_run_dir(const char *path, const char *what) {
    char d[PATH_MAX];
    int in = sv_ckpt_out_in_step_dir(path, d, sizeof d);
    if (in == 1)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is inside the checkpoint step directory %s: refusing to write into a checkpoint (the "
                       "run would be taken for part of it); choose a path outside it",
                       what, path, d);
    if (in == 2)
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s is the `latest` file of the checkpoint root %s: refusing to replace it; choose "
                       "another path",
                       what, path, d);
    char o[PATH_MAX], l[PATH_MAX + 8];
    SV_TRY(sv_fileio_real_path(path, o));
    struct stat sb;
    /* every directory above path, up to "/" */
    for (char *s = strrchr(o, '/'); s && s[1];) { /* o is absolute; "/" has nothing above it */
        if (s == o)
            o[1] = 0;
        else
            *s = 0;
        int root = (size_t)snprintf(l, sizeof l, "%s/latest", o) < sizeof l && lstat(l, &sb) == 0 && is_ckpt_root(o);
        if (root)
            return SV_FAIL(SV_ERR_INVALID,
                           "%s %s is inside the checkpoint root %s (its step_* directories and `latest`): refusing "
                           "to write into a run's checkpoints; choose a path outside it",
                           what, path, o);
        s = o[1] ? strrchr(o, '/') : NULL;
    }
    return SV_OK;
}

sv_status sv_ckpt_out_check_earlier(const char *path, const char *what, sv_ckpt_out_earlier_fn earlier, const void *ctx,
                                    const char *kind) {
    SV_TRY(sv_ckpt_out_check_free(path, what));
    struct stat sb;
    if (lstat(path, &sb) == 0 && !earlier(path, ctx))
        return SV_FAIL(SV_ERR_INVALID,
                       "%s %s exists and is not an earlier %s: refusing to replace it (remove it or choose "
                       "another path)",
                       what, path, kind);
    return SV_OK;
}

sv_status sv_ckpt_out_check_parent(const char *path, const char *what) {
    if (!path || !*path) return SV_FAIL(SV_ERR_INVALID, "%s: empty path", what);
    char d[PATH_MAX];
    SV_TRY(sv_fileio_parent(path, d));
    struct stat sb;
    if (stat(d, &sb) != 0)
        return SV_FAIL(SV_ERR_INVALID, "%s %s: its directory %s %s (create it first)", what, path, d,
                       errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return SV_FAIL(SV_ERR_INVALID, "%s %s: %s is %s, not a directory", what, path, d,
                       sv_fileio_mode_kind(sb.st_mode));
    return sv_ckpt_out_check_writable(d, what);
}

sv_status sv_ckpt_out_check_writable(const char *dir, const char *what) {
    char d[PATH_MAX];
    if (snprintf(d, sizeof d, "%s", dir) >= (int)sizeof d) return SV_FAIL(SV_ERR_INVALID, "%s: path too long", what);
    struct stat sb;
    /* the deepest part of dir that exists: where the files, or the directories made for them, go */
    while (stat(d, &sb) != 0) {
        char up[PATH_MAX];
        if (errno != ENOENT || sv_fileio_parent(d, up) != SV_OK || !strcmp(up, d)) {
            sv_err_clear();
            return SV_OK; /* nothing to check here: the command's own checks name the problem */
        }
        memcpy(d, up, sizeof d);
    }
    if (S_ISDIR(sb.st_mode) && faccessat(AT_FDCWD, d, W_OK | X_OK, AT_EACCESS) != 0) /* effective ids, capabilities */
        return SV_FAIL(SV_ERR_INVALID, "%s: cannot write in %s: %s (checked before any work, which would be lost)",
                       what, d, strerror(errno));
    return SV_OK;
}

sv_status sv_ckpt_out_distinct(const char *const *paths, const char *const *what, int n) {
    char a[PATH_MAX], b[PATH_MAX];
    for (int i = 0; i < n; i++) {
        if (!paths[i]) continue;
        SV_TRY(sv_fileio_real_path(paths[i], a));
        for (int j = i + 1; j < n; j++) {
            if (!paths[j]) continue;
            SV_TRY(sv_fileio_real_path(paths[j], b));
            if (!strcmp(a, b))
                return SV_FAIL(SV_ERR_INVALID, "%s %s and %s %s are the same file (%s): give each output its own path",
                               what[i], paths[i], what[j], paths[j], a);
        }
    }
    return SV_OK;
}
