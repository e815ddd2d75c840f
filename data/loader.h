/* shardvit data: threaded batch loader with a distributed, resumable sampler.
 *
 * Sampler (see sampler.h and docs/data.md). Each epoch has one global permutation of the
 * dataset, a pure function of (seed, epoch) (identity order for evaluation). The global batch
 * is G = batch_local * world. A batch starting at epoch position `cursor` covers global
 * positions [cursor, cursor + G); rank r takes [cursor + r*batch_local, ... + batch_local).
 * Train: an epoch ends when fewer than G positions remain (drop_last), then epoch+1 starts at
 * cursor 0 and the loader runs forever; with opts.step_batches = A > 1 (gradient accumulation)
 * the epoch is the first floor(n / (A*G)) * A*G positions, so that no optimizer step mixes two
 * epochs and an epoch is the one a batch of A*G without accumulation has. Eval: one pass; the last batch is padded (valid = 0,
 * label 0, zero image) so every sample is seen exactly once across ranks; after the pass
 * sv_loader_next returns SV_OK with *b == NULL.
 * (epoch, cursor) is the whole sampler state: a checkpoint stores batch->next_epoch and
 * batch->next_cursor; sv_loader_seek(epoch, cursor) at ANY world size continues with exactly
 * the samples that come next.
 *
 * Augmentation randomness is a pure function of (seed, epoch, dataset sample index[, repeat
 * copy under aug_repeats]), so the
 * same sample gets the same crop/flip/RandAugment ops whatever the thread count or world size. Mixup/cutmix
 * mixes pairs of neighbouring global positions (2k, 2k+1) with a pair-keyed lambda, so it is
 * world-size independent too (requires an even batch_local).
 *
 * Corrupt/unreadable images (training): replaced by the next readable sample in dataset order
 * (i+1, i+2, ... mod N), counted (stats.substituted) and logged once per file. If 64 files in a
 * row are unreadable, sv_loader_next fails with SV_ERR_CORRUPT instead of looping. Substitution
 * keeps training batches full; it would be wrong for evaluation (the substitute is counted under
 * its own label, so per-class totals change), so opts.no_substitute (eval mode only, what
 * eval/evaluate.c sets) turns it off: an unreadable sample is then handed out as a hole —
 * valid[j] = 0 with sample_index[j] >= 0 (its dataset index; padding has -1), zero image,
 * label 0 — and counted in batch->n_unreadable and stats.unreadable. The caller decides (the
 * evaluator fails or leaves it out, docs/evaluation.md).
 *
 * Memory: batch slots (prefetch of them) are allocated once at create time, through
 * opts.alloc/free when given (e.g. pinned host memory); sv_loader_next never allocates. */
#ifndef SV_DATA_LOADER_H
#define SV_DATA_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/dataset.h"
#include "data/randaug.h"
#include "data/resample.h"

typedef struct sv_loader sv_loader;

typedef enum { SV_NORM_IMAGENET = 0, SV_NORM_HALF = 1 /* mean 0.5, std 0.5 */ } sv_norm_preset;
typedef enum { SV_TRANSFORM_TRAIN = 0, SV_TRANSFORM_EVAL = 1 } sv_transform_mode;

typedef struct sv_loader_opts {
    const sv_dataset *dataset; /* borrowed: must outlive the loader */
    int batch_local;           /* samples per rank per step (>= 1) */
    int rank, world;           /* 0 <= rank < world */
    uint64_t seed;
    int img;                /* output side (square) */
    int channels;           /* 1 or 3 output channels (gray JPEGs expand to RGB for 3) */
    sv_transform_mode mode; /* TRAIN: RandomResizedCrop + flip + shuffle + drop_last;
                                  EVAL: resize/center crop, identity order, padded last batch */
    sv_norm_preset norm;
    const float *mean, *std; /* channels values overriding `norm` (both or neither); NULL = norm */
    double
        crop_pct; /* eval: resize shorter side to img/crop_pct [0.875] (double: floor(img / crop_pct) is timm's Python arithmetic; 32 / 0.8f is 39.99...) */
    float scale_min, scale_max; /* RandomResizedCrop area range [0.08, 1] */
    float ratio_min, ratio_max; /* RandomResizedCrop aspect range [3/4, 4/3] */
    float hflip;                /* horizontal flip probability [0.5]; set < 0 for none */
    float mixup_alpha;          /* > 0 enables mixup (Beta(alpha, alpha) lambda) */
    float cutmix_alpha;         /* > 0 enables cutmix; both > 0: each pair picks one, p = 0.5 */
    float smoothing;            /* label smoothing folded into soft targets (mixup/cutmix only) */
    int num_classes;            /* soft-target row length (the model's classes); 0 = the dataset's */
    int interp;                 /* resampling for crop/resize: 0 = SV_INTERP_BILINEAR [default],
                                  1 = SV_INTERP_BICUBIC (data/resample.h; both Pillow-exact) */
    int randaug_n;              /* train: RandAugment ops per image (0 = off, <= 16; data/randaug.h) */
    float randaug_m;            /* RandAugment magnitude on timm's 0..10 scale (<= 30) */
    /* Recipe augmentations (train only; docs/training.md "Data augmentation"), off at zero: */
    float reprob;            /* RandomErasing probability (data/erase.h) */
    int remode, recount;     /* its sv_erase_mode and max count [const, 1] */
    int aug_repeats;         /* repeated augmentation K (0/1 = off; data/sampler.h); G % K == 0 */
    int step_batches;        /* train: batches per optimizer step (gradient accumulation) [1]; an
                                epoch holds whole optimizer steps: floor(n / (G * step_batches)) *
                                step_batches batches (drop_last at the optimizer's batch) */
    float mixup_prob;        /* probability a mixing unit mixes [1] (data/mixup.h) */
    float mixup_switch_prob; /* CutMix instead of Mixup when both enabled [0.5] */
    int mixup_mode;          /* sv_mix_mode [SV_MIX_PAIR, the historic behaviour] */
    int mixup_off_epoch;     /* > 0: no mixing from this epoch on (targets still soft) */
    float cutmix_minmax[2];  /* [1] > 0: timm cutmix_minmax box */
    sv_randaug_timm aa;      /* timm --aa RandAugment (n == 0: off) */
    int three_augment;       /* DeiT III 3-Augment (data/augment3.h) */
    float color_jitter;      /* ColorJitter(b, b, b) when > 0 */
    int simple_crop;         /* DeiT III Resize + RandomCrop(pad 4, reflect) instead of RRC */
    int threads;             /* worker threads; 0 = number of online cores */
    int prefetch;            /* ready/in-flight batch slots; 0 = max(2, threads/2 + 2) */
    uint64_t max_pixels;     /* decompression-bomb guard on width*height [89478485, PIL's] */
    int no_substitute;       /* eval mode only: never replace an unreadable file by another sample; mark
                                it (valid 0, sample_index kept, batch->n_unreadable) [0] */
    /* Batch memory: alloc(ctx, bytes) returns 64-byte aligned memory or NULL; free(ctx, p).
     * NULL = aligned_alloc/free. Used for images, labels, valid and soft targets. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p);
    void *alloc_ctx;
} sv_loader_opts;

typedef struct sv_batch {
    int n; /* batch_local */
    int channels, img;
    float *images;                    /* (n, channels, img, img), normalised */
    int32_t *labels;                  /* (n) hard labels (for mixed samples: the first of the pair) */
    float *soft_targets;              /* (n, num_classes) mixup/cutmix targets with smoothing, or NULL */
    uint8_t *valid;                   /* (n) 1 = real sample, 0 = eval padding or (no_substitute) unreadable */
    int32_t n_valid;                  /* number of valid entries */
    int32_t n_unreadable;             /* no_substitute: entries left out because their file is
                                         unreadable (valid 0, sample_index >= 0); else 0 */
    int64_t *sample_index;            /* (n) dataset index actually used (after substitution; the unreadable
                                         one under no_substitute), -1 pad */
    uint32_t *repeat;                 /* (n) copy 0..K-1 of the sample under aug_repeats K, else 0 */
    uint64_t epoch;                   /* epoch of this batch */
    uint64_t step_in_epoch;           /* cursor / G */
    uint64_t cursor;                  /* global epoch position where this batch starts */
    uint64_t step_cursor;             /* where its optimizer step began (step_batches batches per step,
                                         counted from create / seek; = cursor without accumulation) */
    uint64_t next_epoch, next_cursor; /* resume point after this batch (store in checkpoints) */
} sv_batch;

typedef struct sv_loader_stats {
    uint64_t substituted; /* samples replaced because their file was unreadable */
    uint64_t bad_files;   /* distinct unreadable files seen */
    uint64_t unreadable;  /* no_substitute: samples handed out as unreadable holes */
    uint64_t batches;     /* batches handed out */
    double wait_s;        /* time sv_loader_next spent waiting for workers */
} sv_loader_stats;

/* Defaults for every field except dataset/batch_local/img (others as documented above). */
sv_loader_opts sv_loader_opts_default(void);

/* The defaults with a rank's place filled in: dataset `ds`, `mode`, batch_local samples per
 * rank on rank `rank` of `world`, img x img outputs with `channels` channels, sampler `seed`,
 * and the normalisation of that channel count (SV_NORM_HALF for 1 channel, SV_NORM_IMAGENET
 * otherwise). What training, evaluation and bench share; each sets the rest itself. */
sv_loader_opts sv_loader_opts_for(const sv_dataset *ds, sv_transform_mode mode, int batch_local, int rank, int world,
                                  uint64_t seed, int img, int channels);

/* Validate options, allocate slots and start workers positioned at (epoch 0, cursor 0).
 * Errors: world/rank/batch/img/channels out of range, even batch_local required for mixup,
 * eval/train with an empty dataset, train with fewer samples than one global batch. */
sv_status sv_loader_create(const sv_loader_opts *o, sv_loader **out);

/* The next batch in order. *b stays valid until the next call to sv_loader_next/seek/destroy.
 * Eval mode: *b == NULL after the last batch of the pass. */
sv_status sv_loader_next(sv_loader *l, const sv_batch **b);

/* Continue from (epoch, cursor): the next batch starts at that global position. cursor must be
 * < dataset length (train: <= len - G; a cursor past the last full batch moves to epoch+1). */
sv_status sv_loader_seek(sv_loader *l, uint64_t epoch, uint64_t cursor);

/* Steps per epoch for this configuration (train: floor(N/G); eval: ceil(N/G)). */
uint64_t sv_loader_steps_per_epoch(const sv_loader *l);
void sv_loader_stats_get(const sv_loader *l, sv_loader_stats *s);
void sv_loader_destroy(sv_loader *l);

#endif
