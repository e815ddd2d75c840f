#include "data/dataset_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "core/repeat.h"
#include "core/rng.h"
#include "data/synth.h"

/* Largest file accepted as one image (ImageFolder file or tar member): a JPEG at the 89.5 M-pixel
 * guard of the decoder is far smaller; anything bigger is refused before it is allocated. */
#define SV_DATASET_MAX_FILE_BYTES ((uint64_t)256 << 20)
/* Largest class-name list (classes.txt, CIFAR name lists). */
#define SV_CLASSES_MAX_BYTES ((size_t)64 << 20)

sv_status sv_strlist_push(sv_strlist *l, const char *s, size_t slen) {
    if (l->len + slen + 1 > l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4096;
        while (nc < l->len + slen + 1) nc *= 2;
        char *b = realloc(l->blob, nc);
        if (!b) return SV_FAIL(SV_ERR_OOM, "dataset: out of memory for names");
        l->blob = b;
        l->cap = nc;
    }
    if (l->n == l->ncap) {
        size_t nc = l->ncap ? l->ncap * 2 : 256;
        size_t *o = realloc(l->off, nc * sizeof *o);
        if (!o) return SV_FAIL(SV_ERR_OOM, "dataset: out of memory for names");
        l->off = o;
        l->ncap = nc;
    }
    memcpy(l->blob + l->len, s, slen);
    l->blob[l->len + slen] = 0;
    l->off[l->n++] = l->len;
    l->len += slen + 1;
    return SV_OK;
}

void sv_strlist_free(sv_strlist *l) {
    free(l->blob);
    free(l->off);
    memset(l, 0, sizeof *l);
}

sv_dataset_opts sv_dataset_opts_default(void) {
    sv_dataset_opts o;
    memset(&o, 0, sizeof o);
    return o;
}

static sv_status open_synthetic(sv_dataset *d, const sv_dataset_opts *o) {
    d->kind = SV_DATASET_SYNTHETIC;
    d->n = o->synth_samples ? (size_t)o->synth_samples : 50000;
    d->K = o->synth_classes ? o->synth_classes : 10;
    d->synth_img = o->synth_img ? o->synth_img : 32;
    d->synth_channels = o->synth_channels ? o->synth_channels : 3;
    d->synth_seed = o->synth_seed;
    if (d->K < 1 || d->synth_img < 1 || d->synth_img > 1024 || (d->synth_channels != 1 && d->synth_channels != 3))
        return SV_FAIL(SV_ERR_INVALID, "synthetic data: classes %d (>= 1), img %d (1..1024), channels %d (1 or 3)",
                       d->K, d->synth_img, d->synth_channels);
    d->labels = malloc(d->n * sizeof *d->labels);
    if (!d->labels) return SV_FAIL(SV_ERR_OOM, "synthetic data: %zu labels", d->n);
    for (size_t i = 0; i < d->n; i++) d->labels[i] = sv_synth_label(i, d->K);
    char name[32];
    for (int k = 0; k < d->K; k++) {
        int len = snprintf(name, sizeof name, "class_%03d", k);
        SV_TRY(sv_strlist_push(&d->classes, name, (size_t)len));
    }
    return SV_OK;
}

sv_dataset_kind sv_dataset_spec_kind(const char *spec, int *exists) {
    struct stat st;
    int ex = stat(spec, &st) == 0;
    if (exists) *exists = ex;
    size_t sl = strlen(spec);
    if (strcmp(spec, "synthetic") == 0) return SV_DATASET_SYNTHETIC;
    if (ex && S_ISDIR(st.st_mode)) return SV_DATASET_FOLDER;
    return strchr(spec, '{') || (sl > 4 && strcmp(spec + sl - 4, ".tar") == 0) ? SV_DATASET_TAR : SV_DATASET_FOLDER;
}

sv_status sv_dataset_open(const char *spec, const sv_dataset_opts *o, sv_dataset **out) {
    sv_dataset_opts def = sv_dataset_opts_default();
    if (!o) o = &def;
    *out = NULL;
    sv_dataset *d = calloc(1, sizeof *d);
    if (!d) return SV_FAIL(SV_ERR_OOM, "dataset: out of memory");
    sv_status s;
    int exists;
    sv_dataset_kind kind = sv_dataset_spec_kind(spec, &exists);
    if (kind == SV_DATASET_SYNTHETIC) {
        /* the keyword wins over a path of that name in the working directory: said, not silent */
        if (exists)
            SV_WARN_ALIKE("data 'synthetic' is the generated data set; the '%s' in the working directory is not read "
                          "(name it ./synthetic to read it)",
                          spec);
        s = open_synthetic(d, o);
    } else if (kind == SV_DATASET_TAR) {
        d->kind = SV_DATASET_TAR;
        s = sv_tar_scan(d, spec, exists, o->classes_file, o->classes_fallback);
    } else {
        d->kind = SV_DATASET_FOLDER;
        s = sv_folder_scan(d, spec, o->leave_out_unusable);
    }
    if (s != SV_OK) {
        sv_err_frame(__FILE__, __LINE__);
        sv_dataset_close(d);
        return s;
    }
    if (d->n > UINT32_MAX) {
        sv_dataset_close(d);
        return SV_FAIL(SV_ERR_UNSUPPORTED, "dataset %s: %zu samples exceed 2^32", spec, d->n);
    }
    *out = d;
    return SV_OK;
}

void sv_dataset_close(sv_dataset *d) {
    if (!d) return;
    if (d->fds)
        for (size_t i = 0; i < d->shards.n; i++)
            if (d->fds[i] >= 0) close(d->fds[i]);
    free(d->fds);
    sv_strlist_free(&d->classes);
    sv_strlist_free(&d->paths);
    sv_strlist_free(&d->left_out);
    sv_strlist_free(&d->shards);
    sv_strlist_free(&d->keys);
    free(d->labels);
    free(d->root);
    free(d->shard_of);
    free(d->offset);
    free(d->size);
    free(d);
}

sv_dataset_kind sv_dataset_kind_of(const sv_dataset *d) { return d->kind; }
size_t sv_dataset_len(const sv_dataset *d) { return d->n; }
size_t sv_dataset_left_out(const sv_dataset *d) { return d->left_out.n; }
const char *sv_dataset_left_out_name(const sv_dataset *d, size_t i) { return sv_strlist_at(&d->left_out, i); }
int sv_dataset_num_classes(const sv_dataset *d) { return d->K; }
const char *sv_dataset_class_name(const sv_dataset *d, int k) {
    return k >= 0 && k < d->K ? sv_strlist_at(&d->classes, (size_t)k) : "?";
}
int sv_dataset_label(const sv_dataset *d, size_t i) { return d->labels[i]; }

void sv_dataset_synth_params(const sv_dataset *d, int *img, int *channels, uint64_t *seed) {
    *img = d->synth_img;
    *channels = d->synth_channels;
    *seed = d->synth_seed;
}

void sv_dataset_sample_name(const sv_dataset *d, size_t i, char *buf, size_t cap) {
    switch (d->kind) {
    case SV_DATASET_FOLDER: snprintf(buf, cap, "%s/%s", d->root, sv_strlist_at(&d->paths, i)); break;
    case SV_DATASET_TAR:
        snprintf(buf, cap, "%s:%s", sv_strlist_at(&d->shards, d->shard_of[i]), sv_strlist_at(&d->keys, i));
        break;
    default: snprintf(buf, cap, "synthetic:%zu", i); break;
    }
}

uint64_t sv_dataset_fingerprint(const sv_dataset *d) {
    uint64_t h = sv_hash2(sv_hash2((uint64_t)d->kind, (uint64_t)d->n), (uint64_t)d->K);
    for (int k = 0; k < d->K; k++) h = sv_hash_str(h, sv_dataset_class_name(d, k));
    if (d->kind == SV_DATASET_SYNTHETIC)
        return sv_hash2(sv_hash2(h, d->synth_seed), (uint64_t)d->synth_img << 8 | (uint64_t)d->synth_channels);
    if (d->kind == SV_DATASET_TAR)
        for (size_t s = 0; s < d->shards.n; s++) {
            const char *name = sv_strlist_at(&d->shards, s), *slash = strrchr(name, '/');
            h = sv_hash_str(h, slash ? slash + 1 : name);
        }
    for (size_t i = 0; i < d->n; i++) {
        h = sv_hash2(h, (uint64_t)d->labels[i]);
        if (d->kind == SV_DATASET_FOLDER)
            h = sv_hash_str(h, sv_strlist_at(&d->paths, i));
        else
            h = sv_hash2(sv_hash_str(sv_hash2(h, d->shard_of[i]), sv_strlist_at(&d->keys, i)), d->size[i]);
    }
    return h;
}

void sv_dataset_id(const sv_dataset *d, int64_t id[SV_DATASET_ID_N]) {
    id[0] = (int64_t)sv_dataset_fingerprint(d);
    id[1] = (int64_t)d->n;
    id[2] = d->K;
}

sv_status sv_dataset_ids_same(const int64_t *ids, int world, const char *flag, const char *spec) {
    enum { NAMED = 4 }; /* ranks that differ named in the message, at most */
    char ranks[768];
    int differ = 0;
    size_t at = 0;
    for (int r = 0; r < world; r++) {
        const int64_t *v = ids + (size_t)r * SV_DATASET_ID_N;
        if (r > 0 && !memcmp(v, ids, SV_DATASET_ID_N * sizeof *v)) continue;
        if (r > 0 && differ++ >= NAMED) continue;
        int same_counts = r > 0 && v[1] == ids[1] && v[2] == ids[2];
        at +=
            (size_t)snprintf(ranks + at, sizeof ranks - at, "%srank %d: %lld samples in %lld classes%s", r ? ", " : "",
                             r, (long long)v[1], (long long)v[2], same_counts ? " (other files or labels)" : "");
        if (at >= sizeof ranks) at = sizeof ranks - 1; /* cut: the rest is not written */
    }
    if (!differ) return SV_OK;
    if (differ > NAMED) snprintf(ranks + at, sizeof ranks - at, ", and %d ranks more", differ - NAMED);
    return SV_FAIL(SV_ERR_INVALID,
                   "%s %s: the ranks indexed different data sets (%s): every rank must see the same files (a relative "
                   "path from another working directory, or a node that does not see the same files yet)",
                   flag, spec, ranks);
}

static sv_status grow_buf(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return SV_OK;
    uint8_t *p = realloc(*buf, need);
    if (!p) return SV_FAIL(SV_ERR_OOM, "cannot allocate %zu bytes for a file", need);
    *buf = p;
    *cap = need;
    return SV_OK;
}

sv_status sv_dataset_read(const sv_dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len) {
    if (i >= d->n) return SV_FAIL(SV_ERR_INVALID, "sample %zu out of range (%zu samples)", i, d->n);
    if (d->kind == SV_DATASET_TAR) {
        if (d->size[i] > SV_DATASET_MAX_FILE_BYTES)
            return SV_FAIL(SV_ERR_INVALID, "%s: member %s is %llu bytes, more than the %llu-byte limit for one image",
                           sv_strlist_at(&d->shards, d->shard_of[i]), sv_strlist_at(&d->keys, i),
                           (unsigned long long)d->size[i], (unsigned long long)SV_DATASET_MAX_FILE_BYTES);
        size_t sz = (size_t)d->size[i];
        SV_TRY(grow_buf(buf, cap, sz ? sz : 1));
        ssize_t r = pread(d->fds[d->shard_of[i]], *buf, sz, (off_t)d->offset[i]);
        if (r != (ssize_t)sz)
            return SV_FAIL(SV_ERR_IO, "%s: short read of key %s", sv_strlist_at(&d->shards, d->shard_of[i]),
                           sv_strlist_at(&d->keys, i));
        *len = sz;
        return SV_OK;
    }
    if (d->kind != SV_DATASET_FOLDER) return SV_FAIL(SV_ERR_INVALID, "synthetic dataset has no files");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->root, sv_strlist_at(&d->paths, i));
    /* guarded open: a file replaced by a FIFO or device after the scan is refused, never read */
    int fd;
    uint64_t size;
    SV_TRY(sv_fileio_open_read(path, &fd, &size));
    sv_status s = size > SV_DATASET_MAX_FILE_BYTES
        ? SV_FAIL(SV_ERR_INVALID, "%s is %llu bytes, more than the %llu-byte limit for one image", path,
                  (unsigned long long)size, (unsigned long long)SV_DATASET_MAX_FILE_BYTES)
        : grow_buf(buf, cap, size ? (size_t)size : 1);
    if (s == SV_OK) s = sv_fileio_pread_exact(fd, *buf, (size_t)size, 0, path);
    close(fd);
    *len = (size_t)size;
    return s;
}

sv_status sv_classes_write_names(const char *path, const char *const *names, int n) {
    FILE *f;
    SV_TRY(sv_fileio_fopen_write(path, SV_FILEIO_TRUNC, &f));
    for (int k = 0; k < n; k++) fprintf(f, "%s\n", names[k]);
    if (fclose(f) != 0) return SV_FAIL(SV_ERR_IO, "%s: write failed", path);
    return SV_OK;
}

sv_status sv_classes_write(const char *path, const sv_dataset *d) {
    FILE *f;
    SV_TRY(sv_fileio_fopen_write(path, SV_FILEIO_TRUNC, &f));
    for (int k = 0; k < d->K; k++) fprintf(f, "%s\n", sv_dataset_class_name(d, k));
    if (fclose(f) != 0) return SV_FAIL(SV_ERR_IO, "%s: write failed", path);
    return SV_OK;
}

const char *sv_class_name_problem(const char *s, size_t len) {
    if (len == 0) return "is empty";
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0) return "holds a NUL byte";
        if (c == '\n' || c == '\r') return "holds a line break";
        size_t k = sv_json_utf8_seq((const unsigned char *)s + i, len - i);
        if (!k) return "is not valid UTF-8 text";
        i += k;
    }
    return NULL;
}

/* Two class names (elements of the name array) compared as text. */
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

sv_status sv_classes_read(const char *path, char ***names, int *n) { return sv_classes_read_list(path, 0, names, n); }

sv_status sv_classes_read_list(const char *path, int trailing_empty_ok, char ***names, int *n) {
    char *text;
    size_t got;
    /* guarded read: a FIFO or device named classes.txt is refused without blocking */
    SV_TRY(sv_fileio_read_small(path, SV_CLASSES_MAX_BYTES, &text, &got));
    /* a UTF-8 byte order mark (Windows editors write one) is no part of the first name */
    size_t start = got >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    while (trailing_empty_ok) { /* the empty lines ("\n", "\r\n") after the last name's '\n' */
        if (got >= start + 2 && text[got - 1] == '\n' && text[got - 2] == '\n')
            got -= 1;
        else if (got >= start + 3 && text[got - 1] == '\n' && text[got - 2] == '\r' && text[got - 3] == '\n')
            got -= 2;
        else
            break;
    }
    text[got] = 0;
    size_t lines = 0; /* lines are split on '\n' over all `got` bytes: a NUL inside ends nothing */
    for (size_t i = start; i < got; i++) lines += text[i] == '\n';
    if (got > start && text[got - 1] != '\n') lines++;
    if (lines == 0) {
        free(text);
        return SV_FAIL(SV_ERR_FORMAT, "class list %s is empty", path);
    }
    if (lines > 10000000) {
        free(text);
        return SV_FAIL(SV_ERR_FORMAT, "class list %s: more than 10000000 lines", path);
    }
    char **arr = malloc((lines + 1) * sizeof(char *) + got + 1);
    if (!arr) {
        free(text);
        return SV_FAIL(SV_ERR_OOM, "class list %s", path);
    }
    char *store = (char *)(arr + lines + 1);
    memcpy(store, text, got + 1);
    free(text);
    int k = 0;
    for (size_t at = start; at < got; k++) {
        char *p = store + at, *e = memchr(p, '\n', got - at);
        size_t L = e ? (size_t)(e - p) : got - at;
        at += L + 1;
        p[L] = 0;
        if (L && p[L - 1] == '\r') p[--L] = 0;
        const char *why = sv_class_name_problem(p, L);
        if (why) {
            free(arr);
            return SV_FAIL(SV_ERR_FORMAT, "class list %s: line %d %s (a class list is UTF-8 text, one name per line)",
                           path, k + 1, why);
        }
        arr[k] = p;
    }
    /* the earliest line that repeats an earlier name, named with the name's first line */
    size_t first, again;
    int found = sv_first_repeat(arr, (size_t)k, sizeof *arr, by_name, &first, &again);
    if (found) {
        char e[SV_ESC_CAP];
        sv_status st = found < 0
            ? SV_FAIL(SV_ERR_OOM, "%d class names", k)
            : SV_FAIL(SV_ERR_FORMAT,
                      "class list %s: line %d repeats the name \"%s\" of line %d (class names must differ)", path,
                      (int)again + 1, sv_log_esc(arr[again], e, sizeof e), (int)first + 1);
        free(arr);
        return st;
    }
    *names = arr;
    *n = k;
    return SV_OK;
}

/* ---- brace expansion -------------------------------------------------------------------- */

/* Expands the braces of pat from byte `from` on (what comes before is plain text: the prefix and
 * the items already put in) into acc. A brace holds a range "a..b" or a list "x,y" whose items
 * may be empty; one with neither ("{v2}", "{}") is text, as in bash and Python's braceexpand. */
static sv_status expand_into(const char *pat, size_t from, sv_strlist *acc) {
    const char *lb, *rb;
    char body[256], buf[4096];
    for (;;) { /* the first brace from `from` on that holds a range or a list */
        lb = strchr(pat + from, '{');
        if (!lb) return sv_strlist_push(acc, pat, strlen(pat));
        rb = strchr(lb, '}');
        if (!rb) return SV_FAIL(SV_ERR_INVALID, "pattern %s: '{' without '}'", pat);
        size_t inner = (size_t)(rb - lb - 1);
        if (inner >= sizeof body || strlen(pat) + 32 >= sizeof buf)
            return SV_FAIL(SV_ERR_INVALID, "pattern %s too long", pat);
        memcpy(body, lb + 1, inner);
        body[inner] = 0;
        if (strstr(body, "..") || strchr(body, ',')) break;
        from = (size_t)(rb + 1 - pat);
    }
    size_t pre = (size_t)(lb - pat);
    const char *dots = strstr(body, "..");
    if (dots) {
        char *end1, *end2;
        unsigned long long a = strtoull(body, &end1, 10), b = strtoull(dots + 2, &end2, 10);
        if (end1 != dots || *end2 || end1 == body || dots[2] == 0)
            return SV_FAIL(SV_ERR_INVALID, "pattern %s: bad range {%s}", pat, body);
        if (b < a || b - a >= 1000000)
            return SV_FAIL(SV_ERR_INVALID, "pattern %s: range {%s} empty or too big", pat, body);
        int width = (int)(dots - body);
        for (unsigned long long v = a; v <= b; v++) {
            int len = snprintf(buf, sizeof buf, "%.*s%0*llu%s", (int)pre, pat, width, v, rb + 1);
            SV_TRY(expand_into(buf, (size_t)len - strlen(rb + 1), acc));
            if (acc->n > 1000000) return SV_FAIL(SV_ERR_INVALID, "pattern %s: too many expansions", pat);
        }
        return SV_OK;
    }
    /* every item counts, an empty one too: "s{,_x}" is "s" and "s_x" */
    for (char *item = body;;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = 0;
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)pre, pat, item, rb + 1);
        SV_TRY(expand_into(buf, pre + strlen(item), acc));
        if (!comma) return SV_OK;
        item = comma + 1;
    }
}

sv_status sv_expand_braces(const char *pattern, char ***out, size_t *n) {
    sv_strlist acc = {0};
    sv_status s = expand_into(pattern, 0, &acc);
    if (s != SV_OK || acc.n == 0) {
        sv_strlist_free(&acc);
        return s != SV_OK ? s : SV_FAIL(SV_ERR_INVALID, "pattern %s expands to nothing", pattern);
    }
    char **arr = malloc(acc.n * sizeof(char *) + acc.len);
    if (!arr) {
        sv_strlist_free(&acc);
        return SV_FAIL(SV_ERR_OOM, "pattern %s", pattern);
    }
    char *store = (char *)(arr + acc.n);
    memcpy(store, acc.blob, acc.len);
    for (size_t i = 0; i < acc.n; i++) arr[i] = store + acc.off[i];
    *out = arr;
    *n = acc.n;
    sv_strlist_free(&acc);
    return SV_OK;
}
