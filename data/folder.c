/* ImageFolder indexing: root/<class>/[subdirs/]NAME.jpg|.jpeg, torchvision class and sample order. */
#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data/dataset_impl.h"

static int is_jpeg_name(const char *n) {
    const char *dot = strrchr(n, '.');
    return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Append every JPEG under root/rel (recursively, following links as os.walk(followlinks=True)
 * does) to out as paths relative to root. depth bounds symlink loops. */
static sv_status walk(const char *root, const char *rel, sv_strlist *out, int depth) {
    char dir[8192];
    snprintf(dir, sizeof dir, "%s/%s", root, rel);
    DIR *dp = opendir(dir);
    if (!dp) return SV_FAIL(SV_ERR_IO, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    char path[4096];
    sv_status s = SV_OK;
    while ((e = readdir(dp))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int len = snprintf(path, sizeof path, "%s/%s", rel, e->d_name);
        if (len >= (int)sizeof path) continue;
        int isdir = e->d_type == DT_DIR, isreg = e->d_type == DT_REG;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            char full[8192];
            struct stat st;
            snprintf(full, sizeof full, "%s/%s", root, path);
            if (stat(full, &st) != 0) continue;
            isdir = S_ISDIR(st.st_mode);
            isreg = S_ISREG(st.st_mode);
        }
        if (isdir && depth < 32) {
            if ((s = walk(root, path, out, depth + 1)) != SV_OK) break;
        } else if (isreg && is_jpeg_name(e->d_name)) {
            if ((s = sv_strlist_push(out, path, (size_t)len)) != SV_OK) break;
        }
    }
    closedir(dp);
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
        /* class names go one per line into classes.txt: a line break cannot be stored there */
        if (isdir && strpbrk(e->d_name, "\n\r")) {
            s = SV_FAIL(SV_ERR_FORMAT, "dataset directory %s: class directory name '%s' contains a line break", root,
                        e->d_name);
            break;
        }
        if (isdir && (s = sv_strlist_push(&names, e->d_name, strlen(e->d_name))) != SV_OK) break;
    }
    closedir(dp);
    if (s != SV_OK) { sv_strlist_free(&names); return s; }
    if (names.n == 0) {
        sv_strlist_free(&names);
        return SV_FAIL(SV_ERR_NOT_FOUND, "dataset directory %s has no class sub-directories", root);
    }
    if (names.n > INT32_MAX) { sv_strlist_free(&names); return SV_FAIL(SV_ERR_UNSUPPORTED, "%s: too many classes", root); }
    const char **sorted = malloc(names.n * sizeof *sorted);
    if (!sorted) { sv_strlist_free(&names); return SV_FAIL(SV_ERR_OOM, "class list"); }
    for (size_t k = 0; k < names.n; k++) sorted[k] = sv_strlist_at(&names, k);
    qsort(sorted, names.n, sizeof *sorted, cmp_str);
    d->K = (int)names.n;
    size_t lab_cap = 0;
    for (size_t k = 0; k < names.n && s == SV_OK; k++) {
        if ((s = sv_strlist_push(&d->classes, sorted[k], strlen(sorted[k]))) != SV_OK) break;
        sv_strlist files = {0};
        if ((s = walk(root, sorted[k], &files, 0)) != SV_OK) { sv_strlist_free(&files); break; }
        if (files.n == 0) { /* an empty class keeps its index (torchvision allow_empty=True) */
            sv_strlist_free(&files);
            continue;
        }
        const char **fs = malloc(files.n * sizeof *fs);
        if (!fs) { sv_strlist_free(&files); s = SV_FAIL(SV_ERR_OOM, "file list"); break; }
        for (size_t i = 0; i < files.n; i++) fs[i] = sv_strlist_at(&files, i);
        qsort(fs, files.n, sizeof *fs, cmp_str);
        if (d->n + files.n > lab_cap) {
            size_t nc = lab_cap ? lab_cap : 1024;
            while (nc < d->n + files.n) nc *= 2;
            int32_t *nl = realloc(d->labels, nc * sizeof *nl);
            if (!nl) s = SV_FAIL(SV_ERR_OOM, "labels");
            else { d->labels = nl; lab_cap = nc; }
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
    if (s == SV_OK && d->n == 0) s = SV_FAIL(SV_ERR_NOT_FOUND, "dataset directory %s: no .jpg/.jpeg files in any class", root);
    return s;
}
