/* ImageFolder indexing: root/<class>/[subdirs/]NAME.jpg|.jpeg, torchvision class and sample order. */
#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/log.h"
#include "data/dataset_impl.h"
#include "data/prep.h" /* SV_PREP_MARKER */

static int is_jpeg_name(const char *n) {
    const char *dot = strrchr(n, '.');
    return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

/* An image file of a format the reader does not decode (ImageFolder reads JPEG only): such files
 * are not samples, but they are counted and named in a warning, never passed over silently. */
static int is_other_image_name(const char *n) {
    static const char *const ext[] = {".png", ".bmp", ".gif",  ".webp", ".tif", ".tiff", ".ppm",  ".pgm",
                                      ".pbm", ".pnm", ".jfif", ".jpe",  ".jp2", ".heic", ".heif", ".avif"};
    const char *dot = strrchr(n, '.');
    for (size_t i = 0; dot && i < sizeof ext / sizeof *ext; i++)
        if (strcasecmp(dot, ext[i]) == 0) return 1;
    return 0;
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

static int dir_set_has(const dir_set *s, dev_t dev, ino_t ino) {
    if (!s->cap) return 0;
    for (size_t h = dir_hash(dev, ino, s->cap); s->slot[h].used; h = (h + 1) & (s->cap - 1))
        if (s->slot[h].dev == dev && s->slot[h].ino == ino) return 1;
    return 0;
}

static void dir_set_free(dir_set *s) {
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* ---- recursive walk ---- */

typedef struct scan_ctx {
    const char *root;
    sv_dataset *d;         /* d->left_out collects the entries left out (leave_out) */
    int leave_out;         /* sv_dataset_opts.leave_out_unusable */
    size_t other_images;   /* is_other_image_name files seen (not samples) */
    char other_first[256]; /* the first of them, root-relative, escaped */
} scan_ctx;

/* Why an image-named entry that is not a directory cannot be a sample, or NULL when it can:
 * err = errno of fstatat following links (0: mode is valid). */
static const char *unusable_why(int dfd, const char *name, int err, mode_t mode, char *buf, size_t cap) {
    struct stat lst;
    if (err == ENOENT && fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode))
        return "a dangling symbolic link (its target does not exist)";
    if (err) {
        snprintf(buf, cap, "cannot be examined (stat: %s)", strerror(err));
        return buf;
    }
    if (S_ISREG(mode)) return NULL;
    return S_ISFIFO(mode)                ? "a FIFO, not a regular file"
        : S_ISSOCK(mode)                 ? "a socket, not a regular file"
        : S_ISCHR(mode) || S_ISBLK(mode) ? "a device, not a regular file"
                                         : "not a regular file";
}

/* The one rule for entries that would be samples but cannot be: an image-named entry (by
 * is_jpeg_name) that is not a readable regular file, or any entry whose path is too long to open,
 * fails the scan naming it and why; with leave_out it is left out, with a warning, and recorded
 * in d->left_out (evaluation reports them as skipped). It is never opened. */
static sv_status unusable(scan_ctx *c, const char *dir, const char *name, const char *why) {
    size_t dl = strlen(dir), nl = strlen(name);
    char *full = malloc(dl + nl + 2);
    if (!full) return SV_FAIL(SV_ERR_OOM, "dataset scan: entry name");
    memcpy(full, dir, dl);
    full[dl] = '/';
    memcpy(full + dl + 1, name, nl + 1);
    char esc[2 * SV_ESC_CAP + 2], e1[SV_ESC_CAP], e2[SV_ESC_CAP]; /* a long directory is cut, the name kept */
    snprintf(esc, sizeof esc, "%s/%s", sv_log_esc(dir, e1, sizeof e1), sv_log_esc(name, e2, sizeof e2));
    sv_status s = SV_OK;
    if (!c->leave_out)
        s = SV_FAIL(SV_ERR_FORMAT,
                    "dataset %s: %s is %s: it cannot be a sample, and the data set leaves no image out silently "
                    "(fix or remove it; eval --skip-unreadable leaves such entries out and records them in "
                    "eval.json)",
                    c->root, esc, why);
    else {
        SV_WARN_ALIKE("dataset %s: leaving out %s: %s", c->root, esc, why);
        s = sv_strlist_push(&c->d->left_out, full, dl + nl + 1);
    }
    free(full);
    return s;
}

/* Append every JPEG under root/rel to out as paths relative to root. Directory links are
 * followed (os.walk(followlinks=True) as torchvision's ImageFolder), but every real directory
 * (st_dev, st_ino) is scanned at most once per class, so a link to itself, a parent or a sibling
 * cannot index an image twice or loop. Sub-directories are visited in byte-wise name order, so
 * which of two paths to one directory is kept does not depend on readdir order. There is no
 * depth limit (as os.walk): the nesting is bounded by the path length (a full path must fit in
 * 4095 bytes, else the entry is unusable), and the path buffers live on the heap, so the
 * recursion uses little stack per level. Entries that cannot be samples: unusable(). */
static sv_status walk(scan_ctx *c, const char *rel, sv_strlist *out, dir_set *seen) {
    enum { PATH_CAP = 4096 };
    char *dir = malloc(2 * PATH_CAP), *path = dir ? dir + PATH_CAP : NULL; /* root/rel, rel/NAME */
    if (!dir) return SV_FAIL(SV_ERR_OOM, "dataset scan: path buffers");
    size_t rootlen = strlen(c->root);
    snprintf(dir, PATH_CAP, "%s/%s", c->root, rel);
    DIR *dp = opendir(dir);
    if (!dp) {
        sv_status s = SV_FAIL(SV_ERR_IO, "%s: %s", dir, strerror(errno));
        free(dir);
        return s;
    }
    struct stat dst;
    int fresh = 0;
    sv_status s = fstat(dirfd(dp), &dst) != 0 ? SV_FAIL(SV_ERR_IO, "stat %s: %s", dir, strerror(errno))
                                              : dir_set_add(seen, dst.st_dev, dst.st_ino, &fresh);
    if (s != SV_OK || !fresh) {
        closedir(dp);
        free(dir);
        return s;
    }
    sv_strlist subdirs = {0};
    struct dirent *e;
    char whybuf[160];
    int dfd = dirfd(dp);
    while (s == SV_OK && (e = readdir(dp))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int len = snprintf(path, PATH_CAP, "%s/%s", rel, e->d_name);
        /* the full path root/rel/name must fit the buffer that opens it (data/dataset.c) */
        int too_long = len < 0 || rootlen + 1 + (size_t)len >= PATH_CAP;
        struct stat st; /* following links, relative to this directory: works at any path length */
        int err = 0;
        mode_t mode = e->d_type == DT_DIR ? S_IFDIR : e->d_type == DT_REG ? S_IFREG : 0;
        if (!mode || too_long) {
            err = fstatat(dfd, e->d_name, &st, 0) != 0 ? errno : 0;
            mode = err ? 0 : st.st_mode;
        }
        if (!err && S_ISDIR(mode)) {
            if (!too_long)
                s = sv_strlist_push(&subdirs, path, (size_t)len);
            else if (!dir_set_has(seen, st.st_dev, st.st_ino)) /* a link back up is no loss */
                s = unusable(c, dir, e->d_name,
                             "a directory whose path is longer than 4095 bytes: it cannot be scanned, so images in "
                             "it could not be indexed");
            continue;
        }
        if (!is_jpeg_name(e->d_name)) { /* not a JPEG name: not a sample (README, .DS_Store) */
            if (is_other_image_name(e->d_name) && c->other_images++ == 0)
                sv_log_esc(path, c->other_first, sizeof c->other_first);
            continue;
        }
        const char *why = unusable_why(dfd, e->d_name, err, mode, whybuf, sizeof whybuf);
        if (!why && too_long) why = "an image whose path is longer than 4095 bytes (too long to open)";
        s = why ? unusable(c, dir, e->d_name, why) : sv_strlist_push(out, path, (size_t)len);
    }
    closedir(dp);
    free(dir);
    const char **order = s == SV_OK && subdirs.n ? malloc(subdirs.n * sizeof *order) : NULL;
    if (s == SV_OK && subdirs.n && !order) s = SV_FAIL(SV_ERR_OOM, "dataset scan: directory list");
    if (order) {
        for (size_t i = 0; i < subdirs.n; i++) order[i] = sv_strlist_at(&subdirs, i);
        qsort(order, subdirs.n, sizeof *order, cmp_str);
    }
    for (size_t i = 0; order && i < subdirs.n && s == SV_OK; i++) s = walk(c, order[i], out, seen);
    free(order);
    sv_strlist_free(&subdirs);
    return s;
}

sv_status sv_folder_scan(sv_dataset *d, const char *root, int leave_out) {
    scan_ctx ctx = {.root = root, .d = d, .leave_out = leave_out != 0};
    d->root = strdup(root);
    if (!d->root) return SV_FAIL(SV_ERR_OOM, "dataset root");
    DIR *dp = opendir(root);
    if (!dp) return SV_FAIL(SV_ERR_NOT_FOUND, "dataset directory %s: %s", root, strerror(errno));
    struct stat mk;
    if (fstatat(dirfd(dp), SV_PREP_MARKER, &mk, AT_SYMLINK_NOFOLLOW) == 0) {
        /* the root of a `shardvit prep` import: its train/ and test/ would be read as two classes */
        closedir(dp);
        return SV_FAIL(SV_ERR_INVALID,
                       "dataset directory %s is the output of `shardvit prep` (it holds %s), not a class folder: "
                       "its training images are in %s/train (and its test images, for --val-data or eval, in "
                       "%s/test)",
                       root, SV_PREP_MARKER, root, root);
    }
    sv_strlist names = {0};
    struct dirent *e;
    sv_status s = SV_OK;
    while ((e = readdir(dp))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int isdir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            struct stat st;
            if (fstatat(dirfd(dp), e->d_name, &st, 0) != 0) {
                /* a dangling link (unmounted storage) may be a class directory: leaving it out
                 * would shift every later class's index */
                char esc[SV_ESC_CAP];
                s = SV_FAIL(SV_ERR_IO,
                            "dataset directory %s: entry '%s' cannot be examined (%s%s): it may be a class "
                            "directory, and leaving a class out would renumber the classes after it; fix or "
                            "remove it",
                            root, sv_log_esc(e->d_name, esc, sizeof esc), strerror(errno),
                            errno == ENOENT ? ": a dangling symbolic link" : "");
                break;
            }
            isdir = S_ISDIR(st.st_mode);
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
    size_t lab_cap = 0, n_empty = 0;
    const char *first_empty = NULL;
    for (size_t k = 0; k < names.n && s == SV_OK; k++) {
        if ((s = sv_strlist_push(&d->classes, sorted[k], strlen(sorted[k]))) != SV_OK) break;
        sv_strlist files = {0};
        dir_set seen = {0}; /* per class: a link into another class indexes its images here too */
        s = walk(&ctx, sorted[k], &files, &seen);
        dir_set_free(&seen);
        if (s != SV_OK) {
            sv_strlist_free(&files);
            break;
        }
        if (files.n == 0) { /* an empty class keeps its index (torchvision allow_empty=True), with a warning */
            if (n_empty++ == 0) first_empty = sorted[k];
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
    /* every rank scans the same tree: one warning (rank 0's) is enough */
    if (s == SV_OK && n_empty && d->n && sv_log_rank() == 0) {
        char esc[SV_ESC_CAP];
        SV_WARN_ALIKE("dataset %s: %zu of %d classes have no .jpg/.jpeg image (the first: '%s'); they keep their label "
                      "indices, so the class numbering matches the other splits",
                      root, n_empty, d->K, sv_log_esc(first_empty, esc, sizeof esc));
    }
    if (s == SV_OK && ctx.other_images && sv_log_rank() == 0)
        SV_WARN_ALIKE(
            "dataset %s: %zu image files of formats other than JPEG are not read (the first: %s): ImageFolder "
            "reads .jpg / .jpeg only; convert them to JPEG to use them",
            root, ctx.other_images, ctx.other_first);
    free(sorted);
    sv_strlist_free(&names);
    if (s == SV_OK && d->left_out.n > 1) { /* recorded in byte-wise order, whatever readdir's */
        const char **lo = malloc(d->left_out.n * sizeof *lo);
        sv_strlist sorted_lo = {0};
        if (!lo) s = SV_FAIL(SV_ERR_OOM, "left-out list");
        for (size_t i = 0; lo && i < d->left_out.n; i++) lo[i] = sv_strlist_at(&d->left_out, i);
        if (lo) qsort(lo, d->left_out.n, sizeof *lo, cmp_str);
        for (size_t i = 0; lo && i < d->left_out.n && s == SV_OK; i++)
            s = sv_strlist_push(&sorted_lo, lo[i], strlen(lo[i]));
        free(lo);
        if (s == SV_OK) {
            sv_strlist_free(&d->left_out);
            d->left_out = sorted_lo;
        } else
            sv_strlist_free(&sorted_lo);
    }
    if (s == SV_OK && d->n == 0)
        s = SV_FAIL(SV_ERR_NOT_FOUND,
                    "dataset directory %s: no .jpg/.jpeg files in any class (%zu entries left out, %zu image files of "
                    "other formats not read)",
                    root, d->left_out.n, ctx.other_images);
    return s;
}
