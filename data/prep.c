#include "data/prep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

static const char *const k_split[2] = {"train", "test"};

const char *sv_prep_split_name(int split) { return k_split[split]; }

/* shard k of split s, as written in the work directory and moved into OUT */
void sv_prep_shard_path(char *p, size_t cap, const char *dir, int split, uint64_t k) {
    snprintf(p, cap, "%s/%s-%06llu.tar", dir, k_split[split], (unsigned long long)k);
}

uint64_t sv_prep_shard_samples(const sv_prep_opts *o) {
    return (uint64_t)(o->shard_size > 0 ? o->shard_size : SV_PREP_SHARD_SIZE_DEFAULT);
}

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
    o.shard_size = SV_PREP_SHARD_SIZE_DEFAULT;
    o.classes = 10;
    o.per_class = 100;
    o.test_per_class = 20;
    o.width = 500;
    o.height = 375;
    return o;
}

sv_status sv_prep_check_out(sv_prep_opts *o, const char *what, int *done) {
    char opts[8192];
    *done = 0;
    if (!o->out || !o->out[0]) return SV_FAIL(SV_ERR_INVALID, "prep %s: no output directory", what);
    if (sv_prep_marker_opts(o, what, opts, sizeof opts) < 0)
        return SV_FAIL(SV_ERR_INVALID, "prep %s: --src too long", what);
    if (!strcmp(what, "imagefolder")) SV_TRY(sv_prep_out_outside_src(o));
    return sv_prep_marker_check_out(o, what, opts, 1, done);
}

/* OUT holding nothing but work directories that no prep holds (what preps killed with SIGKILL,
 * or by a power cut, left: they could not remove their own): each removed, holding its flock, and
 * named; a work directory that cannot be removed (held now, its lock state unknown) fails the
 * import naming it, so no work directory is ever left beside a new import. Anything else in OUT
 * and nothing is removed (the check that follows refuses OUT). A work directory only ever has
 * its name while its prep holds it (sv_prep_begin), so one found unheld is not a prep starting. */
static sv_status remove_killed_work(const char *out) {
    for (int pass = 0; pass < 2; pass++) { /* 0: is there anything else? 1: remove */
        DIR *d = opendir(out);
        if (!d) return SV_OK; /* the check that follows says why */
        struct dirent *de;
        sv_status st = SV_OK;
        while (st == SV_OK && (de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            const int state = sv_prep_work_dir_state(out, de->d_name);
            if (pass == 0) {
                if (state != 0) break; /* something else, or held: nothing is removed */
                continue;
            }
            if (state < 0) continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", out, de->d_name);
            int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                if (errno != ENOENT) /* ENOENT: another prep removed it meanwhile */
                    st = SV_FAIL(SV_ERR_IO, "--out %s: cannot open %s: %s", out, p, strerror(errno));
                continue;
            }
            if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
                st = errno == EWOULDBLOCK
                    ? SV_FAIL(SV_ERR_INVALID,
                              "--out %s: another prep is writing into it now, or removing what a killed "
                              "prep left (%s): wait for it to finish, or choose another --out",
                              out, p)
                    : SV_FAIL(SV_ERR_INVALID,
                              "--out %s: cannot tell whether a prep is writing into %s (flock: %s): "
                              "remove it if none is, or choose another --out",
                              out, p, strerror(errno));
            } else {
                SV_INFO("prep: removing %s, the partial output of a prep that was killed (nothing holds it)", p);
                st = sv_fileio_remove_tree(p);
                if (st == SV_ERR_NOT_FOUND) { /* another prep removed it meanwhile */
                    sv_err_clear();
                    st = SV_OK;
                }
            }
            close(fd);
        }
        const int stopped = pass == 0 && de != NULL;
        closedir(d);
        if (st != SV_OK || stopped) return st;
    }
    return SV_OK;
}

/* Claim o->out for this import: *done = 1 when it already holds it (nothing to do). */
sv_status sv_prep_begin(sv_prep_job *j, sv_prep_opts *o, const char *what, int *done) {
    memset(j, 0, sizeof *j);
    j->work_fd = -1;
    j->o = o;
    o->reused = 0;
    if (!o->out || !o->out[0]) return SV_FAIL(SV_ERR_INVALID, "prep %s: no output directory", what);
    if (sv_prep_marker_opts(o, what, j->marker, sizeof j->marker) < 0)
        return SV_FAIL(SV_ERR_INVALID, "prep %s: --src too long", what);
    SV_TRY(sv_prep_marker_check_out(o, what, j->marker, 0, done));
    if (*done) {
        o->reused = 1;
        SV_INFO("prep %s: already prepared: %s holds this import (%llu train + %llu test images, %s/%s); nothing "
                "written",
                what, o->out, (unsigned long long)o->n_train, (unsigned long long)o->n_test, o->out, SV_PREP_MARKER);
        return SV_OK;
    }
    struct stat st;
    if (stat(o->out, &st) != 0) { /* made so that a signal removes it again while it is empty */
        SV_TRY(sv_fileio_mkdirs_made(o->out, 0755, &j->out_made));
        j->created_out = 1;
    }
    sv_status cs = remove_killed_work(o->out);
    if (cs == SV_OK) cs = sv_prep_marker_check_out(o, what, j->marker, 0, done); /* still empty */
    if (cs == SV_OK && *done) cs = SV_FAIL(SV_ERR_INVALID, "--out %s: filled by another prep meanwhile", o->out);
    if (cs != SV_OK) {
        if (j->created_out) sv_fileio_made_dirs_keep(&j->out_made); /* not ours alone any more */
        return cs;
    }
    /* The work directory is made under a name no check takes for one (OUT/.prep.new.tmp-XXXXXXXX),
     * flocked, and only then given its name (OUT/.prep.tmp-XXXXXXXX): a work directory that
     * another prep finds unheld is one whose prep is gone, never one that is starting, whatever
     * each prep's TMPDIR (across hosts as far as the file system's flock on directories reaches:
     * NFS keeps them per host). Where directories cannot be flocked (no liveness to tell) it keeps
     * the first name, which a later prep never removes. */
    char base[4200], fresh[sizeof j->work];
    snprintf(base, sizeof base, "%s/%s", o->out, SV_PREP_NEW_WORK_BASE);
    sv_status ws = sv_fileio_tmp_dir(base, fresh, sizeof fresh);
    if (ws != SV_OK) {
        if (j->created_out) sv_fileio_made_dirs_remove(&j->out_made);
        return ws;
    }
    j->work_made = 1;
    snprintf(j->work, sizeof j->work, "%s", fresh);
    j->work_fd = open(fresh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = -1;
    while (j->work_fd >= 0 && (rc = flock(j->work_fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) { /* no flock here: no liveness to tell */
        if (j->work_fd >= 0) close(j->work_fd);
        j->work_fd = -1;
        return SV_OK;
    }
    char named[sizeof j->work];
    snprintf(base, sizeof base, "%s/%s", o->out, SV_PREP_WORK_BASE);
    if (sv_fileio_tmp_dir_rebase(fresh, base, named, sizeof named) == SV_OK)
        snprintf(j->work, sizeof j->work, "%s", named);
    else
        sv_err_clear(); /* it keeps its first name: the import goes on */
    return SV_OK;
}

static void work_unlock(sv_prep_job *j) {
    if (j->work_fd >= 0) close(j->work_fd);
    j->work_fd = -1;
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

/* One finished split directory or shard from the work directory into OUT, never replacing what
 * is there (a file of the user's, or another prep's output into the same --out). */
static sv_status move_one(const char *a, const char *b) {
    struct stat st;
    sv_status s = sv_fileio_rename(a, b, 1); /* no-replace: fails when b exists */
    if (s != SV_OK && lstat(b, &st) == 0)
        return SV_FAIL(SV_ERR_IO,
                       "%s appeared while prep ran (another prep into the same --out, or a file of someone else's): "
                       "prep never replaces what it did not create",
                       b);
    return s;
}

/* The finished splits from the work directory into OUT (renames: a split appears in OUT whole
 * or not at all; j->moved counts what is there, so that an abort removes only its own), then the
 * work directory removed. */
static sv_status move_splits(sv_prep_job *j) {
    char a[4400], b[4400];
    for (int s = 0; s < 2; s++) {
        if (j->split_made[s]) {
            snprintf(a, sizeof a, "%s/%s", j->work, k_split[s]);
            snprintf(b, sizeof b, "%s/%s", j->o->out, k_split[s]);
            SV_TRY(move_one(a, b));
            j->moved[s] = 1;
        }
        for (int k = 0; k < j->shards[s]; k++) {
            sv_prep_shard_path(a, sizeof a, j->work, s, k);
            sv_prep_shard_path(b, sizeof b, j->o->out, s, k);
            SV_TRY(move_one(a, b));
            j->moved[s] = k + 1;
        }
    }
    if (rmdir(j->work) != 0) return SV_FAIL(SV_ERR_IO, "rmdir %s: %s", j->work, strerror(errno));
    j->work_made = 0;
    work_unlock(j);
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
    if (sv_prep_source_lines(&j->source, rec, sizeof rec) < 0)
        return SV_FAIL(SV_ERR_INVALID, "prep: source record too long");
    int n = snprintf(m, sizeof m, "%strain %llu\ntest %llu\n%s", j->marker, (unsigned long long)o->n_train,
                     (unsigned long long)o->n_test, rec);
    if (n < 0 || (size_t)n >= sizeof m) return SV_FAIL(SV_ERR_INVALID, "prep: marker too long");
    snprintf(p, sizeof p, "%s/%s", o->out, SV_PREP_MARKER);
    SV_TRY(write_new(p, m, (size_t)n));
    if (j->created_out) sv_fileio_made_dirs_keep(&j->out_made); /* complete: OUT stays */
    return SV_OK;
}

/* A failed import: remove what it created (see above), keep the error message. */
sv_status sv_prep_abort(sv_prep_job *j, sv_status st) {
    const char *out = j->o->out;
    char p[4200], msg[2048];
    snprintf(msg, sizeof msg, "%s", sv_err_msg());
    int left = 0;
    for (int s = 0; s < 2; s++) {
        if (j->split_made[s]) {
            snprintf(p, sizeof p, "%s/%s", j->moved[s] ? out : j->work, k_split[s]);
            left |= sv_fileio_remove_tree(p) != SV_OK;
        }
        for (int k = 0; k < j->shards[s]; k++) { /* the first moved[s] are in OUT, the rest in WORK */
            sv_prep_shard_path(p, sizeof p, k < j->moved[s] ? out : j->work, s, k);
            left |= unlink(p) != 0 && errno != ENOENT;
        }
    }
    if (j->work_made) left |= rmdir(j->work) != 0;
    work_unlock(j);
    if (j->classes_made) {
        snprintf(p, sizeof p, "%s/classes.txt", out);
        left |= unlink(p) != 0 && errno != ENOENT;
    }
    if (j->created_out) {
        sv_fileio_made_dirs_remove(&j->out_made);
        struct stat sb;
        left |= stat(out, &sb) == 0;
    }
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
    s->split = k_split[split_ix];
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
    errno = 0;
    if (fwrite(h, 1, 512, s->tar) != 512 || fwrite(data, 1, len, s->tar) != len ||
        fwrite(zeros, 1, (512 - len % 512) % 512, s->tar) != (512 - len % 512) % 512) {
        char p[8192];
        const int e = errno;
        sv_prep_shard_path(p, sizeof p, s->job->work, s->split_ix, s->shard);
        return SV_FAIL(SV_ERR_IO, "%s: write failed: %s", p, e ? strerror(e) : "short write");
    }
    return SV_OK;
}

static sv_status tar_close(sv_prep_sink *s) {
    if (!s->tar) return SV_OK;
    static const uint8_t zeros[1024];
    errno = 0;
    int bad = fwrite(zeros, 1, 1024, s->tar) != 1024, e = bad ? errno : 0;
    if (fclose(s->tar) != 0) bad = 1, e = e ? e : errno;
    s->tar = NULL;
    if (bad) {
        char p[8192];
        sv_prep_shard_path(p, sizeof p, s->job->work, s->split_ix, s->shard);
        return SV_FAIL(SV_ERR_IO, "%s: write failed: %s", p, e ? strerror(e) : "short write");
    }
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
        if (s->tar && s->in_shard >= sv_prep_shard_samples(s->o)) SV_TRY(tar_close(s));
        if (!s->tar) {
            sv_prep_shard_path(p, sizeof p, s->job->work, s->split_ix, s->shard);
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
