/* shardvit data: importers that turn IDX (MNIST, Fashion-MNIST), CIFAR-10/100 binary batches, a
 * generated synthetic set or an existing ImageFolder tree of JPEG files into JPEG datasets
 * shardvit reads.
 *
 * Output layouts (opts.format):
 *   SV_PREP_FOLDER: OUT/train/<class>/<index>.jpg and OUT/test/<class>/<index>.jpg, index
 *                   zero-padded to 5+ digits (source order), plus OUT/classes.txt
 *   SV_PREP_TAR:    OUT/train-000000.tar ... and OUT/test-000000.tar ... (WebDataset: members
 *                   <index>.jpg + <index>.cls, shard_size samples per shard), plus
 *                   OUT/classes.txt (found automatically by the tar reader)
 * imagefolder keeps the source's classes and image order (see sv_prep_imagefolder).
 * Grayscale sources stay 1-channel JPEGs. Class names are documented in docs/data.md. Each
 * function logs progress through core/log.h and fails with a message naming the file.
 *
 * The output directory: OUT must be missing (created, parents too) or an empty directory; any
 * other OUT is refused (SV_ERR_INVALID naming it) before anything is written, so no file there
 * is ever replaced. Every file is created with O_CREAT | O_EXCL: a symlink, FIFO or file in the
 * way is never followed, opened or overwritten. OUT/SV_PREP_MARKER is written last (after
 * classes.txt) and records the dataset and options (src resolved to an absolute path without
 * links, "." or "..", format, quality, shard size, limit, the synthetic settings), the counts and,
 * for imagefolder, what the source held (see sv_prep_imagefolder): an OUT holding a complete
 * import with the same options is left as it is (SV_OK, opts.reused = 1, counts from the marker)
 * while it still holds what the marker records (classes.txt; per split that many .jpg files in
 * the class folders, or every tar shard the count implies) and an imagefolder source still holds
 * what it held; one with other options, without the marker, changed since (a split, class folder,
 * shard or classes.txt gone, images added or removed) or imported from a source that changed
 * since is refused. A failed import removes what it created (its split trees or shards,
 * classes.txt, OUT when it made it). */
#ifndef SV_DATA_PREP_H
#define SV_DATA_PREP_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum { SV_PREP_FOLDER = 0, SV_PREP_TAR = 1 } sv_prep_format;

typedef struct sv_prep_opts {
    const char *src; /* source directory (idx/cifar/imagefolder); NULL = Debian's fashion-mnist dir */
    const char *out; /* output directory: missing or empty (see above) */
    sv_prep_format format;
    int quality;      /* JPEG quality 1..100 [95]; imagefolder does not encode */
    int restart_mcus; /* restart markers every at most this many MCUs, an interval the region
                       * decoder cuts at (data/jpeg_restart.h); 0 = none [0] */
    int shard_size;   /* tar: samples per shard [10000] */
    uint64_t limit;   /* at most this many samples per split; 0 = all */
    int workers;      /* imagefolder: threads that read, check and rewrite the images, 1..SV_PREP_MAX_WORKERS
                       * (1: one at a time on the calling thread); 0 = as many as the CPUs the process
                       * may run on [0]. The output is the same for every value (not in the marker) */
    /* synthetic set */
    int classes;        /* [10] */
    int per_class;      /* train images per class [100] */
    int test_per_class; /* test images per class [20] */
    int width, height;  /* [500 x 375] */
    uint64_t seed;
    /* out: what was written */
    uint64_t n_train, n_test;
    int reused;          /* 1: OUT already held this import (its marker), nothing was written */
    int source_compared; /* internal: an imagefolder source already scanned and found as its marker records */
} sv_prep_opts;

sv_prep_opts sv_prep_opts_default(void);

#define SV_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* The most sv_prep_opts.workers. */
#define SV_PREP_MAX_WORKERS 256

/* The last file an import writes in OUT (see above). */
#define SV_PREP_MARKER ".shardvit-prep"

/* What an import of `what` ("fashion-mnist", "mnist", "cifar10", "cifar100", "synthetic",
 * "imagefolder") with
 * these options would do with o->out, changing nothing: SV_OK with *done = 0 when OUT is missing
 * or an empty directory, SV_OK with *done = 1 (n_train, n_test filled) when it holds that
 * complete import, else SV_ERR_INVALID (or SV_ERR_IO) with a message naming OUT. The importers
 * check the same themselves; `shardvit prep` calls this first to tell a refused OUT (exit 2)
 * from a failed import. */
sv_status sv_prep_check_out(sv_prep_opts *o, const char *what, int *done);

/* IDX: reads SRC/{train,t10k}-{images-idx3,labels-idx1}-ubyte, gzipped (.gz) or plain.
 * fashion = 1: Fashion-MNIST class names, 0: MNIST digits "0".."9". */
sv_status sv_prep_idx(sv_prep_opts *o, int fashion);

/* CIFAR binary: cifar10 reads SRC/data_batch_{1..5}.bin + SRC/test_batch.bin (1 label byte +
 * 3072); cifar100 reads SRC/train.bin + SRC/test.bin (coarse, fine label bytes + 3072; fine
 * labels are used). Class names from SRC/batches.meta.txt / SRC/fine_label_names.txt when
 * present (one per line in label order; empty lines at the end, as the release's
 * batches.meta.txt has, are no names), else the standard lists. */
sv_status sv_prep_cifar(sv_prep_opts *o, int classes /* 10 or 100 */);

/* Synthetic photo-like set: classes x per_class train and classes x test_per_class test
 * images of width x height (see synth.h), class names class_000, class_001, ... */
sv_status sv_prep_synthetic(sv_prep_opts *o);

/* An ImageFolder tree of JPEG files: SRC/train/<class>/... (required) and, when present, SRC/val
 * or else SRC/test (same layout) as the evaluation split, written as OUT/test. Both are read as
 * `shardvit train --data` reads a folder (data/dataset.h: sorted class directories, image names
 * .jpg/.jpeg in any case, sub-directories; the same failures and warnings). The classes and
 * classes.txt are those of SRC/train; every evaluation class must be one of them (else
 * SV_ERR_FORMAT naming it), a training class absent from the evaluation split is an empty
 * OUT/test/<class>. Samples are written in the dataset's order (class, then path), named by
 * their index as the other sources do; each file's bytes unchanged, or with restart_mcus > 0
 * rewritten losslessly with restart markers (sv_jpeg_add_restarts, fit to the MCU row). Every
 * file is decoded first (at 1/8 scale: all of its entropy-coded data is read) and one that does
 * not decode as training would decode it (corrupt, truncated, not a JPEG, CMYK, too many scans)
 * fails the import with a message naming it. limit > 0 takes at most that many per split spread
 * over the classes: each class its first images in order, as evenly as the classes' sizes allow
 * (round-robin over the classes). The marker records src as an absolute path (realpath) and what
 * the source held: per split its images, a fingerprint of its file list and labels, and one of its
 * files' sizes and modification times. The same import run again compares the source with that:
 * the same, "already prepared"; changed, SV_ERR_INVALID naming the change; a source that no longer
 * exists, or a marker without the record (an earlier version's), is taken as it is with a warning.
 * workers > 1: that many threads read, check and rewrite the files (a bounded window of them
 * ahead of the writer) while the calling thread writes them in order: the output is byte for byte
 * that of workers = 1, and a failure is that of the first failing file in order, with the same
 * message. SV_ERR_INVALID for workers outside 0..SV_PREP_MAX_WORKERS. */
sv_status sv_prep_imagefolder(sv_prep_opts *o);

/* Class names the importers use (static strings). */
extern const char *const sv_fashion_mnist_classes[10];
extern const char *const sv_cifar10_classes[10];
extern const char *const sv_cifar100_classes[100];

#endif
