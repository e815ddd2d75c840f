/* shardvit data: datasets — an indexed list of (image source, class label).
 *
 * Three kinds behind one opaque handle, chosen by the spec string given to sv_dataset_open:
 *   "synthetic"                      in-memory generated task (no files, see synth.h)
 *   "path/train-{000..127}.tar"      WebDataset tar shards (anything ending in ".tar", brace
 *                                    patterns expanded: numeric ranges keep the zero padding of
 *                                    the first bound, and comma lists {a,b}, see sv_expand_braces)
 *   "path/dir"                       ImageFolder: dir/<class>/[subdirs/]NAME.jpg or .jpeg (any case)
 * A spec that exists as written is used as written: a directory is an ImageFolder whatever its
 * name ("fm{v2}", "x.tar"), a file a single shard (braces and all); braces form a pattern only
 * in a spec that does not exist.
 * Class order: ImageFolder classes are the sub-directory names sorted byte-wise (as
 * torchvision's sorted()); samples inside a class sorted byte-wise by relative path.
 * Tar shards: labels come from each key's ".cls" member (decimal integer); class names come
 * from opts.classes_file, else "classes.txt" next to the first shard, else "0", "1", ...
 * (with opts.classes_fallback: "classes.txt", else opts.classes_file, else the numbers)
 *
 * A dataset is immutable after open and safe to read from many threads at once. */
#ifndef SV_DATA_DATASET_H
#define SV_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sv_dataset sv_dataset;

typedef enum { SV_DATASET_FOLDER = 0, SV_DATASET_TAR = 1, SV_DATASET_SYNTHETIC = 2 } sv_dataset_kind;

typedef struct sv_dataset_opts {
    /* synthetic only (defaults in brackets when 0): */
    uint64_t synth_samples; /* number of samples [50000] */
    int synth_classes;      /* number of classes [10] */
    int synth_img;          /* side of the square images it renders [32] */
    int synth_channels;     /* 1 or 3 [3] */
    uint64_t synth_seed;    /* which task (patterns per class); the sample content is a pure
                                function of (synth_seed, sample index) [0] */
    /* tar only: a class-name file (one per line) overriding the default lookup; NULL = none.
     * With classes_fallback = 1 it is used only where no "classes.txt" lies next to the first
     * shard (eval --classes: the data's own names are then checked against the list, not
     * replaced by it). Anything at that name counts: a dangling link or a FIFO is an error. */
    const char *classes_file;
    int classes_fallback;
    /* ImageFolder only: an image-named entry (.jpg/.jpeg, any case) that cannot be a sample (a
     * dangling symbolic link, a FIFO, socket or device, a path longer than 4095 bytes) and a
     * directory too long a path to scan fail sv_dataset_open with an SV_ERR_FORMAT naming the
     * entry and why (0, the default); 1 leaves them out with a warning and records them
     * (sv_dataset_left_out). Entries without an image name are ignored either way. */
    int leave_out_unusable;
} sv_dataset_opts;

/* Default options (all zero = defaults above). */
sv_dataset_opts sv_dataset_opts_default(void);

/* Open and index a dataset. Fails (with a message naming the path) on: missing directory,
 * no classes, a class dir without images, an ImageFolder entry that cannot be a sample (see
 * leave_out_unusable), tar format errors (bad checksum, truncated archive, absolute or '..'
 * member names, a member that is a link or another non-file type, a .jpg key without .cls or
 * the reverse, a key with neither, a key's second image or label, a key again later in its
 * shard, a .cls that is not exactly a decimal label: docs/data.md), unreadable class file.
 * *out is owned by the caller; release with sv_dataset_close. */
sv_status sv_dataset_open(const char *spec, const sv_dataset_opts *o, sv_dataset **out);
void sv_dataset_close(sv_dataset *d);

sv_dataset_kind sv_dataset_kind_of(const sv_dataset *d);
/* The kind sv_dataset_open takes `spec` for, without opening it: "synthetic"; a path that exists
 * as a directory is an ImageFolder whatever its name ("fm{v2}", "x.tar"); else a '{' pattern or
 * a name ending ".tar" is tar shards, anything else an ImageFolder. *exists (nullable): whether
 * the path exists as written (a tar spec that exists is one shard, its braces literal). */
sv_dataset_kind sv_dataset_spec_kind(const char *spec, int *exists);
size_t sv_dataset_len(const sv_dataset *d);
/* ImageFolder opened with leave_out_unusable: how many entries the scan left out, and the i-th
 * one as "root/relative path" (raw bytes: escape before printing). 0 for every other data set. */
size_t sv_dataset_left_out(const sv_dataset *d);
const char *sv_dataset_left_out_name(const sv_dataset *d, size_t i);
int sv_dataset_num_classes(const sv_dataset *d);
/* Name of class k (0 <= k < num_classes); the string lives as long as the dataset. */
const char *sv_dataset_class_name(const sv_dataset *d, int k);
/* Label of sample i (0 <= i < len). */
int sv_dataset_label(const sv_dataset *d, size_t i);
/* A human-readable name of sample i for messages: file path, or "shard.tar:key". Writes at most
 * cap bytes (NUL-terminated). */
void sv_dataset_sample_name(const sv_dataset *d, size_t i, char *buf, size_t cap);

/* A 64-bit fingerprint of what the open indexed, for ranks to check that they opened the same data
 * set: the kind, the sample and class counts, the class names in order and, per sample, its label
 * and what identifies it: an ImageFolder sample's path relative to the root, a tar sample's shard
 * file name (without its directories), key and image member size, and a synthetic set's
 * parameters (img, channels, seed). The root and the shards' directories count not, so the same
 * files reached by other paths give the same value; file contents count not (nothing is read).
 * One pass over what the open stored; a pure function of it (the same on every host). */
uint64_t sv_dataset_fingerprint(const sv_dataset *d);
/* The ranks' data sets compared: ids holds world rows of SV_DATASET_ID_N values, row r rank r's
 * (sv_dataset_id: the fingerprint, the sample count, the class count; an all-gather). SV_OK when
 * every row equals rank 0's, else an SV_ERR_INVALID naming the flag and spec ("--data DIR") and the
 * counts of rank 0 and of the first ranks that differ. Not collective: every rank given the same
 * ids returns the same status. */
enum { SV_DATASET_ID_N = 3 };
void sv_dataset_id(const sv_dataset *d, int64_t id[SV_DATASET_ID_N]);
sv_status sv_dataset_ids_same(const int64_t *ids, int world, const char *flag, const char *spec);

/* Read the encoded bytes of sample i (file-backed kinds only) into *buf (capacity *cap),
 * growing it with realloc when too small (so a reused buffer stops allocating once it has
 * seen the largest file). *len receives the byte count. Thread-safe. */
sv_status sv_dataset_read(const sv_dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len);

/* Synthetic kind: the parameters it was opened with (for the loader). */
void sv_dataset_synth_params(const sv_dataset *d, int *img, int *channels, uint64_t *seed);

/* Class lists: write one name per line (a trailing newline after each) to `path`. */
sv_status sv_classes_write(const char *path, const sv_dataset *d);
sv_status sv_classes_write_names(const char *path, const char *const *names, int n);
/* What is wrong with a class name of len bytes as one line of a class list (NULL: nothing): empty,
 * a NUL byte, a line break, or not valid UTF-8 (core/json.h sv_json_utf8_seq). Other control
 * characters are names like any (printed escaped, core/log.h sv_log_esc). */
const char *sv_class_name_problem(const char *s, size_t len);
/* Read a class list: UTF-8 text, one name per line ('\r' before the '\n' stripped, a UTF-8 byte
 * order mark at the start of the file skipped). A line that
 * sv_class_name_problem refuses (an empty line, binary data), or a name given twice, is an
 * SV_ERR_FORMAT naming the file and the line. *names is an array of *n strings in one
 * allocation: free(*names) releases everything. */
sv_status sv_classes_read(const char *path, char ***names, int *n);
/* sv_classes_read; trailing_empty_ok: empty lines after the last name are no names (a list that
 * ends in a blank line, as CIFAR-10's batches.meta.txt does), not errors; an empty line before a
 * name stays one. */
sv_status sv_classes_read_list(const char *path, int trailing_empty_ok, char ***names, int *n);

/* Expand brace patterns: "a-{00..02}.tar" -> "a-00.tar","a-01.tar","a-02.tar"; "{x,y}" lists,
 * where an empty item counts ("s{,_x}" -> "s","s_x"); a brace with neither a range nor a comma
 * ("{v2}", "{}") is kept as text, as bash and Python's braceexpand do. Items are not expanded
 * again. *out is one allocation (free(*out)) holding *n pointers followed by the strings. At most
 * 1,000,000 expansions. */
sv_status sv_expand_braces(const char *pattern, char ***out, size_t *n);

#endif
