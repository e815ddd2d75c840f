#include "data/prep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/fileio.h"
#include "core/log.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/jpeg_restart.h"
#include "data/prep_impl.h"
#include "data/synth.h"

const char *const sv_fashion_mnist_classes[10] = {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                                                  "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle_boot"};
const char *const sv_cifar10_classes[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};
const char *const sv_cifar100_classes[100] = {
    "apple",      "aquarium_fish", "baby",         "bear",       "beaver",      "bed",         "bee",
    "beetle",     "bicycle",       "bottle",       "bowl",       "boy",         "bridge",      "bus",
    "butterfly",  "camel",         "can",          "castle",     "caterpillar", "cattle",      "chair",
    "chimpanzee", "clock",         "cloud",        "cockroach",  "couch",       "crab",        "crocodile",
    "cup",        "dinosaur",      "dolphin",      "elephant",   "flatfish",    "forest",      "fox",
    "girl",       "hamster",       "house",        "kangaroo",   "keyboard",    "lamp",        "lawn_mower",
    "leopard",    "lion",          "lizard",       "lobster",    "man",         "maple_tree",  "motorcycle",
    "mountain",   "mouse",         "mushroom",     "oak_tree",   "orange",      "orchid",      "otter",
    "palm_tree",  "pear",          "pickup_truck", "pine_tree",  "plain",       "plate",       "poppy",
    "porcupine",  "possum",        "rabbit",       "raccoon",    "ray",         "road",        "rocket",
    "rose",       "sea",           "seal",         "shark",      "shrew",       "skunk",       "skyscraper",
    "snail",      "snake",         "spider",       "squirrel",   "streetcar",   "sunflower",   "sweet_pepper",
    "table",      "tank",          "telephone",    "television", "tiger",       "tractor",     "train",
    "trout",      "tulip",         "turtle",       "wardrobe",   "whale",       "willow_tree", "wolf",
    "woman",      "worm"};

sv_prep_opts sv_prep_opts_default(void) {
    sv_prep_opts o;
    memset(&o, 0, sizeof o);
    o.quality = 95;
    o.shard_size = 10000;
    o.classes = 10;
    o.per_class = 100;
    o.test_per_class = 20;
    o.width = 500;
    o.height = 375;
    return o;
}

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
static int marker_opts(const sv_prep_opts *o, const char *what, char *buf, size_t cap) {
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
        n += snprintf(buf + n, cap - (size_t)n, "shard-size %d\n", o->shard_size > 0 ? o->shard_size : 10000);
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
static int source_lines(const sv_prep_source *r, char *buf, size_t cap) {
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
    return source_lines(r, again, sizeof again) > 0 && !strcmp(again, text);
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
    static const char *const split[2] = {"train", "test"};
    const uint64_t count[2] = {o->n_train, o->n_test};
    char p[4400], what[4600] = "";
    struct stat st;
    snprintf(p, sizeof p, "%s/classes.txt", o->out);
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) snprintf(what, sizeof what, "%s is missing", p);
    for (int s = 0; s < 2 && !what[0]; s++) {
        if (o->format == SV_PREP_TAR) {
            uint64_t ss = (uint64_t)(o->shard_size > 0 ? o->shard_size : 10000);
            for (uint64_t k = 0; k < (count[s] + ss - 1) / ss && !what[0]; k++) {
                snprintf(p, sizeof p, "%s/%s-%06llu.tar", o->out, split[s], (unsigned long long)k);
                if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) snprintf(what, sizeof what, "%s is missing", p);
            }
        } else {
            snprintf(p, sizeof p, "%s/%s", o->out, split[s]);
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
static sv_status check_source(const sv_prep_opts *o, const sv_prep_source *was, int quiet) {
    const char *out = o->out;
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
    if (!what[0]) return SV_OK;
    return SV_FAIL(SV_ERR_INVALID,
                   "--out %s holds an import of %s (%s/%s: %llu train + %llu test images), but the source changed "
                   "since: %s; prep never replaces files: remove %s and run prep again to import the source as it is "
                   "now, or choose another --out",
                   out, o->src, out, SV_PREP_MARKER, nt, ne, what, out);
}

static sv_status check_out(sv_prep_opts *o, const char *what, const char *opts, int quiet, int *done) {
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
    char first[96] = "", partial[96] = "";
    int entries = 0, has_marker = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        entries++;
        if (!strncmp(de->d_name, ".prep.tmp-", 10) && !partial[0]) printable(partial, sizeof partial, de->d_name);
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
    if (partial[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "--out %s holds %s/%s, the partial output of a prep that was interrupted (a signal or a kill): "
                       "remove %s and run prep again",
                       out, out, partial, out);
    return SV_FAIL(SV_ERR_INVALID,
                   "--out %s is not empty (it holds '%s'%s) and is not a complete prep output (no valid %s/%s); prep "
                   "writes only into a new or empty directory and never replaces a file: remove %s or choose another "
                   "--out",
                   out, first[0] ? first : SV_PREP_MARKER, entries > 1 ? " and more" : "", out, SV_PREP_MARKER, out);
}

sv_status sv_prep_check_out(sv_prep_opts *o, const char *what, int *done) {
    char opts[8192];
    *done = 0;
    if (!o->out || !o->out[0]) return SV_FAIL(SV_ERR_INVALID, "prep %s: no output directory", what);
    if (marker_opts(o, what, opts, sizeof opts) < 0) return SV_FAIL(SV_ERR_INVALID, "prep %s: --src too long", what);
    if (!strcmp(what, "imagefolder")) SV_TRY(sv_prep_out_outside_src(o));
    return check_out(o, what, opts, 1, done);
}

/* Claim o->out for this import: *done = 1 when it already holds it (nothing to do). */
sv_status sv_prep_begin(sv_prep_job *j, sv_prep_opts *o, const char *what, int *done) {
    memset(j, 0, sizeof *j);
    j->o = o;
    o->reused = 0;
    if (!o->out || !o->out[0]) return SV_FAIL(SV_ERR_INVALID, "prep %s: no output directory", what);
    if (marker_opts(o, what, j->marker, sizeof j->marker) < 0)
        return SV_FAIL(SV_ERR_INVALID, "prep %s: --src too long", what);
    SV_TRY(check_out(o, what, j->marker, 0, done));
    if (*done) {
        o->reused = 1;
        SV_INFO("prep %s: already prepared: %s holds this import (%llu train + %llu test images, %s/%s); nothing "
                "written",
                what, o->out, (unsigned long long)o->n_train, (unsigned long long)o->n_test, o->out, SV_PREP_MARKER);
        return SV_OK;
    }
    struct stat st;
    if (stat(o->out, &st) != 0) {
        SV_TRY(sv_fileio_mkdirs(o->out, 0755));
        j->created_out = 1;
    }
    SV_TRY(check_out(o, what, j->marker, 0, done)); /* still empty (nothing appeared meanwhile) */
    if (*done) return SV_FAIL(SV_ERR_INVALID, "--out %s: filled by another prep meanwhile", o->out);
    char base[4200];
    snprintf(base, sizeof base, "%s/.prep", o->out);
    sv_status ws = sv_fileio_tmp_dir(base, j->work, sizeof j->work);
    if (ws != SV_OK) {
        if (j->created_out) rmdir(o->out);
        return ws;
    }
    j->work_made = 1;
    return SV_OK;
}

/* Create `path`, which must not exist in any form (O_EXCL: a symlink, FIFO or file there is
 * refused, never followed, opened or replaced). */
static sv_status create_new(const char *path, int *fd) {
    *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (*fd >= 0) return SV_OK;
    if (errno == EEXIST) return SV_FAIL(SV_ERR_IO, "%s already exists; prep never replaces a file", path);
    return SV_FAIL(SV_ERR_IO, "create %s: %s", path, strerror(errno));
}

static sv_status write_new(const char *path, const void *buf, size_t n) {
    int fd;
    SV_TRY(create_new(path, &fd));
    sv_status s = sv_fileio_write_all(fd, buf, n, path);
    if (close(fd) != 0 && s == SV_OK) s = SV_FAIL(SV_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return s;
}

/* mkdir one directory below o->out; fresh = 1: it must not exist, else an existing real
 * directory (not a symlink) is fine. */
static sv_status make_dir(const char *path, int fresh) {
    if (mkdir(path, 0755) == 0) return SV_OK;
    int e = errno;
    struct stat st;
    if (e == EEXIST && !fresh && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) return SV_OK;
    if (e == EEXIST)
        return SV_FAIL(SV_ERR_IO, "%s already exists; prep never writes into what it did not create", path);
    return SV_FAIL(SV_ERR_IO, "mkdir %s: %s", path, strerror(e));
}

/* The finished splits from the work directory into OUT (renames: a split appears in OUT whole
 * or not at all), then the work directory removed. */
static sv_status move_splits(sv_prep_job *j) {
    static const char *const split[2] = {"train", "test"};
    char a[4400], b[4400];
    for (int s = 0; s < 2; s++) {
        if (j->split_made[s]) {
            snprintf(a, sizeof a, "%s/%s", j->work, split[s]);
            snprintf(b, sizeof b, "%s/%s", j->o->out, split[s]);
            if (rename(a, b) != 0) return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", a, b, strerror(errno));
        }
        for (int k = 0; k < j->shards[s]; k++) {
            snprintf(a, sizeof a, "%s/%s-%06d.tar", j->work, split[s], k);
            snprintf(b, sizeof b, "%s/%s-%06d.tar", j->o->out, split[s], k);
            if (rename(a, b) != 0) return SV_FAIL(SV_ERR_IO, "rename %s -> %s: %s", a, b, strerror(errno));
        }
        j->moved[s] = 1;
    }
    if (rmdir(j->work) != 0) return SV_FAIL(SV_ERR_IO, "rmdir %s: %s", j->work, strerror(errno));
    j->work_made = 0;
    return SV_OK;
}

/* The splits into OUT, classes.txt, then the marker: the last file, so its presence means a
 * complete import. */
sv_status sv_prep_finish(sv_prep_job *j, const char *const *names, int K) {
    const sv_prep_opts *o = j->o;
    SV_TRY(move_splits(j));
    char p[4200];
    size_t len = 0;
    for (int k = 0; k < K; k++) len += strlen(names[k]) + 1;
    char *text = malloc(len + 1), *q = text;
    if (!text) return SV_FAIL(SV_ERR_OOM, "prep: class list");
    for (int k = 0; k < K; k++) q += sprintf(q, "%s\n", names[k]);
    snprintf(p, sizeof p, "%s/classes.txt", o->out);
    sv_status s = write_new(p, text, len);
    free(text);
    SV_TRY(s);
    j->classes_made = 1;
    char m[9000], rec[512];
    if (source_lines(&j->source, rec, sizeof rec) < 0) return SV_FAIL(SV_ERR_INVALID, "prep: source record too long");
    int n = snprintf(m, sizeof m, "%strain %llu\ntest %llu\n%s", j->marker, (unsigned long long)o->n_train,
                     (unsigned long long)o->n_test, rec);
    if (n < 0 || (size_t)n >= sizeof m) return SV_FAIL(SV_ERR_INVALID, "prep: marker too long");
    snprintf(p, sizeof p, "%s/%s", o->out, SV_PREP_MARKER);
    return write_new(p, m, (size_t)n);
}

/* A failed import: remove what it created (see above), keep the error message. */
sv_status sv_prep_abort(sv_prep_job *j, sv_status st) {
    const char *out = j->o->out;
    char p[4200], msg[2048];
    snprintf(msg, sizeof msg, "%s", sv_err_msg());
    int left = 0;
    static const char *const split[2] = {"train", "test"};
    for (int s = 0; s < 2; s++) {
        const char *dir = j->moved[s] ? out : j->work;
        if (j->split_made[s]) {
            snprintf(p, sizeof p, "%s/%s", dir, split[s]);
            left |= sv_fileio_remove_tree(p) != SV_OK;
        }
        for (int k = 0; k < j->shards[s]; k++) {
            snprintf(p, sizeof p, "%s/%s-%06d.tar", dir, split[s], k);
            left |= unlink(p) != 0 && errno != ENOENT;
        }
    }
    if (j->work_made) left |= rmdir(j->work) != 0;
    if (j->classes_made) {
        snprintf(p, sizeof p, "%s/classes.txt", out);
        left |= unlink(p) != 0 && errno != ENOENT;
    }
    if (j->created_out) left |= rmdir(out) != 0;
    if (left) return SV_FAIL(st, "%s (the partial output in %s could not all be removed: remove it by hand)", msg, out);
    if (strcmp(sv_err_msg(), msg) != 0) return SV_FAIL(st, "%s", msg);
    return st;
}

/* ---- output sink: ImageFolder tree or WebDataset tar shards ----------------------------- */

sv_status sv_prep_sink_open(sv_prep_sink *s, sv_prep_job *j, int split_ix, const char *const *names, int K,
                            uint64_t total) {
    memset(s, 0, sizeof *s);
    s->o = j->o;
    s->job = j;
    s->split_ix = split_ix;
    s->split = split_ix ? "test" : "train";
    s->names = names;
    s->K = K;
    s->width = 5;
    for (uint64_t t = total; t >= 100000; t /= 10) s->width++;
    sv_jpeg_ctx_init(&s->jc);
    if (s->o->format == SV_PREP_FOLDER) {
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", s->job->work, s->split);
        SV_TRY(make_dir(p, 1));
        j->split_made[split_ix] = 1;
        for (int k = 0; k < K; k++) {
            snprintf(p, sizeof p, "%s/%s/%s", s->job->work, s->split, names[k]);
            SV_TRY(make_dir(p, 0)); /* a class name listed twice shares its directory */
        }
    }
    return SV_OK;
}

static void tar_header(uint8_t h[512], const char *name, uint64_t size) {
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static sv_status tar_member(sv_prep_sink *s, const char *name, const void *data, size_t len) {
    uint8_t h[512];
    static const uint8_t zeros[512];
    tar_header(h, name, len);
    if (fwrite(h, 1, 512, s->tar) != 512 || fwrite(data, 1, len, s->tar) != len ||
        fwrite(zeros, 1, (512 - len % 512) % 512, s->tar) != (512 - len % 512) % 512)
        return SV_FAIL(SV_ERR_IO, "%s/%s-%06d.tar: write failed", s->job->work, s->split, s->shard);
    return SV_OK;
}

static sv_status tar_close(sv_prep_sink *s) {
    if (!s->tar) return SV_OK;
    static const uint8_t zeros[1024];
    int bad = fwrite(zeros, 1, 1024, s->tar) != 1024;
    bad |= fclose(s->tar) != 0;
    s->tar = NULL;
    if (bad) return SV_FAIL(SV_ERR_IO, "%s/%s-%06d.tar: write failed", s->job->work, s->split, s->shard);
    s->shard++;
    return SV_OK;
}

sv_status sv_prep_sink_put(sv_prep_sink *s, const uint8_t *pix, int w, int h, int channels, int label) {
    const uint8_t *jpg;
    size_t len;
    SV_TRY(sv_jpeg_encode(&s->jc, pix, w, h, channels, s->o->quality, 0, &jpg, &len));
    if (s->o->restart_mcus > 0) /* the same coefficients, cut into restart intervals */
        SV_TRY(sv_jpeg_add_restarts(&s->jc, jpg, len, s->o->restart_mcus, 1, &jpg, &len));
    return sv_prep_sink_write(s, jpg, len, label);
}

sv_status sv_prep_sink_write(sv_prep_sink *s, const uint8_t *jpg, size_t len, int label) {
    if (label < 0 || label >= s->K)
        return SV_FAIL(SV_ERR_FORMAT, "%s sample %llu: label %d not in 0..%d", s->split, (unsigned long long)s->count,
                       label, s->K - 1);
    char p[8192];
    if (s->o->format == SV_PREP_FOLDER) {
        snprintf(p, sizeof p, "%s/%s/%s/%0*llu.jpg", s->job->work, s->split, s->names[label], s->width,
                 (unsigned long long)s->count);
        SV_TRY(write_new(p, jpg, len));
    } else {
        if (s->tar && s->in_shard >= (uint64_t)(s->o->shard_size > 0 ? s->o->shard_size : 10000)) SV_TRY(tar_close(s));
        if (!s->tar) {
            snprintf(p, sizeof p, "%s/%s-%06d.tar", s->job->work, s->split, s->shard);
            int fd;
            SV_TRY(create_new(p, &fd));
            s->job->shards[s->split_ix] = s->shard + 1;
            if (!(s->tar = fdopen(fd, "wb"))) {
                close(fd);
                return SV_FAIL(SV_ERR_IO, "%s: %s", p, strerror(errno));
            }
            s->in_shard = 0;
        }
        char name[64], cls[16];
        snprintf(name, sizeof name, "%0*llu.jpg", s->width, (unsigned long long)s->count);
        SV_TRY(tar_member(s, name, jpg, len));
        int cl = snprintf(cls, sizeof cls, "%d", label);
        snprintf(name, sizeof name, "%0*llu.cls", s->width, (unsigned long long)s->count);
        SV_TRY(tar_member(s, name, cls, (size_t)cl));
        s->in_shard++;
    }
    s->count++;
    if (s->count % 10000 == 0) SV_INFO("prep %s: %llu images written", s->split, (unsigned long long)s->count);
    return SV_OK;
}

sv_status sv_prep_sink_close(sv_prep_sink *s, sv_status st) {
    sv_status c = tar_close(s);
    sv_jpeg_ctx_free(&s->jc);
    return st != SV_OK ? st : c;
}

/* ---- CIFAR ------------------------------------------------------------------------------ */

/* One CIFAR binary batch (records of label byte(s) + 3072 planar RGB bytes) into the sink, at
 * most *left records. A batch without a record is corrupt (an empty file would otherwise import
 * as an empty split and exit 0); one of another record count than the release's `expect` is
 * imported with a warning (a subset made on purpose, or a file cut at a record boundary). */
static sv_status cifar_file(sv_prep_opts *o, sv_prep_sink *s, const char *path, int fine, uint64_t expect,
                            uint64_t *left) {
    int fd;
    SV_TRY(sv_fileio_open_read(path, &fd, NULL)); /* guarded: a FIFO or device is refused */
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return SV_FAIL(SV_ERR_IO, "CIFAR batch %s: %s", path, strerror(errno));
    }
    size_t rec = (size_t)(fine ? 2 : 1) + 3072;
    uint8_t buf[3074], pix[3072];
    sv_status st = SV_OK;
    size_t got;
    uint64_t n = 0;
    while (*left > 0 && (got = fread(buf, 1, rec, f)) > 0) {
        if (got != rec) {
            st = SV_FAIL(SV_ERR_CORRUPT, "%s: truncated record (%zu of %zu bytes)", path, got, rec);
            break;
        }
        const uint8_t *planes = buf + (fine ? 2 : 1);
        for (int p = 0; p < 1024; p++) /* planar RGB -> interleaved */
            for (int c = 0; c < 3; c++) pix[3 * p + c] = planes[c * 1024 + p];
        if ((st = sv_prep_sink_put(s, pix, 32, 32, 3, fine ? buf[1] : buf[0])) != SV_OK) break;
        (*left)--;
        n++;
    }
    if (st == SV_OK && ferror(f)) st = SV_FAIL(SV_ERR_IO, "%s: read failed", path);
    fclose(f);
    (void)o;
    if (st == SV_OK && *left > 0 && n == 0)
        st = SV_FAIL(SV_ERR_CORRUPT, "%s holds no record (a batch of the CIFAR release has %llu records of %zu bytes)",
                     path, (unsigned long long)expect, rec);
    else if (st == SV_OK && *left > 0 && n != expect)
        SV_WARN("%s: %llu records, where the CIFAR release's batch has %llu; imported as it is", path,
                (unsigned long long)n, (unsigned long long)expect);
    return st;
}

/* Names from a text list in src if present (a class list, data/dataset.h sv_classes_read, whose
 * empty lines at the end are no names: the release's batches.meta.txt ends with one, its 10 names
 * each with its '\n' and then one '\n' more, 61 bytes), else the standard list. */
static sv_status cifar_names(const char *src, int K, char ***owned, const char *const **names) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", src, K == 10 ? "batches.meta.txt" : "fine_label_names.txt");
    *owned = NULL;
    *names = K == 10 ? sv_cifar10_classes : sv_cifar100_classes;
    if (access(p, F_OK) != 0) return SV_OK; /* no list: the standard names (sv_classes_read is guarded) */
    int n;
    SV_TRY(sv_classes_read_list(p, 1, owned, &n));
    if (n != K) { /* more lines than classes (a header line?) would shift every name */
        free(*owned);
        *owned = NULL;
        return SV_FAIL(SV_ERR_FORMAT, "%s: %d names, but CIFAR-%d has %d classes: one name per line, in label order", p,
                       n, K, K);
    }
    /* the names become directory names under OUT: each must be one plain path component */
    for (int k = 0; k < K; k++) {
        const char *nm = (*owned)[k];
        if (strchr(nm, '/') || !strcmp(nm, ".") || !strcmp(nm, "..")) {
            sv_status st =
                SV_FAIL(SV_ERR_FORMAT, "%s: line %d: class name '%s' is not a plain directory name", p, k + 1, nm);
            free(*owned);
            *owned = NULL;
            return st;
        }
    }
    *names = (const char *const *)*owned;
    return SV_OK;
}

sv_status sv_prep_cifar(sv_prep_opts *o, int classes) {
    if (classes != 10 && classes != 100)
        return SV_FAIL(SV_ERR_INVALID, "prep cifar: classes %d not 10 or 100", classes);
    if (!o->src || !o->out) return SV_FAIL(SV_ERR_INVALID, "prep cifar%d: --src and --out are required", classes);
    char **owned;
    const char *const *names;
    SV_TRY(cifar_names(o->src, classes, &owned, &names)); /* the source's names first: nothing written yet */
    sv_prep_job j;
    int done;
    sv_status st = sv_prep_begin(&j, o, classes == 10 ? "cifar10" : "cifar100", &done);
    if (st != SV_OK || done) {
        free(owned);
        return st;
    }
    for (int split = 0; split < 2 && st == SV_OK; split++) {
        sv_prep_sink s;
        uint64_t left = o->limit ? o->limit : UINT64_MAX;
        if ((st = sv_prep_sink_open(&s, &j, split, names, classes, 60000)) != SV_OK) {
            st = sv_prep_sink_close(&s, st);
            break;
        }
        char p[4096];
        if (classes == 10 && !split) {
            for (int b = 1; b <= 5 && st == SV_OK; b++) {
                snprintf(p, sizeof p, "%s/data_batch_%d.bin", o->src, b);
                st = cifar_file(o, &s, p, 0, 10000, &left);
            }
        } else {
            snprintf(p, sizeof p, "%s/%s", o->src, classes == 10 ? "test_batch.bin" : split ? "test.bin" : "train.bin");
            st = cifar_file(o, &s, p, classes == 100, classes == 100 && !split ? 50000 : 10000, &left);
        }
        *(split ? &o->n_test : &o->n_train) = s.count;
        st = sv_prep_sink_close(&s, st);
    }
    if (st == SV_OK) st = sv_prep_finish(&j, names, classes);
    if (st != SV_OK) st = sv_prep_abort(&j, st);
    free(owned);
    if (st == SV_OK)
        SV_INFO("prep cifar%d: wrote %llu train + %llu test images", classes, (unsigned long long)o->n_train,
                (unsigned long long)o->n_test);
    return st;
}

/* ---- synthetic -------------------------------------------------------------------------- */

sv_status sv_prep_synthetic(sv_prep_opts *o) {
    if (o->classes < 1 || o->classes > 100000 || o->per_class < 0 || o->test_per_class < 0 || o->width < 8 ||
        o->height < 8 || o->width > 8192 || o->height > 8192)
        return SV_FAIL(SV_ERR_INVALID, "prep synthetic: classes %d, per-class %d/%d, size %dx%d out of range",
                       o->classes, o->per_class, o->test_per_class, o->width, o->height);
    sv_prep_job j;
    int done;
    SV_TRY(sv_prep_begin(&j, o, "synthetic", &done));
    if (done) return SV_OK;
    int K = o->classes;
    char **names = malloc((size_t)K * (sizeof(char *) + 24)); /* 24: room for any int, no truncation */
    uint8_t *pix = malloc((size_t)o->width * (size_t)o->height * 3);
    if (!names || !pix) {
        free(names);
        free(pix);
        return sv_prep_abort(&j, SV_FAIL(SV_ERR_OOM, "prep synthetic"));
    }
    char *store = (char *)(names + K);
    for (int k = 0; k < K; k++) {
        names[k] = store + 24 * k;
        snprintf(names[k], 24, "class_%03d", k);
    }
    sv_status st = SV_OK;
    for (int split = 0; split < 2 && st == SV_OK; split++) {
        int per = split ? o->test_per_class : o->per_class;
        sv_prep_sink s;
        uint64_t total = (uint64_t)K * (uint64_t)per;
        if ((st = sv_prep_sink_open(&s, &j, split, (const char *const *)names, K, total)) != SV_OK) {
            st = sv_prep_sink_close(&s, st);
            break;
        }
        /* test samples use indices after all train ones, so they are new images */
        uint64_t base = split ? (uint64_t)K * (uint64_t)o->per_class : 0;
        for (uint64_t i = 0; i < total && st == SV_OK; i++) {
            int label = (int)(i % (uint64_t)K);
            sv_synth_render(o->seed, base + i, label, o->width, o->height, 3, pix);
            st = sv_prep_sink_put(&s, pix, o->width, o->height, 3, label);
        }
        *(split ? &o->n_test : &o->n_train) = s.count;
        st = sv_prep_sink_close(&s, st);
    }
    if (st == SV_OK) st = sv_prep_finish(&j, (const char *const *)names, K);
    if (st != SV_OK) st = sv_prep_abort(&j, st);
    free(names);
    free(pix);
    if (st == SV_OK)
        SV_INFO("prep synthetic: wrote %llu train + %llu test images of %dx%d", (unsigned long long)o->n_train,
                (unsigned long long)o->n_test, o->width, o->height);
    return st;
}
