/* shardvit data: prep's output-directory marker (SV_PREP_MARKER): what it records (the data set,
 * the options, the counts, an imagefolder source's contents) and the checks that decide whether
 * an output directory may be written, already holds this import, or is refused (data/prep.h "The
 * output directory"; data/prep_impl.h for the functions prep.c calls). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/log.h"
#include "data/dataset.h"
#include "data/prep_impl.h"

/* ---- the output directory --------------------------------------------------------------
 *
 * prep writes only into a directory it owns: o->out missing (created) or an empty directory.
 * Every file is created with O_CREAT | O_EXCL, so no existing file, symlink or FIFO is ever
 * opened, followed or replaced, and no open can block. SV_PREP_MARKER is written last, after
 * classes.txt; it records the dataset and options, so a complete earlier import with the same
 * options is recognised (nothing to do) and one with other options is refused; an imagefolder
 * import also records what its source held, and is recognised only while the source still holds
 * it (check_source). The splits are written into a work directory inside OUT
 * (OUT/.prep.tmp-XXXXXXXX) and renamed into OUT when both are complete, so an interrupted import
 * (a signal, a kill) never leaves a part of a split where a reader takes it for the whole: it
 * leaves the work directory, which a rerun names. A failed import removes what it created (the
 * work directory, the splits and shards it moved, classes.txt, the directory if it made it). */

static int is_idx(const char *what) { return !strcmp(what, "fashion-mnist") || !strcmp(what, "mnist"); }

/* --src as the marker records it: resolved (symbolic links, "." and "..", a trailing '/', the
 * working directory), so the same source spelled another way or reached from another directory is
 * the same import; a path that does not exist resolves as far as it exists. The string as given
 * when it cannot be resolved at all (a component that cannot be searched, too long a path). -1 when
 * the result does not fit in cap bytes. */
static int src_resolved(const char *src, char *out, size_t cap) {
    char abs[PATH_MAX];
    if (src[0] && sv_fileio_real_path(src, abs) == SV_OK)
        src = abs;
    else if (src[0])
        sv_err_clear(); /* not an error: the string as given */
    return snprintf(out, cap, "%s", src) < (int)cap ? 0 : -1;
}

/* The options part of the marker; -1 when it does not fit (a --src path of ~8 KiB). */
int sv_prep_marker_opts(const sv_prep_opts *o, const char *what, char *buf, size_t cap) {
    int synth = !strcmp(what, "synthetic"), folder = !strcmp(what, "imagefolder");
    char src[8192];
    if (src_resolved(o->src ? o->src : is_idx(what) ? SV_FASHION_MNIST_DIR : "", src, sizeof src) < 0) return -1;
    int n = snprintf(buf, cap, "shardvit-prep 1\ndataset %s\n", what);
    if (!synth && n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, "src %s\n", src);
    if (n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "format %s\n", o->format == SV_PREP_TAR ? "tar" : "folder");
    if (!folder && n >= 0 && (size_t)n < cap) /* imagefolder copies the JPEGs: no quality */
        n += snprintf(buf + n, cap - (size_t)n, "quality %d\n", o->quality);
    if (o->restart_mcus > 0 && n >= 0 && (size_t)n < cap) /* absent when 0: older imports match */
        n += snprintf(buf + n, cap - (size_t)n, "restart-mcus %d\n", o->restart_mcus);
    if (o->format == SV_PREP_TAR && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "shard-size %llu\n", (unsigned long long)sv_prep_shard_samples(o));
    if (!synth && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "limit %llu\n", (unsigned long long)o->limit);
    if (synth && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n,
                      "classes %d\nper-class %d\ntest-per-class %d\nwidth %d\nheight %d\nseed %llu\n", o->classes,
                      o->per_class, o->test_per_class, o->width, o->height, (unsigned long long)o->seed);
    return n >= 0 && (size_t)n < cap ? n : -1;
}

/* A directory entry's name for a message: at most 80 bytes, control bytes as '?'. */
static void printable(char *dst, size_t cap, const char *name) {
    size_t i = 0;
    for (; name[i] && i + 1 < cap && i < 80; i++)
        dst[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    dst[i] = 0;
}

/* The marker OUT/SV_PREP_MARKER when it is a regular file of at most 16 KiB (never followed
 * through a symlink, never a blocking open): *text malloc'd, NULL when there is none. */
static void marker_read(const char *out, char **text) {
    char p[4200];
    *text = NULL;
    if (snprintf(p, sizeof p, "%s/%s", out, SV_PREP_MARKER) >= (int)sizeof p) return;
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 16384 && (buf = malloc((size_t)st.st_size + 1))) {
        ssize_t got = read(fd, buf, (size_t)st.st_size);
        if (got == (ssize_t)st.st_size) {
            buf[got] = 0;
            *text = buf;
        } else
            free(buf);
    }
    close(fd);
}

/* The source record's lines (data/prep_impl.h sv_prep_source), after the counts; "" when there is
 * none. -1 when they do not fit. */
int sv_prep_source_lines(const sv_prep_source *r, char *buf, size_t cap) {
    buf[0] = 0;
    if (!r->recorded) return 0;
    const sv_prep_source_split *t = &r->split[0], *e = &r->split[1];
    int n = snprintf(buf, cap, "source-train %llu list %016llx files %016llx\n", (unsigned long long)t->n,
                     (unsigned long long)t->list, (unsigned long long)t->files);
    if (n >= 0 && (size_t)n < cap)
        n += e->dir[0] ? snprintf(buf + n, cap - (size_t)n, "source-eval %s %llu list %016llx files %016llx\n", e->dir,
                                  (unsigned long long)e->n, (unsigned long long)e->list, (unsigned long long)e->files)
                       : snprintf(buf + n, cap - (size_t)n, "source-eval none\n");
    return n >= 0 && (size_t)n < cap ? n : -1;
}

/* The source record in `text` (all of it): 1 with *r filled (recorded = 0 for an empty text), 0
 * when text is not exactly the lines source_lines writes. */
static int source_parse(const char *text, sv_prep_source *r) {
    memset(r, 0, sizeof *r);
    if (!*text) return 1;
    unsigned long long n, l, f;
    int end = -1;
    if (sscanf(text, "source-train %llu list %llx files %llx%n", &n, &l, &f, &end) != 3 || end < 0) return 0;
    snprintf(r->split[0].dir, sizeof r->split[0].dir, "train");
    r->split[0].n = n, r->split[0].list = l, r->split[0].files = f;
    const char *e = text + end + (text[end] == '\n');
    char dir[8];
    end = -1;
    if (sscanf(e, "source-eval %7[a-z] %llu list %llx files %llx%n", dir, &n, &l, &f, &end) == 4 && end >= 0 &&
        (!strcmp(dir, "val") || !strcmp(dir, "test"))) {
        snprintf(r->split[1].dir, sizeof r->split[1].dir, "%s", dir);
        r->split[1].n = n, r->split[1].list = l, r->split[1].files = f;
    } else if (strcmp(e, "source-eval none\n") != 0) {
        return 0;
    }
    r->recorded = 1;
    char again[512]; /* exactly what source_lines writes, nothing more */
    return sv_prep_source_lines(r, again, sizeof again) > 0 && !strcmp(again, text);
}

/* The marker of a complete import is the options part, then "train N\ntest M\n", then (an
 * imagefolder import) the source record. */
static int marker_complete(const char *text, const char *opts, uint64_t *n_train, uint64_t *n_test,
                           sv_prep_source *src) {
    size_t n = strlen(opts);
    if (strncmp(text, opts, n) != 0) return 0;
    unsigned long long a, b;
    int end = -1;
    if (sscanf(text + n, "train %llu\ntest %llu\n%n", &a, &b, &end) != 2 || end < 0) return 0;
    if (!source_parse(text + n + (size_t)end, src)) return 0;
    *n_train = a;
    *n_test = b;
    return 1;
}

/* The marker's text with its src line as this import's when both name the same directory: a marker
 * written before prep resolved --src for every dataset holds the path as it was given ("fm/",
 * "../data/fm"), which counts as this import's when it resolves to the same place (from the working
 * directory of now, as the literal comparison of then did). The text itself when nothing is
 * replaced, else a malloc'd copy in *owned. */
static const char *marker_src_as(const char *text, const char *opts, char **owned) {
    *owned = NULL;
    const char *ts = strstr(text, "\nsrc "), *os = strstr(opts, "\nsrc ");
    if (!ts || !os) return text;
    ts += 5, os += 5;
    size_t tl = strcspn(ts, "\n"), ol = strcspn(os, "\n");
    if (tl == ol && !memcmp(ts, os, tl)) return text;
    char was[8192], res[8192];
    if (tl >= sizeof was) return text;
    memcpy(was, ts, tl);
    was[tl] = 0;
    if (src_resolved(was, res, sizeof res) < 0 || strlen(res) != ol || memcmp(res, os, ol) != 0) return text;
    size_t head = (size_t)(ts - text), tail = strlen(ts + tl);
    char *t = malloc(head + ol + tail + 1);
    if (!t) return text;
    memcpy(t, text, head);
    memcpy(t + head, os, ol);
    memcpy(t + head + ol, ts + tl, tail + 1);
    *owned = t;
    return t;
}

/* The first line of `text` that differs from the same line of `opts` (for the message). */
static void first_difference(const char *text, const char *opts, char *was, char *now, size_t cap) {
    const char *a = text, *b = opts;
    while (*a && *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la) != 0) {
            snprintf(was, cap, "%.*s", (int)(la < 200 ? la : 200), a);
            snprintf(now, cap, "%.*s", (int)(lb < 200 ? lb : 200), b);
            return;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    snprintf(was, cap, "%s", *a ? "(more lines)" : "(end)");
    snprintf(now, cap, "%s", *b ? "(more lines)" : "(end)");
}

/* The image files (regular, named *.jpg) in the class directories of the folder split `dir`;
 * -1 (errno set) when dir cannot be read. */
static int64_t count_images(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t n = 0;
    struct dirent *de, *fe;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
        int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *c = fd >= 0 ? fdopendir(fd) : NULL;
        if (!c) {
            if (fd >= 0) close(fd);
            continue;
        }
        while ((fe = readdir(c)) != NULL) {
            size_t L = strlen(fe->d_name);
            if (L > 4 && !strcmp(fe->d_name + L - 4, ".jpg") &&
                fstatat(dirfd(c), fe->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                n++;
        }
        closedir(c);
    }
    closedir(d);
    return n;
}

/* A complete import's marker is trusted only while OUT still holds what it records: classes.txt,
 * and per split the images counted in the folder tree (a split of 0 images may be absent: an
 * imagefolder source without an evaluation split writes no OUT/test), or every tar shard the count
 * implies. Anything else (a split or class directory deleted, images removed or added, a shard
 * gone) is refused: the marker would promise a dataset OUT no longer holds. */
static sv_status check_contents(const sv_prep_opts *o) {
    const uint64_t count[2] = {o->n_train, o->n_test};
    char p[4400], what[4600] = "";
    struct stat st;
    snprintf(p, sizeof p, "%s/classes.txt", o->out);
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) snprintf(what, sizeof what, "%s is missing", p);
    for (int s = 0; s < 2 && !what[0]; s++) {
        if (o->format == SV_PREP_TAR) {
            const uint64_t ss = sv_prep_shard_samples(o);
            for (uint64_t k = 0; k < (count[s] + ss - 1) / ss && !what[0]; k++) {
                sv_prep_shard_path(p, sizeof p, o->out, s, k);
                if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) snprintf(what, sizeof what, "%s is missing", p);
            }
        } else {
            snprintf(p, sizeof p, "%s/%s", o->out, sv_prep_split_name(s));
            int64_t n = count_images(p);
            if (n < 0 && errno == ENOENT && count[s] == 0)
                continue; /* no split written (imagefolder without val/ or test/) */
            if (n < 0)
                snprintf(what, sizeof what, "%s%s%s", p, errno == ENOENT ? " is missing" : ": ",
                         errno == ENOENT ? "" : strerror(errno));
            else if ((uint64_t)n != count[s])
                snprintf(what, sizeof what, "%s holds %lld images, not %llu", p, (long long)n,
                         (unsigned long long)count[s]);
        }
    }
    if (!what[0]) return SV_OK;
    return SV_FAIL(SV_ERR_INVALID,
                   "--out %s holds this import's marker (%s/%s: %llu train + %llu test images), but %s: it was "
                   "changed after the import; prep never replaces files: remove %s or choose another --out",
                   o->out, o->out, SV_PREP_MARKER, (unsigned long long)o->n_train, (unsigned long long)o->n_test, what,
                   o->out);
}

/* Appends a part of a message to buf (cap bytes, *at used), "; " between parts. */
static void add_part(char *buf, size_t cap, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add_part(char *buf, size_t cap, size_t *at, const char *fmt, ...) {
    if (*at + 1 >= cap) return;
    if (*at) *at += (size_t)snprintf(buf + *at, cap - *at, "; ");
    if (*at + 1 >= cap) {
        *at = cap - 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, cap - *at, fmt, ap);
    va_end(ap);
    *at = n < 0 ? *at : *at + (size_t)n >= cap ? cap - 1 : *at + (size_t)n;
}

/* What differs between the source as it was imported (was) and as it is now, for a message ("" when
 * nothing does); src is --src as given. */
static void source_difference(const sv_prep_source *was, const sv_prep_source *now, const char *src, char *buf,
                              size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    const char *we = was->split[1].dir, *ne = now->split[1].dir;
    if (strcmp(we, ne) != 0) {
        if (!we[0])
            add_part(buf, cap, &at, "the source now has an evaluation split (%s/%s), at the import it had none", src,
                     ne);
        else if (!ne[0])
            add_part(buf, cap, &at, "the source's evaluation split %s/%s is gone (it has neither val/ nor test/)", src,
                     we);
        else
            add_part(buf, cap, &at, "the source's evaluation split is now %s/%s, at the import it was %s/%s", src, ne,
                     src, we);
    }
    for (int s = 0; s < 2; s++) {
        const sv_prep_source_split *a = &was->split[s], *b = &now->split[s];
        if (!a->dir[0] || strcmp(a->dir, b->dir) != 0) continue; /* none, or told above */
        if (a->n != b->n)
            add_part(buf, cap, &at, "the source now has %llu %s images (%s/%s), %llu when it was imported",
                     (unsigned long long)b->n, a->dir, src, a->dir, (unsigned long long)a->n);
        else if (a->list != b->list)
            add_part(buf, cap, &at,
                     "the file names, classes or labels of %s/%s are not those it had when it was imported (the same "
                     "count, %llu images)",
                     src, a->dir, (unsigned long long)a->n);
        else if (a->files != b->files)
            add_part(buf, cap, &at,
                     "files of %s/%s were rewritten or touched (their sizes or modification times are not those of "
                     "the import)",
                     src, a->dir);
    }
}

/* An imagefolder import is "already prepared" only while its source holds what the marker records
 * (data/prep_impl.h sv_prep_source): the source is scanned again and compared. quiet: no warnings
 * (sv_prep_check_out; the importer checks again and warns). */
static sv_status check_source(sv_prep_opts *o, const sv_prep_source *was, int quiet) {
    const char *out = o->out;
    if (o->source_compared) return SV_OK; /* scanned and found equal by this process's pre-check */
    const unsigned long long nt = o->n_train, ne = o->n_test;
    if (!was->recorded) {
        /* A marker without a source record, written before prep recorded one, is accepted as it was
         * then (nothing to compare the source with); refusing it would force every such output to be
         * imported again. The warning says how to be sure. */
        if (!quiet)
            SV_WARN("prep imagefolder: %s/%s records no source contents (an import by an earlier shardvit): %s was not "
                    "compared with the source %s; to import the source as it is now, remove %s and run prep again",
                    out, SV_PREP_MARKER, out, o->src, out);
        return SV_OK;
    }
    sv_prep_source now;
    int gone = 0;
    sv_status st = sv_prep_folder_source(o, &now, &gone);
    if (st != SV_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", sv_err_msg());
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s holds an import of %s (%s/%s: %llu train + %llu test images), but the source cannot "
                       "be read as it was then: %s; prep never replaces files: remove %s and run prep again once the "
                       "source reads, or choose another --out",
                       out, o->src, out, SV_PREP_MARKER, nt, ne, msg, out);
    }
    if (gone) { /* nothing to compare with: the import stands as recorded, as an IDX or CIFAR one does */
        if (!quiet)
            SV_WARN("prep imagefolder: the source %s no longer exists: %s is taken as its marker records it, not "
                    "compared with a source",
                    o->src, out);
        return SV_OK;
    }
    char what[2048];
    source_difference(was, &now, o->src, what, sizeof what);
    if (!what[0]) {
        o->source_compared = 1; /* the importer's check of the same OUT needs no second scan */
        return SV_OK;
    }
    return SV_FAIL(SV_ERR_INVALID,
                   "--out %s holds an import of %s (%s/%s: %llu train + %llu test images), but the source changed "
                   "since: %s; prep never replaces files: remove %s and run prep again to import the source as it is "
                   "now, or choose another --out",
                   out, o->src, out, SV_PREP_MARKER, nt, ne, what, out);
}

int sv_prep_work_dir_state(const char *out, const char *name) {
    if (!sv_fileio_is_tmp_name(name, SV_PREP_WORK_BASE)) return -1; /* exactly the names sv_prep_begin gives */
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", out, name) >= sizeof p) return -1;
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); /* a real directory, not a link */
    if (fd < 0) return -1;
    /* a running prep holds an flock on its work directory (data/prep.c sv_prep_begin) */
    int state = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) state = errno == EWOULDBLOCK ? 1 : 2;
    close(fd);
    return state;
}

sv_status sv_prep_marker_check_out(sv_prep_opts *o, const char *what, const char *opts, int quiet, int *done) {
    const char *out = o->out;
    *done = 0;
    struct stat st;
    if (stat(out, &st) != 0) {
        int e = errno;
        if (e != ENOENT) return SV_FAIL(SV_ERR_IO, "--out %s: %s", out, strerror(e));
        if (lstat(out, &st) == 0)
            return SV_FAIL(SV_ERR_INVALID, "--out %s is a symbolic link to a missing directory; choose another --out",
                           out);
        return SV_OK; /* created by the import */
    }
    if (!S_ISDIR(st.st_mode))
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s exists and is not a directory; prep writes only into a new or empty directory: "
                       "choose another --out",
                       out);
    DIR *d = opendir(out);
    if (!d) return SV_FAIL(SV_ERR_IO, "--out %s: %s", out, strerror(errno));
    char first[96] = "", partial[96] = "", busy_one[96] = "", unknown_one[96] = "", starting[96] = "";
    int entries = 0, has_marker = 0, partials = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        entries++;
        if (sv_fileio_is_tmp_name(de->d_name, SV_PREP_NEW_WORK_BASE) && !starting[0])
            printable(starting, sizeof starting, de->d_name);
        const int work = sv_prep_work_dir_state(out, de->d_name);
        if (work >= 0) {
            partials++;
            if (!partial[0]) printable(partial, sizeof partial, de->d_name);
            if (work == 1 && !busy_one[0]) printable(busy_one, sizeof busy_one, de->d_name);
            if (work == 2 && !unknown_one[0]) printable(unknown_one, sizeof unknown_one, de->d_name);
        }
        if (!strcmp(de->d_name, SV_PREP_MARKER))
            has_marker = 1;
        else if (!first[0])
            printable(first, sizeof first, de->d_name);
    }
    closedir(d);
    if (!entries) return SV_OK;
    char *text = NULL;
    if (has_marker) marker_read(out, &text);
    if (text) {
        char *owned;
        const char *t = marker_src_as(text, opts, &owned);
        const int folder = !strcmp(what, "imagefolder");
        sv_prep_source src;
        if (marker_complete(t, opts, &o->n_train, &o->n_test, &src) && (folder || !src.recorded)) {
            free(owned);
            free(text);
            SV_TRY(check_contents(o));
            if (folder) SV_TRY(check_source(o, &src, quiet));
            *done = 1;
            return SV_OK;
        }
        char was[256], now[256];
        first_difference(t, opts, was, now, sizeof was);
        free(owned);
        free(text);
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s holds another prep (%s/%s says '%s', this one would be '%s'); prep never replaces "
                       "files: remove %s or choose another --out",
                       out, out, SV_PREP_MARKER, was, now, out);
    }
    if (busy_one[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s: another prep is writing into it now (%s/%s): wait for it to finish, or choose "
                       "another --out",
                       out, out, busy_one);
    if (starting[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s holds %s/%s: a prep starting there now, or the work directory of one that was "
                       "killed as it started or ran where directories cannot be flocked: wait, or remove it if no "
                       "prep runs",
                       out, out, starting);
    if (unknown_one[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s holds %s/%s, a prep's work directory, and this file system cannot tell whether a "
                       "prep is writing into it (no flock): remove it if none is, or choose another --out",
                       out, out, unknown_one);
    if (partials == entries) return SV_OK; /* only what killed preps left: sv_prep_begin removes it */
    if (partial[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s holds %s/%s, the partial output of a prep that was interrupted (a signal or a kill), "
                       "beside other files: remove %s and run prep again",
                       out, out, partial, out);
    return SV_FAIL(SV_ERR_INVALID,
                   "--out %s is not empty (it holds '%s'%s) and is not a complete prep output (no valid %s/%s); prep "
                   "writes only into a new or empty directory and never replaces a file: remove %s or choose another "
                   "--out",
                   out, first[0] ? first : SV_PREP_MARKER, entries > 1 ? " and more" : "", out, SV_PREP_MARKER, out);
}
