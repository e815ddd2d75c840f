/* shardvit prep imagefolder: an existing ImageFolder tree of JPEG files into the layout every prep
 * source writes (data/prep.h sv_prep_imagefolder). The trees are read through the folder dataset
 * (data/dataset.h), so classes, file selection, failures and warnings are those of training. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cpus.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/jpeg_restart.h"
#include "data/prep.h"
#include "data/prep_impl.h"

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The evaluation split of src: SRC/val, else SRC/test, in edir (cap bytes); its name ("val",
 * "test"), or NULL when there is neither. */
static const char *eval_dir(const char *src, char *edir, size_t cap) {
    snprintf(edir, cap, "%s/val", src);
    if (is_dir(edir)) return "val";
    snprintf(edir, cap, "%s/test", src);
    return is_dir(edir) ? "test" : NULL;
}

/* One split of the source record (data/prep_impl.h sv_prep_source) from the open dataset d, read
 * from SRC/dir: its samples, sv_dataset_fingerprint (names, labels, classes) and a hash of each
 * file's size and modification time in sample order (a file that cannot be examined counts by its
 * error, the same each time). Nothing is read from the files. */
static void source_split(const sv_dataset *d, const char *dir, sv_prep_source_split *r) {
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->n = sv_dataset_len(d);
    r->list = sv_dataset_fingerprint(d);
    uint64_t h = sv_hash2(0x70726570u, r->n); /* "prep" */
    char name[8400];
    for (size_t i = 0; i < r->n; i++) {
        struct stat st;
        sv_dataset_sample_name(d, i, name, sizeof name);
        if (stat(name, &st) == 0)
            h = sv_hash2(sv_hash2(sv_hash2(h, (uint64_t)st.st_size), (uint64_t)st.st_mtim.tv_sec),
                         (uint64_t)st.st_mtim.tv_nsec);
        else
            h = sv_hash2(h, ~(uint64_t)errno);
    }
    r->files = h;
}

sv_status sv_prep_folder_source(const sv_prep_opts *o, sv_prep_source *rec, int *gone) {
    memset(rec, 0, sizeof *rec);
    *gone = 0;
    struct stat st;
    if (stat(o->src, &st) != 0 && errno == ENOENT) {
        *gone = 1;
        return SV_OK;
    }
    char tdir[4200], edir[4200];
    if (snprintf(tdir, sizeof tdir, "%s/train", o->src) >= (int)sizeof tdir)
        return SV_FAIL(SV_ERR_INVALID, "prep imagefolder: --src too long");
    const char *ename = eval_dir(o->src, edir, sizeof edir);
    sv_dataset_opts dopts = sv_dataset_opts_default();
    sv_dataset *train = NULL, *eval = NULL;
    sv_status s =
        is_dir(tdir) ? sv_dataset_open(tdir, &dopts, &train) : SV_FAIL(SV_ERR_NOT_FOUND, "%s is not a directory", tdir);
    if (s == SV_OK && ename) s = sv_dataset_open(edir, &dopts, &eval);
    if (s == SV_OK) {
        source_split(train, "train", &rec->split[0]);
        if (eval) source_split(eval, ename, &rec->split[1]);
        rec->recorded = 1;
    }
    sv_dataset_close(eval);
    sv_dataset_close(train);
    return s;
}

/* The evaluation split's label of each of its classes: the index of the training class of the
 * same name (the folder scan sorts class names byte-wise, so a binary search finds it). */
static sv_status map_classes(const sv_dataset *train, const char *train_dir, const sv_dataset *eval,
                             const char *eval_dir, int *map) {
    const int K = sv_dataset_num_classes(train), Ke = sv_dataset_num_classes(eval);
    int unknown = 0, first = -1;
    for (int e = 0; e < Ke; e++) {
        const char *name = sv_dataset_class_name(eval, e);
        int lo = 0, hi = K - 1;
        map[e] = -1;
        while (lo <= hi) {
            const int mid = lo + (hi - lo) / 2, c = strcmp(sv_dataset_class_name(train, mid), name);
            if (!c) {
                map[e] = mid;
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        if (map[e] < 0 && unknown++ == 0) first = e;
    }
    if (!unknown) return SV_OK;
    char esc[SV_ESC_CAP], more[64] = "";
    if (unknown > 1) snprintf(more, sizeof more, " (and %d more classes)", unknown - 1);
    return SV_FAIL(SV_ERR_FORMAT,
                   "prep imagefolder: class '%s' of %s%s is not a class of %s: the evaluation split's classes must "
                   "be training classes (its labels are the training classes' indices)",
                   sv_log_esc(sv_dataset_class_name(eval, first), esc, sizeof esc), eval_dir, more, train_dir);
}

static uint64_t capped_sum(const uint64_t *n, int K, uint64_t cap) {
    uint64_t s = 0;
    for (int k = 0; k < K; k++) s += n[k] < cap ? n[k] : cap;
    return s;
}

/* Per-class quotas q for at most `limit` of the n[k] samples of each class (0 = all), as the
 * rounds of a round-robin over the classes would pick them: every class min(n[k], r) for the
 * largest r that fits, the rest one each to the first classes that have more. */
static void class_quotas(const uint64_t *n, int K, uint64_t limit, uint64_t *q) {
    uint64_t lo = 0, hi = 0;
    for (int k = 0; k < K; k++) hi = n[k] > hi ? n[k] : hi;
    if (!limit || capped_sum(n, K, hi) <= limit) {
        memcpy(q, n, (size_t)K * sizeof *q);
        return;
    }
    while (lo < hi) { /* the largest r with capped_sum(r) <= limit */
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (capped_sum(n, K, mid) <= limit)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint64_t left = limit - capped_sum(n, K, lo);
    for (int k = 0; k < K; k++) {
        q[k] = n[k] < lo ? n[k] : lo;
        if (n[k] > lo && left) q[k]++, left--;
    }
}

/* Sample i's file name, escaped for a message, in esc (SV_ESC_CAP bytes). */
static const char *sample_name(const sv_dataset *d, size_t i, char *esc) {
    char name[4200];
    sv_dataset_sample_name(d, i, name, sizeof name);
    return sv_log_esc(name, esc, SV_ESC_CAP);
}

/* Sample i of d read into *buf (capacity *cap, grown as sv_dataset_read grows it), checked by
 * decoding it and, with restart_mcus > 0, rewritten with restart markers: *jpg, *len are the bytes
 * to write (in *buf, or in jc->jbuf until jc's next encode). A file that cannot be rewritten
 * losslessly is kept as it is: SV_OK with *kept = 1 and sv_err_msg() saying why (the caller warns
 * and clears it). On failure the calling thread's message names the file. */
static sv_status take_sample(const sv_dataset *d, size_t i, sv_jpeg_ctx *jc, int restart_mcus, uint8_t **buf,
                             size_t *cap, const uint8_t **jpg, size_t *len, int *kept) {
    int w, h;
    *kept = 0;
    sv_status st = sv_dataset_read(d, i, buf, cap, len);
    *jpg = *buf;
    /* the check training's decode would make: every entropy-coded bit is read at 1/8 scale */
    if (st == SV_OK) st = sv_jpeg_decode(jc, *buf, *len, 3, 8, &w, &h);
    if (st == SV_OK && restart_mcus > 0) { /* the same coefficients, cut into restart intervals */
        const uint8_t *rj;
        size_t rlen;
        st = sv_jpeg_add_restarts(jc, *buf, *len, restart_mcus, 1, &rj, &rlen);
        if (st == SV_OK) {
            *jpg = rj, *len = rlen;
        } else if (st == SV_ERR_UNSUPPORTED) { /* cannot be rewritten losslessly: kept as it is */
            *kept = 1;
            st = SV_OK;
        }
    }
    if (st != SV_OK) {
        char esc[SV_ESC_CAP];
        sv_err_prefix(sample_name(d, i, esc));
    }
    return st;
}

static void warn_kept(const sv_dataset *d, size_t i, const char *why) {
    char esc[SV_ESC_CAP];
    SV_WARN("prep imagefolder: %s: %s; copied without restart markers", sample_name(d, i, esc), why);
}

/* The samples a split takes, in order: dataset order, each class up to its quota. */
typedef struct pick {
    const sv_dataset *d;
    size_t n, i; /* samples, the next one to look at */
    uint64_t *quota, *taken;
} pick;

/* The next sample to take (1, its index in *i) or none left (0). */
static int pick_next(pick *p, size_t *i) {
    for (; p->i < p->n; p->i++) {
        const int label = sv_dataset_label(p->d, p->i);
        if (p->taken[label] == p->quota[label]) continue;
        p->taken[label]++;
        *i = p->i++;
        return 1;
    }
    return 0;
}

/* ---- several workers ----------------------------------------------------------------------
 *
 * The samples taken are numbered 0, 1, ... in the order they are written (seq). Workers claim
 * the next seq under the lock (pick_next, so the selection is the sequential one) and process
 * it into ring slot seq % R, at most R ahead of the writer; the calling thread writes the slots
 * in seq order. A worker that fails stops the claims; the writer still meets every earlier
 * sample first, so the error reported is that of the first failing sample in order, and its
 * message (the worker's, naming the file) is carried over to the calling thread. Memory: R
 * slot buffers, each as large as the largest file it held. */

typedef struct slot {
    size_t i;      /* the sample */
    sv_status st;  /* its outcome */
    int kept;      /* copied without restart markers: msg says why */
    int ready;     /* processed, not yet written (under the lock) */
    uint8_t *data; /* the bytes to write */
    size_t len, cap;
    char msg[SV_ERR_MSG_CAP]; /* the worker's error or warning message */
} slot;

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, ready_cv;
    pick *p;
    int restart_mcus;
    slot *slots;
    uint64_t R, total;
    uint64_t next_seq;  /* the next seq to claim */
    uint64_t write_seq; /* the next seq to write */
    int stop;           /* no more claims: the writer is done or a sample failed */
} pool;

static void *pool_worker(void *arg) {
    pool *pl = arg;
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        while (!pl->stop && pl->next_seq < pl->total && pl->next_seq >= pl->write_seq + pl->R)
            pthread_cond_wait(&pl->work_cv, &pl->mu);
        size_t i;
        if (pl->stop || pl->next_seq >= pl->total || !pick_next(pl->p, &i)) break;
        slot *sl = &pl->slots[pl->next_seq++ % pl->R];
        pthread_mutex_unlock(&pl->mu);
        const uint8_t *jpg;
        size_t len;
        sl->i = i;
        sl->st = take_sample(pl->p->d, i, &jc, pl->restart_mcus, &sl->data, &sl->cap, &jpg, &len, &sl->kept);
        if (sl->st == SV_OK && jpg != sl->data) { /* the rewrite, in jc's buffer: into the slot */
            uint8_t *q = len > sl->cap ? realloc(sl->data, len) : sl->data;
            if (q) {
                if (len > sl->cap) sl->data = q, sl->cap = len;
                memcpy(sl->data, jpg, len);
            } else {
                char esc[SV_ESC_CAP];
                sl->st = SV_FAIL(SV_ERR_OOM, "%s: cannot allocate %zu bytes for its rewrite",
                                 sample_name(pl->p->d, i, esc), len);
            }
        }
        sl->len = len;
        sl->msg[0] = 0;
        if (sl->st != SV_OK || sl->kept) snprintf(sl->msg, sizeof sl->msg, "%s", sv_err_msg());
        sv_err_clear();
        pthread_mutex_lock(&pl->mu);
        sl->ready = 1;
        if (sl->st != SV_OK) pl->stop = 1; /* nothing later is needed */
        pthread_cond_signal(&pl->ready_cv);
    }
    pthread_mutex_unlock(&pl->mu);
    sv_jpeg_ctx_free(&jc);
    return NULL;
}

/* Process the `total` samples of p on `workers` threads, writing them in order through s. */
static sv_status write_parallel(sv_prep_sink *s, pick *p, uint64_t total, const int *map, int restart_mcus,
                                int workers) {
    pool pl;
    memset(&pl, 0, sizeof pl);
    pl.p = p;
    pl.restart_mcus = restart_mcus;
    pl.total = total;
    pl.R = (uint64_t)workers * 4 < 64 ? 64 : (uint64_t)workers * 4;
    if (!(pl.slots = calloc((size_t)pl.R, sizeof *pl.slots)))
        return SV_FAIL(SV_ERR_OOM, "prep imagefolder: %llu worker slots", (unsigned long long)pl.R);
    pthread_t *th = malloc((size_t)workers * sizeof *th);
    if (!th) {
        free(pl.slots);
        return SV_FAIL(SV_ERR_OOM, "prep imagefolder: %d worker threads", workers);
    }
    pthread_mutex_init(&pl.mu, NULL);
    pthread_cond_init(&pl.work_cv, NULL);
    pthread_cond_init(&pl.ready_cv, NULL);
    int started = 0;
    sv_status st = SV_OK;
    for (; started < workers; started++) {
        const int e = pthread_create(&th[started], NULL, pool_worker, &pl);
        if (e) {
            if (!started)
                st = SV_FAIL(SV_ERR_BACKEND, "prep imagefolder: cannot start a worker thread: %s", strerror(e));
            break; /* the ones started do the work */
        }
    }
    for (uint64_t seq = 0; seq < total && st == SV_OK; seq++) {
        slot *sl = &pl.slots[seq % pl.R];
        pthread_mutex_lock(&pl.mu);
        while (!sl->ready) pthread_cond_wait(&pl.ready_cv, &pl.mu);
        pthread_mutex_unlock(&pl.mu);
        if (sl->st != SV_OK) { /* the first failure in order: its message, naming the file */
            st = sv_fail_at(sl->st, __FILE__, __LINE__, "%s", sl->msg);
            break;
        }
        if (sl->kept) warn_kept(p->d, sl->i, sl->msg);
        const int label = sv_dataset_label(p->d, sl->i);
        st = sv_prep_sink_write(s, sl->data, sl->len, map ? map[label] : label);
        pthread_mutex_lock(&pl.mu);
        sl->ready = 0;
        pl.write_seq++;
        pthread_cond_broadcast(&pl.work_cv);
        pthread_mutex_unlock(&pl.mu);
    }
    pthread_mutex_lock(&pl.mu);
    pl.stop = 1;
    pthread_cond_broadcast(&pl.work_cv);
    pthread_mutex_unlock(&pl.mu);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    pthread_cond_destroy(&pl.ready_cv);
    pthread_cond_destroy(&pl.work_cv);
    pthread_mutex_destroy(&pl.mu);
    for (uint64_t r = 0; r < pl.R; r++) free(pl.slots[r].data);
    free(pl.slots);
    free(th);
    return st;
}

/* One split: dataset d's samples in order (at most their class quota), label map[label] (NULL:
 * the same), each decoded first and rewritten with restart markers when asked; on `workers`
 * threads when more than 1 (the same bytes in the same order). */
static sv_status folder_split(sv_prep_job *j, sv_jpeg_ctx *jc, const sv_dataset *d, const int *map, int split,
                              const char *const *names, int K, int workers, uint64_t *count) {
    const sv_prep_opts *o = j->o;
    const size_t n = sv_dataset_len(d);
    const int Kd = sv_dataset_num_classes(d);
    uint64_t *have = calloc((size_t)Kd * 3, sizeof *have), *quota = have + Kd, *taken = quota + Kd, total = 0;
    if (!have) return SV_FAIL(SV_ERR_OOM, "prep imagefolder: class counts");
    for (size_t i = 0; i < n; i++) have[sv_dataset_label(d, i)]++;
    class_quotas(have, Kd, o->limit, quota);
    for (int k = 0; k < Kd; k++) total += quota[k];
    pick p = {d, n, 0, quota, taken};
    sv_prep_sink s;
    sv_status st = sv_prep_sink_open(&s, j, split, names, K, total);
    if (st == SV_OK && workers > 1 && total > 1) {
        st = write_parallel(&s, &p, total, map, o->restart_mcus, total < (uint64_t)workers ? (int)total : workers);
    } else if (st == SV_OK) { /* one thread: each sample read, checked and written in turn */
        uint8_t *buf = NULL;
        size_t cap = 0, i;
        while (st == SV_OK && pick_next(&p, &i)) {
            const uint8_t *jpg;
            size_t len;
            int kept;
            st = take_sample(d, i, jc, o->restart_mcus, &buf, &cap, &jpg, &len, &kept);
            if (st == SV_OK && kept) {
                warn_kept(d, i, sv_err_msg());
                sv_err_clear();
            }
            const int label = sv_dataset_label(d, i);
            if (st == SV_OK) st = sv_prep_sink_write(&s, jpg, len, map ? map[label] : label);
        }
        free(buf);
    }
    *count = s.count;
    free(have);
    return sv_prep_sink_close(&s, st);
}

sv_status sv_prep_out_outside_src(const sv_prep_opts *o) {
    if (!o->out || !o->out[0] || !o->src || !o->src[0]) return SV_OK;
    char rs[PATH_MAX], ro[PATH_MAX];
    SV_TRY(sv_fileio_real_path(o->src, rs));
    SV_TRY(sv_fileio_real_path(o->out, ro));
    if (!sv_fileio_path_inside(ro, rs)) return SV_OK;
    return SV_FAIL(SV_ERR_INVALID,
                   "prep imagefolder: --out %s lies inside --src %s (%s): its directories would be read as classes of "
                   "the source and the import would write into it; choose an output outside the source tree "
                   "(nothing was written)",
                   o->out, o->src, rs);
}

sv_status sv_prep_imagefolder(sv_prep_opts *o) {
    if (!o->src || !o->src[0]) return SV_FAIL(SV_ERR_INVALID, "prep imagefolder: --src is required");
    if (o->restart_mcus < 0 || o->restart_mcus > 65535)
        return SV_FAIL(SV_ERR_INVALID, "prep imagefolder: restart interval %d not in 0..65535", o->restart_mcus);
    if (o->workers < 0 || o->workers > SV_PREP_MAX_WORKERS)
        return SV_FAIL(SV_ERR_INVALID, "prep imagefolder: %d workers not in 1..%d (0 = the CPUs it may use)",
                       o->workers, SV_PREP_MAX_WORKERS);
    char tdir[4200], edir[4200];
    if (snprintf(tdir, sizeof tdir, "%s/train", o->src) >= (int)sizeof tdir)
        return SV_FAIL(SV_ERR_INVALID, "prep imagefolder: --src too long");
    /* the evaluation split: SRC/val, else SRC/test, else none */
    const char *ename = eval_dir(o->src, edir, sizeof edir);
    const int has_eval = ename != NULL;
    SV_TRY(sv_prep_out_outside_src(o));
    sv_prep_job j;
    int done;
    SV_TRY(sv_prep_begin(&j, o, "imagefolder", &done));
    if (done) return SV_OK;
    int workers = o->workers;
    if (!workers) {
        const int cpus = sv_cpus_usable();
        workers = cpus < SV_PREP_MAX_WORKERS ? cpus : SV_PREP_MAX_WORKERS;
    }
    SV_INFO("prep imagefolder: %s -> %s (%s%s, %d worker%s)", o->src, o->out,
            o->format == SV_PREP_TAR ? "tar shards" : "image folders",
            o->restart_mcus > 0 ? ", restart markers added" : ", JPEG bytes unchanged", workers,
            workers > 1 ? "s" : "");
    sv_dataset *train = NULL, *eval = NULL;
    sv_dataset_opts dopts = sv_dataset_opts_default();
    const char **names = NULL;
    int *map = NULL, K = 0;
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    sv_status st = SV_OK;
    if (!is_dir(tdir))
        st = SV_FAIL(SV_ERR_NOT_FOUND,
                     "prep imagefolder: %s is not a directory (the source holds train/<class>/*.jpg, and val/ or "
                     "test/ alike for evaluation)",
                     tdir);
    if (st == SV_OK) st = sv_dataset_open(tdir, &dopts, &train);
    if (st == SV_OK) {
        K = sv_dataset_num_classes(train);
        SV_INFO("prep imagefolder: %s: %zu images in %d classes", tdir, sv_dataset_len(train), K);
        if (!(names = malloc((size_t)K * sizeof *names))) st = SV_FAIL(SV_ERR_OOM, "prep imagefolder: class list");
        for (int k = 0; k < K && names; k++) names[k] = sv_dataset_class_name(train, k);
    }
    if (st == SV_OK && has_eval) {
        st = sv_dataset_open(edir, &dopts, &eval);
        if (st == SV_OK && !(map = malloc((size_t)sv_dataset_num_classes(eval) * sizeof *map)))
            st = SV_FAIL(SV_ERR_OOM, "prep imagefolder: class map");
        if (st == SV_OK) st = map_classes(train, tdir, eval, edir, map);
        if (st == SV_OK)
            SV_INFO("prep imagefolder: %s: %zu images in %d classes, written as %s/test (the evaluation split)", edir,
                    sv_dataset_len(eval), sv_dataset_num_classes(eval), o->out);
    } else if (st == SV_OK) {
        SV_INFO("prep imagefolder: %s has neither val/ nor test/: only the train split is written", o->src);
    }
    if (st == SV_OK) { /* what the source holds, for the marker: a later run compares the source with it */
        source_split(train, "train", &j.source.split[0]);
        if (eval) source_split(eval, ename, &j.source.split[1]);
        j.source.recorded = 1;
    }
    if (st == SV_OK) st = folder_split(&j, &jc, train, NULL, 0, names, K, workers, &o->n_train);
    if (st == SV_OK && eval) st = folder_split(&j, &jc, eval, map, 1, names, K, workers, &o->n_test);
    if (st == SV_OK && !eval) o->n_test = 0;
    if (st == SV_OK) st = sv_prep_finish(&j, names, K);
    if (st != SV_OK) st = sv_prep_abort(&j, st);
    if (st == SV_OK)
        SV_INFO("prep imagefolder: wrote %llu train + %llu test images", (unsigned long long)o->n_train,
                (unsigned long long)o->n_test);
    sv_jpeg_ctx_free(&jc);
    free(map);
    free(names);
    sv_dataset_close(eval);
    sv_dataset_close(train);
    return st;
}
