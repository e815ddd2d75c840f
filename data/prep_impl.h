/* shardvit data: internals shared by the prep sources (prep.c: CIFAR, synthetic; prep_idx.c: IDX;
 * prep_folder.c: an ImageFolder tree of JPEG files). Not a public header.
 *
 * An import is one job and one sink per split:
 *   sv_prep_begin     claims o->out (data/prep.h "The output directory"): *done = 1 when it
 *                     already holds this import (nothing to do, o->reused = 1), else it makes the
 *                     work directory the splits are written into;
 *   sv_prep_sink_open one split (0 train, 1 test): folder format makes WORK/<split>/<class> for
 *                     each of the K names; sv_prep_sink_put / sv_prep_sink_write add samples in
 *                     order (file or tar member <index>.jpg, index zero-padded to fit `total`, a
 *                     progress line every 10000); sv_prep_sink_close ends it (call it after a
 *                     failed open too; it returns the first error);
 *   sv_prep_finish    moves the splits into OUT, writes classes.txt (the K names) and the marker
 *                     with o->n_train / o->n_test and, when j->source.recorded, what the source
 *                     held (sv_prep_source);
 *   sv_prep_abort     after any failure past sv_prep_begin: removes what the job created, keeps
 *                     the error message, returns st. */
#ifndef SV_DATA_PREP_IMPL_H
#define SV_DATA_PREP_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "data/jpeg.h"
#include "data/prep.h"

/* The two splits by index (0 train, 1 test: sv_prep_job's per-split arrays, sv_prep_sink's
 * split_ix), a tar shard's path DIR/SPLIT-NNNNNN.tar and the samples per shard (--shard-size;
 * SV_PREP_SHARD_SIZE_DEFAULT when 0): one spelling for the writer (prep.c) and for the marker and
 * its check of OUT's contents (prep_marker.c). */
enum { SV_PREP_SHARD_SIZE_DEFAULT = 10000 };
const char *sv_prep_split_name(int split);
void sv_prep_shard_path(char *p, size_t cap, const char *dir, int split, uint64_t k);
uint64_t sv_prep_shard_samples(const sv_prep_opts *o);

/* What an imagefolder source held when it was imported, recorded in the marker after the counts so
 * that the same import run again is compared with the source as it is then (a source that changed
 * since is refused, not taken as "already prepared"). Per split: the directory it was read from
 * ("train"; "val" or "test" for the evaluation split, "" when there is none), its samples, the
 * fingerprint of its file list (sv_dataset_fingerprint: class names in order, each sample's path
 * relative to the split and its label) and a fingerprint of the files' sizes and modification
 * times (stat; the contents are not read, so a file rewritten with the same size and time goes
 * unnoticed). Counts and fingerprints cover the whole source, --limit or not. */
typedef struct sv_prep_source_split {
    char dir[8];
    uint64_t n, list, files;
} sv_prep_source_split;

typedef struct sv_prep_source {
    int recorded; /* 0: no record (IDX, CIFAR, synthetic; an imagefolder marker written without one) */
    sv_prep_source_split split[2];
} sv_prep_source;

typedef struct sv_prep_job {
    sv_prep_opts *o;
    char marker[8192]; /* the options part of the marker */
    char work[4096];   /* OUT/.prep.tmp-XXXXXXXX (.prep.new.tmp-XXXXXXXX where it cannot be flocked): the
                          splits are written here, moved into OUT at the end */
    int created_out;   /* this import made o->out (out_made: the directories, registered for a signal) */
    sv_fileio_made_dirs out_made;
    int work_made;     /* made the work directory */
    int work_fd;       /* the work directory, flocked while this prep runs (-1: none): another prep
                          that finds it tells a running prep from an interrupted one */
    int split_made[2]; /* folder: made WORK/train, WORK/test */
    int shards[2];     /* tar: shards created per split */
    int moved[2];      /* folder: the split is in OUT; tar: its first moved[s] shards are */
    int classes_made;  /* made OUT/classes.txt */

    /* imagefolder: what the source holds, written into the marker */
    sv_prep_source source;
} sv_prep_job;

typedef struct sv_prep_sink {
    const sv_prep_opts *o;
    sv_prep_job *job;
    int split_ix; /* 0 train, 1 test */
    const char *split;
    const char *const *names;
    int K;
    sv_jpeg_ctx jc; /* sv_prep_sink_put's encoder */
    FILE *tar;
    int shard;
    uint64_t in_shard, count;
    int width; /* digits of the index */
} sv_prep_sink;

/* The marker (data/prep_marker.c): its options part for dataset `what` into buf (-1 when it does
 * not fit: a --src of ~8 KiB); the source record's lines (-1 when they do not fit; "" without a
 * record); and the output-directory check: o->out missing, empty or holding nothing but work
 * directories of killed preps (*done = 0; sv_prep_begin removes those), a complete import of
 * these options whose OUT (and imagefolder source) still holds what the marker records (*done =
 * 1, o->n_train / o->n_test read from it), else refused naming why (a prep running into OUT
 * included). quiet: no warnings. */
int sv_prep_marker_opts(const sv_prep_opts *o, const char *what, char *buf, size_t cap);
int sv_prep_source_lines(const sv_prep_source *r, char *buf, size_t cap);
sv_status sv_prep_marker_check_out(sv_prep_opts *o, const char *what, const char *opts, int quiet, int *done);
/* The work directory's names in OUT, as bases of sv_fileio_tmp_dir: made as
 * "<SV_PREP_NEW_WORK_BASE>.tmp-XXXXXXXX", renamed to "<SV_PREP_WORK_BASE>.tmp-XXXXXXXX" once flocked
 * (data/prep.c sv_prep_begin). */
#define SV_PREP_WORK_BASE ".prep"
#define SV_PREP_NEW_WORK_BASE ".prep.new"
/* Entry `name` of OUT as a work directory (OUT/.prep.tmp-XXXXXXXX with 8 lowercase hex digits,
 * a real directory): 1 while a prep holds it (running), 0 when none does (what a killed prep
 * left), 2 when its flock state cannot be told (no flock on that file system), -1 when it is
 * not one. */
int sv_prep_work_dir_state(const char *out, const char *name);

/* `what` names the dataset in the marker and the messages ("cifar10", "imagefolder", ...). */
sv_status sv_prep_begin(sv_prep_job *j, sv_prep_opts *o, const char *what, int *done);
sv_status sv_prep_finish(sv_prep_job *j, const char *const *names, int K);
sv_status sv_prep_abort(sv_prep_job *j, sv_status st);

/* names: K class names (plain directory names), borrowed until close; total: the samples the
 * split will hold (only sizes the index). */
sv_status sv_prep_sink_open(sv_prep_sink *s, sv_prep_job *j, int split_ix, const char *const *names, int K,
                            uint64_t total);
/* w x h x channels HWC pixels, encoded at o->quality (restart markers per o->restart_mcus). */
sv_status sv_prep_sink_put(sv_prep_sink *s, const uint8_t *pix, int w, int h, int channels, int label);
/* A JPEG's bytes as they are (label 0..K-1). */
sv_status sv_prep_sink_write(sv_prep_sink *s, const uint8_t *jpg, size_t len, int label);
sv_status sv_prep_sink_close(sv_prep_sink *s, sv_status st);

/* prep imagefolder (prep_folder.c): SV_ERR_INVALID when o->out lies inside o->src (its directories
 * would be read as classes of the trees being imported, and the import would write into them). */
sv_status sv_prep_out_outside_src(const sv_prep_opts *o);

/* prep imagefolder (prep_folder.c): what o->src holds now (*rec, recorded = 1), scanned as the
 * import scans it. *gone = 1 (SV_OK, nothing else filled) when o->src no longer exists; a source
 * that exists but cannot be scanned returns that error. */
sv_status sv_prep_folder_source(const sv_prep_opts *o, sv_prep_source *rec, int *gone);

#endif
