/* shardvit prep imagefolder: an existing ImageFolder tree of JPEG files into the layout every prep
 * source writes (data/prep.h sv_prep_imagefolder). The trees are read through the folder dataset
 * (data/dataset.h), so classes, file selection, failures and warnings are those of training. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/log.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/jpeg_restart.h"
#include "data/prep.h"
#include "data/prep_impl.h"

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
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

/* One split: dataset d's samples in order (at most their class quota), label map[label] (NULL:
 * the same), each decoded first and rewritten with restart markers when asked. */
static sv_status folder_split(sv_prep_job *j, sv_jpeg_ctx *jc, const sv_dataset *d, const int *map, int split,
                              const char *const *names, int K, uint64_t *count) {
    const sv_prep_opts *o = j->o;
    const size_t n = sv_dataset_len(d);
    const int Kd = sv_dataset_num_classes(d);
    uint64_t *have = calloc((size_t)Kd * 3, sizeof *have), *quota = have + Kd, *taken = quota + Kd, total = 0;
    if (!have) return SV_FAIL(SV_ERR_OOM, "prep imagefolder: class counts");
    for (size_t i = 0; i < n; i++) have[sv_dataset_label(d, i)]++;
    class_quotas(have, Kd, o->limit, quota);
    for (int k = 0; k < Kd; k++) total += quota[k];
    sv_prep_sink s;
    sv_status st = sv_prep_sink_open(&s, j, split, names, K, total);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n && st == SV_OK; i++) {
        const int label = sv_dataset_label(d, i);
        if (taken[label] == quota[label]) continue;
        taken[label]++;
        const uint8_t *jpg;
        size_t len;
        int w, h;
        st = sv_dataset_read(d, i, &buf, &cap, &len);
        jpg = buf;
        /* the check training's decode would make: every entropy-coded bit is read at 1/8 scale */
        if (st == SV_OK) st = sv_jpeg_decode(jc, buf, len, 3, 8, &w, &h);
        if (st == SV_OK && o->restart_mcus > 0) { /* the same coefficients, cut into restart intervals */
            const uint8_t *rj;
            size_t rlen;
            st = sv_jpeg_add_restarts(jc, buf, len, o->restart_mcus, 1, &rj, &rlen);
            if (st == SV_OK) {
                jpg = rj, len = rlen;
            } else if (st == SV_ERR_UNSUPPORTED) { /* cannot be rewritten losslessly: kept as it is */
                char name[4200], esc[SV_ESC_CAP];
                sv_dataset_sample_name(d, i, name, sizeof name);
                SV_WARN("prep imagefolder: %s: %s; copied without restart markers", sv_log_esc(name, esc, sizeof esc),
                        sv_err_msg());
                sv_err_clear();
                st = SV_OK;
            }
        }
        if (st != SV_OK) {
            char name[4200], esc[SV_ESC_CAP];
            sv_dataset_sample_name(d, i, name, sizeof name);
            sv_err_prefix(sv_log_esc(name, esc, sizeof esc));
            break;
        }
        st = sv_prep_sink_write(&s, jpg, len, map ? map[label] : label);
    }
    *count = s.count;
    free(buf);
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
    char tdir[4200], edir[4200];
    if (snprintf(tdir, sizeof tdir, "%s/train", o->src) >= (int)sizeof tdir)
        return SV_FAIL(SV_ERR_INVALID, "prep imagefolder: --src too long");
    const char *eval_name = NULL;
    snprintf(edir, sizeof edir, "%s/val", o->src);
    if (is_dir(edir))
        eval_name = "val";
    else if (snprintf(edir, sizeof edir, "%s/test", o->src), is_dir(edir))
        eval_name = "test";
    SV_TRY(sv_prep_out_outside_src(o));
    sv_prep_job j;
    int done;
    SV_TRY(sv_prep_begin(&j, o, "imagefolder", &done));
    if (done) return SV_OK;
    SV_INFO("prep imagefolder: %s -> %s (%s%s)", o->src, o->out,
            o->format == SV_PREP_TAR ? "tar shards" : "image folders",
            o->restart_mcus > 0 ? ", restart markers added" : ", JPEG bytes unchanged");
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
    if (st == SV_OK && eval_name) {
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
    if (st == SV_OK) st = folder_split(&j, &jc, train, NULL, 0, names, K, &o->n_train);
    if (st == SV_OK && eval) st = folder_split(&j, &jc, eval, map, 1, names, K, &o->n_test);
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
