/* shardvit ckpt: sharded checkpoints (the format is documented field by field in
 * docs/checkpoints.md).
 *
 *   ROOT/step_00001200/index.json                 format version, model, layout, training state,
 *                                                 per-file CRC32C chunk tables (written last)
 *   ROOT/step_00001200/shard_00000-of-00004.bin   shard rank 0: for every unit in order its
 *                                                 fp32 master, m, v shards (little-endian)
 *   ROOT/latest                                   "step_00001200\n": the newest complete step
 *
 * A shard file holds, for unit u, three ranges of units[u].shard floats (master | m | v) at
 * byte units[u].file_offset = 12 * sum of the shard sizes of the units before u. Shard rank r
 * owns flat elements [r*shard, (r+1)*shard) of each unit (fsdp/layout.h); padding is zero.
 *
 * Integrity: every tensor piece in a file (a tensor's intersection with a rank's shard, per
 * master/m/v, split every SV_CKPT_CHUNK_ELEMS elements) is one chunk with its own CRC32C in
 * index.json. A reader reads each chunk overlapping what it needs in full, checks its CRC,
 * and only then copies the overlap, so a damaged byte is detected before it is used. Padding
 * is not covered (it is never read back). Memory: one chunk buffer (<= SV_CKPT_MAX_CHUNK_BYTES)
 * per reader.
 *
 * Errors name the file and byte range: "<dir>/shard_00001-of-00004.bin bytes [4096, 8192):
 * CRC32C mismatch (index.json says 0x..., data has 0x...)". */
#ifndef SV_CKPT_CHECKPOINT_H
#define SV_CKPT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt_optim.h"
#include "core/status.h"
#include "fsdp/fsdp.h"
#include "fsdp/load.h"
#include "formats/safetensors.h"

#define SV_CKPT_FORMAT_VERSION 1
#define SV_CKPT_CHUNK_ELEMS ((size_t)1 << 20)        /* writer's chunk split (4 MiB of fp32) */
#define SV_CKPT_MAX_CHUNK_BYTES ((uint64_t)16 << 20) /* reader's limit for any chunk */
#define SV_CKPT_PATH_MAX 4096
#define SV_CKPT_CRASH_ENV "SHARDVIT_TEST_CRASH_AT" /* what app/ reads into sv_ckpt_set_crash_point */

/* Test hook (docs/checkpoints.md): spec "POINT" or "POINT@STEP" makes the process kill itself
 * with SIGKILL when a save (of step STEP) reaches POINT, to prove a crash never damages the
 * previous checkpoint; NULL: off (the default). Borrowed: the string must outlive the saves.
 * app/ sets it from SHARDVIT_TEST_CRASH_AT (app/env_overrides.h). */
void sv_ckpt_set_crash_point(const char *spec);

enum { SV_CKPT_MASTER = SV_FSDP_MASTER, SV_CKPT_M = SV_FSDP_M, SV_CKPT_V = SV_FSDP_V, SV_CKPT_KINDS = SV_FSDP_KINDS };
enum { SV_CKPT_EMA = SV_FSDP_EMA }; /* the weight EMA: a fourth range after v when state.ema */

/* Training state stored next to the tensors. All randomness in shardvit is counter-based
 * (core/rng.h), so the RNG state is the seed plus the positions below. */
typedef struct sv_ckpt_train_state {
    int64_t step;          /* optimizer steps taken (incl. skipped) */
    int64_t skipped_steps; /* steps skipped for non-finite gradients */
    uint64_t epoch;        /* loader resume point: the next batch starts at (epoch, cursor) */
    uint64_t cursor;       /* global sample position inside the epoch (world-size independent) */
    uint64_t seed;
    int64_t total_steps; /* LR schedule: warmup + cosine over total_steps */
    double lr, min_lr;
    int64_t warmup;
    int64_t global_batch;
    int ema;           /* 1: the shards also hold the weight EMA (index.json "model_ema"; fsdp/ema.h) */
    double ema_decay;  /* informational: --model-ema-decay of the run that saved */
    int ema_warmup;    /* informational: --model-ema-warmup */
    sv_lr_sched sched; /* the whole schedule (ckpt/ckpt_optim.h) */
    sv_ckpt_optim opt; /* update rule and hyper-parameters */
    /* The training data set (index.json "train_data"): its sample count and data/dataset.h
     * sv_dataset_fingerprint, compared on resume (the data position above only means the same
     * samples in the same data set). data_known = 0: not recorded (an older index). */
    int data_known;
    uint64_t data_samples, data_fingerprint;
} sv_ckpt_train_state;

typedef struct sv_ckpt_tensor {
    char name[64];
    int ndim;
    int64_t shape[4];
    uint64_t offset, numel; /* flat element offset inside its unit */
    int unit;
} sv_ckpt_tensor;

typedef struct sv_ckpt_unit {
    int first_tensor, n_tensors;
    uint64_t numel;       /* end of the last tensor */
    uint64_t padded;      /* shard * shard_world */
    uint64_t shard;       /* elements per rank */
    uint64_t file_offset; /* byte offset of this unit's master range in every shard file */
} sv_ckpt_unit;

typedef struct sv_ckpt_chunk {
    uint64_t offset, nbytes; /* byte range in the file */
    uint32_t crc;            /* CRC32C of those bytes */
} sv_ckpt_chunk;

typedef struct sv_ckpt_file {
    char name[64]; /* shard_RRRRR-of-WWWWW.bin */
    uint64_t bytes;
    size_t n_chunks;
    sv_ckpt_chunk *chunks; /* sorted by offset, non-overlapping */
} sv_ckpt_file;

/* The evaluation transform a model was trained with (index.json "eval_transform", config.json
 * "pretrained_cfg"): Resize(shorter side -> floor(img / crop_pct)) + CenterCrop(img) with
 * `interp` resampling, then (x / 255 - mean) / std per channel. */
typedef struct sv_ckpt_xform {
    int present;            /* 0: not recorded (an index written before eval_transform existed) */
    int img, channels;      /* input size (channels, img, img) */
    double crop_pct;        /* [SV_CKPT_CROP_PCT_MIN, SV_CKPT_CROP_PCT_MAX] */
    char interp[16];        /* "bilinear" | "bicubic" */
    double mean[3], std[3]; /* `channels` values used */
} sv_ckpt_xform;

/* What a checkpoint records about the model besides its tensors. Passed to sv_ckpt_save
 * (labels borrowed there); owned by an sv_ckpt_index (one allocation, freed with it). */
typedef struct sv_ckpt_meta {
    sv_ckpt_xform xform;
    char **labels; /* n_labels class names (index order) or NULL */
    int n_labels;
} sv_ckpt_meta;

#define SV_CKPT_DEFAULT_CROP_PCT 0.875
/* The crop_pct range of an eval transform, the same for the --crop-pct flags and for a recorded
 * transform (index.json eval_transform, config.json pretrained_cfg): below 0.05 the resize target
 * img / crop_pct is over 20 times the input size and the center crop an empty box. */
#define SV_CKPT_CROP_PCT_MIN 0.05
#define SV_CKPT_CROP_PCT_MAX 1.0
static inline int sv_ckpt_crop_pct_ok(double c) { return c >= SV_CKPT_CROP_PCT_MIN && c <= SV_CKPT_CROP_PCT_MAX; }
/* The transform assumed when none is recorded: crop_pct 0.875, bilinear, mean/std 0.5 for one
 * channel and ImageNet's (0.485 0.456 0.406 / 0.229 0.224 0.225) for three; present = 0. */
void sv_ckpt_xform_default(sv_ckpt_xform *x, int img, int channels);
/* Deep copy of src (nullable: empty) into *dst (labels in one allocation; free(dst->labels) releases them). */
sv_status sv_ckpt_meta_copy(sv_ckpt_meta *dst, const sv_ckpt_meta *src);
/* Check an eval transform: img/channels >= 1, channels <= 3, sv_ckpt_crop_pct_ok(crop_pct), interp
 * bilinear|bicubic, std > 0. `what` names the source in the message. */
sv_status sv_ckpt_xform_check(const sv_ckpt_xform *x, const char *what);
/* SV_OK when a run that normalises with `now` may continue a checkpoint recorded with `was`:
 * either is not recorded (present = 0), the channel counts differ (the tensor check refuses that
 * later), or every mean / std is equal; otherwise SV_ERR_INVALID naming both as the
 * `--mean A,B --std C,D` flags that reproduce them. `where` names the record (STEP_DIR/index.json). */
sv_status sv_ckpt_xform_same_norm(const sv_ckpt_xform *was, const sv_ckpt_xform *now, const char *where);

/* Ranges per unit in a shard file: master, m, v (SV_CKPT_KINDS) and, with state.ema, the EMA. */
#define SV_CKPT_FILE_KINDS(idx) ((idx)->state.ema ? SV_CKPT_KINDS + 1 : SV_CKPT_KINDS)

/* The parsed (or to-be-written) index.json. Owns its arrays. */
typedef struct sv_ckpt_index {
    char dir[SV_CKPT_PATH_MAX]; /* step directory it was read from ("" when built) */
    int format_version;
    sv_vit_config cfg;
    int world_size; /* ranks of the run that saved */
    char strategy[32];
    int shard_world; /* W: ranks a unit is sharded over = number of shard files */
    sv_ckpt_train_state state;
    int n_units, n_tensors;
    sv_ckpt_unit *units;
    sv_ckpt_tensor *tensors; /* grouped by unit, in flat order */
    sv_ckpt_file *files;     /* [shard_world] */
    sv_ckpt_meta meta;       /* eval_transform + label_names (both optional on read) */
} sv_ckpt_index;

void sv_ckpt_index_free(sv_ckpt_index *idx);
/* Describe layout L (shard_world files) with empty chunk tables; state/strategy copied. */
sv_status sv_ckpt_index_from_layout(sv_ckpt_index *idx, const sv_layout *L, int world_size, const char *strategy,
                                    const sv_ckpt_train_state *st);
/* The same tensors and units laid out over `shard_world` ranks (layout.h's padding rule);
 * empty chunk tables. */
sv_status sv_ckpt_index_relayout(sv_ckpt_index *out, const sv_ckpt_index *in, int shard_world);
/* Read and fully validate STEP_DIR/index.json (format, version, every table). eval_transform and
 * label_names are optional (older indexes lack them: meta.xform.present = 0, no labels); when
 * present they are validated too. */
sv_status sv_ckpt_index_load(sv_ckpt_index *idx, const char *step_dir);
/* The step of a step directory's name "step_<digits>" (at most 18 digits), else -1. */
long long sv_ckpt_step_of_name(const char *name);
/* Is name a save's temporary step directory ("step_<...>.tmp", renamed into place when complete)? */
int sv_ckpt_is_tmp_name(const char *name);

/* Open shard file f of a loaded index (its path into path) as the reader does: a regular file
 * (core/fileio.h's rules) of exactly the size index.json states, else SV_ERR_CORRUPT naming the
 * missing or extra bytes (or the open's error); *fd is the open file on SV_OK, -1 otherwise. */
sv_status sv_ckpt_shard_open(const sv_ckpt_index *idx, int f, int *fd, char *path, size_t cap);
/* Write DIR/index.json atomically (temp file, fsync, rename, fsync DIR). */
sv_status sv_ckpt_index_store(const sv_ckpt_index *idx, const char *dir);
/* Index of the tensor called `name`, or -1. */
int sv_ckpt_find_tensor(const sv_ckpt_index *idx, const char *name);

/* Resolve PATH (a step directory with index.json, a checkpoint root with `latest`, or a run
 * directory with checkpoints/latest) to a step directory in out. PATH with both `latest` and
 * checkpoints/latest (and no index.json) is ambiguous: SV_ERR_INVALID naming both, none chosen. */
sv_status sv_ckpt_resolve(const char *path, char *out, size_t cap);
/* The step directory `latest` in ROOT names; *found = 0 (SV_OK) only when ROOT has no entry
 * named `latest`: one that cannot be read (a dangling or looping link, a FIFO, bad text) is an
 * error naming it. */
sv_status sv_ckpt_latest(const char *root, char *out, size_t cap, int *found);

/* ---- reading tensors with CRC verification (any layout -> any layout) ---- */
typedef struct sv_ckpt_reader {
    const sv_ckpt_index *idx; /* borrowed */
    int *fds;                 /* [shard_world], -1 until first use */
    uint8_t *buf;             /* chunk buffer */
    size_t cap;
} sv_ckpt_reader;

sv_status sv_ckpt_reader_open(sv_ckpt_reader *r, const sv_ckpt_index *idx);
void sv_ckpt_reader_close(sv_ckpt_reader *r);
/* Elements [begin, begin + count) of tensor t (index into idx->tensors), kind
 * SV_CKPT_MASTER/M/V, into dst (count floats): every old shard file overlapping that range is
 * read at the overlapping chunks only, each chunk CRC-checked before use. */
sv_status sv_ckpt_read(sv_ckpt_reader *r, int kind, int t, uint64_t begin, uint64_t count, float *dst);

/* ---- writing one shard file ---- */
/* Produce `count` elements of tensor t (of the index being written), kind, starting at element
 * tensor_begin, which sit at element shard_offset of unit u's shard, into dst. The same callback
 * shape fills master shards when loading (fsdp/load.h sv_fsdp_load_masters). */
typedef sv_fsdp_source_fn sv_ckpt_source_fn;
/* Write DIR/<files[rank].name> (+ fsync), pulling tensor data from `src` in pieces of at most
 * SV_CKPT_CHUNK_ELEMS, zeros for padding; fills idx->files[rank].chunks with the CRCs.
 * Memory: one 4 MiB buffer. */
sv_status sv_ckpt_write_shard(sv_ckpt_index *idx, const char *dir, int rank, sv_ckpt_source_fn src, void *ctx);
/* The chunk table a writer produces for `rank` (offsets, sizes; CRCs zero). */
sv_status sv_ckpt_plan_chunks(sv_ckpt_index *idx, int rank);

/* ---- offline tools (no MPI) ---- */
/* Reshard the checkpoint at IN (any path sv_ckpt_resolve accepts) into the step directory OUT
 * (created; must not exist, must not be inside IN) for `world` shard ranks. Built in a fresh
 * temporary directory "OUT.tmp-XXXXXXXX" (removed on failure; nothing else is ever removed)
 * and renamed to OUT without replacing anything. Streams: memory is two chunk buffers
 * (<= 4 MiB + SV_CKPT_MAX_CHUNK_BYTES) plus the index tables, whatever the model size. */
sv_status sv_ckpt_reshard(const char *in, const char *out, int world);
/* Write OUT (safetensors, timm names/shapes, F32 or BF16), config.json beside it and, when the
 * checkpoint records label names, classes.txt beside it (one name per line) from the master
 * weights of checkpoint IN (reads master ranges only, never m/v). Outputs follow
 * ckpt/ckpt_out.h: none inside IN, no non-regular file replaced, an existing OUT replaced only
 * when it is a safetensors file, everything staged in fresh temporaries first. config.json's
 * pretrained_cfg carries the recorded eval transform (input_size, interpolation, crop_pct,
 * crop_mode "center", mean, std) and label_names; a checkpoint without a recorded transform
 * gets the defaults (crop_pct 0.875, bilinear, mean/std 0.5 for 1 channel, ImageNet's for 3)
 * and a line saying so. ema: the weight-EMA ranges instead of the masters (metadata
 * "shardvit_weights": "ema"); SV_ERR_FORMAT when the checkpoint holds no EMA. */
sv_status sv_ckpt_export(const char *in, const char *out, sv_st_dtype dtype, int ema);
/* The eval transform and label names in config.json beside the safetensors file ST_PATH, as
 * export (and timm) write them (pretrained_cfg: input_size, crop_pct, interpolation, mean, std,
 * crop_mode; label_names top-level or in pretrained_cfg). *found = 0 when there is no
 * config.json. A pretrained_cfg without crop_mode is timm's default crop_mode "center" (older
 * timm wrote none), except beside a shardvit export (its safetensors metadata holds
 * shardvit_model / shardvit_step): exports made before the transform was recorded carry fixed
 * values, which leave present = 0. free(m->labels) releases the names. Malformed or missing
 * values: SV_ERR_FORMAT naming the file. */
sv_status sv_ckpt_read_config_meta(const char *st_path, sv_ckpt_meta *m, int *found);
/* The path of config.json beside the safetensors file ST_PATH (cap bytes at path). */
void sv_ckpt_config_path(const char *st_path, char *path, size_t cap);
/* The largest config.json beside a safetensors file that is read (its label_names, written twice,
 * may name tens of thousands of classes). */
#define SV_CKPT_CONFIG_MAX ((size_t)64 << 20)
/* config.json beside ST_PATH (its path into path, cap bytes), read whole: *text (free() it) and
 * *len, *found = 1; *found = 0 only when nothing at all is at that name (lstat: a dangling
 * symbolic link or a link loop is there, and is an error naming it, as are a FIFO, a directory
 * and a file larger than SV_CKPT_CONFIG_MAX). The one reader of that file for eval/predict
 * --weights (eval/weights.c) and the transform and label names (sv_ckpt_read_config_meta). */
sv_status sv_ckpt_config_read(const char *st_path, char *path, size_t cap, char **text, size_t *len, int *found);

/* ---- collective operations on a live FSDP state (every rank of f->world calls) ---- */
/* Save a checkpoint of f, `st` and `meta` (nullable: none recorded) under ROOT/step_<st->step>: the first replica group writes
 * one shard file per shard rank; rank 0 writes index.json last, renames the directory,
 * updates `latest`, then deletes all but the newest `keep` complete checkpoints (keep <= 0:
 * keep all) and stale *.tmp directories: only the files the writer makes (index.json, its
 * temporaries, the shard files), so a step directory holding anything else is kept with a warning
 * naming the entry. saved (nullable) receives the step directory. */
sv_status sv_ckpt_save(sv_fsdp *f, const char *root, const sv_ckpt_train_state *st, const sv_ckpt_meta *meta, int keep,
                       char *saved, size_t cap);
/* The same save in two halves, so that training can go on while the shards are written
 * (train --async-ckpt; docs/checkpoints.md "Asynchronous checkpoints"). begin (collective):
 * the step directory is prepared and, with `background`, each writer rank copies its master /
 * m / v shards to host memory (buffers kept in `a` for the next save) and a thread writes the
 * shard file from that copy; without it the shard is written before begin returns. The state
 * saved is the one at begin: later optimizer steps do not change it. finish (collective): waits
 * for this rank's writer, then agreement, CRCs, index.json, rename, `latest` and retention exactly
 * as sv_ckpt_save. Every rank calls finish before the next begin and before it exits; a failure
 * anywhere is reported by every rank. sv_ckpt_save_written: this rank's writer is done (finish
 * will not wait for it). */
typedef struct sv_ckpt_async sv_ckpt_async;
sv_status sv_ckpt_async_create(sv_ckpt_async **a);
void sv_ckpt_async_destroy(sv_ckpt_async *a); /* joins a writer still running (error paths) */
sv_status sv_ckpt_save_begin(sv_fsdp *f, sv_ckpt_async *a, int background, const char *root,
                             const sv_ckpt_train_state *st, const sv_ckpt_meta *meta, int keep);
sv_status sv_ckpt_save_finish(sv_fsdp *f, sv_ckpt_async *a, char *saved, size_t cap);
int sv_ckpt_save_in_flight(const sv_ckpt_async *a);
int sv_ckpt_save_written(const sv_ckpt_async *a);
/* Seconds the caller was blocked by the last save (begin + finish). */
double sv_ckpt_save_blocked_s(const sv_ckpt_async *a);
/* Load the checkpoint in STEP_DIR into f at its current world size / strategy (tensor shapes
 * must match), and its training state into *st. f->step and skipped count are restored. With
 * `norm` (nullable), a checkpoint whose recorded normalisation differs from it is refused before
 * any shard is read (sv_ckpt_xform_same_norm: a resumed run keeps its inputs' normalisation). */
sv_status sv_ckpt_load(sv_fsdp *f, const char *step_dir, const sv_ckpt_xform *norm, sv_ckpt_train_state *st);
/* Does the checkpoint of index idx hold the model of layout L? Its recorded timm options
 * (LayerScale, global pool, class token, register tokens, no_embed_class), every tensor of L by
 * name and shape and no other, then the recorded model field by field (img, patch, in-chans,
 * num-classes, dim, depth, heads: --heads changes no shape; mlp_ratio): SV_ERR_FORMAT naming the
 * first difference (the flag where one differs). map (nullable, L->n_params entries): entry k of L
 * is tensor map[k] of idx. Reads index.json's tables only: sv_ckpt_load and
 * sv_ckpt_load_ema_weights check with it before reading a shard, and train's start-up check of a
 * --resume before the run directory is written (app/cmd_ckpt.h). */
sv_status sv_ckpt_check_compatible(const sv_layout *L, const sv_ckpt_index *idx, int *map);
/* With f->cfg.ema, sv_ckpt_load also restores the EMA shards, or (index without "model_ema")
 * starts the EMA from the restored masters with a line saying so; an EMA in the checkpoint of a
 * run without it is dropped (a line says so).
 * sv_ckpt_load_ema_weights: the checkpoint's EMA weights into f's master shards (eval --ema;
 * optimizer state zero); SV_ERR_FORMAT when the checkpoint holds no EMA. Collective. */
sv_status sv_ckpt_load_ema_weights(sv_fsdp *f, const char *step_dir, sv_ckpt_train_state *st);
/* Seed f's master shards from a timm-style safetensors file (optimizer state zeroed; the head,
 * head.weight and head.bias as one unit, keeps its fresh init when the file's is of another class
 * count or absent, and a file with half a head or a weight and bias of different class counts is
 * refused; pos_embed resampled bicubically when the patch grid differs, source grid at most
 * SV_CKPT_MAX_POS_GRID per side). A non-finite value among those this rank loads is an error
 * (sv_ckpt_check_finite). */
sv_status sv_ckpt_init_from_safetensors(sv_fsdp *f, const char *path);
/* The same checks without loading: does `path` fit layout L (names, shapes, head/pos_embed
 * rules), and is every value that would be loaded finite? *n_loaded: tensors that would come
 * from the file. log: a head left fresh is logged (0: the loading that follows says so). */
sv_status sv_ckpt_check_import(const sv_layout *L, const char *path, int log, int *n_loaded);
/* Every element of F32/BF16/F16 tensor t of sf is finite; else SV_ERR_FORMAT naming the file, the
 * tensor (escaped), the first non-finite element (flat index and multi-index) and whether it is
 * NaN, +Inf or -Inf. Reads the tensor in 1 MiB pieces. Used by every path that loads weights
 * from a safetensors file (import, --init-from, eval/predict --weights). */
sv_status sv_ckpt_check_finite(const sv_st_file *sf, const sv_st_tensor *t);
/* After reading n values of tensor t of sf into v (any piece of it): SV_OK when all are finite,
 * else sv_ckpt_check_finite's error (the tensor's first non-finite element, wherever it is), or
 * SV_ERR_IO "changed while it was read" when the file no longer holds one. The one check after
 * every weight read (import, --init-from, resampling, eval/predict --weights). */
sv_status sv_ckpt_values_finite(const sv_st_file *sf, const sv_st_tensor *t, const float *v, uint64_t n);
/* Collective over f->world, called by every rank right after its sv_safetensors_open of the same
 * path (opened: that call's status; sf valid when it is SV_OK): the ranks agree on the open's
 * status first, then that they opened one file. Each rank reads only its own shards' pieces, so a
 * file replaced between two ranks' opens (an export onto the same path) would give a model mixed
 * from two files. Same file: size, inode and modification time equal on every rank (a shared
 * file system); else the contents are compared (a CRC32C of the whole file on every rank: copies
 * on node-local disks pass). Different contents: SV_ERR_IO on every rank naming the ranks
 * and `what` (the flag). Returns the agreed status; world 1 returns `opened` at once. */
sv_status sv_ckpt_agree_same_file(sv_fsdp *f, const sv_st_file *sf, sv_status opened, const char *what);
/* The largest pos_embed patch grid (per side) that --init-from resamples (the largest --img);
 * the resampling itself is model/resample.h sv_vit_resample_pos_embed. Agreeing on a status
 * over all ranks is fsdp/agree.h sv_fsdp_agree. */
#define SV_CKPT_MAX_POS_GRID 4096

#endif
