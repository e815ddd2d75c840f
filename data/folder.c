/* ImageFolder indexing: root/<class>/[subdirs/]NAME.jpg|.jpeg, torchvision class and sample order. */
#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/log.h"
#include "data/dataset_impl.h"

static int is_jpeg_name(const char *n) {
    const char *dot = strrchr(n, '.');
    return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* ---- directories already scanned: a set of (st_dev, st_ino), open addressing ---- */

typedef struct dir_id {
    dev_t dev;
    ino_t ino;
    int used;
} dir_id;

typedef struct dir_set {
    dir_id *slot;
    size_t cap, n; /* cap: a power of two, kept at most half full */
} dir_set;

static size_t dir_hash(dev_t dev, ino_t ino, size_t cap) {
    uint64_t h = ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)dev * 0xc2b2ae3d27d4eb4full);
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static sv_status dir_set_grow(dir_set *s) {
    size_t nc = s->cap ? s->cap * 2 : 64;
    dir_id *ns = calloc(nc, sizeof *ns);
    if (!ns) return SV_FAIL(SV_ERR_OOM, "dataset scan: out of memory for the directory set");
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slot[i].used) continue;
        size_t h = dir_hash(s->slot[i].dev, s->slot[i].ino, nc);
        while (ns[h].used) h = (h + 1) & (nc - 1);
        ns[h] = s->slot[i];
    }
    free(s->slot);
    s->slot = ns;
    s->cap = nc;
    return SV_OK;
}

/* Insert (dev, ino); *fresh = 0 when it was already there. */
static sv_status dir_set_add(dir_set *s, dev_t dev, ino_t ino, int *fresh) {
    if (2 * (s->n + 1) > s->cap) SV_TRY(dir_set_grow(s));
    size_t h = dir_hash(dev, ino, s->cap);
    for (; s->slot[h].used; h = (h + 1) & (s->cap - 1))
        if (s->slot[h].dev == dev && s->slot[h].ino == ino) {
            *fresh = 0;
            return SV_OK;
        }
    s->slot[h] = (dir_id){dev, ino, 1};
    s->n++;
    *fresh = 1;
    return SV_OK;
}

static void dir_set_free(dir_set *s) {
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* ---- recursive walk ---- */

/* What a directory entry is, following symbolic links (stat): 0, or the errno of stat. */
static int entry_kind(const char *root, const char *rel, const struct dirent *e, mode_t *mode) {
    *mode = 0;
    if (e->d_type == DT_DIR) return *mode = S_IFDIR, 0;
    if (e->d_type == DT_REG) return *mode = S_IFREG, 0;
    char full[8192];
    struct stat st;
    snprintf(full, sizeof full, "%s/%s", root, rel);
    if (stat(full, &st) != 0) return errno;
    *mode = st.st_mode;
    return 0;
}

/* Append every JPEG under root/rel to out as paths relative to root. Directory links are
 * followed (os.walk(followlinks=True) as torchvision's ImageFolder), but every real directory
 * (st_dev, st_ino) is scanned at most once per class, so a link to itself, a parent or a sibling
 * cannot index an image twice or loop. Sub-directories are visited in byte-wise name order, so
 * which of two paths to one directory is kept does not depend on readdir order. A JPEG-named
 * entry that is not a regular file (FIFO, socket, device, dangling link) is skipped with a
 * warning; it is never opened. */
static sv_status walk(const char *root, const char *rel, sv_strlist *out, dir_set *seen, int depth) {
    char dir[8192];
    snprintf(dir, sizeof dir, "%s/%s", root, rel);
    DIR *dp = opendir(dir);
    if (!dp) return SV_FAIL(SV_ERR_IO, "%s: %s", dir, strerror(errno));
    struct stat dst;
    int fresh = 0;
    sv_status s = fstat(dirfd(dp), &dst) != 0 ? SV_FAIL(SV_ERR_IO, "stat %s: %s", dir, strerror(errno))
                                              : dir_set_add(seen, dst.st_dev, dst.st_ino, &fresh);
    if (s != SV_OK || !fresh) {
        closedir(dp);
        return s;
    }
    sv_strlist subdirs = {0};
    struct dirent *e;
    char path[4096];
    while (s == SV_OK && (e = readdir(dp))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int len = snprintf(path, sizeof path, "%s/%s", rel, e->d_name);
        if (len >= (int)sizeof path) continue;
        mode_t mode;
        int err = entry_kind(root, path, e, &mode);
        if (!err && S_ISDIR(mode)) {
            if (depth < 32) s = sv_strlist_push(&subdirs, path, (size_t)len);
        } else if (is_jpeg_name(e->d_name)) {
            if (!err && S_ISREG(mode))
                s = sv_strlist_push(out, path, (size_t)len);
            else
                SV_WARN("dataset %s: skipping %s: %s", root, path, err ? strerror(err) : "not a regular file");
        }
    }
    closedir(dp);
    const char **order = s == SV_OK && subdirs.n ? malloc(subdirs.n * sizeof *order) : NULL;
    if (s == SV_OK && subdirs.n && !order) s = SV_FAIL(SV_ERR_OOM, "dataset scan: directory list");
    if (order) {
        for (size_t i = 0; i < subdirs.n; i++) order[i] = sv_strlist_at(&subdirs, i);
        qsort(order, subdirs.n, sizeof *order, cmp_str);
    }
    for (size_t i = 0; order && i < subdirs.n && s == SV_OK; i++) s = walk(root, order[i], out, seen, depth + 1);
    free(order);
    sv_strlist_free(&subdirs);
    return s;
}

sv_status sv_folder_scan(sv_dataset *d, const char *root) {
    d->root = strdup(root);
    if (!d->root) return SV_FAIL(SV_ERR_OOM, "dataset root");
    DIR *dp = opendir(root);
    if (!dp) return SV_FAIL(SV_ERR_NOT_FOUND, "dataset directory %s: %s", root, strerror(errno));
    sv_strlist names = {0};
    struct dirent *e;
    sv_status s = SV_OK;
    while ((e = readdir(dp))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int isdir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            char full[4096];
            struct stat st;
            snprintf(full, sizeof full, "%s/%s", root, e->d_name);
            isdir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        }
        /* class names go one per line into classes.txt: each must read back from there */
        const char *why = isdir ? sv_class_name_problem(e->d_name, strlen(e->d_name)) : NULL;
        if (why) {
            char esc[SV_ESC_CAP];
            s = SV_FAIL(SV_ERR_FORMAT,
                        "dataset directory %s: class directory name '%s' %s (it could not be one line of "
                        "classes.txt)",
                        root, sv_log_esc(e->d_name, esc, sizeof esc), why);
            break;
        }
        if (isdir && (s = sv_strlist_push(&names, e->d_name, strlen(e->d_name))) != SV_OK) break;
    }
    closedir(dp);
    if (s != SV_OK) {
        sv_strlist_free(&names);
        return s;
    }
    if (names.n == 0) {
        sv_strlist_free(&names);
        return SV_FAIL(SV_ERR_NOT_FOUND, "dataset directory %s has no class sub-directories", root);
    }
    if (names.n > INT32_MAX) {
        sv_strlist_free(&names);
        return SV_FAIL(SV_ERR_UNSUPPORTED, "%s: too many classes", root);
    }
    const char **sorted = malloc(names.n * sizeof *sorted);
    if (!sorted) {
        sv_strlist_free(&names);
        return SV_FAIL(SV_ERR_OOM, "class list");
    }
    for (size_t k = 0; k < names.n; k++) sorted[k] = sv_strlist_at(&names, k);
    qsort(sorted, names.n, sizeof *sorted, cmp_str);
    d->K = (int)names.n;
    size_t lab_cap = 0;
    for (size_t k = 0; k < names.n && s == SV_OK; k++) {
        if ((s = sv_strlist_push(&d->classes, sorted[k], strlen(sorted[k]))) != SV_OK) break;
        sv_strlist files = {0};
        dir_set seen = {0}; /* per class: a link into another class indexes its images here too */
        s = walk(root, sorted[k], &files, &seen, 0);
        dir_set_free(&seen);
        if (s != SV_OK) {
            sv_strlist_free(&files);
            break;
        }
        if (files.n == 0) { /* an empty class keeps its index (torchvision allow_empty=True) */
            sv_strlist_free(&files);
            continue;
        }
        const char **fs = malloc(files.n * sizeof *fs);
        if (!fs) {
            sv_strlist_free(&files);
            s = SV_FAIL(SV_ERR_OOM, "file list");
            break;
        }
        for (size_t i = 0; i < files.n; i++) fs[i] = sv_strlist_at(&files, i);
        qsort(fs, files.n, sizeof *fs, cmp_str);
        if (d->n + files.n > lab_cap) {
            size_t nc = lab_cap ? lab_cap : 1024;
            while (nc < d->n + files.n) nc *= 2;
            int32_t *nl = realloc(d->labels, nc * sizeof *nl);
            if (!nl)
                s = SV_FAIL(SV_ERR_OOM, "labels");
            else {
                d->labels = nl;
                lab_cap = nc;
            }
        }
        for (size_t i = 0; i < files.n && s == SV_OK; i++) {
            s = sv_strlist_push(&d->paths, fs[i], strlen(fs[i]));
            d->labels[d->n++] = (int32_t)k;
        }
        free(fs);
        sv_strlist_free(&files);
    }
    free(sorted);
    sv_strlist_free(&names);
    if (s == SV_OK && d->n == 0)
        s = SV_FAIL(SV_ERR_NOT_FOUND, "dataset directory %s: no .jpg/.jpeg files in any class", root);
    return s;
}
